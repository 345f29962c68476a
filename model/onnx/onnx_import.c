// SPDX-License-Identifier: MIT
/*
 * ONNX graph -> interchange layers (model/compile.h): the constants folded, the chain walked
 * (each node by onnx_ops.c), the import API of onnx_import.h.
 */
#include <errno.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>

#include "model/model_file.h"
#include "model/onnx/onnx_impl.h"
#include "model/onnx/onnx_import.h"

#define ONNX_MAX_FILE (1ull << 31)

/* --- constant folding ------------------------------------------------------------------- */

static int ox_add_const(struct onnx_walk *x, struct onnx_const *c)
{
	if (x->n_consts == x->cap_consts) {
		uint32_t cap = x->cap_consts ? 2 * x->cap_consts : 32;
		struct onnx_const *nc = realloc(x->consts, cap * sizeof(*nc));

		if (!nc) {
			free(c->data);
			return onnx_nomem(x);
		}
		x->consts = nc;
		x->cap_consts = cap;
	}
	x->consts[x->n_consts++] = *c;
	return 0;
}

static int fold_constant_node(struct onnx_walk *x, const Onnx__NodeProto *n, struct onnx_const *c)
{
	static const char *const known[] = {"value", "value_float", "value_int", "value_ints",
					    NULL};
	const Onnx__AttributeProto *a;
	int ret = onnx_attrs_known(&x->e, n, known);

	if (ret)
		return ret;
	if (n->n_attribute != 1)
		return onnx_fail(&x->e, n,
				 "needs exactly one attribute (value, value_float, "
				 "value_int or value_ints)");
	a = n->attribute[0];
	memset(c, 0, sizeof(*c));
	if (!strcmp(a->name, "value")) {
		if (!a->t)
			return onnx_fail(&x->e, n, "attribute 'value' must be a tensor");
		return onnx_tensor_decode(&x->e, n, a->t, "attribute 'value'", c);
	}
	c->count = !strcmp(a->name, "value_ints") ? a->n_ints : 1;
	c->ndim = !strcmp(a->name, "value_ints") ? 1 : 0;
	c->dims[0] = (int64_t)c->count;
	if (c->count > MODEL_FILE_MAX_ELEMS)
		return onnx_fail(&x->e, n, "attribute '%s' too large", a->name);
	c->data = malloc((c->count ? c->count : 1) * sizeof(double));
	if (!c->data)
		return onnx_nomem(x);
	if (!strcmp(a->name, "value_float"))
		c->data[0] = a->f;
	else if (!strcmp(a->name, "value_int"))
		c->data[0] = (double)a->i;
	else
		for (uint64_t i = 0; i < c->count; i++)
			c->data[i] = (double)a->ints[i];
	return 0;
}

static int copy_const(struct onnx_walk *x, const struct onnx_const *from, struct onnx_const *c)
{
	*c = *from;
	c->data = malloc((from->count ? from->count : 1) * sizeof(double));
	if (!c->data)
		return onnx_nomem(x);
	memcpy(c->data, from->data, from->count * sizeof(double));
	return 0;
}

/* Is node n foldable now (every input constant, an op that folds)? Fills *c. 1 = folded. */
static int fold_node(struct onnx_walk *x, const Onnx__NodeProto *n, struct onnx_const *c)
{
	const struct onnx_const *in;
	int ret;

	if (n->n_output < 1 || !n->output[0] || !*n->output[0])
		return 0;
	if (onnx_op_is(n, "Constant") && n->n_input == 0) {
		ret = fold_constant_node(x, n, c);
		return ret ? ret : 1;
	}
	for (size_t i = 0; i < n->n_input; i++)
		if (*n->input[i] && !onnx_const_find(x, n->input[i]))
			return 0;
	if (n->n_input < 1 || !(in = onnx_const_find(x, n->input[0])))
		return 0;
	if (onnx_op_is(n, "Identity")) {
		ret = copy_const(x, in, c);
		return ret ? ret : 1;
	}
	if (onnx_op_is(n, "Cast")) {
		int64_t to;

		ret = onnx_attr_int(&x->e, n, "to", 0, &to);
		if (ret)
			return ret;
		if (to != ONNX__TENSOR_PROTO__DATA_TYPE__FLOAT &&
		    to != ONNX__TENSOR_PROTO__DATA_TYPE__DOUBLE)
			return 0;
		ret = copy_const(x, in, c);
		if (!ret && to == ONNX__TENSOR_PROTO__DATA_TYPE__FLOAT)
			for (uint64_t i = 0; i < c->count; i++)
				c->data[i] = (float)c->data[i];
		return ret ? ret : 1;
	}
	if (n->op_type && !strcmp(n->op_type, "BipolarQuant") && onnx_qonnx_domain(n->domain)) {
		const struct onnx_const *sc =
		    n->n_input == 2 ? onnx_const_find(x, n->input[1]) : NULL;

		if (!sc || sc->count != 1)
			return onnx_fail(&x->e, n, "input 1 (scale) must be one constant value");
		ret = copy_const(x, in, c);
		if (ret)
			return ret;
		for (uint64_t i = 0; i < c->count; i++)
			c->data[i] = (c->data[i] >= 0 ? 1.0 : -1.0) * sc->data[0];
		return 1;
	}
	return 0;
}

