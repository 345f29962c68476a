// SPDX-License-Identifier: MIT
/*
 * libsplitnic-client: REQUESTs out through the fragmenter, RESPONSEs and ERRORs in through the
 * parser and a fixed reassembly table (protocol/). Everything is allocated at open.
 */
#include <errno.h>
#include <stdbool.h>
#include <netdb.h>
#include <poll.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <time.h>
#include <unistd.h>

#include "lib/snlib.h"
#include "protocol/reasm.h"
#include "splitnic/client.h"

#define CLIENT_SLOTS	   8
#define CLIENT_MAX_MSG	   (SPLITNIC_CLIENT_MAX_CLASSES * 8)
#define CLIENT_RA_TIMEOUT  2000000000ull
#define CLIENT_SOCKBUF	   (4 << 20)
#define CLIENT_SEEN_SETS   16384u /* answered request ids remembered: sets of CLIENT_SEEN_WAYS */
#define CLIENT_SEEN_WAYS   4u
#define CLIENT_PROBE_LEN   1400u /* probes are padded to this (or the payload limit) */
#define CLIENT_PROBE_TRIES 3u

_Static_assert(PROTO_VERDICT__COUNT <= 16, "splitnic_client_stats.rejected");
_Static_assert(PROTO_RA__COUNT <= 8, "splitnic_client_stats.reasm_dropped");
_Static_assert(PROTO_T_COUNT == 8, "splitnic_response.t_ns");

/* Request ids answered lately, for one answer per request (a set-associative cache). */
struct client_seen {
	uint64_t id[CLIENT_SEEN_WAYS];
	uint8_t used;	/* bit w: id[w] holds an id */
	uint8_t victim; /* next way to replace */
};

struct splitnic_client {
	int fd;
	uint32_t payload;
	struct proto_reasm *ra; /* on the first fragmented answer: most fit one datagram */
	uint8_t *dgram;		/* PROTO_MAX_PAYLOAD: one datagram either way */
	double scores[SPLITNIC_CLIENT_MAX_CLASSES];
	struct splitnic_client_stats st;
	struct client_seen *seen; /* CLIENT_SEEN_SETS */
	struct proto_msg health;  /* the last HEALTH report seen, its data in health_data */
	uint8_t health_data[PROTO_HEALTH_MAX_DATA];
	bool health_new;
};

static uint64_t now_ns(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (uint64_t)ts.tv_sec * 1000000000ull + (uint64_t)ts.tv_nsec;
}

uint32_t splitnic_client_model_id(const char *name)
{
	return name ? proto_model_id(name) : 0;
}

static void grow_buffers(int fd)
{
	int bytes = CLIENT_SOCKBUF;

	if (setsockopt(fd, SOL_SOCKET, SO_RCVBUFFORCE, &bytes, sizeof(bytes)))
		setsockopt(fd, SOL_SOCKET, SO_RCVBUF, &bytes, sizeof(bytes));
	setsockopt(fd, SOL_SOCKET, SO_SNDBUF, &bytes, sizeof(bytes));
}

static int connect_udp(const char *host, const char *port, int *fdp, struct splitnic_error *err)
{
	struct addrinfo hints = {.ai_socktype = SOCK_DGRAM}, *ai, *p;
	int fd = -1, gai, saved = 0;

	gai = getaddrinfo(host, port, &hints, &ai);
	if (gai)
		return snlib_fail(err, SPLITNIC_E_INVALID, "%s:%s: %s", host, port,
				  gai_strerror(gai));
	for (p = ai; p; p = p->ai_next) {
		fd = socket(p->ai_family, p->ai_socktype | SOCK_CLOEXEC, p->ai_protocol);
		if (fd < 0) {
			saved = errno;
			continue;
		}
		if (!connect(fd, p->ai_addr, p->ai_addrlen))
			break;
		saved = errno;
		close(fd);
		fd = -1;
	}
	freeaddrinfo(ai);
	if (fd < 0)
		return snlib_fail(err, SPLITNIC_E_IO, "%s:%s: cannot connect: %s", host, port,
				  strerror(saved));
	grow_buffers(fd);
	*fdp = fd;
	return SPLITNIC_OK;
}

