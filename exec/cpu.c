// SPDX-License-Identifier: MIT
/* The CPU executor: ops [first, last) on the kernels of this machine (kern_forward_range). */
#include <errno.h>
#include <stdio.h>

#include "exec/kexec.h"

static int cpu_load(struct kexec *x, const struct model *m, uint32_t first, uint32_t last,
		    uint32_t max_batch, char *err, size_t errlen)
{
	x->priv = kern_ctx_create(m, max_batch);
	if (!x->priv) {
		snprintf(err, errlen, "model %s: cpu executor: no memory for batch %u", m->name,
			 max_batch);
		return -ENOMEM;
	}
	return 0;
}

static int cpu_submit(struct kexec *x, const void *in, uint32_t n, void *out, uint64_t tag)
{
	kexec_complete(x, tag, kern_forward_range(x->priv, x->first, x->last, in, n, out));
	return 0;
}

static void cpu_caps(const struct kexec *x, struct kexec_caps *c)
{
	c->kind = KEXEC_KIND_CPU;
	c->max_batch = x->max_batch;
}

static void cpu_close(struct kexec *x)
{
	kern_ctx_free(x->priv);
}

const struct kexec_ops kexec_cpu_ops =
    KEXEC_OPS("cpu", NULL, cpu_load, cpu_submit, NULL, cpu_caps, cpu_close);
