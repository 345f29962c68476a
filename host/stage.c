// SPDX-License-Identifier: MIT
/* Plan execution on the host: the CPU stages of a model over a batch of requests. */
#include <errno.h>
#include <stdlib.h>
#include <string.h>

#include "host/host.h"

static uint32_t max3(uint32_t a, uint32_t b, uint32_t c)
{
	return a > b ? (a > c ? a : c) : (b > c ? b : c);
}

int host_stage_init(struct host_stage *st, const struct host_model *hm, uint32_t max_batch)
{
	const uint32_t sc = hm->classes * (uint32_t)sizeof(double);
	const size_t in_sz = (size_t)max_batch * max3(hm->in_bytes, hm->act_bytes, 1);
	const size_t out_sz = (size_t)max_batch * max3(hm->act_bytes, sc, 1);

	memset(st, 0, sizeof(*st));
	if (!max_batch || max_batch > HOST_MAX_BATCH)
		return -EINVAL;
	st->hm = hm;
	st->max_batch = max_batch;
	st->ctx = kern_ctx_create(hm->m, max_batch);
	st->bin = aligned_alloc(HOST_CACHE_LINE, (in_sz + 63) / 64 * 64);
	st->bout = aligned_alloc(HOST_CACHE_LINE, (out_sz + 63) / 64 * 64);
	if (!st->ctx || !st->bin || !st->bout) {
		host_stage_fini(st);
		return -ENOMEM;
	}
	return 0;
}

void host_stage_fini(struct host_stage *st)
{
	kern_ctx_free(st->ctx);
	free(st->bin);
	free(st->bout);
	memset(st, 0, sizeof(*st));
}

int host_stage_run(struct host_stage *st, enum host_stage_kind kind, struct host_req **reqs,
		   uint32_t n)
{
	const struct host_model *hm = st->hm;
	const uint32_t nops = hm->m->n_layers;
	const uint32_t sc = hm->classes * (uint32_t)sizeof(double);
	uint32_t first, last, ib, ob;
	int ret;

	if (!n || n > st->max_batch)
		return -EINVAL;
	switch (kind) {
	case HOST_STAGE_FRONT:
		first = 0;
		last = hm->split;
		ib = hm->in_bytes;
		ob = hm->act_bytes;
		break;
	case HOST_STAGE_WHOLE:
		first = 0;
		last = nops;
		ib = hm->in_bytes;
		ob = sc;
		break;
	case HOST_STAGE_BACK:
		first = hm->split;
		last = nops;
		ib = hm->act_bytes;
		ob = sc;
		break;
	default:
		return -EINVAL;
	}
	if (first >= last)
		return -EINVAL;
	for (uint32_t i = 0; i < n; i++)
		memcpy(st->bin + (size_t)i * ib,
		       kind == HOST_STAGE_BACK ? reqs[i]->act : reqs[i]->in, ib);
	ret = kern_forward_range(st->ctx, first, last, st->bin, n, st->bout);
	if (ret)
		return ret;
	for (uint32_t i = 0; i < n; i++) {
		struct host_req *r = reqs[i];

		memcpy(kind == HOST_STAGE_FRONT ? r->act : (uint8_t *)r->scores,
		       st->bout + (size_t)i * ob, ob);
		r->executors |=
		    PROTO_EX_CPU | (kind == HOST_STAGE_BACK ? PROTO_EX_HOST_FALLBACK : 0);
	}
	return 0;
}
