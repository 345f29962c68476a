/* SPDX-License-Identifier: MIT */
/*
 * kernels/bconv512_steps.h — private to the AVX-512 binary convolutions (bconv*_avx512.c): the
 * blocked kernels' steps for lanes of W bits (32: vpopcntd, 16 lanes; 64: vpopcntq, 8 lanes),
 * written once as macros. A block keeps accumulators a0, a1, ... of popcounts; tap row tr holds
 * the weight words of the block's channels, xb the broadcast input word.
 */
#ifndef KERN_BCONV512_STEPS_H
#define KERN_BCONV512_STEPS_H

#include <immintrin.h>

#include "kernels/bin_tmpl.h"

/* Declare the accumulators a0 .. a3 (a0 .. a7), zero. */
#define KERN_BC_ZERO4() __m512i a0 = _mm512_setzero_si512(), a1 = a0, a2 = a0, a3 = a0
#define KERN_BC_ZERO8()                                                                            \
	KERN_BC_ZERO4();                                                                           \
	__m512i a4 = a0, a5 = a0, a6 = a0, a7 = a0

/* Accumulator v (lanes v * 512 / W ..) meets the input word: a_v += popcount(xb ^ tr[..]). */
#define KERN_BC_ACC(W, v)                                                                          \
	a##v = _mm512_add_epi##W(a##v, _mm512_popcnt_epi##W(_mm512_xor_si512(                      \
					   xb, _mm512_load_si512(tr + (512 / W) * (v)))))

#define KERN_BC_ACC4(W)                                                                            \
	do {                                                                                       \
		KERN_BC_ACC(W, 0);                                                                 \
		KERN_BC_ACC(W, 1);                                                                 \
		KERN_BC_ACC(W, 2);                                                                 \
		KERN_BC_ACC(W, 3);                                                                 \
	} while (0)

#define KERN_BC_ACC8(W)                                                                            \
	do {                                                                                       \
		KERN_BC_ACC4(W);                                                                   \
		KERN_BC_ACC(W, 4);                                                                 \
		KERN_BC_ACC(W, 5);                                                                 \
		KERN_BC_ACC(W, 6);                                                                 \
		KERN_BC_ACC(W, 7);                                                                 \
	} while (0)

/* dot = n - 2 popcount of accumulator v: n the window's bits broadcast. */
#define KERN_BC_DOT(W, v) _mm512_sub_epi##W(n, _mm512_add_epi##W(a##v, a##v))

#define KERN_BC_DOTS4(W)                                                                           \
	do {                                                                                       \
		d[0] = KERN_BC_DOT(W, 0);                                                          \
		d[1] = KERN_BC_DOT(W, 1);                                                          \
		d[2] = KERN_BC_DOT(W, 2);                                                          \
		d[3] = KERN_BC_DOT(W, 3);                                                          \
	} while (0)

#define KERN_BC_DOTS8(W)                                                                           \
	do {                                                                                       \
		KERN_BC_DOTS4(W);                                                                  \
		d[4] = KERN_BC_DOT(W, 4);                                                          \
		d[5] = KERN_BC_DOT(W, 5);                                                          \
		d[6] = KERN_BC_DOT(W, 6);                                                          \
		d[7] = KERN_BC_DOT(W, 7);                                                          \
	} while (0)

/*
 * Defines static inline void name(x, g, tile, oy, ox, d): the dots of one output pixel with a
 * block of 8 * nacc output channels (64-bit lanes), d[v] those of channels 8 v .. 8 v + 7, from
 * a tile of 8 * nacc lanes a tap word.
 */
#define KERN_BC_PIXEL_DOT64(name, nacc)                                                            \
	static inline void name(const uint64_t *x, const struct kern_conv_geom *g,                 \
				const uint64_t *tile, uint32_t oy, uint32_t ox, __m512i d[nacc])   \
	{                                                                                          \
		uint32_t wpp = model_words(g->c);                                                  \
		__m512i n;                                                                         \
		KERN_BC_ZERO##nacc();                                                              \
		KERN_BCONV_WINDOW(g, g->k, oy, ox);                                                \
                                                                                                   \
		for (uint32_t ky = ky0; ky < ky1; ky++) {                                          \
			const uint64_t *xr = KERN_BCONV_ROW_X(x, g, wpp, ky);                      \
			const uint64_t *tr = KERN_BCONV_ROW_TAPS(tile, g, wpp, 8 * nacc, ky);      \
			uint32_t len = (kx1 - kx0) * wpp;                                          \
                                                                                                   \
			for (uint32_t t = 0; t < len; t++, tr += 8 * nacc) {                       \
				__m512i xb = _mm512_set1_epi64((long long)xr[t]);                  \
                                                                                                   \
				KERN_BC_ACC##nacc(64);                                             \
			}                                                                          \
		}                                                                                  \
		n = _mm512_set1_epi64(KERN_BCONV_WINDOW_BITS(g->c));                               \
		KERN_BC_DOTS##nacc(64);                                                            \
	}

/*
 * Output bits of accumulator v at their place in the block's word (L = 512 / W lanes a vector):
 * popcount <= pmax[v] (inner pixels), or dot >= thr[v] (border pixels).
 */
#define KERN_BC_LE_BITS(W, L, v)                                                                   \
	((uint64_t)_cvtmask##L##_u32(_mm512_cmple_epi##W##_mask(a##v, pmax[v])) << (L * (v)))
#define KERN_BC_GE_BITS(W, L, v)                                                                   \
	((uint64_t)_cvtmask##L##_u32(_mm512_cmpge_epi##W##_mask(KERN_BC_DOT(W, v), thr[v]))        \
	 << (L * (v)))

#endif
