// SPDX-License-Identifier: MIT
/*
 * splitnic-host: a model slot's life, shared by the start (host/main.c) and the reload
 * (host/dpdk_reload.c): FILE[:MODE[:SPLIT]] loaded and split, a worker's state for slot k set up
 * and undone, the slot's histograms named.
 */
#include <errno.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "host/host_dpdk.h"
#include "split/split.h"

static uint32_t pow2_at_least(uint32_t v)
{
	uint32_t p = 1;

	while (p < v)
		p <<= 1;
	return p;
}

/* FILE[:MODE[:SPLIT]][,BATCHING] -> a loaded, split model (batching conf/batch.h's, batch the
 * default). */
int host_load_model(struct host_model *hm, char *spec, const struct conf_batch *batch, char *err,
		    size_t errlen)
{
	char *mode_s = strchr(spec, ':'), *split_s = NULL, *plan_s = NULL;
	uint32_t mode = HOST_MODE_COPROC, k = UINT32_MAX, n_hs = 0;
	struct host_plan_stage hs[SPLIT_EX__COUNT];
	struct split_plan plan;
	struct conf_batch b = *batch;
	struct model *m;
	int ret;

	if (conf_batch_suffix(spec, HOST_MAX_BATCH, &b, err, errlen))
		return -EINVAL;
	if (mode_s) {
		*mode_s++ = 0;
		split_s = strchr(mode_s, ':');
		if (split_s)
			*split_s++ = 0;
		if (!strcmp(mode_s, "coproc") || !*mode_s)
			mode = HOST_MODE_COPROC;
		else if (!strcmp(mode_s, "host-only"))
			mode = HOST_MODE_HOST_ONLY;
		else if (!strcmp(mode_s, "fallback"))
			mode = HOST_MODE_FALLBACK;
		else {
			snprintf(err, errlen, "%s: mode '%s': coproc, host-only or fallback", spec,
				 mode_s);
			return -EINVAL;
		}
	}
	m = model_load(spec, err, errlen);
	if (!m)
		return -EINVAL;
	if (split_s && *split_s) {
		int64_t x;

		if (!conf_int(NULL, NULL, split_s, 0, UINT32_MAX - 1, &x))
			k = (uint32_t)x;
		else
			plan_s = split_s;
	}
	if (plan_s) {
		ret = split_plan_load(plan_s, m, &plan, err, errlen);
		if (ret)
			goto out_free;
		for (uint32_t s = 0; s < plan.n_stages; s++) {
			const struct split_stage *ps = &plan.stage[s];

			if (ps->exec == SPLIT_EX_NIC) {
				k = ps->first;
				break;
			}
			if (ps->first &&
			    !split_fmt_exact(m->layers[ps->first].in.fmt, ps->fmt_in)) {
				snprintf(err, errlen,
					 "%s: stage %u at op %u: the activation crosses as %s: "
					 "the host runs exact cuts only",
					 plan_s, s, ps->first, split_fmt_name(ps->fmt_in));
				ret = -EINVAL;
				goto out_free;
			}
			hs[n_hs++] = (struct host_plan_stage){
			    ps->exec == SPLIT_EX_GPU ? KEXEC_KIND_GPU : KEXEC_KIND_CPU, ps->first,
			    ps->last};
		}
		if (k == UINT32_MAX && mode != HOST_MODE_HOST_ONLY) {
			printf("host: %s: the plan has no nic stage: serving %s host-only\n",
			       plan_s, m->name);
			mode = HOST_MODE_HOST_ONLY;
		}
	}
	ret = host_model_init(hm, m, mode, k, err, errlen);
	hm->batch = b;
	if (!ret && plan_s)
		ret = host_model_set_stages(hm, hs, n_hs, err, errlen);
	if (!ret)
		return 0;
out_free:
	model_free(m);
	return ret;
}

int host_slot_setup(struct host_app *a, struct host_worker *w, uint32_t k, char *err, size_t errlen)
{
	const struct host_remote_conf rc = {
	    .window = a->o.window,
	    .timeout_ns = a->o.nic_timeout_ns,
	    .ref_base = HOST_REF_WORKER(w->id),
	    .arg = w,
	    .describe = host_act_describe,
	    .send = host_act_send,
	    .now = host_act_now,
	};
	struct host_rq *q = &w->q[k];
	int ret;

	q->mask = pow2_at_least(a->o.queue) - 1;
	q->r = calloc(q->mask + 1, sizeof(*q->r));
	if (!q->r) {
		snprintf(err, errlen, "worker %u: queue of model %s: out of memory", w->id,
			 a->hm[k].m->name);
		return -ENOMEM;
	}
	ret = host_stage_init(&w->st[k], &a->hm[k], a->hm[k].batch.max_batch, err, errlen);
	if (ret)
		return ret;
	if (a->hm[k].mode == HOST_MODE_COPROC) {
		ret = kexec_open(&w->nic[k], &host_exec_remote_ops, &rc, err, errlen);
		if (!ret)
			ret = kexec_load(&w->nic[k], a->hm[k].m, a->hm[k].split,
					 a->hm[k].m->n_layers, 1, err, errlen);
		if (ret)
			return ret;
	}
	host_tx_templates(w, k);
	return 0;
}

void host_slot_fini(struct host_worker *w, uint32_t k)
{
	host_stage_fini(&w->st[k]);
	kexec_close(&w->nic[k]);
	free(w->q[k].r);
	memset(&w->q[k], 0, sizeof(w->q[k]));
	memset(&w->nic[k], 0, sizeof(w->nic[k]));
	w->nfb[k] = 0;
}

void host_slot_hist(struct host_app *a, uint32_t k)
{
	const char *name = a->hm[k].m->name;
	uint32_t i;

	for (i = 0; i < a->n_hist && strcmp(a->hist_name[i], name); i++)
		;
	if (i == a->n_hist && i < HOST_MAX_HISTS) {
		if (i == HOST_MAX_HISTS - 1)
			name = "other"; /* the last histograms: every name beyond */
		snprintf(a->hist_name[i], sizeof(a->hist_name[i]), "%s", name);
		__atomic_store_n(&a->n_hist, i + 1, __ATOMIC_RELEASE);
	}
	a->slot_hist[k] = (uint8_t)(i < HOST_MAX_HISTS ? i : HOST_MAX_HISTS - 1);
}
