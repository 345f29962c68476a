// SPDX-License-Identifier: MIT
/*
 * splitnic-host: the request path (RX/TX lcore): frames in, reassembly, admission, requests
 * queued for the workers, NIC notices, hand-off to the NIC or the fallback, link state.
 */
#include <errno.h>
#include <string.h>

#include <rte_ethdev.h>
#include <rte_prefetch.h>

#include "host/host_dpdk.h"

static void to_fallback(struct host_app *a, struct host_req *r, enum host_fb_reason why)
{
	a->c[HOST_C_FB_FORCED + why - HOST_FB_FORCED]++;
	r->state = HOST_RS_FALLBACK;
	if (unlikely(rte_ring_sp_enqueue(a->fb[r->model], r))) { /* sized for every slot */
		host_req_error(a, r, PROTO_ERR_INTERNAL, 0, HOST_C_ERR_INTERNAL, "fallback queue");
		host_reqtab_put(&a->tab, r);
	}
}

static int find_model(const struct host_app *a, uint32_t model_id)
{
	for (uint32_t i = 0; i < a->n_models; i++)
		if (a->hm[i].model_id == model_id)
			return (int)i;
	return model_id == 0 ? 0 : -1;
}

static void on_request(struct host_app *a, const struct proto_msg *m, const uint8_t *data,
		       const struct proto_addr *from, uint64_t t_in, uint64_t now)
{
	const struct host_model *hm;
	struct host_req *r;
	int k;

	a->c[HOST_C_REQUESTS]++;
	if (unlikely(a->draining)) {
		host_tx_error(a, from, m->model_id, m->request_id, PROTO_ERR_BUSY, 1,
			      HOST_C_ERR_DRAINING, "shutting down");
		return;
	}
	k = find_model(a, m->model_id);
	if (unlikely(k < 0)) {
		host_tx_error(a, from, m->model_id, m->request_id, PROTO_ERR_UNKNOWN_MODEL,
			      m->model_id, HOST_C_ERR_UNKNOWN_MODEL, "unknown model");
		return;
	}
	hm = &a->hm[k];
	if (unlikely(m->tensor.fmt != hm->in_fmt || m->tensor.c != hm->in_c ||
		     m->tensor.h != hm->in_h || m->tensor.w != hm->in_w ||
		     m->total_len != hm->in_bytes)) {
		host_tx_error(a, from, m->model_id, m->request_id, PROTO_ERR_BAD_SHAPE,
			      hm->in_count, HOST_C_ERR_BAD_SHAPE,
			      "input format or shape differs from the model's");
		return;
	}
	r = host_reqtab_get(&a->tab);
	if (unlikely(!r)) {
		host_tx_error(a, from, m->model_id, m->request_id, PROTO_ERR_BUSY, a->o.queue,
			      HOST_C_ERR_BUSY_TABLE, "overloaded");
		return;
	}
	memcpy(r->in, data, hm->in_bytes);
	r->request_id = m->request_id;
	r->model_id = m->model_id;
	r->model = (uint16_t)k;
	r->cli_ip = from->sip;
	r->cli_port = from->sport;
	memcpy(r->cli_mac, from->smac, 6);
	memcpy(r->srv_mac, from->dmac, 6);
	r->t_in = t_in;
	r->t_rx = host_sat32(now - t_in);
	r->t_queued = now;
	if (unlikely(rte_ring_sp_enqueue(a->q[k], r))) {
		host_reqtab_put(&a->tab, r);
		host_tx_error(a, from, m->model_id, m->request_id, PROTO_ERR_BUSY, a->o.queue,
			      HOST_C_ERR_BUSY_QUEUE, "overloaded");
		return;
	}
	a->c[HOST_C_ACCEPTED]++;
}

static void on_notice(struct host_app *a, const struct proto_msg *m, uint64_t now)
{
	struct host_req *r;

	if (m->frag_off) /* a long RESPONSE: its first datagram is the notice */
		return;
	r = host_reqtab_ref(&a->tab, m->resp.host_ref);
	if (!r || r->state != HOST_RS_INFLIGHT || r->request_id != m->request_id ||
	    r->model_id != m->model_id) {
		a->c[HOST_C_LATE_NOTICES]++;
		return;
	}
	host_nic_remove(&a->nic, r);
	a->c[HOST_C_ANSWERED_NIC]++;
	host_hist_add(&a->h[HOST_H_NIC_RTT], now - r->t_sent);
	host_hist_add(&a->h[HOST_H_TOTAL], now - r->t_in);
	host_reqtab_put(&a->tab, r);
}

