/* SPDX-License-Identifier: MIT */
/*
 * AVX-512 VPOPCNTDQ binary convolution of inputs with at most 32 channels: a pixel's word holds
 * at most 32 bits, so 32-bit lanes (vpopcntd) count 16 output channels per vector where 64-bit
 * lanes would count 8 with half of every word empty.
 */
#include <immintrin.h>

#include "kernels/bconv512_steps.h"
#include "kernels/bin_impl.h"
#include "kernels/bin_tmpl.h"
#include "kernels/kern.h"

#define BLK32 64 /* output channels per block: four vectors of 16 */

KERN_BCONV_TILE_LOAD(tile_load32, uint32_t, BLK32)

static inline void pixel_dot32(const uint64_t *x, const struct kern_conv_geom *g,
			       const uint32_t *tile, uint32_t oy, uint32_t ox, __m512i d[4])
{
	__m512i n;
	KERN_BC_ZERO4();
	KERN_BCONV_WINDOW(g, g->k, oy, ox);

	for (uint32_t ky = ky0; ky < ky1; ky++) {
		const uint64_t *xr = KERN_BCONV_ROW_X(x, g, 1, ky);
		const uint32_t *tr = KERN_BCONV_ROW_TAPS(tile, g, 1, BLK32, ky);

		for (uint32_t t = 0; t < kx1 - kx0; t++, tr += BLK32) {
			__m512i xb = _mm512_set1_epi32((int)(uint32_t)xr[t]);

			KERN_BC_ACC4(32);
		}
	}
	n = _mm512_set1_epi32((int)KERN_BCONV_WINDOW_BITS(g->c));
	KERN_BC_DOTS4(32);
}

/*
 * dot = n - 2 pop >= thr exactly when pop <= floor((n - thr) / 2): that bound per lane, clamped
 * to [-1, n] (pop lies in [0, n]) so that it fits 32 bits.
 */
static __m512i pop_bounds(__m512i thr, uint32_t n)
{
	__m512i lo = _mm512_cvtepi32_epi64(_mm512_castsi512_si256(thr));
	__m512i hi = _mm512_cvtepi32_epi64(_mm512_extracti64x4_epi64(thr, 1));
	__m512i nn = _mm512_set1_epi64(n), m1 = _mm512_set1_epi64(-1);

	lo = _mm512_min_epi64(_mm512_max_epi64(_mm512_srai_epi64(_mm512_sub_epi64(nn, lo), 1), m1),
			      nn);
	hi = _mm512_min_epi64(_mm512_max_epi64(_mm512_srai_epi64(_mm512_sub_epi64(nn, hi), 1), m1),
			      nn);
	return _mm512_inserti64x4(_mm512_castsi256_si512(_mm512_cvtepi64_epi32(lo)),
				  _mm512_cvtepi64_epi32(hi), 1);
}

/*
 * A run of npix output pixels of one row whose 3x3 taps all fall inside the input (stride words
 * between the runs' windows, w words per input row): popcounts only, each compared with pmax,
 * the largest popcount whose dot 9 c - 2 pop still reaches the threshold.
 */
static void run32_k3(const uint64_t *x0, size_t w, uint32_t stride, uint32_t npix,
		     const uint32_t *tile, const __m512i pmax[4], uint64_t flip, uint64_t valid,
		     uint64_t *y, size_t ystep)
{
	for (uint32_t p = 0; p < npix; p++, x0 += stride, y += ystep) {
		KERN_BC_ZERO4();
		const uint32_t *tp = tile;
		const uint64_t *xp = x0;
		uint64_t m;

#pragma GCC unroll 9
		for (uint32_t t = 0; t < 9; t++) {
			const uint32_t *tr = tp + t * BLK32;
			__m512i xb = _mm512_set1_epi32((int)(uint32_t)xp[(t / 3) * w + t % 3]);

			KERN_BC_ACC4(32);
			/* keeps the taps in order: hoisting them all spills registers */
			__asm__("" : "+v"(a0), "+v"(a1), "+v"(a2), "+v"(a3), "+r"(tp), "+r"(xp));
		}
		m = KERN_BC_LE_BITS(32, 16, 0) | KERN_BC_LE_BITS(32, 16, 1) |
		    KERN_BC_LE_BITS(32, 16, 2) | KERN_BC_LE_BITS(32, 16, 3);
		*y = (m ^ flip) & valid;
	}
}

/* Threshold bits of a 3x3 pixel with taps outside the input (no loops: each tap tested). */
static uint64_t edge32_k3(const uint64_t *x, const struct kern_conv_geom *g, const uint32_t *tile,
			  uint32_t oy, uint32_t ox, const __m512i thr[4], uint64_t flip,
			  uint64_t valid)
{
	__m512i n;
	KERN_BC_ZERO4();
	uint64_t m;
	KERN_BCONV_WINDOW(g, 3, oy, ox);

#pragma GCC unroll 9
	for (uint32_t t = 0; t < 9; t++) {
		const uint32_t *tr = tile + t * BLK32;
		__m512i xb;

		if (t / 3 < ky0 || t / 3 >= ky1 || t % 3 < kx0 || t % 3 >= kx1)
			continue;
		xb = _mm512_set1_epi32((int)(uint32_t)x[(iy + t / 3) * g->w + ix + t % 3]);
		KERN_BC_ACC4(32);
	}
	n = _mm512_set1_epi32((int)KERN_BCONV_WINDOW_BITS(g->c));
	m = KERN_BC_GE_BITS(32, 16, 0) | KERN_BC_GE_BITS(32, 16, 1) | KERN_BC_GE_BITS(32, 16, 2) |
	    KERN_BC_GE_BITS(32, 16, 3);
	return (m ^ flip) & valid;
}

