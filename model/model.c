/* SPDX-License-Identifier: MIT */
#include <errno.h>
#include <fcntl.h>
#include <math.h>
#include <stdarg.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <unistd.h>

#include "model/crc32c.h"
#include "model/model.h"
#include "model/model_file.h"
#include "protocol/proto_hdr.h"

static const char *const fmt_names[] = {
    [MODEL_FMT_U8] = "u8",
    [MODEL_FMT_F32] = "f32",
    [MODEL_FMT_F64] = "f64",
    [MODEL_FMT_BITS] = "bits",
};

static const char *const op_names[MODEL_OP__COUNT] = {
    [MODEL_OP_CAST] = "cast",
    [MODEL_OP_FLATTEN] = "flatten",
    [MODEL_OP_DENSE] = "dense",
    [MODEL_OP_CONV] = "conv",
    [MODEL_OP_BDENSE] = "bdense",
    [MODEL_OP_BDENSE_U8] = "bdense_u8",
    [MODEL_OP_BCONV] = "bconv",
    [MODEL_OP_BIAS] = "bias",
    [MODEL_OP_BATCHNORM] = "batchnorm",
    [MODEL_OP_THRESHOLD] = "threshold",
    [MODEL_OP_SIGN] = "sign",
    [MODEL_OP_UNPACK] = "unpack",
    [MODEL_OP_RELU] = "relu",
    [MODEL_OP_MAXPOOL] = "maxpool",
    [MODEL_OP_MAXPOOL_BITS] = "maxpool_bits",
    [MODEL_OP_LRN] = "lrn",
    [MODEL_OP_PAD] = "pad",
    [MODEL_OP_SIGN3] = "sign3",
};

static const char *const src_names[] = {
    [MODEL_SRC_DENSE] = "dense",     [MODEL_SRC_CONV] = "conv", [MODEL_SRC_BATCHNORM] = "batchnorm",
    [MODEL_SRC_SIGN] = "sign",	     [MODEL_SRC_RELU] = "relu", [MODEL_SRC_MAXPOOL] = "maxpool",
    [MODEL_SRC_FLATTEN] = "flatten", [MODEL_SRC_LRN] = "lrn",	[MODEL_SRC_PAD] = "pad",
    [MODEL_SRC_SIGN3] = "sign3",
};

const char *model_fmt_name(uint32_t fmt)
{
	return fmt < sizeof(fmt_names) / sizeof(fmt_names[0]) ? fmt_names[fmt] : "unknown";
}

unsigned model_fmt_wire(uint32_t fmt)
{
	switch (fmt) {
	case MODEL_FMT_U8:
		return PROTO_FMT_U8;
	case MODEL_FMT_F32:
		return PROTO_FMT_F32;
	case MODEL_FMT_BITS:
		return PROTO_FMT_BITS;
	default:
		return PROTO_FMT_F64;
	}
}

const char *model_op_name(uint32_t op)
{
	return op >= 1 && op < MODEL_OP__COUNT ? op_names[op] : "unknown";
}

const char *model_src_type_name(uint32_t type)
{
	return type >= 1 && type < sizeof(src_names) / sizeof(src_names[0]) ? src_names[type]
									    : "unknown";
}

/* Packed-sign rows of a layer's weight blob: `rows` rows of `len` bits, model_words(len) each. */
static bool layer_packed_rows(const struct model_layer *l, uint64_t *rows, uint64_t *len)
{
	uint64_t k2 = (uint64_t)l->kernel * l->kernel;

	switch (l->op) {
	case MODEL_OP_DENSE:
		if (!(l->flags & MODEL_LF_BINW))
			return false;
		*rows = l->out.c;
		*len = model_shape_elems(&l->in);
		return true;
	case MODEL_OP_CONV:
		if (!(l->flags & MODEL_LF_BINW))
			return false;
		*rows = l->out.c;
		*len = l->in.c * k2;
		return true;
	case MODEL_OP_BDENSE:
	case MODEL_OP_BDENSE_U8:
		*rows = l->out.c;
		*len = model_shape_elems(&l->in);
		return true;
	case MODEL_OP_BCONV:
		*rows = l->out.c * k2;
		*len = l->in.c;
		return true;
	}
	return false;
}

