/* SPDX-License-Identifier: MIT */
/*
 * kernels/cuda/kcuda.h for the host: the GPU executor is a shared object of its own
 * (libsncuda.so, built from the .cu files with cuBLAS and cudart), opened with dlopen on the
 * first call that needs it, so that a process which never asks for the GPU maps no CUDA
 * library. Built without nvcc, every call fails with -ENODEV and "built without CUDA".
 *
 * The object is looked for in $SPLITNIC_CUDA_LIB, then beside the executable, in its parent
 * folder and in ../lib/splitnic (an installed tree). If it cannot be loaded every call fails
 * with -ENODEV and the loader's reason, which kcuda_probe and kcuda_last_error report.
 */
#include <dlfcn.h>
#include <errno.h>
#include <limits.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "kernels/cuda/kcuda.h"

#ifndef KCUDA_BUILT
#error "KCUDA_BUILT (0 or 1) comes from mk/cuda.mk"
#endif

#define KCUDA_SO "libsncuda.so"

const int kcuda_built = KCUDA_BUILT;

#define KCUDA_FUNCS(X)                                                                             \
	X(kcuda_probe)                                                                             \
	X(kcuda_last_error)                                                                        \
	X(kcuda_device_info)                                                                       \
	X(kcuda_model_upload)                                                                      \
	X(kcuda_model_free)                                                                        \
	X(kcuda_forward_range)                                                                     \
	X(kcuda_forward)                                                                           \
	X(kcuda_bdense)                                                                            \
	X(kcuda_bdense_thr)                                                                        \
	X(kcuda_bdense_u8)                                                                         \
	X(kcuda_bdense_u8_thr)                                                                     \
	X(kcuda_bconv)                                                                             \
	X(kcuda_bconv_thr)                                                                         \
	X(kcuda_sign_pack)                                                                         \
	X(kcuda_threshold_pack)                                                                    \
	X(kcuda_maxpool_bits)                                                                      \
	X(kcuda_unpack_bits)                                                                       \
	X(kcuda_flatten_bits)                                                                      \
	X(kcuda_cast_f64)                                                                          \
	X(kcuda_conv_f64)                                                                          \
	X(kcuda_dense_f64)                                                                         \
	X(kcuda_bias_f64)                                                                          \
	X(kcuda_batchnorm_f64)                                                                     \
	X(kcuda_relu_f64)                                                                          \
	X(kcuda_maxpool_f64)                                                                       \
	X(kcuda_lrn_f64)                                                                           \
	X(kcuda_conv_f32)                                                                          \
	X(kcuda_dense_f32)                                                                         \
	X(kcuda_bench_bgemm)                                                                       \
	X(kcuda_bench_sgemm)

static struct {
#define X(f) __typeof__(f) *f;
	KCUDA_FUNCS(X)
#undef X
} kdl;

static pthread_once_t kdl_once = PTHREAD_ONCE_INIT;
static int kdl_ret = -ENODEV;
static char kdl_msg[768];

/* Folder of the running executable, "" if unknown. */
static void exe_dir(char *dir, size_t len)
{
	ssize_t n = readlink("/proc/self/exe", dir, len - 1);
	char *slash;

	dir[n > 0 ? n : 0] = '\0';
	slash = strrchr(dir, '/');
	if (slash)
		*slash = '\0';
	else
		dir[0] = '\0';
}

static void *kdl_open(void)
{
	static const char *const rel[] = {"/" KCUDA_SO, "/../" KCUDA_SO,
					  "/../lib/splitnic/" KCUDA_SO};
	const char *env = getenv("SPLITNIC_CUDA_LIB");
	char dir[PATH_MAX], path[PATH_MAX + 64];
	void *h;

	if (env && *env) {
		h = dlopen(env, RTLD_NOW | RTLD_LOCAL);
		if (!h)
			snprintf(kdl_msg, sizeof(kdl_msg),
				 "no usable CUDA GPU: cannot load the GPU executor: %s", dlerror());
		return h;
	}
	exe_dir(dir, sizeof(dir));
	for (size_t i = 0; i < sizeof(rel) / sizeof(rel[0]); i++) {
		snprintf(path, sizeof(path), "%s%s", dir, rel[i]);
		if (access(path, F_OK))
			continue;
		h = dlopen(path, RTLD_NOW | RTLD_LOCAL);
		if (!h)
			snprintf(kdl_msg, sizeof(kdl_msg),
				 "no usable CUDA GPU: cannot load the GPU executor: %s", dlerror());
		return h;
	}
	snprintf(kdl_msg, sizeof(kdl_msg),
		 "no usable CUDA GPU: GPU executor " KCUDA_SO
		 " not found beside %s (set SPLITNIC_CUDA_LIB to its path)",
		 dir[0] ? dir : "the executable");
	return NULL;
}

