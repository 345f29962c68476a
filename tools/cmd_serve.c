// SPDX-License-Identifier: MIT
/*
 * splitnic serve: a minimal inference server on a kernel UDP socket, for users without DPDK.
 * The same kernels (the CPU executor of kernels/kexec.h, kern_forward underneath), the same wire
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
 *   format or shape differs      ERROR bad_shape (detail: the model's input elements)
 *   reassembly table full        ERROR busy (detail 0); message too large: ERROR too_large
 *                                (detail: the limit in bytes)
 *   the executor failed          ERROR internal
 */
#include <arpa/inet.h>
#include <errno.h>
#include <getopt.h>
#include <netdb.h>
#include <signal.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <unistd.h>

#include "kernels/kexec.h"
#include "kernels/kern.h"
#include "protocol/reasm.h"
#include "tools/cli_util.h"
#include "tools/cmds.h"
#include "tools/net_util.h"
#include "tools/stats.h"

#define SERVE_MAX_MODELS 8
#define SERVE_BURST	 32
#define SERVE_SLOTS	 64
#define SERVE_MAX_MSG	 (16u << 20)
#define SERVE_REASM_NS	 1000000000ull

enum serve_counter {
	SC_DATAGRAMS,
	SC_REJECTED,
	SC_OTHER_TYPE,
	SC_FRAGMENTS,
	SC_REQUESTS,
	SC_ANSWERED,
	SC_ERR_BAD_REQUEST,
	SC_ERR_UNKNOWN_MODEL,
	SC_ERR_BAD_SHAPE,
	SC_ERR_BUSY,
	SC_ERR_TOO_LARGE,
	SC_ERR_INTERNAL,
	SC_SEND_FAIL,
	SC__COUNT
};

static const char *const sc_names[SC__COUNT] = {
    [SC_DATAGRAMS] = "datagrams",
    [SC_REJECTED] = "rejected",
    [SC_OTHER_TYPE] = "other_type",
    [SC_FRAGMENTS] = "fragments",
    [SC_REQUESTS] = "requests",
    [SC_ANSWERED] = "answered",
    [SC_ERR_BAD_REQUEST] = "error_bad_request",
    [SC_ERR_UNKNOWN_MODEL] = "error_unknown_model",
    [SC_ERR_BAD_SHAPE] = "error_bad_shape",
    [SC_ERR_BUSY] = "error_busy",
    [SC_ERR_TOO_LARGE] = "error_too_large",
    [SC_ERR_INTERNAL] = "error_internal",
    [SC_SEND_FAIL] = "send_fail",
};

struct serve_model {
	struct kern_model *m;
	struct kexec x;
	uint32_t id, in_fmt, in_bytes, in_count, classes;
	void *in;	/* in_bytes, 64-byte aligned: the executor's input */
	double *scores; /* classes */
	uint8_t *body;	/* classes * 8: the RESPONSE's data section */
};

