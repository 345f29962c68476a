// SPDX-License-Identifier: MIT
/*
 * Certified float32 (kernels/frun.c) against float64 on models the bundled ones do not cover:
 * odd widths, padded and unpadded convs, pools, LRN, batch-norm with negative and zero gammas,
 * a float input, a conv run in chunks of images, and scores that tie exactly (the recheck path).
 * Classes must equal the exact precision's on every image, at batch 1 and 7; scores of certified
 * images are float32 values within 1e-4 max(1, |score|); the float32 precision never rechecks.
 * Scores carry the same bits at batch 1 and 7, and rechecked images those of exact.
 */
#include <math.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <cmocka.h>

#include "kernels/kern.h"
#include "tests/support/model_fixture.h"

#define COUNT 21

static const char *arch_odd =
    "{\"name\":\"odd\",\"input\":{\"shape\":[3,11,13],\"dtype\":\"f32\"},\"layers\":["
    "{\"type\":\"conv\",\"out\":5,\"kernel\":3,\"pad\":1,\"bias\":true},"
    "{\"type\":\"batchnorm\"},{\"type\":\"relu\"},{\"type\":\"maxpool\",\"kernel\":2},"
    "{\"type\":\"conv\",\"out\":7,\"kernel\":3},{\"type\":\"relu\"},"
    "{\"type\":\"lrn\",\"size\":3,\"alpha\":0.01,\"beta\":0.75,\"k\":1.0},"
    "{\"type\":\"flatten\"},{\"type\":\"dense\",\"out\":13,\"bias\":true},"
    "{\"type\":\"batchnorm\"},{\"type\":\"relu\"},{\"type\":\"dense\",\"out\":10,\"bias\":true}]}";

static const char *arch_mlp =
    "{\"name\":\"mlp\",\"input\":{\"shape\":[1,5,7],\"dtype\":\"u8\"},\"layers\":["
    "{\"type\":\"flatten\"},{\"type\":\"dense\",\"out\":19,\"bias\":true},{\"type\":\"relu\"},"
    "{\"type\":\"dense\",\"out\":10,\"bias\":true},{\"type\":\"batchnorm\"}]}";

/* A conv wide enough that batches of 7 run in chunks of 2 (FRUN_CHUNK_BYTES) before the dense. */
static const char *arch_wide =
    "{\"name\":\"wide\",\"input\":{\"shape\":[3,64,64],\"dtype\":\"f32\"},\"layers\":["
    "{\"type\":\"conv\",\"out\":16,\"kernel\":3,\"pad\":1},{\"type\":\"relu\"},"
    "{\"type\":\"maxpool\",\"kernel\":4,\"stride\":4},{\"type\":\"flatten\"},"
    "{\"type\":\"dense\",\"out\":10,\"bias\":true}]}";

static const char *arch_tie =
    "{\"name\":\"tie\",\"input\":{\"shape\":[1,4,5],\"dtype\":\"u8\"},\"layers\":["
    "{\"type\":\"flatten\"},{\"type\":\"dense\",\"out\":10,\"bias\":true}]}";

static void scale(double *v, size_t n, double s)
{
	for (size_t i = 0; i < n; i++)
		v[i] *= s;
}

static struct model *model_odd(void)
{
	struct test_gen g = {0};
	double *w;

	test_gen_conv(&g, 0, 5, 3, 3);
	scale((double *)g.a[g.n - 1].v, 5 * 3 * 9, 0.3);
	w = test_gen_array(&g, 0, "bias", NULL, 1, (uint64_t[]){5});
	for (int i = 0; i < 5; i++)
		w[i] = test_urand(-0.5, 0.5);
	test_gen_bn(&g, 1, 5, 1.0);
	test_gen_conv(&g, 4, 7, 5, 3);
	scale((double *)g.a[g.n - 1].v, 7 * 5 * 9, 0.2);
	test_gen_dense(&g, 8, 13, 7 * 3 * 4);
	scale((double *)g.a[g.n - 2].v, 13 * 84, 0.1);
	test_gen_bn(&g, 9, 13, 1.0);
	test_gen_dense(&g, 11, 10, 13);
	return test_model_build(arch_odd, &g);
}

static struct model *model_mlp(void)
{
	struct test_gen g = {0};

	test_gen_dense(&g, 1, 19, 35);
	scale((double *)g.a[g.n - 2].v, 19 * 35, 0.01);
	test_gen_dense(&g, 3, 10, 19);
	test_gen_bn(&g, 4, 10, 2.0);
	return test_model_build(arch_mlp, &g);
}

static struct model *model_wide(void)
{
	struct test_gen g = {0};

