/* SPDX-License-Identifier: MIT */
/* AVX-512 VPOPCNTDQ binary dense kernels (conv and packing live in bconv_avx512.c). */
#include <immintrin.h>
#include <string.h>

#include "kernels/bin_impl.h"
#include "kernels/bin_tmpl.h"
#include "kernels/kern.h"

#define ALWAYS_INLINE inline __attribute__((always_inline))

/* Lanes 0..3 of the result hold the horizontal sums of a, b, c, d. */
static ALWAYS_INLINE __m256i hsum4(__m512i a, __m512i b, __m512i c, __m512i d)
{
	__m512i ab = _mm512_add_epi64(_mm512_unpacklo_epi64(a, b), _mm512_unpackhi_epi64(a, b));
	__m512i cd = _mm512_add_epi64(_mm512_unpacklo_epi64(c, d), _mm512_unpackhi_epi64(c, d));
	__m512i u = _mm512_add_epi64(_mm512_shuffle_i64x2(ab, cd, _MM_SHUFFLE(2, 0, 2, 0)),
				     _mm512_shuffle_i64x2(ab, cd, _MM_SHUFFLE(3, 1, 3, 1)));
	__m512i v = _mm512_add_epi64(u, _mm512_shuffle_i64x2(u, u, _MM_SHUFFLE(2, 3, 0, 1)));

	return _mm512_castsi512_si256(
	    _mm512_permutexvar_epi64(_mm512_setr_epi64(0, 1, 4, 5, 0, 1, 4, 5), v));
}

/* acc[r][c] += popcount(x_c ^ w_r) over the 8 words at j (those in mask m). */
static ALWAYS_INLINE void gemm_step(const uint64_t *x, const uint64_t *w, uint32_t nw, uint32_t j,
				    __mmask8 m, int R, int C, __m512i acc[4][4])
{
	__m512i xv[4], wv;

#pragma GCC unroll 4
	for (int c = 0; c < C; c++)
		xv[c] = _mm512_maskz_loadu_epi64(m, x + (size_t)c * nw + j);
#pragma GCC unroll 4
	for (int r = 0; r < R; r++) {
		wv = _mm512_maskz_loadu_epi64(m, w + (size_t)r * nw + j);
#pragma GCC unroll 4
		for (int c = 0; c < C; c++)
			acc[r][c] = _mm512_add_epi64(
			    acc[r][c], _mm512_popcnt_epi64(_mm512_xor_si512(xv[c], wv)));
	}
}

/*
 * One R x C block (R weight rows, C images, both <= 4): every weight vector is reused across
 * C images and every input vector across R rows, per-lane counts accumulate in registers and
 * are reduced once at the end. y[c * ldy + r] = n - 2 popcount(x_c ^ w_r).
 */
static ALWAYS_INLINE void gemm_block(const uint64_t *x, const uint64_t *w, uint32_t nw, uint32_t n,
				     int R, int C, int32_t *y, size_t ldy)
{
	__m512i acc[4][4];
	uint32_t full = nw / 8;
	__mmask8 tail = (__mmask8)((1u << (nw % 8)) - 1);

#pragma GCC unroll 4
	for (int r = 0; r < R; r++)
#pragma GCC unroll 4
		for (int c = 0; c < C; c++)
			acc[r][c] = _mm512_setzero_si512();

	for (uint32_t j = 0; j < full; j++)
		gemm_step(x, w, nw, j * 8, 0xff, R, C, acc);
	if (tail)
		gemm_step(x, w, nw, full * 8, tail, R, C, acc);

	if (R == 4) {
		__m256i nn = _mm256_set1_epi64x(n);

#pragma GCC unroll 4
		for (int c = 0; c < C; c++) {
			__m256i s = hsum4(acc[0][c], acc[1][c], acc[2][c], acc[3][c]);

			s = _mm256_sub_epi64(nn, _mm256_add_epi64(s, s));
			_mm_storeu_si128((__m128i *)(y + c * ldy), _mm256_cvtepi64_epi32(s));
		}
		return;
	}
#pragma GCC unroll 4
	for (int c = 0; c < C; c++)
#pragma GCC unroll 4
		for (int r = 0; r < R; r++)
			y[c * ldy + r] =
			    (int32_t)n - 2 * (int32_t)_mm512_reduce_add_epi64(acc[r][c]);
}

