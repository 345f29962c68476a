// SPDX-License-Identifier: MIT
/*
 * Binary GEMM on the tensor cores: mma.sync m16n8k256 on .b1 operands with AND + popc (sm_90
 * has no XOR form). With a, b the +1 masks of two rows of n bits (bits past n are 0 in both):
 *   dot = n - 2 popc(a) - 2 popc(b) + 4 popc(a & b)
 * K is zero-padded to a multiple of 256 bits in shared memory, so the padding adds nothing to
 * any popcount; rows past batch/out are loaded as zeros and never stored.
 *
 * A block computes 128 x 128 outputs with 8 warps (2 along M x 4 along N), a warp 64 x 32 =
 * 4 x 4 MMA tiles; K advances 512 bits (8 words, two MMA steps) per shared-memory stage.
 * Fragment layout (PTX ISA, mma.m16n8k256 .b1): lane = 4 g + t; A regs 0..3 = rows g, g+8,
 * g, g+8 at 32-bit words t, t, t+4, t+4 of the 256-bit step; B regs 0..1 = column g at words
 * t, t+4; C regs 0..3 = (g, 2t), (g, 2t+1), (g+8, 2t), (g+8, 2t+1).
 */
#include <errno.h>

#include "kernels/cuda/kcuda_impl.h"

#define BM    128
#define BN    128
#define KW    8	       /* 64-bit words a stage */
#define ROW   (KW + 2) /* padded row: 20 32-bit words, conflict-free fragment loads */
#define ROW32 (2 * ROW)

static __device__ __forceinline__ void mma_and_popc(int32_t c[4], const uint32_t a[4],
						    const uint32_t b[2])
{
	asm volatile("mma.sync.aligned.m16n8k256.row.col.s32.b1.b1.s32.and.popc "
		     "{%0, %1, %2, %3}, {%4, %5, %6, %7}, {%8, %9}, {%0, %1, %2, %3};\n"
		     : "+r"(c[0]), "+r"(c[1]), "+r"(c[2]), "+r"(c[3])
		     : "r"(a[0]), "r"(a[1]), "r"(a[2]), "r"(a[3]), "r"(b[0]), "r"(b[1]));
}

__global__ void __launch_bounds__(256)
    k_bgemm_mma(const uint64_t *__restrict__ x, uint32_t batch, const uint64_t *__restrict__ w,
		uint32_t out, uint32_t n, const int32_t *__restrict__ xpopc,
		const int32_t *__restrict__ wpopc, int32_t *y)
{
	__shared__ uint64_t as[BM * ROW], bs[BN * ROW];
	const uint32_t nw = (n + 63) / 64, warp = threadIdx.x / 32, lane = threadIdx.x % 32;
	const uint32_t g = lane / 4, t = lane % 4;
	const uint32_t m0 = blockIdx.y * BM, n0 = blockIdx.x * BN;
	const uint32_t wm = (warp / 4) * 64, wn = (warp % 4) * 32;
	const uint32_t *as32 = (const uint32_t *)as, *bs32 = (const uint32_t *)bs;
	int32_t acc[4][4][4] = {};

	for (uint32_t k0 = 0; k0 < nw; k0 += KW) {
		for (uint32_t idx = threadIdx.x; idx < BM * KW; idx += blockDim.x) {
			const uint32_t r = idx / KW, k = idx % KW;
			const bool kin = k0 + k < nw;

			as[r * ROW + k] =
			    kin && m0 + r < batch ? x[(size_t)(m0 + r) * nw + k0 + k] : 0;
			bs[r * ROW + k] =
			    kin && n0 + r < out ? w[(size_t)(n0 + r) * nw + k0 + k] : 0;
		}
		__syncthreads();
#pragma unroll
		for (uint32_t step = 0; step < 2; step++) {
			const uint32_t kb = step * 8;
			uint32_t a[4][4], b[4][2];

#pragma unroll
			for (int i = 0; i < 4; i++) {
				const uint32_t r = wm + 16 * i + g;

				a[i][0] = as32[r * ROW32 + kb + t];
				a[i][1] = as32[(r + 8) * ROW32 + kb + t];
				a[i][2] = as32[r * ROW32 + kb + 4 + t];
				a[i][3] = as32[(r + 8) * ROW32 + kb + 4 + t];
			}
#pragma unroll
			for (int j = 0; j < 4; j++) {
				const uint32_t c = wn + 8 * j + g;

				b[j][0] = bs32[c * ROW32 + kb + t];
				b[j][1] = bs32[c * ROW32 + kb + 4 + t];
			}
#pragma unroll
			for (int i = 0; i < 4; i++)
#pragma unroll
				for (int j = 0; j < 4; j++)
					mma_and_popc(acc[i][j], a[i], b[j]);
		}
		__syncthreads();
	}
#pragma unroll
	for (int i = 0; i < 4; i++)
#pragma unroll
		for (int j = 0; j < 4; j++)
#pragma unroll
			for (int e = 0; e < 4; e++) {
				const uint32_t r = m0 + wm + 16 * i + g + (e / 2) * 8;
				const uint32_t c = n0 + wn + 8 * j + 2 * t + (e % 2);

				if (r < batch && c < out)
					y[(size_t)r * out + c] = (int32_t)n - 2 * xpopc[r] -
								 2 * wpopc[c] + 4 * acc[i][j][e];
			}
}

int kcuda_d_bgemm_mma(cudaStream_t s, const uint64_t *x, uint32_t batch, const uint64_t *w,
		      uint32_t out, uint32_t n, int32_t *y, int32_t *xpopc, const int32_t *wpopc)
{
	int ret;

	if (!xpopc || !wpopc)
		return kcuda_fail(-EINVAL, "kcuda: the b1 MMA GEMM needs row popcounts");
	ret = kcuda_d_rowpopc(s, x, batch, (n + 63) / 64, xpopc);
	if (ret)
		return ret;
	k_bgemm_mma<<<dim3((out + BN - 1) / BN, (batch + BM - 1) / BM), 256, 0, s>>>(
	    x, batch, w, out, n, xpopc, wpopc, y);
	return KCUDA_CHECK(cudaGetLastError());
}
