/* SPDX-License-Identifier: MIT */
/*
 * AVX-512 VPOPCNTDQ binary GEMM with one image per lane. Groups of 8 images are packed word by
 * word (lane l of vector j holds word j of image l), so each weight word is broadcast and meets 8
 * images in one vpxorq + vpopcntq + vpaddq and the counts of a tile come out per image, with no
 * horizontal sums: the inner loop is the XOR + popcount + add chain and nothing else. A tile is
 * 8 weight rows x 16 images (16 accumulators); its weight rows stay in L1 while every image group
 * passes over them, and the packed images (at most GEMM8_XP_WORDS words) stay in L1 throughout.
 */
#include <immintrin.h>
#include <string.h>

#include "kernels/bin_impl.h"
#include "kernels/kern.h"

#define ALWAYS_INLINE inline __attribute__((always_inline))

/* Packed images per call: 32 KiB, which leaves room in L1 for the weight tile. */
#define GEMM8_XP_WORDS 4096u
#define TILE_ROWS      8

/*
 * acc[r][c] (lanes = images 8c..8c+7 of the group at xp) += popcount(x ^ w_r) over nw words.
 * Rows past `rows` repeat the last row (their results are dropped).
 */
static ALWAYS_INLINE void tile(const uint64_t *xp, uint32_t nw, const uint64_t *w, uint32_t rows,
			       int C, __m512i acc[TILE_ROWS][2])
{
	const uint64_t *wr[TILE_ROWS];

#pragma GCC unroll 8
	for (int r = 0; r < TILE_ROWS; r++) {
		wr[r] = w + (size_t)((uint32_t)r < rows ? (uint32_t)r : rows - 1) * nw;
#pragma GCC unroll 2
		for (int c = 0; c < C; c++)
			acc[r][c] = _mm512_setzero_si512();
	}
	for (uint32_t j = 0; j < nw; j++) {
		__m512i xv[2];

#pragma GCC unroll 2
		for (int c = 0; c < C; c++)
			xv[c] = _mm512_load_si512(xp + ((size_t)c * nw + j) * 8);
#pragma GCC unroll 8
		for (int r = 0; r < TILE_ROWS; r++) {
			__m512i wv = _mm512_set1_epi64((long long)wr[r][j]);

#pragma GCC unroll 2
			for (int c = 0; c < C; c++)
				acc[r][c] = _mm512_add_epi64(
				    acc[r][c], _mm512_popcnt_epi64(_mm512_xor_si512(xv[c], wv)));
		}
	}
}

/* v[r] (8 int32, lane l = image l) -> v[l] (lane r = row r). */
static ALWAYS_INLINE void transpose8x8(__m256i v[8])
{
	__m256i t[8], s[8];

#pragma GCC unroll 4
	for (int i = 0; i < 4; i++) {
		t[2 * i] = _mm256_unpacklo_epi32(v[2 * i], v[2 * i + 1]);
		t[2 * i + 1] = _mm256_unpackhi_epi32(v[2 * i], v[2 * i + 1]);
	}
#pragma GCC unroll 2
	for (int h = 0; h < 2; h++) {
		s[4 * h + 0] = _mm256_unpacklo_epi64(t[4 * h + 0], t[4 * h + 2]);
		s[4 * h + 1] = _mm256_unpackhi_epi64(t[4 * h + 0], t[4 * h + 2]);
		s[4 * h + 2] = _mm256_unpacklo_epi64(t[4 * h + 1], t[4 * h + 3]);
		s[4 * h + 3] = _mm256_unpackhi_epi64(t[4 * h + 1], t[4 * h + 3]);
	}
#pragma GCC unroll 4
	for (int i = 0; i < 4; i++) {
		v[i] = _mm256_permute2x128_si256(s[i], s[4 + i], 0x20);
		v[4 + i] = _mm256_permute2x128_si256(s[i], s[4 + i], 0x31);
	}
}

/* Word j of image l of each group of 8 goes to xp[(g * nw + j) * 8 + l]. */
static void pack8(const uint64_t *x, uint32_t imgs, uint32_t nw, uint64_t *xp)
{
	for (uint32_t b = 0; b < imgs; b++)
		for (uint32_t j = 0; j < nw; j++)
			xp[((size_t)(b / 8) * nw + j) * 8 + b % 8] = x[(size_t)b * nw + j];
}

/* Dots n - 2 popcount of one tile into y[img * ldy + o + r] for r < rows. */
static ALWAYS_INLINE void store_dots(__m512i acc[TILE_ROWS][2], int C, uint32_t n, uint32_t rows,
				     int32_t *y, size_t ldy)
{
	__m512i nn = _mm512_set1_epi64(n);
	__mmask8 m = (__mmask8)((1u << rows) - 1);

#pragma GCC unroll 2
	for (int c = 0; c < C; c++) {
		__m256i v[8];

#pragma GCC unroll 8
		for (int r = 0; r < TILE_ROWS; r++)
			v[r] = _mm512_cvtepi64_epi32(
			    _mm512_sub_epi64(nn, _mm512_add_epi64(acc[r][c], acc[r][c])));
		transpose8x8(v);
#pragma GCC unroll 8
		for (int l = 0; l < 8; l++)
			_mm256_mask_storeu_epi32(y + (size_t)(c * 8 + l) * ldy, m, v[l]);
	}
}

