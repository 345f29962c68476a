/* SPDX-License-Identifier: MIT */
/* Local response normalisation of one image, shared by float_ref.c (double) and frun.c (float). */
#ifndef KERNELS_LRN_IMPL_H
#define KERNELS_LRN_IMPL_H

#include <math.h>

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

#endif
