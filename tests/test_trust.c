/* SPDX-License-Identifier: MIT */
/*
 * The one trust policy (protocol/trust.h): its rules one by one (the rate limit, the allow-list
 * prefixes, the decision), then its four implementations, fed one table of cases:
 *
 *   nic    the NIC's dispatcher (nicfw/dispatch.c) on its wire port, the model on the emulator
 *   host   splitnic-host's receive path (host/dpdk_rx.c, dpdk_tx.c, dpdk_health.c) on a worker
 *          built here over DPDK (EAL --no-huge; its frames out taken from the worker's ring)
 *   serve  `splitnic serve` itself (cmd_serve in a child process) on 127.0.0.1, the front-ends
 *          kernel UDP sockets bound to 127.0.x.y
 *   xdp    the XDP program, through BPF_PROG_TEST_RUN
 *
 * The cases (the table below): a source on the allow-list or not, a reply larger or smaller than
 * its request (the REQUEST's header padded to 256 bytes), ERROR bad_shape cut to fit, a burst
 * of ERRORs over the rate (1 a second, 2 at once), a zero rate (no limit), HEALTH probes (one
 * too short for any report). For each datagram the table gives the verdict; proto_trust_decide
 * must give it too, and so must every implementation: its counters (serve's at its exit, summed
 * per configuration) and what it sent (nothing, the RESPONSE, an ERROR and its code, a HEALTH
 * report). No reply to a source off the allow-list is larger than the datagram that caused it.
 * The host's RESPONSE is its admission into the worker's queue (computed later, not here); the
 * XDP program passes a REQUEST whose RESPONSE is too large to the stack instead of answering
 * ERROR too_large.
 *
 * Needs root (DPDK, BPF). Outside CI the tests skip with a message without it; under CI=true
 * they fail instead.
 */
#include <errno.h>
#include <limits.h>
#include <math.h>
#include <poll.h>
#include <setjmp.h>
#include <signal.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include <arpa/inet.h>
#include <cmocka.h>
#include <linux/bpf.h>
#include <rte_eal.h>
#include <rte_errno.h>
#include <rte_malloc.h>

#include "host/host_dpdk.h"
#include "nicfw/dispatch.h"
#include "nicfw/emu/exec_emu.h"
#include "nicfw/xdp/xdp_infer.h"
#include "protocol/frame.h"
#include "protocol/proto.h"
#include "protocol/trust.h"
#include "serve/serve.h"
#include "tests/support/model_fixture.h"

#define NA(a)	 (sizeof(a) / sizeof((a)[0]))
#define PORT	 PROTO_DEFAULT_PORT
#define SERVER	 0x7f000001u /* 127.0.0.1 */
#define IP(b, c) (0x7f000000u | (uint32_t)(b) << 8 | (uint32_t)(c))
#define LISTED	 "127.0.1.0/24"
#define MARKER	 IP(1, 254) /* serve: the probe that says the case's datagram was handled */
#define CLASSES	 20u
#define IN	 8u
#define RESP_LEN (PROTO_RESP_HDR_LEN + 8u * CLASSES) /* 240: larger than a plain REQUEST */

enum {
	S = PROTO_TRUST_SEND,
	NOT = PROTO_TRUST_NOT_ALLOWED,
	BIG = PROTO_TRUST_TOO_LARGE,
	RL = PROTO_TRUST_RATE_LIMITED
};

static const char *const verdict_name[PROTO_TRUST__COUNT] = {"send", "not_allowed", "too_large",
							     "rate_limited"};

/* The configurations: the servers' options. */
enum cfg_id { C_OPEN, C_LIST, C_NO_LIMIT, C__COUNT };
static const struct {
	const char *allow; /* NULL: no list */
	uint32_t rate, burst;
} cfgs[C__COUNT] = {{NULL, 1, 2}, {LISTED, 1, 2}, {NULL, 0, 2}};

/* What a front-end sends. */
enum kind {
	K_REQ,	       /* a REQUEST, 72 bytes: its RESPONSE (240) is larger */
	K_REQ_PAD,     /* the same with its header padded to 256 bytes: 264 */
	K_BAD_SHAPE,   /* 8 u8 elements as (1,2,4): ERROR bad_shape */
	K_PROBE,       /* a HEALTH probe of 128 bytes: the report fits */
	K_PROBE_SHORT, /* a HEALTH probe of 64 bytes: no report fits (80 at least) */
};

struct trust_case {
	const char *what;
	enum cfg_id cfg;
	uint32_t src;
	enum kind kind;
	uint32_t n;	 /* datagrams sent, one after the other */
	uint8_t want[5]; /* the verdict on each */
};

