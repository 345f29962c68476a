/* SPDX-License-Identifier: MIT */
#include <errno.h>
#include <math.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "model/compile.h"
#include "model/model_file.h"

/* A batch-norm layer's parameters, sd = sqrt(var + eps) computed once in double. */
struct cc_bn {
	const double *mean, *gamma, *beta;
	double *sd;
};

struct cc {
	const struct model_ic_model *ic;
	struct model *m;
	uint32_t cap;
	char *err;
	size_t errlen;
	uint32_t layer; /* the arch layer being compiled, for messages */

	struct model_shape s; /* the tensor after the ops emitted so far */
	bool flat;	      /* a vector (after dense or flatten), not a (C,H,W) image */
	bool exact;	      /* integer values held exactly, in [lo, hi] */
	int64_t lo, hi;
	int64_t prod; /* index of the binary op producing these integers, if the last op; else -1 */

	/* Pending chain, applied to the integers: bias (of layer pb_src), then bns[0..n_pbn). */
	const double *pb;
	uint32_t pb_src;
	uint32_t *pbn, n_pbn;
	uint32_t pend_first; /* first arch layer of the pending chain */
	struct cc_bn *bn;    /* per arch layer */
};

__attribute__((format(printf, 3, 4))) static int cc_fail(struct cc *c, const char *file,
							 const char *fmt, ...)
{
	const struct model_ic_layer *L = &c->ic->layers[c->layer];
	char msg[320];
	va_list ap;

	va_start(ap, fmt);
	vsnprintf(msg, sizeof(msg), fmt, ap);
	va_end(ap);
	snprintf(c->err, c->errlen, "%s: layer %u (%s): %s", file, c->layer,
		 model_src_type_name(L->type), msg);
	return -EINVAL;
}

static int cc_nomem(struct cc *c)
{
	snprintf(c->err, c->errlen, "%s: out of memory", c->ic->arch_path);
	return -ENOMEM;
}

static struct model_layer *cc_last(struct cc *c)
{
	return &c->m->layers[c->m->n_layers - 1];
}

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

static void *cc_blob(struct cc *c, unsigned int i, uint64_t size)
{
	struct model_layer *l = cc_last(c);
	void *p = calloc(1, size);

	l->blob[i] = p;
	l->blob_size[i] = p ? size : 0;
	return p;
}

static struct model_shape shape_fmt(struct model_shape s, uint32_t fmt)
{
	s.fmt = fmt;
	return s;
}

static const struct model_ic_array *cc_find(const struct cc *c, uint32_t layer, const char *name)
{
	char key[32];

	snprintf(key, sizeof(key), "%u.%s", layer, name);
	for (uint32_t i = 0; i < c->ic->n_arrays; i++)
		if (!strcmp(c->ic->arrays[i].key, key))
			return &c->ic->arrays[i];
	return NULL;
}

enum cc_check { CC_FINITE, CC_NO_NAN };

/* The array "layer.name" of exactly the shape dims[0..ndim), its values checked. */
static const double *cc_array(struct cc *c, const char *name, uint32_t ndim, const uint64_t *dims,
			      enum cc_check check)
{
	struct model_ic_array *a = (struct model_ic_array *)cc_find(c, c->layer, name);
	const char *wp = c->ic->weights_path;
	char want[96] = "", got[96] = "";
	bool ok;

