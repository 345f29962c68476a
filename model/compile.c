/* SPDX-License-Identifier: MIT */
/* The compiler's lowering: layers to ops, formats and shapes (model/compile.h,
 * model/compile_ctx.h). */
#include <errno.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "model/compile.h"
#include "model/compile_ctx.h"
#include "model/model_file.h"

/* Append an op taking the current tensor to `out`; it implements arch layers [first, +count). */
static int cc_emit(struct cc *c, uint32_t op, uint32_t first, uint32_t count,
		   struct model_shape out)
{
	struct model_layer *l;

	if (c->m->n_layers == c->cap) {
		uint32_t cap = c->cap ? 2 * c->cap : 16;
		struct model_layer *nl = realloc(c->m->layers, cap * sizeof(*nl));

		if (!nl)
			return cc_nomem(c);
		c->m->layers = nl;
		c->cap = cap;
	}
	l = &c->m->layers[c->m->n_layers++];
	*l = (struct model_layer){
	    .op = op, .src_first = first, .src_count = count, .in = c->s, .out = out};
	c->s = out;
	c->prod = -1;
	return 0;
}

static struct model_shape shape_fmt(struct model_shape s, uint32_t fmt)
{
	s.fmt = fmt;
	return s;
}

static int cc_check_size(struct cc *c, const struct model_shape *s)
{
	if (!s->c || !s->h || !s->w || model_shape_elems(s) > MODEL_FILE_MAX_ELEMS)
		return cc_fail(c, c->ic->arch_path, "output (%u,%u,%u) empty or over %llu elements",
			       s->c, s->h, s->w, (unsigned long long)MODEL_FILE_MAX_ELEMS);
	return 0;
}

/* Convert U8 (CAST) or BITS (UNPACK) to F64; integers stay exact. */
static int cc_to_f64(struct cc *c, uint32_t first, uint32_t count)
{
	int ret;

	switch (c->s.fmt) {
	case MODEL_FMT_U8:
		return cc_emit(c, MODEL_OP_CAST, first, count, shape_fmt(c->s, MODEL_FMT_F64));
	case MODEL_FMT_BITS:
		ret = cc_emit(c, MODEL_OP_UNPACK, first, count, shape_fmt(c->s, MODEL_FMT_F64));
		c->exact = true;
		c->lo = -1;
		c->hi = 1;
		return ret;
	}
	return 0;
}

/* Materialize the pending chain as BIAS / BATCHNORM ops. */
static int cc_flush(struct cc *c)
{
	int ret;

	if (!cc_pending(c))
		return 0;
	if (c->pbias) {
		ret = cc_emit(c, MODEL_OP_BIAS, c->pb_src, 1, c->s);
		if (!ret)
			ret = cc_put_bias(c);
		if (ret)
			return ret;
	}
	for (uint32_t k = 0; k < c->n_pbn; k++) {
		ret = cc_emit(c, MODEL_OP_BATCHNORM, c->pbn[k], 1, c->s);
		if (!ret)
			ret = cc_put_batchnorm(c, c->pbn[k]);
		if (ret)
			return ret;
	}
	c->pbias = false;
	c->n_pbn = 0;
	c->exact = false;
	return 0;
}

/*
 * Place folded thresholds (owned from here on) for the pending chain and the sign at arch layer
 * `sign`: into the binary op producing the integers if it is the last op, else as a THRESHOLD.
 */
static int cc_place_thresholds(struct cc *c, uint32_t sign, struct cc_fold *f)
{
	uint32_t first = cc_pending(c) ? c->pend_first : sign;
	struct model_layer *l;
	unsigned int bt;
	int ret;

	if (c->prod >= 0 && c->prod == (int64_t)c->m->n_layers - 1) {
		l = cc_last(c);
		l->flags |= MODEL_LF_THRESH;
		l->out.fmt = MODEL_FMT_BITS;
		l->src_count = sign - l->src_first + 1;
		c->s.fmt = MODEL_FMT_BITS;
		bt = 1;
	} else {
		ret = cc_emit(c, MODEL_OP_THRESHOLD, first, sign - first + 1,
			      shape_fmt(c->s, MODEL_FMT_BITS));
		if (ret) {
			cc_fold_free(f);
			return ret;
		}
		bt = 0;
	}
	cc_put_fold(c, bt, f);
	c->pbias = false;
	c->n_pbn = 0;
	c->exact = true;
	c->lo = -1;
	c->hi = 1;
	c->prod = -1;
	return 0;
}

