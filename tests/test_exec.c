/* SPDX-License-Identifier: MIT */
/*
 * The executor interface (exec/kexec.h) and its implementations: the NIC capability rule
 * (one definition, asked by chain, planner, sweep and host), the completion FIFO, the CPU
 * executor against kern_forward, the GPU executor's CPU fallback (its message and counter),
 * the NIC emulator executor bit-exact with the CPU (the lcore one: tests/test_lcore.c), and a
 * CPU -> GPU -> NIC pipeline of the bundled CNN equal to kern_forward.
 *
 * SPLITNIC_MODEL_DIR (default build/models) holds the bundled models (`make` builds them).
 */
#include <errno.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <cmocka.h>

#include "exec/kexec.h"
#include "kernels/cuda/kcuda.h"
#include "nicfw/emu/exec_emu.h"
#include "tests/support/model_fixture.h"

static struct model *bundled(const char *name)
{
	const char *dir = getenv("SPLITNIC_MODEL_DIR");
	char path[512], err[512];
	struct model *m;

	snprintf(path, sizeof(path), "%s/%s.snm", dir && *dir ? dir : "build/models", name);
	m = model_load(path, err, sizeof(err));
	if (!m)
		fail_msg("%s (make builds the bundled models)", err);
	return m;
}

/* kern_forward's scores for count inputs (malloc'd). */
static double *cpu_scores(const struct model *m, const void *in, uint32_t count)
{
	const uint32_t classes = model_classes(m);
	double *s = calloc((size_t)count * classes, sizeof(double));
	struct kern_ctx *ctx = kern_ctx_create(m, count);

	assert_non_null(s);
	assert_non_null(ctx);
	assert_int_equal(kern_forward(ctx, in, count, s), 0);
	kern_ctx_free(ctx);
	return s;
}

static void test_exec_nic_rule(void **state)
{
	struct test_fx *f = *state;
	struct model *mlp = test_model_u8_mlp(f), *cnn = bundled("fmnist-bcnn");
	const uint32_t n = cnn->n_layers, t = kexec_nic_first(cnn);

	assert_int_equal(kexec_nic_first(mlp), 0);
	assert_true(kexec_can_run(KEXEC_KIND_NIC, mlp, 0, mlp->n_layers));
	assert_false(kexec_can_run(KEXEC_KIND_NIC, mlp, 0, mlp->n_layers - 1)); /* not a tail */
	assert_int_equal(cnn->layers[t].op, MODEL_OP_FLATTEN); /* the dense tail starts there */
	assert_int_equal(cnn->layers[t - 1].op, MODEL_OP_MAXPOOL_BITS);
	assert_false(kexec_can_run(KEXEC_KIND_NIC, cnn, t - 1, n));
	assert_true(kexec_can_run(KEXEC_KIND_NIC, cnn, t, n));
	assert_true(kexec_can_run(KEXEC_KIND_NIC, cnn, t + 1, n));
	assert_true(kexec_can_run(KEXEC_KIND_NIC, cnn, t + 2, n));
	assert_false(kexec_can_run(KEXEC_KIND_NIC, cnn, t + 3, n)); /* bias: not an entry op */
	assert_int_equal(cnn->layers[t + 3].op, MODEL_OP_BIAS);
	assert_true(kexec_nic_op(&cnn->layers[t + 3]));
	assert_false(kexec_nic_op(&cnn->layers[4])); /* bconv */
	/* over packets: stand-alone from op 0, else an ACTIVATION of flat bits */
	assert_true(kexec_nic_handoff_ok(mlp, 0));
	assert_false(kexec_nic_handoff_ok(cnn, 0));
	assert_false(kexec_nic_handoff_ok(cnn, t)); /* the flatten's input: c x h x w bits */
	assert_true(cnn->layers[t].in.h * cnn->layers[t].in.w > 1);
	assert_true(kexec_nic_handoff_ok(cnn, t + 1));
	assert_true(kexec_nic_handoff_ok(cnn, t + 2));
	assert_false(kexec_nic_handoff_ok(cnn, t + 3));
	assert_false(kexec_nic_handoff_ok(cnn, n));
	assert_true(kexec_can_run(KEXEC_KIND_CPU, cnn, 3, 7));
	assert_true(kexec_can_run(KEXEC_KIND_GPU, cnn, 0, n));
	assert_false(kexec_can_run(KEXEC_KIND_CPU, cnn, 7, 7));
	assert_false(kexec_can_run(KEXEC_KIND_CPU, cnn, 0, n + 1));
	assert_int_equal(kexec_kind_from_name("gpu"), KEXEC_KIND_GPU);
	assert_int_equal(kexec_kind_from_name("fpga"), -1);
	assert_string_equal(kexec_kind_name(KEXEC_KIND_NIC), "nic");
	model_free(cnn);
	model_free(mlp);
}

