/* SPDX-License-Identifier: MIT */
/* AVX2 float32 conv of the float layers (kern_ops.h sconv, sconv_packed). */
#include <immintrin.h>
#include <stdbool.h>
#include <string.h>

#include "kernels/bin_impl.h"
#include "kernels/kern.h"

/*
 * Direct conv, register-blocked: up to SC_NPX neighbouring output pixels of one row x 16
 * output channels in 2 SC_NPX accumulators; per tap two loads of weights, one broadcast of each
 * pixel's input value and 2 SC_NPX FMAs. Filters in blocks of 32 (two halves of 16), taps in
 * chunks of at most SC_KC whose weights ([nt][32]) stay in L1 across the image's pixel blocks.
 */
#define SC_NPX 6
#define SC_KC  256

static inline __m256i sc_mask(uint32_t left)
{
	const __m256i idx = _mm256_setr_epi32(0, 1, 2, 3, 4, 5, 6, 7);

	return _mm256_cmpgt_epi32(_mm256_set1_epi32((int)(left < 8 ? left : 8)), idx);
}

static inline __attribute__((always_inline)) void
sc_block(const float *xr, const int32_t *toff, uint32_t nt, const float *wc, float *yb, size_t ldy,
	 __m256i m0, __m256i m1, bool first, const int n, const uint32_t s)
{
	__m256 a[SC_NPX], b[SC_NPX];

#pragma GCC unroll 6
	for (int r = 0; r < n; r++) {
		a[r] = first ? _mm256_setzero_ps() : _mm256_maskload_ps(yb + r * ldy, m0);
		b[r] = first ? _mm256_setzero_ps() : _mm256_maskload_ps(yb + r * ldy + 8, m1);
	}
	for (uint32_t t = 0; t < nt; t++, wc += 32) {
		const float *xt = xr + toff[t];
		const __m256 w0 = _mm256_load_ps(wc), w1 = _mm256_load_ps(wc + 8);

#pragma GCC unroll 6
		for (int r = 0; r < n; r++) {
			const __m256 x = _mm256_broadcast_ss(xt + (size_t)r * s);

			a[r] = _mm256_fmadd_ps(x, w0, a[r]);
			b[r] = _mm256_fmadd_ps(x, w1, b[r]);
		}
	}
#pragma GCC unroll 6
	for (int r = 0; r < n; r++) {
		_mm256_maskstore_ps(yb + r * ldy, m0, a[r]);
		_mm256_maskstore_ps(yb + r * ldy + 8, m1, b[r]);
	}
}

typedef void (*sc_fn)(const float *xr, const int32_t *toff, uint32_t nt, const float *wc, float *yb,
		      size_t ldy, __m256i m0, __m256i m1, bool first, uint32_t s);

#define SC_FN(N)                                                                                   \
	static void sc1_##N(const float *xr, const int32_t *toff, uint32_t nt, const float *wc,    \
			    float *yb, size_t ldy, __m256i m0, __m256i m1, bool first, uint32_t s) \
	{                                                                                          \
		(void)s;                                                                           \
		sc_block(xr, toff, nt, wc, yb, ldy, m0, m1, first, N, 1);                          \
	}                                                                                          \
	static void scs_##N(const float *xr, const int32_t *toff, uint32_t nt, const float *wc,    \
			    float *yb, size_t ldy, __m256i m0, __m256i m1, bool first, uint32_t s) \
	{                                                                                          \
		sc_block(xr, toff, nt, wc, yb, ldy, m0, m1, first, N, s);                          \
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
