/* SPDX-License-Identifier: MIT */
/*
 * split/split.h — static analysis of a model, the executor cost model and its calibration
 * profile, the exact planner for chains, and the plan file the host loads.
 *
 * Depends on exec/, kernels/, model/ and protocol/ only: whatever needs the NIC firmware (the
 * emulator's timing) is passed in by the caller (cli/, lab/) as plain numbers; which ops the NIC
 * can run is exec/kexec.h's rule.
 *
 * Executors: CPU (always), GPU (when the profile says one is present), NIC (binary dense layers
 * and the sign / threshold / bias / batch-norm that fold into them, as a trailing part of the
 * model: the NIC answers the front-end, so its stage is the last one).
 */
#ifndef SPLIT_H
#define SPLIT_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>

#include "kernels/kern.h"

enum split_exec { SPLIT_EX_CPU = 0, SPLIT_EX_GPU = 1, SPLIT_EX_NIC = 2, SPLIT_EX__COUNT };

#define SPLIT_EXM(e) (1u << (e))

const char *split_exec_name(unsigned e);
/* enum split_exec from "cpu", "gpu", "nic"; -1 if unknown. */
int split_exec_from_name(const char *name);

/* ---- static analysis ---------------------------------------------------------------------- */

/*
 * One interchange layer (arch.json) with its output shape and costs. Extension (analysis only,
 * see docs/split-planning.md): conv takes an optional "groups" (default 1; Caffe's grouped
 * convolution, in and out channels divisible by it). The converter does not accept it.
 */
struct split_layer {
	uint32_t type;	  /* enum model_src_type */
	uint32_t flags;	  /* MODEL_SF_* */
	uint32_t c, h, w; /* output shape; a flat vector is (n,1,1) */
	uint32_t kernel, stride, pad, groups;
	uint64_t elems;	       /* output elements */
	uint64_t params;       /* real-valued parameters in weights.npz */
	uint64_t weight_bytes; /* at the layer's storage: 1 bit per binary weight, else 4 bytes */
	uint64_t ops;	       /* MACs (float weights) or bit-ops (binary weights) */
	uint32_t exec_mask;    /* SPLIT_EXM() of the executors that can run it */
};

struct split_arch {
	char name[MODEL_NAME_MAX];
	struct model_shape input; /* fmt U8 or F32 */
	uint32_t n;
	struct split_layer *l;
};

/* Bytes of `elems` elements at f32, fp16, int8 and packed bits (whole 64-bit words). */
static inline uint64_t split_bytes_f32(uint64_t elems)
{
	return elems * 4;
}
static inline uint64_t split_bytes_fp16(uint64_t elems)
{
	return elems * 2;
}
static inline uint64_t split_bytes_int8(uint64_t elems)
{
	return elems;
}
static inline uint64_t split_bytes_bits(uint64_t elems)
{
	return (elems + 63) / 64 * 8;
}

/*
 * Parse arch.json with the converter's parser (model_ic_load_arch, model/ic.h: the same checks
 * and messages, plus "groups") and compute every layer's shape and costs. NIC support: the ops the
 * compiler's shape-only pass (model_compile_shapes) lowers the layers to, asked kexec_nic_first(),
 * as split_arch_from_model asks it of a model file; none where the compiler refuses the
 * architecture. Returns 0, or -EINVAL / -ENOMEM with a message naming the file, layer and field in
 * err.
 */
int split_arch_load(const char *path, struct split_arch *a, char *err, size_t errlen);

/*
 * The same analysis from a loaded model file. nic_first_op is kexec_nic_first(m) (m->n_layers
 * if none): the layers its ops implement are marked NIC-runnable.
 */
int split_arch_from_model(const struct model *m, uint32_t nic_first_op, struct split_arch *a,
			  char *err, size_t errlen);
void split_arch_free(struct split_arch *a);

/* ---- calibration profile ------------------------------------------------------------------ */

/*
 * A profile is a text file of "key = value" lines ('#' starts a comment); unknown keys are an
 * error, absent keys keep their defaults. Every key, its unit and its meaning is in the table
 * of split/profile.c (printed by `splitnic calibrate --keys`). Times are seconds, rates per
 * second, sizes bytes.
 */
