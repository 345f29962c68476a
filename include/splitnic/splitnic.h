/* SPDX-License-Identifier: MIT */
/*
 * splitnic/splitnic.h — libsplitnic: in-process inference on splitnic model files.
 *
 *     struct splitnic_model *m;
 *     struct splitnic_ctx *ctx;
 *     struct splitnic_error e;
 *
 *     if (splitnic_model_load("fmnist-bmlp.snm", &m, &e) ||
 *         splitnic_ctx_create(m, 64, 1, &ctx, &e))
 *             errx(1, "%s", e.msg);
 *     splitnic_predict(ctx, images, n * item_bytes, n, NULL, 0, classes, &e);
 *
 * Build with `pkg-config --cflags --libs splitnic`. The static library libsplitnic.a needs the
 * libraries `pkg-config --static --libs splitnic` lists after it.
 *
 * Model files are made by `splitnic convert` from the interchange format (arch.json +
 * weights.npz); the bundled ones are installed under PREFIX/share/splitnic/models/.
 *
 * Errors: see splitnic/status.h. Every function that can fail returns 0 or a status code and
 * fills *err (which may be NULL) with the code and a message naming the cause. Bad arguments
 * (NULL pointers, wrong sizes, a count above what a context was created for, a file that fails
 * validation) are errors, never crashes.
 *
 * Thread safety: a model is read-only once loaded (and its labels set): any number of threads
 * may create contexts from it and use them at once. A context belongs to one thread at a time:
 * use one context per thread. splitnic_model_free must not race with splitnic_ctx_create on
 * the same model. The library has no global state: no registry, no error variable, no
 * environment variables (except SPLITNIC_ISA, which the kernels read once to force an
 * instruction-set table: ref, avx2 or avx512).
 *
 * Handles are checked: every model and context carries a magic number, and a function given a
 * pointer that is not a live object of the right kind returns SPLITNIC_E_BAD_HANDLE. In debug
 * builds (the library compiled without NDEBUG, the default of this project's Makefile) freed
 * objects keep a small husk (64 bytes each, never reused) marked dead, so use after free and
 * double free are detected reliably; in release builds (-DNDEBUG) the memory is released and
 * the check only catches what has not been overwritten since.
 */
#ifndef SPLITNIC_SPLITNIC_H
#define SPLITNIC_SPLITNIC_H

#include <stddef.h>
#include <stdint.h>

#include "splitnic/status.h"

