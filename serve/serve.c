// SPDX-License-Identifier: MIT
/*
 * splitnic serve: a minimal inference server on a kernel UDP socket, for users without DPDK.
 * The same kernels (the CPU executor of exec/kexec.h, kern_forward underneath), the same wire
 * protocol (docs/wire-protocol.md) and the same answers as splitnic-host host-only: one RESPONSE
 * (f64 scores, executors CPU; timing: queue = from the receive of the burst that completed the
 * request to its compute, host, tx, total) or one ERROR per REQUEST, fragments
 * reassembled in a fixed table, every datagram counted by reason.
 *
 * One thread: recvmmsg a burst, handle each datagram (serve_datagram), answer at once. All
 * memory is allocated before the first datagram: the executor's buffers at load, the reassembly
 * table, the receive and reply buffers.
 *
 * Answers, as the DPDK servers give them (reasons with "serve: " before, made at load):
 *   parser rejected a datagram   ERROR bad_request (detail: the verdict) when its first four
 *                                bytes say a version-1 REQUEST; anything else is not answered
 *   ACTIVATION, RESPONSE, ERROR  not answered (counted): never reflect replies
 *   unknown model                ERROR unknown_model (detail: the model id); model id 0 is the
 *                                first model
 *   format or shape differs      ERROR bad_shape (detail: the model's input elements; reason
 *                                "bad_shape: expects FMT CxHxW", the model's input), by
 *                                proto_input_matches(), the check every executor shares
 *   reassembly table full        ERROR busy (detail 0); message too large: ERROR too_large
 *                                (detail: the limit in bytes)
 *   reply above request          ERROR too_large (detail: the RESPONSE's bytes), no --allow
 *   draining                     ERROR busy (detail 1)
 *   the executor failed          ERROR internal
 *
 * Trust: the one policy of every server (protocol/trust.h, docs/wire-protocol.md) decides each
 * datagram's admission and each reply, and serve counts its verdict: with --allow, datagrams
 * from other sources are dropped and counted (not_allowed), never answered; without it every
 * source is answered, never with a reply larger than what caused it (the ERROR's reason cut to
 * fit, none for a datagram shorter than an ERROR's header; a RESPONSE larger than its REQUEST
 * refused with ERROR too_large; both counted refused_larger_reply). ERRORs are rate-limited per
 * source address (--error-rate, 0: no limit, and --error-burst; IPv6 sources folded to 32 bits
 * for the bucket, never on an allow-list).
 *
 * HEALTH: probes for any role or serve's are answered with the identity (--name), the models
 * (whole, from op 0), the messages held in reassembly (in_flight) and the state, never longer
 * than the probe. SIGINT/SIGTERM: draining; new REQUESTs (and fragments of messages not held)
 * are refused with ERROR busy (detail 1), the messages held are finished (or expire, 1 s after
 * their first fragment), then the counters are printed and serve exits 0.
 */
#include <arpa/inet.h>
#include <errno.h>
#include <netdb.h>
#include <poll.h>
#include <signal.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <unistd.h>

#include "conf/args.h"
#include "exec/kexec.h"
#include "kernels/kern.h"
#include "metrics/metrics.h"
#include "protocol/frame.h"
#include "protocol/net_util.h"
#include "protocol/reasm.h"
#include "protocol/trust.h"
#include "serve/models.h"
#include "serve/serve.h"
#include "split/stats.h"

#define SERVE_BURST    32
#define SERVE_SLOTS    64
#define SERVE_MAX_MSG  (16u << 20)
#define SERVE_REASM_NS 1000000000ull
#define SERVE_IDLE_MS  100 /* a receive waits at most this long: reassembly expiry, the drain */

/* The counters: their enum and their names in the report, from one list. */
#define SERVE_COUNTERS(X)                                                                          \
	X(DATAGRAMS, "datagrams")                                                                  \
	X(REJECTED, "rejected")                                                                    \
	X(OTHER_TYPE, "other_type")                                                                \
	X(FRAGMENTS, "fragments")                                                                  \
	X(REQUESTS, "requests")                                                                    \
	X(ANSWERED, "answered")                                                                    \
	X(ERR_BAD_REQUEST, "error_bad_request")                                                    \
	X(ERR_UNKNOWN_MODEL, "error_unknown_model")                                                \
	X(ERR_BAD_SHAPE, "error_bad_shape")                                                        \
	X(ERR_BUSY, "error_busy")                                                                  \
	X(ERR_TOO_LARGE, "error_too_large")                                                        \
	X(ERR_INTERNAL, "error_internal")                                                          \
	X(SEND_FAIL, "send_fail")                                                                  \
	X(NOT_ALLOWED, "not_allowed")                                                              \
	X(ERR_REPLY_LARGER, "error_reply_larger")                                                  \
	X(ERR_DRAINING, "error_draining")                                                          \
	X(ERRORS_SENT, "errors_sent")                                                              \
	X(ERRORS_LIMITED, "errors_rate_limited")                                                   \
	X(HEALTH_ANSWERED, "health_answered")                                                      \
	X(HEALTH_DROPPED, "health_dropped")                                                        \
	X(REFUSED_LARGER, "refused_larger_reply")                                                  \
	X(BATCHES, "batches")

