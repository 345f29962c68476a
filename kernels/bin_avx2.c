/* SPDX-License-Identifier: MIT */
/*
 * AVX2 binary kernels. Popcount is the nibble-table vpshufb method (Mula): byte counts are
 * summed in bytes for up to 31 vectors, then into 64-bit lanes with vpsadbw.
 */
#include <immintrin.h>
#include <string.h>

#include "kernels/bin_impl.h"
#include "kernels/bin_tmpl.h"
#include "kernels/kern.h"

#define ALWAYS_INLINE inline __attribute__((always_inline))
#define BYTE_RUN      31 /* 31 * 8 bits per byte stays below 256 */

static ALWAYS_INLINE __m256i popcnt8(__m256i v)
{
	const __m256i lut = _mm256_setr_epi8(0, 1, 1, 2, 1, 2, 2, 3, 1, 2, 2, 3, 2, 3, 3, 4, 0, 1,
					     1, 2, 1, 2, 2, 3, 1, 2, 2, 3, 2, 3, 3, 4);
	const __m256i low = _mm256_set1_epi8(0x0f);

	return _mm256_add_epi8(
	    _mm256_shuffle_epi8(lut, _mm256_and_si256(v, low)),
	    _mm256_shuffle_epi8(lut, _mm256_and_si256(_mm256_srli_epi16(v, 4), low)));
}

static ALWAYS_INLINE __m256i sum8(__m256i v)
{
	return _mm256_sad_epu8(v, _mm256_setzero_si256());
}

static ALWAYS_INLINE __m256i load_words(const uint64_t *p, uint32_t cnt)
{
	if (cnt >= 4)
		return _mm256_loadu_si256((const __m256i *)p);
	return _mm256_maskload_epi64(
	    (const long long *)p,
	    _mm256_cmpgt_epi64(_mm256_set1_epi64x(cnt), _mm256_setr_epi64x(0, 1, 2, 3)));
}

static ALWAYS_INLINE int64_t hsum(__m256i v)
{
	__m128i s = _mm_add_epi64(_mm256_castsi256_si128(v), _mm256_extracti128_si256(v, 1));

	return _mm_cvtsi128_si64(s) + _mm_extract_epi64(s, 1);
}

/* R x C block (<= 2 x 2): y[c * ldy + r] = n - 2 popcount(x_c ^ w_r). */
static ALWAYS_INLINE void gemm_block(const uint64_t *x, const uint64_t *w, uint32_t nw, uint32_t n,
				     int R, int C, int32_t *y, size_t ldy)
{
	__m256i acc[2][2];

#pragma GCC unroll 2
	for (int r = 0; r < R; r++)
#pragma GCC unroll 2
		for (int c = 0; c < C; c++)
			acc[r][c] = _mm256_setzero_si256();

	for (uint32_t j = 0; j < nw;) {
		__m256i a8[2][2];
		uint32_t end = nw - j > 4 * BYTE_RUN ? j + 4 * BYTE_RUN : nw;

#pragma GCC unroll 2
		for (int r = 0; r < R; r++)
#pragma GCC unroll 2
			for (int c = 0; c < C; c++)
				a8[r][c] = _mm256_setzero_si256();
		for (; j < end; j += 4) {
			__m256i xv[2], wv;

#pragma GCC unroll 2
			for (int c = 0; c < C; c++)
				xv[c] = load_words(x + (size_t)c * nw + j, end - j);
#pragma GCC unroll 2
			for (int r = 0; r < R; r++) {
				wv = load_words(w + (size_t)r * nw + j, end - j);
#pragma GCC unroll 2
				for (int c = 0; c < C; c++)
					a8[r][c] = _mm256_add_epi8(
					    a8[r][c], popcnt8(_mm256_xor_si256(xv[c], wv)));
			}
		}
#pragma GCC unroll 2
		for (int r = 0; r < R; r++)
#pragma GCC unroll 2
			for (int c = 0; c < C; c++)
				acc[r][c] = _mm256_add_epi64(acc[r][c], sum8(a8[r][c]));
	}
#pragma GCC unroll 2
	for (int c = 0; c < C; c++)
#pragma GCC unroll 2
		for (int r = 0; r < R; r++)
			y[c * ldy + r] = (int32_t)n - 2 * (int32_t)hsum(acc[r][c]);
}

/* C images at b against two weight rows at o, or one where only one is left. */
#define GEMM_IMAGES(C)                                                                             \
	do {                                                                                       \
		if (two)                                                                           \
			gemm_block(x + (size_t)b * nw, wo, nw, n, 2, C, y + b * ldy + o, ldy);     \
		else                                                                               \
			gemm_block(x + (size_t)b * nw, wo, nw, n, 1, C, y + b * ldy + o, ldy);     \
	} while (0)

