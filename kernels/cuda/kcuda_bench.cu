// SPDX-License-Identifier: MIT
/* Benchmark helpers: GEMMs on device-resident random operands, timed with CUDA events. */
#include <errno.h>

#include "kernels/cuda/kcuda_impl.h"

#define TPB 256

/* Random 64-bit words (splitmix64 of the index); bits past `bits` in each row are 0. */
__global__ void k_fill_bits(uint64_t *x, size_t rows, uint32_t bits, uint64_t seed)
{
	const uint32_t nw = (bits + 63) / 64;

	for (size_t i = (size_t)blockIdx.x * blockDim.x + threadIdx.x; i < rows * nw;
	     i += (size_t)gridDim.x * blockDim.x) {
		uint64_t z = (i + seed) * 0x9e3779b97f4a7c15ull;
		const uint32_t j = (uint32_t)(i % nw);

		z = (z ^ (z >> 30)) * 0xbf58476d1ce4e5b9ull;
		z = (z ^ (z >> 27)) * 0x94d049bb133111ebull;
		z ^= z >> 31;
		if (j == nw - 1 && bits % 64)
			z &= (1ull << (bits % 64)) - 1;
		x[i] = z;
	}
}

__global__ void k_fill_f32(float *x, size_t n, uint64_t seed)
{
	for (size_t i = (size_t)blockIdx.x * blockDim.x + threadIdx.x; i < n;
	     i += (size_t)gridDim.x * blockDim.x) {
		uint64_t z = (i + seed) * 0x9e3779b97f4a7c15ull;

		z = (z ^ (z >> 31)) * 0xbf58476d1ce4e5b9ull;
		x[i] = (float)(z >> 40) / (float)(1u << 24) - 0.5f;
	}
}

__global__ void k_count_diff(const int32_t *a, const int32_t *b, size_t n, unsigned long long *diff)
{
	for (size_t i = (size_t)blockIdx.x * blockDim.x + threadIdx.x; i < n;
	     i += (size_t)gridDim.x * blockDim.x)
		if (a[i] != b[i])
			atomicAdd(diff, 1ull);
}

struct bench_buf {
	void *p[6];
	int n;
};

static void *balloc(struct bench_buf *b, size_t bytes, int *ret)
{
	void *p = NULL;

	if (*ret)
		return NULL;
	*ret = KCUDA_CHECK(cudaMalloc(&p, bytes));
	if (*ret)
		return NULL;
	b->p[b->n++] = p;
	return p;
}

static void bfree(struct bench_buf *b)
{
	for (int i = 0; i < b->n; i++)
		KCUDA_CHECK(cudaFree(b->p[i]));
}

/* Mean ms of iters runs of run(ctx) after one warm-up. */
template <typename F> static int time_runs(F run, int iters, double *ms)
{
	cudaEvent_t e0 = NULL, e1 = NULL;
	float total = 0.0f;
	int ret = run();

	if (!ret)
		ret = KCUDA_CHECK(cudaEventCreate(&e0));
	if (!ret)
		ret = KCUDA_CHECK(cudaEventCreate(&e1));
	if (!ret)
		ret = KCUDA_CHECK(cudaEventRecord(e0, 0));
	for (int i = 0; !ret && i < iters; i++)
		ret = run();
	if (!ret)
		ret = KCUDA_CHECK(cudaEventRecord(e1, 0));
	if (!ret)
		ret = KCUDA_CHECK(cudaEventSynchronize(e1));
	if (!ret)
		ret = KCUDA_CHECK(cudaEventElapsedTime(&total, e0, e1));
	if (e0)
		KCUDA_CHECK(cudaEventDestroy(e0));
	if (e1)
		KCUDA_CHECK(cudaEventDestroy(e1));
	*ms = (double)total / (iters > 0 ? iters : 1);
	return ret;
}

