/* SPDX-License-Identifier: MIT */
/*
 * host/host.h — splitnic-host: the parts that do not depend on DPDK (request table, plan
 * execution, the NIC over packets as an executor, reply templates with incremental checksums,
 * cookies), so that they build and test without it. The source checks are the protocol's own
 * (the trust policy of protocol/trust.h, proto_input_matches()).
 * host/main.c and host/dpdk_*.c are the DPDK application around them.
 *
 * A request's life (one struct host_req, a slot of its worker's request table): one worker
 * lcore owns it from its first datagram to its hand-off, run to completion as in DPDK's l2fwd:
 *
 *   receive    the frame came on the worker's own RX queue (the port spread it, RSS or
 *              af_packet's fanout hash), or was spread to it in software by the lcore that polls
 *              a shared queue (hash of the front-end's address, port and request id, so that a
 *              request's fragments meet in one reassembly table)
 *   admit      source checks first (allow-list; notices only from the NIC), then model, shape,
 *              slot and the worker's queue (full: ERROR BUSY); the input stays in its frame (or
 *              reassembly slot) until its batch runs
 *   host stage the batch's inputs gathered into the stage's input buffer (the one copy of the
 *              input), the host stages of the plan (host_stage_run): co-processor: ops [0, k)
 *              -> the activation at the split, bits; host-only: the whole model -> scores
 *   hand-off   co-processor: the ACTIVATION submitted to the worker's NIC executor (the NIC
 *              over packets, host_exec_remote_ops below), sent on the worker's own TX queue;
 *              refused (NIC down, window full, suspect) or failed later (NIC ERROR, deadline,
 *              link lost): the fallback, ops [k, n) on the CPU (executors CPU | HOST_FALLBACK);
 *              host-only or fallback: the RESPONSE, on the worker's own TX queue
 *   notice     the NIC's completion notice (splitnic-nic --notify-host: a copy of the RESPONSE it
 *              sent to the front-end, with the ACTIVATION's host_ref and cookie) finds the
 *              request in O(1) by host_ref, which also names the worker that owns it: a notice
 *              received by another worker is passed to its owner. Slot freed.
 *
 * The fallback mechanism: the host cannot see the NIC's RESPONSE to the front-end, so the NIC
 * copies it to the host (a completion notice). The host keeps each request's activation until
 * that notice arrives. The NIC stage is
 *   down       while the port's link is down (splitnic-nic's memif server gone): every
 *              request in flight and every new one is finished by the host;
 *   saturated  when `window` ACTIVATIONs of a worker and model are already in flight: the next
 *              one is finished by the host;
 *   late       when a request's notice has not come `timeout` ns after its ACTIVATION left:
 *              finished by the host. If the NIC was only late the front-end gets two
 *              RESPONSEs (counted by the host as late_notices; clients keep the first).
 *              After a missed deadline the NIC is suspect for 10 x timeout: activations go to
 *              the fallback directly, then one probe is sent again (a circuit breaker: a NIC
 *              that lost its stage costs one timeout per hold-off, not one per request); any
 *              notice clears the suspicion.
 * An ERROR from the NIC for an ACTIVATION (e.g. BUSY, UNKNOWN_MODEL) also sends the request to
 * the fallback.
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

#include "conf/batch.h"
#include "exec/kexec.h"
#include "kernels/kern.h"
#include "protocol/frame.h"
#include "protocol/proto.h"

#define HOST_MAX_MODELS	  8
#define HOST_MAX_BATCH	  64
#define HOST_MAX_WORKERS  8
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
	struct model *m;
	uint32_t model_id; /* proto_model_id(name) */
	uint32_t mode;	   /* enum host_mode */
	uint32_t split;	   /* k: first op of the NIC stage; m->n_layers in host-only mode */
	uint32_t in_fmt;   /* REQUEST tensor: enum proto_fmt, shape and bytes */
	uint32_t in_c, in_h, in_w, in_count, in_bytes;
	char shape_reason[48]; /* ERROR bad_shape's reason: "bad_shape: expects u8 1x28x28" */
	uint32_t act_count, act_bytes; /* the ACTIVATION at k: flat bits (act_count, 1, 1) */
	uint32_t classes;
	uint32_t n_stages; /* the host stages, covering [0, split) in order */
	struct host_plan_stage stage[KEXEC_PIPE_MAX];
	struct conf_batch batch; /* its dynamic batching (the caller's to set) */
};