#define GEMM_CASE(R, C)                                                                            \
	case (R)*8 + (C):                                                                          \
		gemm_block(x, w, nw, n, R, C, y, ldy);                                             \
		break

static void gemm_dispatch(const uint64_t *x, const uint64_t *w, uint32_t nw, uint32_t n, uint32_t r,
			  uint32_t c, int32_t *y, size_t ldy)
{
	switch (r * 8 + c) {
		GEMM_CASE(4, 4);
		GEMM_CASE(4, 3);
		GEMM_CASE(4, 2);
		GEMM_CASE(4, 1);
		GEMM_CASE(3, 4);
		GEMM_CASE(3, 3);
		GEMM_CASE(3, 2);
		GEMM_CASE(3, 1);
		GEMM_CASE(2, 4);
		GEMM_CASE(2, 3);
		GEMM_CASE(2, 2);
		GEMM_CASE(2, 1);
		GEMM_CASE(1, 4);
		GEMM_CASE(1, 3);
		GEMM_CASE(1, 2);
		GEMM_CASE(1, 1);
	}
}

/* y[b * ldy + o] for b < batch, o < out. Row blocks outside so each block of weights is read
 * from memory once and stays in L1 while every image passes over it. */
static void gemm(const uint64_t *x, uint32_t batch, const uint64_t *w, uint32_t out, uint32_t n,
		 int32_t *y, size_t ldy)
{
	uint32_t nw = model_words(n);

	for (uint32_t o = 0; o < out; o += 4) {
		uint32_t r = out - o < 4 ? out - o : 4;

		for (uint32_t b = 0; b < batch; b += 4) {
			uint32_t c = batch - b < 4 ? batch - b : 4;

			gemm_dispatch(x + (size_t)b * nw, w + (size_t)o * nw, nw, n, r, c,
				      y + b * ldy + o, ldy);
		}
	}
}

/* Groups of 8 images one per lane (bin_gemm_avx512.c), the rest in row x image blocks. */
static void avx512_bdense(const uint64_t *x, uint32_t batch, const uint64_t *w, uint32_t out,
			  uint32_t n, int32_t *y)
{
	uint32_t done = batch >= 8 ? kern_avx512_gemm8(x, batch, w, out, n, y, out) : 0;

	if (done < batch)
		gemm(x + (size_t)done * model_words(n), batch - done, w, out, n,
		     y + (size_t)done * out, out);
}

static uint64_t thr_word(const int32_t *dot, const struct kern_thresh *t, uint32_t o, uint32_t cnt)
{
	uint64_t m = 0;

	for (uint32_t i = 0; i < cnt; i += 16) {
		__mmask16 k = cnt - i >= 16 ? 0xffff : (__mmask16)((1u << (cnt - i)) - 1);
		__m512i d = _mm512_maskz_loadu_epi32(k, dot + i);
		__m512i th = _mm512_maskz_loadu_epi32(k, t->thr + o + i);
		__m128i f = _mm_maskz_loadu_epi8(k, t->flip + o + i);
		__mmask16 bits = _mm512_mask_cmpge_epi32_mask(k, d, th) ^ _mm_test_epi8_mask(f, f);

		m |= (uint64_t)bits << i;
	}
	return m;
}

KERN_BDENSE_THR_BLOCKS(thr_blocks, uint64_t, nw, gemm, thr_word)

static void avx512_bdense_thr(const uint64_t *x, uint32_t batch, const uint64_t *w, uint32_t out,
			      uint32_t n, const struct kern_thresh *t, uint64_t *y)
{
	uint32_t done = batch >= 8 ? kern_avx512_gemm8_thr(x, batch, w, out, n, t, y) : 0;

	thr_blocks(x + (size_t)done * model_words(n), batch - done, w, out, n, t,
		   y + (size_t)done * model_words(out));
}

