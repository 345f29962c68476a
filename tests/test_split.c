// SPDX-License-Identifier: MIT
/* split/: analysis against Caffe's AlexNet, the planner against exhaustive search, the wire. */
#include <errno.h>
#include <math.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <cmocka.h>

#include "kernels/kern_ops.h"
#include "split/split.h"

/* bvlc_alexnet (deploy.prototxt): output shape and parameters of the layers that have them. */
static const struct {
	uint32_t layer, c, h, w;
	uint64_t params;
} caffe_alexnet[] = {
    {0, 96, 55, 55, 34944},	/* conv1 */
    {3, 96, 27, 27, 0},		/* pool1 */
    {4, 256, 27, 27, 307456},	/* conv2, group 2 */
    {7, 256, 13, 13, 0},	/* pool2 */
    {8, 384, 13, 13, 885120},	/* conv3 */
    {10, 384, 13, 13, 663936},	/* conv4, group 2 */
    {12, 256, 13, 13, 442624},	/* conv5, group 2 */
    {14, 256, 6, 6, 0},		/* pool5 */
    {16, 4096, 1, 1, 37752832}, /* fc6 */
    {18, 4096, 1, 1, 16781312}, /* fc7 */
    {20, 1000, 1, 1, 4097000},	/* fc8 */
};

static void test_analyze_alexnet_caffe(void **state)
{
	struct split_arch a;
	char err[256];
	uint64_t total = 0;

	(void)state;
	assert_int_equal(split_arch_load("split/arch/alexnet.json", &a, err, sizeof(err)), 0);
	assert_int_equal(a.n, 21);
	for (size_t i = 0; i < sizeof(caffe_alexnet) / sizeof(caffe_alexnet[0]); i++) {
		const struct split_layer *L = &a.l[caffe_alexnet[i].layer];

		assert_int_equal(L->c, caffe_alexnet[i].c);
		assert_int_equal(L->h, caffe_alexnet[i].h);
		assert_int_equal(L->w, caffe_alexnet[i].w);
		assert_int_equal(L->elems, (uint64_t)caffe_alexnet[i].c * caffe_alexnet[i].h *
					       caffe_alexnet[i].w);
		assert_int_equal(L->params, caffe_alexnet[i].params);
		assert_false(L->exec_mask & SPLIT_EXM(SPLIT_EX_NIC));
	}
	for (uint32_t i = 0; i < a.n; i++)
		total += a.l[i].params;
	assert_int_equal(total, 60965224); /* Caffe's bvlc_alexnet: 60,965,224 parameters */
	split_arch_free(&a);
}

static void test_analyze_bmlp_nic_tail(void **state)
{
	struct split_arch a;
	char err[256];

	(void)state;
	assert_int_equal(split_arch_load("split/arch/bmlp.json", &a, err, sizeof(err)), 0);
	for (uint32_t i = 0; i < a.n; i++)
		assert_true(a.l[i].exec_mask & SPLIT_EXM(SPLIT_EX_NIC));
	assert_int_equal(a.l[1].weight_bytes, 4096ull * 784 / 8 + 4 * 4096);
	split_arch_free(&a);
	assert_int_equal(split_arch_load("split/arch/bcnn-cifar.json", &a, err, sizeof(err)), 0);
	assert_false(a.l[20].exec_mask & SPLIT_EXM(SPLIT_EX_NIC));
	assert_true(a.l[21].exec_mask & SPLIT_EXM(SPLIT_EX_NIC));
	split_arch_free(&a);
}

static uint64_t rng_state = 12345;

static double rnd(void)
{
	rng_state = rng_state * 6364136223846793005ull + 1442695040888963407ull;
	return (double)(rng_state >> 11) * 0x1.0p-53;
}