#ifdef __cplusplus
extern "C" {
#endif

#define SPLITNIC_VERSION_MAJOR 1
#define SPLITNIC_VERSION_MINOR 0
#define SPLITNIC_VERSION_PATCH 0

/* The library's version, "MAJOR.MINOR.PATCH"; the soname is libsplitnic.so.MAJOR. */
const char *splitnic_version(void);

/* Element types of model inputs: one image is C*H*W elements in C-major order ([c][h][w]). */
enum splitnic_dtype {
	SPLITNIC_DTYPE_U8 = 1,	/* uint8_t, 0..255 */
	SPLITNIC_DTYPE_F32 = 2, /* float, native byte order */
};

/* The shape of one model input. */
struct splitnic_shape {
	uint32_t dtype; /* enum splitnic_dtype */
	uint32_t c, h, w;
	size_t item_bytes; /* bytes of one input: c * h * w * sizeof(element) */
};

struct splitnic_model;
struct splitnic_ctx;

/*
 * Load and validate a model file (mapped read-only). On success *model is the new model.
 * Errors: SPLITNIC_E_INVALID (NULL path or model), SPLITNIC_E_IO (cannot open the file),
 * SPLITNIC_E_BAD_MODEL (the message names the file, layer and field that fail validation),
 * SPLITNIC_E_NOMEM. *model is NULL on error.
 */
int splitnic_model_load(const char *path, struct splitnic_model **model,
			struct splitnic_error *err);

/*
 * Free a model. Returns SPLITNIC_E_BUSY (and frees nothing) while contexts created from it are
 * alive, SPLITNIC_E_BAD_HANDLE if model is not a live model; NULL is a no-op returning 0.
 */
int splitnic_model_free(struct splitnic_model *model, struct splitnic_error *err);

/* The model's name (from its file; not NULL for a live model, NULL otherwise). */
const char *splitnic_model_name(const struct splitnic_model *model);

/* The shape of one input. */
int splitnic_model_input(const struct splitnic_model *model, struct splitnic_shape *shape,
			 struct splitnic_error *err);

/* The number of classes (scores per input). */
int splitnic_model_classes(const struct splitnic_model *model, uint32_t *classes,
			   struct splitnic_error *err);

/*
 * Class labels from a text file: one label per line (UTF-8, at most 63 bytes, no empty lines),
 * exactly as many lines as the model has classes. Replaces labels loaded before. Call it
 * before sharing the model between threads. The bundled models come with one
 * (share/splitnic/models/NAME.labels).
 */
int splitnic_model_load_labels(struct splitnic_model *model, const char *path,
			       struct splitnic_error *err);

/*
 * The label of class cls: the loaded label, or the class number in decimal ("7") when no
 * labels were loaded. *label stays valid until the model is freed or its labels replaced.
 */
int splitnic_model_label(const struct splitnic_model *model, uint32_t cls, const char **label,
			 struct splitnic_error *err);

/*
 * An inference context for up to max_batch inputs per call (1 .. 65536) run by `threads`
 * threads (1 .. 256; the calling thread is one of them, threads - 1 more are started for each
 * splitnic_predict call of more than one input). Every buffer is allocated here; a
 * splitnic_predict with threads == 1 allocates nothing.
 * Errors: SPLITNIC_E_INVALID, SPLITNIC_E_BAD_HANDLE (model), SPLITNIC_E_NOMEM.
 */
int splitnic_ctx_create(const struct splitnic_model *model, uint32_t max_batch, uint32_t threads,
			struct splitnic_ctx **ctx, struct splitnic_error *err);

/*
 * How a context computes float layers (docs/float.md). SPLITNIC_PRECISION_CERTIFIED, the
 * default: float32, with a rigorous bound of the float32 error wherever a float value decides
 * something (a sign after a float layer, the arg-max); what the bound cannot decide is computed
 * again in float64, so binary activations and classes are those of float64; scores are the
 * float32 values. SPLITNIC_PRECISION_EXACT: float64 throughout, the reference scores bit for bit.
 * SPLITNIC_PRECISION_FLOAT32: as certified without the final arg-max check, float32 as
 * frameworks run it (a class may differ from float64 where two scores nearly tie).
 */
enum splitnic_precision {
	SPLITNIC_PRECISION_CERTIFIED = 0,
	SPLITNIC_PRECISION_EXACT = 1,
	SPLITNIC_PRECISION_FLOAT32 = 2,
};

/*
 * Set a context's precision (its buffers are made again: call it before predicting, not
 * concurrently with splitnic_predict on the same context).
 * Errors: SPLITNIC_E_INVALID (an unknown precision), SPLITNIC_E_BAD_HANDLE, SPLITNIC_E_NOMEM.
 */
int splitnic_ctx_set_precision(struct splitnic_ctx *ctx, enum splitnic_precision precision,
			       struct splitnic_error *err);

/* Free a context. SPLITNIC_E_BAD_HANDLE if it is not a live context; NULL is a no-op. */
int splitnic_ctx_free(struct splitnic_ctx *ctx, struct splitnic_error *err);

/*
 * Run the model on n inputs (1 .. the context's max_batch) back to back in `input`, which
 * holds exactly input_bytes = n * item_bytes bytes in the model's input dtype. Writes, when
 * the pointers are not NULL, scores[n][classes] (double; scores_len, in elements, must be at
 * least n * classes) and classes[n] (the arg-max of each input's scores, lowest index on
 * ties). Binary layers are exact in integers; real-valued layers as the context's precision
 * says (splitnic_ctx_set_precision): classes equal the float64 classes but at float32.
 * Errors: SPLITNIC_E_INVALID (NULL ctx or input, n out of range, scores_len too small),
 * SPLITNIC_E_BAD_INPUT (input_bytes does not match; the message gives both sizes),
 * SPLITNIC_E_BAD_HANDLE (ctx not live), SPLITNIC_E_IO (a worker thread could not start).
 */
int splitnic_predict(struct splitnic_ctx *ctx, const void *input, size_t input_bytes, uint32_t n,
		     double *scores, size_t scores_len, uint32_t *classes,
		     struct splitnic_error *err);

#ifdef __cplusplus
}
#endif

#endif /* SPLITNIC_SPLITNIC_H */