static void gemm(const uint64_t *x, uint32_t batch, const uint64_t *w, uint32_t out, uint32_t n,
		 int32_t *y, size_t ldy)
{
	uint32_t nw = model_words(n);

	for (uint32_t o = 0; o < out; o += 2) {
		const uint64_t *wo = w + (size_t)o * nw;
		bool two = out - o >= 2;
		uint32_t b = 0;

		for (; b + 2 <= batch; b += 2)
			GEMM_IMAGES(2);
		if (b < batch)
			GEMM_IMAGES(1);
	}
}

static void avx2_bdense(const uint64_t *x, uint32_t batch, const uint64_t *w, uint32_t out,
			uint32_t n, int32_t *y)
{
	gemm(x, batch, w, out, n, y, out);
}

KERN_BDENSE_THR_BLOCKS(avx2_bdense_thr, uint64_t, nw, gemm, kern_thr_word)

static void u8_planes(const uint8_t *x, uint32_t n, uint64_t *p, int32_t *sumx)
{
	uint32_t nw = model_words(n);
	__m256i sum = _mm256_setzero_si256();
	uint8_t last[64] __attribute__((aligned(32)));

	for (uint32_t j = 0; j < nw; j++) {
		const uint8_t *src = x + (size_t)j * 64;
		__m256i lo, hi;

		if (n - j * 64 < 64) {
			memset(last, 0, sizeof(last));
			memcpy(last, src, n - j * 64);
			src = last;
		}
		lo = _mm256_loadu_si256((const __m256i *)src);
		hi = _mm256_loadu_si256((const __m256i *)(src + 32));
		sum = _mm256_add_epi64(sum, _mm256_add_epi64(sum8(lo), sum8(hi)));
		for (int b = 0; b < 8; b++) {
			uint32_t l = (uint32_t)_mm256_movemask_epi8(_mm256_slli_epi16(lo, 7 - b));
			uint32_t h = (uint32_t)_mm256_movemask_epi8(_mm256_slli_epi16(hi, 7 - b));

			p[b * nw + j] = (uint64_t)h << 32 | l;
		}
	}
	*sumx = (int32_t)hsum(sum);
}

static int32_t u8_dot(const uint64_t *p, const uint64_t *w, uint32_t nw, int32_t sumx)
{
	__m256i acc[8], s;

	for (int b = 0; b < 8; b++)
		acc[b] = _mm256_setzero_si256();
	for (uint32_t j = 0; j < nw; j += 4) {
		__m256i wv = load_words(w + j, nw - j);

		for (int b = 0; b < 8; b++)
			acc[b] = _mm256_add_epi64(
			    acc[b], sum8(popcnt8(_mm256_and_si256(
					load_words(p + (size_t)b * nw + j, nw - j), wv))));
	}
	s = acc[0];
	for (int b = 1; b < 8; b++)
		s = _mm256_add_epi64(s, _mm256_slli_epi64(acc[b], b));
	return 2 * (int32_t)hsum(s) - sumx;
}

KERN_BDENSE_U8_PLANES(avx2_bdense_u8, u8_planes, u8_dot)

/* Convolution vectorized across 4 output channels, as in bconv_avx512.c. */
KERN_BCONV_TILE_LOAD(tile_load, uint64_t, 4)

static inline __m256i pixel_dot(const uint64_t *x, const struct kern_conv_geom *g,
				const uint64_t *tile, uint32_t oy, uint32_t ox)
{
	uint32_t wpp = model_words(g->c);
	__m256i acc = _mm256_setzero_si256();
	KERN_BCONV_WINDOW(g, g->k, oy, ox);

	for (uint32_t ky = ky0; ky < ky1; ky++) {
		const uint64_t *xr = KERN_BCONV_ROW_X(x, g, wpp, ky);
		const uint64_t *tr = KERN_BCONV_ROW_TAPS(tile, g, wpp, 4, ky);
		uint32_t len = (kx1 - kx0) * wpp;
		__m256i a8 = _mm256_setzero_si256();

		for (uint32_t t = 0; t < len; t++) {
			if (t % BYTE_RUN == BYTE_RUN - 1) {
				acc = _mm256_add_epi64(acc, sum8(a8));
				a8 = _mm256_setzero_si256();
			}
			a8 = _mm256_add_epi8(
			    a8, popcnt8(_mm256_xor_si256(
				    _mm256_set1_epi64x((long long)xr[t]),
				    _mm256_load_si256((const __m256i *)(tr + t * 4)))));
		}
		acc = _mm256_add_epi64(acc, sum8(a8));
	}
	return _mm256_sub_epi64(_mm256_set1_epi64x(KERN_BCONV_WINDOW_BITS(g->c)),
				_mm256_add_epi64(acc, acc));
}

