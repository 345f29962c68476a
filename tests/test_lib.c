// SPDX-License-Identifier: MIT
/*
 * libsplitnic (include/splitnic/splitnic.h): results equal kern_forward's, and misuse (NULL
 * pointers, wrong sizes, a file that fails validation, handles used after free) returns an
 * error code with a message naming the cause.
 */
#include <setjmp.h>
#include <pthread.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <cmocka.h>

#include "kernels/kern.h"
#include "splitnic/splitnic.h"
#include "tests/support/model_fixture.h"

/* u8 (1,4,4) -> flatten -> float dense 3 with bias: three classes, real-valued scores */
static struct model *build_small(struct test_fx *f)
{
	struct test_gen g = {0};

	test_rng_seed(0x5eed);
	test_gen_dense(&g, 1, 3, 16);
	return test_fx_build_gen(f,
				 "{\"name\":\"lib-small\",\"input\":{\"shape\":[1,4,4],\"dtype\":"
				 "\"u8\"},\"layers\":[{\"type\":\"flatten\"},{\"type\":\"dense\","
				 "\"out\":3,\"bias\":true}]}",
				 &g);
}

static void expect_err(int ret, const struct splitnic_error *e, int code, const char *needle)
{
	assert_int_equal(ret, code);
	assert_int_equal(e->code, code);
	if (!strstr(e->msg, needle))
		fail_msg("message '%s' does not name '%s'", e->msg, needle);
}

static void test_lib_predict_matches_kernels(void **state)
{
	struct test_fx *f = *state;
	struct model *km = test_model_u8_mlp(f);
	struct splitnic_model *m;
	struct splitnic_ctx *ctx1, *ctx3;
	struct splitnic_shape sh;
	struct splitnic_error e;
	struct kern_ctx *kc = kern_ctx_create(km, 37);
	uint32_t classes, cls[37];
	uint8_t *in = test_random_inputs(km, 37);
	double want[37], got[37], got3[37];

	assert_non_null(kc);
	assert_int_equal(kern_forward(kc, in, 37, want), 0);
	assert_int_equal(splitnic_model_load(f->out, &m, &e), SPLITNIC_OK);
	assert_int_equal(e.code, SPLITNIC_OK);
	assert_string_equal(splitnic_model_name(m), "u8-mlp");
	assert_int_equal(splitnic_model_input(m, &sh, &e), 0);
	assert_int_equal(sh.dtype, SPLITNIC_DTYPE_U8);
	assert_int_equal(sh.c * 100 + sh.h * 10 + sh.w, 1 * 100 + 5 * 10 + 13);
	assert_int_equal(sh.item_bytes, 65);
	assert_int_equal(splitnic_model_classes(m, &classes, &e), 0);
	assert_int_equal(classes, 1);
	assert_int_equal(splitnic_ctx_create(m, 37, 1, &ctx1, &e), 0);
	assert_int_equal(splitnic_ctx_create(m, 37, 3, &ctx3, &e), 0);
	assert_int_equal(splitnic_predict(ctx1, in, 37 * 65, 37, got, 37, cls, &e), 0);
	assert_memory_equal(got, want, sizeof(want));
	for (uint32_t i = 0; i < 37; i++)
		assert_int_equal(cls[i], 0);
	assert_int_equal(splitnic_predict(ctx3, in, 37 * 65, 37, got3, 37, NULL, &e), 0);
	assert_memory_equal(got3, want, sizeof(want));
	/* fewer than max_batch, and no scores wanted */
	assert_int_equal(splitnic_predict(ctx3, in + 65, 5 * 65, 5, NULL, 0, cls, NULL), 0);
	assert_int_equal(splitnic_ctx_free(ctx1, &e), 0);
	assert_int_equal(splitnic_ctx_free(ctx3, &e), 0);
	assert_int_equal(splitnic_model_free(m, &e), 0);
	free(in);
	kern_ctx_free(kc);
	model_free(km);
}

struct lib_thread {
	const struct splitnic_model *m;
	const uint8_t *in;
	double scores[37];
	int ret;
};

static void *lib_thread_run(void *arg)
{
	struct lib_thread *t = arg;
	struct splitnic_ctx *ctx;

	t->ret = splitnic_ctx_create(t->m, 37, 1, &ctx, NULL);
	for (int round = 0; round < 20 && !t->ret; round++)
		t->ret = splitnic_predict(ctx, t->in, 37 * 65, 37, t->scores, 37, NULL, NULL);
	if (!t->ret)
		t->ret = splitnic_ctx_free(ctx, NULL);
	return NULL;
}

