// SPDX-License-Identifier: MIT
/* ONNX operators -> interchange layers: one node (or a binarizer pattern) at a time. */
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "model/model_file.h"
#include "model/onnx/onnx_impl.h"
#include "model/onnx/onnx_import.h"

static uint64_t cur_elems(const struct onnx_walk *x)
{
	return model_shape_elems(&x->s);
}

static int need_image(struct onnx_walk *x, const Onnx__NodeProto *n)
{
	if (x->rank != 3)
		return onnx_fail(&x->e, n,
				 "input 0 '%s' has %u dimensions after the batch one; the op needs "
				 "(C,H,W)",
				 x->cur, x->rank);
	return 0;
}

static int need_vector(struct onnx_walk *x, const Onnx__NodeProto *n)
{
	if (x->rank != 1)
		return onnx_fail(
		    &x->e, n,
		    "input 0 '%s' has %u dimensions after the batch one; the op needs a "
		    "(batch, n) matrix (Flatten first)",
		    x->cur, x->rank);
	return 0;
}

static void set_flat(struct onnx_walk *x, uint32_t n)
{
	x->s.c = n;
	x->s.h = x->s.w = 1;
	x->rank = 1;
}

/* --- windows: kernel, strides, pads, auto_pad ------------------------------------------- */

struct win {
	uint32_t k, stride;
	uint32_t pads[4]; /* top, left, bottom, right */
};

static int get_window(struct onnx_walk *x, const Onnx__NodeProto *n, int64_t wk_h, int64_t wk_w,
		      bool pool, struct win *w)
{
	int64_t ks[4], st[4], pd[8], dl[4];
	uint32_t nks, nst, npd, ndl;
	char ap[32];
	int64_t ceil_mode = 0;
	uint32_t in[2] = {x->s.h, x->s.w};
	int ret;

	ret = onnx_attr_ints(&x->e, n, "kernel_shape", ks, 4, &nks);
	if (!ret)
		ret = onnx_attr_ints(&x->e, n, "strides", st, 4, &nst);
	if (!ret)
		ret = onnx_attr_ints(&x->e, n, "pads", pd, 8, &npd);
	if (!ret)
		ret = onnx_attr_ints(&x->e, n, "dilations", dl, 4, &ndl);
	if (!ret)
		ret = onnx_attr_string(&x->e, n, "auto_pad", ap, sizeof(ap));
	if (!ret && pool)
		ret = onnx_attr_int(&x->e, n, "ceil_mode", 0, &ceil_mode);
	if (ret)
		return ret;
	if (pool && nks == 0)
		return onnx_fail(&x->e, n, "attribute 'kernel_shape' is required");
	if (nks && (nks != 2 || (!pool && (ks[0] != wk_h || ks[1] != wk_w))))
		return onnx_fail(&x->e, n, "attribute 'kernel_shape' must be 2 values%s",
				 pool ? "" : " equal to the weight's (kH, kW)");
	if (!pool) {
		ks[0] = wk_h;
		ks[1] = wk_w;
	}
	if (ks[0] != ks[1] || ks[0] < 1 || ks[0] > 65535)
		return onnx_fail(&x->e, n, "kernel %lldx%lld: only square kernels are supported",
				 (long long)ks[0], (long long)ks[1]);
	if (nst && (nst != 2 || st[0] != st[1] || st[0] < 1 || st[0] > 65535))
		return onnx_fail(&x->e, n,
				 "attribute 'strides': two equal values >= 1 are supported");
	for (uint32_t i = 0; i < ndl; i++)
		if (ndl != 2 || dl[i] != 1)
			return onnx_fail(&x->e, n, "attribute 'dilations': only 1 is supported");
	if (ceil_mode != 0 && ceil_mode != 1)
		return onnx_fail(&x->e, n, "attribute 'ceil_mode' = %lld must be 0 or 1",
				 (long long)ceil_mode);
	w->k = (uint32_t)ks[0];
	w->stride = nst ? (uint32_t)st[0] : 1;
	memset(w->pads, 0, sizeof(w->pads));
	if (!*ap || !strcmp(ap, "NOTSET")) {
		if (npd && npd != 4)
			return onnx_fail(&x->e, n, "attribute 'pads' must have 4 values");
		for (uint32_t i = 0; i < npd; i++) {
			if (pd[i] < 0 || pd[i] >= ks[0])
				return onnx_fail(
				    &x->e, n, "attribute 'pads'[%u] = %lld: must be in [0, kernel)",
				    i, (long long)pd[i]);
		}
		if (npd) { /* ONNX order: H begin, W begin, H end, W end */
			w->pads[0] = (uint32_t)pd[0];
			w->pads[1] = (uint32_t)pd[1];
			w->pads[2] = (uint32_t)pd[2];
			w->pads[3] = (uint32_t)pd[3];
		}
	} else if (!strcmp(ap, "SAME_UPPER") || !strcmp(ap, "SAME_LOWER")) {
		if (npd)
			return onnx_fail(&x->e, n, "attributes 'auto_pad' %s and 'pads' together",
					 ap);
		for (int d = 0; d < 2; d++) {
			int64_t out = (in[d] + w->stride - 1) / w->stride;
			int64_t total = (out - 1) * w->stride + w->k - (int64_t)in[d];
			int64_t small, big;

			total = total > 0 ? total : 0;
			small = total / 2;
			big = total - small;
			w->pads[d] = (uint32_t)(ap[5] == 'U' ? small : big);
			w->pads[d + 2] = (uint32_t)(ap[5] == 'U' ? big : small);
		}
	} else if (strcmp(ap, "VALID")) {
		return onnx_fail(&x->e, n, "attribute 'auto_pad' = '%s' unknown", ap);
	}
	if (ceil_mode) { /* more padding at the end so that floor gives the ceil count */
		for (int d = 0; d < 2; d++) {
			int64_t span = (int64_t)in[d] + w->pads[d] + w->pads[d + 2] - w->k;
			int64_t out;

			if (span < 0)
				break;
			out = (span + w->stride - 1) / w->stride + 1;
			/* the last window must start inside the input or the begin padding */
			if ((out - 1) * w->stride >= (int64_t)in[d] + w->pads[d])
				out--;
			span = (out - 1) * w->stride + w->k - ((int64_t)in[d] + w->pads[d]);
			if (span > (int64_t)w->pads[d + 2])
				w->pads[d + 2] = (uint32_t)span;
		}
	}
	return 0;
}