static int fold_constants(struct onnx_walk *x)
{
	const Onnx__GraphProto *g = x->g;
	int ret;

	for (size_t i = 0; i < g->n_initializer; i++) {
		struct onnx_const c;

		if (!g->initializer[i]->name || !*g->initializer[i]->name)
			return onnx_fail(&x->e, NULL, "initializer %zu has no name", i);
		ret = onnx_tensor_decode(&x->e, NULL, g->initializer[i], "initializer", &c);
		if (!ret)
			ret = ox_add_const(x, &c);
		if (ret)
			return ret;
	}
	for (size_t i = 0; i < g->n_node; i++) {
		struct onnx_const c;

		ret = fold_node(x, g->node[i], &c);
		if (ret < 0)
			return ret;
		if (ret == 1) {
			c.name = g->node[i]->output[0];
			ret = ox_add_const(x, &c);
			if (ret)
				return ret;
			x->folded[i] = true;
		}
	}
	return 0;
}

/* --- the graph -------------------------------------------------------------------------- */

static bool is_initializer(const Onnx__GraphProto *g, const char *name)
{
	for (size_t i = 0; i < g->n_initializer; i++)
		if (g->initializer[i]->name && !strcmp(g->initializer[i]->name, name))
			return true;
	return false;
}

static int check_versions(struct onnx_walk *x, const Onnx__ModelProto *mp)
{
	int64_t opset = -1;

	if (!mp->has_ir_version || mp->ir_version < 3 || mp->ir_version > 9)
		return onnx_fail(&x->e, NULL, "ir_version %lld: 3 to 9 are supported",
				 (long long)mp->ir_version);
	for (size_t i = 0; i < mp->n_opset_import; i++)
		if (onnx_default_domain(mp->opset_import[i]->domain))
			opset = mp->opset_import[i]->version;
	if (opset < 9 || opset > 18)
		return onnx_fail(&x->e, NULL, "default-domain opset %lld: 9 to 18 are supported",
				 (long long)opset);
	if (!mp->graph)
		return onnx_fail(&x->e, NULL, "no graph");
	return 0;
}

