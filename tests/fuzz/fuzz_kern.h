/* SPDX-License-Identifier: MIT */
/*
 * Helpers shared by the libFuzzer targets of the model-file, converter, plan and profile parsers:
 * weights synthesized for any parsed arch.json, and the check that everything the converter
 * accepts is a model file the loader accepts and the CPU executor runs.
 */
#ifndef FUZZ_KERN_H
#define FUZZ_KERN_H

#include <errno.h>
#include <float.h>
#include <math.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "kernels/kern.h"
#include "model/compile.h"
#include "model/model_file.h"

#define CHECK(c)                                                                                   \
	do {                                                                                       \
		if (!(c)) {                                                                        \
			fprintf(stderr, "%s:%d: check failed: %s\n", __FILE__, __LINE__, #c);      \
			__builtin_trap();                                                          \
		}                                                                                  \
	} while (0)

/*
 * The fuzz input as a read-only stream (what the text parsers read); an empty input is an empty
 * stream (fmemopen takes no empty buffer: one byte, read past).
 */
static inline FILE *fuzz_stream(const uint8_t *data, size_t size)
{
	static char none[1];
	FILE *f = fmemopen(size ? (void *)data : none, size ? size : 1, "r");

	CHECK(f);
	if (!size)
		CHECK(fgetc(f) == 0);
	return f;
}

/* Synthesized weights in all, and the work a forward pass may do, before a case is skipped. */
#define FUZZ_MAX_WEIGHTS (1u << 16)
#define FUZZ_MAX_ACT	 (1u << 16)
#define FUZZ_MAX_MACS	 (1u << 22)

/* A weight from one byte: the awkward values (signed zeros, extremes, subnormals) and a grid. */
static inline double fuzz_value(uint8_t b)
{
	static const double special[16] = {
	    0.0,      -0.0,   1.0,   -1.0,   DBL_MAX, -DBL_MAX, DBL_MIN, -DBL_MIN,
	    4.9e-324, 1e-300, 1e300, -1e300, 0.5,     -0.5,	1e-9,	 3e9,
	};

	return b < 16 ? special[b] : (double)((int)b - 136) / 8.0;
}

static inline void fuzz_add_array(struct model_ic_model *ic, uint32_t layer, const char *name,
				  uint32_t ndim, const uint64_t *dims, const uint8_t *vals,
				  size_t nvals, size_t *at, int var)
{
	struct model_ic_array *a = &ic->arrays[ic->n_arrays++];
	char key[32];

	snprintf(key, sizeof(key), "%u.%s", layer, name);
	a->key = strdup(key);
	a->ndim = ndim;
	a->count = 1;
	for (uint32_t d = 0; d < ndim; d++) {
		a->shape[d] = dims[d];
		a->count *= dims[d];
	}
	a->data = malloc(a->count * sizeof(double));
	CHECK(a->key && a->data);
	for (uint64_t i = 0; i < a->count; i++, (*at)++) {
		double v = fuzz_value(nvals ? vals[*at % nvals] : (uint8_t)(*at * 37 + 11));

		a->data[i] = var ? fabs(v) : v;
	}
}

/*
 * Give ic the arrays its layers take, with the shapes the spec gives them (the compiler checks
 * them again), values drawn from vals[0..nvals) (a fixed pattern when empty). Returns false
 * where the shapes do not chain or the weights would exceed FUZZ_MAX_WEIGHTS: the compiler is
 * then run on the layers before the break only through its own errors.
 */
static inline int fuzz_synth_weights(struct model_ic_model *ic, const uint8_t *vals, size_t nvals)
{
	uint64_t c = ic->input.c, h = ic->input.h, w = ic->input.w, total = 0;
	size_t at = 0;
	int flat = 0;

	ic->arrays = calloc(4 * (size_t)ic->n_layers + 1, sizeof(*ic->arrays));
	CHECK(ic->arrays);
	for (uint32_t i = 0; i < ic->n_layers; i++) {
		const struct model_ic_layer *L = &ic->layers[i];
		uint64_t n = c * h * w, k = L->kernel;

		switch (L->type) {
		case MODEL_SRC_DENSE:
			total += L->out * n + L->out;
			if (total > FUZZ_MAX_WEIGHTS)
				return 0;
			fuzz_add_array(ic, i, "weight", 2, (uint64_t[]){L->out, n}, vals, nvals,
				       &at, 0);
			if (L->bias)
				fuzz_add_array(ic, i, "bias", 1, (uint64_t[]){L->out}, vals, nvals,
					       &at, 0);
			c = L->out, h = w = 1, flat = 1;
			break;
		case MODEL_SRC_CONV:
			if (flat || h + 2 * L->pad < k || w + 2 * L->pad < k)
				return 0;
			total += L->out * c * k * k + L->out;
			if (total > FUZZ_MAX_WEIGHTS)
				return 0;
			fuzz_add_array(ic, i, "weight", 4, (uint64_t[]){L->out, c, k, k}, vals,
				       nvals, &at, 0);
			if (L->bias)
				fuzz_add_array(ic, i, "bias", 1, (uint64_t[]){L->out}, vals, nvals,
					       &at, 0);
			c = L->out;
			h = (h + 2 * L->pad - k) / L->stride + 1;
			w = (w + 2 * L->pad - k) / L->stride + 1;
			break;
		case MODEL_SRC_BATCHNORM:
			total += 4 * c;
			if (total > FUZZ_MAX_WEIGHTS)
				return 0;
			fuzz_add_array(ic, i, "gamma", 1, (uint64_t[]){c}, vals, nvals, &at, 0);
			fuzz_add_array(ic, i, "beta", 1, (uint64_t[]){c}, vals, nvals, &at, 0);
			fuzz_add_array(ic, i, "mean", 1, (uint64_t[]){c}, vals, nvals, &at, 0);
			fuzz_add_array(ic, i, "var", 1, (uint64_t[]){c}, vals, nvals, &at, 1);
			break;
		case MODEL_SRC_MAXPOOL:
			if (flat || h < k || w < k)
				return 0;
			h = (h - k) / L->stride + 1;
			w = (w - k) / L->stride + 1;
			break;
		case MODEL_SRC_FLATTEN:
			c = n, h = w = 1, flat = 1;
			break;
		}
	}
	return 1;
}

/* Bytes of the biggest activation and MACs of a forward pass, saturating. */
static inline int fuzz_model_small(const struct model *m)
{
	uint64_t macs = 0;

	if (model_shape_bytes(&m->input) > 8 * FUZZ_MAX_ACT)
		return 0;
	for (uint32_t i = 0; i < m->n_layers; i++) {
		const struct model_layer *l = &m->layers[i];
		uint64_t in = model_shape_elems(&l->in), out = model_shape_elems(&l->out);
		uint64_t k2 = (uint64_t)l->kernel * l->kernel;

		if (in > FUZZ_MAX_ACT || out > FUZZ_MAX_ACT)
			return 0;
		macs += l->op == MODEL_OP_DENSE || l->op == MODEL_OP_BDENSE ||
				l->op == MODEL_OP_BDENSE_U8
			    ? in * out
			    : out * (k2 ? k2 : 1) * (l->op == MODEL_OP_LRN ? l->lrn_size : 1) *
				  (l->op == MODEL_OP_CONV || l->op == MODEL_OP_BCONV ? l->in.c : 1);
		if (macs > FUZZ_MAX_MACS)
			return 0;
	}
	return 1;
}

/* A loaded model runs on the CPU kernels: one image from `in` (cycled), finite class count. */
static inline void fuzz_run(const struct model *m, const uint8_t *in, size_t n)
{
	uint64_t bytes = model_shape_bytes(&m->input);
	uint32_t classes = model_classes(m);
	struct kern_ctx *ctx;
	uint8_t *img;
	double *scores;

	if (!fuzz_model_small(m))
		return;
	img = malloc(bytes);
	scores = malloc(classes * sizeof(double));
	CHECK(img && scores);
	for (uint64_t i = 0; i < bytes; i++)
		img[i] = n ? in[i % n] : (uint8_t)i;
	if (m->input.fmt == MODEL_FMT_F32)
		for (uint64_t i = 0; i < bytes / 4; i++) {
			float f = (float)fuzz_value(img[4 * i]);

			memcpy(img + 4 * i, &f, 4);
		}
	ctx = kern_ctx_create(m, 1);
	CHECK(ctx);
	CHECK(kern_forward(ctx, img, 1, scores) == 0);
	CHECK(kern_argmax(scores, classes) < classes);
	kern_ctx_free(ctx);
	free(scores);
	free(img);
}

/*
 * What the converter writes the loader must accept: serialize a compiled model, validate it
 * from memory as model_load validates a mapped file, and run it.
 */
static inline void fuzz_check_compiled(const struct model *compiled, const uint8_t *in, size_t n)
{
	struct model *m;
	char err[512];
	void *buf, *copy;
	size_t size;

	CHECK(model_serialize(compiled, &buf, &size) == 0);
	copy = aligned_alloc(MODEL_FILE_ALIGN, (size + MODEL_FILE_ALIGN - 1) & ~(size_t)63);
	CHECK(copy);
	memcpy(copy, buf, size);
	free(buf);
	m = model_from_buffer(copy, size, "(converted)", err, sizeof(err));
	if (!m)
		fprintf(stderr, "converted model rejected: %s\n", err);
	CHECK(m);
	fuzz_run(m, in, n);
	model_free(m);
	free(copy);
}

/*
 * One architecture that takes every kind of array: float and binary conv and dense, biases,
 * batch-norms folded into thresholds or not, pooling, LRN. The seeds in tests/fuzz/corpus/npz are
 * archives for it; fuzz_plan and fuzz_profile plan over the model it compiles to.
 */
static const char fuzz_arch_json[] =
    "{\"name\": \"fuzz-npz\", \"input\": {\"shape\": [2, 5, 5], \"dtype\": \"u8\"},"
    " \"layers\": ["
    "{\"type\": \"conv\", \"out\": 3, \"kernel\": 3, \"pad\": 1, \"bias\": true,"
    " \"binary_weights\": true},"
    "{\"type\": \"batchnorm\", \"eps\": 1e-4}, {\"type\": \"sign\"},"
    "{\"type\": \"maxpool\", \"kernel\": 2, \"stride\": 1},"
    "{\"type\": \"conv\", \"out\": 4, \"kernel\": 2, \"stride\": 2},"
    "{\"type\": \"lrn\", \"size\": 3}, {\"type\": \"relu\"}, {\"type\": \"flatten\"},"
    "{\"type\": \"dense\", \"out\": 8, \"bias\": true, \"binary_weights\": true},"
    "{\"type\": \"batchnorm\"}, {\"type\": \"sign\"},"
    "{\"type\": \"dense\", \"out\": 3, \"bias\": true}, {\"type\": \"batchnorm\"}]}";

/*
 * fuzz_arch_json compiled with fixed weights and validated from memory. Such a model has no
 * mapped file, so split_model_hash gives FNV-1a of nothing: FUZZ_MODEL_HASH.
 */
#define FUZZ_MODEL_HASH 0xcbf29ce484222325ull

static inline struct model *fuzz_fixed_model(void)
{
	struct model_ic_model ic = {.arch_path = "arch.json", .weights_path = "weights.npz"};
	struct model c, *m;
	char err[512];
	void *buf, *copy;
	size_t size;

	CHECK(model_ic_parse_arch(&ic, fuzz_arch_json, sizeof(fuzz_arch_json) - 1, err,
				  sizeof(err)) == 0);
	CHECK(fuzz_synth_weights(&ic, NULL, 0));
	CHECK(model_compile(&ic, &c, err, sizeof(err)) == 0);
	CHECK(model_serialize(&c, &buf, &size) == 0);
	copy = aligned_alloc(MODEL_FILE_ALIGN, (size + MODEL_FILE_ALIGN - 1) & ~(size_t)63);
	CHECK(copy);
	memcpy(copy, buf, size);
	m = model_from_buffer(copy, size, "(fixed)", err, sizeof(err));
	CHECK(m);
	free(buf);
	model_compiled_free(&c);
	model_ic_free(&ic);
	return m; /* lives as long as the fuzzer, as does copy */
}

#endif /* FUZZ_KERN_H */
