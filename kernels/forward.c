// SPDX-License-Identifier: MIT
/* The executor: runs a model's compiled ops over a context's preallocated buffers. */
#include <errno.h>
#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "kernels/fconv.h"
#include "kernels/frun.h"
#include "kernels/kern.h"
#include "kernels/kern_ops.h"

struct kern_ctx {
	const struct model *m;
	const struct kern_bin_ops *ops;
	uint32_t max_batch;
	uint32_t chunk;	  /* images per pass, so that a pass's activations stay in L2 */
	size_t act_bytes; /* each of the two activation buffers */
	void *act[2];
	int32_t *ibuf;	       /* integer dots of binary ops without thresholds */
	void *scratch;	       /* bit-planes or im2col columns */
	void *final;	       /* last op's output, turned into scores by kern_forward */
	struct kern_fconv *fc; /* [n_layers]: a float32 run from op i where fc[i].last */
	enum kern_precision prec;
	struct kern_frun fr; /* the float layers ending the model, in float32 (certified) */
	uint8_t *recheck;    /* [max_batch]: images the float32 run could not certify */
	void *rin, *rout;    /* [chunk] inputs and outputs of those images, gathered */
	uint32_t *ridx;	     /* [chunk] their indices in the batch */
};

static enum kern_precision precision_default = KERN_PRECISION_CERTIFIED;

void kern_precision_set_default(enum kern_precision p)
{
	precision_default = p;
}

enum kern_precision kern_precision_get_default(void)
{
	return precision_default;
}

int kern_precision_from_name(const char *name)
{
	if (name && !strcmp(name, "certified"))
		return KERN_PRECISION_CERTIFIED;
	if (name && !strcmp(name, "exact"))
		return KERN_PRECISION_EXACT;
	if (name && !strcmp(name, "float32"))
		return KERN_PRECISION_FLOAT32;
	return -EINVAL;
}

const char *kern_precision_name(enum kern_precision p)
{
	return p == KERN_PRECISION_EXACT     ? "exact"
	       : p == KERN_PRECISION_FLOAT32 ? "float32"
					     : "certified";
}

/*
 * A batch runs in passes of as many images as keep the largest activation a pass materializes
 * (both ping-pong buffers) within this, about half of a core's L2: per-image float64 maps of a
 * CNN's first layers would otherwise stream from DRAM at batch 64.
 */
#define FWD_CHUNK_BYTES (256u * 1024u)

static size_t align64(size_t n)
{
	return (n + 63) & ~(size_t)63;
}

static void *zalloc64(size_t n)
{
	void *p = aligned_alloc(64, align64(n ? n : 64));

	if (p)
		memset(p, 0, align64(n ? n : 64));
	return p;
}

static void conv_geom(const struct model_layer *l, struct kern_conv_geom *g)
{
	g->c = l->in.c;
	g->h = l->in.h;
	g->w = l->in.w;
	g->o = l->out.c;
	g->oh = l->out.h;
	g->ow = l->out.w;
	g->k = l->kernel;
	g->stride = l->stride;
	g->pad = l->pad;
}

static size_t op_scratch_bytes(const struct model_layer *l, uint32_t batch)
{
	struct kern_conv_geom g;

	switch (l->op) {
	case MODEL_OP_BDENSE_U8:
		return kern_bdense_u8_scratch((uint32_t)model_shape_elems(&l->in), batch);
	case MODEL_OP_CONV:
		conv_geom(l, &g);
		return kern_conv_scratch(&g) * sizeof(double);
	default:
		return 0;
	}
}

/*
 * The largest activation of one image that a whole-model pass materializes: the outputs inside
 * a float32 run never are (they are still allocated, for ranges that split a run).
 */
