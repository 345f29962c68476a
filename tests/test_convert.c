/* SPDX-License-Identifier: MIT */
/*
 * Converter tests: tiny interchange models computed by hand, one per hard case of the spec;
 * each checks the compiled ops (kinds, flags, thresholds) and the executor's scores; then the
 * shape-only pass against the full compile. The refusals and the .npy/.npz parser are in
 * tests/test_convert_errors.c.
 */
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

#include "kernels/kern.h"
#include "model/compile.h"
#include "model/npy.h"
#include "tests/support/model_fixture.h"

#define J(...) #__VA_ARGS__
#define NA(a)  (sizeof(a) / sizeof((a)[0]))

static void expect_ops(const struct model *m, const uint32_t *ops, const uint32_t *flags,
		       uint32_t n)
{
	if (m->n_layers != n) {
		for (uint32_t i = 0; i < m->n_layers; i++)
			print_message("op %u: %s flags 0x%x\n", i, model_op_name(m->layers[i].op),
				      m->layers[i].flags);
		fail_msg("%u ops, expected %u", m->n_layers, n);
	}
	for (uint32_t i = 0; i < n; i++) {
		if (m->layers[i].op != ops[i])
			fail_msg("op %u is %s, expected %s", i, model_op_name(m->layers[i].op),
				 model_op_name(ops[i]));
		if (m->layers[i].flags != flags[i])
			fail_msg("op %u (%s) flags 0x%x, expected 0x%x", i, model_op_name(ops[i]),
				 m->layers[i].flags, flags[i]);
	}
}

static void expect_thresholds(const struct model_layer *l, unsigned int b, const int32_t *thr,
			      const uint8_t *flip, uint32_t n)
{
	const int32_t *t = l->blob[b];
	const uint8_t *fl = l->blob[b + 1];

	assert_int_equal(l->blob_size[b], n * sizeof(int32_t));
	assert_int_equal(l->blob_size[b + 1], n);
	for (uint32_t i = 0; i < n; i++)
		if (t[i] != thr[i] || fl[i] != flip[i])
			fail_msg("channel %u: (thr %d, flip %u), expected (%d, %u)", i, t[i], fl[i],
				 thr[i], flip[i]);
}

/* Run the model on `batch` inputs and compare every score (tol 0: exact). */
static void expect_scores(const struct model *m, const void *in, uint32_t batch, const double *want,
			  double tol)
{
	uint32_t n = model_classes(m) * batch;
	struct kern_ctx *ctx = kern_ctx_create(m, batch);
	double *got = calloc(n, sizeof(double));

	assert_non_null(ctx);
	assert_non_null(got);
	assert_int_equal(kern_forward(ctx, in, batch, got), 0);
	for (uint32_t i = 0; i < n; i++)
		if (!(fabs(got[i] - want[i]) <= tol))
			fail_msg("score %u = %.17g, expected %.17g", i, got[i], want[i]);
	free(got);
	kern_ctx_free(ctx);
}

static double *fill(double *v, size_t n, double x)
{
	for (size_t i = 0; i < n; i++)
		v[i] = x;
	return v;
}

/* Widths 70 (two words, 6 tail bits): sign then binary dense, -0.0 inputs and weights. */
static void test_convert_tail_bits(void **state)
{
	struct test_fx *f = *state;
	double w[3 * 70];
	float x[70];
	struct test_array a[] = {{"1.weight", NULL, 2, {3, 70}, w}};
	struct model *m;
	static const double want[] = {24, 26, -20};

	for (int i = 0; i < 70; i++) {
		x[i] = i % 3 == 0 ? -1.5f : 2.0f;
		w[i] = 0.3;
		w[70 + i] = i == 69 ? -1 : -0.0;
		w[140 + i] = i < 64 ? -1 : 1;
	}
	x[3] = -0.0f;
	m = test_fx_build(f, J({
				  "input" : {"shape" : [ 70, 1, 1 ], "dtype" : "f32"},
				  "layers" : [
					  {"type" : "sign"},
					  {"type" : "dense", "out" : 3, "binary_weights" : true}
				  ]
			  }),
			  a, NA(a));
	expect_ops(m, (uint32_t[]){MODEL_OP_CAST, MODEL_OP_SIGN, MODEL_OP_BDENSE},
		   (uint32_t[]){0, 0, 0}, 3);
	assert_int_equal(m->layers[2].src_first, 1);
	assert_int_equal(m->layers[2].src_count, 1);
	assert_int_equal(((const uint64_t *)m->layers[2].blob[0])[1] >> 6, 0);
	expect_scores(m, x, 1, want, 0);
	model_free(m);
}

