/* SPDX-License-Identifier: MIT */
/*
 * The converter's refusals: every interchange error the spec names gives -EINVAL and a message
 * that names the key or layer; then the .npy parser and .npz archives whose members are not
 * arrays, repeat a key or claim more bytes than they hold.
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

struct err_case {
	const char *json;
	struct test_array a[3];
	size_t n;
	const char *want[2];
};

static double ones[16] = {1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1};
static double nan_v[2] = {0, NAN};
static double neg_var[1] = {-1};

#define DENSE_IN3(L) "{\"input\": {\"shape\": [3, 1, 1], \"dtype\": \"f32\"}, \"layers\": [" L "]}"
#define W23                                                                                        \
	{                                                                                          \
		"0.weight", NULL, 2, {2, 3}, ones                                                  \
	}

static const struct err_case err_cases[] = {
    {DENSE_IN3(J({"type" : "dropout"})), {{0}}, 0, {"arch.json: layer 0", "\"dropout\""}},
    {DENSE_IN3(J({"type" : "dense", "out" : "2"})), {W23}, 1, {"layer 0 (dense)", "\"out\""}},
    {DENSE_IN3(J({"type" : "dense", "out" : 2, "binary_weight" : true})),
     {W23},
     1,
     {"layer 0 (dense)", "\"binary_weight\""}},
    {DENSE_IN3(J({"type" : "dense", "out" : 2, "bias" : 1})), {W23}, 1, {"layer 0", "\"bias\""}},
    {DENSE_IN3(J({"type" : "dense", "out" : 0})), {W23}, 1, {"layer 0", "\"out\""}},
    {DENSE_IN3(J({"type" : "dense"})), {W23}, 1, {"layer 0", "missing field \"out\""}},
    {DENSE_IN3(J({"type" : "dense", "out" : 2})), {{0}}, 0, {"layer 0", "missing array 0.weight"}},
    {DENSE_IN3(J({"type" : "dense", "out" : 2, "bias" : true})),
     {W23},
     1,
     {"layer 0", "missing array 0.bias"}},
    {DENSE_IN3(J({"type" : "dense", "out" : 2})),
     {W23, {"0.bias", NULL, 1, {2}, ones}},
     2,
     {"weights.npz", "0.bias"}},
    {DENSE_IN3(J({"type" : "dense", "out" : 2})),
     {W23, {"7.extra", NULL, 1, {2}, ones}},
     2,
     {"weights.npz", "array 7.extra is not used"}},
    {DENSE_IN3(J({"type" : "dense", "out" : 2})),
     {{"0.weight", NULL, 2, {2, 4}, ones}},
     1,
     {"0.weight shape (2,4), expected (2,3)", "layer 0"}},
    {DENSE_IN3(J({"type" : "dense", "out" : 2})),
     {{"0.weight", "<i4", 2, {2, 3}, ones}},
     1,
     {"0.weight", "'<i4'"}},
    {DENSE_IN3(J({"type" : "dense", "out" : 2})),
     {{"0.weight", ">f4", 2, {2, 3}, ones}},
     1,
     {"0.weight", "'>f4'"}},
    {DENSE_IN3(J({"type" : "dense", "out" : 2})),
     {{"0.weight", "|f8", 2, {2, 3}, ones}},
     1,
     {"0.weight", "'|f8'"}},
    {DENSE_IN3(J({"type" : "dense", "out" : 2, "bias" : true})),
     {W23, {"0.bias", NULL, 1, {2}, nan_v}},
     2,
     {"layer 0", "0.bias[1] = nan"}},
    {DENSE_IN3(J({"type" : "dense", "out" : 1}, {"type" : "batchnorm", "eps" : 0.5})),
     {{"0.weight", NULL, 2, {1, 3}, ones},
      {"1.gamma", NULL, 1, {1}, ones},
      {"1.beta", NULL, 1, {1}, ones}},
     3,
     {"layer 1 (batchnorm)", "missing array 1.mean"}},
    {DENSE_IN3(J({"type" : "lrn", "size" : 4})),
     {{0}},
     0,
     {"layer 0 (lrn)", "\"size\" 4 must be odd"}},
    {DENSE_IN3(J({"type" : "flatten"}, {"type" : "maxpool", "kernel" : 1})),
     {{0}},
     0,
     {"layer 1 (maxpool)", "needs a (C,H,W) input"}},
    {DENSE_IN3(J({"type" : "dense", "out" : 2}, {"type" : "conv", "out" : 1, "kernel" : 1})),
     {W23},
     1,
     {"layer 1 (conv)", "needs a (C,H,W) input"}},
    {DENSE_IN3(J({"type" : "dense", "out" : 2}, {"type" : "lrn"})),
     {W23},
     1,
     {"layer 1 (lrn)", "needs a (C,H,W) input"}},
    {DENSE_IN3(J({"type" : "maxpool", "kernel" : 2})),
     {{0}},
     0,
     {"layer 0 (maxpool)", "kernel 2 larger than the input 1x1"}},
    {DENSE_IN3(J({"type" : "conv", "out" : 1, "kernel" : 1})),
     {{"0.weight", NULL, 4, {1, 2, 1, 1}, ones}},
     1,
     {"layer 0 (conv)", "0.weight shape (1,2,1,1), expected (1,3,1,1)"}},
    {DENSE_IN3(J({"type" : "conv", "out" : 1, "kernel" : 3, "pad" : 3})),
     {{0}},
     0,
     {"layer 0 (conv)", "pad 3 >= kernel 3"}},
    {J({
	     "input" : {"shape" : [ 1, 1, 1 ], "dtype" : "f32"},
	     "layers" : [ {"type" : "batchnorm", "eps" : 0.5} ]
     }),
     {{"0.gamma", NULL, 1, {1}, ones},
      {"0.beta", NULL, 1, {1}, ones},
      {"0.mean", NULL, 1, {1}, ones}},
     3,
     {"layer 0 (batchnorm)", "missing array 0.var"}},
    {J({"input" : {"shape" : [ 3, 1, 1 ], "dtype" : "i8"}, "layers" : [ {"type" : "relu"} ]}),
     {{0}},
     0,
     {"arch.json", "\"dtype\""}},
    {J({"input" : {"shape" : [ 3, 1 ], "dtype" : "u8"}, "layers" : [ {"type" : "relu"} ]}),
     {{0}},
     0,
     {"arch.json", "\"shape\""}},
    {J({"input" : {"shape" : [ 3, 0, 1 ], "dtype" : "u8"}, "layers" : [ {"type" : "relu"} ]}),
     {{0}},
     0,
     {"arch.json", "\"shape\"[1]"}},
    {J({"input" : {"shape" : [ 3, 1, 1 ], "dtype" : "u8"}, "layers" : []}),
     {{0}},
     0,
     {"arch.json", "\"layers\""}},
    {J({
	     "input" : {"shape" : [ 3, 1, 1 ], "dtype" : "u8"},
	     "layers" : [ {"type" : "relu"} ],
	     "x" : 1
     }),
     {{0}},
     0,
     {"arch.json", "unknown field \"x\""}},
    {"{\"input\": ", {{0}}, 0, {"arch.json", "line 1"}},
};

/* var + eps <= 0 needs values the table cannot hold in static initializers portably. */
static void test_convert_bn_var_eps(void **state)
{
	struct test_fx *f = *state;
	struct test_array a[] = {{"0.gamma", NULL, 1, {1}, ones},
				 {"0.beta", NULL, 1, {1}, ones},
				 {"0.mean", NULL, 1, {1}, ones},
				 {"0.var", NULL, 1, {1}, neg_var}};

	assert_int_equal(test_fx_convert(f, J({
						 "input" : {"shape" : [ 1, 1, 1 ], "dtype" : "f32"},
						 "layers" : [ {"type" : "batchnorm", "eps" : 0.5} ]
					 }),
					 a, NA(a)),
			 -EINVAL);
	assert_non_null(strstr(f->err, "layer 0 (batchnorm)"));
	assert_non_null(strstr(f->err, "0.var[0] + eps"));
}

