// SPDX-License-Identifier: MIT
/*
 * AVX-512 dot products in the fixed order of struct kern_dot: one zmm of lane accumulators per
 * (row of a, row of b) pair, blocks of 4 x 4 pairs (8 loads per 16 FMAs), the halving tree of
 * 16 pairs at once by shuffles that add lane l to lane l + h, as the reference does.
 */
#include <immintrin.h>

#include "kernels/dot_impl.h"

#define ALWAYS_INLINE inline __attribute__((always_inline))

#define DOT_STR_(x) #x
#define DOT_STR(x)  DOT_STR_(x)

/*
 * A level of the trees below, 128-bit blocks at a time: dst[k] = the blocks of src[2k] and
 * src[2k + 1] that SHUF selects by LO plus those it selects by HI, for k < N.
 */
#define HALVE(N, ADD, SHUF, dst, src, LO, HI)                                                      \
	_Pragma(DOT_STR(GCC unroll N)) for (int k = 0; k < (N); k++) dst[k] =                      \
	    ADD(SHUF(src[2 * k], src[2 * k + 1], LO), SHUF(src[2 * k], src[2 * k + 1], HI))

/* Lane i of the result: the halving tree of v[i] (acc[l] += acc[l + h], h = 8, 4, 2, 1). */
static ALWAYS_INLINE __m512 tree16_ps(const __m512 v[16])
{
	const __m512i perm =
	    _mm512_setr_epi32(0, 4, 8, 12, 1, 5, 9, 13, 2, 6, 10, 14, 3, 7, 11, 15);
	__m512 w[8], x[4], y[2], z;

	HALVE(8, _mm512_add_ps, _mm512_shuffle_f32x4, w, v, 0x44, 0xee);
	HALVE(4, _mm512_add_ps, _mm512_shuffle_f32x4, x, w, 0x88, 0xdd);
#pragma GCC unroll 2
	for (int k = 0; k < 2; k++) {
		__m512d a = _mm512_castps_pd(x[2 * k]), b = _mm512_castps_pd(x[2 * k + 1]);

		y[k] = _mm512_add_ps(_mm512_castpd_ps(_mm512_unpacklo_pd(a, b)),
				     _mm512_castpd_ps(_mm512_unpackhi_pd(a, b)));
	}
	z = _mm512_add_ps(_mm512_shuffle_ps(y[0], y[1], _MM_SHUFFLE(2, 0, 2, 0)),
			  _mm512_shuffle_ps(y[0], y[1], _MM_SHUFFLE(3, 1, 3, 1)));
	return _mm512_permutexvar_ps(perm, z);
}

/* Lane i: the halving tree of v[i] (h = 4, 2, 1). */
static ALWAYS_INLINE __m512d tree8_pd(const __m512d v[8])
{
	const __m512i perm = _mm512_setr_epi64(0, 2, 4, 6, 1, 3, 5, 7);
	__m512d w[4], x[2], z;

	HALVE(4, _mm512_add_pd, _mm512_shuffle_f64x2, w, v, 0x44, 0xee);
	HALVE(2, _mm512_add_pd, _mm512_shuffle_f64x2, x, w, 0x88, 0xdd);
	z = _mm512_add_pd(_mm512_unpacklo_pd(x[0], x[1]), _mm512_unpackhi_pd(x[0], x[1]));
	return _mm512_permutexvar_pd(perm, z);
}

/* One step of LANES elements at offset k of segment (ao, bo): loads, then R x C FMAs. */
#define STEP(T, LOAD, FMA, k, m)                                                                   \
	do {                                                                                       \
		T bv_[4];                                                                          \
		_Pragma("GCC unroll 4") for (int q = 0; q < C; q++) bv_[q] =                       \
		    LOAD(m, b[q] + bo + (k));                                                      \
		_Pragma("GCC unroll 4") for (int r = 0; r < R; r++)                                \
		{                                                                                  \
			T av_ = LOAD(m, a[r] + ao + (k));                                          \
			_Pragma("GCC unroll 4") for (int q = 0; q < C; q++) acc[r * 4 + q] =       \
			    FMA(av_, bv_[q], acc[r * 4 + q]);                                      \
		}                                                                                  \
	} while (0)

