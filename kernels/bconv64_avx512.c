/* SPDX-License-Identifier: MIT */
/*
 * AVX-512 VPOPCNTDQ binary convolution with thresholds, 64 output channels per block: eight
 * zmm accumulators, so one broadcast input word feeds eight XOR + popcounts, the per-pixel work
 * (tap ranges, compares) is shared by 64 channels, and a block's bits are one output word.
 */
#include <immintrin.h>

#include "kernels/bconv512_steps.h"
#include "kernels/bin_impl.h"
#include "kernels/bin_tmpl.h"
#include "kernels/kern.h"

#define BLK64	  64
#define TILE_TAPS 144 /* taps x words per pixel: 3x3 kernels up to 1024 input channels */

KERN_BCONV_TILE_LOAD(tile_load64, uint64_t, BLK64)

KERN_BC_PIXEL_DOT64(pixel_dot64, 8)

/*
 * A run of npix output pixels of one row whose 3x3 taps all fall inside the input (wpp words a
 * pixel, w words an input row, step words between the runs' windows): popcounts only, each
 * compared with pmax, the largest popcount whose dot 9 c - 2 pop still reaches the threshold.
 */
static inline __attribute__((always_inline)) void
run64_k3(const uint64_t *x0, size_t w, size_t step, uint32_t wpp, uint32_t npix,
	 const uint64_t *tile, const __m512i pmax[8], uint64_t flip, uint64_t valid, uint64_t *y,
	 size_t ystep)
{
	for (uint32_t p = 0; p < npix; p++, x0 += step, y += ystep) {
		KERN_BC_ZERO8();
		const uint64_t *tp = tile, *xp = x0;
		uint64_t m;

#pragma GCC unroll 9
		for (uint32_t t = 0; t < 9; t++)
			for (uint32_t j = 0; j < wpp; j++) {
				const uint64_t *tr = tp + ((size_t)t * wpp + j) * BLK64;
				__m512i xb = _mm512_set1_epi64(
				    (long long)xp[(t / 3) * w + (size_t)(t % 3) * wpp + j]);

				KERN_BC_ACC8(64);
				/* keeps the taps in order: hoisting them all spills every register
				 */
				__asm__(""
					: "+v"(a0), "+v"(a1), "+v"(a2), "+v"(a3), "+v"(a4),
					  "+v"(a5), "+v"(a6), "+v"(a7), "+r"(tp), "+r"(xp));
			}
		m = KERN_BC_LE_BITS(64, 8, 0) | KERN_BC_LE_BITS(64, 8, 1) |
		    KERN_BC_LE_BITS(64, 8, 2) | KERN_BC_LE_BITS(64, 8, 3) |
		    KERN_BC_LE_BITS(64, 8, 4) | KERN_BC_LE_BITS(64, 8, 5) |
		    KERN_BC_LE_BITS(64, 8, 6) | KERN_BC_LE_BITS(64, 8, 7);
		*y = (m ^ flip) & valid;
	}
}

/* One word a pixel (the taps fully unrolled), and any number. */
static void run64_k3_w1(const uint64_t *x0, size_t w, size_t step, uint32_t npix,
			const uint64_t *tile, const __m512i pmax[8], uint64_t flip, uint64_t valid,
			uint64_t *y, size_t ystep)
{
	run64_k3(x0, w, step, 1, npix, tile, pmax, flip, valid, y, ystep);
}

static void run64_k3_wn(const uint64_t *x0, size_t w, size_t step, uint32_t wpp, uint32_t npix,
			const uint64_t *tile, const __m512i pmax[8], uint64_t flip, uint64_t valid,
			uint64_t *y, size_t ystep)
{
	run64_k3(x0, w, step, wpp, npix, tile, pmax, flip, valid, y, ystep);
}

/* Threshold bits of a 3x3 pixel with taps outside the input (the taps unrolled, each tested). */
static inline __attribute__((always_inline)) uint64_t
edge64_k3(const uint64_t *x, const struct kern_conv_geom *g, uint32_t wpp, const uint64_t *tile,
	  uint32_t oy, uint32_t ox, const __m512i thr[8], uint64_t flip, uint64_t valid)
{
	__m512i n;
	KERN_BC_ZERO8();
	uint64_t m;
	KERN_BCONV_WINDOW(g, 3, oy, ox);

#pragma GCC unroll 9
	for (uint32_t t = 0; t < 9; t++) {
		const uint64_t *xr = x + ((iy + t / 3) * g->w + ix + t % 3) * wpp;

		if (t / 3 < ky0 || t / 3 >= ky1 || t % 3 < kx0 || t % 3 >= kx1)
			continue;
		for (uint32_t j = 0; j < wpp; j++) {
			const uint64_t *tr = tile + ((size_t)t * wpp + j) * BLK64;
			__m512i xb = _mm512_set1_epi64((long long)xr[j]);

			KERN_BC_ACC8(64);
		}
	}
	n = _mm512_set1_epi64(KERN_BCONV_WINDOW_BITS(g->c));
	m = KERN_BC_GE_BITS(64, 8, 0) | KERN_BC_GE_BITS(64, 8, 1) | KERN_BC_GE_BITS(64, 8, 2) |
	    KERN_BC_GE_BITS(64, 8, 3) | KERN_BC_GE_BITS(64, 8, 4) | KERN_BC_GE_BITS(64, 8, 5) |
	    KERN_BC_GE_BITS(64, 8, 6) | KERN_BC_GE_BITS(64, 8, 7);
	return (m ^ flip) & valid;
}

