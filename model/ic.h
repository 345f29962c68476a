/* SPDX-License-Identifier: MIT */
/*
 * model/ic.h — the interchange model in memory: arch.json's layers (defaults applied, fields
 * checked) and weights.npz's arrays (converted to double), as model/convert.c parses them from
 * the two files and the ONNX importer builds them; what the compiler (model/compile.h) lowers to
 * the ops of model.h.
 */
#ifndef MODEL_IC_H
#define MODEL_IC_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "model/model.h"
#include "model/npy.h"

/* One array of weights.npz, converted to double. */
struct model_ic_array {
	char *key; /* "i.name" */
	uint32_t ndim;
	uint64_t shape[MODEL_NPY_MAXDIM];
	uint64_t count;
	double *data;
	bool used; /* set by the compiler when a layer takes it */
};

/* One arch.json layer, defaults applied, field types and ranges already checked. */
struct model_ic_layer {
	uint32_t type; /* enum model_src_type */
	uint32_t out, kernel, stride, pad;
	uint32_t groups; /* conv, with MODEL_IC_ARCH_GROUPS only: 1 or more; else 0 (none) */
	bool bias, binw;
	double eps;
	uint32_t lrn_size;
	double lrn_alpha, lrn_beta, lrn_k;
	uint32_t pads[4]; /* MODEL_SRC_PAD: top, left, bottom, right */
	bool pad_neginf;  /* MODEL_SRC_PAD: fill with -inf (max-pool padding), else 0 */
};

struct model_ic_model {
	const char *arch_path, *weights_path; /* for messages */
	char name[MODEL_NAME_MAX];
	struct model_shape input; /* fmt U8 or F32 */
	uint32_t n_layers;
	struct model_ic_layer *layers;
	uint32_t n_arrays;
	struct model_ic_array *arrays;
};

/*
 * The converter's parsers, on bytes in memory (model_convert maps the two files and calls them):
 * model_ic_parse_arch fills ic's name, input and layers from arch.json text, model_ic_parse_npz
 * fills ic's arrays from a weights.npz archive; ic->arch_path and ic->weights_path name the
 * inputs in messages. Both return 0, or -EINVAL / -ENOMEM with a message naming the file, key,
 * layer or field in err; model_ic_free releases what they filled (also after a failure).
 */
int model_ic_parse_arch(struct model_ic_model *ic, const void *json, size_t len, char *err,
			size_t errlen);

/*
 * Analysis extension (split/, docs/split-planning.md): a conv may carry an integer "groups"
 * (default 1; Caffe's grouped convolution), set in the layer's groups. The compiler ignores it
 * (it changes no op, only the weights' shape); the converter does not accept it.
 */
#define MODEL_IC_ARCH_GROUPS 1u

/*
 * model_ic_parse_arch on the file ic->arch_path (read whole), flags MODEL_IC_ARCH_*: the same
 * checks and messages, plus the file's own errors (open, not a regular file).
 */
int model_ic_load_arch(struct model_ic_model *ic, unsigned int flags, char *err, size_t errlen);
int model_ic_parse_npz(struct model_ic_model *ic, const void *npz, size_t len, char *err,
		       size_t errlen);
void model_ic_free(struct model_ic_model *ic);
/* After model_compile: -EINVAL with a message naming the first array no layer used, else 0. */
int model_ic_check_used(const struct model_ic_model *ic, char *err, size_t errlen);

#endif /* MODEL_IC_H */
