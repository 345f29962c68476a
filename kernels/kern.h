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
struct kern_ctx *kern_ctx_create(const struct model *m, uint32_t max_batch);
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

/* The whole model: scores (double [batch][classes]) from the model input. */
int kern_forward(struct kern_ctx *ctx, const void *in, uint32_t batch, double *scores);

/* Arg-max, lowest index on ties. */
uint32_t kern_argmax(const double *scores, uint32_t n);

#endif /* KERN_H */
