/* SPDX-License-Identifier: MIT */
/*
 * The float layers that end a model, in float32, with a certified bound per image.
 *
 * Notation (docs/float.md states the same): u = 2^-24, v = 2^-53, g(d, u) = d u / (1 - d u).
 * For one image, S is the exact value of an activation (real arithmetic on the model's double
 * weights), F the float32 value, D the float64 value of the ops one by one. e32 >= max |F - S|
 * and e64 >= max |D - S| over the activation's elements, so |F - D| <= e32 + e64. x is the
 * largest |F| of the op's input, X = x + e32 + e64 >= max |S|, max |D|.
 *  - CONV, DENSE: each output is sum_i w_i x_i + b, summed in the fixed order of struct
 *    kern_dot (or, for a conv on the table's sconv, in any order: d32 = taps + 2): every
 *    product passes through at most d roundings (d32 for the float32 sum, d64 for the float64
 *    one), so |fl(sum) - sum| <= g(d) sum |terms| (Higham 3.1). With
 *    W1 = max_o sum_i |w_o,i|, B = max |b|, and |fl32(w) - w| <= u |w|:
 *      e32' = W1 e32 + ((1 + u) g(d32, u) + u) (W1 x + B) + (taps + 64) 2^-149 (1 + x)
 *      e64' = W1 e64 + g(d64, v) (W1 X + B) + 2^-1000
 *    (the last terms cover results below the normal range, 2^-150 / 2^-1075 an operation).
 *  - BATCHNORM: float32 y = x s + t with s = fl32(gamma / sd), t = fl32(beta - mean s) (fused
 *    or not); the ops one by one compute ((x - mean) / sd) gamma + beta, four roundings:
 *      e32' = smax e32 + 3.1 u (smax x + c0) + 2^-148,  e64' = smax e64 + g(4, v) (smax X + c0)
 *    with c0 = max |mean s| + |beta|. BIAS: e' = e + 2.05 u (x + B) (v in float64).
 *  - RELU, MAXPOOL, PAD, FLATTEN move or compare values: e' = e.
 *  - LRN, y = x / (k + alpha/size sum x^2)^beta with k > 0, alpha, beta >= 0: the sum of
 *    |dy_i/dx_j| over j is at most L = k^-beta (1 + 2 alpha beta X^2 / k), and |y| <= k^-beta X.
 *    The float32 op computes in double from the float32 input and rounds once.
 * A value that could reach 2^120 (or is not finite) makes the image's bound infinite: its float32
 * values could overflow where the float64 ones do not.
 * At the scores, the image is certified when every gap between the arg-max and another score
 * exceeds 2 (e32 + e64): the float64 arg-max (lowest index on ties) is then the same class. The
 * bounds are computed in double, a few roundings of positive terms, covered by 1 + 2^-20.
 */
#include <errno.h>
#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "kernels/bin_impl.h"
#include "kernels/felem.h"
#include "kernels/frun.h"
#include "kernels/float_impl.h"

#define U32	0x1p-24
#define U64	0x1p-53
#define FR_BIG	0x1p120
#define FR_WMAX 0x1p100

static double gam(double d, double u)
{
	return d * u / (1.0 - d * u);
}

static uint32_t ceil_div(uint32_t a, uint32_t b)
{
	return (a + b - 1) / b;
}

static bool all_finite(const double *v, size_t n, double lim)
{
	for (size_t i = 0; i < n; i++)
		if (!(fabs(v[i]) <= lim))
			return false;
	return true;
}

static const double *weights(const struct model_layer *l)
{
	return (l->flags & MODEL_LF_BINW) ? l->wexp : l->blob[0];
}

