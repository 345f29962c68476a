// SPDX-License-Identifier: MIT
/*
 * Single kernels on host arrays, for tests: copy the operands to the device, run the kernel on
 * the legacy default stream, copy the result back (the copy waits for the kernel). Slow by
 * design (allocation and a cuBLAS handle per call); the executor never comes through here.
 */
#include <errno.h>
#include <string.h>

#include "kernels/cuda/kcuda_impl.h"

#define TMP_BUFS 12

/* Device buffers of one call; once ret is set, later steps do nothing. */
struct tmp {
	void *p[TMP_BUFS];
	int n;
	int ret;
};

static void *tmp_alloc(struct tmp *t, size_t bytes)
{
	void *p = NULL;

	if (t->ret)
		return NULL;
	if (t->n == TMP_BUFS) {
		t->ret = kcuda_fail(-EINVAL, "kcuda: too many buffers in one call");
		return NULL;
	}
	if (KCUDA_CHECK(cudaMalloc(&p, bytes ? bytes : 1))) {
		t->ret = -ENOMEM;
		return NULL;
	}
	t->p[t->n++] = p;
	return p;
}

static void *tmp_in(struct tmp *t, const void *h, size_t bytes)
{
	void *p = tmp_alloc(t, bytes);

	if (p && bytes)
		t->ret = KCUDA_CHECK(cudaMemcpy(p, h, bytes, cudaMemcpyHostToDevice));
	return t->ret ? NULL : p;
}

/* An output buffer, filled with a pattern so that unwritten words show up in comparisons. */
static void *tmp_out(struct tmp *t, size_t bytes)
{
	void *p = tmp_alloc(t, bytes);

	if (p)
		t->ret = KCUDA_CHECK(cudaMemset(p, 0xa5, bytes ? bytes : 1));
	return t->ret ? NULL : p;
}

static int tmp_done(struct tmp *t, void *h, const void *d, size_t bytes)
{
	if (!t->ret)
		t->ret = KCUDA_CHECK(cudaGetLastError());
	if (!t->ret && bytes)
		t->ret = KCUDA_CHECK(cudaMemcpy(h, d, bytes, cudaMemcpyDeviceToHost));
	for (int i = 0; i < t->n; i++)
		KCUDA_CHECK(cudaFree(t->p[i]));
	return t->ret;
}

static struct kcuda_dthresh tmp_thresh(struct tmp *t, const struct kern_thresh *h, uint32_t n)
{
	struct kcuda_dthresh d;

	d.thr = (const int32_t *)tmp_in(t, h->thr, (size_t)n * sizeof(int32_t));
	d.flip = (const uint8_t *)tmp_in(t, h->flip, n);
	return d;
}

#define BEGIN(tv)                                                                                  \
	struct tmp tv = {};                                                                        \
	tv.ret = kcuda_ready();                                                                    \
	if (tv.ret)                                                                                \
	return tv.ret

static size_t words(uint64_t bits)
{
	return (size_t)((bits + 63) / 64);
}

static size_t conv_in_words(const struct kern_conv_geom *g, uint32_t batch)
{
	return (size_t)batch * g->h * g->w * words(g->c);
}

extern "C" int kcuda_bdense(const uint64_t *x, uint32_t batch, const uint64_t *w, uint32_t out,
			    uint32_t n, int32_t *y, enum kcuda_bgemm algo)
{
	BEGIN(t);
	const size_t ny = (size_t)batch * out * sizeof(int32_t);
	const uint64_t *dx = (const uint64_t *)tmp_in(&t, x, batch * words(n) * 8);
	const uint64_t *dw = (const uint64_t *)tmp_in(&t, w, out * words(n) * 8);
	int32_t *dy = (int32_t *)tmp_out(&t, ny);
	int32_t *xp = (int32_t *)tmp_alloc(&t, (size_t)batch * sizeof(int32_t));
	int32_t *wp = (int32_t *)tmp_alloc(&t, (size_t)out * sizeof(int32_t));

	if (!t.ret)
		t.ret = kcuda_d_rowpopc(0, dw, out, (uint32_t)words(n), wp);
	if (!t.ret)
		t.ret = kcuda_d_bdense(0, dx, batch, dw, out, n, dy, algo, xp, wp);
	return tmp_done(&t, y, dy, ny);
}

