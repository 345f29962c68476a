/* SPDX-License-Identifier: MIT */
/* AVX2 float32 conv of the float layers (kern_ops.h sconv, sconv_packed). */
#include <immintrin.h>
#include <stdbool.h>
#include <string.h>

#include "kernels/bin_impl.h"
#include "kernels/kern.h"

/*
 * Direct conv, register-blocked (sc_block, kernels/sconv_impl.h): up to SC_NPX neighbouring
 * output pixels of one row x 16 output channels per block. Filters in blocks of 32 (two halves of
 * 16), taps in chunks of at most SC_KC whose weights ([nt][32]) stay in L1 across the image's
 * pixel blocks.
 */
#define SC_NPX		   6
#define SC_KC		   256
#define SC_V		   __m256
#define SC_M		   __m256i
#define SC_VL		   8
#define SC_ZERO()	   _mm256_setzero_ps()
#define SC_LOAD(p)	   _mm256_load_ps(p)
#define SC_LOADM(p, m)	   _mm256_maskload_ps(p, m)
#define SC_BCAST(p)	   _mm256_broadcast_ss(p)
#define SC_FMA(a, b, c)	   _mm256_fmadd_ps(a, b, c)
#define SC_STOREM(p, m, v) _mm256_maskstore_ps(p, m, v)

#include "kernels/sconv_impl.h"

static inline __m256i sc_mask(uint32_t left)
{
	const __m256i idx = _mm256_setr_epi32(0, 1, 2, 3, 4, 5, 6, 7);

	return _mm256_cmpgt_epi32(_mm256_set1_epi32((int)(left < 8 ? left : 8)), idx);
}

SC_FN(1)
SC_FN(2)
SC_FN(3)
SC_FN(4)
SC_FN(5)
SC_FN(6)

static const sc_fn sc_fns[2][SC_NPX + 1] = {
    {NULL, scs_1, scs_2, scs_3, scs_4, scs_5, scs_6},
    {NULL, sc1_1, sc1_2, sc1_3, sc1_4, sc1_5, sc1_6},
};

static void sc_run(const float *xp, const struct kern_conv_geom *g, const float *wt,
		   const float *wb, float *y)
{
	const size_t hp = (size_t)g->h + 2 * g->pad, wp = (size_t)g->w + 2 * g->pad;
	const uint32_t kk = g->k * g->k, taps = g->c * kk;
	const uint32_t nchunk = (taps + SC_KC - 1) / SC_KC, kc = (taps + nchunk - 1) / nchunk;
	const uint32_t nb = (g->ow + SC_NPX - 1) / SC_NPX, bw = (g->ow + nb - 1) / nb;
	const sc_fn *fns = sc_fns[g->stride == 1];
	int32_t toff[SC_KC];
	float wbuf[SC_KC * 32] __attribute__((aligned(64)));

	for (uint32_t c0 = 0; c0 < g->o; c0 += 32)
		for (uint32_t t0 = 0; t0 < taps; t0 += kc) {
			const uint32_t nt = taps - t0 < kc ? taps - t0 : kc;
			const float *w = wb ? wb + ((size_t)c0 * taps + (size_t)t0 * 32) : wbuf;

			for (uint32_t t = 0; t < nt; t++) {
				uint32_t ci = (t0 + t) / kk, r = (t0 + t) % kk;

				toff[t] = (int32_t)((ci * hp + r / g->k) * wp + r % g->k);
			}
			if (!wb)
				for (uint32_t t = 0; t < nt; t++)
					for (uint32_t j = 0; j < 32; j++)
						wbuf[32 * t + j] =
						    c0 + j < g->o
							? wt[(size_t)(t0 + t) * g->o + c0 + j]
							: 0.0f;
			for (uint32_t h = 0; h < 32 && c0 + h < g->o; h += 16) {
				const __m256i m0 = sc_mask(g->o - c0 - h);
				const __m256i m1 =
				    sc_mask(g->o - c0 - h > 8 ? g->o - c0 - h - 8 : 0);

				for (uint32_t oy = 0; oy < g->oh; oy++)
					for (uint32_t ox = 0; ox < g->ow; ox += bw) {
						const uint32_t n =
						    g->ow - ox < bw ? g->ow - ox : bw;

						fns[n](xp + (size_t)oy * g->stride * wp +
							   (size_t)ox * g->stride,
						       toff, nt, w + h,
						       y + ((size_t)oy * g->ow + ox) * g->o + c0 +
							   h,
						       g->o, m0, m1, t0 == 0, g->stride);
					}
			}
		}
}

void kern_avx2_sconv(const float *xp, const struct kern_conv_geom *g, const float *wt, float *y)
{
	sc_run(xp, g, wt, NULL, y);
}

void kern_avx2_sconv_packed(const float *xp, const struct kern_conv_geom *g, const float *wb,
			    float *y)
{
	sc_run(xp, g, NULL, wb, y);
}