#define SC_ENUM(id, name) SC_##id,
#define SC_NAME(id, name) name,

enum serve_counter { SERVE_COUNTERS(SC_ENUM) SC__COUNT };

static const char *const sc_names[SC__COUNT] = {SERVE_COUNTERS(SC_NAME)};

static const char *const serve_stage_names[SERVE_H__COUNT] = {"total", "queue", "compute"};

struct serve {
	int fd;
	uint32_t payload;
	struct serve_table *tab; /* the models: replaced whole by a reload (serve/models.h) */
	struct proto_reasm *ra;
	uint8_t *out; /* one reply datagram */
	bool draining;
	uint64_t now; /* ns: the current burst's receive */
	struct proto_trust_cfg trust;
	uint64_t rl[PROTO_TRUST_SLOTS]; /* ERRORs per source: GCRA times */
	char ident[PROTO_HEALTH_IDENT_LEN + 1];
	uint64_t c[SC__COUNT];
	uint64_t verdicts[PROTO_VERDICT__COUNT];
	uint64_t ra_verdicts[PROTO_RA__COUNT];
	uint32_t held;		  /* messages in reassembly, as of the last loop turn */
	struct metrics_keys keys; /* the metrics endpoint's (its thread's) */
	uint64_t rgen;		  /* the metrics thread's reads: odd while inside one */
	struct serve_hist hist[SERVE_MAX_HISTS];	/* per model name, ever */
	uint32_t n_hist;				/* atomic: names in hist */
	struct metrics_log2 hist_spare[SERVE_H__COUNT]; /* names beyond SERVE_MAX_HISTS */
	struct serve_reloader reload;
};

static volatile sig_atomic_t serve_stop, serve_hup;

static void on_signal(int sig)
{
	serve_stop = sig;
}

static void on_hup(int sig)
{
	serve_hup = sig;
}

static void serve_send(struct serve *sv, const struct sockaddr *to, socklen_t tolen, int n)
{
	if (n <= 0 || sendto(sv->fd, sv->out, (size_t)n, 0, to, tolen) != n)
		sv->c[SC_SEND_FAIL]++;
}

/* Who sent a datagram, and what caused a reply (the trust policy's measure). */
struct serve_src {
	const struct sockaddr *sa;
	socklen_t len;
	uint32_t ip;	   /* IPv4 (host order), or an IPv6 address folded to 32 bits */
	bool v6;	   /* an IPv6 source: never on an allow-list */
	uint32_t in_bytes; /* the UDP payload that caused the reply */
	uint64_t key;	   /* the reassembly table's name for it */
};

/* The trust policy's verdict (protocol/trust.h) on a reply of kind `reply` (0: admission) of at
 * least out_bytes to src, counted unless SEND; *cap: the most bytes the reply may take. */
static enum proto_trust_verdict serve_trust(struct serve *sv, const struct serve_src *src,
					    unsigned reply, uint32_t out_bytes, uint32_t *cap)
{
	const struct proto_trust_ask q = {.src = src->ip,
					  .flags = src->v6 ? PROTO_TRUST_F_UNNAMED : 0,
					  .reply = (uint8_t)reply,
					  .in_bytes = src->in_bytes,
					  .out_bytes = out_bytes};
	enum proto_trust_verdict v =
	    proto_trust_decide(&sv->trust, &q, &sv->rl[proto_trust_slot(src->ip)], sv->now, cap);

	if (v == PROTO_TRUST_NOT_ALLOWED)
		sv->c[SC_NOT_ALLOWED]++;
	else if (v == PROTO_TRUST_RATE_LIMITED)
		sv->c[SC_ERRORS_LIMITED]++;
	else if (v == PROTO_TRUST_TOO_LARGE) /* a probe too short for any report: dropped */
		sv->c[reply == PROTO_HEALTH ? SC_HEALTH_DROPPED : SC_REFUSED_LARGER]++;
	return v;
}

/* An ERROR to src as the trust policy decides (its reason cut to fit, or none); counted under
 * why unless the source is not allowed. */
static void serve_error(struct serve *sv, const struct serve_src *src, uint32_t model_id,
			uint64_t request_id, enum proto_error_code code, uint32_t detail,
			enum serve_counter why, const char *reason)
{
	enum proto_trust_verdict v;
	uint32_t cap;
	int n;

	v = serve_trust(sv, src, PROTO_ERROR, PROTO_ERROR_HDR_LEN, &cap);

	if (v != PROTO_TRUST_NOT_ALLOWED)
		sv->c[why]++;
	if (v != PROTO_TRUST_SEND)
		return;
	n = proto_build_error_text(sv->out, cap < sv->payload ? cap : sv->payload, model_id,
				   request_id, code, detail, "serve: ", reason);
	serve_send(sv, src->sa, src->len, n);
	sv->c[SC_ERRORS_SENT]++;
}

