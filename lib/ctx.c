// SPDX-License-Identifier: MIT
/* libsplitnic: inference contexts and predict. */
#include <errno.h>
#include <pthread.h>
#include <string.h>

#include "lib/snlib_obj.h"

struct snlib_job {
	struct kern_ctx *kc;
	const uint8_t *in;
	double *scores;
	uint32_t n;
	int ret;
};

static int ctx_check(const struct splitnic_ctx *ctx, struct splitnic_error *err)
{
	static const struct snlib_handle_kind kind = {
	    SNLIB_CTX_MAGIC, SNLIB_DEAD_CTX,	    "ctx",
	    "context",	     "splitnic_ctx_create", "splitnic_ctx_free"};

	return snlib_handle_check(ctx ? &ctx->magic : NULL, &kind, err);
}

static void ctx_release(struct splitnic_ctx *ctx)
{
	for (uint32_t t = 0; ctx->jobs && t < ctx->threads; t++)
		kern_ctx_free(ctx->jobs[t].kc);
	free(ctx->jobs);
	free(ctx->scores);
}

int splitnic_ctx_create(const struct splitnic_model *model, uint32_t max_batch, uint32_t threads,
			struct splitnic_ctx **out, struct splitnic_error *err)
{
	struct splitnic_model *m = (struct splitnic_model *)model;
	struct splitnic_ctx *ctx;
	int ret;

	if (!out)
		return snlib_fail(err, SPLITNIC_E_INVALID, "ctx (the result pointer) is NULL");
	*out = NULL;
	ret = snlib_model_check(m, err);
	if (ret)
		return ret;
	if (max_batch < 1 || max_batch > 65536)
		return snlib_fail(err, SPLITNIC_E_INVALID, "max_batch %u: 1 to 65536", max_batch);
	if (threads < 1 || threads > 256)
		return snlib_fail(err, SPLITNIC_E_INVALID, "threads %u: 1 to 256", threads);
	if (threads > max_batch)
		threads = max_batch;
	ctx = calloc(1, sizeof(*ctx));
	if (!ctx)
		return snlib_fail(err, SPLITNIC_E_NOMEM, "out of memory");
	ctx->m = m;
	ctx->max_batch = max_batch;
	ctx->threads = threads;
	ctx->per_thread = (max_batch + threads - 1) / threads;
	ctx->scores = calloc((size_t)max_batch * m->classes, sizeof(double));
	ctx->jobs = calloc(threads, sizeof(*ctx->jobs));
	if (!ctx->scores || !ctx->jobs)
		goto err_nomem;
	for (uint32_t t = 0; t < threads; t++) {
		ctx->jobs[t].kc = kern_ctx_create(m->km, ctx->per_thread);
		if (!ctx->jobs[t].kc)
			goto err_nomem;
	}
	atomic_fetch_add(&m->n_ctx, 1);
	ctx->magic = SNLIB_CTX_MAGIC;
	*out = ctx;
	return snlib_ok(err);
err_nomem:
	ctx_release(ctx);
	free(ctx);
	return snlib_fail(err, SPLITNIC_E_NOMEM,
			  "model %s: out of memory for buffers of batch %u on %u thread(s)",
			  m->km->name, max_batch, threads);
}

int splitnic_ctx_set_precision(struct splitnic_ctx *ctx, enum splitnic_precision precision,
			       struct splitnic_error *err)
{
	enum kern_precision p = precision == SPLITNIC_PRECISION_EXACT ? KERN_PRECISION_EXACT
				: precision == SPLITNIC_PRECISION_FLOAT32
				    ? KERN_PRECISION_FLOAT32
				    : KERN_PRECISION_CERTIFIED;
	int ret = ctx_check(ctx, err);

