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
 * Answers, as the DPDK servers give them (reasons are static strings with "serve: " before):
 *   parser rejected a datagram   ERROR bad_request (detail: the verdict) when its first four
 *                                bytes say a version-1 REQUEST; anything else is not answered
 *   ACTIVATION, RESPONSE, ERROR  not answered (counted): never reflect replies
 *   unknown model                ERROR unknown_model (detail: the model id); model id 0 is the
 *                                first model
 *   format or shape differs      ERROR bad_shape (detail: the model's input elements), by
 *                                proto_input_matches(), the check every executor shares
 *   reassembly table full        ERROR busy (detail 0); message too large: ERROR too_large
 *                                (detail: the limit in bytes)
 *   reply above request          ERROR too_large (detail: the RESPONSE's bytes), no --allow
 *   draining                     ERROR busy (detail 1)
 *   the executor failed          ERROR internal
 *
 * Trust, as splitnic-nic and splitnic-host (docs/wire-protocol.md): with --allow, datagrams from
 * other sources are dropped and counted (not_allowed), never answered; without it every source
 * is answered, never with a reply larger than what caused it (the ERROR's reason cut to fit,
 * none for a datagram shorter than an ERROR's header; a RESPONSE larger than its REQUEST
 * refused with ERROR too_large). ERRORs are rate-limited per source address
 * (protocol/ratelimit.h, --error-rate and --error-burst; IPv6 sources folded to 32 bits for the
 * bucket, never on an allow-list).
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
#include "protocol/frame.h"
#include "protocol/net_util.h"
#include "protocol/ratelimit.h"
#include "protocol/reasm.h"
#include "serve/serve.h"
#include "split/stats.h"

#define SERVE_MAX_MODELS 8
#define SERVE_BURST	 32
#define SERVE_SLOTS	 64
#define SERVE_MAX_MSG	 (16u << 20)
#define SERVE_REASM_NS	 1000000000ull
#define SERVE_MAX_ALLOW	 16
#define SERVE_IDLE_MS	 100 /* a receive waits at most this long: reassembly expiry, the drain */

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
	X(HEALTH_DROPPED, "health_dropped")

#define SC_ENUM(id, name) SC_##id,
#define SC_NAME(id, name) name,

enum serve_counter { SERVE_COUNTERS(SC_ENUM) SC__COUNT };

static const char *const sc_names[SC__COUNT] = {SERVE_COUNTERS(SC_NAME)};

struct serve_model {
	struct model *m;
	struct kexec x;
	uint32_t id, in_fmt, in_bytes, in_count, classes;
	uint32_t resp_bytes; /* the RESPONSE's UDP payload bytes, all datagrams */
	void *in;	     /* in_bytes, 64-byte aligned: the executor's input */
	double *scores;	     /* classes */
	uint8_t *body;	     /* classes * 8: the RESPONSE's data section */
};

struct serve {
	int fd;
	uint32_t payload, n_models;
	struct serve_model sm[SERVE_MAX_MODELS];
	struct proto_reasm *ra;
	uint8_t *out; /* one reply datagram */
	bool draining;
	uint64_t now; /* ns: the current burst's receive */
	uint32_t n_allow;
	struct proto_cidr allow[SERVE_MAX_ALLOW];
	uint64_t rl[PROTO_RL_SLOTS]; /* ERRORs per source: GCRA times */
	uint64_t rl_interval_ns, rl_burst;
	char ident[PROTO_HEALTH_IDENT_LEN + 1];
	struct proto_health_model health[SERVE_MAX_MODELS];
	uint64_t c[SC__COUNT];
	uint64_t verdicts[PROTO_VERDICT__COUNT];
	uint64_t ra_verdicts[PROTO_RA__COUNT];
};

static volatile sig_atomic_t serve_stop;

static void on_signal(int sig)
{
	serve_stop = sig;
}

static void serve_send(struct serve *sv, const struct sockaddr *to, socklen_t tolen, int n)
{
	if (n <= 0 || sendto(sv->fd, sv->out, (size_t)n, 0, to, tolen) != n)
		sv->c[SC_SEND_FAIL]++;
}

/* Who sent a datagram, and what may go back (no amplification). */
struct serve_src {
	const struct sockaddr *sa;
	socklen_t len;
	uint32_t ip;  /* IPv4 (host order), or an IPv6 address folded to 32 bits */
	bool listed;  /* on the allow-list: any reply */
	uint32_t cap; /* else no reply larger than this: the UDP payload that caused it */
	uint64_t key; /* the reassembly table's name for it */
};

/* An ERROR to src, if its rate allows, its reason cut to src->cap. */
static void serve_error(struct serve *sv, const struct serve_src *src, uint32_t model_id,
			uint64_t request_id, enum proto_error_code code, uint32_t detail,
			enum serve_counter why, const char *reason)
{
	int n;

	sv->c[why]++;
	if (!proto_rl_take(&sv->rl[proto_rl_slot(src->ip)], sv->now, sv->rl_interval_ns,
			   sv->rl_burst)) {
		sv->c[SC_ERRORS_LIMITED]++;
		return;
	}
	n = proto_build_error_text(sv->out,
				   src->listed || src->cap > sv->payload ? sv->payload : src->cap,
				   model_id, request_id, code, detail, "serve: ", reason);
	if (n == -EMSGSIZE) /* not even an ERROR's header fits: none */
		return;
	serve_send(sv, src->sa, src->len, n);
	sv->c[SC_ERRORS_SENT]++;
}

static struct serve_model *find_model(struct serve *sv, uint32_t id)
{
	for (uint32_t k = 0; k < sv->n_models; k++)
		if (sv->sm[k].id == id)
			return &sv->sm[k];
	return id == 0 && sv->n_models ? &sv->sm[0] : NULL;
}

/* A complete REQUEST: checked against the model, run, answered (no reply larger than src->cap
 * unless the source is listed). */
static void serve_request(struct serve *sv, const struct proto_msg *m, const uint8_t *data,
			  const struct serve_src *src, uint64_t t_in)
{
	struct serve_model *s = find_model(sv, m->model_id);
	struct proto_msg resp;
	struct proto_frag f;
	uint64_t t_run, t_done;
	uint32_t cls = 0;
	int n;

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
			    SC_ERR_BAD_SHAPE, "input format or shape differs from the model's");
		return;
	}
	if (!src->listed && s->resp_bytes > src->cap) {
		serve_error(sv, src, m->model_id, m->request_id, PROTO_ERR_TOO_LARGE, s->resp_bytes,
			    SC_ERR_REPLY_LARGER,
			    "reply larger than the request: front-end not allowed");
		return;
	}
	memcpy(s->in, data, s->in_bytes);
	t_run = lat_now_ns();
	if (kexec_run(&s->x, s->in, 1, s->scores)) {
		serve_error(sv, src, m->model_id, m->request_id, PROTO_ERR_INTERNAL, 0,
			    SC_ERR_INTERNAL, "executor failed");
		return;
	}
	t_done = lat_now_ns();
	for (uint32_t k = 0; k < s->classes; k++) {
		proto_le_put_f64(s->body + 8 * k, s->scores[k]);
		if (s->scores[k] > s->scores[cls])
			cls = k;
	}
	proto_msg_init(&resp, PROTO_RESPONSE, m->model_id, m->request_id);
	resp.resp.cls = cls;
	resp.resp.num_classes = (uint16_t)s->classes;
	resp.resp.score_fmt = PROTO_FMT_F64;
	resp.resp.executors = PROTO_EX_CPU;
	resp.resp.t_ns[PROTO_T_QUEUE] = (uint32_t)(t_run - t_in);
	resp.resp.t_ns[PROTO_T_HOST] = (uint32_t)(t_done - t_run);
	resp.resp.t_ns[PROTO_T_TX] = (uint32_t)(lat_now_ns() - t_done);
	resp.resp.t_ns[PROTO_T_TOTAL] = (uint32_t)(lat_now_ns() - t_in);
	if (proto_frag_init(&f, &resp, s->body, (size_t)s->classes * 8, sv->payload)) {
		serve_error(sv, src, m->model_id, m->request_id, PROTO_ERR_INTERNAL, 0,
			    SC_ERR_INTERNAL, "response does not fit");
		return;
	}
	while ((n = proto_frag_next(&f, sv->out, sv->payload)) > 0)
		serve_send(sv, src->sa, src->len, n);
	sv->c[SC_ANSWERED]++;
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
	src->cap = len > UINT32_MAX ? UINT32_MAX : (uint32_t)len;
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
	src->listed = v4 && proto_cidr_contains(sv->allow, sv->n_allow, src->ip);
}