static void on_nic_error(struct host_app *a, const struct proto_msg *m)
{
	struct host_req *r = host_nic_complete(&a->nic, m->model_id, m->request_id);

	a->c[HOST_C_NIC_ERRORS]++;
	if (r)
		to_fallback(a, r, HOST_FB_NIC_ERROR);
}

static void on_frame(struct host_app *a, const uint8_t *f, uint32_t len, uint64_t t_in,
		     uint64_t now)
{
	struct proto_reasm_msg msg;
	enum proto_ra_verdict rv;
	struct proto_addr from;
	enum proto_verdict v;
	struct proto_msg m;
	const uint8_t *p;
	uint32_t plen, ihl;
	enum proto_frame_kind fk;

	a->c[HOST_C_RX_FRAMES]++;
	fk = proto_frame_parse(f, len, &from, &p, &plen, &ihl);
	if (unlikely(fk != PROTO_FRAME_UDP)) {
		a->c[fk == PROTO_FRAME_BAD ? HOST_C_RX_BAD_IP : HOST_C_RX_NOT_UDP]++;
		return;
	}
	if (unlikely(from.dport != a->o.udp_port)) {
		a->c[HOST_C_RX_OTHER_PORT]++;
		return;
	}
	v = proto_parse(p, plen, &m);
	a->verdicts[v]++;
	if (unlikely(v != PROTO_OK)) {
		a->c[HOST_C_RX_REJECTED]++;
		if (plen >= PROTO_COMMON_LEN && p[0] == 0x53 && p[1] == 0x4e &&
		    p[2] == PROTO_VERSION && p[3] == PROTO_REQUEST &&
		    host_cidr_allowed(a->o.allow, a->o.n_allow, from.sip))
			host_tx_error(a, &from, 0, 0, PROTO_ERR_BAD_REQUEST, v,
				      HOST_C_ERR_BAD_REQUEST, proto_verdict_name(v));
		return;
	}
	switch (m.type) {
	case PROTO_REQUEST:
		break;
	case PROTO_RESPONSE:
		on_notice(a, &m, now);
		return;
	case PROTO_ERROR:
		on_nic_error(a, &m);
		return;
	case PROTO_HEALTH:
		host_rx_health(a, &m, &from, plen);
		return;
	default:
		a->c[HOST_C_RX_OTHER_TYPE]++;
		return;
	}
	if (!host_cidr_allowed(a->o.allow, a->o.n_allow, from.sip)) {
		a->c[HOST_C_NOT_ALLOWED]++;
		return;
	}
	if (a->o.inproc)
		proto_neigh_learn(&a->neigh, from.sip, from.smac);
	if (m.frag_len == m.total_len) {
		on_request(a, &m, m.data, &from, t_in, now);
		return;
	}
	a->c[HOST_C_FRAGMENTS]++;
	rv = proto_reasm_push(a->ra, (uint64_t)from.sip << 16 | from.sport, &m, now, &msg);
	if (rv == PROTO_RA_COMPLETE) {
		on_request(a, &msg.hdr, msg.data, &from, t_in, now);
		proto_reasm_release(a->ra, &msg);
	} else if (rv == PROTO_RA_TABLE_FULL) {
		a->c[HOST_C_REQUESTS]++;
		host_tx_error(a, &from, m.model_id, m.request_id, PROTO_ERR_BUSY, 0,
			      HOST_C_ERR_BUSY_REASM, "reassembly table full");
	} else if (rv == PROTO_RA_TOO_LARGE) {
		a->c[HOST_C_REQUESTS]++;
		host_tx_error(a, &from, m.model_id, m.request_id, PROTO_ERR_TOO_LARGE,
			      PROTO_MAX_TOTAL, HOST_C_ERR_TOO_LARGE, "request too large");
	}
}

uint32_t host_rx_port(struct host_app *a)
{
	struct rte_mbuf *pkts[HOST_BURST];
	uint16_t n = a->started ? rte_eth_rx_burst(a->port, 0, pkts, HOST_BURST) : 0;
	uint64_t t_in, now;

	if (!n)
		return 0;
	t_in = host_now_ns(a);
	for (uint16_t i = 0; i < n; i++) {
		if (i + 1 < n)
			rte_prefetch0(rte_pktmbuf_mtod(pkts[i + 1], void *));
		now = host_now_ns(a);
		if (likely(pkts[i]->nb_segs == 1))
			on_frame(a, rte_pktmbuf_mtod(pkts[i], const uint8_t *),
				 rte_pktmbuf_data_len(pkts[i]), t_in, now);
		else
			a->c[HOST_C_RX_NOT_UDP]++;
	}
	rte_pktmbuf_free_bulk(pkts, n);
	return n;
}