/* Binary conv 3x3, pad 1: padded taps count 0, not -1. */
static void test_convert_bconv_zero_pad(void **state)
{
	struct test_fx *f = *state;
	double w[9];
	float x[9];
	struct test_array a[] = {{"1.weight", NULL, 4, {1, 1, 3, 3}, w}};
	struct model *m;
	static const double want[] = {4, 6, 4, 6, 7, 4, 4, 4, 2};

	fill(w, 9, 1);
	w[0] = -1;
	m = test_fx_build(f, J({
				  "input" : {"shape" : [ 1, 3, 3 ], "dtype" : "f32"},
				  "layers" : [
					  {"type" : "sign"}, {
						  "type" : "conv",
						  "out" : 1,
						  "kernel" : 3,
						  "pad" : 1,
						  "binary_weights" : true
					  }
				  ]
			  }),
			  a, NA(a));
	expect_ops(m, (uint32_t[]){MODEL_OP_CAST, MODEL_OP_SIGN, MODEL_OP_BCONV},
		   (uint32_t[]){0, 0, 0}, 3);
	assert_int_equal(m->layers[2].pad, 1);
	assert_int_equal(m->layers[2].out.h, 3);
	for (int i = 0; i < 9; i++)
		x[i] = 1.0f;
	expect_scores(m, x, 1, want, 0);
	model_free(m);
}

/*
 * Batch-norm folded into the binary dense's thresholds, per channel (sd = 1):
 *   0: (d + 0.1 - 1.1) >= 0: float gives 0 at d = 1 (real arithmetic says < 0)  -> (1, 0)
 *   1: d * 1e-17 - 1e-17: exactly 0 at d = 1                                    -> (1, 0)
 *   2: d * 1e-17 + (next double below -1e-17): -tiny at d = 1, > 0 at d = 2      -> (2, 0)
 *   3: gamma -1, beta -0.0: -0.0 + -0.0 = -0.0 at d = 1 is +1                    -> (2, 1)
 *   4: gamma 0, beta -0.0: always +1                                             -> (MIN, 0)
 *   5: gamma 0, beta -1e-300: always -1                                          -> (MIN, 1)
 *   6: gamma -1, mean -10: always -1 over [-3, 3]                                -> (MIN, 1)
 *   7: gamma -2: -2d >= 0 for d <= 0 (-0.0 at d = 0)                             -> (1, 1)
 */
static void test_convert_bn_fold_boundaries(void **state)
{
	struct test_fx *f = *state;
	double w[24], var[8], b[8] = {0.1, 0, 0, 0.25, 0, 0, 0, 0};
	double mean[8] = {1.1, 0, 0, 1.25, 0, 0, -10, 0};
	double gamma[8] = {1, 1e-17, 1e-17, -1, 0, 0, -1, -2};
	double beta[8] = {0, -1e-17, nextafter(-1e-17, -1), -0.0, -0.0, -1e-300, 0, 0};
	struct test_array a[] = {
	    {"1.weight", NULL, 2, {8, 3}, fill(w, 24, 1)},
	    {"1.bias", "<f8", 1, {8}, b},
	    {"2.gamma", "<f8", 1, {8}, gamma},
	    {"2.beta", "<f8", 1, {8}, beta},
	    {"2.mean", "<f8", 1, {8}, mean},
	    {"2.var", "<f8", 1, {8}, fill(var, 8, 0.75)},
	};
	/* d = -3, -1, 1, 3 */
	static const float x[] = {-1, -1, -1, -0.0f, -1, -2, 0.0f, 0.5f, -3, 1, 2, 3};
	static const double want[] = {
	    -1, -1, -1, 1,  1, -1, -1, 1,  /* d = -3 */
	    -1, -1, -1, 1,  1, -1, -1, 1,  /* d = -1 */
	    1,	1,  -1, 1,  1, -1, -1, -1, /* d = 1 */
	    1,	1,  1,	-1, 1, -1, -1, -1, /* d = 3 */
	};
	static const int32_t thr[] = {1, 1, 2, 2, INT32_MIN, INT32_MIN, INT32_MIN, 1};
	static const uint8_t flip[] = {0, 0, 0, 1, 0, 1, 1, 1};
	struct model *m;

	m = test_fx_build(
	    f, J({
		    "input" : {"shape" : [ 3, 1, 1 ], "dtype" : "f32"},
		    "layers" : [
			    {"type" : "sign"},
			    {"type" : "dense", "out" : 8, "bias" : true, "binary_weights" : true},
			    {"type" : "batchnorm", "eps" : 0.25}, {"type" : "sign"}
		    ]
	    }),
	    a, NA(a));
	expect_ops(m, (uint32_t[]){MODEL_OP_CAST, MODEL_OP_SIGN, MODEL_OP_BDENSE},
		   (uint32_t[]){0, 0, MODEL_LF_THRESH}, 3);
	assert_int_equal(m->layers[2].out.fmt, MODEL_FMT_BITS);
	assert_int_equal(m->layers[2].src_first, 1);
	assert_int_equal(m->layers[2].src_count, 3);
	expect_thresholds(&m->layers[2], 1, thr, flip, 8);
	expect_scores(m, x, 4, want, 0);
	model_free(m);
}

/* Sign then overlapping 2x2 stride-1 max-pool on bits. */
static void test_convert_maxpool_after_sign(void **state)
{
	struct test_fx *f = *state;
	static const float x[16] = {-1, -1, 1, -1, -1, -1, -1, -1, 1, -1, -1, -1, -1, -1, -1, 1};
	static const double want[] = {-1, 1, 1, 1, -1, -1, 1, -1, 1};
	struct model *m;

	m = test_fx_build(
	    f, J({
		    "input" : {"shape" : [ 1, 4, 4 ], "dtype" : "f32"},
		    "layers" :
			[ {"type" : "sign"}, {"type" : "maxpool", "kernel" : 2, "stride" : 1} ]
	    }),
	    NULL, 0);
	expect_ops(m, (uint32_t[]){MODEL_OP_CAST, MODEL_OP_SIGN, MODEL_OP_MAXPOOL_BITS},
		   (uint32_t[]){0, 0, 0}, 3);
	expect_scores(m, x, 1, want, 0);
	model_free(m);
}

