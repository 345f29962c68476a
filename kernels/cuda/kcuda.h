/* SPDX-License-Identifier: MIT */
/*
 * kernels/cuda/kcuda.h — the CUDA executor and kernels as one table of C functions (no CUDA
 * types; host code never includes cuda_runtime.h).
 *
 * nvcc builds the kernels/cuda .cu files (sm_80, sm_90, PTX for compute_90) into a shared
 * object of their own, libsncuda.so, the only part of splitnic that links cudart and cuBLAS. It
 * exports one symbol, KCUDA_TABLE_SYMBOL: a const struct kcuda_ops. Programs link the loader,
 * kcuda_load / kcuda_open below, which opens the object with dlopen on first use, so that a
 * process that never asks for the GPU maps no CUDA library, and calls the GPU only through the
 * table it returns. Device 0 is used.
 *
 * Results: every binary kernel and every element-wise float kernel equals its CPU counterpart
 * in kernels/kern_ops.h bit for bit (integer arithmetic; double arithmetic in the same order,
 * compiled with -fmad=false). The exceptions, within a relative 1e-12 of the CPU: convolution
 * and dense (cuBLAS dgemm sums in another order than OpenBLAS) and LRN (CUDA's pow() is within
 * 2 ulp of glibc's). The f32 variants (cuBLAS sgemm) exist for benchmarks.
 *
 * Errors: 0 or -errno. -ENODEV: no usable GPU; -EIO: a CUDA or cuBLAS call failed; -ENOMEM:
 * device or pinned allocation failed; -EINVAL: bad arguments; -EPROTO: a benchmark's result was
 * wrong. After any failure the table's last_error() returns the message for the calling thread:
 * the call, file:line, and the CUDA error text with its number.
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

/* ---- what the table's functions take ------------------------------------------------- */

struct kcuda_info {
	char name[256];
	int cc_major, cc_minor;
	int sm_count;
	int clock_khz; /* peak SM clock */
	size_t mem_bytes;
};

/*
 * A loaded model on the GPU: weights uploaded once, device activation buffers and scratch for
 * up to max_batch images, pinned host staging buffers for input and output, one stream and one
 * cuBLAS handle; a forward pass then allocates nothing. The model must outlive it. One
 * kcuda_model per thread.
 */
struct kcuda_model;

/* Binary GEMM engines: warp-per-row GEMV, tiled __popcll GEMM, tensor-core b1 MMA (AND+popc). */
enum kcuda_bgemm {
	KCUDA_BGEMM_AUTO = 0,
	KCUDA_BGEMM_GEMV = 1,
	KCUDA_BGEMM_POPC = 2,
	KCUDA_BGEMM_MMA = 3,
};

/* ---- the table ------------------------------------------------------------------------ */

/*
 * The version of struct kcuda_ops. Raise it whenever a member is added, removed, moved or
 * changes what it takes or returns: a loader refuses a table whose abi or size differs from its
 * own, so a program and a libsncuda.so from different builds never call each other wrongly.
 */
#define KCUDA_ABI 1

/* The one symbol libsncuda.so exports: a const struct kcuda_ops. */
#define KCUDA_TABLE_SYMBOL "kcuda_table"

struct kcuda_ops {
	uint32_t abi;  /* KCUDA_ABI of the build that made the table; first in every version */
	uint32_t size; /* sizeof(struct kcuda_ops) there; second in every version */

	/*
	 * 0 if a usable GPU exists (compute capability >= 8.0), else -ENODEV with the reason in
	 * msg, e.g. "no CUDA GPU found: cudaGetDeviceCount: CUDA driver version is insufficient
	 * for CUDA runtime version (35)". On success msg names the device. Probes once per process.
	 */
	int (*probe)(char *msg, size_t len);
	/* The last failure's message on this thread ("" if none). */
	const char *(*last_error)(void);
	int (*device_info)(struct kcuda_info *info);

	/* ---- the executor ---- */

	/* NULL on failure, with "MODEL: cannot run on the GPU: REASON" in err. */
	struct kcuda_model *(*model_upload)(const struct model *m, uint32_t max_batch, char *err,
					    size_t errlen);
	void (*model_free)(struct kcuda_model *g); /* NULL: nothing */
	/* Same contract as kern_forward_range / kern_forward (kernels/kern.h); host buffers. */
	int (*forward_range)(struct kcuda_model *g, uint32_t first, uint32_t last, const void *in,
			     uint32_t batch, void *out);
	int (*forward)(struct kcuda_model *g, const void *in, uint32_t batch, double *scores);

	/* ---- single kernels on host arrays (copy in, run, copy out; for tests) ---- */