static const struct trust_case cases[] = {
    {"no list: a RESPONSE no larger than its REQUEST", C_OPEN, IP(2, 1), K_REQ_PAD, 1, {S}},
    {"no list: a RESPONSE larger than its REQUEST", C_OPEN, IP(2, 2), K_REQ, 1, {BIG}},
    {"no list: ERROR bad_shape, cut to 72 bytes", C_OPEN, IP(2, 3), K_BAD_SHAPE, 1, {S}},
    {"no list: ERRORs over the rate", C_OPEN, IP(2, 4), K_BAD_SHAPE, 4, {S, S, RL, RL}},
    {"no list: a HEALTH probe", C_OPEN, IP(2, 5), K_PROBE, 1, {S}},
    {"no list: a HEALTH probe too short", C_OPEN, IP(2, 6), K_PROBE_SHORT, 1, {BIG}},
    {"list: a listed source, the larger RESPONSE", C_LIST, IP(1, 1), K_REQ, 1, {S}},
    {"list: a listed source's ERRORs over the rate", C_LIST, IP(1, 2), K_BAD_SHAPE, 3, {S, S, RL}},
    {"list: a listed source's HEALTH probe too short", C_LIST, IP(1, 3), K_PROBE_SHORT, 1, {BIG}},
    {"list: a REQUEST from off the list", C_LIST, IP(2, 7), K_REQ_PAD, 1, {NOT}},
    {"list: no ERROR off the list", C_LIST, IP(2, 8), K_BAD_SHAPE, 3, {NOT, NOT, NOT}},
    {"list: no HEALTH report off the list", C_LIST, IP(2, 9), K_PROBE, 1, {NOT}},
    {"rate 0: no limit", C_NO_LIMIT, IP(2, 10), K_BAD_SHAPE, 5, {S, S, S, S, S}},
};

/* What an implementation did with one datagram. */
struct obs {
	int verdict;   /* enum proto_trust_verdict, -1: not known yet (serve: from its counters) */
	unsigned sent; /* 0: nothing; else the type of what it sent back */
	uint16_t code; /* an ERROR's */
	uint32_t len;  /* UDP payload bytes sent back */
};

struct impl {
	const char *name;
	void (*open)(enum cfg_id c);
	void (*send)(uint32_t src, const uint8_t *dg, uint32_t len, struct obs *o);
	/* after the configuration's cases: its counters against the verdicts given (want[]) */
	void (*close)(const uint64_t want[PROTO_TRUST__COUNT], uint64_t want_health_short);
};

static bool ci, no_root;
static struct test_fx *fx;
static struct model *mdl;

static uint64_t mono_ns(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (uint64_t)ts.tv_sec * 1000000000ull + (uint64_t)ts.tv_nsec;
}

static struct proto_trust_cfg trust_cfg(enum cfg_id c)
{
	struct proto_trust_cfg t = {0};

	if (cfgs[c].allow)
		assert_int_equal(proto_trust_allow(&t, cfgs[c].allow), 0);
	proto_trust_set_rate(&t, cfgs[c].rate, cfgs[c].burst);
	return t;
}

/* The datagram of a kind; returns its length. */
static uint32_t datagram(enum kind k, uint64_t rid, uint8_t *dg, size_t cap)
{
	static const uint8_t x[IN] = {3, 250, 7, 128, 0, 99, 255, 1};
	struct proto_msg m;
	int n;

	if (k == K_PROBE || k == K_PROBE_SHORT)
		n = proto_build_health_probe(dg, cap, rid, k == K_PROBE ? 128 : 64);
	else {
		proto_msg_init(&m, PROTO_REQUEST, 0, rid);
		if (k == K_BAD_SHAPE)
			proto_msg_set_tensor(&m, PROTO_FMT_U8, 1, 2, 4, 0, 0);
		else
			proto_msg_set_tensor(&m, PROTO_FMT_U8, IN, 1, 1, 0, 0);
		if (k == K_REQ_PAD)
			m.hdr_len = PROTO_MAX_HDR_LEN;
		n = proto_build(&m, x, IN, dg, cap);
	}
	assert_true(n > 0);
	return (uint32_t)n;
}

/* What the policy itself says of a datagram of kind k and len bytes from src. */
static int policy(const struct proto_trust_cfg *t, uint64_t *bucket, uint32_t src, enum kind k,
		  uint32_t len)
{
	const struct proto_trust_ask q = {
	    .src = src,
	    .reply = k == K_BAD_SHAPE			  ? PROTO_ERROR
		     : k == K_PROBE || k == K_PROBE_SHORT ? PROTO_HEALTH
							  : PROTO_RESPONSE,
	    .in_bytes = len,
	    .out_bytes = k == K_BAD_SHAPE ? PROTO_ERROR_HDR_LEN
			 : k == K_PROBE || k == K_PROBE_SHORT
			     ? PROTO_HEALTH_HDR_LEN + PROTO_HEALTH_IDENT_LEN
			     : RESP_LEN,
	};
	uint32_t cap;

	return proto_trust_decide(t, &q, bucket, mono_ns(), &cap);
}

/* The UDP payload of frame f (a reply): what it is, into o. */
static void read_reply(const uint8_t *p, uint32_t plen, struct obs *o)
{
	struct proto_msg m;

	assert_int_equal(proto_parse(p, plen, &m), PROTO_OK);
	o->sent = m.type;
	o->code = m.type == PROTO_ERROR ? m.err.code : 0;
	o->len = plen;
}

/* An Ethernet/IPv4/UDP frame from src to the server carrying dg; returns its length. */
static uint32_t frame_from(uint8_t *f, uint32_t src, const uint8_t *dg, uint32_t len)
{
	struct proto_addr a = {.smac = {2, 0, 0, 0, 0, 2}, .dmac = {2, 0, 0, 0, 0, 1}};

	a.sip = src;
	a.dip = SERVER;
	a.sport = 40000;
	a.dport = PORT;
	memcpy(f + PROTO_FRAME_HDRS, dg, len);
	return proto_frame_udp(f, &a, len, false);
}

/* --- nic: the dispatcher, the model on the emulator ---------------------------------------- */

static struct {
	struct kexec x;
	struct nicfw_health h;
	struct nicfw_disp *d;
	uint8_t out[PROTO_FRAME_MAX];
	uint32_t out_len, n_out;
} nic;

