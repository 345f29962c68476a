/* SPDX-License-Identifier: MIT */
/*
 * model/compile.h — the compiler from interchange layers (arch.json + weights.npz, parsed by
 * model/convert.c) to the ops of model.h: the converter's, and, in its shape-only pass, the
 * planner's (split/arch.c).
 *
 * The compiler walks the layers keeping the tensor's format, whether its values are integers
 * held exactly (and their range), and a pending chain of per-channel monotone maps (a bias, then
 * batch-norms) not yet applied. A sign on exact integers folds the chain into per-channel
 * thresholds (found by bisection over the integer range, evaluating the chain in float64 in the
 * spec's order, so the decision is the reference's bit for bit) and, where the integers come
 * straight from a binary op, into that op (MODEL_LF_THRESH). Anything else materializes the
 * chain as BIAS / BATCHNORM ops.
 *
 * Two layer types beyond the spec come only from the ONNX importer: MODEL_SRC_PAD (an explicit
 * padding, MODEL_OP_PAD) and MODEL_SRC_SIGN3 (ONNX Sign: compiled as a sign to bits where the
 * compiler proves that no reachable input is exactly 0, else as MODEL_OP_SIGN3).
 *
 * The lowering (model/compile.c) decides the ops from the layers alone; the weights are read in
 * model/compile_weights.c (model/compile_ctx.h), which the shape-only pass leaves out.
 */
#ifndef MODEL_COMPILE_H
#define MODEL_COMPILE_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "model/ic.h"
#include "model/model.h"

/*
 * Compile ic into *m (n_src = ic->n_layers source records, the ops in layers[], every blob
 * malloc'd and owned by m: release with model_compiled_free). Shapes and values of the arrays
 * are checked as layers take them (marking them used). Returns 0, or -EINVAL / -ENOMEM with a
 * message naming the file, layer and key in err.
 */
int model_compile(const struct model_ic_model *ic, struct model *m, char *err, size_t errlen);

/*
 * The shape-only pass: the same lowering without weights (ic's arrays are not read; n_arrays
 * may be 0). *m gets the ops with their formats, shapes, flags and source ranges, and no blob
 * (release with model_compiled_free). Where the lowering depends on the values of a pending
 * bias/batch-norm chain, it takes what a trained network's weights give: the chain folds into
 * thresholds wherever the integers are exact within int32 (no overflow to infinity times a zero
 * gamma), every gamma is positive (the chain stays pending across a max-pool, which never pools
 * by AND: no MODEL_LF_ANDPOOL), and no integer maps to exactly 0 (an ONNX Sign after the chain
 * gives one bit). Without a pending chain nothing is assumed. The errors are model_compile's
 * that need no weights; whatever model_compile accepts, this accepts, with the same source
 * shapes. split/ asks it which ops an architecture becomes (the NIC's part of it, by
 * exec/kexec.h's rule).
 */
int model_compile_shapes(const struct model_ic_model *ic, struct model *m, char *err,
			 size_t errlen);
void model_compiled_free(struct model *m);

#endif /* MODEL_COMPILE_H */