static void u8_planes(const uint8_t *x, uint32_t n, uint64_t *p, int32_t *sumx)
{
	uint32_t nw = model_words(n);
	__m512i sum = _mm512_setzero_si512();

	for (uint32_t j = 0; j < nw; j++) {
		uint32_t left = n - j * 64;
		__mmask64 k = left >= 64 ? ~0ull : (1ull << left) - 1;
		__m512i v = _mm512_maskz_loadu_epi8(k, x + (size_t)j * 64);

		sum = _mm512_add_epi64(sum, _mm512_sad_epu8(v, _mm512_setzero_si512()));
		for (int b = 0; b < 8; b++)
			p[b * nw + j] = _mm512_test_epi8_mask(v, _mm512_set1_epi8((char)(1 << b)));
	}
	*sumx = (int32_t)_mm512_reduce_add_epi64(sum);
}

/* Two weight rows against the 8 planes: 16 accumulators, weighted by 2^b at the end. */
static ALWAYS_INLINE void u8_block(const uint64_t *p, const uint64_t *w, uint32_t nw, int R,
				   int32_t sumx, int32_t *y)
{
	__m512i acc[2][8];
	uint32_t full = nw / 8;
	__mmask8 tail = (__mmask8)((1u << (nw % 8)) - 1);

#pragma GCC unroll 2
	for (int r = 0; r < R; r++)
#pragma GCC unroll 8
		for (int b = 0; b < 8; b++)
			acc[r][b] = _mm512_setzero_si512();
	for (uint32_t j = 0; j <= full; j++) {
		__mmask8 m = j < full ? 0xff : tail;

		if (j == full && !tail)
			break;
#pragma GCC unroll 2
		for (int r = 0; r < R; r++) {
			__m512i wv = _mm512_maskz_loadu_epi64(m, w + (size_t)r * nw + j * 8);

#pragma GCC unroll 8
			for (int b = 0; b < 8; b++) {
				__m512i pv =
				    _mm512_maskz_loadu_epi64(m, p + (size_t)b * nw + j * 8);

				acc[r][b] = _mm512_add_epi64(
				    acc[r][b], _mm512_popcnt_epi64(_mm512_and_si512(pv, wv)));
			}
		}
	}
#pragma GCC unroll 2
	for (int r = 0; r < R; r++) {
		__m512i s = acc[r][0];

#pragma GCC unroll 8
		for (int b = 1; b < 8; b++)
			s = _mm512_add_epi64(s, _mm512_slli_epi64(acc[r][b], b));
		y[r] = 2 * (int32_t)_mm512_reduce_add_epi64(s) - sumx;
	}
}

static void u8_gemv(const uint64_t *p, int32_t sumx, const uint64_t *w, uint32_t out, uint32_t nw,
		    int32_t *y)
{
	uint32_t o = 0;

	for (; o + 2 <= out; o += 2)
		u8_block(p, w + (size_t)o * nw, nw, 2, sumx, y + o);
	if (o < out)
		u8_block(p, w + (size_t)o * nw, nw, 1, sumx, y + o);
}

/*
 * A batch of u8 inputs as an int8 GEMM (VNNI): a block of 16 weight rows is expanded once per
 * call into +-1 bytes (zero past n), then every image meets it in 4 x 4 blocks of vpdpbusd
 * (64 exact u8 x s8 products summed per instruction), where the bit planes would spend 8
 * AND + popcount + add per 64 inputs. The sums are exact integers, as the planes' are.
 */
#define VNNI_ROWS 16
#define VNNI	  __attribute__((target("avx512vnni")))