extern "C" int kcuda_bench_bgemm(uint32_t m, uint32_t n, uint32_t k, enum kcuda_bgemm algo,
				 int iters, double *ms)
{
	const size_t nw = (k + 63) / 64;
	struct bench_buf b = {};
	unsigned long long diff = 0, *ddiff;
	uint64_t *x, *w;
	int32_t *y, *ref, *xp, *wp;
	int ret = kcuda_ready();

	if (ret)
		return ret;
	x = (uint64_t *)balloc(&b, m * nw * 8, &ret);
	w = (uint64_t *)balloc(&b, n * nw * 8, &ret);
	y = (int32_t *)balloc(&b, (size_t)m * n * 4, &ret);
	ref = (int32_t *)balloc(&b, (size_t)m * n * 4, &ret);
	xp = (int32_t *)balloc(&b, (size_t)m * 4 + (size_t)n * 4, &ret);
	ddiff = (unsigned long long *)balloc(&b, sizeof(*ddiff), &ret);
	wp = xp ? xp + m : NULL;
	if (ret)
		goto out;
	k_fill_bits<<<kcuda_blocks(m * nw, TPB), TPB>>>(x, m, k, 1);
	k_fill_bits<<<kcuda_blocks(n * nw, TPB), TPB>>>(w, n, k, 1ull << 40);
	ret = KCUDA_CHECK(cudaGetLastError());
	if (!ret)
		ret = kcuda_d_rowpopc(0, w, n, (uint32_t)nw, wp);
	if (!ret)
		ret = time_runs([&] { return kcuda_d_bdense(0, x, m, w, n, k, y, algo, xp, wp); },
				iters, ms);
	if (!ret)
		ret = kcuda_d_bdense(0, x, m, w, n, k, ref, KCUDA_BGEMM_POPC, xp, wp);
	if (!ret)
		ret = KCUDA_CHECK(cudaMemset(ddiff, 0, sizeof(*ddiff)));
	if (!ret) {
		k_count_diff<<<kcuda_blocks((size_t)m * n, TPB), TPB>>>(y, ref, (size_t)m * n,
									ddiff);
		ret = KCUDA_CHECK(cudaGetLastError());
	}
	if (!ret)
		ret = KCUDA_CHECK(cudaMemcpy(&diff, ddiff, sizeof(diff), cudaMemcpyDeviceToHost));
	if (!ret && diff)
		ret = kcuda_fail(-EPROTO,
				 "kcuda_bench_bgemm: %llu of %zu results differ from the "
				 "__popcll GEMM",
				 diff, (size_t)m * n);
out:
	bfree(&b);
	return ret;
}

extern "C" int kcuda_bench_sgemm(uint32_t m, uint32_t n, uint32_t k, int iters, double *ms)
{
	const float one = 1.0f, zero = 0.0f;
	struct bench_buf b = {};
	cublasHandle_t h = NULL;
	float *a, *bb, *c;
	int ret = kcuda_ready();

	if (ret)
		return ret;
	a = (float *)balloc(&b, (size_t)m * k * 4, &ret);
	bb = (float *)balloc(&b, (size_t)k * n * 4, &ret);
	c = (float *)balloc(&b, (size_t)m * n * 4, &ret);
	if (ret)
		goto out;
	k_fill_f32<<<kcuda_blocks((size_t)m * k, TPB), TPB>>>(a, (size_t)m * k, 1);
	k_fill_f32<<<kcuda_blocks((size_t)k * n, TPB), TPB>>>(bb, (size_t)k * n, 2);
	ret = KCUDA_CHECK(cudaGetLastError());
	if (!ret)
		ret = KCUDA_CHECK(cublasCreate(&h));
	if (!ret)
		ret = time_runs(
		    [&] {
			    return KCUDA_CHECK(cublasSgemm(h, CUBLAS_OP_N, CUBLAS_OP_N, (int)n,
							   (int)m, (int)k, &one, bb, (int)n, a,
							   (int)k, &zero, c, (int)n));
		    },
		    iters, ms);
	if (h)
		KCUDA_CHECK(cublasDestroy(h));
out:
	bfree(&b);
	return ret;
}