int splitnic_client_open(const char *host, const char *port, uint32_t payload,
			 struct splitnic_client **out, struct splitnic_error *err)
{
	struct splitnic_client *cl;
	char portbuf[16];
	int ret;

	if (!out)
		return snlib_fail(err, SPLITNIC_E_INVALID, "client (the result pointer) is NULL");
	*out = NULL;
	if (!host)
		return snlib_fail(err, SPLITNIC_E_INVALID, "host is NULL");
	if (!payload)
		payload = PROTO_DEFAULT_PAYLOAD;
	if (payload < PROTO_MIN_PAYLOAD || payload > PROTO_MAX_PAYLOAD)
		return snlib_fail(err, SPLITNIC_E_INVALID, "payload %u: %u to %u bytes", payload,
				  PROTO_MIN_PAYLOAD, PROTO_MAX_PAYLOAD);
	if (!port) {
		snprintf(portbuf, sizeof(portbuf), "%u", PROTO_DEFAULT_PORT);
		port = portbuf;
	}
	cl = calloc(1, sizeof(*cl));
	if (!cl)
		return snlib_fail(err, SPLITNIC_E_NOMEM, "out of memory");
	cl->fd = -1;
	cl->payload = payload;
	cl->dgram = malloc(PROTO_MAX_PAYLOAD);
	cl->seen = calloc(CLIENT_SEEN_SETS, sizeof(*cl->seen));
	if (!cl->dgram || !cl->seen) {
		ret = snlib_fail(err, SPLITNIC_E_NOMEM, "out of memory");
		goto err_free;
	}
	ret = connect_udp(host, port, &cl->fd, err);
	if (ret)
		goto err_free;
	*out = cl;
	return snlib_ok(err);
err_free:
	splitnic_client_close(cl);
	return ret;
}

void splitnic_client_close(struct splitnic_client *cl)
{
	if (!cl)
		return;
	if (cl->fd >= 0)
		close(cl->fd);
	proto_reasm_destroy(cl->ra);
	free(cl->dgram);
	free(cl->seen);
	free(cl);
}

int splitnic_client_fd(const struct splitnic_client *cl)
{
	return cl ? cl->fd : -1;
}

static struct client_seen *seen_set(struct splitnic_client *cl, uint64_t id)
{
	return &cl->seen[(id * 0x9e3779b97f4a7c15ull) >> 50 & (CLIENT_SEEN_SETS - 1)];
}

static int seen_way(const struct client_seen *s, uint64_t id)
{
	for (unsigned w = 0; w < CLIENT_SEEN_WAYS; w++)
		if ((s->used >> w & 1) && s->id[w] == id)
			return (int)w;
	return -1;
}

/* First answer to id since it was last sent: remembered, true; an answer again: false. */
static bool seen_first(struct splitnic_client *cl, uint64_t id)
{
	struct client_seen *s = seen_set(cl, id);
	unsigned w;

	if (seen_way(s, id) >= 0)
		return false;
	w = s->victim;
	s->victim = (uint8_t)((w + 1) % CLIENT_SEEN_WAYS);
	s->id[w] = id;
	s->used |= (uint8_t)(1u << w);
	return true;
}

/* Sent again: its next answer is delivered. */
static void seen_forget(struct splitnic_client *cl, uint64_t id)
{
	struct client_seen *s = seen_set(cl, id);
	int w = seen_way(s, id);

	if (w >= 0)
		s->used &= (uint8_t) ~(1u << w);
}

int splitnic_client_send(struct splitnic_client *cl, uint32_t model_id, uint64_t request_id,
			 const struct splitnic_tensor *t, uint64_t *send_ns,
			 struct splitnic_error *err)
{
	struct proto_msg m;
	struct proto_frag f;
	uint64_t count, need;
	int n, ret;