/*
 * What the in-process NIC sent: frames for its wire port (RESPONSEs to front-ends) leave
 * through the port, addressed to the MAC learnt from the request (the NIC saw no frame from
 * the front-end); frames for its host port (notices, ERRORs) are read as received ones.
 */
uint32_t host_rx_nic(struct host_app *a)
{
	struct rte_mbuf *pkts[HOST_BURST];
	uint32_t n = rte_ring_sc_dequeue_burst(a->inproc.from_nic, (void **)pkts, HOST_BURST, NULL);
	uint64_t now;

	for (uint32_t i = 0; i < n; i++) {
		struct rte_mbuf *mb = pkts[i];
		uint8_t *f = rte_pktmbuf_mtod(mb, uint8_t *);

		if (mb->port == NICFW_PORT_HOST) {
			now = host_now_ns(a);
			on_frame(a, f, rte_pktmbuf_data_len(mb), now, now);
			rte_pktmbuf_free(mb);
			continue;
		}
		uint8_t mac[6];

		if (likely(rte_pktmbuf_data_len(mb) >= PROTO_FRAME_HDRS) &&
		    proto_neigh_lookup(&a->neigh, proto_get32(f + PROTO_ETH_HLEN + 16), mac))
			memcpy(f, mac, 6);
		host_tx_frame(a, mb);
	}
	return n;
}

/* Finished stages from the workers: hand off to the NIC, fall back, or answer. */
uint32_t host_collect(struct host_app *a, uint64_t now)
{
	struct host_req *reqs[HOST_BURST];
	uint32_t n = rte_ring_sc_dequeue_burst(a->done, (void **)reqs, HOST_BURST, NULL);

	for (uint32_t i = 0; i < n; i++) {
		struct host_req *r = reqs[i];
		enum host_fb_reason why;

		if (!(r->executors & PROTO_EX_HOST_FALLBACK))
			host_hist_add(&a->h[HOST_H_QUEUE], r->t_queue);
		if (unlikely(r->failed)) {
			host_req_error(a, r, PROTO_ERR_INTERNAL, 0, HOST_C_ERR_INTERNAL,
				       "stage failed");
			host_reqtab_put(&a->tab, r);
		} else if (r->state == HOST_RS_ACT) {
			why = host_nic_decide(&a->nic, a->hm[r->model].mode, now);
			if (why == HOST_FB_NONE)
				host_tx_activation(a, r, now);
			else
				to_fallback(a, r, why);
		} else if (!a->nic.link_up) {
			a->held[a->n_held++] = r; /* no way out: sent when the link is back */
		} else {
			host_tx_response(a, r, now);
			host_reqtab_put(&a->tab, r);
		}
	}
	if (a->nic.link_up && a->n_held) {
		for (uint32_t i = 0; i < a->n_held; i++) {
			host_tx_response(a, a->held[i], now);
			host_reqtab_put(&a->tab, a->held[i]);
		}
		a->n_held = 0;
	}
	return n;
}

void host_expire(struct host_app *a, uint64_t now)
{
	struct host_req *r;

	while ((r = host_nic_expired(&a->nic, now)) != NULL)
		to_fallback(a, r, a->nic.link_up ? HOST_FB_TIMEOUT : HOST_FB_LINK_DOWN);
}

/* Link state of the port (the NIC's memif server): polled, restarted while down. */
void host_link_check(struct host_app *a, uint64_t now)
{
	struct rte_eth_link l;

	if (now - a->link_checked < HOST_LINK_POLL_NS)
		return;
	a->link_checked = now;
	if (rte_eth_link_get_nowait(a->port, &l))
		return;
	if (a->nic.link_up && !l.link_status) {
		a->c[HOST_C_LINK_DOWN]++;
		a->link_down_since = a->link_restarted = now;
	}
	a->nic.link_up = l.link_status;
	if (!l.link_status && now - a->link_restarted > HOST_RESTART_NS) {
		/* memif: a client reconnects at start; a restarted server needs a new start */
		a->link_restarted = now;
		a->c[HOST_C_PORT_RESTARTS]++;
		if (a->started)
			rte_eth_dev_stop(a->port);
		a->started = rte_eth_dev_start(a->port) == 0;
	}
}