#define CASE(R, C, fn)                                                                             \
	case (R)*8 + (C):                                                                          \
		fn(d, i, j, R, C, k0, k1, acc, first, last);                                       \
		break

#define DISPATCH(fn)                                                                               \
	switch (r * 8 + q) {                                                                       \
		CASE(4, 4, fn);                                                                    \
		CASE(4, 3, fn);                                                                    \
		CASE(4, 2, fn);                                                                    \
		CASE(4, 1, fn);                                                                    \
		CASE(3, 4, fn);                                                                    \
		CASE(3, 3, fn);                                                                    \
		CASE(3, 2, fn);                                                                    \
		CASE(3, 1, fn);                                                                    \
		CASE(2, 4, fn);                                                                    \
		CASE(2, 3, fn);                                                                    \
		CASE(2, 2, fn);                                                                    \
		CASE(2, 1, fn);                                                                    \
		CASE(1, 4, fn);                                                                    \
		CASE(1, 3, fn);                                                                    \
		CASE(1, 2, fn);                                                                    \
		CASE(1, 1, fn);                                                                    \
	}

/*
 * Rows of a in blocks of 4 pass over the rows of b; b whole when it fits in L2 beside them
 * (a is then read once), else in blocks of about 128 KiB (a multiple of 4 rows) outside. The
 * order of each sum is the same either way.
 */
#define KB_ROWS 64 /* rows of b per block when K is blocked */

/*
 * A one-segment K too long for a block of b rows to stay in L2 runs in ranges of this many
 * elements (a multiple of 16), KB_ROWS rows of b at a time, the lanes carried between ranges:
 * the same sums in the same order, from 4 rows of a in L1 and a block of b in L2.
 */
static uint32_t k_block(const struct kern_dot *d, size_t esize)
{
	return d->nseg == 1 && d->seg * esize * d->n > (1u << 20) && d->seg * esize > 4096
		   ? (uint32_t)(2048 / esize)
		   : d->seg;
}

static uint32_t col_block(const struct kern_dot *d, size_t esize)
{
	if (k_block(d, esize) < d->seg)
		return d->n < KB_ROWS ? d->n : KB_ROWS;
	size_t row = (size_t)d->nseg * d->seg * esize, nb = row ? (128u << 10) / row : d->n;

	if (row * d->n <= (1u << 20))
		return d->n;
	nb = nb < 4 ? 4 : nb / 4 * 4;
	return nb > d->n ? d->n : (uint32_t)nb;
}

/* The lane trees of a block's accumulators stored to out[r * 4 + c] (pair (r, c)). */
#define TREES_ps(out, acc, R) _mm512_store_ps(out, tree16_ps(acc))
#define TREES_pd(out, acc, R)                                                                      \
	do {                                                                                       \
		_mm512_store_pd(out, tree8_pd(acc));                                               \
		if (R > 2)                                                                         \
			_mm512_store_pd(out + 8, tree8_pd(acc + 8));                               \
	} while (0)

/*
 * kern_avx512_dot_SFX, LANES lanes of T per vector V (mask M, all lanes FULL), SX the
 * intrinsics' suffix (ps, pd). Pair (r, c) of a block is accumulator r * 4 + c.
 *
 * block_SFX: block (i0, j0) over elements [k0, k1) of a one-segment K (or all of a segmented
 * one): the accumulators start at zero or from io, and end in io or, after the last range, in c
 * (store_SFX, with the bias).
 */
