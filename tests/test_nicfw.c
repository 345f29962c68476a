/* SPDX-License-Identifier: MIT */
/*
 * NIC firmware tests: the emulator's responses equal kern_forward's scores bit for bit on
 * random binary models (odd widths, u8 and BITS inputs, a flatten of spatial bits, a host
 * part before the NIC part, thresholded or integer last layers) and on the bundled MLP, for
 * chains of 1 to 256 executors; the modeled time reproduces the seed's figures
 * (docs/architecture.md, "What the emulator's calibrated parameters reproduce"); serving: the
 * modeled time of traced requests after the warm-up equals the steady state's, and the served
 * results equal the traced ones; where the NIC part starts; parameter and chain errors.
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

#include "cli/dataset.h"
#include "exec/kexec.h"
#include "kernels/kern.h"
#include "nicfw/chain.h"
#include "nicfw/emu/emu.h"
#include "tests/support/model_fixture.h"

#define NA(a) (sizeof(a) / sizeof((a)[0]))

static const uint32_t test_execs[] = {1, 2, 3, 7, 64, 255, 256};

static void *emu_open(void *arg, const struct model *m, uint32_t first, uint32_t execs)
{
	struct nicfw_emu_params p;
	struct nicfw_emu *e;
	char err[512];

	nicfw_emu_params_default(&p);
	e = nicfw_emu_create(m, first, execs, &p, err, sizeof(err));
	if (!e)
		fail_msg("E=%u: %s", execs, err);
	return e;
}

static int emu_infer(void *h, const void *in, double *scores)
{
	struct nicfw_emu_report rep;
	int ret = nicfw_emu_infer(h, in, scores, &rep);

	assert_true(ret || rep.latency_us > 0);
	return ret;
}

static void emu_close(void *h)
{
	nicfw_emu_free(h);
}

static const struct test_nic_platform emu = {"emu", emu_open, emu_infer, emu_close, NULL};

/*
 * The emulator against kern_forward on `count` inputs for every E of test_execs, the NIC part
 * starting at want_first.
 */
static void expect_bit_exact(const struct model *m, const void *inputs, uint32_t count,
			     uint32_t want_first)
{
	assert_int_equal(kexec_nic_first(m), want_first);
	test_nic_expect_exact(&emu, m, inputs, count, test_execs, NA(test_execs));
}

/* u8 MLP, widths 63, 130, 1000, 1: BDENSE_U8 + BDENSE with thresholds, scores + bias + bn. */
static void test_nicfw_u8_mlp(void **state)
{
	struct model *m = test_model_u8_mlp(*state);
	void *x = test_random_inputs(m, 4);

	expect_bit_exact(m, x, 4, 0);
	free(x);
	model_free(m);
}

/* Float input, sign on the host; BITS into the NIC; the last layer thresholded (+-1 scores). */
static void test_nicfw_bits_input_sign_out(void **state)
{
	struct model *m = test_model_bits_in(*state);
	void *x = test_random_inputs(m, 4);

	expect_bit_exact(m, x, 4, 2);
	free(x);
	model_free(m);
}

/* Binary conv on the host, then a flatten of (5,6,6) bits and dense layers on the NIC. */
static void test_nicfw_flatten_bits(void **state)
{
	struct model *m = test_model_conv_flat(*state);
	void *x;

	assert_int_equal(m->layers[kexec_nic_first(m)].op, MODEL_OP_FLATTEN);
	x = test_random_inputs(m, 4);
	expect_bit_exact(m, x, 4, 3);
	free(x);
	model_free(m);
}

/* A float layer after the binary ones: nothing for the NIC; a float dense first: a tail only. */
static void test_nicfw_first(void **state)
{
	struct test_fx *f = *state;
	struct test_gen g = {0};
	struct model *m;
	char err[256];
	struct nicfw_chain *ch = malloc(sizeof(*ch));

	test_rng_seed(7);
	test_gen_dense(&g, 1, 9, 20);
	test_gen_dense(&g, 3, 4, 9);
	m = test_fx_build_gen(
	    f,
	    "{\"name\":\"tail\",\"input\":{\"shape\":[20,1,1],\"dtype\":\"f32\"},"
	    "\"layers\":[{\"type\":\"sign\"},"
	    "{\"type\":\"dense\",\"out\":9,\"bias\":true,\"binary_weights\":true},"
	    "{\"type\":\"sign\"},{\"type\":\"dense\",\"out\":4,\"bias\":true}]}",
	    &g);
	assert_int_equal(kexec_nic_first(m), m->n_layers);
	assert_int_equal(nicfw_chain_init(ch, m, 0, 4, NICFW_LAYOUT_RECORDS, err, sizeof(err)),
			 -EINVAL);
	assert_non_null(strstr(err, "cannot start the NIC part"));
	model_free(m);
	free(ch);
}

