/* SPDX-License-Identifier: MIT */
/*
 * ONNX importer tests: models built here with protobuf-c, imported, compiled and run. Max-pool
 * padding and ceil mode become a -inf PAD before the pool; ONNX Sign keeps Sign(0) = 0 (the
 * three-valued op, with one note naming the node); the model file refuses a PAD whose pads do
 * not match its shapes; garbage and external data are refused with a message. (The operator
 * coverage is ONNX's own node tests, tests/py/test_onnx_nodes.py.)
 */
#include <errno.h>
#include <math.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <cmocka.h>

#include "kernels/kern.h"
#include "model/model_file.h"
#include "onnx.pb-c.h"
#include "model/onnx/onnx_import.h"

/* One graph: input x (N, 1, 4, 4) float, nodes as given, output named `out`. */
struct tg {
	Onnx__ModelProto model;
	Onnx__GraphProto graph;
	Onnx__OperatorSetIdProto opset, *opsets[1];
	Onnx__ValueInfoProto in, out, *ins[1], *outs[1];
	Onnx__TypeProto type;
	Onnx__TypeProto__Tensor tt;
	Onnx__TensorShapeProto shape;
	Onnx__TensorShapeProto__Dimension dims[4], *dimp[4];
	Onnx__NodeProto *nodes[4];
	Onnx__TensorProto *inits[2];
};

static void tg_init(struct tg *g, const char *out)
{
	static const int64_t d[4] = {0, 1, 4, 4};

	*g = (struct tg){.model = ONNX__MODEL_PROTO__INIT,
			 .graph = ONNX__GRAPH_PROTO__INIT,
			 .opset = ONNX__OPERATOR_SET_ID_PROTO__INIT,
			 .in = ONNX__VALUE_INFO_PROTO__INIT,
			 .out = ONNX__VALUE_INFO_PROTO__INIT,
			 .type = ONNX__TYPE_PROTO__INIT,
			 .tt = ONNX__TYPE_PROTO__TENSOR__INIT,
			 .shape = ONNX__TENSOR_SHAPE_PROTO__INIT};
	g->opset.has_version = 1;
	g->opset.version = 13;
	g->opsets[0] = &g->opset;
	g->model.has_ir_version = 1;
	g->model.ir_version = 8;
	g->model.n_opset_import = 1;
	g->model.opset_import = g->opsets;
	g->model.graph = &g->graph;
	for (int i = 0; i < 4; i++) {
		g->dims[i] =
		    (Onnx__TensorShapeProto__Dimension)ONNX__TENSOR_SHAPE_PROTO__DIMENSION__INIT;
		if (i == 0) {
			g->dims[i].value_case =
			    ONNX__TENSOR_SHAPE_PROTO__DIMENSION__VALUE_DIM_PARAM;
			g->dims[i].dim_param = "N";
		} else {
			g->dims[i].value_case =
			    ONNX__TENSOR_SHAPE_PROTO__DIMENSION__VALUE_DIM_VALUE;
			g->dims[i].dim_value = d[i];
		}
		g->dimp[i] = &g->dims[i];
	}
	g->shape.n_dim = 4;
	g->shape.dim = g->dimp;
	g->tt.has_elem_type = 1;
	g->tt.elem_type = ONNX__TENSOR_PROTO__DATA_TYPE__FLOAT;
	g->tt.shape = &g->shape;
	g->type.value_case = ONNX__TYPE_PROTO__VALUE_TENSOR_TYPE;
	g->type.tensor_type = &g->tt;
	g->in.name = "x";
	g->in.type = &g->type;
	g->ins[0] = &g->in;
	g->out.name = (char *)out;
	g->outs[0] = &g->out;
	g->graph.name = "t";
	g->graph.n_input = 1;
	g->graph.input = g->ins;
	g->graph.n_output = 1;
	g->graph.output = g->outs;
	g->graph.node = g->nodes;
	g->graph.initializer = g->inits;
}

static void *tg_pack(struct tg *g, size_t *len)
{
	void *buf;

	*len = onnx__model_proto__get_packed_size(&g->model);
	buf = malloc(*len);
	assert_non_null(buf);
	onnx__model_proto__pack(&g->model, buf);
	return buf;
}

