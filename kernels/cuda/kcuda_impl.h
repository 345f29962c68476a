/* SPDX-License-Identifier: MIT */
/*
 * kernels/cuda/kcuda_impl.h — private to the kernels/cuda .cu files: the table's functions, the
 * check macro, the probe gate, and the kernel launchers on device pointers (one stream each,
 * allocate nothing).
 */
#ifndef KCUDA_IMPL_H
#define KCUDA_IMPL_H

#include <type_traits>

#include <cublas_v2.h>
#include <cuda_runtime.h>

#include "kernels/cuda/kcuda.h"

/*
 * The functions behind struct kcuda_ops (kcuda_table.cu), named kcuda_MEMBER and declared with
 * the member's own type: a definition that does not match its member does not compile. Only
 * the table leaves the shared object (-fvisibility=hidden).
 */
#define KCUDA_OP(member)                                                                           \
	extern "C" std::remove_pointer_t<decltype(kcuda_ops::member)> kcuda_##member

KCUDA_OP(probe); /* kcuda_probe.cu */
KCUDA_OP(last_error);
KCUDA_OP(device_info);
KCUDA_OP(model_upload); /* kcuda_model.cu */
KCUDA_OP(model_free);
KCUDA_OP(forward_range);
KCUDA_OP(forward);
KCUDA_OP(bdense); /* kcuda_host.cu */
KCUDA_OP(bdense_thr);
KCUDA_OP(bdense_u8);
KCUDA_OP(bdense_u8_thr);
KCUDA_OP(bconv);
KCUDA_OP(bconv_thr);
KCUDA_OP(sign_pack);
KCUDA_OP(threshold_pack);
KCUDA_OP(maxpool_bits);
KCUDA_OP(unpack_bits);
KCUDA_OP(flatten_bits);
KCUDA_OP(cast_f64);
KCUDA_OP(conv_f64);
KCUDA_OP(dense_f64);
KCUDA_OP(bias_f64);
KCUDA_OP(batchnorm_f64);
KCUDA_OP(relu_f64);
KCUDA_OP(maxpool_f64);
KCUDA_OP(lrn_f64);
KCUDA_OP(conv_f32);
KCUDA_OP(dense_f32);
KCUDA_OP(bench_bgemm); /* kcuda_bench.cu */
KCUDA_OP(bench_sgemm);

/*
 * Every CUDA runtime and cuBLAS call goes through KCUDA_CHECK: 0 on success; on failure it
 * records "FILE:LINE: CALL: ERROR TEXT (NUMBER)" as this thread's last error and gives -EIO.
 */
int kcuda_check(cudaError_t e, const char *call, const char *file, int line);
int kcuda_check(cublasStatus_t s, const char *call, const char *file, int line);
#define KCUDA_CHECK(call) kcuda_check((call), #call, __FILE__, __LINE__)

/* Record a message as this thread's last error; returns ret. */
int kcuda_fail(int ret, const char *fmt, ...) __attribute__((format(printf, 2, 3)));

/* The CUDA error of the last failed KCUDA_CHECK on this thread: number and text. */
int kcuda_last_code(void);
const char *kcuda_last_text(void);

/* 0 if kcuda_probe() found a usable GPU, else -ENODEV with the probe's message recorded. */
int kcuda_ready(void);

/* Blocks for n work items at tpb threads a block (grid-stride loops cover the rest). */
static inline unsigned int kcuda_blocks(size_t n, unsigned int tpb)
{
	size_t b = (n + tpb - 1) / tpb;

	return (unsigned int)(b < 1 ? 1 : b > 65535u * 16u ? 65535u * 16u : b);
}

/* Thresholds on the device: bit = (dot >= thr[o]) ^ flip[o]. */
struct kcuda_dthresh {
	const int32_t *thr;
	const uint8_t *flip;
};

/* ---- binary kernels (kcuda_bin.cu, kcuda_mma.cu) ---------------------------------------- */

/*
 * y[b][o] = n - 2 popc(x_b ^ w_o), int32 [batch][out]. KCUDA_BGEMM_MMA needs xpopc (batch
 * int32 of scratch) and wpopc (popcounts of w's rows, from kcuda_d_rowpopc); AUTO picks GEMV
 * for batch <= 4, else MMA.
 */
int kcuda_d_bdense(cudaStream_t s, const uint64_t *x, uint32_t batch, const uint64_t *w,
		   uint32_t out, uint32_t n, int32_t *y, enum kcuda_bgemm algo, int32_t *xpopc,
		   const int32_t *wpopc);
int kcuda_d_bgemm_mma(cudaStream_t s, const uint64_t *x, uint32_t batch, const uint64_t *w,
		      uint32_t out, uint32_t n, int32_t *y, int32_t *xpopc, const int32_t *wpopc);
/* cnt[r] = popcount of row r of x [rows][nw]. */
int kcuda_d_rowpopc(cudaStream_t s, const uint64_t *x, uint32_t rows, uint32_t nw, int32_t *cnt);
/* dots int32 [batch][out] -> BITS [batch][words(out)] through thresholds. */
int kcuda_d_thr_pack(cudaStream_t s, const int32_t *dot, uint32_t batch, uint32_t out,
		     const struct kcuda_dthresh *t, uint64_t *y);
