// SPDX-License-Identifier: MIT
/*
 * Binary kernels with __popcll: GEMV (a warp per output), tiled GEMM, bit-plane first layer,
 * binary conv with exact zero padding, sign/threshold packing, bit max-pool, unpack, flatten.
 * Each computes exactly what kernels/bin_ref.c computes (integer arithmetic).
 */
#include <errno.h>

#include "kernels/cuda/kcuda_impl.h"
#include "kernels/u8_dot.h"

#define TPB 256

static __device__ __forceinline__ uint32_t dwords(uint64_t bits)
{
	return (uint32_t)((bits + 63) / 64);
}

static __device__ __forceinline__ bool thr_bit(int32_t dot, const struct kcuda_dthresh t,
					       uint32_t o)
{
	return (dot >= t.thr[o]) ^ (t.flip[o] != 0);
}

/* ---- dense ---------------------------------------------------------------------------- */

__global__ void k_bgemv(const uint64_t *__restrict__ x, uint32_t batch,
			const uint64_t *__restrict__ w, uint32_t out, uint32_t n, int32_t *y)
{
	const uint32_t nw = dwords(n), lane = threadIdx.x & 31;
	const size_t nwarps = (size_t)gridDim.x * (blockDim.x / 32);

	for (size_t i = ((size_t)blockIdx.x * blockDim.x + threadIdx.x) / 32;
	     i < (size_t)batch * out; i += nwarps) {
		const uint64_t *xb = x + (i / out) * nw, *wo = w + (i % out) * nw;
		int32_t cnt = 0;

		for (uint32_t j = lane; j < nw; j += 32)
			cnt += __popcll(xb[j] ^ wo[j]);
		for (int d = 16; d; d >>= 1)
			cnt += __shfl_xor_sync(0xffffffffu, cnt, d);
		if (!lane)
			y[i] = (int32_t)n - 2 * cnt;
	}
}

/* 64 x 64 outputs a block, 4 x 4 a thread, K in chunks of 8 words (rows padded to 9 words). */
#define GT 64
#define GK 8

__global__ void __launch_bounds__(256)
    k_bgemm(const uint64_t *__restrict__ x, uint32_t batch, const uint64_t *__restrict__ w,
	    uint32_t out, uint32_t n, int32_t *y)
{
	__shared__ uint64_t as[GT][GK + 1], bs[GT][GK + 1];
	const uint32_t nw = dwords(n), tx = threadIdx.x % 16, ty = threadIdx.x / 16;
	const uint32_t b0 = blockIdx.y * GT, o0 = blockIdx.x * GT;
	int32_t acc[4][4] = {};

	for (uint32_t k0 = 0; k0 < nw; k0 += GK) {
		for (uint32_t idx = threadIdx.x; idx < GT * GK; idx += blockDim.x) {
			uint32_t r = idx / GK, k = idx % GK;
			bool kin = k0 + k < nw;

			as[r][k] = kin && b0 + r < batch ? x[(size_t)(b0 + r) * nw + k0 + k] : 0;
			bs[r][k] = kin && o0 + r < out ? w[(size_t)(o0 + r) * nw + k0 + k] : 0;
		}
		__syncthreads();
#pragma unroll
		for (uint32_t k = 0; k < GK; k++) {
			uint64_t a[4], b[4];

#pragma unroll
			for (int i = 0; i < 4; i++) {
				a[i] = as[ty + 16 * i][k];
				b[i] = bs[tx + 16 * i][k];
			}
#pragma unroll
			for (int i = 0; i < 4; i++)
#pragma unroll
				for (int j = 0; j < 4; j++)
					acc[i][j] += __popcll(a[i] ^ b[j]);
		}
		__syncthreads();
	}
	for (int i = 0; i < 4; i++)
		for (int j = 0; j < 4; j++) {
			uint32_t b = b0 + ty + 16 * i, o = o0 + tx + 16 * j;

			if (b < batch && o < out)
				y[(size_t)b * out + o] = (int32_t)n - 2 * acc[i][j];
		}
}

__global__ void k_rowpopc(const uint64_t *__restrict__ x, uint32_t rows, uint32_t nw, int32_t *cnt)
{
	for (size_t r = (size_t)blockIdx.x * blockDim.x + threadIdx.x; r < rows;
	     r += (size_t)gridDim.x * blockDim.x) {
		int32_t c = 0;

		for (uint32_t j = 0; j < nw; j++)
			c += __popcll(x[r * nw + j]);
		cnt[r] = c;
	}
}

