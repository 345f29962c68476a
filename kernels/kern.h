/* SPDX-License-Identifier: MIT */
/*
 * kernels/kern.h — running a loaded model (model/model.h): the execution context, a forward pass
 * over any op range, the arg-max.
 */
#ifndef KERN_H
#define KERN_H

#include <stddef.h>
#include <stdint.h>

#include "model/model.h"

/*
 * Execution context: every buffer for the model at up to max_batch images, allocated here
 * (activations ping-pong by liveness, scratch sized for the largest op); kern_forward then
 * allocates nothing. One context per thread; the model is shared read-only.
 */
struct kern_ctx;

/*
 * How float layers compute (docs/float.md):
 *  - KERN_PRECISION_CERTIFIED: float32, with a rigorous bound of the float32 error wherever a
 *    float value decides something (a sign or threshold after a float layer, the arg-max of the
 *    scores); what the bound cannot decide is recomputed in float64. Bits and classes are those
 *    of the float64 ops; scores of float layers ending a model are float32 values.
 *  - KERN_PRECISION_EXACT: float64 throughout, op by op: the reference.
 *  - KERN_PRECISION_FLOAT32: as certified, but the final float layers' arg-max is not checked:
 *    float32 as frameworks run it (classes may differ from float64 where scores nearly tie).
 */
enum kern_precision {
	KERN_PRECISION_CERTIFIED = 0,
	KERN_PRECISION_EXACT = 1,
	KERN_PRECISION_FLOAT32 = 2,
};

/* The precision kern_ctx_create gives (certified unless set; a program sets it at start-up). */
void kern_precision_set_default(enum kern_precision p);
enum kern_precision kern_precision_get_default(void);
/* "certified", "exact" or "float32" -> the enum, else -EINVAL; and back. */
int kern_precision_from_name(const char *name);
const char *kern_precision_name(enum kern_precision p);

struct kern_ctx *kern_ctx_create(const struct model *m, uint32_t max_batch);
struct kern_ctx *kern_ctx_create_prec(const struct model *m, uint32_t max_batch,
				      enum kern_precision prec);
enum kern_precision kern_ctx_precision(const struct kern_ctx *ctx);
void kern_ctx_free(struct kern_ctx *ctx);

/*
 * Run ops [first, last) on `batch` images. `in` is in layers[first].in's format (the model's
 * input format when first == 0), `out` receives layers[last-1].out's format; both hold
 * batch * model_shape_bytes() bytes. Returns 0 or -EINVAL.
 */
int kern_forward_range(struct kern_ctx *ctx, uint32_t first, uint32_t last, const void *in,
		       uint32_t batch, void *out);

/*
 * Outputs of float layers run in float32 (a conv feeding a sign or a threshold) that neither
 * float32 nor a second sum in double could decide (ties, in practice) and took their bit from
 * the image's float64 conv, since creation (kernels/fconv.c).
 */
uint64_t kern_ctx_recomputed(const struct kern_ctx *ctx);

/*
 * Images whose scores the float32 run of the model's final float layers could not certify and
 * that ran again in float64 (kernels/frun.c), since creation.
 */
uint64_t kern_ctx_rechecked(const struct kern_ctx *ctx);

/* The whole model: scores (double [batch][classes]) from the model input. */
int kern_forward(struct kern_ctx *ctx, const void *in, uint32_t batch, double *scores);

/* Arg-max, lowest index on ties. */
uint32_t kern_argmax(const double *scores, uint32_t n);

#endif /* KERN_H */