	if (!a) {
		cc_fail(c, wp, "missing array %u.%s", c->layer, name);
		return NULL;
	}
	ok = a->ndim == ndim;
	for (uint32_t d = 0; d < ndim; d++) {
		snprintf(want + strlen(want), sizeof(want) - strlen(want), "%s%llu", d ? "," : "",
			 (unsigned long long)dims[d]);
		ok = ok && a->shape[d] == dims[d];
	}
	for (uint32_t d = 0; d < a->ndim; d++)
		snprintf(got + strlen(got), sizeof(got) - strlen(got), "%s%llu", d ? "," : "",
			 (unsigned long long)a->shape[d]);
	if (!ok) {
		cc_fail(c, wp, "%s shape (%s), expected (%s)", a->key, got, want);
		return NULL;
	}
	for (uint64_t i = 0; i < a->count; i++) {
		double v = a->data[i];

		if (check == CC_FINITE ? !isfinite(v) : isnan(v)) {
			cc_fail(c, wp, "%s[%llu] = %g, must be %s", a->key, (unsigned long long)i,
				v, check == CC_FINITE ? "finite" : "a number");
			return NULL;
		}
	}
	a->used = true;
	return a->data;
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

static bool cc_pending(const struct cc *c)
{
	return c->pb || c->n_pbn;
}

/* Materialize the pending chain as BIAS / BATCHNORM ops. */
static int cc_flush(struct cc *c)
{
	uint32_t ch = c->s.c;
	int ret;

	if (!cc_pending(c))
		return 0;
	if (c->pb) {
		double *b;

		ret = cc_emit(c, MODEL_OP_BIAS, c->pb_src, 1, c->s);
		if (ret)
			return ret;
		b = cc_blob(c, 0, ch * sizeof(double));
		if (!b)
			return cc_nomem(c);
		memcpy(b, c->pb, ch * sizeof(double));
	}
	for (uint32_t k = 0; k < c->n_pbn; k++) {
		const struct cc_bn *bn = &c->bn[c->pbn[k]];
		double *p;

		ret = cc_emit(c, MODEL_OP_BATCHNORM, c->pbn[k], 1, c->s);
		if (ret)
			return ret;
		p = cc_blob(c, 0, 4ull * ch * sizeof(double));
		if (!p)
			return cc_nomem(c);
		memcpy(p, bn->mean, ch * sizeof(double));
		memcpy(p + ch, bn->sd, ch * sizeof(double));
		memcpy(p + 2 * ch, bn->gamma, ch * sizeof(double));
		memcpy(p + 3 * ch, bn->beta, ch * sizeof(double));
	}
	c->pb = NULL;
	c->n_pbn = 0;
	c->exact = false;
	return 0;
}

/* The pending chain on channel ch, in float64, in the spec's order. */
static double cc_chain(const struct cc *c, uint32_t ch, double x)
{
	if (c->pb)
		x = x + c->pb[ch];
	for (uint32_t k = 0; k < c->n_pbn; k++) {
		const struct cc_bn *bn = &c->bn[c->pbn[k]];

		x = (x - bn->mean[ch]) / bn->sd[ch] * bn->gamma[ch] + bn->beta[ch];
	}
	return x;
}

static bool cc_dec(const struct cc *c, uint32_t ch, int64_t d)
{
	return cc_chain(c, ch, (double)d) >= 0;
}

/*
 * Fold the pending chain and a sign on channel ch into (thr, flip) over the integers [lo, hi].
 * Every step is monotone in x (round-to-nearest is), so the decision flips at most once; the
 * product of the gammas' signs says which way, a zero gamma makes it constant. Returns false
 * if a "constant" chain is not (an overflow to infinity times a zero gamma).
 */
static bool cc_fold_channel(const struct cc *c, uint32_t ch, int32_t *thr, uint8_t *flip)
{
	int64_t a = c->lo, b = c->hi;
	int dir = 1;
	bool glo = cc_dec(c, ch, a), ghi = cc_dec(c, ch, b);

	for (uint32_t k = 0; k < c->n_pbn; k++) {
		double g = c->bn[c->pbn[k]].gamma[ch];

		dir = g == 0 ? 0 : g < 0 ? -dir : dir;
		if (!dir)
			break;
	}
	*thr = INT32_MIN;
	if (dir == 0 || glo == ghi) {
		*flip = !glo;
		return glo == ghi;
	}
	/* Bisect keeping dec(a) == glo and dec(b) == ghi. */
	while (b - a > 1) {
		int64_t mid = a + (b - a) / 2;

		if (cc_dec(c, ch, mid) == glo)
			a = mid;
		else
			b = mid;
	}
	if (ghi) { /* non-decreasing: x >= b */
		*thr = (int32_t)b;
		*flip = 0;
	} else { /* non-increasing: x <= a */
		*thr = (int32_t)(a + 1);
		*flip = 1;
	}
	return true;
}

/* Per-channel thresholds for the pending chain and a sign; *thr NULL if they do not fold. */
static int cc_thresholds(struct cc *c, int32_t **thr, uint8_t **flip)
{
	uint32_t ch = c->s.c;

	*thr = NULL;
	*flip = NULL;
	if (!c->exact || c->lo < INT32_MIN || c->hi > INT32_MAX)
		return 0;
	*thr = malloc(ch * sizeof(**thr));
	*flip = malloc(ch);
	if (!*thr || !*flip)
		goto err_nomem;
	for (uint32_t k = 0; k < ch; k++)
		if (!cc_fold_channel(c, k, &(*thr)[k], &(*flip)[k]))
			goto out_nofold;
	return 0;

out_nofold:
	free(*thr);
	free(*flip);
	*thr = NULL;
	*flip = NULL;
	return 0;
err_nomem:
	free(*thr);
	free(*flip);
	*thr = NULL;
	*flip = NULL;
	return cc_nomem(c);
}

/*
 * Place folded thresholds (owned from here on) for the pending chain and the sign at arch layer
 * `sign`: into the binary op producing the integers if it is the last op, else as a THRESHOLD.
 */
static int cc_place_thresholds(struct cc *c, uint32_t sign, int32_t *thr, uint8_t *flip)
{
	uint32_t ch = c->s.c, first = cc_pending(c) ? c->pend_first : sign;
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
			free(thr);
			free(flip);
			return ret;
		}
		l = cc_last(c);
		bt = 0;
	}
	l->blob[bt] = thr;
	l->blob_size[bt] = ch * sizeof(*thr);
	l->blob[bt + 1] = flip;
	l->blob_size[bt + 1] = ch;
	c->pb = NULL;
	c->n_pbn = 0;
	c->exact = true;
	c->lo = -1;
	c->hi = 1;
	c->prod = -1;
	return 0;
}

