// SPDX-License-Identifier: MIT
/* The NIC emulator as an executor (nicfw/emu/exec_emu.h). */
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>

#include "nicfw/chain.h"
#include "nicfw/emu/exec_emu.h"

struct emu_exec {
	struct nicfw_exec_emu_conf conf;
	struct nicfw_emu_params params;
	struct nicfw_emu *e;
	double modeled_us;
};

static int emu_init(struct kexec *x, const void *conf, char *err, size_t errlen)
{
	const struct nicfw_exec_emu_conf *c = conf;
	struct emu_exec *ee = calloc(1, sizeof(*ee));

	if (!ee) {
		snprintf(err, errlen, "nic emu executor: out of memory");
		return -ENOMEM;
	}
	x->priv = ee;
	ee->conf.executors = c && c->executors ? c->executors : NICFW_MAX_EXEC;
	if (c && c->params)
		ee->params = *c->params;
	else
		nicfw_emu_params_default(&ee->params);
	return 0;
}

static int emu_load(struct kexec *x, const struct model *m, uint32_t first, uint32_t last,
		    uint32_t max_batch, char *err, size_t errlen)
{
	struct emu_exec *ee = x->priv;

	ee->e = nicfw_emu_create(m, first, ee->conf.executors, &ee->params, err, errlen);
	return ee->e ? 0 : -EINVAL;
}

static int emu_submit(struct kexec *x, const void *in, uint32_t n, void *out, uint64_t tag)
{
	struct emu_exec *ee = x->priv;
	struct nicfw_emu_report rep;
	int ret = 0;

	for (uint32_t i = 0; i < n && !ret; i++) {
		ret = nicfw_emu_infer(ee->e, (const uint8_t *)in + (size_t)i * x->in_bytes,
				      (double *)((uint8_t *)out + (size_t)i * x->out_bytes), &rep);
		if (!ret)
			ee->modeled_us += rep.latency_us;
	}
	kexec_complete(x, tag, ret);
	return 0;
}

static void emu_caps(const struct kexec *x, struct kexec_caps *c)
{
	const struct emu_exec *ee = x->priv;

	c->kind = KEXEC_KIND_NIC;
	c->tail_only = true;
	c->max_batch = x->max_batch;
	if (ee && ee->e)
		c->mem_bytes = nicfw_emu_chain(ee->e)->need[NICFW_MEM_EMEM] * 8;
}

static void emu_close(struct kexec *x)
{
	struct emu_exec *ee = x->priv;

	if (!ee)
		return;
	nicfw_emu_free(ee->e);
	free(ee);
}

double nicfw_exec_emu_modeled_us(const struct kexec *x)
{
	return ((const struct emu_exec *)x->priv)->modeled_us;
}

const struct kexec_ops nicfw_exec_emu_ops =
    KEXEC_OPS("nic-emu", emu_init, emu_load, emu_submit, NULL, emu_caps, emu_close);