/*
 * bconv 1x1 -> batch-norm (gamma +1 / -1) -> max-pool 3x3 stride 2 (overlapping) -> sign:
 * thresholds fold into the bconv before the pool (sign(max f) = max sign f, even for gamma < 0).
 * Channel 0 is "any +1 in the window", channel 1 "any -1 in the window".
 */
static void test_convert_maxpool_before_sign(void **state)
{
	struct test_fx *f = *state;
	double w[2] = {1, 1}, zero[2] = {0, 0}, mean[2] = {0.5, 0.5}, var[2] = {0.75, 0.75};
	double gamma[2] = {1, -1};
	struct test_array a[] = {
	    {"1.weight", NULL, 4, {2, 1, 1, 1}, w}, {"2.gamma", NULL, 1, {2}, gamma},
	    {"2.beta", NULL, 1, {2}, zero},	    {"2.mean", NULL, 1, {2}, mean},
	    {"2.var", NULL, 1, {2}, var},
	};
	float x[25];
	static const double want[] = {1, 1, 1, 1, 1, 1, -1, -1};
	static const int32_t thr[] = {1, 1}; /* d >= 1; d <= 0 */
	static const uint8_t flip[] = {0, 1};
	struct model *m;

	for (int i = 0; i < 25; i++)
		x[i] = 2.0f;
	x[0] = -2.0f;
	x[1 * 5 + 4] = -2.0f;
	m = test_fx_build(
	    f, J({
		    "input" : {"shape" : [ 1, 5, 5 ], "dtype" : "f32"},
		    "layers" : [
			    {"type" : "sign"},
			    {"type" : "conv", "out" : 2, "kernel" : 1, "binary_weights" : true},
			    {"type" : "batchnorm", "eps" : 0.25},
			    {"type" : "maxpool", "kernel" : 3, "stride" : 2}, {"type" : "sign"}
		    ]
	    }),
	    a, NA(a));
	expect_ops(
	    m, (uint32_t[]){MODEL_OP_CAST, MODEL_OP_SIGN, MODEL_OP_BCONV, MODEL_OP_MAXPOOL_BITS},
	    (uint32_t[]){0, 0, MODEL_LF_THRESH, 0}, 4);
	expect_thresholds(&m->layers[2], 1, thr, flip, 2);
	assert_int_equal(m->layers[2].src_count, 4);
	assert_int_equal(m->layers[3].out.h, 2);
	assert_int_equal(m->n_src, 5);
	assert_int_equal(m->src[4].type, MODEL_SRC_SIGN);
	assert_int_equal(m->src[4].h, 2);
	expect_scores(m, x, 1, want, 0);
	model_free(m);
}

/* bconv + bias -> max-pool 2x2 stride 2 -> bn -> sign: thresholds ahead of the pool, OR-pool. */
static void test_convert_maxpool_pending_monotone(void **state)
{
	struct test_fx *f = *state;
	double w[1] = {1}, b[1] = {0.5}, gamma[1] = {2}, beta[1] = {0}, mean[1] = {1};
	double var[1] = {0.75};
	struct test_array a[] = {
	    {"1.weight", NULL, 4, {1, 1, 1, 1}, w}, {"1.bias", NULL, 1, {1}, b},
	    {"3.gamma", NULL, 1, {1}, gamma},	    {"3.beta", NULL, 1, {1}, beta},
	    {"3.mean", NULL, 1, {1}, mean},	    {"3.var", NULL, 1, {1}, var},
	};
	static const float x[16] = {-1, -1, -1, 1, -1, -1, -1, -1, 1, 1, -1, -1, 1, 1, -1, -1};
	static const double want[] = {-1, 1, 1, -1};
	struct model *m;

	m = test_fx_build(
	    f, J({
		    "input" : {"shape" : [ 1, 4, 4 ], "dtype" : "f32"},
		    "layers" : [
			    {"type" : "sign"}, {
				    "type" : "conv",
				    "out" : 1,
				    "kernel" : 1,
				    "bias" : true,
				    "binary_weights" : true
			    },
			    {"type" : "maxpool", "kernel" : 2},
			    {"type" : "batchnorm", "eps" : 0.25}, {"type" : "sign"}
		    ]
	    }),
	    a, NA(a));
	expect_ops(
	    m, (uint32_t[]){MODEL_OP_CAST, MODEL_OP_SIGN, MODEL_OP_BCONV, MODEL_OP_MAXPOOL_BITS},
	    (uint32_t[]){0, 0, MODEL_LF_THRESH, 0}, 4);
	expect_thresholds(&m->layers[2], 1, (int32_t[]){1}, (uint8_t[]){0}, 1);
	assert_int_equal(m->layers[2].src_first, 1);
	assert_int_equal(m->layers[2].src_count, 4);
	expect_scores(m, x, 1, want, 0);
	model_free(m);
}

