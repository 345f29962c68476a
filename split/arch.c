// SPDX-License-Identifier: MIT
/* Static analysis: arch.json (or a model file's layer records) -> shapes, sizes and costs. */
#include <errno.h>
#include <jansson.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "exec/kexec.h"
#include "model/compile.h"
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

static const struct {
	const char *name;
	uint32_t type;
	const char *fields[8];
} kinds[] = {
    {"dense", MODEL_SRC_DENSE, {"type", "out", "bias", "binary_weights"}},
    {"conv",
     MODEL_SRC_CONV,
     {"type", "out", "kernel", "stride", "pad", "bias", "binary_weights", "groups"}},
    {"batchnorm", MODEL_SRC_BATCHNORM, {"type", "eps"}},
    {"sign", MODEL_SRC_SIGN, {"type"}},
    {"relu", MODEL_SRC_RELU, {"type"}},
    {"maxpool", MODEL_SRC_MAXPOOL, {"type", "kernel", "stride"}},
    {"flatten", MODEL_SRC_FLATTEN, {"type"}},
    {"lrn", MODEL_SRC_LRN, {"type", "size", "alpha", "beta", "k"}},
};

static int get_uint(json_t *o, const char *key, uint32_t def, uint32_t min, uint32_t *out)
{
	json_t *v = json_object_get(o, key);

	if (!v) {
		*out = def;
		return def >= min ? 0 : -EINVAL;
	}
	if (!json_is_integer(v) || json_integer_value(v) < min ||
	    json_integer_value(v) > ARCH_MAX_DIM)
		return -EINVAL;
	*out = (uint32_t)json_integer_value(v);
	return 0;
}

static int get_bool(json_t *o, const char *key, uint32_t bit, uint32_t *flags)
{
	json_t *v = json_object_get(o, key);

	if (!v)
		return 0;
	if (!json_is_boolean(v))
		return -EINVAL;
	if (json_is_true(v))
		*flags |= bit;
	return 0;
}

