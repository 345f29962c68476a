// SPDX-License-Identifier: MIT
/*
 * splitnic-host: the host's DPDK application (host/host.h tells a request's life).
 *
 *   splitnic-host EAL-ARGS -- --model FILE[:MODE[:SPLIT]] [--model ...] --ip A.B.C.D
 *       [--port UDP] [--nic-ip A.B.C.D] [--nic-timeout-us US] [--nic-window N] [--queue N]
 *       [--batch MAX] [--batch-wait-us US] [--allow CIDR ...] [--payload BYTES]
 *       [--drain-ms MS] [--idle-sleep-us US] [--stats-file FILE]
 *       [--nic port|inproc] [--nic-executors E]
 *
 * MODE: coproc (default), host-only or fallback; SPLIT: the op index where the NIC stage starts
 * or a plan file (`splitnic plan -o`: its nic stage's first op). One port (port 0; any PMD,
 * normally net_memif role=client facing splitnic-nic's host port). The main lcore is the RX/TX
 * lcore (parse, reassembly, admission, hand-off to the NIC, fallback decisions, responses);
 * worker lcores run the host stages; with no worker lcore the main lcore runs them in between.
 *
 * Addresses: the NIC and its host are one server: --ip is splitnic-nic's --ip (the NIC answers
 * ARP for it; the host answers no ARP). Front-ends send to that address; the NIC passes the
 * host's REQUESTs up; the host answers from it (RESPONSE/ERROR frames leave through the NIC),
 * and sends ACTIVATIONs to --nic-ip (default: --ip), UDP --port, over its port.
 *
 * --nic inproc: no splitnic-nic; the NIC stage runs in this process (DESIGN.md, "On one
 * machine"): the same dispatcher (nicfw/dispatch.h, with completion notices) and executor
 * chains (platform lcore, its inline runner) on the NIC lcore, the last worker lcore (with none,
 * the main lcore runs it in between its own work). ACTIVATION frames go to it over an rte_ring
 * instead of the port; what it sends comes back over another: RESPONSEs for the front-end
 * leave through the port (destination MAC learnt from the REQUESTs), notices and ERRORs are
 * read as if they had come from the port. Deadline, window and fallback work unchanged. The
 * port then faces the front-ends directly (e.g. net_af_packet); the host answers no ARP.
 *
 * Admission (every REQUEST gets a RESPONSE or an ERROR, except from addresses outside the
 * allow-list, which are counted and dropped: no reflection to unknown senders):
 *   unknown model          ERROR UNKNOWN_MODEL (detail: the model id)
 *   format/shape differs   ERROR BAD_SHAPE (detail: the model's input elements)
 *   parser rejected        ERROR BAD_REQUEST (detail: the verdict), when it says REQUEST
 *   queue or table full    ERROR BUSY (detail: the queue bound): overloaded
 *   reassembly table full  ERROR BUSY (detail 0); message too large: ERROR TOO_LARGE
 *   shutting down          ERROR BUSY (detail 1)
 * A fragmented REQUEST that does not complete within 1 s is dropped (reasm_expired).
 *
 * Shutdown: SIGINT/SIGTERM stop admission and drain every request in the table (NIC notices
 * awaited until their deadline, then the fallback), for at most --drain-ms; then exit 0.
 *
 * Telemetry: /splitnic/host/stats (counters by reason), /splitnic/host/latency (histograms,
 * bucket b = [2^(b-1), 2^b) us), /splitnic/host/models.
 */
#include <arpa/inet.h>
#include <errno.h>
#include <getopt.h>
#include <signal.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <rte_cycles.h>
#include <rte_eal.h>
#include <rte_errno.h>
#include <rte_ethdev.h>
#include <rte_launch.h>
#include <rte_lcore.h>
#include <rte_malloc.h>
#include <rte_mbuf.h>
#include <rte_ring.h>
#include <rte_telemetry.h>

#include "host/host.h"
#include "nicfw/dispatch.h"
#include "nicfw/lcore/lcore.h"
#include "protocol/reasm.h"
#include "split/split.h"

#define HOST_BURST	  32
#define HOST_RX_DESC	  1024
#define HOST_TX_DESC	  1024
#define HOST_MBUFS	  8191
#define HOST_TXQ	  512
#define HOST_TX_TRIES	  64
#define HOST_MAX_ALLOW	  16
#define HOST_MAX_WORKERS  8
#define HOST_REASM_SLOTS  256
#define HOST_LINK_POLL_NS 10000000ull
#define HOST_RESTART_NS	  1000000000ull
#define HOST_NIC_RING	  4096 /* frames between the host and the in-process NIC, each way */
#define HOST_NIC_SLICE	  64   /* in-process NIC: chain handlers per loop turn */
#define HOST_NEIGH	  256

enum host_counter {
	HOST_C_RX_FRAMES = 0,
	HOST_C_RX_NOT_UDP,    /* not IPv4/UDP (ARP, IPv6, IP fragments): dropped */
	HOST_C_RX_BAD_IP,     /* truncated or inconsistent IPv4/UDP */
	HOST_C_RX_OTHER_PORT, /* UDP not to --port */
	HOST_C_RX_REJECTED,   /* the protocol parser rejected it (verdict_* tell why) */
	HOST_C_RX_OTHER_TYPE, /* an ACTIVATION to the host: dropped */
	HOST_C_NOT_ALLOWED,   /* REQUEST datagrams from outside the allow-list: dropped */
	HOST_C_FRAGMENTS,     /* REQUEST fragments taken into reassembly */
	HOST_C_REQUESTS,      /* complete REQUESTs */
	HOST_C_ACCEPTED,      /* ... queued for a worker */
	HOST_C_ERR_UNKNOWN_MODEL,
	HOST_C_ERR_BAD_SHAPE,
	HOST_C_ERR_BAD_REQUEST,
	HOST_C_ERR_BUSY_QUEUE,
	HOST_C_ERR_BUSY_TABLE,
	HOST_C_ERR_BUSY_REASM,
	HOST_C_ERR_TOO_LARGE,
	HOST_C_ERR_DRAINING,
	HOST_C_ERR_INTERNAL,
	HOST_C_ERRORS_SENT,
	HOST_C_ACTIVATIONS, /* ACTIVATION messages sent to the NIC */
	HOST_C_ACT_DGRAMS,
	HOST_C_ANSWERED_NIC,  /* requests the NIC answered (notice received) */
	HOST_C_ANSWERED_HOST, /* RESPONSEs sent by the host (host-only and fallback) */
	HOST_C_LATE_NOTICES,  /* notices for requests no longer in flight (already fallen back) */
	HOST_C_NIC_ERRORS,    /* ERRORs from the NIC */
	HOST_C_FB_FORCED,     /* fallbacks by reason: order of enum host_fb_reason */
	HOST_C_FB_LINK_DOWN,
	HOST_C_FB_WINDOW,
	HOST_C_FB_TIMEOUT,
	HOST_C_FB_NIC_ERROR,
	HOST_C_FB_SUSPECT,
	HOST_C_TX_DROP,
	HOST_C_TX_NOMBUF,
	HOST_C_LINK_DOWN, /* link-down transitions */
	HOST_C_PORT_RESTARTS,
	HOST_C__COUNT
};

static const char *const counter_names[HOST_C__COUNT] = {
    "rx_frames",
    "rx_not_udp",
    "rx_bad_ip",
    "rx_other_port",
    "rx_rejected",
    "rx_other_type",
    "not_allowed",
    "fragments",
    "requests",
    "accepted",
    "error_unknown_model",
    "error_bad_shape",
    "error_bad_request",
    "error_busy_queue",
    "error_busy_table",
    "error_busy_reasm",
    "error_too_large",
    "error_draining",
    "error_internal",
    "errors_sent",
    "activations",
    "activation_dgrams",
    "answered_nic",
    "answered_host",
    "late_notices",
    "nic_errors",
    "fallback_forced",
    "fallback_link_down",
    "fallback_window_full",
    "fallback_timeout",
    "fallback_nic_error",
    "fallback_nic_suspect",
    "tx_drop",
    "tx_nombuf",
    "link_down_events",
    "port_restarts",
};

