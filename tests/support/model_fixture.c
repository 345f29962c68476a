/* SPDX-License-Identifier: MIT */
#include <setjmp.h>
#include <stdarg.h>
#include <math.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include <cmocka.h>

#include "cli/dataset.h"
#include "exec/kexec.h"
#include "tests/support/model_fixture.h"
#include "tests/support/rng.h"

static uint64_t rng_state;

void test_rng_seed(uint64_t seed)
{
	rng_state = seed;
}

uint64_t test_rng(void)
{
	return test_xorshift(&rng_state);
}

double test_urand(double lo, double hi)
{
	return lo + (hi - lo) * (double)(test_rng() >> 11) / (double)(1ull << 53);
}

double *test_gen_array(struct test_gen *g, uint32_t layer, const char *name, const char *descr,
		       uint32_t ndim, const uint64_t *shape)
{
	struct test_array *a = &g->a[g->n];
	size_t count = 1;

	assert_true(g->n < TEST_GEN_MAX_ARRAYS);
	snprintf(g->keys[g->n], sizeof(g->keys[0]), "%u.%s", layer, name);
	for (uint32_t i = 0; i < ndim; i++) {
		a->shape[i] = shape[i];
		count *= shape[i];
	}
	a->key = g->keys[g->n++];
	a->descr = descr;
	a->ndim = ndim;
	a->v = calloc(count, sizeof(double));
	assert_non_null(a->v);
	return (double *)a->v;
}

void test_gen_dense(struct test_gen *g, uint32_t layer, uint32_t out, uint32_t in)
{
	double *w = test_gen_array(g, layer, "weight", NULL, 2, (uint64_t[]){out, in});
	double *b = test_gen_array(g, layer, "bias", NULL, 1, (uint64_t[]){out});

	for (size_t i = 0; i < (size_t)out * in; i++)
		w[i] = test_urand(-1, 1);
	for (uint32_t o = 0; o < out; o++)
		b[o] = test_urand(-2, 2);
}

void test_gen_conv(struct test_gen *g, uint32_t layer, uint32_t out, uint32_t in, uint32_t k)
{
	double *w = test_gen_array(g, layer, "weight", NULL, 4, (uint64_t[]){out, in, k, k});

	for (size_t i = 0; i < (size_t)out * in * k * k; i++)
		w[i] = test_urand(-1, 1);
}

void test_gen_bn(struct test_gen *g, uint32_t layer, uint32_t n, double scale)
{
	double *ga = test_gen_array(g, layer, "gamma", NULL, 1, (uint64_t[]){n});
	double *be = test_gen_array(g, layer, "beta", NULL, 1, (uint64_t[]){n});
	double *mu = test_gen_array(g, layer, "mean", NULL, 1, (uint64_t[]){n});
	double *va = test_gen_array(g, layer, "var", NULL, 1, (uint64_t[]){n});

	for (uint32_t i = 0; i < n; i++) {
		ga[i] = i % 17 == 5 ? 0 : test_urand(-1, 2);
		be[i] = test_urand(-0.5, 0.5);
		mu[i] = test_urand(-scale, scale) * 0.5;
		va[i] = test_urand(0.25, 4) * scale * scale;
	}
}

void test_gen_free(struct test_gen *g)
{
	for (size_t i = 0; i < g->n; i++)
		free((void *)g->a[i].v);
	g->n = 0;
}

static int fx_init(struct test_fx *f)
{
	if (test_tmpdir(f->dir, sizeof(f->dir)))
		return -1;
	snprintf(f->arch, sizeof(f->arch), "%s/arch.json", f->dir);
	snprintf(f->npz, sizeof(f->npz), "%s/weights.npz", f->dir);
	snprintf(f->out, sizeof(f->out), "%s/model.snm", f->dir);
	return 0;
}

int test_fx_setup(void **state)
{
	struct test_fx *f = calloc(1, sizeof(*f));

	if (!f || fx_init(f)) {
		free(f);
		return -1;
	}
	*state = f;
	return 0;
}

int test_fx_teardown(void **state)
{
	struct test_fx *f = *state;

	test_rmdir(f->dir);
	free(f);
	return 0;
}

static void fx_write(struct test_fx *f, const char *json, const struct test_array *a, size_t n)
{
	assert_int_equal(test_write_text(f->arch, json), 0);
	assert_int_equal(test_npz_write(f->npz, a, n, false), 0);
}

static int fx_convert(struct test_fx *f)
{
	f->err[0] = '\0';
	return model_convert(f->arch, f->npz, f->out, f->err, sizeof(f->err));
}

static struct model *fx_load(struct test_fx *f)
{
	struct model *m;

	if (fx_convert(f))
		fail_msg("convert: %s", f->err);
	m = model_load(f->out, f->err, sizeof(f->err));
	if (!m)
		fail_msg("load: %s", f->err);
	return m;
}