/* Lane i of the result is the sum of the 16 lanes of v[i]. */
static ALWAYS_INLINE __m512i hsum16_epi32(const __m512i v[16])
{
	__m512i u[8], w[4], x0, x1;

#pragma GCC unroll 8
	for (int k = 0; k < 8; k++)
		u[k] = _mm512_add_epi32(_mm512_unpacklo_epi32(v[2 * k], v[2 * k + 1]),
					_mm512_unpackhi_epi32(v[2 * k], v[2 * k + 1]));
#pragma GCC unroll 4
	for (int k = 0; k < 4; k++)
		w[k] = _mm512_add_epi32(_mm512_unpacklo_epi64(u[2 * k], u[2 * k + 1]),
					_mm512_unpackhi_epi64(u[2 * k], u[2 * k + 1]));
	x0 = _mm512_add_epi32(_mm512_shuffle_i32x4(w[0], w[1], _MM_SHUFFLE(1, 0, 1, 0)),
			      _mm512_shuffle_i32x4(w[0], w[1], _MM_SHUFFLE(3, 2, 3, 2)));
	x1 = _mm512_add_epi32(_mm512_shuffle_i32x4(w[2], w[3], _MM_SHUFFLE(1, 0, 1, 0)),
			      _mm512_shuffle_i32x4(w[2], w[3], _MM_SHUFFLE(3, 2, 3, 2)));
	return _mm512_add_epi32(_mm512_shuffle_i32x4(x0, x1, _MM_SHUFFLE(2, 0, 2, 0)),
				_mm512_shuffle_i32x4(x0, x1, _MM_SHUFFLE(3, 1, 3, 1)));
}

/* 4 rows (wb, stride nb) x 4 images (x, stride n): y[c * ldy + r]; rows/imgs beyond are 0. */
static VNNI void vnni_block(const uint8_t *x, uint32_t n, uint32_t imgs, const int8_t *wb,
			    uint32_t nb, int32_t *y, size_t ldy, uint32_t rows)
{
	__m512i acc[16];
	int32_t out[16] __attribute__((aligned(64)));

#pragma GCC unroll 16
	for (int i = 0; i < 16; i++)
		acc[i] = _mm512_setzero_si512();
	for (uint32_t j = 0; j < n; j += 64) {
		__mmask64 m = n - j >= 64 ? ~0ull : (1ull << (n - j)) - 1;
		__m512i xv[4], wv;

#pragma GCC unroll 4
		for (uint32_t c = 0; c < 4; c++)
			xv[c] = _mm512_maskz_loadu_epi8(c < imgs ? m : 0, x + (size_t)c * n + j);
#pragma GCC unroll 4
		for (uint32_t r = 0; r < 4; r++) {
			wv = _mm512_load_si512(wb + (size_t)r * nb + j);
#pragma GCC unroll 4
			for (uint32_t c = 0; c < 4; c++)
				acc[r * 4 + c] = _mm512_dpbusd_epi32(acc[r * 4 + c], xv[c], wv);
		}
	}
	_mm512_store_si512(out, hsum16_epi32(acc));
	for (uint32_t c = 0; c < imgs; c++)
		for (uint32_t r = 0; r < rows; r++)
			y[c * ldy + r] = out[r * 4 + c];
}

/* y[b * ldy + o] = sum_i w[o][i] x[b][i], w +-1 from the packed signs. */
static VNNI void vnni_gemm(const uint8_t *x, uint32_t batch, const uint64_t *w, uint32_t out,
			   uint32_t n, int32_t *y, size_t ldy)
{
	const uint32_t nw = model_words(n), nb = nw * 64;
	int8_t wb[VNNI_ROWS * 64 * 64] __attribute__((aligned(64)));

	for (uint32_t o = 0; o < out; o += VNNI_ROWS) {
		uint32_t rows = out - o < VNNI_ROWS ? out - o : VNNI_ROWS;

		for (uint32_t r = 0; r < VNNI_ROWS; r++)
			for (uint32_t j = 0; j < nw; j++)
				_mm512_store_si512(
				    wb + (size_t)r * nb + j * 64,
				    r < rows ? _mm512_mask_blend_epi8(w[(size_t)(o + r) * nw + j],
								      _mm512_set1_epi8(-1),
								      _mm512_set1_epi8(1))
					     : _mm512_setzero_si512());
		for (uint32_t b = 0; b < batch; b += 4)
			for (uint32_t r = 0; r < rows; r += 4)
				vnni_block(x + (size_t)b * n, n, batch - b < 4 ? batch - b : 4,
					   wb + (size_t)r * nb, nb, y + b * ldy + o + r, ldy,
					   rows - r < 4 ? rows - r : 4);
	}
}

