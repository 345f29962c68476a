/* SPDX-License-Identifier: MIT */
/*
 * Platform lcore: the executor chain on DPDK lcores gives kern_forward's scores bit for bit on
 * random binary models (odd widths, u8 and BITS inputs, a host part first, a flatten of spatial
 * bits) and on the bundled MLP, for E = 1 .. 256 executors, with the executors on the worker
 * lcores (multiplexed: E contexts over the available cores) and on one inline runner; a second
 * submit while one is running is refused; as executors (exec/kexec.h), alone or several sharing
 * one platform; chains added and removed while the runners run (a removed chain's queued
 * request runs to its end before it is freed, the other chains' work is untouched). EAL runs with
 * --no-huge, its own --file-prefix and
 * --no-shconf; its runtime directory is removed at the end.
 */
#include <errno.h>
#include <limits.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include <cmocka.h>
#include <rte_eal.h>
#include <rte_lcore.h>

#include "cli/dataset.h"
#include "exec/kexec.h"
#include "kernels/kern.h"
#include "nicfw/chain.h"
#include "nicfw/lcore/lcore.h"
#include "tests/support/model_fixture.h"

#define NA(a) (sizeof(a) / sizeof((a)[0]))

static unsigned workers[RTE_MAX_LCORE];
static uint32_t n_workers;

struct lc_chain {
	struct nicfw_lcore *p;
	int idx;
};

static void *lc_open(void *arg, const struct model *m, uint32_t first, uint32_t execs)
{
	const bool inline_runner = *(const bool *)arg;
	struct lc_chain *c = calloc(1, sizeof(*c));
	char err[512];

	assert_non_null(c);
	c->p = nicfw_lcore_create(workers, inline_runner ? 0 : n_workers, err, sizeof(err));
	if (!c->p)
		fail_msg("%s", err);
	c->idx = nicfw_lcore_add(c->p, m, first, execs, err, sizeof(err));
	if (c->idx < 0)
		fail_msg("E=%u: %s", execs, err);
	if (nicfw_lcore_start(c->p, err, sizeof(err)))
		fail_msg("start: %s", err);
	return c;
}

static int lc_infer(void *h, const void *in, double *scores)
{
	struct lc_chain *c = h;

	return nicfw_lcore_infer(c->p, (uint32_t)c->idx, in, scores);
}

static void lc_close(void *h)
{
	struct lc_chain *c = h;

	nicfw_lcore_free(c->p);
	free(c);
}

/* The lcore chain against kern_forward on `count` inputs for every E in execs. */
static void expect_bit_exact(const struct model *m, const void *inputs, uint32_t count,
			     bool inline_runner, const uint32_t *execs, size_t n_execs)
{
	const struct test_nic_platform lc = {inline_runner ? "lcore (inline)" : "lcore (workers)",
					     lc_open, lc_infer, lc_close, &inline_runner};

	test_nic_expect_exact(&lc, m, inputs, count, execs, n_execs);
}

/* The chain as an executor (exec/kexec.h): two batches in flight, completions in order,
 * scores equal to kern_forward's; on the worker lcores and inline. */
