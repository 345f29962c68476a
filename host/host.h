/* SPDX-License-Identifier: MIT */
/*
 * host/host.h — splitnic-host: the parts that do not depend on DPDK (request table, plan
 * execution, the NIC-stage fallback decision, frame building), so that they build and test
 * without it. host/main.c and host/dpdk_*.c are the DPDK application around them.
 *
 * A request's life (one struct host_req, a slot of the request table):
 *
 *   RX lcore     REQUEST complete -> allow-list, model, shape checked -> slot taken
 *                (table empty or the model's queue full: ERROR BUSY) -> model queue
 *   worker       host stage (host_stage_run): co-processor ops [0, k) -> the activation at the
 *                split, bits; host-only: the whole model -> scores; fallback: ops [k, n) of an
 *                activation -> scores (executors CPU | HOST_FALLBACK)
 *   RX lcore     activation ready: host_nic_decide() says SEND (ACTIVATION datagrams to the
 *                NIC, the slot waits in the in-flight window) or FALLBACK (back to a worker);
 *                scores ready: RESPONSE to the front-end, slot freed
 *   RX lcore     NIC completion notice (splitnic-nic --notify-host: a copy of the RESPONSE it
 *                sent to the front-end) -> slot freed; NIC ERROR for it, its deadline passed,
 *                or the NIC link down -> FALLBACK
 *
 * The fallback mechanism: the host cannot see the NIC's RESPONSE to the front-end, so the NIC
 * copies it to the host (a completion notice, one datagram for up to 165 classes). The host
 * keeps each request's activation until that notice arrives. The NIC stage is
 *   down       while the port's link is down (splitnic-nic's memif server gone): every
 *              request in flight and every new one is finished by the host;
 *   saturated  when `window` ACTIVATIONs are already in flight: the next one is finished by
 *              the host;
 *   late       when a request's notice has not come `timeout` ns after its ACTIVATION left:
 *              finished by the host. If the NIC was only late the front-end gets two
 *              RESPONSEs (counted by the host as late_notices; clients keep the first).
 *              After a missed deadline the NIC is suspect for 10 x timeout: activations go to
 *              the fallback directly, then one probe is sent again (a circuit breaker: a NIC
 *              that lost its stage costs one timeout per hold-off, not one per request); any
 *              notice clears the suspicion.
 * An ERROR from the NIC for an ACTIVATION (e.g. BUSY) also sends the request to the fallback.
 * Notices find their request in O(1): the ACTIVATION carries host_ref (its slot and the slot's
 * generation), the NIC echoes it in the notice, and the notice completes the slot only if it is
 * still that request in flight (generation, model id and request id match). ERRORs from the NIC
 * carry no host_ref: they are matched by (model id, request id) within the window. A NIC that does
 * not hold the model's NIC part (or starts it at another op) answers the ACTIVATION with ERROR
 * UNKNOWN_MODEL or UNSUPPORTED (nicfw/dispatch.h): the request falls back at once.
 *
 * The ACTIVATION's timing fields rx, queue, host and pack tile the host's time from the
 * request's first datagram to the ACTIVATION's send (pack runs to the send), so that the NIC's
 * RESPONSE total (their sum plus the NIC's own time) is the server-side total.
 */
#ifndef HOST_H
#define HOST_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "kernels/kern.h"
#include "kernels/kexec.h"
#include "protocol/frame.h"
#include "protocol/proto.h"

#define HOST_MAX_MODELS	  8
#define HOST_MAX_BATCH	  64
#define HOST_CACHE_LINE	  64
#define HOST_HIST_BUCKETS 24 /* latency histograms: bucket b counts [2^(b-1), 2^b) us */

enum host_mode {
	HOST_MODE_COPROC = 0,	 /* host stage, then the NIC stage (fallback when needed) */
	HOST_MODE_HOST_ONLY = 1, /* the whole model on the host */
	HOST_MODE_FALLBACK = 2,	 /* as co-processor, but the NIC stage always runs on the host */
};