	test_gen_conv(&g, 0, 16, 3, 3);
	scale((double *)g.a[g.n - 1].v, 16 * 27, 0.2);
	test_gen_dense(&g, 4, 10, 16 * 16 * 16);
	scale((double *)g.a[g.n - 2].v, 10 * 4096, 0.05);
	return test_model_build(arch_wide, &g);
}

/* Classes 3 and 7 have the same weights and bias and the largest scores: an exact tie. */
static struct model *model_tie(void)
{
	struct test_gen g = {0};
	double *w, *b;

	test_gen_dense(&g, 1, 10, 20);
	w = (double *)g.a[g.n - 2].v;
	b = (double *)g.a[g.n - 1].v;
	for (int o = 0; o < 10; o++)
		for (int i = 0; i < 20; i++)
			w[o * 20 + i] = o == 3 || o == 7 ? 0.25 + 0.01 * i : -fabs(w[o * 20 + i]);
	b[7] = b[3];
	return test_model_build(arch_tie, &g);
}

/* The tie, except that pixel 0 weighs 0.5 more for class 7: images with pixel 0 above 0 do not
 * tie. */
static struct model *model_half_tie(void)
{
	struct test_gen g = {0};
	double *w, *b;

	test_gen_dense(&g, 1, 10, 20);
	w = (double *)g.a[g.n - 2].v;
	b = (double *)g.a[g.n - 1].v;
	for (int o = 0; o < 10; o++)
		for (int i = 0; i < 20; i++)
			w[o * 20 + i] = o == 3 || o == 7 ? 0.25 + 0.01 * i : -fabs(w[o * 20 + i]);
	w[7 * 20] += 0.5;
	b[7] = b[3];
	return test_model_build(arch_tie, &g);
}

struct outcome {
	uint64_t rechecked;
	uint32_t cls[COUNT];
	double scores[COUNT * 10];
};

static void run(const struct model *m, const void *in, uint32_t batch, enum kern_precision p,
		struct outcome *o)
{
	struct kern_ctx *ctx = kern_ctx_create_prec(m, batch, p);
	const size_t ib = model_shape_bytes(&m->input);

	assert_non_null(ctx);
	assert_int_equal(kern_ctx_precision(ctx), p);
	for (uint32_t i = 0; i < COUNT; i += batch) {
		uint32_t n = COUNT - i < batch ? COUNT - i : batch;

		assert_int_equal(
		    kern_forward(ctx, (const uint8_t *)in + i * ib, n, o->scores + i * 10), 0);
	}
	for (uint32_t i = 0; i < COUNT; i++)
		o->cls[i] = kern_argmax(o->scores + i * 10, 10);
	o->rechecked = kern_ctx_rechecked(ctx);
	kern_ctx_free(ctx);
}

static void check(const struct model *m, const void *in, uint32_t batch, bool want_recheck)
{
	struct outcome *x = calloc(3, sizeof(*x)), *c = x + 1, *f = x + 2;

	run(m, in, batch, KERN_PRECISION_EXACT, x);
	run(m, in, batch, KERN_PRECISION_CERTIFIED, c);
	run(m, in, batch, KERN_PRECISION_FLOAT32, f);
	assert_int_equal(x->rechecked, 0);
	assert_int_equal(f->rechecked, 0);
	if (want_recheck)
		assert_true(c->rechecked > 0);
	else
		assert_true(c->rechecked < COUNT); /* the float32 path decided some images */
	for (uint32_t i = 0; i < COUNT; i++) {
		if (c->cls[i] != x->cls[i])
			fail_msg("model %s batch %u image %u: class %u certified, %u exact",
				 m->name, batch, i, c->cls[i], x->cls[i]);
		for (uint32_t j = 0; j < 10; j++) {
			double e = x->scores[i * 10 + j], tol = 1e-4 * fmax(1.0, fabs(e));

			if (!(fabs(c->scores[i * 10 + j] - e) <= tol) ||
			    !(fabs(f->scores[i * 10 + j] - e) <= tol))
				fail_msg("model %s image %u class %u: exact %.17g certified %.17g "
					 "float32 %.17g",
					 m->name, i, j, e, c->scores[i * 10 + j],
					 f->scores[i * 10 + j]);
		}
	}
	free(x);
}