static void test_lcore_executor(void **state)
{
	struct model *m = test_model_u8_mlp(*state);
	const uint32_t classes = model_classes(m);
	uint8_t *x = test_random_inputs(m, 5);
	double *want = calloc(5 * classes, sizeof(double)), *out = calloc(5 * classes, 8);
	struct kern_ctx *ctx = kern_ctx_create(m, 5);

	assert_non_null(want);
	assert_non_null(out);
	assert_int_equal(kern_forward(ctx, x, 5, want), 0);
	for (int inl = 0; inl < 2; inl++) {
		const struct nicfw_exec_lcore_conf conf = {
		    .lcores = workers, .n_lcores = inl ? 0 : n_workers, .executors = 16};
		struct kexec_done d[2];
		struct kexec_caps c;
		struct kexec e;
		uint32_t got = 0;
		char err[512];

		memset(out, 0, 5 * classes * sizeof(double));
		if (kexec_open(&e, &nicfw_exec_lcore_ops, &conf, err, sizeof(err)) ||
		    kexec_load(&e, m, 0, m->n_layers, 3, err, sizeof(err)))
			fail_msg("%s", err);
		kexec_get_caps(&e, &c);
		assert_int_equal(c.kind, KEXEC_KIND_NIC);
		assert_true(c.tail_only && c.mem_bytes > 0);
		assert_int_equal(kexec_submit(&e, x, 3, out, 30), 0);
		assert_int_equal(kexec_submit(&e, x + 3 * e.in_bytes, 2, out + 3 * classes, 20), 0);
		while (got < 2) {
			uint32_t k = kexec_poll(&e, d + got, 2 - got);

			for (uint32_t i = 0; i < k; i++)
				assert_int_equal(d[got + i].status, 0);
			got += k;
		}
		assert_int_equal(d[0].tag, 30);
		assert_int_equal(d[1].tag, 20);
		assert_memory_equal(out, want, 5 * classes * sizeof(double));
		kexec_close(&e);
	}
	kern_ctx_free(ctx);
	free(out), free(want), free(x);
	model_free(m);
}

/* Two executors on one platform the caller shares (splitnic-nic's models): each adds its chain,
 * the caller starts the runners (and drives the inline one); interleaved batches complete in
 * order with kern_forward's scores; closing them leaves the platform to its owner. */
static void test_lcore_shared_platform(void **state)
{
	struct model *m = test_model_u8_mlp(*state);
	const uint32_t classes = model_classes(m);
	uint8_t *x = test_random_inputs(m, 4);
	double *want = calloc(4 * classes, sizeof(double)), *out = calloc(4 * classes, 8);
	struct kern_ctx *ctx = kern_ctx_create(m, 4);

	assert_non_null(want);
	assert_non_null(out);
	assert_int_equal(kern_forward(ctx, x, 4, want), 0);
	for (int inl = 0; inl < 2; inl++) {
		struct kexec e[2];
		struct kexec_done d;
		uint32_t got[2] = {0, 0};
		char err[512];
		struct nicfw_lcore *p =
		    nicfw_lcore_create(workers, inl ? 0 : n_workers, err, sizeof(err));
		const struct nicfw_exec_lcore_conf conf = {.executors = 8, .platform = p};

		if (!p)
			fail_msg("%s", err);
		memset(out, 0, 4 * classes * sizeof(double));
		for (int k = 0; k < 2; k++)
			if (kexec_open(&e[k], &nicfw_exec_lcore_ops, &conf, err, sizeof(err)) ||
			    kexec_load(&e[k], m, 0, m->n_layers, 1, err, sizeof(err)))
				fail_msg("%s", err);
		if (nicfw_lcore_start(p, err, sizeof(err)))
			fail_msg("start: %s", err);
		for (int i = 0; i < 4; i++) /* requests 0, 2 on e[0]; 1, 3 on e[1] */
			assert_int_equal(kexec_submit(&e[i & 1], x + i * e[0].in_bytes, 1,
						      out + i * classes, (uint64_t)i),
					 0);
		while (got[0] + got[1] < 4) {
			if (inl)
				nicfw_lcore_run(p, 64);
			for (int k = 0; k < 2; k++)
				if (kexec_poll(&e[k], &d, 1)) {
					assert_int_equal(d.status, 0);
					assert_int_equal(d.tag, 2 * got[k] + (uint32_t)k);
					got[k]++;
				}
		}
		assert_memory_equal(out, want, 4 * classes * sizeof(double));
		kexec_close(&e[0]);
		kexec_close(&e[1]);
		nicfw_lcore_free(p);
	}
	kern_ctx_free(ctx);
	free(out), free(want), free(x);
	model_free(m);
}

/* u8 MLP, widths 63, 130, 1000, 1, executors on the worker lcores; E = 1 .. 256. */
static void test_lcore_u8_mlp_workers(void **state)
{
	static const uint32_t execs[] = {1, 2, 3, 7, 64, 255, 256};
	struct model *m = test_model_u8_mlp(*state);
	void *x = test_random_inputs(m, 4);

	print_message("%u worker lcore(s); E = 1 .. 256 multiplexed over them\n", n_workers);
	expect_bit_exact(m, x, 4, false, execs, NA(execs));
	free(x);
	model_free(m);
}

