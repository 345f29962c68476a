// SPDX-License-Identifier: MIT
/* Plan execution on the host: a model's host stages over a batch of requests, through the
 * executor interface (exec/kexec.h). */
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "host/host.h"

static uint32_t max3(uint32_t a, uint32_t b, uint32_t c)
{
	return a > b ? (a > c ? a : c) : (b > c ? b : c);
}

static const struct kexec_ops *const kind_ops[KEXEC_KIND__COUNT] = {
    [KEXEC_KIND_CPU] = &kexec_cpu_ops,
    [KEXEC_KIND_GPU] = &kexec_gpu_ops,
};

int host_stage_init(struct host_stage *st, const struct host_model *hm, uint32_t max_batch,
		    char *err, size_t errlen)
{
	const uint32_t sc = hm->classes * (uint32_t)sizeof(double);
	const size_t in_sz = (size_t)max_batch * max3(hm->in_bytes, hm->act_bytes, 1);
	const size_t out_sz = (size_t)max_batch * max3(hm->act_bytes, sc, 1);
	const struct model *m = hm->m;
	int ret;

	memset(st, 0, sizeof(*st));
	kexec_pipe_init(&st->front);
	if (!max_batch || max_batch > HOST_MAX_BATCH) {
		snprintf(err, errlen, "batch %u: 1 to %u", max_batch, HOST_MAX_BATCH);
		return -EINVAL;
	}
	st->hm = hm;
	st->max_batch = max_batch;
	for (uint32_t i = 0; i < hm->n_stages; i++) {
		const struct host_plan_stage *ps = &hm->stage[i];

		ret = kexec_pipe_add(&st->front, kind_ops[ps->kind], NULL, m, ps->first, ps->last,
				     max_batch, err, errlen);
		if (ret)
			goto err_fini;
		st->ex_front |= ps->kind == KEXEC_KIND_GPU && !st->front.x[i].note[0]
				    ? PROTO_EX_GPU
				    : PROTO_EX_CPU;
	}
	if (hm->mode != HOST_MODE_HOST_ONLY) {
		ret = kexec_open(&st->back, &kexec_cpu_ops, NULL, err, errlen);
		if (!ret)
			ret = kexec_load(&st->back, m, hm->split, m->n_layers, max_batch, err,
					 errlen);
		if (ret)
			goto err_fini;
	}
	st->bin = aligned_alloc(HOST_CACHE_LINE, (in_sz + 63) / 64 * 64);
	st->bout = aligned_alloc(HOST_CACHE_LINE, (out_sz + 63) / 64 * 64);
	if (!st->bin || !st->bout) {
		snprintf(err, errlen, "model %s: worker buffers: out of memory", m->name);
		ret = -ENOMEM;
		goto err_fini;
	}
	return 0;
err_fini:
	host_stage_fini(st);
	return ret;
}

void host_stage_fini(struct host_stage *st)
{
	kexec_pipe_fini(&st->front);
	kexec_close(&st->back);
	free(st->bin);
	free(st->bout);
	memset(st, 0, sizeof(*st));
}

uint64_t host_stage_gpu_fallbacks(const struct host_stage *st)
{
	uint64_t n = 0;

	for (uint32_t i = 0; i < st->front.n; i++)
		n += st->front.x[i].fallback_reqs;
	return n;
}

int host_stage_run(struct host_stage *st, enum host_stage_kind kind, struct host_req **reqs,
		   uint32_t n)
{
	const struct host_model *hm = st->hm;
	const uint32_t sc = hm->classes * (uint32_t)sizeof(double);
	const bool back = kind == HOST_STAGE_BACK;
	uint32_t ib, ob;
	uint8_t ex;
	int ret;

	if (!n || n > st->max_batch)
		return -EINVAL;
	switch (kind) {
	case HOST_STAGE_FRONT:
		if (hm->mode == HOST_MODE_HOST_ONLY)
			return -EINVAL;
		ib = hm->in_bytes;
		ob = hm->act_bytes;
		ex = st->ex_front;
		break;
	case HOST_STAGE_WHOLE:
		if (hm->mode != HOST_MODE_HOST_ONLY)
			return -EINVAL;
		ib = hm->in_bytes;
		ob = sc;
		ex = st->ex_front;
		break;
	case HOST_STAGE_BACK:
		if (hm->mode == HOST_MODE_HOST_ONLY)
			return -EINVAL;
		ib = hm->act_bytes;
		ob = sc;
		ex = PROTO_EX_CPU | PROTO_EX_HOST_FALLBACK;
		break;
	default:
		return -EINVAL;
	}
	for (uint32_t i = 0; i < n; i++) {
		const uint8_t *src = back ? reqs[i]->act : reqs[i]->in;

		if (!src)
			return -EINVAL;
		if (!back || n > 1)
			memcpy(st->bin + (size_t)i * ib, src, ib);
	}
	if (n == 1) {
		struct host_req *r = reqs[0];
		void *out = kind == HOST_STAGE_FRONT ? r->act : (void *)r->scores;

		ret = back ? kexec_run(&st->back, r->act, 1, out)
			   : kexec_pipe_run(&st->front, st->bin, 1, out);
		if (ret)
			return ret;
		r->executors |= ex;
		return 0;
	}
	ret = back ? kexec_run(&st->back, st->bin, n, st->bout)
		   : kexec_pipe_run(&st->front, st->bin, n, st->bout);
	if (ret)
		return ret;
	for (uint32_t i = 0; i < n; i++) {
		struct host_req *r = reqs[i];

		memcpy(kind == HOST_STAGE_FRONT ? r->act : (uint8_t *)r->scores,
		       st->bout + (size_t)i * ob, ob);
		r->executors |= ex;
	}
	return 0;
}
