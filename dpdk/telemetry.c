// SPDX-License-Identifier: MIT
/*
 * The servers' telemetry commands (dpdk/server.h). DPDK calls a command's callback with no
 * argument of ours, so each command registered gets one of a fixed set of callbacks that knows
 * its slot, and answers from the server running now (none: an empty dictionary).
 */
#include <assert.h>

#include <rte_telemetry.h>

#include "dpdk/server.h"

static const struct dpdk_server *tel_server;
static void *tel_srv; /* atomic: the telemetry thread reads it */

static void tel_put(void *arg, const char *key, uint64_t v)
{
	rte_tel_data_add_dict_u64(arg, key, v);
}

/* Slot 0: the server's counters; slot i > 0: its command i - 1. */
static int tel_slot(unsigned i, const char *params, struct rte_tel_data *d)
{
	void *srv = __atomic_load_n(&tel_srv, __ATOMIC_ACQUIRE);

	rte_tel_data_start_dict(d);
	if (!srv)
		return 0;
	if (!i) {
		tel_server->counters(srv, tel_put, d);
		return 0;
	}
	return tel_server->tel[i - 1].fn(srv, params, d);
}

#define TEL_SLOT(i)                                                                                \
	static int tel_slot##i(const char *cmd, const char *params, struct rte_tel_data *d)        \
	{                                                                                          \
		return tel_slot(i, params, d);                                                     \
	}
TEL_SLOT(0)
TEL_SLOT(1)
TEL_SLOT(2)
TEL_SLOT(3)
TEL_SLOT(4)
TEL_SLOT(5)
TEL_SLOT(6)
TEL_SLOT(7)

static const telemetry_cb tel_slots[DPDK_TEL_MAX] = {tel_slot0, tel_slot1, tel_slot2, tel_slot3,
						     tel_slot4, tel_slot5, tel_slot6, tel_slot7};

void dpdk_telemetry_register(const struct dpdk_server *s, void *srv)
{
	__atomic_store_n(&tel_srv, srv, __ATOMIC_RELEASE);
	if (!srv || tel_server)
		return;
	assert(s->n_tel + 1 <= DPDK_TEL_MAX);
	tel_server = s;
	rte_telemetry_register_cmd(s->stats_path, tel_slots[0], s->stats_help);
	for (unsigned i = 0; i < s->n_tel; i++)
		rte_telemetry_register_cmd(s->tel[i].path, tel_slots[i + 1], s->tel[i].help);
}
