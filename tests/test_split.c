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
	};

	return cmocka_run_group_tests(tests, NULL, NULL);
}