static bool pads_symmetric(const struct win *w)
{
	return w->pads[0] == w->pads[1] && w->pads[0] == w->pads[2] && w->pads[0] == w->pads[3];
}

static int add_pad(struct onnx_walk *x, const Onnx__NodeProto *n, const struct win *w, bool neginf)
{
	struct model_ic_layer *L = onnx_layer_add(x, n, MODEL_SRC_PAD);

	if (!L)
		return onnx_nomem(x);
	memcpy(L->pads, w->pads, sizeof(L->pads));
	L->pad_neginf = neginf;
	x->s.h += w->pads[0] + w->pads[2];
	x->s.w += w->pads[1] + w->pads[3];
	x->imp->extended = true;
	return 0;
}

/* --- operators -------------------------------------------------------------------------- */

static int op_conv(struct onnx_walk *x, const Onnx__NodeProto *n)
{
	static const char *const known[] = {"auto_pad", "dilations", "group", "kernel_shape",
					    "pads",	"strides",   NULL};
	const struct onnx_const *W, *B = NULL;
	struct model_ic_layer *L;
	struct win w;
	int64_t group;
	uint64_t o, oh, ow;
	int ret;

	ret = onnx_attrs_known(&x->e, n, known);
	if (!ret)
		ret = need_image(x, n);
	if (!ret)
		ret = onnx_attr_int(&x->e, n, "group", 1, &group);
	if (ret)
		return ret;
	if (group != 1)
		return onnx_fail(&x->e, n, "attribute 'group' = %lld: only 1 is supported",
				 (long long)group);
	W = onnx_input_const(x, n, 1, "W");
	if (!W)
		return -EINVAL;
	if (W->ndim != 4 || W->dims[1] != x->s.c || W->dims[0] < 1)
		return onnx_fail(&x->e, n, "input 1 (W) '%s' must be (M, %u, kH, kW)", W->name,
				 x->s.c);
	if (n->n_input > 2 && *n->input[2]) {
		B = onnx_input_const(x, n, 2, "B");
		if (!B)
			return -EINVAL;
		if (B->count != (uint64_t)W->dims[0] || B->ndim != 1)
			return onnx_fail(&x->e, n, "input 2 (B) '%s' must be (%lld)", B->name,
					 (long long)W->dims[0]);
	}
	ret = get_window(x, n, W->dims[2], W->dims[3], false, &w);
	if (ret)
		return ret;
	if (!pads_symmetric(&w)) {
		ret = add_pad(x, n, &w, false);
		if (ret)
			return ret;
		memset(w.pads, 0, sizeof(w.pads));
	}
	if (x->s.h + 2ull * w.pads[0] < w.k || x->s.w + 2ull * w.pads[0] < w.k)
		return onnx_fail(&x->e, n, "kernel %u larger than the padded input %ux%u", w.k,
				 x->s.h + 2 * w.pads[0], x->s.w + 2 * w.pads[0]);
	L = onnx_layer_add(x, n, MODEL_SRC_CONV);
	if (!L)
		return onnx_nomem(x);
	o = (uint64_t)W->dims[0];
	L->out = (uint32_t)o;
	L->kernel = w.k;
	L->stride = w.stride;
	L->pad = w.pads[0];
	L->bias = B != NULL;
	L->binw = onnx_const_binary(W);
	ret = onnx_array_copy(x, "weight", 4, (uint64_t[]){o, x->s.c, w.k, w.k}, W->data, W->count,
			      1.0);
	if (!ret && B)
		ret = onnx_array_copy(x, "bias", 1, (uint64_t[]){o}, B->data, B->count, 1.0);
	oh = (x->s.h + 2ull * w.pads[0] - w.k) / w.stride + 1;
	ow = (x->s.w + 2ull * w.pads[0] - w.k) / w.stride + 1;
	x->s.c = (uint32_t)o;
	x->s.h = (uint32_t)oh;
	x->s.w = (uint32_t)ow;
	return ret;
}

