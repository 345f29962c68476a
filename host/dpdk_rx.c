// SPDX-License-Identifier: MIT
/*
 * splitnic-host: frames in, on the worker that received them or owns them: source checks
 * first, then the spread to the owning worker, reassembly, admission into the worker's queue,
 * and the NIC's notices handed to the worker's NIC executor.
 */
#include <errno.h>
#include <string.h>

#include <rte_ethdev.h>

#include "host/host_dpdk.h"

/* The slot serving model_id now (0: the first model), or -1. */
static int find_model(const struct host_app *a, uint32_t model_id)
{
	const struct host_map *mp = host_map(a);

	for (uint32_t i = 0; i < mp->n; i++)
		if (mp->hm[i].model_id == model_id)
			return mp->slot[i];
	return model_id == 0 && mp->n ? mp->slot[0] : -1;
}

static uint32_t notice_ref(const struct proto_msg *m)
{
	return m->type == PROTO_RESPONSE ? m->resp.host_ref
	       : m->type == PROTO_ERROR	 ? m->err.host_ref
					 : 0;
}

unsigned host_frame_owner(const struct host_app *a, const uint8_t *f, uint32_t len)
{
	struct proto_addr from;
	struct proto_msg m;
	const uint8_t *p;
	uint32_t plen, ihl, ref;

	if (proto_frame_parse(f, len, &from, &p, &plen, &ihl) != PROTO_FRAME_UDP ||
	    proto_parse(p, plen, &m) != PROTO_OK)
		return 0;
	ref = notice_ref(&m);
	return ref && host_ref_worker(ref) < a->n_workers ? host_ref_worker(ref) : 0;
}

/* Hand mb to worker o (its `in` ring); dropped and counted when the ring is full. */
static void pass_to(struct host_worker *w, unsigned o, struct rte_mbuf *mb)
{
	if (unlikely(rte_ring_mp_enqueue(w->a->w[o].in, mb))) {
		w->c[HOST_C_SPREAD_DROP]++;
		rte_pktmbuf_free(mb);
		return;
	}
	w->c[HOST_C_SPREAD]++;
}

/* The RESPONSE's size on the wire (UDP payloads), for the trust policy. */
static uint32_t reply_bytes(const struct host_app *a, const struct host_model *hm)
{
	return proto_wire_bytes(PROTO_RESP_HDR_LEN, hm->classes * 8, a->o.payload);
}

/* A complete REQUEST (its tensor at data, held by mb or reassembly slot ra_slot): admitted into
 * the worker's queue (true: the caller keeps mb and the slot until the batch gathers it), or
 * answered with an ERROR (false). */
static bool on_request(struct host_worker *w, struct rte_mbuf *mb, const struct proto_msg *m,
		       const uint8_t *data, int32_t ra_slot, const struct proto_addr *from,
		       uint32_t req_bytes, uint64_t t_in, uint64_t now)
{
	struct host_app *a = w->a;
	const struct host_model *hm;
	enum proto_trust_verdict v;
	struct host_rq *q;
	struct host_req *r;
	uint32_t cap;
	int k;

	w->c[HOST_C_REQUESTS]++;
	if (unlikely(a->draining)) {
		host_tx_error(w, from, m->model_id, m->request_id, PROTO_ERR_BUSY, 1,
			      HOST_C_ERR_DRAINING, req_bytes, now);
		return false;
	}
	k = find_model(a, m->model_id);
	if (unlikely(k < 0)) {
		host_tx_error(w, from, m->model_id, m->request_id, PROTO_ERR_UNKNOWN_MODEL,
			      m->model_id, HOST_C_ERR_UNKNOWN_MODEL, req_bytes, now);
		return false;
	}
	hm = &a->hm[k];
	if (unlikely(!proto_input_matches(&m->tensor, hm->in_fmt, hm->in_c, hm->in_h, hm->in_w) ||
		     m->total_len != hm->in_bytes)) {
		host_tx_error_why(w, from, m->model_id, m->request_id, PROTO_ERR_BAD_SHAPE,
				  hm->in_count, HOST_C_ERR_BAD_SHAPE, hm->shape_reason, req_bytes,
				  now);
		return false;
	}
	v = host_trust(w, from->sip, PROTO_RESPONSE, req_bytes, reply_bytes(a, hm), now, &cap);
	if (unlikely(v != PROTO_TRUST_SEND)) {
		if (v == PROTO_TRUST_TOO_LARGE)
			host_tx_error(w, from, m->model_id, m->request_id, PROTO_ERR_TOO_LARGE,
				      reply_bytes(a, hm), HOST_C_ERR_REPLY_LARGER, req_bytes, now);
		return false;
	}
	q = &w->q[k];
	r = q->n < a->o.queue ? host_reqtab_get(&w->tab) : NULL;
	if (unlikely(!r)) {
		host_tx_error(w, from, m->model_id, m->request_id, PROTO_ERR_BUSY, a->o.queue,
			      q->n < a->o.queue ? HOST_C_ERR_BUSY_TABLE : HOST_C_ERR_BUSY_QUEUE,
			      req_bytes, now);
		return false;
	}
	r->in = data;
	r->hold = mb;
	r->ra_slot = ra_slot;
	r->request_id = m->request_id;
	r->model_id = m->model_id;
	r->model = (uint16_t)k;
	r->cli_ip = from->sip;
	r->cli_port = from->sport;
	memcpy(r->cli_mac, from->smac, 6);
	memcpy(r->srv_mac, from->dmac, 6);
	r->req_bytes = req_bytes;
	r->t_in = t_in;
	r->t_rx = host_sat32(now - t_in);
	r->t_queued = now;
	q->r[(q->head + q->n++) & q->mask] = r;
	__atomic_store_n(&w->slot_reqs[k], w->slot_reqs[k] + 1, __ATOMIC_RELEASE);
	w->c[HOST_C_ACCEPTED]++;
	return true;
}