/* A negative gamma before a max-pool is not monotone: the chain is materialized first. */
static void test_convert_maxpool_pending_flushed(void **state)
{
	struct test_fx *f = *state;
	double w[1] = {1}, b[1] = {0.5}, gamma[1] = {-1}, zero[1] = {0}, var[1] = {0.75};
	struct test_array a[] = {
	    {"1.weight", NULL, 4, {1, 1, 1, 1}, w}, {"1.bias", NULL, 1, {1}, b},
	    {"2.gamma", NULL, 1, {1}, gamma},	    {"2.beta", NULL, 1, {1}, zero},
	    {"2.mean", NULL, 1, {1}, zero},	    {"2.var", NULL, 1, {1}, var},
	};
	static const float x[8] = {1, 1, -1, 1, 1, 1, 1, 1};
	static const double want[] = {-1.5, 0.5};
	struct model *m;

	m = test_fx_build(
	    f, J({
		    "input" : {"shape" : [ 1, 2, 4 ], "dtype" : "f32"},
		    "layers" : [
			    {"type" : "sign"}, {
				    "type" : "conv",
				    "out" : 1,
				    "kernel" : 1,
				    "bias" : true,
				    "binary_weights" : true
			    },
			    {"type" : "batchnorm", "eps" : 0.25}, {"type" : "maxpool", "kernel" : 2}
		    ]
	    }),
	    a, NA(a));
	expect_ops(m,
		   (uint32_t[]){MODEL_OP_CAST, MODEL_OP_SIGN, MODEL_OP_BCONV, MODEL_OP_BIAS,
				MODEL_OP_BATCHNORM, MODEL_OP_MAXPOOL},
		   (uint32_t[]){0, 0, 0, 0, 0, 0}, 6);
	expect_scores(m, x, 1, want, 0);
	model_free(m);
}

/*
 * Threshold before pool on adversarial batch-norms, against a plain float64 evaluation of the
 * spec: f32 (C,H,W) -> sign -> binary conv (O > 64 outputs, pad 1, half-integer bias)
 * [-> bn0] -> max-pool 3x3 stride 2 -> bn1 -> bn2 -> sign. Gammas are positive, negative and
 * zero in every combination; means put many pooled values exactly on the decision point.
 */
#define TP_C  5
#define TP_H  9
#define TP_O  70
#define TP_K  3
#define TP_OH 9
#define TP_PH 4

struct tp_bn {
	double *gamma, *beta, *mean, *var;
};

static void tp_gen_bn(struct test_gen *g, uint32_t layer, const double *bias, bool exact_mean,
		      struct tp_bn *bn)
{
	const uint64_t dims[1] = {TP_O};

	bn->gamma = test_gen_array(g, layer, "gamma", "<f8", 1, dims);
	bn->beta = test_gen_array(g, layer, "beta", "<f8", 1, dims);
	bn->mean = test_gen_array(g, layer, "mean", "<f8", 1, dims);
	bn->var = test_gen_array(g, layer, "var", "<f8", 1, dims);
	for (uint32_t o = 0; o < TP_O; o++) {
		static const double gam[] = {1.5, -0.75, 0, 2, -3, 0.5, -1};
		int64_t n = (int64_t)(test_rng() % 15) - 7;

		bn->gamma[o] = gam[(o + layer) % 7];
		bn->beta[o] = bn->gamma[o] == 0 ? ((double)(test_rng() % 3) - 1) * 0.5 : 0;
		bn->mean[o] = exact_mean ? bias[o] + (double)n : test_urand(-4, 4);
		bn->var[o] = (o + layer) % 3 ? 0.75 : test_urand(0.5, 3);
	}
}

static double tp_bn_apply(const struct tp_bn *bn, uint32_t o, double x)
{
	return (x - bn->mean[o]) / sqrt(bn->var[o] + 1e-4) * bn->gamma[o] + bn->beta[o];
}

