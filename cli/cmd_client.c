// SPDX-License-Identifier: MIT
/*
 * splitnic client: the front-end and load generator. Sends REQUESTs over a plain UDP socket,
 * open loop (--rate) or closed loop (--outstanding), reassembles RESPONSEs and ERRORs, and
 * reports accuracy, latency percentiles, throughput, errors by code and timeouts.
 *
 * The wire side (socket, fragmentation, reassembly) is libsplitnic-client (client/).
 * Everything is allocated before the first request: per-request state for --count requests, the
 * input tensors and the clients (their datagram buffers and response reassembly tables). Latency
 * is measured from the moment the request's first datagram is handed to the socket to the
 * moment its response is complete (retransmissions included).
 *
 * --sockets N: requests go out over N sockets (request i over socket i mod N, its
 * retransmissions too), so that a load balancer hashing on the source port (IPVS sh/mh) spreads
 * them. --retries R: a request unanswered after --timeout-ms, or answered ERROR busy, is sent
 * again with the same request id, up to R times (busy: after min(timeout, 20 ms)); one answer
 * per request is counted, later ones as duplicates.
 *
 * --health ADDR: a HEALTH probe (nicfw/health.h, host/host.h); the report is printed, and when
 * it comes from a NIC holding co-processor parts, the NIC's host is probed too (--role host, which
 * the NIC passes up). Exit 0 when every report says serving; 1 when one says draining or
 * degraded, none came, or the probe failed (keepalived's MISC_CHECK, any script).
 */
#include <sys/epoll.h>
#include <sys/resource.h>
#include <errno.h>
#include <math.h>
#include <poll.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include "cli/cmds.h"
#include "conf/args.h"
#include "kernels/kern.h"
#include "model/idx.h"
#include "protocol/reasm.h"
#include "split/stats.h"
#include "splitnic/client.h"

enum req_state { REQ_UNSENT, REQ_PENDING, REQ_DONE, REQ_ERROR, REQ_TIMEOUT };

struct client_opts {
	const char *host;
	const char *port;
	const char *images;
	const char *labels;
	const char *classes; /* --classes FILE: one predicted class per request, in order */
	uint32_t shape[3];
	unsigned dtype;
	uint32_t model_id;
	long count;
	double rate;
	long outstanding;
	long timeout_ms;
	long payload;
	long seed;
	long sockets;
	long retries;
	bool json;
	bool health;
	int role;     /* --role: enum splitnic_role, -1 not given */
	bool poisson; /* open loop: exponential gaps of mean 1/rate, not a fixed period */
	const char *model_path, *dtype_name, *role_name;
	bool id_given;
};

struct client_run {
	struct client_opts o;
	struct splitnic_client **cl; /* o.sockets clients */
	int ep;			     /* epoll over their sockets */
	uint8_t *inputs;	     /* n_inputs tensors of in_bytes */
	const uint8_t *labels;
	uint32_t n_inputs, n_labels;
	size_t in_bytes;
	uint64_t rid_base;
	uint64_t *send_ns; /* first send */
	uint64_t *due_ns;  /* this try's deadline */
	uint8_t *tries;	   /* retransmissions so far */
	uint64_t *lat_ns;
	uint8_t *state;
	int32_t *cls; /* predicted class per request, -1 until answered */
	/* results */
	uint64_t sent, pending, responses, correct, labelled, timeouts, late, dups, stray;
	uint64_t retransmits, busy_retries, lib_dups;
	uint64_t send_errors;
	uint64_t errors[PROTO_ERR__COUNT + 1];
	char reason[PROTO_ERR__COUNT + 1][PROTO_REASON_MAX + 1]; /* the first ERROR's, per code */
	uint32_t detail[PROTO_ERR__COUNT + 1];
	uint64_t rejected[PROTO_VERDICT__COUNT];
	uint64_t ra_drop[PROTO_RA__COUNT];
	uint64_t server_ns[PROTO_T_COUNT];
	uint64_t *server_each[PROTO_T_COUNT]; /* per response, for the medians */
	uint64_t executors[8];
	uint64_t t_first, t_last;
};

static const char *const role_short[] = {"any", "nic", "host", "serve", "xdp"};

static int parse_shape(const char *s, uint32_t shape[3])
{
	char part[24];
	int64_t v;

	for (int i = 0; i < 3; i++) {
		size_t n = i < 2 && strchr(s, ',') ? (size_t)(strchr(s, ',') - s) : strlen(s);

		if ((i < 2 && !s[n]) || n >= sizeof(part))
			return -EINVAL;
		memcpy(part, s, n);
		part[n] = 0;
		if (conf_int(NULL, NULL, part, 1, 65536, &v))
			return -EINVAL;
		shape[i] = (uint32_t)v;
		s += n + 1;
	}
	return (uint64_t)shape[0] * shape[1] * shape[2] <= PROTO_MAX_ELEMS ? 0 : -EINVAL;
}

/*
 * --model FILE: random inputs take the model's input shape and type (unless --shape/--dtype
 * say otherwise), and requests carry proto_model_id(name) (unless --model-id says otherwise).
 */
