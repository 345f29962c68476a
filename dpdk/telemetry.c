// SPDX-License-Identifier: MIT
/*
 * The servers' telemetry commands (dpdk/server.h). DPDK calls a command's callback with the
 * command's path and no argument of ours: one callback finds the command by its path and
 * answers from the server running now (none: an empty dictionary).
 */
#include <string.h>

#include <rte_telemetry.h>

#include "dpdk/reloader.h"
#include "dpdk/server.h"

static const struct dpdk_server *tel_server;
static void *tel_srv; /* atomic: the telemetry thread reads it */

static void tel_put(void *arg, const char *key, uint64_t v)
{
	rte_tel_data_add_dict_u64(arg, key, v);
}

static int tel_cmd(const char *cmd, const char *params, struct rte_tel_data *d)
{
	void *srv = __atomic_load_n(&tel_srv, __ATOMIC_ACQUIRE);

	rte_tel_data_start_dict(d);
	if (!srv)
		return 0;
	if (!strcmp(cmd, tel_server->stats_path)) {
		tel_server->counters(srv, tel_put, d);
		return 0;
	}
	if (tel_server->reloader && !strcmp(cmd, tel_server->reload_path)) {
		char msg[RTE_TEL_MAX_STRING_LEN];
		int rc = dpdk_reload_wait(tel_server, srv, msg, sizeof(msg));

		rte_tel_data_add_dict_int(d, "status", rc);
		rte_tel_data_add_dict_string(d, "message", msg);
		return 0;
	}
	for (unsigned i = 0; i < tel_server->n_tel; i++)
		if (!strcmp(cmd, tel_server->tel[i].path))
			return tel_server->tel[i].fn(srv, params, d);
	return 0;
}

void dpdk_telemetry_register(const struct dpdk_server *s, void *srv)
{
	if (srv && !tel_server) {
		tel_server = s;
		rte_telemetry_register_cmd(s->stats_path, tel_cmd, s->stats_help);
		for (unsigned i = 0; i < s->n_tel; i++)
			rte_telemetry_register_cmd(s->tel[i].path, tel_cmd, s->tel[i].help);
		if (s->reloader)
			rte_telemetry_register_cmd(s->reload_path, tel_cmd,
						   "reload the models (the configuration read "
						   "again): status 0 or -errno, message");
	}
	__atomic_store_n(&tel_srv, srv, __ATOMIC_RELEASE);
}