enum host_hist_id { HOST_H_TOTAL = 0, HOST_H_QUEUE, HOST_H_NIC_RTT, HOST_H__COUNT };
static const char *const hist_names[HOST_H__COUNT] = {"server_total_us", "queue_us",
						      "nic_round_trip_us"};

struct host_opts {
	const char *model_spec[HOST_MAX_MODELS];
	uint32_t n_models;
	uint16_t udp_port;
	uint32_t ip, nic_ip;
	uint64_t nic_timeout_ns;
	uint32_t window;
	uint32_t queue;
	uint32_t batch;
	uint64_t batch_wait_ns;
	struct host_cidr allow[HOST_MAX_ALLOW];
	uint32_t n_allow;
	uint32_t payload;
	uint64_t drain_ns;
	uint32_t idle_sleep_us;
	const char *stats_file;
	bool inproc;		/* --nic inproc */
	uint32_t nic_executors; /* its executor chains */
};

/* The in-process NIC stage (--nic inproc): its own lcore, rings both ways. */
struct host_inproc {
	struct nicfw_disp *disp;
	struct nicfw_lcore *lc;
	struct rte_ring *to_nic, *from_nic;
	unsigned lcore;	  /* RTE_MAX_LCORE: run inline by the main lcore */
	uint64_t tx_drop; /* frames the NIC could not hand back (ring full, no mbuf) */
} __rte_cache_aligned;

struct host_neigh {
	uint32_t ip;
	uint8_t mac[6];
};

struct host_worker {
	unsigned lcore;
	struct host_stage st[HOST_MAX_MODELS];
	struct host_req *pend[HOST_MAX_MODELS][HOST_MAX_BATCH];
	uint32_t npend[HOST_MAX_MODELS];
	uint64_t batches, reqs, fallbacks, compute_ns;
	struct host_hist h_compute;
} __rte_cache_aligned;

struct host_app {
	struct host_opts o;
	struct host_model hm[HOST_MAX_MODELS];
	uint32_t n_models;
	struct host_reqtab tab;
	struct host_nic nic;
	struct rte_ring *q[HOST_MAX_MODELS], *fb[HOST_MAX_MODELS], *done;
	struct rte_mempool *pool;
	uint16_t port;
	uint8_t mac[6];
	struct proto_reasm *ra;
	struct host_worker *w;
	unsigned n_workers;	/* worker lcores; 0: the main lcore runs w[0] inline */
	struct host_req **held; /* responses held while the link is down */
	uint32_t n_held;
	uint8_t *body; /* RESPONSE scores, largest model */
	uint64_t c[HOST_C__COUNT];
	uint64_t verdicts[PROTO_VERDICT__COUNT];
	struct host_hist h[HOST_H__COUNT];
	struct rte_mbuf *txq[HOST_TXQ];
	uint32_t n_tx;
	uint64_t tsc0;
	double ns_per_cyc;
	volatile bool workers_stop;
	bool draining;
	bool started; /* the port is started (a restart may fail while the NIC is away) */
	uint64_t link_checked, link_down_since, link_restarted;
	struct host_inproc inproc;
	struct host_neigh neigh[HOST_NEIGH]; /* front-ends' MACs, for the in-process NIC's frames */
} __rte_cache_aligned;

static volatile sig_atomic_t host_quit;
static struct host_app *host_g; /* for the telemetry callbacks */

static void on_signal(int sig)
{
	host_quit = sig;
}

static inline uint64_t now_ns(const struct host_app *a)
{
	return (uint64_t)((double)(rte_get_tsc_cycles() - a->tsc0) * a->ns_per_cyc);
}

/* --- options ------------------------------------------------------------------------------- */

static void usage(FILE *f)
{
	fprintf(
	    f,
	    "usage: splitnic-host EAL-ARGS -- --model FILE[:MODE[:SPLIT]] [--model ...]\n"
	    "         --ip A.B.C.D [--port UDP (%u)] [--nic-ip A.B.C.D (--ip)]\n"
	    "         [--nic-timeout-us US (200000)] [--nic-window N (32)] [--queue N (64)]\n"
	    "         [--batch MAX (1)] [--batch-wait-us US (0)] [--allow CIDR ...]\n"
	    "         [--payload BYTES (1400)] [--drain-ms MS (5000)] [--idle-sleep-us US (0)]\n"
	    "         [--stats-file FILE] [--nic port|inproc (port)] [--nic-executors E (16)]\n"
	    "  MODE coproc|host-only|fallback; SPLIT: op index or plan file (splitnic plan -o)\n",
	    PROTO_DEFAULT_PORT);
}

static int parse_u64(const char *s, uint64_t lo, uint64_t hi, uint64_t *v)
{
	char *end;
	unsigned long long x;

	errno = 0;
	x = strtoull(s, &end, 0);
	if (errno || end == s || *end || x < lo || x > hi)
		return -EINVAL;
	*v = x;
	return 0;
}

static int parse_ip(const char *s, uint32_t *ip)
{
	struct in_addr a;

	if (inet_pton(AF_INET, s, &a) != 1)
		return -EINVAL;
	*ip = ntohl(a.s_addr);
	return 0;
}

static int parse_opts(int argc, char **argv, struct host_opts *o)
{
	static const struct option lopts[] = {
	    {"model", required_argument, NULL, 'm'},
	    {"port", required_argument, NULL, 'p'},
	    {"ip", required_argument, NULL, 'i'},
	    {"nic-ip", required_argument, NULL, 'I'},
	    {"nic-timeout-us", required_argument, NULL, 't'},
	    {"nic-window", required_argument, NULL, 'W'},
	    {"queue", required_argument, NULL, 'q'},
	    {"batch", required_argument, NULL, 'b'},
	    {"batch-wait-us", required_argument, NULL, 'B'},
	    {"allow", required_argument, NULL, 'a'},
	    {"payload", required_argument, NULL, 'L'},
	    {"drain-ms", required_argument, NULL, 'd'},
	    {"idle-sleep-us", required_argument, NULL, 'S'},
	    {"stats-file", required_argument, NULL, 's'},
	    {"nic", required_argument, NULL, 'n'},
	    {"nic-executors", required_argument, NULL, 'E'},
	    {"help", no_argument, NULL, 'h'},
	    {NULL, 0, NULL, 0},
	};
	uint64_t v;
	int c;

	memset(o, 0, sizeof(*o));
	o->udp_port = PROTO_DEFAULT_PORT;
	o->nic_timeout_ns = 200000000ull;
	o->window = 32;
	o->queue = 64;
	o->batch = 1;
	o->payload = PROTO_DEFAULT_PAYLOAD;
	o->drain_ns = 5000000000ull;
	o->nic_executors = 16;
	optind = 1;
	while ((c = getopt_long(argc, argv, "", lopts, NULL)) != -1) {
		const char *name = NULL;
		uint64_t lo = 0, hi = 0, *dst = &v;

		switch (c) {
		case 'm':
			if (o->n_models == HOST_MAX_MODELS) {
				fprintf(stderr, "host: at most %u models\n", HOST_MAX_MODELS);
				return -EINVAL;
			}
			o->model_spec[o->n_models++] = optarg;
			continue;
		case 'i':
		case 'I':
			if (parse_ip(optarg, c == 'i' ? &o->ip : &o->nic_ip)) {
				fprintf(stderr, "host: %s: an IPv4 address, got '%s'\n",
					c == 'i' ? "--ip" : "--nic-ip", optarg);
				return -EINVAL;
			}
			continue;
		case 'a':
			if (o->n_allow == HOST_MAX_ALLOW ||
			    host_cidr_parse(optarg, &o->allow[o->n_allow])) {
				fprintf(stderr, "host: --allow: A.B.C.D/N (at most %u), got '%s'\n",
					HOST_MAX_ALLOW, optarg);
				return -EINVAL;
			}
			o->n_allow++;
			continue;
		case 's':
			o->stats_file = optarg;
			continue;
		case 'n':
			if (strcmp(optarg, "port") && strcmp(optarg, "inproc")) {
				fprintf(stderr, "host: --nic: port or inproc, got '%s'\n", optarg);
				return -EINVAL;
			}
			o->inproc = !strcmp(optarg, "inproc");
			continue;
		case 'h':
			usage(stdout);
			return 1;
		case 'p':
			name = "--port", lo = 1, hi = 65535;
			break;
		case 't':
			name = "--nic-timeout-us", lo = 1, hi = 60000000;
			break;
		case 'W':
			name = "--nic-window", lo = 1, hi = 4096;
			break;
		case 'q':
			name = "--queue", lo = 1, hi = 65536;
			break;
		case 'b':
			name = "--batch", lo = 1, hi = HOST_MAX_BATCH;
			break;
		case 'B':
			name = "--batch-wait-us", lo = 0, hi = 1000000;
			break;
		case 'L':
			name = "--payload", lo = PROTO_MIN_PAYLOAD, hi = 1472;
			break;
		case 'd':
			name = "--drain-ms", lo = 0, hi = 600000;
			break;
		case 'S':
			name = "--idle-sleep-us", lo = 0, hi = 100000;
			break;
		case 'E':
			name = "--nic-executors", lo = 1, hi = NICFW_MAX_EXEC;
			break;
		default:
			usage(stderr);
			return -EINVAL;
		}
		if (parse_u64(optarg, lo, hi, dst)) {
			fprintf(stderr, "host: %s: %lu to %lu, got '%s'\n", name, (unsigned long)lo,
				(unsigned long)hi, optarg);
			return -EINVAL;
		}
		switch (c) {
		case 'p':
			o->udp_port = (uint16_t)v;
			break;
		case 't':
			o->nic_timeout_ns = v * 1000;
			break;
		case 'W':
			o->window = (uint32_t)v;
			break;
		case 'q':
			o->queue = (uint32_t)v;
			break;
		case 'b':
			o->batch = (uint32_t)v;
			break;
		case 'B':
			o->batch_wait_ns = v * 1000;
			break;
		case 'L':
			o->payload = (uint32_t)v;
			break;
		case 'd':
			o->drain_ns = v * 1000000;
			break;
		case 'S':
			o->idle_sleep_us = (uint32_t)v;
			break;
		case 'E':
			o->nic_executors = (uint32_t)v;
			break;
		}
	}
	if (optind < argc || !o->n_models || !o->ip) {
		fprintf(stderr, "host: %s\n",
			optind < argc  ? "unexpected argument"
			: !o->n_models ? "give at least one --model"
				       : "give --ip (the server address, splitnic-nic's --ip)");
		usage(stderr);
		return -EINVAL;
	}
	if (!o->nic_ip)
		o->nic_ip = o->ip;
	return 0;
}