static void serve_run(struct serve *sv, struct serve_model *s);

/* A complete REQUEST: checked against the model, its RESPONSE by the trust policy, queued for
 * its model's batch (run when full, or by the loop: serve_run_due). */
static void serve_request(struct serve *sv, const struct proto_msg *m, const uint8_t *data,
			  const struct serve_src *src, uint64_t t_in)
{
	struct serve_model *s = serve_table_find(sv->tab, m->model_id);
	enum proto_trust_verdict v;
	struct serve_req *r;
	uint32_t cap;
	void *in;

	sv->c[SC_REQUESTS]++;
	if (!s) {
		serve_error(sv, src, m->model_id, m->request_id, PROTO_ERR_UNKNOWN_MODEL,
			    m->model_id, SC_ERR_UNKNOWN_MODEL, "unknown model");
		return;
	}
	if (!proto_input_matches(&m->tensor, s->in_fmt, s->m->input.c, s->m->input.h,
				 s->m->input.w) ||
	    m->total_len != s->in_bytes) {
		serve_error(sv, src, m->model_id, m->request_id, PROTO_ERR_BAD_SHAPE, s->in_count,
			    SC_ERR_BAD_SHAPE, s->shape_reason);
		return;
	}
	v = serve_trust(sv, src, PROTO_RESPONSE, s->resp_bytes, &cap);
	if (v != PROTO_TRUST_SEND) {
		if (v == PROTO_TRUST_TOO_LARGE)
			serve_error(sv, src, m->model_id, m->request_id, PROTO_ERR_TOO_LARGE,
				    s->resp_bytes, SC_ERR_REPLY_LARGER,
				    "reply larger than the request: front-end not allowed");
		return;
	}
	r = serve_batch_slot(&s->b, &in);
	memcpy(in, data, s->in_bytes);
	memcpy(&r->to, src->sa, src->len);
	r->tolen = src->len;
	r->model_id = m->model_id;
	r->request_id = m->request_id;
	r->in_bytes = src->in_bytes;
	r->t_in = t_in;
	if (serve_batch_add(&s->b))
		serve_run(sv, s);
}

/* The source of a datagram of len bytes: its address for the rate limit and the allow-list, a
 * key for the reassembly table (address and port). */
static void serve_source(const struct serve *sv, const struct sockaddr *a, socklen_t alen,
			 size_t len, struct serve_src *src)
{
	const uint8_t *p = (const uint8_t *)a;
	uint64_t h = 14695981039346656037ull;
	size_t n = alen < sizeof(struct sockaddr_in6) ? alen : sizeof(struct sockaddr_in6);
	bool v4 = false;

	for (size_t i = 0; i < n; i++)
		h = (h ^ p[i]) * 1099511628211ull;
	src->sa = a;
	src->len = alen;
	src->key = h;
	src->in_bytes = len > UINT32_MAX ? UINT32_MAX : (uint32_t)len;
	if (a->sa_family == AF_INET) {
		src->ip = ntohl(((const struct sockaddr_in *)(const void *)a)->sin_addr.s_addr);
		v4 = true;
	} else {
		const struct in6_addr *a6 =
		    &((const struct sockaddr_in6 *)(const void *)a)->sin6_addr;

		src->ip = proto_get32(a6->s6_addr + 12);
		v4 = IN6_IS_ADDR_V4MAPPED(a6);
		for (int i = 0; !v4 && i < 12; i += 4)
			src->ip ^= proto_get32(a6->s6_addr + i);
	}
	src->v6 = !v4;
}

/* The RESPONSE to r from its scores (its batch ran from t_run to t_done). */
static void serve_answer(struct serve *sv, struct serve_model *s, const struct serve_req *r,
			 const struct serve_src *src, const double *scores, uint64_t t_run,
			 uint64_t t_done)
{
	struct proto_msg resp;
	struct proto_frag f;
	uint32_t cls = 0;
	int n;

	metrics_log2_add(&s->h[SERVE_H_QUEUE], t_run - r->t_in);
	metrics_log2_add(&s->h[SERVE_H_COMPUTE], t_done - t_run);
	for (uint32_t k = 0; k < s->classes; k++) {
		proto_le_put_f64(s->body + 8 * k, scores[k]);
		if (scores[k] > scores[cls])
			cls = k;
	}
	proto_msg_init(&resp, PROTO_RESPONSE, r->model_id, r->request_id);
	resp.resp.cls = cls;
	resp.resp.num_classes = (uint16_t)s->classes;
	resp.resp.score_fmt = PROTO_FMT_F64;
	resp.resp.executors = PROTO_EX_CPU;
	resp.resp.t_ns[PROTO_T_QUEUE] = (uint32_t)(t_run - r->t_in);
	resp.resp.t_ns[PROTO_T_HOST] = (uint32_t)(t_done - t_run);
	resp.resp.t_ns[PROTO_T_TX] = (uint32_t)(lat_now_ns() - t_done);
	resp.resp.t_ns[PROTO_T_TOTAL] = (uint32_t)(lat_now_ns() - r->t_in);
	if (proto_frag_init(&f, &resp, s->body, (size_t)s->classes * 8, sv->payload)) {
		serve_error(sv, src, r->model_id, r->request_id, PROTO_ERR_INTERNAL, 0,
			    SC_ERR_INTERNAL, "response does not fit");
		return;
	}
	while ((n = proto_frag_next(&f, sv->out, sv->payload)) > 0)
		serve_send(sv, src->sa, src->len, n);
	sv->c[SC_ANSWERED]++;
	metrics_log2_add(&s->h[SERVE_H_TOTAL], lat_now_ns() - r->t_in);
}