#define DOT_AVX512(SFX, T, V, LANES, M, FULL, SX)                                                  \
	static ALWAYS_INLINE void store_##SFX(const struct kern_dot *d, uint32_t i0, uint32_t j0,  \
					      int R, int C, const V acc[16])                       \
	{                                                                                          \
		T out[16] __attribute__((aligned(64)));                                            \
		T *c = d->c;                                                                       \
                                                                                                   \
		TREES_##SX(out, acc, R);                                                           \
		for (int r = 0; r < R; r++) {                                                      \
			T b = d->bias ? ((const T *)d->bias)[i0 + r] : 0;                          \
                                                                                                   \
			for (int q = 0; q < C; q++)                                                \
				c[(i0 + r) * d->ldci + (j0 + q) * d->ldcj] =                       \
				    d->bias ? out[r * 4 + q] + b : out[r * 4 + q];                 \
		}                                                                                  \
	}                                                                                          \
                                                                                                   \
	static ALWAYS_INLINE void block_##SFX(const struct kern_dot *d, uint32_t i0, uint32_t j0,  \
					      int R, int C, uint32_t k0, uint32_t k1, V *io,       \
					      bool first, bool last)                               \
	{                                                                                          \
		const uint32_t full = k0 + (k1 - k0) / LANES * LANES, tail = (k1 - k0) % LANES;    \
		const M tm = (M)((1u << tail) - 1);                                                \
		const T *a[4], *b[4];                                                              \
		V acc[16];                                                                         \
                                                                                                   \
		_Pragma("GCC unroll 16") for (int k = 0; k < 16; k++) acc[k] =                     \
		    first ? _mm512_setzero_##SX() : io[k];                                         \
		_Pragma("GCC unroll 4") for (int r = 0; r < 4; r++) a[r] =                         \
		    (const T *)d->a + (size_t)(i0 + (r < R ? r : 0)) * d->lda;                     \
		_Pragma("GCC unroll 4") for (int q = 0; q < 4; q++) b[q] =                         \
		    (const T *)d->b + kern_dot_boff(d, j0 + (q < C ? q : 0));                      \
		for (uint32_t s = 0; s < d->nseg; s++) {                                           \
			const size_t ao = (size_t)s * d->seg, bo = (size_t)s * d->bstride;         \
                                                                                                   \
			for (uint32_t k = k0; k < full; k += LANES)                                \
				STEP(V, _mm512_maskz_loadu_##SX, _mm512_fmadd_##SX, k, FULL);      \
			if (tail)                                                                  \
				STEP(V, _mm512_maskz_loadu_##SX, _mm512_fmadd_##SX, full, tm);     \
		}                                                                                  \
		if (last) {                                                                        \
			store_##SFX(d, i0, j0, R, C, acc);                                         \
			return;                                                                    \
		}                                                                                  \
		_Pragma("GCC unroll 16") for (int k = 0; k < 16; k++) io[k] = acc[k];              \
	}                                                                                          \
                                                                                                   \
	void kern_avx512_dot_##SFX(const struct kern_dot *d)                                       \
	{                                                                                          \
		const uint32_t nb = col_block(d, sizeof(T)), kc = k_block(d, sizeof(T));           \
		V io[KB_ROWS / 4][16];                                                             \
                                                                                                   \
		for (uint32_t j0 = 0; j0 < d->n; j0 += nb)                                         \
			for (uint32_t i = 0; i < d->m; i += 4) {                                   \
				uint32_t r = d->m - i < 4 ? d->m - i : 4;                          \
                                                                                                   \
				for (uint32_t k0 = 0; k0 < d->seg; k0 += kc) {                     \
					uint32_t k1 = d->seg - k0 < kc ? d->seg : k0 + kc;         \
					bool first = k0 == 0, last = k1 == d->seg;                 \
                                                                                                   \
					for (uint32_t j = j0; j < d->n && j < j0 + nb; j += 4) {   \
						uint32_t q = d->n - j < 4 ? d->n - j : 4;          \
						/* carried between K ranges when K is blocked */   \
						V *acc = kc < d->seg ? io[(j - j0) / 4] : NULL;    \
                                                                                                   \
						DISPATCH(block_##SFX);                             \
					}                                                          \
				}                                                                  \
			}                                                                          \
	}

DOT_AVX512(f32, float, __m512, 16, __mmask16, 0xffff, ps)
DOT_AVX512(f64, double, __m512d, 8, __mmask8, 0xff, pd)

#define VNNI __attribute__((target("avx512vnni")))

/* 4 x 4 exact integer dots, 64 bytes of K per step (vpdpbusd: 4 products per int32 lane). */
static VNNI void block_u8(const struct kern_dot *d, uint32_t i0, uint32_t j0, uint32_t R,
			  uint32_t C)
{
	const uint32_t full = d->seg / 64, tail = d->seg % 64;
	const __mmask64 tm = tail ? (1ull << tail) - 1 : 0;
	const int8_t *a[4];
	const uint8_t *b[4];
	__m512i acc[16];

	for (int k = 0; k < 16; k++)
		acc[k] = _mm512_setzero_si512();
	for (uint32_t r = 0; r < 4; r++)
		a[r] = (const int8_t *)d->a + (size_t)(i0 + (r < R ? r : 0)) * d->lda;
	for (uint32_t q = 0; q < 4; q++)
		b[q] = (const uint8_t *)d->b + kern_dot_boff(d, j0 + (q < C ? q : 0));
	for (uint32_t s = 0; s < d->nseg; s++) {
		const size_t ao = (size_t)s * d->seg, bo = (size_t)s * d->bstride;

		for (uint32_t v = 0; v <= full; v++) {
			__mmask64 m = v < full ? ~0ull : tm;
			__m512i bv[4];

			if (!m)
				break;
#pragma GCC unroll 4
			for (int q = 0; q < 4; q++)
				bv[q] = _mm512_maskz_loadu_epi8(m, b[q] + bo + (size_t)v * 64);
#pragma GCC unroll 4
			for (int r = 0; r < 4; r++) {
				__m512i av = _mm512_maskz_loadu_epi8(m, a[r] + ao + (size_t)v * 64);

#pragma GCC unroll 4
				for (int q = 0; q < 4; q++)
					acc[r * 4 + q] =
					    _mm512_dpbusd_epi32(acc[r * 4 + q], bv[q], av);
			}
		}
	}
	for (uint32_t r = 0; r < R; r++)
		for (uint32_t q = 0; q < C; q++)
			((int32_t *)d->c)[(i0 + r) * d->ldci + (j0 + q) * d->ldcj] =
			    _mm512_reduce_add_epi32(acc[r * 4 + q]);
}

/* Without VNNI: bytes widened to 16 bits, vpmaddwd (32 products per step), also exact. */
static void block_u8_bw(const struct kern_dot *d, uint32_t i0, uint32_t j0, uint32_t R, uint32_t C)
{
	for (uint32_t r = 0; r < R; r++)
		for (uint32_t q = 0; q < C; q++) {
			const int8_t *a = (const int8_t *)d->a + (size_t)(i0 + r) * d->lda;
			const uint8_t *b = (const uint8_t *)d->b + kern_dot_boff(d, j0 + q);
			__m512i acc = _mm512_setzero_si512();

			for (uint32_t s = 0; s < d->nseg; s++, a += d->seg, b += d->bstride)
				for (uint32_t k = 0; k < d->seg; k += 32) {
					__mmask32 m =
					    d->seg - k >= 32 ? ~0u : (1u << (d->seg - k)) - 1;
					__m512i av =
					    _mm512_cvtepi8_epi16(_mm256_maskz_loadu_epi8(m, a + k));
					__m512i bv =
					    _mm512_cvtepu8_epi16(_mm256_maskz_loadu_epi8(m, b + k));

					acc = _mm512_add_epi32(acc, _mm512_madd_epi16(av, bv));
				}
			((int32_t *)d->c)[(i0 + r) * d->ldci + (j0 + q) * d->ldcj] =
			    _mm512_reduce_add_epi32(acc);
		}
}

void kern_avx512_dot_u8(const struct kern_dot *d)
{
	const bool vnni = __builtin_cpu_supports("avx512vnni");

	for (uint32_t i = 0; i < d->m; i += 4) {
		uint32_t r = d->m - i < 4 ? d->m - i : 4;

		for (uint32_t j = 0; j < d->n; j += 4) {
			uint32_t q = d->n - j < 4 ? d->n - j : 4;

			if (vnni)
				block_u8(d, i, j, r, q);
			else
				block_u8_bw(d, i, j, r, q);
		}
	}
}
