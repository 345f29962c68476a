/* SPDX-License-Identifier: MIT */
/*
 * exec/kexec.h — the one executor interface (docs/architecture.md, "Modules").
 *
 * Every executor (the CPU kernels, the GPU, the NIC emulator, the NIC on DPDK lcores, a NIC
 * reached over packets) is one implementation of struct kexec_ops, as ggml's backends are;
 * callers hold a struct kexec and never branch on which executor it is:
 *
 *   kexec_open(x, ops, conf)        init: the executor's own configuration (conf is the
 *                                   implementation's struct, NULL for defaults)
 *   kexec_load(x, m, first, last, max_batch)
 *                                   load ops [first, last) of m for batches of up to max_batch
 *                                   requests: weights placed, every buffer allocated
 *   kexec_submit(x, in, n, out, tag)
 *                                   queue n requests: in holds n * in_bytes bytes in
 *                                   layers[first].in's format, out receives n * out_bytes bytes
 *                                   in layers[last-1].out's format (scores: double[classes]);
 *                                   both stay the caller's and must not be touched until tag
 *                                   completes. -EBUSY when the queue is full.
 *   kexec_poll(x, done, max)        completions, in submission order (FIFO, non-preemptive:
 *                                   a batch runs to its end before the next starts)
 *   kexec_close(x)                  frees everything
 *
 * submit and poll allocate nothing, lock nothing and log nothing; one thread drives an
 * executor. Synchronous executors (CPU, GPU) compute in submit and complete at once.
 *
 * Capabilities (kexec_caps): the executor's kind, which op ranges of a model it can run
 * (kexec_can_run: the one question the planner, the sweep, the NIC chain and the host all ask)
 * and its memory limit. The NIC's rule is defined here once (kexec_nic_find, with the options a
 * NIC has; kexec_nic_op, kexec_nic_entry, kexec_nic_first for the executor chain): the trailing
 * run of a model's ops that the firmware's executor chain supports, entered at a flatten or a
 * binary dense op; over packets, only where the activation crosses as flat bits
 * (kexec_nic_handoff_ok).
 */
#ifndef EXEC_KEXEC_H
#define EXEC_KEXEC_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "kernels/kern.h"

#define KEXEC_FIFO	 64 /* outstanding submissions per executor; a power of two */
#define KEXEC_NOTE_MAX	 256
#define KEXEC_EXEC_NAMES "cpu|gpu|nic"

/* The kind of hardware an executor is: the planner's executors (split/split.h), same order. */
enum kexec_kind { KEXEC_KIND_CPU = 0, KEXEC_KIND_GPU = 1, KEXEC_KIND_NIC = 2, KEXEC_KIND__COUNT };

struct kexec_caps {
	uint32_t kind;	    /* enum kexec_kind */
	bool tail_only;	    /* its range must end at the model's last op (it answers the client) */
	uint64_t mem_bytes; /* weight bytes it can hold; 0: no limit */
	uint32_t max_batch; /* requests per submit */
};

struct kexec_done {
	uint64_t tag;
	int status; /* 0 or -errno */
};

struct kexec;

struct kexec_ops {
	const char *name;
	int (*init)(struct kexec *x, const void *conf, char *err, size_t errlen);
	int (*load)(struct kexec *x, const struct model *m, uint32_t first, uint32_t last,
		    uint32_t max_batch, char *err, size_t errlen);
	int (*submit)(struct kexec *x, const void *in, uint32_t n, void *out, uint64_t tag);
	/* Completions the executor finished since the last call, through kexec_complete(). */
	void (*progress)(struct kexec *x);
	void (*caps)(const struct kexec *x, struct kexec_caps *c);
	void (*close)(struct kexec *x);
};

/* An ops table in one line: KEXEC_OPS("name", init, load, submit, progress, caps, close). */
#define KEXEC_OPS(nm, in, ld, sub, prog, cap, cl)                                                  \
	{                                                                                          \
		.name = nm, .init = in, .load = ld, .submit = sub, .progress = prog, .caps = cap,  \
		.close = cl                                                                        \
	}