enum split_pkey {
	SPLIT_P_CPU_OP,	       /* s, fixed cost of one op */
	SPLIT_P_CPU_F64_MACS,  /* MAC/s, float conv/dense compute */
	SPLIT_P_CPU_BIN_OPS,   /* bit-op/s, binary dense/conv on BITS */
	SPLIT_P_CPU_U8_OPS,    /* bit-op/s x 8 planes: binary dense on u8 (per MAC) */
	SPLIT_P_CPU_ELEM,      /* elements/s, element-wise ops */
	SPLIT_P_CPU_CACHE,     /* bytes, weights up to this live in cache */
	SPLIT_P_CPU_BW_CACHE,  /* B/s, weight streaming from cache */
	SPLIT_P_CPU_BW_DRAM,   /* B/s, weight streaming from DRAM */
	SPLIT_P_GPU_PRESENT,   /* 0/1 */
	SPLIT_P_GPU_OP,	       /* s, launch cost of one op */
	SPLIT_P_GPU_F64_MACS,  /* MAC/s */
	SPLIT_P_GPU_BIN_OPS,   /* bit-op/s */
	SPLIT_P_GPU_ELEM,      /* elements/s */
	SPLIT_P_GPU_BW,	       /* B/s, device memory */
	SPLIT_P_GPU_MEM,       /* bytes, device memory for weights */
	SPLIT_P_GPU_STAGE,     /* s, fixed cost of a GPU stage (sync) */
	SPLIT_P_PCIE_BW,       /* B/s, host <-> GPU copies */
	SPLIT_P_PCIE_LAT,      /* s, per copy */
	SPLIT_P_NIC_LAYER,     /* s, per binary layer on the chain (START/END round trip) */
	SPLIT_P_NIC_NWORD,     /* s, per neuron x input word */
	SPLIT_P_NIC_NEURON,    /* s, per neuron */
	SPLIT_P_NIC_STAGE,     /* s, fixed: request rx + tx and the dispatcher's finish */
	SPLIT_P_NIC_MEM,       /* bytes, EMEM for weights */
	SPLIT_P_LINK_GBPS,     /* Gbit/s, host <-> NIC link (overridden by --link-gbps) */
	SPLIT_P_LINK_PKT,      /* s, per datagram on the link (rx/tx descriptors, doorbells) */
	SPLIT_P_LINK_OVERHEAD, /* bytes, per datagram on the wire (Ethernet + IP + UDP) */
	SPLIT_P_PAYLOAD,       /* bytes, UDP payload per datagram */
	SPLIT_P_SER_PKT,       /* s, build one datagram (protocol fragmenter) */
	SPLIT_P_SER_BYTE,      /* s, per data byte serialized */
	SPLIT_P_DESER_PKT,     /* s, parse + reassemble one datagram */
	SPLIT_P_DESER_BYTE,    /* s, per data byte reassembled */
	SPLIT_P_PACK_ELEM,     /* s, per element: bits to/from the wire's C-major order */
	SPLIT_P_QUANT_ELEM,    /* s, per element: f64 -> f32/fp16/int8 and back */
	SPLIT_P_PATH_FIXED,    /* s, packet path: a request's round trip outside every server */
	SPLIT_P_PATH_NIC,      /* s, the same when the NIC answers alone (stand-alone) */
	SPLIT_P_HOST_REQ,      /* s, packet path: the host core's own work per request */
	SPLIT_P_HOST_QUEUE,    /* requests, packet path: the host's bounded queue */
	SPLIT_P_NIC_WINDOW,    /* requests, packet path: ACTIVATIONs in flight at most */
	SPLIT_P_LINK_LIMIT,    /* bytes, packet path: the link's queue (tc tbf limit) */
	SPLIT_P_LINK_BURST,    /* bytes, a token bucket's depth on the link (0: a plain wire) */
	SPLIT_P_HOST_SCALE,    /* packet path: host core time per second of in-process compute */
	SPLIT_P_NIC_SCALE,     /* packet path: NIC stage time per second of its chain's own time */
	SPLIT_P_NIC_EXECS,     /* executors of the NIC's chain (splitnic-nic --executors) */
	SPLIT_P_NIC_EMU,       /* 0/1: the NIC's platform is emu (its chain's time is modeled) */
	SPLIT_P_SYS_S,	       /* s, packet path: the machine's work per request outside compute */
	SPLIT_P_PATH_COPROC, /* s, packet path: what a co-processor request adds to path.fixed_s */
	SPLIT_P_CAL_TIME,    /* s since the epoch: when the packet path was calibrated (0: never) */
	SPLIT_P_CAL_SPREAD,  /* relative spread of the calibration's rounds */
	SPLIT_P_POLL_WAKE,   /* s, how late a sleeping lcore's timer wakes it (measured) */
	SPLIT_P_POLL_HOST,   /* s, splitnic-host's longest idle sleep (0: busy-polls) */
	SPLIT_P_POLL_NIC,    /* s, splitnic-nic's longest idle sleep (0: busy-polls) */
	SPLIT_P_HOST_CURVE,  /* s, the service the host curves' excess is counted in (0: each's) */
	SPLIT_P_SYS_FRAMES,  /* the sys wait of a request of F frames: x (F / 4)^this (measured) */
	SPLIT_P_SYS_FRAME,   /* s, sys work per frame beyond 4 (< 0: sys.s / 4, in proportion) */
	SPLIT_P__COUNT
};

