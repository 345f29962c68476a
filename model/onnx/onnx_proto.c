// SPDX-License-Identifier: MIT
/* ONNX tensors and attributes, decoded and checked. */
#include <errno.h>
#include <math.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "model/model_file.h"
#include "model/onnx/onnx_impl.h"

int onnx_fail(const struct onnx_msg *e, const Onnx__NodeProto *n, const char *fmt, ...)
{
	char msg[400];
	va_list ap;

	va_start(ap, fmt);
	vsnprintf(msg, sizeof(msg), fmt, ap);
	va_end(ap);
	if (n)
		snprintf(e->err, e->errlen, "%s: node '%s' (%s): %s", e->label,
			 n->name && *n->name ? n->name : "(unnamed)", n->op_type ? n->op_type : "?",
			 msg);
	else
		snprintf(e->err, e->errlen, "%s: %s", e->label, msg);
	return -EINVAL;
}

/* Bytes per element in raw_data, 0 for a type not accepted. */
static size_t elem_size(int32_t type)
{
	switch (type) {
	case ONNX__TENSOR_PROTO__DATA_TYPE__UINT8:
	case ONNX__TENSOR_PROTO__DATA_TYPE__INT8:
	case ONNX__TENSOR_PROTO__DATA_TYPE__BOOL:
		return 1;
	case ONNX__TENSOR_PROTO__DATA_TYPE__INT16:
		return 2;
	case ONNX__TENSOR_PROTO__DATA_TYPE__FLOAT:
	case ONNX__TENSOR_PROTO__DATA_TYPE__INT32:
		return 4;
	case ONNX__TENSOR_PROTO__DATA_TYPE__INT64:
	case ONNX__TENSOR_PROTO__DATA_TYPE__DOUBLE:
		return 8;
	}
	return 0;
}

static double raw_value(const uint8_t *p, int32_t type)
{
	union {
		float f;
		double d;
		int16_t i16;
		int32_t i32;
		int64_t i64;
	} u;

	switch (type) {
	case ONNX__TENSOR_PROTO__DATA_TYPE__UINT8:
	case ONNX__TENSOR_PROTO__DATA_TYPE__BOOL:
		return p[0];
	case ONNX__TENSOR_PROTO__DATA_TYPE__INT8:
		return (int8_t)p[0];
	case ONNX__TENSOR_PROTO__DATA_TYPE__INT16:
		memcpy(&u.i16, p, 2);
		return u.i16;
	case ONNX__TENSOR_PROTO__DATA_TYPE__FLOAT:
		memcpy(&u.f, p, 4);
		return u.f;
	case ONNX__TENSOR_PROTO__DATA_TYPE__INT32:
		memcpy(&u.i32, p, 4);
		return u.i32;
	case ONNX__TENSOR_PROTO__DATA_TYPE__INT64:
		memcpy(&u.i64, p, 8);
		return (double)u.i64;
	default:
		memcpy(&u.d, p, 8);
		return u.d;
	}
}