	if (!cl || !t || !t->data)
		return snlib_fail(err, SPLITNIC_E_INVALID, "%s is NULL",
				  !cl  ? "client"
				  : !t ? "tensor"
				       : "tensor data");
	count = (uint64_t)t->c * t->h * t->w;
	need = proto_fmt_bytes(t->fmt, count);
	if (!count || count > PROTO_MAX_ELEMS || !need)
		return snlib_fail(
		    err, SPLITNIC_E_INVALID, "tensor (%u,%u,%u) format %u: %s", t->c, t->h, t->w,
		    t->fmt, !need && count ? "unknown format" : "dimensions 1 .. 64 Mi elements");
	if (t->bytes != need)
		return snlib_fail(err, SPLITNIC_E_INVALID,
				  "tensor is %zu bytes; (%u,%u,%u) of %s needs %lu", t->bytes, t->c,
				  t->h, t->w, proto_fmt_name(t->fmt), (unsigned long)need);
	proto_msg_init(&m, PROTO_REQUEST, model_id, request_id);
	proto_msg_set_tensor(&m, t->fmt, t->c, t->h, t->w, t->scale, t->zero_point);
	ret = proto_frag_init(&f, &m, t->data, t->bytes, cl->payload);
	if (ret)
		return snlib_fail(err, SPLITNIC_E_INVALID, "request %lu: %s",
				  (unsigned long)request_id,
				  ret == -EMSGSIZE ? "larger than 64 MiB"
						   : "inconsistent tensor (int8 needs scale > 0)");
	if (send_ns)
		*send_ns = now_ns();
	seen_forget(cl, request_id);
	while ((n = proto_frag_next(&f, cl->dgram, PROTO_MAX_PAYLOAD)) > 0)
		if (send(cl->fd, cl->dgram, (size_t)n, 0) != n) {
			cl->st.send_errors++;
			return snlib_fail(err, SPLITNIC_E_IO, "request %lu: send: %s",
					  (unsigned long)request_id, strerror(errno));
		}
	return snlib_ok(err);
}

static void fill_response(struct splitnic_client *cl, const struct proto_reasm_msg *msg, uint64_t t,
			  struct splitnic_response *r)
{
	const struct proto_msg *h = &msg->hdr;
	uint32_t step;

	memset(r, 0, sizeof(*r));
	r->request_id = h->request_id;
	r->model_id = h->model_id;
	r->recv_ns = t;
	r->scores = cl->scores;
	if (h->type == PROTO_ERROR) {
		size_t len = msg->len < PROTO_REASON_MAX ? msg->len : PROTO_REASON_MAX;

		r->error = h->err.code ? h->err.code : PROTO_ERR_INTERNAL;
		r->err_detail = h->err.detail;
		memcpy(r->reason, msg->data, len);
		r->reason[len] = 0;
		return;
	}
	r->cls = h->resp.cls;
	r->executors = h->resp.executors;
	memcpy(r->t_ns, h->resp.t_ns, sizeof(r->t_ns));
	step = h->resp.score_fmt == PROTO_FMT_F64 ? 8 : 4;
	r->num_classes = msg->len / step;
	for (uint32_t c = 0; c < r->num_classes; c++)
		cl->scores[c] = step == 8 ? proto_le_get_f64(msg->data + (size_t)c * 8)
					  : proto_le_get_f32(msg->data + (size_t)c * 4);
}

/*
 * A datagram into the reassembly: an answer in one datagram is complete as it is; the table
 * (CLIENT_SLOTS x CLIENT_MAX_MSG, some 4.5 MB) is made by the first fragment, so a client of
 * small answers (or each of a front-end's thousands of sockets) never holds one.
 */
static enum proto_ra_verdict push(struct splitnic_client *cl, const struct proto_msg *m, uint64_t t,
				  struct proto_reasm_msg *msg)
{
	const struct proto_reasm_config rc = {CLIENT_SLOTS, CLIENT_MAX_MSG, CLIENT_RA_TIMEOUT};

	if (m->total_len > CLIENT_MAX_MSG)
		return PROTO_RA_TOO_LARGE;
	if (!cl->ra && proto_reasm_whole(m, msg))
		return PROTO_RA_COMPLETE;
	if (!cl->ra && !(cl->ra = proto_reasm_create(&rc)))
		return PROTO_RA_TABLE_FULL; /* out of memory: counted as a table without room */
	return proto_reasm_push(cl->ra, 0, m, t, msg);
}

int splitnic_client_poll(struct splitnic_client *cl, struct splitnic_response *resp,
			 struct splitnic_error *err)
{
	struct proto_reasm_msg msg;
	struct proto_msg m;
	enum proto_verdict v;
	enum proto_ra_verdict rv;
	ssize_t n;
	uint64_t t;