/*
 * Load curves (split/queue.c), measured by `splitnic calibrate --packet` at the utilisations of
 * the grid (`curve.u`, increasing): for each kind of server on the packet path (sys: the
 * machine's per-request work outside compute, i.e. front-end, kernel and the servers' packet
 * handling; host: splitnic-host's core; nic: the NIC's chain), the p50 and p99 of what a request
 * spends at it beyond its own compute, in units of that server's service time, and the share of
 * the requests that pass it (answered; for the NIC's window, the share that falls back instead).
 */
#define SPLIT_GRID_MAX 12

enum split_curve {
	SPLIT_CV_SYS_P50,
	SPLIT_CV_SYS_P99,
	SPLIT_CV_SYS_ANS,
	SPLIT_CV_HOST_P50,
	SPLIT_CV_HOST_P99,
	SPLIT_CV_HOST_ANS,
	SPLIT_CV_NIC_P50,
	SPLIT_CV_NIC_P99,
	SPLIT_CV_NIC_FB,
	SPLIT_CV__COUNT
};

struct split_profile {
	double v[SPLIT_P__COUNT];
	uint32_t n_grid;
	double grid[SPLIT_GRID_MAX];
	double curve[SPLIT_CV__COUNT][SPLIT_GRID_MAX];
};

struct split_pkey_info {
	const char *key, *unit, *what;
};

void split_profile_default(struct split_profile *p);
const struct split_pkey_info *split_pkey_info(unsigned k);
/* The key of curve c ("curve.host.p50", ...) and what it holds. */
const struct split_pkey_info *split_curve_info(unsigned c);
/*
 * Curve c at utilisation u: linear between the grid's points, the first point's value below
 * it; beyond the last point a p50/p99 stays at its last value (the queue is full) and a share
 * follows the fluid limit (answered x last / u; fallback 1 - (1 - last) x last / u).
 */
double split_curve_at(const struct split_profile *p, unsigned c, double u);
/* Read / write a profile file. 0 or -errno / -EINVAL (message names the line) in err. */
int split_profile_load(const char *path, struct split_profile *p, char *err, size_t errlen);
/* The same from an open stream; `label` names it in messages. */
int split_profile_read(FILE *f, const char *label, struct split_profile *p, char *err,
		       size_t errlen);
int split_profile_save(const char *path, const struct split_profile *p, const char *comment);

/* ---- wire formats at a cut ---------------------------------------------------------------- */

/* Formats an activation may cross a cut in (protocol/proto.h numbering). */
enum split_fmt {
	SPLIT_FMT_U8 = 1,
	SPLIT_FMT_F32 = 2,
	SPLIT_FMT_FP16 = 3,
	SPLIT_FMT_INT8 = 4,
	SPLIT_FMT_BITS = 5,
	SPLIT_FMT_F64 = 6,
};

const char *split_fmt_name(unsigned fmt);
int split_fmt_from_name(const char *name);
/* Data bytes of n elements in fmt. */
uint64_t split_fmt_bytes(unsigned fmt, uint64_t n);
/*
 * Is fmt exact for an activation held in kern format kfmt? BITS->bits, U8->u8, F32->f32 and
 * F64->f64 are; F64 -> f32 / fp16 / int8 change values (even f32 can turn a tiny negative into
 * -0.0, which sign() maps to +1), so they are approximate.
 */
bool split_fmt_exact(uint32_t kfmt, unsigned fmt);

/* ---- the planner -------------------------------------------------------------------------- */

#define SPLIT_MAX_OPS 4096

enum split_objective {
	SPLIT_OBJ_LATENCY = 0,	  /* sum of every stage and every cut; under load: the p50 */
	SPLIT_OBJ_THROUGHPUT = 1, /* the slowest stage or cut (a pipeline's bottleneck) */
	SPLIT_OBJ_P99 = 2,	  /* under load: the p99 (without load the same as latency) */
};

const char *split_objective_name(unsigned obj);
/* enum split_objective from "latency", "throughput", "p99"; -1 if unknown. */
int split_objective_from_name(const char *name);

