// SPDX-License-Identifier: MIT
/* Reference dot products in the fixed order of struct kern_dot (kernels/kern_ops.h). */
#include <math.h>

#include "kernels/bin_impl.h"

static const void *row_b(const struct kern_dot *d, uint32_t j, size_t esize)
{
	size_t off = d->boff ? d->boff[j] : (size_t)j * d->ldb;

	return (const char *)d->b + off * esize;
}

static float sum_f32(const struct kern_dot *d, uint32_t i, uint32_t j)
{
	const float *a = (const float *)d->a + (size_t)i * d->lda;
	const float *b = row_b(d, j, sizeof(float));
	float acc[16] = {0};

	for (uint32_t s = 0; s < d->nseg; s++, a += d->seg, b += d->bstride)
		for (uint32_t k = 0; k < d->seg; k += 16)
			for (uint32_t l = 0; l < 16; l++)
				acc[l] = k + l < d->seg ? fmaf(a[k + l], b[k + l], acc[l])
							: fmaf(0.0f, 0.0f, acc[l]);
	for (uint32_t h = 8; h; h /= 2)
		for (uint32_t l = 0; l < h; l++)
			acc[l] = acc[l] + acc[l + h];
	return d->bias ? acc[0] + ((const float *)d->bias)[i] : acc[0];
}

void kern_ref_dot_f32(const struct kern_dot *d)
{
	for (uint32_t j = 0; j < d->n; j++)
		for (uint32_t i = 0; i < d->m; i++)
			((float *)d->c)[i * d->ldci + j * d->ldcj] = sum_f32(d, i, j);
}

static double sum_f64(const struct kern_dot *d, uint32_t i, uint32_t j)
{
	const double *a = (const double *)d->a + (size_t)i * d->lda;
	const double *b = row_b(d, j, sizeof(double));
	double acc[8] = {0};

	for (uint32_t s = 0; s < d->nseg; s++, a += d->seg, b += d->bstride)
		for (uint32_t k = 0; k < d->seg; k += 8)
			for (uint32_t l = 0; l < 8; l++)
				acc[l] = k + l < d->seg ? fma(a[k + l], b[k + l], acc[l])
							: fma(0.0, 0.0, acc[l]);
	for (uint32_t h = 4; h; h /= 2)
		for (uint32_t l = 0; l < h; l++)
			acc[l] = acc[l] + acc[l + h];
	return d->bias ? acc[0] + ((const double *)d->bias)[i] : acc[0];
}

void kern_ref_dot_f64(const struct kern_dot *d)
{
	for (uint32_t j = 0; j < d->n; j++)
		for (uint32_t i = 0; i < d->m; i++)
			((double *)d->c)[i * d->ldci + j * d->ldcj] = sum_f64(d, i, j);
}

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
