/* SPDX-License-Identifier: MIT */
/*
 * host/host_dpdk.h — splitnic-host's DPDK application, private to its files (host/main.c and
 * host/dpdk_*.c; man/splitnic-host.8 tells what the application does): the application's state,
 * the worker lcores' state, their counters, and the operations of each file. The process's life
 * (EAL, signals, the drain, telemetry registration) is the DPDK servers' skeleton's
 * (dpdk/server.h), its options host/opts.h's.
 *
 *   host/main.c            models, set-up, launch, teardown: the skeleton's operations
 *   host/dpdk_port.c       the port: queues, RSS, link state and restarts
 *   host/dpdk_worker.c     a worker lcore's loop: receive, batches, NIC completions, fallbacks
 *   host/dpdk_rx.c         frames in: source checks, spread, reassembly, admission, notices
 *   host/dpdk_tx.c         frames out: RESPONSEs, ERRORs, ACTIVATIONs, on the worker's TX queue
 *   host/dpdk_inproc.c     the in-process NIC stage (--nic inproc) over rte_rings
 *   host/dpdk_telemetry.c  telemetry endpoints and the counters' output
 *   host/dpdk_health.c     HEALTH probes answered (by the worker that receives them)
 *
 * Calls between the files go one way (the inline functions below belong to no file):
 *   main.c -> dpdk_worker.c, dpdk_inproc.c, dpdk_port.c, dpdk_health.c, dpdk_tx.c,
 *             dpdk_telemetry.c
 *   dpdk_worker.c, dpdk_inproc.c -> dpdk_rx.c -> dpdk_health.c -> dpdk_tx.c
 *   dpdk_worker.c -> dpdk_port.c, dpdk_tx.c;  dpdk_rx.c -> dpdk_tx.c
 *
 * The lcore model (run to completion, as DPDK's l2fwd): every lcore is a worker (the main lcore
 * is worker 0), except the in-process NIC's. A worker owns an RX queue and a TX queue of the
 * port where the port has enough (nq = min(workers, the port's queues); net_memif: 1 unless
 * --queues, since both ends must agree), its request table, reassembly table, request queue,
 * NIC executors and counters; nothing is shared but read-only configuration and the lock-free
 * rings that hand frames between lcores:
 *   - spread: when the port does not spread requests itself (one queue, or queues the peer
 *     fills without RSS, as memif's), the lcores that poll a queue pass each REQUEST datagram
 *     to the worker host_spread() names, over that worker's `in` ring (mbufs, no copy);
 *   - notices: a NIC notice received by another worker goes to the owner its host_ref names;
 *   - a worker without a TX queue (more workers than queues) gives its frames to the owner of
 *     queue w % nq over its `tx_via` ring;
 *   - the in-process NIC gives each frame it sends to the worker that owns the request.
 * Worker 0 also watches the link and restarts the port (the other workers step off the port
 * while it does: an epoch they acknowledge), and ends the drain at shutdown.
 */
#ifndef HOST_DPDK_H
#define HOST_DPDK_H

#include <stdbool.h>
#include <stdint.h>
#include <stdio.h>

#include <rte_common.h>
#include <rte_cycles.h>
#include <rte_ethdev.h>
#include <rte_mbuf.h>
#include <rte_mempool.h>
#include <rte_ring.h>

#include "dpdk/server.h"
#include "host/host.h"
#include "host/opts.h"
#include "nicfw/dispatch.h"
#include "nicfw/lcore/lcore.h"
#include "protocol/reasm.h"
#include "protocol/trust.h"