uint64_t model_layer_blob_size(const struct model_layer *l, unsigned int i)
{
	uint64_t rows, len, n = model_shape_elems(&l->in), k2 = (uint64_t)l->kernel * l->kernel;
	bool thr = l->flags & MODEL_LF_THRESH;

	switch (l->op) {
	case MODEL_OP_DENSE:
	case MODEL_OP_CONV:
		if (i == 0 && layer_packed_rows(l, &rows, &len))
			return rows * model_words(len) * 8;
		if (i == 0)
			return (uint64_t)l->out.c * (l->op == MODEL_OP_DENSE ? n : l->in.c * k2) *
			       8;
		return i == 1 && (l->flags & MODEL_LF_BIAS) ? (uint64_t)l->out.c * 8 : 0;
	case MODEL_OP_BDENSE:
	case MODEL_OP_BDENSE_U8:
	case MODEL_OP_BCONV:
		if (i == 0 && layer_packed_rows(l, &rows, &len))
			return rows * model_words(len) * 8;
		if (!thr)
			return 0;
		return (uint64_t)l->out.c * (i == 1 ? 4 : 1);
	case MODEL_OP_BIAS:
		return i == 0 ? (uint64_t)l->in.c * 8 : 0;
	case MODEL_OP_BATCHNORM:
		return i == 0 ? (uint64_t)l->in.c * 8 * 4 : 0;
	case MODEL_OP_THRESHOLD:
		return i == 0 ? (uint64_t)l->in.c * 4 : i == 1 ? l->in.c : 0;
	case MODEL_OP_MAXPOOL_BITS:
		return i == 0 && (l->flags & MODEL_LF_ANDPOOL) ? (uint64_t)model_words(l->in.c) * 8
							       : 0;
	case MODEL_OP_PAD:
		return i == 0 ? 4 * sizeof(uint32_t) : 0;
	}
	return 0;
}

/* Validation context: every message starts with the file (label), then the op or record. */
struct mload {
	const char *label;
	char *err;
	size_t errlen;
	const uint8_t *base;
	uint64_t size;
	char where[64];
};

__attribute__((format(printf, 2, 3))) static int ml_fail(struct mload *ml, const char *fmt, ...)
{
	char msg[256];
	va_list ap;

	va_start(ap, fmt);
	vsnprintf(msg, sizeof(msg), fmt, ap);
	va_end(ap);
	snprintf(ml->err, ml->errlen, "%s: %s%s", ml->label, ml->where, msg);
	return -EINVAL;
}

static int check_shape(struct mload *ml, const char *what, const struct model_shape *s)
{
	if (s->fmt > MODEL_FMT_BITS)
		return ml_fail(ml, "%s fmt %u unknown", what, s->fmt);
	if (!s->c || !s->h || !s->w)
		return ml_fail(ml, "%s shape (%u,%u,%u) has a zero dimension", what, s->c, s->h,
			       s->w);
	if (model_shape_elems(s) > MODEL_FILE_MAX_ELEMS)
		return ml_fail(ml, "%s shape (%u,%u,%u) over %llu elements", what, s->c, s->h, s->w,
			       (unsigned long long)MODEL_FILE_MAX_ELEMS);
	return 0;
}

static bool shape_eq(const struct model_shape *a, const struct model_shape *b)
{
	return a->fmt == b->fmt && a->c == b->c && a->h == b->h && a->w == b->w;
}

