/* SPDX-License-Identifier: MIT */
/* The float32 conv of the float layers with its weights in blocks of filters (kern_ops.h). */
#include <string.h>

#include "kernels/bin_impl.h"
#include "kernels/kern_ops.h"

size_t kern_sconv_packed_elems(uint32_t n, uint32_t o)
{
	return (size_t)(o + KERN_SCONV_BLK - 1) / KERN_SCONV_BLK * n * KERN_SCONV_BLK;
}

void kern_sconv_pack(const float *wt, uint32_t n, uint32_t o, float *wb)
{
	for (uint32_t c0 = 0; c0 < o; c0 += KERN_SCONV_BLK)
		for (uint32_t t = 0; t < n; t++, wb += KERN_SCONV_BLK)
			for (uint32_t j = 0; j < KERN_SCONV_BLK; j++)
				wb[j] = c0 + j < o ? wt[(size_t)t * o + c0 + j] : 0.0f;
}

void kern_ref_sconv_packed(const float *xp, const struct kern_conv_geom *g, const float *wb,
			   float *y)
{
	const size_t hp = (size_t)g->h + 2 * g->pad, wp = (size_t)g->w + 2 * g->pad;
	const size_t n = (size_t)g->c * g->k * g->k;

	for (uint32_t oy = 0; oy < g->oh; oy++)
		for (uint32_t ox = 0; ox < g->ow; ox++, y += g->o)
			for (uint32_t c = 0; c < g->o; c++) {
				const float *w = wb + (c / KERN_SCONV_BLK) * n * KERN_SCONV_BLK +
						 c % KERN_SCONV_BLK;
				float acc = 0.0f;

				for (uint32_t ci = 0; ci < g->c; ci++)
					for (uint32_t ky = 0; ky < g->k; ky++)
						for (uint32_t kx = 0; kx < g->k;
						     kx++, w += KERN_SCONV_BLK)
							acc += *w *
							       xp[(ci * hp + oy * g->stride + ky) *
								      wp +
								  (size_t)ox * g->stride + kx];
				y[c] = acc;
			}
}