/* The same on one inline runner (the caller's own thread drives the chain). */
static void test_lcore_u8_mlp_inline(void **state)
{
	static const uint32_t execs[] = {1, 5, 256};
	struct model *m = test_model_u8_mlp(*state);
	void *x = test_random_inputs(m, 3);

	expect_bit_exact(m, x, 3, true, execs, NA(execs));
	free(x);
	model_free(m);
}

/* Float input, sign on the host; BITS into the NIC; a thresholded last layer. */
static void test_lcore_bits_input(void **state)
{
	static const uint32_t execs[] = {1, 2, 63, 256};
	struct model *m = test_model_bits_in(*state);
	void *x = test_random_inputs(m, 4);

	expect_bit_exact(m, x, 4, false, execs, NA(execs));
	free(x);
	model_free(m);
}

/* Binary conv on the host, then a flatten of (5,6,6) channel-packed bits on the NIC (the
 * dispatcher's repacking) and dense layers of 65 and 10: slices that start inside a word. */
static void test_lcore_flatten_bits(void **state)
{
	static const uint32_t execs[] = {1, 3, 64, 256};
	struct model *m = test_model_conv_flat(*state);
	void *x;

	assert_int_equal(m->layers[kexec_nic_first(m)].op, MODEL_OP_FLATTEN);
	x = test_random_inputs(m, 4);
	expect_bit_exact(m, x, 4, false, execs, NA(execs));
	free(x);
	model_free(m);
}

/* One inference at a time per chain: a second submit is refused until the first is polled. */
static void test_lcore_busy(void **state)
{
	struct model *m = test_model_u8_mlp(*state);
	uint8_t *x = test_random_inputs(m, 1);
	double scores[1];
	char err[256];
	struct nicfw_lcore *p = nicfw_lcore_create(workers, 0, err, sizeof(err));

	assert_non_null(p);
	assert_int_equal(nicfw_lcore_add(p, m, 0, 4, err, sizeof(err)), 0);
	assert_int_equal(nicfw_lcore_add(p, m, 0, 0, err, sizeof(err)), -EINVAL);
	assert_int_equal(nicfw_lcore_start(p, err, sizeof(err)), 0);
	assert_int_equal(nicfw_lcore_submit(p, 0, x), 0);
	assert_int_equal(nicfw_lcore_submit(p, 0, x), -EBUSY);
	assert_int_equal(nicfw_lcore_poll(p, 0, scores), 0);
	while (!nicfw_lcore_poll(p, 0, scores))
		nicfw_lcore_run(p, 16);
	assert_int_equal(nicfw_lcore_submit(p, 0, x), 0);
	nicfw_lcore_free(p);
	free(x);
	model_free(m);
}

/* Every request of chain `chain` against want (classes each) until `count` have been compared;
 * the inline runner run meanwhile. */
static void expect_chain(struct nicfw_lcore *p, uint32_t chain, const uint8_t *x, size_t in_bytes,
			 const double *want, uint32_t classes, uint32_t count)
{
	double got[16];

	assert_true(classes <= 16);
	for (uint32_t i = 0; i < count; i++) {
		assert_int_equal(nicfw_lcore_infer(p, chain, x + i * in_bytes, got), 0);
		assert_memory_equal(got, want + i * classes, classes * sizeof(double));
	}
}

/* Chains added to running runners and removed with a request queued, round after round, while a
 * chain added before start goes on answering: each new chain gives kern_forward's scores on
 * the runners of a chain added at start (its handlers counted there), a removal with a request
 * still queued waits for it (-EBUSY, reclaim counting it) and frees the chain after, and the
 * slot is used again. Inline: the queued request provably waits in the ring until the runner is
 * run; on the worker lcores the rounds race the runners (ASan sees any use after free). */