/*
 * The rule's options: an f32 prefix binarized per feature, any element-wise tail. The f32 MLP
 * (cast, sign, two thresholded binary dense) is the chain's from op 2 and the whole model's with
 * the prefix; a binary conv is no prefix; a relu after the last binary dense is a tail only with
 * any_tail.
 */
static void test_exec_nic_rule_options(void **state)
{
	static const struct kexec_nic_rule prefix = {.f32_prefix = true}, tail = {.any_tail = true};
	struct test_fx *f = *state;
	struct model *m = test_model_bits_in(f);
	struct test_gen g = {0};
	struct kexec_nic_run r;

	assert_int_equal(m->n_layers, 4);
	assert_int_equal(m->layers[1].op, MODEL_OP_SIGN);
	kexec_nic_find(m, &kexec_nic_chain, &r);
	assert_int_equal(r.first, kexec_nic_first(m));
	assert_int_equal(r.first, 2);
	assert_int_equal(r.stop, 1);
	assert_int_equal(r.sign, 4);
	assert_int_equal(r.bin_first, 2);
	assert_int_equal(r.bin_last, 3);
	kexec_nic_find(m, &prefix, &r);
	assert_int_equal(r.first, 0);
	assert_int_equal(r.sign, 1);
	assert_int_equal(r.stop, 4);
	assert_int_equal(r.bin_first, 2);
	model_free(m);
	/* cast, sign, bconv, flatten, ...: the conv is what no prefix takes */
	m = test_model_conv_flat(f);
	assert_int_equal(m->layers[2].op, MODEL_OP_BCONV);
	kexec_nic_find(m, &prefix, &r);
	assert_int_equal(r.first, 3);
	assert_int_equal(r.stop, 2);
	kexec_nic_find(m, &kexec_nic_chain, &r);
	assert_int_equal(r.first, 3);
	assert_int_equal(r.stop, 2);
	model_free(m);

	test_rng_seed(11);
	test_gen_dense(&g, 0, 4, 8);
	test_gen_dense(&g, 2, 3, 4);
	m = test_fx_build_gen(
	    f,
	    "{\"name\":\"relu\",\"input\":{\"shape\":[8,1,1],\"dtype\":\"u8\"},\"layers\":["
	    "{\"type\":\"dense\",\"out\":4,\"bias\":true,\"binary_weights\":true},"
	    "{\"type\":\"sign\"},"
	    "{\"type\":\"dense\",\"out\":3,\"bias\":true,\"binary_weights\":true},"
	    "{\"type\":\"relu\"}]}",
	    &g);
	assert_int_equal(m->layers[m->n_layers - 1].op, MODEL_OP_RELU);
	kexec_nic_find(m, &kexec_nic_chain, &r);
	assert_int_equal(r.first, m->n_layers);
	assert_int_equal(r.stop, m->n_layers - 1);
	kexec_nic_find(m, &tail, &r);
	assert_int_equal(r.first, 0);
	assert_int_equal(r.bin_first, 0);
	assert_int_equal(m->layers[r.bin_last].op, MODEL_OP_BDENSE);
	model_free(m);
}