#define HOST_BURST	    32
#define HOST_RX_DESC	    1024
#define HOST_TX_DESC	    1024
#define HOST_TXQ	    64	      /* frames buffered per TX queue before a burst */
#define HOST_TX_DRAIN_NS    100000ull /* buffered frames wait at most this long under load */
#define HOST_TX_TRIES	    64
#define HOST_REASM_SLOTS    256
#define HOST_RING	    1024 /* frames handed to a worker by other lcores, per ring */
#define HOST_LINK_POLL_NS   10000000ull
#define HOST_RESTART_NS	    1000000000ull
#define HOST_REASM_CHECK_NS 100000000ull /* reassembly expiry, every 100 ms */
#define HOST_NIC_RING	    4096	 /* frames to the in-process NIC */
#define HOST_NIC_SLICE	    64		 /* in-process NIC: chain handlers per loop turn */

enum host_counter {
	HOST_C_RX_FRAMES = 0,
	HOST_C_RX_NOT_UDP,	  /* not IPv4/UDP (ARP, IPv6, IP fragments): dropped */
	HOST_C_RX_BAD_IP,	  /* truncated or inconsistent IPv4/UDP */
	HOST_C_RX_OTHER_PORT,	  /* UDP not to --port */
	HOST_C_RX_REJECTED,	  /* the protocol parser rejected it (verdict_* tell why) */
	HOST_C_RX_OTHER_TYPE,	  /* an ACTIVATION (or another type) to the host: dropped */
	HOST_C_NOT_ALLOWED,	  /* REQUESTs and probes from outside the allow-list: dropped */
	HOST_C_NOTICE_NOT_NIC,	  /* RESPONSE/ERROR not from the NIC: dropped */
	HOST_C_NOTICE_MISMATCH,	  /* a notice naming a request in flight with other ids */
	HOST_C_NOTICE_BAD_COOKIE, /* ... with the ids right and the cookie wrong: forged */
	HOST_C_FRAGMENTS,	  /* REQUEST fragments taken into reassembly */
	HOST_C_REQUESTS,	  /* complete REQUESTs */
	HOST_C_ACCEPTED,	  /* ... admitted to a worker's queue */
	HOST_C_ERR_UNKNOWN_MODEL,
	HOST_C_ERR_BAD_SHAPE,
	HOST_C_ERR_BAD_REQUEST,
	HOST_C_ERR_BUSY_QUEUE,
	HOST_C_ERR_BUSY_TABLE,
	HOST_C_ERR_BUSY_REASM,
	HOST_C_ERR_TOO_LARGE,
	HOST_C_ERR_REPLY_LARGER, /* the reply would be larger than the request: not allowed */
	HOST_C_ERR_DRAINING,
	HOST_C_ERR_INTERNAL,
	HOST_C_ERRORS_SENT,
	HOST_C_ERRORS_LIMITED, /* ERRORs not sent: the source's rate (--error-rate) */
	HOST_C_ACTIVATIONS,    /* ACTIVATION messages sent to the NIC */
	HOST_C_ACT_DGRAMS,
	HOST_C_ANSWERED_NIC,  /* requests the NIC answered (notice received) */
	HOST_C_ANSWERED_HOST, /* RESPONSEs sent by the host (host-only and fallback) */
	HOST_C_LATE_NOTICES,  /* notices for requests no longer in flight (already fallen back) */
	HOST_C_NIC_ERRORS,    /* ERROR notices from the NIC for a request in flight */
	HOST_C_NIC_REFUSED_LAYER, /* of them, ERROR unsupported: the NIC's part starts elsewhere */
	HOST_C_FB_FORCED,	  /* fallbacks by reason: order of enum host_fb_reason */
	HOST_C_FB_LINK_DOWN,
	HOST_C_FB_WINDOW,
	HOST_C_FB_TIMEOUT,
	HOST_C_FB_NIC_ERROR,
	HOST_C_FB_SUSPECT,
	HOST_C_SPREAD,	    /* frames passed to the worker that owns them */
	HOST_C_SPREAD_DROP, /* ... whose ring was full: dropped */
	HOST_C_TX_DROP,
	HOST_C_TX_NOMBUF,
	HOST_C_LINK_DOWN, /* link-down transitions (worker 0) */
	HOST_C_PORT_RESTARTS,
	HOST_C_HEALTH_ANSWERED, /* HEALTH probes answered */
	HOST_C_HEALTH_DROPPED,	/* HEALTH not for the host, or too short */
	HOST_C_REFUSED_LARGER,	/* replies larger than their request (trust policy): not sent */
	HOST_C__COUNT
};

