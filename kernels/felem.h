/* SPDX-License-Identifier: MIT */
/*
 * kernels/felem.h — the element-wise float32 kernels of the float run (kernels/frun.c), one
 * table per instruction set: kernels/felem_ref.c, felem_avx2.c and felem_avx512.c compile the
 * same plain C (kernels/felem_impl.h) with their own flags and -O3, so that the compiler
 * vectorises it for each. Every table gives the same bits: no sums, only exact operations and
 * one rounding per element (affine: x * s + t with contraction off).
 */
#ifndef KERN_FELEM_H
#define KERN_FELEM_H

#include <stddef.h>
#include <stdint.h>

struct kern_felem {
	/* max |x| over n elements; NaN if one is NaN */
	double (*absmax)(const float *x, size_t n);
	void (*relu)(const float *x, size_t n, float *y);
	/* y[c][p] = x[c][p] * s[c] + t[c] (s NULL: 1), c < C, p < hw */
	void (*affine)(const float *x, uint32_t C, uint32_t hw, const float *s, const float *t,
		       float *y);
	/* y[c][p] = x[p][c] + b[c] (b may be NULL): pixel-major to channel-major */
	void (*transpose)(const float *x, uint32_t np, uint32_t C, const float *b, float *y);
	/*
	 * transpose, then maxpool: x [h][w][C] pixel-major, y [C][oh][ow] the max over each
	 * window (k x k, stride st, floor mode) + b[c] (b may be NULL): the bits of transpose
	 * then maxpool, as rounding x + b is monotonic in x
	 */
	void (*pool_transpose)(const float *x, uint32_t h, uint32_t w, uint32_t C, uint32_t k,
			       uint32_t st, const float *b, float *y);
	/* max over k x k windows, stride st, floor mode, of `planes` planes h x w */
	void (*maxpool)(const float *x, size_t planes, uint32_t h, uint32_t w, uint32_t k,
			uint32_t st, float *y);
};

extern const struct kern_felem kern_felem_ref, kern_felem_avx2, kern_felem_avx512;

/* The table for a kernel table's name ("ref", "avx2", "avx512"). */
const struct kern_felem *kern_felem_for(const char *isa);

#endif /* KERN_FELEM_H */