/* Model s's batch (serve/batch.h) through its executor, each request answered. */
static void serve_run(struct serve *sv, struct serve_model *s)
{
	struct serve_batch *b = &s->b;
	struct serve_src src;
	uint64_t t_run, t_done;
	int ret;

	t_run = lat_now_ns();
	ret = serve_batch_run(b, &s->x);
	t_done = lat_now_ns();
	sv->c[SC_BATCHES]++;
	for (uint32_t i = 0; i < b->n; i++) {
		const struct serve_req *r = &b->req[i];

		serve_source(sv, (const struct sockaddr *)&r->to, r->tolen, r->in_bytes, &src);
		if (ret)
			serve_error(sv, &src, r->model_id, r->request_id, PROTO_ERR_INTERNAL, 0,
				    SC_ERR_INTERNAL, "executor failed");
		else
			serve_answer(sv, s, r, &src, b->scores + (size_t)i * s->classes, t_run,
				     t_done);
	}
	b->n = 0;
}

/* Whether fd has a datagram before wait_ns pass (false also when a signal came). */
static bool serve_readable(int fd, uint64_t wait_ns)
{
	struct pollfd p = {.fd = fd, .events = POLLIN};
	struct timespec ts = {(time_t)(wait_ns / 1000000000u), (long)(wait_ns % 1000000000u)};

	return ppoll(&p, 1, &ts, NULL) > 0;
}

/* The batches due now run; the time until the next one is due (UINT64_MAX: none waits). */
static uint64_t serve_run_due(struct serve *sv, uint64_t now)
{
	uint64_t next = UINT64_MAX;

	for (uint32_t k = 0; k < sv->tab->n_models; k++) {
		uint64_t w = serve_batch_wait_ns(&sv->tab->sm[k].b, now);

		if (!w)
			serve_run(sv, &sv->tab->sm[k]);
		else if (w < next)
			next = w;
	}
	return next;
}

/* A HEALTH probe for any role or serve's: the report, never longer than the probe. */
static void serve_health(struct serve *sv, const struct proto_msg *m, const struct serve_src *src)
{
	struct proto_reasm_stats st;
	uint32_t cap;
	int n;

	if (m->health.kind != PROTO_HEALTH_PROBE ||
	    (m->health.role != 0 && m->health.role != PROTO_ROLE_SERVE)) {
		sv->c[SC_HEALTH_DROPPED]++;
		return;
	}
	if (serve_trust(sv, src, PROTO_HEALTH, PROTO_HEALTH_HDR_LEN + PROTO_HEALTH_IDENT_LEN,
			&cap) != PROTO_TRUST_SEND)
		return;
	proto_reasm_stats(sv->ra, &st);
	n = proto_build_health_report(sv->out, sv->payload, cap, m->request_id, PROTO_ROLE_SERVE,
				      sv->draining ? PROTO_HEALTH_DRAINING : PROTO_HEALTH_SERVING,
				      st.in_use, sv->ident, sv->tab->health, sv->tab->n_models);
	if (n <= 0) {
		sv->c[SC_HEALTH_DROPPED]++;
		return;
	}
	serve_send(sv, src->sa, src->len, n);
	sv->c[SC_HEALTH_ANSWERED]++;
}

/*
 * One datagram from `from`, received at t_in: the source checks first (allow-list), then every
 * message type and verdict.
 */