/* FILE[:MODE[:SPLIT]] -> a loaded, split model. */
static int load_model(struct host_model *hm, char *spec, char *err, size_t errlen)
{
	char *mode_s = strchr(spec, ':'), *split_s = NULL, *end;
	uint32_t mode = HOST_MODE_COPROC, k = UINT32_MAX;
	struct kern_model *m;
	int ret;

	if (mode_s) {
		*mode_s++ = 0;
		split_s = strchr(mode_s, ':');
		if (split_s)
			*split_s++ = 0;
		if (!strcmp(mode_s, "coproc") || !*mode_s)
			mode = HOST_MODE_COPROC;
		else if (!strcmp(mode_s, "host-only"))
			mode = HOST_MODE_HOST_ONLY;
		else if (!strcmp(mode_s, "fallback"))
			mode = HOST_MODE_FALLBACK;
		else {
			snprintf(err, errlen, "%s: mode '%s': coproc, host-only or fallback", spec,
				 mode_s);
			return -EINVAL;
		}
	}
	m = kern_model_load(spec, err, errlen);
	if (!m)
		return -EINVAL;
	if (split_s && *split_s) {
		unsigned long x = strtoul(split_s, &end, 10);

		if (!*end) {
			k = (uint32_t)x;
		} else {
			struct split_plan plan;

			ret = split_plan_load(split_s, m, &plan, err, errlen);
			if (ret)
				goto out_free;
			for (uint32_t s = 0; s < plan.n_stages; s++)
				if (plan.stage[s].exec == SPLIT_EX_NIC)
					k = plan.stage[s].first;
			if (k == UINT32_MAX) {
				snprintf(err, errlen,
					 "%s: the plan has no nic stage: use host-only", split_s);
				ret = -EINVAL;
				goto out_free;
			}
		}
	}
	ret = host_model_init(hm, m, mode, k, err, errlen);
	if (!ret)
		return 0;
out_free:
	kern_model_free(m);
	return ret;
}

/* --- transmit ------------------------------------------------------------------------------ */

static void tx_flush(struct host_app *a)
{
	uint32_t sent = 0;

	for (int t = 0; a->started && sent < a->n_tx && t < HOST_TX_TRIES; t++)
		sent += rte_eth_tx_burst(a->port, 0, a->txq + sent, (uint16_t)(a->n_tx - sent));
	if (unlikely(sent < a->n_tx)) {
		a->c[HOST_C_TX_DROP] += a->n_tx - sent;
		rte_pktmbuf_free_bulk(a->txq + sent, a->n_tx - sent);
	}
	a->n_tx = 0;
}

/* A fresh mbuf of HOST_FRAME_MAX bytes, or NULL (counted). */
static struct rte_mbuf *tx_mbuf(struct host_app *a, uint8_t **p)
{
	struct rte_mbuf *mb = rte_pktmbuf_alloc(a->pool);

	if (unlikely(!mb)) {
		a->c[HOST_C_TX_NOMBUF]++;
		return NULL;
	}
	*p = (uint8_t *)rte_pktmbuf_append(mb, HOST_FRAME_MAX);
	if (unlikely(!*p)) {
		rte_pktmbuf_free(mb);
		a->c[HOST_C_TX_NOMBUF]++;
		return NULL;
	}
	return mb;
}

static void tx_frame(struct host_app *a, struct rte_mbuf *mb, uint32_t len)
{
	rte_pktmbuf_trim(mb, (uint16_t)(HOST_FRAME_MAX - len));
	a->txq[a->n_tx++] = mb;
	if (a->n_tx == HOST_TXQ)
		tx_flush(a);
}

/* A frame for the in-process NIC: over its ring (full: dropped, its deadline will tell). */
static void tx_nic(struct host_app *a, struct rte_mbuf *mb, uint32_t len)
{
	rte_pktmbuf_trim(mb, (uint16_t)(HOST_FRAME_MAX - len));
	if (unlikely(rte_ring_sp_enqueue(a->inproc.to_nic, mb))) {
		a->c[HOST_C_TX_DROP]++;
		rte_pktmbuf_free(mb);
	}
}

/* Send every datagram of message m (body of len bytes) to addr, to the NIC stage if to_nic
 * (in-process: its ring, else the port); returns datagrams sent. */
static uint32_t tx_message(struct host_app *a, const struct proto_msg *m, const void *body,
			   uint32_t len, const struct host_addr *to, bool to_nic)
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
		plen = proto_frag_next(&fr, p + HOST_FRAME_HDRS, HOST_FRAME_MAX - HOST_FRAME_HDRS);
		if (plen <= 0) {
			rte_pktmbuf_free(mb);
			return n;
		}
		if (ring)
			tx_nic(a, mb, host_frame_udp(p, to, (uint32_t)plen));
		else
			tx_frame(a, mb, host_frame_udp(p, to, (uint32_t)plen));
		n++;
	}
}

static void tx_error(struct host_app *a, const struct host_addr *req_from, uint32_t model_id,
		     uint64_t rid, enum proto_error_code code, uint32_t detail,
		     enum host_counter why, const char *reason)
{
	struct host_addr to;
	struct rte_mbuf *mb;
	uint8_t *p;
	int n;

	a->c[why]++;
	mb = tx_mbuf(a, &p);
	if (!mb)
		return;
	n = proto_build_error(p + HOST_FRAME_HDRS, HOST_FRAME_MAX - HOST_FRAME_HDRS, model_id, rid,
			      code, detail, "host: %s", reason);
	if (n <= 0) {
		rte_pktmbuf_free(mb);
		return;
	}
	memcpy(to.smac, req_from->dmac, 6);
	memcpy(to.dmac, req_from->smac, 6);
	to.sip = a->o.ip;
	to.dip = req_from->sip;
	to.sport = a->o.udp_port;
	to.dport = req_from->sport;
	tx_frame(a, mb, host_frame_udp(p, &to, (uint32_t)n));
	a->c[HOST_C_ERRORS_SENT]++;
}