/* A notice from the NIC, on the worker that owns its request. */
static void on_notice(struct host_worker *w, const struct proto_msg *m)
{
	struct host_app *a = w->a;
	const int first = find_model(a, m->model_id);
	enum host_notice_verdict v = HOST_NOTICE_STALE;
	uint32_t k = 0, id = m->model_id;

	if (m->frag_off) /* a long RESPONSE: its first datagram is the notice */
		return;
	if (!id && first >= 0) /* 0: the first model, as the request named it */
		id = a->hm[first].model_id;
	/* the slot serving the model now, or one of its versions still finishing requests */
	for (uint32_t s = 0; s < host_slots(a) && v == HOST_NOTICE_STALE; s++)
		if (host_slot_on(a, s) && a->hm[s].model_id == id && w->nic[s].priv) {
			k = s;
			v = host_remote_notice(&w->nic[s], m);
		}
	switch (v) {
	case HOST_NOTICE_OK:
		if (m->type != PROTO_ERROR)
			break;
		w->c[HOST_C_NIC_ERRORS]++;
		if (m->err.code != PROTO_ERR_UNSUPPORTED)
			break;
		/* the NIC holds the model from another op (its @K is not our split): say so once,
		 * every such request is finished here and counted */
		w->c[HOST_C_NIC_REFUSED_LAYER]++;
		if (!__atomic_exchange_n(&w->a->refusal_said[k], true, __ATOMIC_RELAXED)) {
			printf("host: warning: the NIC refused model %s's ACTIVATION at op %u "
			       "(ERROR unsupported, detail %u: its part starts there): give "
			       "splitnic-nic @%u or this server :coproc:%u; such requests are "
			       "finished here (nic_refused_layer, fallback_nic_error)\n",
			       w->a->hm[k].m->name, w->a->hm[k].split, m->err.detail,
			       w->a->hm[k].split, m->err.detail);
			fflush(stdout);
		}
		break;
	case HOST_NOTICE_STALE:
		w->c[HOST_C_LATE_NOTICES]++;
		break;
	case HOST_NOTICE_MISMATCH:
		w->c[HOST_C_NOTICE_MISMATCH]++;
		break;
	default:
		w->c[HOST_C_NOTICE_BAD_COOKIE]++;
		break;
	}
}

/* A REQUEST datagram on its owner: whole, or through the reassembly table. Consumes mb. */
static void on_request_dgram(struct host_worker *w, struct rte_mbuf *mb, const struct proto_msg *m,
			     const struct proto_addr *from, uint32_t plen, uint64_t now)
{
	const uint64_t t_in = *host_mbuf_t_in(mb);
	struct proto_reasm_msg msg;
	enum proto_ra_verdict rv;

	if (w->a->o.inproc)
		proto_neigh_learn(&w->neigh, from->sip, from->smac);
	if (m->frag_len == m->total_len) {
		if (!on_request(w, mb, m, m->data, -1, from, plen, t_in, now))
			rte_pktmbuf_free(mb);
		return;
	}
	w->c[HOST_C_FRAGMENTS]++;
	rv = proto_reasm_push(w->ra, (uint64_t)from->sip << 16 | from->sport, m, now, &msg);
	if (rv == PROTO_RA_COMPLETE) {
		if (!on_request(w, NULL, &msg.hdr, msg.data, msg.slot, from, msg.len + m->hdr_len,
				t_in, now))
			proto_reasm_release(w->ra, &msg);
	} else if (rv == PROTO_RA_TABLE_FULL) {
		w->c[HOST_C_REQUESTS]++;
		host_tx_error(w, from, m->model_id, m->request_id, PROTO_ERR_BUSY, 0,
			      HOST_C_ERR_BUSY_REASM, plen, now);
	} else if (rv == PROTO_RA_TOO_LARGE) {
		w->c[HOST_C_REQUESTS]++;
		host_tx_error(w, from, m->model_id, m->request_id, PROTO_ERR_TOO_LARGE,
			      PROTO_MAX_TOTAL, HOST_C_ERR_TOO_LARGE, plen, now);
	}
	rte_pktmbuf_free(mb);
}