/* the header's thread-safety statement: one model, a context per thread, all at once */
static void test_lib_threads_share_a_model(void **state)
{
	struct test_fx *f = *state;
	struct model *km = test_model_u8_mlp(f);
	struct kern_ctx *kc = kern_ctx_create(km, 37);
	uint8_t *in = test_random_inputs(km, 37);
	struct lib_thread t[4];
	struct splitnic_model *m;
	pthread_t tid[4];
	double want[37];

	assert_int_equal(kern_forward(kc, in, 37, want), 0);
	assert_int_equal(splitnic_model_load(f->out, &m, NULL), 0);
	for (int i = 0; i < 4; i++) {
		t[i] = (struct lib_thread){.m = m, .in = in};
		assert_int_equal(pthread_create(&tid[i], NULL, lib_thread_run, &t[i]), 0);
	}
	for (int i = 0; i < 4; i++) {
		pthread_join(tid[i], NULL);
		assert_int_equal(t[i].ret, 0);
		assert_memory_equal(t[i].scores, want, sizeof(want));
	}
	assert_int_equal(splitnic_model_free(m, NULL), 0);
	free(in);
	kern_ctx_free(kc);
	model_free(km);
}

static void test_lib_labels(void **state)
{
	struct test_fx *f = *state;
	struct model *km = build_small(f);
	struct splitnic_model *m;
	struct splitnic_error e;
	char path[400];
	const char *label;
	FILE *lf;

	assert_int_equal(splitnic_model_load(f->out, &m, &e), 0);
	assert_int_equal(splitnic_model_label(m, 2, &label, &e), 0);
	assert_string_equal(label, "2");
	expect_err(splitnic_model_label(m, 3, &label, &e), &e, SPLITNIC_E_INVALID, "class 3");
	snprintf(path, sizeof(path), "%s/labels.txt", f->dir);
	lf = fopen(path, "w");
	assert_non_null(lf);
	fputs("cat\ndog\n", lf);
	fclose(lf);
	expect_err(splitnic_model_load_labels(m, path, &e), &e, SPLITNIC_E_INVALID,
		   "2 labels for the model's 3 classes");
	lf = fopen(path, "w");
	fputs("cat\n\nbird\n", lf);
	fclose(lf);
	expect_err(splitnic_model_load_labels(m, path, &e), &e, SPLITNIC_E_INVALID,
		   "labels.txt:2: empty label");
	lf = fopen(path, "w");
	fputs("cat\ndog\nbird\n", lf);
	fclose(lf);
	assert_int_equal(splitnic_model_load_labels(m, path, &e), 0);
	assert_int_equal(splitnic_model_label(m, 1, &label, &e), 0);
	assert_string_equal(label, "dog");
	expect_err(splitnic_model_load_labels(m, "/nonexistent/labels", &e), &e, SPLITNIC_E_IO,
		   "/nonexistent/labels");
	assert_int_equal(splitnic_model_free(m, &e), 0);
	model_free(km);
}

static void test_lib_null_pointers(void **state)
{
	struct test_fx *f = *state;
	struct model *km = build_small(f);
	struct splitnic_model *m;
	struct splitnic_ctx *ctx;
	struct splitnic_shape sh;
	struct splitnic_error e;
	uint32_t n;
	uint8_t in[16] = {0};

	expect_err(splitnic_model_load(NULL, &m, &e), &e, SPLITNIC_E_INVALID, "path is NULL");
	assert_null(m);
	expect_err(splitnic_model_load(f->out, NULL, &e), &e, SPLITNIC_E_INVALID, "model");
	assert_int_equal(splitnic_model_load(f->out, &m, NULL), 0);
	expect_err(splitnic_model_input(NULL, &sh, &e), &e, SPLITNIC_E_INVALID, "model is NULL");
	expect_err(splitnic_model_input(m, NULL, &e), &e, SPLITNIC_E_INVALID, "shape is NULL");
	expect_err(splitnic_model_classes(m, NULL, &e), &e, SPLITNIC_E_INVALID, "classes");
	expect_err(splitnic_model_classes(NULL, &n, &e), &e, SPLITNIC_E_INVALID, "model");
	expect_err(splitnic_model_label(m, 0, NULL, &e), &e, SPLITNIC_E_INVALID, "label");
	expect_err(splitnic_model_load_labels(m, NULL, &e), &e, SPLITNIC_E_INVALID, "path");
	assert_null(splitnic_model_name(NULL));
	expect_err(splitnic_ctx_create(NULL, 1, 1, &ctx, &e), &e, SPLITNIC_E_INVALID, "model");
	assert_null(ctx);
	expect_err(splitnic_ctx_create(m, 1, 1, NULL, &e), &e, SPLITNIC_E_INVALID, "ctx");
	assert_int_equal(splitnic_ctx_create(m, 4, 2, &ctx, &e), 0);
	expect_err(splitnic_predict(NULL, in, 16, 1, NULL, 0, NULL, &e), &e, SPLITNIC_E_INVALID,
		   "ctx is NULL");
	expect_err(splitnic_predict(ctx, NULL, 16, 1, NULL, 0, NULL, &e), &e, SPLITNIC_E_INVALID,
		   "input is NULL");
	/* the error record itself may be NULL */
	assert_int_equal(splitnic_predict(ctx, NULL, 16, 1, NULL, 0, NULL, NULL),
			 SPLITNIC_E_INVALID);
	assert_int_equal(splitnic_ctx_free(NULL, &e), 0);
	assert_int_equal(splitnic_model_free(NULL, &e), 0);
	assert_int_equal(splitnic_ctx_free(ctx, &e), 0);
	assert_int_equal(splitnic_model_free(m, &e), 0);
	model_free(km);
}