static void test_convert_errors(void **state)
{
	struct test_fx *f = *state;

	for (size_t i = 0; i < NA(err_cases); i++) {
		const struct err_case *e = &err_cases[i];
		int ret = test_fx_convert(f, e->json, e->a, e->n);

		if (ret != -EINVAL)
			fail_msg("case %zu: ret %d (%s), expected -EINVAL", i, ret, f->err);
		for (size_t k = 0; k < NA(e->want); k++)
			if (e->want[k] && !strstr(f->err, e->want[k]))
				fail_msg("case %zu: message \"%s\" lacks \"%s\"", i, f->err,
					 e->want[k]);
	}
}

/* Archive members that are not arrays, or duplicated keys. */
static void test_convert_npz_members(void **state)
{
	struct test_fx *f = *state;
	struct test_array a = {"0.weight", NULL, 2, {2, 3}, ones};
	uint8_t *bufs[2];
	size_t lens[2];
	static const char *const bad_names[] = {"0.weight.npy", "readme.txt"};
	static const char *const dup_names[] = {"0.weight.npy", "0.weight.npy"};

	assert_int_equal(test_write_text(f->arch, DENSE_IN3(J({"type" : "dense", "out" : 2}))), 0);
	bufs[0] = test_npy_encode(&a, &lens[0]);
	bufs[1] = test_npy_encode(&a, &lens[1]);
	assert_int_equal(test_npz_write_members(f->npz, bad_names, bufs, lens, 2, true), 0);
	assert_int_equal(model_convert(f->arch, f->npz, f->out, f->err, sizeof(f->err)), -EINVAL);
	assert_non_null(strstr(f->err, "\"readme.txt\""));
	if (test_npz_write_members(f->npz, dup_names, bufs, lens, 2, false) == 0) {
		assert_int_equal(model_convert(f->arch, f->npz, f->out, f->err, sizeof(f->err)),
				 -EINVAL);
		assert_non_null(strstr(f->err, "0.weight"));
	}
	assert_int_equal(test_write_text(f->npz, "not a zip"), 0);
	assert_int_not_equal(model_convert(f->arch, f->npz, f->out, f->err, sizeof(f->err)), 0);
	assert_non_null(strstr(f->err, "weights.npz"));
	free(bufs[0]);
	free(bufs[1]);
}