__global__ void k_thr_pack(const int32_t *__restrict__ dot, uint32_t batch, uint32_t out,
			   const struct kcuda_dthresh t, uint64_t *y)
{
	const uint32_t ow = dwords(out);

	for (size_t i = (size_t)blockIdx.x * blockDim.x + threadIdx.x; i < (size_t)batch * ow;
	     i += (size_t)gridDim.x * blockDim.x) {
		const size_t b = i / ow;
		const uint32_t j = (uint32_t)(i % ow), end = min(out, 64 * j + 64);
		uint64_t m = 0;

		for (uint32_t o = 64 * j; o < end; o++)
			m |= (uint64_t)thr_bit(dot[b * out + o], t, o) << (o % 64);
		y[i] = m;
	}
}

int kcuda_d_rowpopc(cudaStream_t s, const uint64_t *x, uint32_t rows, uint32_t nw, int32_t *cnt)
{
	k_rowpopc<<<kcuda_blocks(rows, TPB), TPB, 0, s>>>(x, rows, nw, cnt);
	return KCUDA_CHECK(cudaGetLastError());
}

int kcuda_d_thr_pack(cudaStream_t s, const int32_t *dot, uint32_t batch, uint32_t out,
		     const struct kcuda_dthresh *t, uint64_t *y)
{
	k_thr_pack<<<kcuda_blocks((size_t)batch * ((out + 63) / 64), TPB), TPB, 0, s>>>(dot, batch,
											out, *t, y);
	return KCUDA_CHECK(cudaGetLastError());
}

int kcuda_d_bdense(cudaStream_t s, const uint64_t *x, uint32_t batch, const uint64_t *w,
		   uint32_t out, uint32_t n, int32_t *y, enum kcuda_bgemm algo, int32_t *xpopc,
		   const int32_t *wpopc)
{
	if (algo == KCUDA_BGEMM_AUTO)
		algo = batch <= 4 ? KCUDA_BGEMM_GEMV : KCUDA_BGEMM_MMA;
	switch (algo) {
	case KCUDA_BGEMM_GEMV:
		k_bgemv<<<kcuda_blocks((size_t)batch * out * 32, TPB), TPB, 0, s>>>(x, batch, w,
										    out, n, y);
		return KCUDA_CHECK(cudaGetLastError());
	case KCUDA_BGEMM_POPC:
		k_bgemm<<<dim3((out + GT - 1) / GT, (batch + GT - 1) / GT), 256, 0, s>>>(
		    x, batch, w, out, n, y);
		return KCUDA_CHECK(cudaGetLastError());
	case KCUDA_BGEMM_MMA:
		return kcuda_d_bgemm_mma(s, x, batch, w, out, n, y, xpopc, wpopc);
	default:
		return kcuda_fail(-EINVAL, "kcuda: unknown binary GEMM engine %d", (int)algo);
	}
}

/* ---- bit-plane first layer ------------------------------------------------------------ */

/* planes [batch][8][nw] (plane b holds bit b of every input), then sumx [batch]. */
size_t kcuda_u8_scratch(uint32_t n, uint32_t batch)
{
	size_t planes = (size_t)batch * 8 * ((n + 63) / 64) * sizeof(uint64_t);

	return (planes + 255) / 256 * 256 + (size_t)batch * sizeof(int32_t);
}

static int32_t *u8_sumx(void *scratch, uint32_t n, uint32_t batch)
{
	size_t planes = (size_t)batch * 8 * ((n + 63) / 64) * sizeof(uint64_t);

	return (int32_t *)((char *)scratch + (planes + 255) / 256 * 256);
}

__global__ void k_u8_planes(const uint8_t *__restrict__ x, uint32_t batch, uint32_t n, uint64_t *p,
			    int32_t *sumx)
{
	const uint32_t nw = dwords(n);

	for (size_t i = (size_t)blockIdx.x * blockDim.x + threadIdx.x; i < (size_t)batch * nw;
	     i += (size_t)gridDim.x * blockDim.x) {
		const size_t b = i / nw;
		const uint32_t j = (uint32_t)(i % nw), end = min(n, 64 * j + 64);
		uint64_t m[8] = {};
		int32_t sum = 0;

		for (uint32_t e = 64 * j; e < end; e++) {
			uint32_t v = x[b * n + e];

			sum += (int32_t)v;
#pragma unroll
			for (int bit = 0; bit < 8; bit++)
				m[bit] |= (uint64_t)((v >> bit) & 1) << (e % 64);
		}
#pragma unroll
		for (int bit = 0; bit < 8; bit++)
			p[(b * 8 + bit) * nw + j] = m[bit];
		atomicAdd(&sumx[b], sum);
	}
}