static void test_lib_wrong_sizes(void **state)
{
	struct test_fx *f = *state;
	struct model *km = build_small(f);
	struct splitnic_model *m;
	struct splitnic_ctx *ctx;
	struct splitnic_error e;
	uint8_t in[5 * 16] = {0};
	double scores[5 * 3];

	assert_int_equal(splitnic_model_load(f->out, &m, &e), 0);
	expect_err(splitnic_ctx_create(m, 0, 1, &ctx, &e), &e, SPLITNIC_E_INVALID, "max_batch 0");
	expect_err(splitnic_ctx_create(m, 4, 0, &ctx, &e), &e, SPLITNIC_E_INVALID, "threads 0");
	expect_err(splitnic_ctx_create(m, 70000, 1, &ctx, &e), &e, SPLITNIC_E_INVALID,
		   "max_batch 70000");
	assert_int_equal(splitnic_ctx_create(m, 4, 1, &ctx, &e), 0);
	expect_err(splitnic_predict(ctx, in, 15, 1, NULL, 0, NULL, &e), &e, SPLITNIC_E_BAD_INPUT,
		   "input is 15 bytes; 1 input(s) of model lib-small (1,4,4) u8 need 16");
	expect_err(splitnic_predict(ctx, in, 2 * 16, 3, NULL, 0, NULL, &e), &e,
		   SPLITNIC_E_BAD_INPUT, "need 48");
	expect_err(splitnic_predict(ctx, in, 5 * 16, 5, NULL, 0, NULL, &e), &e, SPLITNIC_E_INVALID,
		   "n 5: 1 to the context's max_batch 4");
	expect_err(splitnic_predict(ctx, in, 0, 0, NULL, 0, NULL, &e), &e, SPLITNIC_E_INVALID,
		   "n 0");
	expect_err(splitnic_predict(ctx, in, 2 * 16, 2, scores, 5, NULL, &e), &e,
		   SPLITNIC_E_INVALID, "scores_len 5: 2 input(s) of 3 classes need 6");
	assert_int_equal(splitnic_predict(ctx, in, 2 * 16, 2, scores, 6, NULL, &e), 0);
	assert_int_equal(splitnic_ctx_free(ctx, &e), 0);
	assert_int_equal(splitnic_model_free(m, &e), 0);
	model_free(km);
}

static void test_lib_bad_model_file(void **state)
{
	struct test_fx *f = *state;
	struct model *km = build_small(f);
	struct splitnic_model *m = (struct splitnic_model *)1;
	struct splitnic_error e;
	char path[400];
	long size;
	uint8_t *buf;
	FILE *mf = fopen(f->out, "rb");

	model_free(km);
	expect_err(splitnic_model_load("/nonexistent/model.snm", &m, &e), &e, SPLITNIC_E_IO,
		   "/nonexistent/model.snm: No such file");
	assert_null(m);
	/* one flipped byte in the middle: the CRC (or a field check) names the file */
	assert_non_null(mf);
	fseek(mf, 0, SEEK_END);
	size = ftell(mf);
	rewind(mf);
	buf = malloc((size_t)size);
	assert_int_equal(fread(buf, 1, (size_t)size, mf), (size_t)size);
	fclose(mf);
	buf[size / 2] ^= 0x5a;
	snprintf(path, sizeof(path), "%s/corrupt.snm", f->dir);
	mf = fopen(path, "wb");
	fwrite(buf, 1, (size_t)size, mf);
	fclose(mf);
	expect_err(splitnic_model_load(path, &m, &e), &e, SPLITNIC_E_BAD_MODEL, "corrupt.snm");
	assert_null(m);
	/* truncated to its first 40 bytes */
	mf = fopen(path, "wb");
	fwrite(buf, 1, 40, mf);
	fclose(mf);
	expect_err(splitnic_model_load(path, &m, &e), &e, SPLITNIC_E_BAD_MODEL, "corrupt.snm");
	/* not a model at all */
	expect_err(splitnic_model_load(f->arch, &m, &e), &e, SPLITNIC_E_BAD_MODEL, "arch");
	free(buf);
}