static int op_maxpool(struct onnx_walk *x, const Onnx__NodeProto *n)
{
	static const char *const known[] = {"auto_pad",	    "ceil_mode", "dilations",
					    "kernel_shape", "pads",	 "storage_order",
					    "strides",	    NULL};
	struct model_ic_layer *L;
	struct win w;
	int64_t so;
	int ret;

	ret = onnx_attrs_known(&x->e, n, known);
	if (!ret)
		ret = need_image(x, n);
	if (!ret)
		ret = onnx_attr_int(&x->e, n, "storage_order", 0, &so);
	if (ret)
		return ret;
	if (n->n_output > 1 && *n->output[1])
		return onnx_fail(&x->e, n, "output 1 (Indices) '%s' is not supported",
				 n->output[1]);
	ret = get_window(x, n, 0, 0, true, &w);
	if (ret)
		return ret;
	if (w.pads[0] || w.pads[1] || w.pads[2] || w.pads[3]) {
		ret = add_pad(x, n, &w, true);
		if (ret)
			return ret;
	}
	if (x->s.h < w.k || x->s.w < w.k)
		return onnx_fail(&x->e, n, "kernel %u larger than the (padded) input %ux%u", w.k,
				 x->s.h, x->s.w);
	L = onnx_layer_add(x, n, MODEL_SRC_MAXPOOL);
	if (!L)
		return onnx_nomem(x);
	L->kernel = w.k;
	L->stride = w.stride;
	x->s.h = (x->s.h - w.k) / w.stride + 1;
	x->s.w = (x->s.w - w.k) / w.stride + 1;
	return 0;
}

