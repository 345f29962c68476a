/* SPDX-License-Identifier: MIT */
/*
 * The one file that calls OpenBLAS: float32 baselines for the benchmarks (the kernels' own float
 * layers use the tables' dot products). Row-major: C = A B, A m x k, B k x n.
 */
#include <cblas.h>

#include "kernels/kern_ops.h"

void kern_blas_sgemv(const float *a, uint32_t m, uint32_t n, const float *x, float *y)
{
	cblas_sgemv(CblasRowMajor, CblasNoTrans, (blasint)m, (blasint)n, 1.0f, a, (blasint)n, x, 1,
		    0.0f, y, 1);
}

void kern_blas_sgemm(const float *a, uint32_t m, uint32_t k, const float *b, uint32_t n, float *c)
{
	cblas_sgemm(CblasRowMajor, CblasNoTrans, CblasNoTrans, (blasint)m, (blasint)n, (blasint)k,
		    1.0f, a, (blasint)k, b, (blasint)n, 0.0f, c, (blasint)n);
}

void kern_blas_threads(int n)
{
	openblas_set_num_threads(n);
}