/* Set the uncompressed size that every central-directory entry of a zip file claims. */
static void zip_claim_size(const char *path, uint32_t size)
{
	static uint8_t b[1 << 16];
	FILE *fp = fopen(path, "r+b");
	size_t n;

	assert_non_null(fp);
	n = fread(b, 1, sizeof(b), fp);
	assert_true(n > 0 && n < sizeof(b));
	for (size_t i = 0; i + 46 <= n; i++)
		if (!memcmp(b + i, "PK\1\2", 4))
			memcpy(b + i + 24, &size, 4);
	rewind(fp);
	assert_int_equal(fwrite(b, 1, n, fp), n);
	assert_int_equal(fclose(fp), 0);
}

/*
 * fuzz_npz: a 6 KB archive whose directory claimed a 2 GiB stored member made the converter
 * allocate 2 GiB before reading a byte. Claimed sizes are now bounded by the archive (stored:
 * equal to the compressed size; deflated: at most 1032 times it).
 */
static void test_convert_npz_claimed_size(void **state)
{
	struct test_fx *f = *state;
	struct test_array a = {"0.weight", NULL, 2, {2, 3}, ones};
	static const char *const names[] = {"0.weight.npy"};
	uint8_t *buf;
	size_t len;

	assert_int_equal(test_write_text(f->arch, DENSE_IN3(J({"type" : "dense", "out" : 2}))), 0);
	buf = test_npy_encode(&a, &len);
	for (int deflate = 0; deflate < 2; deflate++) {
		assert_int_equal(test_npz_write_members(f->npz, names, &buf, &len, 1, deflate), 0);
		assert_int_equal(model_convert(f->arch, f->npz, f->out, f->err, sizeof(f->err)), 0);
		zip_claim_size(f->npz, 0x80000000u);
		assert_int_equal(model_convert(f->arch, f->npz, f->out, f->err, sizeof(f->err)),
				 -EINVAL);
		if (!strstr(f->err, "member 0.weight.npy: 2147483648 bytes from") ||
		    !strstr(f->err, "sizes inconsistent"))
			fail_msg("deflate %d: \"%s\"", deflate, f->err);
	}
	free(buf);
}

static void npy_expect(const char *dict, size_t data_len, const char *want)
{
	static const uint8_t zeros[64];
	size_t len;
	uint8_t *b = test_npy_raw(dict, zeros, data_len, &len);
	struct model_npy a;
	char err[256] = "";
	int ret;

	assert_non_null(b);
	ret = model_npy_parse(b, len, &a, err, sizeof(err));
	if (!want && ret)
		fail_msg("%s: %s", dict, err);
	if (want && (ret != -EINVAL || !strstr(err, want)))
		fail_msg("%s: ret %d \"%s\", expected \"%s\"", dict, ret, err, want);
	free(b);
}