static void test_lib_use_after_free(void **state)
{
	struct test_fx *f = *state;
	struct model *km = build_small(f);
	struct splitnic_model *m;
	struct splitnic_ctx *ctx;
	struct splitnic_shape sh;
	struct splitnic_error e;
	uint8_t in[16] = {0};
	uint32_t garbage[16] = {0x12345678};

	assert_int_equal(splitnic_model_load(f->out, &m, &e), 0);
	assert_int_equal(splitnic_ctx_create(m, 2, 1, &ctx, &e), 0);
	expect_err(splitnic_model_free(m, &e), &e, SPLITNIC_E_BUSY, "1 live context");
	assert_int_equal(splitnic_ctx_free(ctx, &e), 0);
	expect_err(splitnic_predict(ctx, in, 16, 1, NULL, 0, NULL, &e), &e, SPLITNIC_E_BAD_HANDLE,
		   "context used after splitnic_ctx_free");
	expect_err(splitnic_ctx_free(ctx, &e), &e, SPLITNIC_E_BAD_HANDLE,
		   "context used after splitnic_ctx_free");
	assert_int_equal(splitnic_model_free(m, &e), 0);
	expect_err(splitnic_model_input(m, &sh, &e), &e, SPLITNIC_E_BAD_HANDLE,
		   "model used after splitnic_model_free");
	expect_err(splitnic_ctx_create(m, 1, 1, &ctx, &e), &e, SPLITNIC_E_BAD_HANDLE,
		   "model used after splitnic_model_free");
	expect_err(splitnic_model_free(m, &e), &e, SPLITNIC_E_BAD_HANDLE, "after");
	assert_null(splitnic_model_name(m));
	/* a pointer to something else entirely */
	expect_err(splitnic_predict((struct splitnic_ctx *)garbage, in, 16, 1, NULL, 0, NULL, &e),
		   &e, SPLITNIC_E_BAD_HANDLE, "not a context made by splitnic_ctx_create");
	expect_err(splitnic_model_classes((struct splitnic_model *)garbage, garbage, &e), &e,
		   SPLITNIC_E_BAD_HANDLE, "not a model made by splitnic_model_load");
	model_free(km);
}

static void test_lib_status_names(void **state)
{
	assert_string_equal(splitnic_status_name(SPLITNIC_E_BAD_INPUT), "bad input");
	assert_string_equal(splitnic_status_name(-1), "unknown status");
	assert_string_equal(splitnic_status_name(SPLITNIC_STATUS_COUNT), "unknown status");
	assert_string_equal(splitnic_version(), "1.0.0");
}

int main(void)
{
	const struct CMUnitTest tests[] = {
	    cmocka_unit_test_setup_teardown(test_lib_predict_matches_kernels, test_fx_setup,
					    test_fx_teardown),
	    cmocka_unit_test_setup_teardown(test_lib_threads_share_a_model, test_fx_setup,
					    test_fx_teardown),
	    cmocka_unit_test_setup_teardown(test_lib_labels, test_fx_setup, test_fx_teardown),
	    cmocka_unit_test_setup_teardown(test_lib_null_pointers, test_fx_setup,
					    test_fx_teardown),
	    cmocka_unit_test_setup_teardown(test_lib_wrong_sizes, test_fx_setup, test_fx_teardown),
	    cmocka_unit_test_setup_teardown(test_lib_bad_model_file, test_fx_setup,
					    test_fx_teardown),
	    cmocka_unit_test_setup_teardown(test_lib_use_after_free, test_fx_setup,
					    test_fx_teardown),
	    cmocka_unit_test(test_lib_status_names),
	};

	return cmocka_run_group_tests(tests, NULL, NULL);
}