__global__ void k_u8_dot(const uint64_t *__restrict__ p, const int32_t *__restrict__ sumx,
			 uint32_t batch, const uint64_t *__restrict__ w, uint32_t out, uint32_t n,
			 int32_t *y)
{
	const uint32_t nw = dwords(n);

	for (size_t i = (size_t)blockIdx.x * blockDim.x + threadIdx.x; i < (size_t)batch * out;
	     i += (size_t)gridDim.x * blockDim.x) {
		const size_t b = i / out;

		y[i] = kern_u8_planes_dot(p + b * 8 * nw, w + (i % out) * nw, nw, sumx[b]);
	}
}

int kcuda_d_bdense_u8(cudaStream_t s, const uint8_t *x, uint32_t batch, const uint64_t *w,
		      uint32_t out, uint32_t n, int32_t *y, void *scratch)
{
	uint64_t *p = (uint64_t *)scratch;
	int32_t *sumx = u8_sumx(scratch, n, batch);
	int ret = KCUDA_CHECK(cudaMemsetAsync(sumx, 0, (size_t)batch * sizeof(*sumx), s));

	if (ret)
		return ret;
	k_u8_planes<<<kcuda_blocks((size_t)batch * ((n + 63) / 64), TPB), TPB, 0, s>>>(x, batch, n,
										       p, sumx);
	ret = KCUDA_CHECK(cudaGetLastError());
	if (ret)
		return ret;
	k_u8_dot<<<kcuda_blocks((size_t)batch * out, TPB), TPB, 0, s>>>(p, sumx, batch, w, out, n,
									y);
	return KCUDA_CHECK(cudaGetLastError());
}

/* ---- binary conv ---------------------------------------------------------------------- */

/* Valid taps [lo, hi) of a kernel of size k placed at input coordinate at (may be < 0). */
static __device__ __forceinline__ void tap_range(int64_t at, uint32_t k, uint32_t size,
						 uint32_t *lo, uint32_t *hi)
{
	int64_t l = at < 0 ? -at : 0, h = (int64_t)size - at;

	l = l < k ? l : k;
	h = h < k ? h : k;
	*lo = (uint32_t)l;
	*hi = (uint32_t)(h > l ? h : l);
}

static __device__ int32_t bconv_dot(const uint64_t *__restrict__ xb, const struct kern_conv_geom g,
				    const uint64_t *__restrict__ wo, uint32_t oy, uint32_t ox)
{
	const uint32_t wpp = dwords(g.c);
	const int64_t iy = (int64_t)oy * g.stride - g.pad, ix = (int64_t)ox * g.stride - g.pad;
	uint32_t ky0, ky1, kx0, kx1;
	int32_t cnt = 0;

	tap_range(iy, g.k, g.h, &ky0, &ky1);
	tap_range(ix, g.k, g.w, &kx0, &kx1);
	for (uint32_t ky = ky0; ky < ky1; ky++)
		for (uint32_t kx = kx0; kx < kx1; kx++) {
			const uint64_t *xp =
			    xb + ((size_t)(iy + ky) * g.w + (size_t)(ix + kx)) * wpp;
			const uint64_t *wp = wo + ((size_t)ky * g.k + kx) * wpp;

			for (uint32_t j = 0; j < wpp; j++)
				cnt += __popcll(xp[j] ^ wp[j]);
		}
	return (int32_t)((ky1 - ky0) * (kx1 - kx0) * g.c) - 2 * cnt;
}

/* y int32 [batch][o][oh][ow]: a thread per output. */
__global__ void k_bconv(const uint64_t *__restrict__ x, uint32_t batch,
			const struct kern_conv_geom g, const uint64_t *__restrict__ w, int32_t *y)
{
	const size_t ohw = (size_t)g.oh * g.ow, in_words = (size_t)g.h * g.w * dwords(g.c);
	const size_t wsz = (size_t)g.k * g.k * dwords(g.c);

	for (size_t i = (size_t)blockIdx.x * blockDim.x + threadIdx.x;
	     i < (size_t)batch * g.o * ohw; i += (size_t)gridDim.x * blockDim.x) {
		const size_t p = i % ohw, o = (i / ohw) % g.o, b = i / ohw / g.o;

		y[i] = bconv_dot(x + b * in_words, g, w + o * wsz, (uint32_t)(p / g.ow),
				 (uint32_t)(p % g.ow));
	}
}