static void test_convert_npy_parser(void **state)
{
	struct model_npy a;
	char err[256];
	size_t len;
	uint8_t *b;

	npy_expect("{'descr': '<f4', 'fortran_order': False, 'shape': (2, 3), }", 24, NULL);
	npy_expect("{'shape': (3,), 'fortran_order': False, 'descr': '<f8'}", 24, NULL);
	npy_expect("{'descr': '<f8', 'fortran_order': False, 'shape': (), }", 8, NULL);
	npy_expect("{'descr': '<f4', 'fortran_order': False, 'shape': (2, 3), }", 20, "data 20");
	npy_expect("{'descr': '<f4', 'fortran_order': False, 'shape': (2, 3), }", 28, "data 28");
	npy_expect("{'descr': '>f4', 'fortran_order': False, 'shape': (1,), }", 4, "'>f4'");
	npy_expect("{'descr': '=f4', 'fortran_order': False, 'shape': (1,), }", 4, "'=f4'");
	npy_expect("{'descr': '<i8', 'fortran_order': False, 'shape': (1,), }", 8, "'<i8'");
	npy_expect("{'descr': '<f4', 'fortran_order': True, 'shape': (1,), }", 4, "fortran_order");
	npy_expect("{'descr': '<f4', 'fortran_order': False, 'shape': (1), }", 4, "not a tuple");
	npy_expect("{'descr': '<f4', 'fortran_order': False}", 4, "missing 'shape'");
	npy_expect("{'descr': '<f4', 'fortran_order': False, 'shape': (1,), 'x': 1}", 4, "'x'");
	npy_expect("{'descr': '<f4', 'descr': '<f4', 'shape': (1,)}", 4, "repeated key 'descr'");
	npy_expect("{'descr': '<f4', 'fortran_order': False, 'shape': (1,), } x", 4, "junk");
	npy_expect("{'descr': [('a', '<f4')], 'fortran_order': False, 'shape': (1,), }", 4,
		   "'descr'");
	b = test_npy_raw("{'descr': '<f4', 'fortran_order': False, 'shape': (2,), }",
			 (float[]){1.5f, -2}, 8, &len);
	assert_int_equal(model_npy_parse(b, len, &a, err, sizeof(err)), 0);
	assert_int_equal(a.ndim, 1);
	assert_int_equal(a.shape[0], 2);
	{
		double v[2];

		model_npy_to_f64(&a, v);
		assert_true(v[0] == 1.5 && v[1] == -2);
	}
	for (size_t cut = 0; cut < len; cut++)
		assert_int_equal(model_npy_parse(b, cut, &a, err, sizeof(err)), -EINVAL);
	b[6] = 4;
	assert_int_equal(model_npy_parse(b, len, &a, err, sizeof(err)), -EINVAL);
	assert_non_null(strstr(err, "version"));
	b[6] = 2; /* 2.0 has a 4-byte header length: the dict no longer lines up */
	assert_int_equal(model_npy_parse(b, len, &a, err, sizeof(err)), -EINVAL);
	b[0] = 'X';
	assert_int_equal(model_npy_parse(b, len, &a, err, sizeof(err)), -EINVAL);
	assert_non_null(strstr(err, "magic"));
	free(b);
}

/*
 * The shape-only pass, given only the bundled models' arch.json, lowers each to the ops the
 * compiler makes of arch.json and its trained weights (op, flags, shapes, source range, window),
 * with no blob.
 */

int main(void)
{
	const struct CMUnitTest tests[] = {
	    cmocka_unit_test_setup_teardown(test_convert_bn_var_eps, test_fx_setup,
					    test_fx_teardown),
	    cmocka_unit_test_setup_teardown(test_convert_errors, test_fx_setup, test_fx_teardown),
	    cmocka_unit_test_setup_teardown(test_convert_npz_members, test_fx_setup,
					    test_fx_teardown),
	    cmocka_unit_test_setup_teardown(test_convert_npz_claimed_size, test_fx_setup,
					    test_fx_teardown),
	    cmocka_unit_test(test_convert_npy_parser),
	};

	return cmocka_run_group_tests(tests, NULL, NULL);
}
