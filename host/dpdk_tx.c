// SPDX-License-Identifier: MIT
/*
 * splitnic-host: frames out (RX/TX lcore): RESPONSEs and ERRORs to the front-ends, ACTIVATIONs
 * to the NIC stage (the port, or the in-process NIC's ring).
 */
#include <stdbool.h>
#include <string.h>

#include <rte_ethdev.h>
#include <rte_malloc.h>

#include "host/host_dpdk.h"

/* rte_eth_tx_buffer's error callback: a few more bursts, then the rest dropped and counted. */
static void tx_unsent(struct rte_mbuf **pkts, uint16_t unsent, void *arg)
{
	struct host_app *a = arg;
	uint16_t sent = 0;

	for (int t = 0; a->started && sent < unsent && t < HOST_TX_TRIES; t++)
		sent += rte_eth_tx_burst(a->port, 0, pkts + sent, unsent - sent);
	if (unlikely(sent < unsent)) {
		a->c[HOST_C_TX_DROP] += unsent - sent;
		rte_pktmbuf_free_bulk(pkts + sent, unsent - sent);
	}
}

int host_tx_setup(struct host_app *a, char *err, size_t errlen)
{
	a->txb = rte_zmalloc_socket("snhost_txb", RTE_ETH_TX_BUFFER_SIZE(HOST_TXQ), 0,
				    rte_eth_dev_socket_id(a->port));
	if (!a->txb || rte_eth_tx_buffer_init(a->txb, HOST_TXQ) ||
	    rte_eth_tx_buffer_set_err_callback(a->txb, tx_unsent, a)) {
		snprintf(err, errlen, "TX buffer: out of memory");
		return -ENOMEM;
	}
	return 0;
}

void host_tx_frame(struct host_app *a, struct rte_mbuf *mb)
{
	if (unlikely(!a->started)) {
		a->c[HOST_C_TX_DROP]++;
		rte_pktmbuf_free(mb);
		return;
	}
	rte_eth_tx_buffer(a->port, 0, a->txb, mb);
}

void host_tx_flush(struct host_app *a)
{
	if (a->started)
		rte_eth_tx_buffer_flush(a->port, 0, a->txb);
}

/* A fresh mbuf of PROTO_FRAME_MAX bytes, or NULL (counted). */
static struct rte_mbuf *tx_mbuf(struct host_app *a, uint8_t **p)
{
	struct rte_mbuf *mb = rte_pktmbuf_alloc(a->pool);

	if (unlikely(!mb)) {
		a->c[HOST_C_TX_NOMBUF]++;
		return NULL;
	}
	*p = (uint8_t *)rte_pktmbuf_append(mb, PROTO_FRAME_MAX);
	if (unlikely(!*p)) {
		rte_pktmbuf_free(mb);
		a->c[HOST_C_TX_NOMBUF]++;
		return NULL;
	}
	return mb;
}

/* Headers for the plen-byte payload at p + PROTO_FRAME_HDRS; the UDP checksum by the port
 * where it can, else in software. Returns the frame length. */