static void tp_case(struct test_fx *f, bool pre_bn)
{
	char json[1024];
	struct test_gen g = {0};
	struct tp_bn bn0 = {0}, bn1, bn2;
	uint32_t L = pre_bn ? 1 : 0;
	double *w, *b;
	float x[4][TP_C * TP_H * TP_H];
	double *want = calloc(4 * TP_O * TP_PH * TP_PH, sizeof(double));
	struct model *m;
	bool has_and = false;

	assert_non_null(want);
	test_rng_seed(pre_bn ? 0x51 : 0x15);
	w = test_gen_array(&g, 1, "weight", "<f8", 4, (uint64_t[]){TP_O, TP_C, TP_K, TP_K});
	b = test_gen_array(&g, 1, "bias", "<f8", 1, (uint64_t[]){TP_O});
	for (size_t i = 0; i < (size_t)TP_O * TP_C * TP_K * TP_K; i++)
		w[i] = test_urand(-1, 1);
	for (uint32_t o = 0; o < TP_O; o++)
		b[o] = (double)((int64_t)(test_rng() % 9) - 4) + 0.5;
	if (pre_bn)
		tp_gen_bn(&g, 2, b, true, &bn0);
	tp_gen_bn(&g, 3 + L, b, !pre_bn, &bn1);
	tp_gen_bn(&g, 4 + L, b, false, &bn2);
	snprintf(
	    json, sizeof(json),
	    "{\"input\": {\"shape\": [%d, %d, %d], \"dtype\": \"f32\"}, \"layers\": ["
	    "{\"type\": \"sign\"}, {\"type\": \"conv\", \"out\": %d, \"kernel\": %d, "
	    "\"pad\": 1, \"bias\": true, \"binary_weights\": true}, %s"
	    "{\"type\": \"maxpool\", \"kernel\": 3, \"stride\": 2}, "
	    "{\"type\": \"batchnorm\", \"eps\": 1e-4}, {\"type\": \"batchnorm\", \"eps\": 1e-4}, "
	    "{\"type\": \"sign\"}]}",
	    TP_C, TP_H, TP_H, TP_O, TP_K,
	    pre_bn ? "{\"type\": \"batchnorm\", \"eps\": 1e-4}, " : "");
	for (uint32_t n = 0; n < 4; n++)
		for (uint32_t i = 0; i < TP_C * TP_H * TP_H; i++)
			x[n][i] = (float)test_urand(-1, 1);

	for (uint32_t n = 0; n < 4; n++)
		for (uint32_t o = 0; o < TP_O; o++)
			for (uint32_t py = 0; py < TP_PH; py++)
				for (uint32_t px = 0; px < TP_PH; px++) {
					double mx = -INFINITY, v;

					for (uint32_t wy = 0; wy < 3; wy++)
						for (uint32_t wx = 0; wx < 3; wx++) {
							int oy = (int)(py * 2 + wy),
							    ox = (int)(px * 2 + wx);
							double acc = 0;

							for (uint32_t c = 0; c < TP_C; c++)
								for (int ky = 0; ky < TP_K; ky++)
									for (int kx = 0; kx < TP_K;
									     kx++) {
										int iy =
											oy + ky - 1,
										    ix =
											ox + kx - 1;
										double xs, ws;

										if (iy < 0 ||
										    ix < 0 ||
										    iy >= TP_H ||
										    ix >= TP_H)
											continue;
										xs =
										    x[n][(c * TP_H +
											  iy) *
											     TP_H +
											 ix] >= 0
											? 1
											: -1;
										ws = w[((o * TP_C +
											 c) *
											    TP_K +
											ky) *
											   TP_K +
										       kx] >= 0
											 ? 1
											 : -1;
										acc += xs * ws;
									}
							v = acc + b[o];
							if (pre_bn)
								v = tp_bn_apply(&bn0, o, v);
							mx = v > mx ? v : mx;
						}
					v = tp_bn_apply(&bn2, o, tp_bn_apply(&bn1, o, mx));
					want[((n * TP_O + o) * TP_PH + py) * TP_PH + px] =
					    v >= 0 ? 1 : -1;
				}

	m = test_fx_build_gen(f, json, &g);
	/* The whole conv -> pool -> bn -> sign stays in bits. */
	for (uint32_t i = 0; i < m->n_layers; i++) {
		assert_int_not_equal(m->layers[i].op, MODEL_OP_MAXPOOL);
		assert_int_not_equal(m->layers[i].op, MODEL_OP_BATCHNORM);
		has_and = has_and || (m->layers[i].flags & MODEL_LF_ANDPOOL);
	}
	assert_true(has_and);
	expect_scores(m, x, 4, want, 0);
	model_free(m);
	free(want);
}

static void test_convert_pool_fold_adversarial(void **state)
{
	tp_case(*state, false);
}

static void test_convert_pool_fold_pre_pool_bn(void **state)
{
	tp_case(*state, true);
}

/* Float max-pool 3x3 stride 2 (overlapping windows). */
static void test_convert_maxpool_float_stride(void **state)
{
	struct test_fx *f = *state;
	float x[25];
	static const double want[] = {12, 50, 22, 50};
	struct model *m;

	for (int i = 0; i < 25; i++)
		x[i] = (float)i;
	x[2 * 5 + 3] = 50;
	m = test_fx_build(f, J({
				  "input" : {"shape" : [ 1, 5, 5 ], "dtype" : "f32"},
				  "layers" : [ {"type" : "maxpool", "kernel" : 3, "stride" : 2} ]
			  }),
			  NULL, 0);
	expect_ops(m, (uint32_t[]){MODEL_OP_CAST, MODEL_OP_MAXPOOL}, (uint32_t[]){0, 0}, 2);
	expect_scores(m, x, 1, want, 0);
	model_free(m);
}

/* Binary dense on u8 input: bit-plane BDENSE_U8, exact dots up to 255 * n. */
static void test_convert_u8_bdense(void **state)
{
	struct test_fx *f = *state;
	double w[30];
	struct test_array a[] = {{"0.weight", NULL, 2, {3, 10}, w}};
	static const uint8_t x[10] = {0, 1, 2, 3, 255, 128, 7, 64, 200, 9};
	static const double want[] = {669, 259, 159};
	struct model *m;

	for (int i = 0; i < 10; i++) {
		w[i] = 1;
		w[10 + i] = i % 2 ? -1 : 1;
		w[20 + i] = i == 4 ? -1 : -0.0;
	}
	m = test_fx_build(
	    f, J({
		    "input" : {"shape" : [ 1, 2, 5 ], "dtype" : "u8"},
		    "layers" : [ {"type" : "dense", "out" : 3, "binary_weights" : true} ]
	    }),
	    a, NA(a));
	expect_ops(m, (uint32_t[]){MODEL_OP_FLATTEN, MODEL_OP_BDENSE_U8}, (uint32_t[]){0, 0}, 2);
	expect_scores(m, x, 1, want, 0);
	model_free(m);
}