/* y BITS [batch][oh][ow][words(o)]: a thread per output word. */
__global__ void k_bconv_thr(const uint64_t *__restrict__ x, uint32_t batch,
			    const struct kern_conv_geom g, const uint64_t *__restrict__ w,
			    const struct kcuda_dthresh t, uint64_t *y)
{
	const size_t ohw = (size_t)g.oh * g.ow, in_words = (size_t)g.h * g.w * dwords(g.c);
	const size_t wsz = (size_t)g.k * g.k * dwords(g.c);
	const uint32_t ow = dwords(g.o);

	for (size_t i = (size_t)blockIdx.x * blockDim.x + threadIdx.x; i < (size_t)batch * ohw * ow;
	     i += (size_t)gridDim.x * blockDim.x) {
		const uint32_t j = (uint32_t)(i % ow), end = min(g.o, 64 * j + 64);
		const size_t p = (i / ow) % ohw, b = i / ow / ohw;
		uint64_t m = 0;

		for (uint32_t o = 64 * j; o < end; o++) {
			int32_t dot = bconv_dot(x + b * in_words, g, w + o * wsz,
						(uint32_t)(p / g.ow), (uint32_t)(p % g.ow));

			m |= (uint64_t)thr_bit(dot, t, o) << (o % 64);
		}
		y[i] = m;
	}
}

int kcuda_d_bconv(cudaStream_t s, const uint64_t *x, uint32_t batch, const struct kern_conv_geom *g,
		  const uint64_t *w, int32_t *y)
{
	k_bconv<<<kcuda_blocks((size_t)batch * g->o * g->oh * g->ow, TPB), TPB, 0, s>>>(x, batch,
											*g, w, y);
	return KCUDA_CHECK(cudaGetLastError());
}

int kcuda_d_bconv_thr(cudaStream_t s, const uint64_t *x, uint32_t batch,
		      const struct kern_conv_geom *g, const uint64_t *w,
		      const struct kcuda_dthresh *t, uint64_t *y)
{
	size_t words = (size_t)batch * g->oh * g->ow * ((g->o + 63) / 64);

	k_bconv_thr<<<kcuda_blocks(words, TPB), TPB, 0, s>>>(x, batch, *g, w, *t, y);
	return KCUDA_CHECK(cudaGetLastError());
}

/* ---- packing and layout ----------------------------------------------------------------- */

/* A thread per output word (image, pixel, word): channels 64j.. read across pixels. */
__global__ void k_pack(const double *__restrict__ x, uint32_t batch, uint32_t c, size_t hw,
		       bool use_thr, const struct kcuda_dthresh t, uint64_t *y)
{
	const uint32_t wpp = dwords(c);

	for (size_t i = (size_t)blockIdx.x * blockDim.x + threadIdx.x; i < (size_t)batch * hw * wpp;
	     i += (size_t)gridDim.x * blockDim.x) {
		const uint32_t j = (uint32_t)(i % wpp), end = min(c, 64 * j + 64);
		const size_t p = (i / wpp) % hw, b = i / wpp / hw;
		const double *xb = x + b * c * hw;
		uint64_t m = 0;

		for (uint32_t ch = 64 * j; ch < end; ch++) {
			double v = xb[ch * hw + p];
			bool bit =
			    use_thr ? (v >= (double)t.thr[ch]) ^ (t.flip[ch] != 0) : v >= 0.0;

			m |= (uint64_t)bit << (ch % 64);
		}
		y[i] = m;
	}
}

int kcuda_d_pack(cudaStream_t s, const double *x, uint32_t batch, uint32_t c, uint32_t h,
		 uint32_t w, const struct kcuda_dthresh *t, uint64_t *y)
{
	const size_t hw = (size_t)h * w;
	const struct kcuda_dthresh none = {NULL, NULL};

	k_pack<<<kcuda_blocks((size_t)batch * hw * ((c + 63) / 64), TPB), TPB, 0, s>>>(
	    x, batch, c, hw, t != NULL, t ? *t : none, y);
	return KCUDA_CHECK(cudaGetLastError());
}

