/* SPDX-License-Identifier: MIT */
/*
 * model/onnx/onnx_import.h — ONNX / QONNX models into the converter's layer description.
 *
 * The importer reads an ONNX ModelProto (protobuf-c, code generated at build time from Debian's
 * /usr/include/onnx/onnx.proto), checks it and walks its graph from the one data input to the
 * one output as a chain, producing the interchange layers of model/compile.h (the arrays in
 * float64), which model_compile turns into a model like any arch.json + weights.npz.
 *
 * Accepted: IR version 3..9, default-domain opset 9..18; the batch dimension (first) fixed or
 * symbolic; initializers as raw_data or typed fields (float, double, int8/16/32/64, uint8, bool);
 * constants from initializers, Constant nodes and their Cast/Identity/BipolarQuant. Operators:
 * Conv, MaxPool, BatchNormalization (inference), Gemm, MatMul (+ Add as its bias), Relu,
 * Flatten, Reshape to (batch, n), LRN, Sign, Identity, Dropout, and a leading Cast of a uint8
 * input. Binarizers: QONNX BipolarQuant (qonnx.custom_op.general, finn.custom_op.general; scale
 * 1), Where(GreaterOrEqual(x, 0), 1, -1) and Sub|Add(Mul(Cast(GreaterOrEqual(x, 0)), 2), 1|-1),
 * all meaning x >= 0 -> +1 (so -0.0 -> +1). Weights whose values are all +-1 become binary
 * weights. ONNX Sign keeps Sign(0) = 0: it becomes a layer `sign3` (model/compile.h).
 *
 * A classification head at the end of the graph (Softmax, LogSoftmax, ArgMax over the classes
 * of a (batch, classes) tensor, in any order) is dropped: the class, the argmax of the scores,
 * is the same without it, and the model's scores are the logits; imp->dropped names the nodes.
 * ONNX_IMPORT_KEEP_SOFTMAX refuses such a head instead.
 *
 * Every refusal names the file, the node (name and op type) and the attribute, input or
 * tensor at fault; malformed protobuf is an error, never a crash.
 */
#ifndef MODEL_ONNX_IMPORT_H
#define MODEL_ONNX_IMPORT_H

#include <stdbool.h>
#include <stddef.h>
#include <stdio.h>

#include "model/compile.h"
#include "model/model.h"

/* onnx_import_buffer's flags: refuse a trailing Softmax, LogSoftmax or ArgMax */
#define ONNX_IMPORT_KEEP_SOFTMAX 1u

struct onnx_import {
	struct model_ic_model ic; /* arch_path and weights_path name the ONNX file */
	char **layer_node;	  /* per ic layer: "node 'NAME' (OP)", for messages */
	bool extended;		  /* uses a layer the interchange spec lacks (pad, sign3) */
	bool keep_softmax;	  /* ONNX_IMPORT_KEEP_SOFTMAX */
	char dropped[256];	  /* the head's nodes dropped, "node 'NAME' (OP), ..."; or "" */
};

/*
 * Parse and translate len bytes of an ONNX model; `label` names it in messages; flags:
 * ONNX_IMPORT_* or 0. Returns 0, or -EINVAL / -ENOMEM with the message in err; *imp is then
 * empty (onnx_import_free is safe).
 */
int onnx_import_buffer(const void *buf, size_t len, const char *label, unsigned flags,
		       struct onnx_import *imp, char *err, size_t errlen);
/* The same from a file. */
int onnx_import_file(const char *path, unsigned flags, struct onnx_import *imp, char *err,
		     size_t errlen);

/*
 * Compile an import into *m (release with model_compiled_free). Each ONNX Sign that runs as the
 * three-valued op is reported once on `notes` (may be NULL), naming its node. Returns 0 or
 * -EINVAL / -ENOMEM with the message in err.
 */
int onnx_import_compile(const struct onnx_import *imp, struct model *m, FILE *notes, char *err,
			size_t errlen);

/*
 * Make imp what the interchange format (docs/model-format.md) can express, given m, its
 * compiled form (onnx_import_compile): each ONNX Sign that m runs as a 1-bit sign (its input
 * proven never 0) becomes a `sign` layer, which gives the same values. Returns 0, or -EINVAL
 * with err naming the first layer the format cannot express, its node and why (a Sign whose
 * input can be 0, max-pool or asymmetric padding).
 */
int onnx_import_to_interchange(struct onnx_import *imp, const struct model *m, char *err,
			       size_t errlen);

void onnx_import_free(struct onnx_import *imp);

#endif /* MODEL_ONNX_IMPORT_H */
