/* SPDX-License-Identifier: MIT */
/*
 * kernels/frun.h — private to the executor (forward.c): the float layers that end a model, run in
 * float32 with a certified error bound per image (docs/float.md).
 *
 * The trailing run of compiled ops made only of CAST, FLATTEN (not of bits), CONV, DENSE, BIAS,
 * BATCHNORM, RELU, MAXPOOL, PAD and LRN (k > 0, alpha >= 0, beta >= 0) whose last op gives the
 * F64 scores runs as float32 (the table's dot_f32 for conv and dense). Beside the values, each
 * image carries two bounds, as the ops pass: e32 of |float32 value - exact value| and e64 of
 * |float64 value - exact value| (the float64 value being what the ops one by one give), for every
 * element of the activation. At the scores, an image whose arg-max could differ from the float64
 * scores' (a gap to another class within 2 (e32 + e64)) is marked for a recheck: the caller runs
 * the ops one by one in float64 for it. Every other image's class is the float64 class, proven
 * per image. The bounds are worst cases, products of the layers' weight norms: deep networks
 * may not certify; a run that had to recheck more than half of its first FRUN_TRIAL images
 * turns itself off (the ops run in float64 from then on, which is cheaper than both).
 */
#ifndef KERN_FRUN_H
#define KERN_FRUN_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "kernels/felem.h"
#include "kernels/kern.h"
#include "kernels/kern_ops.h"

#define FRUN_TRIAL 64
/* The convs ahead of the first dense op run in chunks of images whose activation is this big. */
#define FRUN_CHUNK_BYTES (512u * 1024u)

struct frun_op {
	float *w, *b;	      /* CONV [o][ky][kx][c] / DENSE [o][n]; bias [o] (NULL if none) */
	float *s, *t;	      /* BATCHNORM: y = x s + t (per channel); BIAS: t = b */
	uint32_t *boff;	      /* CONV: each output pixel's window in the padded pixel-major image */
	double w1, bmax;      /* CONV, DENSE: max_o sum |w_o|; max |b| */
	double smax, c0max;   /* BATCHNORM: max |s|; max |mean s| + |beta| (BIAS: max |b|) */
	uint32_t d32, d64;    /* CONV, DENSE: roundings deep of the float32 / float64 sums */
	double lrn_l, lrn_xr; /* LRN: Lipschitz bound k^-beta and its growth in |x|^2 */
	bool sconv; /* CONV: on the table's sconv_packed (kern_sconv_pack), else dot_f32 */
};

struct kern_frun {
	const struct model *m;
	const struct kern_felem *fe; /* element-wise kernels of the same instruction set */
	uint32_t start;		     /* first op of the run; m->n_layers when there is none */
	uint32_t max_batch;
	struct frun_op *op; /* [n_layers], used from start */
	size_t elems;	    /* largest activation of one image in the run */
	size_t hwc;	    /* largest padded conv input of one image */
	size_t tmp;	    /* largest pixel-major conv output of one image (sconv) */
	float *buf[2];	    /* [max_batch][elems] */
	float *bat; /* [max_batch][bat_elems]: the first dense op's input, chunks gathered */
	size_t bat_elems;
	uint32_t chunk;		  /* images per chunk of the convs */
	float *pix;		  /* [hwc] */
	float *py;		  /* [tmp] */
	double *e32, *e64, *xmax; /* [max_batch] */
	uint64_t rechecked;	  /* images run again in float64 */
	uint64_t images;	  /* images the run took */
	bool off;		  /* it rechecked most of its first FRUN_TRIAL images */
};

/* Find and prepare m's run for batches of up to max_batch; 0 (start == n_layers: none) or
 * -ENOMEM. */
int kern_frun_prepare(const struct model *m, uint32_t max_batch, struct kern_frun *r);
void kern_frun_free(struct kern_frun *r);

/* Whether ops [first, last) are a tail of the run with at least one CONV or DENSE. */
bool kern_frun_covers(const struct kern_frun *r, uint32_t first, uint32_t last);

/*
 * Ops [first, n_layers) on `batch` images: x in op first's input format, scores (double
 * [batch][classes]) to out. With certify, recheck[b] is set to 1 for the images whose scores the
 * caller must compute in float64, else 0 (without, every recheck[b] is 0: plain float32).
 * Returns how many are set.
 */
uint32_t kern_frun_run(struct kern_frun *r, const struct kern_bin_ops *ops, uint32_t first,
		       const void *x, uint32_t batch, double *out, uint8_t *recheck, bool certify);

#endif /* KERN_FRUN_H */