static int check_src(struct mload *ml, const struct model_src_layer *s)
{
	struct model_shape sh = {MODEL_FMT_F64, s->c, s->h, s->w};
	bool weighted = s->type == MODEL_SRC_DENSE || s->type == MODEL_SRC_CONV;
	int ret;

	if (s->type < MODEL_SRC_DENSE || s->type > MODEL_SRC_SIGN3)
		return ml_fail(ml, "type %u unknown", s->type);
	if (s->flags & ~(weighted ? MODEL_SF_BIAS | MODEL_SF_BINW : 0u))
		return ml_fail(ml, "flags 0x%x invalid for %s", s->flags,
			       model_src_type_name(s->type));
	ret = check_shape(ml, "output", &sh);
	if (ret)
		return ret;
	switch (s->type) {
	case MODEL_SRC_CONV:
	case MODEL_SRC_MAXPOOL:
		if (!s->kernel || !s->stride)
			return ml_fail(ml, "kernel %u stride %u (need >= 1)", s->kernel, s->stride);
		if (s->pad >= s->kernel || (s->type == MODEL_SRC_MAXPOOL && s->pad))
			return ml_fail(ml, "pad %u invalid for kernel %u", s->pad, s->kernel);
		return 0;
	case MODEL_SRC_LRN:
		if (!(s->kernel & 1) || s->stride || s->pad)
			return ml_fail(ml, "kernel (lrn size) %u stride %u pad %u invalid",
				       s->kernel, s->stride, s->pad);
		return 0;
	}
	if (s->kernel || s->stride || s->pad)
		return ml_fail(ml, "kernel %u stride %u pad %u must be 0", s->kernel, s->stride,
			       s->pad);
	return 0;
}

/* Input formats an op accepts (bit per enum model_fmt) and the flags it may carry. */
static const struct {
	uint8_t in_fmts;
	uint16_t flags;
} op_rules[MODEL_OP__COUNT] = {
    [MODEL_OP_CAST] = {1u << MODEL_FMT_U8 | 1u << MODEL_FMT_F32, 0},
    [MODEL_OP_FLATTEN] = {1u << MODEL_FMT_U8 | 1u << MODEL_FMT_F64 | 1u << MODEL_FMT_BITS, 0},
    [MODEL_OP_DENSE] = {1u << MODEL_FMT_F64, MODEL_LF_BIAS | MODEL_LF_BINW},
    [MODEL_OP_CONV] = {1u << MODEL_FMT_F64, MODEL_LF_BIAS | MODEL_LF_BINW},
    [MODEL_OP_BDENSE] = {1u << MODEL_FMT_BITS, MODEL_LF_THRESH},
    [MODEL_OP_BDENSE_U8] = {1u << MODEL_FMT_U8, MODEL_LF_THRESH},
    [MODEL_OP_BCONV] = {1u << MODEL_FMT_BITS, MODEL_LF_THRESH},
    [MODEL_OP_BIAS] = {1u << MODEL_FMT_F64, 0},
    [MODEL_OP_BATCHNORM] = {1u << MODEL_FMT_F64, 0},
    [MODEL_OP_THRESHOLD] = {1u << MODEL_FMT_F64, 0},
    [MODEL_OP_SIGN] = {1u << MODEL_FMT_F64, 0},
    [MODEL_OP_UNPACK] = {1u << MODEL_FMT_BITS, 0},
    [MODEL_OP_RELU] = {1u << MODEL_FMT_F64, 0},
    [MODEL_OP_MAXPOOL] = {1u << MODEL_FMT_F64, 0},
    [MODEL_OP_MAXPOOL_BITS] = {1u << MODEL_FMT_BITS, MODEL_LF_ANDPOOL},
    [MODEL_OP_LRN] = {1u << MODEL_FMT_F64, 0},
    [MODEL_OP_PAD] = {1u << MODEL_FMT_F64, MODEL_LF_PADNEG},
    [MODEL_OP_SIGN3] = {1u << MODEL_FMT_F64, 0},
};

/* Window geometry of conv/pool ops: fills the expected output h, w. */
static int check_window(struct mload *ml, const struct model_layer *l, bool padded,
			struct model_shape *out)
{
	uint64_t ph = (uint64_t)l->in.h + 2ull * l->pad, pw = (uint64_t)l->in.w + 2ull * l->pad;

