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

/* One row of a 4 x 64 block: a broadcast weight meets four vectors of b. */
#define ROW_FMA(acc, w)                                                                            \
	do {                                                                                       \
		__m512 av_ = _mm512_set1_ps(w);                                                    \
		acc##0 = _mm512_fmadd_ps(av_, b0, acc##0);                                         \
		acc##1 = _mm512_fmadd_ps(av_, b1, acc##1);                                         \
		acc##2 = _mm512_fmadd_ps(av_, b2, acc##2);                                         \
		acc##3 = _mm512_fmadd_ps(av_, b3, acc##3);                                         \
	} while (0)

#define ROW_STORE(acc, r)                                                                          \
	do {                                                                                       \
		float *yr_ = y + (size_t)(i + (r)) * n + j;                                        \
		_mm512_mask_storeu_ps(yr_, m0, acc##0);                                            \
		_mm512_mask_storeu_ps(yr_ + 16, m1, acc##1);                                       \
		_mm512_mask_storeu_ps(yr_ + 32, m2, acc##2);                                       \
		_mm512_mask_storeu_ps(yr_ + 48, m3, acc##3);                                       \
	} while (0)

/*
 * 4 rows x 64 columns of y per block in 16 accumulators: per step of k, four loads of b, four
 * broadcasts of a and 16 FMAs. A short last block of rows repeats its last row (not stored).
 */
void kern_avx512_sgemm(const float *a, uint32_t m, uint32_t k, const float *b, uint32_t n, float *y)
{
	for (uint32_t j = 0; j < n; j += 64) {
		uint32_t cnt = n - j < 64 ? n - j : 64;
		const __mmask16 m0 = lanes(cnt, 0), m1 = lanes(cnt, 1), m2 = lanes(cnt, 2),
				m3 = lanes(cnt, 3);

		for (uint32_t i = 0; i < m; i += 4) {
			uint32_t rows = m - i < 4 ? m - i : 4;
			const float *r0 = a + (size_t)i * k;
			const float *r1 = a + (size_t)(i + (rows > 1 ? 1 : 0)) * k;
			const float *r2 = a + (size_t)(i + (rows > 2 ? 2 : rows - 1)) * k;
			const float *r3 = a + (size_t)(i + rows - 1) * k;
			__m512 p0 = _mm512_setzero_ps(), p1 = p0, p2 = p0, p3 = p0;
			__m512 q0 = p0, q1 = p0, q2 = p0, q3 = p0, s0 = p0, s1 = p0, s2 = p0,
			       s3 = p0;
			__m512 u0 = p0, u1 = p0, u2 = p0, u3 = p0;

			for (uint32_t t = 0; t < k; t++) {
				const float *bt = b + (size_t)t * n + j;
				__m512 b0 = _mm512_maskz_loadu_ps(m0, bt);
				__m512 b1 = _mm512_maskz_loadu_ps(m1, bt + 16);
				__m512 b2 = _mm512_maskz_loadu_ps(m2, bt + 32);
				__m512 b3 = _mm512_maskz_loadu_ps(m3, bt + 48);

				ROW_FMA(p, r0[t]);
				ROW_FMA(q, r1[t]);
				ROW_FMA(s, r2[t]);
				ROW_FMA(u, r3[t]);
			}
			ROW_STORE(p, 0);
			if (rows > 1)
				ROW_STORE(q, 1);
			if (rows > 2)
				ROW_STORE(s, 2);
			if (rows > 3)
				ROW_STORE(u, 3);
		}
	}
}

/*
 * 8 channels x 16 pixels per step: per channel one compare gives 16 bits over pixels; two 8x8
 * bit transposes (pixels 0-7, 8-15) turn them into a byte of channels per pixel. Unsure outputs
 * are rare and listed from their mask.
 */
uint32_t kern_avx512_decide_pack(const float *y, uint32_t o, uint32_t np,
				 const struct kern_decide *d, uint64_t *bits, uint32_t *unsure)
{
	const __m512 absmask = _mm512_castsi512_ps(_mm512_set1_epi32(0x7fffffff));
	const __m512 zero = _mm512_setzero_ps();
	uint32_t wpp = kern_words(o), n = 0;
	uint8_t *yb = (uint8_t *)bits;

	memset(bits, 0, (size_t)np * wpp * sizeof(*bits));
	for (uint32_t c0 = 0; c0 < o; c0 += 8) {
		uint32_t nc = o - c0 < 8 ? o - c0 : 8;
		uint64_t flip = 0;
		__m512 thr[8], e[8];
		__mmask16 live = 0; /* channels whose bound is not 0 */

		for (uint32_t i = 0; i < 8; i++) {
			uint32_t c = c0 + (i < nc ? i : 0);

			thr[i] = _mm512_set1_ps(d->thr[c]);
			e[i] = _mm512_set1_ps(d->e[c]);
			if (i < nc && d->flip[c])
				flip |= 0xffull << (8 * i);
			if (i < nc && d->e[c] > 0.0f)
				live |= (__mmask16)(1u << i);
		}
		for (uint32_t p0 = 0; p0 < np; p0 += 16) {
			uint32_t cnt = np - p0 < 16 ? np - p0 : 16;
			__mmask16 pm = lanes(cnt, 0);
			uint64_t ge[2] = {0, 0}, un[2] = {0, 0}, m[2];

			for (uint32_t i = 0; i < nc; i++) {
				const float *yc = y + (size_t)(c0 + i) * np + p0;
				__m512 v = _mm512_sub_ps(_mm512_maskz_loadu_ps(pm, yc), thr[i]);
				__mmask16 g = _mm512_cmp_ps_mask(v, zero, _CMP_GE_OQ);

				ge[0] |= (uint64_t)(g & 0xff) << (8 * i);
				ge[1] |= (uint64_t)(g >> 8) << (8 * i);
				if (live >> i & 1) {
					__mmask16 u = _mm512_mask_cmp_ps_mask(
					    pm, _mm512_and_ps(v, absmask), e[i], _CMP_LE_OQ);

					un[0] |= (uint64_t)(u & 0xff) << (8 * i);
					un[1] |= (uint64_t)(u >> 8) << (8 * i);
					for (; u; u &= (__mmask16)(u - 1))
						unsure[n++] =
						    (c0 + i) * np + p0 + (uint32_t)__builtin_ctz(u);
				}
			}
			m[0] = kern_transpose8((ge[0] ^ flip) & ~un[0]);
			m[1] = kern_transpose8((ge[1] ^ flip) & ~un[1]);
			for (uint32_t p = 0; p < cnt; p++)
				yb[((p0 + p) * wpp + c0 / 64) * 8 + (c0 % 64) / 8] =
				    (uint8_t)(m[p / 8] >> (8 * (p % 8)));
		}
	}
	return n;
}