static void test_lcore_add_remove_running(void **state)
{
	static const uint32_t execs[] = {1, 3, 16, 256};
	struct model *m = test_model_u8_mlp(*state);
	const uint32_t classes = model_classes(m), count = 4;
	uint8_t *x = test_random_inputs(m, count);
	double *want = calloc(count * classes, sizeof(double)), got[16];
	struct kern_ctx *ctx = kern_ctx_create(m, count);
	size_t in_bytes;

	assert_non_null(want);
	assert_int_equal(kern_forward(ctx, x, count, want), 0);
	for (int inl = 0; inl < 2; inl++) {
		char err[512];
		struct nicfw_lcore *p =
		    nicfw_lcore_create(workers, inl ? 0 : n_workers, err, sizeof(err));
		unsigned lc0[NICFW_LCORE_MAX_RUNNERS], lc[NICFW_LCORE_MAX_RUNNERS];
		uint64_t h0, h;
		uint32_t nl0, nl;
		int a, b;

		assert_non_null(p);
		a = nicfw_lcore_add(p, m, 0, 16, err, sizeof(err));
		assert_int_equal(a, 0);
		in_bytes = nicfw_lcore_chain(p, 0)->in_bytes;
		assert_int_equal(nicfw_lcore_start(p, err, sizeof(err)), 0);
		expect_chain(p, (uint32_t)a, x, in_bytes, want, classes, count);
		nl0 = nicfw_lcore_where(p, (uint32_t)a, lc0, &h0);
		assert_true(nl0 >= 1 && h0 > 0);
		for (uint32_t round = 0; round < (inl ? 8u : 200u); round++) {
			const uint32_t e = execs[round % NA(execs)];
			int ret;

			b = nicfw_lcore_add(p, m, 0, e, err, sizeof(err));
			if (b < 0)
				fail_msg("round %u: add on running runners: %s", round, err);
			assert_int_equal(b, 1); /* the slot removed last round, free again */
			nl = nicfw_lcore_where(p, (uint32_t)b, lc, &h);
			assert_int_equal(h, 0);
			expect_chain(p, (uint32_t)b, x, in_bytes, want, classes, count);
			nl = nicfw_lcore_where(p, (uint32_t)b, lc, &h);
			assert_true(h > 0);
			if (e == 16) { /* the same spread as the chain added at start */
				assert_int_equal(nl, nl0);
				assert_memory_equal(lc, lc0, nl * sizeof(lc[0]));
			}
			/* a's request and b's queued; b removed before it is polled */
			assert_int_equal(nicfw_lcore_submit(p, (uint32_t)a, x + in_bytes), 0);
			assert_int_equal(nicfw_lcore_submit(p, (uint32_t)b, x), 0);
			ret = nicfw_lcore_remove(p, (uint32_t)b);
			if (inl) {
				assert_int_equal(ret, -EBUSY);
				assert_int_equal(nicfw_lcore_reclaim(p), 1);
			} else {
				assert_true(ret == 0 || ret == -EBUSY);
			}
			assert_int_equal(nicfw_lcore_remove(p, (uint32_t)b), -EINVAL);
			while (!nicfw_lcore_poll(p, (uint32_t)a, got))
				nicfw_lcore_run(p, 16);
			assert_memory_equal(got, want + classes, classes * sizeof(double));
			while (nicfw_lcore_reclaim(p))
				nicfw_lcore_run(p, 16);
		}
		expect_chain(p, (uint32_t)a, x, in_bytes, want, classes, count);
		nicfw_lcore_free(p);
	}
	kern_ctx_free(ctx);
	free(want), free(x);
	model_free(m);
}

/* The grace period: a chain removed with no request held is still not freed while the runner
 * has not passed a quiescent point since (inline: until nicfw_lcore_run returns again). */
