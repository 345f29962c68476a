// SPDX-License-Identifier: MIT
/*
 * AVX2 dot products in the fixed order of struct kern_dot: the 16 float (8 double) lanes as two
 * ymm each, blocks of 2 x 2 pairs; the first level of the tree (lane l + lane l + LANES/2) is
 * the sum of the two halves, the rest scalar.
 */
#include <immintrin.h>

#include "kernels/bin_impl.h"

#define ALWAYS_INLINE inline __attribute__((always_inline))

static ALWAYS_INLINE size_t boff(const struct kern_dot *d, uint32_t j)
{
	return d->boff ? d->boff[j] : (size_t)j * d->ldb;
}

static ALWAYS_INLINE __m256i tail_mask(uint32_t n)
{
	const __m256i idx = _mm256_setr_epi32(0, 1, 2, 3, 4, 5, 6, 7);

	return _mm256_cmpgt_epi32(_mm256_set1_epi32((int)n), idx);
}

static ALWAYS_INLINE __m256 load_ps(const float *p, uint32_t left)
{
	return left >= 8 ? _mm256_loadu_ps(p)
	       : left	 ? _mm256_maskload_ps(p, tail_mask(left))
			 : _mm256_setzero_ps();
}

static ALWAYS_INLINE void block_f32(const struct kern_dot *d, uint32_t i0, uint32_t j0, int R,
				    int C)
{
	const float *a[2], *b[2];
	__m256 lo[4], hi[4];
	float *c = d->c;

	for (int k = 0; k < 4; k++)
		lo[k] = hi[k] = _mm256_setzero_ps();
	for (int r = 0; r < 2; r++)
		a[r] = (const float *)d->a + (size_t)(i0 + (r < R ? r : 0)) * d->lda;
	for (int q = 0; q < 2; q++)
		b[q] = (const float *)d->b + boff(d, j0 + (q < C ? q : 0));
	for (uint32_t s = 0; s < d->nseg; s++) {
		const size_t ao = (size_t)s * d->seg, bo = (size_t)s * d->bstride;

		for (uint32_t k = 0; k < d->seg; k += 16) {
			uint32_t left = d->seg - k, l0 = left < 8 ? left : 8;
			uint32_t l1 = left > 8 ? left - 8 : 0;
			__m256 b0[2], b1[2];

#pragma GCC unroll 2
			for (int q = 0; q < C; q++) {
				b0[q] = load_ps(b[q] + bo + k, l0);
				b1[q] = load_ps(b[q] + bo + k + 8, l1);
			}
#pragma GCC unroll 2
			for (int r = 0; r < R; r++) {
				__m256 a0 = load_ps(a[r] + ao + k, l0),
				       a1 = load_ps(a[r] + ao + k + 8, l1);

#pragma GCC unroll 2
				for (int q = 0; q < C; q++) {
					lo[r * 2 + q] = _mm256_fmadd_ps(a0, b0[q], lo[r * 2 + q]);
					hi[r * 2 + q] = _mm256_fmadd_ps(a1, b1[q], hi[r * 2 + q]);
				}
			}
		}
	}
	for (int r = 0; r < R; r++)
		for (int q = 0; q < C; q++) {
			float t[8] __attribute__((aligned(32)));

			_mm256_store_ps(t, _mm256_add_ps(lo[r * 2 + q], hi[r * 2 + q]));
			for (int h = 4; h; h /= 2)
				for (int l = 0; l < h; l++)
					t[l] = t[l] + t[l + h];
			c[(i0 + r) * d->ldci + (j0 + q) * d->ldcj] =
			    d->bias ? t[0] + ((const float *)d->bias)[i0 + r] : t[0];
		}
}

static ALWAYS_INLINE __m256d load_pd(const double *p, uint32_t left)
{
	const __m256i idx = _mm256_setr_epi64x(0, 1, 2, 3);

	return left >= 4 ? _mm256_loadu_pd(p)
	       : left	 ? _mm256_maskload_pd(p, _mm256_cmpgt_epi64(_mm256_set1_epi64x(left), idx))
			 : _mm256_setzero_pd();
}