const char *host_mode_name(unsigned mode);

/* A host-side stage of a plan: an executor kind (enum kexec_kind, CPU or GPU) on ops
 * [first, last). */
struct host_plan_stage {
	uint32_t kind, first, last;
};

/* One model as served: the loaded file, where it is split, and the host's stages before. */
struct host_model {
	struct kern_model *m;
	uint32_t model_id; /* proto_model_id(name) */
	uint32_t mode;	   /* enum host_mode */
	uint32_t split;	   /* k: first op of the NIC stage; m->n_layers in host-only mode */
	uint32_t in_fmt;   /* REQUEST tensor: enum proto_fmt, shape and bytes */
	uint32_t in_c, in_h, in_w, in_count, in_bytes;
	uint32_t act_count, act_bytes; /* the ACTIVATION at k: flat bits (act_count, 1, 1) */
	uint32_t classes;
	uint32_t n_stages; /* the host stages, covering [0, split) in order */
	struct host_plan_stage stage[KEXEC_PIPE_MAX];
};

/*
 * Fill hm for model m in `mode` split at k (UINT32_MAX: the default, kexec_nic_first(m), moved
 * past a FLATTEN of multi-pixel bits so that the activation crosses flat, in the protocol's
 * C-major bit order). The NIC stage [k, n) must start at a flat BITS input the NIC can run.
 * 0 or -EINVAL with a message in err.
 */
int host_model_init(struct host_model *hm, struct kern_model *m, uint32_t mode, uint32_t k,
		    char *err, size_t errlen);
/*
 * Replace the default host stage (one CPU stage [0, split)) by n stages of a plan, which must
 * cover [0, hm->split) in order on CPU or GPU executors. 0 or -EINVAL with a message.
 */
int host_model_set_stages(struct host_model *hm, const struct host_plan_stage *st, uint32_t n,
			  char *err, size_t errlen);

/* --- the request table ------------------------------------------------------------------ */

enum host_req_state {
	HOST_RS_FREE = 0,
	HOST_RS_QUEUED,	  /* in its model's queue, waiting for a worker */
	HOST_RS_ACT,	  /* host stage done: the activation is ready */
	HOST_RS_INFLIGHT, /* ACTIVATION sent, waiting for the NIC's notice */
	HOST_RS_FALLBACK, /* queued for the host to run the NIC stage */
	HOST_RS_SCORES,	  /* scores ready: RESPONSE to send */
};

struct host_req {
	uint64_t request_id;
	uint32_t model_id; /* as the front-end gave it (echoed) */
	uint16_t model;	   /* index into the served models */
	uint8_t state;	   /* enum host_req_state */
	uint8_t executors; /* PROTO_EX_* so far */
	uint8_t failed;	   /* a stage returned an error: answer ERROR INTERNAL */
	uint32_t cli_ip;   /* front-end, host order */
	uint16_t cli_port;
	uint8_t cli_mac[6], srv_mac[6]; /* the frame's source and destination */
	uint64_t t_in;			/* ns: first datagram received */
	uint64_t t_queued;		/* ns: into its model queue */
	uint64_t t_sent;		/* ns: ACTIVATION sent (its deadline = t_sent + timeout) */
	uint64_t t_done;		/* ns: the worker finished its stage */
	uint32_t t_rx, t_queue, t_host, t_pack; /* ns, as the RESPONSE timing fields */
	uint8_t *in;				/* the request tensor (in_bytes of its model) */
	uint8_t *act;				/* the activation at the split (act_bytes) */
	double *scores;				/* classes */
	uint32_t index;				/* slot number */
	uint32_t nic_pos;			/* its entry in the NIC window's ring */
	uint8_t gen;				/* bumped at every get: 1..255 */
} __attribute__((aligned(HOST_CACHE_LINE)));

#define HOST_REF_SLOTS (1u << 24) /* a host_ref is gen << 24 | slot */

