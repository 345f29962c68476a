/* SPDX-License-Identifier: MIT */
/*
 * kernels/cuda/kcuda.h without CUDA (nvcc was not found at build time): every call fails with
 * -ENODEV and says so, so that callers fall back to the CPU kernels.
 */
#include <errno.h>
#include <stdio.h>

#include "kernels/cuda/kcuda.h"

#define KCUDA_NONE_MSG "built without CUDA (nvcc not found)"

const int kcuda_built = 0;

int kcuda_probe(char *msg, size_t len)
{
	if (msg && len)
		snprintf(msg, len, "%s", KCUDA_NONE_MSG);
	return -ENODEV;
}

const char *kcuda_last_error(void)
{
	return KCUDA_NONE_MSG;
}

int kcuda_device_info(struct kcuda_info *info)
{
	return -ENODEV;
}

struct kcuda_model *kcuda_model_upload(const struct kern_model *m, uint32_t max_batch, char *err,
				       size_t errlen)
{
	if (err && errlen)
		snprintf(err, errlen, "%s: cannot run on the GPU: %s", m ? m->name : "model",
			 KCUDA_NONE_MSG);
	return NULL;
}

void kcuda_model_free(struct kcuda_model *g)
{
}

int kcuda_forward_range(struct kcuda_model *g, uint32_t first, uint32_t last, const void *in,
			uint32_t batch, void *out)
{
	return -ENODEV;
}

int kcuda_forward(struct kcuda_model *g, const void *in, uint32_t batch, double *scores)
{
	return -ENODEV;
}

int kcuda_bdense(const uint64_t *x, uint32_t batch, const uint64_t *w, uint32_t out, uint32_t n,
		 int32_t *y, enum kcuda_bgemm algo)
{
	return -ENODEV;
}

int kcuda_bdense_thr(const uint64_t *x, uint32_t batch, const uint64_t *w, uint32_t out, uint32_t n,
		     const struct kern_thresh *t, uint64_t *y, enum kcuda_bgemm algo)
{
	return -ENODEV;
}

int kcuda_bdense_u8(const uint8_t *x, uint32_t batch, const uint64_t *w, uint32_t out, uint32_t n,
		    int32_t *y)
{
	return -ENODEV;
}

int kcuda_bdense_u8_thr(const uint8_t *x, uint32_t batch, const uint64_t *w, uint32_t out,
			uint32_t n, const struct kern_thresh *t, uint64_t *y)
{
	return -ENODEV;
}

int kcuda_bconv(const uint64_t *x, uint32_t batch, const struct kern_conv_geom *g,
		const uint64_t *w, int32_t *y)
{
	return -ENODEV;
}

int kcuda_bconv_thr(const uint64_t *x, uint32_t batch, const struct kern_conv_geom *g,
		    const uint64_t *w, const struct kern_thresh *t, uint64_t *y)
{
	return -ENODEV;
}

int kcuda_sign_pack(const double *x, uint32_t batch, uint32_t c, uint32_t h, uint32_t w,
		    uint64_t *y)
{
	return -ENODEV;
}

int kcuda_threshold_pack(const double *x, uint32_t batch, uint32_t c, uint32_t h, uint32_t w,
			 const struct kern_thresh *t, uint64_t *y)
{
	return -ENODEV;
}

int kcuda_maxpool_bits(const uint64_t *x, uint32_t batch, uint32_t c, uint32_t h, uint32_t w,
		       uint32_t k, uint32_t stride, uint64_t *y)
{
	return -ENODEV;
}

int kcuda_unpack_bits(const uint64_t *x, uint32_t batch, uint32_t c, uint32_t h, uint32_t w,
		      double *y)
{
	return -ENODEV;
}

int kcuda_flatten_bits(const uint64_t *x, uint32_t batch, uint32_t c, uint32_t h, uint32_t w,
		       uint64_t *y)
{
	return -ENODEV;
}

int kcuda_cast_f64(const void *x, uint32_t fmt, size_t n, double *y)
{
	return -ENODEV;
}

int kcuda_conv_f64(const double *x, uint32_t batch, const struct kern_conv_geom *g, const double *w,
		   const double *b, double *y)
{
	return -ENODEV;
}

int kcuda_dense_f64(const double *x, uint32_t batch, uint32_t n, const double *w, uint32_t out,
		    const double *b, double *y)
{
	return -ENODEV;
}

int kcuda_bias_f64(const double *x, uint32_t batch, uint32_t c, uint32_t hw, const double *b,
		   double *y)
{
	return -ENODEV;
}

int kcuda_batchnorm_f64(const double *x, uint32_t batch, uint32_t c, uint32_t hw,
			const double *mean, const double *sd, const double *gamma,
			const double *beta, double *y)
{
	return -ENODEV;
}

int kcuda_relu_f64(const double *x, size_t n, double *y)
{
	return -ENODEV;
}

int kcuda_maxpool_f64(const double *x, uint32_t batch, uint32_t c, uint32_t h, uint32_t w,
		      uint32_t k, uint32_t stride, double *y)
{
	return -ENODEV;
}

int kcuda_lrn_f64(const double *x, uint32_t batch, uint32_t c, uint32_t hw, uint32_t size,
		  double alpha, double beta, double k, double *y)
{
	return -ENODEV;
}

int kcuda_conv_f32(const float *x, uint32_t batch, const struct kern_conv_geom *g, const float *w,
		   const float *b, float *y)
{
	return -ENODEV;
}

int kcuda_dense_f32(const float *x, uint32_t batch, uint32_t n, const float *w, uint32_t out,
		    const float *b, float *y)
{
	return -ENODEV;
}

int kcuda_bench_bgemm(uint32_t m, uint32_t n, uint32_t k, enum kcuda_bgemm algo, int iters,
		      double *ms)
{
	return -ENODEV;
}

int kcuda_bench_sgemm(uint32_t m, uint32_t n, uint32_t k, int iters, double *ms)
{
	return -ENODEV;
}
