/* SPDX-License-Identifier: MIT */
/*
 * nicfw/chain.h — the NIC firmware's inference path: a dispatcher and a static chain of
 * executors (toNIC's design), over the HAL of nicfw/hal.h.
 *
 * The NIC part of a model is the trailing run of ops the firmware supports (kexec_nic_first()):
 *   FLATTEN        of U8 (a no-op: the layout is already flat) or of BITS (repacked in CTM);
 *   BDENSE         BITS input, with MODEL_LF_THRESH (BITS out) or without (integer scores);
 *   BDENSE_U8      U8 input (bit-plane decomposition), the same two forms;
 *   BIAS/BATCHNORM on the integer scores of a last BDENSE without thresholds.
 * Its input is layers[first].in (U8 bytes or BITS words); its output, the response, is the
 * model's class scores as doubles, equal bit for bit to kern_forward()'s.
 *
 * Threads: 0 is the dispatcher, 1 + e is executor e (0 <= e < n_exec). For each binary layer
 * the dispatcher prepares the input in CTM and sends START to executor 0; each executor passes
 * START on, computes its contiguous slice of the layer's neurons (weights streamed from EMEM in
 * chunks of NICFW_CHUNK_WORDS, input read from CTM, XOR + popcount + threshold, output bits
 * OR-ed atomically into IMEM, or integer dots written to IMEM for the last layer) and, once it
 * has finished and has the END of its successor, sends END back. The dispatcher then moves the
 * results from IMEM to CTM for the next layer, or finishes: scores to doubles, bias and
 * batch-norm in double (the spec's order), response sent from IMEM. (In DIRECT, consecutive
 * executors on one core may run as a group: nicfw_chain_group.)
 *
 * Memory regions, in 64-bit words (nicfw_chain.need[]): EMEM holds the weights and thresholds
 * and the bias/batch-norm doubles; CTM the request payload and two activation buffers; IMEM the
 * layer outputs and the response.
 *
 * Two layouts of the same chain (enum nicfw_layout), chosen at nicfw_chain_init by the platform:
 *   RECORDS (the NFP's, platform emu): one EMEM record per neuron (the weight words, then with
 *     thresholds one word: thr in bits 0..31, flip in bit 32), streamed chunk by chunk through
 *     the HAL's read commands; a u8 input is split into bit-planes in CTM by the dispatcher.
 *   DIRECT (platforms whose memory is the executing core's, lcore: nicfw_map in hal.h): per
 *     binary stage the weight matrix [out][nw], then the thresholds (int32) and flips (u8), as
 *     kernels/kern_ops.h takes them; each executor runs its slice with the CPU's kern_ops table
 *     in one call (u8 inputs straight from the payload) into its own scratch in CTM, then ORs
 *     the slice's output words into IMEM. No per-chunk HAL call.
 * Both give kern_forward()'s scores bit for bit; the control flow (START down the chain, slices,
 * END back, the dispatcher between layers) is the same.
 */
#ifndef NICFW_CHAIN_H
#define NICFW_CHAIN_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "kernels/kern.h"
#include "kernels/kern_ops.h"
#include "nicfw/hal.h"

#define NICFW_MAX_EXEC	 256
#define NICFW_MAX_STAGES 64
/* One EMEM read: 16 x 32-bit read transfer registers per context in 8-context mode = 64 B. */
#define NICFW_CHUNK_WORDS 8

enum nicfw_layout {
	NICFW_LAYOUT_RECORDS = 0, /* per-neuron records streamed through read commands (NFP) */
	NICFW_LAYOUT_DIRECT = 1,  /* kernel layout, whole slices on mapped memory (cores) */
};

enum nicfw_stage_kind {
	NICFW_STAGE_FLATTEN_BITS = 1, /* dispatcher: pixel-major BITS -> flat, in CTM */
	NICFW_STAGE_BDENSE = 2,	      /* executors: BITS input */
	NICFW_STAGE_BDENSE_U8 = 3,    /* dispatcher builds bit-planes, executors use them */
	NICFW_STAGE_BIAS = 4,	      /* dispatcher, on the scores, in double */
	NICFW_STAGE_BATCHNORM = 5,    /* dispatcher, on the scores, in double */
};

