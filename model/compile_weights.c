/* SPDX-License-Identifier: MIT */
/* The compiler's weights: arrays checked, blobs copied and packed, the chain folded
 * (model/compile_ctx.h). */
#include <errno.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "model/compile_ctx.h"
#include "model/model_file.h"

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

int cc_take_weights(struct cc *c, const struct model_ic_layer *L, uint32_t ndim,
		    const uint64_t *dims)
{
	struct cc_vals *v = &c->v[c->layer];
	const struct model_ic_array *a;

	if (c->shapes)
		return 0;
	v->w = cc_array(c, "weight", ndim, dims, L->binw ? CC_NO_NAN : CC_FINITE);
	if (!v->w)
		return -EINVAL;
	if (L->bias) {
		v->b = cc_array(c, "bias", 1, dims, CC_FINITE);
		return v->b ? 0 : -EINVAL;
	}
	a = cc_find(c, c->layer, "bias");
	if (a)
		return cc_fail(c, c->ic->weights_path,
			       "array %s given but the layer has bias false", a->key);
	return 0;
}

int cc_take_batchnorm(struct cc *c, const struct model_ic_layer *L)
{
	uint32_t i = c->layer, ch = c->s.c;
	uint64_t dims[1] = {ch};
	struct cc_vals *bn = &c->v[i];
	const double *var;

	if (c->shapes)
		return 0;
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
		double s = var[k] + L->eps;

		if (!(s > 0))
			return cc_fail(c, c->ic->weights_path, "%u.var[%u] + eps = %g + %g <= 0", i,
				       k, var[k], L->eps);
		bn->sd[k] = sqrt(s);
	}
	return 0;
}

void cc_drop_batchnorm(struct cc *c, uint32_t layer)
{
	free(c->v[layer].sd);
	c->v[layer].sd = NULL;
}

/* ---- blobs ---------------------------------------------------------------------------------- */

static void *cc_blob(struct cc *c, unsigned int i, uint64_t size)
{
	struct model_layer *l = cc_last(c);
	void *p = calloc(1, size);

	l->blob[i] = p;
	l->blob_size[i] = p ? size : 0;
	return p;
}

static int cc_put_copy(struct cc *c, unsigned int i, const double *src, uint64_t count)
{
	double *p = cc_blob(c, i, count * sizeof(double));

	if (!p)
		return cc_nomem(c);
	memcpy(p, src, count * sizeof(double));
	return 0;
}

int cc_put_float(struct cc *c, uint64_t count, uint32_t out)
{
	const struct cc_vals *v = &c->v[c->layer];
	int ret;

	if (c->shapes)
		return 0;
	ret = cc_put_copy(c, 0, v->w, count);
	if (!ret && v->b)
		ret = cc_put_copy(c, 1, v->b, out);
	return ret;
}

int cc_put_rows(struct cc *c, uint64_t rows, uint64_t len)
{
	const double *w = c->v[c->layer].w;
	uint32_t wpr = model_words(len);
	uint64_t *out;

	if (c->shapes)
		return 0;
	out = cc_blob(c, 0, rows * wpr * 8);
	if (!out)
		return cc_nomem(c);
	for (uint64_t r = 0; r < rows; r++)
		for (uint64_t j = 0; j < len; j++)
			if (w[r * len + j] >= 0)
				out[r * wpr + j / 64] |= 1ull << (j % 64);
	return 0;
}

int cc_put_taps(struct cc *c, uint32_t o, uint32_t ch, uint32_t k)
{
	const double *w = c->v[c->layer].w;
	uint32_t wpc = model_words(ch);
	uint64_t *out;

	if (c->shapes)
		return 0;
	out = cc_blob(c, 0, (uint64_t)o * k * k * wpc * 8);
	if (!out)
		return cc_nomem(c);
	for (uint64_t oc = 0; oc < o; oc++)
		for (uint64_t i = 0; i < ch; i++)
			for (uint64_t t = 0; t < (uint64_t)k * k; t++)
				if (w[(oc * ch + i) * k * k + t] >= 0)
					out[(oc * k * k + t) * wpc + i / 64] |= 1ull << (i % 64);
	return 0;
}

int cc_put_bias(struct cc *c)
{
	return c->shapes ? 0 : cc_put_copy(c, 0, c->v[c->pb_src].b, c->s.c);
}

int cc_put_batchnorm(struct cc *c, uint32_t bn)
{
	const struct cc_vals *v = &c->v[bn];
	uint32_t ch = c->s.c;
	double *p;

	if (c->shapes)
		return 0;
	p = cc_blob(c, 0, 4ull * ch * sizeof(double));
	if (!p)
		return cc_nomem(c);
	memcpy(p, v->mean, ch * sizeof(double));
	memcpy(p + ch, v->sd, ch * sizeof(double));
	memcpy(p + 2 * ch, v->gamma, ch * sizeof(double));
	memcpy(p + 3 * ch, v->beta, ch * sizeof(double));
	return 0;
}