static size_t pass_bytes(const struct kern_ctx *ctx)
{
	size_t n = model_shape_bytes(&ctx->m->input);
	uint32_t skip_to = 0;

	for (uint32_t i = 0; i < ctx->m->n_layers; i++) {
		if (ctx->fc[i].last > skip_to)
			skip_to = ctx->fc[i].last;
		if (i >= skip_to && model_shape_bytes(&ctx->m->layers[i].out) > n)
			n = model_shape_bytes(&ctx->m->layers[i].out);
	}
	return n;
}

struct kern_ctx *kern_ctx_create(const struct model *m, uint32_t max_batch)
{
	return kern_ctx_create_prec(m, max_batch, precision_default);
}

struct kern_ctx *kern_ctx_create_prec(const struct model *m, uint32_t max_batch,
				      enum kern_precision prec)
{
	size_t act = 0, ibuf = 0, scratch = 0;
	struct kern_ctx *ctx;

	if (!m || !m->n_layers || !max_batch)
		return NULL;
	act = model_shape_bytes(&m->input);
	for (uint32_t i = 0; i < m->n_layers; i++) {
		const struct model_layer *l = &m->layers[i];
		size_t s = op_scratch_bytes(l, max_batch);

		if (model_shape_bytes(&l->out) > act)
			act = model_shape_bytes(&l->out);
		if (s > scratch)
			scratch = s;
		if ((l->op == MODEL_OP_BDENSE || l->op == MODEL_OP_BDENSE_U8 ||
		     l->op == MODEL_OP_BCONV) &&
		    !(l->flags & MODEL_LF_THRESH) && model_shape_elems(&l->out) * 4 > ibuf)
			ibuf = model_shape_elems(&l->out) * 4;
	}
	ctx = calloc(1, sizeof(*ctx));
	if (!ctx)
		return NULL;
	ctx->fc = calloc(m->n_layers, sizeof(*ctx->fc));
	if (!ctx->fc)
		goto err_free;
	ctx->m = m;
	ctx->prec = prec;
	for (uint32_t i = 0; prec != KERN_PRECISION_EXACT && i < m->n_layers; i++) {
		int ret = kern_fconv_prepare(m, i, &ctx->fc[i]);

		if (ret < 0)
			goto err_free;
		if (ret > 0 && kern_fconv_scratch(&ctx->fc[i]) > scratch)
			scratch = kern_fconv_scratch(&ctx->fc[i]);
	}
	if (prec != KERN_PRECISION_EXACT) {
		if (kern_frun_prepare(m, max_batch, &ctx->fr))
			goto err_free;
	}
	ctx->ops = kern_ops_get();
	ctx->max_batch = max_batch;
	ctx->chunk = (uint32_t)(FWD_CHUNK_BYTES / pass_bytes(ctx));
	ctx->chunk = ctx->chunk < 1 ? 1 : ctx->chunk > max_batch ? max_batch : ctx->chunk;
	if (ctx->fr.m && ctx->fr.start < m->n_layers) {
		size_t in = 0;

		for (uint32_t i = ctx->fr.start; i < m->n_layers; i++)
			if (model_shape_bytes(&m->layers[i].in) > in)
				in = model_shape_bytes(&m->layers[i].in);
		ctx->recheck = zalloc64(max_batch);
		ctx->rin = zalloc64(in * ctx->chunk);
		ctx->rout =
		    zalloc64(model_shape_bytes(&m->layers[m->n_layers - 1].out) * ctx->chunk);
		ctx->ridx = zalloc64(ctx->chunk * sizeof(*ctx->ridx));
		if (!ctx->recheck || !ctx->rin || !ctx->rout || !ctx->ridx)
			goto err_free;
	}
	ctx->act_bytes = align64(act * ctx->chunk); /* a pass runs at most chunk images */
	ctx->act[0] = zalloc64(ctx->act_bytes);
	ctx->act[1] = zalloc64(ctx->act_bytes);
	ctx->ibuf = zalloc64(ibuf * max_batch);
	ctx->scratch = zalloc64(scratch);
	ctx->final = zalloc64(model_shape_bytes(&m->layers[m->n_layers - 1].out) * max_batch);
	if (!ctx->act[0] || !ctx->act[1] || !ctx->ibuf || !ctx->scratch || !ctx->final)
		goto err_free;
	return ctx;

err_free:
	ctx->m = m;
	kern_ctx_free(ctx);
	return NULL;
}