/*
 * A chain problem: n ops in order over n_exec executors. Costs in seconds; INFINITY in op[i][e]
 * means e cannot run op i. A plan is a sequence of stages (executor, contiguous op range) that
 * covers [0, n); each executor runs at most one stage (an executor loads one layer range), its
 * stage's weights must fit mem[e], a stage on e may start at op i only if start_ok[i] has e's
 * bit, and a terminal executor's stage must be the last.
 *
 * cut[i][a][b] is the cost of moving the activation before op i from executor a to b (a != b;
 * i = 0: the model input, held by executor `origin`), with fmt[i][a][b] the format it uses
 * (the cost model picks the cheapest allowed one).
 *   latency:    stage_cost[e] + sum op[i][e] per stage, plus every cut, summed;
 *   throughput: the maximum over the stages (same sum) and the cuts, each on its own.
 */
struct split_problem {
	uint32_t n, n_exec, origin;
	double (*op)[SPLIT_EX__COUNT];
	uint64_t (*wbytes)[SPLIT_EX__COUNT];
	uint32_t *start_ok;
	double (*cut)[SPLIT_EX__COUNT][SPLIT_EX__COUNT];
	uint8_t (*fmt)[SPLIT_EX__COUNT][SPLIT_EX__COUNT];
	double stage_cost[SPLIT_EX__COUNT];
	uint64_t mem[SPLIT_EX__COUNT];
	bool terminal[SPLIT_EX__COUNT];
	uint32_t objective; /* enum split_objective */
};

/* Arrays of p sized for n ops (zeroed; op costs set to INFINITY, start_ok to all). */
int split_problem_alloc(struct split_problem *p, uint32_t n, uint32_t n_exec);
void split_problem_free(struct split_problem *p);

struct split_stage {
	uint32_t exec, first, last; /* ops [first, last) */
	uint32_t fmt_in;	    /* format of the cut into it; 0 when it holds the input */
	double compute, cut_in;	    /* predicted seconds */
};

struct split_plan {
	uint32_t n_stages;
	struct split_stage stage[SPLIT_EX__COUNT];
	double cost; /* the objective's value */
	double latency;
};

/* The exact optimum by dynamic program over (op, executor, executors used). -ENOENT if no plan
 * is feasible. */
int split_plan_solve(const struct split_problem *p, struct split_plan *out);
/* The same by exhaustive search over every assignment (for tests; n_exec^n plans). */
int split_plan_exhaustive(const struct split_problem *p, struct split_plan *out);
/* Value of a given plan under p; INFINITY if it breaks a constraint. Fills the stage costs. */
double split_plan_eval(const struct split_problem *p, struct split_plan *plan);

/* ---- the cost model for a model ----------------------------------------------------------- */

struct split_opts {
	double link_gbps;   /* <= 0: the profile's */
	uint32_t objective; /* enum split_objective */
	bool allow_approx;  /* allow f32/fp16/int8 cuts of float activations */
	uint32_t exec_mask; /* executors to plan over (CPU always) */
	uint32_t nic_first; /* kexec_nic_first(m): ops [nic_first, n) are NIC-runnable */
	bool packet;	    /* predict the packet path (see split_plan_pipeline), not in process */
	double load_rps;    /* offered load in requests/s (Poisson); 0: no queueing */
	/* seconds of each op of the model on the CPU as measured on this machine (one image, the
	 * median of timed runs), or NULL: the profile's model of them (split_op_cost) */
	const double *cpu_op_s;
	/* seconds of the NIC's chain from op k to the end, for k in [0, n] (NAN where the NIC
	 * cannot start; [n] = 0): the NIC platform's own time of that part (emu: the emulator's
	 * steady-state modeled time; lcore: the ops' in-process time), or NULL: the profile's
	 * per-op model (split_op_cost) */
	const double *nic_suffix_s;
	/* under load: the share of the offered requests a plan must answer to be chosen on latency
	 * (plans below it rank by the share they answer); 0: none */
	double min_answered;
};

/* Predicted seconds of op i of m on executor e under profile pr (INFINITY if unsupported). */
double split_op_cost(const struct model *m, uint32_t i, unsigned e, const struct split_profile *pr,
		     uint32_t nic_first);
/* Predicted seconds of moving `elems` elements in fmt over the host <-> NIC link. */
double split_link_cost(const struct split_profile *pr, double link_gbps, unsigned fmt,
		       uint64_t elems, bool repack);
/* Datagrams and wire bytes for a data section of `bytes` (ACTIVATION header, payload). */
uint32_t split_link_packets(const struct split_profile *pr, uint64_t bytes);

