/* SPDX-License-Identifier: MIT */
/* onnx/onnx_impl.h — internal to onnx/: decoded constants and node attributes. */
#ifndef ONNX_IMPL_H
#define ONNX_IMPL_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

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

#endif /* ONNX_IMPL_H */
