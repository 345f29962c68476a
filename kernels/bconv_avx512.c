/* SPDX-License-Identifier: MIT */
/* AVX-512 VPOPCNTDQ binary convolution and sign/threshold packing. */
#include <immintrin.h>
#include <stdbool.h>
#include <string.h>

#include "kernels/bconv512_steps.h"
#include "kernels/bin_impl.h"
#include "kernels/bin_tmpl.h"
#include "kernels/kern.h"

/*
 * Vectorized across output channels: 8 channels' weights are transposed into a tile
 * [tap word][8] so that one broadcast input word meets 8 weight words in one zmm. A pixel's
 * valid taps in one kernel row are contiguous both in the input (pixel-major) and in the tile.
 */
KERN_BCONV_TILE_LOAD(tile_load, uint64_t, 8)

static inline __m512i pixel_dot(const uint64_t *x, const struct kern_conv_geom *g,
				const uint64_t *tile, uint32_t oy, uint32_t ox)
{
	uint32_t wpp = model_words(g->c);
	__m512i acc = _mm512_setzero_si512();
	KERN_BCONV_WINDOW(g, g->k, oy, ox);

	for (uint32_t ky = ky0; ky < ky1; ky++) {
		const uint64_t *xr = KERN_BCONV_ROW_X(x, g, wpp, ky);
		const uint64_t *tr = KERN_BCONV_ROW_TAPS(tile, g, wpp, 8, ky);
		uint32_t len = (kx1 - kx0) * wpp;

		for (uint32_t t = 0; t < len; t++)
			acc = _mm512_add_epi64(acc, _mm512_popcnt_epi64(_mm512_xor_si512(
							_mm512_set1_epi64((long long)xr[t]),
							_mm512_load_si512(tr + (size_t)t * 8))));
	}
	return _mm512_sub_epi64(_mm512_set1_epi64(KERN_BCONV_WINDOW_BITS(g->c)),
				_mm512_add_epi64(acc, acc));
}

/*
 * Blocked form of the integer conv (with thresholds: bconv32/bconv64_avx512.c), used when a
 * block's tile fits: 32 output channels per block in four zmm accumulators, tile
 * [tap word][32], so one broadcast input word feeds four XOR + popcounts (independent chains)
 * and the tile is loaded once per block for the whole batch.
 */
#define BLK 32

KERN_BCONV_TILE_LOAD(tile_load_blk, uint64_t, BLK)

KERN_BC_PIXEL_DOT64(pixel_dot_blk, 4)

static bool blk_fits(uint32_t taps)
{
	return (size_t)taps * BLK <= (size_t)KERN_BCONV_TILE_TAPS * 8;
}

static void bconv_blk(const uint64_t *x, uint32_t batch, const struct kern_conv_geom *g,
		      const uint64_t *w, int32_t *y, uint64_t *tile)
{
	uint32_t taps = g->k * g->k * model_words(g->c);
	size_t in_words = (size_t)g->h * g->w * model_words(g->c), ohw = (size_t)g->oh * g->ow;
	int32_t d[BLK];

	for (uint32_t o = 0; o < g->o; o += BLK) {
		uint32_t cnt = g->o - o < BLK ? g->o - o : BLK;

		tile_load_blk(w, o, cnt, taps, tile);
		for (uint32_t b = 0; b < batch; b++) {
			int32_t *yb = y + (size_t)b * g->o * ohw + o * ohw;

			for (uint32_t oy = 0; oy < g->oh; oy++)
				for (uint32_t ox = 0; ox < g->ow; ox++) {
					__m512i dot[4];
					size_t pix = (size_t)oy * g->ow + ox;

					pixel_dot_blk(x + b * in_words, g, tile, oy, ox, dot);
					for (int v = 0; v < 4; v++)
						_mm256_storeu_si256((__m256i *)(d + 8 * v),
								    _mm512_cvtepi64_epi32(dot[v]));
					for (uint32_t i = 0; i < cnt; i++)
						yb[i * ohw + pix] = d[i];
				}
		}
	}
}

void kern_avx512_bconv(const uint64_t *x, uint32_t batch, const struct kern_conv_geom *g,
		       const uint64_t *w, int32_t *y)
{
	uint32_t taps = g->k * g->k * model_words(g->c);
	size_t in_words = (size_t)g->h * g->w * model_words(g->c), ohw = (size_t)g->oh * g->ow;
	uint64_t tile[KERN_BCONV_TILE_TAPS * 8] __attribute__((aligned(64)));
	int32_t d[8];

	if (kern_avx512_bconv32_fits(g)) {
		kern_avx512_bconv32(x, batch, g, w, y);
		return;
	}
	if (taps > KERN_BCONV_TILE_TAPS) {
		kern_ref_bconv(x, batch, g, w, y);
		return;
	}
	if (blk_fits(taps)) {
		bconv_blk(x, batch, g, w, y, tile);
		return;
	}
	for (uint32_t o = 0; o < g->o; o += 8) {
		uint32_t cnt = g->o - o < 8 ? g->o - o : 8;

		tile_load(w, o, cnt, taps, tile);
		for (uint32_t b = 0; b < batch; b++) {
			int32_t *yb = y + (size_t)b * g->o * ohw + o * ohw;

			for (uint32_t oy = 0; oy < g->oh; oy++)
				for (uint32_t ox = 0; ox < g->ow; ox++) {
					__m512i dot = pixel_dot(x + b * in_words, g, tile, oy, ox);
					size_t pix = (size_t)oy * g->ow + ox;

					_mm256_storeu_si256((__m256i *)d,
							    _mm512_cvtepi64_epi32(dot));
					for (uint32_t i = 0; i < cnt; i++)
						yb[i * ohw + pix] = d[i];
				}
		}
	}
}