/* A model's file image in a 64-byte aligned buffer, as the loader maps it. */
static void *serialize_aligned(const struct model *m, size_t *len)
{
	void *buf, *al;

	assert_int_equal(model_serialize(m, &buf, len), 0);
	al = aligned_alloc(64, (*len + 63) / 64 * 64);
	assert_non_null(al);
	memcpy(al, buf, *len);
	free(buf);
	return al;
}

static Onnx__AttributeProto ints_attr(const char *name, int64_t *v, size_t n)
{
	Onnx__AttributeProto a = ONNX__ATTRIBUTE_PROTO__INIT;

	a.name = (char *)name;
	a.has_type = 1;
	a.type = ONNX__ATTRIBUTE_PROTO__ATTRIBUTE_TYPE__INTS;
	a.n_ints = n;
	a.ints = v;
	return a;
}

static Onnx__AttributeProto int_attr(const char *name, int64_t v)
{
	Onnx__AttributeProto a = ONNX__ATTRIBUTE_PROTO__INIT;

	a.name = (char *)name;
	a.has_type = 1;
	a.type = ONNX__ATTRIBUTE_PROTO__ATTRIBUTE_TYPE__INT;
	a.has_i = 1;
	a.i = v;
	return a;
}

/* MaxPool(kernel 3, stride 2, ceil_mode) then Sign, on 4x4: ONNX's test_maxpool_2d_ceil. */
static void test_onnx_pool_ceil_sign3(void **state)
{
	int64_t k[2] = {3, 3}, s[2] = {2, 2};
	Onnx__AttributeProto a[3] = {ints_attr("kernel_shape", k, 2), ints_attr("strides", s, 2),
				     int_attr("ceil_mode", 1)};
	Onnx__AttributeProto *ap[3] = {&a[0], &a[1], &a[2]};
	char *pool_in[] = {"x"}, *pool_out[] = {"p"}, *sign_out[] = {"y"};
	Onnx__NodeProto pool = ONNX__NODE_PROTO__INIT, sign = ONNX__NODE_PROTO__INIT;
	struct onnx_import imp;
	struct model m, *back;
	struct kern_ctx *ctx;
	char err[512] = "", notes[512] = "";
	float x[16];
	double y[4];
	const double want[4] = {1, 1, 0, -1};
	FILE *nf;
	struct tg g;
	size_t len;
	void *buf;

	(void)state;
	tg_init(&g, "y");
	pool = (Onnx__NodeProto)ONNX__NODE_PROTO__INIT;
	pool.op_type = "MaxPool";
	pool.name = "pool";
	pool.n_input = 1;
	pool.input = pool_in;
	pool.n_output = 1;
	pool.output = pool_out;
	pool.n_attribute = 3;
	pool.attribute = ap;
	sign.op_type = "Sign";
	sign.name = "sg";
	sign.n_input = 1;
	sign.input = pool_out;
	sign.n_output = 1;
	sign.output = sign_out;
	g.nodes[0] = &pool;
	g.nodes[1] = &sign;
	g.graph.n_node = 2;
	buf = tg_pack(&g, &len);
	if (onnx_import_buffer(buf, len, "t.onnx", 0, &imp, err, sizeof(err)))
		fail_msg("import: %s", err);
	free(buf);
	assert_true(imp.extended);
	nf = fmemopen(notes, sizeof(notes), "w");
	assert_non_null(nf);
	if (onnx_import_compile(&imp, &m, nf, err, sizeof(err)))
		fail_msg("compile: %s", err);
	fclose(nf);
	assert_non_null(strstr(notes, "node 'sg' (Sign)"));
	assert_int_equal(m.n_layers, 4);
	assert_int_equal(m.layers[0].op, MODEL_OP_CAST);
	assert_int_equal(m.layers[1].op, MODEL_OP_PAD);
	assert_int_equal(m.layers[1].flags, MODEL_LF_PADNEG);
	assert_int_equal(m.layers[1].out.h, 5);
	assert_int_equal(m.layers[2].op, MODEL_OP_MAXPOOL);
	assert_int_equal(m.layers[3].op, MODEL_OP_SIGN3);

	/* x = 8 - i: window maxima 8, 6, 0, -2 -> Sign 1, 1, 0, -1 (Sign(0) = 0) */
	buf = serialize_aligned(&m, &len);
	back = model_from_buffer(buf, len, "t.snm", err, sizeof(err));
	if (!back)
		fail_msg("load: %s", err);
	for (int i = 0; i < 16; i++)
		x[i] = (float)(8 - i);
	ctx = kern_ctx_create(back, 1);
	assert_non_null(ctx);
	assert_int_equal(kern_forward(ctx, x, 1, y), 0);
	for (int i = 0; i < 4; i++)
		assert_true(y[i] == want[i]);
	kern_ctx_free(ctx);
	model_free(back);
	free(buf);

	/* pads that do not take the input to the output shape are refused when loaded */
	((uint32_t *)m.layers[1].blob[0])[2] = 2;
	buf = serialize_aligned(&m, &len);
	back = model_from_buffer(buf, len, "t.snm", err, sizeof(err));
	assert_null(back);
	assert_non_null(strstr(err, "pads"));
	free(buf);
	model_compiled_free(&m);
	onnx_import_free(&imp);
}