/* The one data input: its element type and shape (first dimension the batch). */
static int take_input(struct onnx_walk *x)
{
	const Onnx__GraphProto *g = x->g;
	const Onnx__ValueInfoProto *in = NULL;
	const Onnx__TypeProto__Tensor *tt;
	uint32_t dims[3] = {1, 1, 1};

	for (size_t i = 0; i < g->n_input; i++) {
		if (!g->input[i]->name || is_initializer(g, g->input[i]->name))
			continue;
		if (in)
			return onnx_fail(&x->e, NULL,
					 "graph inputs '%s' and '%s': exactly one data input is "
					 "supported (give the others as initializers)",
					 in->name, g->input[i]->name);
		in = g->input[i];
	}
	if (!in)
		return onnx_fail(&x->e, NULL, "the graph has no data input");
	if (!in->type || in->type->value_case != ONNX__TYPE_PROTO__VALUE_TENSOR_TYPE ||
	    !(tt = in->type->tensor_type) || !tt->shape)
		return onnx_fail(&x->e, NULL, "input '%s': a tensor with a known shape is needed",
				 in->name);
	if (tt->elem_type != ONNX__TENSOR_PROTO__DATA_TYPE__FLOAT &&
	    tt->elem_type != ONNX__TENSOR_PROTO__DATA_TYPE__UINT8)
		return onnx_fail(&x->e, NULL,
				 "input '%s': element type %d; float or uint8 (then "
				 "Cast to float) is supported",
				 in->name, tt->elem_type);
	if (tt->shape->n_dim < 1 || tt->shape->n_dim > 4)
		return onnx_fail(&x->e, NULL,
				 "input '%s': %zu dimensions; (batch, ...) with 1 to 3 "
				 "more is supported",
				 in->name, tt->shape->n_dim);
	x->batch = -1;
	for (size_t d = 0; d < tt->shape->n_dim; d++) {
		const Onnx__TensorShapeProto__Dimension *dm = tt->shape->dim[d];
		bool val = dm->value_case == ONNX__TENSOR_SHAPE_PROTO__DIMENSION__VALUE_DIM_VALUE;

		if (d == 0) {
			x->batch = val ? dm->dim_value : -1;
			continue;
		}
		if (!val || dm->dim_value < 1 || (uint64_t)dm->dim_value > MODEL_FILE_MAX_ELEMS)
			return onnx_fail(
			    &x->e, NULL,
			    "input '%s': dimension %zu must be a fixed size >= 1 (only the "
			    "batch dimension may be symbolic)",
			    in->name, d);
		dims[d - 1] = (uint32_t)dm->dim_value;
	}
	x->cur = in->name;
	x->rank = (uint32_t)tt->shape->n_dim - 1;
	x->s = (struct model_shape){MODEL_FMT_F32, dims[0], dims[1], dims[2]};
	if (model_shape_elems(&x->s) > MODEL_FILE_MAX_ELEMS)
		return onnx_fail(&x->e, NULL, "input '%s' too large", in->name);
	if (tt->elem_type == ONNX__TENSOR_PROTO__DATA_TYPE__UINT8) {
		x->s.fmt = MODEL_FMT_U8;
		x->u8_cast = true;
	}
	return 0;
}

/* --- the classification head ------------------------------------------------------------- */

static bool is_head(const Onnx__NodeProto *n)
{
	return onnx_op_is(n, "Softmax") || onnx_op_is(n, "LogSoftmax") || onnx_op_is(n, "ArgMax");
}

/*
 * Node i is a Softmax, LogSoftmax or ArgMax: dropped when it and every node after it are such
 * heads over the class axis (the argmax of the scores, the class, is the same without them),
 * noted in imp->dropped; refused with the reason otherwise.
 */
static int drop_head(struct onnx_walk *x, size_t i)
{
	static const char *const known_sm[] = {"axis", NULL};
	static const char *const known_am[] = {"axis", "keepdims", "select_last_index", NULL};
	const Onnx__GraphProto *g = x->g;
	const Onnx__NodeProto *n = g->node[i];
	const bool argmax = onnx_op_is(n, "ArgMax");
	int64_t axis, last = 0;
	size_t len;
	int ret;

	for (size_t j = i + 1; j < g->n_node; j++)
		if (!x->folded[j] && !is_head(g->node[j]))
			return onnx_fail(&x->e, n,
					 "supported only at the end of the graph (where it is "
					 "dropped: the class is the argmax of its input), not "
					 "before node '%s' (%s)",
					 g->node[j]->name ? g->node[j]->name : "",
					 g->node[j]->op_type ? g->node[j]->op_type : "?");
	if (x->imp->keep_softmax)
		return onnx_fail(
		    &x->e, n,
		    "refused by --keep-softmax (without it this trailing %s is dropped: "
		    "the classes are the same, the scores are its input)",
		    n->op_type);
	ret = onnx_attrs_known(&x->e, n, argmax ? known_am : known_sm);
	if (!ret)
		ret = onnx_attr_int(&x->e, n, "axis", argmax ? 0 : -1, &axis);
	if (!ret && argmax)
		ret = onnx_attr_int(&x->e, n, "select_last_index", 0, &last);
	if (ret)
		return ret;
	if (x->rank != 1 || (axis != 1 && axis != -1))
		return onnx_fail(&x->e, n,
				 "axis %lld of a tensor of rank %u after the batch: only over the "
				 "classes of a (batch, classes) tensor (axis 1 or -1)",
				 (long long)axis, x->rank);
	if (last)
		return onnx_fail(&x->e, n,
				 "select_last_index 1: ties would pick the last class, the "
				 "model's classes pick the first");
	len = strlen(x->imp->dropped);
	snprintf(x->imp->dropped + len, sizeof(x->imp->dropped) - len, "%snode '%s' (%s)",
		 len ? ", " : "", n->name && *n->name ? n->name : "(unnamed)", n->op_type);
	return 0;
}