struct nicfw_stage {
	uint32_t kind;	 /* enum nicfw_stage_kind */
	uint32_t op;	 /* index of the model op it runs */
	uint32_t n, out; /* binary layers: inputs and neurons; float stages: classes */
	uint32_t nw;	 /* binary layers: words per input vector (or per bit-plane) */
	uint32_t stride; /* binary layers: EMEM words per neuron record */
	bool thresh;
	uint32_t c, h, w;  /* FLATTEN_BITS input shape */
	uint64_t emem_off; /* weight records, or the doubles of BIAS (b) / BATCHNORM (4 rows) */
	uint64_t thr_off, flip_off; /* DIRECT, with thresholds: int32 thr[out], u8 flip[out] */
};

struct nicfw_chain {
	/* Configuration, fixed at nicfw_chain_init(). */
	uint32_t first;	 /* model op where the NIC part starts */
	uint32_t n_exec; /* executors in the chain */
	uint32_t n_stages;
	uint32_t layout; /* enum nicfw_layout */
	struct nicfw_stage stage[NICFW_MAX_STAGES];
	const struct kern_bin_ops *ops; /* DIRECT: the CPU's kernel table */
	uint16_t grp_first[NICFW_MAX_EXEC], grp_last[NICFW_MAX_EXEC]; /* executor e's group */
	uint32_t in_fmt;		 /* MODEL_FMT_U8 or MODEL_FMT_BITS */
	uint32_t in_bytes;		 /* request payload */
	uint32_t classes;		 /* doubles in the response */
	uint64_t need[NICFW_MEM__COUNT]; /* region sizes in words */
	uint64_t ctm_pkt, ctm_act[2];	 /* CTM: payload, activation ping-pong */
	uint64_t imem_out, imem_resp;	 /* IMEM: layer output, response */
	uint64_t ctm_scratch;		 /* DIRECT: executor e's scratch at + e * scratch_words */
	uint32_t scratch_words, plane_words; /* per executor; its first plane_words: u8 planes */

	/* Per-request state, written by the dispatcher, read by executors on START. */
	uint32_t cur;	 /* stage being run */
	uint32_t act;	 /* which ctm_act buffer the next layer writes */
	uint64_t in_off; /* CTM offset of the current layer's input */
	int32_t sumx;	 /* BDENSE_U8: sum of the input bytes */
	bool busy;	 /* a request is in flight */
};

/*
 * Configure ch for ops [first, m->n_layers) of m on n_exec executors (1..NICFW_MAX_EXEC) in
 * `layout` (DIRECT only on a platform that fills the HAL's map): stages, region sizes (ch->need)
 * and offsets. Returns 0, or -EINVAL with a message in err naming the op or value at fault.
 */
int nicfw_chain_init(struct nicfw_chain *ch, const struct model *m, uint32_t first, uint32_t n_exec,
		     enum nicfw_layout layout, char *err, size_t errlen);

/*
 * DIRECT only, after init: executors with equal group[e] (non-decreasing in e; n_exec entries)
 * run as one group, as a platform does when they share one core: START goes to a group's first
 * executor, which computes the group's slices in one call and passes START to the next group's
 * first; END goes back from first to first. Every executor keeps its slice; only the calls and
 * notifications are batched. Default (and always in RECORDS): one executor per group.
 * 0, or -EINVAL (RECORDS, or group decreasing).
 */
int nicfw_chain_group(struct nicfw_chain *ch, const uint32_t *group);

/*
 * Write the firmware's EMEM image for ch (weight records, thresholds, float parameters) into
 * emem, ch->need[NICFW_MEM_EMEM] words. Control path (the host loading the NIC).
 */
void nicfw_chain_load(const struct nicfw_chain *ch, const struct model *m, uint64_t *emem);

/*
 * Data path entry points, run by the platform on the thread that owns th:
 * nicfw_chain_request on the dispatcher once the platform has placed ch->in_bytes bytes of
 * input at CTM word ch->ctm_pkt (zero-padded to a whole word); nicfw_chain_signal whenever a
 * notification (enum nicfw_sig) arrives at thread th->id. Returns -EBUSY from request if one
 * is in flight, else 0. The response is sent by nicfw_pkt_tx(ch->imem_resp, ch->classes).
 */
int nicfw_chain_request(struct nicfw_thread *th, struct nicfw_chain *ch);
void nicfw_chain_signal(struct nicfw_thread *th, struct nicfw_chain *ch, enum nicfw_sig sig);

#endif /* NICFW_CHAIN_H */