static void test_nicfw_chain_errors(void **state)
{
	struct test_fx *f = *state;
	struct test_gen g = {0};
	struct nicfw_emu_params p;
	struct model *m;
	char err[256];
	struct nicfw_chain *ch = malloc(sizeof(*ch));

	test_rng_seed(9);
	test_gen_dense(&g, 0, 3, 64);
	m = test_fx_build_gen(
	    f,
	    "{\"name\":\"one\",\"input\":{\"shape\":[64,1,1],\"dtype\":\"u8\"},\"layers\":["
	    "{\"type\":\"dense\",\"out\":3,\"bias\":true,\"binary_weights\":true}]}",
	    &g);
	assert_int_equal(kexec_nic_first(m), 0);
	assert_int_equal(nicfw_chain_init(ch, m, 0, 0, NICFW_LAYOUT_RECORDS, err, sizeof(err)),
			 -EINVAL);
	assert_int_equal(
	    nicfw_chain_init(ch, m, 0, NICFW_MAX_EXEC + 1, NICFW_LAYOUT_RECORDS, err, sizeof(err)),
	    -EINVAL);
	assert_non_null(strstr(err, "257 executors"));
	assert_int_equal(nicfw_chain_init(ch, m, 1, 4, NICFW_LAYOUT_RECORDS, err, sizeof(err)),
			 -EINVAL);
	assert_int_equal(nicfw_chain_init(ch, m, 0, 4, NICFW_LAYOUT_RECORDS, err, sizeof(err)), 0);
	assert_int_equal(nicfw_chain_group(ch, (const uint32_t[]){0, 0, 1, 1}), -EINVAL);
	assert_int_equal(nicfw_chain_init(ch, m, 0, 4, NICFW_LAYOUT_DIRECT, err, sizeof(err)), 0);
	assert_int_equal(nicfw_chain_group(ch, (const uint32_t[]){0, 1, 0, 1}), -EINVAL);
	assert_int_equal(nicfw_chain_group(ch, (const uint32_t[]){0, 0, 1, 1}), 0);
	assert_true(ch->grp_first[1] == 0 && ch->grp_last[0] == 1 && ch->grp_first[3] == 2);
	nicfw_emu_params_default(&p);
	assert_int_equal(nicfw_emu_param_set(&p, "exec_per_me=8", err, sizeof(err)), 0);
	assert_int_equal(nicfw_emu_param_set(&p, "mes=10", err, sizeof(err)), 0);
	assert_null(nicfw_emu_create(m, 0, 256, &p, err, sizeof(err)));
	assert_non_null(strstr(err, "need 33 MEs"));
	model_free(m);
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
	struct model *m = test_bundled_mlp();
	uint32_t count = 6;
	void *x = test_fmnist_inputs(m, &count);

	expect_bit_exact(m, x, count, 0);
	free(x);
	model_free(m);
}

/* --- serving: steady-state modeled time, results from the DIRECT copy ----------------------- */

/*
 * After nicfw_emu_serve_prepare, every traced request on new inputs (first a host part on the
 * CPU where the model has one) gives the steady-state latency, and nicfw_emu_serve gives the
 * scores of kern_forward and of the traced firmware, bit for bit.
 */
