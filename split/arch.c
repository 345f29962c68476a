// SPDX-License-Identifier: MIT
/* Static analysis: arch.json (or a model file's layer records) -> shapes, sizes and costs. */
#include <errno.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "exec/kexec.h"
#include "model/compile.h"
#include "model/ic.h"
#include "split/split.h"

#define ARCH_MAX_DIM (1u << 28)

_Static_assert((int)SPLIT_EX_CPU == (int)KEXEC_KIND_CPU &&
		   (int)SPLIT_EX_GPU == (int)KEXEC_KIND_GPU &&
		   (int)SPLIT_EX_NIC == (int)KEXEC_KIND_NIC &&
		   (int)SPLIT_EX__COUNT == (int)KEXEC_KIND__COUNT,
	       "the planner's executors are the executor kinds");

const char *split_exec_name(unsigned e)
{
	return kexec_kind_name(e);
}

int split_exec_from_name(const char *name)
{
	return kexec_kind_from_name(name);
}

__attribute__((format(printf, 4, 5))) static int arch_fail(char *err, size_t errlen,
							   const char *path, const char *fmt, ...)
{
	char msg[320];
	va_list ap;

	va_start(ap, fmt);
	vsnprintf(msg, sizeof(msg), fmt, ap);
	va_end(ap);
	snprintf(err, errlen, "%s: %s", path, msg);
	return -EINVAL;
}

/* Output shapes from the input shape and each layer's fields; element and cost counts. */
static int arch_shapes(struct split_arch *a, const char *path, char *err, size_t errlen)
{
	uint32_t c = a->input.c, h = a->input.h, w = a->input.w;

	for (uint32_t i = 0; i < a->n; i++) {
		struct split_layer *L = &a->l[i];
		uint64_t in_elems = (uint64_t)c * h * w, cin_g, taps;
		uint32_t k = L->kernel;

		switch (L->type) {
		case MODEL_SRC_DENSE:
			h = w = 1;
			c = L->c;
			L->ops = (uint64_t)c * in_elems;
			L->params = L->ops + ((L->flags & MODEL_SF_BIAS) ? c : 0);
			break;
		case MODEL_SRC_CONV:
			if (c % L->groups || L->c % L->groups)
				return arch_fail(err, errlen, path,
						 "layer %u (conv): %u in / %u out channels not "
						 "divisible by groups %u",
						 i, c, L->c, L->groups);
			if (h + 2 * L->pad < k || w + 2 * L->pad < k)
				return arch_fail(err, errlen, path,
						 "layer %u (conv): kernel %u over a %ux%u input", i,
						 k, h, w);
			cin_g = c / L->groups;
			h = (h + 2 * L->pad - k) / L->stride + 1;
			w = (w + 2 * L->pad - k) / L->stride + 1;
			c = L->c;
			taps = cin_g * k * k;
			L->ops = (uint64_t)c * h * w * taps;
			L->params = c * taps + ((L->flags & MODEL_SF_BIAS) ? c : 0);
			break;
		case MODEL_SRC_MAXPOOL:
			if (h < k || w < k)
				return arch_fail(err, errlen, path,
						 "layer %u (maxpool): window %u over a %ux%u input",
						 i, k, h, w);
			h = (h - k) / L->stride + 1;
			w = (w - k) / L->stride + 1;
			L->ops = (uint64_t)c * h * w * k * k;
			break;
		case MODEL_SRC_FLATTEN:
			c = (uint32_t)in_elems;
			h = w = 1;
			break;
		case MODEL_SRC_BATCHNORM:
			L->params = 4 * (uint64_t)c;
			L->ops = in_elems;
			break;
		case MODEL_SRC_LRN:
			L->ops = in_elems * k;
			break;
		case MODEL_SRC_PAD: /* only in model files (the ONNX importer): the recorded shape
				     */
			h = L->h;
			w = L->w;
			L->ops = (uint64_t)c * h * w;
			break;
		default:
			L->ops = in_elems;
			break;
		}
		L->c = c;
		L->h = h;
		L->w = w;
		L->elems = (uint64_t)c * h * w;
		if (L->elems > ARCH_MAX_DIM)
			return arch_fail(err, errlen, path, "layer %u: %llu output elements", i,
					 (unsigned long long)L->elems);
		if ((L->type == MODEL_SRC_DENSE || L->type == MODEL_SRC_CONV) &&
		    (L->flags & MODEL_SF_BINW))
			L->weight_bytes =
			    (L->params - ((L->flags & MODEL_SF_BIAS) ? c : 0) + 7) / 8 +
			    ((L->flags & MODEL_SF_BIAS) ? 4 * (uint64_t)c : 0);
		else
			L->weight_bytes = 4 * L->params;
		L->exec_mask = SPLIT_EXM(SPLIT_EX_CPU) | SPLIT_EXM(SPLIT_EX_GPU);
		if (L->type == MODEL_SRC_PAD || L->type == MODEL_SRC_SIGN3) /* no GPU kernel */
			L->exec_mask = SPLIT_EXM(SPLIT_EX_CPU);
	}
	return 0;
}

