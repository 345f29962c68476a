// SPDX-License-Identifier: MIT
/* Reference dot products in the fixed order of struct kern_dot (kernels/kern_ops.h). */
#include <math.h>

#include "kernels/bin_impl.h"

static const void *row_b(const struct kern_dot *d, uint32_t j, size_t esize)
{
	size_t off = d->boff ? d->boff[j] : (size_t)j * d->ldb;

	return (const char *)d->b + off * esize;
}

/*
 * kern_ref_dot_SFX: row i of a against row j of b in LANES lane accumulators (element k + l to
 * lane l, zero products past the end of a segment), then the halving tree acc[l] += acc[l + h],
 * and the bias.
 */
#define DOT_REF(SFX, T, LANES, FMA)                                                                \
	static T sum_##SFX(const struct kern_dot *d, uint32_t i, uint32_t j)                       \
	{                                                                                          \
		const T *a = (const T *)d->a + (size_t)i * d->lda;                                 \
		const T *b = row_b(d, j, sizeof(T));                                               \
		T acc[LANES] = {0};                                                                \
                                                                                                   \
		for (uint32_t s = 0; s < d->nseg; s++, a += d->seg, b += d->bstride)               \
			for (uint32_t k = 0; k < d->seg; k += LANES)                               \
				for (uint32_t l = 0; l < LANES; l++)                               \
					acc[l] = k + l < d->seg ? FMA(a[k + l], b[k + l], acc[l])  \
								: FMA(0, 0, acc[l]);               \
		for (uint32_t h = LANES / 2; h; h /= 2)                                            \
			for (uint32_t l = 0; l < h; l++)                                           \
				acc[l] = acc[l] + acc[l + h];                                      \
		return d->bias ? acc[0] + ((const T *)d->bias)[i] : acc[0];                        \
	}                                                                                          \
                                                                                                   \
	void kern_ref_dot_##SFX(const struct kern_dot *d)                                          \
	{                                                                                          \
		for (uint32_t j = 0; j < d->n; j++)                                                \
			for (uint32_t i = 0; i < d->m; i++)                                        \
				((T *)d->c)[i * d->ldci + j * d->ldcj] = sum_##SFX(d, i, j);       \
	}

DOT_REF(f32, float, 16, fmaf)
DOT_REF(f64, double, 8, fma)

void kern_ref_dot_u8(const struct kern_dot *d)
{
	for (uint32_t j = 0; j < d->n; j++)
		for (uint32_t i = 0; i < d->m; i++) {
			const int8_t *a = (const int8_t *)d->a + (size_t)i * d->lda;
			const uint8_t *b = row_b(d, j, 1);
			int32_t acc = 0;

			for (uint32_t s = 0; s < d->nseg; s++, a += d->seg, b += d->bstride)
				for (uint32_t k = 0; k < d->seg; k++)
					acc += (int32_t)a[k] * b[k];
			((int32_t *)d->c)[i * d->ldci + j * d->ldcj] = acc;
		}
}