static void kdl_load_once(void)
{
	void *h;

	if (!kcuda_built) {
		snprintf(kdl_msg, sizeof(kdl_msg), "built without CUDA (nvcc not found)");
		return;
	}
	h = kdl_open();
	if (!h)
		return;
#define X(f)                                                                                       \
	if (!(kdl.f = (__typeof__(f) *)dlsym(h, #f))) {                                            \
		snprintf(kdl_msg, sizeof(kdl_msg), "GPU executor " KCUDA_SO ": no symbol %s", #f); \
		dlclose(h);                                                                        \
		return;                                                                            \
	}
	KCUDA_FUNCS(X)
#undef X
	kdl_ret = 0;
}

/* 0 once the executor is loaded, else -ENODEV with the reason in kdl_msg. */
static int kdl_load(void)
{
	pthread_once(&kdl_once, kdl_load_once);
	return kdl_ret;
}

int kcuda_probe(char *msg, size_t len)
{
	if (kdl_load()) {
		if (msg && len)
			snprintf(msg, len, "%s", kdl_msg);
		return -ENODEV;
	}
	return kdl.kcuda_probe(msg, len);
}

const char *kcuda_last_error(void)
{
	return kdl_load() ? kdl_msg : kdl.kcuda_last_error();
}

struct kcuda_model *kcuda_model_upload(const struct model *m, uint32_t max_batch, char *err,
				       size_t errlen)
{
	if (kdl_load()) {
		if (err && errlen)
			snprintf(err, errlen, "%s: cannot run on the GPU: %s",
				 m ? m->name : "model", kdl_msg);
		return NULL;
	}
	return kdl.kcuda_model_upload(m, max_batch, err, errlen);
}

void kcuda_model_free(struct kcuda_model *g)
{
	if (g && !kdl_load())
		kdl.kcuda_model_free(g);
}

int kcuda_device_info(struct kcuda_info *info)
{
	return kdl_load() ? -ENODEV : kdl.kcuda_device_info(info);
}

int kcuda_forward_range(struct kcuda_model *g, uint32_t first, uint32_t last, const void *in,
			uint32_t batch, void *out)
{
	return kdl_load() ? -ENODEV : kdl.kcuda_forward_range(g, first, last, in, batch, out);
}

int kcuda_forward(struct kcuda_model *g, const void *in, uint32_t batch, double *scores)
{
	return kdl_load() ? -ENODEV : kdl.kcuda_forward(g, in, batch, scores);
}

int kcuda_bdense(const uint64_t *x, uint32_t batch, const uint64_t *w, uint32_t out, uint32_t n,
		 int32_t *y, enum kcuda_bgemm algo)
{
	return kdl_load() ? -ENODEV : kdl.kcuda_bdense(x, batch, w, out, n, y, algo);
}

int kcuda_bdense_thr(const uint64_t *x, uint32_t batch, const uint64_t *w, uint32_t out, uint32_t n,
		     const struct kern_thresh *t, uint64_t *y, enum kcuda_bgemm algo)
{
	return kdl_load() ? -ENODEV : kdl.kcuda_bdense_thr(x, batch, w, out, n, t, y, algo);
}

int kcuda_bdense_u8(const uint8_t *x, uint32_t batch, const uint64_t *w, uint32_t out, uint32_t n,
		    int32_t *y)
{
	return kdl_load() ? -ENODEV : kdl.kcuda_bdense_u8(x, batch, w, out, n, y);
}

int kcuda_bdense_u8_thr(const uint8_t *x, uint32_t batch, const uint64_t *w, uint32_t out,
			uint32_t n, const struct kern_thresh *t, uint64_t *y)
{
	return kdl_load() ? -ENODEV : kdl.kcuda_bdense_u8_thr(x, batch, w, out, n, t, y);
}

int kcuda_bconv(const uint64_t *x, uint32_t batch, const struct kern_conv_geom *g,
		const uint64_t *w, int32_t *y)
{
	return kdl_load() ? -ENODEV : kdl.kcuda_bconv(x, batch, g, w, y);
}

int kcuda_bconv_thr(const uint64_t *x, uint32_t batch, const struct kern_conv_geom *g,
		    const uint64_t *w, const struct kern_thresh *t, uint64_t *y)
{
	return kdl_load() ? -ENODEV : kdl.kcuda_bconv_thr(x, batch, g, w, t, y);
}

int kcuda_sign_pack(const double *x, uint32_t batch, uint32_t c, uint32_t h, uint32_t w,
		    uint64_t *y)
{
	return kdl_load() ? -ENODEV : kdl.kcuda_sign_pack(x, batch, c, h, w, y);
}

int kcuda_threshold_pack(const double *x, uint32_t batch, uint32_t c, uint32_t h, uint32_t w,
			 const struct kern_thresh *t, uint64_t *y)
{
	return kdl_load() ? -ENODEV : kdl.kcuda_threshold_pack(x, batch, c, h, w, t, y);
}

int kcuda_maxpool_bits(const uint64_t *x, uint32_t batch, uint32_t c, uint32_t h, uint32_t w,
		       uint32_t k, uint32_t stride, uint64_t *y)
{
	return kdl_load() ? -ENODEV : kdl.kcuda_maxpool_bits(x, batch, c, h, w, k, stride, y);
}

int kcuda_unpack_bits(const uint64_t *x, uint32_t batch, uint32_t c, uint32_t h, uint32_t w,
		      double *y)
{
	return kdl_load() ? -ENODEV : kdl.kcuda_unpack_bits(x, batch, c, h, w, y);
}

int kcuda_flatten_bits(const uint64_t *x, uint32_t batch, uint32_t c, uint32_t h, uint32_t w,
		       uint64_t *y)
{
	return kdl_load() ? -ENODEV : kdl.kcuda_flatten_bits(x, batch, c, h, w, y);
}

int kcuda_cast_f64(const void *x, uint32_t fmt, size_t n, double *y)
{
	return kdl_load() ? -ENODEV : kdl.kcuda_cast_f64(x, fmt, n, y);
}

int kcuda_conv_f64(const double *x, uint32_t batch, const struct kern_conv_geom *g, const double *w,
		   const double *b, double *y)
{
	return kdl_load() ? -ENODEV : kdl.kcuda_conv_f64(x, batch, g, w, b, y);
}

int kcuda_dense_f64(const double *x, uint32_t batch, uint32_t n, const double *w, uint32_t out,
		    const double *b, double *y)
{
	return kdl_load() ? -ENODEV : kdl.kcuda_dense_f64(x, batch, n, w, out, b, y);
}

int kcuda_bias_f64(const double *x, uint32_t batch, uint32_t c, uint32_t hw, const double *b,
		   double *y)
{
	return kdl_load() ? -ENODEV : kdl.kcuda_bias_f64(x, batch, c, hw, b, y);
}

int kcuda_batchnorm_f64(const double *x, uint32_t batch, uint32_t c, uint32_t hw,
			const double *mean, const double *sd, const double *gamma,
			const double *beta, double *y)
{
	return kdl_load() ? -ENODEV
			  : kdl.kcuda_batchnorm_f64(x, batch, c, hw, mean, sd, gamma, beta, y);
}

int kcuda_relu_f64(const double *x, size_t n, double *y)
{
	return kdl_load() ? -ENODEV : kdl.kcuda_relu_f64(x, n, y);
}

int kcuda_maxpool_f64(const double *x, uint32_t batch, uint32_t c, uint32_t h, uint32_t w,
		      uint32_t k, uint32_t stride, double *y)
{
	return kdl_load() ? -ENODEV : kdl.kcuda_maxpool_f64(x, batch, c, h, w, k, stride, y);
}

int kcuda_lrn_f64(const double *x, uint32_t batch, uint32_t c, uint32_t hw, uint32_t size,
		  double alpha, double beta, double k, double *y)
{
	return kdl_load() ? -ENODEV : kdl.kcuda_lrn_f64(x, batch, c, hw, size, alpha, beta, k, y);
}

int kcuda_conv_f32(const float *x, uint32_t batch, const struct kern_conv_geom *g, const float *w,
		   const float *b, float *y)
{
	return kdl_load() ? -ENODEV : kdl.kcuda_conv_f32(x, batch, g, w, b, y);
}

int kcuda_dense_f32(const float *x, uint32_t batch, uint32_t n, const float *w, uint32_t out,
		    const float *b, float *y)
{
	return kdl_load() ? -ENODEV : kdl.kcuda_dense_f32(x, batch, n, w, out, b, y);
}

int kcuda_bench_bgemm(uint32_t m, uint32_t n, uint32_t k, enum kcuda_bgemm algo, int iters,
		      double *ms)
{
	return kdl_load() ? -ENODEV : kdl.kcuda_bench_bgemm(m, n, k, algo, iters, ms);
}

int kcuda_bench_sgemm(uint32_t m, uint32_t n, uint32_t k, int iters, double *ms)
{
	return kdl_load() ? -ENODEV : kdl.kcuda_bench_sgemm(m, n, k, iters, ms);
}