	/* As kern_bin_ops (kernels/kern_ops.h): same arguments, same layouts, same results. */
	int (*bdense)(const uint64_t *x, uint32_t batch, const uint64_t *w, uint32_t out,
		      uint32_t n, int32_t *y, enum kcuda_bgemm algo);
	int (*bdense_thr)(const uint64_t *x, uint32_t batch, const uint64_t *w, uint32_t out,
			  uint32_t n, const struct kern_thresh *t, uint64_t *y,
			  enum kcuda_bgemm algo);
	int (*bdense_u8)(const uint8_t *x, uint32_t batch, const uint64_t *w, uint32_t out,
			 uint32_t n, int32_t *y);
	int (*bdense_u8_thr)(const uint8_t *x, uint32_t batch, const uint64_t *w, uint32_t out,
			     uint32_t n, const struct kern_thresh *t, uint64_t *y);
	int (*bconv)(const uint64_t *x, uint32_t batch, const struct kern_conv_geom *g,
		     const uint64_t *w, int32_t *y);
	int (*bconv_thr)(const uint64_t *x, uint32_t batch, const struct kern_conv_geom *g,
			 const uint64_t *w, const struct kern_thresh *t, uint64_t *y);
	int (*sign_pack)(const double *x, uint32_t batch, uint32_t c, uint32_t h, uint32_t w,
			 uint64_t *y);
	int (*threshold_pack)(const double *x, uint32_t batch, uint32_t c, uint32_t h, uint32_t w,
			      const struct kern_thresh *t, uint64_t *y);
	int (*maxpool_bits)(const uint64_t *x, uint32_t batch, uint32_t c, uint32_t h, uint32_t w,
			    uint32_t k, uint32_t stride, uint64_t *y);
	int (*unpack_bits)(const uint64_t *x, uint32_t batch, uint32_t c, uint32_t h, uint32_t w,
			   double *y);
	int (*flatten_bits)(const uint64_t *x, uint32_t batch, uint32_t c, uint32_t h, uint32_t w,
			    uint64_t *y);

	/* As the float kernels of kernels/kern_ops.h (double). cast: U8 or F32 (fmt) -> F64. */
	int (*cast_f64)(const void *x, uint32_t fmt, size_t n, double *y);
	int (*conv_f64)(const double *x, uint32_t batch, const struct kern_conv_geom *g,
			const double *w, const double *b, double *y);
	int (*dense_f64)(const double *x, uint32_t batch, uint32_t n, const double *w, uint32_t out,
			 const double *b, double *y);
	int (*bias_f64)(const double *x, uint32_t batch, uint32_t c, uint32_t hw, const double *b,
			double *y);
	int (*batchnorm_f64)(const double *x, uint32_t batch, uint32_t c, uint32_t hw,
			     const double *mean, const double *sd, const double *gamma,
			     const double *beta, double *y);
	int (*relu_f64)(const double *x, size_t n, double *y);
	int (*maxpool_f64)(const double *x, uint32_t batch, uint32_t c, uint32_t h, uint32_t w,
			   uint32_t k, uint32_t stride, double *y);
	int (*lrn_f64)(const double *x, uint32_t batch, uint32_t c, uint32_t hw, uint32_t size,
		       double alpha, double beta, double k, double *y);

	/* Single precision (cuBLAS sgemm), for benchmarks against the binary kernels. */
	int (*conv_f32)(const float *x, uint32_t batch, const struct kern_conv_geom *g,
			const float *w, const float *b, float *y);
	int (*dense_f32)(const float *x, uint32_t batch, uint32_t n, const float *w, uint32_t out,
			 const float *b, float *y);

	/* ---- benchmarks (device-resident operands, random contents) ---- */

	/*
	 * Time C = A B^T on the GPU alone (no copies): binary with `algo` (A m x k bits, B n x k
	 * bits, C int32 m x n), or sgemm (A m x k, B k x n, C m x n floats, CUBLAS_DEFAULT_MATH).
	 * After one warm-up, `iters` back-to-back runs between two CUDA events; *ms is the mean
	 * per run. bench_bgemm also checks that the result equals the __popcll GEMM's (-EPROTO if
	 * not).
	 */
	int (*bench_bgemm)(uint32_t m, uint32_t n, uint32_t k, enum kcuda_bgemm algo, int iters,
			   double *ms);
	int (*bench_sgemm)(uint32_t m, uint32_t n, uint32_t k, int iters, double *ms);
};

/* ---- the loader (kernels/cuda/kcuda_load.c, linked into programs) ----------------------- */

/* Built with nvcc, so that a libsncuda.so exists to load (1), or without (0). */
extern const int kcuda_built;

/*
 * The GPU executor's table, loaded on the first call (thread-safe; later calls return the same
 * answer), or NULL with the reason in msg: built without CUDA, libsncuda.so not found or not
 * loadable, no KCUDA_TABLE_SYMBOL in it, or a table of another KCUDA_ABI or size. Whether a
 * GPU is there is the table's probe's to say.
 */
const struct kcuda_ops *kcuda_load(char *msg, size_t len);

/*
 * kcuda_load, then its probe: the table if a usable GPU exists (msg names the device), else
 * NULL with the reason in msg.
 */
const struct kcuda_ops *kcuda_open(char *msg, size_t len);

#ifdef __cplusplus
}
#endif

#endif /* KCUDA_H */