int onnx_tensor_decode(const struct onnx_msg *e, const Onnx__NodeProto *n,
		       const Onnx__TensorProto *t, const char *what, struct onnx_const *c)
{
	const char *tn = t->name ? t->name : "";
	int32_t type = t->has_data_type ? t->data_type : 0;
	size_t es = elem_size(type);
	uint64_t count = 1, typed;

	memset(c, 0, sizeof(*c));
	c->name = t->name;
	if (t->has_data_location && t->data_location == ONNX__TENSOR_PROTO__DATA_LOCATION__EXTERNAL)
		return onnx_fail(
		    e, n,
		    "%s '%s': external data (data_location EXTERNAL) is not supported; "
		    "save the model with its tensors inside the file",
		    what, tn);
	if (t->segment)
		return onnx_fail(e, n, "%s '%s': segmented tensors are not supported", what, tn);
	if (!es)
		return onnx_fail(
		    e, n,
		    "%s '%s': data_type %d not supported (float, double, int8..int64, uint8, bool)",
		    what, tn, type);
	if (t->n_dims > ONNX_MAXDIM)
		return onnx_fail(e, n, "%s '%s': %zu dimensions, at most %d", what, tn, t->n_dims,
				 ONNX_MAXDIM);
	for (size_t d = 0; d < t->n_dims; d++) {
		if (t->dims[d] < 0 || (uint64_t)t->dims[d] > MODEL_FILE_MAX_ELEMS ||
		    count * (uint64_t)t->dims[d] > MODEL_FILE_MAX_ELEMS)
			return onnx_fail(e, n, "%s '%s': dims[%zu] = %lld invalid or too large",
					 what, tn, d, (long long)t->dims[d]);
		count *= (uint64_t)t->dims[d];
		c->dims[d] = t->dims[d];
	}
	c->ndim = (uint32_t)t->n_dims;
	c->count = count;
	c->data = malloc((count ? count : 1) * sizeof(double));
	if (!c->data)
		return onnx_fail(e, n, "%s '%s': out of memory for %llu values", what, tn,
				 (unsigned long long)count);
	if (t->has_raw_data) {
		if (t->raw_data.len != count * es) {
			free(c->data);
			c->data = NULL;
			return onnx_fail(e, n, "%s '%s': raw_data has %zu bytes, dims need %llu",
					 what, tn, t->raw_data.len,
					 (unsigned long long)(count * es));
		}
		for (uint64_t i = 0; i < count; i++)
			c->data[i] = raw_value(t->raw_data.data + i * es, type);
		return 0;
	}
	switch (type) {
	case ONNX__TENSOR_PROTO__DATA_TYPE__FLOAT:
		typed = t->n_float_data;
		break;
	case ONNX__TENSOR_PROTO__DATA_TYPE__INT64:
		typed = t->n_int64_data;
		break;
	case ONNX__TENSOR_PROTO__DATA_TYPE__DOUBLE:
		typed = t->n_double_data;
		break;
	default:
		typed = t->n_int32_data;
		break;
	}
	if (typed != count) {
		free(c->data);
		c->data = NULL;
		return onnx_fail(e, n, "%s '%s': %llu typed values, dims need %llu", what, tn,
				 (unsigned long long)typed, (unsigned long long)count);
	}
	for (uint64_t i = 0; i < count; i++)
		switch (type) {
		case ONNX__TENSOR_PROTO__DATA_TYPE__FLOAT:
			c->data[i] = t->float_data[i];
			break;
		case ONNX__TENSOR_PROTO__DATA_TYPE__INT64:
			c->data[i] = (double)t->int64_data[i];
			break;
		case ONNX__TENSOR_PROTO__DATA_TYPE__DOUBLE:
			c->data[i] = t->double_data[i];
			break;
		case ONNX__TENSOR_PROTO__DATA_TYPE__INT8:
			c->data[i] = (int8_t)t->int32_data[i];
			break;
		case ONNX__TENSOR_PROTO__DATA_TYPE__UINT8:
			c->data[i] = (uint8_t)t->int32_data[i];
			break;
		case ONNX__TENSOR_PROTO__DATA_TYPE__INT16:
			c->data[i] = (int16_t)t->int32_data[i];
			break;
		case ONNX__TENSOR_PROTO__DATA_TYPE__BOOL:
			c->data[i] = t->int32_data[i] != 0;
			break;
		default:
			c->data[i] = t->int32_data[i];
			break;
		}
	return 0;
}

const Onnx__AttributeProto *onnx_attr(const Onnx__NodeProto *n, const char *name)
{
	for (size_t i = 0; i < n->n_attribute; i++)
		if (n->attribute[i]->name && !strcmp(n->attribute[i]->name, name))
			return n->attribute[i];
	return NULL;
}

int onnx_attrs_known(const struct onnx_msg *e, const Onnx__NodeProto *n, const char *const *known)
{
	for (size_t i = 0; i < n->n_attribute; i++) {
		const char *a = n->attribute[i]->name ? n->attribute[i]->name : "";
		const char *const *k = known;

		while (*k && strcmp(*k, a))
			k++;
		if (!*k)
			return onnx_fail(e, n, "attribute '%s' is not supported", a);
	}
	return 0;
}