static int model_defaults(const char *path, struct client_opts *o, bool id_given)
{
	struct model *m;
	char err[512];

	m = model_load(path, err, sizeof(err));
	if (!m) {
		fprintf(stderr, "client: --model: %s\n", err);
		return -EINVAL;
	}
	if (!o->shape[0]) {
		o->shape[0] = m->input.c;
		o->shape[1] = m->input.h;
		o->shape[2] = m->input.w;
		o->dtype = model_fmt_wire(m->input.fmt);
	}
	if (!id_given)
		o->model_id = proto_model_id(m->name);
	model_free(m);
	return 0;
}

enum { CO_SHAPE = 'S', CO_MODEL_ID = 'm', CO_MTU = 'M' };

static int client_opt(void *p, const struct conf_opt *opt, const char *arg)
{
	struct client_opts *o = p;
	int64_t v;

	switch (opt->key) {
	case CO_SHAPE:
		if (!parse_shape(arg, o->shape))
			return 0;
		fprintf(stderr, "splitnic client: --shape: C,H,W (each 1..65536), got '%s'\n", arg);
		return -1;
	case CO_MODEL_ID:
		o->id_given = true;
		o->model_id = conf_model_id(arg);
		return 0;
	default: /* --mtu: the payload less the IPv4 and UDP headers */
		if (conf_int("splitnic client", "--mtu", arg, 284, 65535, &v))
			return -1;
		o->payload = (long)v - 28;
		return 0;
	}
}

#define CLIENT_OPT(f) offsetof(struct client_opts, f)

static const struct conf_opt client_opts[] = {
    CONF_STR_ROW("addr", "ADDR", CLIENT_OPT(host), NULL, "the server (instead of ADDR[:PORT])"),
    CONF_PORT_ROW("port", "P", CLIENT_OPT(port), NULL, "its UDP port (default 21326)"),
    CONF_STR_ROW("images", "IDX[.gz]", CLIENT_OPT(images), NULL, "the inputs: IDX images"),
    CONF_STR_ROW("labels", "IDX[.gz]", CLIENT_OPT(labels), NULL, "their labels: the accuracy"),
    CONF_CALL_ROW("shape", "C,H,W", CO_SHAPE, NULL, "random inputs of this shape"),
    CONF_CHOICE_ROW("dtype", "u8|f32", CLIENT_OPT(dtype_name), NULL,
		    "the random inputs' type (default u8)"),
    CONF_STR_ROW("model", "FILE", CLIENT_OPT(model_path), NULL,
		 "random inputs of the model's shape and type, its name's id"),
    CONF_CALL_ROW("model-id", "ID|NAME", CO_MODEL_ID, NULL,
		  "the model id requests carry (a NAME: its FNV-1a hash)"),
    CONF_LONG_ROW("count", "N", CLIENT_OPT(count), 1, 1L << 31, NULL,
		  "requests (default: every image, or 1000 random tensors)"),
    CONF_POSITIVE_ROW("rate", "R", CLIENT_OPT(rate), 1e8, "requests/s", NULL,
		      "open loop: R requests/s"),
    CONF_LONG_ROW("outstanding", "N", CLIENT_OPT(outstanding), 1, 1 << 20, NULL,
		  "closed loop: N requests in flight (the default, with N = 1)"),
    CONF_FLAG_ROW("poisson", CLIENT_OPT(poisson), "open loop with Poisson arrivals"),
    CONF_LONG_ROW("timeout-ms", "T", CLIENT_OPT(timeout_ms), 1, 3600000, "1000",
		  "a request unanswered after T ms times out"),
    CONF_LONG_ROW("payload", "BYTES", CLIENT_OPT(payload), 256, 65507, "1400",
		  "UDP payload per datagram"),
    CONF_CALL_ROW("mtu", "BYTES", CO_MTU, NULL, "the payload from an IPv4 MTU"),
    CONF_LONG_ROW("seed", "S", CLIENT_OPT(seed), 0, 1L << 31, "1", "the random inputs' seed"),
    CONF_STR_ROW("classes", "FILE", CLIENT_OPT(classes), NULL,
		 "one line per request: its class, -1 without a RESPONSE"),
    CONF_LONG_ROW("sockets", "N", CLIENT_OPT(sockets), 1, 16384, "1",
		  "send over N sockets (source ports), request i over socket i mod N"),
    CONF_LONG_ROW("retries", "R", CLIENT_OPT(retries), 0, 255, NULL,
		  "send a request unanswered or answered busy again, up to R times"),
    CONF_FLAG_ROW("json", CLIENT_OPT(json), "one JSON object instead of text"),
    CONF_FLAG_ROW("health", CLIENT_OPT(health), "probe the server's HEALTH instead"),
    CONF_CHOICE_ROW("role", "any|nic|host|serve|xdp", CLIENT_OPT(role_name), NULL,
		    "--health: which server answers"),
};