/*
 * A sign (arch layer `sign`) on the current tensor; with `three`, ONNX Sign (layer sign3): one
 * bit where no reachable input is 0, else three-valued (MODEL_OP_SIGN3), whose -1/0/+1 are again
 * exact integers.
 */
static int cc_sign(struct cc *c, uint32_t sign, bool three)
{
	struct cc_fold f;
	int ret;

	if (c->s.fmt == MODEL_FMT_BITS)
		return 0;
	ret = cc_to_f64(c, sign, 1);
	if (!ret)
		ret = cc_fold(c, &f);
	if (ret < 0)
		return ret;
	if (ret && three && cc_zero_reachable(c, &f)) {
		cc_fold_free(&f);
		ret = 0;
	}
	if (ret)
		return cc_place_thresholds(c, sign, &f);
	ret = cc_flush(c);
	if (ret)
		return ret;
	if (!three)
		return cc_emit(c, MODEL_OP_SIGN, sign, 1, shape_fmt(c->s, MODEL_FMT_BITS));
	ret = cc_emit(c, MODEL_OP_SIGN3, sign, 1, c->s);
	c->exact = true;
	c->lo = -1;
	c->hi = 1;
	return ret;
}

/* An explicit padding (layer `pad`): 0, or -inf before a max-pool. */
static int cc_pad(struct cc *c, const struct model_ic_layer *L)
{
	struct model_shape os = c->s;
	int ret;

	if (c->flat)
		return cc_fail(c, c->ic->arch_path,
			       "needs a (C,H,W) input, got a flat vector of %llu",
			       (unsigned long long)model_shape_elems(&c->s));
	os.fmt = MODEL_FMT_F64;
	os.h = c->s.h + L->pads[0] + L->pads[2];
	os.w = c->s.w + L->pads[1] + L->pads[3];
	if (os.h < c->s.h || os.w < c->s.w || cc_check_size(c, &os))
		return cc_fail(c, c->ic->arch_path, "pads (%u,%u,%u,%u) too large", L->pads[0],
			       L->pads[1], L->pads[2], L->pads[3]);
	ret = cc_to_f64(c, c->layer, 1);
	if (!ret)
		ret = cc_flush(c);
	if (!ret)
		ret = cc_emit(c, MODEL_OP_PAD, c->layer, 1, os);
	if (!ret)
		ret = cc_put_pads(c, L->pads);
	if (ret)
		return ret;
	if (L->pad_neginf) {
		cc_last(c)->flags = MODEL_LF_PADNEG;
		c->exact = false;
	} else {
		c->lo = c->lo < 0 ? c->lo : 0;
		c->hi = c->hi > 0 ? c->hi : 0;
	}
	return 0;
}

/* A binary-weight float layer of n inputs per output keeps integers exact below 2^52. */
static void cc_exact_after(struct cc *c, uint64_t n)
{
	double m = fmax(fabs((double)c->lo), fabs((double)c->hi)) * (double)n;

	c->exact = c->exact && m < 0x1p52;
	if (c->exact) {
		c->hi = (int64_t)m;
		c->lo = -c->hi;
	}
}

/* A binary-weight layer's bias stays pending: a sign may fold it into thresholds. */
static void cc_pend_bias(struct cc *c, const struct model_ic_layer *L)
{
	if (!L->bias)
		return;
	c->pbias = true;
	c->pb_src = c->layer;
	c->pend_first = c->layer;
}

/*
 * A float dense or conv (op) to os, n inputs per output: binary weights (packed signs,
 * MODEL_LF_BINW; exact integers stay exact below 2^52), or float weights and bias
 * (MODEL_LF_BIAS).
 */
static int cc_float_op(struct cc *c, const struct model_ic_layer *L, uint32_t op,
		       struct model_shape os, uint64_t n)
{
	int ret = cc_to_f64(c, c->layer, 1);