static void serve_datagram(struct serve *sv, const uint8_t *p, size_t len,
			   const struct sockaddr *from, socklen_t fromlen, uint64_t t_in)
{
	struct proto_reasm_msg msg;
	enum proto_ra_verdict rv;
	enum proto_verdict v;
	struct serve_src src;
	struct proto_msg m;
	uint32_t cap;

	sv->c[SC_DATAGRAMS]++;
	serve_source(sv, from, fromlen, len, &src);
	if (serve_trust(sv, &src, 0, 0, &cap) == PROTO_TRUST_NOT_ALLOWED)
		return;
	v = proto_parse(p, len, &m);
	sv->verdicts[v]++;
	if (v != PROTO_OK) {
		sv->c[SC_REJECTED]++;
		if (len >= PROTO_COMMON_LEN && proto_get16(p) == PROTO_MAGIC &&
		    p[2] == PROTO_VERSION && p[3] == PROTO_REQUEST)
			serve_error(sv, &src, proto_get32(p + 8), proto_get64(p + 16),
				    PROTO_ERR_BAD_REQUEST, v, SC_ERR_BAD_REQUEST,
				    proto_verdict_name(v));
		return;
	}
	switch (m.type) {
	case PROTO_REQUEST:
		break;
	case PROTO_HEALTH:
		serve_health(sv, &m, &src);
		return;
	default:
		sv->c[SC_OTHER_TYPE]++;
		return;
	}
	if (m.frag_len != m.total_len)
		sv->c[SC_FRAGMENTS]++;
	/* draining: only the messages held are finished */
	if (sv->draining &&
	    (m.frag_len == m.total_len || !proto_reasm_holds(sv->ra, src.key, &m))) {
		sv->c[SC_REQUESTS]++;
		serve_error(sv, &src, m.model_id, m.request_id, PROTO_ERR_BUSY, 1, SC_ERR_DRAINING,
			    "shutting down");
		return;
	}
	if (m.frag_len == m.total_len) {
		serve_request(sv, &m, m.data, &src, t_in);
		return;
	}
	rv = proto_reasm_push(sv->ra, src.key, &m, t_in, &msg);
	sv->ra_verdicts[rv]++;
	switch (rv) {
	case PROTO_RA_COMPLETE:
		src.in_bytes = msg.len + m.hdr_len; /* at least what the whole REQUEST weighed */
		serve_request(sv, &msg.hdr, msg.data, &src, t_in);
		proto_reasm_release(sv->ra, &msg);
		break;
	case PROTO_RA_TABLE_FULL:
		sv->c[SC_REQUESTS]++;
		serve_error(sv, &src, m.model_id, m.request_id, PROTO_ERR_BUSY, 0, SC_ERR_BUSY,
			    "reassembly table full");
		break;
	case PROTO_RA_TOO_LARGE:
		sv->c[SC_REQUESTS]++;
		serve_error(sv, &src, m.model_id, m.request_id, PROTO_ERR_TOO_LARGE, SERVE_MAX_MSG,
			    SC_ERR_TOO_LARGE, "request too large");
		break;
	default:
		break;
	}
}

/* The HEALTH identity: --name, else serve@HOST:PORT (HOST: the bound address, or this
 * machine's name when bound to every address), cut at 32 bytes. */
static void serve_ident(struct serve *sv, const char *name, const char *bind_addr, const char *port)
{
	char host[256];

	if (name) {
		snprintf(sv->ident, sizeof(sv->ident), "%s", name);
		return;
	}
	snprintf(host, sizeof(host), "%s", bind_addr);
	if ((!strcmp(bind_addr, "0.0.0.0") || !strcmp(bind_addr, "::")) &&
	    gethostname(host, sizeof(host) - 1))
		snprintf(host, sizeof(host), "%s", bind_addr);
	host[sizeof(host) - 1] = 0;
	snprintf(sv->ident, sizeof(sv->ident), "serve@%.20s:%.5s", host, port);
}

static int serve_socket(struct serve *sv, const char *bind_addr, const char *port)
{
	struct addrinfo hints = {.ai_socktype = SOCK_DGRAM, .ai_flags = AI_PASSIVE}, *ai;
	int err = getaddrinfo(bind_addr, port, &hints, &ai);

	if (err) {
		fprintf(stderr, "serve: %s:%s: %s\n", bind_addr, port, gai_strerror(err));
		return -EINVAL;
	}
	sv->fd = socket(ai->ai_family, ai->ai_socktype, ai->ai_protocol);
	if (sv->fd < 0 || bind(sv->fd, ai->ai_addr, ai->ai_addrlen)) {
		fprintf(stderr, "serve: bind %s:%s: %s\n", bind_addr, port, strerror(errno));
		freeaddrinfo(ai);
		return -errno;
	}
	freeaddrinfo(ai);
	net_grow_buffers(sv->fd, 4 << 20);
	if (setsockopt(sv->fd, SOL_SOCKET, SO_RCVTIMEO,
		       &(struct timeval){.tv_usec = SERVE_IDLE_MS * 1000},
		       sizeof(struct timeval))) {
		fprintf(stderr, "serve: SO_RCVTIMEO: %s\n", strerror(errno));
		return -errno;
	}
	return 0;
}

/* The counters, as "name value" pairs after "serve:" or as a JSON object. */
static void serve_report(const struct serve *sv, FILE *f, bool json)
{
	const char *fmt = json ? "%s\"%s%s\": %lu" : "%s%s%s %lu";
	const char *sep = json ? ", " : " ";

	fputs(json ? "{" : "serve:", f);
	for (unsigned k = 0; k < SC__COUNT; k++)
		fprintf(f, fmt, k || !json ? sep : "", "", sc_names[k], (unsigned long)sv->c[k]);
	for (unsigned v = 1; v < PROTO_VERDICT__COUNT; v++)
		if (json || sv->verdicts[v])
			fprintf(f, fmt, sep, "verdict_", proto_verdict_name(v),
				(unsigned long)sv->verdicts[v]);
	for (unsigned v = PROTO_RA_DUPLICATE; v < PROTO_RA__COUNT; v++)
		if (json || sv->ra_verdicts[v])
			fprintf(f, fmt, sep, "reasm_", proto_ra_verdict_name(v),
				(unsigned long)sv->ra_verdicts[v]);
	fputs(json ? "}\n" : "\n", f);
}