static int op_batchnorm(struct onnx_walk *x, const Onnx__NodeProto *n)
{
	static const char *const known[] = {"epsilon",	     "momentum", "spatial",
					    "training_mode", "is_test",	 NULL};
	static const char *const roles[4] = {"scale", "B", "input_mean", "input_var"};
	static const char *const keys[4] = {"gamma", "beta", "mean", "var"};
	const struct onnx_const *p[4];
	struct model_ic_layer *L;
	int64_t tm, spatial;
	double eps;
	int ret;

	ret = onnx_attrs_known(&x->e, n, known);
	if (!ret)
		ret = onnx_attr_int(&x->e, n, "training_mode", 0, &tm);
	if (!ret)
		ret = onnx_attr_int(&x->e, n, "spatial", 1, &spatial);
	if (!ret)
		ret = onnx_attr_float(&x->e, n, "epsilon", 1e-5, &eps);
	if (ret)
		return ret;
	if (tm)
		return onnx_fail(&x->e, n, "attribute 'training_mode' = %lld: inference only",
				 (long long)tm);
	if (spatial != 1)
		return onnx_fail(&x->e, n, "attribute 'spatial' = %lld: only 1 is supported",
				 (long long)spatial);
	for (size_t i = 1; i < n->n_output; i++)
		if (*n->output[i])
			return onnx_fail(&x->e, n,
					 "output %zu '%s' (training statistics) is not "
					 "supported",
					 i, n->output[i]);
	if (x->rank != 1 && x->rank != 3)
		return onnx_fail(&x->e, n, "input 0 '%s' must be (N, C) or (N, C, H, W)", x->cur);
	for (int i = 0; i < 4; i++) {
		p[i] = onnx_input_const(x, n, (size_t)i + 1, roles[i]);
		if (!p[i])
			return -EINVAL;
		if (p[i]->count != x->s.c)
			return onnx_fail(
			    &x->e, n, "input %d (%s) '%s' has %llu values, expected %u", i + 1,
			    roles[i], p[i]->name, (unsigned long long)p[i]->count, x->s.c);
	}
	L = onnx_layer_add(x, n, MODEL_SRC_BATCHNORM);
	if (!L)
		return onnx_nomem(x);
	L->eps = eps;
	for (int i = 0; i < 4; i++) {
		ret = onnx_array_copy(x, keys[i], 1, (uint64_t[]){x->s.c}, p[i]->data, p[i]->count,
				      1.0);
		if (ret)
			return ret;
	}
	return 0;
}

/* A dense layer W [out][n] (scaled by alpha) with an optional bias row. */
static int add_dense(struct onnx_walk *x, const Onnx__NodeProto *n, const double *w, bool trans,
		     uint64_t out, double alpha)
{
	uint64_t in = cur_elems(x);
	struct model_ic_layer *L = onnx_layer_add(x, n, MODEL_SRC_DENSE);
	double *d;

	if (!L)
		return onnx_nomem(x);
	L->out = (uint32_t)out;
	d = malloc(out * in * sizeof(double));
	if (!d)
		return onnx_nomem(x);
	for (uint64_t o = 0; o < out; o++)
		for (uint64_t i = 0; i < in; i++) {
			double v = trans ? w[o * in + i] : w[i * out + o];

			d[o * in + i] = alpha == 1.0 ? v : alpha * v;
		}
	L->binw = true;
	for (uint64_t i = 0; i < out * in && L->binw; i++)
		L->binw = d[i] == 1.0 || d[i] == -1.0;
	set_flat(x, (uint32_t)out);
	return onnx_array_add(x, "weight", 2, (uint64_t[]){out, in}, d);
}