static void random_problem(struct split_problem *p, uint32_t n, uint32_t E, uint32_t obj)
{
	assert_int_equal(split_problem_alloc(p, n, E), 0);
	p->objective = obj;
	p->origin = 0;
	for (uint32_t e = 0; e < E; e++) {
		p->stage_cost[e] = rnd() * 2;
		p->terminal[e] = e && rnd() < 0.3;
		p->mem[e] = rnd() < 0.5 ? UINT64_MAX : (uint64_t)(rnd() * 4000);
	}
	for (uint32_t i = 0; i < n; i++) {
		p->start_ok[i] = 1u | (rnd() < 0.7 ? 0x6u : 0);
		for (uint32_t e = 0; e < E; e++) {
			p->op[i][e] = (e == 0 || rnd() < 0.75) ? rnd() * 10 : INFINITY;
			p->wbytes[i][e] = (uint64_t)(rnd() * 1000);
			for (uint32_t b = 0; b < E; b++) {
				p->cut[i][e][b] = rnd() * 5;
				p->fmt[i][e][b] = SPLIT_FMT_BITS;
			}
		}
	}
}

static void check_constraints(const struct split_problem *p, const struct split_plan *pl)
{
	uint32_t used = 0, at = 0;

	for (uint32_t s = 0; s < pl->n_stages; s++) {
		const struct split_stage *st = &pl->stage[s];
		uint64_t w = 0;

		assert_int_equal(st->first, at);
		assert_false(used & SPLIT_EXM(st->exec));
		assert_true(p->start_ok[st->first] & SPLIT_EXM(st->exec));
		if (p->terminal[st->exec])
			assert_int_equal(s + 1, pl->n_stages);
		for (uint32_t i = st->first; i < st->last; i++) {
			assert_false(isinf(p->op[i][st->exec]));
			w += p->wbytes[i][st->exec];
		}
		assert_true(w <= p->mem[st->exec]);
		used |= SPLIT_EXM(st->exec);
		at = st->last;
	}
	assert_int_equal(at, p->n);
}

static void test_planner_equals_exhaustive(void **state)
{
	uint32_t feasible = 0, multi = 0;

	(void)state;
	for (int t = 0; t < 600; t++) {
		const uint32_t n = 1 + (uint32_t)(rnd() * 12), E = 1 + (uint32_t)(rnd() * 3);
		struct split_problem p;
		struct split_plan dp, ex;
		int r1, r2;

		random_problem(&p, n > 12 ? 12 : n, E > 3 ? 3 : E, t % 2);
		r1 = split_plan_solve(&p, &dp);
		r2 = split_plan_exhaustive(&p, &ex);
		assert_int_equal(r1, r2);
		if (!r1) {
			feasible++;
			multi += dp.n_stages > 1;
			assert_true(fabs(dp.cost - ex.cost) <= 1e-9 * (1 + fabs(ex.cost)));
			check_constraints(&p, &dp);
			assert_true(fabs(split_plan_eval(&p, &dp) - dp.cost) < 1e-12);
		}
		split_problem_free(&p);
	}
	assert_true(feasible > 300);
	assert_true(multi > 50);
}

static void test_planner_infeasible(void **state)
{
	struct split_problem p;
	struct split_plan pl;

	(void)state;
	assert_int_equal(split_problem_alloc(&p, 3, 2), 0);
	/* op 1 runs nowhere */
	p.op[0][0] = p.op[2][0] = 1;
	assert_int_equal(split_plan_solve(&p, &pl), -ENOENT);
	assert_int_equal(split_plan_exhaustive(&p, &pl), -ENOENT);
	split_problem_free(&p);
}

static int profile_from(const char *text, size_t len, struct split_profile *p, char *err,
			size_t errlen)
{
	FILE *f = fmemopen((void *)text, len, "r");
	int ret;

	assert_non_null(f);
	ret = split_profile_read(f, "t.profile", p, err, errlen);
	fclose(f);
	return ret;
}

/*
 * fuzz_profile: "nic.mem_bytes = 0x1p200" was accepted and the planner's conversion of it to
 * u64 was undefined behaviour; a zero link rate or payload divided by zero. Every key now has a
 * range from its unit; a line is never split in two, a key is never given twice.
 */