const struct conf_cmd cmd_client_spec = {
    CONF_CMD("splitnic client",
	     "ADDR[:PORT] (--images IDX[.gz] [--labels IDX[.gz]] | --shape C,H,W "
	     "[--dtype u8|f32] | --model FILE) [OPTIONS]\n"
	     "--health ADDR[:PORT] [--role any|nic|host|serve|xdp] [--timeout-ms T] [--json]",
	     "front-end and load generator over UDP; exit status 3 when a request got no "
	     "RESPONSE",
	     client_opts, 0, 1, client_opt),
    .notes = "Sends N requests, open loop at R requests/s (evenly spaced, or Poisson arrivals\n"
	     "with --poisson) or closed loop with N outstanding, and reports accuracy (with\n"
	     "labels), latency p50/p90/p99/p99.9, throughput, errors by code and timeouts.\n"
	     "Exit status: 0 every request answered with a RESPONSE, 3 some were not (errors,\n"
	     "timeouts, send failures), 1 the run failed, 2 bad arguments.\n"
	     "--health: probe the server (and a NIC's host), print its report: exit 0 serving,\n"
	     "1 draining, degraded, no answer or error.\n"};

/* The options into o: 0, -EINVAL on bad arguments (exit 2), else -errno (a file: exit 1). */
static int parse_opts(int argc, char **argv, struct client_opts *o)
{
	static char hostbuf[256];
	uint16_t port;
	int arg;

	memset(o, 0, sizeof(*o));
	o->count = -1;
	arg = conf_parse(&cmd_client_spec, argc, argv, o);
	if (arg < 0)
		return -EINVAL;
	o->dtype = o->dtype_name ? proto_fmt_from_name(o->dtype_name) : PROTO_FMT_U8;
	o->role = -1;
	for (int k = 0; o->role_name && k <= SPLITNIC_ROLE_XDP; k++)
		if (!strcmp(o->role_name, role_short[k]))
			o->role = k;
	if (arg < argc) {
		const char *a = argv[arg];
		const char *colon = strrchr(a, ':');

		if (a[0] == '[' && strchr(a, ']')) { /* [v6addr]:port */
			size_t n = (size_t)(strchr(a, ']') - a - 1);

			snprintf(hostbuf, sizeof(hostbuf), "%.*s", (int)n, a + 1);
			colon = strchr(a, ']')[1] == ':' ? strchr(a, ']') + 1 : NULL;
		} else if (colon && strchr(a, ':') == colon) {
			snprintf(hostbuf, sizeof(hostbuf), "%.*s", (int)(colon - a), a);
		} else {
			snprintf(hostbuf, sizeof(hostbuf), "%s", a);
			colon = NULL;
		}
		o->host = hostbuf;
		if (colon)
			o->port = colon + 1;
	}
	if (o->port && conf_port("client", "port", o->port, &port))
		return -EINVAL;
	if (o->classes && conf_output_ok("client", "--classes", o->classes))
		return -EIO; /* the output file: exit 1, not bad usage */
	if (!o->host) {
		fprintf(stderr, "client: no server address\n");
		conf_usage(stderr, &cmd_client_spec);
		return -EINVAL;
	}
	if (o->health)
		return 0;
	if (o->role >= 0) {
		fprintf(stderr, "client: --role goes with --health\n");
		return -EINVAL;
	}
	if (o->model_path && model_defaults(o->model_path, o, o->id_given))
		return -EIO; /* the model file: exit 1, not bad usage */
	if (!o->images && !o->shape[0]) {
		fprintf(stderr, "client: give --images IDX, --shape C,H,W or --model FILE\n");
		return -EINVAL;
	}
	if (o->poisson && !(o->rate > 0)) {
		fprintf(stderr, "client: --poisson needs --rate\n");
		return -EINVAL;
	}
	if (o->rate > 0 && o->outstanding) {
		fprintf(stderr, "client: --rate and --outstanding exclude each other\n");
		return -EINVAL;
	}
	if (!o->rate && !o->outstanding)
		o->outstanding = 1;
	return 0;
}

/* Inputs: the IDX images (and labels), or a pool of random tensors of --shape. */
static int load_inputs(struct client_run *r, struct idx_data *img, struct idx_data *lab)
{
	struct client_opts *o = &r->o;
	char err[256];
	uint32_t rng = (uint32_t)o->seed * 2654435761u + 1;
	int ret;

	if (o->images) {
		ret = idx_load(o->images, img, err, sizeof(err));
		if (ret) {
			fprintf(stderr, "client: %s\n", err);
			return ret;
		}
		if (img->ndims < 2 || img->count == 0) {
			fprintf(stderr, "client: %s: expected (N, H, W) images\n", o->images);
			return -EINVAL;
		}
		o->shape[0] = img->ndims == 4 ? img->dims[1] : 1;
		o->shape[1] = img->dims[img->ndims == 4 ? 2 : 1];
		o->shape[2] = img->ndims >= 3 ? img->dims[img->ndims == 4 ? 3 : 2] : 1;
		o->dtype = PROTO_FMT_U8;
		r->inputs = img->data;
		r->n_inputs = img->count;
		r->in_bytes = img->item_bytes;
		if (o->labels) {
			ret = idx_load_labels(o->labels, img->count, lab, err, sizeof(err));
			if (ret) {
				fprintf(stderr, "client: %s\n", err);
				return ret;
			}
			r->labels = lab->data;
			r->n_labels = lab->count;
		}
		if (o->count < 0)
			o->count = img->count;
		return 0;
	}
	r->in_bytes = proto_fmt_bytes(o->dtype, (uint64_t)o->shape[0] * o->shape[1] * o->shape[2]);
	if (o->count < 0)
		o->count = 1000;
	r->n_inputs = o->count < 16 ? (uint32_t)o->count : 16;
	r->inputs = malloc(r->n_inputs * r->in_bytes);
	if (!r->inputs)
		return -ENOMEM;
	for (size_t i = 0; i < r->n_inputs * r->in_bytes; i += o->dtype == PROTO_FMT_F32 ? 4 : 1) {
		rng = rng * 1103515245u + 12345u;
		if (o->dtype == PROTO_FMT_F32)
			proto_le_put_f32(r->inputs + i, (float)(rng >> 8) / 16777216.0f);
		else
			r->inputs[i] = (uint8_t)(rng >> 16);
	}
	return 0;
}