/* Bias for the dense layer just added: a scalar or (out,) / (1, out) broadcast. */
static int add_dense_bias(struct onnx_walk *x, const Onnx__NodeProto *n, const struct onnx_const *c,
			  size_t input, double beta)
{
	uint64_t out = x->s.c;
	double *b;

	if (c->count != 1 && c->count != out)
		return onnx_fail(&x->e, n,
				 "input %zu '%s' has %llu values; a bias of 1 or %llu "
				 "values is supported (not one per batch row)",
				 input, c->name, (unsigned long long)c->count,
				 (unsigned long long)out);
	if (c->count == out && c->ndim >= 1 && (uint64_t)c->dims[c->ndim - 1] != out)
		return onnx_fail(&x->e, n, "input %zu '%s': its last dimension must be %llu", input,
				 c->name, (unsigned long long)out);
	b = malloc(out * sizeof(double));
	if (!b)
		return onnx_nomem(x);
	for (uint64_t o = 0; o < out; o++) {
		double v = c->data[c->count == 1 ? 0 : o];

		b[o] = beta == 1.0 ? v : beta * v;
	}
	x->imp->ic.layers[x->imp->ic.n_layers - 1].bias = true;
	return onnx_array_add(x, "bias", 1, (uint64_t[]){out}, b);
}

static int op_gemm(struct onnx_walk *x, const Onnx__NodeProto *n)
{
	static const char *const known[] = {"alpha", "beta", "transA", "transB", "broadcast", NULL};
	const struct onnx_const *B, *C = NULL;
	int64_t ta, tb;
	double alpha, beta;
	uint64_t in = cur_elems(x), out;
	int ret;

	ret = onnx_attrs_known(&x->e, n, known);
	if (!ret)
		ret = need_vector(x, n);
	if (!ret)
		ret = onnx_attr_int(&x->e, n, "transA", 0, &ta);
	if (!ret)
		ret = onnx_attr_int(&x->e, n, "transB", 0, &tb);
	if (!ret)
		ret = onnx_attr_float(&x->e, n, "alpha", 1.0, &alpha);
	if (!ret)
		ret = onnx_attr_float(&x->e, n, "beta", 1.0, &beta);
	if (ret)
		return ret;
	if (ta)
		return onnx_fail(&x->e, n,
				 "attribute 'transA' = %lld: input 0 is the batch of "
				 "data and cannot be transposed",
				 (long long)ta);
	B = onnx_input_const(x, n, 1, "B");
	if (!B)
		return -EINVAL;
	if (B->ndim != 2 || (uint64_t)B->dims[tb ? 1 : 0] != in || B->dims[tb ? 0 : 1] < 1)
		return onnx_fail(&x->e, n, "input 1 (B) '%s' must be %s with K = %llu", B->name,
				 tb ? "(N, K)" : "(K, N)", (unsigned long long)in);
	if (n->n_input > 2 && *n->input[2]) {
		C = onnx_input_const(x, n, 2, "C");
		if (!C)
			return -EINVAL;
	}
	out = (uint64_t)B->dims[tb ? 0 : 1];
	ret = add_dense(x, n, B->data, tb != 0, out, alpha);
	if (!ret && C)
		ret = add_dense_bias(x, n, C, 2, beta);
	return ret;
}

static int op_matmul(struct onnx_walk *x, const Onnx__NodeProto *n)
{
	const struct onnx_const *B;
	uint64_t in = cur_elems(x);
	int ret;

	ret = onnx_attrs_known(&x->e, n, (const char *const[]){NULL});
	if (!ret)
		ret = need_vector(x, n);
	if (ret)
		return ret;
	B = onnx_input_const(x, n, 1, "B");
	if (!B)
		return -EINVAL;
	if (B->ndim != 2 || (uint64_t)B->dims[0] != in || B->dims[1] < 1)
		return onnx_fail(&x->e, n, "input 1 (B) '%s' must be (K, N) with K = %llu", B->name,
				 (unsigned long long)in);
	return add_dense(x, n, B->data, false, (uint64_t)B->dims[1], 1.0);
}