	if (!ret)
		ret = cc_emit(c, op, c->layer, 1, os);
	if (!ret)
		ret = L->binw ? cc_put_rows(c, os.c, n) : cc_put_float(c, os.c * n, os.c);
	if (ret)
		return ret;
	if (L->binw) {
		cc_last(c)->flags = MODEL_LF_BINW;
		cc_exact_after(c, n);
	} else {
		if (L->bias)
			cc_last(c)->flags = MODEL_LF_BIAS;
		c->exact = false;
	}
	return 0;
}

static int cc_dense(struct cc *c, const struct model_ic_layer *L)
{
	uint32_t i = c->layer, out = L->out;
	uint64_t n = model_shape_elems(&c->s);
	struct model_shape os = {MODEL_FMT_F64, out, 1, 1};
	int ret;

	ret = cc_check_size(c, &os);
	if (!ret)
		ret = cc_take_weights(c, L, 2, (uint64_t[]){out, n});
	if (!ret)
		ret = cc_flush(c);
	if (!ret && (c->s.h != 1 || c->s.w != 1))
		ret = cc_emit(c, MODEL_OP_FLATTEN, i, 1,
			      (struct model_shape){c->s.fmt, (uint32_t)n, 1, 1});
	if (ret)
		return ret;
	if (L->binw &&
	    (c->s.fmt == MODEL_FMT_BITS || (c->s.fmt == MODEL_FMT_U8 && n * 255 <= INT32_MAX))) {
		bool u8 = c->s.fmt == MODEL_FMT_U8;

		ret = cc_emit(c, u8 ? MODEL_OP_BDENSE_U8 : MODEL_OP_BDENSE, i, 1, os);
		if (!ret)
			ret = cc_put_rows(c, out, n);
		if (ret)
			return ret;
		c->prod = c->m->n_layers - 1;
		c->exact = true;
		c->hi = (int64_t)n * (u8 ? 255 : 1);
		c->lo = -c->hi;
	} else {
		ret = cc_float_op(c, L, MODEL_OP_DENSE, os, n);
		if (ret)
			return ret;
	}
	if (L->binw)
		cc_pend_bias(c, L);
	c->flat = true;
	return 0;
}

static int cc_conv(struct cc *c, const struct model_ic_layer *L)
{
	uint32_t i = c->layer, o = L->out, k = L->kernel, ch = c->s.c;
	uint64_t ph = (uint64_t)c->s.h + 2ull * L->pad, pw = (uint64_t)c->s.w + 2ull * L->pad;
	uint64_t taps;
	struct model_shape os;
	int ret;

	if (c->flat)
		return cc_fail(c, c->ic->arch_path,
			       "needs a (C,H,W) input, got a flat vector of %llu",
			       (unsigned long long)model_shape_elems(&c->s));
	if (L->pad >= k)
		return cc_fail(c, c->ic->arch_path, "pad %u >= kernel %u is not supported", L->pad,
			       k);
	if (k > ph || k > pw)
		return cc_fail(c, c->ic->arch_path,
			       "kernel %u larger than the padded input %llux%llu", k,
			       (unsigned long long)ph, (unsigned long long)pw);
	if ((uint64_t)k * k > MODEL_FILE_MAX_ELEMS / ch)
		return cc_fail(c, c->ic->arch_path,
			       "kernel %u on %u channels: over %llu taps per output", k, ch,
			       (unsigned long long)MODEL_FILE_MAX_ELEMS);
	taps = (uint64_t)ch * k * k;
	os = (struct model_shape){MODEL_FMT_F64, o, (uint32_t)((ph - k) / L->stride + 1),
				  (uint32_t)((pw - k) / L->stride + 1)};
	ret = cc_check_size(c, &os);
	if (!ret)
		ret = cc_take_weights(c, L, 4, (uint64_t[]){o, ch, k, k});
	if (!ret)
		ret = cc_flush(c);
	if (ret)
		return ret;
	if (L->binw && c->s.fmt == MODEL_FMT_BITS) {
		ret = cc_emit(c, MODEL_OP_BCONV, i, 1, os);
		if (!ret)
			ret = cc_put_taps(c, o, ch, k);
		if (ret)
			return ret;
		c->prod = c->m->n_layers - 1;
		c->exact = true;
		c->hi = (int64_t)taps;
		c->lo = -c->hi;
	} else {
		ret = cc_float_op(c, L, MODEL_OP_CONV, os, taps);
		if (ret)
			return ret;
	}
	cc_last(c)->kernel = k;
	cc_last(c)->stride = L->stride;
	cc_last(c)->pad = L->pad;
	if (L->binw)
		cc_pend_bias(c, L);
	return 0;
}