static bool op_fits(const struct model_layer *l)
{
	const uint64_t in = model_shape_elems(&l->in), out = model_shape_elems(&l->out);

	switch (l->op) {
	case MODEL_OP_CAST:
		return true;
	case MODEL_OP_FLATTEN:
		return l->in.fmt != MODEL_FMT_BITS;
	case MODEL_OP_CONV:
	case MODEL_OP_DENSE:
		return all_finite(weights(l),
				  l->op == MODEL_OP_DENSE
				      ? in * out
				      : (uint64_t)l->out.c * l->in.c * l->kernel * l->kernel,
				  FR_WMAX) &&
		       (!(l->flags & MODEL_LF_BIAS) || all_finite(l->blob[1], l->out.c, FR_WMAX));
	case MODEL_OP_BIAS:
		return all_finite(l->blob[0], l->in.c, FR_WMAX);
	case MODEL_OP_BATCHNORM: {
		const double *p = l->blob[0];

		for (uint32_t c = 0; c < l->in.c; c++)
			if (!(p[l->in.c + c] > 0.0))
				return false;
		return all_finite(p, 4 * (size_t)l->in.c, FR_WMAX);
	}
	case MODEL_OP_RELU:
	case MODEL_OP_MAXPOOL:
	case MODEL_OP_PAD:
		return true;
	case MODEL_OP_LRN:
		return l->lrn_k > 0.0 && l->lrn_alpha >= 0.0 && l->lrn_beta >= 0.0 &&
		       isfinite(l->lrn_k) && isfinite(l->lrn_alpha) && isfinite(l->lrn_beta) &&
		       l->lrn_size > 0;
	default:
		return false;
	}
}

static float *falloc(size_t n)
{
	return aligned_alloc(64, ((n ? n : 1) * sizeof(float) + 63) & ~(size_t)63);
}

/*
 * CONV weights: for a table with a vectorised sconv (a register-blocked direct conv over the
 * padded image), sconv_packed's blocks of filters (kern_sconv_pack) with taps in (c, ky, kx)
 * order, the image padded channel-major; else [o][ky][kx][c] for dot_f32 over window rows of the
 * padded pixel-major image (k segments of k c elements).
 */
static int prep_conv(const struct model_layer *l, struct frun_op *o, size_t *hwc, size_t *tmp,
		     bool sconv)
{
	const uint32_t C = l->in.c, K = l->kernel, O = l->out.c, wp = l->in.w + 2 * l->pad;
	const uint32_t taps = C * K * K;
	const size_t padded = (size_t)(l->in.h + 2 * l->pad) * wp * C;
	const double *w = weights(l);

	o->w = falloc(sconv ? kern_sconv_packed_elems(taps, O) : (size_t)O * taps);
	o->boff = malloc(sizeof(*o->boff) * l->out.h * l->out.w + 1);
	if (!o->w || !o->boff || padded >= UINT32_MAX)
		return -ENOMEM;
	o->sconv = sconv;
	if (sconv)
		memset(o->w, 0, kern_sconv_packed_elems(taps, O) * sizeof(float));
	for (uint32_t i = 0; i < O; i++) {
		double s = 0.0;

		for (uint32_t c = 0; c < C; c++)
			for (uint32_t t = 0; t < K * K; t++) {
				double v = w[((size_t)i * C + c) * K * K + t];

				if (sconv)
					o->w[((size_t)(i / KERN_SCONV_BLK) * taps + c * K * K + t) *
						 KERN_SCONV_BLK +
					     i % KERN_SCONV_BLK] = (float)v;
				else
					o->w[(size_t)i * taps + t * C + c] = (float)v;
				s += fabs(v);
			}
		o->w1 = s > o->w1 ? s : o->w1;
	}
	for (uint32_t y = 0; y < l->out.h; y++)
		for (uint32_t x = 0; x < l->out.w; x++)
			o->boff[y * l->out.w + x] = ((y * l->stride) * wp + x * l->stride) * C;
	o->d32 = sconv ? taps + 2 : K * ceil_div(K * C, 16) + 6;
	o->d64 = ceil_div(taps, 8) + 5;
	*hwc = padded > *hwc ? padded : *hwc;
	if (sconv && (size_t)O * l->out.h * l->out.w > *tmp)
		*tmp = (size_t)O * l->out.h * l->out.w;
	return 0;
}

