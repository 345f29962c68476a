// SPDX-License-Identifier: MIT
/*
 * The GPU executor, through the table of kernels/cuda/kcuda.h only; without a usable GPU its
 * stage runs on the CPU kernels, said once at load and counted per request.
 */
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>

#include "exec/kexec.h"
#include "kernels/cuda/kcuda.h"

struct gpu_exec {
	const struct kcuda_ops *cu;
	struct kcuda_model *g;
	struct kern_ctx *cpu; /* the fallback */
};

static int gpu_init(struct kexec *x, const void *conf, char *err, size_t errlen)
{
	x->priv = calloc(1, sizeof(struct gpu_exec));
	if (!x->priv) {
		snprintf(err, errlen, "gpu executor: out of memory");
		return -ENOMEM;
	}
	return 0;
}

static int gpu_load(struct kexec *x, const struct model *m, uint32_t first, uint32_t last,
		    uint32_t max_batch, char *err, size_t errlen)
{
	struct gpu_exec *ge = x->priv;
	char why[KEXEC_NOTE_MAX - 96];

	ge->cu = kcuda_open(why, sizeof(why));
	if (ge->cu) {
		ge->g = ge->cu->model_upload(m, max_batch, err, errlen);
		return ge->g ? 0 : -ENODEV;
	}
	snprintf(x->note, sizeof(x->note),
		 "gpu: no usable GPU (%s): ops [%u, %u) run on the CPU kernels", why, first, last);
	ge->cpu = kern_ctx_create(m, max_batch);
	if (!ge->cpu) {
		snprintf(err, errlen, "model %s: gpu executor: no memory for its CPU fallback",
			 m->name);
		return -ENOMEM;
	}
	return 0;
}

static int gpu_submit(struct kexec *x, const void *in, uint32_t n, void *out, uint64_t tag)
{
	struct gpu_exec *ge = x->priv;

	if (ge->g) {
		kexec_complete(x, tag, ge->cu->forward_range(ge->g, x->first, x->last, in, n, out));
		return 0;
	}
	x->fallback_reqs += n;
	kexec_complete(x, tag, kern_forward_range(ge->cpu, x->first, x->last, in, n, out));
	return 0;
}

static void gpu_caps(const struct kexec *x, struct kexec_caps *c)
{
	const struct gpu_exec *ge = x->priv;
	struct kcuda_info info;

	c->kind = KEXEC_KIND_GPU;
	c->max_batch = x->max_batch;
	if (ge && ge->g && !ge->cu->device_info(&info))
		c->mem_bytes = info.mem_bytes;
}

static void gpu_close(struct kexec *x)
{
	struct gpu_exec *ge = x->priv;

	if (!ge)
		return;
	if (ge->g)
		ge->cu->model_free(ge->g);
	kern_ctx_free(ge->cpu);
	free(ge);
}

const struct kexec_ops kexec_gpu_ops =
    KEXEC_OPS("gpu", gpu_init, gpu_load, gpu_submit, NULL, gpu_caps, gpu_close);
