// SPDX-License-Identifier: MIT
/* The packet dispatcher: framing (Ethernet/ARP/IPv4/UDP, the neighbour table) from
 * protocol/frame.h; the protocol's own parser, builders and reassembly table for its messages. */
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "nicfw/dispatch.h"
#include "protocol/frame.h"

/* Where and how a RESPONSE or ERROR goes, and what caused it (in_bytes: the UDP payload, the
 * trust policy's measure); the host gets ERRORs about its ACTIVATIONs as notices (ref, cookie). */
struct disp_reply {
	struct proto_addr a;
	uint8_t port; /* enum nicfw_port it leaves by */
	bool notice;
	uint32_t in_bytes;
	uint32_t host_ref;
	uint64_t cookie;
};

struct disp_req {
	struct disp_reply to;
	struct disp_reply host; /* ACTIVATION: the host port, for the completion notice */
	bool notify;
	uint64_t request_id;
	uint32_t model_id; /* as the request gave it (0: the default) */
	uint64_t t_in;
	uint32_t t_prior[4]; /* ACTIVATION: rx, queue, host, pack */
	uint32_t host_ref;   /* ACTIVATION: echoed in the RESPONSE */
	uint64_t cookie;     /* ACTIVATION: echoed in the notice only */
	uint8_t executors;
	uint8_t *in; /* in_bytes, allocated at create: the executor's input */
	double *out; /* classes: the executor's output */
};

/* A model's requests submitted to its executor, oldest first (the order it finishes them). */
struct disp_queue {
	struct disp_req slot[NICFW_DISP_QUEUE];
	uint32_t head, count;
	uint64_t last_done; /* now_ns of the last collection: the next one started then */
};

struct nicfw_disp {
	struct nicfw_disp_config cfg;
	struct proto_reasm *ra;
	uint64_t c[NICFW_C__COUNT];
	uint64_t verdicts[PROTO_VERDICT__COUNT];
	struct disp_queue q[NICFW_DISP_MAX_MODELS];
	struct proto_neigh_table neigh;
	uint32_t
	    resp_bytes[NICFW_DISP_MAX_MODELS]; /* a RESPONSE's UDP payload bytes, all datagrams */
	uint64_t rl[PROTO_TRUST_SLOTS];	       /* ERROR buckets of wire-side sources */
	uint64_t now;			       /* the time of the frame being handled */
	struct nicfw_disp_timing *tm;	       /* NICFW_DISP_MAX_MODELS */
	uint8_t *body;			       /* the RESPONSE data section, little-endian f64 */
	char shape_reason[NICFW_DISP_MAX_MODELS][48]; /* "bad_shape: expects u8 1x28x28" */
	uint8_t host_mac[6];			      /* the host's, from its reports */
	uint16_t probes;			      /* host probes sent */
	uint8_t frame[2048];			      /* reply under construction */
	uint32_t max_in, max_cls; /* the reassembly's and the body's room, set at create */
	uint8_t order[NICFW_DISP_MAX_MODELS]; /* the slots named (cfg.n_models), default first */
	bool named[NICFW_DISP_MAX_MODELS];
	bool polled[NICFW_DISP_MAX_MODELS]; /* atomic: the packet thread polls the slot */
};

static const char *const counter_names[NICFW_C__COUNT] = {
    [NICFW_C_RX_WIRE] = "rx_wire",
    [NICFW_C_RX_HOST] = "rx_host",
    [NICFW_C_FWD_TO_HOST] = "forwarded_to_host",
    [NICFW_C_FWD_TO_WIRE] = "forwarded_to_wire",
    [NICFW_C_NOT_IPV4] = "not_ipv4",
    [NICFW_C_IP_BAD] = "ip_bad",
    [NICFW_C_IP_FRAG] = "ip_fragment",
    [NICFW_C_ARP_REPLIES] = "arp_replies",
    [NICFW_C_INFER_RX] = "inference_rx",
    [NICFW_C_PASSED_UP_TYPE] = "passed_up_type",
    [NICFW_C_UNKNOWN_MODEL] = "passed_up_unknown_model",
    [NICFW_C_NOT_MY_LAYER] = "passed_up_not_my_layer",
    [NICFW_C_FRAGMENTS] = "fragments",
    [NICFW_C_REQUESTS] = "requests",
    [NICFW_C_ACTIVATIONS] = "activations",
    [NICFW_C_ANSWERED] = "answered",
    [NICFW_C_RESP_DGRAMS] = "response_datagrams",
    [NICFW_C_ERRORS_SENT] = "errors_sent",
    [NICFW_C_ERR_BAD_REQUEST] = "error_bad_request",
    [NICFW_C_ERR_BAD_SHAPE] = "error_bad_shape",
    [NICFW_C_ERR_BUSY] = "error_busy",
    [NICFW_C_ERR_TOO_LARGE] = "error_too_large",
    [NICFW_C_ERR_INTERNAL] = "error_internal",
    [NICFW_C_ERR_UNKNOWN_MODEL] = "error_unknown_model",
    [NICFW_C_ERR_UNSUPPORTED_LAYER] = "error_unsupported_layer",
    [NICFW_C_HOST_NOTICES] = "host_notices",
    [NICFW_C_TX_FAIL] = "tx_fail",
    [NICFW_C_WIRE_ACTIVATION] = "dropped_wire_activations",
    [NICFW_C_WIRE_REPLY] = "dropped_wire_replies",
    [NICFW_C_NOT_ALLOWED] = "dropped_not_allowed",
    [NICFW_C_REPLY_TOO_LARGE] = "refused_larger_reply",
    [NICFW_C_ERR_RATE_LIMITED] = "error_rate_limited",
    [NICFW_C_ERROR_NOTICES] = "error_notices",
    [NICFW_C_HEALTH_ANSWERED] = "health_answered",
    [NICFW_C_HEALTH_PASSED_UP] = "health_passed_up",
    [NICFW_C_HEALTH_DROPPED] = "health_dropped",
    [NICFW_C_ERR_DRAINING] = "error_draining",
    [NICFW_C_ERR_UNAVAILABLE] = "error_unavailable",
    [NICFW_C_NOT_HELD] = "refused_not_held",
    [NICFW_C_HOST_PROBES] = "host_probes",
    [NICFW_C_HOST_REPORTS] = "host_reports",
};