static uint32_t frame_udp(struct host_app *a, struct rte_mbuf *mb, uint8_t *p,
			  const struct proto_addr *to, uint32_t plen)
{
	if (a->udp_offload) {
		mb->ol_flags |= RTE_MBUF_F_TX_IPV4 | RTE_MBUF_F_TX_UDP_CKSUM;
		mb->l2_len = PROTO_ETH_HLEN;
		mb->l3_len = PROTO_IP_HLEN;
	}
	return proto_frame_udp(p, to, plen, a->udp_offload);
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

static void tx_frame(struct host_app *a, struct rte_mbuf *mb, uint32_t len)
{
	rte_pktmbuf_trim(mb, (uint16_t)(PROTO_FRAME_MAX - len));
	host_tx_frame(a, mb);
}

/* A frame for the in-process NIC: over its ring (full: dropped, its deadline will tell). */
static void tx_nic(struct host_app *a, struct rte_mbuf *mb, uint32_t len)
{
	rte_pktmbuf_trim(mb, (uint16_t)(PROTO_FRAME_MAX - len));
	if (unlikely(rte_ring_sp_enqueue(a->inproc.to_nic, mb))) {
		a->c[HOST_C_TX_DROP]++;
		rte_pktmbuf_free(mb);
	}
}

/* Send every datagram of message m (body of len bytes) to addr, to the NIC stage if to_nic
 * (in-process: its ring, else the port); returns datagrams sent. */
static uint32_t tx_message(struct host_app *a, const struct proto_msg *m, const void *body,
			   uint32_t len, const struct proto_addr *to, bool to_nic)
{
	const bool ring = to_nic && a->o.inproc;

	struct proto_frag fr;
	struct rte_mbuf *mb;
	uint32_t n = 0;
	uint8_t *p;
	int plen;

	if (proto_frag_init(&fr, m, body, len, a->o.payload)) {
		a->c[HOST_C_ERR_INTERNAL]++;
		return 0;
	}
	for (;;) {
		mb = tx_mbuf(a, &p);
		if (!mb)
			return n;
		plen =
		    proto_frag_next(&fr, p + PROTO_FRAME_HDRS, PROTO_FRAME_MAX - PROTO_FRAME_HDRS);
		if (plen <= 0) {
			rte_pktmbuf_free(mb);
			return n;
		}
		if (ring)
			tx_nic(a, mb, proto_frame_udp(p, to, (uint32_t)plen, false));
		else
			tx_frame(a, mb, frame_udp(a, mb, p, to, (uint32_t)plen));
		n++;
	}
}

void host_tx_error(struct host_app *a, const struct proto_addr *req_from, uint32_t model_id,
		   uint64_t rid, enum proto_error_code code, uint32_t detail, enum host_counter why,
		   const char *reason)
{
	struct proto_addr to;
	struct rte_mbuf *mb;
	uint8_t *p;
	int n;

	a->c[why]++;
	mb = tx_mbuf(a, &p);
	if (!mb)
		return;
	n = proto_build_error_text(p + PROTO_FRAME_HDRS, PROTO_FRAME_MAX - PROTO_FRAME_HDRS,
				   model_id, rid, code, detail, "host: ", reason);
	if (n <= 0) {
		rte_pktmbuf_free(mb);
		return;
	}
	reply_to(a, req_from->smac, req_from->dmac, req_from->sip, req_from->sport, &to);
	tx_frame(a, mb, frame_udp(a, mb, p, &to, (uint32_t)n));
	a->c[HOST_C_ERRORS_SENT]++;
}

void host_req_error(struct host_app *a, struct host_req *r, enum proto_error_code code,
		    uint32_t detail, enum host_counter why, const char *reason)
{
	struct proto_addr from = {.sip = r->cli_ip, .sport = r->cli_port};

	memcpy(from.smac, r->cli_mac, 6);
	memcpy(from.dmac, r->srv_mac, 6);
	host_tx_error(a, &from, r->model_id, r->request_id, code, detail, why, reason);
}

void host_tx_response(struct host_app *a, struct host_req *r, uint64_t now)
{
	const struct host_model *hm = &a->hm[r->model];
	struct proto_addr to;
	struct proto_msg m;

	proto_msg_init(&m, PROTO_RESPONSE, r->model_id, r->request_id);
	for (uint32_t k = 0; k < hm->classes; k++)
		proto_le_put_f64(a->body + 8 * k, r->scores[k]);
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
	reply_to(a, r->cli_mac, r->srv_mac, r->cli_ip, r->cli_port, &to);
	tx_message(a, &m, a->body, hm->classes * 8, &to, false);
	a->c[HOST_C_ANSWERED_HOST]++;
	host_hist_add(&a->h[HOST_H_TOTAL], now - r->t_in);
}

void host_tx_activation(struct host_app *a, struct host_req *r, uint64_t now)
{
	const struct host_model *hm = &a->hm[r->model];
	struct proto_addr to;
	struct proto_msg m;

	proto_msg_init(&m, PROTO_ACTIVATION, r->model_id, r->request_id);
	proto_msg_set_tensor(&m, PROTO_FMT_BITS, hm->act_count, 1, 1, 0, 0);
	m.tensor.layer = (uint16_t)hm->split;
	memset(m.act.reply_addr, 0, 16);
	m.act.reply_addr[10] = m.act.reply_addr[11] = 0xff;
	m.act.reply_addr[12] = (uint8_t)(r->cli_ip >> 24);
	m.act.reply_addr[13] = (uint8_t)(r->cli_ip >> 16);
	m.act.reply_addr[14] = (uint8_t)(r->cli_ip >> 8);
	m.act.reply_addr[15] = (uint8_t)r->cli_ip;
	m.act.reply_port = r->cli_port;
	m.act.executors = r->executors;
	r->t_pack = host_sat32(now - r->t_done);
	m.act.t_rx_ns = r->t_rx;
	m.act.t_queue_ns = r->t_queue;
	m.act.t_host_ns = r->t_host;
	m.act.t_pack_ns = r->t_pack;
	m.act.host_ref = host_req_ref(r);
	memcpy(to.smac, a->mac, 6);
	memcpy(to.dmac, r->srv_mac, 6);
	to.sip = a->o.ip;
	to.dip = a->o.nic_ip;
	to.sport = a->o.udp_port;
	to.dport = a->o.udp_port;
	a->c[HOST_C_ACT_DGRAMS] += tx_message(a, &m, r->act, hm->act_bytes, &to, true);
	a->c[HOST_C_ACTIVATIONS]++;
	host_nic_sent(&a->nic, r, now);
}