int cc_put_pads(struct cc *c, const uint32_t pads[4])
{
	uint32_t *p;

	if (c->shapes)
		return 0;
	p = cc_blob(c, 0, 4 * sizeof(*p));
	if (!p)
		return cc_nomem(c);
	memcpy(p, pads, 4 * sizeof(*p));
	return 0;
}

void cc_put_fold(struct cc *c, unsigned int bt, struct cc_fold *f)
{
	struct model_layer *l = cc_last(c);

	if (c->shapes) {
		cc_fold_free(f);
		return;
	}
	l->blob[bt] = f->thr;
	l->blob_size[bt] = c->s.c * sizeof(*f->thr);
	l->blob[bt + 1] = f->flip;
	l->blob_size[bt + 1] = c->s.c;
	f->thr = NULL;
	f->flip = NULL;
}

void cc_put_blob(struct cc *c, void *p, uint64_t size)
{
	struct model_layer *l = cc_last(c);

	l->blob[0] = p;
	l->blob_size[0] = p ? size : 0;
}

/* ---- the pending chain's values ------------------------------------------------------------- */

/* The pending chain on channel ch, in float64, in the spec's order. */
static double cc_chain(const struct cc *c, uint32_t ch, double x)
{
	if (c->pbias)
		x = x + c->v[c->pb_src].b[ch];
	for (uint32_t k = 0; k < c->n_pbn; k++) {
		const struct cc_vals *bn = &c->v[c->pbn[k]];

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
		double g = c->v[c->pbn[k]].gamma[ch];

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

void cc_fold_free(struct cc_fold *f)
{
	free(f->thr);
	free(f->flip);
	f->thr = NULL;
	f->flip = NULL;
}

int cc_fold(struct cc *c, struct cc_fold *f)
{
	uint32_t ch = c->s.c;

	f->thr = NULL;
	f->flip = NULL;
	if (!c->exact || c->lo < INT32_MIN || c->hi > INT32_MAX)
		return 0;
	if (c->shapes && cc_pending(c))
		return 1;
	f->thr = malloc(ch * sizeof(*f->thr));
	f->flip = malloc(ch);
	if (!f->thr || !f->flip) {
		cc_fold_free(f);
		return cc_nomem(c);
	}
	for (uint32_t k = 0; k < ch; k++) {
		if (!cc_fold_channel(c, k, &f->thr[k], &f->flip[k])) {
			cc_fold_free(f);
			return 0;
		}
	}
	return 1;
}

/* Can the chain on channel ch be exactly 0 (or -0.0) at an integer in [lo, hi]? */
static bool cc_zero_at(const struct cc *c, uint32_t ch, int32_t thr, uint8_t flip)
{
	if (thr == INT32_MIN) /* constant: all >= 0 touches 0 only at an end (monotone) */
		return !flip &&
		       (cc_chain(c, ch, (double)c->lo) == 0 || cc_chain(c, ch, (double)c->hi) == 0);
	/* the smallest value >= 0 is at the boundary integer */
	return cc_chain(c, ch, (double)(flip ? (int64_t)thr - 1 : thr)) == 0;
}

bool cc_zero_reachable(const struct cc *c, const struct cc_fold *f)
{
	if (c->shapes && cc_pending(c))
		return false;
	for (uint32_t k = 0; k < c->s.c; k++)
		if (cc_zero_at(c, k, f->thr[k], f->flip[k]))
			return true;
	return false;
}

bool cc_chain_nondecreasing(const struct cc *c)
{
	if (c->shapes)
		return true;
	for (uint32_t k = 0; k < c->n_pbn; k++)
		for (uint32_t ch = 0; ch < c->s.c; ch++)
			if (c->v[c->pbn[k]].gamma[ch] < 0)
				return false;
	return true;
}

int cc_pool_and_mask(struct cc *c, uint32_t first_bn, uint32_t ch, uint64_t **mask)
{
	bool any = false;

	*mask = NULL;
	if (c->shapes)
		return 0;
	*mask = calloc(model_words(ch), sizeof(**mask));
	if (!*mask)
		return cc_nomem(c);
	for (uint32_t i = 0; i < ch; i++) {
		int dir = 1;

		for (uint32_t k = first_bn; k < c->n_pbn && dir; k++) {
			double g = c->v[c->pbn[k]].gamma[i];

			dir = g == 0 ? 0 : g < 0 ? -dir : dir;
		}
		(*mask)[i / 64] |= (uint64_t)(dir < 0) << (i % 64);
		any = any || dir < 0;
	}
	if (!any) {
		free(*mask);
		*mask = NULL;
	}
	return 0;
}