const char *nicfw_disp_counter_name(unsigned c)
{
	return c < NICFW_C__COUNT ? counter_names[c] : "?";
}

/* What an executor loaded as md says it takes and gives, checked: 0 or -EINVAL with err. */
static int model_check(const struct nicfw_disp_model *md, char *err, size_t errlen)
{
	if (!md->x || !md->x->m || md->x->first != md->layer || md->x->in_bytes != md->in_bytes ||
	    md->x->out_bytes != md->classes * 8 || !md->in_bytes || !md->in_count || !md->classes ||
	    md->classes > 65535 || proto_fmt_bytes(md->in_fmt, 1) == 0 ||
	    ((md->in_c || md->in_h || md->in_w) &&
	     (uint64_t)md->in_c * md->in_h * md->in_w != md->in_count)) {
		snprintf(
		    err, errlen,
		    "dispatcher: model %#x: input %u x %s in %u bytes, %u classes, from op %u: "
		    "not what its executor (loaded: %s) takes and gives",
		    md->model_id, md->in_count, proto_fmt_name(md->in_fmt), md->in_bytes,
		    md->classes, md->layer, md->x && md->x->m ? "yes" : "no");
		return -EINVAL;
	}
	return 0;
}

/* Slot k (not polled) holds md: its reply sizes, its shape reason, its request buffers. */
static int slot_fill(struct nicfw_disp *d, uint32_t k, const struct nicfw_disp_model *md)
{
	struct nicfw_disp_model *s = &d->cfg.model[k];

	*s = *md;
	if (!s->in_c && !s->in_h && !s->in_w) {
		s->in_c = s->in_count;
		s->in_h = s->in_w = 1;
	}
	d->resp_bytes[k] = proto_wire_bytes(PROTO_RESP_HDR_LEN, s->classes * 8, d->cfg.payload);
	snprintf(d->shape_reason[k], sizeof(d->shape_reason[k]), "bad_shape: expects %s %ux%ux%u",
		 proto_fmt_name(s->in_fmt), s->in_c, s->in_h, s->in_w);
	for (uint32_t i = 0; i < NICFW_DISP_QUEUE; i++) {
		struct disp_req *r = &d->q[k].slot[i];

		r->in = aligned_alloc(64, (s->in_bytes + 63) & ~63u);
		r->out = calloc(s->classes, sizeof(double));
		if (!r->in || !r->out)
			return -ENOMEM;
		memset(r->in, 0, (s->in_bytes + 63) & ~63u);
	}
	return 0;
}

void nicfw_disp_free(struct nicfw_disp *d)
{
	if (!d)
		return;
	for (uint32_t m = 0; m < NICFW_DISP_MAX_MODELS; m++)
		nicfw_disp_slot_clear(d, m);
	free(d->tm);
	free(d->body);
	proto_reasm_destroy(d->ra);
	free(d);
}

struct nicfw_disp *nicfw_disp_create(const struct nicfw_disp_config *cfg, char *err, size_t errlen)
{
	struct proto_reasm_config rc = {0};
	struct nicfw_disp *d;
	uint32_t max_in = 8, max_cls = 1;

	if (cfg->n_models > NICFW_DISP_MAX_MODELS || !cfg->tx || cfg->payload < PROTO_MIN_PAYLOAD ||
	    cfg->payload > PROTO_FRAME_MAX - PROTO_FRAME_HDRS ||
	    cfg->trust.n_allow > PROTO_TRUST_MAX_ALLOW) {
		snprintf(err, errlen,
			 "dispatcher: %u models (at most %u), payload %u (%u to %u), %u allowed "
			 "prefixes (at most %u), tx required",
			 cfg->n_models, NICFW_DISP_MAX_MODELS, cfg->payload, PROTO_MIN_PAYLOAD,
			 PROTO_FRAME_MAX - PROTO_FRAME_HDRS, cfg->trust.n_allow,
			 PROTO_TRUST_MAX_ALLOW);
		return NULL;
	}
	for (uint32_t m = 0; m < cfg->n_models; m++) {
		const struct nicfw_disp_model *md = &cfg->model[m];

		if (model_check(md, err, errlen))
			return NULL;
		for (uint32_t k = 0; k < m; k++)
			if (cfg->model[k].model_id == md->model_id) {
				snprintf(err, errlen, "dispatcher: model id %#x given twice",
					 md->model_id);
				return NULL;
			}
		max_in = md->in_bytes > max_in ? md->in_bytes : max_in;
		max_cls = md->classes > max_cls ? md->classes : max_cls;
	}
	d = calloc(1, sizeof(*d));
	if (!d)
		goto err_nomem;
	d->cfg = *cfg;
	d->max_in = max_in;
	d->max_cls = max_cls;
	memset(d->host_mac, 0xff, 6); /* broadcast until the host's first report */
	rc.slots = cfg->reasm_slots ? cfg->reasm_slots : 64;
	rc.max_msg = max_in;
	rc.timeout_ns = cfg->reasm_timeout_ns ? cfg->reasm_timeout_ns : 1000000000ull;
	d->ra = proto_reasm_create(&rc);
	d->tm = calloc(NICFW_DISP_MAX_MODELS, sizeof(*d->tm));
	d->body = calloc(max_cls, 8);
	if (!d->ra || !d->tm || !d->body)
		goto err_free;
	for (uint32_t m = 0; m < cfg->n_models; m++) {
		if (slot_fill(d, m, &cfg->model[m]))
			goto err_free;
		d->order[m] = (uint8_t)m;
		d->named[m] = d->polled[m] = true;
	}
	return d;

err_free:
	nicfw_disp_free(d);
err_nomem:
	snprintf(err, errlen, "dispatcher: out of memory");
	return NULL;
}