/* Threshold bits of one tile: byte o / 8 % 8 of word o / 64 of each image's output row. */
static ALWAYS_INLINE void store_bits(__m512i acc[TILE_ROWS][2], int C, uint32_t n, uint32_t rows,
				     const struct kern_thresh *t, uint32_t o, uint64_t *y,
				     uint32_t ow)
{
	__m512i nn = _mm512_set1_epi64(n);

#pragma GCC unroll 2
	for (int c = 0; c < C; c++) {
		uint64_t m = 0;

#pragma GCC unroll 8
		for (int r = 0; r < TILE_ROWS; r++) {
			__m512i dot = _mm512_sub_epi64(nn, _mm512_add_epi64(acc[r][c], acc[r][c]));
			uint32_t k;

			if ((uint32_t)r >= rows)
				continue;
			k = _mm512_cmpge_epi64_mask(dot, _mm512_set1_epi64(t->thr[o + r]));
			m |= (uint64_t)(t->flip[o + r] ? k ^ 0xffu : k) << (8 * r);
		}
		m = kern_transpose8(m);
		for (int l = 0; l < 8; l++)
			((uint8_t *)(y + (size_t)(c * 8 + l) * ow + o / 64))[o / 8 % 8] =
			    (uint8_t)(m >> (8 * l));
	}
}

/* One tile of C vectors of images (C a constant at each call) and its dots or bits. */
static ALWAYS_INLINE void tile_store(const uint64_t *xg, uint32_t nw, const uint64_t *wo,
				     uint32_t rows, int C, uint32_t n, uint32_t img, uint32_t o,
				     bool bits, int32_t *dy, size_t ldy,
				     const struct kern_thresh *t, uint64_t *by, uint32_t ow)
{
	__m512i acc[TILE_ROWS][2];

	tile(xg, nw, wo, rows, C, acc);
	if (bits)
		store_bits(acc, C, n, rows, t, o, by + (size_t)img * ow, ow);
	else
		store_dots(acc, C, n, rows, dy + (size_t)img * ldy + o, ldy);
}

/*
 * The first batch / 8 * 8 images, chunk by packed chunk: their dots (dy) or, with bits, their
 * threshold bits (by). Returns how many images it did, 0 when 8 images of n bits do not fit.
 */
static ALWAYS_INLINE uint32_t gemm8(const uint64_t *x, uint32_t batch, const uint64_t *w,
				    uint32_t out, uint32_t n, bool bits, int32_t *dy, size_t ldy,
				    const struct kern_thresh *t, uint64_t *by)
{
	uint64_t xp[GEMM8_XP_WORDS] __attribute__((aligned(64)));
	uint32_t nw = model_words(n), ow = model_words(out), fit = GEMM8_XP_WORDS / nw / 8 * 8;
	uint32_t batch8 = batch / 8 * 8, done = 0;

	if (!fit)
		return 0;
	if (bits)
		memset(by, 0, (size_t)batch8 * ow * 8);
	for (; done < batch8; done += fit < batch8 - done ? fit : batch8 - done) {
		uint32_t ci = fit < batch8 - done ? fit : batch8 - done;

		pack8(x + (size_t)done * nw, ci, nw, xp);
		for (uint32_t o = 0; o < out; o += TILE_ROWS) {
			uint32_t rows = out - o < TILE_ROWS ? out - o : TILE_ROWS;
			const uint64_t *wo = w + (size_t)o * nw;
			uint32_t g = 0;

			for (; g + 16 <= ci; g += 16)
				tile_store(xp + (size_t)g * nw, nw, wo, rows, 2, n, done + g, o,
					   bits, dy, ldy, t, by, ow);
			if (g < ci)
				tile_store(xp + (size_t)g * nw, nw, wo, rows, 1, n, done + g, o,
					   bits, dy, ldy, t, by, ow);
		}
	}
	return done;
}

uint32_t kern_avx512_gemm8(const uint64_t *x, uint32_t batch, const uint64_t *w, uint32_t out,
			   uint32_t n, int32_t *y, size_t ldy)
{
	return gemm8(x, batch, w, out, n, false, y, ldy, NULL, NULL);
}

uint32_t kern_avx512_gemm8_thr(const uint64_t *x, uint32_t batch, const uint64_t *w, uint32_t out,
			       uint32_t n, const struct kern_thresh *t, uint64_t *y)
{
	return gemm8(x, batch, w, out, n, true, NULL, 0, t, y);
}