/*
 * split_link_cost in its three parts, by who spends them: the sender's core (pack, build the
 * datagrams), the link (per-datagram cost and the bytes on the wire at link_gbps, headers
 * included) and the receiver's core (parse, reassemble, unpack). hdr: the message's header
 * length in each datagram (PROTO_ACT_HDR_LEN for an ACTIVATION).
 */
struct split_xfer {
	double send, wire, recv;
	uint32_t pkts;
	uint64_t wire_bytes; /* on the wire: data, headers, link.overhead_bytes per datagram */
};
void split_link_parts(const struct split_profile *pr, double link_gbps, unsigned fmt,
		      uint64_t elems, bool repack, uint32_t hdr, struct split_xfer *x);

/*
 * Build the chain problem for m: op costs per executor from the profile, NIC support from
 * o->nic_first (a NIC stage may start at a FLATTEN or binary op at or after it; on the packet
 * path only where kexec_nic_handoff_ok), weight bytes per executor (NIC: packed records), cut
 * costs with the cheapest allowed format.
 */
int split_problem_from_model(struct split_problem *p, const struct model *m,
			     const struct split_profile *pr, const struct split_opts *o);

/* ---- under load: queueing at each stage (split/queue.c) ---------------------------------- */

/*
 * How a server waits. SPLIT_SRV_QUEUE: a FIFO single server fed by Poisson arrivals
 * (Pollaczek-Khinchine, below): links, and every stage in process. SPLIT_SRV_HOST,
 * SPLIT_SRV_NIC: a stage of the packet path, whose waits and refusals follow the profile's
 * measured curves for that kind of server (split_curve_at) at its utilisation rps x s.
 */
enum split_srv_kind {
	SPLIT_SRV_QUEUE = 0,
	SPLIT_SRV_HOST = 1,
	SPLIT_SRV_NIC = 2,
	SPLIT_SRV_LINK = 3, /* a packet path's link ("link-up", "link-down"): a QUEUE that drops
			     * what exceeds its rate (tc tbf's bounded queue) */
};

/*
 * A stage as a single server at rps requests/s: service time s seconds (what it holds its core
 * or link for per request; rho = rps * s), own: the part of its delay that is the request's own
 * work at no load (its compute; a QUEUE server's is s), with squared coefficient of variation
 * cs2 (QUEUE: 0 deterministic, as a stage that runs the same ops on every request), and room
 * for at most cap requests waiting or in service (0: unbounded; a full queue refuses, as
 * splitnic-host answers ERROR busy).
 * head: for a link shaped by a token bucket (rate r, depth b bytes), b / r: the bucket lets a
 * request through that much ahead of a plain wire of rate r, so its delay is
 * max(0, s + wait - head) (0 for a wire or a core).
 */
struct split_server {
	const char *name;
	double s, cs2, head, own;
	uint32_t cap;
	uint32_t kind; /* enum split_srv_kind */
};

/*
 * Mean wait before service: Pollaczek-Khinchine (M/G/1), rho s (1 + cs2) / (2 (1 - rho)).
 * A bounded queue caps it at (cap - 1) s, which is also the wait at rho >= 1 (the queue stays
 * full; the excess is refused); unbounded at rho >= 1: INFINITY.
 */
double split_wait_mean(const struct split_server *v, double rps);
/*
 * Wait quantile q in (0, 1): no wait with probability 1 - rho, else an exponential tail with
 * the P-K mean, P(W > t) = rho exp(-rho t / E[W]) (exact for M/M/1; the usual heavy-traffic
 * approximation of M/G/1): t_q = E[W] / rho ln(rho / (1 - q)) when rho > 1 - q, else 0.
 * Capped as the mean.
 */
double split_wait_quantile(const struct split_server *v, double rps, double q);

/*
 * Adaptive polling (dpdk/idle.h): the mean wait of a frame for an lcore whose longest sleep is
 * sleep_max seconds (0: it busy-polls), each wake `late` seconds after the sleep asked for, when
 * the gap since the lcore's last work is min(d, X), X exponential at `rate` a second (the other
 * requests' work; d: this request's own previous visit, INFINITY for none). rate 0 and no d: 0.
 */
double split_poll_wait(double sleep_max, double late, double rate, double d);

/*
 * A host stage's p50 (p99) excess beyond its own time at utilisation u, s seconds its service,
 * cap its queue: the host curve in s, up to host.curve_s (the service the calibration's host
 * series had). A longer stage adds its own queue beyond that, M/D/1 (its compute takes the same
 * time every time), not the calibration's excess scaled up: measured on a 2-vCPU AMD EPYC at
 * utilisation 0.7 (2026-11-29), the CIFAR CNN's 478 us stage waited 220-345 us, 0.5-0.7 of its
 * service, where the calibration's 83 us stage waited 3.3 of its (priced in its service times
 * the model said 2.2 times the measured p50). host.curve_s 0 (a profile from before): s always.
 */
