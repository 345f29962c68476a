// SPDX-License-Identifier: MIT
/*
 * splitnic-host: frames out, on the worker's own TX queue: RESPONSEs and ERRORs to the
 * front-ends, ACTIVATIONs to the NIC stage (the port, or the in-process NIC's ring). A message
 * that fits one datagram is built from the worker's template for it (host_tpl: the UDP
 * checksum by incremental update); a longer one through the fragmenter, checksums in full.
 */
#include <stdbool.h>
#include <string.h>

#include <rte_ethdev.h>
#include <rte_malloc.h>

#include "host/host_dpdk.h"

/* ERROR reasons, by the counter that counts them: data, never formatted per packet. */
static const char *const err_reason[HOST_C__COUNT] = {
    [HOST_C_ERR_UNKNOWN_MODEL] = "unknown model",
    [HOST_C_ERR_BAD_SHAPE] = "input format or shape differs from the model's",
    [HOST_C_ERR_BAD_REQUEST] = "malformed request",
    [HOST_C_ERR_BUSY_QUEUE] = "overloaded",
    [HOST_C_ERR_BUSY_TABLE] = "overloaded",
    [HOST_C_ERR_BUSY_REASM] = "reassembly table full",
    [HOST_C_ERR_TOO_LARGE] = "request too large",
    [HOST_C_ERR_REPLY_LARGER] = "reply larger than the request: front-end not allowed",
    [HOST_C_ERR_DRAINING] = "shutting down",
    [HOST_C_ERR_INTERNAL] = "internal error",
};

/* rte_eth_tx_buffer's error callback: a few more bursts, then the rest dropped and counted. */
static void tx_unsent(struct rte_mbuf **pkts, uint16_t unsent, void *arg)
{
	struct host_worker *w = arg;
	uint16_t sent = 0;

	for (int t = 0; sent < unsent && t < HOST_TX_TRIES; t++)
		sent += rte_eth_tx_burst(w->a->port, (uint16_t)w->txq, pkts + sent, unsent - sent);
	if (unlikely(sent < unsent)) {
		w->c[HOST_C_TX_DROP] += unsent - sent;
		rte_pktmbuf_free_bulk(pkts + sent, unsent - sent);
	}
}

int host_tx_setup(struct host_worker *w, char *err, size_t errlen)
{
	if (w->txq < 0)
		return 0;
	w->txb = rte_zmalloc_socket("snhost_txb", RTE_ETH_TX_BUFFER_SIZE(HOST_TXQ), 0,
				    rte_eth_dev_socket_id(w->a->port));
	if (!w->txb || rte_eth_tx_buffer_init(w->txb, HOST_TXQ) ||
	    rte_eth_tx_buffer_set_err_callback(w->txb, tx_unsent, w)) {
		snprintf(err, errlen, "TX buffer: out of memory");
		return -ENOMEM;
	}
	return 0;
}

void host_tx_frame(struct host_worker *w, struct rte_mbuf *mb)
{
	if (w->txq < 0) {
		if (unlikely(rte_ring_sp_enqueue(w->tx_via, mb)))
			goto out_drop;
		return;
	}
	if (unlikely(!w->io))
		goto out_drop;
	if (!w->txb->length)
		w->tx_first = host_now_ns(w->a);
	rte_eth_tx_buffer(w->a->port, (uint16_t)w->txq, w->txb, mb);
	return;
out_drop:
	w->c[HOST_C_TX_DROP]++;
	rte_pktmbuf_free(mb);
}

void host_tx_flush(struct host_worker *w, uint64_t now, bool more)
{
	struct rte_mbuf *pkts[HOST_BURST];
	uint32_t n;

	if (w->txq < 0 || !w->io)
		return;
	for (uint32_t i = 0; i < w->n_fed; i++) {
		n = rte_ring_sc_dequeue_burst(w->fed[i]->tx_via, (void **)pkts, HOST_BURST, NULL);
		for (uint32_t k = 0; k < n; k++)
			host_tx_frame(w, pkts[k]);
	}
	if (w->txb->length && (!more || now - w->tx_first >= HOST_TX_DRAIN_NS))
		rte_eth_tx_buffer_flush(w->a->port, (uint16_t)w->txq, w->txb);
}