enum host_fb_reason {
	HOST_FB_FORCED = 0, /* fallback mode */
	HOST_FB_LINK_DOWN,  /* the NIC is down */
	HOST_FB_WINDOW,	    /* the NIC is saturated: window full */
	HOST_FB_TIMEOUT,    /* no notice before the deadline */
	HOST_FB_NIC_ERROR,  /* the NIC answered the ACTIVATION with an ERROR */
	HOST_FB_SUSPECT,    /* a recent deadline passed: the NIC is held off for a while */
};

/* Latency histograms are kept per model name for the life of the process (a replaced model's go
 * on counting): names[i] is histogram i's, slot_hist[k] slot k's. */
#define HOST_MAX_HISTS 16

enum host_hist_id { HOST_H_TOTAL = 0, HOST_H_QUEUE, HOST_H_NIC_RTT, HOST_H_COMPUTE, HOST_H__COUNT };

/* A request queue: admitted requests of one model waiting for a batch (power of two). */
struct host_rq {
	struct host_req **r;
	uint32_t head, n, mask;
};

struct host_app;

struct host_worker {
	struct host_app *a;
	unsigned id, lcore;
	int32_t rxq, txq; /* the port's queues it owns, -1: none */
	uint32_t n_fed;	  /* queue-less workers whose frames it sends */
	struct host_worker *fed[HOST_MAX_WORKERS];
	struct rte_ring *in;		   /* frames other lcores hand to it (MP/SC) */
	struct rte_ring *tx_via;	   /* queue-less: frames for its queue's owner (SP/SC) */
	struct rte_ring *from_nic;	   /* the in-process NIC's frames for it (SP/SC) */
	struct rte_eth_dev_tx_buffer *txb; /* its TX queue, drops counted */
	uint64_t tx_first;		   /* ns: the oldest frame in txb was buffered */
	struct host_reqtab tab;		   /* its part of the request table */
	struct proto_reasm *ra;		   /* its reassembly table */
	struct host_rq q[HOST_MAX_MODELS]; /* admitted requests */
	struct host_stage st[HOST_MAX_MODELS]; /* host stages and the fallback */
	struct kexec nic[HOST_MAX_MODELS];     /* the NIC stage over packets (co-processor) */
	struct host_tpl t_resp[HOST_MAX_MODELS], t_act[HOST_MAX_MODELS];
	bool one_resp[HOST_MAX_MODELS], one_act[HOST_MAX_MODELS]; /* single-datagram templates */
	struct host_req *fb[HOST_MAX_MODELS][HOST_MAX_BATCH];	  /* waiting for the fallback */
	uint32_t nfb[HOST_MAX_MODELS];
	struct host_req **held; /* responses held while the link is down */
	uint32_t n_held;
	bool link_up;	     /* the NIC's link, as of this turn */
	bool io;	     /* this turn may touch the port (host_port_enter) */
	uint32_t seen_epoch; /* the port epoch it last acted under (host_port_enter) */
	uint64_t reasm_checked;
	uint8_t *body;			/* RESPONSE scores, little-endian */
	uint64_t rl[PROTO_TRUST_SLOTS]; /* ERRORs per source (protocol/trust.h): GCRA times */
	struct proto_neigh_table neigh; /* front-ends' MACs, for the in-process NIC's frames */
	uint64_t c[HOST_C__COUNT];
	uint64_t verdicts[PROTO_VERDICT__COUNT];
	struct host_hist h[HOST_MAX_HISTS][HOST_H__COUNT]; /* latency, per model name and stage */
	uint64_t batches, reqs, fallbacks, compute_ns;
	uint64_t model_epoch;		     /* the models' epoch at its last turn's start */
	uint32_t slot_reqs[HOST_MAX_MODELS]; /* its requests of each model slot, any state */
} __rte_cache_aligned;