/*
 * Fill hm for model m in `mode` split at k (UINT32_MAX: the default, kexec_nic_split(m), which
 * splitnic-nic takes too: the activation crosses flat, in the protocol's C-major bit order). The
 * NIC stage [k, n) must start where kexec_nic_handoff_ok(m, k). 0 or -EINVAL with a message in err.
 */
int host_model_init(struct host_model *hm, struct model *m, uint32_t mode, uint32_t k, char *err,
		    size_t errlen);
/*
 * Replace the default host stage (one CPU stage [0, split)) by n stages of a plan, which must
 * cover [0, hm->split) in order on CPU or GPU executors. 0 or -EINVAL with a message.
 */
int host_model_set_stages(struct host_model *hm, const struct host_plan_stage *st, uint32_t n,
			  char *err, size_t errlen);

/*
 * The models served now, as splitnic-host's workers look them up by id and HEALTH lists them:
 * their slots (indexes of the application's per-model arrays), in order. Replaced whole by a
 * reload and published with one atomic store; never changed once published.
 */
struct host_map {
	uint32_t n;
	uint8_t slot[HOST_MAX_MODELS];
	struct host_model hm[HOST_MAX_MODELS]; /* copies of the slots' models (HEALTH's state) */
	struct proto_health_model health[HOST_MAX_MODELS];
};

/* The map of slots[n] of the models by slot hm, allocated (NULL: out of memory). */
struct host_map *host_map_build(const struct host_model *hm, const uint8_t *slots, uint32_t n);

/* --- the request table ------------------------------------------------------------------ */

enum host_req_state {
	HOST_RS_FREE = 0,
	HOST_RS_QUEUED,	  /* admitted, waiting in its worker's queue for a batch */
	HOST_RS_ACT,	  /* host stage done: the activation is ready */
	HOST_RS_INFLIGHT, /* ACTIVATION sent, waiting for the NIC's notice */
	HOST_RS_FALLBACK, /* waiting for the host to run the NIC stage */
	HOST_RS_SCORES,	  /* scores ready: RESPONSE to send */
};

/*
 * A request is keyed by its front-end's address and port, its model and its request id: the
 * spread between workers and the reassembly use them, and a NIC notice is matched to its slot
 * by host_ref and checked against the model, the request id and the request's cookie.
 */
struct host_req {
	uint64_t request_id;
	uint32_t model_id; /* as the front-end gave it (echoed) */
	uint16_t model;	   /* index into the served models */
	uint8_t state;	   /* enum host_req_state */
	uint8_t executors; /* PROTO_EX_* so far */
	uint32_t cli_ip;   /* front-end, host order */
	uint16_t cli_port;
	uint8_t failed;			/* a stage returned an error: answer ERROR INTERNAL */
	uint8_t cli_mac[6], srv_mac[6]; /* the frame's source and destination */
	uint32_t req_bytes;		/* the REQUEST's datagram bytes (no reply larger, unless
					 * the front-end is on the allow-list) */
	uint64_t t_in;			/* ns: first datagram received */
	uint64_t t_queued;		/* ns: admitted */
	uint64_t t_sent;		/* ns: ACTIVATION sent */
	uint64_t t_done;		/* ns: the worker finished its stage */
	uint32_t t_rx, t_queue, t_host, t_pack; /* ns, as the RESPONSE timing fields */
	const uint8_t *in; /* the request tensor until its batch gathers it: in `hold` or in
			    * reassembly slot `ra_slot` */
	void *hold;	   /* the caller's frame holding `in` (freed after the gather), or NULL */
	int32_t ra_slot;   /* the reassembly slot holding `in` (released after the gather), or -1 */
	uint8_t *act;	   /* the activation at the split (act_bytes), the slot's own */
	double *scores;	   /* classes, the slot's own */
	uint32_t index;	   /* slot number */
} __attribute__((aligned(HOST_CACHE_LINE)));

/*
 * A fixed table of `slots` requests with buffers for the largest activation and class count,
 * allocated at create; get/put are O(1) and allocate nothing. One owner thread (a worker lcore
 * has its own table: the request table is partitioned per lcore).
 */
struct host_reqtab {
	struct host_req *req;
	uint32_t slots, n_free;
	uint32_t *free; /* stack of free slot numbers */
	uint8_t *mem;
	uint64_t double_puts; /* puts of a slot already free: refused */
};

int host_reqtab_init(struct host_reqtab *t, uint32_t slots, uint32_t act_bytes, uint32_t classes);
void host_reqtab_fini(struct host_reqtab *t);
/* A free slot (state QUEUED, fields but the buffers zeroed, ra_slot -1), or NULL when all are
 * taken. */