static int prep_dense(const struct model_layer *l, struct frun_op *o)
{
	const uint32_t n = (uint32_t)model_shape_elems(&l->in), out = l->out.c;
	const double *w = weights(l);

	o->w = falloc((size_t)n * out);
	if (!o->w)
		return -ENOMEM;
	for (uint32_t i = 0; i < out; i++) {
		double s = 0.0;

		for (uint32_t k = 0; k < n; k++) {
			o->w[(size_t)i * n + k] = (float)w[(size_t)i * n + k];
			s += fabs(w[(size_t)i * n + k]);
		}
		o->w1 = s > o->w1 ? s : o->w1;
	}
	o->d32 = ceil_div(n, 16) + 6;
	o->d64 = ceil_div(n, 8) + 5;
	return 0;
}

static int prep_bias(const struct model_layer *l, const double *b, uint32_t n, float **dst,
		     double *bmax)
{
	*dst = falloc(n);
	if (!*dst)
		return -ENOMEM;
	for (uint32_t i = 0; i < n; i++) {
		(*dst)[i] = (float)b[i];
		*bmax = fabs(b[i]) > *bmax ? fabs(b[i]) : *bmax;
	}
	(void)l;
	return 0;
}

static int prep_bn(const struct model_layer *l, struct frun_op *o)
{
	const uint32_t n = l->in.c;
	const double *p = l->blob[0];

	o->s = falloc(n);
	o->t = falloc(n);
	if (!o->s || !o->t)
		return -ENOMEM;
	for (uint32_t c = 0; c < n; c++) {
		double s = p[2 * n + c] / p[n + c], t = p[3 * n + c] - p[c] * s;
		double c0 = fabs(p[c] * s) + fabs(p[3 * n + c]);

		o->s[c] = (float)s;
		o->t[c] = (float)t;
		o->smax = fabs(s) > o->smax ? fabs(s) : o->smax;
		o->c0max = c0 > o->c0max ? c0 : o->c0max;
	}
	return 0;
}

static int prep_op(const struct model_layer *l, struct frun_op *o, size_t *hwc, size_t *tmp)
{
	switch (l->op) {
	case MODEL_OP_CONV:
		if (prep_conv(l, o, hwc, tmp, kern_ops_get()->sconv != kern_ref_sconv))
			return -ENOMEM;
		return (l->flags & MODEL_LF_BIAS)
			   ? prep_bias(l, l->blob[1], l->out.c, &o->b, &o->bmax)
			   : 0;
	case MODEL_OP_DENSE:
		if (prep_dense(l, o))
			return -ENOMEM;
		return (l->flags & MODEL_LF_BIAS)
			   ? prep_bias(l, l->blob[1], l->out.c, &o->b, &o->bmax)
			   : 0;
	case MODEL_OP_BIAS:
		return prep_bias(l, l->blob[0], l->in.c, &o->t, &o->c0max);
	case MODEL_OP_BATCHNORM:
		return prep_bn(l, o);
	case MODEL_OP_LRN:
		o->lrn_l = pow(l->lrn_k, -l->lrn_beta) * (1.0 + 0x1p-30);
		o->lrn_xr = 2.0 * l->lrn_alpha * l->lrn_beta / l->lrn_k * (1.0 + 0x1p-30);
		return 0;
	default:
		return 0;
	}
}

