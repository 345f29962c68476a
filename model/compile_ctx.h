/* SPDX-License-Identifier: MIT */
/*
 * model/compile_ctx.h — internal to the compiler: the lowering's state and what the lowering
 * (model/compile.c) asks of the weights (model/compile_weights.c).
 *
 * The lowering decides every op, its formats, shapes, flags and source range from the layers
 * alone. Every value of weights.npz is read behind the calls below: the arrays a layer takes
 * (checked), the blobs copied or packed from them, and the three decisions that depend on the
 * values of a pending bias/batch-norm chain (its folded thresholds, whether it is
 * non-decreasing, whether it can reach an exact 0). In the shape-only pass (cc.shapes) they
 * read nothing, write no blob and answer as model/compile.h says.
 */
#ifndef MODEL_COMPILE_CTX_H
#define MODEL_COMPILE_CTX_H

#include <stdbool.h>
#include <stdint.h>

#include "model/ic.h"

/* What compile_weights.c keeps of one arch layer's arrays (all NULL in the shape-only pass). */
struct cc_vals {
	const double *w, *b;		   /* dense, conv: weight, bias */
	const double *mean, *gamma, *beta; /* batch-norm */
	double *sd;			   /* batch-norm: sqrt(var + eps), computed once, owned */
};

struct cc {
	const struct model_ic_model *ic;
	struct model *m;
	bool shapes; /* the shape-only pass: no weights */
	uint32_t cap;
	char *err;
	size_t errlen;
	uint32_t layer; /* the arch layer being compiled, for messages */

	struct model_shape s; /* the tensor after the ops emitted so far */
	bool flat;	      /* a vector (after dense or flatten), not a (C,H,W) image */
	bool exact;	      /* integer values held exactly, in [lo, hi] */
	int64_t lo, hi;
	int64_t prod; /* index of the binary op producing these integers, if the last op; else -1 */

	/* Pending chain, applied to the integers: the bias of layer pb_src (if pbias), then the
	 * batch-norms pbn[0..n_pbn). */
	bool pbias;
	uint32_t pb_src;
	uint32_t *pbn, n_pbn;
	uint32_t pend_first; /* first arch layer of the pending chain */
	struct cc_vals *v;   /* per arch layer */
};

/* Per-channel thresholds for the pending chain and a sign (model.h's MODEL_LF_THRESH blobs). */
struct cc_fold {
	int32_t *thr;
	uint8_t *flip;
};

/* ---- compile.c: for both files ----------------------------------------------------------- */

__attribute__((format(printf, 3, 4))) int cc_fail(struct cc *c, const char *file, const char *fmt,
						  ...);
int cc_nomem(struct cc *c);
struct model_layer *cc_last(struct cc *c);

static inline bool cc_pending(const struct cc *c)
{
	return c->pbias || c->n_pbn;
}

/* ---- compile_weights.c: arrays, checked as layers take them ------------------------------- */

/* Dense or conv layer c->layer: "weight" of shape dims[0..ndim) (binary weights: no NaN, else
 * finite), "bias" [dims[0]] (finite) where L->bias, else no "bias" array. 0 or -EINVAL. */
int cc_take_weights(struct cc *c, const struct model_ic_layer *L, uint32_t ndim,
		    const uint64_t *dims);
/* Batch-norm layer c->layer on c->s.c channels: gamma, beta, mean, var, and var + eps > 0.
 * 0 or -EINVAL / -ENOMEM. */
int cc_take_batchnorm(struct cc *c, const struct model_ic_layer *L);
/* Forget what cc_take_batchnorm kept of `layer` (a fold that did not apply). */
void cc_drop_batchnorm(struct cc *c, uint32_t layer);

/* ---- compile_weights.c: blobs of the last op emitted; 0 or -ENOMEM ------------------------ */

/* Layer c->layer's float weights (count reals) in blob 0, its bias (if any, out reals) in 1. */
int cc_put_float(struct cc *c, uint64_t count, uint32_t out);
/* Layer c->layer's binary weights, rows of len signs, model_words(len) u64 per row (blob 0). */
int cc_put_rows(struct cc *c, uint64_t rows, uint64_t len);
/* Layer c->layer's binary conv weights [O][C][k][k] as [O][k][k][words(C)] (blob 0). */
int cc_put_taps(struct cc *c, uint32_t o, uint32_t ch, uint32_t k);
/* The pending bias (BIAS), or batch-norm layer `bn`'s mean, sd, gamma, beta (BATCHNORM). */
int cc_put_bias(struct cc *c);
int cc_put_batchnorm(struct cc *c, uint32_t bn);
/* A PAD op's four paddings (the layer's, not weights: none in the shape-only pass either). */
int cc_put_pads(struct cc *c, const uint32_t pads[4]);
/* Blobs bt, bt + 1 := f's thresholds (owned from here on: freed in the shape-only pass). */
void cc_put_fold(struct cc *c, unsigned int bt, struct cc_fold *f);
/* Blob 0 := an owned block of size bytes (NULL: none). */
void cc_put_blob(struct cc *c, void *p, uint64_t size);

/* ---- compile_weights.c: the decisions that read the pending chain's values ---------------- */

/* Fold the pending chain and a sign on the exact integers into *f: 1 (folded), 0 (it does not
 * fold: not exact, out of int32, or a "constant" channel that is not), or -ENOMEM. */
int cc_fold(struct cc *c, struct cc_fold *f);
void cc_fold_free(struct cc_fold *f);
/* Can the chain folded into f be exactly 0 (or -0.0) on some channel? */
bool cc_zero_reachable(const struct cc *c, const struct cc_fold *f);
/* Is every batch-norm of the pending chain non-decreasing (no negative gamma)? */
bool cc_chain_nondecreasing(const struct cc *c);
/* A max-pool's MODEL_LF_ANDPOOL mask over ch channels: bit set where the batch-norms
 * pbn[first_bn..n_pbn) after it decrease; *mask NULL where no channel does. 0 or -ENOMEM. */
int cc_pool_and_mask(struct cc *c, uint32_t first_bn, uint32_t ch, uint64_t **mask);

#endif /* MODEL_COMPILE_CTX_H */
