// SPDX-License-Identifier: MIT
/*
 * Float kernels: im2col + cuBLAS gemm convolution and dense (double for models, single for
 * benchmarks), and the element-wise ops of kernels/float_ref.c. The element-wise ops round
 * every operation like the C code (explicit _rn intrinsics, and the build has -fmad=false), so
 * they equal the CPU bit for bit; LRN calls CUDA's pow() (within 2 ulp of glibc's).
 */
#include <errno.h>
#include <math.h>

#include "kernels/cuda/kcuda_impl.h"

#define TPB 256

#define GRID_LOOP(i, n)                                                                            \
	for (size_t i = (size_t)blockIdx.x * blockDim.x + threadIdx.x; i < (n);                    \
	     i += (size_t)gridDim.x * blockDim.x)

template <typename T> __global__ void k_cast(const T *__restrict__ x, size_t n, double *y)
{
	GRID_LOOP(i, n)
	y[i] = (double)x[i];
}

int kcuda_d_cast(cudaStream_t s, const void *x, uint32_t fmt, size_t n, double *y)
{
	if (fmt == MODEL_FMT_U8)
		k_cast<uint8_t><<<kcuda_blocks(n, TPB), TPB, 0, s>>>((const uint8_t *)x, n, y);
	else if (fmt == MODEL_FMT_F32)
		k_cast<float><<<kcuda_blocks(n, TPB), TPB, 0, s>>>((const float *)x, n, y);
	else
		return kcuda_fail(-EINVAL, "kcuda: cast from format %u", fmt);
	return KCUDA_CHECK(cudaGetLastError());
}

/* col [batch][(c, ky, kx)][oy * ow + ox]; taps in the padding are 0. */
template <typename T>
__global__ void k_im2col(const T *__restrict__ x, uint32_t batch, const struct kern_conv_geom g,
			 T *col)
{
	const size_t ohw = (size_t)g.oh * g.ow, kk = (size_t)g.k * g.k;
	const size_t rows = g.c * kk, in = (size_t)g.c * g.h * g.w;

	GRID_LOOP(i, (size_t)batch * rows * ohw)
	{
		const size_t p = i % ohw, r = (i / ohw) % rows, b = i / ohw / rows;
		const uint32_t c = (uint32_t)(r / kk), ky = (uint32_t)(r % kk / g.k),
			       kx = (uint32_t)(r % g.k);
		const int64_t iy = (int64_t)(p / g.ow) * g.stride + ky - g.pad;
		const int64_t ix = (int64_t)(p % g.ow) * g.stride + kx - g.pad;
		const bool inside = iy >= 0 && iy < g.h && ix >= 0 && ix < g.w;

		col[i] = inside ? x[b * in + ((size_t)c * g.h + iy) * g.w + ix] : (T)0;
	}
}

template <typename T>
__global__ void k_bias(const T *__restrict__ x, size_t n, uint32_t c, size_t hw,
		       const T *__restrict__ b, T *y)
{
	GRID_LOOP(i, n)
	y[i] = x[i] + b[(i / hw) % c];
}

size_t kcuda_conv_scratch(const struct kern_conv_geom *g, uint32_t batch)
{
	return (size_t)batch * g->c * g->k * g->k * g->oh * g->ow;
}

/* cuBLAS's gemm in each precision (the same arguments, T's alpha and beta). */
template <typename T> struct blas;
template <> struct blas<double> {
	static constexpr auto gemm = cublasDgemm;
	static constexpr auto gemm_batched = cublasDgemmStridedBatched;
};
template <> struct blas<float> {
	static constexpr auto gemm = cublasSgemm;
	static constexpr auto gemm_batched = cublasSgemmStridedBatched;
};

/* Row-major Y_b (o x ohw) = W (o x ckk) col_b (ckk x ohw), i.e. column-major Y^T = col^T W^T. */
template <typename T>
static cublasStatus_t gemm_conv(cublasHandle_t h, const T *w, const T *col, T *y, int ohw, int o,
				int ckk, int batch)
{
	const T one = 1, zero = 0;

	return blas<T>::gemm_batched(h, CUBLAS_OP_N, CUBLAS_OP_N, ohw, o, ckk, &one, col, ohw,
				     (long long)ckk * ohw, w, ckk, 0, &zero, y, ohw,
				     (long long)o * ohw, batch);
}