/* --- frames ------------------------------------------------------------------------------ */

/* Send the UDP payload of `plen` bytes already at d->frame + PROTO_FRAME_HDRS. */
static void send_udp(struct nicfw_disp *d, const struct disp_reply *to, uint32_t plen)
{
	uint32_t len = proto_frame_udp(d->frame, &to->a, plen, false);

	if (d->cfg.tx(d->cfg.tx_arg, (enum nicfw_port)to->port, d->frame, len))
		d->c[NICFW_C_TX_FAIL]++;
}

/* What the trust policy counts its verdicts under (SEND: the caller's own counters). */
static const enum nicfw_disp_counter trust_counter[PROTO_TRUST__COUNT] = {
    [PROTO_TRUST_NOT_ALLOWED] = NICFW_C_NOT_ALLOWED,
    [PROTO_TRUST_TOO_LARGE] = NICFW_C_REPLY_TOO_LARGE,
    [PROTO_TRUST_RATE_LIMITED] = NICFW_C_ERR_RATE_LIMITED,
};

/* The trust policy's verdict (protocol/trust.h) on a reply of kind `reply` (0: admission) and at
 * least out_bytes to `to`; *cap: the most bytes it may take. The host port is trusted. */
static enum proto_trust_verdict disp_decide(struct nicfw_disp *d, const struct disp_reply *to,
					    unsigned reply, uint32_t out_bytes, uint32_t *cap)
{
	const struct proto_trust_ask q = {
	    .src = to->a.dip,
	    .flags = to->port == NICFW_PORT_HOST ? PROTO_TRUST_F_TRUSTED : 0,
	    .reply = (uint8_t)reply,
	    .in_bytes = to->in_bytes,
	    .out_bytes = out_bytes};

	return proto_trust_decide(&d->cfg.trust, &q, &d->rl[proto_trust_slot(q.src)], d->now, cap);
}

/* An ERROR for `to` at d->frame's payload, its reason "nic: " + reason (NULL: the code's name)
 * cut to fit cap: bytes, or <= 0 on failure. */
static int build_error(struct nicfw_disp *d, const struct disp_reply *to, uint32_t model_id,
		       uint64_t request_id, enum proto_error_code code, uint32_t detail,
		       const char *reason, uint32_t cap)
{
	const size_t room = sizeof(d->frame) - PROTO_FRAME_HDRS;
	struct proto_msg m;

	proto_msg_init(&m, PROTO_ERROR, model_id, request_id);
	m.err.code = (uint16_t)code;
	m.err.detail = detail;
	if (to->notice) {
		m.hdr_len = PROTO_ERROR_NOTICE_HDR_LEN;
		m.err.host_ref = to->host_ref;
		m.err.cookie = to->cookie;
	}
	return proto_build_error_cut(&m, "nic: ", reason ? reason : proto_error_name(code),
				     d->frame + PROTO_FRAME_HDRS, cap < room ? cap : room);
}

/* An ERROR with its reason (NULL: the code's name), as the trust policy decides: counted by its
 * code (unless the source is not allowed at all) and by the verdict, sent when it says so. */
static void send_error_why(struct nicfw_disp *d, const struct disp_reply *to, uint32_t model_id,
			   uint64_t request_id, enum proto_error_code code, uint32_t detail,
			   const char *reason, enum nicfw_disp_counter counter)
{
	uint32_t cap;
	enum proto_trust_verdict v =
	    disp_decide(d, to, PROTO_ERROR,
			to->notice ? PROTO_ERROR_NOTICE_HDR_LEN : PROTO_ERROR_HDR_LEN, &cap);
	int n;

	if (v != PROTO_TRUST_NOT_ALLOWED)
		d->c[counter]++;
	if (v != PROTO_TRUST_SEND) {
		d->c[trust_counter[v]]++;
		return;
	}
	n = build_error(d, to, model_id, request_id, code, detail, reason, cap);
	if (n <= 0) {
		d->c[NICFW_C_ERR_INTERNAL]++;
		return;
	}
	send_udp(d, to, (uint32_t)n);
	d->c[NICFW_C_ERRORS_SENT]++;
	if (to->notice)
		d->c[NICFW_C_ERROR_NOTICES]++;
}

static void send_error(struct nicfw_disp *d, const struct disp_reply *to, uint32_t model_id,
		       uint64_t request_id, enum proto_error_code code, uint32_t detail,
		       enum nicfw_disp_counter counter)
{
	send_error_why(d, to, model_id, request_id, code, detail, NULL, counter);
}

/* The reply to the sender of a parsed IPv4/UDP frame: every address swapped, same port. */
static void reply_to_sender(const struct proto_addr *from_addr, enum nicfw_port from,
			    struct disp_reply *to)
{
	memcpy(to->a.dmac, from_addr->smac, 6);
	memcpy(to->a.smac, from_addr->dmac, 6);
	to->a.dip = from_addr->sip;
	to->a.sip = from_addr->dip;
	to->a.dport = from_addr->sport;
	to->a.sport = from_addr->dport;
	to->port = (uint8_t)from;
}

static enum nicfw_disp_action disp_arp(struct nicfw_disp *d, enum nicfw_port from, uint8_t *f,
				       uint32_t len)
{
	const bool wire = from == NICFW_PORT_WIRE;
	const uint8_t *smac;
	uint32_t sip;
	bool reply = proto_arp_reply(f, len, d->cfg.mac, wire ? d->cfg.ip : 0, &sip, &smac);

	if (wire && sip)
		proto_neigh_learn(&d->neigh, sip, smac);
	if (!reply)
		return NICFW_DISP_PASS;
	d->c[NICFW_C_ARP_REPLIES]++;
	return NICFW_DISP_REPLY;
}

/* --- inference --------------------------------------------------------------------------- */

static int disp_model(const struct nicfw_disp *d, uint32_t model_id)
{
	for (uint32_t i = 0; i < d->cfg.n_models; i++)
		if (d->cfg.model[d->order[i]].model_id == model_id)
			return d->order[i];
	return model_id == 0 && d->cfg.n_models ? d->order[0] : -1; /* 0: the default model */
}