static void test_profile_rejects(void **state)
{
	static const struct {
		const char *text, *want;
	} cases[] = {
	    {"nic.mem_bytes = 0x1p200\n", "t.profile:1: bad value for nic.mem_bytes"},
	    {"# x\ngpu.mem_bytes = 1e300\n", "t.profile:2: bad value for gpu.mem_bytes"},
	    {"cpu.cache_bytes = 1.5\n", "need a whole number"},
	    {"link.gbps = 0\n", "bad value for link.gbps"},
	    {"cpu.f64_macs = 0\n", "bad value for cpu.f64_macs"},
	    {"link.payload = 50\n", "bad value for link.payload"},
	    {"link.payload = 70000\n", "bad value for link.payload"},
	    {"gpu.present = 0.5\n", "bad value for gpu.present"},
	    {"cpu.op_s = -1e-9\n", "bad value for cpu.op_s"},
	    {"cpu.op_s = nan\n", "bad value for cpu.op_s"},
	    {"cpu.op_s = 1e-6\ncpu.op_s = 2e-6\n", "t.profile:2: cpu.op_s given twice"},
	    {"cpu.ops = 1\n", "t.profile:1: unknown key \"cpu.ops\""},
	    {"cpu.op_s 1\n", "t.profile:1: expected key = value"},
	};
	struct split_profile p;
	char err[256], text[1024];
	size_t n;

	(void)state;
	for (size_t i = 0; i < sizeof(cases) / sizeof(cases[0]); i++) {
		err[0] = 0;
		if (profile_from(cases[i].text, strlen(cases[i].text), &p, err, sizeof(err)) !=
			-EINVAL ||
		    !strstr(err, cases[i].want))
			fail_msg("\"%s\": \"%s\", expected \"%s\"", cases[i].text, err,
				 cases[i].want);
	}
	/* A comment longer than a line: its tail used to be read as a line of its own. */
	n = (size_t)snprintf(text, sizeof(text), "# %0600d cpu.op_s = 5\n", 0);
	assert_int_equal(profile_from(text, n, &p, err, sizeof(err)), -EINVAL);
	assert_non_null(strstr(err, "t.profile:1: line longer than"));
	/* Bytes after a NUL were silently ignored. */
	memcpy(text, "cpu.op_s = 1e-6\0 junk\n", 22);
	assert_int_equal(profile_from(text, 22, &p, err, sizeof(err)), -EINVAL);
	assert_non_null(strstr(err, "t.profile:1: NUL byte"));
	/* What split_profile_save writes (the defaults) reads back. */
	split_profile_default(&p);
	assert_int_equal(split_profile_save("build/test_split.profile", &p, "test"), 0);
	assert_int_equal(split_profile_load("build/test_split.profile", &p, err, sizeof(err)), 0);
	assert_int_equal(p.v[SPLIT_P_PAYLOAD], 1400);
	assert_int_equal(profile_from("link.payload = 9000 # jumbo\n", 28, &p, err, sizeof(err)),
			 0);
	assert_int_equal(p.v[SPLIT_P_PAYLOAD], 9000);
	remove("build/test_split.profile");
}

static int plan_from(const char *text, size_t len, struct split_plan *plan, char *err,
		     size_t errlen)
{
	/* A model validated from memory: its hash is FNV-1a of no bytes. */
	static const struct kern_model m = {.name = "t", .n_layers = 3};
	FILE *f = fmemopen((void *)text, len ? len : 1, "r");
	int ret;

	assert_non_null(f);
	if (!len) /* fmemopen takes no empty buffer: read its one byte first */
		fgetc(f);
	ret = split_plan_read(f, "t.plan", &m, plan, err, errlen);
	fclose(f);
	return ret;
}

/*
 * The plan file: records are whole lines, each checked to its end; "predicted_us nan" and
 * unknown objectives were accepted, a long line was read as two.
 */