static void expect_serve(const struct model *m, uint32_t count)
{
	static const uint32_t execs[] = {1, 5, 16, 256};
	const uint32_t first = kexec_nic_first(m), classes = model_classes(m);
	const size_t in_bytes = model_shape_bytes(&m->input);
	uint8_t *x = test_random_inputs(m, count);
	struct kern_ctx *ctx = kern_ctx_create(m, 1);
	double *cpu = calloc(classes, sizeof(double)), *nic = calloc(classes, sizeof(double));
	double *srv = calloc(classes, sizeof(double));
	void *act = calloc(1, model_shape_bytes(&m->layers[first].in) + 8);
	struct nicfw_emu_params p;
	char err[512];

	assert_non_null(x);
	assert_non_null(ctx);
	assert_non_null(cpu);
	assert_non_null(nic);
	assert_non_null(srv);
	assert_non_null(act);
	nicfw_emu_params_default(&p);
	for (size_t k = 0; k < NA(execs); k++) {
		struct nicfw_emu *e = nicfw_emu_create(m, first, execs[k], &p, err, sizeof(err));
		struct nicfw_emu_report steady, rep;
		uint32_t warmed = 0;

		if (!e)
			fail_msg("E=%u: %s", execs[k], err);
		assert_int_equal(nicfw_emu_serve(e, x, srv), -EINVAL);
		if (nicfw_emu_serve_prepare(e, m, 16, &steady, &warmed, err, sizeof(err)))
			fail_msg("%s, E=%u: no steady state after %u requests (%s)", m->name,
				 execs[k], warmed, err);
		assert_true(warmed >= 2 && steady.latency_us > 0);
		for (uint32_t i = 0; i < count; i++) {
			const uint8_t *xi = x + i * in_bytes;
			const void *in = first ? act : xi;

			assert_int_equal(kern_forward(ctx, xi, 1, cpu), 0);
			if (first)
				assert_int_equal(kern_forward_range(ctx, 0, first, xi, 1, act), 0);
			assert_int_equal(nicfw_emu_serve(e, in, srv), 0);
			assert_int_equal(nicfw_emu_infer(e, in, nic, &rep), 0);
			if (memcmp(srv, cpu, classes * sizeof(double)) ||
			    memcmp(nic, cpu, classes * sizeof(double)))
				fail_msg("%s, E=%u, input %u: served or traced scores differ from "
					 "kern_forward's",
					 m->name, execs[k], i);
			if (fabs(rep.latency_us - steady.latency_us) > 1e-9 * steady.latency_us)
				fail_msg(
				    "%s, E=%u, input %u: modeled %.12g us, steady state %.12g us",
				    m->name, execs[k], i, rep.latency_us, steady.latency_us);
		}
		nicfw_emu_free(e);
	}
	free(act);
	free(srv);
	free(nic);
	free(cpu);
	kern_ctx_free(ctx);
	free(x);
}

static void test_nicfw_serve(void **state)
{
	struct model *m = test_model_u8_mlp(*state);

	expect_serve(m, 3);
	model_free(m);
	m = test_model_bits_in(*state);
	expect_serve(m, 3);
	model_free(m);
	m = test_model_conv_flat(*state);
	expect_serve(m, 3);
	model_free(m);
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
	struct model_layer layer = {
	    .op = MODEL_OP_BDENSE,
	    .flags = MODEL_LF_THRESH,
	    .in = {MODEL_FMT_BITS, FC_INPUTS, 1, 1},
	    .out = {MODEL_FMT_BITS, neurons, 1, 1},
	    .blob = {w, thr, flip},
	};
	struct model m = {.name = "fc", .input = layer.in, .n_layers = 1, .layers = &layer};
	struct nicfw_emu_params p;
	struct nicfw_emu_report rep;
	struct nicfw_emu *e;
	char err[256];

	assert_non_null(w);
	assert_non_null(thr);
	assert_non_null(flip);
	assert_non_null(scores);
	for (size_t i = 0; i < (size_t)neurons * nw; i++)
		w[i] = test_rng();
	for (uint32_t j = 0; j < nw; j++)
		x[j] = test_rng();
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
	test_rng_seed(42);
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
	    cmocka_unit_test_setup_teardown(test_nicfw_u8_mlp, test_fx_setup, test_fx_teardown),
	    cmocka_unit_test_setup_teardown(test_nicfw_bits_input_sign_out, test_fx_setup,
					    test_fx_teardown),
	    cmocka_unit_test_setup_teardown(test_nicfw_flatten_bits, test_fx_setup,
					    test_fx_teardown),
	    cmocka_unit_test_setup_teardown(test_nicfw_first, test_fx_setup, test_fx_teardown),
	    cmocka_unit_test_setup_teardown(test_nicfw_chain_errors, test_fx_setup,
					    test_fx_teardown),
	    cmocka_unit_test(test_nicfw_params),
	    cmocka_unit_test_setup_teardown(test_nicfw_serve, test_fx_setup, test_fx_teardown),
	    cmocka_unit_test(test_nicfw_bundled_mlp),
	    cmocka_unit_test(test_nicfw_fidelity),
	};

	return cmocka_run_group_tests(tests, NULL, NULL);
}
