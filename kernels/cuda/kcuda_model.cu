// SPDX-License-Identifier: MIT
/*
 * The GPU executor: kernels/forward.c on the device. Weights are uploaded once; activations
 * ping-pong between two device buffers; input and output pass through pinned host buffers;
 * everything runs on one stream, which kcuda_forward_range waits for once at the end.
 */
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "kernels/cuda/kcuda_impl.h"

struct kcuda_dlayer {
	void *blob[MODEL_NBLOB];
	double *wexp;
	int32_t *wpopc; /* BDENSE: popcounts of the weight rows, for the b1 MMA GEMM */
};

struct kcuda_model {
	const struct model *m;
	uint32_t max_batch;
	enum kcuda_bgemm bgemm;
	cudaStream_t stream;
	cublasHandle_t blas;
	struct kcuda_dlayer *dl;
	size_t act_bytes, out_bytes;
	void *d_in, *act[2], *d_scores;
	int32_t *ibuf;
	void *scratch;
	void *h_in, *h_out; /* pinned */
};

static size_t align256(size_t n)
{
	return (n + 255) / 256 * 256;
}

static void conv_geom(const struct model_layer *l, struct kern_conv_geom *g)
{
	*g = (struct kern_conv_geom){l->in.c,  l->in.h,	  l->in.w,   l->out.c, l->out.h,
				     l->out.w, l->kernel, l->stride, l->pad};
}

static size_t op_scratch_bytes(const struct model_layer *l, uint32_t batch)
{
	struct kern_conv_geom g;

	switch (l->op) {
	case MODEL_OP_BDENSE:
		return (size_t)batch * sizeof(int32_t);
	case MODEL_OP_BDENSE_U8:
		return kcuda_u8_scratch((uint32_t)model_shape_elems(&l->in), batch);
	case MODEL_OP_CONV:
		conv_geom(l, &g);
		return kcuda_conv_scratch(&g, batch) * sizeof(double);
	default:
		return 0;
	}
}

static size_t wexp_elems(const struct model_layer *l)
{
	if (l->op == MODEL_OP_CONV)
		return (size_t)l->out.c * l->in.c * l->kernel * l->kernel;
	return (size_t)model_shape_elems(&l->out) * model_shape_elems(&l->in);
}

static int dmalloc(void **p, size_t bytes)
{
	int ret = KCUDA_CHECK(cudaMalloc(p, align256(bytes ? bytes : 1)));

	return ret ? -ENOMEM : 0;
}

/* Ordered on the model's stream before the weight popcounts that read it. */
static int upload(cudaStream_t s, void **d, const void *h, size_t bytes)
{
	int ret = dmalloc(d, bytes);

	return ret ? ret : KCUDA_CHECK(cudaMemcpyAsync(*d, h, bytes, cudaMemcpyHostToDevice, s));
}

static int upload_layer(struct kcuda_model *g, uint32_t i)
{
	const struct model_layer *l = &g->m->layers[i];
	struct kcuda_dlayer *d = &g->dl[i];
	int ret;

	for (int b = 0; b < MODEL_NBLOB; b++)
		if (l->blob[b]) {
			ret = upload(g->stream, &d->blob[b], l->blob[b], l->blob_size[b]);
			if (ret)
				return ret;
		}
	if ((l->flags & MODEL_LF_BINW) && l->wexp) {
		ret = upload(g->stream, (void **)&d->wexp, l->wexp, wexp_elems(l) * sizeof(double));
		if (ret)
			return ret;
	}
	if (l->op == MODEL_OP_BDENSE) {
		const uint32_t out = (uint32_t)model_shape_elems(&l->out);

		ret = dmalloc((void **)&d->wpopc, (size_t)out * sizeof(int32_t));
		if (!ret)
			ret = kcuda_d_rowpopc(g->stream, (const uint64_t *)d->blob[0], out,
					      model_words(model_shape_elems(&l->in)), d->wpopc);
		if (ret)
			return ret;
	}
	return 0;
}

/* SPLITNIC_CUDA_BGEMM=gemv|popc|mma forces one binary GEMM engine (tests, benchmarks). */
static enum kcuda_bgemm bgemm_from_env(void)
{
	const char *e = getenv("SPLITNIC_CUDA_BGEMM");

	if (!e)
		return KCUDA_BGEMM_AUTO;
	if (!strcmp(e, "gemv"))
		return KCUDA_BGEMM_GEMV;
	if (!strcmp(e, "popc"))
		return KCUDA_BGEMM_POPC;
	if (!strcmp(e, "mma"))
		return KCUDA_BGEMM_MMA;
	return KCUDA_BGEMM_AUTO;
}