/* Attribute `name` of n in *a (NULL where absent): 0, or -EINVAL where it is not of type want. */
static int attr_get(const struct onnx_msg *e, const Onnx__NodeProto *n, const char *name,
		    Onnx__AttributeProto__AttributeType want, const char *what,
		    const Onnx__AttributeProto **a)
{
	const Onnx__AttributeProto *p = onnx_attr(n, name);
	bool ok;

	*a = NULL;
	if (!p)
		return 0;
	ok = p->has_type ? p->type == want : false;
	if (!p->has_type) /* IR < 3 left the type out: go by the field present */
		ok = want == ONNX__ATTRIBUTE_PROTO__ATTRIBUTE_TYPE__INT	     ? p->has_i
		     : want == ONNX__ATTRIBUTE_PROTO__ATTRIBUTE_TYPE__FLOAT  ? p->has_f
		     : want == ONNX__ATTRIBUTE_PROTO__ATTRIBUTE_TYPE__STRING ? p->has_s
		     : want == ONNX__ATTRIBUTE_PROTO__ATTRIBUTE_TYPE__INTS   ? p->n_ints > 0
									     : p->t != NULL;
	if (!ok)
		return onnx_fail(e, n, "attribute '%s' must be %s", p->name, what);
	*a = p;
	return 0;
}

int onnx_attr_int(const struct onnx_msg *e, const Onnx__NodeProto *n, const char *name, int64_t def,
		  int64_t *v)
{
	const Onnx__AttributeProto *a;
	int ret = attr_get(e, n, name, ONNX__ATTRIBUTE_PROTO__ATTRIBUTE_TYPE__INT, "an int", &a);

	*v = a ? a->i : def;
	return ret;
}

int onnx_attr_float(const struct onnx_msg *e, const Onnx__NodeProto *n, const char *name,
		    double def, double *v)
{
	const Onnx__AttributeProto *a;
	int ret = attr_get(e, n, name, ONNX__ATTRIBUTE_PROTO__ATTRIBUTE_TYPE__FLOAT, "a float", &a);

	*v = def;
	if (!a)
		return ret;
	if (!isfinite(a->f))
		return onnx_fail(e, n, "attribute '%s' = %g must be finite", name, a->f);
	*v = onnx_float_decimal(a->f);
	return 0;
}

int onnx_attr_ints(const struct onnx_msg *e, const Onnx__NodeProto *n, const char *name, int64_t *v,
		   uint32_t max, uint32_t *count)
{
	const Onnx__AttributeProto *a;
	int ret =
	    attr_get(e, n, name, ONNX__ATTRIBUTE_PROTO__ATTRIBUTE_TYPE__INTS, "a list of ints", &a);

	*count = 0;
	if (!a)
		return ret;
	if (a->n_ints > max)
		return onnx_fail(e, n, "attribute '%s' has %zu values, expected at most %u", name,
				 a->n_ints, max);
	if (a->n_ints)
		memcpy(v, a->ints, a->n_ints * sizeof(*v));
	*count = (uint32_t)a->n_ints;
	return 0;
}

int onnx_attr_string(const struct onnx_msg *e, const Onnx__NodeProto *n, const char *name,
		     char *buf, size_t len)
{
	const Onnx__AttributeProto *a;
	int ret =
	    attr_get(e, n, name, ONNX__ATTRIBUTE_PROTO__ATTRIBUTE_TYPE__STRING, "a string", &a);

	buf[0] = 0;
	if (!a || !a->s.len)
		return ret;
	if (a->s.len >= len || memchr(a->s.data, 0, a->s.len))
		return onnx_fail(e, n, "attribute '%s': string too long or with a NUL", name);
	memcpy(buf, a->s.data, a->s.len);
	buf[a->s.len] = 0;
	return 0;
}

double onnx_float_decimal(float f)
{
	char buf[32];

	for (int prec = 1; prec <= 9; prec++) {
		snprintf(buf, sizeof(buf), "%.*g", prec, (double)f);
		if (strtof(buf, NULL) == f)
			return strtod(buf, NULL);
	}
	return f;
}
