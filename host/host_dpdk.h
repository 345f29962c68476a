/* SPDX-License-Identifier: MIT */
/*
 * host/host_dpdk.h — splitnic-host's DPDK application, private to its files (host/main.c and
 * host/dpdk_*.c; host/main.c tells what the application does): the application's state, its
 * counters, and the operations of each lcore.
 *
 *   host/main.c            EAL, options, set-up, the RX/TX lcore's loop, teardown
 *   host/dpdk_tx.c         frames out: RESPONSEs, ERRORs, ACTIVATIONs (RX/TX lcore)
 *   host/dpdk_rx.c         frames in: parse, reassembly, admission, notices, hand-off to the
 *                          NIC or the fallback, link state (RX/TX lcore)
 *   host/dpdk_worker.c     the host stages on the worker lcores: batching, fallback execution
 *   host/dpdk_inproc.c     the in-process NIC stage (--nic inproc) over rte_rings
 *   host/dpdk_telemetry.c  telemetry endpoints and the counters' output
 *   host/dpdk_health.c     HEALTH probes answered
 */
#ifndef HOST_DPDK_H
#define HOST_DPDK_H

#include <signal.h>
#include <stdbool.h>
#include <stdint.h>
#include <stdio.h>

#include <rte_common.h>
#include <rte_ethdev.h>
#include <rte_cycles.h>
#include <rte_mbuf.h>
#include <rte_mempool.h>
#include <rte_ring.h>

#include "host/host.h"
#include "nicfw/dispatch.h"
#include "nicfw/lcore/lcore.h"
#include "protocol/reasm.h"

#define HOST_BURST	  32
#define HOST_RX_DESC	  1024
#define HOST_TX_DESC	  1024
#define HOST_MBUFS	  8191
#define HOST_TXQ	  64 /* frames buffered per TX queue before a burst */
#define HOST_TX_TRIES	  64
#define HOST_MAX_ALLOW	  16
#define HOST_MAX_WORKERS  8
#define HOST_REASM_SLOTS  256
#define HOST_LINK_POLL_NS 10000000ull
#define HOST_RESTART_NS	  1000000000ull
#define HOST_NIC_RING	  4096 /* frames between the host and the in-process NIC, each way */
#define HOST_NIC_SLICE	  64   /* in-process NIC: chain handlers per loop turn */

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
	HOST_C_HEALTH_ANSWERED, /* HEALTH probes answered */
	HOST_C_HEALTH_DROPPED, /* HEALTH not for the host, from outside the allow-list, too short */
	HOST_C__COUNT
};

enum host_hist_id { HOST_H_TOTAL = 0, HOST_H_QUEUE, HOST_H_NIC_RTT, HOST_H__COUNT };

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
	const char *name;	/* --name: the HEALTH identity */
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
	struct rte_eth_dev_tx_buffer *txb; /* queue 0: rte_eth_tx_buffer, drops counted */
	bool udp_offload;		   /* the port completes UDP checksums */
	uint64_t tsc0;
	double ns_per_cyc;
	volatile bool workers_stop;
	bool draining;
	bool started; /* the port is started (a restart may fail while the NIC is away) */
	uint64_t link_checked, link_down_since, link_restarted;
	struct host_inproc inproc;
	struct proto_neigh_table neigh; /* front-ends' MACs, for the in-process NIC's frames */
} __rte_cache_aligned;

/* Set by SIGINT/SIGTERM: stop admission and drain. */
extern volatile sig_atomic_t host_quit;
/* The application, for the telemetry callbacks and the worker lcores; NULL outside
 * host_setup()..host_teardown(). */
extern struct host_app *host_g;

static inline uint64_t host_now_ns(const struct host_app *a)
{
	return (uint64_t)((double)(rte_get_tsc_cycles() - a->tsc0) * a->ns_per_cyc);
}

/* dpdk_tx.c: frames out, on the RX/TX lcore: buffered (rte_eth_tx_buffer), flushed every loop
 * turn; what the port does not take after HOST_TX_TRIES bursts is dropped and counted. */
int host_tx_setup(struct host_app *a, char *err, size_t errlen);
void host_tx_frame(struct host_app *a, struct rte_mbuf *mb);
void host_tx_flush(struct host_app *a);
void host_tx_error(struct host_app *a, const struct proto_addr *req_from, uint32_t model_id,
		   uint64_t rid, enum proto_error_code code, uint32_t detail, enum host_counter why,
		   const char *reason);
void host_req_error(struct host_app *a, struct host_req *r, enum proto_error_code code,
		    uint32_t detail, enum host_counter why, const char *reason);
void host_tx_response(struct host_app *a, struct host_req *r, uint64_t now);
void host_tx_activation(struct host_app *a, struct host_req *r, uint64_t now);

/* dpdk_rx.c: the request path, on the RX/TX lcore; the step functions return work done. */
uint32_t host_rx_port(struct host_app *a);
uint32_t host_rx_nic(struct host_app *a);
uint32_t host_collect(struct host_app *a, uint64_t now);
void host_expire(struct host_app *a, uint64_t now);
void host_link_check(struct host_app *a, uint64_t now);

/* dpdk_worker.c: the host stages; host_worker_main() is a worker lcore's loop (arg: its
 * struct host_worker), host_worker_step() one turn of it. */
uint32_t host_worker_step(struct host_app *a, struct host_worker *w);
int host_worker_main(void *arg);

/* dpdk_inproc.c: the in-process NIC stage; host_inproc_main() is the NIC lcore's loop (arg:
 * the struct host_app), host_inproc_step() one turn of it. */
int host_inproc_setup(struct host_app *a, char *err, size_t errlen);
uint32_t host_inproc_step(struct host_app *a);
int host_inproc_main(void *arg);
void host_inproc_teardown(struct host_app *a);

/* dpdk_health.c: the report's identity and models (once, after the models are loaded), and a
 * probe of probe_len bytes from `from` answered (or dropped, counted). */
void host_health_setup(struct host_app *a);
void host_rx_health(struct host_app *a, const struct proto_msg *m, const struct proto_addr *from,
		    uint32_t probe_len);

/* dpdk_telemetry.c: the /splitnic/host/ endpoints (host_g set first), and every counter as
 * "key value" lines to f. */
void host_telemetry_register(void);
void host_stats_write(struct host_app *a, FILE *f);

#endif /* HOST_DPDK_H */