static uint32_t sat32(uint64_t v)
{
	return v > UINT32_MAX ? UINT32_MAX : (uint32_t)v;
}

/* The completion notice: the RESPONSE rm in the notice form, with the ACTIVATION's cookie, out of
 * the host port (r->host) only. */
static void disp_notice(struct nicfw_disp *d, const struct disp_req *r, struct proto_msg *rm,
			size_t body_len)
{
	struct proto_frag fr;
	int n;

	rm->hdr_len = PROTO_RESP_NOTICE_HDR_LEN;
	rm->resp.cookie = r->cookie;
	if (proto_frag_init(&fr, rm, d->body, body_len, d->cfg.payload)) {
		d->c[NICFW_C_ERR_INTERNAL]++;
		return;
	}
	while ((n = proto_frag_next(&fr, d->frame + PROTO_FRAME_HDRS,
				    sizeof(d->frame) - PROTO_FRAME_HDRS)) > 0)
		send_udp(d, &r->host, (uint32_t)n);
	d->c[NICFW_C_HOST_NOTICES]++;
}

/* The NIC time of one RESPONSE of model m, for nicfw_disp_timing (single writer). */
static void disp_timing(struct nicfw_disp *d, uint32_t m, uint64_t ns)
{
	struct nicfw_disp_timing *t = &d->tm[m];

	uint64_t us = ns / 1000;
	unsigned b = us ? 64 - (unsigned)__builtin_clzll(us) : 0;

	b = b < NICFW_DISP_HIST ? b : NICFW_DISP_HIST - 1;
	__atomic_store_n(&t->hist[b], t->hist[b] + 1, __ATOMIC_RELAXED);
	t->ns[t->requests % NICFW_DISP_SAMPLES] = sat32(ns);
	__atomic_store_n(&t->ns_sum, t->ns_sum + ns, __ATOMIC_RELAXED);
	__atomic_store_n(&t->requests, t->requests + 1, __ATOMIC_RELAXED);
}

/* The RESPONSE to r, whose inference started at t_start and was collected at now_ns. */
static void disp_respond(struct nicfw_disp *d, uint32_t m, struct disp_req *r, uint64_t t_start,
			 uint64_t now_ns)
{
	const struct nicfw_disp_model *md = &d->cfg.model[m];
	struct proto_frag fr;
	struct proto_msg rm;
	uint32_t best = 0;
	int n;

	for (uint32_t k = 0; k < md->classes; k++) {
		if (r->out[k] > r->out[best])
			best = k;
		proto_le_put_f64(d->body + 8 * k, r->out[k]);
	}
	proto_msg_init(&rm, PROTO_RESPONSE, r->model_id, r->request_id);
	rm.resp.cls = best;
	rm.resp.num_classes = (uint16_t)md->classes;
	rm.resp.score_fmt = PROTO_FMT_F64;
	rm.resp.executors = r->executors | PROTO_EX_NIC;
	rm.resp.host_ref = r->host_ref;
	rm.resp.t_ns[PROTO_T_RX] = r->t_prior[0];
	rm.resp.t_ns[PROTO_T_QUEUE] = sat32((uint64_t)r->t_prior[1] + (t_start - r->t_in));
	rm.resp.t_ns[PROTO_T_HOST] = r->t_prior[2];
	rm.resp.t_ns[PROTO_T_PACK] = r->t_prior[3];
	rm.resp.t_ns[PROTO_T_NIC] = sat32(now_ns - t_start);
	rm.resp.t_ns[PROTO_T_TOTAL] = sat32((uint64_t)r->t_prior[0] + r->t_prior[1] +
					    r->t_prior[2] + r->t_prior[3] + (now_ns - r->t_in));
	if (proto_frag_init(&fr, &rm, d->body, (size_t)md->classes * 8, d->cfg.payload)) {
		d->c[NICFW_C_ERR_INTERNAL]++;
		return;
	}
	while ((n = proto_frag_next(&fr, d->frame + PROTO_FRAME_HDRS,
				    sizeof(d->frame) - PROTO_FRAME_HDRS)) > 0) {
		send_udp(d, &r->to, (uint32_t)n);
		d->c[NICFW_C_RESP_DGRAMS]++;
	}
	d->c[NICFW_C_ANSWERED]++;
	if (r->notify)
		disp_notice(d, r, &rm, (size_t)md->classes * 8);
}

uint32_t nicfw_disp_poll(struct nicfw_disp *d, uint64_t now_ns)
{
	struct kexec_done done[NICFW_DISP_QUEUE];
	uint32_t sent = 0;

	d->now = now_ns;
	for (uint32_t m = 0; m < NICFW_DISP_MAX_MODELS; m++) {
		struct disp_queue *q = &d->q[m];
		uint32_t n;

		if (!d->polled[m])
			continue;
		if (!q->count && !d->named[m]) { /* replaced and drained: the owner's again */
			__atomic_store_n(&d->polled[m], false, __ATOMIC_RELEASE);
			continue;
		}
		n = q->count ? kexec_poll(d->cfg.model[m].x, done, q->count) : 0;

		for (uint32_t i = 0; i < n; i++) {
			struct disp_req *r = &q->slot[q->head];
			const uint64_t t_start = r->t_in > q->last_done ? r->t_in : q->last_done;

			if (done[i].status) {
				send_error(d, r->host.notice ? &r->host : &r->to, r->model_id,
					   r->request_id, PROTO_ERR_INTERNAL, 0,
					   NICFW_C_ERR_INTERNAL);
			} else {
				disp_respond(d, m, r, t_start, now_ns);
				disp_timing(d, m, now_ns - t_start);
				sent++;
			}
			q->last_done = now_ns;
			q->head = (q->head + 1) % NICFW_DISP_QUEUE;
			q->count--;
		}
	}
	return sent;
}