__global__ void k_maxpool_bits(const uint64_t *__restrict__ x, uint32_t batch, uint32_t wpp,
			       uint32_t h, uint32_t w, uint32_t k, uint32_t stride, uint32_t oh,
			       uint32_t ow, const uint64_t *__restrict__ and_mask, uint64_t *y)
{
	for (size_t i = (size_t)blockIdx.x * blockDim.x + threadIdx.x;
	     i < (size_t)batch * oh * ow * wpp; i += (size_t)gridDim.x * blockDim.x) {
		const uint32_t j = (uint32_t)(i % wpp);
		const size_t p = (i / wpp) % ((size_t)oh * ow), b = i / wpp / ((size_t)oh * ow);
		const uint32_t oy = (uint32_t)(p / ow), ox = (uint32_t)(p % ow);
		const uint64_t *xb = x + b * h * w * wpp;
		uint64_t any = 0, all = ~0ull;

		for (uint32_t ky = 0; ky < k; ky++)
			for (uint32_t kx = 0; kx < k; kx++) {
				const uint64_t v =
				    xb[((size_t)(oy * stride + ky) * w + ox * stride + kx) * wpp +
				       j];

				any |= v;
				all &= v;
			}
		y[i] = and_mask ? (any & ~and_mask[j]) | (all & and_mask[j]) : any;
	}
}

int kcuda_d_maxpool_bits(cudaStream_t s, const uint64_t *x, uint32_t batch, uint32_t c, uint32_t h,
			 uint32_t w, uint32_t k, uint32_t stride, const uint64_t *and_mask,
			 uint64_t *y)
{
	const uint32_t wpp = (c + 63) / 64, oh = (h - k) / stride + 1, ow = (w - k) / stride + 1;

	k_maxpool_bits<<<kcuda_blocks((size_t)batch * oh * ow * wpp, TPB), TPB, 0, s>>>(
	    x, batch, wpp, h, w, k, stride, oh, ow, and_mask, y);
	return KCUDA_CHECK(cudaGetLastError());
}

/* y F64 C-major: a thread per element. */
__global__ void k_unpack(const uint64_t *__restrict__ x, uint32_t batch, uint32_t c, size_t hw,
			 double *y)
{
	const uint32_t wpp = dwords(c);

	for (size_t i = (size_t)blockIdx.x * blockDim.x + threadIdx.x; i < (size_t)batch * c * hw;
	     i += (size_t)gridDim.x * blockDim.x) {
		const size_t p = i % hw, ch = (i / hw) % c, b = i / hw / c;

		y[i] = (x[(b * hw + p) * wpp + ch / 64] >> (ch % 64)) & 1 ? 1.0 : -1.0;
	}
}

int kcuda_d_unpack(cudaStream_t s, const uint64_t *x, uint32_t batch, uint32_t c, uint32_t h,
		   uint32_t w, double *y)
{
	const size_t hw = (size_t)h * w;

	k_unpack<<<kcuda_blocks((size_t)batch * c * hw, TPB), TPB, 0, s>>>(x, batch, c, hw, y);
	return KCUDA_CHECK(cudaGetLastError());
}

/* y flat C-major bits, words(c*h*w) per image: a thread per output word. */
__global__ void k_flatten_bits(const uint64_t *__restrict__ x, uint32_t batch, uint32_t c,
			       size_t hw, uint64_t *y)
{
	const uint32_t wpp = dwords(c);
	const size_t n = c * hw, nw = (n + 63) / 64;

	for (size_t i = (size_t)blockIdx.x * blockDim.x + threadIdx.x; i < (size_t)batch * nw;
	     i += (size_t)gridDim.x * blockDim.x) {
		const size_t b = i / nw, e0 = (i % nw) * 64, end = min(n, e0 + 64);
		const uint64_t *xb = x + b * hw * wpp;
		uint64_t m = 0;

		for (size_t e = e0; e < end; e++) {
			const size_t ch = e / hw, p = e % hw;

			m |= ((xb[p * wpp + ch / 64] >> (ch % 64)) & 1) << (e % 64);
		}
		y[i] = m;
	}
}

int kcuda_d_flatten_bits(cudaStream_t s, const uint64_t *x, uint32_t batch, uint32_t c, uint32_t h,
			 uint32_t w, uint64_t *y)
{
	const size_t hw = (size_t)h * w;

	k_flatten_bits<<<kcuda_blocks((size_t)batch * ((c * hw + 63) / 64), TPB), TPB, 0, s>>>(
	    x, batch, c, hw, y);
	return KCUDA_CHECK(cudaGetLastError());
}

__global__ void k_ints_to_f64(const int32_t *__restrict__ x, size_t n, double *y)
{
	for (size_t i = (size_t)blockIdx.x * blockDim.x + threadIdx.x; i < n;
	     i += (size_t)gridDim.x * blockDim.x)
		y[i] = (double)x[i];
}

int kcuda_d_ints_to_f64(cudaStream_t s, const int32_t *x, size_t n, double *y)
{
	k_ints_to_f64<<<kcuda_blocks(n, TPB), TPB, 0, s>>>(x, n, y);
	return KCUDA_CHECK(cudaGetLastError());
}