	if (ret)
		return ret;
	if (precision != SPLITNIC_PRECISION_CERTIFIED && precision != SPLITNIC_PRECISION_EXACT &&
	    precision != SPLITNIC_PRECISION_FLOAT32)
		return snlib_fail(err, SPLITNIC_E_INVALID,
				  "precision %d: 0 (certified), 1 (exact) or 2 (float32)",
				  (int)precision);
	for (uint32_t t = 0; t < ctx->threads; t++) {
		struct kern_ctx *kc;

		if (kern_ctx_precision(ctx->jobs[t].kc) == p)
			continue;
		kc = kern_ctx_create_prec(ctx->m->km, ctx->per_thread, p);
		if (!kc)
			return snlib_fail(err, SPLITNIC_E_NOMEM,
					  "model %s: out of memory for %s buffers",
					  ctx->m->km->name, kern_precision_name(p));
		kern_ctx_free(ctx->jobs[t].kc);
		ctx->jobs[t].kc = kc;
	}
	return snlib_ok(err);
}

int splitnic_ctx_free(struct splitnic_ctx *ctx, struct splitnic_error *err)
{
	int ret;

	if (!ctx)
		return snlib_ok(err);
	ret = ctx_check(ctx, err);
	if (ret)
		return ret;
	ctx_release(ctx);
	ctx->jobs = NULL;
	ctx->scores = NULL;
	atomic_fetch_sub(&ctx->m->n_ctx, 1);
	ctx->magic = SNLIB_DEAD_CTX;
	snlib_release(ctx);
	return snlib_ok(err);
}

static void *job_run(void *arg)
{
	struct snlib_job *j = arg;

	j->ret = kern_forward(j->kc, j->in, j->n, j->scores);
	return NULL;
}

int splitnic_predict(struct splitnic_ctx *ctx, const void *input, size_t input_bytes, uint32_t n,
		     double *scores, size_t scores_len, uint32_t *classes,
		     struct splitnic_error *err)
{
	pthread_t tid[256];
	uint32_t used = 0, started = 0, k;
	const struct splitnic_model *m;
	double *out;
	int ret = ctx_check(ctx, err);

	if (ret)
		return ret;
	m = ctx->m;
	if (!input)
		return snlib_fail(err, SPLITNIC_E_INVALID, "input is NULL");
	if (n < 1 || n > ctx->max_batch)
		return snlib_fail(err, SPLITNIC_E_INVALID, "n %u: 1 to the context's max_batch %u",
				  n, ctx->max_batch);
	if (input_bytes != (size_t)n * m->input.item_bytes)
		return snlib_fail(err, SPLITNIC_E_BAD_INPUT,
				  "input is %zu bytes; %u input(s) of model %s (%u,%u,%u) %s "
				  "need %zu",
				  input_bytes, n, m->km->name, m->input.c, m->input.h, m->input.w,
				  m->input.dtype == SPLITNIC_DTYPE_U8 ? "u8" : "f32",
				  (size_t)n * m->input.item_bytes);
	if (scores && scores_len < (size_t)n * m->classes)
		return snlib_fail(err, SPLITNIC_E_INVALID,
				  "scores_len %zu: %u input(s) of %u classes need %zu", scores_len,
				  n, m->classes, (size_t)n * m->classes);
	out = scores ? scores : ctx->scores;
	for (uint32_t first = 0; first < n; first += ctx->per_thread, used++) {
		struct snlib_job *j = &ctx->jobs[used];

		j->in = (const uint8_t *)input + (size_t)first * m->input.item_bytes;
		j->scores = out + (size_t)first * m->classes;
		j->n = n - first < ctx->per_thread ? n - first : ctx->per_thread;
		j->ret = 0;
	}
	for (k = 1; k < used; k++, started++)
		if (pthread_create(&tid[k], NULL, job_run, &ctx->jobs[k]))
			break;
	job_run(&ctx->jobs[0]);
	for (k = 1; k <= started; k++)
		pthread_join(tid[k], NULL);
	if (started + 1 < used)
		return snlib_fail(err, SPLITNIC_E_IO, "cannot start worker thread %u of %u",
				  started + 1, used);
	for (k = 0; k < used; k++)
		if (ctx->jobs[k].ret)
			return snlib_fail(err, SPLITNIC_E_INVALID, "model %s: forward pass: %s",
					  m->km->name, strerror(-ctx->jobs[k].ret));
	if (classes)
		for (uint32_t i = 0; i < n; i++)
			classes[i] = kern_argmax(out + (size_t)i * m->classes, m->classes);
	return snlib_ok(err);
}