static void test_exec_cpu_fifo(void **state)
{
	struct test_fx *f = *state;
	struct model *m = test_model_u8_mlp(f);
	const uint32_t classes = model_classes(m), in_bytes = model_shape_bytes(&m->input);
	uint8_t *in = test_random_inputs(m, 3 * 4);
	double *want = cpu_scores(m, in, 12), *out = calloc(12 * classes, sizeof(double));
	struct kexec_done d[8];
	struct kexec_caps c;
	struct kexec x;
	char err[512];
	uint32_t got = 0;

	assert_non_null(out);
	assert_int_equal(kexec_open(&x, &kexec_cpu_ops, NULL, err, sizeof(err)), 0);
	assert_int_equal(kexec_submit(&x, in, 1, out, 1), -EINVAL); /* nothing loaded */
	assert_int_equal(kexec_load(&x, m, 0, m->n_layers, 4, err, sizeof(err)), 0);
	assert_int_equal(x.in_bytes, in_bytes);
	assert_int_equal(x.out_bytes, classes * sizeof(double));
	kexec_get_caps(&x, &c);
	assert_int_equal(c.kind, KEXEC_KIND_CPU);
	assert_false(c.tail_only);
	assert_int_equal(c.max_batch, 4);
	assert_int_equal(kexec_submit(&x, in, 5, out, 9), -EINVAL); /* over max_batch */
	for (uint64_t t = 0; t < 3; t++)
		assert_int_equal(
		    kexec_submit(&x, in + t * 4 * in_bytes, 4, out + t * 4 * classes, 100 + t), 0);
	while (got < 3) {
		uint32_t k = kexec_poll(&x, d, 2);

		assert_true(k <= 2);
		for (uint32_t i = 0; i < k; i++, got++) {
			assert_int_equal(d[i].tag, 100 + got); /* FIFO */
			assert_int_equal(d[i].status, 0);
		}
	}
	assert_int_equal(kexec_poll(&x, d, 8), 0);
	assert_memory_equal(out, want, 12 * classes * sizeof(double));
	for (uint32_t i = 0; i < KEXEC_FIFO; i++)
		assert_int_equal(kexec_submit(&x, in, 1, out, i), 0);
	assert_int_equal(kexec_submit(&x, in, 1, out, 0), -EBUSY);
	assert_int_equal(kexec_poll(&x, d, 8), 8);
	assert_int_equal(kexec_submit(&x, in, 1, out, 0), 0);
	assert_int_equal(x.submitted, 3 + KEXEC_FIFO + 1);
	assert_int_equal(x.errors, 0);
	kexec_close(&x);
	free(out), free(want), free(in);
	model_free(m);
}

static void test_exec_gpu_fallback(void **state)
{
	struct test_fx *f = *state;
	struct model *m = test_model_u8_mlp(f);
	const uint32_t classes = model_classes(m);
	uint8_t *in = test_random_inputs(m, 6);
	double *want = cpu_scores(m, in, 6), *out = calloc(6 * classes, sizeof(double));
	struct kexec_caps c;
	struct kexec x;
	char err[512], why[512];
	bool gpu = kcuda_open(why, sizeof(why)) != NULL;

	assert_non_null(out);
	assert_int_equal(kexec_open(&x, &kexec_gpu_ops, NULL, err, sizeof(err)), 0);
	assert_int_equal(kexec_load(&x, m, 0, m->n_layers, 6, err, sizeof(err)), 0);
	kexec_get_caps(&x, &c);
	assert_int_equal(c.kind, KEXEC_KIND_GPU);
	assert_int_equal(kexec_run(&x, in, 6, out), 0);
	if (gpu) {
		assert_string_equal(x.note, "");
		assert_int_equal(x.fallback_reqs, 0);
		print_message("gpu executor: ran on the GPU (%s)\n", why);
	} else {
		assert_non_null(strstr(x.note, "gpu: no usable GPU ("));
		assert_non_null(strstr(x.note, why));
		assert_non_null(strstr(x.note, "run on the CPU kernels"));
		assert_int_equal(x.fallback_reqs, 6);
		assert_int_equal(kexec_run(&x, in, 2, out), 0);
		assert_int_equal(x.fallback_reqs, 8);
		print_message("gpu executor: %s\n", x.note);
	}
	/* binary layers and thresholds: exact on either */
	assert_memory_equal(out, want, 2 * classes * sizeof(double));
	kexec_close(&x);
	free(out), free(want), free(in);
	model_free(m);
}