	if (!l->kernel || !l->stride)
		return ml_fail(ml, "kernel %u stride %u (need >= 1)", l->kernel, l->stride);
	if (padded ? l->pad >= l->kernel : l->pad != 0)
		return ml_fail(ml, "pad %u invalid for kernel %u", l->pad, l->kernel);
	if (l->kernel > ph || l->kernel > pw)
		return ml_fail(ml, "kernel %u larger than the (padded) input %llux%llu", l->kernel,
			       (unsigned long long)ph, (unsigned long long)pw);
	if (padded && (uint64_t)l->in.c * l->kernel * l->kernel > MODEL_FILE_MAX_ELEMS)
		return ml_fail(ml, "kernel %u: %u x %u x %u taps per output, too many", l->kernel,
			       l->in.c, l->kernel, l->kernel);
	out->h = (uint32_t)((ph - l->kernel) / l->stride + 1);
	out->w = (uint32_t)((pw - l->kernel) / l->stride + 1);
	return 0;
}

/* The output shape an op must have, from its input, flags and parameters. */
static int expect_out(struct mload *ml, const struct model_layer *l, struct model_shape *out)
{
	bool flat_in = l->in.h == 1 && l->in.w == 1;
	uint64_t n = model_shape_elems(&l->in);

	*out = l->in;
	switch (l->op) {
	case MODEL_OP_CAST:
	case MODEL_OP_BIAS:
	case MODEL_OP_BATCHNORM:
	case MODEL_OP_UNPACK:
	case MODEL_OP_RELU:
	case MODEL_OP_LRN:
	case MODEL_OP_SIGN3:
		out->fmt = MODEL_FMT_F64;
		return 0;
	case MODEL_OP_PAD: /* the padding itself is checked against blob0 in check_contents */
		if (l->out.h >= l->in.h && l->out.w >= l->in.w) {
			out->h = l->out.h;
			out->w = l->out.w;
		}
		out->fmt = MODEL_FMT_F64;
		return 0;
	case MODEL_OP_THRESHOLD:
	case MODEL_OP_SIGN:
		out->fmt = MODEL_FMT_BITS;
		return 0;
	case MODEL_OP_FLATTEN:
		*out = (struct model_shape){l->in.fmt, (uint32_t)n, 1, 1};
		return 0;
	case MODEL_OP_DENSE:
	case MODEL_OP_BDENSE:
	case MODEL_OP_BDENSE_U8:
		if (!flat_in)
			return ml_fail(ml, "input (%u,%u,%u) is not a flat vector", l->in.c,
				       l->in.h, l->in.w);
		if (l->op == MODEL_OP_BDENSE_U8 && n * 255 > INT32_MAX)
			return ml_fail(ml, "%llu u8 inputs may overflow the int32 dot",
				       (unsigned long long)n);
		*out = (struct model_shape){MODEL_FMT_F64, l->out.c, 1, 1};
		break;
	case MODEL_OP_CONV:
	case MODEL_OP_BCONV:
		out->fmt = MODEL_FMT_F64;
		out->c = l->out.c;
		if (check_window(ml, l, true, out))
			return -EINVAL;
		break;
	case MODEL_OP_MAXPOOL:
	case MODEL_OP_MAXPOOL_BITS:
		return check_window(ml, l, false, out);
	}
	if (l->flags & MODEL_LF_THRESH)
		out->fmt = MODEL_FMT_BITS;
	return 0;
}

static int check_unused_params(struct mload *ml, const struct model_layer *l)
{
	bool window = l->op == MODEL_OP_CONV || l->op == MODEL_OP_BCONV ||
		      l->op == MODEL_OP_MAXPOOL || l->op == MODEL_OP_MAXPOOL_BITS;

	if (!window && (l->kernel || l->stride || l->pad))
		return ml_fail(ml, "kernel %u stride %u pad %u must be 0", l->kernel, l->stride,
			       l->pad);
	if (l->op == MODEL_OP_LRN) {
		if (!(l->lrn_size & 1))
			return ml_fail(ml, "lrn_size %u must be odd", l->lrn_size);
		if (!isfinite(l->lrn_alpha) || !isfinite(l->lrn_beta) || !isfinite(l->lrn_k))
			return ml_fail(ml, "lrn alpha %g beta %g k %g must be finite", l->lrn_alpha,
				       l->lrn_beta, l->lrn_k);
		return 0;
	}
	if (l->lrn_size || l->lrn_alpha != 0 || l->lrn_beta != 0 || l->lrn_k != 0)
		return ml_fail(ml, "lrn_size/alpha/beta/k must be 0");
	return 0;
}