void kern_avx2_bconv(const uint64_t *x, uint32_t batch, const struct kern_conv_geom *g,
		     const uint64_t *w, int32_t *y)
{
	uint32_t taps = g->k * g->k * model_words(g->c);
	size_t in_words = (size_t)g->h * g->w * model_words(g->c), ohw = (size_t)g->oh * g->ow;
	uint64_t tile[KERN_BCONV_TILE_TAPS * 4] __attribute__((aligned(32)));
	int64_t d[4];

	if (taps > KERN_BCONV_TILE_TAPS) {
		kern_ref_bconv(x, batch, g, w, y);
		return;
	}
	for (uint32_t o = 0; o < g->o; o += 4) {
		uint32_t cnt = g->o - o < 4 ? g->o - o : 4;

		tile_load(w, o, cnt, taps, tile);
		for (uint32_t b = 0; b < batch; b++) {
			int32_t *yb = y + (size_t)b * g->o * ohw + o * ohw;

			for (uint32_t oy = 0; oy < g->oh; oy++)
				for (uint32_t ox = 0; ox < g->ow; ox++) {
					size_t pix = (size_t)oy * g->ow + ox;

					_mm256_storeu_si256(
					    (__m256i *)d,
					    pixel_dot(x + b * in_words, g, tile, oy, ox));
					for (uint32_t i = 0; i < cnt; i++)
						yb[i * ohw + pix] = (int32_t)d[i];
				}
		}
	}
}

void kern_avx2_bconv_thr(const uint64_t *x, uint32_t batch, const struct kern_conv_geom *g,
			 const uint64_t *w, const struct kern_thresh *t, uint64_t *y)
{
	uint32_t taps = g->k * g->k * model_words(g->c), ow = model_words(g->o);
	size_t in_words = (size_t)g->h * g->w * model_words(g->c), ohw = (size_t)g->oh * g->ow;
	uint64_t tile[KERN_BCONV_TILE_TAPS * 4] __attribute__((aligned(32)));
	int64_t d[4];

	if (taps > KERN_BCONV_TILE_TAPS) {
		kern_ref_bconv_thr(x, batch, g, w, t, y);
		return;
	}
	memset(y, 0, (size_t)batch * ohw * ow * sizeof(*y));
	for (uint32_t o = 0; o < g->o; o += 4) {
		uint32_t cnt = g->o - o < 4 ? g->o - o : 4;

		tile_load(w, o, cnt, taps, tile);
		for (uint32_t b = 0; b < batch; b++) {
			uint64_t *yb = y + (size_t)b * ohw * ow + o / 64;

			for (uint32_t oy = 0; oy < g->oh; oy++)
				for (uint32_t ox = 0; ox < g->ow; ox++) {
					uint64_t m = 0;

					_mm256_storeu_si256(
					    (__m256i *)d,
					    pixel_dot(x + b * in_words, g, tile, oy, ox));
					for (uint32_t i = 0; i < cnt; i++)
						m |= (uint64_t)kern_thr_bit((int32_t)d[i], t, o + i)
						     << i;
					yb[((size_t)oy * g->ow + ox) * ow] |= m << (o % 64);
				}
		}
	}
}

const struct kern_bin_ops kern_ops_avx2 = {
    .name = "avx2",
    .bdense = avx2_bdense,
    .bdense_thr = avx2_bdense_thr,
    .bdense_u8 = avx2_bdense_u8,
    .bdense_u8_thr = avx2_bdense_u8_thr,
    .bconv = kern_avx2_bconv,
    .bconv_thr = kern_avx2_bconv_thr,
    /* Packing and bit max-pool are store- and bandwidth-bound: AVX2 gains nothing there. */
    .sign_pack = kern_ref_sign_pack,
    .threshold_pack = kern_ref_threshold_pack,
    .maxpool_bits = kern_ref_maxpool_bits,
    .maxpool_bits_and = kern_ref_maxpool_bits_and,
    .sconv = kern_avx2_sconv,
    .sconv_packed = kern_avx2_sconv_packed,
    .decide_pack = kern_ref_decide_pack,
    .dot_f32 = kern_avx2_dot_f32,
    .dot_f64 = kern_avx2_dot_f64,
    .dot_u8 = kern_avx2_dot_u8,
};