static int nic_tx(void *arg, enum nicfw_port port, const uint8_t *frame, uint32_t len)
{
	assert_int_equal(port, NICFW_PORT_WIRE);
	memcpy(nic.out, frame, len);
	nic.out_len = len;
	nic.n_out++;
	return 0;
}

static void nic_open(enum cfg_id c)
{
	const struct nicfw_exec_emu_conf ec = {.executors = 4};
	struct nicfw_disp_config dc = {.ip = SERVER, .port = PORT, .payload = 1400};
	char err[512];

	if (!nic.x.m && (kexec_open(&nic.x, &nicfw_exec_emu_ops, &ec, err, sizeof(err)) ||
			 kexec_load(&nic.x, mdl, 0, mdl->n_layers, 1, err, sizeof(err))))
		fail_msg("nic: %s", err);
	nicfw_health_init(&nic.h, "trust-nic");
	assert_int_equal(nicfw_health_add(&nic.h, 0x1234, 0, PROTO_FMT_U8, IN, 1, 1, CLASSES, "m"),
			 0);
	dc.health = &nic.h;
	dc.trust = trust_cfg(c);
	dc.tx = nic_tx;
	dc.n_models = 1;
	if (nicfw_disp_model_init(&dc.model[0], 0x1234, &nic.x, err, sizeof(err)))
		fail_msg("nic: %s", err);
	nic.d = nicfw_disp_create(&dc, err, sizeof(err));
	if (!nic.d)
		fail_msg("nic: %s", err);
}

static void nic_send(uint32_t src, const uint8_t *dg, uint32_t len, struct obs *o)
{
	uint64_t c0[NICFW_C__COUNT], c1[NICFW_C__COUNT], now = mono_ns();
	uint8_t f[PROTO_FRAME_MAX];
	uint32_t flen = frame_from(f, src, dg, len);

	nicfw_disp_counters(nic.d, c0, NULL);
	nic.n_out = 0;
	assert_int_equal(nicfw_disp_rx(nic.d, NICFW_PORT_WIRE, f, flen, now), NICFW_DISP_CONSUMED);
	for (int i = 0; i < 100 && nicfw_disp_pending(nic.d); i++)
		nicfw_disp_poll(nic.d, now);
	assert_int_equal(nicfw_disp_pending(nic.d), 0);
	nicfw_disp_counters(nic.d, c1, NULL);
	o->verdict = c1[NICFW_C_NOT_ALLOWED] > c0[NICFW_C_NOT_ALLOWED] ? NOT
		     : c1[NICFW_C_REPLY_TOO_LARGE] > c0[NICFW_C_REPLY_TOO_LARGE] ||
			     c1[NICFW_C_HEALTH_DROPPED] > c0[NICFW_C_HEALTH_DROPPED]
			 ? BIG
		     : c1[NICFW_C_ERR_RATE_LIMITED] > c0[NICFW_C_ERR_RATE_LIMITED] ? RL
										   : S;
	assert_true(nic.n_out <= 1);
	if (nic.n_out)
		read_reply(nic.out + PROTO_FRAME_HDRS, nic.out_len - PROTO_FRAME_HDRS, o);
}

static void nic_close(const uint64_t want[PROTO_TRUST__COUNT], uint64_t health_short)
{
	nicfw_disp_free(nic.d);
	nic.d = NULL;
}

/* --- host: a splitnic-host worker over DPDK ------------------------------------------------ */

static struct {
	struct host_app *a;
	struct host_worker *w;
} host;

static void host_open(enum cfg_id c)
{
	struct proto_reasm_config rc = {16, 4096, 1000000000ull};
	struct host_app *a;
	struct host_worker *w;
	char err[512];

	if (!host.a) {
		a = host.a = rte_zmalloc("trust_app", sizeof(*a), RTE_CACHE_LINE_SIZE);
		w = host.w = rte_zmalloc("trust_worker", sizeof(*w), RTE_CACHE_LINE_SIZE);
		assert_non_null(a);
		assert_non_null(w);
		a->o.udp_port = PORT;
		a->o.ip = SERVER;
		a->o.payload = 1400;
		a->o.queue = 64;
		a->n_models = 1;
		if (host_model_init(&a->hm[0], mdl, HOST_MODE_HOST_ONLY, 0, err, sizeof(err)))
			fail_msg("host: %s", err);
		a->pool = rte_pktmbuf_pool_create("trust_pool", 1023, 0, 8,
						  RTE_MBUF_DEFAULT_BUF_SIZE, SOCKET_ID_ANY);
		if (!a->pool)
			fail_msg("host: mbuf pool: %s", rte_strerror(rte_errno));
		a->w = w;
		a->n_workers = 1;
		a->link_up = true;
		w->a = a;
		w->txq = -1; /* its frames out on tx_via, read here */
		w->tx_via =
		    rte_ring_create("trust_tx", 1024, SOCKET_ID_ANY, RING_F_SP_ENQ | RING_F_SC_DEQ);
		w->ra = proto_reasm_create(&rc);
		w->q[0].mask = 63;
		w->q[0].r = calloc(64, sizeof(*w->q[0].r));
		assert_non_null(w->tx_via);
		assert_non_null(w->ra);
		assert_non_null(w->q[0].r);
		assert_int_equal(host_reqtab_init(&w->tab, 64, 8, CLASSES), 0);
		a->slot_on[0] = 1;
		a->map = host_map_build(a->hm, (const uint8_t[]){0}, 1);
		assert_non_null(a->map);
		host_health_setup(a);
	}
	host.a->o.trust = trust_cfg(c);
	memset(host.w->rl, 0, sizeof(host.w->rl));
}