/* Layers [src_first of op nic_first, n) NIC-runnable (nic_first == m->n_layers: none). */
static void arch_mark_nic(struct split_arch *a, const struct model *m, uint32_t nic_first)
{
	if (nic_first < m->n_layers)
		for (uint32_t i = m->layers[nic_first].src_first; i < a->n; i++)
			a->l[i].exec_mask |= SPLIT_EXM(SPLIT_EX_NIC);
}

/*
 * The NIC's part of an interchange architecture: the ops the compiler's shape-only pass lowers
 * it to, asked kexec_nic_first ("groups" changes no op, only the weights' shape, and the pass
 * ignores it). An architecture the compiler refuses has no NIC part.
 */
static int arch_nic_from_compiler(struct split_arch *a, const struct model_ic_model *ic)
{
	struct model m;
	char err[320];
	int ret;

	ret = model_compile_shapes(ic, &m, err, sizeof(err));
	if (ret == -ENOMEM)
		return ret;
	if (!ret) {
		arch_mark_nic(a, &m, kexec_nic_first(&m));
		model_compiled_free(&m);
	}
	return 0;
}

/* a with name (MODEL_NAME_MAX bytes), input and n zeroed layers; 0 or -ENOMEM (label: in err). */
static int arch_alloc(struct split_arch *a, const char *name, const struct model_shape *input,
		      uint32_t n, const char *label, char *err, size_t errlen)
{
	memset(a, 0, sizeof(*a));
	memcpy(a->name, name, sizeof(a->name));
	a->input = *input;
	a->n = n;
	a->l = calloc(n, sizeof(*a->l));
	if (a->l)
		return 0;
	arch_fail(err, errlen, label, "out of memory");
	return -ENOMEM;
}

/* The analysis' layers from the parsed architecture: its fields, shapes computed later. */
static void arch_from_ic(struct split_arch *a, const struct model_ic_model *ic)
{
	for (uint32_t i = 0; i < a->n; i++) {
		const struct model_ic_layer *L = &ic->layers[i];
		bool window = L->type == MODEL_SRC_CONV || L->type == MODEL_SRC_MAXPOOL;

		a->l[i] = (struct split_layer){
		    .type = L->type,
		    .flags = (L->bias ? MODEL_SF_BIAS : 0) | (L->binw ? MODEL_SF_BINW : 0),
		    .c = L->out,
		    .kernel = L->type == MODEL_SRC_LRN ? L->lrn_size
			      : window		       ? L->kernel
						       : 0,
		    .stride = window ? L->stride : 0,
		    .pad = L->type == MODEL_SRC_CONV ? L->pad : 0,
		    .groups = L->groups ? L->groups : 1,
		};
	}
}

int split_arch_load(const char *path, struct split_arch *a, char *err, size_t errlen)
{
	struct model_ic_model ic = {.arch_path = path, .weights_path = ""};
	int ret;

	memset(a, 0, sizeof(*a));
	ret = model_ic_load_arch(&ic, MODEL_IC_ARCH_GROUPS, err, errlen);
	if (!ret)
		ret = arch_alloc(a, ic.name, &ic.input, ic.n_layers, path, err, errlen);
	if (ret)
		goto out_free_ic;
	arch_from_ic(a, &ic);
	ret = arch_shapes(a, path, err, errlen);
	if (!ret && arch_nic_from_compiler(a, &ic)) {
		arch_fail(err, errlen, path, "out of memory");
		ret = -ENOMEM;
	}
	if (ret)
		split_arch_free(a);

out_free_ic:
	model_ic_free(&ic);
	return ret;
}

int split_arch_from_model(const struct model *m, uint32_t nic_first_op, struct split_arch *a,
			  char *err, size_t errlen)
{
	int ret = arch_alloc(a, m->name, &m->input, m->n_src, m->name, err, errlen);

	if (ret)
		return ret;
	for (uint32_t i = 0; i < a->n; i++) {
		const struct model_src_layer *s = &m->src[i];
		struct split_layer *L = &a->l[i];

		L->type = s->type;
		L->flags = s->flags;
		L->c = s->c;
		L->h = s->h;
		L->w = s->w;
		L->kernel = s->kernel;
		L->stride = s->stride;
		L->pad = s->pad;
		L->groups = 1;
	}
	ret = arch_shapes(a, m->name, err, errlen);
	if (ret) {
		split_arch_free(a);
		return ret;
	}
	arch_mark_nic(a, m, nic_first_op);
	return 0;
}

void split_arch_free(struct split_arch *a)
{
	free(a->l);
	a->l = NULL;
	a->n = 0;
}
