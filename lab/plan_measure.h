/* SPDX-License-Identifier: MIT */
/*
 * lab/plan_measure.h — what the planner measures of a model on this machine before it plans
 * (split_opts.cpu_op_s and nic_suffix_s), for every verb that plans: plan, sweep (in process
 * and over the packet path) and calibrate. One cost model: each of them prices a stage from the
 * same measurements.
 */
#ifndef LAB_PLAN_MEASURE_H
#define LAB_PLAN_MEASURE_H

#include <stdint.h>

#include "kernels/kern.h"
#include "split/split.h"

struct plan_measured {
	double *cpu_op_s;     /* [n_layers]: each op's CPU time (split_tools_measure_ops) */
	double *nic_suffix_s; /* [n_layers + 1]: the NIC's chain from op k (NAN: cannot start) */
	double cpu_total_s;   /* every op on the CPU */
	uint32_t n;
};

/* plan_measure's `times` for a verb that times a model once before it plans (plan, the
 * sweeps): a slow spell of the machine can outlast one timing */
#define PLAN_MEASURE_TIMES 2

/*
 * Time m's ops on this CPU (`rounds` interleaved runs of every prefix, their medians; `times`
 * times, a second apart, the fastest whole model kept; a caller that spaces its own timings
 * passes 1 and keeps the fastest itself, as calibrate does) and the
 * NIC's chain from every op where the NIC can take over on the packet path (kexec_nic_handoff_ok,
 * and op 0 when the NIC can run the whole model): on the profile's platform (pr nic.emu) with
 * `executors` (0: the profile's nic.executors) the emulator's steady-state modeled time per
 * request (what splitnic-nic's emu platform serves at), else the ops' in-process time.
 * Returns 0 (free with plan_measured_free), or -errno with a message in err.
 */
int plan_measure(const struct model *m, const struct split_profile *pr, uint32_t rounds,
		 uint32_t times, uint32_t executors, struct plan_measured *out, char *err,
		 size_t errlen);
void plan_measured_free(struct plan_measured *pm);

/* The emulator's steady-state modeled seconds per request of m from op `first` with
 * `executors` (what splitnic-nic --platform emu serves at); -errno with a message in err. */
int plan_emu_seconds(const struct model *m, uint32_t first, uint32_t executors, double *s,
		     char *err, size_t errlen);

#endif /* LAB_PLAN_MEASURE_H */