static void host_send(uint32_t src, const uint8_t *dg, uint32_t len, struct obs *o)
{
	struct host_worker *w = host.w;
	struct rte_mbuf *mb = rte_pktmbuf_alloc(host.a->pool), *reply;
	uint64_t c0[HOST_C__COUNT];
	uint8_t f[PROTO_FRAME_MAX];
	uint32_t flen = frame_from(f, src, dg, len);

	assert_non_null(mb);
	memcpy(rte_pktmbuf_append(mb, (uint16_t)flen), f, flen);
	memcpy(c0, w->c, sizeof(c0));
	host_rx_frame(w, mb, HOST_SRC_PORT, mono_ns());
	o->verdict = w->c[HOST_C_NOT_ALLOWED] > c0[HOST_C_NOT_ALLOWED] ? NOT
		     : w->c[HOST_C_REFUSED_LARGER] > c0[HOST_C_REFUSED_LARGER] ||
			     w->c[HOST_C_HEALTH_DROPPED] > c0[HOST_C_HEALTH_DROPPED]
			 ? BIG
		     : w->c[HOST_C_ERRORS_LIMITED] > c0[HOST_C_ERRORS_LIMITED] ? RL
									       : S;
	if (w->c[HOST_C_ACCEPTED] > c0[HOST_C_ACCEPTED]) { /* its RESPONSE comes once computed */
		o->sent = PROTO_RESPONSE;
		o->len = proto_wire_bytes(PROTO_RESP_HDR_LEN, 8 * CLASSES, 1400);
	}
	if (!rte_ring_sc_dequeue(w->tx_via, (void **)&reply)) {
		read_reply(rte_pktmbuf_mtod(reply, uint8_t *) + PROTO_FRAME_HDRS,
			   rte_pktmbuf_data_len(reply) - PROTO_FRAME_HDRS, o);
		rte_pktmbuf_free(reply);
	}
	assert_int_equal(rte_ring_count(w->tx_via), 0);
}

static void host_close(const uint64_t want[PROTO_TRUST__COUNT], uint64_t health_short)
{
}

/* --- serve: `splitnic serve` in a child process -------------------------------------------- */

static struct {
	pid_t pid;
	uint16_t port;
	int marker;
	int fd[NA(cases)];
	uint32_t fd_ip[NA(cases)];
	uint32_t n_fd;
	char stats[400], log[400];
} sv;

/* A UDP socket bound to ip (host order), any port; receive timeout 5 s. */
static int udp_socket(uint32_t ip)
{
	struct sockaddr_in a = {.sin_family = AF_INET, .sin_addr.s_addr = htonl(ip)};
	struct timeval tv = {5, 0};
	int fd = socket(AF_INET, SOCK_DGRAM, 0);

	assert_true(fd >= 0);
	if (bind(fd, (struct sockaddr *)&a, sizeof(a)))
		fail_msg("bind %08x: %s", ip, strerror(errno));
	setsockopt(fd, SOL_SOCKET, SO_RCVTIMEO, &tv, sizeof(tv));
	return fd;
}

static uint16_t free_port(void)
{
	struct sockaddr_in a;
	socklen_t al = sizeof(a);
	int fd = udp_socket(SERVER);

	assert_int_equal(getsockname(fd, (struct sockaddr *)&a, &al), 0);
	close(fd);
	return ntohs(a.sin_port);
}

static void serve_log(void)
{
	char line[512];
	FILE *f = fopen(sv.log, "r");

	while (f && fgets(line, sizeof(line), f))
		print_message("serve: | %s", line);
	if (f)
		fclose(f);
}

static void serve_open(enum cfg_id c)
{
	char port[8], rate[16], burst[16], ready[400];
	char *argv[24];
	int argc = 0;

	sv.port = free_port();
	snprintf(port, sizeof(port), "%u", sv.port);
	snprintf(rate, sizeof(rate), "%u", cfgs[c].rate);
	snprintf(burst, sizeof(burst), "%u", cfgs[c].burst);
	snprintf(ready, sizeof(ready), "%s/serve%d.ready", fx->dir, c);
	snprintf(sv.stats, sizeof(sv.stats), "%s/serve%d.json", fx->dir, c);
	snprintf(sv.log, sizeof(sv.log), "%s/serve%d.log", fx->dir, c);
	argv[argc++] = "serve";
	argv[argc++] = "--model";
	argv[argc++] = fx->out;
	argv[argc++] = "--bind";
	argv[argc++] = "127.0.0.1";
	argv[argc++] = "--port";
	argv[argc++] = port;
	argv[argc++] = "--error-rate";
	argv[argc++] = rate;
	argv[argc++] = "--error-burst";
	argv[argc++] = burst;
	argv[argc++] = "--ready-file";
	argv[argc++] = ready;
	argv[argc++] = "--stats-file";
	argv[argc++] = sv.stats;
	if (cfgs[c].allow) {
		argv[argc++] = "--allow";
		argv[argc++] = (char *)cfgs[c].allow;
	}
	argv[argc] = NULL;
	fflush(stdout);
	fflush(stderr);
	sv.pid = fork();
	assert_true(sv.pid >= 0);
	if (!sv.pid) {
		FILE *l = freopen(sv.log, "w", stdout);

		if (!l || dup2(fileno(stdout), 2) < 0)
			_exit(3);
		_exit(cmd_serve(argc, argv));
	}
	for (int i = 0; i < 1000 && access(ready, F_OK); i++) {
		int st;

		if (waitpid(sv.pid, &st, WNOHANG) == sv.pid) {
			serve_log();
			fail_msg("serve exited before it was ready (status %d)", st);
		}
		usleep(10000);
	}
	if (access(ready, F_OK)) {
		serve_log();
		fail_msg("serve not ready after 10 s");
	}
	sv.marker = udp_socket(MARKER);
	sv.n_fd = 0;
}