int kern_frun_prepare(const struct model *m, uint32_t max_batch, struct kern_frun *r)
{
	const struct model_layer *L = m->layers;
	uint32_t n = m->n_layers, s = n;

	memset(r, 0, sizeof(*r));
	r->m = m;
	r->max_batch = max_batch;
	r->start = n;
	r->fe = kern_felem_for(kern_ops_get()->name);
	if (L[n - 1].out.fmt != MODEL_FMT_F64)
		return 0;
	while (s > 0 && op_fits(&L[s - 1]))
		s--;
	if (s == n)
		return 0;
	r->op = calloc(n, sizeof(*r->op));
	if (!r->op)
		return -ENOMEM;
	for (uint32_t i = s; i < n; i++) {
		if (prep_op(&L[i], &r->op[i], &r->hwc, &r->tmp))
			goto err_free;
		if (model_shape_elems(&L[i].in) > r->elems)
			r->elems = model_shape_elems(&L[i].in);
		if (model_shape_elems(&L[i].out) > r->elems)
			r->elems = model_shape_elems(&L[i].out);
	}
	r->buf[0] = falloc(r->elems * max_batch);
	r->buf[1] = falloc(r->elems * max_batch);
	for (uint32_t i = s; i < n; i++)
		if (L[i].op == MODEL_OP_DENSE && model_shape_elems(&L[i].in) > r->bat_elems)
			r->bat_elems = model_shape_elems(&L[i].in);
	r->chunk = (uint32_t)(FRUN_CHUNK_BYTES / (r->elems * sizeof(float)));
	r->chunk = r->chunk < 1 ? 1 : r->chunk;
	r->bat = falloc(r->bat_elems * max_batch);
	r->pix = falloc(r->hwc);
	r->py = falloc(r->tmp);
	r->e32 = calloc(max_batch, sizeof(double));
	r->e64 = calloc(max_batch, sizeof(double));
	r->xmax = calloc(max_batch, sizeof(double));
	if (!r->buf[0] || !r->buf[1] || !r->bat || !r->pix || !r->py || !r->e32 || !r->e64 ||
	    !r->xmax)
		goto err_free;
	r->start = s;
	return 0;

err_free:
	kern_frun_free(r);
	return -ENOMEM;
}

void kern_frun_free(struct kern_frun *r)
{
	for (uint32_t i = 0; r->op && i < r->m->n_layers; i++) {
		free(r->op[i].w);
		free(r->op[i].b);
		free(r->op[i].s);
		free(r->op[i].t);
		free(r->op[i].boff);
	}
	free(r->op);
	free(r->buf[0]);
	free(r->buf[1]);
	free(r->pix);
	free(r->py);
	free(r->bat);
	free(r->e32);
	free(r->e64);
	free(r->xmax);
	memset(r, 0, sizeof(*r));
}

bool kern_frun_covers(const struct kern_frun *r, uint32_t first, uint32_t last)
{
	if (!r->m || r->off || r->start >= r->m->n_layers || first < r->start ||
	    last != r->m->n_layers)
		return false;
	for (uint32_t i = first; i < last; i++)
		if (r->m->layers[i].op == MODEL_OP_CONV || r->m->layers[i].op == MODEL_OP_DENSE)
			return true;
	return false;
}

static void to_float(struct kern_frun *r, const void *x, uint32_t fmt, size_t n, uint32_t batch,
		     float *y)
{
	for (size_t i = 0; i < n * batch; i++)
		y[i] = fmt == MODEL_FMT_U8    ? (float)((const uint8_t *)x)[i]
		       : fmt == MODEL_FMT_F32 ? ((const float *)x)[i]
					      : (float)((const double *)x)[i];
	for (uint32_t b = 0; b < batch; b++) {
		r->e32[b] = 0.0;
		r->e64[b] = 0.0;
	}
	if (fmt == MODEL_FMT_F64)
		for (uint32_t b = 0; b < batch; b++)
			r->e32[b] = U32 * r->fe->absmax(y + b * n, n) + 0x1p-149;
}

/* The bounds after a sum of products (CONV, DENSE) of image b, from its input's largest |F|. */
static void bound_dot(struct kern_frun *r, const struct frun_op *o, uint32_t b, double x,
		      uint32_t taps)
{
	const double X = x + r->e32[b] + r->e64[b];
	const double e32 = o->w1 * r->e32[b] +
			   ((1.0 + U32) * gam(o->d32, U32) + U32) * (o->w1 * x + o->bmax) +
			   (taps + 64.0) * 0x1p-149 * (1.0 + x);
	const double e64 = o->w1 * r->e64[b] + gam(o->d64, U64) * (o->w1 * X + o->bmax) + 0x1p-1000;

	r->e32[b] = o->w1 * X + o->bmax <= FR_BIG ? e32 : INFINITY;
	r->e64[b] = e64;
}