/* A complete message for model m: queue it (its reply address set from the frame). */
static void disp_accept(struct nicfw_disp *d, uint32_t m, const struct proto_msg *hdr,
			const uint8_t *data, const struct disp_reply *sender, uint64_t now_ns)
{
	const struct nicfw_disp_model *md = &d->cfg.model[m];
	struct disp_queue *q = &d->q[m];
	const uint32_t slot = (q->head + q->count) % NICFW_DISP_QUEUE;
	enum proto_trust_verdict v;
	struct disp_req *r;
	uint32_t cap;
	int ret;

	v = disp_decide(d, sender, PROTO_RESPONSE, d->resp_bytes[m], &cap);
	if (v != PROTO_TRUST_SEND) {
		d->c[trust_counter[v]]++;
		if (v == PROTO_TRUST_TOO_LARGE)
			send_error(d, sender, hdr->model_id, hdr->request_id, PROTO_ERR_TOO_LARGE,
				   d->resp_bytes[m], NICFW_C_ERR_TOO_LARGE);
		return;
	}
	if (q->count == NICFW_DISP_QUEUE) {
		send_error(d, sender, hdr->model_id, hdr->request_id, PROTO_ERR_BUSY,
			   NICFW_DISP_QUEUE, NICFW_C_ERR_BUSY);
		return;
	}
	r = &q->slot[slot];
	memcpy(r->in, data, md->in_bytes);
	ret = kexec_submit(md->x, r->in, 1, r->out, slot);
	if (ret) {
		send_error(d, sender, hdr->model_id, hdr->request_id,
			   ret == -EBUSY ? PROTO_ERR_BUSY : PROTO_ERR_INTERNAL,
			   ret == -EBUSY ? NICFW_DISP_QUEUE : 0,
			   ret == -EBUSY ? NICFW_C_ERR_BUSY : NICFW_C_ERR_INTERNAL);
		return;
	}
	r->request_id = hdr->request_id;
	r->model_id = hdr->model_id;
	r->t_in = now_ns;
	r->to = *sender;
	r->host = *sender;
	r->host.port = NICFW_PORT_HOST;
	r->notify = hdr->type == PROTO_ACTIVATION && d->cfg.notify_host;
	if (hdr->type == PROTO_ACTIVATION) {
		const uint8_t *a = hdr->act.reply_addr;

		r->to.a.dip = proto_get32(a + 12);
		r->to.a.dport = hdr->act.reply_port;
		r->to.a.sport = d->cfg.port;
		r->to.a.sip = d->cfg.ip ? d->cfg.ip : sender->a.sip;
		r->to.port = NICFW_PORT_WIRE;
		memcpy(r->to.a.smac, d->cfg.mac, 6);
		proto_neigh_lookup(&d->neigh, r->to.a.dip, r->to.a.dmac);
		r->executors = hdr->act.executors;
		r->t_prior[0] = hdr->act.t_rx_ns;
		r->t_prior[1] = hdr->act.t_queue_ns;
		r->t_prior[2] = hdr->act.t_host_ns;
		r->t_prior[3] = hdr->act.t_pack_ns;
		r->host_ref = hdr->act.host_ref;
		r->cookie = hdr->act.cookie;
		d->c[NICFW_C_ACTIVATIONS]++;
	} else {
		r->executors = 0;
		r->host_ref = 0;
		r->cookie = 0;
		memset(r->t_prior, 0, sizeof(r->t_prior));
		d->c[NICFW_C_REQUESTS]++;
	}
	q->count++;
}

static bool v4_mapped(const uint8_t *a)
{
	static const uint8_t pre[12] = {0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0xff, 0xff};

	return !memcmp(a, pre, sizeof(pre));
}

/* The type a datagram says it is (its first four bytes: magic, version 1, type), else 0. */
static unsigned claimed_type(const uint8_t *p, uint32_t plen)
{
	if (plen < PROTO_COMMON_LEN || proto_get16(p) != PROTO_MAGIC || p[2] != PROTO_VERSION)
		return 0;
	return p[3];
}

/* The trust boundary of the wire port: what says it is an ACTIVATION, a RESPONSE or an ERROR is
 * the host's to send and the NIC's to answer: from the wire it is dropped and counted. */
static bool wire_refused(struct nicfw_disp *d, unsigned type)
{
	if (type == PROTO_ACTIVATION) {
		d->c[NICFW_C_WIRE_ACTIVATION]++;
		return true;
	}
	if (type == PROTO_RESPONSE || type == PROTO_ERROR) {
		d->c[NICFW_C_WIRE_REPLY]++;
		return true;
	}
	return false;
}

/* The reply to the sender of a datagram of plen bytes saying it is `type`: see struct
 * disp_reply. An ACTIVATION's host_ref and cookie are read from its bytes when its header holds
 * them, so that even one the parser rejects gets its notice. */
static void disp_sender(const struct nicfw_disp *d, enum nicfw_port from,
			const struct proto_addr *fa, const uint8_t *p, uint32_t plen, unsigned type,
			struct disp_reply *to)
{
	const uint8_t *ext = p + PROTO_COMMON_LEN;

	reply_to_sender(fa, from, to);
	to->notice = from == NICFW_PORT_HOST && type == PROTO_ACTIVATION;
	to->in_bytes = plen;
	to->host_ref = 0;
	to->cookie = 0;
	if (to->notice && plen >= PROTO_ACT_HDR_LEN && proto_get16(p + 4) >= PROTO_ACT_HDR_LEN) {
		to->host_ref = proto_get32(ext + 68);
		to->cookie = proto_get64(ext + 72);
	}
}

/* A REQUEST's or ACTIVATION's tensor against model md's input: see nicfw/dispatch.h. */
static bool input_ok(const struct nicfw_disp_model *md, const struct proto_msg *m)
{
	if (m->total_len != md->in_bytes)
		return false;
	if (m->type == PROTO_REQUEST)
		return proto_input_matches(&m->tensor, md->in_fmt, md->in_c, md->in_h, md->in_w);
	return m->tensor.fmt == md->in_fmt && m->tensor.count == md->in_count;
}