/* Doubles [first, first + n) of blob b. */
static int check_finite(struct mload *ml, const struct model_layer *l, unsigned int b,
			uint64_t first, uint64_t n, bool positive)
{
	const double *v = l->blob[b];

	for (uint64_t i = first; i < first + n; i++)
		if (!isfinite(v[i]) || (positive && !(v[i] > 0)))
			return ml_fail(ml, "blob%u[%llu] = %g, must be finite%s", b,
				       (unsigned long long)i, v[i], positive ? " and > 0" : "");
	return 0;
}

static int check_flips(struct mload *ml, unsigned int b, const uint8_t *f, uint64_t n)
{
	for (uint64_t i = 0; i < n; i++)
		if (f[i] > 1)
			return ml_fail(ml, "blob%u flip[%llu] = %u, must be 0 or 1", b,
				       (unsigned long long)i, f[i]);
	return 0;
}

static int check_contents(struct mload *ml, const struct model_layer *l)
{
	uint64_t rows, len, c = l->in.c;
	int ret;

	if (layer_packed_rows(l, &rows, &len) && len % 64) {
		const uint64_t *w = l->blob[0];
		uint32_t wpr = model_words(len);
		uint64_t mask = ~0ull << (len % 64);

		for (uint64_t r = 0; r < rows; r++)
			if (w[r * wpr + wpr - 1] & mask)
				return ml_fail(ml, "blob0 row %llu has tail bits set beyond %llu",
					       (unsigned long long)r, (unsigned long long)len);
	}
	switch (l->op) {
	case MODEL_OP_DENSE:
	case MODEL_OP_CONV:
		if (!(l->flags & MODEL_LF_BINW)) {
			ret = check_finite(ml, l, 0, 0, l->blob_size[0] / 8, false);
			if (ret)
				return ret;
		}
		if (l->flags & MODEL_LF_BIAS)
			return check_finite(ml, l, 1, 0, l->out.c, false);
		return 0;
	case MODEL_OP_BDENSE:
	case MODEL_OP_BDENSE_U8:
	case MODEL_OP_BCONV:
		if (l->flags & MODEL_LF_THRESH)
			return check_flips(ml, 2, l->blob[2], l->out.c);
		return 0;
	case MODEL_OP_BIAS:
		return check_finite(ml, l, 0, 0, c, false);
	case MODEL_OP_BATCHNORM:
		ret = check_finite(ml, l, 0, 0, c, false);
		if (!ret)
			ret = check_finite(ml, l, 0, c, c, true);
		if (!ret)
			ret = check_finite(ml, l, 0, 2 * c, 2 * c, false);
		return ret;
	case MODEL_OP_THRESHOLD:
		return check_flips(ml, 1, l->blob[1], c);
	case MODEL_OP_MAXPOOL_BITS:
		if ((l->flags & MODEL_LF_ANDPOOL) && c % 64 &&
		    ((const uint64_t *)l->blob[0])[model_words(c) - 1] >> (c % 64))
			return ml_fail(ml, "blob0 and-pool mask has bits set beyond channel %llu",
				       (unsigned long long)c);
		return 0;
	case MODEL_OP_PAD: {
		const uint32_t *p = l->blob[0];

		if ((uint64_t)l->in.h + p[0] + p[2] != l->out.h ||
		    (uint64_t)l->in.w + p[1] + p[3] != l->out.w)
			return ml_fail(ml, "blob0 pads (%u,%u,%u,%u) do not take %ux%u to %ux%u",
				       p[0], p[1], p[2], p[3], l->in.h, l->in.w, l->out.h,
				       l->out.w);
		return 0;
	}
	}
	return 0;
}