/* A conv on the table's sconv_packed: its MAXPOOL `pool` (NULL if none) with the transpose. */
static void run_conv(struct kern_frun *r, const struct kern_bin_ops *ops,
		     const struct model_layer *l, const struct frun_op *o, const float *x,
		     uint32_t batch, const struct model_layer *pool, float *y)
{
	const uint32_t C = l->in.c, H = l->in.h, W = l->in.w, P = l->pad, K = l->kernel;
	const uint32_t wp = W + 2 * P, ohw = l->out.h * l->out.w;
	const size_t in = (size_t)C * H * W, out = (size_t)l->out.c * ohw;
	struct kern_dot d = {.a = o->w,
			     .lda = (size_t)C * K * K,
			     .b = r->pix,
			     .boff = o->boff,
			     .bstride = (size_t)wp * C,
			     .m = l->out.c,
			     .n = ohw,
			     .nseg = K,
			     .seg = K * C,
			     .ldci = ohw,
			     .ldcj = 1,
			     .bias = o->b};

	memset(r->pix, 0, r->hwc * sizeof(float));
	if (o->sconv) {
		struct kern_conv_geom g = {C, H, W, l->out.c, l->out.h, l->out.w, K, l->stride, P};
		const size_t hp = H + 2 * P, yout = pool ? model_shape_elems(&pool->out) : out;

		for (uint32_t b = 0; b < batch; b++, x += in, y += yout) {
			for (uint32_t c = 0; c < C; c++)
				for (uint32_t i = 0; i < H; i++)
					memcpy(r->pix + ((size_t)c * hp + i + P) * wp + P,
					       x + ((size_t)c * H + i) * W, W * sizeof(float));
			ops->sconv_packed(r->pix, &g, o->w, r->py);
			if (pool)
				r->fe->pool_transpose(r->py, l->out.h, l->out.w, l->out.c,
						      pool->kernel, pool->stride, o->b, y);
			else
				r->fe->transpose(r->py, ohw, l->out.c, o->b, y);
			bound_dot(r, o, b, r->fe->absmax(x, in), C * K * K);
		}
		return;
	}
	for (uint32_t b = 0; b < batch; b++, x += in, y += out) {
		for (uint32_t c = 0; c < C; c++)
			for (uint32_t i = 0; i < H; i++)
				for (uint32_t j = 0; j < W; j++)
					r->pix[((size_t)(i + P) * wp + j + P) * C + c] =
					    x[((size_t)c * H + i) * W + j];
		d.c = y;
		ops->dot_f32(&d);
		bound_dot(r, o, b, r->fe->absmax(x, in), C * K * K);
	}
}

static void run_dense(struct kern_frun *r, const struct kern_bin_ops *ops,
		      const struct model_layer *l, const struct frun_op *o, const float *x,
		      uint32_t batch, float *y)
{
	const uint32_t n = (uint32_t)model_shape_elems(&l->in), out = l->out.c;
	struct kern_dot d = kern_dot_dense(o->w, x, batch, n, out, o->b, y);

	ops->dot_f32(&d);
	for (uint32_t b = 0; b < batch; b++)
		bound_dot(r, o, b, r->fe->absmax(x + (size_t)b * n, n), n);
}