/* The in-process NIC stage (--nic inproc): its own lcore, rings both ways. */
struct host_inproc {
	struct nicfw_disp *disp;
	struct nicfw_lcore *lc;		 /* the platform of the executors below */
	struct kexec x[HOST_MAX_MODELS]; /* the NIC part of each co-processor model */
	struct rte_ring *to_nic;	 /* ACTIVATION frames from the workers (MP/SC) */
	unsigned lcore;			 /* RTE_MAX_LCORE: run inline by worker 0 */
	uint64_t tx_drop; /* frames the NIC could not hand back (ring full, no mbuf) */
} __rte_cache_aligned;

struct host_reload;

struct host_app {
	struct host_opts o;
	struct host_model hm[HOST_MAX_MODELS]; /* by slot */
	uint32_t n_models;		       /* slots [0, n_models) may be on (atomic) */
	uint8_t slot_on[HOST_MAX_MODELS];      /* atomic: the workers run slot k */
	struct host_map *map;		       /* atomic: the models found by id */
	uint64_t epoch;			       /* atomic: moved on by every change of the above */
	int readers;			       /* atomic: telemetry and metrics reads under way */
	uint32_t max_in, max_act, max_cls;     /* what the buffers hold (set at start) */
	uint8_t slot_hist[HOST_MAX_MODELS];    /* slot k's histograms (set before it is on) */
	char hist_name[HOST_MAX_HISTS][64];    /* each histogram's model name */
	uint32_t n_hist;		       /* atomic: names given */
	struct host_reload *reload;	       /* dpdk_reload.c's */
	bool refusal_said[HOST_MAX_MODELS];    /* the NIC's first ERROR unsupported, logged once */
	struct rte_mempool *pool;
	uint16_t port;
	uint8_t mac[6];
	uint16_t nq;	       /* RX/TX queue pairs configured */
	bool sw_spread;	       /* requests spread between workers in software */
	const char *spread_by; /* how (start-up message) */
	bool udp_offload;      /* the port completes UDP checksums */
	struct host_worker *w;
	unsigned n_workers;
	uint64_t tsc0;
	double ns_per_cyc;
	volatile bool workers_stop;
	volatile bool draining;
	volatile bool link_up;
	volatile bool started; /* the port is started (a restart may fail while the NIC is away) */
	uint32_t port_epoch;   /* odd while worker 0 restarts the port */
	uint64_t link_checked, link_restarted;
	struct host_inproc inproc;
} __rte_cache_aligned;

static inline uint64_t host_now_ns(const struct host_app *a)
{
	return (uint64_t)((double)(rte_get_tsc_cycles() - a->tsc0) * a->ns_per_cyc);
}

/* The models found by id now (the map is freed only after every worker has begun a turn since
 * it was replaced, and no telemetry or metrics read is under way). */
static inline const struct host_map *host_map(const struct host_app *a)
{
	return __atomic_load_n(&a->map, __ATOMIC_ACQUIRE);
}

static inline bool host_slot_on(const struct host_app *a, uint32_t k)
{
	return __atomic_load_n(&a->slot_on[k], __ATOMIC_ACQUIRE);
}

static inline uint32_t host_slots(const struct host_app *a)
{
	return __atomic_load_n(&a->n_models, __ATOMIC_ACQUIRE);
}

/* A telemetry or metrics read of the models' state (a grace period's reader, dpdk_reload.c). */
static inline void host_read_begin(struct host_app *a)
{
	__atomic_add_fetch(&a->readers, 1, __ATOMIC_SEQ_CST);
}

static inline void host_read_end(struct host_app *a)
{
	__atomic_sub_fetch(&a->readers, 1, __ATOMIC_SEQ_CST);
}