void kern_ctx_free(struct kern_ctx *ctx)
{
	if (!ctx)
		return;
	free(ctx->act[0]);
	free(ctx->act[1]);
	free(ctx->ibuf);
	free(ctx->scratch);
	free(ctx->final);
	for (uint32_t i = 0; ctx->fc && i < ctx->m->n_layers; i++)
		kern_fconv_free(&ctx->fc[i]);
	if (ctx->fr.m)
		kern_frun_free(&ctx->fr);
	free(ctx->recheck);
	free(ctx->rin);
	free(ctx->rout);
	free(ctx->ridx);
	free(ctx->fc);
	free(ctx);
}

uint64_t kern_ctx_recomputed(const struct kern_ctx *ctx)
{
	uint64_t n = 0;

	for (uint32_t i = 0; i < ctx->m->n_layers; i++)
		n += ctx->fc[i].recomputed;
	return n;
}

uint64_t kern_ctx_rechecked(const struct kern_ctx *ctx)
{
	return ctx->fr.rechecked;
}

enum kern_precision kern_ctx_precision(const struct kern_ctx *ctx)
{
	return ctx->prec;
}

static void ints_to_f64(const int32_t *x, size_t n, double *y)
{
	for (size_t i = 0; i < n; i++)
		y[i] = (double)x[i];
}