void host_tx_flush_before(struct host_worker *w, uint64_t now, uint64_t expect_ns)
{
	if (w->txq < 0 || !w->io || !w->txb->length)
		return;
	if (now - w->tx_first + expect_ns >= HOST_TX_DRAIN_NS)
		rte_eth_tx_buffer_flush(w->a->port, (uint16_t)w->txq, w->txb);
}

/* A fresh mbuf of PROTO_FRAME_MAX bytes, or NULL (counted). */
static struct rte_mbuf *tx_mbuf(struct host_worker *w, uint8_t **p)
{
	struct rte_mbuf *mb = rte_pktmbuf_alloc(w->a->pool);

	if (unlikely(!mb)) {
		w->c[HOST_C_TX_NOMBUF]++;
		return NULL;
	}
	*p = (uint8_t *)rte_pktmbuf_append(mb, PROTO_FRAME_MAX);
	if (unlikely(!*p)) {
		rte_pktmbuf_free(mb);
		w->c[HOST_C_TX_NOMBUF]++;
		return NULL;
	}
	return mb;
}

/* The frame of len bytes in mb, to the port (its UDP checksum completed there if it offloads)
 * or, to_nic with the in-process NIC, over the NIC's ring (full: dropped, its deadline tells). */
static void tx_finish(struct host_worker *w, struct rte_mbuf *mb, uint32_t len, bool to_nic)
{
	struct host_app *a = w->a;

	rte_pktmbuf_trim(mb, (uint16_t)(PROTO_FRAME_MAX - len));
	if (to_nic && a->o.inproc) {
		if (unlikely(rte_ring_mp_enqueue(a->inproc.to_nic, mb))) {
			w->c[HOST_C_TX_DROP]++;
			rte_pktmbuf_free(mb);
		}
		return;
	}
	if (a->udp_offload) {
		mb->ol_flags |= RTE_MBUF_F_TX_IPV4 | RTE_MBUF_F_TX_UDP_CKSUM;
		mb->l2_len = PROTO_ETH_HLEN;
		mb->l3_len = PROTO_IP_HLEN;
	}
	host_tx_frame(w, mb);
}

/* From the server (--ip, --port, the MAC the front-end sent to) back to a front-end. */
static void reply_to(const struct host_app *a, const uint8_t cli_mac[6], const uint8_t srv_mac[6],
		     uint32_t cli_ip, uint16_t cli_port, struct proto_addr *to)
{
	memcpy(to->smac, srv_mac, 6);
	memcpy(to->dmac, cli_mac, 6);
	to->sip = a->o.ip;
	to->dip = cli_ip;
	to->sport = a->o.udp_port;
	to->dport = cli_port;
}

/* Every datagram of message m (body of len bytes) to addr, checksums in full; returns the
 * datagrams sent. */
static uint32_t tx_message(struct host_worker *w, const struct proto_msg *m, const void *body,
			   uint32_t len, const struct proto_addr *to, bool to_nic)
{
	const bool offload = w->a->udp_offload && !(to_nic && w->a->o.inproc);
	struct proto_frag fr;
	struct rte_mbuf *mb;
	uint32_t n = 0;
	uint8_t *p;
	int plen;

	if (proto_frag_init(&fr, m, body, len, w->a->o.payload)) {
		w->c[HOST_C_ERR_INTERNAL]++;
		return 0;
	}
	for (;;) {
		mb = tx_mbuf(w, &p);
		if (!mb)
			return n;
		plen =
		    proto_frag_next(&fr, p + PROTO_FRAME_HDRS, PROTO_FRAME_MAX - PROTO_FRAME_HDRS);
		if (plen <= 0) {
			rte_pktmbuf_free(mb);
			return n;
		}
		tx_finish(w, mb, proto_frame_udp(p, to, (uint32_t)plen, offload), to_nic);
		n++;
	}
}

/* Where the trust policy's verdicts are counted (SEND: by the caller). */
static const enum host_counter trust_counter[PROTO_TRUST__COUNT] = {
    [PROTO_TRUST_NOT_ALLOWED] = HOST_C_NOT_ALLOWED,
    [PROTO_TRUST_TOO_LARGE] = HOST_C_REFUSED_LARGER,
    [PROTO_TRUST_RATE_LIMITED] = HOST_C_ERRORS_LIMITED,
};