/* A HEALTH probe for any role or serve's: the report, never longer than the probe. */
static void serve_health(struct serve *sv, const struct proto_msg *m, const struct serve_src *src)
{
	struct proto_reasm_stats st;
	int n;

	if (m->health.kind != PROTO_HEALTH_PROBE ||
	    (m->health.role != 0 && m->health.role != PROTO_ROLE_SERVE)) {
		sv->c[SC_HEALTH_DROPPED]++;
		return;
	}
	proto_reasm_stats(sv->ra, &st);
	n = proto_build_health_report(sv->out, sv->payload, src->cap, m->request_id,
				      PROTO_ROLE_SERVE,
				      sv->draining ? PROTO_HEALTH_DRAINING : PROTO_HEALTH_SERVING,
				      st.in_use, sv->ident, sv->health, sv->n_models);
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

	sv->c[SC_DATAGRAMS]++;
	serve_source(sv, from, fromlen, len, &src);
	if (sv->n_allow && !src.listed) {
		sv->c[SC_NOT_ALLOWED]++;
		return;
	}
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
		src.cap = msg.len + m.hdr_len; /* at least what the whole REQUEST weighed */
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

/* [ID=]FILE: the model, its executor (ops [0, n) on the CPU) and its buffers. */
static int serve_load(struct serve *sv, const char *spec)
{
	struct serve_model *s = &sv->sm[sv->n_models];
	const char *eq = strchr(spec, '='), *path = eq ? eq + 1 : spec;
	char err[512], *end;

	if (sv->n_models == SERVE_MAX_MODELS) {
		fprintf(stderr, "serve: at most %d models\n", SERVE_MAX_MODELS);
		return -EINVAL;
	}
	s->m = model_load(path, err, sizeof(err));
	if (!s->m) {
		fprintf(stderr, "serve: %s\n", err);
		return -EINVAL;
	}
	s->id = proto_model_id(s->m->name);
	if (eq) {
		unsigned long v;

		errno = 0;
		v = strtoul(spec, &end, 0);
		if (errno || end != eq || end == spec || v > 0xffffffffUL) {
			fprintf(stderr, "serve: --model %s: the id before '=' is not a number\n",
				spec);
			return -EINVAL;
		}
		s->id = (uint32_t)v;
	}
	for (uint32_t k = 0; k < sv->n_models; k++)
		if (sv->sm[k].id == s->id) {
			fprintf(stderr, "serve: --model %s: model id 0x%08x given twice\n", spec,
				s->id);
			return -EINVAL;
		}
	if (s->m->input.fmt != MODEL_FMT_U8 && s->m->input.fmt != MODEL_FMT_F32) {
		fprintf(stderr, "serve: %s: input format %s has no wire format\n", path,
			model_fmt_name(s->m->input.fmt));
		return -EINVAL;
	}
	s->in_fmt = s->m->input.fmt == MODEL_FMT_U8 ? PROTO_FMT_U8 : PROTO_FMT_F32;
	s->in_count = (uint32_t)model_shape_elems(&s->m->input);
	s->in_bytes = (uint32_t)model_shape_bytes(&s->m->input);
	s->classes = model_classes(s->m);
	s->resp_bytes = proto_wire_bytes(PROTO_RESP_HDR_LEN, (size_t)s->classes * 8, sv->payload);
	sv->health[sv->n_models] = (struct proto_health_model){
	    .model_id = s->id,
	    .mode = PROTO_MODE_WHOLE,
	    .in_fmt = (uint8_t)s->in_fmt,
	    .c = s->m->input.c,
	    .h = s->m->input.h,
	    .w = s->m->input.w,
	    .classes = (uint16_t)s->classes,
	};
	snprintf(sv->health[sv->n_models].name, sizeof(sv->health[0].name), "%.*s",
		 (int)PROTO_HEALTH_NAME_LEN, s->m->name);
	if (kexec_open(&s->x, &kexec_cpu_ops, NULL, err, sizeof(err)) ||
	    kexec_load(&s->x, s->m, 0, s->m->n_layers, 1, err, sizeof(err))) {
		fprintf(stderr, "serve: %s\n", err);
		return -EINVAL;
	}
	s->in = aligned_alloc(64, (s->in_bytes + 63) / 64 * 64);
	s->scores = calloc(s->classes, sizeof(double));
	s->body = malloc((size_t)s->classes * 8);
	sv->n_models++;
	if (!s->in || !s->scores || !s->body) {
		fprintf(stderr, "serve: out of memory\n");
		return -ENOMEM;
	}
	printf("serve: model %s id 0x%08x: %s %ux%ux%u -> %u classes, %u ops on the CPU\n",
	       s->m->name, s->id, proto_fmt_name(s->in_fmt), s->m->input.c, s->m->input.h,
	       s->m->input.w, s->classes, s->m->n_layers);
	return 0;
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

struct serve_opts {
	const char *models[SERVE_MAX_MODELS];
	uint32_t n_models;
	const char *bind, *port, *stats, *ready, *name, *precision;
	struct proto_cidr allow[SERVE_MAX_ALLOW];
	uint32_t n_allow;
	long payload, err_rate, err_burst;
};

enum { SO_MODEL = 'm', SO_PORT = 'p', SO_NAME = 'n', SO_ALLOW = 'a' };

static int serve_opt(void *p, const struct conf_opt *opt, const char *arg)
{
	struct serve_opts *o = p;
	uint16_t port;

	switch (opt->key) {
	case SO_PORT:
		o->port = arg;
		return conf_port("serve", "--port", arg, &port) ? -1 : 0;
	case SO_NAME:
		return conf_text("serve", opt, arg, PROTO_HEALTH_IDENT_LEN, &o->name);
	case SO_ALLOW:
		if (o->n_allow == SERVE_MAX_ALLOW || proto_cidr_parse(arg, &o->allow[o->n_allow])) {
			fprintf(stderr, "serve: --allow: A.B.C.D[/N] (at most %u), got '%s'\n",
				SERVE_MAX_ALLOW, arg);
			return -1;
		}
		o->n_allow++;
		return 0;
	default:
		if (o->n_models == SERVE_MAX_MODELS) {
			fprintf(stderr, "serve: at most %d models\n", SERVE_MAX_MODELS);
			return -1;
		}
		o->models[o->n_models++] = arg;
		return 0;
	}
}

#define SERVE_OPT(f) offsetof(struct serve_opts, f)

static const struct conf_opt serve_opts[] = {
    CONF_CALL_ROW("model", "[ID=]MODEL", SO_MODEL, NULL,
		  "a model, its id ID or its name's (up to 8)"),
    CONF_STR_ROW("bind", "ADDR", SERVE_OPT(bind), "0.0.0.0", "the address to listen on"),
    CONF_CALL_ROW("port", "P", SO_PORT, "21326", "its UDP port"),
    CONF_LONG_ROW("payload", "BYTES", SERVE_OPT(payload), 256, 65507, "1400",
		  "UDP payload per datagram"),
    CONF_STR_ROW("stats-file", "FILE", SERVE_OPT(stats), NULL, "the counters as JSON, at exit"),
    CONF_STR_ROW("ready-file", "FILE", SERVE_OPT(ready), NULL, "created once the socket is bound"),
    CONF_CALL_ROW("name", "NAME", SO_NAME, NULL,
		  "its identity in HEALTH reports (default serve@ADDR:PORT)"),
    CONF_CALL_ROW("allow", "CIDR", SO_ALLOW, NULL,
		  "front-ends answered (up to 16; default: all, no reply larger than its request)"),
    CONF_LONG_ROW("error-rate", "N", SERVE_OPT(err_rate), 1, 1000000000, "1000",
		  "ERRORs per second per source"),
    CONF_LONG_ROW("error-burst", "N", SERVE_OPT(err_burst), 1, 1000000, "100",
		  "ERRORs a source may get at once"),
    CONF_CHOICE_ROW("precision", "certified|exact|float32", SERVE_OPT(precision), "certified",
		    "float layers: float32 + float64 rechecks, float64, plain float32"),
};

const struct conf_cmd cmd_serve_spec = {
    CONF_CMD("splitnic serve",
	     "--model [ID=]MODEL [--model ...] [--bind ADDR] [--port P] [OPTIONS]",
	     "a minimal inference server on a kernel UDP socket (the CPU kernels, no DPDK)",
	     serve_opts, 0, 0, serve_opt),
    .notes = "Answers REQUESTs and HEALTH probes on a kernel UDP socket with the CPU kernels;\n"
	     "on SIGINT or SIGTERM it drains (finishes the fragmented requests it holds, takes\n"
	     "no new ones) and prints its counters (and writes them to --stats-file as JSON).\n"};

int cmd_serve(int argc, char **argv)
{
	struct serve_opts o = {0};
	struct sigaction sa = {.sa_handler = on_signal};
	struct proto_reasm_config rc = {SERVE_SLOTS, SERVE_MAX_MSG, SERVE_REASM_NS};
	struct sockaddr_storage from[SERVE_BURST];
	struct mmsghdr mm[SERVE_BURST];
	struct iovec iov[SERVE_BURST];
	struct proto_reasm_stats st;
	uint8_t *rx = NULL;
	uint32_t held = 0;
	uint64_t expired = 0;
	struct serve *sv;
	int ret = 1;

	if (conf_parse(&cmd_serve_spec, argc, argv, &o) < 0)
		return 2;
	kern_precision_set_default(kern_precision_from_name(o.precision));
	if (!o.n_models) {
		fprintf(stderr, "serve: no --model\n");
		return conf_usage_error(&cmd_serve_spec);
	}
	if ((o.stats && conf_output_ok("serve", "--stats-file", o.stats)) ||
	    (o.ready && conf_output_ok("serve", "--ready-file", o.ready)))
		return 1;
	sv = calloc(1, sizeof(*sv));
	if (!sv)
		return 1;
	sv->fd = -1;
	sv->payload = (uint32_t)o.payload;
	sv->n_allow = o.n_allow;
	memcpy(sv->allow, o.allow, sizeof(o.allow));
	sv->rl_interval_ns = 1000000000ull / (uint64_t)o.err_rate;
	sv->rl_burst = (uint64_t)o.err_burst;
	serve_ident(sv, o.name, o.bind, o.port);
	for (uint32_t k = 0; k < o.n_models; k++)
		if (serve_load(sv, o.models[k]))
			goto out;
	sv->ra = proto_reasm_create(&rc);
	sv->out = malloc(PROTO_MAX_PAYLOAD + 1);
	rx = malloc((size_t)SERVE_BURST * (PROTO_MAX_PAYLOAD + 1));
	if (!sv->ra || !sv->out || !rx) {
		fprintf(stderr, "serve: out of memory\n");
		goto out;
	}
	if (serve_socket(sv, o.bind, o.port))
		goto out;
	/* no SA_RESTART: a signal must interrupt recvmmsg so that the loop sees serve_stop */
	sigaction(SIGINT, &sa, NULL);
	sigaction(SIGTERM, &sa, NULL);
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
		if (serve_stop && !sv->draining) {
			sv->draining = true;
			held = st.in_use;
			expired = st.expired;
			printf("serve: %s: draining %u request(s)\n",
			       serve_stop == SIGINT ? "SIGINT" : "SIGTERM", held);
			fflush(stdout);
		}
		if (sv->draining && !st.in_use)
			break;
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
	if (sv->fd >= 0)
		close(sv->fd);
	for (uint32_t k = 0; k < sv->n_models + (sv->n_models < SERVE_MAX_MODELS); k++) {
		kexec_close(&sv->sm[k].x);
		model_free(sv->sm[k].m);
		free(sv->sm[k].in);
		free(sv->sm[k].scores);
		free(sv->sm[k].body);
	}
	proto_reasm_destroy(sv->ra);
	free(sv->out);
	free(rx);
	free(sv);
	return ret;
}
