/* SPDX-License-Identifier: MIT */
/*
 * kernels/u8_dot.h — the dot of a u8 vector with a row of packed signs, the vector held as its 8
 * bit planes: one definition for the C reference and the CUDA kernels (a __host__ __device__
 * function under nvcc).
 */
#ifndef KERNELS_U8_DOT_H
#define KERNELS_U8_DOT_H

#include <stdint.h>

#ifdef __CUDACC__
#define KERN_HOST_DEVICE __host__ __device__
#else
#define KERN_HOST_DEVICE
#endif

/*
 * p: 8 planes of nw words (plane b holds bit b of every x_i), w: nw words of signs (1: +1),
 * sumx: the sum of x. sum_i x_i w_i with w_i = +-1 is 2 * sum_b 2^b popcount(p_b & w) - sumx.
 */
static inline KERN_HOST_DEVICE int32_t kern_u8_planes_dot(const uint64_t *p, const uint64_t *w,
							  uint32_t nw, int32_t sumx)
{
	int32_t acc = 0;

	for (uint32_t b = 0; b < 8; b++) {
		int32_t cnt = 0;

		for (uint32_t j = 0; j < nw; j++)
#ifdef __CUDA_ARCH__
			cnt += __popcll(p[b * nw + j] & w[j]);
#else
			cnt += __builtin_popcountll(p[b * nw + j] & w[j]);
#endif
		acc += cnt << b;
	}
	return 2 * acc - sumx;
}

#endif