enum proto_trust_verdict host_trust(struct host_worker *w, uint32_t ip, unsigned reply,
				    uint32_t req_bytes, uint32_t out_bytes, uint64_t now,
				    uint32_t *cap)
{
	const struct proto_trust_ask q = {
	    .src = ip, .reply = (uint8_t)reply, .in_bytes = req_bytes, .out_bytes = out_bytes};
	enum proto_trust_verdict v =
	    proto_trust_decide(&w->a->o.trust, &q, &w->rl[proto_trust_slot(ip)], now, cap);

	if (v != PROTO_TRUST_SEND)
		w->c[reply == PROTO_HEALTH && v == PROTO_TRUST_TOO_LARGE ? HOST_C_HEALTH_DROPPED
									 : trust_counter[v]]++;
	return v;
}

void host_tx_error(struct host_worker *w, const struct proto_addr *from, uint32_t model_id,
		   uint64_t rid, enum proto_error_code code, uint32_t detail, enum host_counter why,
		   uint32_t req_bytes, uint64_t now)
{
	host_tx_error_why(w, from, model_id, rid, code, detail, why, NULL, req_bytes, now);
}

void host_tx_error_why(struct host_worker *w, const struct proto_addr *from, uint32_t model_id,
		       uint64_t rid, enum proto_error_code code, uint32_t detail,
		       enum host_counter why, const char *reason, uint32_t req_bytes, uint64_t now)
{
	const uint32_t room = PROTO_FRAME_MAX - PROTO_FRAME_HDRS;
	struct host_app *a = w->a;
	enum proto_trust_verdict v;
	struct proto_addr to;
	struct rte_mbuf *mb;
	uint32_t cap;
	uint8_t *p;
	int n;

	v = host_trust(w, from->sip, PROTO_ERROR, req_bytes, PROTO_ERROR_HDR_LEN, now, &cap);
	if (v != PROTO_TRUST_NOT_ALLOWED)
		w->c[why]++;
	if (v != PROTO_TRUST_SEND)
		return;
	mb = tx_mbuf(w, &p);
	if (!mb)
		return;
	n = proto_build_error_text(p + PROTO_FRAME_HDRS, cap < room ? cap : room, model_id, rid,
				   code, detail, "host: ",
				   reason	     ? reason
				   : err_reason[why] ? err_reason[why]
						     : "error");
	if (n <= 0) {
		rte_pktmbuf_free(mb);
		return;
	}
	reply_to(a, from->smac, from->dmac, from->sip, from->sport, &to);
	tx_finish(w, mb, proto_frame_udp(p, &to, (uint32_t)n, a->udp_offload), false);
	w->c[HOST_C_ERRORS_SENT]++;
}

void host_req_error(struct host_worker *w, struct host_req *r, enum proto_error_code code,
		    uint32_t detail, enum host_counter why, uint64_t now)
{
	struct proto_addr from = {.sip = r->cli_ip, .sport = r->cli_port};

	memcpy(from.smac, r->cli_mac, 6);
	memcpy(from.dmac, r->srv_mac, 6);
	host_tx_error(w, &from, r->model_id, r->request_id, code, detail, why, r->req_bytes, now);
}

void host_tx_response(struct host_worker *w, struct host_req *r, uint64_t now)
{
	const struct host_model *hm = &w->a->hm[r->model];
	struct proto_addr to;
	struct proto_msg m;
	struct rte_mbuf *mb;
	uint8_t *p;

	proto_msg_init(&m, PROTO_RESPONSE, r->model_id, r->request_id);
	for (uint32_t k = 0; k < hm->classes; k++)
		proto_le_put_f64(w->body + 8 * k, r->scores[k]);
	m.resp.cls = kern_argmax(r->scores, hm->classes);
	m.resp.num_classes = (uint16_t)hm->classes;
	m.resp.score_fmt = PROTO_FMT_F64;
	m.resp.executors = r->executors;
	m.resp.t_ns[PROTO_T_RX] = r->t_rx;
	m.resp.t_ns[PROTO_T_QUEUE] = r->t_queue;
	m.resp.t_ns[PROTO_T_HOST] = r->t_host;
	m.resp.t_ns[PROTO_T_PACK] = r->t_pack;
	m.resp.t_ns[PROTO_T_TX] = host_sat32(now - r->t_done);
	m.resp.t_ns[PROTO_T_TOTAL] = host_sat32(now - r->t_in);
	reply_to(w->a, r->cli_mac, r->srv_mac, r->cli_ip, r->cli_port, &to);
	if (likely(w->one_resp[r->model])) {
		m.frag_len = (uint16_t)(m.total_len = hm->classes * 8);
		mb = tx_mbuf(w, &p);
		if (!mb)
			return;
		tx_finish(w, mb, host_tpl_fill(&w->t_resp[r->model], p, &m, w->body, &to), false);
	} else {
		tx_message(w, &m, w->body, hm->classes * 8, &to, false);
	}
	w->c[HOST_C_ANSWERED_HOST]++;
	host_hist_add(&w->h[w->a->slot_hist[r->model]][HOST_H_TOTAL], now - r->t_in);
}

