/* SPDX-License-Identifier: MIT */
/*
 * NIC firmware tests: the emulator's responses equal kern_forward's scores bit for bit on
 * random binary models (odd widths, u8 and BITS inputs, a flatten of spatial bits, a host
 * part before the NIC part, thresholded or integer last layers) and on the bundled MLP, for
 * chains of 1 to 256 executors; the modeled time reproduces the seed's figures (DESIGN.md,
 * "NIC emulator fidelity"); where the NIC part starts; parameter and chain errors.
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
#include <unistd.h>

#include <cmocka.h>

#include "kernels/kern.h"
#include "nicfw/chain.h"
#include "nicfw/emu/emu.h"
#include "tests/support/npz_write.h"
#include "tools/dataset.h"

#define NA(a)	   (sizeof(a) / sizeof((a)[0]))
#define MAX_ARRAYS 64

static const uint32_t test_execs[] = {1, 2, 3, 7, 64, 255, 256};

static uint64_t rng_state;

static uint64_t rng(void)
{
	rng_state ^= rng_state << 13;
	rng_state ^= rng_state >> 7;
	rng_state ^= rng_state << 17;
	return rng_state;
}

static double urand(double lo, double hi)
{
	return lo + (hi - lo) * (double)(rng() >> 11) / (double)(1ull << 53);
}

/* An interchange model under construction: arrays for weights.npz, keys owned. */
struct gen {
	struct test_array a[MAX_ARRAYS];
	char keys[MAX_ARRAYS][32];
	size_t n;
};

static double *gen_array(struct gen *g, uint32_t layer, const char *name, uint32_t ndim,
			 const uint64_t *shape)
{
	struct test_array *a = &g->a[g->n];
	size_t count = 1;

	assert_true(g->n < MAX_ARRAYS);
	snprintf(g->keys[g->n], sizeof(g->keys[0]), "%u.%s", layer, name);
	for (uint32_t i = 0; i < ndim; i++) {
		a->shape[i] = shape[i];
		count *= shape[i];
	}
	a->key = g->keys[g->n++];
	a->ndim = ndim;
	a->v = calloc(count, sizeof(double));
	assert_non_null(a->v);
	return (double *)a->v;
}

static void gen_dense(struct gen *g, uint32_t layer, uint32_t out, uint32_t in)
{
	double *w = gen_array(g, layer, "weight", 2, (uint64_t[]){out, in});
	double *b = gen_array(g, layer, "bias", 1, (uint64_t[]){out});

	for (size_t i = 0; i < (size_t)out * in; i++)
		w[i] = urand(-1, 1);
	for (uint32_t o = 0; o < out; o++)
		b[o] = urand(-2, 2);
}

static void gen_conv(struct gen *g, uint32_t layer, uint32_t out, uint32_t in, uint32_t k)
{
	double *w = gen_array(g, layer, "weight", 4, (uint64_t[]){out, in, k, k});

	for (size_t i = 0; i < (size_t)out * in * k * k; i++)
		w[i] = urand(-1, 1);
}

/* Batch-norm over n features whose inputs spread about +-scale; some gammas <= 0. */
static void gen_bn(struct gen *g, uint32_t layer, uint32_t n, double scale)
{
	double *ga = gen_array(g, layer, "gamma", 1, (uint64_t[]){n});
	double *be = gen_array(g, layer, "beta", 1, (uint64_t[]){n});
	double *mu = gen_array(g, layer, "mean", 1, (uint64_t[]){n});
	double *va = gen_array(g, layer, "var", 1, (uint64_t[]){n});

	for (uint32_t i = 0; i < n; i++) {
		ga[i] = i % 17 == 5 ? 0 : urand(-1, 2);
		be[i] = urand(-0.5, 0.5);
		mu[i] = urand(-scale, scale) * 0.5;
		va[i] = urand(0.25, 4) * scale * scale;
	}
}

static void gen_free(struct gen *g)
{
	for (size_t i = 0; i < g->n; i++)
		free((void *)g->a[i].v);
	g->n = 0;
}

struct fx {
	char dir[256];
	char arch[320], npz[320], out[320];
	char err[512];
};

static int fx_setup(void **state)
{
	struct fx *f = calloc(1, sizeof(*f));

	if (!f || test_tmpdir(f->dir, sizeof(f->dir)))
		return -1;
	snprintf(f->arch, sizeof(f->arch), "%s/arch.json", f->dir);
	snprintf(f->npz, sizeof(f->npz), "%s/weights.npz", f->dir);
	snprintf(f->out, sizeof(f->out), "%s/model.snm", f->dir);
	*state = f;
	return 0;
}

