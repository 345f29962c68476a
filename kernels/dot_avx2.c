// SPDX-License-Identifier: MIT
/*
 * AVX2 dot products in the fixed order of struct kern_dot: the 16 float (8 double) lanes as two
 * ymm each, blocks of 2 x 2 pairs; the first level of the tree (lane l + lane l + LANES/2) is
 * the sum of the two halves, the rest scalar.
 */
#include <immintrin.h>

#include "kernels/dot_impl.h"

#define ALWAYS_INLINE inline __attribute__((always_inline))

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

static ALWAYS_INLINE __m256d load_pd(const double *p, uint32_t left)
{
	const __m256i idx = _mm256_setr_epi64x(0, 1, 2, 3);

	return left >= 4 ? _mm256_loadu_pd(p)
	       : left	 ? _mm256_maskload_pd(p, _mm256_cmpgt_epi64(_mm256_set1_epi64x(left), idx))
			 : _mm256_setzero_pd();
}

/*
 * The rest of the halving tree, t[l] += t[l + h], on the stored lo + hi: h = 4, 2, 1 for float;
 * 2, 1 for double, written out (as a loop GCC allocates that block's registers otherwise).
 */
#define TREE_ps(t)                                                                                 \
	do {                                                                                       \
		for (int h = 4; h; h /= 2)                                                         \
			for (int l = 0; l < h; l++)                                                \
				t[l] = t[l] + t[l + h];                                            \
	} while (0)
#define TREE_pd(t) (t[0] = t[0] + t[2], t[1] = t[1] + t[3], t[0] = t[0] + t[1])

/*
 * kern_avx2_dot_SFX: blocks of R x C (up to 2 x 2) pairs, LANES = 2 * HALF lanes per pair as
 * two vectors (lo: lanes [0, HALF), hi: [HALF, LANES)); the first level of the halving tree is
 * lo + hi, the rest scalar. SX is the intrinsics' suffix (ps, pd) and load_SX's.
 */
#define DOT_AVX2(SFX, T, V, HALF, SX)                                                              \
	static ALWAYS_INLINE void block_##SFX(const struct kern_dot *d, uint32_t i0, uint32_t j0,  \
					      int R, int C)                                        \
	{                                                                                          \
		const T *a[2], *b[2];                                                              \
		V lo[4], hi[4];                                                                    \
		T *c = d->c;                                                                       \
                                                                                                   \
		for (int k = 0; k < 4; k++)                                                        \
			lo[k] = hi[k] = _mm256_setzero_##SX();                                     \
		for (int r = 0; r < 2; r++)                                                        \
			a[r] = (const T *)d->a + (size_t)(i0 + (r < R ? r : 0)) * d->lda;          \
		for (int q = 0; q < 2; q++)                                                        \
			b[q] = (const T *)d->b + kern_dot_boff(d, j0 + (q < C ? q : 0));           \
		for (uint32_t s = 0; s < d->nseg; s++) {                                           \
			const size_t ao = (size_t)s * d->seg, bo = (size_t)s * d->bstride;         \
                                                                                                   \
			for (uint32_t k = 0; k < d->seg; k += 2 * HALF) {                          \
				uint32_t left = d->seg - k, l0 = left < HALF ? left : HALF;        \
				uint32_t l1 = left > HALF ? left - HALF : 0;                       \
				V b0[2], b1[2];                                                    \
                                                                                                   \
				_Pragma("GCC unroll 2") for (int q = 0; q < C; q++)                \
				{                                                                  \
					b0[q] = load_##SX(b[q] + bo + k, l0);                      \
					b1[q] = load_##SX(b[q] + bo + k + HALF, l1);               \
				}                                                                  \
				_Pragma("GCC unroll 2") for (int r = 0; r < R; r++)                \
				{                                                                  \
					V a0 = load_##SX(a[r] + ao + k, l0);                       \
					V a1 = load_##SX(a[r] + ao + k + HALF, l1);                \
                                                                                                   \
					_Pragma("GCC unroll 2") for (int q = 0; q < C; q++)        \
					{                                                          \
						lo[r * 2 + q] =                                    \
						    _mm256_fmadd_##SX(a0, b0[q], lo[r * 2 + q]);   \
						hi[r * 2 + q] =                                    \
						    _mm256_fmadd_##SX(a1, b1[q], hi[r * 2 + q]);   \
					}                                                          \
				}                                                                  \
			}                                                                          \
		}                                                                                  \
		for (int r = 0; r < R; r++)                                                        \
			for (int q = 0; q < C; q++) {                                              \
				T t[HALF] __attribute__((aligned(32)));                            \
                                                                                                   \
				_mm256_store_##SX(t,                                               \
						  _mm256_add_##SX(lo[r * 2 + q], hi[r * 2 + q]));  \
				TREE_##SX(t);                                                      \
				c[(i0 + r) * d->ldci + (j0 + q) * d->ldcj] =                       \
				    d->bias ? t[0] + ((const T *)d->bias)[i0 + r] : t[0];          \
			}                                                                          \
	}                                                                                          \
                                                                                                   \
	void kern_avx2_dot_##SFX(const struct kern_dot *d)                                         \
	{                                                                                          \
		for (uint32_t i = 0; i < d->m; i += 2) {                                           \
			uint32_t r = d->m - i < 2 ? d->m - i : 2;                                  \
                                                                                                   \
			for (uint32_t j = 0; j < d->n; j += 2) {                                   \
				uint32_t q = d->n - j < 2 ? d->n - j : 2;                          \
                                                                                                   \
				if (r == 2 && q == 2)                                              \
					block_##SFX(d, i, j, 2, 2);                                \
				else if (r == 2)                                                   \
					block_##SFX(d, i, j, 2, 1);                                \
				else if (q == 2)                                                   \
					block_##SFX(d, i, j, 1, 2);                                \
				else                                                               \
					block_##SFX(d, i, j, 1, 1);                                \
			}                                                                          \
		}                                                                                  \
	}

DOT_AVX2(f32, float, __m256, 8, ps)
DOT_AVX2(f64, double, __m256d, 4, pd)

/* Exact integer dots: bytes widened to 16 bits, vpmaddwd. */
void kern_avx2_dot_u8(const struct kern_dot *d)
{
	for (uint32_t j = 0; j < d->n; j++)
		for (uint32_t i = 0; i < d->m; i++) {
			const int8_t *a = (const int8_t *)d->a + (size_t)i * d->lda;
			const uint8_t *b = (const uint8_t *)d->b + kern_dot_boff(d, j);
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
