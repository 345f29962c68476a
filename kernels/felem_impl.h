/* SPDX-License-Identifier: MIT */
/*
 * kernels/felem_impl.h — the element-wise float32 kernels (kernels/felem.h) in plain C, included
 * once by each of felem_ref.c, felem_avx2.c, felem_avx512.c with FELEM_NAME set to the table.
 */
#include <math.h>
#include <string.h>

#include "kernels/felem.h"

static double felem_absmax(const float *x, size_t n)
{
	int32_t m = 0;
	float f;

	for (size_t i = 0; i < n; i++) {
		int32_t b;

		memcpy(&b, x + i, sizeof(b));
		b &= 0x7fffffff;
		m = b > m ? b : m;
	}
	if (m > 0x7f800000)
		return NAN;
	memcpy(&f, &m, sizeof(f));
	return f;
}

static void felem_relu(const float *x, size_t n, float *y)
{
	for (size_t i = 0; i < n; i++)
		y[i] = x[i] > 0.0f ? x[i] : 0.0f;
}

static void felem_affine(const float *x, uint32_t C, uint32_t hw, const float *s, const float *t,
			 float *y)
{
	for (uint32_t c = 0; c < C; c++, x += hw, y += hw) {
		const float sc = s ? s[c] : 1.0f, tc = t[c];

		for (uint32_t p = 0; p < hw; p++)
			y[p] = x[p] * sc + tc;
	}
}

#define FELEM_TILE 16

static void felem_transpose(const float *x, uint32_t np, uint32_t C, const float *b, float *y)
{
	for (uint32_t p0 = 0; p0 < np; p0 += FELEM_TILE)
		for (uint32_t c0 = 0; c0 < C; c0 += FELEM_TILE) {
			uint32_t p1 = np - p0 < FELEM_TILE ? np : p0 + FELEM_TILE;
			uint32_t c1 = C - c0 < FELEM_TILE ? C : c0 + FELEM_TILE;

			for (uint32_t c = c0; c < c1; c++) {
				const float bc = b ? b[c] : 0.0f;

				for (uint32_t p = p0; p < p1; p++)
					y[(size_t)c * np + p] = x[(size_t)p * C + c] + bc;
			}
		}
}

static void felem_maxpool(const float *x, size_t planes, uint32_t h, uint32_t w, uint32_t k,
			  uint32_t st, float *y)
{
	const uint32_t oh = (h - k) / st + 1, ow = (w - k) / st + 1;

	for (size_t i = 0; i < planes; i++, x += (size_t)h * w)
		for (uint32_t oy = 0; oy < oh; oy++, y += ow) {
			for (uint32_t ox = 0; ox < ow; ox++)
				y[ox] = -INFINITY;
			for (uint32_t ky = 0; ky < k; ky++) {
				const float *row = x + (size_t)(oy * st + ky) * w;

				for (uint32_t kx = 0; kx < k; kx++)
					for (uint32_t ox = 0; ox < ow; ox++) {
						float v = row[ox * st + kx];

						y[ox] = v > y[ox] ? v : y[ox];
					}
			}
		}
}

#define FELEM_POOL_CH 64

static void felem_pool_transpose(const float *x, uint32_t h, uint32_t w, uint32_t C, uint32_t k,
				 uint32_t st, const float *b, float *y)
{
	const uint32_t oh = (h - k) / st + 1, ow = (w - k) / st + 1;
	const size_t ohw = (size_t)oh * ow;
	float m[FELEM_POOL_CH];

	for (uint32_t oy = 0; oy < oh; oy++)
		for (uint32_t ox = 0; ox < ow; ox++)
			for (uint32_t c0 = 0; c0 < C; c0 += FELEM_POOL_CH) {
				const uint32_t nc = C - c0 < FELEM_POOL_CH ? C - c0 : FELEM_POOL_CH;

				for (uint32_t c = 0; c < nc; c++)
					m[c] = -INFINITY;
				for (uint32_t ky = 0; ky < k; ky++)
					for (uint32_t kx = 0; kx < k; kx++) {
						const float *v =
						    x +
						    ((size_t)(oy * st + ky) * w + ox * st + kx) *
							C +
						    c0;

						for (uint32_t c = 0; c < nc; c++)
							m[c] = v[c] > m[c] ? v[c] : m[c];
					}
				for (uint32_t c = 0; c < nc; c++)
					y[(c0 + c) * ohw + (size_t)oy * ow + ox] =
					    b ? m[c] + b[c0 + c] : m[c] + 0.0f;
			}
}

const struct kern_felem FELEM_NAME = {
    .absmax = felem_absmax,
    .relu = felem_relu,
    .affine = felem_affine,
    .transpose = felem_transpose,
    .maxpool = felem_maxpool,
    .pool_transpose = felem_pool_transpose,
};