/* u8 binary dense + bias + batch-norm + sign fold into BDENSE_U8 thresholds. */
static void test_convert_u8_bdense_thresh(void **state)
{
	struct test_fx *f = *state;
	double w[20], b[2] = {-300, 0.5}, gamma[2] = {1, -1}, zero[2] = {0, 0};
	double var[2] = {0.75, 0.75};
	struct test_array a[] = {
	    {"0.weight", NULL, 2, {2, 10}, fill(w, 20, 1)},
	    {"0.bias", NULL, 1, {2}, b},
	    {"1.gamma", NULL, 1, {2}, gamma},
	    {"1.beta", NULL, 1, {2}, zero},
	    {"1.mean", NULL, 1, {2}, zero},
	    {"1.var", NULL, 1, {2}, var},
	};
	static const uint8_t x[20] = {0, 1, 2, 3, 255, 128, 7, 64, 200, 9,
				      0, 1, 2, 3, 4,   5,   6, 7,  8,	9};
	static const double want[] = {1, -1, -1, -1};
	struct model *m;

	m = test_fx_build(
	    f, J({
		    "input" : {"shape" : [ 10, 1, 1 ], "dtype" : "u8"},
		    "layers" : [
			    {"type" : "dense", "out" : 2, "bias" : true, "binary_weights" : true},
			    {"type" : "batchnorm", "eps" : 0.25}, {"type" : "sign"}
		    ]
	    }),
	    a, NA(a));
	expect_ops(m, (uint32_t[]){MODEL_OP_BDENSE_U8}, (uint32_t[]){MODEL_LF_THRESH}, 1);
	expect_thresholds(&m->layers[0], 1, (int32_t[]){300, 0}, (uint8_t[]){0, 1}, 2);
	expect_scores(m, x, 2, want, 0);
	model_free(m);
}

/* Binary weights on float input: DENSE with packed weights, bias applied after. */
static void test_convert_binw_float_input(void **state)
{
	struct test_fx *f = *state;
	double w[8] = {1, 1, 1, 1, -1, 1, -1, 1}, b[2] = {0.25, -0.5};
	struct test_array a[] = {{"0.weight", NULL, 2, {2, 4}, w}, {"0.bias", NULL, 1, {2}, b}};
	static const float x[4] = {0.5f, -1.25f, 2.0f, 0.0f};
	static const double want[] = {1.5, -4.25};
	struct model *m;

	m = test_fx_build(
	    f, J({
		    "input" : {"shape" : [ 4, 1, 1 ], "dtype" : "f32"},
		    "layers" :
			[ {"type" : "dense", "out" : 2, "bias" : true, "binary_weights" : true} ]
	    }),
	    a, NA(a));
	expect_ops(m, (uint32_t[]){MODEL_OP_CAST, MODEL_OP_DENSE, MODEL_OP_BIAS},
		   (uint32_t[]){0, MODEL_LF_BINW, 0}, 3);
	assert_non_null(m->layers[1].wexp);
	assert_true(m->layers[1].wexp[4] == -1.0 && m->layers[1].wexp[5] == 1.0);
	expect_scores(m, x, 1, want, 0);
	model_free(m);
}

/* Binary conv on u8 input: cast, exact float conv of +-1 weights, then a THRESHOLD op. */
static void test_convert_u8_binw_conv(void **state)
{
	struct test_fx *f = *state;
	double w[4] = {1, 1, 1, -1}, gamma[1] = {1}, beta[1] = {0}, mean[1] = {5}, var[1] = {0.75};
	struct test_array a[] = {
	    {"0.weight", NULL, 4, {1, 1, 2, 2}, w}, {"1.gamma", NULL, 1, {1}, gamma},
	    {"1.beta", NULL, 1, {1}, beta},	    {"1.mean", NULL, 1, {1}, mean},
	    {"1.var", NULL, 1, {1}, var},
	};
	static const uint8_t x[9] = {1, 2, 3, 4, 5, 6, 7, 8, 9};
	static const double want[] = {-1, -1, 1, 1};
	struct model *m;

	m = test_fx_build(
	    f, J({
		    "input" : {"shape" : [ 1, 3, 3 ], "dtype" : "u8"},
		    "layers" : [
			    {"type" : "conv", "out" : 1, "kernel" : 2, "binary_weights" : true},
			    {"type" : "batchnorm", "eps" : 0.25}, {"type" : "sign"}
		    ]
	    }),
	    a, NA(a));
	expect_ops(m, (uint32_t[]){MODEL_OP_CAST, MODEL_OP_CONV, MODEL_OP_THRESHOLD},
		   (uint32_t[]){0, MODEL_LF_BINW, 0}, 3);
	expect_thresholds(&m->layers[2], 0, (int32_t[]){5}, (uint8_t[]){0}, 1);
	expect_scores(m, x, 1, want, 0);
	model_free(m);
}