static int send_request(struct client_run *r, uint32_t i)
{
	struct client_opts *o = &r->o;
	struct splitnic_tensor t = {o->dtype,
				    o->shape[0],
				    o->shape[1],
				    o->shape[2],
				    r->inputs + (size_t)(i % r->n_inputs) * r->in_bytes,
				    r->in_bytes,
				    0,
				    0};
	struct splitnic_error e;
	uint64_t t_send;
	int ret;

	ret = splitnic_client_send(r->cl[i % r->o.sockets], o->model_id, r->rid_base + i, &t,
				   &t_send, &e);
	if (ret == SPLITNIC_E_IO)
		r->send_errors++;
	else if (ret)
		return -EINVAL;
	r->due_ns[i] = t_send + (uint64_t)o->timeout_ms * 1000000ull;
	if (r->state[i] == REQ_PENDING) {
		r->retransmits++;
		return 0;
	}
	r->send_ns[i] = t_send;
	r->state[i] = REQ_PENDING;
	r->sent++;
	r->pending++;
	return 0;
}

static void on_message(struct client_run *r, const struct splitnic_response *msg)
{
	uint64_t idx = msg->request_id - r->rid_base, t = msg->recv_ns;

	if (idx >= (uint64_t)r->o.count || r->state[idx] == REQ_UNSENT) {
		r->stray++;
		return;
	}
	if (r->state[idx] == REQ_TIMEOUT) {
		r->late++;
		return;
	}
	if (r->state[idx] != REQ_PENDING) {
		r->dups++;
		return;
	}
	if (msg->error == PROTO_ERR_BUSY && r->tries[idx] < r->o.retries) {
		uint64_t backoff = (uint64_t)r->o.timeout_ms * 1000000ull;

		r->due_ns[idx] = t + (backoff < 20000000ull ? backoff : 20000000ull);
		r->busy_retries++;
		return;
	}
	r->t_last = t;
	r->pending--;
	if (msg->error) {
		const unsigned c = msg->error < PROTO_ERR__COUNT ? (unsigned)msg->error : 0;

		r->state[idx] = REQ_ERROR;
		if (!r->errors[c]++) {
			snprintf(r->reason[c], sizeof(r->reason[c]), "%s", msg->reason);
			r->detail[c] = msg->err_detail;
		}
		return;
	}
	r->state[idx] = REQ_DONE;
	r->cls[idx] = (int32_t)msg->cls;
	r->lat_ns[r->responses++] = t - r->send_ns[idx];
	for (unsigned k = 0; k < PROTO_T_COUNT; k++)
		r->server_each[k][r->responses - 1] = msg->t_ns[k];
	if (r->labels) {
		r->labelled++;
		r->correct += msg->cls == r->labels[idx % r->n_labels];
	}
	for (unsigned k = 0; k < PROTO_T_COUNT; k++)
		r->server_ns[k] += msg->t_ns[k];
	for (unsigned b = 0; b < 8; b++)
		r->executors[b] += (msg->executors >> b) & 1;
}

static void drain(struct client_run *r, struct splitnic_client *cl)
{
	struct splitnic_response resp;

	while (!splitnic_client_poll(cl, &resp, NULL))
		on_message(r, &resp);
}

/* The clients' drop counters, by reason, into the report's. */
static void collect_drops(struct client_run *r)
{
	struct splitnic_client_stats st;

	for (long k = 0; k < r->o.sockets; k++) {
		splitnic_client_stats(r->cl[k], &st);
		for (unsigned v = 0; v < PROTO_VERDICT__COUNT; v++)
			r->rejected[v] += st.rejected[v];
		r->rejected[PROTO_BAD_TYPE] += st.wrong_type;
		for (unsigned v = 0; v < PROTO_RA__COUNT; v++)
			r->ra_drop[v] += st.reasm_dropped[v];
		r->lib_dups += st.duplicates;
	}
}

static int write_classes(const struct client_run *r)
{
	FILE *f = fopen(r->o.classes, "w");
	int ret = 0;

	if (!f) {
		fprintf(stderr, "client: %s: %s\n", r->o.classes, strerror(errno));
		return -errno;
	}
	for (long i = 0; i < r->o.count; i++)
		fprintf(f, "%d\n", r->cls[i]);
	if (fclose(f)) {
		fprintf(stderr, "client: %s: %s\n", r->o.classes, strerror(errno));
		ret = -EIO;
	}
	return ret;
}