static void test_onnx_refusals(void **state)
{
	static const uint8_t garbage[] = {0xff, 0xff, 0xff, 0x0f, 0x12, 0x99};
	Onnx__TensorProto w = ONNX__TENSOR_PROTO__INIT;
	Onnx__StringStringEntryProto loc = ONNX__STRING_STRING_ENTRY_PROTO__INIT, *locp = &loc;
	Onnx__NodeProto mm = ONNX__NODE_PROTO__INIT;
	char *mm_in[] = {"x", "w"}, *mm_out[] = {"y"};
	int64_t wd[2] = {16, 3};
	struct onnx_import imp;
	char err[512];
	struct tg g;
	size_t len;
	void *buf;

	(void)state;
	assert_int_equal(
	    onnx_import_buffer(garbage, sizeof(garbage), "g.onnx", 0, &imp, err, sizeof(err)),
	    -EINVAL);
	assert_non_null(strstr(err, "g.onnx: not a valid ONNX protobuf"));

	tg_init(&g, "y");
	w.name = "w";
	w.has_data_type = 1;
	w.data_type = ONNX__TENSOR_PROTO__DATA_TYPE__FLOAT;
	w.n_dims = 2;
	w.dims = wd;
	w.has_data_location = 1;
	w.data_location = ONNX__TENSOR_PROTO__DATA_LOCATION__EXTERNAL;
	loc.key = "location";
	loc.value = "w.bin";
	w.n_external_data = 1;
	w.external_data = &locp;
	mm.op_type = "MatMul";
	mm.name = "mm";
	mm.n_input = 2;
	mm.input = mm_in;
	mm.n_output = 1;
	mm.output = mm_out;
	g.nodes[0] = &mm;
	g.graph.n_node = 1;
	g.inits[0] = &w;
	g.graph.n_initializer = 1;
	buf = tg_pack(&g, &len);
	assert_int_equal(onnx_import_buffer(buf, len, "e.onnx", 0, &imp, err, sizeof(err)),
			 -EINVAL);
	assert_non_null(strstr(err, "initializer 'w': external data"));

	g.graph.n_initializer = 0;
	g.opset.version = 19;
	free(buf);
	buf = tg_pack(&g, &len);
	assert_int_equal(onnx_import_buffer(buf, len, "o.onnx", 0, &imp, err, sizeof(err)),
			 -EINVAL);
	assert_non_null(strstr(err, "opset 19"));
	/* a (1,4,4) input into MatMul: the refusal names the node */
	g.opset.version = 13;
	free(buf);
	buf = tg_pack(&g, &len);
	assert_int_equal(onnx_import_buffer(buf, len, "c.onnx", 0, &imp, err, sizeof(err)),
			 -EINVAL);
	assert_non_null(strstr(err, "node 'mm' (MatMul)"));
	free(buf);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
	    cmocka_unit_test(test_onnx_pool_ceil_sign3),
	    cmocka_unit_test(test_onnx_refusals),
	};

	return cmocka_run_group_tests(tests, NULL, NULL);
}