extern "C" int kcuda_bdense_thr(const uint64_t *x, uint32_t batch, const uint64_t *w, uint32_t out,
				uint32_t n, const struct kern_thresh *th, uint64_t *y,
				enum kcuda_bgemm algo)
{
	BEGIN(t);
	const size_t ny = (size_t)batch * words(out) * 8;
	const uint64_t *dx = (const uint64_t *)tmp_in(&t, x, batch * words(n) * 8);
	const uint64_t *dw = (const uint64_t *)tmp_in(&t, w, out * words(n) * 8);
	const struct kcuda_dthresh dt = tmp_thresh(&t, th, out);
	int32_t *dot = (int32_t *)tmp_alloc(&t, (size_t)batch * out * sizeof(int32_t));
	int32_t *xp = (int32_t *)tmp_alloc(&t, (size_t)batch * sizeof(int32_t));
	int32_t *wp = (int32_t *)tmp_alloc(&t, (size_t)out * sizeof(int32_t));
	uint64_t *dy = (uint64_t *)tmp_out(&t, ny);

	if (!t.ret)
		t.ret = kcuda_d_rowpopc(0, dw, out, (uint32_t)words(n), wp);
	if (!t.ret)
		t.ret = kcuda_d_bdense(0, dx, batch, dw, out, n, dot, algo, xp, wp);
	if (!t.ret)
		t.ret = kcuda_d_thr_pack(0, dot, batch, out, &dt, dy);
	return tmp_done(&t, y, dy, ny);
}

extern "C" int kcuda_bdense_u8(const uint8_t *x, uint32_t batch, const uint64_t *w, uint32_t out,
			       uint32_t n, int32_t *y)
{
	BEGIN(t);
	const size_t ny = (size_t)batch * out * sizeof(int32_t);
	const uint8_t *dx = (const uint8_t *)tmp_in(&t, x, (size_t)batch * n);
	const uint64_t *dw = (const uint64_t *)tmp_in(&t, w, out * words(n) * 8);
	void *scratch = tmp_alloc(&t, kcuda_u8_scratch(n, batch));
	int32_t *dy = (int32_t *)tmp_out(&t, ny);

	if (!t.ret)
		t.ret = kcuda_d_bdense_u8(0, dx, batch, dw, out, n, dy, scratch);
	return tmp_done(&t, y, dy, ny);
}

extern "C" int kcuda_bdense_u8_thr(const uint8_t *x, uint32_t batch, const uint64_t *w,
				   uint32_t out, uint32_t n, const struct kern_thresh *th,
				   uint64_t *y)
{
	BEGIN(t);
	const size_t ny = (size_t)batch * words(out) * 8;
	const uint8_t *dx = (const uint8_t *)tmp_in(&t, x, (size_t)batch * n);
	const uint64_t *dw = (const uint64_t *)tmp_in(&t, w, out * words(n) * 8);
	const struct kcuda_dthresh dt = tmp_thresh(&t, th, out);
	void *scratch = tmp_alloc(&t, kcuda_u8_scratch(n, batch));
	int32_t *dot = (int32_t *)tmp_alloc(&t, (size_t)batch * out * sizeof(int32_t));
	uint64_t *dy = (uint64_t *)tmp_out(&t, ny);

	if (!t.ret)
		t.ret = kcuda_d_bdense_u8(0, dx, batch, dw, out, n, dot, scratch);
	if (!t.ret)
		t.ret = kcuda_d_thr_pack(0, dot, batch, out, &dt, dy);
	return tmp_done(&t, y, dy, ny);
}

