/* SPDX-License-Identifier: MIT */
/*
 * kernels/bconv_avx512.h — private to the AVX-512 binary convolutions (bconv*_avx512.c): the
 * blocked kernels' steps for lanes of W bits (32: vpopcntd, 16 lanes; 64: vpopcntq, 8 lanes),
 * written once as macros. A block keeps accumulators a0, a1, ... of popcounts; tap row tr holds
 * the weight words of the block's channels, xb the broadcast input word.
 */
#ifndef KERN_BCONV_AVX512_H
#define KERN_BCONV_AVX512_H

#include <immintrin.h>

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
 * Output bits of accumulator v at their place in the block's word (L = 512 / W lanes a vector):
 * popcount <= pmax[v] (inner pixels), or dot >= thr[v] (border pixels).
 */
#define KERN_BC_LE_BITS(W, L, v)                                                                   \
	((uint64_t)_cvtmask##L##_u32(_mm512_cmple_epi##W##_mask(a##v, pmax[v])) << (L * (v)))
#define KERN_BC_GE_BITS(W, L, v)                                                                   \
	((uint64_t)_cvtmask##L##_u32(_mm512_cmpge_epi##W##_mask(KERN_BC_DOT(W, v), thr[v]))        \
	 << (L * (v)))

#endif