struct host_req *host_reqtab_get(struct host_reqtab *t);
/* Free r: 0, or -EALREADY (and double_puts counted) if r is already free: a slot is never on
 * the free stack twice. */
int host_reqtab_put(struct host_reqtab *t, struct host_req *r);
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
 * One worker's executors for one model (exec/kexec.h): the model's host stages as a
 * pipeline (FRONT, or WHOLE in host-only mode), a CPU executor for ops [split, n) (BACK, the
 * fallback), and the batch buffers for at most max_batch requests. Inputs are gathered into
 * `bin` (the one copy of a request's input, from wherever r->in points); a batch of one writes
 * its output straight into the request's act or scores, larger ones through `bout`.
 */
struct host_stage {
	const struct host_model *hm;
	struct kexec_pipe front;
	struct kexec back; /* opened unless host-only */
	uint32_t max_batch;
	uint8_t ex_front;    /* PROTO_EX_* of the front pipeline (GPU only where it ran on one) */
	uint8_t *bin;	     /* max_batch * max(in_bytes, act_bytes) */
	uint8_t *bout;	     /* max_batch * max(act_bytes, classes * 8) */
	uint64_t last_ns[2]; /* the last batch's time: front (or whole), back */
};

/* 0, -ENOMEM, or the executors' load error (message in err). */
int host_stage_init(struct host_stage *st, const struct host_model *hm, uint32_t max_batch,
		    char *err, size_t errlen);
/* Requests whose GPU stages ran on the CPU (no usable GPU) so far. */
uint64_t host_stage_gpu_fallbacks(const struct host_stage *st);
void host_stage_fini(struct host_stage *st);
/*
 * Run `kind` on n <= max_batch requests as one batch: inputs gathered from each request's in
 * (FRONT, WHOLE; r->in is not read afterwards) or act (BACK), outputs to act (FRONT) or scores;
 * executors gain CPU (and HOST_FALLBACK for BACK). Allocates nothing. 0 or -EINVAL.
 */
int host_stage_run(struct host_stage *st, enum host_stage_kind kind, struct host_req **reqs,
		   uint32_t n);

/* --- cookies ------------------------------------------------------------------------------- */

/*
 * Per-request cookies: SipHash-2-4 of a counter under a 128-bit key drawn from the kernel's
 * CSPRNG (getrandom) at start-up: unguessable without the key, never repeated, never 0.
 */
struct host_cookie {
	uint64_t k0, k1, ctr;
};

/* 0 or -errno (getrandom failed). */
int host_cookie_init(struct host_cookie *c);
uint64_t host_cookie_next(struct host_cookie *c);
/* SipHash-2-4 of one 64-bit word (little-endian bytes) under (k0, k1). */
uint64_t host_siphash64(uint64_t k0, uint64_t k1, uint64_t m);

/* --- the NIC over packets: an executor of exec/kexec.h ------------------------------------ */

/*
 * host_exec_remote_ops: the NIC stage [first, n) of a model on a NIC reached over packets
 * (splitnic-nic, or the in-process NIC stage), one ACTIVATION per submit (max_batch 1):
 *
 *   submit(in, 1, out, tag)   -ENOLINK (the NIC is down), -EBUSY (window full), -EAGAIN (the NIC
 *                             is suspect after a missed deadline), or the send's error; else the
 *                             ACTIVATION is sent: its header fields the caller's describe()
 *                             fills (ids, reply address, timings), then the tensor (flat bits at
 *                             `first`), host_ref (its window entry, OR-ed with ref_base) and a
 *                             fresh cookie
 *   host_remote_notice()      the caller hands each notice (RESPONSE or ERROR from the NIC, in
 *                             the notice form: host_ref and cookie) in: found by host_ref in
 *                             O(1), accepted only if that entry is in flight with the notice's
 *                             model id, request id and cookie; a RESPONSE completes the tag
 *                             with 0 (out receives the scores it carries), an ERROR with -EIO
 *   progress (poll)           a deadline passed: -ETIMEDOUT (the NIC becomes suspect); the link
 *                             down: every request in flight completes with -ENOLINK
 * Completions come in the order their notices arrive (the NIC's order), not necessarily the
 * submission order. The caller keeps `in` (the activation, for its fallback) until the tag
 * completes. One thread drives it; submit and notices allocate nothing.
 */
struct host_remote_conf {
	uint32_t window;     /* ACTIVATIONs in flight at most, 1..KEXEC_FIFO */
	uint64_t timeout_ns; /* deadline after the send */
	uint32_t ref_base;   /* OR-ed into every host_ref: the owner's bits (HOST_REF_WORKER) */
	void *arg;
	/* the ACTIVATION's per-request fields for tag: model_id, request_id, reply address and
	 * port, executors, timings (the caller computes t_pack at this call) */
	void (*describe)(void *arg, uint64_t tag, struct proto_msg *m);
	/* send message m (body of len bytes) to the NIC: 0 or -errno */
	int (*send)(void *arg, uint64_t tag, const struct proto_msg *m, const void *body,
		    uint32_t len);
	uint64_t (*now)(void *arg); /* ns, monotonic */
};

extern const struct kexec_ops host_exec_remote_ops;

/* host_ref = gen (8 bits) << 24 | worker (4 bits) << 20 | window entry (20 bits) */
#define HOST_REF_ENTRY_BITS 20u
#define HOST_REF_WORKER(w)  ((uint32_t)(w) << HOST_REF_ENTRY_BITS)
static inline uint32_t host_ref_worker(uint32_t ref)
{
	return (ref >> HOST_REF_ENTRY_BITS) & 0xfu;
}

enum host_notice_verdict {
	HOST_NOTICE_OK = 0,
	HOST_NOTICE_STALE,	/* no request in flight under that host_ref (late, or unknown) */
	HOST_NOTICE_MISMATCH,	/* in flight, but another model or request id */
	HOST_NOTICE_BAD_COOKIE, /* in flight, ids match, the cookie does not: forged */
	HOST_NOTICE__COUNT
};

/* A notice m (type RESPONSE or ERROR, already known to come from the NIC) for executor x. */
enum host_notice_verdict host_remote_notice(struct kexec *x, const struct proto_msg *m);
/* The link to the NIC went up or down (down: everything in flight fails at the next poll). */
void host_remote_set_link(struct kexec *x, bool up);
/* ACTIVATIONs in flight now. */
uint32_t host_remote_in_flight(const struct kexec *x);

/* --- reply templates: checksums by incremental update (RFC 1624) ----------------------------- */

/*
 * A template of one kind of single-datagram message from one address to the same kind of
 * peer: the protocol header written once, with the per-message words (model and request id, the
 * type header from var_from on) zero, and the partial one's-complement sum of its constant
 * words. host_tpl_fill() copies it, writes the per-message words and the data, and frames the
 * datagram with proto_frame_udp_hdrs() (protocol/frame_hdr.h, every sender's header writer),
 * the payload's sum taken from the template's and those words and the data only (RFC 1624:
 * HC' = ~(~HC + m'), every m zero in the template), instead of summing the whole datagram. With
 * udp_offload the UDP field holds the pseudo-header sum a port that completes UDP checksums
 * expects.
 */
struct host_tpl {
	uint32_t hdr_len;  /* protocol header bytes (the type's) */
	uint32_t var_from; /* first per-message byte of the type header */
	uint32_t data_len; /* data bytes of every message from this template */
	bool udp_offload;
	struct proto_addr from; /* sip and sport */
	uint32_t hdr_sum;	/* partial sum of hdr, not folded */
	uint8_t hdr[PROTO_MAX_HDR_LEN];
};

/*
 * m: the constant fields (type, hdr_len, frag_len = total_len = data_len, frag_off 0, and the
 * type header's fields before var_from: RESPONSE score format and classes, ACTIVATION tensor);
 * from: sip, sport (the MACs, dip and dport come with each message). 0, or -EINVAL when the
 * message is not one datagram.
 */
int host_tpl_init(struct host_tpl *t, const struct proto_msg *m, uint32_t var_from,
		  const struct proto_addr *from, bool udp_offload);
/*
 * Write into f (PROTO_FRAME_HDRS + hdr_len + data_len bytes) the datagram of m (whose constant
 * fields must be the template's) with `data`, from to->smac to (to->dmac, dip, dport); to->sip
 * and to->sport are the template's. Returns the frame length.
 */
uint32_t host_tpl_fill(const struct host_tpl *t, uint8_t *f, const struct proto_msg *m,
		       const void *data, const struct proto_addr *to);

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

/* Which of n workers handles the request (sip, sport, request_id) when the spread is done in
 * software: every fragment of a request and every retransmission of it meet in one worker. */
static inline uint32_t host_spread(uint32_t sip, uint16_t sport, uint64_t request_id, uint32_t n)
{
	uint64_t h = ((uint64_t)sip << 16 | sport) ^ (request_id * 0x9e3779b97f4a7c15ull);

	h ^= h >> 33;
	h *= 0xff51afd7ed558ccdull;
	h ^= h >> 33;
	return (uint32_t)(((h & 0xffffffffu) * n) >> 32);
}

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