double split_host_excess(const struct split_profile *pr, bool p99, double s, double u,
			 uint32_t cap);

/*
 * The packet path's work for a request of `frames` frames (sys.s for a calibration request's 4,
 * sys.frame_s for each further one; sys.frame_s < 0: sys.s / 4 each) and the service its wait
 * counts in (sys.s x (frames / 4)^sys.frames_exp); both 0 for no frames (in process).
 */
void split_sys_service(const struct split_profile *pr, double frames, double *work, double *wait);

#define SPLIT_MAX_SERVERS 8

/*
 * A plan as a tandem of servers and a fixed delay that no server holds (wires, kernel hops).
 * pr: the profile whose curves the HOST and NIC servers follow (NULL in process).
 * sys_s: the packet path's work per request outside every stage (sys.s for the 4 frames of a
 * calibration request, sys.frame_s for each further frame: its own server, its utilisation
 * read on the sys curves; 0 in process);
 * sys_w: the service the sys curves' excess counts in (sys.s x (frames / 4)^sys.frames_exp).
 * fb: splitnic-host's fallback (host/host.h): a request that the NIC's window turns away is
 * finished on the host instead: s_back more on server `host` (own_back of it its compute), and
 * it skips server `nic`. standalone: the NIC answers the REQUEST itself, its queue refuses what
 * it cannot take (no fallback).
 */
struct split_pipeline {
	uint32_t n;
	struct split_server srv[SPLIT_MAX_SERVERS];
	double fixed, sys_s, sys_w;
	double frames; /* the frames a request makes through the path (packet path) */
	const struct split_profile *pr;
	bool standalone;
	struct {
		bool on;
		uint32_t host, nic; /* server indices */
		double s_back;	    /* the NIC's ops on the host's CPU, and its RESPONSE, less the
				     * ACTIVATION it does not send */
		double own_back;    /* of which the request's own compute */
		/* wire times a request the NIC answers trades for one the host finishes: the
		 * completion notice up (none), the ACTIVATION down (the RESPONSE instead) */
		double up_notice, down_act, down_resp;
	} fb;
};

/*
 * End-to-end at rps (MODELED).
 * In process (no pr): each quantile (and the mean) is the fixed delay plus, over the servers,
 * max(0, s + that server's wait quantile - head): exact when one server holds all the waiting
 * (the bottleneck near saturation), an upper bound otherwise; throughput min(rps, 1 / s of the
 * bottleneck).
 * Packet path (pr): the sys server at u = rps x sys_s, each HOST or NIC server at its
 * utilisation, the links as queues; each quantile is the fixed delay plus every server's own
 * time plus its curve's excess (in its service times) at its utilisation. Shares: the sys and
 * host curves say what is answered (the rest is refused: ERROR busy, or lost); the NIC's
 * fallback curve at the utilisation offered to it says what the host finishes itself (that
 * work is added to the host's service, found by a fixed point), and so does the host's window
 * (the NIC's server's cap) by Little's law: at most cap ACTIVATIONs out for the NIC path's
 * mean round trip (down the link, the NIC, the notice up behind the link's queue), so the NIC
 * answers at most cap / round trip a second; a request the host finishes sends its RESPONSE
 * down the link instead of an ACTIVATION and no notice comes up for it; stand-alone, what the
 * NIC's queue refuses. With a fallback each quantile is that of the mixture of the two paths (each
 * a log-normal through its p50 and p99), found by bisection.
 */
struct split_load_pred {
	double rps;
	double mean, p50, p99; /* seconds, of the answered requests */
	double throughput;     /* responses/s */
	double rho_max;	       /* the bottleneck's utilisation */
	uint32_t bottleneck;   /* index of the server with the largest rho; n: the sys server */
	double answered;       /* share of the offered requests answered */
	double by_nic;	       /* share answered by the NIC's stage */
	double fallback;       /* share finished on the host by the fallback */
	double shed;	       /* share not answered (1 - answered) */
	double rho[SPLIT_MAX_SERVERS + 1]; /* each server's utilisation; [n]: the sys server's */
};
void split_pipeline_predict(const struct split_pipeline *pl, double rps,
			    struct split_load_pred *out);

/*
 * The largest offered load (requests/s) at which pl is MODELED to answer at least min_answered
 * of what is offered: in process 1 / the slowest server's service time; on the packet path by
 * bisection over split_pipeline_predict (its fallback, links and curves included). Every
 * capacity the verbs print is this one with SPLIT_CAPACITY_ANSWERED; so is the throughput
 * split_pipeline_predict reports at rps 0.
 */
