// SPDX-License-Identifier: MIT
/* Served models: where each is split, and the tensors that cross. */
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>

#include "exec/kexec.h"
#include "host/host.h"

static const char *const mode_names[] = {
    [HOST_MODE_COPROC] = "coproc",
    [HOST_MODE_HOST_ONLY] = "host-only",
    [HOST_MODE_FALLBACK] = "fallback",
};

const char *host_mode_name(unsigned mode)
{
	return mode < sizeof(mode_names) / sizeof(mode_names[0]) ? mode_names[mode] : "?";
}

int host_model_init(struct host_model *hm, struct model *m, uint32_t mode, uint32_t k, char *err,
		    size_t errlen)
{
	const struct model_shape *in = &m->input;

	hm->m = m;
	hm->model_id = proto_model_id(m->name);
	hm->mode = mode;
	hm->in_fmt = model_fmt_wire(in->fmt);
	if (in->fmt != MODEL_FMT_U8 && in->fmt != MODEL_FMT_F32) {
		snprintf(err, errlen, "model %s: input format %s is not u8 or f32", m->name,
			 model_fmt_name(in->fmt));
		return -EINVAL;
	}
	hm->in_c = in->c;
	hm->in_h = in->h;
	hm->in_w = in->w;
	hm->in_count = (uint32_t)model_shape_elems(in);
	hm->in_bytes = (uint32_t)model_shape_bytes(in);
	snprintf(hm->shape_reason, sizeof(hm->shape_reason), "bad_shape: expects %s %ux%ux%u",
		 proto_fmt_name(hm->in_fmt), hm->in_c, hm->in_h, hm->in_w);
	hm->classes = model_classes(m);
	hm->act_count = hm->act_bytes = 0;
	if (mode == HOST_MODE_HOST_ONLY) {
		hm->split = m->n_layers;
		hm->n_stages = 1;
		hm->stage[0] = (struct host_plan_stage){KEXEC_KIND_CPU, 0, m->n_layers};
		return 0;
	}
	if (k == UINT32_MAX)
		k = kexec_nic_split(m);
	if (k == 0 || !kexec_can_run(KEXEC_KIND_NIC, m, k, m->n_layers)) {
		char ops[256];

		snprintf(err, errlen,
			 "model %s: split at op %u: the NIC stage can start at op %s (the host "
			 "keeps at least op 0)",
			 m->name, k, kexec_nic_starts(m, true, ops, sizeof(ops)));
		return -EINVAL;
	}
	if (!kexec_nic_handoff_ok(m, k)) {
		snprintf(err, errlen,
			 "model %s: split at op %u: its input is %s %ux%ux%u; the activation must "
			 "cross as flat bits (split after the flatten)",
			 m->name, k, model_fmt_name(m->layers[k].in.fmt), m->layers[k].in.c,
			 m->layers[k].in.h, m->layers[k].in.w);
		return -EINVAL;
	}
	hm->split = k;
	hm->act_count = m->layers[k].in.c;
	hm->act_bytes = (uint32_t)model_shape_bytes(&m->layers[k].in);
	hm->n_stages = 1;
	hm->stage[0] = (struct host_plan_stage){KEXEC_KIND_CPU, 0, k};
	return 0;
}

int host_model_set_stages(struct host_model *hm, const struct host_plan_stage *st, uint32_t n,
			  char *err, size_t errlen)
{
	uint32_t at = 0;

	if (!n || n > KEXEC_PIPE_MAX) {
		snprintf(err, errlen, "model %s: %u host stages (1 to %u)", hm->m->name, n,
			 KEXEC_PIPE_MAX);
		return -EINVAL;
	}
	for (uint32_t i = 0; i < n; i++) {
		if ((st[i].kind != KEXEC_KIND_CPU && st[i].kind != KEXEC_KIND_GPU) ||
		    st[i].first != at ||
		    !kexec_can_run(st[i].kind, hm->m, st[i].first, st[i].last)) {
			snprintf(
			    err, errlen,
			    "model %s: host stage %u (%s ops [%u, %u)): the host stages must be "
			    "cpu or gpu and cover ops [0, %u) in order",
			    hm->m->name, i, kexec_kind_name(st[i].kind), st[i].first, st[i].last,
			    hm->split);
			return -EINVAL;
		}
		at = st[i].last;
	}
	if (at != hm->split) {
		snprintf(err, errlen,
			 "model %s: the host stages end at op %u, the NIC stage starts "
			 "at %u",
			 hm->m->name, at, hm->split);
		return -EINVAL;
	}
	hm->n_stages = n;
	for (uint32_t i = 0; i < n; i++)
		hm->stage[i] = st[i];
	return 0;
}

struct host_map *host_map_build(const struct host_model *hm, const uint8_t *slots, uint32_t n)
{
	struct host_map *mp = calloc(1, sizeof(*mp));

	if (!mp)
		return NULL;
	mp->n = n;
	for (uint32_t i = 0; i < n; i++) {
		mp->slot[i] = slots[i];
		mp->hm[i] = hm[slots[i]];
	}
	host_health_models(mp->hm, n, mp->health);
	return mp;
}
