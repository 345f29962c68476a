/* SPDX-License-Identifier: MIT */
/* AVX-512 float32 kernels of the mixed-precision float layers (kernels/fconv.c). */
#include <immintrin.h>
#include <stdbool.h>
#include <string.h>

#include "kernels/bin_impl.h"
#include "kernels/kern.h"

static inline __mmask16 lanes(uint32_t cnt, uint32_t v)
{
	uint32_t r = cnt > 16 * v ? cnt - 16 * v : 0;

	return (__mmask16)(r >= 16 ? 0xffff : (1u << r) - 1);
}

/*
 * Direct conv, register-blocked (sc_block, kernels/sconv_impl.h): up to SC_NPX neighbouring
 * output pixels of one row x 32 output channels per block. The taps run in chunks of at most
 * SC_KC whose weights (SC_KC x 32 floats) stay in L1 across every pixel block of the image;
 * partial sums are kept in y between chunks.
 */
#define SC_NPX		   14
#define SC_KC		   256
#define SC_V		   __m512
#define SC_M		   __mmask16
#define SC_VL		   16
#define SC_ZERO()	   _mm512_setzero_ps()
#define SC_LOAD(p)	   _mm512_load_ps(p)
#define SC_LOADM(p, m)	   _mm512_maskz_loadu_ps(m, p)
#define SC_BCAST(p)	   _mm512_set1_ps(*(p))
#define SC_FMA(a, b, c)	   _mm512_fmadd_ps(a, b, c)
#define SC_STOREM(p, m, v) _mm512_mask_storeu_ps(p, m, v)

#include "kernels/sconv_impl.h"

SC_FN(1)
SC_FN(2)
SC_FN(3)
SC_FN(4)
SC_FN(5)
SC_FN(6)
SC_FN(7)
SC_FN(8)
SC_FN(9)
SC_FN(10)
SC_FN(11)
SC_FN(12)
SC_FN(13)
SC_FN(14)

static const sc_fn sc_fns[2][SC_NPX + 1] = {
    {NULL, scs_1, scs_2, scs_3, scs_4, scs_5, scs_6, scs_7, scs_8, scs_9, scs_10, scs_11, scs_12,
     scs_13, scs_14},
    {NULL, sc1_1, sc1_2, sc1_3, sc1_4, sc1_5, sc1_6, sc1_7, sc1_8, sc1_9, sc1_10, sc1_11, sc1_12,
     sc1_13, sc1_14},
};

/*
 * Filters in blocks of 32, taps in chunks; one chunk's weights ([nt][32]: from wb, packed, else
 * copied from wt [taps][o]) meet every pixel block of the image. With wb, the chunks follow one
 * another in memory: the next one is prefetched into L2 a slice per pixel block.
 */
static void sc_run(const float *xp, const struct kern_conv_geom *g, const float *wt,
		   const float *wb, float *y)
{
	const size_t hp = (size_t)g->h + 2 * g->pad, wp = (size_t)g->w + 2 * g->pad;
	const uint32_t kk = g->k * g->k, taps = g->c * kk;
	const uint32_t nchunk = (taps + SC_KC - 1) / SC_KC, kc = (taps + nchunk - 1) / nchunk;
	const uint32_t nb = (g->ow + SC_NPX - 1) / SC_NPX, bw = (g->ow + nb - 1) / nb;
	const sc_fn *fns = sc_fns[g->stride == 1];
	const char *wend = wb ? (const char *)(wb + kern_sconv_packed_elems(taps, g->o)) : NULL;
	int32_t toff[SC_KC];
	float wbuf[SC_KC * 32] __attribute__((aligned(64)));

	for (uint32_t c0 = 0; c0 < g->o; c0 += 32) {
		const __mmask16 m0 = lanes(g->o - c0, 0), m1 = lanes(g->o - c0, 1);

		for (uint32_t t0 = 0; t0 < taps; t0 += kc) {
			const uint32_t nt = taps - t0 < kc ? taps - t0 : kc;
			const float *w = wb ? wb + ((size_t)c0 * taps + (size_t)t0 * 32) : wbuf;
			const char *pf = (const char *)(w + (size_t)nt * 32);
			const size_t pfb =
			    ((size_t)nt * 128 / ((size_t)g->oh * nb) + 64) & ~(size_t)63;

			for (uint32_t t = 0; t < nt; t++) {
				uint32_t ci = (t0 + t) / kk, r = (t0 + t) % kk;

				toff[t] = (int32_t)((ci * hp + r / g->k) * wp + r % g->k);
			}
			if (!wb)
				for (uint32_t t = 0; t < nt; t++) {
					const float *wc = wt + (size_t)(t0 + t) * g->o + c0;

					_mm512_store_ps(wbuf + 32 * t,
							_mm512_maskz_loadu_ps(m0, wc));
					_mm512_store_ps(wbuf + 32 * t + 16,
							_mm512_maskz_loadu_ps(m1, wc + 16));
				}
			for (uint32_t oy = 0; oy < g->oh; oy++)
				for (uint32_t ox = 0; ox < g->ow; ox += bw) {
					const uint32_t n = g->ow - ox < bw ? g->ow - ox : bw;

					for (size_t i = 0; wb && i < pfb && pf < wend;
					     i += 64, pf += 64)
						_mm_prefetch(pf, _MM_HINT_T1);
					fns[n](xp + (size_t)oy * g->stride * wp +
						   (size_t)ox * g->stride,
					       toff, nt, w,
					       y + ((size_t)oy * g->ow + ox) * g->o + c0, g->o, m0,
					       m1, t0 == 0, g->stride);
				}
		}
	}
}