static void test_lcore_remove_grace(void **state)
{
	struct model *m = test_model_u8_mlp(*state);
	uint8_t *x = test_random_inputs(m, 1);
	double scores[16];
	char err[256];
	struct nicfw_lcore *p = nicfw_lcore_create(workers, 0, err, sizeof(err));

	assert_non_null(p);
	assert_int_equal(nicfw_lcore_add(p, m, 0, 4, err, sizeof(err)), 0);
	assert_int_equal(nicfw_lcore_start(p, err, sizeof(err)), 0);
	assert_int_equal(nicfw_lcore_infer(p, 0, x, scores), 0);
	assert_int_equal(nicfw_lcore_remove(p, 0), -EBUSY);
	assert_int_equal(nicfw_lcore_reclaim(p), 1);
	assert_int_equal(nicfw_lcore_add(p, m, 0, 4, err, sizeof(err)), 1);
	assert_int_equal(nicfw_lcore_run(p, 16), 0);
	assert_int_equal(nicfw_lcore_reclaim(p), 0);
	assert_int_equal(nicfw_lcore_add(p, m, 0, 4, err, sizeof(err)), 0);
	assert_int_equal(nicfw_lcore_infer(p, 0, x, scores), 0);
	nicfw_lcore_free(p);
	free(x);
	model_free(m);
}

/* A removed chain whose request was queued on a stopped platform is freed at once (no runner
 * can reach it); a chain removed before start too. */
static void test_lcore_remove_stopped(void **state)
{
	struct model *m = test_model_u8_mlp(*state);
	uint8_t *x = test_random_inputs(m, 1);
	char err[256];
	struct nicfw_lcore *p = nicfw_lcore_create(workers, n_workers, err, sizeof(err));

	assert_non_null(p);
	assert_int_equal(nicfw_lcore_add(p, m, 0, 4, err, sizeof(err)), 0);
	assert_int_equal(nicfw_lcore_remove(p, 0), 0);
	assert_int_equal(nicfw_lcore_remove(p, 0), -EINVAL);
	assert_int_equal(nicfw_lcore_add(p, m, 0, 4, err, sizeof(err)), 0);
	assert_int_equal(nicfw_lcore_start(p, err, sizeof(err)), 0);
	nicfw_lcore_stop(p);
	assert_int_equal(nicfw_lcore_submit(p, 0, x), 0); /* queued, never run */
	assert_int_equal(nicfw_lcore_remove(p, 0), 0);
	assert_int_equal(nicfw_lcore_reclaim(p), 0);
	nicfw_lcore_free(p);
	free(x);
	model_free(m);
}

/* Executors on a shared, running platform come and go: one closed with batches queued (its
 * chain removed, freed once its request is done), the other's batches all complete with
 * kern_forward's scores, and a new executor loaded on the running runners serves. */
static void test_lcore_executor_reload(void **state)
{
	struct model *m = test_model_u8_mlp(*state);
	const uint32_t classes = model_classes(m);
	uint8_t *x = test_random_inputs(m, 4);
	double *want = calloc(4 * classes, sizeof(double)), *out = calloc(12 * classes, 8);
	struct kern_ctx *ctx = kern_ctx_create(m, 4);

	assert_non_null(want);
	assert_non_null(out);
	assert_int_equal(kern_forward(ctx, x, 4, want), 0);
	for (int inl = 0; inl < 2; inl++) {
		char err[512];
		struct nicfw_lcore *p =
		    nicfw_lcore_create(workers, inl ? 0 : n_workers, err, sizeof(err));
		const struct nicfw_exec_lcore_conf conf = {.executors = 8, .platform = p};
		struct kexec e[3];
		struct kexec_done d;
		uint32_t got = 0;

		assert_non_null(p);
		for (int k = 0; k < 2; k++)
			if (kexec_open(&e[k], &nicfw_exec_lcore_ops, &conf, err, sizeof(err)) ||
			    kexec_load(&e[k], m, 0, m->n_layers, 4, err, sizeof(err)))
				fail_msg("%s", err);
		assert_int_equal(nicfw_lcore_start(p, err, sizeof(err)), 0);
		memset(out, 0, 12 * classes * sizeof(double));
		assert_int_equal(kexec_submit(&e[0], x, 4, out, 0), 0);
		assert_int_equal(kexec_submit(&e[1], x, 4, out + 4 * classes, 1), 0);
		assert_int_equal(kexec_submit(&e[1], x, 4, out + 4 * classes, 2), 0);
		kexec_close(&e[1]); /* a request on its chain, a batch queued: its chain removed */
		if (kexec_open(&e[2], &nicfw_exec_lcore_ops, &conf, err, sizeof(err)) ||
		    kexec_load(&e[2], m, 0, m->n_layers, 4, err, sizeof(err)))
			fail_msg("load on running runners: %s", err);
		assert_int_equal(kexec_submit(&e[2], x, 4, out + 8 * classes, 3), 0);
		while (got < 2) {
			if (inl)
				nicfw_lcore_run(p, 64);
			for (int k = 0; k < 3; k += 2)
				if (kexec_poll(&e[k], &d, 1)) {
					assert_int_equal(d.status, 0);
					assert_int_equal(d.tag, k ? 3 : 0);
					got++;
				}
		}
		assert_memory_equal(out, want, 4 * classes * sizeof(double));
		assert_memory_equal(out + 8 * classes, want, 4 * classes * sizeof(double));
		while (nicfw_lcore_reclaim(p))
			nicfw_lcore_run(p, 64);
		kexec_close(&e[0]);
		kexec_close(&e[2]);
		nicfw_lcore_free(p);
	}
	kern_ctx_free(ctx);
	free(out), free(want), free(x);
	model_free(m);
}