/* Pending requests whose try is over: sent again while retries are left, else timed out. */
static int expire(struct client_run *r, uint32_t head, uint32_t next, uint64_t t)
{
	for (uint32_t i = head; i < next; i++) {
		if (r->state[i] != REQ_PENDING || t < r->due_ns[i])
			continue;
		if (r->tries[i] < r->o.retries) {
			r->tries[i]++;
			if (send_request(r, i))
				return -EINVAL;
			continue;
		}
		r->state[i] = REQ_TIMEOUT;
		r->timeouts++;
		r->pending--;
	}
	return 0;
}

/* The gap to the next open-loop send: 1/rate, or exponential of that mean (--poisson). */
static uint64_t next_gap(const struct client_opts *o, uint64_t *rng)
{
	double u;

	if (!o->poisson)
		return (uint64_t)(1e9 / o->rate);
	*rng ^= *rng << 13;
	*rng ^= *rng >> 7;
	*rng ^= *rng << 17;
	u = (double)(*rng >> 11) * 0x1.0p-53;
	return (uint64_t)(-log1p(-u) * 1e9 / o->rate);
}

static int run_loop(struct client_run *r)
{
	const struct client_opts *o = &r->o;
	const uint64_t timeout = (uint64_t)o->timeout_ms * 1000000ull;
	const uint64_t scan = timeout / 8 > 1000000ull ? timeout / 8 : 1000000ull;
	uint64_t rng = (uint64_t)o->seed * 0x9e3779b97f4a7c15ull + 1;
	uint32_t next = 0, head = 0, count = (uint32_t)o->count;
	uint64_t t, t0 = lat_now_ns(), wait, due, next_scan = t0 + scan, next_due = t0;
	struct epoll_event ev[64];
	int n;

	r->t_first = t0;
	while (head < count) {
		t = lat_now_ns();
		while (next < count &&
		       (o->rate > 0 ? t >= next_due : r->pending < (uint64_t)o->outstanding)) {
			if (send_request(r, next++))
				return -EINVAL;
			if (o->rate > 0)
				next_due += next_gap(o, &rng);
			t = lat_now_ns();
		}
		n = epoll_wait(r->ep, ev, 64, 0);
		for (int k = 0; k < n; k++)
			drain(r, r->cl[ev[k].data.u32]);
		t = lat_now_ns();
		if (t >= next_scan) {
			if (expire(r, head, next, t))
				return -EINVAL;
			next_scan = t + scan;
		}
		while (head < next && r->state[head] != REQ_PENDING)
			head++;
		if (head >= count)
			break;
		wait = next_scan - t;
		if (next < count) {
			due = o->rate > 0
				  ? next_due
				  : (r->pending < (uint64_t)o->outstanding ? t : UINT64_MAX);
			if (due != UINT64_MAX)
				wait = due > t ? (due - t < wait ? due - t : wait) : 0;
		}
		if (n == 64)
			wait = 0;
		/* a timeout in nanoseconds: one in milliseconds would send an open loop's
		 * requests in bursts a millisecond apart, not at their Poisson times */
		if (wait) {
			const struct timespec ts = {.tv_sec = (time_t)(wait / 1000000000ull),
						    .tv_nsec = (long)(wait % 1000000000ull)};

			if (epoll_pwait2(r->ep, ev, 1, &ts, NULL) < 0 && errno != EINTR)
				return -errno;
		}
	}
	return 0;
}

/* --sockets clients, their sockets in one epoll set (the file limit raised if need be). */
static int open_clients(struct client_run *r)
{
	struct epoll_event ev = {.events = EPOLLIN};
	struct splitnic_error e;
	struct rlimit rl;

	if (!getrlimit(RLIMIT_NOFILE, &rl) && rl.rlim_cur < (rlim_t)r->o.sockets + 64 &&
	    rl.rlim_max >= (rlim_t)r->o.sockets + 64) {
		rl.rlim_cur = (rlim_t)r->o.sockets + 64;
		setrlimit(RLIMIT_NOFILE, &rl);
	}
	r->cl = calloc((size_t)r->o.sockets, sizeof(*r->cl));
	r->ep = epoll_create1(EPOLL_CLOEXEC);
	if (!r->cl || r->ep < 0) {
		fprintf(stderr, "client: %s\n", !r->cl ? "out of memory" : strerror(errno));
		return -ENOMEM;
	}
	for (long k = 0; k < r->o.sockets; k++) {
		if (splitnic_client_open(r->o.host, r->o.port, (uint32_t)r->o.payload, &r->cl[k],
					 &e)) {
			fprintf(stderr, "client: socket %ld of %ld: %s\n", k + 1, r->o.sockets,
				e.msg);
			return -EINVAL;
		}
		ev.data.u32 = (uint32_t)k;
		if (epoll_ctl(r->ep, EPOLL_CTL_ADD, splitnic_client_fd(r->cl[k]), &ev)) {
			fprintf(stderr, "client: epoll: %s\n", strerror(errno));
			return -EINVAL;
		}
	}
	return 0;
}

static void close_clients(struct client_run *r)
{
	for (long k = 0; r->cl && k < r->o.sockets; k++)
		splitnic_client_close(r->cl[k]);
	free(r->cl);
	if (r->ep >= 0)
		close(r->ep);
}

static double pct(uint64_t a, uint64_t b)
{
	return b ? (double)a / (double)b : 0.0;
}

static const char *const ex_names[8] = {"cpu",		 "gpu",	 "nic",	 "xdp",
					"host_fallback", "bit5", "bit6", "bit7"};