extern "C" int kcuda_bconv(const uint64_t *x, uint32_t batch, const struct kern_conv_geom *g,
			   const uint64_t *w, int32_t *y)
{
	BEGIN(t);
	const size_t ny = (size_t)batch * g->o * g->oh * g->ow * sizeof(int32_t);
	const uint64_t *dx = (const uint64_t *)tmp_in(&t, x, conv_in_words(g, batch) * 8);
	const uint64_t *dw =
	    (const uint64_t *)tmp_in(&t, w, (size_t)g->o * g->k * g->k * words(g->c) * 8);
	int32_t *dy = (int32_t *)tmp_out(&t, ny);

	if (!t.ret)
		t.ret = kcuda_d_bconv(0, dx, batch, g, dw, dy);
	return tmp_done(&t, y, dy, ny);
}

extern "C" int kcuda_bconv_thr(const uint64_t *x, uint32_t batch, const struct kern_conv_geom *g,
			       const uint64_t *w, const struct kern_thresh *th, uint64_t *y)
{
	BEGIN(t);
	const size_t ny = (size_t)batch * g->oh * g->ow * words(g->o) * 8;
	const uint64_t *dx = (const uint64_t *)tmp_in(&t, x, conv_in_words(g, batch) * 8);
	const uint64_t *dw =
	    (const uint64_t *)tmp_in(&t, w, (size_t)g->o * g->k * g->k * words(g->c) * 8);
	const struct kcuda_dthresh dt = tmp_thresh(&t, th, g->o);
	uint64_t *dy = (uint64_t *)tmp_out(&t, ny);

	if (!t.ret)
		t.ret = kcuda_d_bconv_thr(0, dx, batch, g, dw, &dt, dy);
	return tmp_done(&t, y, dy, ny);
}

static int pack(const double *x, uint32_t batch, uint32_t c, uint32_t h, uint32_t w,
		const struct kern_thresh *th, uint64_t *y)
{
	BEGIN(t);
	const size_t hw = (size_t)h * w, ny = (size_t)batch * hw * words(c) * 8;
	const double *dx = (const double *)tmp_in(&t, x, (size_t)batch * c * hw * sizeof(double));
	const struct kcuda_dthresh dt = th ? tmp_thresh(&t, th, c) : kcuda_dthresh{NULL, NULL};
	uint64_t *dy = (uint64_t *)tmp_out(&t, ny);

	if (!t.ret)
		t.ret = kcuda_d_pack(0, dx, batch, c, h, w, th ? &dt : NULL, dy);
	return tmp_done(&t, y, dy, ny);
}

extern "C" int kcuda_sign_pack(const double *x, uint32_t batch, uint32_t c, uint32_t h, uint32_t w,
			       uint64_t *y)
{
	return pack(x, batch, c, h, w, NULL, y);
}

extern "C" int kcuda_threshold_pack(const double *x, uint32_t batch, uint32_t c, uint32_t h,
				    uint32_t w, const struct kern_thresh *th, uint64_t *y)
{
	return pack(x, batch, c, h, w, th, y);
}

extern "C" int kcuda_maxpool_bits(const uint64_t *x, uint32_t batch, uint32_t c, uint32_t h,
				  uint32_t w, uint32_t k, uint32_t stride, uint64_t *y)
{
	BEGIN(t);
	const size_t oh = (h - k) / stride + 1, ow = (w - k) / stride + 1;
	const size_t ny = (size_t)batch * oh * ow * words(c) * 8;
	const uint64_t *dx = (const uint64_t *)tmp_in(&t, x, (size_t)batch * h * w * words(c) * 8);
	uint64_t *dy = (uint64_t *)tmp_out(&t, ny);

	if (!t.ret)
		t.ret = kcuda_d_maxpool_bits(0, dx, batch, c, h, w, k, stride, NULL, dy);
	return tmp_done(&t, y, dy, ny);
}

extern "C" int kcuda_unpack_bits(const uint64_t *x, uint32_t batch, uint32_t c, uint32_t h,
				 uint32_t w, double *y)
{
	BEGIN(t);
	const size_t ny = (size_t)batch * c * h * w * sizeof(double);
	const uint64_t *dx = (const uint64_t *)tmp_in(&t, x, (size_t)batch * h * w * words(c) * 8);
	double *dy = (double *)tmp_out(&t, ny);

	if (!t.ret)
		t.ret = kcuda_d_unpack(0, dx, batch, c, h, w, dy);
	return tmp_done(&t, y, dy, ny);
}