static void run_affine(struct kern_frun *r, const struct model_layer *l, const struct frun_op *o,
		       const float *x, uint32_t batch, float *y)
{
	const uint32_t C = l->in.c, hw = l->in.h * l->in.w;
	const bool bn = l->op == MODEL_OP_BATCHNORM;

	for (uint32_t b = 0; b < batch; b++) {
		const double xm = r->fe->absmax(x, (size_t)C * hw), X = xm + r->e32[b] + r->e64[b];
		const double s = bn ? o->smax : 1.0;

		r->fe->affine(x, C, hw, bn ? o->s : NULL, o->t, y);
		x += (size_t)C * hw;
		y += (size_t)C * hw;
		r->e32[b] = s * xm + o->c0max <= FR_BIG
				? s * r->e32[b] + 3.1 * U32 * (s * xm + o->c0max) + 0x1p-148
				: INFINITY;
		r->e64[b] = s * r->e64[b] + gam(4, U64) * (s * X + o->c0max) + 0x1p-1000;
	}
}

static void run_lrn(struct kern_frun *r, const struct model_layer *l, const struct frun_op *o,
		    const float *x, uint32_t batch, float *y)
{
	const uint32_t C = l->in.c, hw = l->in.h * l->in.w, half = l->lrn_size / 2;
	const double rel = ((l->lrn_beta + 1.0) * (l->lrn_size + 8.0) + 8.0) * U64;

	for (uint32_t b = 0; b < batch; b++, x += (size_t)C * hw, y += (size_t)C * hw) {
		const double X = r->fe->absmax(x, (size_t)C * hw) + r->e32[b] + r->e64[b];
		const double L = o->lrn_l * (1.0 + o->lrn_xr * X * X), ymax = o->lrn_l * X;

		KERN_LRN_IMAGE(float, x, y, C, hw, half, l->lrn_size, l->lrn_alpha, l->lrn_beta,
			       l->lrn_k);
		r->e32[b] = ymax <= FR_BIG
				? L * r->e32[b] + (1.01 * U32 + 2.0 * rel) * ymax + 0x1p-148
				: INFINITY;
		r->e64[b] = L * r->e64[b] + 2.0 * rel * ymax + 0x1p-1000;
	}
}

static void run_pad(const struct model_layer *l, const float *x, uint32_t batch, float *y)
{
	const uint32_t *pads = l->blob[0];
	const size_t h = l->in.h, w = l->in.w, oh = l->out.h, ow = l->out.w;
	const float fill = (l->flags & MODEL_LF_PADNEG) ? -INFINITY : 0.0f;

	KERN_PAD_PLANES(float, x, y, (size_t)batch * l->in.c, h, w, oh, ow, pads[0], pads[1], fill);
}

/* Op i (and a MAXPOOL after a conv on sconv_packed, when i + 1 < to); returns the ops run. */
static uint32_t run_op(struct kern_frun *r, const struct kern_bin_ops *ops, uint32_t i, uint32_t to,
		       const float *x, uint32_t batch, float *y)
{
	const struct model_layer *l = &r->m->layers[i];
	const struct frun_op *o = &r->op[i];
	const size_t n = model_shape_elems(&l->in) * batch;

	switch (l->op) {
	case MODEL_OP_CONV:
		if (o->sconv && i + 1 < to && l[1].op == MODEL_OP_MAXPOOL) {
			run_conv(r, ops, l, o, x, batch, &l[1], y);
			return 2;
		}
		run_conv(r, ops, l, o, x, batch, NULL, y);
		break;
	case MODEL_OP_DENSE:
		run_dense(r, ops, l, o, x, batch, y);
		break;
	case MODEL_OP_BIAS:
	case MODEL_OP_BATCHNORM:
		run_affine(r, l, o, x, batch, y);
		break;
	case MODEL_OP_RELU:
		r->fe->relu(x, n, y);
		break;
	case MODEL_OP_MAXPOOL:
		r->fe->maxpool(x, (size_t)batch * l->in.c, l->in.h, l->in.w, l->kernel, l->stride,
			       y);
		break;
	case MODEL_OP_PAD:
		run_pad(l, x, batch, y);
		break;
	case MODEL_OP_LRN:
		run_lrn(r, l, o, x, batch, y);
		break;
	default:
		break;
	}
	return 1;
}