/* From the host port: whether m is the host's report to one of our probes (taken, then). */
static bool host_report(struct nicfw_disp *d, const struct disp_reply *to,
			const struct proto_msg *m)
{
	struct nicfw_host_view *h = d->cfg.host;
	struct proto_health_model e;
	uint32_t n;

	if (!h || m->health.kind != PROTO_HEALTH_REPORT || to->a.sip != d->cfg.ip ||
	    to->a.sport != d->cfg.port || m->request_id >> 16 != (h->key & 0xffffffffffffull))
		return false;
	n = m->health.n_models < NICFW_HOST_MAX_MODELS ? m->health.n_models : NICFW_HOST_MAX_MODELS;
	for (uint32_t i = 0; i < n; i++) {
		proto_health_model_get(m, i, &e);
		h->model_id[i] = e.model_id;
	}
	h->n_models = n;
	h->listed = true;
	memcpy(d->host_mac, to->a.dmac, 6);
	d->c[NICFW_C_HOST_REPORTS]++;
	return true;
}

int nicfw_disp_probe_host(struct nicfw_disp *d, uint64_t now_ns)
{
	struct disp_reply to = {.port = NICFW_PORT_HOST};
	int n;

	if (!d->cfg.host)
		return -EINVAL;
	memcpy(to.a.smac, d->cfg.mac, 6);
	memcpy(to.a.dmac, d->host_mac, 6);
	to.a.sip = to.a.dip = d->cfg.ip;
	to.a.sport = to.a.dport = d->cfg.port;
	d->now = now_ns;
	n = proto_build_health_probe(
	    d->frame + PROTO_FRAME_HDRS, sizeof(d->frame) - PROTO_FRAME_HDRS,
	    d->cfg.host->key << 16 | (d->probes++ & 0xffff), PROTO_DEFAULT_PAYLOAD);
	if (n <= 0)
		return n ? n : -EINVAL;
	send_udp(d, &to, (uint32_t)n);
	d->c[NICFW_C_HOST_PROBES]++;
	return 0;
}

/* HEALTH (nicfw/health.h): probes on the wire port for any role or the NIC's are answered. */
static enum nicfw_disp_action disp_health(struct nicfw_disp *d, enum nicfw_port from,
					  const struct disp_reply *to, const struct proto_msg *m,
					  uint32_t plen)
{
	const struct nicfw_health *h = d->cfg.health;
	enum proto_trust_verdict v;
	uint32_t cap;
	int n;

	if (from == NICFW_PORT_HOST)
		return NICFW_DISP_PASS; /* the host's report (or its own probe) to the wire */
	if (m->health.kind != PROTO_HEALTH_PROBE) {
		d->c[NICFW_C_HEALTH_DROPPED]++;
		return NICFW_DISP_CONSUMED;
	}
	if (m->health.role && m->health.role != PROTO_ROLE_NIC) {
		d->c[NICFW_C_HEALTH_PASSED_UP]++;
		return NICFW_DISP_PASS;
	}
	v = disp_decide(d, to, PROTO_HEALTH, PROTO_HEALTH_HDR_LEN + PROTO_HEALTH_IDENT_LEN, &cap);
	if (v == PROTO_TRUST_NOT_ALLOWED) {
		d->c[NICFW_C_NOT_ALLOWED]++;
		return NICFW_DISP_CONSUMED;
	}
	n = v != PROTO_TRUST_SEND ? 0
				  : nicfw_health_report(h, d->frame + PROTO_FRAME_HDRS,
							sizeof(d->frame) - PROTO_FRAME_HDRS, cap,
							m->request_id, nicfw_disp_pending(d));
	if (n <= 0) {
		d->c[NICFW_C_HEALTH_DROPPED]++;
		return NICFW_DISP_CONSUMED;
	}
	send_udp(d, to, (uint32_t)n);
	d->c[NICFW_C_HEALTH_ANSWERED]++;
	return NICFW_DISP_CONSUMED;
}

static bool host_holds(const struct nicfw_host_view *h, uint32_t model_id)
{
	for (uint32_t i = 0; i < h->n_models; i++)
		if (h->model_id[i] == model_id)
			return true;
	return model_id == 0 && h->n_models; /* the host's default model */
}

/* A REQUEST that is not the NIC's to answer (coproc: the NIC holds its model's NIC part): passed
 * up (counted under `up`) when the host can take it, else answered (nicfw/dispatch.h). */
static enum nicfw_disp_action disp_up(struct nicfw_disp *d, const struct disp_reply *sender,
				      const struct proto_msg *m, bool coproc,
				      enum nicfw_disp_counter up)
{
	const struct nicfw_host_view *h = d->cfg.host;
	bool held;

	if (!h) {
		d->c[up]++;
		return NICFW_DISP_PASS;
	}
	held = coproc || (h->listed ? host_holds(h, m->model_id) : h->fresh);
	if (held && h->up) {
		d->c[up]++;
		return NICFW_DISP_PASS;
	}
	if (held)
		send_error_why(d, sender, m->model_id, m->request_id, PROTO_ERR_UNAVAILABLE,
			       m->model_id, "unavailable: its host does not answer",
			       NICFW_C_ERR_UNAVAILABLE);
	else {
		d->c[NICFW_C_NOT_HELD]++; /* the ERROR is counted by its code, error_unknown_model
					   */
		send_error(d, sender, m->model_id, m->request_id, PROTO_ERR_UNKNOWN_MODEL,
			   m->model_id, NICFW_C_ERR_UNKNOWN_MODEL);
	}
	return NICFW_DISP_CONSUMED;
}

