/* SPDX-License-Identifier: MIT */
/*
 * The register-blocked direct float32 conv of fconv_avx2.c and fconv_avx512.c, written once over
 * the vector macros the including file defines before including it:
 *
 *   SC_V, SC_M          vector of floats, its lane mask
 *   SC_VL               floats per vector (a block is 2 SC_VL output channels)
 *   SC_NPX              most output pixels per block (the SC_FN instances, 1 .. SC_NPX)
 *   SC_ZERO()           all-zero vector
 *   SC_LOAD(p)          aligned load; SC_LOADM(p, m): masked load, zeros elsewhere
 *   SC_BCAST(p)         *p in every lane
 *   SC_FMA(a, b, c)     a * b + c, fused
 *   SC_STOREM(p, m, v)  masked store
 *
 * Included from one file of one instruction set, compiled with that file's flags.
 */
#ifndef KERNELS_SCONV_IMPL_H
#define KERNELS_SCONV_IMPL_H

#include <stdbool.h>

#include "kernels/kern.h"

#define SC_STR_(x) #x
#define SC_STR(x)  SC_STR_(x)
#define SC_UNROLL  _Pragma(SC_STR(GCC unroll SC_NPX))

/*
 * n neighbouring output pixels (stride s) of one row x 2 SC_VL output channels in 2 n
 * accumulators, over nt taps at input offsets toff with weights wc ([nt][32]); per tap two loads
 * of weights, one broadcast of each pixel's input value and 2 n FMAs. The accumulators start at
 * zero (first) or from the partial sums in yb, and end in yb.
 */
static inline __attribute__((always_inline)) void sc_block(const float *xr, const int32_t *toff,
							   uint32_t nt, const float *wc, float *yb,
							   size_t ldy, SC_M m0, SC_M m1, bool first,
							   const int n, const uint32_t s)
{
	SC_V a[SC_NPX], b[SC_NPX];

	SC_UNROLL
	for (int r = 0; r < n; r++) {
		a[r] = first ? SC_ZERO() : SC_LOADM(yb + r * ldy, m0);
		b[r] = first ? SC_ZERO() : SC_LOADM(yb + r * ldy + SC_VL, m1);
	}
	for (uint32_t t = 0; t < nt; t++, wc += 32) {
		const float *xt = xr + toff[t];
		const SC_V w0 = SC_LOAD(wc), w1 = SC_LOAD(wc + SC_VL);

		SC_UNROLL
		for (int r = 0; r < n; r++) {
			const SC_V x = SC_BCAST(xt + (size_t)r * s);

			a[r] = SC_FMA(x, w0, a[r]);
			b[r] = SC_FMA(x, w1, b[r]);
		}
	}
	SC_UNROLL
	for (int r = 0; r < n; r++) {
		SC_STOREM(yb + r * ldy, m0, a[r]);
		SC_STOREM(yb + r * ldy + SC_VL, m1, b[r]);
	}
}

typedef void (*sc_fn)(const float *xr, const int32_t *toff, uint32_t nt, const float *wc, float *yb,
		      size_t ldy, SC_M m0, SC_M m1, bool first, uint32_t s);

/* sc1_N (stride 1) and scs_N (stride s): sc_block for N pixels, the including file's table. */
#define SC_FN(N)                                                                                   \
	static void sc1_##N(const float *xr, const int32_t *toff, uint32_t nt, const float *wc,    \
			    float *yb, size_t ldy, SC_M m0, SC_M m1, bool first, uint32_t s)       \
	{                                                                                          \
		(void)s;                                                                           \
		sc_block(xr, toff, nt, wc, yb, ldy, m0, m1, first, N, 1);                          \
	}                                                                                          \
	static void scs_##N(const float *xr, const int32_t *toff, uint32_t nt, const float *wc,    \
			    float *yb, size_t ldy, SC_M m0, SC_M m1, bool first, uint32_t s)       \
	{                                                                                          \
		sc_block(xr, toff, nt, wc, yb, ldy, m0, m1, first, N, s);                          \
	}

#endif