static void run_op(struct kern_ctx *ctx, const struct model_layer *l, const void *x, uint32_t batch,
		   void *y)
{
	const struct kern_bin_ops *ops = ctx->ops;
	const struct kern_thresh t = {l->blob[1], l->blob[2]};
	const bool thr = l->flags & MODEL_LF_THRESH;
	const uint64_t in_elems = model_shape_elems(&l->in);
	const uint64_t out_elems = model_shape_elems(&l->out);
	const uint32_t hw_in = l->in.h * l->in.w;
	struct kern_conv_geom g;
	const double *w;

	switch (l->op) {
	case MODEL_OP_CAST:
		if (l->in.fmt == MODEL_FMT_U8)
			for (uint64_t i = 0; i < in_elems * batch; i++)
				((double *)y)[i] = ((const uint8_t *)x)[i];
		else
			for (uint64_t i = 0; i < in_elems * batch; i++)
				((double *)y)[i] = ((const float *)x)[i];
		break;
	case MODEL_OP_FLATTEN:
		if (l->in.fmt == MODEL_FMT_BITS)
			kern_flatten_bits(x, batch, l->in.c, l->in.h, l->in.w, y);
		else
			memcpy(y, x, model_shape_bytes(&l->in) * batch);
		break;
	case MODEL_OP_DENSE:
		w = (l->flags & MODEL_LF_BINW) ? l->wexp : l->blob[0];
		kern_dense_f64(x, batch, (uint32_t)in_elems, w, (uint32_t)out_elems,
			       (l->flags & MODEL_LF_BIAS) ? l->blob[1] : NULL, y);
		break;
	case MODEL_OP_CONV:
		conv_geom(l, &g);
		w = (l->flags & MODEL_LF_BINW) ? l->wexp : l->blob[0];
		kern_conv_f64(x, batch, &g, w, (l->flags & MODEL_LF_BIAS) ? l->blob[1] : NULL,
			      ctx->scratch, y);
		break;
	case MODEL_OP_BDENSE:
		if (thr) {
			ops->bdense_thr(x, batch, l->blob[0], (uint32_t)out_elems,
					(uint32_t)in_elems, &t, y);
		} else {
			ops->bdense(x, batch, l->blob[0], (uint32_t)out_elems, (uint32_t)in_elems,
				    ctx->ibuf);
			ints_to_f64(ctx->ibuf, out_elems * batch, y);
		}
		break;
	case MODEL_OP_BDENSE_U8:
		if (thr) {
			ops->bdense_u8_thr(x, batch, l->blob[0], (uint32_t)out_elems,
					   (uint32_t)in_elems, &t, y, ctx->scratch);
		} else {
			ops->bdense_u8(x, batch, l->blob[0], (uint32_t)out_elems,
				       (uint32_t)in_elems, ctx->ibuf, ctx->scratch);
			ints_to_f64(ctx->ibuf, out_elems * batch, y);
		}
		break;
	case MODEL_OP_BCONV:
		conv_geom(l, &g);
		if (thr) {
			ops->bconv_thr(x, batch, &g, l->blob[0], &t, y);
		} else {
			ops->bconv(x, batch, &g, l->blob[0], ctx->ibuf);
			ints_to_f64(ctx->ibuf, out_elems * batch, y);
		}
		break;
	case MODEL_OP_BIAS:
		memcpy(y, x, model_shape_bytes(&l->in) * batch);
		kern_bias_f64(y, batch, l->in.c, hw_in, l->blob[0]);
		break;
	case MODEL_OP_BATCHNORM: {
		const double *p = l->blob[0];
		const uint32_t c = l->in.c;

		kern_batchnorm_f64(x, batch, c, hw_in, p, p + c, p + 2 * c, p + 3 * c, y);
		break;
	}
	case MODEL_OP_THRESHOLD: {
		const struct kern_thresh tt = {l->blob[0], l->blob[1]};

		ops->threshold_pack(x, batch, l->in.c, l->in.h, l->in.w, &tt, y);
		break;
	}
	case MODEL_OP_SIGN:
		ops->sign_pack(x, batch, l->in.c, l->in.h, l->in.w, y);
		break;
	case MODEL_OP_UNPACK:
		kern_unpack_bits(x, batch, l->in.c, l->in.h, l->in.w, y);
		break;
	case MODEL_OP_RELU:
		kern_relu_f64(x, in_elems * batch, y);
		break;
	case MODEL_OP_MAXPOOL:
		kern_maxpool_f64(x, batch, l->in.c, l->in.h, l->in.w, l->kernel, l->stride, y);
		break;
	case MODEL_OP_MAXPOOL_BITS:
		if (l->flags & MODEL_LF_ANDPOOL)
			ops->maxpool_bits_and(x, batch, l->in.c, l->in.h, l->in.w, l->kernel,
					      l->stride, l->blob[0], y);
		else
			ops->maxpool_bits(x, batch, l->in.c, l->in.h, l->in.w, l->kernel, l->stride,
					  y);
		break;
	case MODEL_OP_LRN:
		kern_lrn_f64(x, batch, l->in.c, hw_in, l->lrn_size, l->lrn_alpha, l->lrn_beta,
			     l->lrn_k, y);
		break;
	case MODEL_OP_PAD:
		kern_pad_f64(x, batch, l->in.c, l->in.h, l->in.w, l->blob[0],
			     (l->flags & MODEL_LF_PADNEG) ? -INFINITY : 0.0, y);
		break;
	case MODEL_OP_SIGN3:
		kern_sign3_f64(x, in_elems * batch, y);
		break;
	}
}

static void forward_pass(struct kern_ctx *ctx, uint32_t first, uint32_t last, const void *in,
			 uint32_t batch, void *out)
{
	const void *cur = in;
	unsigned k = 0;

	for (uint32_t i = first; i < last; i++) {
		struct kern_fconv *fc = &ctx->fc[i];
		uint32_t end = fc->last && fc->last < last ? fc->last : i;
		void *dst = end + 1 == last ? out : ctx->act[k];

		if (end != i)
			kern_fconv_run(fc, ctx->ops, cur, batch, dst, ctx->scratch);
		else
			run_op(ctx, &ctx->m->layers[i], cur, batch, dst);
		i = end;
		cur = dst;
		k ^= 1;
	}
}