static enum nicfw_disp_action disp_infer(struct nicfw_disp *d, enum nicfw_port from,
					 const struct proto_addr *fa, const uint8_t *p,
					 uint32_t plen, uint64_t now_ns)
{
	const struct nicfw_disp_model *md;
	struct proto_reasm_msg msg;
	struct disp_reply sender, whole;
	enum proto_ra_verdict rv;
	struct proto_msg m;
	enum proto_verdict v;
	unsigned type;
	uint32_t cap;
	int k;

	d->c[NICFW_C_INFER_RX]++;
	v = proto_hdr_parse(p, p + plen, plen, &m);
	d->verdicts[v]++;
	type = claimed_type(p, plen);
	if (from == NICFW_PORT_WIRE && wire_refused(d, type))
		return NICFW_DISP_CONSUMED;
	disp_sender(d, from, fa, p, plen, type, &sender);
	if (v != PROTO_OK) {
		/* answer only what says it is a request to us; never answer junk or replies */
		if (type == PROTO_REQUEST || type == PROTO_ACTIVATION)
			send_error(d, &sender, proto_get32(p + 8), proto_get64(p + 16),
				   PROTO_ERR_BAD_REQUEST, v, NICFW_C_ERR_BAD_REQUEST);
		return NICFW_DISP_CONSUMED;
	}
	if (m.type == PROTO_HEALTH && from == NICFW_PORT_HOST && host_report(d, &sender, &m))
		return NICFW_DISP_CONSUMED;
	if (m.type == PROTO_HEALTH && d->cfg.health)
		return disp_health(d, from, &sender, &m, plen);
	if (m.type != PROTO_REQUEST && m.type != PROTO_ACTIVATION) {
		d->c[NICFW_C_PASSED_UP_TYPE]++;
		return NICFW_DISP_PASS;
	}
	k = disp_model(d, m.model_id);
	if (k < 0) {
		if (m.type == PROTO_ACTIVATION) {
			d->c[NICFW_C_UNKNOWN_MODEL]++;
			send_error(d, &sender, m.model_id, m.request_id, PROTO_ERR_UNKNOWN_MODEL,
				   m.model_id, NICFW_C_ERR_UNKNOWN_MODEL);
			return NICFW_DISP_CONSUMED;
		}
		return disp_up(d, &sender, &m, false, NICFW_C_UNKNOWN_MODEL);
	}
	md = &d->cfg.model[k];
	if (m.type == PROTO_REQUEST ? !md->standalone : m.tensor.layer != md->layer) {
		if (m.type == PROTO_ACTIVATION) {
			d->c[NICFW_C_NOT_MY_LAYER]++;
			send_error(d, &sender, m.model_id, m.request_id, PROTO_ERR_UNSUPPORTED,
				   md->layer, NICFW_C_ERR_UNSUPPORTED_LAYER);
			return NICFW_DISP_CONSUMED;
		}
		return disp_up(d, &sender, &m, true, NICFW_C_NOT_MY_LAYER);
	}
	if (disp_decide(d, &sender, 0, 0, &cap) == PROTO_TRUST_NOT_ALLOWED) {
		d->c[NICFW_C_NOT_ALLOWED]++;
		return NICFW_DISP_CONSUMED;
	}
	if (!input_ok(md, &m)) {
		send_error_why(d, &sender, m.model_id, m.request_id, PROTO_ERR_BAD_SHAPE,
			       md->in_count, d->shape_reason[k], NICFW_C_ERR_BAD_SHAPE);
		return NICFW_DISP_CONSUMED;
	}
	if (m.type == PROTO_REQUEST && d->cfg.health &&
	    d->cfg.health->state == PROTO_HEALTH_DRAINING) {
		send_error(d, &sender, m.model_id, m.request_id, PROTO_ERR_BUSY, 1,
			   NICFW_C_ERR_DRAINING);
		return NICFW_DISP_CONSUMED;
	}
	if (m.type == PROTO_ACTIVATION && !v4_mapped(m.act.reply_addr)) {
		send_error(d, &sender, m.model_id, m.request_id, PROTO_ERR_UNSUPPORTED, 6,
			   NICFW_C_ERR_BAD_REQUEST);
		return NICFW_DISP_CONSUMED;
	}
	/* replies to the whole message may be as large as the whole message (at least) */
	whole = sender;
	whole.in_bytes = m.hdr_len + m.total_len;
	if (m.frag_len == m.total_len) {
		disp_accept(d, (uint32_t)k, &m, m.data, &whole, now_ns);
		return NICFW_DISP_CONSUMED;
	}
	d->c[NICFW_C_FRAGMENTS]++;
	rv = proto_reasm_push(d->ra,
			      (uint64_t)from << 63 | (uint64_t)sender.a.dip << 16 | sender.a.dport,
			      &m, now_ns, &msg);
	if (rv == PROTO_RA_COMPLETE) {
		disp_accept(d, (uint32_t)k, &msg.hdr, msg.data, &whole, now_ns);
		proto_reasm_release(d->ra, &msg);
	} else if (rv == PROTO_RA_TABLE_FULL) {
		send_error(d, &sender, m.model_id, m.request_id, PROTO_ERR_BUSY, 0,
			   NICFW_C_ERR_BUSY);
	} else if (rv == PROTO_RA_TOO_LARGE) {
		send_error(d, &sender, m.model_id, m.request_id, PROTO_ERR_TOO_LARGE, md->in_bytes,
			   NICFW_C_ERR_TOO_LARGE);
	}
	return NICFW_DISP_CONSUMED;
}