/* Whether the float64 scores' arg-max (lowest index on ties) is that of s, given |s - D| <= e. */
static bool certified(const double *s, uint32_t nc, double e)
{
	uint32_t best = 0;

	e *= 1.0 + 0x1p-20;
	if (!(e < INFINITY))
		return false;
	for (uint32_t j = 1; j < nc; j++)
		if (s[j] > s[best])
			best = j;
	for (uint32_t j = 0; j < nc; j++)
		if (j != best && !(s[best] - s[j] > 2.0 * e))
			return false;
	return true;
}

/* Ops [from, to) on batch images from x (raw: op from's input format, else float32). */
static const float *run_ops(struct kern_frun *r, const struct kern_bin_ops *ops, uint32_t from,
			    uint32_t to, const void *x, bool raw, uint32_t batch)
{
	const struct model_layer *L = r->m->layers;
	const float *cur = raw ? NULL : x;
	uint32_t k = 0;

	for (uint32_t i = from; i < to;) {
		if (L[i].op == MODEL_OP_FLATTEN) {
			i++;
			continue;
		}
		if (!cur) {
			to_float(r, x, L[i].in.fmt, model_shape_elems(&L[i].in), batch, r->buf[k]);
			cur = r->buf[k];
			k ^= 1;
			if (L[i].op == MODEL_OP_CAST) {
				i++;
				continue;
			}
		}
		i += run_op(r, ops, i, to, cur, batch, r->buf[k]);
		cur = r->buf[k];
		k ^= 1;
	}
	return cur;
}

/*
 * The convs before the first dense op run FRUN_CHUNK images at a time (their activations stay
 * in cache), then the rest over the whole batch (each dense layer's weights read once).
 */
static const float *run_all(struct kern_frun *r, const struct kern_bin_ops *ops, uint32_t first,
			    const void *x, uint32_t batch)
{
	const struct model_layer *L = r->m->layers;
	const uint32_t n = r->m->n_layers;
	const size_t ib = model_shape_bytes(&L[first].in);
	uint32_t split = first;
	bool conv = false;
	size_t es;

	while (split < n && L[split].op != MODEL_OP_DENSE)
		conv |= L[split++].op == MODEL_OP_CONV;
	if (!conv || split == n || batch <= r->chunk)
		return run_ops(r, ops, first, n, x, true, batch);
	es = model_shape_elems(&L[split].in);
	for (uint32_t b0 = 0; b0 < batch; b0 += r->chunk) {
		uint32_t c = batch - b0 < r->chunk ? batch - b0 : r->chunk;
		const float *y;

		r->e32 += b0;
		r->e64 += b0;
		y = run_ops(r, ops, first, split, (const uint8_t *)x + b0 * ib, true, c);
		r->e32 -= b0;
		r->e64 -= b0;
		memcpy(r->bat + b0 * es, y, c * es * sizeof(float));
	}
	return run_ops(r, ops, split, n, r->bat, false, batch);
}

uint32_t kern_frun_run(struct kern_frun *r, const struct kern_bin_ops *ops, uint32_t first,
		       const void *x, uint32_t batch, double *out, uint8_t *recheck, bool certify)
{
	const struct model_layer *L = r->m->layers;
	const uint32_t n = r->m->n_layers, nc = (uint32_t)model_shape_elems(&L[n - 1].out);
	const float *cur = run_all(r, ops, first, x, batch);
	uint32_t bad = 0;

	if (!cur) { /* nothing but flattens and casts: not a run (kern_frun_covers) */
		for (uint32_t b = 0; b < batch; b++)
			recheck[b] = 1;
		return batch;
	}
	for (uint32_t b = 0; b < batch; b++) {
		for (uint32_t j = 0; j < nc; j++)
			out[(size_t)b * nc + j] = cur[(size_t)b * nc + j];
		recheck[b] = certify && !certified(out + (size_t)b * nc, nc, r->e32[b] + r->e64[b]);
		bad += recheck[b];
	}
	r->rechecked += bad;
	r->images += batch;
	if (certify && r->images >= FRUN_TRIAL && r->rechecked * 2 > r->images)
		r->off = true;
	return bad;
}