/* --- the metrics endpoint (metrics/metrics.h), read from its thread ------------------------- */

static uint64_t rd(const uint64_t *p)
{
	return __atomic_load_n(p, __ATOMIC_RELAXED);
}

/* arg: the table read (one load per scrape, inside the read generation) */
static const char *serve_model_name(void *arg, unsigned i)
{
	const struct serve_table *t = arg;

	return i < t->n_models ? t->sm[i].m->name : NULL;
}

/* Every model name's histograms, those of models unloaded too. */
static void serve_histograms(void *arg, metrics_hist_put put, void *put_arg)
{
	struct serve *sv = arg;
	const uint32_t n = __atomic_load_n(&sv->n_hist, __ATOMIC_ACQUIRE);

	for (uint32_t k = 0; k < n; k++)
		for (unsigned h = 0; h < SERVE_H__COUNT; h++)
			put(put_arg, sv->hist[k].name, serve_stage_names[h], sv->hist[k].h[h].b,
			    METRICS_LOG2_BUCKETS, rd(&sv->hist[k].h[h].sum_ns));
}

/* Table t's models given their name's histograms (before t is served: the packet loop, or the
 * start). A new name takes a free entry, published after its name is written. */
static void serve_hist_assign(struct serve *sv, struct serve_table *t)
{
	for (uint32_t i = 0; i < t->n_models; i++) {
		uint32_t k;

		for (k = 0; k < sv->n_hist && strcmp(sv->hist[k].name, t->sm[i].m->name); k++)
			;
		if (k == SERVE_MAX_HISTS) {
			t->sm[i].h = sv->hist_spare;
			continue;
		}
		if (k == sv->n_hist) {
			snprintf(sv->hist[k].name, sizeof(sv->hist[k].name), "%s",
				 t->sm[i].m->name);
			__atomic_store_n(&sv->n_hist, k + 1, __ATOMIC_RELEASE);
		}
		t->sm[i].h = sv->hist[k].h;
	}
}

/* Between bursts: a reloaded table served from now on (its models' histograms those of their
 * names), the old one handed back to the reloader (serve/models.h). */
static void serve_swap(struct serve *sv)
{
	struct serve_table *t = serve_reloader_take(&sv->reload), *old = sv->tab;

	if (!t)
		return;
	serve_hist_assign(sv, t);
	__atomic_store_n(&sv->tab, t, __ATOMIC_SEQ_CST);
	serve_reloader_retire(&sv->reload, old);
}

static void serve_metrics(void *arg, struct metrics_buf *b)
{
	static const char *const gauges[] = {"in_flight", "models", "models_version", NULL};
	struct serve *sv = arg;
	struct metrics_keys *k = &sv->keys;
	struct serve_table *t;
	char key[64];

	/* an RCU read: the table is not freed before the generation moves on */
	__atomic_add_fetch(&sv->rgen, 1, __ATOMIC_SEQ_CST);
	t = __atomic_load_n(&sv->tab, __ATOMIC_SEQ_CST);
	k->who = "serve";
	k->arg = t;
	k->model_name = serve_model_name;
	k->gauges = gauges;
	for (unsigned c = 0; c < SC__COUNT; c++)
		metrics_keys_put(k, sc_names[c], rd(&sv->c[c]));
	for (unsigned v = 0; v < PROTO_VERDICT__COUNT; v++) {
		snprintf(key, sizeof(key), "verdict_%s", v ? proto_verdict_name(v) : "ok");
		metrics_keys_put(k, key, rd(&sv->verdicts[v]));
	}
	for (unsigned v = 0; v < PROTO_RA__COUNT; v++) {
		snprintf(key, sizeof(key), "reasm_%s", proto_ra_verdict_name(v));
		metrics_keys_put(k, key, rd(&sv->ra_verdicts[v]));
	}
	metrics_keys_put(k, "in_flight", __atomic_load_n(&sv->held, __ATOMIC_RELAXED));
	metrics_keys_put(k, "models", t->n_models);
	metrics_keys_put(k, "models_version", t->version);
	metrics_keys_put(k, "reloads", (uint64_t)conf_reload_count(&sv->reload.t));
	metrics_keys_write(k, b);
	metrics_latency(b, "serve", serve_histograms, sv);
	__atomic_add_fetch(&sv->rgen, 1, __ATOMIC_SEQ_CST);
	metrics_ready(b, "serve", !__atomic_load_n(&sv->draining, __ATOMIC_RELAXED));
}