/* Requests held by every worker now (in their tables). */
static inline uint32_t host_in_use(const struct host_app *a)
{
	uint32_t n = 0;

	for (unsigned i = 0; i < a->n_workers; i++)
		n += a->w[i].tab.slots - __atomic_load_n(&a->w[i].tab.n_free, __ATOMIC_RELAXED);
	return n;
}

/* dpdk_port.c: queues and spread decided from the port and the workers, the port configured and
 * (if it can) started; worker 0's link watch and restarts; whether a worker may touch the port
 * in this turn (false while a restart is under way). */
int host_port_init(struct host_app *a, char *err, size_t errlen);
void host_link_check(struct host_app *a, uint64_t now);
bool host_port_enter(struct host_worker *w);

/* dpdk_tx.c: frames out on the worker's own TX queue (rte_eth_tx_buffer; what the port does
 * not take after HOST_TX_TRIES bursts is dropped and counted), or through its queue's owner.
 * host_tx_flush() sends what is buffered (and what the workers it carries gave it) at the end of
 * a turn when the worker has no more work (`more` false), else once the oldest frame has waited
 * HOST_TX_DRAIN_NS (l2fwd's drain timer): under load, replies leave a few at a time. */
int host_tx_setup(struct host_worker *w, char *err, size_t errlen);
void host_tx_frame(struct host_worker *w, struct rte_mbuf *mb);
void host_tx_flush(struct host_worker *w, uint64_t now, bool more);
/* Before a batch expected to take expect_ns: what is buffered leaves now if it would otherwise
 * wait past HOST_TX_DRAIN_NS behind the batch (the drain timer is read between turns only, and
 * one turn's batch can take a millisecond: a reply is not held across it). */
void host_tx_flush_before(struct host_worker *w, uint64_t now, uint64_t expect_ns);
/* The trust policy's verdict (protocol/trust.h) on a reply of kind `reply` (0: admission) of
 * at least out_bytes to the front-end at ip for req_bytes it sent; *cap: the most bytes the reply
 * may take. The verdicts but SEND are counted here. */
enum proto_trust_verdict host_trust(struct host_worker *w, uint32_t ip, unsigned reply,
				    uint32_t req_bytes, uint32_t out_bytes, uint64_t now,
				    uint32_t *cap);

/* An ERROR to from, as the trust policy decides (sent cut to fit, or not at all); counted under
 * why unless the source is not allowed. Its reason: "host: " and why's (host_tx_error_why:
 * reason, when not NULL). */
void host_tx_error(struct host_worker *w, const struct proto_addr *from, uint32_t model_id,
		   uint64_t rid, enum proto_error_code code, uint32_t detail, enum host_counter why,
		   uint32_t req_bytes, uint64_t now);
void host_tx_error_why(struct host_worker *w, const struct proto_addr *from, uint32_t model_id,
		       uint64_t rid, enum proto_error_code code, uint32_t detail,
		       enum host_counter why, const char *reason, uint32_t req_bytes, uint64_t now);
void host_req_error(struct host_worker *w, struct host_req *r, enum proto_error_code code,
		    uint32_t detail, enum host_counter why, uint64_t now);
void host_tx_response(struct host_worker *w, struct host_req *r, uint64_t now);
/* The NIC executor's callbacks (struct host_remote_conf): arg is the worker, tag the request. */
void host_act_describe(void *arg, uint64_t tag, struct proto_msg *m);
int host_act_send(void *arg, uint64_t tag, const struct proto_msg *m, const void *body,
		  uint32_t len);
uint64_t host_act_now(void *arg);
/* The reply templates of model k (after the port is up: its MAC and offloads). */
void host_tx_templates(struct host_worker *w, uint32_t k);

/* dpdk_rx.c: one frame in, from the worker's RX queue (src PORT), another worker (SPREAD: its
 * source checks done) or the in-process NIC (NIC); the frame is consumed (freed or kept). */
