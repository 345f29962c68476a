/* SPDX-License-Identifier: MIT */
/*
 * kernels/cuda/kcuda.h — the CUDA executor and kernels, behind a plain C API (no CUDA types;
 * host code never includes cuda_runtime.h).
 *
 * Built from the kernels/cuda .cu files by nvcc (sm_80, sm_90, PTX for compute_90) when nvcc is
 * found, else from kernels/cuda/kcuda_none.c, where every call fails with -ENODEV and the message
 * "built without CUDA (nvcc not found)". Device 0 is used.
 *
 * Results: every binary kernel and every element-wise float kernel equals its CPU counterpart
 * in kernels/kern_ops.h bit for bit (integer arithmetic; double arithmetic in the same order,
 * compiled with -fmad=false). The exceptions, within a relative 1e-12 of the CPU: convolution
 * and dense (cuBLAS dgemm sums in another order than OpenBLAS) and LRN (CUDA's pow() is within
 * 2 ulp of glibc's). The f32 variants (cuBLAS sgemm) exist for benchmarks.
 *
 * Errors: 0 or -errno. -ENODEV: no usable GPU (or no CUDA); -EIO: a CUDA or cuBLAS call failed;
 * -ENOMEM: device or pinned allocation failed; -EINVAL: bad arguments. After any failure
 * kcuda_last_error() returns the message for the calling thread: the call, file:line, and the
 * CUDA error text with its number.
 */
#ifndef KCUDA_H
#define KCUDA_H

#include <stddef.h>
#include <stdint.h>

