/* SPDX-License-Identifier: MIT */
/* Float kernels in double: convolution and dense on the table's dot products, element-wise ops. */
#include <math.h>
#include <stdbool.h>
#include <string.h>

#include "kernels/kern_ops.h"
#include "kernels/float_impl.h"

size_t kern_conv_scratch(const struct kern_conv_geom *g)
{
	return (size_t)g->c * g->k * g->k * g->oh * g->ow;
}

/* col[oy * ow + ox][(c, ky, kx)]: each pixel's window as one row; taps in the padding are 0. */
static void im2row(const double *x, const struct kern_conv_geom *g, double *col)
{
	for (uint32_t oy = 0; oy < g->oh; oy++)
		for (uint32_t ox = 0; ox < g->ow; ox++)
			for (uint32_t c = 0; c < g->c; c++)
				for (uint32_t ky = 0; ky < g->k; ky++) {
					int64_t iy = (int64_t)oy * g->stride + ky - g->pad;

					for (uint32_t kx = 0; kx < g->k; kx++) {
						int64_t ix = (int64_t)ox * g->stride + kx - g->pad;
						bool in =
						    iy >= 0 && iy < g->h && ix >= 0 && ix < g->w;

						*col++ = in ? x[((size_t)c * g->h + iy) * g->w + ix]
							    : 0.0;
					}
				}
}

void kern_conv_f64(const double *x, uint32_t batch, const struct kern_conv_geom *g, const double *w,
		   const double *b, double *col, double *y)
{
	const uint32_t taps = g->c * g->k * g->k, ohw = g->oh * g->ow;
	const size_t in = (size_t)g->c * g->h * g->w;
	struct kern_dot d = {.a = w,
			     .lda = taps,
			     .b = col,
			     .ldb = taps,
			     .m = g->o,
			     .n = ohw,
			     .nseg = 1,
			     .seg = taps,
			     .ldci = ohw,
			     .ldcj = 1,
			     .bias = b};

	for (uint32_t i = 0; i < batch; i++, x += in, y += (size_t)g->o * ohw) {
		im2row(x, g, col);
		d.c = y;
		kern_ops_get()->dot_f64(&d);
	}
}

void kern_dense_f64(const double *x, uint32_t batch, uint32_t n, const double *w, uint32_t out,
		    const double *b, double *y)
{
	struct kern_dot d = kern_dot_dense(w, x, batch, n, out, b, y);

	kern_ops_get()->dot_f64(&d);
}

void kern_bias_f64(double *x, uint32_t batch, uint32_t c, uint32_t hw, const double *b)
{
	for (uint32_t i = 0; i < batch; i++)
		for (uint32_t ch = 0; ch < c; ch++)
			for (uint32_t p = 0; p < hw; p++)
				*x++ += b[ch];
}

void kern_batchnorm_f64(const double *x, uint32_t batch, uint32_t c, uint32_t hw,
			const double *mean, const double *sd, const double *gamma,
			const double *beta, double *y)
{
	for (uint32_t i = 0; i < batch; i++)
		for (uint32_t ch = 0; ch < c; ch++)
			for (uint32_t p = 0; p < hw; p++)
				*y++ = (*x++ - mean[ch]) / sd[ch] * gamma[ch] + beta[ch];
}

void kern_relu_f64(const double *x, size_t n, double *y)
{
	for (size_t i = 0; i < n; i++)
		y[i] = x[i] > 0.0 ? x[i] : 0.0;
}

void kern_pad_f64(const double *x, uint32_t batch, uint32_t c, uint32_t h, uint32_t w,
		  const uint32_t pads[4], double fill, double *y)
{
	const size_t oh = (size_t)h + pads[0] + pads[2], ow = (size_t)w + pads[1] + pads[3];

	KERN_PAD_PLANES(double, x, y, (size_t)batch *c, h, w, oh, ow, pads[0], pads[1], fill);
}

void kern_sign3_f64(const double *x, size_t n, double *y)
{
	for (size_t i = 0; i < n; i++)
		y[i] = x[i] > 0.0 ? 1.0 : x[i] < 0.0 ? -1.0 : 0.0;
}

void kern_maxpool_f64(const double *x, uint32_t batch, uint32_t c, uint32_t h, uint32_t w,
		      uint32_t k, uint32_t stride, double *y)
{
	uint32_t oh = (h - k) / stride + 1, ow = (w - k) / stride + 1;

	for (uint32_t i = 0; i < batch * c; i++, x += (size_t)h * w)
		for (uint32_t oy = 0; oy < oh; oy++)
			for (uint32_t ox = 0; ox < ow; ox++) {
				double m = -INFINITY;

				for (uint32_t ky = 0; ky < k; ky++)
					for (uint32_t kx = 0; kx < k; kx++) {
						double v = x[(size_t)(oy * stride + ky) * w +
							     ox * stride + kx];

						m = v > m ? v : m;
					}
				*y++ = m;
			}
}

void kern_lrn_f64(const double *x, uint32_t batch, uint32_t c, uint32_t hw, uint32_t size,
		  double alpha, double beta, double k, double *y)
{
	uint32_t half = size / 2;

	for (uint32_t i = 0; i < batch; i++, x += (size_t)c * hw, y += (size_t)c * hw)
		KERN_LRN_IMAGE(double, x, y, c, hw, half, size, alpha, beta, k);
}