static const char *const t_names[PROTO_T_COUNT] = {"total", "rx",   "queue", "host",
						   "pack",  "xfer", "nic",   "tx"};

static void report_text(struct client_run *r, const struct lat_summary *ls, double secs)
{
	const struct client_opts *o = &r->o;
	uint64_t nerr = 0, nrej = 0;

	for (unsigned c = 0; c <= PROTO_ERR__COUNT; c++)
		nerr += r->errors[c];
	for (unsigned v = 0; v < PROTO_VERDICT__COUNT; v++)
		nrej += r->rejected[v];
	for (unsigned v = 0; v < PROTO_RA__COUNT; v++)
		nrej += r->ra_drop[v];
	printf("client: %lu requests to %s:%s, ", (unsigned long)o->count, o->host,
	       o->port ? o->port : "21326");
	if (o->rate > 0)
		printf("open loop at %.0f req/s%s", o->rate, o->poisson ? " (Poisson)" : "");
	else
		printf("closed loop, %ld outstanding", o->outstanding);
	printf(", %s %ux%ux%u, %u datagram(s) each\n", proto_fmt_name(o->dtype), o->shape[0],
	       o->shape[1], o->shape[2],
	       proto_frag_count(PROTO_REQUEST_HDR_LEN, r->in_bytes, (size_t)o->payload));
	printf("  responses  %lu   errors %lu", (unsigned long)r->responses, (unsigned long)nerr);
	for (unsigned c = 1; c < PROTO_ERR__COUNT; c++)
		if (r->errors[c])
			printf(" %s=%lu", proto_error_name(c), (unsigned long)r->errors[c]);
	printf("   timeouts %lu   late %lu   duplicate %lu   stray %lu   rejected %lu\n",
	       (unsigned long)r->timeouts, (unsigned long)r->late,
	       (unsigned long)(r->dups + r->lib_dups), (unsigned long)r->stray,
	       (unsigned long)nrej);
	for (unsigned c = 0; c <= PROTO_ERR__COUNT; c++)
		if (r->errors[c])
			printf("  error %s: the server said \"%s\" (detail %u)\n",
			       proto_error_name(c), r->reason[c], r->detail[c]);
	if (r->o.retries || r->o.sockets > 1)
		printf("  retransmissions %lu (after busy %lu) over %ld socket(s)\n",
		       (unsigned long)r->retransmits, (unsigned long)r->busy_retries, r->o.sockets);
	if (!r->responses) {
		printf("  accuracy   no answers\n  latency    no answers\n");
	} else {
		if (r->labels)
			printf("  accuracy   %.4f (%lu/%lu)\n", pct(r->correct, r->labelled),
			       (unsigned long)r->correct, (unsigned long)r->labelled);
		printf("  latency    p50 %.1f us  p90 %.1f us  p99 %.1f us  p99.9 %.1f us  "
		       "(min %.1f, mean %.1f, max %.1f)\n",
		       ls->p50 / 1e3, ls->p90 / 1e3, ls->p99 / 1e3, ls->p999 / 1e3, ls->min / 1e3,
		       ls->mean / 1e3, ls->max / 1e3);
	}
	printf("  throughput %.1f responses/s over %.3f s (%lu sent)\n",
	       secs > 0 ? (double)r->responses / secs : 0.0, secs, (unsigned long)r->sent);
	if (r->responses) {
		printf("  server     mean ns:");
		for (unsigned k = 0; k < PROTO_T_COUNT; k++)
			printf(" %s %.0f", t_names[k], (double)r->server_ns[k] / r->responses);
		printf("\n  executors ");
		for (unsigned b = 0; b < 8; b++)
			if (r->executors[b])
				printf(" %s=%lu", ex_names[b], (unsigned long)r->executors[b]);
		printf("\n");
	}
	if (r->send_errors)
		printf("  send errors %lu\n", (unsigned long)r->send_errors);
}

/* s as a JSON string: what is not printable ASCII, quotes and backslashes escaped. */
static void json_string(const char *s)
{
	putchar('"');
	for (; *s; s++)
		if (*s == '"' || *s == '\\' || *s < 0x20 || *s > 0x7e)
			printf("\\u%04x", (unsigned char)*s);
		else
			putchar(*s);
	putchar('"');
}