/* The bundled binary MLP on Fashion-MNIST test images. */
static void test_lcore_bundled_mlp(void **state)
{
	static const uint32_t execs[] = {1, 16, 256};
	struct model *m = test_bundled_mlp();
	uint32_t count = 64;
	void *x = test_fmnist_inputs(m, &count);

	expect_bit_exact(m, x, count, false, execs, NA(execs));
	free(x);
	model_free(m);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
	    cmocka_unit_test_setup_teardown(test_lcore_u8_mlp_workers, test_fx_setup,
					    test_fx_teardown),
	    cmocka_unit_test_setup_teardown(test_lcore_u8_mlp_inline, test_fx_setup,
					    test_fx_teardown),
	    cmocka_unit_test_setup_teardown(test_lcore_bits_input, test_fx_setup, test_fx_teardown),
	    cmocka_unit_test_setup_teardown(test_lcore_flatten_bits, test_fx_setup,
					    test_fx_teardown),
	    cmocka_unit_test_setup_teardown(test_lcore_busy, test_fx_setup, test_fx_teardown),
	    cmocka_unit_test(test_lcore_bundled_mlp),
	    cmocka_unit_test_setup_teardown(test_lcore_executor, test_fx_setup, test_fx_teardown),
	    cmocka_unit_test_setup_teardown(test_lcore_shared_platform, test_fx_setup,
					    test_fx_teardown),
	    cmocka_unit_test_setup_teardown(test_lcore_add_remove_running, test_fx_setup,
					    test_fx_teardown),
	    cmocka_unit_test_setup_teardown(test_lcore_remove_grace, test_fx_setup,
					    test_fx_teardown),
	    cmocka_unit_test_setup_teardown(test_lcore_remove_stopped, test_fx_setup,
					    test_fx_teardown),
	    cmocka_unit_test_setup_teardown(test_lcore_executor_reload, test_fx_setup,
					    test_fx_teardown),
	};
	char prefix[64], lcores[32], rundir[PATH_MAX];
	long ncpu = sysconf(_SC_NPROCESSORS_ONLN);
	char *eal[] = {"test_lcore", "-l",	    lcores,	      "--no-huge",
		       "-m",	     "512",	    "--no-pci",	      "--file-prefix",
		       prefix,	     "--no-shconf", "--no-telemetry", "--log-level=3"};
	unsigned l;
	int ret;

	snprintf(prefix, sizeof(prefix), "sntestlc%d", (int)getpid());
	snprintf(lcores, sizeof(lcores), "0-%ld", ncpu > 1 ? (ncpu < 64 ? ncpu - 1 : 63) : 1);
	if (rte_eal_init((int)NA(eal), eal) < 0) {
		fprintf(stderr, "test_lcore: rte_eal_init failed\n");
		return 1;
	}
	RTE_LCORE_FOREACH_WORKER(l)
	{
		workers[n_workers++] = l;
	}
	ret = cmocka_run_group_tests(tests, NULL, NULL);
	snprintf(rundir, sizeof(rundir), "%s", rte_eal_get_runtime_dir());
	rte_eal_cleanup();
	rmdir(rundir);
	return ret;
}