extern "C" int kcuda_flatten_bits(const uint64_t *x, uint32_t batch, uint32_t c, uint32_t h,
				  uint32_t w, uint64_t *y)
{
	BEGIN(t);
	const size_t ny = (size_t)batch * words((uint64_t)c * h * w) * 8;
	const uint64_t *dx = (const uint64_t *)tmp_in(&t, x, (size_t)batch * h * w * words(c) * 8);
	uint64_t *dy = (uint64_t *)tmp_out(&t, ny);

	if (!t.ret)
		t.ret = kcuda_d_flatten_bits(0, dx, batch, c, h, w, dy);
	return tmp_done(&t, y, dy, ny);
}

extern "C" int kcuda_cast_f64(const void *x, uint32_t fmt, size_t n, double *y)
{
	BEGIN(t);
	const size_t esz = fmt == MODEL_FMT_F32 ? sizeof(float) : 1;
	const void *dx = tmp_in(&t, x, n * esz);
	double *dy = (double *)tmp_out(&t, n * sizeof(double));

	if (!t.ret)
		t.ret = kcuda_d_cast(0, dx, fmt, n, dy);
	return tmp_done(&t, y, dy, n * sizeof(double));
}

/* run(h) with a cuBLAS handle of the call's own, when every step before it went well. */
template <typename F> static void with_cublas(struct tmp *t, F run)
{
	cublasHandle_t h = NULL;

	if (!t->ret)
		t->ret = KCUDA_CHECK(cublasCreate(&h));
	if (!t->ret)
		t->ret = run(h);
	if (h)
		KCUDA_CHECK(cublasDestroy(h));
}

template <typename T>
static int conv(const T *x, uint32_t batch, const struct kern_conv_geom *g, const T *w, const T *b,
		T *y)
{
	BEGIN(t);
	const size_t ny = (size_t)batch * g->o * g->oh * g->ow * sizeof(T);
	const T *dx = (const T *)tmp_in(&t, x, (size_t)batch * g->c * g->h * g->w * sizeof(T));
	const T *dw = (const T *)tmp_in(&t, w, (size_t)g->o * g->c * g->k * g->k * sizeof(T));
	const T *db = b ? (const T *)tmp_in(&t, b, g->o * sizeof(T)) : NULL;
	T *col = (T *)tmp_alloc(&t, kcuda_conv_scratch(g, batch) * sizeof(T));
	T *dy = (T *)tmp_out(&t, ny);

	with_cublas(&t, [&](cublasHandle_t h) {
		return kcuda_d_conv(0, h, dx, batch, g, dw, db, col, dy);
	});
	return tmp_done(&t, y, dy, ny);
}

template <typename T>
static int dense(const T *x, uint32_t batch, uint32_t n, const T *w, uint32_t out, const T *b, T *y)
{
	BEGIN(t);
	const size_t ny = (size_t)batch * out * sizeof(T);
	const T *dx = (const T *)tmp_in(&t, x, (size_t)batch * n * sizeof(T));
	const T *dw = (const T *)tmp_in(&t, w, (size_t)out * n * sizeof(T));
	const T *db = b ? (const T *)tmp_in(&t, b, out * sizeof(T)) : NULL;
	T *dy = (T *)tmp_out(&t, ny);

	with_cublas(&t, [&](cublasHandle_t h) {
		return kcuda_d_dense(0, h, dx, batch, n, dw, out, db, dy);
	});
	return tmp_done(&t, y, dy, ny);
}

extern "C" int kcuda_conv_f64(const double *x, uint32_t batch, const struct kern_conv_geom *g,
			      const double *w, const double *b, double *y)
{
	return conv(x, batch, g, w, b, y);
}