void kern_avx512_sconv(const float *xp, const struct kern_conv_geom *g, const float *wt, float *y)
{
	sc_run(xp, g, wt, NULL, y);
}

void kern_avx512_sconv_packed(const float *xp, const struct kern_conv_geom *g, const float *wb,
			      float *y)
{
	sc_run(xp, g, NULL, wb, y);
}

/*
 * Pixel-major: one pixel's 16 channels per compare, so a compare's mask is already 16 bits of
 * the pixel's word. Unsure outputs are rare and listed from their mask.
 */
uint32_t kern_avx512_decide_pack(const float *y, uint32_t o, uint32_t np,
				 const struct kern_decide *d, uint64_t *bits, uint32_t *unsure)
{
	const __m512 absmask = _mm512_castsi512_ps(_mm512_set1_epi32(0x7fffffff));
	const __m512 zero = _mm512_setzero_ps();
	const uint32_t wpp = model_words(o), groups = (o + 15) / 16;
	__mmask16 flip[64], live[64], valid[64];
	uint32_t n = 0;

	if (groups > 64)
		return kern_ref_decide_pack(y, o, np, d, bits, unsure);
	for (uint32_t q = 0; q < groups; q++) {
		__m128i fl;

		valid[q] = lanes(o - 16 * q, 0);
		fl = _mm_maskz_loadu_epi8(valid[q], d->flip + 16 * q);
		flip[q] = _mm_test_epi8_mask(fl, fl);
		live[q] = _mm512_mask_cmp_ps_mask(
		    valid[q], _mm512_maskz_loadu_ps(valid[q], d->e + 16 * q), zero, _CMP_GT_OQ);
	}
	memset(bits, 0, (size_t)np * wpp * sizeof(*bits));
	for (uint32_t p = 0; p < np; p++, y += o, bits += wpp)
		for (uint32_t q = 0; q < groups; q++) {
			__m512 v = _mm512_sub_ps(_mm512_maskz_loadu_ps(valid[q], y + 16 * q),
						 _mm512_maskz_loadu_ps(valid[q], d->thr + 16 * q));
			__mmask16 ge = _mm512_cmp_ps_mask(v, zero, _CMP_GE_OQ);
			__mmask16 u = _mm512_mask_cmp_ps_mask(
			    live[q], _mm512_and_ps(v, absmask),
			    _mm512_maskz_loadu_ps(valid[q], d->e + 16 * q), _CMP_LE_OQ);

			bits[q / 4] |= (uint64_t)((ge ^ flip[q]) & valid[q] & ~u) << (16 * (q % 4));
			for (; u; u &= (__mmask16)(u - 1))
				unsure[n++] = p * o + 16 * q + (uint32_t)__builtin_ctz(u);
		}
	return n;
}