static int fx_teardown(void **state)
{
	struct fx *f = *state;

	test_rmdir(f->dir);
	free(f);
	return 0;
}

static struct kern_model *build(struct fx *f, const char *json, struct gen *g)
{
	struct kern_model *m;

	assert_int_equal(test_write_text(f->arch, json), 0);
	assert_int_equal(test_npz_write(f->npz, g->a, g->n, false), 0);
	gen_free(g);
	if (kern_convert(f->arch, f->npz, f->out, f->err, sizeof(f->err)))
		fail_msg("convert: %s", f->err);
	m = kern_model_load(f->out, f->err, sizeof(f->err));
	if (!m)
		fail_msg("load: %s", f->err);
	return m;
}

/* Random inputs in the model's input format: u8 bytes, or floats in [-1, 1]. */
static void *random_inputs(const struct kern_model *m, uint32_t count)
{
	const size_t bytes = kern_shape_bytes(&m->input) * count;
	uint8_t *x = malloc(bytes);

	assert_non_null(x);
	if (m->input.fmt == KERN_FMT_U8) {
		for (size_t i = 0; i < bytes; i++)
			x[i] = (uint8_t)(i % 7 == 3 ? 0 : rng());
	} else {
		for (size_t i = 0; i < bytes / sizeof(float); i++)
			((float *)x)[i] = i % 11 == 4 ? 0.0f : (float)urand(-1, 1);
	}
	return x;
}

/*
 * The emulator against kern_forward on `count` inputs for every E of test_execs: the host part
 * (ops before nicfw_nic_first) on the CPU, then the NIC part on the emulator.
 */
static void expect_bit_exact(const struct kern_model *m, const void *inputs, uint32_t count,
			     uint32_t want_first)
{
	const uint32_t first = nicfw_nic_first(m), classes = kern_model_classes(m);
	const size_t in_bytes = kern_shape_bytes(&m->input);
	struct kern_ctx *ctx = kern_ctx_create(m, 1);
	double *cpu = calloc(classes, sizeof(double)), *nic = calloc(classes, sizeof(double));
	void *act = calloc(1, kern_shape_bytes(&m->layers[first].in) + 8);
	struct nicfw_emu_params p;
	char err[512];

	assert_int_equal(first, want_first);
	assert_non_null(ctx);
	assert_non_null(cpu);
	assert_non_null(nic);
	assert_non_null(act);
	nicfw_emu_params_default(&p);
	for (size_t k = 0; k < NA(test_execs); k++) {
		struct nicfw_emu *e =
		    nicfw_emu_create(m, first, test_execs[k], &p, err, sizeof(err));

		if (!e)
			fail_msg("E=%u: %s", test_execs[k], err);
		for (uint32_t i = 0; i < count; i++) {
			const uint8_t *x = (const uint8_t *)inputs + i * in_bytes;
			struct nicfw_emu_report rep;

			assert_int_equal(kern_forward(ctx, x, 1, cpu), 0);
			if (first)
				assert_int_equal(kern_forward_range(ctx, 0, first, x, 1, act), 0);
			assert_int_equal(nicfw_emu_infer(e, first ? act : x, nic, &rep), 0);
			for (uint32_t c = 0; c < classes; c++)
				if (memcmp(&nic[c], &cpu[c], sizeof(double)))
					fail_msg(
					    "%s, E=%u, input %u, class %u: emu %.17g, cpu %.17g",
					    m->name, test_execs[k], i, c, nic[c], cpu[c]);
			assert_true(rep.latency_us > 0);
		}
		nicfw_emu_free(e);
	}
	free(act);
	free(nic);
	free(cpu);
	kern_ctx_free(ctx);
}