enum host_src { HOST_SRC_PORT = 0, HOST_SRC_SPREAD, HOST_SRC_NIC };
void host_rx_frame(struct host_worker *w, struct rte_mbuf *mb, enum host_src src, uint64_t now);
/* The worker that owns the request a RESPONSE or ERROR frame is about (its host_ref), else 0. */
unsigned host_frame_owner(const struct host_app *a, const uint8_t *f, uint32_t len);
/* When the frame's first datagram came in (ns), kept in the mbuf's private area. */
static inline uint64_t *host_mbuf_t_in(struct rte_mbuf *mb)
{
	return (uint64_t *)rte_mbuf_to_priv(mb);
}

/* dpdk_worker.c: a worker lcore's loop (arg: its struct host_worker); host_worker_step() one
 * turn of it, returning the work done; the fallback and the answer of a request. */
int host_worker_main(void *arg);
uint32_t host_worker_step(struct host_worker *w, uint64_t now);
void host_fallback(struct host_worker *w, struct host_req *r, enum host_fb_reason why);
void host_req_done(struct host_worker *w, struct host_req *r);

/* dpdk_inproc.c: the in-process NIC stage; host_inproc_main() is the NIC lcore's loop (arg:
 * the struct host_app), host_inproc_step() one turn of it. */
int host_inproc_setup(struct host_app *a, char *err, size_t errlen);
uint32_t host_inproc_step(struct host_app *a);
int host_inproc_main(void *arg);
void host_inproc_teardown(struct host_app *a);

/* dpdk_health.c: the report's identity (once); and a probe of probe_len
 * bytes from `from` answered by worker w (or dropped, counted). A probe from the server's own
 * address (its NIC's, splitnic-nic --host-probe-ms) is answered whatever the allow-list says. */
void host_health_setup(struct host_app *a);
void host_rx_health(struct host_worker *w, const struct proto_msg *m, const struct proto_addr *from,
		    uint32_t probe_len, uint64_t now);

/* dpdk_slot.c: model slot k of worker w set up (its queue, host stages, NIC executor, templates)
 * and undone; FILE[:MODE[:SPLIT]] loaded into hm (spec is written to). */
int host_slot_setup(struct host_app *a, struct host_worker *w, uint32_t k, char *err,
		    size_t errlen);
void host_slot_fini(struct host_worker *w, uint32_t k);
/* Slot k's histograms: those of its model's name (a new name takes the next free ones, the last
 * ones being shared by the names beyond HOST_MAX_HISTS). Before the slot is on. */
void host_slot_hist(struct host_app *a, uint32_t k);
int host_load_model(struct host_model *hm, char *spec, const struct conf_batch *batch, char *err,
		    size_t errlen);

/*
 * dpdk_reload.c: models loaded, replaced and unloaded while the workers run (SIGHUP, the
 * telemetry command /splitnic/host/reload, POST /-/reload): a thread of its own (a DPDK
 * control thread) reads the command line and the configuration file again; what changed is
 * loaded into free slots, published in a new map, and the slots no longer named are drained
 * (their requests finish on the old version) and freed after a grace period (every worker has
 * begun a turn since, no telemetry read under way). host_reloader(): its reloader
 * (dpdk/reloader.h), which asks and waits, NULL with --nic inproc.
 */
int host_reload_setup(struct host_app *a, char *err, size_t errlen);
struct dpdk_reloader *host_reloader(void *srv);
void host_reload_teardown(struct host_app *a);

/* dpdk_telemetry.c: the commands /splitnic/host/latency and /splitnic/host/models (dpdk/server.h;
 * the skeleton registers them with /splitnic/host/stats, host_counters), and every counter of
 * the application (srv), summed over the workers. */
#define HOST_N_TEL_CMDS 2
extern const struct dpdk_tel_cmd host_tel_cmds[HOST_N_TEL_CMDS];
/* ... and the metrics endpoint's histograms (per model and stage) and gauges (dpdk/metrics.h). */
extern const struct dpdk_metrics_ops host_metrics_ops;
void host_counters(void *srv, void (*put)(void *arg, const char *key, uint64_t v), void *arg);

#endif /* HOST_DPDK_H */