static void report_json(struct client_run *r, const struct lat_summary *ls, double secs)
{
	const struct client_opts *o = &r->o;
	uint64_t nerr = 0;
	const char *sep = "";

	for (unsigned c = 0; c <= PROTO_ERR__COUNT; c++)
		nerr += r->errors[c];
	printf("{\"server\": \"%s:%s\", \"mode\": \"%s\", \"arrivals\": \"%s\", \"rate\": %.3f, "
	       "\"outstanding\": %ld, \"requests\": %lu, \"sent\": %lu, \"responses\": %lu, ",
	       o->host, o->port ? o->port : "21326", o->rate > 0 ? "open" : "closed",
	       o->poisson ? "poisson" : "periodic", o->rate, o->rate > 0 ? 0 : o->outstanding,
	       (unsigned long)o->count, (unsigned long)r->sent, (unsigned long)r->responses);
	printf("\"errors\": {\"total\": %lu", (unsigned long)nerr);
	for (unsigned c = 1; c < PROTO_ERR__COUNT; c++)
		printf(", \"%s\": %lu", proto_error_name(c), (unsigned long)r->errors[c]);
	printf("}, \"error_reasons\": {");
	for (unsigned c = 0, n = 0; c <= PROTO_ERR__COUNT; c++)
		if (r->errors[c]) {
			printf("%s\"%s\": ", n++ ? ", " : "", proto_error_name(c));
			json_string(r->reason[c]);
		}
	printf("}, \"timeouts\": %lu, \"late\": %lu, \"duplicates\": %lu, \"stray\": %lu, "
	       "\"send_errors\": %lu, \"sockets\": %ld, \"retransmissions\": %lu, "
	       "\"busy_retries\": %lu, \"rejected\": {",
	       (unsigned long)r->timeouts, (unsigned long)r->late,
	       (unsigned long)(r->dups + r->lib_dups), (unsigned long)r->stray,
	       (unsigned long)r->send_errors, o->sockets, (unsigned long)r->retransmits,
	       (unsigned long)r->busy_retries);
	for (unsigned v = 1; v < PROTO_VERDICT__COUNT; v++, sep = ", ")
		printf("%s\"%s\": %lu", sep, proto_verdict_name(v), (unsigned long)r->rejected[v]);
	for (unsigned v = PROTO_RA_DUPLICATE; v < PROTO_RA__COUNT; v++)
		printf(", \"reasm_%s\": %lu", proto_ra_verdict_name(v),
		       (unsigned long)r->ra_drop[v]);
	printf("}, ");
	if (r->labels && r->labelled)
		printf("\"accuracy\": %.6f, \"correct\": %lu, \"labelled\": %lu, ",
		       pct(r->correct, r->labelled), (unsigned long)r->correct,
		       (unsigned long)r->labelled);
	else
		printf("\"accuracy\": null, \"correct\": %lu, \"labelled\": %lu, ",
		       (unsigned long)r->correct, (unsigned long)r->labelled);
	if (r->responses)
		printf("\"latency_us\": {\"min\": %.3f, \"mean\": %.3f, \"p50\": %.3f, "
		       "\"p90\": %.3f, \"p99\": %.3f, \"p99.9\": %.3f, \"max\": %.3f}, ",
		       ls->min / 1e3, ls->mean / 1e3, ls->p50 / 1e3, ls->p90 / 1e3, ls->p99 / 1e3,
		       ls->p999 / 1e3, ls->max / 1e3);
	else
		printf("\"latency_us\": null, ");
	printf("\"duration_s\": %.6f, \"throughput_rps\": %.3f, \"server_mean_ns\": {", secs,
	       secs > 0 ? (double)r->responses / secs : 0.0);
	for (unsigned k = 0; k < PROTO_T_COUNT; k++)
		printf("%s\"%s\": %.1f", k ? ", " : "", t_names[k],
		       r->responses ? (double)r->server_ns[k] / r->responses : 0.0);
	printf("}, \"server_p50_ns\": {");
	for (unsigned k = 0; k < PROTO_T_COUNT; k++) {
		struct lat_summary s;

		lat_summarize(r->server_each[k], r->responses, &s);
		printf("%s\"%s\": %.1f", k ? ", " : "", t_names[k], s.p50);
	}
	printf("}, \"executors\": {");
	for (unsigned b = 0; b < 5; b++)
		printf("%s\"%s\": %lu", b ? ", " : "", ex_names[b], (unsigned long)r->executors[b]);
	printf("}}\n");
}

static void health_print(const struct client_opts *o, const struct splitnic_health *h)
{
	if (o->json) {
		printf("{\"server\": \"%s:%s\", \"ident\": \"%s\", \"role\": \"%s\", \"state\": "
		       "\"%s\", \"in_flight\": %u, \"truncated\": %s, \"rtt_us\": %.1f, "
		       "\"models\": [",
		       o->host, o->port ? o->port : "21326", h->ident, splitnic_role_name(h->role),
		       splitnic_health_state_name(h->state), h->in_flight,
		       h->truncated ? "true" : "false", (double)h->rtt_ns / 1e3);
		for (uint32_t i = 0; i < h->n_models; i++) {
			const struct splitnic_health_model *m = &h->model[i];

			printf("%s{\"name\": \"%s\", \"id\": %u, \"mode\": \"%s\", "
			       "\"first_op\": %u, \"input\": \"%s %ux%ux%u\", \"classes\": %u}",
			       i ? ", " : "", m->name, m->model_id,
			       splitnic_health_mode_name(m->mode), m->first_op,
			       proto_fmt_name(m->in_fmt), m->c, m->h, m->w, m->classes);
		}
		printf("]}\n");
		return;
	}
	printf("%s:%s: %s (%s) %s, %u in flight, %.0f us%s\n", o->host, o->port ? o->port : "21326",
	       h->ident, splitnic_role_name(h->role), splitnic_health_state_name(h->state),
	       h->in_flight, (double)h->rtt_ns / 1e3, h->truncated ? ", model list truncated" : "");
	for (uint32_t i = 0; i < h->n_models; i++) {
		const struct splitnic_health_model *m = &h->model[i];

		printf("  model %-24s id %#010x %-9s from op %u, input %s %ux%ux%u, %u classes\n",
		       m->name, m->model_id, splitnic_health_mode_name(m->mode), m->first_op,
		       proto_fmt_name(m->in_fmt), m->c, m->h, m->w, m->classes);
	}
}