/* POST /-/reload: a reload asked for, and waited for (off the packet path). */
static int serve_http_reload(void *arg, char *msg, size_t len)
{
	struct serve *sv = arg;

	return serve_reloader_wait(&sv->reload, serve_reloader_ask(&sv->reload), 60000, msg, len);
}

static const char *serve_not_ready(void *arg)
{
	return __atomic_load_n(&((struct serve *)arg)->draining, __ATOMIC_RELAXED) ? "draining"
										   : NULL;
}

#define SERVE_OPT(f) offsetof(struct serve_opts, f)

static const struct conf_opt serve_opts[] = {
    CONF_LIST_ROW("model", "[ID=]MODEL", struct serve_opts, models, n_models,
		  "a model, its id ID or its name's (up to 8); its own batching after it: "
		  ",max-batch=N,max-queue-delay-us=US"),
    CONF_BATCH_ROWS(struct serve_opts, batch, SERVE_MAX_BATCH),
    CONF_STR_ROW("bind", "ADDR", SERVE_OPT(bind), "0.0.0.0", "the address to listen on"),
    CONF_PORT_ROW("port", "P", SERVE_OPT(port), "21326", "its UDP port"),
    CONF_LONG_ROW("payload", "BYTES", SERVE_OPT(payload), 256, 65507, "1400",
		  "UDP payload per datagram"),
    CONF_STR_ROW("stats-file", "FILE", SERVE_OPT(stats), NULL, "the counters as JSON, at exit"),
    CONF_STR_ROW("ready-file", "FILE", SERVE_OPT(ready), NULL, "created once the socket is bound"),
    CONF_TEXT_ROW("name", "NAME", SERVE_OPT(name), PROTO_HEALTH_IDENT_LEN, NULL,
		  "its identity in HEALTH reports (default serve@ADDR:PORT)"),
    CONF_TRUST_ROWS(struct serve_opts, trust, err_rate, err_burst, "1000", "100", "front-end"),
    METRICS_OPT_ROWS(struct serve_opts, metrics_port, metrics_addr),
    CONF_CHOICE_ROW("precision", "certified|exact|float32", SERVE_OPT(precision), "certified",
		    "float layers: float32 + float64 rechecks, float64, plain float32"),
};

const struct conf_cmd cmd_serve_spec = {
    CONF_CMD("splitnic serve",
	     "--model [ID=]MODEL [--model ...] [--bind ADDR] [--port P] [OPTIONS]",
	     "a minimal inference server on a kernel UDP socket (the CPU kernels, no DPDK)",
	     serve_opts, 0, 0, NULL),
    .notes = "Answers REQUESTs and HEALTH probes on a kernel UDP socket with the CPU kernels;\n"
	     "on SIGINT or SIGTERM it drains (finishes the fragmented requests it holds, takes\n"
	     "no new ones) and prints its counters (and writes them to --stats-file as JSON).\n"
	     "--config FILE reads the options from an INI file ([server] keys, one [model NAME]\n"
	     "section each: file, id); SIGHUP or POST /-/reload on the metrics port reloads the\n"
	     "models without a restart (docs/operator-guide.md).\n"};