static int serve_fd(uint32_t src)
{
	for (uint32_t i = 0; i < sv.n_fd; i++)
		if (sv.fd_ip[i] == src)
			return sv.fd[i];
	sv.fd_ip[sv.n_fd] = src;
	return sv.fd[sv.n_fd++] = udp_socket(src);
}

static void serve_send(uint32_t src, const uint8_t *dg, uint32_t len, struct obs *o)
{
	struct sockaddr_in to = {
	    .sin_family = AF_INET, .sin_port = htons(sv.port), .sin_addr.s_addr = htonl(SERVER)};
	uint8_t probe[128], buf[2048];
	int fd = serve_fd(src);
	ssize_t n;

	assert_int_equal(sendto(fd, dg, len, 0, (struct sockaddr *)&to, sizeof(to)), (ssize_t)len);
	/* the marker's report comes after whatever serve sent for the datagram before it */
	assert_int_equal(proto_build_health_probe(probe, sizeof(probe), 1, sizeof(probe)),
			 (int)sizeof(probe));
	assert_int_equal(
	    sendto(sv.marker, probe, sizeof(probe), 0, (struct sockaddr *)&to, sizeof(to)),
	    (ssize_t)sizeof(probe));
	n = recv(sv.marker, buf, sizeof(buf), 0);
	if (n <= 0) {
		serve_log();
		fail_msg("serve: no HEALTH report for the marker: %s", strerror(errno));
	}
	o->verdict = -1; /* from the counters at its exit */
	n = recv(fd, buf, sizeof(buf), MSG_DONTWAIT);
	if (n > 0)
		read_reply(buf, (uint32_t)n, o);
	assert_true(recv(fd, buf, sizeof(buf), MSG_DONTWAIT) < 0); /* one reply at most */
}

/* "key": value in serve's JSON counters (-1 if absent). */
static long long json_counter(const char *json, const char *key)
{
	char pat[96];
	const char *p;

	snprintf(pat, sizeof(pat), "\"%s\": ", key);
	p = strstr(json, pat);
	return p ? atoll(p + strlen(pat)) : -1;
}

static void serve_close(const uint64_t want[PROTO_TRUST__COUNT], uint64_t health_short)
{
	char json[8192] = "";
	FILE *f;
	int st;

	kill(sv.pid, SIGTERM);
	assert_int_equal(waitpid(sv.pid, &st, 0), sv.pid);
	if (!WIFEXITED(st) || WEXITSTATUS(st)) {
		serve_log();
		fail_msg("serve: exit status %d", st);
	}
	f = fopen(sv.stats, "r");
	assert_non_null(f);
	assert_true(fread(json, 1, sizeof(json) - 1, f) > 0);
	fclose(f);
	print_message(
	    "serve: not_allowed %lld, errors_rate_limited %lld, refused_larger_reply %lld, "
	    "health_dropped %lld\n",
	    json_counter(json, "not_allowed"), json_counter(json, "errors_rate_limited"),
	    json_counter(json, "refused_larger_reply"), json_counter(json, "health_dropped"));
	assert_int_equal(json_counter(json, "not_allowed"), want[NOT]);
	assert_int_equal(json_counter(json, "errors_rate_limited"), want[RL]);
	assert_int_equal(json_counter(json, "refused_larger_reply"), want[BIG] - health_short);
	assert_int_equal(json_counter(json, "health_dropped"), health_short);
	close(sv.marker);
	for (uint32_t i = 0; i < sv.n_fd; i++)
		close(sv.fd[i]);
}

/* --- xdp: the program through BPF_PROG_TEST_RUN ------------------------------------------- */

static struct xdp_infer *xdp;

static void xdp_open(enum cfg_id c)
{
	const struct proto_trust_cfg t = trust_cfg(c);
	char err[1024];

	xdp = xdp_infer_load_trust(mdl, PORT, 0, &t, err, sizeof(err));
	if (!xdp)
		fail_msg("xdp: %s", err);
}

static void xdp_send(uint32_t src, const uint8_t *dg, uint32_t len, struct obs *o)
{
	uint64_t s0[XDP_INFER_ST__COUNT], s1[XDP_INFER_ST__COUNT];
	uint8_t f[PROTO_FRAME_MAX], out[4096];
	uint32_t flen = frame_from(f, src, dg, len), olen = sizeof(out), verdict;

	assert_int_equal(xdp_infer_read_stats(xdp, s0), 0);
	assert_int_equal(xdp_infer_test_run(xdp, f, flen, out, &olen, 1, &verdict, NULL), 0);
	assert_int_equal(xdp_infer_read_stats(xdp, s1), 0);
	o->verdict = s1[XDP_INFER_ST_NOT_ALLOWED] > s0[XDP_INFER_ST_NOT_ALLOWED] ? NOT
		     : s1[XDP_INFER_ST_LARGER] > s0[XDP_INFER_ST_LARGER] ||
			     s1[XDP_INFER_ST_HEALTH_SHORT] > s0[XDP_INFER_ST_HEALTH_SHORT]
			 ? BIG
		     : s1[XDP_INFER_ST_ERR_LIMITED] > s0[XDP_INFER_ST_ERR_LIMITED] ? RL
										   : S;
	if (verdict == XDP_TX)
		read_reply(out + PROTO_FRAME_HDRS, olen - PROTO_FRAME_HDRS, o);
	else
		assert_int_not_equal(o->verdict, S);
}