KERN_BDENSE_THR_BLOCKS(vnni_thr_blocks, uint8_t, n, vnni_gemm, thr_word)

/* The int8 GEMM when the batch amortizes the expansion and the row block fits its buffer. */
static bool use_vnni(uint32_t batch, uint32_t n)
{
	return batch >= 4 && model_words(n) <= 64 && __builtin_cpu_supports("avx512vnni");
}

static void avx512_bdense_u8(const uint8_t *x, uint32_t batch, const uint64_t *w, uint32_t out,
			     uint32_t n, int32_t *y, void *scratch)
{
	uint32_t nw = model_words(n);
	uint64_t *p = scratch;
	int32_t sumx;

	if (use_vnni(batch, n)) {
		vnni_gemm(x, batch, w, out, n, y, out);
		return;
	}
	for (uint32_t b = 0; b < batch; b++) {
		u8_planes(x + (size_t)b * n, n, p, &sumx);
		u8_gemv(p, sumx, w, out, nw, y + (size_t)b * out);
	}
}

static void avx512_bdense_u8_thr(const uint8_t *x, uint32_t batch, const uint64_t *w, uint32_t out,
				 uint32_t n, const struct kern_thresh *t, uint64_t *y,
				 void *scratch)
{
	uint32_t nw = model_words(n), ow = model_words(out);
	uint64_t *p = scratch;
	int32_t dot[64] __attribute__((aligned(64)));
	int32_t sumx;

	if (use_vnni(batch, n)) {
		vnni_thr_blocks(x, batch, w, out, n, t, y);
		return;
	}
	for (uint32_t b = 0; b < batch; b++) {
		u8_planes(x + (size_t)b * n, n, p, &sumx);
		for (uint32_t o = 0; o < out; o += 64) {
			uint32_t cnt = out - o < 64 ? out - o : 64;

			u8_gemv(p, sumx, w + (size_t)o * nw, cnt, nw, dot);
			y[(size_t)b * ow + o / 64] = thr_word(dot, t, o, cnt);
		}
	}
}

/* 2x2 windows at stride 2 (the pools of the binary CNNs) without the general window loops. */
static void avx512_maxpool_bits(const uint64_t *x, uint32_t batch, uint32_t c, uint32_t h,
				uint32_t w, uint32_t k, uint32_t stride, uint64_t *y)
{
	uint32_t wpp = model_words(c), oh = (h - k) / stride + 1, ow = (w - k) / stride + 1;
	size_t row = (size_t)w * wpp;

	if (k != 2 || stride != 2) {
		kern_ref_maxpool_bits(x, batch, c, h, w, k, stride, y);
		return;
	}
	for (uint32_t b = 0; b < batch; b++, x += (size_t)h * row)
		for (uint32_t oy = 0; oy < oh; oy++) {
			const uint64_t *r0 = x + 2 * (size_t)oy * row, *r1 = r0 + row;

			for (uint32_t ox = 0; ox < ow; ox++, y += wpp, r0 += 2 * wpp, r1 += 2 * wpp)
				for (uint32_t j = 0; j < wpp; j++)
					y[j] = r0[j] | r0[wpp + j] | r1[j] | r1[wpp + j];
		}
}

const struct kern_bin_ops kern_ops_avx512 = {
    .name = "avx512",
    .bdense = avx512_bdense,
    .bdense_thr = avx512_bdense_thr,
    .bdense_u8 = avx512_bdense_u8,
    .bdense_u8_thr = avx512_bdense_u8_thr,
    .bconv = kern_avx512_bconv,
    .bconv_thr = kern_avx512_bconv_thr,
    .sign_pack = kern_avx512_sign_pack,
    .threshold_pack = kern_avx512_threshold_pack,
    .maxpool_bits = avx512_maxpool_bits,
    .maxpool_bits_and = kern_ref_maxpool_bits_and,
    .sconv = kern_avx512_sconv,
    .sconv_packed = kern_avx512_sconv_packed,
    .decide_pack = kern_avx512_decide_pack,
    .dot_f32 = kern_avx512_dot_f32,
    .dot_f64 = kern_avx512_dot_f64,
    .dot_u8 = kern_avx512_dot_u8,
};