/* The NIC part [k, n) of the bundled CNN on executor ops, against kern_forward. */
static void nic_exact(const struct kexec_ops *ops, const void *conf, uint32_t k)
{
	struct model *m = bundled("fmnist-bcnn");
	const uint32_t classes = model_classes(m), count = 5;
	uint8_t *in = test_random_inputs(m, count);
	double *want = cpu_scores(m, in, count), *out = calloc(count * classes, sizeof(double));
	struct kern_ctx *ctx = kern_ctx_create(m, count);
	void *act = calloc(count, model_shape_bytes(&m->layers[k].in));
	struct kexec_done d;
	struct kexec_caps c;
	struct kexec x;
	char err[512], want_err[64];

	assert_non_null(out);
	assert_non_null(act);
	assert_int_equal(kern_forward_range(ctx, 0, k, in, count, act), 0);
	assert_int_equal(kexec_open(&x, ops, conf, err, sizeof(err)), 0);
	assert_int_equal(kexec_load(&x, m, k - 2, m->n_layers, count, err, sizeof(err)), -EINVAL);
	snprintf(want_err, sizeof(want_err), "cannot run ops [%u, %u)", k - 2, m->n_layers);
	assert_non_null(strstr(err, want_err));
	assert_int_equal(kexec_load(&x, m, k, m->n_layers, count, err, sizeof(err)), 0);
	kexec_get_caps(&x, &c);
	assert_int_equal(c.kind, KEXEC_KIND_NIC);
	assert_true(c.tail_only);
	assert_true(c.mem_bytes > 0);
	assert_int_equal(kexec_submit(&x, act, 2, out, 7), 0);
	assert_int_equal(kexec_submit(&x, (uint8_t *)act + 2 * x.in_bytes, 3, out + 2 * classes, 8),
			 0);
	while (!kexec_poll(&x, &d, 1))
		;
	assert_int_equal(d.tag, 7);
	assert_int_equal(d.status, 0);
	while (!kexec_poll(&x, &d, 1))
		;
	assert_int_equal(d.tag, 8);
	assert_int_equal(d.status, 0);
	assert_memory_equal(out, want, count * classes * sizeof(double));
	kexec_close(&x);
	free(act), free(out), free(want), free(in);
	kern_ctx_free(ctx);
	model_free(m);
}

static void test_exec_nic_emu(void **state)
{
	const struct nicfw_exec_emu_conf conf = {.executors = 16};
	struct model *m = bundled("fmnist-bcnn");
	const uint32_t f = kexec_nic_first(m);

	(void)state;
	model_free(m);
	nic_exact(&nicfw_exec_emu_ops, &conf, f + 1); /* the first dense layer */
	nic_exact(&nicfw_exec_emu_ops, NULL, f);      /* from the flatten */
}

/* A plan's stages CPU [0, 4) -> GPU [4, k) -> NIC [k, n), k the first dense layer: the same
 * scores as kern_forward
 * (every op past 3 is exact on the GPU too). */
static void test_exec_pipe_cpu_gpu_nic(void **state)
{
	struct model *m = bundled("fmnist-bcnn");
	const uint32_t classes = model_classes(m), count = 7, k = kexec_nic_first(m) + 1;
	uint8_t *in = test_random_inputs(m, count);
	double *want = cpu_scores(m, in, count), *out = calloc(count * classes, sizeof(double));
	struct kexec_pipe p;
	char err[512], why[512];

	(void)state;
	assert_non_null(out);
	kexec_pipe_init(&p);
	assert_int_equal(kexec_pipe_add(&p, &kexec_cpu_ops, NULL, m, 0, 4, 8, err, sizeof(err)), 0);
	assert_int_equal(kexec_pipe_add(&p, &kexec_gpu_ops, NULL, m, 5, k, 8, err, sizeof(err)),
			 -EINVAL);
	assert_non_null(strstr(err, "does not start where the previous stage ended"));
	assert_int_equal(kexec_pipe_add(&p, &kexec_gpu_ops, NULL, m, 4, k, 8, err, sizeof(err)), 0);
	assert_int_equal(
	    kexec_pipe_add(&p, &nicfw_exec_emu_ops, NULL, m, k, m->n_layers, 8, err, sizeof(err)),
	    0);
	assert_int_equal(p.n, 3);
	assert_int_equal(kexec_pipe_run(&p, in, count, out), 0);
	assert_memory_equal(out, want, count * classes * sizeof(double));
	if (!kcuda_open(why, sizeof(why)))
		assert_int_equal(p.x[1].fallback_reqs, count);
	assert_true(nicfw_exec_emu_modeled_us(&p.x[2]) > 0);
	kexec_pipe_fini(&p);
	free(out), free(want), free(in);
	model_free(m);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
	    cmocka_unit_test_setup_teardown(test_exec_nic_rule, test_fx_setup, test_fx_teardown),
	    cmocka_unit_test_setup_teardown(test_exec_nic_rule_options, test_fx_setup,
					    test_fx_teardown),
	    cmocka_unit_test_setup_teardown(test_exec_cpu_fifo, test_fx_setup, test_fx_teardown),
	    cmocka_unit_test_setup_teardown(test_exec_gpu_fallback, test_fx_setup,
					    test_fx_teardown),
	    cmocka_unit_test(test_exec_nic_emu),
	    cmocka_unit_test(test_exec_pipe_cpu_gpu_nic),
	};

	test_rng_seed(0x5eed1157);
	return cmocka_run_group_tests(tests, NULL, NULL);
}
