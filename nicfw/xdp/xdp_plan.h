/* SPDX-License-Identifier: MIT */
/*
 * nicfw/xdp/xdp_plan.h — internal to the XDP loader: the xdp_model map's value for a plan.
 *
 * xdp_infer_plan() (xdp_infer.h, in xdp_plan.c) decides whether the program serves a model:
 * exec/kexec.h's NIC rule (kexec_nic_find) with the two options the program has — an f32 input
 * binarized feature by feature, and any element-wise tail, both tabulated at load — must take
 * the whole model; then the program's own limits (XDP_INFER_MAX_*: one packet's input, widths
 * and layers the verifier bounds, classes one RESPONSE carries, the score table and the map
 * value), each refused with -E2BIG naming it.
 */
#ifndef NICFW_XDP_PLAN_H
#define NICFW_XDP_PLAN_H

#include <stddef.h>
#include <stdint.h>

#include "kernels/kern.h"
#include "nicfw/xdp/xdp_infer.h"

/*
 * Fill val (p->cfg.model_words u64, zeroed) with m's xdp_model value for plan p: the weight rows
 * and thresholds of every binary dense, the per-feature words (f32 requests), the score table
 * computed by the CPU kernels. 0, or -ENOMEM / -EDOM / -errno with a message in err.
 */
int xdp_plan_fill(const struct model *m, const struct xdp_infer_plan *p, uint64_t *val, char *err,
		  size_t errlen);

#endif /* NICFW_XDP_PLAN_H */