/* Row-major Y (batch x out) = X (batch x n) W^T, i.e. column-major Y^T = op_T(W) X^T. */
template <typename T>
static cublasStatus_t gemm_dense(cublasHandle_t h, const T *x, int batch, int n, const T *w,
				 int out, T *y)
{
	const T one = 1, zero = 0;

	return blas<T>::gemm(h, CUBLAS_OP_T, CUBLAS_OP_N, out, batch, n, &one, w, n, x, n, &zero, y,
			     out);
}

template <typename T>
static int conv(cudaStream_t s, cublasHandle_t h, const T *x, uint32_t batch,
		const struct kern_conv_geom *g, const T *w, const T *b, T *col, T *y)
{
	const size_t ohw = (size_t)g->oh * g->ow, ckk = (size_t)g->c * g->k * g->k;
	int ret;

	k_im2col<T><<<kcuda_blocks(batch * ckk * ohw, TPB), TPB, 0, s>>>(x, batch, *g, col);
	ret = KCUDA_CHECK(cudaGetLastError());
	if (!ret)
		ret = KCUDA_CHECK(cublasSetStream(h, s));
	if (!ret)
		ret =
		    KCUDA_CHECK(gemm_conv(h, w, col, y, (int)ohw, (int)g->o, (int)ckk, (int)batch));
	if (ret || !b)
		return ret;
	k_bias<T><<<kcuda_blocks(batch * g->o * ohw, TPB), TPB, 0, s>>>(y, batch * g->o * ohw, g->o,
									ohw, b, y);
	return KCUDA_CHECK(cudaGetLastError());
}

template <typename T>
static int dense(cudaStream_t s, cublasHandle_t h, const T *x, uint32_t batch, uint32_t n,
		 const T *w, uint32_t out, const T *b, T *y)
{
	int ret = KCUDA_CHECK(cublasSetStream(h, s));

	if (!ret)
		ret = KCUDA_CHECK(gemm_dense(h, x, (int)batch, (int)n, w, (int)out, y));
	if (ret || !b)
		return ret;
	k_bias<T><<<kcuda_blocks((size_t)batch * out, TPB), TPB, 0, s>>>(y, (size_t)batch * out,
									 out, 1, b, y);
	return KCUDA_CHECK(cudaGetLastError());
}

int kcuda_d_conv_f64(cudaStream_t s, cublasHandle_t h, const double *x, uint32_t batch,
		     const struct kern_conv_geom *g, const double *w, const double *b, double *col,
		     double *y)
{
	return conv(s, h, x, batch, g, w, b, col, y);
}

int kcuda_d_conv_f32(cudaStream_t s, cublasHandle_t h, const float *x, uint32_t batch,
		     const struct kern_conv_geom *g, const float *w, const float *b, float *col,
		     float *y)
{
	return conv(s, h, x, batch, g, w, b, col, y);
}

int kcuda_d_dense_f64(cudaStream_t s, cublasHandle_t h, const double *x, uint32_t batch, uint32_t n,
		      const double *w, uint32_t out, const double *b, double *y)
{
	return dense(s, h, x, batch, n, w, out, b, y);
}

int kcuda_d_dense_f32(cudaStream_t s, cublasHandle_t h, const float *x, uint32_t batch, uint32_t n,
		      const float *w, uint32_t out, const float *b, float *y)
{
	return dense(s, h, x, batch, n, w, out, b, y);
}

int kcuda_d_bias(cudaStream_t s, const double *x, uint32_t batch, uint32_t c, uint32_t hw,
		 const double *b, double *y)
{
	const size_t n = (size_t)batch * c * hw;

	k_bias<double><<<kcuda_blocks(n, TPB), TPB, 0, s>>>(x, n, c, hw, b, y);
	return KCUDA_CHECK(cudaGetLastError());
}