/* One word a pixel (the taps fully unrolled), and any number. */
static uint64_t edge64_k3_w1(const uint64_t *x, const struct kern_conv_geom *g,
			     const uint64_t *tile, uint32_t oy, uint32_t ox, const __m512i thr[8],
			     uint64_t flip, uint64_t valid)
{
	return edge64_k3(x, g, 1, tile, oy, ox, thr, flip, valid);
}

static uint64_t edge64_k3_wn(const uint64_t *x, const struct kern_conv_geom *g,
			     const uint64_t *tile, uint32_t oy, uint32_t ox, const __m512i thr[8],
			     uint64_t flip, uint64_t valid)
{
	return edge64_k3(x, g, model_words(g->c), tile, oy, ox, thr, flip, valid);
}

bool kern_avx512_bconv64_fits(const struct kern_conv_geom *g)
{
	return g->c > 32 && (size_t)g->k * g->k * model_words(g->c) <= TILE_TAPS;
}

void kern_avx512_bconv64_thr(const uint64_t *x, uint32_t batch, const struct kern_conv_geom *g,
			     const uint64_t *w, const struct kern_thresh *t, uint64_t *y)
{
	uint32_t wpp = model_words(g->c), taps = g->k * g->k * wpp, ow = model_words(g->o);
	uint32_t ylo, yhi, xlo, xhi;
	size_t in_words = (size_t)g->h * g->w * model_words(g->c), ohw = (size_t)g->oh * g->ow;
	uint64_t tile[TILE_TAPS * BLK64] __attribute__((aligned(64)));

	kern_k3_interior(g->h, g->oh, g, &ylo, &yhi);
	kern_k3_interior(g->w, g->ow, g, &xlo, &xhi);
	for (uint32_t o = 0; o < g->o; o += BLK64) {
		uint32_t cnt = g->o - o < BLK64 ? g->o - o : BLK64;
		__m512i thr[8], pmax[8];
		__mmask8 valid[8], flip[8];
		uint64_t flip64 = 0, valid64 = 0;

		for (uint32_t v = 0; v < 8; v++) {
			uint32_t c8 = cnt > 8 * v ? cnt - 8 * v : 0;
			__m128i fl;

			valid[v] = (__mmask8)((1u << (c8 < 8 ? c8 : 8)) - 1);
			thr[v] = _mm512_cvtepi32_epi64(
			    _mm256_maskz_loadu_epi32(valid[v], t->thr + o + 8 * v));
			fl = _mm_maskz_loadu_epi8(valid[v], t->flip + o + 8 * v);
			flip[v] = (__mmask8)_mm_test_epi8_mask(fl, fl);
			/* floor((9 c - thr) / 2): thr is int32, so no lane overflows */
			pmax[v] = _mm512_srai_epi64(
			    _mm512_sub_epi64(_mm512_set1_epi64(9 * (int64_t)g->c), thr[v]), 1);
			flip64 |= (uint64_t)flip[v] << (8 * v);
			valid64 |= (uint64_t)valid[v] << (8 * v);
		}
		tile_load64(w, o, cnt, taps, tile);
		for (uint32_t b = 0; b < batch; b++) {
			uint64_t *yb = y + (size_t)b * ohw * ow + o / 64;
			const uint64_t *xb = x + b * in_words;

			for (uint32_t oy = 0; oy < g->oh; oy++)
				for (uint32_t ox = 0; ox < g->ow; ox++) {
					__m512i dot[8];
					uint64_t m = 0;
					bool inner = g->k == 3 && oy >= ylo && oy < yhi &&
						     ox >= xlo && ox < xhi;

					if (inner) {
						const uint64_t *x0 =
						    xb + (((size_t)oy * g->stride - g->pad) * g->w +
							  (size_t)ox * g->stride - g->pad) *
							     wpp;
						uint64_t *y0 = yb + ((size_t)oy * g->ow + ox) * ow;

						if (wpp == 1)
							run64_k3_w1(x0, g->w, g->stride, xhi - ox,
								    tile, pmax, flip64, valid64, y0,
								    ow);
						else
							run64_k3_wn(x0, (size_t)g->w * wpp,
								    (size_t)g->stride * wpp, wpp,
								    xhi - ox, tile, pmax, flip64,
								    valid64, y0, ow);
						ox = xhi - 1;
						continue;
					}
					if (g->k == 3) {
						yb[((size_t)oy * g->ow + ox) * ow] =
						    wpp == 1 ? edge64_k3_w1(xb, g, tile, oy, ox,
									    thr, flip64, valid64)
							     : edge64_k3_wn(xb, g, tile, oy, ox,
									    thr, flip64, valid64);
						continue;
					}
					pixel_dot64(xb, g, tile, oy, ox, dot);
					for (uint32_t v = 0; v < 8; v++)
						m |= (uint64_t)((_mm512_mask_cmpge_epi64_mask(
								     valid[v], dot[v], thr[v]) ^
								 flip[v]) &
								valid[v])
						     << (8 * v);
					yb[((size_t)oy * g->ow + ox) * ow] = m;
				}
		}
	}
}