enum nicfw_disp_action nicfw_disp_rx(struct nicfw_disp *d, enum nicfw_port from, uint8_t *f,
				     uint32_t len, uint64_t now_ns)
{
	const enum nicfw_disp_counter fwd =
	    from == NICFW_PORT_WIRE ? NICFW_C_FWD_TO_HOST : NICFW_C_FWD_TO_WIRE;
	struct proto_addr fa;
	const uint8_t *p;
	uint32_t plen, ihl;

	d->c[from == NICFW_PORT_WIRE ? NICFW_C_RX_WIRE : NICFW_C_RX_HOST]++;
	d->now = now_ns;
	if (from == NICFW_PORT_HOST && d->cfg.host)
		d->cfg.host->last_heard = now_ns ? now_ns : 1;
	switch (proto_frame_parse(f, len, &fa, &p, &plen, &ihl)) {
	case PROTO_FRAME_UDP:
		break;
	case PROTO_FRAME_NOT_IPV4:
		if (disp_arp(d, from, f, len) == NICFW_DISP_REPLY)
			return NICFW_DISP_REPLY;
		d->c[NICFW_C_NOT_IPV4]++;
		goto pass;
	case PROTO_FRAME_BAD:
		d->c[NICFW_C_IP_BAD]++;
		goto pass;
	case PROTO_FRAME_NOT_UDP:
		if (from == NICFW_PORT_WIRE)
			proto_neigh_learn(&d->neigh, fa.sip, fa.smac);
		goto pass;
	case PROTO_FRAME_IP_FRAG:
		if (from == NICFW_PORT_WIRE)
			proto_neigh_learn(&d->neigh, fa.sip, fa.smac);
		if (fa.dport == d->cfg.port)
			d->c[NICFW_C_IP_FRAG]++;
		goto pass;
	}
	if (from == NICFW_PORT_WIRE)
		proto_neigh_learn(&d->neigh, fa.sip, fa.smac);
	if (fa.dport != d->cfg.port)
		goto pass;
	if (ihl != PROTO_IP_HLEN) { /* options: replies are built without them; pass it up */
		d->c[NICFW_C_IP_BAD]++;
		goto pass;
	}
	return disp_infer(d, from, &fa, p, plen, now_ns);
pass:
	d->c[fwd]++;
	return NICFW_DISP_PASS;
}

void nicfw_disp_count(struct nicfw_disp *d, enum nicfw_disp_counter c, uint64_t n)
{
	d->c[c] += n;
}

void nicfw_disp_counters(const struct nicfw_disp *d, uint64_t c[NICFW_C__COUNT],
			 uint64_t verdicts[PROTO_VERDICT__COUNT])
{
	for (unsigned i = 0; i < NICFW_C__COUNT; i++)
		c[i] = __atomic_load_n(&d->c[i], __ATOMIC_RELAXED);
	for (unsigned i = 0; verdicts && i < PROTO_VERDICT__COUNT; i++)
		verdicts[i] = __atomic_load_n(&d->verdicts[i], __ATOMIC_RELAXED);
}

void nicfw_disp_reasm_stats(const struct nicfw_disp *d, struct proto_reasm_stats *st)
{
	proto_reasm_stats(d->ra, st);
}

uint32_t nicfw_disp_pending(const struct nicfw_disp *d)
{
	uint32_t n = 0;

	for (uint32_t m = 0; m < NICFW_DISP_MAX_MODELS; m++)
		n += __atomic_load_n(&d->q[m].count, __ATOMIC_RELAXED);
	return n;
}

int nicfw_disp_slot_set(struct nicfw_disp *d, uint32_t k, const struct nicfw_disp_model *md,
			char *err, size_t errlen)
{
	int ret = model_check(md, err, errlen);

	if (ret)
		return ret;
	if (md->in_bytes > d->max_in || md->classes > d->max_cls) {
		snprintf(err, errlen,
			 "needs %u input bytes, %u classes; the buffers set at start "
			 "hold %u, %u: restart to serve it",
			 md->in_bytes, md->classes, d->max_in, d->max_cls);
		return -E2BIG;
	}
	nicfw_disp_slot_clear(d, k);
	ret = slot_fill(d, k, md);
	if (ret) {
		nicfw_disp_slot_clear(d, k);
		snprintf(err, errlen, "dispatcher: out of memory");
	}
	return ret;
}

void nicfw_disp_slot_clear(struct nicfw_disp *d, uint32_t k)
{
	for (uint32_t i = 0; i < NICFW_DISP_QUEUE; i++) {
		free(d->q[k].slot[i].in);
		free(d->q[k].slot[i].out);
	}
	memset(&d->q[k], 0, sizeof(d->q[k]));
	memset(&d->cfg.model[k], 0, sizeof(d->cfg.model[k]));
	if (d->tm)
		memset(&d->tm[k], 0, sizeof(d->tm[k]));
}

void nicfw_disp_map(struct nicfw_disp *d, const uint8_t *slots, uint32_t n)
{
	memset(d->named, 0, sizeof(d->named));
	for (uint32_t i = 0; i < n; i++) {
		d->order[i] = slots[i];
		d->named[slots[i]] = true;
		__atomic_store_n(&d->polled[slots[i]], true, __ATOMIC_RELEASE);
	}
	d->cfg.n_models = n;
}

bool nicfw_disp_slot_polled(const struct nicfw_disp *d, uint32_t k)
{
	return __atomic_load_n(&d->polled[k], __ATOMIC_ACQUIRE);
}

const struct nicfw_disp_timing *nicfw_disp_timing(const struct nicfw_disp *d, uint32_t model)
{
	return &d->tm[model];
}

/* The dispatcher's view of an executor holding the NIC's part [x->first, n) of x->m. */
int nicfw_disp_model_init(struct nicfw_disp_model *md, uint32_t model_id, struct kexec *x,
			  char *err, size_t errlen)
{
	const struct model *m = x->m;
	const struct model_shape *in = &m->layers[x->first].in;

	if (in->fmt != MODEL_FMT_U8 && in->fmt != MODEL_FMT_BITS) {
		snprintf(
		    err, errlen,
		    "model %s: the NIC's part from op %u takes neither u8 nor bits (format %u)",
		    m->name, x->first, in->fmt);
		return -EINVAL;
	}
	memset(md, 0, sizeof(*md));
	md->model_id = model_id;
	md->x = x;
	md->layer = x->first;
	md->in_fmt = in->fmt == MODEL_FMT_U8 ? PROTO_FMT_U8 : PROTO_FMT_BITS;
	md->in_count = (uint32_t)model_shape_elems(in);
	md->in_bytes = x->in_bytes;
	md->classes = x->out_bytes / 8;
	md->standalone = x->first == 0;
	if (md->standalone) { /* REQUESTs: the model's input shape, checked in full */
		md->in_c = m->input.c;
		md->in_h = m->input.h;
		md->in_w = m->input.w;
	}
	return 0;
}