/* Add of a constant: the bias of the dense or conv layer just before, if it has none. */
static int op_add(struct onnx_walk *x, const Onnx__NodeProto *n)
{
	struct onnx_import *imp = x->imp;
	struct model_ic_layer *L = imp->ic.n_layers ? &imp->ic.layers[imp->ic.n_layers - 1] : NULL;
	const struct onnx_const *c;

	c = onnx_input_const(x, n, 1, "B");
	if (!c)
		return -EINVAL;
	if (!L || L->bias || (L->type != MODEL_SRC_DENSE && L->type != MODEL_SRC_CONV))
		return onnx_fail(&x->e, n,
				 "only an Add right after a MatMul, Gemm or Conv without "
				 "bias is supported (as its bias)");
	if (L->type == MODEL_SRC_DENSE)
		return add_dense_bias(x, n, c, 1, 1.0);
	if (c->count != x->s.c ||
	    !((c->ndim == 3 && c->dims[1] == 1 && c->dims[2] == 1) ||
	      (c->ndim == 4 && c->dims[0] == 1 && c->dims[2] == 1 && c->dims[3] == 1)))
		return onnx_fail(&x->e, n, "input 1 '%s' must be a per-channel bias (%u,1,1)",
				 c->name, x->s.c);
	L->bias = true;
	return onnx_array_copy(x, "bias", 1, (uint64_t[]){x->s.c}, c->data, c->count, 1.0);
}

static int op_lrn(struct onnx_walk *x, const Onnx__NodeProto *n)
{
	static const char *const known[] = {"alpha", "beta", "bias", "size", NULL};
	struct model_ic_layer *L;
	double alpha, beta, bias;
	int64_t size;
	int ret;

	ret = onnx_attrs_known(&x->e, n, known);
	if (!ret)
		ret = need_image(x, n);
	if (!ret)
		ret = onnx_attr_int(&x->e, n, "size", 0, &size);
	if (!ret)
		ret = onnx_attr_float(&x->e, n, "alpha", 1e-4, &alpha);
	if (!ret)
		ret = onnx_attr_float(&x->e, n, "beta", 0.75, &beta);
	if (!ret)
		ret = onnx_attr_float(&x->e, n, "bias", 1.0, &bias);
	if (ret)
		return ret;
	if (size < 1 || !(size & 1) || size > 65535)
		return onnx_fail(&x->e, n,
				 "attribute 'size' = %lld: an odd size is supported "
				 "(an even one has an asymmetric window)",
				 (long long)size);
	L = onnx_layer_add(x, n, MODEL_SRC_LRN);
	if (!L)
		return onnx_nomem(x);
	L->lrn_size = (uint32_t)size;
	L->lrn_alpha = alpha;
	L->lrn_beta = beta;
	L->lrn_k = bias;
	return 0;
}

static int add_flatten(struct onnx_walk *x, const Onnx__NodeProto *n)
{
	if (!onnx_layer_add(x, n, MODEL_SRC_FLATTEN))
		return onnx_nomem(x);
	set_flat(x, (uint32_t)cur_elems(x));
	return 0;
}

static int op_flatten(struct onnx_walk *x, const Onnx__NodeProto *n)
{
	int64_t axis;
	int ret = onnx_attrs_known(&x->e, n, (const char *const[]){"axis", NULL});

	if (!ret)
		ret = onnx_attr_int(&x->e, n, "axis", 1, &axis);
	if (ret)
		return ret;
	if (axis != 1 && axis != -(int64_t)x->rank)
		return onnx_fail(
		    &x->e, n,
		    "attribute 'axis' = %lld: only a flatten after the batch dimension "
		    "(axis 1 or %d) is supported",
		    (long long)axis, -(int)x->rank);
	return add_flatten(x, n);
}

static int op_reshape(struct onnx_walk *x, const Onnx__NodeProto *n)
{
	const struct onnx_const *sh;
	int64_t allowzero;
	double n0, n1;
	bool batch_ok;
	int ret = onnx_attrs_known(&x->e, n, (const char *const[]){"allowzero", NULL});

	if (!ret)
		ret = onnx_attr_int(&x->e, n, "allowzero", 0, &allowzero);
	if (ret)
		return ret;
	sh = onnx_input_const(x, n, 1, "shape");
	if (!sh)
		return -EINVAL;
	if (sh->count != 2)
		return onnx_fail(&x->e, n,
				 "input 1 (shape) '%s' has %llu values: only a reshape to "
				 "(batch, n) is supported",
				 sh->name, (unsigned long long)sh->count);
	n0 = sh->data[0];
	n1 = sh->data[1];
	batch_ok = n0 == -1 || (n0 == 0 && !allowzero) || (x->batch > 0 && n0 == (double)x->batch);
	if (!batch_ok || !(n1 == -1 || n1 == (double)cur_elems(x)) || (n0 == -1 && n1 == -1))
		return onnx_fail(&x->e, n,
				 "input 1 (shape) '%s' = (%g, %g): only a reshape to (batch, %llu) "
				 "is supported",
				 sh->name, n0, n1, (unsigned long long)cur_elems(x));
	return add_flatten(x, n);
}