/* u8 MLP, widths 63, 130, 1000, 1: BDENSE_U8 + BDENSE with thresholds, scores + bias + bn. */
static void test_nicfw_u8_mlp(void **state)
{
	struct fx *f = *state;
	struct gen g = {0};
	struct kern_model *m;
	void *x;

	rng_state = 0x1234567;
	gen_dense(&g, 1, 63, 65);
	gen_bn(&g, 2, 63, 128 * sqrt(65));
	gen_dense(&g, 4, 130, 63);
	gen_bn(&g, 5, 130, sqrt(63));
	gen_dense(&g, 7, 1000, 130);
	gen_bn(&g, 8, 1000, sqrt(130));
	gen_dense(&g, 10, 1, 1000);
	gen_bn(&g, 11, 1, sqrt(1000));
	m = build(
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
	x = random_inputs(m, 4);
	expect_bit_exact(m, x, 4, 0);
	free(x);
	kern_model_free(m);
}

/* Float input, sign on the host; BITS into the NIC; the last layer thresholded (+-1 scores). */
static void test_nicfw_bits_input_sign_out(void **state)
{
	struct fx *f = *state;
	struct gen g = {0};
	struct kern_model *m;
	void *x;

	rng_state = 0xabcdef;
	gen_dense(&g, 1, 65, 130);
	gen_bn(&g, 2, 65, sqrt(130));
	gen_dense(&g, 4, 63, 65);
	gen_bn(&g, 5, 63, sqrt(65));
	m = build(f,
		  "{\"name\":\"bits-in\",\"input\":{\"shape\":[130,1,1],\"dtype\":\"f32\"},"
		  "\"layers\":[{\"type\":\"sign\"},"
		  "{\"type\":\"dense\",\"out\":65,\"bias\":true,\"binary_weights\":true},"
		  "{\"type\":\"batchnorm\"},{\"type\":\"sign\"},"
		  "{\"type\":\"dense\",\"out\":63,\"bias\":true,\"binary_weights\":true},"
		  "{\"type\":\"batchnorm\"},{\"type\":\"sign\"}]}",
		  &g);
	x = random_inputs(m, 4);
	expect_bit_exact(m, x, 4, 2);
	free(x);
	kern_model_free(m);
}

/* Binary conv on the host, then a flatten of (5,6,6) bits and dense layers on the NIC. */
static void test_nicfw_flatten_bits(void **state)
{
	struct fx *f = *state;
	struct gen g = {0};
	struct kern_model *m;
	void *x;

	rng_state = 0x5eed;
	gen_conv(&g, 1, 5, 3, 3);
	gen_bn(&g, 2, 5, 5);
	gen_dense(&g, 5, 65, 180);
	gen_bn(&g, 6, 65, sqrt(180));
	gen_dense(&g, 8, 10, 65);
	gen_bn(&g, 9, 10, sqrt(65));
	m = build(f,
		  "{\"name\":\"conv-flat\",\"input\":{\"shape\":[3,6,6],\"dtype\":\"f32\"},"
		  "\"layers\":[{\"type\":\"sign\"},"
		  "{\"type\":\"conv\",\"out\":5,\"kernel\":3,\"pad\":1,\"binary_weights\":true},"
		  "{\"type\":\"batchnorm\"},{\"type\":\"sign\"},{\"type\":\"flatten\"},"
		  "{\"type\":\"dense\",\"out\":65,\"bias\":true,\"binary_weights\":true},"
		  "{\"type\":\"batchnorm\"},{\"type\":\"sign\"},"
		  "{\"type\":\"dense\",\"out\":10,\"bias\":true,\"binary_weights\":true},"
		  "{\"type\":\"batchnorm\"}]}",
		  &g);
	assert_int_equal(m->layers[nicfw_nic_first(m)].op, KERN_OP_FLATTEN);
	x = random_inputs(m, 4);
	expect_bit_exact(m, x, 4, 3);
	free(x);
	kern_model_free(m);
}

/* A float layer after the binary ones: nothing for the NIC; a float dense first: a tail only. */
static void test_nicfw_first(void **state)
{
	struct fx *f = *state;
	struct gen g = {0};
	struct kern_model *m;
	char err[256];
	struct nicfw_chain *ch = malloc(sizeof(*ch));

	rng_state = 7;
	gen_dense(&g, 1, 9, 20);
	gen_dense(&g, 3, 4, 9);
	m = build(f,
		  "{\"name\":\"tail\",\"input\":{\"shape\":[20,1,1],\"dtype\":\"f32\"},"
		  "\"layers\":[{\"type\":\"sign\"},"
		  "{\"type\":\"dense\",\"out\":9,\"bias\":true,\"binary_weights\":true},"
		  "{\"type\":\"sign\"},{\"type\":\"dense\",\"out\":4,\"bias\":true}]}",
		  &g);
	assert_int_equal(nicfw_nic_first(m), m->n_layers);
	assert_int_equal(nicfw_chain_init(ch, m, 0, 4, err, sizeof(err)), -EINVAL);
	assert_non_null(strstr(err, "cannot start the NIC part"));
	kern_model_free(m);
	free(ch);
}

static void test_nicfw_chain_errors(void **state)
{
	struct fx *f = *state;
	struct gen g = {0};
	struct nicfw_emu_params p;
	struct kern_model *m;
	char err[256];
	struct nicfw_chain *ch = malloc(sizeof(*ch));

	rng_state = 9;
	gen_dense(&g, 0, 3, 64);
	m = build(f,
		  "{\"name\":\"one\",\"input\":{\"shape\":[64,1,1],\"dtype\":\"u8\"},\"layers\":["
		  "{\"type\":\"dense\",\"out\":3,\"bias\":true,\"binary_weights\":true}]}",
		  &g);
	assert_int_equal(nicfw_nic_first(m), 0);
	assert_int_equal(nicfw_chain_init(ch, m, 0, 0, err, sizeof(err)), -EINVAL);
	assert_int_equal(nicfw_chain_init(ch, m, 0, NICFW_MAX_EXEC + 1, err, sizeof(err)), -EINVAL);
	assert_non_null(strstr(err, "257 executors"));
	assert_int_equal(nicfw_chain_init(ch, m, 1, 4, err, sizeof(err)), -EINVAL);
	nicfw_emu_params_default(&p);
	assert_int_equal(nicfw_emu_param_set(&p, "exec_per_me=8", err, sizeof(err)), 0);
	assert_int_equal(nicfw_emu_param_set(&p, "mes=10", err, sizeof(err)), 0);
	assert_null(nicfw_emu_create(m, 0, 256, &p, err, sizeof(err)));
	assert_non_null(strstr(err, "need 33 MEs"));
	kern_model_free(m);
	free(ch);
}

static void test_nicfw_params(void **state)
{
	struct nicfw_emu_params p;
	char err[256];

	nicfw_emu_params_default(&p);
	assert_int_equal(nicfw_emu_param_set(&p, "emem_bw=2.5", err, sizeof(err)), 0);
	assert_true(p.v[NICFW_EP_EMEM_BW] == 2.5);
	assert_int_equal(nicfw_emu_param_set(&p, "xisland_cycles=0", err, sizeof(err)), 0);
	assert_int_equal(nicfw_emu_param_set(&p, "emem_bw=0", err, sizeof(err)), -EINVAL);
	assert_non_null(strstr(err, "emem_bw"));
	assert_int_equal(nicfw_emu_param_set(&p, "mes=4.5", err, sizeof(err)), -EINVAL);
	assert_int_equal(nicfw_emu_param_set(&p, "clock_mhz", err, sizeof(err)), -EINVAL);
	assert_int_equal(nicfw_emu_param_set(&p, "nope=1", err, sizeof(err)), -EINVAL);
	assert_non_null(strstr(err, "nope"));
	for (uint32_t i = 0; i < NICFW_EP__COUNT; i++) {
		const struct nicfw_emu_param_info *in = nicfw_emu_param_info(i);

		assert_non_null(in);
		assert_true(in->name && *in->name && in->unit && in->why && strlen(in->why) > 10);
	}
}

/* The bundled binary MLP, whole model on the NIC, on Fashion-MNIST test images. */
static void test_nicfw_bundled_mlp(void **state)
{
	const char *bin = getenv("SPLITNIC");
	char path[512], err[512];
	struct dataset ds = {0};
	struct kern_model *m;
	const char *images = "/usr/share/datasets/fashion-mnist/t10k-images-idx3-ubyte.gz";

	(void)state;
	if (bin && strrchr(bin, '/'))
		snprintf(path, sizeof(path), "%.*s/models/fmnist-bmlp.snm",
			 (int)(strrchr(bin, '/') - bin), bin);
	else
		snprintf(path, sizeof(path), "build/models/fmnist-bmlp.snm");
	if (access(path, R_OK)) {
		print_message("skip: %s absent (make builds it from models/fmnist-bmlp)\n", path);
		skip();
	}
	m = kern_model_load(path, err, sizeof(err));
	if (!m)
		fail_msg("%s", err);
	if (dataset_open(&ds, m, images, NULL, err, sizeof(err))) {
		void *x = random_inputs(m, 6);

		print_message("%s; random inputs instead\n", err);
		expect_bit_exact(m, x, 6, 0);
		free(x);
	} else {
		expect_bit_exact(m, ds.data, ds.count < 6 ? ds.count : 6, 0);
		dataset_close(&ds);
	}
	kern_model_free(m);
}

/* --- fidelity: modeled time against the seed's figures ---------------------------------- */

#define FC_INPUTS 4096u

/* Modeled latency (us) of one thresholded binary FC layer, 4096 inputs, 256 executors. */
static double fc_latency(uint32_t neurons)
{
	const uint32_t nw = FC_INPUTS / 64;
	uint64_t *w = malloc((size_t)neurons * nw * sizeof(uint64_t)), x[FC_INPUTS / 64];
	int32_t *thr = calloc(neurons, sizeof(int32_t));
	uint8_t *flip = calloc(neurons, 1);
	double *scores = malloc(neurons * sizeof(double)), lat;
	struct kern_layer layer = {
	    .op = KERN_OP_BDENSE,
	    .flags = KERN_LF_THRESH,
	    .in = {KERN_FMT_BITS, FC_INPUTS, 1, 1},
	    .out = {KERN_FMT_BITS, neurons, 1, 1},
	    .blob = {w, thr, flip},
	};
	struct kern_model m = {.name = "fc", .input = layer.in, .n_layers = 1, .layers = &layer};
	struct nicfw_emu_params p;
	struct nicfw_emu_report rep;
	struct nicfw_emu *e;
	char err[256];

	assert_non_null(w);
	assert_non_null(thr);
	assert_non_null(flip);
	assert_non_null(scores);
	for (size_t i = 0; i < (size_t)neurons * nw; i++)
		w[i] = rng();
	for (uint32_t j = 0; j < nw; j++)
		x[j] = rng();
	nicfw_emu_params_default(&p);
	e = nicfw_emu_create(&m, 0, 256, &p, err, sizeof(err));
	if (!e)
		fail_msg("%s", err);
	assert_int_equal(nicfw_emu_infer(e, x, scores, &rep), 0);
	assert_int_equal(nicfw_emu_infer(e, x, scores, &rep), 0);
	lat = rep.latency_us;
	assert_int_equal(rep.n_layers, 1);
	assert_true(rep.exec_active > 0 && rep.exec_active <= 1);
	assert_true(rep.me_busy > 0 && rep.me_busy <= 1);
	assert_true(rep.rd_bytes[NICFW_MEM_EMEM] >= (uint64_t)neurons * nw * 8);
	nicfw_emu_free(e);
	free(scores);
	free(flip);
	free(thr);
	free(w);
	return lat;
}

static void expect_within(const char *what, double got, double want, double tol)
{
	print_message("%-34s modeled %9.1f, seed %9.1f (%+.1f%%)\n", what, got, want,
		      100 * (got / want - 1));
	if (fabs(got / want - 1) > tol)
		fail_msg("%s: modeled %.1f, seed %.1f: off by more than %.0f%%", what, got, want,
			 100 * tol);
}

static void test_nicfw_fidelity(void **state)
{
	static const uint32_t sizes[] = {512, 1024, 2048, 3072, 4096, 6144, 8192, 12288, 16384};
	double lat[NA(sizes)];

	(void)state;
	rng_state = 42;
	for (size_t i = 0; i < NA(sizes); i++) {
		lat[i] = fc_latency(sizes[i]);
		if (i && !(lat[i] > lat[i - 1]))
			fail_msg("latency not increasing: %u neurons %.1f us, %u neurons %.1f us",
				 sizes[i - 1], lat[i - 1], sizes[i], lat[i]);
		/* The seed's trend: linear between its two points (fixed cost + per neuron). */
		if (sizes[i] > 2048 && sizes[i] < 16384) {
			char what[64];

			snprintf(what, sizeof(what), "latency us, %u neurons (trend)", sizes[i]);
			expect_within(what, lat[i],
				      400 + (2700.0 - 400) * (sizes[i] - 2048) / (16384 - 2048),
				      0.15);
		}
	}
	expect_within("latency us, 2048 neurons", lat[2], 400, 0.15);
	expect_within("latency us, 16384 neurons", lat[8], 2700, 0.15);
	expect_within("throughput FC/s, 4096 neurons", 1e6 / lat[4], 1350, 0.15);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
	    cmocka_unit_test_setup_teardown(test_nicfw_u8_mlp, fx_setup, fx_teardown),
	    cmocka_unit_test_setup_teardown(test_nicfw_bits_input_sign_out, fx_setup, fx_teardown),
	    cmocka_unit_test_setup_teardown(test_nicfw_flatten_bits, fx_setup, fx_teardown),
	    cmocka_unit_test_setup_teardown(test_nicfw_first, fx_setup, fx_teardown),
	    cmocka_unit_test_setup_teardown(test_nicfw_chain_errors, fx_setup, fx_teardown),
	    cmocka_unit_test(test_nicfw_params),
	    cmocka_unit_test(test_nicfw_bundled_mlp),
	    cmocka_unit_test(test_nicfw_fidelity),
	};

	return cmocka_run_group_tests(tests, NULL, NULL);
}
