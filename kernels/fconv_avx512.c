/* SPDX-License-Identifier: MIT */
/* AVX-512 float32 kernels of the mixed-precision float layers (kernels/fconv.c). */
#include <immintrin.h>
#include <string.h>

#include "kernels/bin_impl.h"
#include "kernels/kern.h"

static inline __mmask16 lanes(uint32_t cnt, uint32_t v)
{
	uint32_t r = cnt > 16 * v ? cnt - 16 * v : 0;

	return (__mmask16)(r >= 16 ? 0xffff : (1u << r) - 1);
}

/* Pixel r of an 8-pixel block meets the tap's 32 weights: two FMAs. */
#define PIX_FMA(r)                                                                                 \
	do {                                                                                       \
		__m512 xb_ = _mm512_set1_ps(xt[base[r]]);                                          \
		a##r = _mm512_fmadd_ps(xb_, w0, a##r);                                             \
		b##r = _mm512_fmadd_ps(xb_, w1, b##r);                                             \
	} while (0)

#define PIX_STORE(r)                                                                               \
	do {                                                                                       \
		if ((r) < rows) {                                                                  \
			_mm512_mask_storeu_ps(yb + (size_t)(r)*g->o, m0, a##r);                    \
			_mm512_mask_storeu_ps(yb + (size_t)(r)*g->o + 16, m1, b##r);               \
		}                                                                                  \
	} while (0)

/*
 * Implicit GEMM straight from the padded image: 8 neighbouring output pixels of a row x 32
 * output channels per block in 16 accumulators; per tap two loads of weights, eight broadcasts
 * of input values and 16 FMAs. A short last block repeats its last pixel (not stored).
 */
void kern_avx512_sconv(const float *xp, const struct kern_conv_geom *g, const float *wt, float *y)
{
	const size_t hp = (size_t)g->h + 2 * g->pad, wp = (size_t)g->w + 2 * g->pad;

	for (uint32_t oy = 0; oy < g->oh; oy++)
		for (uint32_t ox = 0; ox < g->ow; ox += 8) {
			uint32_t rows = g->ow - ox < 8 ? g->ow - ox : 8;
			size_t base[8];
			float *yb = y + ((size_t)oy * g->ow + ox) * g->o;

			for (uint32_t r = 0; r < 8; r++)
				base[r] = (size_t)oy * g->stride * wp +
					  (size_t)(ox + (r < rows ? r : rows - 1)) * g->stride;
			for (uint32_t c0 = 0; c0 < g->o; c0 += 32, yb += 32) {
				const __mmask16 m0 = lanes(g->o - c0, 0), m1 = lanes(g->o - c0, 1);
				const float *wc = wt + c0;
				__m512 a0 = _mm512_setzero_ps(), a1 = a0, a2 = a0, a3 = a0, a4 = a0;
				__m512 a5 = a0, a6 = a0, a7 = a0, b0 = a0, b1 = a0, b2 = a0,
				       b3 = a0;
				__m512 b4 = a0, b5 = a0, b6 = a0, b7 = a0;

				for (uint32_t ci = 0; ci < g->c; ci++)
					for (uint32_t ky = 0; ky < g->k; ky++)
						for (uint32_t kx = 0; kx < g->k; kx++, wc += g->o) {
							const float *xt =
							    xp + (ci * hp + ky) * wp + kx;
							__m512 w0 = _mm512_maskz_loadu_ps(m0, wc);
							__m512 w1 =
							    _mm512_maskz_loadu_ps(m1, wc + 16);

							PIX_FMA(0);
							PIX_FMA(1);
							PIX_FMA(2);
							PIX_FMA(3);
							PIX_FMA(4);
							PIX_FMA(5);
							PIX_FMA(6);
							PIX_FMA(7);
						}
				PIX_STORE(0);
				PIX_STORE(1);
				PIX_STORE(2);
				PIX_STORE(3);
				PIX_STORE(4);
				PIX_STORE(5);
				PIX_STORE(6);
				PIX_STORE(7);
			}
		}
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