static int add_sign(struct onnx_walk *x, const Onnx__NodeProto *n, uint32_t type)
{
	if (!onnx_layer_add(x, n, type))
		return onnx_nomem(x);
	if (type == MODEL_SRC_SIGN3)
		x->imp->extended = true;
	return 0;
}

static int op_bipolar(struct onnx_walk *x, const Onnx__NodeProto *n)
{
	const struct onnx_const *sc = onnx_input_const(x, n, 1, "scale");

	if (!sc)
		return -EINVAL;
	if (!onnx_const_all(sc, 1.0))
		return onnx_fail(&x->e, n,
				 "input 1 (scale) '%s': only scale 1 is supported on "
				 "activations",
				 sc->name);
	return add_sign(x, n, MODEL_SRC_SIGN);
}

/* Does node n take `v` as input 0 and a constant equal to `val` everywhere as input 1 (either
 * order when commutative)? */
static bool takes_const(const struct onnx_walk *x, const Onnx__NodeProto *n, const char *v,
			double val, bool commutative)
{
	const struct onnx_const *c;

	if (n->n_input != 2)
		return false;
	if (!strcmp(n->input[0], v))
		c = onnx_const_find(x, n->input[1]);
	else if (commutative && !strcmp(n->input[1], v))
		c = onnx_const_find(x, n->input[0]);
	else
		return false;
	return c && onnx_const_all(c, val);
}

/* x >= 0 -> +1 else -1 spelled with GreaterOrEqual: the number of nodes it spans, from i. */
static int match_binarizer(struct onnx_walk *x, size_t i)
{
	const Onnx__GraphProto *g = x->g;
	const Onnx__NodeProto *ge = g->node[i], *a, *b, *c;
	size_t j = i + 1;

	if (!takes_const(x, ge, x->cur, 0.0, false) || ge->n_output != 1)
		return 0;
	while (j < g->n_node && x->folded[j])
		j++;
	if (j >= g->n_node)
		return 0;
	a = g->node[j];
	if (!onnx_has_output(a))
		return 0;
	if (onnx_op_is(a, "Where") && a->n_input == 3 && !strcmp(a->input[0], ge->output[0]) &&
	    onnx_const_find(x, a->input[1]) &&
	    onnx_const_all(onnx_const_find(x, a->input[1]), 1.0) &&
	    onnx_const_find(x, a->input[2]) &&
	    onnx_const_all(onnx_const_find(x, a->input[2]), -1.0))
		return (int)(j - i + 1);
	if (!onnx_op_is(a, "Cast") || a->n_input != 1 || strcmp(a->input[0], ge->output[0]))
		return 0;
	for (j++; j < g->n_node && x->folded[j]; j++)
		;
	if (j >= g->n_node)
		return 0;
	b = g->node[j];
	if (!onnx_has_output(b) || !onnx_op_is(b, "Mul") ||
	    !takes_const(x, b, a->output[0], 2.0, true))
		return 0;
	for (j++; j < g->n_node && x->folded[j]; j++)
		;
	if (j >= g->n_node)
		return 0;
	c = g->node[j];
	if (onnx_has_output(c) &&
	    ((onnx_op_is(c, "Sub") && takes_const(x, c, b->output[0], 1.0, false)) ||
	     (onnx_op_is(c, "Add") && takes_const(x, c, b->output[0], -1.0, true))))
		return (int)(j - i + 1);
	return 0;
}