#define SPLIT_CAPACITY_ANSWERED 0.99
double split_pipeline_capacity(const struct split_pipeline *pl, double min_answered);

/*
 * The servers of a plan (its stages' compute from split_plan_eval on the problem of m):
 *   in process (!o->packet): one QUEUE server per stage (compute; an incoming cut's sender part
 *   on the previous stage, its link part on a "link" server, its receiver part on the stage);
 *   the packet path (o->packet): the request arrives at the NIC and, unless the NIC runs the
 *   whole model, crosses the link up to the host ("link-up": the REQUEST's datagrams, and the
 *   NIC's completion notice when a NIC stage follows); the host core ("host", HOST: own = its
 *   CPU stage, the REQUEST's receiver part and the sender part of the cut to the NIC or of the
 *   RESPONSE; s = host.req_s + host.scale x own) with a queue of host.queue; a GPU stage ("gpu",
 *   PCIe in, a QUEUE); "link-down": the ACTIVATION to the NIC, or the RESPONSE when the host
 *   answers; the NIC ("nic", NIC: its chain's time T and the cut's receiver part,
 *   s = own = nic.stage_s + nic.scale x T) with a queue of nic.window; links with a queue of
 *   link.limit_bytes and a head of link.burst_bytes at the link rate. fixed: path.fixed_s
 *   (+ path.coproc_s with a NIC stage after the host; path.nic_s when the NIC runs the whole
 *   model: the request never crosses the link). sys_s: sys.s + sys.frame_s x (the request's
 *   frames - 4) (a plain request and its RESPONSE through the NIC to the host and back make 4;
 *   sys.frame_s < 0: sys.s / 4); its wait,
 *   sys_w: sys.s x (frames / 4)^sys.frames_exp. A host stage
 *   followed by the NIC gets the fallback (fb): the NIC's ops on the CPU (the problem's op
 *   costs).
 * -EINVAL if the plan breaks the problem's constraints.
 */
int split_plan_pipeline(const struct split_problem *p, const struct model *m,
			const struct split_profile *pr, const struct split_opts *o,
			const struct split_plan *plan, struct split_pipeline *pl);

/*
 * How plans rank under load, for the planner, plan's ranking and the sweeps' ranking alike:
 * goodput first (a plan MODELED to answer at least o->min_answered beats every plan below it;
 * below it, the larger share), then stability (a plan whose every stage is MODELED below
 * saturation, utilisation < 1, beats one that answers only through its overflow: a saturated
 * NIC stage answers the rest by the host's fallback, its window's requests wait up to a
 * window of services, and what a saturated NIC takes from the cores it shares is not in the model),
 * then the objective's value. Predictions closer than the model tells apart are ties (both answer
 * enough, are equally stable and their values are within SPLIT_TIE_REL, or both fall short by
 * shares within SPLIT_TIE_SHARE), and a tie goes to the simpler plan: fewer stages, then the
 * less loaded bottleneck.
 */
#define SPLIT_TIE_REL	0.03
#define SPLIT_TIE_SHARE 0.01
struct split_rank_key {
	double shortfall; /* 0 when the plan answers min_answered, else 1 - its share */
	bool saturated;	  /* a stage's utilisation >= 1 */
	double value;	  /* the objective's: p50, p99 or the bottleneck's service time */
	double next;	  /* the second key: the bottleneck's service time, or the p50 */
	double rho;	  /* the bottleneck's utilisation */
	uint32_t stages;
};
/* The slowest server's service time (s): the throughput objective's value. */
double split_pipeline_smax(const struct split_pipeline *pl);
void split_rank_key(const struct split_opts *o, const struct split_load_pred *pr, double smax,
		    uint32_t stages, struct split_rank_key *k);
/* Strictly better: the keys in order, no tolerance. */
bool split_rank_before(const struct split_rank_key *a, const struct split_rank_key *b);
/* a within the model's resolution of best (best ranks first strictly). */
bool split_rank_tied(const struct split_rank_key *a, const struct split_rank_key *best);
/* Ties broken: a is simpler than b (fewer stages, then a less loaded bottleneck). */
bool split_rank_simpler(const struct split_rank_key *a, const struct split_rank_key *b);
/* order[0..n): the indices of k[] ranked: strictly, then the tie's winner moved first. */
void split_rank_order(const struct split_rank_key *k, uint32_t n, uint32_t *order);