struct serve {
	int fd;
	uint32_t payload, n_models;
	struct serve_model sm[SERVE_MAX_MODELS];
	struct proto_reasm *ra;
	uint8_t *out; /* one reply datagram */
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

static void serve_error(struct serve *sv, const struct sockaddr *to, socklen_t tolen,
			uint32_t model_id, uint64_t request_id, enum proto_error_code code,
			uint32_t detail, enum serve_counter why, const char *reason)
{
	sv->c[why]++;
	serve_send(sv, to, tolen,
		   proto_build_error_text(sv->out, sv->payload, model_id, request_id, code, detail,
					  "serve: ", reason));
}

static struct serve_model *find_model(struct serve *sv, uint32_t id)
{
	for (uint32_t k = 0; k < sv->n_models; k++)
		if (sv->sm[k].id == id)
			return &sv->sm[k];
	return id == 0 && sv->n_models ? &sv->sm[0] : NULL;
}

/* A complete REQUEST: checked against the model, run, answered. */
static void serve_request(struct serve *sv, const struct proto_msg *m, const uint8_t *data,
			  const struct sockaddr *from, socklen_t fromlen, uint64_t t_in)
{
	struct serve_model *s = find_model(sv, m->model_id);
	struct proto_msg resp;
	struct proto_frag f;
	uint64_t t_run, t_done;
	uint32_t cls = 0;
	int n;

	sv->c[SC_REQUESTS]++;
	if (!s) {
		serve_error(sv, from, fromlen, m->model_id, m->request_id, PROTO_ERR_UNKNOWN_MODEL,
			    m->model_id, SC_ERR_UNKNOWN_MODEL, "unknown model");
		return;
	}
	if (m->tensor.fmt != s->in_fmt || m->tensor.c != s->m->input.c ||
	    m->tensor.h != s->m->input.h || m->tensor.w != s->m->input.w ||
	    m->total_len != s->in_bytes) {
		serve_error(sv, from, fromlen, m->model_id, m->request_id, PROTO_ERR_BAD_SHAPE,
			    s->in_count, SC_ERR_BAD_SHAPE,
			    "input format or shape differs from the model's");
		return;
	}
	memcpy(s->in, data, s->in_bytes);
	t_run = lat_now_ns();
	if (kexec_run(&s->x, s->in, 1, s->scores)) {
		serve_error(sv, from, fromlen, m->model_id, m->request_id, PROTO_ERR_INTERNAL, 0,
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
		serve_error(sv, from, fromlen, m->model_id, m->request_id, PROTO_ERR_INTERNAL, 0,
			    SC_ERR_INTERNAL, "response does not fit");
		return;
	}
	while ((n = proto_frag_next(&f, sv->out, sv->payload)) > 0)
		serve_send(sv, from, fromlen, n);
	sv->c[SC_ANSWERED]++;
}

/* A source key for the reassembly table: the sender's address and port. */
static uint64_t src_key(const struct sockaddr *a)
{
	const uint8_t *p = (const uint8_t *)a;
	uint64_t h = 14695981039346656037ull;
	size_t n =
	    a->sa_family == AF_INET6 ? sizeof(struct sockaddr_in6) : sizeof(struct sockaddr_in);

	for (size_t i = 0; i < n; i++)
		h = (h ^ p[i]) * 1099511628211ull;
	return h;
}

/*
 * One datagram from `from`, received at t_in: every message type and verdict is handled here
 * (a HEALTH message would be one more case of the type switch).
 */
static void serve_datagram(struct serve *sv, const uint8_t *p, size_t len,
			   const struct sockaddr *from, socklen_t fromlen, uint64_t t_in)
{
	struct proto_reasm_msg msg;
	enum proto_ra_verdict rv;
	enum proto_verdict v;
	struct proto_msg m;

	sv->c[SC_DATAGRAMS]++;
	v = proto_parse(p, len, &m);
	sv->verdicts[v]++;
	if (v != PROTO_OK) {
		sv->c[SC_REJECTED]++;
		if (len >= PROTO_COMMON_LEN && proto_get16(p) == PROTO_MAGIC &&
		    p[2] == PROTO_VERSION && p[3] == PROTO_REQUEST)
			serve_error(sv, from, fromlen, proto_get32(p + 8), proto_get64(p + 16),
				    PROTO_ERR_BAD_REQUEST, v, SC_ERR_BAD_REQUEST,
				    proto_verdict_name(v));
		return;
	}
	switch (m.type) {
	case PROTO_REQUEST:
		break;
	default:
		sv->c[SC_OTHER_TYPE]++;
		return;
	}
	if (m.frag_len == m.total_len) {
		serve_request(sv, &m, m.data, from, fromlen, t_in);
		return;
	}
	sv->c[SC_FRAGMENTS]++;
	rv = proto_reasm_push(sv->ra, src_key(from), &m, t_in, &msg);
	sv->ra_verdicts[rv]++;
	switch (rv) {
	case PROTO_RA_COMPLETE:
		serve_request(sv, &msg.hdr, msg.data, from, fromlen, t_in);
		proto_reasm_release(sv->ra, &msg);
		break;
	case PROTO_RA_TABLE_FULL:
		sv->c[SC_REQUESTS]++;
		serve_error(sv, from, fromlen, m.model_id, m.request_id, PROTO_ERR_BUSY, 0,
			    SC_ERR_BUSY, "reassembly table full");
		break;
	case PROTO_RA_TOO_LARGE:
		sv->c[SC_REQUESTS]++;
		serve_error(sv, from, fromlen, m.model_id, m.request_id, PROTO_ERR_TOO_LARGE,
			    SERVE_MAX_MSG, SC_ERR_TOO_LARGE, "request too large");
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
	s->m = kern_model_load(path, err, sizeof(err));
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
	if (s->m->input.fmt != KERN_FMT_U8 && s->m->input.fmt != KERN_FMT_F32) {
		fprintf(stderr, "serve: %s: input format %s has no wire format\n", path,
			kern_fmt_name(s->m->input.fmt));
		return -EINVAL;
	}
	s->in_fmt = s->m->input.fmt == KERN_FMT_U8 ? PROTO_FMT_U8 : PROTO_FMT_F32;
	s->in_count = (uint32_t)kern_shape_elems(&s->m->input);
	s->in_bytes = (uint32_t)kern_shape_bytes(&s->m->input);
	s->classes = kern_model_classes(s->m);
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

static void usage(FILE *f)
{
	fprintf(f,
		"usage: splitnic serve --model [ID=]MODEL [--model ...] [--bind ADDR (0.0.0.0)]\n"
		"         [--port P (%u)] [--payload BYTES (%u)] [--stats-file FILE]\n"
		"         [--ready-file FILE]\n"
		"  Answers REQUESTs on a kernel UDP socket with the CPU kernels until SIGINT or\n"
		"  SIGTERM; prints its counters then (and writes them to --stats-file as JSON).\n",
		PROTO_DEFAULT_PORT, PROTO_DEFAULT_PAYLOAD);
}

int cmd_serve(int argc, char **argv)
{
	static const struct option lopts[] = {
	    {"model", required_argument, NULL, 'm'},
	    {"bind", required_argument, NULL, 'b'},
	    {"port", required_argument, NULL, 'p'},
	    {"payload", required_argument, NULL, 'P'},
	    {"stats-file", required_argument, NULL, 's'},
	    {"ready-file", required_argument, NULL, 'r'},
	    {"help", no_argument, NULL, 'h'},
	    {NULL, 0, NULL, 0},
	};
	struct sigaction sa = {.sa_handler = on_signal};
	const char *bind_addr = "0.0.0.0", *port = "21326", *stats = NULL, *ready = NULL;
	const char *models[SERVE_MAX_MODELS];
	struct proto_reasm_config rc = {SERVE_SLOTS, SERVE_MAX_MSG, SERVE_REASM_NS};
	struct sockaddr_storage from[SERVE_BURST];
	struct mmsghdr mm[SERVE_BURST];
	struct iovec iov[SERVE_BURST];
	uint8_t *rx = NULL;
	uint32_t n_models = 0;
	struct serve *sv;
	long payload = PROTO_DEFAULT_PAYLOAD;
	uint16_t portnum;
	int c, ret = 1;

	optind = 1;
	while ((c = getopt_long(argc, argv, "h", lopts, NULL)) != -1) {
		switch (c) {
		case 'm':
			if (n_models == SERVE_MAX_MODELS) {
				fprintf(stderr, "serve: at most %d models\n", SERVE_MAX_MODELS);
				return 2;
			}
			models[n_models++] = optarg;
			break;
		case 'b':
			bind_addr = optarg;
			break;
		case 'p':
			if (cli_port("serve", "--port", optarg, &portnum))
				return 2;
			port = optarg;
			break;
		case 'P':
			if (parse_count(optarg, &payload, 256, 65507, "--payload"))
				return 2;
			break;
		case 's':
			stats = optarg;
			break;
		case 'r':
			ready = optarg;
			break;
		case 'h':
			usage(stdout);
			return 0;
		default:
			usage(stderr);
			return 2;
		}
	}
	if (optind < argc || !n_models) {
		fprintf(stderr, "serve: %s\n", optind < argc ? "too many arguments" : "no --model");
		usage(stderr);
		return 2;
	}
	if ((stats && cli_output_ok("serve", "--stats-file", stats)) ||
	    (ready && cli_output_ok("serve", "--ready-file", ready)))
		return 1;
	sv = calloc(1, sizeof(*sv));
	if (!sv)
		return 1;
	sv->fd = -1;
	sv->payload = (uint32_t)payload;
	for (uint32_t k = 0; k < n_models; k++)
		if (serve_load(sv, models[k]))
			goto out;
	sv->ra = proto_reasm_create(&rc);
	sv->out = malloc(PROTO_MAX_PAYLOAD + 1);
	rx = malloc((size_t)SERVE_BURST * (PROTO_MAX_PAYLOAD + 1));
	if (!sv->ra || !sv->out || !rx) {
		fprintf(stderr, "serve: out of memory\n");
		goto out;
	}
	if (serve_socket(sv, bind_addr, port))
		goto out;
	/* no SA_RESTART: a signal must interrupt recvmmsg so that the loop sees serve_stop */
	sigaction(SIGINT, &sa, NULL);
	sigaction(SIGTERM, &sa, NULL);
	printf("serve: listening on %s:%s (UDP)\n", bind_addr, port);
	fflush(stdout);
	if (ready) {
		FILE *rf = fopen(ready, "w");

		if (!rf || fclose(rf)) {
			fprintf(stderr, "serve: --ready-file %s: %s\n", ready, strerror(errno));
			goto out;
		}
	}
	for (uint32_t i = 0; i < SERVE_BURST; i++) {
		iov[i] =
		    (struct iovec){rx + (size_t)i * (PROTO_MAX_PAYLOAD + 1), PROTO_MAX_PAYLOAD + 1};
		mm[i].msg_hdr =
		    (struct msghdr){.msg_name = &from[i], .msg_iov = &iov[i], .msg_iovlen = 1};
	}
	while (!serve_stop) {
		uint64_t t_in;
		int n;

		for (uint32_t i = 0; i < SERVE_BURST; i++)
			mm[i].msg_hdr.msg_namelen = sizeof(from[i]);
		n = recvmmsg(sv->fd, mm, SERVE_BURST, MSG_WAITFORONE, NULL);
		if (n < 0) {
			if (errno == EINTR)
				continue;
			fprintf(stderr, "serve: recvmmsg: %s\n", strerror(errno));
			goto out;
		}
		t_in = lat_now_ns();
		for (int i = 0; i < n; i++)
			serve_datagram(sv, iov[i].iov_base, mm[i].msg_len,
				       (const struct sockaddr *)&from[i], mm[i].msg_hdr.msg_namelen,
				       t_in);
		proto_reasm_expire(sv->ra, lat_now_ns());
	}
	ret = 0;
	serve_report(sv, stderr, false);
	if (stats) {
		FILE *f = fopen(stats, "w");

		if (!f) {
			fprintf(stderr, "serve: --stats-file %s: %s\n", stats, strerror(errno));
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
		kern_model_free(sv->sm[k].m);
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