/* The ACTIVATION's host_ref for r (never 0), echoed by the NIC in its notice. */
static inline uint32_t host_req_ref(const struct host_req *r)
{
	return (uint32_t)r->gen << 24 | r->index;
}

/*
 * A fixed table of `slots` requests with buffers for the largest input, activation and class
 * count, allocated at create; get/put are O(1) and allocate nothing. One owner thread (the RX
 * lcore takes and frees slots; workers only fill the slots they are handed).
 */
struct host_reqtab {
	struct host_req *req;
	uint32_t slots, n_free;
	uint32_t *free; /* stack of free slot numbers */
	uint8_t *mem;
};

int host_reqtab_init(struct host_reqtab *t, uint32_t slots, uint32_t in_bytes, uint32_t act_bytes,
		     uint32_t classes);
void host_reqtab_fini(struct host_reqtab *t);
/* A free slot (state QUEUED, fields but the buffers zeroed), or NULL when all are taken. */
struct host_req *host_reqtab_get(struct host_reqtab *t);
/* The slot a host_ref names while it is still that request's (its generation), else NULL:
 * O(1). The caller checks the state and the ids it expects. */
struct host_req *host_reqtab_ref(struct host_reqtab *t, uint32_t ref);
void host_reqtab_put(struct host_reqtab *t, struct host_req *r);
static inline uint32_t host_reqtab_in_use(const struct host_reqtab *t)
{
	return t->slots - t->n_free;
}

/* --- plan execution --------------------------------------------------------------------- */

enum host_stage_kind {
	HOST_STAGE_FRONT = 0, /* ops [0, k): in -> act */
	HOST_STAGE_WHOLE = 1, /* ops [0, n): in -> scores */
	HOST_STAGE_BACK = 2,  /* ops [k, n): act -> scores (the fallback) */
};

/*
 * One worker's executors for one model (kernels/kexec.h): the model's host stages as a
 * pipeline (FRONT, or WHOLE in host-only mode), a CPU executor for ops [split, n) (BACK, the
 * fallback), and batch staging for at most max_batch requests. A batch of one runs on the
 * request's own buffers; larger ones are gathered into and scattered from the staging buffers.
 */
struct host_stage {
	const struct host_model *hm;
	struct kexec_pipe front;
	struct kexec back; /* opened unless host-only */
	uint32_t max_batch;
	uint8_t ex_front; /* PROTO_EX_* of the front pipeline (GPU only where it ran on one) */
	uint8_t *bin;	  /* max_batch * max(in_bytes, act_bytes) */
	uint8_t *bout;	  /* max_batch * max(act_bytes, classes * 8) */
};

/* 0, -ENOMEM, or the executors' load error (message in err). */
int host_stage_init(struct host_stage *st, const struct host_model *hm, uint32_t max_batch,
		    char *err, size_t errlen);
/* Requests whose GPU stages ran on the CPU (no usable GPU) so far. */
uint64_t host_stage_gpu_fallbacks(const struct host_stage *st);
void host_stage_fini(struct host_stage *st);
/*
 * Run `kind` on n <= max_batch requests as one batch: inputs gathered from each request's in
 * (or act), outputs scattered to act (or scores); executors gain CPU (and HOST_FALLBACK for
 * BACK). Allocates nothing. 0 or -EINVAL.
 */
int host_stage_run(struct host_stage *st, enum host_stage_kind kind, struct host_req **reqs,
		   uint32_t n);

/* --- the NIC stage: fallback decisions ------------------------------------------------------ */

enum host_fb_reason {
	HOST_FB_NONE = 0,
	HOST_FB_FORCED,	   /* fallback mode */
	HOST_FB_LINK_DOWN, /* the NIC is down */
	HOST_FB_WINDOW,	   /* the NIC is saturated: window full */
	HOST_FB_TIMEOUT,   /* no notice before the deadline */
	HOST_FB_NIC_ERROR, /* the NIC answered the ACTIVATION with an ERROR */
	HOST_FB_SUSPECT,   /* a recent deadline passed: the NIC is held off for a while */
	HOST_FB__COUNT
};