struct kexec {
	const struct kexec_ops *ops;
	void *priv;
	const struct model *m;
	uint32_t first, last, max_batch;
	uint32_t in_bytes, out_bytes; /* per request */
	uint32_t head, tail;	      /* completion FIFO, masked by KEXEC_FIFO - 1 */
	uint32_t pending;	      /* submitted, not yet polled */
	struct kexec_done fifo[KEXEC_FIFO];
	uint64_t submitted, completed, errors;
	uint64_t fallback_reqs;	   /* requests run elsewhere than asked (a GPU stage on the CPU) */
	char note[KEXEC_NOTE_MAX]; /* start-up message ("" if none), e.g. why it fell back */
};

/* init; 0 or -errno with a message in err (x is closed on failure). */
int kexec_open(struct kexec *x, const struct kexec_ops *ops, const void *conf, char *err,
	       size_t errlen);
/* load ops [first, last) of m (m outlives x); 0 or -EINVAL/-ENOMEM/-ENODEV with a message. The
 * range is checked against kexec_can_run() first. */
int kexec_load(struct kexec *x, const struct model *m, uint32_t first, uint32_t last,
	       uint32_t max_batch, char *err, size_t errlen);
/* 0, -EBUSY (the FIFO is full, or the executor's own queue), or -EINVAL (n not in
 * 1..max_batch, nothing loaded). */
int kexec_submit(struct kexec *x, const void *in, uint32_t n, void *out, uint64_t tag);
/* Up to max completions, oldest first; returns how many. */
uint32_t kexec_poll(struct kexec *x, struct kexec_done *done, uint32_t max);
/* submit then poll until it completes: 0 or its status (for tools and tests). */
int kexec_run(struct kexec *x, const void *in, uint32_t n, void *out);
void kexec_close(struct kexec *x);
void kexec_get_caps(const struct kexec *x, struct kexec_caps *c);

/* For implementations: record a completion (FIFO order is the caller's to keep). */
void kexec_complete(struct kexec *x, uint64_t tag, int status);

/* ---- capabilities: defined once ---------------------------------------------------------- */

const char *kexec_kind_name(unsigned kind);
/* enum kexec_kind from "cpu", "gpu", "nic"; -1 if unknown. */
int kexec_kind_from_name(const char *name);

/*
 * The NIC capability rule. A NIC runs a trailing run of a model's ops, which is, front to back:
 *   prefix  (only with rule->f32_prefix) an f32 input binarized feature by feature:
 *           CAST [FLATTEN] [BIAS|BATCHNORM]* SIGN|THRESHOLD, the whole model from op 0
 *   chain   flattens of u8 or bits, and binary dense ops (BDENSE on bits, BDENSE_U8 on u8), each
 *           thresholded (MODEL_LF_THRESH) but the last
 *   tail    float BIAS/BATCHNORM on the last binary dense's scores (it is then unthresholded);
 *           with rule->any_tail any element-wise op on them: BIAS, BATCHNORM, RELU, SIGN,
 *           THRESHOLD, UNPACK, FLATTEN
 * The firmware's executor chain computes chain and tail (kexec_nic_chain: neither option); a
 * NIC that tabulates at load what lies outside the chain (the XDP program: a threshold per input
 * feature, a score table for the tail) asks with the options it has, and adds its own limits.
 */
struct kexec_nic_rule {
	bool f32_prefix; /* the prefix: per-input-feature thresholds */
	bool any_tail;	 /* any element-wise tail, after a thresholded last binary dense too */
};

extern const struct kexec_nic_rule kexec_nic_chain;

/* The run kexec_nic_find found; every index is m->n_layers where there is none. */
struct kexec_nic_run {
	uint32_t first;		      /* its first op (the longest run) */
	uint32_t sign;		      /* the prefix's SIGN or THRESHOLD */
	uint32_t bin_first, bin_last; /* its first and last binary dense op */
	/* An op that keeps the run from starting earlier: first - 1 (with f32_prefix on an f32
	 * input, the first op before first that is no part of a prefix); where there is no run,
	 * the op that ended the walk from the end. */
	uint32_t stop;
};

void kexec_nic_find(const struct model *m, const struct kexec_nic_rule *rule,
		    struct kexec_nic_run *run);