int test_fx_convert(struct test_fx *f, const char *json, const struct test_array *a, size_t n)
{
	fx_write(f, json, a, n);
	return fx_convert(f);
}

struct model *test_fx_build(struct test_fx *f, const char *json, const struct test_array *a,
			    size_t n)
{
	fx_write(f, json, a, n);
	return fx_load(f);
}

struct model *test_fx_build_gen(struct test_fx *f, const char *json, struct test_gen *g)
{
	fx_write(f, json, g->a, g->n);
	test_gen_free(g);
	return fx_load(f);
}

struct model *test_model_build(const char *json, struct test_gen *g)
{
	struct test_fx f = {0};
	struct model *m;

	assert_int_equal(fx_init(&f), 0);
	m = test_fx_build_gen(&f, json, g);
	test_rmdir(f.dir);
	return m;
}

struct model *test_model_in(const char *dir, const char *tag, const char *json,
			    struct test_array *a, size_t n)
{
	char path[3][300], err[512];
	struct model *m;

	snprintf(path[0], sizeof(path[0]), "%s/%s.json", dir, tag);
	snprintf(path[1], sizeof(path[1]), "%s/%s.npz", dir, tag);
	snprintf(path[2], sizeof(path[2]), "%s/%s.snm", dir, tag);
	assert_int_equal(test_write_text(path[0], json), 0);
	assert_int_equal(test_npz_write(path[1], a, n, true), 0);
	for (size_t i = 0; i < n; i++)
		free((void *)a[i].v);
	if (model_convert(path[0], path[1], path[2], err, sizeof(err)))
		fail_msg("convert: %s", err);
	m = model_load(path[2], err, sizeof(err));
	if (!m)
		fail_msg("load: %s", err);
	return m;
}

struct model *test_model_u8_mlp(struct test_fx *f)
{
	struct test_gen g = {0};

	test_rng_seed(0x1234567);
	test_gen_dense(&g, 1, 63, 65);
	test_gen_bn(&g, 2, 63, 128 * sqrt(65));
	test_gen_dense(&g, 4, 130, 63);
	test_gen_bn(&g, 5, 130, sqrt(63));
	test_gen_dense(&g, 7, 1000, 130);
	test_gen_bn(&g, 8, 1000, sqrt(130));
	test_gen_dense(&g, 10, 1, 1000);
	test_gen_bn(&g, 11, 1, sqrt(1000));
	return test_fx_build_gen(
	    f,
	    "{\"name\":\"u8-mlp\",\"input\":{\"shape\":[1,5,13],\"dtype\":\"u8\"},\"layers\":["
	    "{\"type\":\"flatten\"},"
	    "{\"type\":\"dense\",\"out\":63,\"bias\":true,\"binary_weights\":true},"
	    "{\"type\":\"batchnorm\",\"eps\":1e-4},{\"type\":\"sign\"},"
	    "{\"type\":\"dense\",\"out\":130,\"bias\":true,\"binary_weights\":true},"
	    "{\"type\":\"batchnorm\"},{\"type\":\"sign\"},"
	    "{\"type\":\"dense\",\"out\":1000,\"bias\":true,\"binary_weights\":true},"
	    "{\"type\":\"batchnorm\"},{\"type\":\"sign\"},"
	    "{\"type\":\"dense\",\"out\":1,\"bias\":true,\"binary_weights\":true},"
	    "{\"type\":\"batchnorm\"}]}",
	    &g);
}

struct model *test_model_bits_in(struct test_fx *f)
{
	struct test_gen g = {0};

	test_rng_seed(0xabcdef);
	test_gen_dense(&g, 1, 65, 130);
	test_gen_bn(&g, 2, 65, sqrt(130));
	test_gen_dense(&g, 4, 63, 65);
	test_gen_bn(&g, 5, 63, sqrt(65));
	return test_fx_build_gen(
	    f,
	    "{\"name\":\"bits-in\",\"input\":{\"shape\":[130,1,1],\"dtype\":\"f32\"},"
	    "\"layers\":[{\"type\":\"sign\"},"
	    "{\"type\":\"dense\",\"out\":65,\"bias\":true,\"binary_weights\":true},"
	    "{\"type\":\"batchnorm\"},{\"type\":\"sign\"},"
	    "{\"type\":\"dense\",\"out\":63,\"bias\":true,\"binary_weights\":true},"
	    "{\"type\":\"batchnorm\"},{\"type\":\"sign\"}]}",
	    &g);
}

struct model *test_model_conv_flat(struct test_fx *f)
{
	struct test_gen g = {0};