extern "C" int kcuda_conv_f32(const float *x, uint32_t batch, const struct kern_conv_geom *g,
			      const float *w, const float *b, float *y)
{
	return conv(x, batch, g, w, b, y);
}

extern "C" int kcuda_dense_f64(const double *x, uint32_t batch, uint32_t n, const double *w,
			       uint32_t out, const double *b, double *y)
{
	return dense(x, batch, n, w, out, b, y);
}

extern "C" int kcuda_dense_f32(const float *x, uint32_t batch, uint32_t n, const float *w,
			       uint32_t out, const float *b, float *y)
{
	return dense(x, batch, n, w, out, b, y);
}

extern "C" int kcuda_bias_f64(const double *x, uint32_t batch, uint32_t c, uint32_t hw,
			      const double *b, double *y)
{
	BEGIN(t);
	const size_t ny = (size_t)batch * c * hw * sizeof(double);
	const double *dx = (const double *)tmp_in(&t, x, ny);
	const double *db = (const double *)tmp_in(&t, b, c * sizeof(double));
	double *dy = (double *)tmp_out(&t, ny);

	if (!t.ret)
		t.ret = kcuda_d_bias(0, dx, batch, c, hw, db, dy);
	return tmp_done(&t, y, dy, ny);
}

extern "C" int kcuda_batchnorm_f64(const double *x, uint32_t batch, uint32_t c, uint32_t hw,
				   const double *mean, const double *sd, const double *gamma,
				   const double *beta, double *y)
{
	BEGIN(t);
	const size_t ny = (size_t)batch * c * hw * sizeof(double);
	const double *dx = (const double *)tmp_in(&t, x, ny);
	double *dp = (double *)tmp_alloc(&t, 4 * (size_t)c * sizeof(double));
	double *dy = (double *)tmp_out(&t, ny);
	const double *rows[4] = {mean, sd, gamma, beta};

	for (int r = 0; r < 4 && !t.ret; r++)
		t.ret = KCUDA_CHECK(cudaMemcpy(dp + (size_t)r * c, rows[r], c * sizeof(double),
					       cudaMemcpyHostToDevice));
	if (!t.ret)
		t.ret = kcuda_d_batchnorm(0, dx, batch, c, hw, dp, dy);
	return tmp_done(&t, y, dy, ny);
}

extern "C" int kcuda_relu_f64(const double *x, size_t n, double *y)
{
	BEGIN(t);
	const double *dx = (const double *)tmp_in(&t, x, n * sizeof(double));
	double *dy = (double *)tmp_out(&t, n * sizeof(double));

	if (!t.ret)
		t.ret = kcuda_d_relu(0, dx, n, dy);
	return tmp_done(&t, y, dy, n * sizeof(double));
}

extern "C" int kcuda_maxpool_f64(const double *x, uint32_t batch, uint32_t c, uint32_t h,
				 uint32_t w, uint32_t k, uint32_t stride, double *y)
{
	BEGIN(t);
	const size_t oh = (h - k) / stride + 1, ow = (w - k) / stride + 1;
	const size_t ny = (size_t)batch * c * oh * ow * sizeof(double);
	const double *dx =
	    (const double *)tmp_in(&t, x, (size_t)batch * c * h * w * sizeof(double));
	double *dy = (double *)tmp_out(&t, ny);

	if (!t.ret)
		t.ret = kcuda_d_maxpool(0, dx, batch, c, h, w, k, stride, dy);
	return tmp_done(&t, y, dy, ny);
}

extern "C" int kcuda_lrn_f64(const double *x, uint32_t batch, uint32_t c, uint32_t hw,
			     uint32_t size, double alpha, double beta, double k, double *y)
{
	BEGIN(t);
	const size_t ny = (size_t)batch * c * hw * sizeof(double);
	const double *dx = (const double *)tmp_in(&t, x, ny);
	double *dy = (double *)tmp_out(&t, ny);

	if (!t.ret)
		t.ret = kcuda_d_lrn(0, dx, batch, c, hw, size, alpha, beta, k, dy);
	return tmp_done(&t, y, dy, ny);
}