static int check_blobs(struct mload *ml, const struct model_file_op *r, struct model_layer *l,
		       uint64_t data_start)
{
	for (unsigned int i = 0; i < MODEL_NBLOB; i++) {
		uint64_t want = model_layer_blob_size(l, i), off = r->blob[i].offset;
		uint64_t sz = r->blob[i].size;

		if (sz != want)
			return ml_fail(ml, "blob%u size %llu, expected %llu", i,
				       (unsigned long long)sz, (unsigned long long)want);
		if (!want) {
			if (off)
				return ml_fail(ml, "blob%u offset %llu for an unused blob", i,
					       (unsigned long long)off);
			continue;
		}
		if (off % MODEL_FILE_ALIGN)
			return ml_fail(ml, "blob%u offset %llu not %d-aligned", i,
				       (unsigned long long)off, MODEL_FILE_ALIGN);
		if (off < data_start || off > ml->size || sz > ml->size - off)
			return ml_fail(ml, "blob%u [%llu, +%llu) outside the data [%llu, %llu)", i,
				       (unsigned long long)off, (unsigned long long)sz,
				       (unsigned long long)data_start,
				       (unsigned long long)ml->size);
		l->blob[i] = ml->base + off;
		l->blob_size[i] = sz;
	}
	return 0;
}

static int expand_binw(struct mload *ml, struct model_layer *l)
{
	uint64_t rows, len;
	const uint64_t *w = l->blob[0];
	uint32_t wpr;

	if (!(l->flags & MODEL_LF_BINW) || !layer_packed_rows(l, &rows, &len))
		return 0;
	wpr = model_words(len);
	l->wexp = malloc(rows * len * sizeof(double));
	if (!l->wexp)
		return ml_fail(ml, "out of memory expanding %llu binary weights",
			       (unsigned long long)(rows * len));
	for (uint64_t r = 0; r < rows; r++)
		for (uint64_t j = 0; j < len; j++)
			l->wexp[r * len + j] = (w[r * wpr + j / 64] >> (j % 64)) & 1 ? 1.0 : -1.0;
	return 0;
}

static int load_op(struct mload *ml, const struct model *m, uint32_t idx,
		   const struct model_shape *prev, uint64_t op_offset, uint64_t data_start,
		   struct model_layer *l)
{
	struct model_file_op r;
	struct model_shape want;
	int ret;

	memcpy(&r, ml->base + op_offset + (uint64_t)idx * MODEL_FILE_OP_SIZE, sizeof(r));
	*l = (struct model_layer){
	    .op = r.op,
	    .flags = r.flags,
	    .src_first = r.src_first,
	    .src_count = r.src_count,
	    .in = {r.in_fmt, r.in_c, r.in_h, r.in_w},
	    .out = {r.out_fmt, r.out_c, r.out_h, r.out_w},
	    .kernel = r.kernel,
	    .stride = r.stride,
	    .pad = r.pad,
	    .lrn_size = r.lrn_size,
	    .lrn_alpha = r.lrn_alpha,
	    .lrn_beta = r.lrn_beta,
	    .lrn_k = r.lrn_k,
	};
	snprintf(ml->where, sizeof(ml->where), "op %u (%s): ", idx, model_op_name(l->op));
	if (l->op < 1 || l->op >= MODEL_OP__COUNT)
		return ml_fail(ml, "op code %u unknown", l->op);
	if (l->flags & ~op_rules[l->op].flags)
		return ml_fail(ml, "flags 0x%x invalid for the op", l->flags);
	if ((uint32_t)l->src_first + l->src_count > m->n_src)
		return ml_fail(ml, "src_first %u + src_count %u beyond n_src %u", l->src_first,
			       l->src_count, m->n_src);
	ret = check_shape(ml, "in", &l->in);
	if (!ret)
		ret = check_shape(ml, "out", &l->out);
	if (ret)
		return ret;
	if (!(op_rules[l->op].in_fmts & 1u << l->in.fmt))
		return ml_fail(ml, "in fmt %s invalid for the op", model_fmt_name(l->in.fmt));
	if (!shape_eq(&l->in, prev))
		return ml_fail(ml,
			       "in %s (%u,%u,%u) does not chain: previous output is %s (%u,%u,%u)",
			       model_fmt_name(l->in.fmt), l->in.c, l->in.h, l->in.w,
			       model_fmt_name(prev->fmt), prev->c, prev->h, prev->w);
	ret = check_unused_params(ml, l);
	if (!ret)
		ret = expect_out(ml, l, &want);
	if (ret)
		return ret;
	if (!shape_eq(&l->out, &want))
		return ml_fail(ml, "out %s (%u,%u,%u), expected %s (%u,%u,%u)",
			       model_fmt_name(l->out.fmt), l->out.c, l->out.h, l->out.w,
			       model_fmt_name(want.fmt), want.c, want.h, want.w);
	ret = check_blobs(ml, &r, l, data_start);
	if (!ret)
		ret = check_contents(ml, l);
	if (!ret)
		ret = expand_binw(ml, l);
	return ret;
}