static int cc_batchnorm(struct cc *c, const struct model_ic_layer *L)
{
	uint32_t i = c->layer;
	int ret;

	ret = cc_take_batchnorm(c, L);
	if (!ret)
		ret = cc_to_f64(c, i, 1);
	if (ret)
		return ret;
	if (!cc_pending(c))
		c->pend_first = i;
	c->pbn[c->n_pbn++] = i;
	return c->exact ? 0 : cc_flush(c);
}

static int cc_window(struct cc *c, const struct model_ic_layer *L, struct model_shape *os)
{
	if (c->flat)
		return cc_fail(c, c->ic->arch_path,
			       "needs a (C,H,W) input, got a flat vector of %llu",
			       (unsigned long long)model_shape_elems(&c->s));
	if (L->kernel > c->s.h || L->kernel > c->s.w)
		return cc_fail(c, c->ic->arch_path, "kernel %u larger than the input %ux%u",
			       L->kernel, c->s.h, c->s.w);
	*os = (struct model_shape){c->s.fmt, c->s.c, (c->s.h - L->kernel) / L->stride + 1,
				   (c->s.w - L->kernel) / L->stride + 1};
	return 0;
}

/*
 * Threshold before pool. On exact integers x with a pending chain f1 (bias, batch-norms), a
 * max-pool, then batch-norms f2 and a sign: every step is monotone (rounding included), so per
 * channel d2(y) = f2(y) >= 0 is monotone and sign(f2(max f1(x))) is the OR over the window of
 * d2(f1(x)) where d2 is non-decreasing, the AND where it is non-increasing (an odd number of
 * negative gammas in f2), and either where it is constant (a zero gamma). d2(f1(x)) is the whole
 * chain's exact folded threshold, so the thresholds go ahead of the pool (into the binary op
 * producing x when there is one) and the pool runs on bits. Returns the number of arch layers
 * after the pool it consumed (batch-norms and the sign), 0 when it does not apply (the caller
 * then pools x as it is), or -errno.
 */
static int cc_pool_fold(struct cc *c, const struct model_ic_layer *L, struct model_shape os)
{
	const struct model_ic_model *ic = c->ic;
	uint32_t i = c->layer, j = i + 1, saved = c->n_pbn;
	struct model_layer *l;
	struct cc_fold f;
	uint64_t *mask;
	int ret;

	if (c->s.fmt == MODEL_FMT_BITS || !c->exact)
		return 0;
	while (j < ic->n_layers && ic->layers[j].type == MODEL_SRC_BATCHNORM)
		j++;
	if (j == i + 1 || j == ic->n_layers || ic->layers[j].type != MODEL_SRC_SIGN)
		return 0;
	for (uint32_t k = i + 1; k < j; k++) {
		c->layer = k;
		ret = cc_batchnorm(c, &ic->layers[k]);
		if (ret)
			return ret;
	}
	c->layer = i;
	ret = cc_fold(c, &f);
	if (ret < 0)
		return ret;
	if (!ret) {
		for (uint32_t k = i + 1; k < j; k++)
			cc_drop_batchnorm(c, k);
		c->n_pbn = saved;
		return 0;
	}
	ret = cc_pool_and_mask(c, saved, os.c, &mask);
	if (ret) {
		cc_fold_free(&f);
		return ret;
	}
	ret = cc_place_thresholds(c, j, &f);
	if (!ret)
		ret = cc_emit(c, MODEL_OP_MAXPOOL_BITS, i, 1, shape_fmt(os, MODEL_FMT_BITS));
	if (ret) {
		free(mask);
		return ret;
	}
	l = cc_last(c);
	l->kernel = L->kernel;
	l->stride = L->stride;
	if (mask) {
		l->flags |= MODEL_LF_ANDPOOL;
		cc_put_blob(c, mask, model_words(os.c) * sizeof(*mask));
	}
	return (int)(j - i);
}