static void xdp_close(const uint64_t want[PROTO_TRUST__COUNT], uint64_t health_short)
{
	xdp_infer_free(xdp);
	xdp = NULL;
}

/* --- the table through one implementation ---------------------------------------------------- */

/* What should have been sent back for a datagram of kind k with verdict v. */
static void expect_sent(const struct impl *im, const struct trust_case *tc, uint32_t i,
			const struct obs *o)
{
	const bool xdp_impl = im->open == xdp_open;
	unsigned sent = 0, code = 0;

	switch (tc->want[i]) {
	case S:
		sent = tc->kind == K_BAD_SHAPE				  ? PROTO_ERROR
		       : tc->kind == K_PROBE || tc->kind == K_PROBE_SHORT ? PROTO_HEALTH
									  : PROTO_RESPONSE;
		code = tc->kind == K_BAD_SHAPE ? PROTO_ERR_BAD_SHAPE : 0;
		break;
	case BIG: /* a RESPONSE too large: ERROR too_large instead (XDP: passed to the stack) */
		if ((tc->kind == K_REQ || tc->kind == K_REQ_PAD) && !xdp_impl) {
			sent = PROTO_ERROR;
			code = PROTO_ERR_TOO_LARGE;
		}
		break;
	default:
		break;
	}
	if (o->sent != sent || o->code != code)
		fail_msg("%s: %s, datagram %u: sent type %u code %u, want type %u code %u",
			 im->name, tc->what, i + 1, o->sent, o->code, sent, code);
}

static void run_table(const struct impl *im)
{
	uint8_t dg[512];

	for (int c = 0; c < C__COUNT; c++) {
		uint64_t want[PROTO_TRUST__COUNT] = {0}, health_short = 0;
		const struct proto_trust_cfg t = trust_cfg((enum cfg_id)c);

		im->open((enum cfg_id)c);
		for (size_t k = 0; k < NA(cases); k++) {
			const struct trust_case *tc = &cases[k];
			uint64_t bucket = 0;

			if (tc->cfg != (enum cfg_id)c)
				continue;
			for (uint32_t i = 0; i < tc->n; i++) {
				const uint32_t len =
				    datagram(tc->kind, 100 * k + i, dg, sizeof(dg));
				struct obs o = {0};

				assert_int_equal(policy(&t, &bucket, tc->src, tc->kind, len),
						 tc->want[i]);
				im->send(tc->src, dg, len, &o);
				if (o.verdict >= 0 && o.verdict != tc->want[i])
					fail_msg("%s: %s, datagram %u: verdict %s, want %s",
						 im->name, tc->what, i + 1, verdict_name[o.verdict],
						 verdict_name[tc->want[i]]);
				expect_sent(im, tc, i, &o);
				if (o.sent && !proto_trust_listed(&t, tc->src))
					assert_true(o.len <= len);
				want[tc->want[i]]++;
				health_short += tc->want[i] == BIG && tc->kind == K_PROBE_SHORT;
			}
		}
		im->close(want, health_short);
	}
}

/* One ERROR from ip at now under cfg c (no list): sent (true) or over the rate (false). */
static bool err_sent(const struct proto_trust_cfg *c, uint64_t *rl, uint32_t ip, uint64_t now)
{
	const struct proto_trust_ask q = {
	    .src = ip, .reply = PROTO_ERROR, .in_bytes = 100, .out_bytes = PROTO_ERROR_HDR_LEN};
	uint32_t cap;
	enum proto_trust_verdict v =
	    proto_trust_decide(c, &q, &rl[proto_trust_slot(ip)], now, &cap);

	assert_true(v == PROTO_TRUST_SEND || v == PROTO_TRUST_RATE_LIMITED);
	return v == PROTO_TRUST_SEND;
}

/* protocol/trust.h's rate limit: `burst` at once, then one per interval; sources in other
 * buckets untouched; a bucket idle long enough is full again; rate 0 is no limit. */
static void test_trust_rate(void **state)
{
	const uint64_t iv = 100000000ull; /* 10 a second */
	const uint32_t a = 0x0a000001, b = 0x0a000002;
	uint64_t rl[PROTO_TRUST_SLOTS] = {0};
	struct proto_trust_cfg c = {0};
	int ok = 0;

	(void)state;
	proto_trust_set_rate(&c, 10, 10);
	assert_int_equal(c.err_interval_ns, iv);
	assert_int_not_equal(proto_trust_slot(a), proto_trust_slot(b));
	for (uint32_t ip = 0; ip < 100000; ip += 97)
		assert_true(proto_trust_slot(ip * 40503u) < PROTO_TRUST_SLOTS);
	for (int i = 0; i < 50; i++)
		ok += err_sent(&c, rl, a, 1000);
	assert_int_equal(ok, 10); /* the burst, then nothing */
	assert_false(err_sent(&c, rl, a, 1000 + iv / 2));
	assert_true(err_sent(&c, rl, a, 1000 + iv)); /* one per 100 ms */
	assert_false(err_sent(&c, rl, a, 1000 + iv));
	assert_true(err_sent(&c, rl, b, 1000)); /* its own bucket */
	ok = 0;
	for (int i = 0; i < 50; i++) /* idle for 5 s: the whole burst again */
		ok += err_sent(&c, rl, a, 5000000000ull);
	assert_int_equal(ok, 10);
	ok = 0;
	proto_trust_set_rate(&c, 10, 1);
	for (int i = 0; i < 50; i++) /* burst 1: one at a time */
		ok += err_sent(&c, rl, b, 9000000000ull);
	assert_int_equal(ok, 1);
	c.err_burst = 0; /* counts as 1 */
	assert_true(err_sent(&c, rl, b, 9100000000ull));
	assert_false(err_sent(&c, rl, b, 9100000000ull));
	proto_trust_set_rate(&c, 0, 5); /* no limit */
	assert_int_equal(c.err_interval_ns, 0);
	for (int i = 0; i < 1000; i++)
		assert_true(err_sent(&c, rl, a, 9000000000ull));
}