/* A sign (arch layer `sign`) on the current tensor. */
static int cc_sign(struct cc *c, uint32_t sign)
{
	int32_t *thr;
	uint8_t *flip;
	int ret;

	if (c->s.fmt == MODEL_FMT_BITS)
		return 0;
	ret = cc_to_f64(c, sign, 1);
	if (ret)
		return ret;
	ret = cc_thresholds(c, &thr, &flip);
	if (ret)
		return ret;
	if (!thr) {
		ret = cc_flush(c);
		if (!ret)
			ret = cc_emit(c, MODEL_OP_SIGN, sign, 1, shape_fmt(c->s, MODEL_FMT_BITS));
		return ret;
	}
	return cc_place_thresholds(c, sign, thr, flip);
}

/* Can the pending chain on channel ch be exactly 0 (or -0.0) at an integer in [lo, hi]? */
static bool cc_zero_reachable(const struct cc *c, uint32_t ch, int32_t thr, uint8_t flip)
{
	if (thr == INT32_MIN) /* constant: all >= 0 touches 0 only at an end (monotone) */
		return !flip &&
		       (cc_chain(c, ch, (double)c->lo) == 0 || cc_chain(c, ch, (double)c->hi) == 0);
	/* the smallest value >= 0 is at the boundary integer */
	return cc_chain(c, ch, (double)(flip ? (int64_t)thr - 1 : thr)) == 0;
}

/*
 * ONNX Sign (layer `sign3`): one bit where no reachable input is 0, else three-valued
 * (MODEL_OP_SIGN3), whose -1/0/+1 are again exact integers.
 */