static int walk(struct onnx_walk *x)
{
	const Onnx__GraphProto *g = x->g;
	const Onnx__NodeProto *prev = NULL;
	int ret;

	for (size_t i = 0; i < g->n_node; i++) {
		const Onnx__NodeProto *n = g->node[i];
		size_t span;

		if (x->folded[i])
			continue;
		if (n->n_input < 1 || strcmp(n->input[0], x->cur))
			return onnx_fail(
			    &x->e, n,
			    "not a chain: input 0 is '%s', not '%s' (the output of %s); "
			    "branches, residual connections and ops on constants only are "
			    "not supported",
			    n->n_input ? n->input[0] : "(none)", x->cur,
			    prev ? "the previous node" : "the graph input");
		if (!onnx_has_output(n))
			return onnx_fail(&x->e, n, "output 0 missing");
		span = 1;
		ret = is_head(n) && !x->u8_cast ? drop_head(x, i) : onnx_chain_node(x, i, &span);
		if (ret)
			return ret;
		i += span - 1;
		prev = g->node[i];
		x->cur = prev->output[0];
	}
	if (g->n_output != 1)
		return onnx_fail(&x->e, NULL, "the graph has %zu outputs; exactly one is supported",
				 g->n_output);
	if (!g->output[0]->name || strcmp(g->output[0]->name, x->cur))
		return onnx_fail(&x->e, NULL, "graph output '%s' is not the end of the chain '%s'",
				 g->output[0]->name ? g->output[0]->name : "", x->cur);
	if (x->u8_cast)
		return onnx_fail(&x->e, NULL, "the uint8 input is never Cast to float");
	if (!x->imp->ic.n_layers)
		return onnx_fail(&x->e, NULL, "no layers between the input and the output");
	return 0;
}

void onnx_import_free(struct onnx_import *imp)
{
	for (uint32_t i = 0; i < imp->ic.n_arrays; i++) {
		free(imp->ic.arrays[i].key);
		free(imp->ic.arrays[i].data);
	}
	for (uint32_t i = 0; i < imp->ic.n_layers; i++)
		free(imp->layer_node[i]);
	free(imp->ic.arrays);
	free(imp->ic.layers);
	free(imp->layer_node);
	free((char *)imp->ic.arch_path);
	memset(imp, 0, sizeof(*imp));
}

int onnx_import_buffer(const void *buf, size_t len, const char *label, unsigned flags,
		       struct onnx_import *imp, char *err, size_t errlen)
{
	struct onnx_walk x = {.e = {label, err, errlen}, .imp = imp};
	Onnx__ModelProto *mp;
	const char *base = strrchr(label, '/');
	int ret;

	memset(imp, 0, sizeof(*imp));
	imp->keep_softmax = flags & ONNX_IMPORT_KEEP_SOFTMAX;
	mp = onnx__model_proto__unpack(NULL, len, buf);
	if (!mp)
		return onnx_fail(&x.e, NULL, "not a valid ONNX protobuf (ModelProto)");
	ret = check_versions(&x, mp);
	if (ret)
		goto out;
	x.g = mp->graph;
	x.folded = calloc(x.g->n_node ? x.g->n_node : 1, sizeof(*x.folded));
	imp->ic.arch_path = strdup(label);
	if (!x.folded || !imp->ic.arch_path) {
		ret = onnx_nomem(&x);
		goto out;
	}
	imp->ic.weights_path = imp->ic.arch_path;
	snprintf(imp->ic.name, sizeof(imp->ic.name), "%s",
		 x.g->name && *x.g->name ? x.g->name
		 : base			 ? base + 1
					 : label);
	ret = fold_constants(&x);
	if (!ret)
		ret = take_input(&x);
	if (!ret)
		imp->ic.input = x.s;
	if (!ret)
		ret = walk(&x);
out:
	for (uint32_t i = 0; i < x.n_consts; i++)
		free(x.consts[i].data);
	free(x.consts);
	free(x.folded);
	onnx__model_proto__free_unpacked(mp, NULL);
	if (ret)
		onnx_import_free(imp);
	return ret;
}