/* What the in-process NIC sent to its wire port: a RESPONSE for a front-end of this worker,
 * addressed to the MAC learnt from its REQUEST (the NIC saw no frame from it). */
static void nic_to_wire(struct host_worker *w, struct rte_mbuf *mb)
{
	uint8_t *f = rte_pktmbuf_mtod(mb, uint8_t *);
	uint8_t mac[6];

	if (likely(rte_pktmbuf_data_len(mb) >= PROTO_FRAME_HDRS) &&
	    proto_neigh_lookup(&w->neigh, proto_get32(f + PROTO_ETH_HLEN + 16), mac))
		memcpy(f, mac, 6);
	host_tx_frame(w, mb);
}

void host_rx_frame(struct host_worker *w, struct rte_mbuf *mb, enum host_src src, uint64_t now)
{
	struct host_app *a = w->a;
	const uint8_t *f = rte_pktmbuf_mtod(mb, const uint8_t *), *p;
	const bool counted = src == HOST_SRC_SPREAD; /* by the worker that received it */
	struct proto_addr from;
	enum proto_frame_kind fk;
	enum proto_verdict v;
	struct proto_msg m;
	uint32_t plen, ihl, cap;
	unsigned o;

	if (src == HOST_SRC_NIC && mb->port == NICFW_PORT_WIRE) {
		nic_to_wire(w, mb);
		return;
	}
	if (src == HOST_SRC_PORT) {
		w->c[HOST_C_RX_FRAMES]++;
		*host_mbuf_t_in(mb) = now;
	}
	fk = unlikely(mb->nb_segs != 1)
		 ? PROTO_FRAME_NOT_IPV4
		 : proto_frame_parse(f, rte_pktmbuf_data_len(mb), &from, &p, &plen, &ihl);
	if (unlikely(fk != PROTO_FRAME_UDP)) {
		w->c[fk == PROTO_FRAME_BAD ? HOST_C_RX_BAD_IP : HOST_C_RX_NOT_UDP]++;
		goto out_free;
	}
	if (unlikely(from.dport != a->o.udp_port)) {
		w->c[HOST_C_RX_OTHER_PORT]++;
		goto out_free;
	}
	v = proto_parse(p, plen, &m);
	if (!counted)
		w->verdicts[v]++;
	if (unlikely(v != PROTO_OK)) {
		w->c[HOST_C_RX_REJECTED]++;
		if (plen >= PROTO_COMMON_LEN && proto_get16(p) == PROTO_MAGIC &&
		    p[2] == PROTO_VERSION && p[3] == PROTO_REQUEST)
			host_tx_error(w, &from, 0, 0, PROTO_ERR_BAD_REQUEST, v,
				      HOST_C_ERR_BAD_REQUEST, plen, now);
		goto out_free;
	}
	switch (m.type) {
	case PROTO_REQUEST:
		if (src == HOST_SRC_NIC)
			break;
		if (src == HOST_SRC_PORT) {
			if (host_trust(w, from.sip, 0, plen, 0, now, &cap) ==
			    PROTO_TRUST_NOT_ALLOWED)
				goto out_free;
			o = a->sw_spread
				? host_spread(from.sip, from.sport, m.request_id, a->n_workers)
				: w->id;
			if (o != w->id) {
				pass_to(w, o, mb);
				return;
			}
		}
		on_request_dgram(w, mb, &m, &from, plen, now);
		return;
	case PROTO_RESPONSE:
	case PROTO_ERROR:
		/* completion notices: only from the NIC (its address on the port, or the
		 * in-process NIC's ring), never from a front-end */
		if (src == HOST_SRC_PORT && (a->o.inproc || from.sip != a->o.nic_ip)) {
			w->c[HOST_C_NOTICE_NOT_NIC]++;
			goto out_free;
		}
		o = notice_ref(&m) && host_ref_worker(notice_ref(&m)) < a->n_workers
			? host_ref_worker(notice_ref(&m))
			: w->id;
		if (src == HOST_SRC_PORT && o != w->id) {
			pass_to(w, o, mb);
			return;
		}
		on_notice(w, &m);
		goto out_free;
	case PROTO_HEALTH:
		if (src == HOST_SRC_PORT)
			host_rx_health(w, &m, &from, plen, now);
		goto out_free;
	default:
		break;
	}
	w->c[HOST_C_RX_OTHER_TYPE]++;
out_free:
	rte_pktmbuf_free(mb);
}