static int cc_sign3(struct cc *c, uint32_t sign)
{
	bool zero = true;
	int32_t *thr;
	uint8_t *flip;
	int ret;

	if (c->s.fmt == MODEL_FMT_BITS)
		return 0;
	ret = cc_to_f64(c, sign, 1);
	if (!ret)
		ret = cc_thresholds(c, &thr, &flip);
	if (ret)
		return ret;
	if (thr) {
		zero = false;
		for (uint32_t k = 0; k < c->s.c && !zero; k++)
			zero = cc_zero_reachable(c, k, thr[k], flip[k]);
		free(thr);
		free(flip);
	}
	if (!zero)
		return cc_sign(c, sign);
	ret = cc_flush(c);
	if (!ret)
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
	uint32_t *p;
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
	if (ret)
		return ret;
	p = cc_blob(c, 0, 4 * sizeof(*p));
	if (!p)
		return cc_nomem(c);
	memcpy(p, L->pads, 4 * sizeof(*p));
	if (L->pad_neginf) {
		cc_last(c)->flags = MODEL_LF_PADNEG;
		c->exact = false;
	} else {
		c->lo = c->lo < 0 ? c->lo : 0;
		c->hi = c->hi > 0 ? c->hi : 0;
	}
	return 0;
}

/* Pack rows of len reals into signs, model_words(len) u64 per row (bit 1 where W >= 0). */
static void pack_rows(const double *w, uint64_t rows, uint64_t len, uint64_t *out)
{
	uint32_t wpr = model_words(len);

	for (uint64_t r = 0; r < rows; r++)
		for (uint64_t j = 0; j < len; j++)
			if (w[r * len + j] >= 0)
				out[r * wpr + j / 64] |= 1ull << (j % 64);
}

/* Binary conv weights [O][C][k][k] -> [O][k][k][words(C)], channel-packed per tap. */
static void pack_taps(const double *w, uint32_t o, uint32_t ch, uint32_t k, uint64_t *out)
{
	uint32_t wpc = model_words(ch);

	for (uint64_t oc = 0; oc < o; oc++)
		for (uint64_t c = 0; c < ch; c++)
			for (uint64_t t = 0; t < (uint64_t)k * k; t++)
				if (w[(oc * ch + c) * k * k + t] >= 0)
					out[(oc * k * k + t) * wpc + c / 64] |= 1ull << (c % 64);
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

static int cc_no_bias_array(struct cc *c)
{
	const struct model_ic_array *a = cc_find(c, c->layer, "bias");

	if (a)
		return cc_fail(c, c->ic->weights_path,
			       "array %s given but the layer has bias false", a->key);
	return 0;
}

static int cc_dense(struct cc *c, const struct model_ic_layer *L)
{
	uint32_t i = c->layer, out = L->out;
	uint64_t n = model_shape_elems(&c->s);
	struct model_shape os = {MODEL_FMT_F64, out, 1, 1};
	const double *w, *b = NULL;
	uint64_t *pw;
	int ret;

	ret = cc_check_size(c, &os);
	if (ret)
		return ret;
	w = cc_array(c, "weight", 2, (uint64_t[]){out, n}, L->binw ? CC_NO_NAN : CC_FINITE);
	if (!w)
		return -EINVAL;
	if (L->bias) {
		b = cc_array(c, "bias", 1, (uint64_t[]){out}, CC_FINITE);
		if (!b)
			return -EINVAL;
	} else if (cc_no_bias_array(c)) {
		return -EINVAL;
	}
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
		if (ret)
			return ret;
		c->prod = c->m->n_layers - 1;
		c->exact = true;
		c->hi = (int64_t)n * (u8 ? 255 : 1);
		c->lo = -c->hi;
	} else {
		ret = cc_to_f64(c, i, 1);
		if (!ret)
			ret = cc_emit(c, MODEL_OP_DENSE, i, 1, os);
		if (ret)
			return ret;
		if (L->binw) {
			cc_last(c)->flags = MODEL_LF_BINW;
			cc_exact_after(c, n);
		} else {
			double *pd = cc_blob(c, 0, out * n * sizeof(double));

			if (!pd)
				return cc_nomem(c);
			memcpy(pd, w, out * n * sizeof(double));
			if (b) {
				double *pb = cc_blob(c, 1, out * sizeof(double));

				if (!pb)
					return cc_nomem(c);
				memcpy(pb, b, out * sizeof(double));
				cc_last(c)->flags = MODEL_LF_BIAS;
			}
			c->exact = false;
		}
	}
	if (L->binw) {
		pw = cc_blob(c, 0, (uint64_t)out * model_words(n) * 8);
		if (!pw)
			return cc_nomem(c);
		pack_rows(w, out, n, pw);
		if (b) {
			c->pb = b;
			c->pb_src = i;
			c->pend_first = i;
		}
	}
	c->flat = true;
	return 0;
}

