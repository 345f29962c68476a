// SPDX-License-Identifier: MIT
/*
 * libFuzzer target: the plan file parser (split_plan_read, under split_plan_load). Any input is
 * a plan file for the model fuzz_fixed_model() builds (name "fuzz-npz", hash FUZZ_MODEL_HASH).
 * An accepted plan must cover the model's ops in order with known executors, carry a finite
 * predicted cost, and evaluate under the default profile without a NaN.
 */
#include <math.h>
#include <stdint.h>
#include <stdio.h>
#include <string.h>

#include "split/split.h"
#include "tests/fuzz/fuzz_kern.h"

static struct model *model;
static struct split_problem problem;

int LLVMFuzzerInitialize(int *argc, char ***argv)
{
	struct split_profile pr;
	struct split_opts o = {.exec_mask = ~0u};

	model = fuzz_fixed_model();
	CHECK(split_model_hash(model) == FUZZ_MODEL_HASH);
	split_profile_default(&pr);
	o.nic_first = model->n_layers - 4;
	CHECK(split_problem_from_model(&problem, model, &pr, &o) == 0);
	return 0;
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	struct split_plan plan;
	char err[512] = "";
	FILE *f;
	int ret;

	f = fuzz_stream(data, size);
	ret = split_plan_read(f, "(fuzz)", model, &plan, err, sizeof(err));
	fclose(f);
	if (ret) {
		CHECK(ret == -EINVAL && !strncmp(err, "(fuzz)", 6));
		return 0;
	}
	CHECK(plan.n_stages >= 1 && plan.n_stages <= SPLIT_EX__COUNT);
	CHECK(isfinite(plan.cost) && plan.cost >= 0);
	for (uint32_t s = 0, at = 0; s < plan.n_stages; at = plan.stage[s++].last) {
		CHECK(plan.stage[s].exec < SPLIT_EX__COUNT);
		CHECK(plan.stage[s].first == at && plan.stage[s].last > at);
		CHECK(plan.stage[s].last <= model->n_layers);
	}
	CHECK(plan.stage[plan.n_stages - 1].last == model->n_layers);
	CHECK(!isnan(split_plan_eval(&problem, &plan)));
	return 0;
}