/* --health: 0 serving (the NIC's host too, when it has one), 1 anything else. */
static int client_health(const struct client_opts *o)
{
	uint32_t role = o->role < 0 ? SPLITNIC_ROLE_ANY : (uint32_t)o->role;
	struct splitnic_client *cl = NULL;
	struct splitnic_health h;
	struct splitnic_error e;
	bool ok = true, host_part;

	if (splitnic_client_open(o->host, o->port, (uint32_t)o->payload, &cl, &e)) {
		fprintf(stderr, "client: %s\n", e.msg);
		return 1;
	}
	for (;;) {
		if (splitnic_client_health(cl, role, (int)o->timeout_ms, &h, &e)) {
			fflush(stdout);
			fprintf(stderr, "client: %s:%s (%s): %s\n", o->host,
				o->port ? o->port : "21326", splitnic_role_name(role), e.msg);
			ok = false;
			break;
		}
		health_print(o, &h);
		ok = ok && h.state == SPLITNIC_SERVING;
		host_part = false;
		for (uint32_t i = 0; i < h.n_models; i++)
			host_part = host_part || h.model[i].mode == PROTO_MODE_NIC_PART;
		if (o->role >= 0 || role != SPLITNIC_ROLE_ANY || h.role != SPLITNIC_ROLE_NIC ||
		    !host_part)
			break;
		role = SPLITNIC_ROLE_HOST; /* the NIC's co-processor parts need its host */
	}
	splitnic_client_close(cl);
	return ok ? 0 : 1;
}

int cmd_client(int argc, char **argv)
{
	struct client_run *r;
	struct idx_data img = {0}, lab = {0};
	struct lat_summary ls;
	bool lost = false, oom = false;
	double secs;
	int ret;

	r = calloc(1, sizeof(*r));
	if (!r)
		return 1;
	r->ep = -1;
	ret = parse_opts(argc, argv, &r->o);
	if (ret || r->o.health) {
		ret = ret ? (ret == -EINVAL ? 2 : 1) : client_health(&r->o);
		free(r);
		return ret;
	}
	ret = load_inputs(r, &img, &lab);
	if (ret)
		goto out_free_inputs;
	if (proto_fmt_bytes(r->o.dtype, (uint64_t)r->o.shape[0] * r->o.shape[1] * r->o.shape[2]) !=
	    r->in_bytes) {
		fprintf(stderr, "client: input size does not match its shape\n");
		ret = -EINVAL;
		goto out_free_inputs;
	}
	ret = open_clients(r);
	if (ret)
		goto out_free_state;
	r->send_ns = calloc((size_t)r->o.count, sizeof(*r->send_ns));
	r->due_ns = calloc((size_t)r->o.count, sizeof(*r->due_ns));
	r->tries = calloc((size_t)r->o.count, 1);
	r->lat_ns = calloc((size_t)r->o.count, sizeof(*r->lat_ns));
	r->state = calloc((size_t)r->o.count, 1);
	r->cls = malloc((size_t)r->o.count * sizeof(*r->cls));
	for (unsigned k = 0; k < PROTO_T_COUNT; k++) {
		r->server_each[k] = calloc((size_t)r->o.count, sizeof(uint64_t));
		oom |= !r->server_each[k];
	}
	if (oom || !r->send_ns || !r->due_ns || !r->tries || !r->lat_ns || !r->state || !r->cls) {
		fprintf(stderr, "client: out of memory for %ld requests\n", r->o.count);
		ret = -ENOMEM;
		goto out_free_state;
	}
	memset(r->cls, 0xff, (size_t)r->o.count * sizeof(*r->cls));
	r->rid_base = (uint64_t)(getpid() & 0xffff) << 48 | (lat_now_ns() & 0xffffull) << 32;

	ret = run_loop(r);
	collect_drops(r);
	if (ret) {
		fprintf(stderr, "client: %s\n", strerror(-ret));
		goto out_free_state;
	}
	secs = r->t_last > r->t_first ? (double)(r->t_last - r->t_first) / 1e9 : 0.0;
	lat_summarize(r->lat_ns, r->responses, &ls);
	if (r->o.json)
		report_json(r, &ls, secs);
	else
		report_text(r, &ls, secs);
	if (r->o.classes)
		ret = write_classes(r);
	if (!ret && r->responses < (uint64_t)r->o.count) {
		fprintf(stderr,
			"client: %lu of %ld requests got no RESPONSE (errors, timeouts or send "
			"failures): exit status 3\n",
			(unsigned long)((uint64_t)r->o.count - r->responses), r->o.count);
		lost = true;
	}

out_free_state:
	for (unsigned k = 0; k < PROTO_T_COUNT; k++)
		free(r->server_each[k]);
	free(r->cls);
	free(r->state);
	free(r->lat_ns);
	free(r->tries);
	free(r->due_ns);
	free(r->send_ns);
	close_clients(r);
out_free_inputs:
	if (r->o.images)
		idx_free(&img);
	else
		free(r->inputs);
	idx_free(&lab);
	free(r);
	return ret > 0 ? 0 : ret ? 1 : lost ? 3 : 0;
}