bool kern_avx512_bconv32_fits(const struct kern_conv_geom *g)
{
	return g->c <= 32 && (size_t)g->k * g->k * BLK32 <= KERN_BCONV_TILE_TAPS * 16;
}

void kern_avx512_bconv32(const uint64_t *x, uint32_t batch, const struct kern_conv_geom *g,
			 const uint64_t *w, int32_t *y)
{
	uint32_t taps = g->k * g->k;
	size_t in_words = (size_t)g->h * g->w, ohw = (size_t)g->oh * g->ow;
	uint32_t tile[KERN_BCONV_TILE_TAPS * 16] __attribute__((aligned(64)));
	int32_t d[BLK32];

	for (uint32_t o = 0; o < g->o; o += BLK32) {
		uint32_t cnt = g->o - o < BLK32 ? g->o - o : BLK32;

		tile_load32(w, o, cnt, taps, tile);
		for (uint32_t b = 0; b < batch; b++) {
			int32_t *yb = y + (size_t)b * g->o * ohw + o * ohw;

			for (uint32_t oy = 0; oy < g->oh; oy++)
				for (uint32_t ox = 0; ox < g->ow; ox++) {
					__m512i dot[4];
					size_t pix = (size_t)oy * g->ow + ox;

					pixel_dot32(x + b * in_words, g, tile, oy, ox, dot);
					for (int v = 0; v < 4; v++)
						_mm512_storeu_si512(d + 16 * v, dot[v]);
					for (uint32_t i = 0; i < cnt; i++)
						yb[i * ohw + pix] = d[i];
				}
		}
	}
}

void kern_avx512_bconv32_thr(const uint64_t *x, uint32_t batch, const struct kern_conv_geom *g,
			     const uint64_t *w, const struct kern_thresh *t, uint64_t *y)
{
	uint32_t taps = g->k * g->k, ow = model_words(g->o), ylo, yhi, xlo, xhi;
	size_t in_words = (size_t)g->h * g->w, ohw = (size_t)g->oh * g->ow;
	uint32_t tile[KERN_BCONV_TILE_TAPS * 16] __attribute__((aligned(64)));

	kern_k3_interior(g->h, g->oh, g, &ylo, &yhi);
	kern_k3_interior(g->w, g->ow, g, &xlo, &xhi);
	for (uint32_t o = 0; o < g->o; o += BLK32) {
		uint32_t cnt = g->o - o < BLK32 ? g->o - o : BLK32;
		__m512i thr[4], pmax[4];
		__mmask16 valid[4], flip[4];
		uint64_t flip64 = 0, valid64 = 0;

		for (uint32_t v = 0; v < 4; v++) {
			uint32_t c16 = cnt > 16 * v ? cnt - 16 * v : 0;
			__m128i fl;

			valid[v] = (__mmask16)(c16 >= 16 ? 0xffff : (1u << c16) - 1);
			thr[v] = _mm512_maskz_loadu_epi32(valid[v], t->thr + o + 16 * v);
			fl = _mm_maskz_loadu_epi8(valid[v], t->flip + o + 16 * v);
			flip[v] = _mm_test_epi8_mask(fl, fl);
			pmax[v] = pop_bounds(thr[v], 9 * g->c);
			flip64 |= (uint64_t)flip[v] << (16 * v);
			valid64 |= (uint64_t)valid[v] << (16 * v);
		}
		tile_load32(w, o, cnt, taps, tile);
		for (uint32_t b = 0; b < batch; b++) {
			uint64_t *yb = y + (size_t)b * ohw * ow + o / 64;
			const uint64_t *xb = x + b * in_words;

			for (uint32_t oy = 0; oy < g->oh; oy++)
				for (uint32_t ox = 0; ox < g->ow; ox++) {
					__m512i dot[4];
					uint64_t m = 0;

					if (g->k == 3 && oy >= ylo && oy < yhi && ox >= xlo &&
					    ox < xhi) {
						run32_k3(
						    xb + ((size_t)oy * g->stride - g->pad) * g->w +
							(size_t)ox * g->stride - g->pad,
						    g->w, g->stride, xhi - ox, tile, pmax, flip64,
						    valid64, yb + ((size_t)oy * g->ow + ox) * ow,
						    ow);
						ox = xhi - 1;
						continue;
					}
					if (g->k == 3) {
						yb[((size_t)oy * g->ow + ox) * ow] = edge32_k3(
						    xb, g, tile, oy, ox, thr, flip64, valid64);
						continue;
					}
					pixel_dot32(xb, g, tile, oy, ox, dot);
					for (uint32_t v = 0; v < 4; v++)
						m |= (uint64_t)((_mm512_mask_cmpge_epi32_mask(
								     valid[v], dot[v], thr[v]) ^
								 flip[v]) &
								valid[v])
						     << (16 * v);
					yb[((size_t)oy * g->ow + ox) * ow] = m;
				}
		}
	}
}