/* Fields of one layer, defaults applied; shapes are computed later. */
static int parse_layer(json_t *jl, uint32_t i, struct split_layer *L, const char *path, char *err,
		       size_t errlen)
{
	const char *type = json_string_value(json_object_get(jl, "type"));
	const char *key, *bad = NULL;
	unsigned k;
	json_t *v;

	if (!json_is_object(jl) || !type)
		return arch_fail(err, errlen, path, "layer %u: not an object with a \"type\"", i);
	for (k = 0; k < sizeof(kinds) / sizeof(kinds[0]); k++)
		if (!strcmp(type, kinds[k].name))
			break;
	if (k == sizeof(kinds) / sizeof(kinds[0]))
		return arch_fail(err, errlen, path, "layer %u: unknown type \"%.32s\"", i, type);
	json_object_foreach(jl, key, v)
	{
		bool ok = false;

		for (unsigned f = 0; f < 8 && kinds[k].fields[f]; f++)
			ok = ok || !strcmp(key, kinds[k].fields[f]);
		if (!ok)
			return arch_fail(err, errlen, path,
					 "layer %u (%s): unknown field \"%.32s\"", i, type, key);
	}
	memset(L, 0, sizeof(*L));
	L->type = kinds[k].type;
	L->groups = 1;
	switch (L->type) {
	case MODEL_SRC_CONV:
		if (get_uint(jl, "kernel", 0, 1, &L->kernel))
			bad = "kernel";
		else if (get_uint(jl, "stride", 1, 1, &L->stride))
			bad = "stride";
		else if (get_uint(jl, "pad", 0, 0, &L->pad))
			bad = "pad";
		else if (get_uint(jl, "groups", 1, 1, &L->groups))
			bad = "groups";
		/* fall through */
	case MODEL_SRC_DENSE:
		if (!bad && get_uint(jl, "out", 0, 1, &L->c))
			bad = "out";
		else if (!bad && get_bool(jl, "bias", MODEL_SF_BIAS, &L->flags))
			bad = "bias";
		else if (!bad && get_bool(jl, "binary_weights", MODEL_SF_BINW, &L->flags))
			bad = "binary_weights";
		break;
	case MODEL_SRC_MAXPOOL:
		if (get_uint(jl, "kernel", 0, 1, &L->kernel))
			bad = "kernel";
		else if (get_uint(jl, "stride", L->kernel, 1, &L->stride))
			bad = "stride";
		break;
	case MODEL_SRC_LRN:
		if (get_uint(jl, "size", 5, 1, &L->kernel) || !(L->kernel & 1))
			bad = "size";
		break;
	default:
		break;
	}
	if (bad)
		return arch_fail(err, errlen, path,
				 "layer %u (%s): field \"%s\" missing or invalid", i, type, bad);
	return 0;
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
 * it to, asked kexec_nic_first. "groups" changes no op (only the weights' shape), so the pass
 * sees a plain conv. An architecture the compiler refuses has no NIC part.
 */
static int arch_nic_from_compiler(struct split_arch *a)
{
	struct model_ic_model ic = {.arch_path = "", .weights_path = "", .input = a->input};
	struct model m;
	char err[320];
	int ret;

	memcpy(ic.name, a->name, sizeof(ic.name));
	ic.n_layers = a->n;
	ic.layers = calloc(a->n, sizeof(*ic.layers));
	if (!ic.layers)
		return -ENOMEM;
	for (uint32_t i = 0; i < a->n; i++) {
		const struct split_layer *L = &a->l[i];

		ic.layers[i] = (struct model_ic_layer){
		    .type = L->type,
		    .out = L->c,
		    .kernel = L->kernel,
		    .stride = L->stride,
		    .pad = L->pad,
		    .bias = (L->flags & MODEL_SF_BIAS) != 0,
		    .binw = (L->flags & MODEL_SF_BINW) != 0,
		    .lrn_size = L->kernel,
		};
	}
	ret = model_compile_shapes(&ic, &m, err, sizeof(err));
	free(ic.layers);
	if (ret == -ENOMEM)
		return ret;
	if (!ret) {
		arch_mark_nic(a, &m, kexec_nic_first(&m));
		model_compiled_free(&m);
	}
	return 0;
}

int split_arch_load(const char *path, struct split_arch *a, char *err, size_t errlen)
{
	json_error_t jerr;
	json_t *root, *in, *shape, *layers, *name;
	const char *dtype;
	int ret = -EINVAL;

	memset(a, 0, sizeof(*a));
	root = json_load_file(path, JSON_REJECT_DUPLICATES, &jerr);
	if (!root)
		return arch_fail(err, errlen, path, "line %d column %d: %s", jerr.line, jerr.column,
				 jerr.text);
	name = json_object_get(root, "name");
	in = json_object_get(root, "input");
	shape = json_object_get(in, "shape");
	dtype = json_string_value(json_object_get(in, "dtype"));
	layers = json_object_get(root, "layers");
	if (name && (!json_is_string(name) || json_string_length(name) >= MODEL_NAME_MAX)) {
		arch_fail(err, errlen, path, "\"name\" must be a string under %d bytes",
			  MODEL_NAME_MAX);
		goto out_put;
	}
	snprintf(a->name, sizeof(a->name), "%s", name ? json_string_value(name) : "");
	if (!json_is_array(shape) || json_array_size(shape) != 3 || !dtype ||
	    (strcmp(dtype, "u8") && strcmp(dtype, "f32"))) {
		arch_fail(err, errlen, path,
			  "\"input\" must have \"shape\" [C,H,W] and \"dtype\" "
			  "u8 or f32");
		goto out_put;
	}
	a->input.fmt = strcmp(dtype, "u8") ? MODEL_FMT_F32 : MODEL_FMT_U8;
	for (unsigned k = 0; k < 3; k++) {
		json_t *v = json_array_get(shape, k);
		uint32_t *d = k == 0 ? &a->input.c : k == 1 ? &a->input.h : &a->input.w;

		if (!json_is_integer(v) || json_integer_value(v) < 1 ||
		    json_integer_value(v) > ARCH_MAX_DIM) {
			arch_fail(err, errlen, path,
				  "input: \"shape\"[%u] must be a positive integer", k);
			goto out_put;
		}
		*d = (uint32_t)json_integer_value(v);
	}
	if (!json_is_array(layers) || !json_array_size(layers) ||
	    json_array_size(layers) > SPLIT_MAX_OPS) {
		arch_fail(err, errlen, path, "\"layers\" must be an array of 1..%d layers",
			  SPLIT_MAX_OPS);
		goto out_put;
	}
	a->n = (uint32_t)json_array_size(layers);
	a->l = calloc(a->n, sizeof(*a->l));
	if (!a->l) {
		ret = -ENOMEM;
		arch_fail(err, errlen, path, "out of memory");
		goto out_put;
	}
	for (uint32_t i = 0; i < a->n; i++)
		if (parse_layer(json_array_get(layers, i), i, &a->l[i], path, err, errlen))
			goto out_free;
	if (arch_shapes(a, path, err, errlen))
		goto out_free;
	if (arch_nic_from_compiler(a)) {
		ret = -ENOMEM;
		arch_fail(err, errlen, path, "out of memory");
		goto out_free;
	}
	json_decref(root);
	return 0;

out_free:
	split_arch_free(a);
out_put:
	json_decref(root);
	return ret;
}

int split_arch_from_model(const struct model *m, uint32_t nic_first_op, struct split_arch *a,
			  char *err, size_t errlen)
{
	int ret;

	memset(a, 0, sizeof(*a));
	memcpy(a->name, m->name, sizeof(a->name));
	a->input = m->input;
	a->n = m->n_src;
	a->l = calloc(a->n, sizeof(*a->l));
	if (!a->l)
		return arch_fail(err, errlen, m->name, "out of memory");
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
