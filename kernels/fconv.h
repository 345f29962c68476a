/* SPDX-License-Identifier: MIT */
/*
 * kernels/fconv.h — private to the executor (forward.c): a float convolution whose outputs
 * reach only a sign or a threshold, computed in float32 with the float64 decisions.
 *
 * A run of compiled ops [first, last] of the form
 *
 *     [CAST from U8]  CONV (float or binary weights)  [MAXPOOL]  (BIAS | BATCHNORM)*
 *     SIGN | THRESHOLD
 *
 * gives the same bits as the ops one by one (kernels/fconv.c states why): the conv runs as
 * float32 (the table's sconv); an output whose float32 value lies within its error bound of
 * the decision point makes its image run the float64 conv exactly as the CONV op does, and
 * those outputs take their bits from the float64 values through the same chain of ops.
 */
#ifndef KERN_FCONV_H
#define KERN_FCONV_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "kernels/kern.h"
#include "kernels/kern_ops.h"

struct kern_fconv {
	const struct model *m;
	uint32_t first, conv, last; /* ops: first is the CAST or the CONV */
	uint32_t pool;		    /* the MAXPOOL's op, 0 if none */
	uint64_t *and_mask;	    /* [words(o)]: channels pooled by AND (flip 1) */
	bool exact;		    /* integer inputs and +-1 weights: float32 is exact */
	struct kern_conv_geom g;
	uint32_t taps;	     /* c * k * k */
	float *w32;	     /* [taps][o] */
	float *thr;	     /* [o] decision point in conv output units */
	double *thr64;	     /* [o] the same in double, before rounding */
	uint8_t *flip;	     /* [o] */
	double *e0;	     /* [o] error bound per unit of n * max|x| */
	double *ea0;	     /* [o] its absolute part */
	float *e;	     /* [o] the bound E for the image at hand */
	double guard;	     /* n * max|x| beyond this: the image runs in float64 */
	uint64_t recomputed; /* outputs decided from the float64 conv */
};

/*
 * Plan ops [first, ...] of m as a float32 run if they have the form above; returns the run's
 * last op (> first), 0 if they do not, -ENOMEM.
 */
int kern_fconv_prepare(const struct model *m, uint32_t first, struct kern_fconv *f);
void kern_fconv_free(struct kern_fconv *f);

/* Scratch bytes for one image of the run (64-byte aligned pieces). */
size_t kern_fconv_scratch(const struct kern_fconv *f);

/* Ops [first, last] on `batch` images: x in op first's input format, y BITS. */
void kern_fconv_run(struct kern_fconv *f, const struct kern_bin_ops *ops, const void *x,
		    uint32_t batch, uint64_t *y, void *scratch);

#endif /* KERN_FCONV_H */