/* Returns the number of following arch layers the maxpool consumed (a sign, or bn + sign). */
static int cc_maxpool(struct cc *c, const struct model_ic_layer *L, bool sign_next)
{
	uint32_t i = c->layer;
	struct model_shape os = c->s;
	int ret;

	ret = cc_window(c, L, &os);
	if (ret)
		return ret;
	ret = cc_pool_fold(c, L, os);
	if (ret)
		return ret;
	if (c->s.fmt != MODEL_FMT_BITS && sign_next) {
		/* sign(max(x)) == max(sign(x)): sign is monotone, so sign first, pool bits. */
		ret = cc_sign(c, i + 1, false);
		if (ret)
			return ret;
	}
	if (c->s.fmt == MODEL_FMT_BITS) {
		ret = cc_emit(c, MODEL_OP_MAXPOOL_BITS, i, 1, shape_fmt(os, MODEL_FMT_BITS));
	} else {
		ret = cc_to_f64(c, i, 1);
		/* max commutes with a non-decreasing map, even rounded: keep the chain pending. */
		if (!ret && !cc_chain_nondecreasing(c))
			ret = cc_flush(c);
		if (!ret)
			ret = cc_emit(c, MODEL_OP_MAXPOOL, i, 1, shape_fmt(os, MODEL_FMT_F64));
	}
	if (ret)
		return ret;
	cc_last(c)->kernel = L->kernel;
	cc_last(c)->stride = L->stride;
	return sign_next;
}

static int cc_relu(struct cc *c)
{
	uint32_t i = c->layer;
	int ret;

	ret = cc_to_f64(c, i, 1);
	if (!ret)
		ret = cc_flush(c);
	if (!ret)
		ret = cc_emit(c, MODEL_OP_RELU, i, 1, c->s);
	c->lo = c->lo > 0 ? c->lo : 0;
	c->hi = c->hi > 0 ? c->hi : 0;
	return ret;
}

static int cc_lrn(struct cc *c, const struct model_ic_layer *L)
{
	uint32_t i = c->layer;
	struct model_layer *l;
	int ret;

	if (c->flat)
		return cc_fail(c, c->ic->arch_path,
			       "needs a (C,H,W) input, got a flat vector of %llu",
			       (unsigned long long)model_shape_elems(&c->s));
	ret = cc_to_f64(c, i, 1);
	if (!ret)
		ret = cc_flush(c);
	if (!ret)
		ret = cc_emit(c, MODEL_OP_LRN, i, 1, c->s);
	if (ret)
		return ret;
	l = cc_last(c);
	l->lrn_size = L->lrn_size;
	l->lrn_alpha = L->lrn_alpha;
	l->lrn_beta = L->lrn_beta;
	l->lrn_k = L->lrn_k;
	c->exact = false;
	return 0;
}

static int cc_flatten(struct cc *c)
{
	struct model_shape os = {c->s.fmt, (uint32_t)model_shape_elems(&c->s), 1, 1};
	int ret = 0;

	c->flat = true;
	if (c->s.h == 1 && c->s.w == 1)
		return 0;
	ret = cc_flush(c);
	if (!ret)
		ret = cc_emit(c, MODEL_OP_FLATTEN, c->layer, 1, os);
	return ret;
}

static int cc_layer(struct cc *c, const struct model_ic_layer *L, bool sign_next)
{
	switch (L->type) {
	case MODEL_SRC_DENSE:
		return cc_dense(c, L);
	case MODEL_SRC_CONV:
		return cc_conv(c, L);
	case MODEL_SRC_BATCHNORM:
		return cc_batchnorm(c, L);
	case MODEL_SRC_SIGN:
		return cc_sign(c, c->layer, false);
	case MODEL_SRC_RELU:
		return cc_relu(c);
	case MODEL_SRC_MAXPOOL:
		return cc_maxpool(c, L, sign_next);
	case MODEL_SRC_FLATTEN:
		return cc_flatten(c);
	case MODEL_SRC_LRN:
		return cc_lrn(c, L);
	case MODEL_SRC_PAD:
		return cc_pad(c, L);
	case MODEL_SRC_SIGN3:
		return cc_sign(c, c->layer, true);
	}
	return cc_fail(c, c->ic->arch_path, "unknown layer type %u", L->type);
}