/* protocol/trust.h's allow-list prefixes. */
static void test_trust_prefixes(void **state)
{
	struct proto_trust_cfg c = {0};
	struct proto_cidr x;

	(void)state;
	assert_int_equal(proto_cidr_parse("10.0.0.0/33", &x), -EINVAL);
	assert_int_equal(proto_cidr_parse("nope", &x), -EINVAL);
	assert_int_equal(proto_cidr_parse("10.0.0.256", &x), -EINVAL);
	assert_int_equal(proto_cidr_parse("10.0.0.1/", &x), -EINVAL);
	assert_int_equal(proto_cidr_parse("10.0.0.1 ", &x), -EINVAL);
	assert_false(proto_trust_listed(&c, 0x01020304)); /* no prefixes: nothing listed */
	assert_int_equal(proto_trust_allow(&c, "10.88.1.0/24"), 0);
	assert_int_equal(proto_trust_allow(&c, "10.88.1.0/33"), -EINVAL);
	assert_int_equal(c.n_allow, 1);
	assert_true(proto_trust_listed(&c, 0x0a5801fe));
	assert_false(proto_trust_listed(&c, 0x0a5802fe));
	assert_int_equal(proto_trust_allow(&c, "192.168.0.7"), 0);
	assert_true(proto_trust_listed(&c, 0xc0a80007));
	assert_false(proto_trust_listed(&c, 0xc0a80008));
	c.n_allow = 0;
	assert_int_equal(proto_trust_allow(&c, "10.88.1.77/24"), 0); /* host bits dropped */
	assert_true(proto_trust_listed(&c, 0x0a580101));
	c.n_allow = 0;
	assert_int_equal(proto_trust_allow(&c, "0.0.0.0/0"), 0);
	assert_true(proto_trust_listed(&c, 0xdeadbeef));
	for (uint32_t i = 1; i < PROTO_TRUST_MAX_ALLOW; i++)
		assert_int_equal(proto_trust_allow(&c, "10.0.0.1"), 0);
	assert_int_equal(proto_trust_allow(&c, "10.0.0.1"), -ENOSPC);
}

/* The decision's rules one by one. */
static void test_trust_decide(void **state)
{
	struct proto_trust_cfg open = {0}, listed = {0};
	struct proto_trust_ask q = {
	    .src = 0x0a000002, .reply = PROTO_RESPONSE, .in_bytes = 72, .out_bytes = 240};
	uint64_t bucket = 0;
	uint32_t cap;

	(void)state;
	proto_trust_set_rate(&open, 1, 1);
	listed = open;
	assert_int_equal(proto_trust_allow(&listed, "10.0.0.2/32"), 0);
	/* no list: the size rule */
	assert_int_equal(proto_trust_decide(&open, &q, NULL, 0, &cap), PROTO_TRUST_TOO_LARGE);
	assert_int_equal(cap, 72);
	q.out_bytes = 72;
	assert_int_equal(proto_trust_decide(&open, &q, NULL, 0, &cap), PROTO_TRUST_SEND);
	/* listed: any size; a HEALTH report never longer than its probe */
	q.out_bytes = 240;
	assert_int_equal(proto_trust_decide(&listed, &q, NULL, 0, &cap), PROTO_TRUST_SEND);
	assert_int_equal(cap, PROTO_TRUST_NO_CAP);
	q.reply = PROTO_HEALTH;
	q.out_bytes = 80;
	assert_int_equal(proto_trust_decide(&listed, &q, NULL, 0, &cap), PROTO_TRUST_TOO_LARGE);
	assert_int_equal(cap, 72);
	/* not listed: nothing, admission included; an IPv6 source is never listed */
	q.src = 0x0a000003;
	for (unsigned r = 0; r <= PROTO_HEALTH; r++) {
		q.reply = (uint8_t)r;
		assert_int_equal(proto_trust_decide(&listed, &q, &bucket, 0, &cap),
				 PROTO_TRUST_NOT_ALLOWED);
	}
	q.src = 0x0a000002;
	q.flags = PROTO_TRUST_F_UNNAMED;
	assert_int_equal(proto_trust_decide(&listed, &q, &bucket, 0, &cap),
			 PROTO_TRUST_NOT_ALLOWED);
	/* trusted by where it is: anything, never limited */
	q.flags = PROTO_TRUST_F_TRUSTED;
	q.reply = PROTO_ERROR;
	q.in_bytes = 10;
	for (int i = 0; i < 3; i++)
		assert_int_equal(proto_trust_decide(&listed, &q, &bucket, 0, &cap),
				 PROTO_TRUST_SEND);
	assert_int_equal(bucket, 0);
	/* an ERROR that cannot fit costs its source nothing; one that fits is limited */
	q.flags = 0;
	q.out_bytes = PROTO_ERROR_HDR_LEN;
	assert_int_equal(proto_trust_decide(&open, &q, &bucket, 5, &cap), PROTO_TRUST_TOO_LARGE);
	assert_int_equal(bucket, 0);
	q.in_bytes = 50;
	assert_int_equal(proto_trust_decide(&open, &q, &bucket, 5, &cap), PROTO_TRUST_SEND);
	assert_int_equal(cap, 50);
	assert_int_equal(proto_trust_decide(&open, &q, &bucket, 5, &cap), PROTO_TRUST_RATE_LIMITED);
	/* the ERROR's text cut to fit */
	assert_int_equal(proto_trust_cut(50, PROTO_ERROR_HDR_LEN, 14), 10);
	assert_int_equal(proto_trust_cut(60, PROTO_ERROR_HDR_LEN, 14), 14);
	assert_int_equal(proto_trust_cut(30, PROTO_ERROR_HDR_LEN, 14), 0);
}

