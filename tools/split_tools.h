/* SPDX-License-Identifier: MIT */
/* tools/split_tools.h — helpers shared by the split verbs (analyze, plan, gen, calibrate, sweep).
 */
#ifndef TOOLS_SPLIT_TOOLS_H
#define TOOLS_SPLIT_TOOLS_H

#include <stdbool.h>
#include <stdint.h>
#include <time.h>

#include "kernels/kern.h"
#include "split/split.h"

static inline uint64_t split_now_ns(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (uint64_t)ts.tv_sec * 1000000000ull + (uint64_t)ts.tv_nsec;
}

/* Does path end in ".json"? (an interchange architecture rather than a model file) */
int split_tools_is_json(const char *path);

/*
 * Load the profile at path (defaults when NULL) and plan m: executors CPU, NIC (from
 * nicfw_nic_first) and the GPU when the profile has one and use_gpu. Fills p (caller frees
 * it with split_problem_free) and plan. Returns 0, or -errno with a message in err.
 */
int split_tools_plan(const struct kern_model *m, const struct split_profile *pr,
		     struct split_opts *o, bool use_gpu, struct split_problem *p,
		     struct split_plan *plan, char *err, size_t errlen);

/* Print a plan's stages and predicted breakdown. */
void split_tools_print_plan(const struct kern_model *m, const struct split_plan *plan);

#endif /* TOOLS_SPLIT_TOOLS_H */