/*
 * The images the float32 run marked, op by op in float64, gathered ctx->chunk at a time: the
 * float64 kernels give the same bits at any batch size, so each image's are those of running it
 * alone, and the float64 weights are read once per group instead of once per image.
 */
static void recheck(struct kern_ctx *ctx, uint32_t first, uint32_t last, const uint8_t *in,
		    uint32_t batch, uint8_t *out)
{
	const size_t ib = model_shape_bytes(&ctx->m->layers[first].in);
	const size_t ob = model_shape_bytes(&ctx->m->layers[last - 1].out);
	uint32_t n = 0;

	for (uint32_t b = 0; b < batch; b++) {
		if (ctx->recheck[b]) {
			memcpy((uint8_t *)ctx->rin + n * ib, in + b * ib, ib);
			ctx->ridx[n++] = b;
		}
		if (n && (n == ctx->chunk || b + 1 == batch)) {
			forward_pass(ctx, first, last, ctx->rin, n, ctx->rout);
			for (uint32_t j = 0; j < n; j++)
				memcpy(out + ctx->ridx[j] * ob, (uint8_t *)ctx->rout + j * ob, ob);
			n = 0;
		}
	}
}

int kern_forward_range(struct kern_ctx *ctx, uint32_t first, uint32_t last, const void *in,
		       uint32_t batch, void *out)
{
	size_t in_bytes, out_bytes;

	if (!ctx || first >= last || last > ctx->m->n_layers || !batch || batch > ctx->max_batch ||
	    !in || !out)
		return -EINVAL;
	in_bytes = model_shape_bytes(&ctx->m->layers[first].in);
	out_bytes = model_shape_bytes(&ctx->m->layers[last - 1].out);
	if (kern_frun_covers(&ctx->fr, first, last)) {
		if (kern_frun_run(&ctx->fr, ctx->ops, first, in, batch, out, ctx->recheck,
				  ctx->prec == KERN_PRECISION_CERTIFIED))
			recheck(ctx, first, last, in, batch, out);
		return 0;
	}
	for (uint32_t b = 0; b < batch; b += ctx->chunk) {
		uint32_t n = batch - b < ctx->chunk ? batch - b : ctx->chunk;

		forward_pass(ctx, first, last, (const uint8_t *)in + b * in_bytes, n,
			     (uint8_t *)out + b * out_bytes);
	}
	return 0;
}

int kern_forward(struct kern_ctx *ctx, const void *in, uint32_t batch, double *scores)
{
	const struct model_shape *s;
	uint64_t n;
	int ret;

	if (!ctx)
		return -EINVAL;
	ret = kern_forward_range(ctx, 0, ctx->m->n_layers, in, batch, ctx->final);
	if (ret)
		return ret;
	s = &ctx->m->layers[ctx->m->n_layers - 1].out;
	n = model_shape_elems(s) * batch;
	switch (s->fmt) {
	case MODEL_FMT_F64:
		memcpy(scores, ctx->final, n * sizeof(double));
		break;
	case MODEL_FMT_BITS:
		kern_unpack_bits(ctx->final, batch, s->c, s->h, s->w, scores);
		break;
	case MODEL_FMT_U8:
		for (uint64_t i = 0; i < n; i++)
			scores[i] = ((const uint8_t *)ctx->final)[i];
		break;
	default:
		return -EINVAL;
	}
	return 0;
}

uint32_t kern_argmax(const double *scores, uint32_t n)
{
	uint32_t best = 0;

	for (uint32_t i = 1; i < n; i++)
		if (scores[i] > scores[best])
			best = i;
	return best;
}
