/* SPDX-License-Identifier: MIT */
/* model/onnx/onnx_impl.h — internal to model/onnx/: the import's state, constants, attributes. */
#ifndef MODEL_ONNX_IMPL_H
#define MODEL_ONNX_IMPL_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "model/model.h"
#include "onnx.pb-c.h"

#define ONNX_MAXDIM 8

/* A constant tensor, values converted to double. */
struct onnx_const {
	const char *name;
	uint32_t ndim;
	int64_t dims[ONNX_MAXDIM];
	uint64_t count;
	double *data;
};

/* Messages: "LABEL: node 'NAME' (OP): ..." or "LABEL: ..." */
struct onnx_msg {
	const char *label;
	char *err;
	size_t errlen;
};

struct onnx_import;

/*
 * The state of one import: onnx_import.c walks the graph, onnx_ops.c converts its nodes, both
 * through onnx_graph.c (constants, layers, arrays) and onnx_proto.c (tensors, attributes).
 */
struct onnx_walk {
	struct onnx_msg e;
	const Onnx__GraphProto *g;
	struct onnx_import *imp;
	struct onnx_const *consts;
	uint32_t n_consts, cap_consts, cap_layers, cap_arrays;
	bool *folded; /* per node: computes a constant */

	/* the tensor flowing along the chain, per batch item */
	const char *cur;
	struct model_shape s;
	uint32_t rank; /* dimensions after the batch one */
	int64_t batch; /* the input's first dimension, -1 if symbolic */
	bool u8_cast;  /* the input is uint8 and its Cast to float has not come yet */
};

/* --- onnx_graph.c ------------------------------------------------------------------------ */

bool onnx_default_domain(const char *d);
bool onnx_qonnx_domain(const char *d);
/* Is n the default-domain operator op? */
bool onnx_op_is(const Onnx__NodeProto *n, const char *op);
bool onnx_has_output(const Onnx__NodeProto *n);
int onnx_nomem(struct onnx_walk *x);

/* The constant named `name`, or NULL. */
const struct onnx_const *onnx_const_find(const struct onnx_walk *x, const char *name);
/* Input i of n as a constant, or NULL with an error naming the input and its role. */
const struct onnx_const *onnx_input_const(struct onnx_walk *x, const Onnx__NodeProto *n, size_t i,
					  const char *role);
/* Every value equals v (and there is one); every value is +1 or -1. */
bool onnx_const_all(const struct onnx_const *c, double v);
bool onnx_const_binary(const struct onnx_const *c);

/* Append a layer made by node n (NULL when out of memory or over the limit, message set). */
struct model_ic_layer *onnx_layer_add(struct onnx_walk *x, const Onnx__NodeProto *n, uint32_t type);
/* Add array "LAYER.name" to the last layer: _add takes ownership of data, _copy scales a copy. */
int onnx_array_add(struct onnx_walk *x, const char *name, uint32_t ndim, const uint64_t *shape,
		   double *data);
int onnx_array_copy(struct onnx_walk *x, const char *name, uint32_t ndim, const uint64_t *shape,
		    const double *src, uint64_t count, double scale);

/* --- onnx_ops.c -------------------------------------------------------------------------- */

/* Convert node i of the graph (x->cur is its input 0); *span: the nodes it consumed (>= 1). */
int onnx_chain_node(struct onnx_walk *x, size_t i, size_t *span);

/* --- onnx_proto.c ------------------------------------------------------------------------ */

int onnx_fail(const struct onnx_msg *e, const Onnx__NodeProto *n, const char *fmt, ...)
    __attribute__((format(printf, 3, 4)));

/* Decode a TensorProto (raw_data or typed fields) into *c (data malloc'd). `what` names it. */
int onnx_tensor_decode(const struct onnx_msg *e, const Onnx__NodeProto *n,
		       const Onnx__TensorProto *t, const char *what, struct onnx_const *c);

/* The attribute `name` of node n, or NULL. */
const Onnx__AttributeProto *onnx_attr(const Onnx__NodeProto *n, const char *name);
/* Refuse any attribute not in the NULL-terminated list `known`. */
int onnx_attrs_known(const struct onnx_msg *e, const Onnx__NodeProto *n, const char *const *known);
/* Typed getters: the default when absent; a wrong type is an error naming the attribute. */
int onnx_attr_int(const struct onnx_msg *e, const Onnx__NodeProto *n, const char *name, int64_t def,
		  int64_t *v);
int onnx_attr_float(const struct onnx_msg *e, const Onnx__NodeProto *n, const char *name,
		    double def, double *v);
/* ints: *count 0 when absent; at most max values. */
int onnx_attr_ints(const struct onnx_msg *e, const Onnx__NodeProto *n, const char *name, int64_t *v,
		   uint32_t max, uint32_t *count);
/* string into buf (NUL-terminated), "" when absent. */
int onnx_attr_string(const struct onnx_msg *e, const Onnx__NodeProto *n, const char *name,
		     char *buf, size_t len);

/*
 * A float32 attribute as the shortest decimal that rounds to it, read as a double: exporters
 * write decimal constants (eps 1e-4) that float32 rounds; the interchange spec takes them in
 * float64, so the import of a network equals its interchange form bit for bit.
 */
double onnx_float_decimal(float f);

#endif /* MODEL_ONNX_IMPL_H */