/* Float conv 2x2 stride 2 with bias. */
static void test_convert_float_conv_stride(void **state)
{
	struct test_fx *f = *state;
	double w[4] = {1, 2, 0, 0}, b[1] = {0.5};
	struct test_array a[] = {{"0.weight", "<f8", 4, {1, 1, 2, 2}, w},
				 {"0.bias", "<f8", 1, {1}, b}};
	float x[16];
	static const double want[] = {2.5, 8.5, 26.5, 32.5};
	struct model *m;

	for (int i = 0; i < 16; i++)
		x[i] = (float)i;
	m = test_fx_build(
	    f, J({
		    "input" : {"shape" : [ 1, 4, 4 ], "dtype" : "f32"},
		    "layers" :
			[ {"type" : "conv", "out" : 1, "kernel" : 2, "stride" : 2, "bias" : true} ]
	    }),
	    a, NA(a));
	expect_ops(m, (uint32_t[]){MODEL_OP_CAST, MODEL_OP_CONV}, (uint32_t[]){0, MODEL_LF_BIAS},
		   2);
	expect_scores(m, x, 1, want, 1e-12);
	model_free(m);
}

/* relu then LRN (size 3, alpha/size = 1, beta 1, k 1). */
static void test_convert_relu_lrn(void **state)
{
	struct test_fx *f = *state;
	static const float x[3] = {1, -2, 2};
	static const double want[] = {0.5, 0, 0.4};
	struct model *m;

	m = test_fx_build(
	    f, J({
		    "input" : {"shape" : [ 3, 1, 1 ], "dtype" : "f32"},
		    "layers" : [
			    {"type" : "relu"},
			    {"type" : "lrn", "size" : 3, "alpha" : 3, "beta" : 1, "k" : 1}
		    ]
	    }),
	    NULL, 0);
	expect_ops(m, (uint32_t[]){MODEL_OP_CAST, MODEL_OP_RELU, MODEL_OP_LRN},
		   (uint32_t[]){0, 0, 0}, 3);
	assert_int_equal(m->layers[2].lrn_size, 3);
	assert_true(m->layers[2].lrn_alpha == 3 && m->layers[2].lrn_beta == 1);
	expect_scores(m, x, 1, want, 1e-12);
	model_free(m);
}

/* Conv output (2,2,2) bits -> flatten repacks C-major -> binary dense. */
static void test_convert_flatten_bits(void **state)
{
	struct test_fx *f = *state;
	double wc[2] = {1, -1}, wd[8] = {1, 1, 1, 1, -1, -1, -1, -1};
	struct test_array a[] = {{"1.weight", NULL, 4, {2, 1, 1, 1}, wc},
				 {"4.weight", NULL, 2, {1, 8}, wd}};
	static const float x[4] = {1, -1, -1, -1};
	static const double want[] = {-4};
	struct model *m;

	m = test_fx_build(
	    f, J({
		    "input" : {"shape" : [ 1, 2, 2 ], "dtype" : "f32"},
		    "layers" : [
			    {"type" : "sign"},
			    {"type" : "conv", "out" : 2, "kernel" : 1, "binary_weights" : true},
			    {"type" : "sign"}, {"type" : "flatten"},
			    {"type" : "dense", "out" : 1, "binary_weights" : true}
		    ]
	    }),
	    a, NA(a));
	expect_ops(m,
		   (uint32_t[]){MODEL_OP_CAST, MODEL_OP_SIGN, MODEL_OP_BCONV, MODEL_OP_FLATTEN,
				MODEL_OP_BDENSE},
		   (uint32_t[]){0, 0, MODEL_LF_THRESH, 0, 0}, 5);
	expect_scores(m, x, 1, want, 0);
	model_free(m);
}

/* An archive written by numpy (ZIP64 extra fields), stored and deflated, f4 and f8. */
static void test_convert_numpy_archive(void **state)
{
	struct test_fx *f = *state;
	static const char *const npz[] = {"tests/data/npz/stored.npz",
					  "tests/data/npz/deflated.npz"};
	static const uint8_t x[3] = {1, 2, 3};
	static const double want[] = {14.5, -1};

	for (size_t i = 0; i < NA(npz); i++) {
		struct model *m;

		if (model_convert("tests/data/npz/arch.json", npz[i], f->out, f->err,
				  sizeof(f->err)))
			fail_msg("%s", f->err);
		m = model_load(f->out, f->err, sizeof(f->err));
		assert_non_null(m);
		assert_string_equal(m->name, "np-tiny");
		expect_ops(m, (uint32_t[]){MODEL_OP_CAST, MODEL_OP_DENSE},
			   (uint32_t[]){0, MODEL_LF_BIAS}, 2);
		expect_scores(m, x, 1, want, 1e-12);
		model_free(m);
	}
}
/* The whole file at path, malloc'd (*len its size); fails the test if it cannot be read. */
static void *slurp(const char *path, size_t *len)
{
	FILE *fp = fopen(path, "rb");
	void *buf;
	long n;

	if (!fp)
		fail_msg("%s: cannot open", path);
	assert_int_equal(fseek(fp, 0, SEEK_END), 0);
	n = ftell(fp);
	assert_true(n >= 0);
	buf = malloc((size_t)n + 1);
	assert_non_null(buf);
	rewind(fp);
	assert_int_equal(fread(buf, 1, (size_t)n, fp), (size_t)n);
	fclose(fp);
	*len = (size_t)n;
	return buf;
}

