// SPDX-License-Identifier: MIT
/*
 * The graph under import as onnx_import.c (the walk) and onnx_ops.c (the nodes) both use it:
 * node predicates, the constants, and the interchange layers and arrays appended.
 */
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "model/model_file.h"
#include "model/onnx/onnx_impl.h"
#include "model/onnx/onnx_import.h"

/* --- nodes and constants ----------------------------------------------------------------- */

static const char *const qonnx_domains[] = {"qonnx.custom_op.general", "finn.custom_op.general"};

bool onnx_default_domain(const char *d)
{
	return !d || !*d || !strcmp(d, "ai.onnx");
}

bool onnx_qonnx_domain(const char *d)
{
	return d && (!strcmp(d, qonnx_domains[0]) || !strcmp(d, qonnx_domains[1]));
}

bool onnx_op_is(const Onnx__NodeProto *n, const char *op)
{
	return n->op_type && !strcmp(n->op_type, op) && onnx_default_domain(n->domain);
}

int onnx_nomem(struct onnx_walk *x)
{
	snprintf(x->e.err, x->e.errlen, "%s: out of memory", x->e.label);
	return -ENOMEM;
}

const struct onnx_const *onnx_const_find(const struct onnx_walk *x, const char *name)
{
	if (!name || !*name)
		return NULL;
	for (uint32_t i = x->n_consts; i-- > 0;)
		if (!strcmp(x->consts[i].name, name))
			return &x->consts[i];
	return NULL;
}

bool onnx_has_output(const Onnx__NodeProto *n)
{
	return n->n_output >= 1 && *n->output[0];
}

/* Input i of node n as a constant, or an error naming it. */
const struct onnx_const *onnx_input_const(struct onnx_walk *x, const Onnx__NodeProto *n, size_t i,
					  const char *role)
{
	const struct onnx_const *c;

	if (i >= n->n_input || !*n->input[i]) {
		onnx_fail(&x->e, n, "input %zu (%s) missing", i, role);
		return NULL;
	}
	c = onnx_const_find(x, n->input[i]);
	if (!c)
		onnx_fail(&x->e, n,
			  "input %zu (%s) '%s' is not a constant (initializer or Constant): only a "
			  "chain from the one data input is supported",
			  i, role, n->input[i]);
	return c;
}

bool onnx_const_all(const struct onnx_const *c, double v)
{
	for (uint64_t i = 0; i < c->count; i++)
		if (c->data[i] != v)
			return false;
	return c->count > 0;
}

bool onnx_const_binary(const struct onnx_const *c)
{
	for (uint64_t i = 0; i < c->count; i++)
		if (c->data[i] != 1.0 && c->data[i] != -1.0)
			return false;
	return true;
}

/* --- layers ----------------------------------------------------------------------------- */

struct model_ic_layer *onnx_layer_add(struct onnx_walk *x, const Onnx__NodeProto *n, uint32_t type)
{
	struct onnx_import *imp = x->imp;
	char label[160];

	if (imp->ic.n_layers == x->cap_layers) {
		uint32_t cap = x->cap_layers ? 2 * x->cap_layers : 16;
		struct model_ic_layer *nl = realloc(imp->ic.layers, cap * sizeof(*nl));
		char **nn;

		if (!nl)
			return NULL;
		imp->ic.layers = nl;
		nn = realloc(imp->layer_node, cap * sizeof(*nn));
		if (!nn)
			return NULL;
		imp->layer_node = nn;
		x->cap_layers = cap;
	}
	if (imp->ic.n_layers >= MODEL_FILE_MAX_SRC) {
		onnx_fail(&x->e, n, "more than %d layers", MODEL_FILE_MAX_SRC);
		return NULL;
	}
	snprintf(label, sizeof(label), "node '%s' (%s)",
		 n->name && *n->name ? n->name : "(unnamed)", n->op_type ? n->op_type : "?");
	imp->layer_node[imp->ic.n_layers] = strdup(label);
	if (!imp->layer_node[imp->ic.n_layers])
		return NULL;
	imp->ic.layers[imp->ic.n_layers] = (struct model_ic_layer){.type = type, .eps = 1e-5};
	return &imp->ic.layers[imp->ic.n_layers++];
}

/* Append array "L.name" of the last layer, taking ownership of data. */
int onnx_array_add(struct onnx_walk *x, const char *name, uint32_t ndim, const uint64_t *shape,
		   double *data)
{
	struct onnx_import *imp = x->imp;
	struct model_ic_array *a;
	char key[32];

	if (imp->ic.n_arrays == x->cap_arrays) {
		uint32_t cap = x->cap_arrays ? 2 * x->cap_arrays : 16;
		struct model_ic_array *na = realloc(imp->ic.arrays, cap * sizeof(*na));

		if (!na) {
			free(data);
			return onnx_nomem(x);
		}
		imp->ic.arrays = na;
		x->cap_arrays = cap;
	}
	snprintf(key, sizeof(key), "%u.%s", imp->ic.n_layers - 1, name);
	a = &imp->ic.arrays[imp->ic.n_arrays];
	*a = (struct model_ic_array){.key = strdup(key), .ndim = ndim, .count = 1, .data = data};
	if (!a->key) {
		free(data);
		return onnx_nomem(x);
	}
	for (uint32_t d = 0; d < ndim; d++) {
		a->shape[d] = shape[d];
		a->count *= shape[d];
	}
	imp->ic.n_arrays++;
	return 0;
}

int onnx_array_copy(struct onnx_walk *x, const char *name, uint32_t ndim, const uint64_t *shape,
		    const double *src, uint64_t count, double scale)
{
	double *d = malloc((count ? count : 1) * sizeof(double));

	if (!d)
		return onnx_nomem(x);
	for (uint64_t i = 0; i < count; i++)
		d[i] = scale == 1.0 ? src[i] : scale * src[i];
	return onnx_array_add(x, name, ndim, shape, d);
}