	if (!cl || !resp)
		return snlib_fail(err, SPLITNIC_E_INVALID, "%s is NULL", !cl ? "client" : "resp");
	while ((n = recv(cl->fd, cl->dgram, PROTO_MAX_PAYLOAD, MSG_DONTWAIT)) >= 0) {
		t = now_ns();
		v = proto_parse(cl->dgram, (size_t)n, &m);
		if (v != PROTO_OK) {
			cl->st.rejected[v]++;
			continue;
		}
		if (m.type == PROTO_HEALTH && m.health.kind == PROTO_HEALTH_REPORT) {
			cl->health = m;
			memcpy(cl->health_data, m.data, m.frag_len);
			cl->health.data = cl->health_data;
			cl->health_new = true;
			continue;
		}
		if (m.type != PROTO_RESPONSE && m.type != PROTO_ERROR) {
			cl->st.wrong_type++;
			continue;
		}
		rv = push(cl, &m, t, &msg);
		if (rv == PROTO_RA_COMPLETE) {
			bool first = seen_first(cl, msg.hdr.request_id);

			if (first)
				fill_response(cl, &msg, t, resp);
			else
				cl->st.duplicates++;
			if (cl->ra)
				proto_reasm_release(cl->ra, &msg);
			if (first)
				return snlib_ok(err);
			continue;
		}
		if (rv != PROTO_RA_PARTIAL)
			cl->st.reasm_dropped[rv]++;
	}
	if (errno != EAGAIN && errno != EWOULDBLOCK && errno != ECONNREFUSED && errno != EINTR)
		return snlib_fail(err, SPLITNIC_E_IO, "recv: %s", strerror(errno));
	return snlib_fail(err, SPLITNIC_E_AGAIN, "no response waiting");
}

int splitnic_client_wait(struct splitnic_client *cl, struct splitnic_response *resp, int timeout_ms,
			 struct splitnic_error *err)
{
	uint64_t deadline = now_ns() + (uint64_t)(timeout_ms < 0 ? 0 : timeout_ms) * 1000000ull;
	struct pollfd pfd;
	int ret, wait;

	for (;;) {
		ret = splitnic_client_poll(cl, resp, err);
		if (ret != SPLITNIC_E_AGAIN)
			return ret;
		if (timeout_ms < 0) {
			wait = -1;
		} else {
			uint64_t t = now_ns();

			if (t >= deadline)
				return snlib_fail(err, SPLITNIC_E_TIMEOUT,
						  "no response within %d ms", timeout_ms);
			wait = (int)((deadline - t + 999999) / 1000000);
		}
		pfd = (struct pollfd){.fd = cl->fd, .events = POLLIN};
		if (poll(&pfd, 1, wait) < 0 && errno != EINTR)
			return snlib_fail(err, SPLITNIC_E_IO, "poll: %s", strerror(errno));
	}
}

int splitnic_client_request(struct splitnic_client *cl, uint32_t model_id, uint64_t request_id,
			    const struct splitnic_tensor *t, int timeout_ms, unsigned retries,
			    struct splitnic_response *resp, struct splitnic_error *err)
{
	uint64_t deadline;
	int ret;

	if (!resp)
		return snlib_fail(err, SPLITNIC_E_INVALID, "resp is NULL");
	if (timeout_ms < 1)
		return snlib_fail(err, SPLITNIC_E_INVALID, "timeout_ms %d: at least 1", timeout_ms);
	for (unsigned attempt = 0; attempt <= retries; attempt++) {
		ret = splitnic_client_send(cl, model_id, request_id, t, NULL, err);
		if (ret)
			return ret;
		deadline = now_ns() + (uint64_t)timeout_ms * 1000000ull;
		for (;;) {
			uint64_t now = now_ns();

			if (now >= deadline)
				break;
			ret = splitnic_client_wait(cl, resp, (int)((deadline - now) / 1000000) + 1,
						   err);
			if (ret == SPLITNIC_E_TIMEOUT)
				break;
			if (ret)
				return ret;
			if (resp->request_id != request_id)
				continue;
			if (resp->error)
				return snlib_fail(
				    err, SPLITNIC_E_SERVER, "request %lu: server error %d (%s): %s",
				    (unsigned long)request_id, resp->error,
				    proto_error_name((unsigned)resp->error), resp->reason);
			return snlib_ok(err);
		}
	}
	return snlib_fail(err, SPLITNIC_E_TIMEOUT, "request %lu: no answer in %u tries of %d ms",
			  (unsigned long)request_id, retries + 1, timeout_ms);
}