int cmd_serve(int argc, char **argv)
{
	struct serve_opts o = {0};
	struct conf_args hold;
	struct sigaction sa = {.sa_handler = on_signal}, hup = {.sa_handler = on_hup};
	struct proto_reasm_config rc = {SERVE_SLOTS, SERVE_MAX_MSG, SERVE_REASM_NS};
	struct sockaddr_storage from[SERVE_BURST];
	struct mmsghdr mm[SERVE_BURST];
	struct iovec iov[SERVE_BURST];
	struct proto_reasm_stats st;
	struct metrics_http *http = NULL;
	uint8_t *rx = NULL;
	uint32_t held = 0;
	uint64_t expired = 0, wait = UINT64_MAX;
	struct serve *sv;
	int ret = 1;

	if (serve_opts_read(argc, argv, &o, &hold))
		return 2;
	kern_precision_set_default(kern_precision_from_name(o.precision));
	if (!o.n_models) {
		fprintf(stderr, "serve: no --model (nor a [model NAME] section of --config)\n");
		conf_args_free(&hold);
		return conf_usage_error(&cmd_serve_spec);
	}
	sv = calloc(1, sizeof(*sv));
	if (!sv || (o.stats && conf_output_ok("serve", "--stats-file", o.stats)) ||
	    (o.ready && conf_output_ok("serve", "--ready-file", o.ready))) {
		free(sv);
		conf_args_free(&hold);
		return 1;
	}
	sv->fd = -1;
	sv->payload = (uint32_t)o.payload;
	sv->trust = o.trust;
	proto_trust_set_rate(&sv->trust, (uint32_t)o.err_rate, (uint32_t)o.err_burst);
	serve_ident(sv, o.name, o.bind, o.port);
	sv->tab = serve_table_load(&o, sv->payload, 1);
	if (!sv->tab)
		goto out;
	serve_hist_assign(sv, sv->tab);
	sv->ra = proto_reasm_create(&rc);
	sv->out = malloc(PROTO_MAX_PAYLOAD + 1);
	rx = malloc((size_t)SERVE_BURST * (PROTO_MAX_PAYLOAD + 1));
	if (!sv->ra || !sv->out || !rx) {
		fprintf(stderr, "serve: out of memory\n");
		goto out;
	}
	if (serve_socket(sv, o.bind, o.port))
		goto out;
	if (o.metrics_port) {
		const struct metrics_src src = {sv, serve_metrics, serve_not_ready,
						serve_http_reload};
		char err[256];

		http = metrics_http_start(o.metrics_addr, o.metrics_port, &src, NULL, err,
					  sizeof(err));
		if (!http) {
			fprintf(stderr, "serve: %s\n", err);
			goto out;
		}
		printf("serve: metrics on http://%s:%u/metrics\n",
		       o.metrics_addr ? o.metrics_addr : "0.0.0.0", metrics_http_port(http));
	}
	if (serve_reloader_start(&sv->reload, argc, argv, sv->payload, &sv->rgen, 1)) {
		fprintf(stderr, "serve: the reloader's thread: %s\n", strerror(errno));
		goto out;
	}
	/* no SA_RESTART: a signal must interrupt recvmmsg so that the loop sees serve_stop */
	sigaction(SIGINT, &sa, NULL);
	sigaction(SIGTERM, &sa, NULL);
	sigaction(SIGHUP, &hup, NULL);
	printf("serve: listening on %s:%s (UDP)\n", o.bind, o.port);
	fflush(stdout);
	if (o.ready) {
		FILE *rf = fopen(o.ready, "w");

		if (!rf || fclose(rf)) {
			fprintf(stderr, "serve: --ready-file %s: %s\n", o.ready, strerror(errno));
			goto out;
		}
	}
	for (uint32_t i = 0; i < SERVE_BURST; i++) {
		iov[i] =
		    (struct iovec){rx + (size_t)i * (PROTO_MAX_PAYLOAD + 1), PROTO_MAX_PAYLOAD + 1};
		mm[i].msg_hdr =
		    (struct msghdr){.msg_name = &from[i], .msg_iov = &iov[i], .msg_iovlen = 1};
	}
	for (;;) {
		int n;

		proto_reasm_expire(sv->ra, lat_now_ns());
		proto_reasm_stats(sv->ra, &st);
		__atomic_store_n(&sv->held, st.in_use, __ATOMIC_RELAXED);
		if (serve_stop && !sv->draining) {
			__atomic_store_n(&sv->draining, true, __ATOMIC_RELAXED);
			held = st.in_use;
			expired = st.expired;
			printf("serve: %s: draining %u request(s)\n",
			       serve_stop == SIGINT ? "SIGINT" : "SIGTERM", held);
			fflush(stdout);
		}
		if (sv->draining && !st.in_use && wait == UINT64_MAX)
			break;
		if (serve_hup) {
			serve_hup = 0;
			serve_reloader_ask(&sv->reload);
		}
		if (wait == UINT64_MAX) /* no request waits in a batch of the old table */
			serve_swap(sv);
		else if (!serve_readable(sv->fd, wait)) {
			wait = serve_run_due(sv, lat_now_ns());
			continue;
		}
		for (uint32_t i = 0; i < SERVE_BURST; i++)
			mm[i].msg_hdr.msg_namelen = sizeof(from[i]);
		n = recvmmsg(sv->fd, mm, SERVE_BURST, MSG_WAITFORONE, NULL);
		if (n < 0) {
			if (errno == EINTR || errno == EAGAIN || errno == EWOULDBLOCK)
				continue;
			fprintf(stderr, "serve: recvmmsg: %s\n", strerror(errno));
			goto out;
		}
		sv->now = lat_now_ns();
		for (int i = 0; i < n; i++)
			serve_datagram(sv, iov[i].iov_base, mm[i].msg_len,
				       (const struct sockaddr *)&from[i], mm[i].msg_hdr.msg_namelen,
				       sv->now);
		wait = serve_run_due(sv, lat_now_ns());
	}
	ret = 0;
	expired = st.expired - expired;
	printf("serve: stopped: %lu of %u held request(s) finished, %lu expired\n",
	       (unsigned long)(held - expired), held, (unsigned long)expired);
	serve_report(sv, stderr, false);
	if (o.stats) {
		FILE *f = fopen(o.stats, "w");

		if (!f) {
			fprintf(stderr, "serve: --stats-file %s: %s\n", o.stats, strerror(errno));
			ret = 1;
		} else {
			serve_report(sv, f, true);
			if (fclose(f))
				ret = 1;
		}
	}
out:
	metrics_http_stop(http);
	serve_reloader_stop(&sv->reload);
	metrics_keys_free(&sv->keys);
	if (sv->fd >= 0)
		close(sv->fd);
	serve_table_free(sv->tab);
	conf_args_free(&hold);
	proto_reasm_destroy(sv->ra);
	free(sv->out);
	free(rx);
	free(sv);
	return ret;
}
