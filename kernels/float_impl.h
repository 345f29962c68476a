/* SPDX-License-Identifier: MIT */
/* Plane ops that float_ref.c (in double) and frun.c (in float) share, written once over the type.
 */
#ifndef KERNELS_FLOAT_IMPL_H
#define KERNELS_FLOAT_IMPL_H

#include <math.h>
#include <string.h>

/*
 * y[ch][p] = x[ch][p] / (k + alpha / size * s)^beta, s the sum in double of x[j][p]^2 over the
 * channels j within half (size / 2) of ch; x and y hold c planes of hw values of type T.
 */
#define KERN_LRN_IMAGE(T, x, y, c, hw, half, size, alpha, beta, k)                                 \
	do {                                                                                       \
		for (uint32_t ch = 0; ch < (c); ch++) {                                            \
			uint32_t lo = ch < (half) ? 0 : ch - (half);                               \
			uint32_t hi = ch + (half) + 1 < (c) ? ch + (half) + 1 : (c);               \
                                                                                                   \
			for (uint32_t p = 0; p < (hw); p++) {                                      \
				double s = 0.0;                                                    \
                                                                                                   \
				for (uint32_t j = lo; j < hi; j++)                                 \
					s += (double)x[(size_t)j * (hw) + p] *                     \
					     x[(size_t)j * (hw) + p];                              \
				y[(size_t)ch * (hw) + p] =                                         \
				    (T)(x[(size_t)ch * (hw) + p] /                                 \
					pow((k) + ((alpha) / (size)) * s, (beta)));                \
			}                                                                          \
		}                                                                                  \
	} while (0)

/*
 * n planes of h x w values of type T from x into the middle of n planes of oh x ow in y, top rows
 * and left columns in, the rest fill.
 */
#define KERN_PAD_PLANES(T, x, y, n, h, w, oh, ow, top, left, fill)                                 \
	do {                                                                                       \
		for (size_t p = 0; p < (n); p++) {                                                 \
			const T *xp = (x) + p * (h) * (w);                                         \
			T *yp = (y) + p * (oh) * (ow);                                             \
                                                                                                   \
			for (size_t i = 0; i < (oh) * (ow); i++)                                   \
				yp[i] = (fill);                                                    \
			for (size_t r = 0; r < (h); r++)                                           \
				memcpy(yp + (r + (top)) * (ow) + (left), xp + r * (w),             \
				       (w) * sizeof(T));                                           \
		}                                                                                  \
	} while (0)

#endif