static void req_error(struct host_app *a, struct host_req *r, enum proto_error_code code,
		      uint32_t detail, enum host_counter why, const char *reason)
{
	struct host_addr from = {.sip = r->cli_ip, .sport = r->cli_port};

	memcpy(from.smac, r->cli_mac, 6);
	memcpy(from.dmac, r->srv_mac, 6);
	tx_error(a, &from, r->model_id, r->request_id, code, detail, why, reason);
}

static void tx_response(struct host_app *a, struct host_req *r, uint64_t now)
{
	const struct host_model *hm = &a->hm[r->model];
	struct host_addr to;
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
	memcpy(to.smac, r->srv_mac, 6);
	memcpy(to.dmac, r->cli_mac, 6);
	to.sip = a->o.ip;
	to.dip = r->cli_ip;
	to.sport = a->o.udp_port;
	to.dport = r->cli_port;
	tx_message(a, &m, a->body, hm->classes * 8, &to, false);
	a->c[HOST_C_ANSWERED_HOST]++;
	host_hist_add(&a->h[HOST_H_TOTAL], now - r->t_in);
}

static void tx_activation(struct host_app *a, struct host_req *r, uint64_t now)
{
	const struct host_model *hm = &a->hm[r->model];
	struct host_addr to;
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

/* --- the request path (RX lcore) ----------------------------------------------------------- */

static void to_fallback(struct host_app *a, struct host_req *r, enum host_fb_reason why)
{
	a->c[HOST_C_FB_FORCED + why - HOST_FB_FORCED]++;
	r->state = HOST_RS_FALLBACK;
	if (unlikely(rte_ring_sp_enqueue(a->fb[r->model], r))) { /* sized for every slot */
		req_error(a, r, PROTO_ERR_INTERNAL, 0, HOST_C_ERR_INTERNAL, "fallback queue");
		host_reqtab_put(&a->tab, r);
	}
}

static int find_model(const struct host_app *a, uint32_t model_id)
{
	for (uint32_t i = 0; i < a->n_models; i++)
		if (a->hm[i].model_id == model_id)
			return (int)i;
	return model_id == 0 ? 0 : -1;
}

static void on_request(struct host_app *a, const struct proto_msg *m, const uint8_t *data,
		       const struct host_addr *from, uint64_t t_in, uint64_t now)
{
	const struct host_model *hm;
	struct host_req *r;
	int k;

	a->c[HOST_C_REQUESTS]++;
	if (unlikely(a->draining)) {
		tx_error(a, from, m->model_id, m->request_id, PROTO_ERR_BUSY, 1,
			 HOST_C_ERR_DRAINING, "shutting down");
		return;
	}
	k = find_model(a, m->model_id);
	if (unlikely(k < 0)) {
		tx_error(a, from, m->model_id, m->request_id, PROTO_ERR_UNKNOWN_MODEL, m->model_id,
			 HOST_C_ERR_UNKNOWN_MODEL, "unknown model");
		return;
	}
	hm = &a->hm[k];
	if (unlikely(m->tensor.fmt != hm->in_fmt || m->tensor.c != hm->in_c ||
		     m->tensor.h != hm->in_h || m->tensor.w != hm->in_w ||
		     m->total_len != hm->in_bytes)) {
		tx_error(a, from, m->model_id, m->request_id, PROTO_ERR_BAD_SHAPE, hm->in_count,
			 HOST_C_ERR_BAD_SHAPE, "input format or shape differs from the model's");
		return;
	}
	r = host_reqtab_get(&a->tab);
	if (unlikely(!r)) {
		tx_error(a, from, m->model_id, m->request_id, PROTO_ERR_BUSY, a->o.queue,
			 HOST_C_ERR_BUSY_TABLE, "overloaded");
		return;
	}
	memcpy(r->in, data, hm->in_bytes);
	r->request_id = m->request_id;
	r->model_id = m->model_id;
	r->model = (uint16_t)k;
	r->cli_ip = from->sip;
	r->cli_port = from->sport;
	memcpy(r->cli_mac, from->smac, 6);
	memcpy(r->srv_mac, from->dmac, 6);
	r->t_in = t_in;
	r->t_rx = host_sat32(now - t_in);
	r->t_queued = now;
	if (unlikely(rte_ring_sp_enqueue(a->q[k], r))) {
		host_reqtab_put(&a->tab, r);
		tx_error(a, from, m->model_id, m->request_id, PROTO_ERR_BUSY, a->o.queue,
			 HOST_C_ERR_BUSY_QUEUE, "overloaded");
		return;
	}
	a->c[HOST_C_ACCEPTED]++;
}

static void on_notice(struct host_app *a, const struct proto_msg *m, uint64_t now)
{
	struct host_req *r;

	if (m->frag_off) /* a long RESPONSE: its first datagram is the notice */
		return;
	r = host_nic_complete(&a->nic, m->model_id, m->request_id);
	if (!r) {
		a->c[HOST_C_LATE_NOTICES]++;
		return;
	}
	a->c[HOST_C_ANSWERED_NIC]++;
	host_hist_add(&a->h[HOST_H_NIC_RTT], now - r->t_sent);
	host_hist_add(&a->h[HOST_H_TOTAL], now - r->t_in);
	host_reqtab_put(&a->tab, r);
}

static void on_nic_error(struct host_app *a, const struct proto_msg *m)
{
	struct host_req *r = host_nic_complete(&a->nic, m->model_id, m->request_id);

	a->c[HOST_C_NIC_ERRORS]++;
	if (r)
		to_fallback(a, r, HOST_FB_NIC_ERROR);
}

static struct host_neigh *neigh_slot(struct host_app *a, uint32_t ip)
{
	return &a->neigh[(ip * 2654435761u) >> 24 & (HOST_NEIGH - 1)];
}

static void neigh_learn(struct host_app *a, uint32_t ip, const uint8_t *mac)
{
	struct host_neigh *n = neigh_slot(a, ip);

	n->ip = ip;
	memcpy(n->mac, mac, 6);
}

static void on_frame(struct host_app *a, const uint8_t *f, uint32_t len, uint64_t t_in,
		     uint64_t now)
{
	struct proto_reasm_msg msg;
	enum proto_ra_verdict rv;
	struct host_addr from;
	enum proto_verdict v;
	struct proto_msg m;
	const uint8_t *p;
	uint32_t plen;
	int ret;

	a->c[HOST_C_RX_FRAMES]++;
	ret = host_frame_parse(f, len, &from, &p, &plen);
	if (unlikely(ret)) {
		a->c[ret == -EINVAL ? HOST_C_RX_BAD_IP : HOST_C_RX_NOT_UDP]++;
		return;
	}
	if (unlikely(from.dport != a->o.udp_port)) {
		a->c[HOST_C_RX_OTHER_PORT]++;
		return;
	}
	v = proto_parse(p, plen, &m);
	a->verdicts[v]++;
	if (unlikely(v != PROTO_OK)) {
		a->c[HOST_C_RX_REJECTED]++;
		if (plen >= PROTO_COMMON_LEN && p[0] == 0x53 && p[1] == 0x4e &&
		    p[2] == PROTO_VERSION && p[3] == PROTO_REQUEST &&
		    host_cidr_allowed(a->o.allow, a->o.n_allow, from.sip))
			tx_error(a, &from, 0, 0, PROTO_ERR_BAD_REQUEST, v, HOST_C_ERR_BAD_REQUEST,
				 proto_verdict_name(v));
		return;
	}
	switch (m.type) {
	case PROTO_REQUEST:
		break;
	case PROTO_RESPONSE:
		on_notice(a, &m, now);
		return;
	case PROTO_ERROR:
		on_nic_error(a, &m);
		return;
	default:
		a->c[HOST_C_RX_OTHER_TYPE]++;
		return;
	}
	if (!host_cidr_allowed(a->o.allow, a->o.n_allow, from.sip)) {
		a->c[HOST_C_NOT_ALLOWED]++;
		return;
	}
	if (a->o.inproc)
		neigh_learn(a, from.sip, from.smac);
	if (m.frag_len == m.total_len) {
		on_request(a, &m, m.data, &from, t_in, now);
		return;
	}
	a->c[HOST_C_FRAGMENTS]++;
	rv = proto_reasm_push(a->ra, (uint64_t)from.sip << 16 | from.sport, &m, now, &msg);
	if (rv == PROTO_RA_COMPLETE) {
		on_request(a, &msg.hdr, msg.data, &from, t_in, now);
		proto_reasm_release(a->ra, &msg);
	} else if (rv == PROTO_RA_TABLE_FULL) {
		a->c[HOST_C_REQUESTS]++;
		tx_error(a, &from, m.model_id, m.request_id, PROTO_ERR_BUSY, 0,
			 HOST_C_ERR_BUSY_REASM, "reassembly table full");
	} else if (rv == PROTO_RA_TOO_LARGE) {
		a->c[HOST_C_REQUESTS]++;
		tx_error(a, &from, m.model_id, m.request_id, PROTO_ERR_TOO_LARGE, PROTO_MAX_TOTAL,
			 HOST_C_ERR_TOO_LARGE, "request too large");
	}
}

static uint32_t rx_port(struct host_app *a)
{
	struct rte_mbuf *pkts[HOST_BURST];
	uint16_t n = a->started ? rte_eth_rx_burst(a->port, 0, pkts, HOST_BURST) : 0;
	uint64_t t_in, now;

	if (!n)
		return 0;
	t_in = now_ns(a);
	for (uint16_t i = 0; i < n; i++) {
		if (i + 1 < n)
			rte_prefetch0(rte_pktmbuf_mtod(pkts[i + 1], void *));
		now = now_ns(a);
		if (likely(pkts[i]->nb_segs == 1))
			on_frame(a, rte_pktmbuf_mtod(pkts[i], const uint8_t *),
				 rte_pktmbuf_data_len(pkts[i]), t_in, now);
		else
			a->c[HOST_C_RX_NOT_UDP]++;
	}
	rte_pktmbuf_free_bulk(pkts, n);
	return n;
}

/*
 * What the in-process NIC sent: frames for its wire port (RESPONSEs to front-ends) leave
 * through the port, addressed to the MAC learnt from the request (the NIC saw no frame from
 * the front-end); frames for its host port (notices, ERRORs) are read as received ones.
 */
static uint32_t rx_nic(struct host_app *a)
{
	struct rte_mbuf *pkts[HOST_BURST];
	uint32_t n = rte_ring_sc_dequeue_burst(a->inproc.from_nic, (void **)pkts, HOST_BURST, NULL);
	uint64_t now;

	for (uint32_t i = 0; i < n; i++) {
		struct rte_mbuf *mb = pkts[i];
		uint8_t *f = rte_pktmbuf_mtod(mb, uint8_t *);
		const struct host_neigh *ne;
		uint32_t dip;

		if (mb->port == NICFW_PORT_HOST) {
			now = now_ns(a);
			on_frame(a, f, rte_pktmbuf_data_len(mb), now, now);
			rte_pktmbuf_free(mb);
			continue;
		}
		if (likely(rte_pktmbuf_data_len(mb) >= HOST_FRAME_HDRS)) {
			dip = (uint32_t)f[30] << 24 | (uint32_t)f[31] << 16 | (uint32_t)f[32] << 8 |
			      f[33];
			ne = neigh_slot(a, dip);
			if (ne->ip == dip)
				memcpy(f, ne->mac, 6);
		}
		a->txq[a->n_tx++] = mb;
		if (a->n_tx == HOST_TXQ)
			tx_flush(a);
	}
	return n;
}

/* Finished stages from the workers: hand off to the NIC, fall back, or answer. */
static uint32_t collect(struct host_app *a, uint64_t now)
{
	struct host_req *reqs[HOST_BURST];
	uint32_t n = rte_ring_sc_dequeue_burst(a->done, (void **)reqs, HOST_BURST, NULL);

	for (uint32_t i = 0; i < n; i++) {
		struct host_req *r = reqs[i];
		enum host_fb_reason why;

		if (!(r->executors & PROTO_EX_HOST_FALLBACK))
			host_hist_add(&a->h[HOST_H_QUEUE], r->t_queue);
		if (unlikely(r->failed)) {
			req_error(a, r, PROTO_ERR_INTERNAL, 0, HOST_C_ERR_INTERNAL, "stage failed");
			host_reqtab_put(&a->tab, r);
		} else if (r->state == HOST_RS_ACT) {
			why = host_nic_decide(&a->nic, a->hm[r->model].mode, now);
			if (why == HOST_FB_NONE)
				tx_activation(a, r, now);
			else
				to_fallback(a, r, why);
		} else if (!a->nic.link_up) {
			a->held[a->n_held++] = r; /* no way out: sent when the link is back */
		} else {
			tx_response(a, r, now);
			host_reqtab_put(&a->tab, r);
		}
	}
	if (a->nic.link_up && a->n_held) {
		for (uint32_t i = 0; i < a->n_held; i++) {
			tx_response(a, a->held[i], now);
			host_reqtab_put(&a->tab, a->held[i]);
		}
		a->n_held = 0;
	}
	return n;
}

static void expire(struct host_app *a, uint64_t now)
{
	struct host_req *r;

	while ((r = host_nic_expired(&a->nic, now)) != NULL)
		to_fallback(a, r, a->nic.link_up ? HOST_FB_TIMEOUT : HOST_FB_LINK_DOWN);
}

/* Link state of the port (the NIC's memif server): polled, restarted while down. */
static void link_check(struct host_app *a, uint64_t now)
{
	struct rte_eth_link l;

	if (now - a->link_checked < HOST_LINK_POLL_NS)
		return;
	a->link_checked = now;
	if (rte_eth_link_get_nowait(a->port, &l))
		return;
	if (a->nic.link_up && !l.link_status) {
		a->c[HOST_C_LINK_DOWN]++;
		a->link_down_since = a->link_restarted = now;
	}
	a->nic.link_up = l.link_status;
	if (!l.link_status && now - a->link_restarted > HOST_RESTART_NS) {
		/* memif: a client reconnects at start; a restarted server needs a new start */
		a->link_restarted = now;
		a->c[HOST_C_PORT_RESTARTS]++;
		if (a->started)
			rte_eth_dev_stop(a->port);
		a->started = rte_eth_dev_start(a->port) == 0;
	}
}

/* --- workers ------------------------------------------------------------------------------- */

static uint32_t worker_step(struct host_app *a, struct host_worker *w)
{
	struct host_req *reqs[HOST_MAX_BATCH];
	uint32_t work = 0;

	for (uint32_t k = 0; k < a->n_models; k++) {
		const struct host_model *hm = &a->hm[k];
		struct host_stage *st = &w->st[k];
		uint64_t t0, t1;
		uint32_t n, room;

		n = rte_ring_dequeue_burst(a->fb[k], (void **)reqs, a->o.batch, NULL);
		if (n) {
			t0 = now_ns(a);
			if (unlikely(host_stage_run(st, HOST_STAGE_BACK, reqs, n)))
				for (uint32_t i = 0; i < n; i++)
					reqs[i]->failed = 1;
			t1 = now_ns(a);
			for (uint32_t i = 0; i < n; i++) {
				reqs[i]->t_host = host_sat32((uint64_t)reqs[i]->t_host + t1 - t0);
				reqs[i]->t_done = t1;
				reqs[i]->state = HOST_RS_SCORES;
			}
			w->fallbacks += n;
			w->compute_ns += t1 - t0;
			rte_ring_mp_enqueue_bulk(a->done, (void **)reqs, n, NULL);
			work += n;
		}
		room = a->o.batch - w->npend[k];
		if (room)
			w->npend[k] += rte_ring_dequeue_burst(
			    a->q[k], (void **)(w->pend[k] + w->npend[k]), room, NULL);
		n = w->npend[k];
		if (!n)
			continue;
		t0 = now_ns(a);
		if (n < a->o.batch && t0 - w->pend[k][0]->t_queued < a->o.batch_wait_ns)
			continue;
		if (unlikely(host_stage_run(
			st, hm->mode == HOST_MODE_HOST_ONLY ? HOST_STAGE_WHOLE : HOST_STAGE_FRONT,
			w->pend[k], n)))
			for (uint32_t i = 0; i < n; i++)
				w->pend[k][i]->failed = 1;
		t1 = now_ns(a);
		for (uint32_t i = 0; i < n; i++) {
			struct host_req *r = w->pend[k][i];

			r->t_queue = host_sat32(t0 - r->t_queued);
			r->t_host = host_sat32(t1 - t0);
			r->t_done = t1;
			r->state = hm->mode == HOST_MODE_HOST_ONLY ? HOST_RS_SCORES : HOST_RS_ACT;
		}
		w->batches++;
		w->reqs += n;
		w->compute_ns += t1 - t0;
		host_hist_add(&w->h_compute, t1 - t0);
		rte_ring_mp_enqueue_bulk(a->done, (void **)w->pend[k], n, NULL);
		w->npend[k] = 0;
		work += n;
	}
	return work;
}

static int worker_main(void *arg)
{
	struct host_worker *w = arg;
	struct host_app *a = host_g;
	uint32_t idle = 0;

	while (!a->workers_stop) {
		if (worker_step(a, w)) {
			idle = 0;
		} else if (a->o.idle_sleep_us && ++idle > 1000) {
			rte_delay_us_sleep(a->o.idle_sleep_us);
		}
	}
	return 0;
}

/* --- the in-process NIC stage ------------------------------------------------------------------
 */

static int inproc_submit(void *engine, uint32_t model, const void *in)
{
	return nicfw_lcore_submit(engine, model, in);
}

static int inproc_poll(void *engine, uint32_t model, double *scores)
{
	return nicfw_lcore_poll(engine, model, scores);
}

static const struct nicfw_engine_ops inproc_ops = {.submit = inproc_submit, .poll = inproc_poll};

/* The dispatcher's transmit: every frame back to the host over the ring, its NIC port in
 * mb->port. Runs on the NIC lcore. */
static int inproc_tx(void *arg, enum nicfw_port port, const uint8_t *frame, uint32_t len)
{
	struct host_app *a = arg;
	struct rte_mbuf *mb = rte_pktmbuf_alloc(a->pool);
	char *p;

	if (unlikely(!mb))
		goto out_drop;
	p = rte_pktmbuf_append(mb, (uint16_t)len);
	if (unlikely(!p))
		goto out_free;
	rte_memcpy(p, frame, len);
	mb->port = (uint16_t)port;
	if (likely(!rte_ring_sp_enqueue(a->inproc.from_nic, mb)))
		return 0;
out_free:
	rte_pktmbuf_free(mb);
out_drop:
	a->inproc.tx_drop++;
	return -ENOBUFS;
}

/* One turn of the NIC: ACTIVATION frames in, chain handlers, finished inferences out. */
static uint32_t inproc_step(struct host_app *a)
{
	struct host_inproc *x = &a->inproc;
	struct rte_mbuf *pkts[HOST_BURST];
	uint32_t n = rte_ring_sc_dequeue_burst(x->to_nic, (void **)pkts, HOST_BURST, NULL);
	uint64_t now = now_ns(a);

	for (uint32_t i = 0; i < n; i++) {
		/* PASS or REPLY: nowhere to go (no wire port in this process); dropped */
		if (likely(pkts[i]->nb_segs == 1))
			nicfw_disp_rx(x->disp, NICFW_PORT_HOST,
				      rte_pktmbuf_mtod(pkts[i], uint8_t *),
				      rte_pktmbuf_data_len(pkts[i]), now);
	}
	if (n)
		rte_pktmbuf_free_bulk(pkts, n);
	n += nicfw_lcore_run(x->lc, HOST_NIC_SLICE);
	n += nicfw_disp_poll(x->disp, now_ns(a));
	return n;
}

static int inproc_main(void *arg)
{
	struct host_app *a = arg;
	uint32_t idle = 0;

	while (!a->workers_stop) {
		if (inproc_step(a)) {
			idle = 0;
		} else if (a->o.idle_sleep_us && ++idle > 1000) {
			rte_delay_us_sleep(a->o.idle_sleep_us);
		}
	}
	return 0;
}

/* The NIC stage of every co-processor model at its split, on the platform lcore's inline
 * runner (driven by inproc_step), and the dispatcher in front of it. */
static int inproc_setup(struct host_app *a, char *err, size_t errlen)
{
	struct host_inproc *x = &a->inproc;
	struct nicfw_disp_config dc = {0};
	int ret;

	x->lc = nicfw_lcore_create(NULL, 0, err, errlen);
	if (!x->lc)
		return -EINVAL;
	for (uint32_t k = 0; k < a->n_models; k++) {
		const struct host_model *hm = &a->hm[k];
		struct nicfw_disp_model *md = &dc.model[dc.n_models];
		const struct nicfw_chain *ch;

		if (hm->mode != HOST_MODE_COPROC)
			continue;
		ret = nicfw_lcore_add(x->lc, hm->m, hm->split, a->o.nic_executors, err, errlen);
		if (ret < 0)
			return ret;
		ch = nicfw_lcore_chain(x->lc, (uint32_t)ret);
		md->model_id = hm->model_id;
		md->layer = hm->split;
		md->in_fmt = ch->in_fmt == KERN_FMT_U8 ? PROTO_FMT_U8 : PROTO_FMT_BITS;
		md->in_count = (uint32_t)kern_shape_elems(&hm->m->layers[hm->split].in);
		md->in_bytes = ch->in_bytes;
		md->classes = ch->classes;
		dc.n_models++;
	}
	ret = nicfw_lcore_start(x->lc, err, errlen);
	if (ret)
		return ret;
	x->to_nic = rte_ring_create("snhost_to_nic", HOST_NIC_RING, rte_socket_id(),
				    RING_F_SP_ENQ | RING_F_SC_DEQ);
	x->from_nic = rte_ring_create("snhost_from_nic", HOST_NIC_RING, rte_socket_id(),
				      RING_F_SP_ENQ | RING_F_SC_DEQ);
	if (!x->to_nic || !x->from_nic) {
		snprintf(err, errlen, "in-process NIC rings: %s", rte_strerror(rte_errno));
		return -ENOMEM;
	}
	memcpy(dc.mac, a->mac, 6);
	dc.ip = 0; /* the port faces the front-ends: no ARP from the NIC stage */
	dc.port = a->o.udp_port;
	dc.payload = a->o.payload;
	dc.notify_host = true;
	dc.eng_ops = &inproc_ops;
	dc.engine = x->lc;
	dc.tx = inproc_tx;
	dc.tx_arg = a;
	x->disp = nicfw_disp_create(&dc, err, errlen);
	if (!x->disp)
		return -EINVAL;
	printf("host: in-process NIC stage: %u model(s) on %u executors each, %s\n", dc.n_models,
	       a->o.nic_executors,
	       x->lcore == RTE_MAX_LCORE ? "inline on the main lcore" : "on its own lcore");
	return 0;
}

static void inproc_teardown(struct host_app *a)
{
	struct host_inproc *x = &a->inproc;
	struct rte_mbuf *mb = NULL;

	for (int i = 0; i < 2; i++) {
		struct rte_ring *r = i ? x->from_nic : x->to_nic;

		while (r && !rte_ring_dequeue(r, (void **)&mb))
			rte_pktmbuf_free(mb);
		rte_ring_free(r);
	}
	nicfw_disp_free(x->disp);
	nicfw_lcore_free(x->lc);
}

/* --- telemetry ----------------------------------------------------------------------------- */

static uint64_t rd(const uint64_t *p)
{
	return __atomic_load_n(p, __ATOMIC_RELAXED);
}

static void stats_each(struct host_app *a, void (*put)(void *arg, const char *key, uint64_t v),
		       void *arg)
{
	struct proto_reasm_stats ra;
	uint64_t batches = 0, reqs = 0, fbs = 0, cns = 0;
	char key[64];

	for (unsigned i = 0; i < HOST_C__COUNT; i++)
		put(arg, counter_names[i], rd(&a->c[i]));
	for (unsigned v = 0; v < PROTO_VERDICT__COUNT; v++) {
		snprintf(key, sizeof(key), "verdict_%s", v ? proto_verdict_name(v) : "ok");
		put(arg, key, rd(&a->verdicts[v]));
	}
	proto_reasm_stats(a->ra, &ra);
	for (unsigned v = 0; v < PROTO_RA__COUNT; v++) {
		snprintf(key, sizeof(key), "reasm_%s", proto_ra_verdict_name(v));
		put(arg, key, ra.verdicts[v]);
	}
	put(arg, "reasm_expired", ra.expired);
	for (unsigned i = 0; i < (a->n_workers ? a->n_workers : 1); i++) {
		batches += rd(&a->w[i].batches);
		reqs += rd(&a->w[i].reqs);
		fbs += rd(&a->w[i].fallbacks);
		cns += rd(&a->w[i].compute_ns);
	}
	put(arg, "worker_batches", batches);
	put(arg, "worker_requests", reqs);
	put(arg, "worker_fallback_requests", fbs);
	put(arg, "worker_compute_ns", cns);
	put(arg, "in_use", host_reqtab_in_use(&a->tab));
	put(arg, "in_flight_nic", host_nic_in_flight(&a->nic));
	for (uint32_t k = 0; k < a->n_models; k++) {
		snprintf(key, sizeof(key), "queued_%s", a->hm[k].m->name);
		put(arg, key, rte_ring_count(a->q[k]));
	}
	put(arg, "link_up", a->nic.link_up);
	if (a->inproc.disp) {
		uint64_t nc[NICFW_C__COUNT];

		nicfw_disp_counters(a->inproc.disp, nc, NULL);
		for (unsigned i = 0; i < NICFW_C__COUNT; i++) {
			snprintf(key, sizeof(key), "inproc_nic_%s", nicfw_disp_counter_name(i));
			put(arg, key, nc[i]);
		}
		put(arg, "inproc_nic_tx_drop", rd(&a->inproc.tx_drop));
	}
}

static void tel_put(void *arg, const char *key, uint64_t v)
{
	rte_tel_data_add_dict_u64(arg, key, v);
}

static int tel_stats(const char *cmd, const char *params, struct rte_tel_data *d)
{
	rte_tel_data_start_dict(d);
	if (host_g)
		stats_each(host_g, tel_put, d);
	return 0;
}

static void hist_add(struct rte_tel_data *d, const char *name, const struct host_hist *h)
{
	struct rte_tel_data *arr = rte_tel_data_alloc();

	if (!arr)
		return;
	rte_tel_data_start_array(arr, RTE_TEL_U64_VAL);
	for (unsigned b = 0; b < HOST_HIST_BUCKETS; b++)
		rte_tel_data_add_array_u64(arr, rd(&h->b[b]));
	rte_tel_data_add_dict_container(d, name, arr, 0);
}

static int tel_latency(const char *cmd, const char *params, struct rte_tel_data *d)
{
	struct host_hist comp = {0};

	rte_tel_data_start_dict(d);
	if (!host_g)
		return 0;
	for (unsigned i = 0; i < HOST_H__COUNT; i++)
		hist_add(d, hist_names[i], &host_g->h[i]);
	for (unsigned i = 0; i < (host_g->n_workers ? host_g->n_workers : 1); i++)
		for (unsigned b = 0; b < HOST_HIST_BUCKETS; b++)
			comp.b[b] += rd(&host_g->w[i].h_compute.b[b]);
	hist_add(d, "host_batch_compute_us", &comp);
	return 0;
}

static int tel_models(const char *cmd, const char *params, struct rte_tel_data *d)
{
	char key[96];

	rte_tel_data_start_dict(d);
	for (uint32_t i = 0; host_g && i < host_g->n_models; i++) {
		snprintf(key, sizeof(key), "%s:%s:%u", host_g->hm[i].m->name,
			 host_mode_name(host_g->hm[i].mode), host_g->hm[i].split);
		rte_tel_data_add_dict_u64(d, key, host_g->hm[i].model_id);
	}
	return 0;
}

static void file_put(void *arg, const char *key, uint64_t v)
{
	fprintf(arg, "%s %lu\n", key, (unsigned long)v);
}

/* --- set-up -------------------------------------------------------------------------------- */

static int port_init(struct host_app *a, char *err, size_t errlen)
{
	struct rte_eth_conf conf = {0};
	struct rte_ether_addr mac;
	uint16_t nrx = HOST_RX_DESC, ntx = HOST_TX_DESC;
	int ret;

	if (!rte_eth_dev_count_avail()) {
		snprintf(err, errlen, "no port: give one --vdev (net_memif role=client, ...)");
		return -ENODEV;
	}
	a->port = 0;
	ret = rte_eth_dev_configure(a->port, 1, 1, &conf);
	if (!ret)
		ret = rte_eth_dev_adjust_nb_rx_tx_desc(a->port, &nrx, &ntx);
	if (!ret)
		ret = rte_eth_rx_queue_setup(a->port, 0, nrx, rte_eth_dev_socket_id(a->port), NULL,
					     a->pool);
	if (!ret)
		ret = rte_eth_tx_queue_setup(a->port, 0, ntx, rte_eth_dev_socket_id(a->port), NULL);
	if (!ret)
		ret = rte_eth_macaddr_get(a->port, &mac);
	if (ret) {
		snprintf(err, errlen, "port %u: %s", a->port, strerror(-ret));
		return ret;
	}
	memcpy(a->mac, mac.addr_bytes, 6);
	/* a memif client cannot start before its server exists: retried by link_check() */
	a->started = rte_eth_dev_start(a->port) == 0;
	if (!a->started)
		printf("host: port %u does not start yet (NIC away?): retrying every second\n",
		       a->port);
	rte_eth_promiscuous_enable(a->port);
	return 0;
}

static int host_setup(struct host_app *a, char *err, size_t errlen)
{
	uint32_t max_in = 1, max_act = 1, max_cls = 1, slots;
	struct proto_reasm_config rc;
	char name[RTE_RING_NAMESIZE];
	unsigned l;
	int ret;

	for (uint32_t i = 0; i < a->o.n_models; i++) {
		struct host_model *hm = &a->hm[i];

		ret = load_model(hm, (char *)a->o.model_spec[i], err, errlen);
		if (ret)
			return ret;
		a->n_models++;
		max_in = RTE_MAX(max_in, hm->in_bytes);
		max_act = RTE_MAX(max_act, hm->act_bytes);
		max_cls = RTE_MAX(max_cls, hm->classes);
		printf("host: model %s id %#x: %s, host ops 0..%u%s, input %s %ux%ux%u, %u "
		       "classes\n",
		       hm->m->name, hm->model_id, host_mode_name(hm->mode),
		       hm->split ? hm->split - 1 : 0,
		       hm->mode == HOST_MODE_HOST_ONLY ? " (whole model)" : ", NIC from op",
		       hm->in_fmt == PROTO_FMT_U8 ? "u8" : "f32", hm->in_c, hm->in_h, hm->in_w,
		       hm->classes);
		if (hm->mode != HOST_MODE_HOST_ONLY)
			printf("host:   NIC stage ops %u..%u, activation %u bits (%u bytes)\n",
			       hm->split, hm->m->n_layers - 1, hm->act_count, hm->act_bytes);
	}
	slots = a->n_models * (a->o.queue + a->o.window) + 2 * HOST_MAX_BATCH;
	ret = host_reqtab_init(&a->tab, slots, max_in, max_act, max_cls);
	if (!ret)
		ret = host_nic_init(&a->nic, a->o.window, a->o.nic_timeout_ns);
	a->held = calloc(slots, sizeof(*a->held));
	a->body = calloc(max_cls, 8);
	if (ret || !a->held || !a->body) {
		snprintf(err, errlen, "request table of %u slots: out of memory", slots);
		return -ENOMEM;
	}
	a->n_workers = 0;
	a->inproc.lcore = RTE_MAX_LCORE;
	RTE_LCORE_FOREACH_WORKER(l)
	{
		if (a->o.inproc)
			a->inproc.lcore = l; /* the last worker lcore */
	}
	RTE_LCORE_FOREACH_WORKER(l)
	{
		if (l != a->inproc.lcore && a->n_workers < HOST_MAX_WORKERS)
			a->n_workers++;
	}
	a->w = rte_zmalloc("snhost_workers", sizeof(*a->w) * (a->n_workers ? a->n_workers : 1),
			   RTE_CACHE_LINE_SIZE);
	if (!a->w)
		return -ENOMEM;
	for (unsigned i = 0; i < (a->n_workers ? a->n_workers : 1); i++)
		for (uint32_t k = 0; k < a->n_models; k++)
			if (host_stage_init(&a->w[i].st[k], &a->hm[k], a->o.batch)) {
				snprintf(err, errlen, "worker buffers: out of memory");
				return -ENOMEM;
			}
	for (uint32_t k = 0; k < a->n_models; k++) {
		const unsigned mc = a->n_workers > 1 ? 0 : RING_F_SC_DEQ;

		snprintf(name, sizeof(name), "snhost_q%u", k);
		a->q[k] = rte_ring_create(name, a->o.queue, rte_socket_id(),
					  RING_F_SP_ENQ | RING_F_EXACT_SZ | mc);
		snprintf(name, sizeof(name), "snhost_fb%u", k);
		a->fb[k] = rte_ring_create(name, slots, rte_socket_id(),
					   RING_F_SP_ENQ | RING_F_EXACT_SZ | mc);
		if (!a->q[k] || !a->fb[k]) {
			snprintf(err, errlen, "rings: %s", rte_strerror(rte_errno));
			return -ENOMEM;
		}
	}
	a->done =
	    rte_ring_create("snhost_done", slots, rte_socket_id(), RING_F_SC_DEQ | RING_F_EXACT_SZ);
	a->pool = rte_pktmbuf_pool_create("snhost_pool", HOST_MBUFS, 256, 0,
					  RTE_MBUF_DEFAULT_BUF_SIZE, rte_socket_id());
	if (!a->done || !a->pool) {
		snprintf(err, errlen, "ring/mbuf pool: %s", rte_strerror(rte_errno));
		return -ENOMEM;
	}
	rc.slots = HOST_REASM_SLOTS;
	rc.max_msg = max_in;
	rc.timeout_ns = 1000000000ull;
	a->ra = proto_reasm_create(&rc);
	if (!a->ra) {
		snprintf(err, errlen, "reassembly table: out of memory");
		return -ENOMEM;
	}
	ret = port_init(a, err, errlen);
	if (ret)
		return ret;
	if (a->o.inproc) {
		ret = inproc_setup(a, err, errlen);
		if (ret)
			return ret;
	}
	a->tsc0 = rte_get_tsc_cycles();
	a->ns_per_cyc = 1e9 / (double)rte_get_tsc_hz();
	host_g = a;
	rte_telemetry_register_cmd("/splitnic/host/stats", tel_stats,
				   "splitnic-host counters by reason, parser verdicts, reassembly");
	rte_telemetry_register_cmd(
	    "/splitnic/host/latency", tel_latency,
	    "splitnic-host latency histograms: bucket b = [2^(b-1), 2^b) us");
	rte_telemetry_register_cmd("/splitnic/host/models", tel_models,
				   "models served: name:mode:split -> model id");
	printf("host: %u slots, queue %u per model, NIC window %u, timeout %lu us, batch %u "
	       "(wait %lu us), %u worker lcore(s)%s\n",
	       slots, a->o.queue, a->o.window, (unsigned long)(a->o.nic_timeout_ns / 1000),
	       a->o.batch, (unsigned long)(a->o.batch_wait_ns / 1000), a->n_workers,
	       a->n_workers ? "" : " (inline on the main lcore)");
	return 0;
}

static void host_loop(struct host_app *a)
{
	uint64_t now, drain_end = 0;
	uint32_t idle = 0, work;

	for (;;) {
		now = now_ns(a);
		if (unlikely(host_quit && !a->draining)) {
			a->draining = true;
			drain_end = now + a->o.drain_ns;
			printf("host: %s: draining %u request(s)\n",
			       host_quit == SIGINT ? "SIGINT" : "SIGTERM",
			       host_reqtab_in_use(&a->tab));
			fflush(stdout);
		}
		if (unlikely(a->draining) && (!host_reqtab_in_use(&a->tab) || now >= drain_end))
			break;
		link_check(a, now);
		work = rx_port(a);
		if (!a->n_workers)
			work += worker_step(a, &a->w[0]);
		if (a->o.inproc) {
			if (a->inproc.lcore == RTE_MAX_LCORE)
				work += inproc_step(a);
			work += rx_nic(a);
		}
		work += collect(a, now_ns(a));
		expire(a, now);
		if (a->n_tx)
			tx_flush(a);
		if (work) {
			idle = 0;
		} else if (a->o.idle_sleep_us && ++idle > 1000) {
			rte_delay_us_sleep(a->o.idle_sleep_us);
		}
		if (unlikely((now & 0xfffff) < 64))
			proto_reasm_expire(a->ra, now);
	}
}

static void host_teardown(struct host_app *a)
{
	a->workers_stop = true;
	rte_eal_mp_wait_lcore();
	host_g = NULL;
	if (a->pool && rte_eth_dev_count_avail()) {
		if (a->started)
			rte_eth_dev_stop(a->port);
		rte_eth_dev_close(a->port);
	}
	for (unsigned i = 0; a->w && i < (a->n_workers ? a->n_workers : 1); i++)
		for (uint32_t k = 0; k < a->n_models; k++)
			host_stage_fini(&a->w[i].st[k]);
	rte_free(a->w);
	for (uint32_t k = 0; k < a->n_models; k++) {
		rte_ring_free(a->q[k]);
		rte_ring_free(a->fb[k]);
		kern_model_free(a->hm[k].m);
	}
	rte_ring_free(a->done);
	inproc_teardown(a);
	proto_reasm_destroy(a->ra);
	host_nic_fini(&a->nic);
	host_reqtab_fini(&a->tab);
	free(a->held);
	free(a->body);
	rte_mempool_free(a->pool);
}

int main(int argc, char **argv)
{
	static struct host_app app;
	struct host_app *a = &app;
	char err[512];
	unsigned l, i = 0;
	FILE *f;
	int ret;

	ret = rte_eal_init(argc, argv);
	if (ret < 0) {
		fprintf(stderr, "host: rte_eal_init: %s\n", rte_strerror(rte_errno));
		return 1;
	}
	argc -= ret;
	argv += ret;
	argv[0] = "splitnic-host";
	ret = parse_opts(argc, argv, &a->o);
	if (ret)
		goto out_eal;
	signal(SIGINT, on_signal);
	signal(SIGTERM, on_signal);
	ret = host_setup(a, err, sizeof(err));
	if (ret) {
		fprintf(stderr, "host: %s\n", err);
		goto out_teardown;
	}
	RTE_LCORE_FOREACH_WORKER(l)
	{
		if (l == a->inproc.lcore) {
			rte_eal_remote_launch(inproc_main, a, l);
		} else if (i < a->n_workers) {
			a->w[i].lcore = l;
			rte_eal_remote_launch(worker_main, &a->w[i], l);
			i++;
		}
	}
	printf("host: serving UDP %u on port %u as %u.%u.%u.%u; telemetry /splitnic/host/stats\n",
	       a->o.udp_port, a->port, a->o.ip >> 24, (a->o.ip >> 16) & 0xff, (a->o.ip >> 8) & 0xff,
	       a->o.ip & 0xff);
	fflush(stdout);
	host_loop(a);
	printf("host: stopped, %u request(s) left in the table\n", host_reqtab_in_use(&a->tab));
	f = a->o.stats_file ? fopen(a->o.stats_file, "w") : NULL;
	if (a->o.stats_file && !f)
		fprintf(stderr, "host: %s: %s\n", a->o.stats_file, strerror(errno));
	a->workers_stop = true;
	rte_eal_mp_wait_lcore();
	stats_each(a, file_put, f ? f : stdout);
	if (f)
		fclose(f);
	fflush(stdout);
out_teardown:
	host_teardown(a);
out_eal:
	rte_eal_cleanup();
	return ret ? 1 : 0;
}