extern "C" struct kcuda_model *kcuda_model_upload(const struct model *m, uint32_t max_batch,
						  char *err, size_t errlen)
{
	size_t act, ibuf = 0, scratch = 0, scores;
	struct kcuda_model *g;
	int ret = kcuda_ready();

	if (ret)
		goto out_err;
	if (!m || !m->n_layers || !max_batch) {
		ret = kcuda_fail(-EINVAL, "kcuda_model_upload: no model, no layers or batch 0");
		goto out_err;
	}
	act = model_shape_bytes(&m->input);
	for (uint32_t i = 0; i < m->n_layers; i++) {
		const struct model_layer *l = &m->layers[i];
		size_t s = op_scratch_bytes(l, max_batch);

		if (model_shape_bytes(&l->out) > act)
			act = model_shape_bytes(&l->out);
		if (model_shape_bytes(&l->in) > act)
			act = model_shape_bytes(&l->in);
		if (s > scratch)
			scratch = s;
		if ((l->op == MODEL_OP_BDENSE || l->op == MODEL_OP_BDENSE_U8 ||
		     l->op == MODEL_OP_BCONV) &&
		    model_shape_elems(&l->out) * 4 > ibuf)
			ibuf = model_shape_elems(&l->out) * 4;
	}
	g = (struct kcuda_model *)calloc(1, sizeof(*g));
	if (!g) {
		ret = kcuda_fail(-ENOMEM, "kcuda_model_upload: out of memory");
		goto out_err;
	}
	g->m = m;
	g->max_batch = max_batch;
	g->bgemm = bgemm_from_env();
	g->act_bytes = align256(act * max_batch);
	scores = (size_t)model_classes(m) * sizeof(double) * max_batch;
	g->out_bytes = g->act_bytes > scores ? g->act_bytes : scores;
	g->dl = (struct kcuda_dlayer *)calloc(m->n_layers, sizeof(*g->dl));
	if (!g->dl) {
		ret = kcuda_fail(-ENOMEM, "kcuda_model_upload: out of memory");
		goto out_free;
	}
	ret = KCUDA_CHECK(cudaStreamCreateWithFlags(&g->stream, cudaStreamNonBlocking));
	if (!ret)
		ret = KCUDA_CHECK(cublasCreate(&g->blas));
	if (!ret)
		ret = KCUDA_CHECK(cublasSetStream(g->blas, g->stream));
	if (ret)
		goto out_free;
	ret = dmalloc(&g->d_in, g->act_bytes);
	if (!ret)
		ret = dmalloc(&g->act[0], g->act_bytes);
	if (!ret)
		ret = dmalloc(&g->act[1], g->act_bytes);
	if (!ret)
		ret = dmalloc(&g->d_scores, scores);
	if (!ret)
		ret = dmalloc((void **)&g->ibuf, ibuf * max_batch);
	if (!ret)
		ret = dmalloc(&g->scratch, scratch);
	if (!ret && KCUDA_CHECK(cudaMallocHost(&g->h_in, g->act_bytes)))
		ret = -ENOMEM;
	if (!ret && KCUDA_CHECK(cudaMallocHost(&g->h_out, g->out_bytes)))
		ret = -ENOMEM;
	for (uint32_t i = 0; !ret && i < m->n_layers; i++)
		ret = upload_layer(g, i);
	if (!ret)
		ret = KCUDA_CHECK(cudaStreamSynchronize(g->stream));
	if (ret)
		goto out_free;
	return g;

out_free:
	kcuda_model_free(g);
out_err:
	if (err && errlen)
		snprintf(err, errlen, "%s: cannot run on the GPU: %s", m ? m->name : "model",
			 kcuda_last_error());
	return NULL;
}

extern "C" void kcuda_model_free(struct kcuda_model *g)
{
	if (!g)
		return;
	if (g->dl)
		for (uint32_t i = 0; i < g->m->n_layers; i++) {
			for (int b = 0; b < MODEL_NBLOB; b++)
				KCUDA_CHECK(cudaFree(g->dl[i].blob[b]));
			KCUDA_CHECK(cudaFree(g->dl[i].wexp));
			KCUDA_CHECK(cudaFree(g->dl[i].wpopc));
		}
	free(g->dl);
	KCUDA_CHECK(cudaFree(g->d_in));
	KCUDA_CHECK(cudaFree(g->act[0]));
	KCUDA_CHECK(cudaFree(g->act[1]));
	KCUDA_CHECK(cudaFree(g->d_scores));
	KCUDA_CHECK(cudaFree(g->ibuf));
	KCUDA_CHECK(cudaFree(g->scratch));
	KCUDA_CHECK(cudaFreeHost(g->h_in));
	KCUDA_CHECK(cudaFreeHost(g->h_out));
	if (g->blas)
		KCUDA_CHECK(cublasDestroy(g->blas));
	if (g->stream)
		KCUDA_CHECK(cudaStreamDestroy(g->stream));
	free(g);
}