static void test_convert_shapes_only(void **state)
{
	static const char *const names[] = {"fmnist-bmlp", "fmnist-fmlp", "fmnist-bcnn",
					    "fmnist-fcnn"};
	char arch[128], npz[128], err[512];

	(void)state;
	for (size_t i = 0; i < NA(names); i++) {
		struct model_ic_model ic = {.arch_path = arch, .weights_path = npz};
		struct model_ic_model bare = {.arch_path = arch, .weights_path = npz};
		struct model m, s;
		size_t alen, nlen;
		void *a, *w;

		snprintf(arch, sizeof(arch), "models/%s/arch.json", names[i]);
		snprintf(npz, sizeof(npz), "models/%s/weights.npz", names[i]);
		a = slurp(arch, &alen);
		w = slurp(npz, &nlen);
		assert_int_equal(model_ic_parse_arch(&ic, a, alen, err, sizeof(err)), 0);
		assert_int_equal(model_ic_parse_npz(&ic, w, nlen, err, sizeof(err)), 0);
		assert_int_equal(model_compile(&ic, &m, err, sizeof(err)), 0);
		assert_int_equal(model_ic_parse_arch(&bare, a, alen, err, sizeof(err)), 0);
		if (model_compile_shapes(&bare, &s, err, sizeof(err)))
			fail_msg("%s: %s", names[i], err);
		assert_int_equal(s.n_layers, m.n_layers);
		assert_int_equal(s.n_src, m.n_src);
		assert_memory_equal(s.src, m.src, m.n_src * sizeof(*m.src));
		for (uint32_t k = 0; k < m.n_layers; k++) {
			const struct model_layer *x = &s.layers[k], *y = &m.layers[k];

			if (x->op != y->op || x->flags != y->flags ||
			    x->src_first != y->src_first || x->src_count != y->src_count ||
			    x->kernel != y->kernel || x->stride != y->stride || x->pad != y->pad ||
			    memcmp(&x->in, &y->in, sizeof(x->in)) ||
			    memcmp(&x->out, &y->out, sizeof(x->out)))
				fail_msg(
				    "%s: op %u: shape-only %s flags 0x%x, compiled %s flags 0x%x",
				    names[i], k, model_op_name(x->op), x->flags,
				    model_op_name(y->op), y->flags);
			for (unsigned int b = 0; b < MODEL_NBLOB; b++)
				assert_null(x->blob[b]);
		}
		model_compiled_free(&s);
		model_compiled_free(&m);
		model_ic_free(&bare);
		model_ic_free(&ic);
		free(w);
		free(a);
	}
}

int main(void)
{
	const struct CMUnitTest tests[] = {
	    cmocka_unit_test_setup_teardown(test_convert_tail_bits, test_fx_setup,
					    test_fx_teardown),
	    cmocka_unit_test_setup_teardown(test_convert_bconv_zero_pad, test_fx_setup,
					    test_fx_teardown),
	    cmocka_unit_test_setup_teardown(test_convert_bn_fold_boundaries, test_fx_setup,
					    test_fx_teardown),
	    cmocka_unit_test_setup_teardown(test_convert_maxpool_after_sign, test_fx_setup,
					    test_fx_teardown),
	    cmocka_unit_test_setup_teardown(test_convert_maxpool_before_sign, test_fx_setup,
					    test_fx_teardown),
	    cmocka_unit_test_setup_teardown(test_convert_maxpool_pending_monotone, test_fx_setup,
					    test_fx_teardown),
	    cmocka_unit_test_setup_teardown(test_convert_maxpool_pending_flushed, test_fx_setup,
					    test_fx_teardown),
	    cmocka_unit_test_setup_teardown(test_convert_pool_fold_adversarial, test_fx_setup,
					    test_fx_teardown),
	    cmocka_unit_test_setup_teardown(test_convert_pool_fold_pre_pool_bn, test_fx_setup,
					    test_fx_teardown),
	    cmocka_unit_test_setup_teardown(test_convert_maxpool_float_stride, test_fx_setup,
					    test_fx_teardown),
	    cmocka_unit_test_setup_teardown(test_convert_u8_bdense, test_fx_setup,
					    test_fx_teardown),
	    cmocka_unit_test_setup_teardown(test_convert_u8_bdense_thresh, test_fx_setup,
					    test_fx_teardown),
	    cmocka_unit_test_setup_teardown(test_convert_binw_float_input, test_fx_setup,
					    test_fx_teardown),
	    cmocka_unit_test_setup_teardown(test_convert_u8_binw_conv, test_fx_setup,
					    test_fx_teardown),
	    cmocka_unit_test_setup_teardown(test_convert_float_conv_stride, test_fx_setup,
					    test_fx_teardown),
	    cmocka_unit_test_setup_teardown(test_convert_relu_lrn, test_fx_setup, test_fx_teardown),
	    cmocka_unit_test_setup_teardown(test_convert_flatten_bits, test_fx_setup,
					    test_fx_teardown),
	    cmocka_unit_test_setup_teardown(test_convert_numpy_archive, test_fx_setup,
					    test_fx_teardown),
	    cmocka_unit_test(test_convert_shapes_only),
	};

	return cmocka_run_group_tests(tests, NULL, NULL);
}