int onnx_import_file(const char *path, unsigned flags, struct onnx_import *imp, char *err,
		     size_t errlen)
{
	FILE *f = fopen(path, "rb");
	struct stat st;
	void *buf;
	int ret;

	memset(imp, 0, sizeof(*imp));
	if (!f) {
		ret = -errno;
		snprintf(err, errlen, "%s: %s", path, strerror(errno));
		return ret;
	}
	if (fstat(fileno(f), &st) || !S_ISREG(st.st_mode) || (uint64_t)st.st_size > ONNX_MAX_FILE) {
		fclose(f);
		snprintf(err, errlen, "%s: not a regular file of at most %llu bytes", path,
			 (unsigned long long)ONNX_MAX_FILE);
		return -EINVAL;
	}
	buf = malloc(st.st_size ? (size_t)st.st_size : 1);
	if (!buf || fread(buf, 1, (size_t)st.st_size, f) != (size_t)st.st_size) {
		ret = buf ? -EIO : -ENOMEM;
		snprintf(err, errlen, "%s: %s", path, buf ? "read error" : "out of memory");
		free(buf);
		fclose(f);
		return ret;
	}
	fclose(f);
	ret = onnx_import_buffer(buf, (size_t)st.st_size, path, flags, imp, err, errlen);
	free(buf);
	return ret;
}

int onnx_import_compile(const struct onnx_import *imp, struct model *m, FILE *notes, char *err,
			size_t errlen)
{
	int ret = model_compile(&imp->ic, m, err, errlen);

	if (ret) {
		/* model_compile names the layer by index: add the node it came from */
		const char *p = strstr(err, ": layer ");
		unsigned int li;

		if (p && sscanf(p, ": layer %u", &li) == 1 && li < imp->ic.n_layers) {
			size_t l = strlen(err);

			snprintf(err + l, errlen > l ? errlen - l : 0, " [layer %u is %s]", li,
				 imp->layer_node[li]);
		}
		return ret;
	}
	for (uint32_t i = 0; notes && i < m->n_layers; i++)
		if (m->layers[i].op == MODEL_OP_SIGN3)
			fprintf(
			    notes,
			    "import: %s: Sign runs three-valued (Sign(0) = 0): no proof that its "
			    "input is never 0, so it is not a 1-bit sign\n",
			    imp->layer_node[m->layers[i].src_first]);
	return 0;
}

/* Does model m, compiled from imp, run source layer i as the three-valued op? */
static bool runs_sign3(const struct model *m, uint32_t i)
{
	for (uint32_t k = 0; k < m->n_layers; k++)
		if (m->layers[k].op == MODEL_OP_SIGN3 && m->layers[k].src_first <= i &&
		    i < m->layers[k].src_first +
			    (m->layers[k].src_count ? m->layers[k].src_count : 1))
			return true;
	return false;
}

int onnx_import_to_interchange(struct onnx_import *imp, const struct model *m, char *err,
			       size_t errlen)
{
	for (uint32_t i = 0; i < imp->ic.n_layers; i++) {
		struct model_ic_layer *L = &imp->ic.layers[i];
		const uint32_t *p = L->pads;

		if (L->type == MODEL_SRC_PAD) { /* -inf: a max-pool's, else a conv's */
			bool pool = L->pad_neginf;

			snprintf(
			    err, errlen,
			    "%s: %s: %s padding (top %u, left %u, bottom %u, right %u%s) has no "
			    "interchange form (its %s); import it with -o instead",
			    imp->ic.arch_path, imp->layer_node[i], pool ? "max-pool" : "asymmetric",
			    p[0], p[1], p[2], p[3], pool ? ": pads or ceil_mode" : "",
			    pool ? "maxpool has no padding" : "conv pads every side alike");
			return -EINVAL;
		}
		if (L->type != MODEL_SRC_SIGN3)
			continue;
		if (runs_sign3(m, i)) {
			snprintf(err, errlen,
				 "%s: %s: ONNX Sign is three-valued (Sign(0) = 0) and its input "
				 "can be exactly 0 here, but the interchange sign maps 0 to +1; "
				 "import it with -o instead",
				 imp->ic.arch_path, imp->layer_node[i]);
			return -EINVAL;
		}
		/* proven never 0 on its reachable inputs: the 1-bit sign gives the same */
		L->type = MODEL_SRC_SIGN;
	}
	imp->extended = false;
	return 0;
}