void host_act_describe(void *arg, uint64_t tag, struct proto_msg *m)
{
	struct host_worker *w = arg;
	struct host_req *r = (struct host_req *)(uintptr_t)tag;

	m->model_id = r->model_id;
	m->request_id = r->request_id;
	memset(m->act.reply_addr, 0, 16);
	m->act.reply_addr[10] = m->act.reply_addr[11] = 0xff;
	proto_put32(m->act.reply_addr + 12, r->cli_ip);
	m->act.reply_port = r->cli_port;
	m->act.executors = r->executors;
	r->t_sent = host_now_ns(w->a);
	r->t_pack = host_sat32(r->t_sent - r->t_done);
	m->act.t_rx_ns = r->t_rx;
	m->act.t_queue_ns = r->t_queue;
	m->act.t_host_ns = r->t_host;
	m->act.t_pack_ns = r->t_pack;
}

int host_act_send(void *arg, uint64_t tag, const struct proto_msg *m, const void *body,
		  uint32_t len)
{
	struct host_worker *w = arg;
	struct host_app *a = w->a;
	struct host_req *r = (struct host_req *)(uintptr_t)tag;
	struct proto_addr to;
	struct rte_mbuf *mb;
	struct proto_msg one = *m;
	uint32_t sent, want = 1;
	uint8_t *p;

	memcpy(to.smac, a->mac, 6);
	memcpy(to.dmac, r->srv_mac, 6);
	to.sip = a->o.ip;
	to.dip = a->o.nic_ip;
	to.sport = a->o.udp_port;
	to.dport = a->o.udp_port;
	if (likely(w->one_act[r->model])) {
		one.frag_len = (uint16_t)(one.total_len = len);
		mb = tx_mbuf(w, &p);
		if (!mb)
			return -ENOBUFS;
		tx_finish(w, mb, host_tpl_fill(&w->t_act[r->model], p, &one, body, &to), true);
		sent = 1;
	} else {
		want = proto_frag_count(m->hdr_len, len, a->o.payload);
		sent = tx_message(w, m, body, len, &to, true);
	}
	w->c[HOST_C_ACT_DGRAMS] += sent;
	if (sent < want)
		return -ENOBUFS;
	w->c[HOST_C_ACTIVATIONS]++;
	return 0;
}

uint64_t host_act_now(void *arg)
{
	return host_now_ns(((struct host_worker *)arg)->a);
}

void host_tx_templates(struct host_worker *w, uint32_t k)
{
	const struct host_app *a = w->a;
	const struct host_model *hm = &a->hm[k];
	const struct proto_addr from = {.sip = a->o.ip, .sport = a->o.udp_port};
	struct proto_msg m;

	proto_msg_init(&m, PROTO_RESPONSE, 0, 0);
	m.resp.num_classes = (uint16_t)hm->classes;
	m.resp.score_fmt = PROTO_FMT_F64;
	m.frag_len = (uint16_t)(m.total_len = hm->classes * 8);
	w->one_resp[k] = m.hdr_len + m.total_len <= a->o.payload &&
			 !host_tpl_init(&w->t_resp[k], &m, PROTO_COMMON_LEN, &from, a->udp_offload);
	if (hm->mode == HOST_MODE_HOST_ONLY)
		return;
	proto_msg_init(&m, PROTO_ACTIVATION, 0, 0);
	proto_msg_set_tensor(&m, PROTO_FMT_BITS, hm->act_count, 1, 1, 0, 0);
	m.tensor.layer = (uint16_t)hm->split;
	m.frag_len = (uint16_t)(m.total_len = hm->act_bytes);
	w->one_act[k] = m.hdr_len + m.total_len <= a->o.payload &&
			!host_tpl_init(&w->t_act[k], &m, PROTO_COMMON_LEN + 32, &from,
				       a->udp_offload && !a->o.inproc);
}