static int run_op(struct kcuda_model *g, uint32_t i, const void *x, uint32_t batch, void *y)
{
	const struct model_layer *l = &g->m->layers[i];
	const struct kcuda_dlayer *d = &g->dl[i];
	const cudaStream_t s = g->stream;
	const struct kcuda_dthresh t = {(const int32_t *)d->blob[1], (const uint8_t *)d->blob[2]};
	const bool thr = l->flags & MODEL_LF_THRESH;
	const uint32_t in_elems = (uint32_t)model_shape_elems(&l->in);
	const uint32_t out_elems = (uint32_t)model_shape_elems(&l->out);
	const uint32_t hw_in = l->in.h * l->in.w;
	const double *bias = (l->flags & MODEL_LF_BIAS) ? (const double *)d->blob[1] : NULL;
	const double *w = (l->flags & MODEL_LF_BINW) ? d->wexp : (const double *)d->blob[0];
	const uint64_t *wb = (const uint64_t *)d->blob[0];
	struct kern_conv_geom geom;
	int ret;

	switch (l->op) {
	case MODEL_OP_CAST:
		return kcuda_d_cast(s, x, l->in.fmt, (size_t)in_elems * batch, (double *)y);
	case MODEL_OP_FLATTEN:
		if (l->in.fmt == MODEL_FMT_BITS)
			return kcuda_d_flatten_bits(s, (const uint64_t *)x, batch, l->in.c, l->in.h,
						    l->in.w, (uint64_t *)y);
		return KCUDA_CHECK(cudaMemcpyAsync(y, x, model_shape_bytes(&l->in) * batch,
						   cudaMemcpyDeviceToDevice, s));
	case MODEL_OP_DENSE:
		return kcuda_d_dense_f64(s, g->blas, (const double *)x, batch, in_elems, w,
					 out_elems, bias, (double *)y);
	case MODEL_OP_CONV:
		conv_geom(l, &geom);
		return kcuda_d_conv_f64(s, g->blas, (const double *)x, batch, &geom, w, bias,
					(double *)g->scratch, (double *)y);
	case MODEL_OP_BDENSE:
		ret = kcuda_d_bdense(s, (const uint64_t *)x, batch, wb, out_elems, in_elems,
				     g->ibuf, g->bgemm, (int32_t *)g->scratch, d->wpopc);
		break;
	case MODEL_OP_BDENSE_U8:
		ret = kcuda_d_bdense_u8(s, (const uint8_t *)x, batch, wb, out_elems, in_elems,
					g->ibuf, g->scratch);
		break;
	case MODEL_OP_BCONV:
		conv_geom(l, &geom);
		if (thr)
			return kcuda_d_bconv_thr(s, (const uint64_t *)x, batch, &geom, wb, &t,
						 (uint64_t *)y);
		ret = kcuda_d_bconv(s, (const uint64_t *)x, batch, &geom, wb, g->ibuf);
		break;
	case MODEL_OP_BIAS:
		return kcuda_d_bias(s, (const double *)x, batch, l->in.c, hw_in,
				    (const double *)d->blob[0], (double *)y);
	case MODEL_OP_BATCHNORM:
		return kcuda_d_batchnorm(s, (const double *)x, batch, l->in.c, hw_in,
					 (const double *)d->blob[0], (double *)y);
	case MODEL_OP_THRESHOLD: {
		const struct kcuda_dthresh tt = {(const int32_t *)d->blob[0],
						 (const uint8_t *)d->blob[1]};

		return kcuda_d_pack(s, (const double *)x, batch, l->in.c, l->in.h, l->in.w, &tt,
				    (uint64_t *)y);
	}
	case MODEL_OP_SIGN:
		return kcuda_d_pack(s, (const double *)x, batch, l->in.c, l->in.h, l->in.w, NULL,
				    (uint64_t *)y);
	case MODEL_OP_UNPACK:
		return kcuda_d_unpack(s, (const uint64_t *)x, batch, l->in.c, l->in.h, l->in.w,
				      (double *)y);
	case MODEL_OP_RELU:
		return kcuda_d_relu(s, (const double *)x, (size_t)in_elems * batch, (double *)y);
	case MODEL_OP_MAXPOOL:
		return kcuda_d_maxpool(s, (const double *)x, batch, l->in.c, l->in.h, l->in.w,
				       l->kernel, l->stride, (double *)y);
	case MODEL_OP_MAXPOOL_BITS:
		return kcuda_d_maxpool_bits(
		    s, (const uint64_t *)x, batch, l->in.c, l->in.h, l->in.w, l->kernel, l->stride,
		    (l->flags & MODEL_LF_ANDPOOL) ? (const uint64_t *)d->blob[0] : NULL,
		    (uint64_t *)y);
	case MODEL_OP_LRN:
		return kcuda_d_lrn(s, (const double *)x, batch, l->in.c, hw_in, l->lrn_size,
				   l->lrn_alpha, l->lrn_beta, l->lrn_k, (double *)y);
	default:
		return kcuda_fail(-EINVAL, "kcuda: layer %u: unknown op %u", i, l->op);
	}
	/* the binary ops without a fused output: integer dots in ibuf */
	if (ret)
		return ret;
	if (thr && l->op != MODEL_OP_BCONV)
		return kcuda_d_thr_pack(s, g->ibuf, batch, out_elems, &t, (uint64_t *)y);
	return kcuda_d_ints_to_f64(s, g->ibuf, (size_t)out_elems * batch, (double *)y);
}