static void test_exact_float_unseen_models(void **state)
{
	struct model *odd, *mlp, *wide;
	void *in_odd, *in_mlp, *in_wide;

	(void)state;
	test_rng_seed(0xf10a7);
	odd = model_odd();
	mlp = model_mlp();
	in_odd = test_random_inputs(odd, COUNT);
	in_mlp = test_random_inputs(mlp, COUNT);
	wide = model_wide();
	in_wide = test_random_inputs(wide, COUNT);
	check(wide, in_wide, 1, false);
	check(wide, in_wide, 7, false);
	free(in_wide);
	model_free(wide);
	check(odd, in_odd, 1, false);
	check(odd, in_odd, 7, false);
	check(mlp, in_mlp, 1, false);
	check(mlp, in_mlp, 7, false);
	free(in_odd);
	free(in_mlp);
	model_free(odd);
	model_free(mlp);
}

/* Scores that tie exactly: float32 cannot order them; the float64 recheck gives class 3. */
static void test_exact_float_ties_recheck(void **state)
{
	struct model *m;
	uint8_t *in;
	struct outcome *o = calloc(1, sizeof(*o));

	(void)state;
	test_rng_seed(0x71e);
	m = model_tie();
	in = test_random_inputs(m, COUNT);
	check(m, in, 1, true);
	check(m, in, 7, true);
	run(m, in, 7, KERN_PRECISION_CERTIFIED, o);
	assert_int_equal(o->rechecked, COUNT);
	for (uint32_t i = 0; i < COUNT; i++) {
		assert_int_equal(o->cls[i], 3);
		assert_true(o->scores[i * 10 + 3] == o->scores[i * 10 + 7]);
	}
	free(o);
	free(in);
	model_free(m);
}

/*
 * Scores at batch 7 carry the bits of batch 1, certified and float32: the float32 run's sums
 * do not depend on the batch, and the images to recheck of a batch (every other one here,
 * where pixel 0 is 0 and classes 3 and 7 tie) run in float64 together with the bits of one
 * by one, the exact precision's.
 */
static void test_exact_float_batch_bits(void **state)
{
	struct model *ms[3];
	struct outcome *o = calloc(4, sizeof(*o));

	(void)state;
	test_rng_seed(0xba7c);
	ms[0] = model_odd();
	ms[1] = model_wide();
	ms[2] = model_half_tie();
	for (int k = 0; k < 3; k++) {
		const size_t ib = model_shape_bytes(&ms[k]->input);
		uint8_t *in = test_random_inputs(ms[k], COUNT);

		for (uint32_t i = 0; k == 2 && i < COUNT; i++)
			in[i * ib] = i % 2 ? 255 : 0;
		for (int p = 0; p < 2; p++) {
			enum kern_precision prec =
			    p ? KERN_PRECISION_FLOAT32 : KERN_PRECISION_CERTIFIED;

			run(ms[k], in, 1, prec, &o[0]);
			run(ms[k], in, 7, prec, &o[1]);
			if (memcmp(o[0].scores, o[1].scores, sizeof(o[0].scores)))
				fail_msg("model %s %s: scores at batch 7 differ from batch 1",
					 ms[k]->name, kern_precision_name(prec));
		}
		if (k == 2) {
			run(ms[k], in, 7, KERN_PRECISION_CERTIFIED, &o[2]);
			run(ms[k], in, 1, KERN_PRECISION_EXACT, &o[3]);
			assert_int_equal(o[2].rechecked, (COUNT + 1) / 2);
			for (uint32_t i = 0; i < COUNT; i += 2)
				if (memcmp(o[2].scores + i * 10, o[3].scores + i * 10,
					   10 * sizeof(double)))
					fail_msg("tie image %u: rechecked scores differ from exact",
						 i);
		}
		free(in);
	}
	for (int k = 0; k < 3; k++)
		model_free(ms[k]);
	free(o);
}

static void test_exact_float_precision_names(void **state)
{
	(void)state;
	assert_int_equal(kern_precision_from_name("certified"), KERN_PRECISION_CERTIFIED);
	assert_int_equal(kern_precision_from_name("exact"), KERN_PRECISION_EXACT);
	assert_int_equal(kern_precision_from_name("float32"), KERN_PRECISION_FLOAT32);
	assert_true(kern_precision_from_name("fast") < 0);
	assert_true(kern_precision_from_name(NULL) < 0);
	assert_string_equal(kern_precision_name(KERN_PRECISION_EXACT), "exact");
	assert_int_equal(kern_precision_get_default(), KERN_PRECISION_CERTIFIED);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
	    cmocka_unit_test(test_exact_float_unseen_models),
	    cmocka_unit_test(test_exact_float_ties_recheck),
	    cmocka_unit_test(test_exact_float_batch_bits),
	    cmocka_unit_test(test_exact_float_precision_names),
	};

	return cmocka_run_group_tests(tests, NULL, NULL);
}