void kern_avx512_bconv_thr(const uint64_t *x, uint32_t batch, const struct kern_conv_geom *g,
			   const uint64_t *w, const struct kern_thresh *t, uint64_t *y)
{
	uint32_t taps = g->k * g->k * model_words(g->c), ow = model_words(g->o);
	size_t in_words = (size_t)g->h * g->w * model_words(g->c), ohw = (size_t)g->oh * g->ow;
	uint64_t tile[KERN_BCONV_TILE_TAPS * 8] __attribute__((aligned(64)));

	if (kern_avx512_bconv32_fits(g)) {
		kern_avx512_bconv32_thr(x, batch, g, w, t, y);
		return;
	}
	if (kern_avx512_bconv64_fits(g)) {
		kern_avx512_bconv64_thr(x, batch, g, w, t, y);
		return;
	}
	if (taps > KERN_BCONV_TILE_TAPS) {
		kern_ref_bconv_thr(x, batch, g, w, t, y);
		return;
	}
	memset(y, 0, (size_t)batch * ohw * ow * sizeof(*y));
	for (uint32_t o = 0; o < g->o; o += 8) {
		uint32_t cnt = g->o - o < 8 ? g->o - o : 8;
		__mmask8 valid = (__mmask8)((1u << cnt) - 1);
		__m512i thr = _mm512_cvtepi32_epi64(_mm256_maskz_loadu_epi32(valid, t->thr + o));
		__m128i fl = _mm_maskz_loadu_epi8(valid, t->flip + o);
		__mmask8 flip = (__mmask8)_mm_test_epi8_mask(fl, fl);

		tile_load(w, o, cnt, taps, tile);
		for (uint32_t b = 0; b < batch; b++) {
			uint64_t *yb = y + (size_t)b * ohw * ow + o / 64;

			for (uint32_t oy = 0; oy < g->oh; oy++)
				for (uint32_t ox = 0; ox < g->ow; ox++) {
					__m512i dot = pixel_dot(x + b * in_words, g, tile, oy, ox);
					__mmask8 m = _mm512_mask_cmpge_epi64_mask(valid, dot, thr);

					yb[((size_t)oy * g->ow + ox) * ow] |=
					    (uint64_t)((m ^ flip) & valid) << (o % 64);
				}
		}
	}
}

/*
 * 8 channels x 8 pixels per step: one compare per channel gives a byte over pixels, a bit
 * transpose turns them into one byte of channels per pixel, stored straight into its word.
 */
static void pack(const double *x, uint32_t batch, uint32_t c, uint32_t h, uint32_t w,
		 const struct kern_thresh *t, uint64_t *y)
{
	size_t hw = (size_t)h * w;
	uint32_t wpp = model_words(c);

	memset(y, 0, (size_t)batch * hw * wpp * sizeof(*y));
	for (uint32_t b = 0; b < batch; b++, x += c * hw, y += hw * wpp) {
		uint8_t *yb = (uint8_t *)y;

		for (uint32_t c0 = 0; c0 < c; c0 += 8) {
			uint32_t nc = c - c0 < 8 ? c - c0 : 8;
			__m512d thr[8];
			uint64_t flip = 0;

			for (uint32_t i = 0; i < nc; i++) {
				thr[i] = _mm512_set1_pd(t ? (double)t->thr[c0 + i] : 0.0);
				if (t && t->flip[c0 + i])
					flip |= 0xffull << (8 * i);
			}
			for (size_t p0 = 0; p0 < hw; p0 += 8) {
				uint32_t np = hw - p0 < 8 ? (uint32_t)(hw - p0) : 8;
				__mmask8 pm = (__mmask8)((1u << np) - 1);
				uint64_t m = 0;

				for (uint32_t i = 0; i < nc; i++) {
					__m512d v =
					    _mm512_maskz_loadu_pd(pm, x + (c0 + i) * hw + p0);

					m |= (uint64_t)_mm512_cmp_pd_mask(v, thr[i], _CMP_GE_OQ)
					     << (8 * i);
				}
				m = kern_transpose8(m ^ flip);
				for (uint32_t p = 0; p < np; p++)
					yb[((p0 + p) * wpp + c0 / 64) * 8 + (c0 % 64) / 8] =
					    (uint8_t)(m >> (8 * p));
			}
		}
	}
}

KERN_PACK_ENTRIES(kern_avx512_sign_pack, kern_avx512_threshold_pack, pack)