	test_rng_seed(0x5eed);
	test_gen_conv(&g, 1, 5, 3, 3);
	test_gen_bn(&g, 2, 5, 5);
	test_gen_dense(&g, 5, 65, 180);
	test_gen_bn(&g, 6, 65, sqrt(180));
	test_gen_dense(&g, 8, 10, 65);
	test_gen_bn(&g, 9, 10, sqrt(65));
	return test_fx_build_gen(
	    f,
	    "{\"name\":\"conv-flat\",\"input\":{\"shape\":[3,6,6],\"dtype\":\"f32\"},"
	    "\"layers\":[{\"type\":\"sign\"},"
	    "{\"type\":\"conv\",\"out\":5,\"kernel\":3,\"pad\":1,\"binary_weights\":true},"
	    "{\"type\":\"batchnorm\"},{\"type\":\"sign\"},{\"type\":\"flatten\"},"
	    "{\"type\":\"dense\",\"out\":65,\"bias\":true,\"binary_weights\":true},"
	    "{\"type\":\"batchnorm\"},{\"type\":\"sign\"},"
	    "{\"type\":\"dense\",\"out\":10,\"bias\":true,\"binary_weights\":true},"
	    "{\"type\":\"batchnorm\"}]}",
	    &g);
}

void *test_random_inputs(const struct model *m, uint32_t count)
{
	const size_t bytes = model_shape_bytes(&m->input) * count;
	uint8_t *x = malloc(bytes);

	assert_non_null(x);
	if (m->input.fmt == MODEL_FMT_U8) {
		for (size_t i = 0; i < bytes; i++)
			x[i] = (uint8_t)(i % 7 == 3 ? 0 : test_rng());
	} else {
		for (size_t i = 0; i < bytes / sizeof(float); i++)
			((float *)x)[i] = i % 11 == 4 ? 0.0f : (float)test_urand(-1, 1);
	}
	return x;
}

void test_nic_expect_exact(const struct test_nic_platform *p, const struct model *m,
			   const void *inputs, uint32_t count, const uint32_t *execs,
			   size_t n_execs)
{
	const uint32_t first = kexec_nic_first(m), classes = model_classes(m);
	const size_t in_bytes = model_shape_bytes(&m->input);
	struct kern_ctx *ctx = kern_ctx_create(m, 1);
	double *cpu = calloc(classes, sizeof(double)), *nic = calloc(classes, sizeof(double));
	void *act = calloc(1, model_shape_bytes(&m->layers[first].in) + 8);

	assert_non_null(ctx);
	assert_non_null(cpu);
	assert_non_null(nic);
	assert_non_null(act);
	for (size_t k = 0; k < n_execs; k++) {
		void *h = p->open(p->arg, m, first, execs[k]);

		for (uint32_t i = 0; i < count; i++) {
			const uint8_t *x = (const uint8_t *)inputs + i * in_bytes;

			assert_int_equal(kern_forward(ctx, x, 1, cpu), 0);
			if (first)
				assert_int_equal(kern_forward_range(ctx, 0, first, x, 1, act), 0);
			assert_int_equal(p->infer(h, first ? act : x, nic), 0);
			for (uint32_t c = 0; c < classes; c++)
				if (memcmp(&nic[c], &cpu[c], sizeof(double)))
					fail_msg(
					    "%s, E=%u, input %u, class %u: %s %.17g, cpu %.17g",
					    m->name, execs[k], i, c, p->name, nic[c], cpu[c]);
		}
		p->close(h);
	}
	free(act);
	free(nic);
	free(cpu);
	kern_ctx_free(ctx);
}

struct model *test_bundled_mlp(void)
{
	const char *bin = getenv("SPLITNIC");
	char path[512], err[512];
	struct model *m;

	if (getenv("NIC_MODEL"))
		snprintf(path, sizeof(path), "%s", getenv("NIC_MODEL"));
	else if (bin && strrchr(bin, '/'))
		snprintf(path, sizeof(path), "%.*s/models/fmnist-bmlp.snm",
			 (int)(strrchr(bin, '/') - bin), bin);
	else
		snprintf(path, sizeof(path), "build/models/fmnist-bmlp.snm");
	if (access(path, R_OK)) {
		print_message("skip: %s absent (make builds it from models/fmnist-bmlp)\n", path);
		skip();
	}
	m = model_load(path, err, sizeof(err));
	if (!m)
		fail_msg("%s", err);
	return m;
}

void *test_fmnist_inputs(const struct model *m, uint32_t *count)
{
	const char *images = "/usr/share/datasets/fashion-mnist/t10k-images-idx3-ubyte.gz";
	struct dataset ds = {0};
	char err[512];
	void *x;

	if (dataset_open(&ds, m, images, NULL, err, sizeof(err))) {
		print_message("%s; random inputs instead\n", err);
		return test_random_inputs(m, *count);
	}
	if (ds.count < *count)
		*count = ds.count;
	x = malloc((size_t)*count * ds.item_bytes);
	assert_non_null(x);
	memcpy(x, ds.data, (size_t)*count * ds.item_bytes);
	dataset_close(&ds);
	return x;
}