static int op_dropout(struct onnx_walk *x, const Onnx__NodeProto *n)
{
	const struct onnx_const *tm;

	if (n->n_output > 1 && *n->output[1])
		return onnx_fail(&x->e, n, "output 1 (mask) '%s' is not supported", n->output[1]);
	if (n->n_input > 2 && *n->input[2]) {
		tm = onnx_input_const(x, n, 2, "training_mode");
		if (!tm)
			return -EINVAL;
		if (!onnx_const_all(tm, 0.0))
			return onnx_fail(&x->e, n,
					 "input 2 (training_mode) is true: inference only");
	}
	return 0;
}

static int op_cast(struct onnx_walk *x, const Onnx__NodeProto *n)
{
	int64_t to;
	int ret = onnx_attr_int(&x->e, n, "to", 0, &to);

	if (ret)
		return ret;
	if (to != ONNX__TENSOR_PROTO__DATA_TYPE__FLOAT &&
	    to != ONNX__TENSOR_PROTO__DATA_TYPE__DOUBLE)
		return onnx_fail(&x->e, n,
				 "attribute 'to' = %lld: only a Cast to float is supported",
				 (long long)to);
	x->u8_cast = false;
	return 0;
}

static int op_relu(struct onnx_walk *x, const Onnx__NodeProto *n)
{
	int ret = onnx_attrs_known(&x->e, n, (const char *const[]){NULL});

	if (ret)
		return ret;
	return onnx_layer_add(x, n, MODEL_SRC_RELU) ? 0 : onnx_nomem(x);
}

static int op_sign(struct onnx_walk *x, const Onnx__NodeProto *n)
{
	int ret = onnx_attrs_known(&x->e, n, (const char *const[]){NULL});

	return ret ? ret : add_sign(x, n, MODEL_SRC_SIGN3);
}

static int op_identity(struct onnx_walk *x, const Onnx__NodeProto *n)
{
	(void)x;
	(void)n;
	return 0;
}

/* The operators of the default domain that map one node to layers. */
static const struct {
	const char *name;
	int (*fn)(struct onnx_walk *x, const Onnx__NodeProto *n);
} chain_ops[] = {
    {"Conv", op_conv},	     {"MaxPool", op_maxpool}, {"BatchNormalization", op_batchnorm},
    {"Gemm", op_gemm},	     {"MatMul", op_matmul},   {"Add", op_add},
    {"LRN", op_lrn},	     {"Flatten", op_flatten}, {"Reshape", op_reshape},
    {"Relu", op_relu},	     {"Sign", op_sign},	      {"Identity", op_identity},
    {"Dropout", op_dropout}, {"Cast", op_cast},
};

/* One node of the chain (and the nodes of a pattern after it): *span nodes consumed. */
int onnx_chain_node(struct onnx_walk *x, size_t i, size_t *span)
{
	const Onnx__NodeProto *n = x->g->node[i];
	const char *op = n->op_type ? n->op_type : "";
	int m;

	*span = 1;
	if (x->u8_cast && !onnx_op_is(n, "Cast"))
		return onnx_fail(&x->e, n, "the uint8 input '%s' must first be Cast to float",
				 x->cur);
	if (onnx_qonnx_domain(n->domain) && !strcmp(op, "BipolarQuant"))
		return op_bipolar(x, n);
	if (!onnx_default_domain(n->domain))
		return onnx_fail(&x->e, n, "domain '%s' is not supported", n->domain);
	if (!strcmp(op, "GreaterOrEqual")) {
		m = match_binarizer(x, i);
		if (!m)
			return onnx_fail(&x->e, n,
					 "only Where(GreaterOrEqual(x, 0), 1, -1) or "
					 "Mul(Cast(GreaterOrEqual(x, 0)), 2) - 1 is supported");
		*span = (size_t)m;
		return add_sign(x, n, MODEL_SRC_SIGN);
	}
	for (size_t k = 0; k < sizeof(chain_ops) / sizeof(chain_ops[0]); k++)
		if (!strcmp(op, chain_ops[k].name))
			return chain_ops[k].fn(x, n);
	return onnx_fail(&x->e, n, "operator not supported");
}