/* Copy the input in and run ops [first, last) on the stream; *res: the last op's output. */
static int run(struct kcuda_model *g, uint32_t first, uint32_t last, const void *in, uint32_t batch,
	       const void **res)
{
	const size_t in_bytes = model_shape_bytes(&g->m->layers[first].in) * batch;
	const void *cur = g->d_in;
	unsigned int k = 0;
	int ret;

	memcpy(g->h_in, in, in_bytes);
	ret = KCUDA_CHECK(
	    cudaMemcpyAsync(g->d_in, g->h_in, in_bytes, cudaMemcpyHostToDevice, g->stream));
	for (uint32_t i = first; !ret && i < last; i++) {
		ret = run_op(g, i, cur, batch, g->act[k]);
		cur = g->act[k];
		k ^= 1;
	}
	*res = cur;
	return ret;
}

static bool bad_args(const struct kcuda_model *g, uint32_t first, uint32_t last, const void *in,
		     uint32_t batch, const void *out)
{
	return !g || first >= last || last > g->m->n_layers || !batch || batch > g->max_batch ||
	       !in || !out;
}

extern "C" int kcuda_forward_range(struct kcuda_model *g, uint32_t first, uint32_t last,
				   const void *in, uint32_t batch, void *out)
{
	const void *res;
	size_t out_bytes;
	int ret;

	if (bad_args(g, first, last, in, batch, out))
		return kcuda_fail(-EINVAL, "kcuda_forward_range: bad arguments");
	out_bytes = model_shape_bytes(&g->m->layers[last - 1].out) * batch;
	ret = run(g, first, last, in, batch, &res);
	if (!ret)
		ret = KCUDA_CHECK(
		    cudaMemcpyAsync(g->h_out, res, out_bytes, cudaMemcpyDeviceToHost, g->stream));
	if (!ret)
		ret = KCUDA_CHECK(cudaStreamSynchronize(g->stream));
	if (!ret)
		memcpy(out, g->h_out, out_bytes);
	return ret;
}

extern "C" int kcuda_forward(struct kcuda_model *g, const void *in, uint32_t batch, double *scores)
{
	const struct model_shape *s;
	const void *res;
	size_t n;
	int ret;

	if (bad_args(g, 0, g ? g->m->n_layers : 0, in, batch, scores))
		return kcuda_fail(-EINVAL, "kcuda_forward: bad arguments");
	s = &g->m->layers[g->m->n_layers - 1].out;
	n = model_shape_elems(s) * batch;
	ret = run(g, 0, g->m->n_layers, in, batch, &res);
	if (ret)
		return ret;
	switch (s->fmt) {
	case MODEL_FMT_F64:
		break;
	case MODEL_FMT_BITS:
		ret = kcuda_d_unpack(g->stream, (const uint64_t *)res, batch, s->c, s->h, s->w,
				     (double *)g->d_scores);
		res = g->d_scores;
		break;
	case MODEL_FMT_U8:
		ret = kcuda_d_cast(g->stream, res, MODEL_FMT_U8, n, (double *)g->d_scores);
		res = g->d_scores;
		break;
	default:
		return kcuda_fail(-EINVAL, "kcuda_forward: output format %u", s->fmt);
	}
	if (!ret)
		ret = KCUDA_CHECK(cudaMemcpyAsync(g->h_out, res, n * sizeof(double),
						  cudaMemcpyDeviceToHost, g->stream));
	if (!ret)
		ret = KCUDA_CHECK(cudaStreamSynchronize(g->stream));
	if (!ret)
		memcpy(scores, g->h_out, n * sizeof(double));
	return ret;
}