/* Bit-plane first layer; scratch: kcuda_u8_scratch(n, batch) bytes. */
size_t kcuda_u8_scratch(uint32_t n, uint32_t batch);
int kcuda_d_bdense_u8(cudaStream_t s, const uint8_t *x, uint32_t batch, const uint64_t *w,
		      uint32_t out, uint32_t n, int32_t *y, void *scratch);
int kcuda_d_bconv(cudaStream_t s, const uint64_t *x, uint32_t batch, const struct kern_conv_geom *g,
		  const uint64_t *w, int32_t *y);
int kcuda_d_bconv_thr(cudaStream_t s, const uint64_t *x, uint32_t batch,
		      const struct kern_conv_geom *g, const uint64_t *w,
		      const struct kcuda_dthresh *t, uint64_t *y);
/* Sign (t == NULL) or thresholds, F64 C-major -> BITS channel-packed. */
int kcuda_d_pack(cudaStream_t s, const double *x, uint32_t batch, uint32_t c, uint32_t h,
		 uint32_t w, const struct kcuda_dthresh *t, uint64_t *y);
/* OR over the window; with and_mask (device, words(c)), AND for the channels whose bit is 1. */
int kcuda_d_maxpool_bits(cudaStream_t s, const uint64_t *x, uint32_t batch, uint32_t c, uint32_t h,
			 uint32_t w, uint32_t k, uint32_t stride, const uint64_t *and_mask,
			 uint64_t *y);
int kcuda_d_unpack(cudaStream_t s, const uint64_t *x, uint32_t batch, uint32_t c, uint32_t h,
		   uint32_t w, double *y);
int kcuda_d_flatten_bits(cudaStream_t s, const uint64_t *x, uint32_t batch, uint32_t c, uint32_t h,
			 uint32_t w, uint64_t *y);
int kcuda_d_ints_to_f64(cudaStream_t s, const int32_t *x, size_t n, double *y);

/* ---- float kernels (kcuda_float.cu) ---------------------------------------------------- */

int kcuda_d_cast(cudaStream_t s, const void *x, uint32_t fmt, size_t n, double *y);
/* col scratch: batch * c*k*k * oh*ow elements. */
size_t kcuda_conv_scratch(const struct kern_conv_geom *g, uint32_t batch);
int kcuda_d_conv_f64(cudaStream_t s, cublasHandle_t h, const double *x, uint32_t batch,
		     const struct kern_conv_geom *g, const double *w, const double *b, double *col,
		     double *y);
int kcuda_d_conv_f32(cudaStream_t s, cublasHandle_t h, const float *x, uint32_t batch,
		     const struct kern_conv_geom *g, const float *w, const float *b, float *col,
		     float *y);
int kcuda_d_dense_f64(cudaStream_t s, cublasHandle_t h, const double *x, uint32_t batch, uint32_t n,
		      const double *w, uint32_t out, const double *b, double *y);
int kcuda_d_dense_f32(cudaStream_t s, cublasHandle_t h, const float *x, uint32_t batch, uint32_t n,
		      const float *w, uint32_t out, const float *b, float *y);
/* One name per element type, for templates. */
static inline int kcuda_d_conv(cudaStream_t s, cublasHandle_t h, const double *x, uint32_t batch,
			       const struct kern_conv_geom *g, const double *w, const double *b,
			       double *col, double *y)
{
	return kcuda_d_conv_f64(s, h, x, batch, g, w, b, col, y);
}

static inline int kcuda_d_conv(cudaStream_t s, cublasHandle_t h, const float *x, uint32_t batch,
			       const struct kern_conv_geom *g, const float *w, const float *b,
			       float *col, float *y)
{
	return kcuda_d_conv_f32(s, h, x, batch, g, w, b, col, y);
}

static inline int kcuda_d_dense(cudaStream_t s, cublasHandle_t h, const double *x, uint32_t batch,
				uint32_t n, const double *w, uint32_t out, const double *b,
				double *y)
{
	return kcuda_d_dense_f64(s, h, x, batch, n, w, out, b, y);
}

static inline int kcuda_d_dense(cudaStream_t s, cublasHandle_t h, const float *x, uint32_t batch,
				uint32_t n, const float *w, uint32_t out, const float *b, float *y)
{
	return kcuda_d_dense_f32(s, h, x, batch, n, w, out, b, y);
}

int kcuda_d_bias(cudaStream_t s, const double *x, uint32_t batch, uint32_t c, uint32_t hw,
		 const double *b, double *y);
int kcuda_d_batchnorm(cudaStream_t s, const double *x, uint32_t batch, uint32_t c, uint32_t hw,
		      const double *p, double *y);
int kcuda_d_relu(cudaStream_t s, const double *x, size_t n, double *y);
int kcuda_d_maxpool(cudaStream_t s, const double *x, uint32_t batch, uint32_t c, uint32_t h,
		    uint32_t w, uint32_t k, uint32_t stride, double *y);
int kcuda_d_lrn(cudaStream_t s, const double *x, uint32_t batch, uint32_t c, uint32_t hw,
		uint32_t size, double alpha, double beta, double k, double *y);

#endif /* KCUDA_IMPL_H */