/*
 * The best plan of p for m under o->load_rps and o->objective, by enumerating every feasible
 * plan (each executor at most one stage, the NIC last; O(n^(E-1)) plans, prefix sums make each
 * one O(E)): goodput first (a plan predicted to answer at least o->min_answered of the offered
 * requests beats every plan that answers less; among those below it, the larger share wins),
 * then latency minimises the predicted p50, p99 the p99, throughput the bottleneck's service
 * time (then the p50), ties to the simpler plan (split_rank_key). plan->cost is the objective's
 * value (seconds; for throughput the bottleneck's service time), plan->latency the p50. -ENOENT if
 * none is feasible, -E2BIG beyond SPLIT_ENUM_MAX plans.
 */
#define SPLIT_ENUM_MAX 50000000u
int split_plan_solve_load(const struct split_problem *p, const struct model *m,
			  const struct split_profile *pr, const struct split_opts *o,
			  struct split_plan *out, struct split_load_pred *pred);

/* ---- the plan file ------------------------------------------------------------------------ */

/*
 * Text, one record per line:
 *
 *   splitnic-plan 1
 *   model NAME HASH N_OPS        HASH: FNV-1a 64 of the model file, 16 hex digits
 *   objective latency|throughput|p99
 *   link_gbps X
 *   load_rps X                   optional: the offered load planned for (0 or absent: none)
 *   predicted_us X               the objective's value (MODELED)
 *   measured_p50_us X            optional (plan --measure): the plan's MEASURED p50, p99 and
 *   measured_p99_us X            answered share over the packet path at load_rps
 *   measured_answered X
 *   stage EXEC FIRST LAST FMT_IN one per stage, in order: executor (cpu|gpu|nic), ops
 *                                [FIRST, LAST), format of the activation it receives (u8,
 *                                f32, fp16, int8, bits, f64; "-" for the stage holding the input)
 *
 * The stages cover [0, N_OPS) without gaps. The host checks NAME, HASH and N_OPS against the
 * model it loaded and refuses a plan made for another.
 */
uint64_t split_model_hash(const struct model *m);
int split_plan_save(const char *path, const struct model *m, const struct split_plan *plan,
		    const struct split_opts *o, double link_gbps);
/* The MEASURED figures a plan file may carry (plan --measure). */
struct split_plan_figures {
	bool measured;
	double p50_us, p99_us, answered;
};
int split_plan_save_figures(const char *path, const struct model *m, const struct split_plan *plan,
			    const struct split_opts *o, double link_gbps,
			    const struct split_plan_figures *fig);
int split_plan_load(const char *path, const struct model *m, struct split_plan *plan, char *err,
		    size_t errlen);
/* The same from an open stream; `path` names it in messages. */
int split_plan_read(FILE *f, const char *path, const struct model *m, struct split_plan *plan,
		    char *err, size_t errlen);

/* ---- an activation over the wire (the real protocol code) ---------------------------------- */

/*
 * Buffers for one ACTIVATION message of up to max_bytes of data in datagrams of `payload`
 * bytes, a pack buffer and a reassembly table; nothing is allocated afterwards. The activation
 * is in a model format (model/model.h): BITS (C,H,W) crosses as the protocol's C-major bits
 * (repacked both ways when H*W > 1), U8 as u8, F32 as f32, F64 as f64. NULL on bad sizes or no
 * memory.
 */
struct split_wire;
struct split_wire *split_wire_create(uint64_t max_bytes, uint32_t payload);
void split_wire_free(struct split_wire *w);
/* Pack + build + fragment; `layer` is the op where the receiver resumes. Datagrams or -errno. */
int split_wire_send(struct split_wire *w, const struct model_shape *s, const void *in,
		    uint32_t layer);
uint32_t split_wire_sent_packets(const struct split_wire *w);
uint64_t split_wire_sent_bytes(const struct split_wire *w); /* datagram bytes, headers included */
/* The in-process transfer: copy every datagram to the receive buffers. */
void split_wire_copy(struct split_wire *w);
/* Parse + reassemble the received datagrams and unpack into out (kern format s). 0 / -EPROTO. */
int split_wire_recv(struct split_wire *w, const struct model_shape *s, void *out);

/* ---- plots (gnuplot) ---------------------------------------------------------------------- */

/* gnuplot terminal for an output file: .png -> pngcairo, .svg -> svg; NULL for others. */
const char *split_plot_terminal(const char *out);
/* Run gnuplot on a script file. Returns 0, -ENOENT if gnuplot is missing, -EIO if it failed. */
int split_gnuplot(const char *script, char *err, size_t errlen);

#endif /* SPLIT_H */