void model_free(struct model *m)
{
	if (!m)
		return;
	if (m->layers)
		for (uint32_t i = 0; i < m->n_layers; i++)
			free(m->layers[i].wexp);
	free(m->layers);
	free(m->src);
	if (m->map)
		munmap(m->map, m->map_size);
	free(m);
}

static int check_header(struct mload *ml, struct model_file_header *h)
{
	uint32_t crc;
	static const uint8_t zero[4];

	if (ml->size < MODEL_FILE_HEADER_SIZE)
		return ml_fail(ml, "file size %llu, smaller than the %d-byte header",
			       (unsigned long long)ml->size, MODEL_FILE_HEADER_SIZE);
	memcpy(h, ml->base, sizeof(*h));
	if (memcmp(h->magic, MODEL_FILE_MAGIC, sizeof(h->magic)) != 0)
		return ml_fail(ml, "magic is not \"%s\": not a splitnic model file",
			       MODEL_FILE_MAGIC);
	if (h->version != MODEL_FILE_VERSION)
		return ml_fail(ml, "version %u unsupported (need %d)", h->version,
			       MODEL_FILE_VERSION);
	if (h->header_size != MODEL_FILE_HEADER_SIZE)
		return ml_fail(ml, "header_size %u, expected %d", h->header_size,
			       MODEL_FILE_HEADER_SIZE);
	if (h->file_size != ml->size)
		return ml_fail(ml, "file_size %llu in the header, but the file has %llu bytes",
			       (unsigned long long)h->file_size, (unsigned long long)ml->size);
	crc = model_crc32c(0, ml->base, 24);
	crc = model_crc32c(crc, zero, sizeof(zero));
	crc = model_crc32c(crc, ml->base + 28, ml->size - 28);
	if (crc != h->crc32c)
		return ml_fail(ml, "crc32c 0x%08x in the header, computed 0x%08x", h->crc32c, crc);
	if (h->flags)
		return ml_fail(ml, "flags 0x%x unknown (need 0)", h->flags);
	if (!h->n_src || h->n_src > MODEL_FILE_MAX_SRC)
		return ml_fail(ml, "n_src %u out of range 1..%d", h->n_src, MODEL_FILE_MAX_SRC);
	if (!h->n_ops || h->n_ops > MODEL_FILE_MAX_OPS)
		return ml_fail(ml, "n_ops %u out of range 1..%d", h->n_ops, MODEL_FILE_MAX_OPS);
	if (h->src_offset < MODEL_FILE_HEADER_SIZE || h->src_offset % 8 ||
	    h->src_offset > ml->size ||
	    (uint64_t)h->n_src * MODEL_FILE_SRC_SIZE > ml->size - h->src_offset)
		return ml_fail(ml,
			       "src_offset %llu: %u records not 8-aligned inside the file "
			       "after the header",
			       (unsigned long long)h->src_offset, h->n_src);
	if (h->op_offset % MODEL_FILE_ALIGN ||
	    h->op_offset < h->src_offset + (uint64_t)h->n_src * MODEL_FILE_SRC_SIZE ||
	    h->op_offset > ml->size ||
	    (uint64_t)h->n_ops * MODEL_FILE_OP_SIZE > ml->size - h->op_offset)
		return ml_fail(ml,
			       "op_offset %llu: %u records not %d-aligned inside the file "
			       "after the source table",
			       (unsigned long long)h->op_offset, h->n_ops, MODEL_FILE_ALIGN);
	if (h->in_fmt != MODEL_FMT_U8 && h->in_fmt != MODEL_FMT_F32)
		return ml_fail(ml, "in_fmt %u invalid (need u8 or f32)", h->in_fmt);
	if (!memchr(h->name, '\0', sizeof(h->name)))
		return ml_fail(ml, "name not NUL-terminated");
	return check_shape(ml, "input",
			   &(struct model_shape){h->in_fmt, h->in_c, h->in_h, h->in_w});
}