static void fill_health(const struct proto_msg *m, struct splitnic_health *h)
{
	struct proto_health_model e;

	memset(h, 0, sizeof(*h));
	proto_health_ident(m, h->ident);
	h->role = m->health.role;
	h->state = m->health.state;
	h->in_flight = m->health.in_flight;
	h->truncated = (m->health.flags & PROTO_HEALTH_F_TRUNCATED) != 0;
	h->n_models = m->health.n_models < SPLITNIC_HEALTH_MAX_MODELS ? m->health.n_models
								      : SPLITNIC_HEALTH_MAX_MODELS;
	for (uint32_t i = 0; i < h->n_models; i++) {
		struct splitnic_health_model *o = &h->model[i];

		proto_health_model_get(m, i, &e);
		o->model_id = e.model_id;
		o->first_op = e.first_op;
		o->mode = e.mode;
		o->in_fmt = e.in_fmt;
		o->c = e.c;
		o->h = e.h;
		o->w = e.w;
		o->classes = e.classes;
		memcpy(o->name, e.name, sizeof(o->name));
	}
}

int splitnic_client_health(struct splitnic_client *cl, uint32_t role, int timeout_ms,
			   struct splitnic_health *h, struct splitnic_error *err)
{
	uint8_t probe[CLIENT_PROBE_LEN];
	struct splitnic_response resp;
	uint64_t t0, t, rid, deadline;
	struct pollfd pfd;
	int n;

	if (!cl || !h)
		return snlib_fail(err, SPLITNIC_E_INVALID, "%s is NULL", !cl ? "client" : "health");
	if (role > SPLITNIC_ROLE_XDP || timeout_ms < 1)
		return snlib_fail(err, SPLITNIC_E_INVALID, "role %u (0 to 4), timeout_ms %d (>= 1)",
				  role, timeout_ms);
	t0 = now_ns();
	rid = t0 ^ (uint64_t)getpid() << 40;
	n = proto_build_health_probe(probe, sizeof(probe), rid,
				     cl->payload < sizeof(probe) ? cl->payload : sizeof(probe));
	if (n < 0)
		return snlib_fail(err, SPLITNIC_E_INVALID, "probe of %u bytes", cl->payload);
	probe[PROTO_COMMON_LEN + 2] = (uint8_t)role; /* a probe's role byte: the role asked */
	cl->health_new = false;
	for (unsigned k = 1; k <= CLIENT_PROBE_TRIES; k++) {
		if (send(cl->fd, probe, (size_t)n, 0) != n) {
			cl->st.send_errors++;
			return snlib_fail(err, SPLITNIC_E_IO, "probe: send: %s", strerror(errno));
		}
		deadline = t0 + (uint64_t)timeout_ms * 1000000ull * k / CLIENT_PROBE_TRIES;
		while ((t = now_ns()) < deadline) {
			while (splitnic_client_poll(cl, &resp, NULL) == SPLITNIC_OK)
				; /* answers to requests: dropped (the contract) */
			if (cl->health_new && cl->health.request_id == rid) {
				fill_health(&cl->health, h);
				h->rtt_ns = now_ns() - t0;
				return snlib_ok(err);
			}
			cl->health_new = false;
			pfd = (struct pollfd){.fd = cl->fd, .events = POLLIN};
			if (poll(&pfd, 1, (int)((deadline - t + 999999) / 1000000)) < 0 &&
			    errno != EINTR)
				return snlib_fail(err, SPLITNIC_E_IO, "poll: %s", strerror(errno));
		}
	}
	return snlib_fail(err, SPLITNIC_E_TIMEOUT, "no HEALTH report within %d ms", timeout_ms);
}

const char *splitnic_role_name(uint32_t role)
{
	return role ? proto_health_role_name(role) : "any";
}

const char *splitnic_health_state_name(uint32_t state)
{
	return proto_health_state_name(state);
}

const char *splitnic_health_mode_name(uint32_t mode)
{
	return proto_health_mode_name(mode);
}

void splitnic_client_stats(const struct splitnic_client *cl, struct splitnic_client_stats *st)
{
	if (cl && st)
		*st = cl->st;
}