static void need_root(void)
{
	if (!no_root)
		return;
	if (ci)
		fail_msg(
		    "not root under CI=true: the NIC's and the host's DPDK and the XDP program "
		    "need it");
	print_message("skip: not root (DPDK and BPF_PROG_TEST_RUN need it)\n");
	skip();
}

static void test_trust_table_is_the_policy(void **state)
{
	const struct proto_trust_cfg open = trust_cfg(C_OPEN);

	(void)state;
	/* the sources of each configuration's ERRORs have buckets of their own */
	for (size_t a = 0; a < NA(cases); a++)
		for (size_t b = 0; b < a; b++)
			if (cases[a].cfg == cases[b].cfg)
				assert_int_not_equal(proto_trust_slot(cases[a].src),
						     proto_trust_slot(cases[b].src));
	assert_false(proto_trust_listed(&open, IP(1, 1)));
	assert_true(datagram(K_REQ, 1, (uint8_t[512]){0}, 512) < RESP_LEN);
	assert_true(datagram(K_REQ_PAD, 1, (uint8_t[512]){0}, 512) >= RESP_LEN);
}

static void test_trust_nic(void **state)
{
	static const struct impl im = {"nic", nic_open, nic_send, nic_close};

	(void)state;
	run_table(&im);
}

static void test_trust_host(void **state)
{
	static const struct impl im = {"host", host_open, host_send, host_close};

	(void)state;
	need_root();
	run_table(&im);
}

static void test_trust_serve(void **state)
{
	static const struct impl im = {"serve", serve_open, serve_send, serve_close};

	(void)state;
	run_table(&im);
}

static void test_trust_xdp(void **state)
{
	static const struct impl im = {"xdp", xdp_open, xdp_send, xdp_close};

	(void)state;
	need_root();
	run_table(&im);
}

/* The model every implementation serves: 8 u8 inputs, 20 classes (a binary MLP). */
static int model_setup(void **state)
{
	struct test_gen g = {0};

	if (test_fx_setup((void **)&fx))
		return -1;
	test_rng_seed(0x7e57);
	test_gen_dense(&g, 0, 16, IN);
	test_gen_bn(&g, 1, 16, 128 * sqrt(IN));
	test_gen_dense(&g, 3, CLASSES, 16);
	test_gen_bn(&g, 4, CLASSES, sqrt(16));
	mdl = test_fx_build_gen(
	    fx,
	    "{\"name\":\"trust-mlp\",\"input\":{\"shape\":[8,1,1],\"dtype\":\"u8\"},\"layers\":["
	    "{\"type\":\"dense\",\"out\":16,\"bias\":true,\"binary_weights\":true},"
	    "{\"type\":\"batchnorm\"},{\"type\":\"sign\"},"
	    "{\"type\":\"dense\",\"out\":20,\"bias\":true,\"binary_weights\":true},"
	    "{\"type\":\"batchnorm\"}]}",
	    &g);
	*state = fx;
	return mdl ? 0 : -1;
}

static int model_teardown(void **state)
{
	kexec_close(&nic.x);
	model_free(mdl);
	return test_fx_teardown((void **)&fx);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
	    cmocka_unit_test(test_trust_rate),	 cmocka_unit_test(test_trust_prefixes),
	    cmocka_unit_test(test_trust_decide), cmocka_unit_test(test_trust_table_is_the_policy),
	    cmocka_unit_test(test_trust_nic),	 cmocka_unit_test(test_trust_host),
	    cmocka_unit_test(test_trust_serve),	 cmocka_unit_test(test_trust_xdp),
	};
	char prefix[64], rundir[PATH_MAX] = "";
	char *eal[] = {"test_trust",
		       "-l",
		       "0",
		       "--no-huge",
		       "-m",
		       "128",
		       "--no-pci",
		       "--file-prefix",
		       prefix,
		       "--no-shconf",
		       "--no-telemetry",
		       "--log-level=3"};
	const char *c = getenv("CI");
	int ret;

	ci = c && !strcmp(c, "true");
	no_root = geteuid() != 0;
	snprintf(prefix, sizeof(prefix), "sntesttr%d", (int)getpid());
	if (!no_root) {
		if (rte_eal_init((int)NA(eal), eal) < 0) {
			fprintf(stderr, "test_trust: rte_eal_init failed\n");
			return 1;
		}
		snprintf(rundir, sizeof(rundir), "%s", rte_eal_get_runtime_dir());
	}
	ret = cmocka_run_group_tests(tests, model_setup, model_teardown);
	if (!no_root) {
		rte_eal_cleanup();
		rmdir(rundir);
	}
	return ret;
}
