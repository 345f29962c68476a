// SPDX-License-Identifier: MIT
/*
 * splitnic-host: HEALTH probes answered by the worker that receives them (host/host.h: the
 * report; the NIC passes up the probes for the host's role, and the report goes out through it).
 */
#include <string.h>

#include <rte_mbuf.h>

#include "host/host_dpdk.h"

static char health_ident[PROTO_HEALTH_IDENT_LEN + 1];

void host_health_setup(struct host_app *a)
{
	if (a->o.name)
		snprintf(health_ident, sizeof(health_ident), "%s", a->o.name);
	else
		snprintf(health_ident, sizeof(health_ident), "splitnic-host@%u.%u.%u.%u",
			 a->o.ip >> 24, (a->o.ip >> 16) & 0xff, (a->o.ip >> 8) & 0xff,
			 a->o.ip & 0xff);
}

void host_rx_health(struct host_worker *w, const struct proto_msg *m, const struct proto_addr *from,
		    uint32_t probe_len, uint64_t now)
{
	struct host_app *a = w->a;
	const struct host_map *mp = host_map(a);
	struct proto_addr to;
	struct rte_mbuf *mb;
	uint32_t cap;
	uint8_t *p;
	int n;

	if (!host_health_asks_me(m)) {
		w->c[HOST_C_HEALTH_DROPPED]++;
		return;
	}
	cap = probe_len;
	if (from->sip != a->o.ip && host_trust(w, from->sip, PROTO_HEALTH, probe_len,
					       PROTO_HEALTH_HDR_LEN + PROTO_HEALTH_IDENT_LEN, now,
					       &cap) != PROTO_TRUST_SEND)
		return;
	mb = rte_pktmbuf_alloc(a->pool);
	p = mb ? (uint8_t *)rte_pktmbuf_append(mb, PROTO_FRAME_MAX) : NULL;
	if (unlikely(!p)) {
		rte_pktmbuf_free(mb);
		w->c[HOST_C_TX_NOMBUF]++;
		return;
	}
	n = proto_build_health_report(p + PROTO_FRAME_HDRS, PROTO_FRAME_MAX - PROTO_FRAME_HDRS, cap,
				      m->request_id, PROTO_ROLE_HOST,
				      host_health_state(mp->hm, mp->n, a->draining, a->link_up),
				      host_in_use(a), health_ident, mp->health, mp->n);
	if (n <= 0) {
		rte_pktmbuf_free(mb);
		w->c[HOST_C_HEALTH_DROPPED]++;
		return;
	}
	memcpy(to.smac, from->dmac, 6);
	memcpy(to.dmac, from->smac, 6);
	to.sip = a->o.ip;
	to.dip = from->sip;
	to.sport = a->o.udp_port;
	to.dport = from->sport;
	rte_pktmbuf_trim(mb,
			 (uint16_t)(PROTO_FRAME_MAX - proto_frame_udp(p, &to, (uint32_t)n, false)));
	host_tx_frame(w, mb);
	w->c[HOST_C_HEALTH_ANSWERED]++;
}