/* Can the NIC's executor chain run compiled op l (its op, input format and flags)? */
bool kexec_nic_op(const struct model_layer *l);
/* Can the NIC's part of a model start at op l (a flatten or a binary dense op)? */
bool kexec_nic_entry(const struct model_layer *l);
/* The first op of the run the executor chain can run (kexec_nic_chain; m->n_layers: none). */
uint32_t kexec_nic_first(const struct model *m);
/* Can an executor of `kind` run ops [first, last) of m? The NIC only a tail [first, n) that
 * starts at or after kexec_nic_first(m) on an entry op; the CPU and GPU any range. */
bool kexec_can_run(unsigned kind, const struct model *m, uint32_t first, uint32_t last);
/*
 * Where an ACTIVATION may start: can the NIC take m at op k over packets? k == 0: the NIC
 * answers the REQUEST itself (stand-alone), if it can run the whole model; else the host runs
 * ops [0, k) and the activation at k crosses as flat bits, a (c,1,1) bits tensor in the
 * protocol's C-major bit order (the ACTIVATION's only format), from which the NIC must be able
 * to run the rest (kexec_can_run). The host, the planner and the packet sweep ask this.
 */
bool kexec_nic_handoff_ok(const struct model *m, uint32_t k);
/*
 * The default split, one for every process (splitnic-nic's @K, splitnic-host's :coproc:K):
 * kexec_nic_first(m), moved past a flatten whose bits are not flat yet, so that the ACTIVATION
 * the host sends is the one the NIC's part expects. m->n_layers: the NIC runs none of m.
 */
uint32_t kexec_nic_split(const struct model *m);
/*
 * The ops at which the NIC's part of m may start, as words for a message: "8, 9, 10 or 12"
 * ("none" when there is none). handoff: only those an ACTIVATION can reach from the host
 * (kexec_nic_handoff_ok, op 0 left out), else every start the NIC can run (kexec_can_run).
 * Returns buf.
 */
const char *kexec_nic_starts(const struct model *m, bool handoff, char *buf, size_t len);

/* ---- a pipeline: stages run one after the other -------------------------------------------- */

#define KEXEC_PIPE_MAX 8

/*
 * Stages of one model on executors, each a contiguous op range starting where the previous one
 * ended, run in order on one thread: stage i's output is stage i+1's input, in the kern format
 * at that cut (model/model.h; bits cross as channel-packed words). Cut buffers for max_batch
 * requests are allocated by kexec_pipe_add; kexec_pipe_run allocates nothing.
 */
struct kexec_pipe {
	uint32_t n;
	struct kexec x[KEXEC_PIPE_MAX];
	uint8_t *buf[2];
	size_t buf_bytes;
};

/* Empty pipeline. */
void kexec_pipe_init(struct kexec_pipe *p);
/* Open and load the next stage: ops [first, last) of m on ops (conf for its init); first must
 * be where the previous stage ended (0 for the first). 0 or -errno with a message in err. */
int kexec_pipe_add(struct kexec_pipe *p, const struct kexec_ops *ops, const void *conf,
		   const struct model *m, uint32_t first, uint32_t last, uint32_t max_batch,
		   char *err, size_t errlen);
/* Run n requests through every stage: in at the first stage's input, out at the last's
 * output. 0 or the first failing stage's status. */
int kexec_pipe_run(struct kexec_pipe *p, const void *in, uint32_t n, void *out);
void kexec_pipe_fini(struct kexec_pipe *p);

/*
 * ---- implementations here: exec/cpu.c, exec/gpu.c --------------------------------------------
 * The NIC's are beside the NIC code they drive: nicfw/emu/exec_emu.h (the emulator),
 * nicfw/lcore/lcore.h (the chain on DPDK lcores), host/host.h (a NIC reached over packets).
 */

/* The CPU kernels (kern_forward_range). conf: NULL. */
extern const struct kexec_ops kexec_cpu_ops;

/*
 * The GPU (kernels/cuda/kcuda.h). conf: NULL. Without a usable GPU (or built without CUDA) the
 * stage runs on the CPU kernels: load() still succeeds, x->note says so in one line ("gpu: no
 * usable GPU (REASON): ops [a, b) run on the CPU kernels") and x->fallback_reqs counts every
 * request run that way.
 */
extern const struct kexec_ops kexec_gpu_ops;

#endif /* EXEC_KEXEC_H */