/* p: [4][c] rows mean, sd, gamma, beta; (x - mean) / sd * gamma + beta in this order. */
__global__ void k_batchnorm(const double *__restrict__ x, size_t n, uint32_t c, size_t hw,
			    const double *__restrict__ p, double *y)
{
	GRID_LOOP(i, n)
	{
		const size_t ch = (i / hw) % c;

		y[i] = __dadd_rn(
		    __dmul_rn(__ddiv_rn(__dsub_rn(x[i], p[ch]), p[c + ch]), p[2 * c + ch]),
		    p[3 * c + ch]);
	}
}

int kcuda_d_batchnorm(cudaStream_t s, const double *x, uint32_t batch, uint32_t c, uint32_t hw,
		      const double *p, double *y)
{
	const size_t n = (size_t)batch * c * hw;

	k_batchnorm<<<kcuda_blocks(n, TPB), TPB, 0, s>>>(x, n, c, hw, p, y);
	return KCUDA_CHECK(cudaGetLastError());
}

__global__ void k_relu(const double *__restrict__ x, size_t n, double *y)
{
	GRID_LOOP(i, n)
	y[i] = x[i] > 0.0 ? x[i] : 0.0;
}

int kcuda_d_relu(cudaStream_t s, const double *x, size_t n, double *y)
{
	k_relu<<<kcuda_blocks(n, TPB), TPB, 0, s>>>(x, n, y);
	return KCUDA_CHECK(cudaGetLastError());
}

__global__ void k_maxpool(const double *__restrict__ x, size_t planes, uint32_t h, uint32_t w,
			  uint32_t k, uint32_t stride, uint32_t oh, uint32_t ow, double *y)
{
	GRID_LOOP(i, planes * oh * ow)
	{
		const size_t p = i % ((size_t)oh * ow), pl = i / ((size_t)oh * ow);
		const uint32_t oy = (uint32_t)(p / ow), ox = (uint32_t)(p % ow);
		const double *xp = x + pl * h * w;
		double m = -INFINITY;

		for (uint32_t ky = 0; ky < k; ky++)
			for (uint32_t kx = 0; kx < k; kx++) {
				double v = xp[(size_t)(oy * stride + ky) * w + ox * stride + kx];

				m = v > m ? v : m;
			}
		y[i] = m;
	}
}

int kcuda_d_maxpool(cudaStream_t s, const double *x, uint32_t batch, uint32_t c, uint32_t h,
		    uint32_t w, uint32_t k, uint32_t stride, double *y)
{
	const uint32_t oh = (h - k) / stride + 1, ow = (w - k) / stride + 1;
	const size_t planes = (size_t)batch * c;

	k_maxpool<<<kcuda_blocks(planes * oh * ow, TPB), TPB, 0, s>>>(x, planes, h, w, k, stride,
								      oh, ow, y);
	return KCUDA_CHECK(cudaGetLastError());
}

__global__ void k_lrn(const double *__restrict__ x, uint32_t batch, uint32_t c, size_t hw,
		      uint32_t size, double alpha, double beta, double k, double *y)
{
	const uint32_t half = size / 2;

	GRID_LOOP(i, (size_t)batch * c * hw)
	{
		const size_t p = i % hw, b = i / hw / c;
		const uint32_t ch = (uint32_t)((i / hw) % c);
		const uint32_t lo = ch < half ? 0 : ch - half;
		const uint32_t hi = ch + half + 1 < c ? ch + half + 1 : c;
		const double *xb = x + b * c * hw;
		double sum = 0.0;

		for (uint32_t j = lo; j < hi; j++)
			sum = __dadd_rn(sum, __dmul_rn(xb[j * hw + p], xb[j * hw + p]));
		y[i] = __ddiv_rn(
		    x[i], pow(__dadd_rn(k, __dmul_rn(__ddiv_rn(alpha, (double)size), sum)), beta));
	}
}

int kcuda_d_lrn(cudaStream_t s, const double *x, uint32_t batch, uint32_t c, uint32_t hw,
		uint32_t size, double alpha, double beta, double k, double *y)
{
	k_lrn<<<kcuda_blocks((size_t)batch * c * hw, TPB), TPB, 0, s>>>(x, batch, c, hw, size,
									alpha, beta, k, y);
	return KCUDA_CHECK(cudaGetLastError());
}