#ifdef __cplusplus
extern "C" {
#endif

#include "kernels/kern.h"
#include "kernels/kern_ops.h"

/* Compiled with CUDA (1) or the stub (0). */
extern const int kcuda_built;

/*
 * 0 if a usable GPU exists (compute capability >= 8.0), else -ENODEV with the reason in msg,
 * e.g. "no CUDA GPU found: cudaGetDeviceCount: CUDA driver version is insufficient for CUDA
 * runtime version (35)". On success msg names the device. The probe runs once per process.
 */
int kcuda_probe(char *msg, size_t len);

/* The last failure's message on this thread ("" if none). */
const char *kcuda_last_error(void);

struct kcuda_info {
	char name[256];
	int cc_major, cc_minor;
	int sm_count;
	int clock_khz; /* peak SM clock */
	size_t mem_bytes;
};

int kcuda_device_info(struct kcuda_info *info);

/* ---- the executor ----------------------------------------------------------------------- */

/*
 * A loaded model on the GPU: weights uploaded once, device activation buffers and scratch for
 * up to max_batch images, pinned host staging buffers for input and output, one stream and one
 * cuBLAS handle. kcuda_forward then allocates nothing. The model must outlive it. One
 * kcuda_model per thread. NULL on failure, with a message in err.
 */
struct kcuda_model;
struct kcuda_model *kcuda_model_upload(const struct model *m, uint32_t max_batch, char *err,
				       size_t errlen);
void kcuda_model_free(struct kcuda_model *g);

/* Same contract as kern_forward_range / kern_forward (kernels/kern.h); host buffers. */
int kcuda_forward_range(struct kcuda_model *g, uint32_t first, uint32_t last, const void *in,
			uint32_t batch, void *out);
int kcuda_forward(struct kcuda_model *g, const void *in, uint32_t batch, double *scores);

/* ---- single kernels on host arrays (copy in, run, copy out; for tests) ------------------- */

/* Binary GEMM engines: warp-per-row GEMV, tiled __popcll GEMM, tensor-core b1 MMA (AND+popc). */
enum kcuda_bgemm {
	KCUDA_BGEMM_AUTO = 0,
	KCUDA_BGEMM_GEMV = 1,
	KCUDA_BGEMM_POPC = 2,
	KCUDA_BGEMM_MMA = 3,
};

/* As kern_bin_ops (kernels/kern_ops.h): same arguments, same layouts, same results. */
int kcuda_bdense(const uint64_t *x, uint32_t batch, const uint64_t *w, uint32_t out, uint32_t n,
		 int32_t *y, enum kcuda_bgemm algo);
int kcuda_bdense_thr(const uint64_t *x, uint32_t batch, const uint64_t *w, uint32_t out, uint32_t n,
		     const struct kern_thresh *t, uint64_t *y, enum kcuda_bgemm algo);
int kcuda_bdense_u8(const uint8_t *x, uint32_t batch, const uint64_t *w, uint32_t out, uint32_t n,
		    int32_t *y);
int kcuda_bdense_u8_thr(const uint8_t *x, uint32_t batch, const uint64_t *w, uint32_t out,
			uint32_t n, const struct kern_thresh *t, uint64_t *y);
int kcuda_bconv(const uint64_t *x, uint32_t batch, const struct kern_conv_geom *g,
		const uint64_t *w, int32_t *y);
int kcuda_bconv_thr(const uint64_t *x, uint32_t batch, const struct kern_conv_geom *g,
		    const uint64_t *w, const struct kern_thresh *t, uint64_t *y);
int kcuda_sign_pack(const double *x, uint32_t batch, uint32_t c, uint32_t h, uint32_t w,
		    uint64_t *y);
int kcuda_threshold_pack(const double *x, uint32_t batch, uint32_t c, uint32_t h, uint32_t w,
			 const struct kern_thresh *t, uint64_t *y);
int kcuda_maxpool_bits(const uint64_t *x, uint32_t batch, uint32_t c, uint32_t h, uint32_t w,
		       uint32_t k, uint32_t stride, uint64_t *y);
int kcuda_unpack_bits(const uint64_t *x, uint32_t batch, uint32_t c, uint32_t h, uint32_t w,
		      double *y);
int kcuda_flatten_bits(const uint64_t *x, uint32_t batch, uint32_t c, uint32_t h, uint32_t w,
		       uint64_t *y);

/* As the float kernels of kernels/kern_ops.h (double). cast: U8 or F32 (fmt) -> F64. */
int kcuda_cast_f64(const void *x, uint32_t fmt, size_t n, double *y);
int kcuda_conv_f64(const double *x, uint32_t batch, const struct kern_conv_geom *g, const double *w,
		   const double *b, double *y);
int kcuda_dense_f64(const double *x, uint32_t batch, uint32_t n, const double *w, uint32_t out,
		    const double *b, double *y);
int kcuda_bias_f64(const double *x, uint32_t batch, uint32_t c, uint32_t hw, const double *b,
		   double *y);
int kcuda_batchnorm_f64(const double *x, uint32_t batch, uint32_t c, uint32_t hw,
			const double *mean, const double *sd, const double *gamma,
			const double *beta, double *y);
int kcuda_relu_f64(const double *x, size_t n, double *y);
int kcuda_maxpool_f64(const double *x, uint32_t batch, uint32_t c, uint32_t h, uint32_t w,
		      uint32_t k, uint32_t stride, double *y);
int kcuda_lrn_f64(const double *x, uint32_t batch, uint32_t c, uint32_t hw, uint32_t size,
		  double alpha, double beta, double k, double *y);

/* Single precision (cuBLAS sgemm), for benchmarks against the binary kernels. */
int kcuda_conv_f32(const float *x, uint32_t batch, const struct kern_conv_geom *g, const float *w,
		   const float *b, float *y);
int kcuda_dense_f32(const float *x, uint32_t batch, uint32_t n, const float *w, uint32_t out,
		    const float *b, float *y);

/* ---- benchmarks (device-resident operands, random contents) ----------------------------- */

/*
 * Time C = A B^T on the GPU alone (no copies): binary with `algo` (A m x k bits, B n x k bits,
 * C int32 m x n), or sgemm (A m x k, B k x n, C m x n floats, CUBLAS_DEFAULT_MATH). After one
 * warm-up, `iters` back-to-back runs between two CUDA events; *ms is the mean per run.
 * kcuda_bench_bgemm also checks that the result equals the __popcll GEMM's (-EPROTO if not).
 */
int kcuda_bench_bgemm(uint32_t m, uint32_t n, uint32_t k, enum kcuda_bgemm algo, int iters,
		      double *ms);
int kcuda_bench_sgemm(uint32_t m, uint32_t n, uint32_t k, int iters, double *ms);

#ifdef __cplusplus
}
#endif

#endif /* KCUDA_H */