static void cc_record(struct cc *c, uint32_t i)
{
	const struct model_ic_layer *L = &c->ic->layers[i];
	struct model_src_layer *s = &c->m->src[i];

	*s = (struct model_src_layer){.type = L->type, .c = c->s.c, .h = c->s.h, .w = c->s.w};
	if (L->bias)
		s->flags |= MODEL_SF_BIAS;
	if (L->binw)
		s->flags |= MODEL_SF_BINW;
	if (L->type == MODEL_SRC_CONV || L->type == MODEL_SRC_MAXPOOL) {
		s->kernel = L->kernel;
		s->stride = L->stride;
		s->pad = L->pad;
	} else if (L->type == MODEL_SRC_LRN) {
		s->kernel = L->lrn_size;
	}
}

void model_compiled_free(struct model *m)
{
	for (uint32_t i = 0; i < m->n_layers; i++)
		for (unsigned int b = 0; b < MODEL_NBLOB; b++)
			free((void *)m->layers[i].blob[b]);
	free(m->layers);
	free(m->src);
	memset(m, 0, sizeof(*m));
}

static int cc_run(const struct model_ic_model *ic, bool shapes, struct model *m, char *err,
		  size_t errlen)
{
	struct cc c = {.ic = ic,
		       .m = m,
		       .shapes = shapes,
		       .err = err,
		       .errlen = errlen,
		       .s = ic->input,
		       .prod = -1};
	int ret;

	memset(m, 0, sizeof(*m));
	memcpy(m->name, ic->name, sizeof(m->name));
	m->input = ic->input;
	m->n_src = ic->n_layers;
	m->src = calloc(ic->n_layers, sizeof(*m->src));
	c.pbn = calloc(ic->n_layers, sizeof(*c.pbn));
	c.v = calloc(ic->n_layers, sizeof(*c.v));
	if (!m->src || !c.pbn || !c.v) {
		ret = cc_nomem(&c);
		goto out_free;
	}
	if (ic->input.fmt == MODEL_FMT_F32) {
		ret = cc_emit(&c, MODEL_OP_CAST, 0, 0, shape_fmt(c.s, MODEL_FMT_F64));
		if (ret)
			goto out_free;
	} else {
		c.exact = true;
		c.hi = 255;
	}
	for (uint32_t i = 0; i < ic->n_layers; i++) {
		bool sign_next = i + 1 < ic->n_layers && ic->layers[i + 1].type == MODEL_SRC_SIGN;

		c.layer = i;
		ret = cc_layer(&c, &ic->layers[i], sign_next);
		if (ret < 0)
			goto out_free;
		if (c.m->n_layers > MODEL_FILE_MAX_OPS) {
			ret = cc_fail(&c, ic->arch_path, "more than %d ops", MODEL_FILE_MAX_OPS);
			goto out_free;
		}
		cc_record(&c, i);
		for (; ret > 0; ret--)
			cc_record(&c, ++i);
	}
	c.layer = ic->n_layers - 1;
	ret = cc_flush(&c);
	if (!ret && !m->n_layers)
		ret = cc_to_f64(&c, 0, ic->n_layers);

out_free:
	for (uint32_t i = 0; c.v && i < ic->n_layers; i++)
		cc_drop_batchnorm(&c, i);
	free(c.v);
	free(c.pbn);
	if (ret)
		model_compiled_free(m);
	return ret;
}

int model_compile(const struct model_ic_model *ic, struct model *m, char *err, size_t errlen)
{
	return cc_run(ic, false, m, err, errlen);
}

int model_compile_shapes(const struct model_ic_model *ic, struct model *m, char *err, size_t errlen)
{
	return cc_run(ic, true, m, err, errlen);
}