static void test_plan_file_rejects(void **state)
{
#define PLAN_HEAD "splitnic-plan 1\nmodel t cbf29ce484222325 3\n"
	static const struct {
		const char *text, *want;
	} cases[] = {
	    {PLAN_HEAD "predicted_us nan\nstage cpu 0 3 -\n", "t.plan:3: expected a finite"},
	    {PLAN_HEAD "predicted_us -1\nstage cpu 0 3 -\n", "t.plan:3: expected a finite"},
	    {PLAN_HEAD "objective fastest\nstage cpu 0 3 -\n", "t.plan:3: expected objective"},
	    {PLAN_HEAD "link_gbps 10 20\nstage cpu 0 3 -\n", "t.plan:3: expected a finite"},
	    {PLAN_HEAD "model t cbf29ce484222325 3\n", "t.plan:3: model given twice"},
	    {PLAN_HEAD "stage cpu 0 3 - extra\n", "t.plan:3: expected stage"},
	    {PLAN_HEAD "stage tpu 0 3 -\n", "t.plan:3: executor \"tpu\" unknown"},
	    {PLAN_HEAD "stage cpu 0 3 f16\n", "t.plan:3: format \"f16\" unknown"},
	    {PLAN_HEAD "stage cpu 0 1 -\nstage nic 2 3 bits\n", "stage 1 does not continue"},
	    {PLAN_HEAD "stage cpu 0 2 -\n", "stage 0 does not continue"},
	    {PLAN_HEAD "objective latency\n", "t.plan: no stages"},
	    {"splitnic-plan 1junk\n", "t.plan:1: not a splitnic-plan 1 file"},
	    {"splitnic-plan 1\nmodel t cbf29ce484222325 4\nstage cpu 0 4 -\n", "another model"},
	    {"", "t.plan: empty"},
	};
	struct split_plan plan;
	char err[256], text[1024];
	size_t n;

	(void)state;
	for (size_t i = 0; i < sizeof(cases) / sizeof(cases[0]); i++) {
		err[0] = 0;
		if (plan_from(cases[i].text, strlen(cases[i].text), &plan, err, sizeof(err)) !=
			-EINVAL ||
		    !strstr(err, cases[i].want))
			fail_msg("\"%s\": \"%s\", expected \"%s\"", cases[i].text, err,
				 cases[i].want);
	}
	n = (size_t)snprintf(text, sizeof(text), PLAN_HEAD "objective latency%0300d\n", 0);
	assert_int_equal(plan_from(text, n, &plan, err, sizeof(err)), -EINVAL);
	assert_non_null(strstr(err, "t.plan:3: line longer than"));
	memcpy(text, PLAN_HEAD "stage cpu 0 3 -\0\n", sizeof(PLAN_HEAD) + 16);
	assert_int_equal(plan_from(text, sizeof(PLAN_HEAD) + 16, &plan, err, sizeof(err)), -EINVAL);
	assert_non_null(strstr(err, "t.plan:3: NUL byte"));
	n = (size_t)snprintf(text, sizeof(text),
			     PLAN_HEAD "objective throughput\r\nlink_gbps 2.5\npredicted_us "
				       "12.5\nstage cpu 0 1 -\nstage nic 1 3 bits\n");
	assert_int_equal(plan_from(text, n, &plan, err, sizeof(err)), 0);
	assert_int_equal(plan.n_stages, 2);
	assert_int_equal(plan.stage[1].exec, SPLIT_EX_NIC);
	assert_true(fabs(plan.cost - 12.5e-6) < 1e-15);
#undef PLAN_HEAD
}

static void test_wire_roundtrip_bits(void **state)
{
	const struct kern_shape s = {KERN_FMT_BITS, 100, 5, 3};
	const size_t words = 15 * kern_words(100);
	struct split_wire *w = split_wire_create(8 * words, 256);
	uint64_t *in = calloc(words, 8), *out = calloc(words, 8);

	(void)state;
	assert_non_null(w);
	for (size_t i = 0; i < words; i++)
		in[i] = (i % 2 == 1) ? (rng_state = rng_state * 6364136223846793005ull + 1) &
					   ((1ull << 36) - 1)
				     : rng_state * 2654435761u;
	assert_true(split_wire_send(w, &s, in, 7) > 1);
	split_wire_copy(w);
	assert_int_equal(split_wire_recv(w, &s, out), 0);
	assert_memory_equal(in, out, words * 8);
	split_wire_free(w);
	free(in);
	free(out);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
	    cmocka_unit_test(test_analyze_alexnet_caffe),
	    cmocka_unit_test(test_analyze_bmlp_nic_tail),
	    cmocka_unit_test(test_planner_equals_exhaustive),
	    cmocka_unit_test(test_planner_infeasible),
	    cmocka_unit_test(test_wire_roundtrip_bits),
	    cmocka_unit_test(test_profile_rejects),
	    cmocka_unit_test(test_plan_file_rejects),
	};

	return cmocka_run_group_tests(tests, NULL, NULL);
}