static int cc_conv(struct cc *c, const struct model_ic_layer *L)
{
	uint32_t i = c->layer, o = L->out, k = L->kernel, ch = c->s.c;
	uint64_t ph = (uint64_t)c->s.h + 2ull * L->pad, pw = (uint64_t)c->s.w + 2ull * L->pad;
	uint64_t taps = (uint64_t)ch * k * k;
	struct model_shape os;
	const double *w, *b = NULL;
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
	if (taps > MODEL_FILE_MAX_ELEMS)
		return cc_fail(c, c->ic->arch_path, "kernel %u: %llu taps per output, too many", k,
			       (unsigned long long)taps);
	os = (struct model_shape){MODEL_FMT_F64, o, (uint32_t)((ph - k) / L->stride + 1),
				  (uint32_t)((pw - k) / L->stride + 1)};
	ret = cc_check_size(c, &os);
	if (ret)
		return ret;
	w = cc_array(c, "weight", 4, (uint64_t[]){o, ch, k, k}, L->binw ? CC_NO_NAN : CC_FINITE);
	if (!w)
		return -EINVAL;
	if (L->bias) {
		b = cc_array(c, "bias", 1, (uint64_t[]){o}, CC_FINITE);
		if (!b)
			return -EINVAL;
	} else if (cc_no_bias_array(c)) {
		return -EINVAL;
	}
	ret = cc_flush(c);
	if (ret)
		return ret;
	if (L->binw && c->s.fmt == MODEL_FMT_BITS) {
		uint64_t *p;

		ret = cc_emit(c, MODEL_OP_BCONV, i, 1, os);
		if (ret)
			return ret;
		p = cc_blob(c, 0, (uint64_t)o * k * k * model_words(ch) * 8);
		if (!p)
			return cc_nomem(c);
		pack_taps(w, o, ch, k, p);
		c->prod = c->m->n_layers - 1;
		c->exact = true;
		c->hi = (int64_t)taps;
		c->lo = -c->hi;
	} else {
		ret = cc_to_f64(c, i, 1);
		if (!ret)
			ret = cc_emit(c, MODEL_OP_CONV, i, 1, os);
		if (ret)
			return ret;
		if (L->binw) {
			uint64_t *p = cc_blob(c, 0, (uint64_t)o * model_words(taps) * 8);

			if (!p)
				return cc_nomem(c);
			pack_rows(w, o, taps, p);
			cc_last(c)->flags = MODEL_LF_BINW;
			cc_exact_after(c, taps);
		} else {
			double *p = cc_blob(c, 0, o * taps * sizeof(double));

			if (!p)
				return cc_nomem(c);
			memcpy(p, w, o * taps * sizeof(double));
			if (b) {
				double *pb = cc_blob(c, 1, o * sizeof(double));

				if (!pb)
					return cc_nomem(c);
				memcpy(pb, b, o * sizeof(double));
				cc_last(c)->flags = MODEL_LF_BIAS;
			}
			c->exact = false;
		}
	}
	cc_last(c)->kernel = k;
	cc_last(c)->stride = L->stride;
	cc_last(c)->pad = L->pad;
	if (L->binw && b) {
		c->pb = b;
		c->pb_src = i;
		c->pend_first = i;
	}
	return 0;
}