static ALWAYS_INLINE void block_f64(const struct kern_dot *d, uint32_t i0, uint32_t j0, int R,
				    int C)
{
	const double *a[2], *b[2];
	__m256d lo[4], hi[4];
	double *c = d->c;

	for (int k = 0; k < 4; k++)
		lo[k] = hi[k] = _mm256_setzero_pd();
	for (int r = 0; r < 2; r++)
		a[r] = (const double *)d->a + (size_t)(i0 + (r < R ? r : 0)) * d->lda;
	for (int q = 0; q < 2; q++)
		b[q] = (const double *)d->b + boff(d, j0 + (q < C ? q : 0));
	for (uint32_t s = 0; s < d->nseg; s++) {
		const size_t ao = (size_t)s * d->seg, bo = (size_t)s * d->bstride;

		for (uint32_t k = 0; k < d->seg; k += 8) {
			uint32_t left = d->seg - k, l0 = left < 4 ? left : 4;
			uint32_t l1 = left > 4 ? left - 4 : 0;
			__m256d b0[2], b1[2];

#pragma GCC unroll 2
			for (int q = 0; q < C; q++) {
				b0[q] = load_pd(b[q] + bo + k, l0);
				b1[q] = load_pd(b[q] + bo + k + 4, l1);
			}
#pragma GCC unroll 2
			for (int r = 0; r < R; r++) {
				__m256d a0 = load_pd(a[r] + ao + k, l0);
				__m256d a1 = load_pd(a[r] + ao + k + 4, l1);

#pragma GCC unroll 2
				for (int q = 0; q < C; q++) {
					lo[r * 2 + q] = _mm256_fmadd_pd(a0, b0[q], lo[r * 2 + q]);
					hi[r * 2 + q] = _mm256_fmadd_pd(a1, b1[q], hi[r * 2 + q]);
				}
			}
		}
	}
	for (int r = 0; r < R; r++)
		for (int q = 0; q < C; q++) {
			double t[4] __attribute__((aligned(32)));

			_mm256_store_pd(t, _mm256_add_pd(lo[r * 2 + q], hi[r * 2 + q]));
			t[0] = t[0] + t[2];
			t[1] = t[1] + t[3];
			t[0] = t[0] + t[1];
			c[(i0 + r) * d->ldci + (j0 + q) * d->ldcj] =
			    d->bias ? t[0] + ((const double *)d->bias)[i0 + r] : t[0];
		}
}

#define DISPATCH(fn)                                                                               \
	do {                                                                                       \
		if (r == 2 && q == 2)                                                              \
			fn(d, i, j, 2, 2);                                                         \
		else if (r == 2)                                                                   \
			fn(d, i, j, 2, 1);                                                         \
		else if (q == 2)                                                                   \
			fn(d, i, j, 1, 2);                                                         \
		else                                                                               \
			fn(d, i, j, 1, 1);                                                         \
	} while (0)

void kern_avx2_dot_f32(const struct kern_dot *d)
{
	for (uint32_t i = 0; i < d->m; i += 2) {
		uint32_t r = d->m - i < 2 ? d->m - i : 2;

		for (uint32_t j = 0; j < d->n; j += 2) {
			uint32_t q = d->n - j < 2 ? d->n - j : 2;

			DISPATCH(block_f32);
		}
	}
}

void kern_avx2_dot_f64(const struct kern_dot *d)
{
	for (uint32_t i = 0; i < d->m; i += 2) {
		uint32_t r = d->m - i < 2 ? d->m - i : 2;

		for (uint32_t j = 0; j < d->n; j += 2) {
			uint32_t q = d->n - j < 2 ? d->n - j : 2;

			DISPATCH(block_f64);
		}
	}
}

/* Exact integer dots: bytes widened to 16 bits, vpmaddwd. */
void kern_avx2_dot_u8(const struct kern_dot *d)
{
	for (uint32_t j = 0; j < d->n; j++)
		for (uint32_t i = 0; i < d->m; i++) {
			const int8_t *a = (const int8_t *)d->a + (size_t)i * d->lda;
			const uint8_t *b = (const uint8_t *)d->b + boff(d, j);
			__m256i acc = _mm256_setzero_si256();
			int32_t t[8] __attribute__((aligned(32))), sum = 0;

			for (uint32_t s = 0; s < d->nseg; s++, a += d->seg, b += d->bstride) {
				uint32_t k = 0;

				for (; k + 16 <= d->seg; k += 16) {
					__m256i av = _mm256_cvtepi8_epi16(
					    _mm_loadu_si128((const __m128i *)(a + k)));
					__m256i bv = _mm256_cvtepu8_epi16(
					    _mm_loadu_si128((const __m128i *)(b + k)));

					acc = _mm256_add_epi32(acc, _mm256_madd_epi16(av, bv));
				}
				for (; k < d->seg; k++)
					sum += (int32_t)a[k] * b[k];
			}
			_mm256_store_si256((__m256i *)t, acc);
			for (int l = 0; l < 8; l++)
				sum += t[l];
			((int32_t *)d->c)[i * d->ldci + j * d->ldcj] = sum;
		}
}
