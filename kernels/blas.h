/* SPDX-License-Identifier: MIT */
/*
 * kernels/blas.h — double-precision BLAS for the float kernels (implemented in kernels/blas.c,
 * the only file that includes cblas.h). Row-major; C = A B with A m x k, B k x n, C m x n.
 */
#ifndef KERN_BLAS_H
#define KERN_BLAS_H

#include <stdint.h>

void kern_blas_dgemm(const double *a, uint32_t m, uint32_t k, const double *b, uint32_t n,
		     double *c);
/* C = A B^T with B stored n x k. */
void kern_blas_dgemm_nt(const double *a, uint32_t m, uint32_t k, const double *b, uint32_t n,
			double *c);
/* y = A x, A m x n. */
void kern_blas_dgemv(const double *a, uint32_t m, uint32_t n, const double *x, double *y);

#endif /* KERN_BLAS_H */
