// SPDX-License-Identifier: MIT
/*
 * libFuzzer target: the calibration profile parser (split_profile_read, under
 * split_profile_load). Any input is a profile file. An accepted profile must give the planner
 * costs it can use: planning the model fuzz_fixed_model() builds over every executor gives a
 * plan (or -ENOENT when none is feasible) whose cost is not NaN.
 */
#include <math.h>
#include <stdint.h>
#include <stdio.h>
#include <string.h>

#include "split/split.h"
#include "tests/fuzz/fuzz_kern.h"

static struct model *model;

int LLVMFuzzerInitialize(int *argc, char ***argv)
{
	model = fuzz_fixed_model();
	return 0;
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	struct split_opts o = {.exec_mask = ~0u};
	struct split_problem problem;
	struct split_profile pr;
	struct split_plan plan;
	char err[512] = "";
	FILE *f;
	int ret;

	f = fuzz_stream(data, size);
	ret = split_profile_read(f, "(fuzz)", &pr, err, sizeof(err));
	fclose(f);
	if (ret) {
		CHECK(ret == -EINVAL && !strncmp(err, "(fuzz):", 7));
		return 0;
	}
	o.nic_first = model->n_layers - 4;
	CHECK(split_problem_from_model(&problem, model, &pr, &o) == 0);
	ret = split_plan_solve(&problem, &plan);
	CHECK(ret == 0 || ret == -ENOENT);
	if (!ret)
		CHECK(!isnan(plan.cost) && plan.n_stages >= 1);
	split_problem_free(&problem);
	return 0;
}
