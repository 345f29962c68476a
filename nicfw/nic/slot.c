// SPDX-License-Identifier: MIT
/*
 * splitnic-nic's model slots (nicfw/nic/nic.h): a model loaded into a free slot with its
 * executor (a chain on the shared lcore platform or the emulator), freed, and the HEALTH
 * report's list of the models a map names; at start (main.c) as at a reload (reload.c).
 */
#include <errno.h>
#include <stdbool.h>
#include <stdio.h>
#include <string.h>

#include <rte_lcore.h>

#include "exec/kexec.h"
#include "nicfw/dispatch.h"
#include "nicfw/emu/exec_emu.h"
#include "nicfw/health.h"
#include "nicfw/lcore/lcore.h"
#include "nicfw/nic/nic.h"

/* Slot k's executor, ops [first, n) of its model: the emulator serving in modeled time
 * (nicfw/emu/exec_emu.h), or a chain on the shared lcore platform (nicfw/lcore/lcore.h), at
 * start as at a reload. */
static int nic_setup_exec(struct nic *n, uint32_t k, uint32_t first, const char *who, char *err,
			  size_t errlen)
{
	const struct nicfw_exec_emu_conf ec = {
	    .executors = n->o.executors, .serve = true, .max_warm = NIC_EMU_WARM};
	const struct nicfw_exec_lcore_conf lc = {.executors = n->o.executors, .platform = n->lc};
	int ret;

	ret = kexec_open(&n->x[k], n->o.emu ? &nicfw_exec_emu_ops : &nicfw_exec_lcore_ops,
			 n->o.emu ? (const void *)&ec : &lc, err, errlen);
	if (!ret)
		ret = kexec_load(&n->x[k], n->m[k], first, n->m[k]->n_layers, 1, err, errlen);
	if (!ret && n->o.emu)
		printf("%s: model %s on emu: %s\n", who, n->m[k]->name, n->x[k].note);
	return ret;
}

int nic_slot_load(struct nic *n, uint32_t k, const char *path, bool id_given, uint32_t id,
		  uint32_t first_asked, struct nicfw_disp_model *md, const char *who, char *err,
		  size_t errlen)
{
	struct model *m;
	uint32_t first;
	char ops[256];
	int ret = -EINVAL;

	m = n->m[k] = model_load(path, err, errlen);
	if (!m)
		return -EINVAL;
	first = first_asked == UINT32_MAX ? kexec_nic_split(m) : first_asked; /* host's too */
	if (kexec_nic_first(m) == m->n_layers)
		snprintf(err, errlen, "%s: model %s has no part the NIC can run", path, m->name);
	else if (first_asked != UINT32_MAX &&
		 !kexec_can_run(KEXEC_KIND_NIC, m, first_asked, m->n_layers))
		snprintf(err, errlen, "%s: @%u: the NIC's part of model %s can start at op %s",
			 path, first_asked, m->name, kexec_nic_starts(m, false, ops, sizeof(ops)));
	else
		ret = nic_setup_exec(n, k, first, who, err, errlen);
	if (!ret)
		ret = nicfw_disp_model_init(md, id_given ? id : proto_model_id(m->name), &n->x[k],
					    err, errlen);
	if (ret) {
		nic_slot_free(n, k);
		return ret;
	}
	n->sl[k] = (struct nic_slot){path, md->model_id, first, id_given, first_asked};
	printf("%s: model %s (%s) id %#x: ops %u..%u on %u executors (%s), input %u x %s, %u "
	       "classes%s\n",
	       who, m->name, path, md->model_id, first, m->n_layers - 1, n->o.executors,
	       n->o.emu		       ? "emu"
	       : rte_lcore_count() > 1 ? "lcore, on the worker lcores"
				       : "lcore, inline on the main lcore",
	       md->in_count, proto_fmt_name(md->in_fmt), md->classes,
	       md->standalone ? ", stand-alone" : "");
	return 0;
}

void nic_slot_free(struct nic *n, uint32_t k)
{
	kexec_close(&n->x[k]);
	memset(&n->x[k], 0, sizeof(n->x[k]));
	model_free(n->m[k]);
	n->m[k] = NULL;
	memset(&n->sl[k], 0, sizeof(n->sl[k]));
}

int nic_health_models(const struct nic *n, const uint8_t *map, uint32_t nm, struct nicfw_health *h,
		      char *err, size_t errlen)
{
	h->n_models = 0;
	for (uint32_t i = 0; i < nm; i++) {
		const uint32_t k = map[i];
		struct nicfw_disp_model md;
		const struct model_shape *in;
		bool bits;

		if (nicfw_disp_model_init(&md, n->sl[k].id, (struct kexec *)&n->x[k], err, errlen))
			return -EINVAL;
		in = &n->m[k]->layers[md.layer].in;
		bits = md.in_fmt == PROTO_FMT_BITS;
		if (nicfw_health_add(h, md.model_id, md.layer, md.in_fmt,
				     bits ? md.in_count : in->c, bits ? 1 : in->h, bits ? 1 : in->w,
				     md.classes, n->m[k]->name)) {
			snprintf(err, errlen, "health: more than %u models",
				 NICFW_HEALTH_MAX_MODELS);
			return -EINVAL;
		}
	}
	return 0;
}