const char *host_fb_reason_name(unsigned r);

/*
 * The in-flight window: ACTIVATIONs sent and not yet confirmed, oldest first (deadlines are
 * monotonic, so expiry pops from the head). Single-threaded (the RX lcore).
 */
struct host_nic {
	bool link_up;
	uint32_t window;	    /* at most this many in flight, >= 1 */
	uint64_t timeout_ns;	    /* deadline after the send */
	uint64_t suspect_until;	    /* ns: no ACTIVATION before (after a missed deadline) */
	uint32_t head, count, live; /* ring positions; live = entries not yet removed */
	uint32_t cap;		    /* ring size: a power of two >= 2 * window */
	struct host_req **ring;	    /* NULL marks an entry removed out of order */
};

int host_nic_init(struct host_nic *n, uint32_t window, uint64_t timeout_ns);
void host_nic_fini(struct host_nic *n);
/* Where the next activation goes at now_ns: HOST_FB_NONE (send it to the NIC) or the reason
 * for the fallback. */
enum host_fb_reason host_nic_decide(const struct host_nic *n, uint32_t mode, uint64_t now_ns);
/* Record r as sent at now_ns (caller checked decide() == NONE). */
void host_nic_sent(struct host_nic *n, struct host_req *r, uint64_t now_ns);
/* The in-flight request of (model_id, request_id), removed from the window; NULL if none: a
 * scan of the window, for ERRORs (which carry no host_ref). */
struct host_req *host_nic_complete(struct host_nic *n, uint32_t model_id, uint64_t request_id);
/* Remove in-flight r (found by its host_ref) from the window: O(1). */
void host_nic_remove(struct host_nic *n, struct host_req *r);
/* Pop one request whose deadline passed at now_ns (the NIC becomes suspect), or any when the
 * link is down; or NULL. */
struct host_req *host_nic_expired(struct host_nic *n, uint64_t now_ns);
static inline uint32_t host_nic_in_flight(const struct host_nic *n)
{
	return n->live;
}

/* --- HEALTH ------------------------------------------------------------------------------- */

/*
 * The report's model entries for the n served models (mode coproc, host-only or fallback; the
 * REQUEST's format and shape), into out[n].
 */
void host_health_models(const struct host_model *hm, uint32_t n, struct proto_health_model *out);
/* draining after SIGTERM; else degraded while a co-processor model's NIC is away (the link is
 * down: the host finishes those requests itself); else serving. */
enum proto_health_state host_health_state(const struct host_model *hm, uint32_t n, bool draining,
					  bool nic_up);
/* A probe the host answers: for any role (0) or for splitnic-host. */
bool host_health_asks_me(const struct proto_msg *m);

/* --- allow-list ------------------------------------------------------------------------------- */

struct host_cidr {
	uint32_t net, mask; /* host order */
};

/* "A.B.C.D/N" or "A.B.C.D"; 0 or -EINVAL. */
int host_cidr_parse(const char *s, struct host_cidr *c);
/* true if ip is in one of the n prefixes, or n == 0 (no allow-list). */
bool host_cidr_allowed(const struct host_cidr *c, uint32_t n, uint32_t ip);

/* --- latency histograms ----------------------------------------------------------------------- */

struct host_hist {
	uint64_t b[HOST_HIST_BUCKETS];
	uint64_t count, sum_ns;
};

static inline void host_hist_add(struct host_hist *h, uint64_t ns)
{
	uint64_t us = ns / 1000;
	unsigned b = us ? 64 - (unsigned)__builtin_clzll(us) : 0;

	h->b[b < HOST_HIST_BUCKETS ? b : HOST_HIST_BUCKETS - 1]++;
	h->count++;
	h->sum_ns += ns;
}

static inline uint32_t host_sat32(uint64_t v)
{
	return v > UINT32_MAX ? UINT32_MAX : (uint32_t)v;
}

#endif /* HOST_H */