static struct model *model_parse(struct mload *ml)
{
	struct model_file_header h;
	struct model *m;
	struct model_shape prev;
	uint64_t data_start;

	if ((uintptr_t)ml->base % MODEL_FILE_ALIGN) {
		ml_fail(ml, "buffer not %d-byte aligned", MODEL_FILE_ALIGN);
		return NULL;
	}
	if (check_header(ml, &h))
		return NULL;
	m = calloc(1, sizeof(*m));
	if (!m)
		goto err_nomem;
	memcpy(m->name, h.name, sizeof(m->name));
	m->input = (struct model_shape){h.in_fmt, h.in_c, h.in_h, h.in_w};
	m->n_src = h.n_src;
	m->src = calloc(h.n_src, sizeof(*m->src));
	m->layers = calloc(h.n_ops, sizeof(*m->layers));
	if (!m->src || !m->layers)
		goto err_free_model;
	memcpy(m->src, ml->base + h.src_offset, (size_t)h.n_src * MODEL_FILE_SRC_SIZE);
	for (uint32_t i = 0; i < h.n_src; i++) {
		snprintf(ml->where, sizeof(ml->where), "source layer %u: ", i);
		if (check_src(ml, &m->src[i]))
			goto err_free_model;
	}
	data_start = h.op_offset + (uint64_t)h.n_ops * MODEL_FILE_OP_SIZE;
	prev = m->input;
	for (uint32_t i = 0; i < h.n_ops; i++) {
		m->n_layers = i + 1;
		if (load_op(ml, m, i, &prev, h.op_offset, data_start, &m->layers[i]))
			goto err_free_model;
		prev = m->layers[i].out;
	}
	return m;

err_free_model:
	model_free(m);
	return NULL;
err_nomem:
	ml_fail(ml, "out of memory");
	return NULL;
}

struct model *model_from_buffer(const void *buf, size_t size, const char *label, char *err,
				size_t errlen)
{
	struct mload ml = {.label = label, .err = err, .errlen = errlen, .base = buf, .size = size};

	return model_parse(&ml);
}

struct model *model_load(const char *path, char *err, size_t errlen)
{
	struct mload ml = {.label = path, .err = err, .errlen = errlen};
	struct model *m;
	struct stat st;
	void *map;
	int fd;

	fd = open(path, O_RDONLY | O_CLOEXEC);
	if (fd < 0) {
		ml_fail(&ml, "open: %s", strerror(errno));
		return NULL;
	}
	if (fstat(fd, &st) < 0) {
		ml_fail(&ml, "stat: %s", strerror(errno));
		goto out_close;
	}
	if (!S_ISREG(st.st_mode)) {
		ml_fail(&ml, "not a regular file");
		goto out_close;
	}
	if (st.st_size < MODEL_FILE_HEADER_SIZE) {
		ml_fail(&ml, "file size %lld, smaller than the %d-byte header",
			(long long)st.st_size, MODEL_FILE_HEADER_SIZE);
		goto out_close;
	}
	map = mmap(NULL, (size_t)st.st_size, PROT_READ, MAP_PRIVATE, fd, 0);
	if (map == MAP_FAILED) {
		ml_fail(&ml, "mmap: %s", strerror(errno));
		goto out_close;
	}
	close(fd);
	ml.base = map;
	ml.size = (uint64_t)st.st_size;
	m = model_parse(&ml);
	if (!m) {
		munmap(map, (size_t)st.st_size);
		return NULL;
	}
	m->map = map;
	m->map_size = (size_t)st.st_size;
	return m;

out_close:
	close(fd);
	return NULL;
}