static int cc_batchnorm(struct cc *c, const struct model_ic_layer *L)
{
	uint32_t i = c->layer, ch = c->s.c;
	uint64_t dims[1] = {ch};
	struct cc_bn *bn = &c->bn[i];
	const double *var;
	int ret;

	bn->gamma = cc_array(c, "gamma", 1, dims, CC_FINITE);
	bn->beta = bn->gamma ? cc_array(c, "beta", 1, dims, CC_FINITE) : NULL;
	bn->mean = bn->beta ? cc_array(c, "mean", 1, dims, CC_FINITE) : NULL;
	var = bn->mean ? cc_array(c, "var", 1, dims, CC_FINITE) : NULL;
	if (!var)
		return -EINVAL;
	bn->sd = malloc(ch * sizeof(double));
	if (!bn->sd)
		return cc_nomem(c);
	for (uint32_t k = 0; k < ch; k++) {
		double v = var[k] + L->eps;

		if (!(v > 0))
			return cc_fail(c, c->ic->weights_path, "%u.var[%u] + eps = %g + %g <= 0", i,
				       k, var[k], L->eps);
		bn->sd[k] = sqrt(v);
	}
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

static bool cc_chain_nondecreasing(const struct cc *c)
{
	for (uint32_t k = 0; k < c->n_pbn; k++)
		for (uint32_t ch = 0; ch < c->s.c; ch++)
			if (c->bn[c->pbn[k]].gamma[ch] < 0)
				return false;
	return true;
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
static bool cc_post_pool_decreasing(const struct cc *c, uint32_t first_bn, uint32_t ch)
{
	int dir = 1;

	for (uint32_t k = first_bn; k < c->n_pbn && dir; k++) {
		double g = c->bn[c->pbn[k]].gamma[ch];

		dir = g == 0 ? 0 : g < 0 ? -dir : dir;
	}
	return dir < 0;
}

static int cc_pool_fold(struct cc *c, const struct model_ic_layer *L, struct model_shape os)
{
	const struct model_ic_model *ic = c->ic;
	uint32_t i = c->layer, j = i + 1, saved = c->n_pbn, wpp = model_words(os.c);
	struct model_layer *l;
	uint64_t *mask;
	int32_t *thr;
	uint8_t *flip;
	bool any_and = false;
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
	ret = cc_thresholds(c, &thr, &flip);
	if (ret)
		return ret;
	if (!thr) {
		for (uint32_t k = i + 1; k < j; k++) {
			free(c->bn[k].sd);
			c->bn[k].sd = NULL;
		}
		c->n_pbn = saved;
		return 0;
	}
	mask = calloc(wpp, sizeof(*mask));
	if (!mask) {
		free(thr);
		free(flip);
		return cc_nomem(c);
	}
	for (uint32_t ch = 0; ch < os.c; ch++) {
		bool dec = cc_post_pool_decreasing(c, saved, ch);

		mask[ch / 64] |= (uint64_t)dec << (ch % 64);
		any_and = any_and || dec;
	}
	ret = cc_place_thresholds(c, j, thr, flip);
	if (!ret)
		ret = cc_emit(c, MODEL_OP_MAXPOOL_BITS, i, 1, shape_fmt(os, MODEL_FMT_BITS));
	if (ret) {
		free(mask);
		return ret;
	}
	l = cc_last(c);
	l->kernel = L->kernel;
	l->stride = L->stride;
	if (any_and) {
		l->flags |= MODEL_LF_ANDPOOL;
		l->blob[0] = mask;
		l->blob_size[0] = wpp * sizeof(*mask);
	} else {
		free(mask);
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
		ret = cc_sign(c, i + 1);
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
		return cc_sign(c, c->layer);
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
		return cc_sign3(c, c->layer);
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

int model_compile(const struct model_ic_model *ic, struct model *m, char *err, size_t errlen)
{
	struct cc c = {.ic = ic, .m = m, .err = err, .errlen = errlen, .s = ic->input, .prod = -1};
	int ret;

	memset(m, 0, sizeof(*m));
	memcpy(m->name, ic->name, sizeof(m->name));
	m->input = ic->input;
	m->n_src = ic->n_layers;
	m->src = calloc(ic->n_layers, sizeof(*m->src));
	c.pbn = calloc(ic->n_layers, sizeof(*c.pbn));
	c.bn = calloc(ic->n_layers, sizeof(*c.bn));
	if (!m->src || !c.pbn || !c.bn) {
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
	for (uint32_t i = 0; c.bn && i < ic->n_layers; i++)
		free(c.bn[i].sd);
	free(c.bn);
	free(c.pbn);
	if (ret)
		model_compiled_free(m);
	return ret;
}
