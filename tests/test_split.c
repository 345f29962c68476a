// SPDX-License-Identifier: MIT
/*
 * split/: analysis against Caffe's AlexNet, the planner against exhaustive search, the queueing
 * formulas against M/M/1's exact ones, the planner under load against every single split, the
 * wire.
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

#include "dpdk/idle_policy.h"
#include "exec/kexec.h"
#include "kernels/kern_ops.h"
#include "split/split.h"
#include "tests/support/model_fixture.h"

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

/*
 * The NIC's part of an architecture is where the compiler's ops let kexec_nic_first start it:
 * each first NIC layer below is what the converted model (weights from `splitnic gen`) gives.
 */
static const struct {
	const char *json;
	uint32_t nic_first; /* first NIC-runnable layer; the layer count: none */
} nic_cases[] = {
    /* the sign after the first dense folds into it: the flatten of its bits enters the NIC */
    {"{\"input\":{\"shape\":[2,6,6],\"dtype\":\"f32\"},\"layers\":[{\"type\":\"dense\",\"out\":"
     "100,\"binary_weights\":true},{\"type\":\"sign\"},{\"type\":\"flatten\"},{\"type\":"
     "\"dense\",\"out\":10,\"binary_weights\":true},{\"type\":\"sign\"}]}",
     3},
    /* a flatten of a flat vector is no op: the NIC starts at the dense */
    {"{\"input\":{\"shape\":[64,1,1],\"dtype\":\"u8\"},\"layers\":[{\"type\":\"flatten\"},"
     "{\"type\":\"dense\",\"out\":3,\"binary_weights\":true,\"bias\":true}]}",
     1},
    /* biases fold with the signs; the trailing flatten is no op, the batch-norm a float op */
    {"{\"input\":{\"shape\":[64,1,1],\"dtype\":\"u8\"},\"layers\":[{\"type\":\"flatten\"},"
     "{\"type\":\"dense\",\"out\":200,\"binary_weights\":true,\"bias\":true},{\"type\":"
     "\"sign\"},{\"type\":\"dense\",\"out\":100,\"binary_weights\":true,\"bias\":true},"
     "{\"type\":\"flatten\"},{\"type\":\"batchnorm\"}]}",
     1},
    /* a sign of bits is no op: the whole model */
    {"{\"input\":{\"shape\":[64,1,1],\"dtype\":\"u8\"},\"layers\":[{\"type\":\"dense\",\"out\""
     ":200,\"binary_weights\":true},{\"type\":\"sign\"},{\"type\":\"flatten\"},{\"type\":"
     "\"flatten\"},{\"type\":\"sign\"},{\"type\":\"sign\"}]}",
     0},
    /* the f32 input's sign is a host op; the dense after it reads its bits */
    {"{\"input\":{\"shape\":[1,28,28],\"dtype\":\"f32\"},\"layers\":[{\"type\":\"batchnorm\"},"
     "{\"type\":\"sign\"},{\"type\":\"dense\",\"out\":10,\"binary_weights\":true},{\"type\":"
     "\"flatten\"}]}",
     2},
    /* a dense on the u8 max-pool's float output is a float dense */
    {"{\"input\":{\"shape\":[3,8,8],\"dtype\":\"u8\"},\"layers\":[{\"type\":\"maxpool\","
     "\"kernel\":2},{\"type\":\"dense\",\"out\":200,\"binary_weights\":true},{\"type\":"
     "\"sign\"}]}",
     3},
    /* the compiler refuses a conv on a flat vector: no executor runs it, the NIC none */
    {"{\"input\":{\"shape\":[1,28,28],\"dtype\":\"f32\"},\"layers\":[{\"type\":\"dense\","
     "\"out\":64,\"binary_weights\":true},{\"type\":\"conv\",\"out\":8,\"kernel\":1,"
     "\"binary_weights\":true},{\"type\":\"sign\"},{\"type\":\"dense\",\"out\":64,"
     "\"binary_weights\":true}]}",
     4},
};

static void test_analyze_nic_as_compiled(void **state)
{
	char path[] = "/tmp/test_split_XXXXXX", err[256];
	struct split_arch a;

	(void)state;
	for (size_t i = 0; i < sizeof(nic_cases) / sizeof(nic_cases[0]); i++) {
		int fd = mkstemp(path);
		FILE *fp = fd >= 0 ? fdopen(fd, "w") : NULL;

		assert_non_null(fp);
		fputs(nic_cases[i].json, fp);
		fclose(fp);
		if (split_arch_load(path, &a, err, sizeof(err)))
			fail_msg("case %zu: %s", i, err);
		unlink(path);
		strcpy(path, "/tmp/test_split_XXXXXX");
		for (uint32_t k = 0; k < a.n; k++)
			if (!(a.l[k].exec_mask & SPLIT_EXM(SPLIT_EX_NIC)) !=
			    (k < nic_cases[i].nic_first))
				fail_msg("case %zu: layer %u %s NIC-runnable", i, k,
					 k < nic_cases[i].nic_first ? "is" : "is not");
		split_arch_free(&a);
	}
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

static int profile_from(const char *text, size_t len, struct split_profile *p, char *err,
			size_t errlen)
{
	FILE *f = fmemopen((void *)text, len, "r");
	int ret;

	assert_non_null(f);
	ret = split_profile_read(f, "t.profile", p, err, errlen);
	fclose(f);
	return ret;
}

/*
 * fuzz_profile: "nic.mem_bytes = 0x1p200" was accepted and the planner's conversion of it to
 * u64 was undefined behaviour; a zero link rate or payload divided by zero. Every key now has a
 * range from its unit; a line is never split in two, a key is never given twice.
 */
static void test_profile_rejects(void **state)
{
	static const struct {
		const char *text, *want;
	} cases[] = {
	    {"nic.mem_bytes = 0x1p200\n", "t.profile:1: bad value for nic.mem_bytes"},
	    {"# x\ngpu.mem_bytes = 1e300\n", "t.profile:2: bad value for gpu.mem_bytes"},
	    {"cpu.cache_bytes = 1.5\n", "need a whole number"},
	    {"link.gbps = 0\n", "bad value for link.gbps"},
	    {"cpu.f64_macs = 0\n", "bad value for cpu.f64_macs"},
	    {"link.payload = 50\n", "bad value for link.payload"},
	    {"link.payload = 70000\n", "bad value for link.payload"},
	    {"gpu.present = 0.5\n", "bad value for gpu.present"},
	    {"cpu.op_s = -1e-9\n", "bad value for cpu.op_s"},
	    {"cpu.op_s = nan\n", "bad value for cpu.op_s"},
	    {"cpu.op_s = 1e-6\ncpu.op_s = 2e-6\n", "t.profile:2: cpu.op_s given twice"},
	    {"cpu.ops = 1\n", "t.profile:1: unknown key \"cpu.ops\""},
	    {"host.queue = 0\n", "bad value for host.queue"},
	    {"nic.window = 2.5\n", "need a whole number"},
	    {"cpu.op_s 1\n", "t.profile:1: expected key = value"},
	};
	struct split_profile p;
	char err[256], text[1024];
	size_t n;

	(void)state;
	for (size_t i = 0; i < sizeof(cases) / sizeof(cases[0]); i++) {
		err[0] = 0;
		if (profile_from(cases[i].text, strlen(cases[i].text), &p, err, sizeof(err)) !=
			-EINVAL ||
		    !strstr(err, cases[i].want))
			fail_msg("\"%s\": \"%s\", expected \"%s\"", cases[i].text, err,
				 cases[i].want);
	}
	/* A comment longer than a line: its tail is not a line of its own. */
	n = (size_t)snprintf(text, sizeof(text), "# %0600d cpu.op_s = 5\n", 0);
	assert_int_equal(profile_from(text, n, &p, err, sizeof(err)), -EINVAL);
	assert_non_null(strstr(err, "t.profile:1: line longer than"));
	/* Bytes after a NUL were silently ignored. */
	memcpy(text, "cpu.op_s = 1e-6\0 junk\n", 22);
	assert_int_equal(profile_from(text, 22, &p, err, sizeof(err)), -EINVAL);
	assert_non_null(strstr(err, "t.profile:1: NUL byte"));
	/* What split_profile_save writes (the defaults) reads back. */
	split_profile_default(&p);
	assert_int_equal(split_profile_save("build/test_split.profile", &p, "test"), 0);
	assert_int_equal(split_profile_load("build/test_split.profile", &p, err, sizeof(err)), 0);
	assert_int_equal(p.v[SPLIT_P_PAYLOAD], 1400);
	assert_int_equal(profile_from("link.payload = 9000 # jumbo\n", 28, &p, err, sizeof(err)),
			 0);
	assert_int_equal(p.v[SPLIT_P_PAYLOAD], 9000);
	remove("build/test_split.profile");
}

static int plan_from(const char *text, size_t len, struct split_plan *plan, char *err,
		     size_t errlen)
{
	/* A model validated from memory: its hash is FNV-1a of no bytes. */
	static const struct model m = {.name = "t", .n_layers = 3};
	FILE *f = fmemopen((void *)text, len ? len : 1, "r");
	int ret;

	assert_non_null(f);
	if (!len) /* fmemopen takes no empty buffer: read its one byte first */
		fgetc(f);
	ret = split_plan_read(f, "t.plan", &m, plan, err, errlen);
	fclose(f);
	return ret;
}

/*
 * The plan file: records are whole lines, each checked to its end; "predicted_us nan" and
 * unknown objectives were accepted, a long line was read as two.
 */
static void test_plan_file_rejects(void **state)
{
#define PLAN_HEAD "splitnic-plan 1\nmodel t cbf29ce484222325 3\n"
	static const struct {
		const char *text, *want;
	} cases[] = {
	    {PLAN_HEAD "predicted_us nan\nstage cpu 0 3 -\n", "t.plan:3: expected a finite"},
	    {PLAN_HEAD "predicted_us -1\nstage cpu 0 3 -\n", "t.plan:3: expected a finite"},
	    {PLAN_HEAD "objective fastest\nstage cpu 0 3 -\n", "t.plan:3: expected objective"},
	    {PLAN_HEAD "load_rps -5\nstage cpu 0 3 -\n", "t.plan:3: expected a finite"},
	    {PLAN_HEAD "load_rps 5\nload_rps 5\n", "t.plan:4: load_rps given twice"},
	    {PLAN_HEAD "measured_p50_us 5\nmeasured_p50_us 5\n",
	     "t.plan:4: measured_p50_us given twice"},
	    {PLAN_HEAD "measured_answered x\nstage cpu 0 3 -\n", "t.plan:3: expected a finite"},
	    {PLAN_HEAD "link_gbps 10 20\nstage cpu 0 3 -\n", "t.plan:3: expected a finite"},
	    {PLAN_HEAD "model t cbf29ce484222325 3\n", "t.plan:3: model given twice"},
	    {PLAN_HEAD "stage cpu 0 3 - extra\n", "t.plan:3: expected stage"},
	    {PLAN_HEAD "stage tpu 0 3 -\n", "t.plan:3: executor \"tpu\" unknown"},
	    {PLAN_HEAD "stage cpu 0 3 f16\n", "t.plan:3: format \"f16\" unknown"},
	    {PLAN_HEAD "stage cpu 0 1 -\nstage nic 2 3 bits\n", "stage 1 does not continue"},
	    {PLAN_HEAD "stage cpu 0 2 -\n", "stage 0 does not continue"},
	    {PLAN_HEAD "objective latency\n", "t.plan: no stages"},
	    {"splitnic-plan 1junk\n", "t.plan:1: not a splitnic-plan 1 file"},
	    {"splitnic-plan 1\nmodel t cbf29ce484222325 4\nstage cpu 0 4 -\n", "another model"},
	    {"", "t.plan: empty"},
	};
	struct split_plan plan;
	char err[256], text[1024];
	size_t n;

	(void)state;
	for (size_t i = 0; i < sizeof(cases) / sizeof(cases[0]); i++) {
		err[0] = 0;
		if (plan_from(cases[i].text, strlen(cases[i].text), &plan, err, sizeof(err)) !=
			-EINVAL ||
		    !strstr(err, cases[i].want))
			fail_msg("\"%s\": \"%s\", expected \"%s\"", cases[i].text, err,
				 cases[i].want);
	}
	n = (size_t)snprintf(text, sizeof(text), PLAN_HEAD "objective latency%0300d\n", 0);
	assert_int_equal(plan_from(text, n, &plan, err, sizeof(err)), -EINVAL);
	assert_non_null(strstr(err, "t.plan:3: line longer than"));
	memcpy(text, PLAN_HEAD "stage cpu 0 3 -\0\n", sizeof(PLAN_HEAD) + 16);
	assert_int_equal(plan_from(text, sizeof(PLAN_HEAD) + 16, &plan, err, sizeof(err)), -EINVAL);
	assert_non_null(strstr(err, "t.plan:3: NUL byte"));
	n = (size_t)snprintf(text, sizeof(text),
			     PLAN_HEAD
			     "objective p99\r\nlink_gbps 2.5\nload_rps 3000\npredicted_us "
			     "12.5\nmeasured_p50_us 11.5\nmeasured_p99_us 40\nmeasured_answered "
			     "0.995\nstage cpu 0 1 -\nstage nic 1 3 bits\n");
	assert_int_equal(plan_from(text, n, &plan, err, sizeof(err)), 0);
	assert_int_equal(plan.n_stages, 2);
	assert_int_equal(plan.stage[1].exec, SPLIT_EX_NIC);
	assert_true(fabs(plan.cost - 12.5e-6) < 1e-15);
#undef PLAN_HEAD
}

/* ---- under load -------------------------------------------------------------------------- */

static void test_queue_formulas(void **state)
{
	const struct split_server d = {.name = "d", .s = 100e-6},
				  b = {.name = "b", .s = 100e-6, .cap = 8};
	const struct split_server mm = {.name = "m", .s = 100e-6, .cs2 = 1};

	(void)state;
	/* M/D/1 at rho 0.5: rho s / (2 (1 - rho)) = 50 us */
	assert_true(fabs(split_wait_mean(&d, 5000) - 50e-6) < 1e-12);
	assert_true(split_wait_mean(&d, 0) == 0);
	/* no wait below rho = 1 - q */
	assert_true(split_wait_quantile(&d, 4000, 0.5) == 0);
	assert_true(split_wait_quantile(&d, 4000, 0.99) > 0);
	/* M/M/1 exactly: P(W > t) = rho exp(-(mu - lambda) t) */
	for (double rps = 1000; rps < 9900; rps += 1700) {
		const double rho = rps * 100e-6, mu = 1e4;

		assert_true(fabs(split_wait_mean(&mm, rps) - rho / (mu - rps)) < 1e-12);
		if (rho > 0.01)
			assert_true(fabs(split_wait_quantile(&mm, rps, 0.99) -
					 log(rho / 0.01) / (mu - rps)) < 1e-12);
	}
	/* overload: unbounded is infinite, a bounded queue stays full */
	assert_true(isinf(split_wait_mean(&d, 20000)));
	assert_true(fabs(split_wait_mean(&b, 20000) - 7 * 100e-6) < 1e-15);
	assert_true(fabs(split_wait_quantile(&b, 20000, 0.5) - 7 * 100e-6) < 1e-15);
	/* the bound caps the waits below saturation too */
	assert_true(split_wait_quantile(&b, 9990, 0.99) <= 7 * 100e-6 + 1e-15);
}

static void test_queue_pipeline(void **state)
{
	struct split_pipeline pl = {.n = 2, .fixed = 10e-6};
	struct split_load_pred p;
	struct split_profile pr;

	(void)state;
	pl.srv[0] = (struct split_server){.name = "a", .s = 100e-6, .cap = 64};
	pl.srv[1] = (struct split_server){.name = "b", .s = 50e-6, .cap = 64};
	split_pipeline_predict(&pl, 0, &p);
	assert_true(fabs(p.p50 - 160e-6) < 1e-12 && fabs(p.p99 - 160e-6) < 1e-12);
	assert_true(fabs(p.throughput - 1e4) < 1e-6);
	assert_int_equal(p.bottleneck, 0);
	split_pipeline_predict(&pl, 5000, &p);
	assert_true(fabs(p.mean - (160e-6 + 50e-6 + 0.25 * 50e-6 / 1.5)) < 1e-12);
	assert_true(p.p50 >= 160e-6 && p.p99 > p.p50 && p.throughput == 5000);
	split_pipeline_predict(&pl, 30000, &p);
	assert_true(fabs(p.throughput - 1e4) < 1e-6 && p.rho_max > 1);
	assert_true(fabs(p.p50 - (160e-6 + 63 * 100e-6 + 63 * 50e-6)) < 1e-12);

	/* the packet path's fallback (the default curves: the fluid limit past saturation): a NIC
	 * offered rho 3 turns 2/3 of the requests back to the host, whose path then holds the
	 * median; the p99 waits in the NIC's full window (the window's round trip, the NIC's 32
	 * services plus the host's turn, leaves a little less than 1/3 to the NIC) */
	split_profile_default(&pr);
	pl = (struct split_pipeline){.n = 2, .fixed = 10e-6, .pr = &pr};
	pl.srv[0] = (struct split_server){
	    .name = "host", .s = 50e-6, .own = 50e-6, .cap = 64, .kind = SPLIT_SRV_HOST};
	pl.srv[1] = (struct split_server){
	    .name = "nic", .s = 1000e-6, .own = 1000e-6, .cap = 32, .kind = SPLIT_SRV_NIC};
	pl.fb.on = true;
	pl.fb.host = 0;
	pl.fb.nic = 1;
	pl.fb.s_back = pl.fb.own_back = 100e-6;
	split_pipeline_predict(&pl, 3000, &p);
	assert_true(p.fallback >= 2.0 / 3 - 1e-9 && p.fallback < 2.0 / 3 + 2e-3);
	assert_true(fabs(p.by_nic + p.fallback - 1) < 1e-9 && fabs(p.answered - 1) < 1e-9);
	assert_true(p.p50 > 160e-6 && p.p50 < 400e-6);
	assert_true(p.p99 > 30e-3 && p.p99 < 70e-3);
	assert_true(fabs(p.throughput - 3000) < 1e-6 && fabs(p.rho_max - 3) < 1e-6);
	/* below the NIC's saturation nothing falls back, and the waits rise with the load */
	split_pipeline_predict(&pl, 500, &p);
	assert_true(p.fallback < 1e-6 && p.p50 >= 1060e-6 && p.p50 < 2000e-6);
	{
		struct split_load_pred q;

		split_pipeline_predict(&pl, 800, &q);
		assert_true(q.p50 > p.p50 && q.p99 > p.p99);
	}
	/* a link down to the NIC past its rate: the host's window fills and the host answers the
	 * excess (fallen back, not lost); without the fallback the link drops it */
	pl = (struct split_pipeline){.n = 3, .fixed = 10e-6, .pr = &pr};
	pl.srv[0] = (struct split_server){
	    .name = "host", .s = 20e-6, .own = 20e-6, .cap = 64, .kind = SPLIT_SRV_HOST};
	pl.srv[1] = (struct split_server){
	    .name = "link-down", .s = 200e-6, .own = 200e-6, .cap = 1000, .kind = SPLIT_SRV_LINK};
	pl.srv[2] = (struct split_server){
	    .name = "nic", .s = 100e-6, .own = 100e-6, .cap = 32, .kind = SPLIT_SRV_NIC};
	pl.fb.on = true;
	pl.fb.host = 0;
	pl.fb.nic = 2;
	pl.fb.s_back = pl.fb.own_back = 40e-6;
	split_pipeline_predict(&pl, 8000, &p);
	assert_true(fabs(p.answered - 1) < 1e-9 && p.shed < 1e-9);
	assert_true(fabs(p.by_nic - 0.625) < 1e-6 && fabs(p.fallback - 0.375) < 1e-6);
	assert_true(fabs(p.rho[0] - 8000 * (20e-6 + 0.375 * 40e-6)) < 1e-6);
	split_pipeline_predict(&pl, 2500, &p);
	assert_true(p.fallback < 1e-6 && fabs(p.by_nic - 1) < 1e-9);
	pl.fb.on = false;
	split_pipeline_predict(&pl, 8000, &p);
	assert_true(fabs(p.answered - 0.625) < 1e-6 && p.fallback == 0);

	/* the link up to the host past its rate: the NIC's notices wait behind the REQUESTs in its
	 * full queue, so the host's window of 32 lets through 32 per round trip (Little's law) and
	 * the host finishes the rest, whose notices no longer load the link */
	pl = (struct split_pipeline){.n = 4, .fixed = 10e-6, .pr = &pr};
	pl.srv[0] = (struct split_server){
	    .name = "host", .s = 20e-6, .own = 20e-6, .cap = 64, .kind = SPLIT_SRV_HOST};
	pl.srv[1] = (struct split_server){
	    .name = "link-up", .s = 300e-6, .own = 300e-6, .cap = 400, .kind = SPLIT_SRV_LINK};
	pl.srv[2] = (struct split_server){
	    .name = "link-down", .s = 20e-6, .own = 20e-6, .cap = 1000, .kind = SPLIT_SRV_LINK};
	pl.srv[3] = (struct split_server){
	    .name = "nic", .s = 100e-6, .own = 100e-6, .cap = 32, .kind = SPLIT_SRV_NIC};
	pl.fb = (typeof(pl.fb)){.on = true,
				.host = 0,
				.nic = 3,
				.s_back = 40e-6,
				.own_back = 40e-6,
				.up_notice = 50e-6,
				.down_act = 20e-6,
				.down_resp = 10e-6};
	split_pipeline_predict(&pl, 5000, &p);
	{
		const double s_up = 300e-6 - p.fallback / p.answered * 50e-6;

		/* the link answers as many as its rate lets through, at its mixed service */
		assert_true(fabs(p.answered * 5000 - 1 / s_up) < 1e-3 * (1 / s_up));
		assert_true(p.answered * 5000 > 1.1 / 300e-6);
		/* the NIC: 32 per round trip, the notice after a full queue (399 services) */
		assert_true(fabs(p.by_nic * 5000 - 32 / (399 * s_up + 20e-6 + 100e-6 + 50e-6 +
							 0.5 * p.rho[0] * (20e-6 + 40e-6))) <
			    0.05 * p.by_nic * 5000);
		assert_true(p.by_nic < 0.1 && p.fallback > 0.85 * p.answered);
	}
	/* below the link's rate the window is no limit */
	split_pipeline_predict(&pl, 2000, &p);
	assert_true(p.fallback < 1e-6 && fabs(p.by_nic - 1) < 1e-9);

	/* stand-alone, the NIC's queue refuses what it cannot take: answered, not fallen back */
	pl = (struct split_pipeline){.n = 1, .fixed = 10e-6, .pr = &pr, .standalone = true};
	pl.srv[0] = (struct split_server){
	    .name = "nic", .s = 1000e-6, .own = 1000e-6, .cap = 32, .kind = SPLIT_SRV_NIC};
	split_pipeline_predict(&pl, 2000, &p);
	assert_true(fabs(p.answered - 0.5) < 1e-6 && p.fallback == 0 && fabs(p.shed - 0.5) < 1e-6);
}

static int model_setup(void **state)
{
	struct test_fx *f;
	int ret = test_fx_setup(state);

	if (ret)
		return ret;
	f = *state;
	test_model_u8_mlp(f);
	return 0;
}

static struct model *fx_model(void **state)
{
	struct test_fx *f = *state;
	char err[256];
	struct model *m = model_load(f->out, err, sizeof(err));

	assert_non_null(m);
	return m;
}

/* Every plan CPU [0, k) + NIC [k, n), all CPU and the NIC alone, evaluated one by one. */
static double best_single_split(const struct split_problem *p, const struct model *m,
				const struct split_profile *pr, const struct split_opts *o,
				uint32_t *best_k)
{
	double best = INFINITY;
	bool best_sat = true;

	for (uint32_t k = 0; k <= m->n_layers; k++) {
		struct split_plan plan = {0};
		struct split_pipeline pl;
		struct split_load_pred lp;
		double v;

		if (k)
			plan.stage[plan.n_stages++] =
			    (struct split_stage){.exec = SPLIT_EX_CPU, .first = 0, .last = k};
		if (k < m->n_layers)
			plan.stage[plan.n_stages++] = (struct split_stage){
			    .exec = SPLIT_EX_NIC, .first = k, .last = m->n_layers};
		if (split_plan_pipeline(p, m, pr, o, &plan, &pl))
			continue;
		split_pipeline_predict(&pl, o->load_rps, &lp);
		v = o->objective == SPLIT_OBJ_P99 ? lp.p99 : lp.p50;
		/* a plan below saturation first (split_rank_before), then the value */
		if ((best_sat && lp.rho_max < 1) || (best_sat == (lp.rho_max >= 1) && v < best)) {
			best = v;
			best_sat = lp.rho_max >= 1;
			*best_k = k;
		}
	}
	return best;
}

static void test_plan_load_enumerates(void **state)
{
	struct model *m = fx_model(state);
	struct split_profile pr;
	uint32_t splits = 0;

	split_profile_default(&pr);
	/* in process without load the enumeration is the dynamic program */
	for (uint32_t obj = 0; obj < 2; obj++) {
		struct split_opts o = {.link_gbps = 1,
				       .objective = obj,
				       .exec_mask = SPLIT_EXM(SPLIT_EX_NIC),
				       .nic_first = kexec_nic_first(m)};
		struct split_problem p;
		struct split_plan dp, en;

		assert_int_equal(split_problem_from_model(&p, m, &pr, &o), 0);
		assert_int_equal(split_plan_solve(&p, &dp), 0);
		assert_int_equal(split_plan_solve_load(&p, m, &pr, &o, &en, NULL), 0);
		if (obj == SPLIT_OBJ_LATENCY)
			assert_true(fabs(dp.cost - en.cost) <= 1e-12 * (1 + dp.cost));
		else
			assert_true(fabs(dp.cost - en.cost) <= 1e-12 * (1 + dp.cost) ||
				    en.cost <= dp.cost);
		split_problem_free(&p);
	}
	/* under load, on the packet path, at every link rate: the best of every single split */
	for (int t = 0; t < 60; t++) {
		struct split_opts o = {.link_gbps = t % 3 == 0	 ? 0.05
						    : t % 3 == 1 ? 1
								 : 10,
				       .objective = t % 2 ? SPLIT_OBJ_P99 : SPLIT_OBJ_LATENCY,
				       .exec_mask = SPLIT_EXM(SPLIT_EX_NIC),
				       .nic_first = kexec_nic_first(m),
				       .packet = true,
				       .load_rps = 500.0 * t};
		struct split_problem p;
		struct split_plan en;
		uint32_t k = 0;
		double want;

		pr.v[SPLIT_P_CPU_OP] = 10e-6 * (1 + t % 7);
		pr.v[SPLIT_P_NIC_LAYER] = 5e-6 * (1 + t % 4);
		pr.v[SPLIT_P_NIC_STAGE] = 20e-6 * (t % 3);
		assert_int_equal(split_problem_from_model(&p, m, &pr, &o), 0);
		assert_int_equal(split_plan_solve_load(&p, m, &pr, &o, &en, NULL), 0);
		want = best_single_split(&p, m, &pr, &o, &k);
		/* the best, or a simpler plan tied with it (within 3%: split_rank_tied) */
		assert_true(fabs(en.cost - want) <= 1e-12 * (1 + want) ||
			    (en.cost <= 1.03 * want && en.n_stages == 1));
		check_constraints(&p, &en);
		splits += en.n_stages > 1 || en.stage[0].exec == SPLIT_EX_NIC;
		split_problem_free(&p);
	}
	assert_true(splits > 0);
	model_free(m);
}

/*
 * The best split changes with load: a host slower than the NIC per request but closer (no link,
 * no NIC overhead) wins at low load; past its capacity (goodput first: all-host then answers
 * under 99%) the split that moves work to the NIC wins.
 */
static void test_plan_load_changes_choice(void **state)
{
	struct model *m = fx_model(state);
	struct split_opts o = {.link_gbps = 10,
			       .exec_mask = SPLIT_EXM(SPLIT_EX_NIC),
			       .nic_first = kexec_nic_first(m),
			       .packet = true,
			       .min_answered = 0.99};
	struct split_profile pr;
	struct split_problem p;
	struct split_plan lo, hi;
	struct split_load_pred plo, phi;

	split_profile_default(&pr);
	/* 40 us per op on the host; on the NIC 100 us per request and 60 us per binary layer */
	pr.v[SPLIT_P_CPU_OP] = 40e-6;
	pr.v[SPLIT_P_NIC_STAGE] = 100e-6;
	pr.v[SPLIT_P_NIC_LAYER] = 60e-6;
	assert_int_equal(split_problem_from_model(&p, m, &pr, &o), 0);
	assert_int_equal(split_plan_solve_load(&p, m, &pr, &o, &lo, &plo), 0);
	assert_int_equal(lo.n_stages, 1);
	assert_int_equal(lo.stage[0].exec, SPLIT_EX_CPU);
	o.load_rps = 1.2 * plo.throughput;
	assert_int_equal(split_plan_solve_load(&p, m, &pr, &o, &hi, &phi), 0);
	assert_int_equal(hi.stage[hi.n_stages - 1].exec, SPLIT_EX_NIC);
	assert_true(phi.rho_max < 1 && phi.answered >= 0.99);
	assert_true(phi.p50 < hi.latency + 1e-12 && hi.latency < 0.1);
	split_problem_free(&p);
	model_free(m);
}

/*
 * The path's work and wait for a request of many frames: sys.s for a calibration request's 4,
 * sys.frame_s for each further one (< 0, a profile from before: sys.s / 4 each); its wait counts
 * in sys.s x (frames / 4)^sys.frames_exp.
 */
static void test_plan_sys_frames(void **state)
{
	struct model *m = fx_model(state);
	const struct split_opts o = {.link_gbps = 10,
				     .exec_mask = SPLIT_EXM(SPLIT_EX_NIC),
				     .nic_first = kexec_nic_first(m),
				     .packet = true};
	const double S = 20e-6;
	struct split_profile pr;
	struct split_problem p;
	struct split_plan plan = {0};
	struct split_pipeline pl = {0};
	struct split_load_pred a, b, c;
	double rps;

	split_profile_default(&pr);
	pr.v[SPLIT_P_SYS_S] = S;
	assert_int_equal(split_problem_from_model(&p, m, &pr, &o), 0);
	/* a co-processor split: its ACTIVATION and the NIC's notice make 5 frames */
	for (uint32_t k = m->n_layers - 1; k > 0 && !plan.n_stages; k--) {
		plan.stage[0] = (struct split_stage){.exec = SPLIT_EX_CPU, .first = 0, .last = k};
		plan.stage[1] =
		    (struct split_stage){.exec = SPLIT_EX_NIC, .first = k, .last = m->n_layers};
		plan.n_stages = 2;
		if (split_plan_pipeline(&p, m, &pr, &o, &plan, &pl))
			plan.n_stages = 0;
	}
	assert_int_equal(plan.n_stages, 2);
	assert_true(fabs(pl.frames - 5) < 1e-12);
	assert_true(fabs(pl.sys_s - S * pl.frames / 4) < 1e-15);
	assert_true(fabs(pl.sys_w - pl.sys_s) < 1e-15);
	split_pipeline_predict(&pl, 1000, &a);
	rps = 1000 * 0.4 / a.rho_max; /* the bottleneck at 0.4 */
	split_pipeline_predict(&pl, rps, &a);
	/* 2 us a further frame; the wait per request, as a calibration request's */
	pr.v[SPLIT_P_SYS_FRAME] = 2e-6;
	pr.v[SPLIT_P_SYS_FRAMES] = 0;
	assert_int_equal(split_plan_pipeline(&p, m, &pr, &o, &plan, &pl), 0);
	assert_true(fabs(pl.sys_s - (S + 2e-6 * (pl.frames - 4))) < 1e-15);
	assert_true(fabs(pl.sys_w - S) < 1e-15);
	split_pipeline_predict(&pl, rps, &b);
	assert_true(b.p50 < a.p50 && b.rho_max <= a.rho_max);
	/* in between: the wait grows as the square root of the frames */
	pr.v[SPLIT_P_SYS_FRAMES] = 0.5;
	assert_int_equal(split_plan_pipeline(&p, m, &pr, &o, &plan, &pl), 0);
	assert_true(fabs(pl.sys_w - S * sqrt(pl.frames / 4)) < 1e-15);
	split_pipeline_predict(&pl, rps, &c);
	assert_true(c.p50 > b.p50);
	split_problem_free(&p);
	model_free(m);
}

/* Ranking under load: goodput first, ties within the model's resolution to the simpler plan. */
static void test_plan_rank_ties(void **state)
{
	const struct split_opts o = {.objective = SPLIT_OBJ_LATENCY, .min_answered = 0.99};
	struct split_load_pred pr[6] = {
	    {.p50 = 100e-6, .answered = 1, .rho_max = 0.5},    /* 0: NIC split, fastest */
	    {.p50 = 102e-6, .answered = 1, .rho_max = 0.6},    /* 1: all-host, within 3% */
	    {.p50 = 90e-6, .answered = 0.985, .rho_max = 0.9}, /* 2: faster, short of 99% */
	    {.p50 = 110e-6, .answered = 1, .rho_max = 0.2},    /* 3: one stage, 10% slower */
	    {.p50 = 5e-3, .answered = 0.80, .rho_max = 1.3},   /* 4: overloaded */
	    {.p50 = 6e-3, .answered = 0.795, .rho_max = 1.2},  /* 5: within a point of 4 */
	};
	const uint32_t stages[6] = {2, 1, 1, 1, 2, 1};
	struct split_rank_key k[6];
	uint32_t order[6];

	(void)state;
	for (uint32_t i = 0; i < 6; i++)
		split_rank_key(&o, &pr[i], 0, stages[i], &k[i]);
	split_rank_order(k, 6, order);
	/* 1 ties 0 and has fewer stages; 3 is not a tie; under 99% never before a plan above */
	assert_int_equal(order[0], 1);
	assert_int_equal(order[1], 0);
	assert_int_equal(order[2], 3);
	assert_int_equal(order[3], 2);
	assert_int_equal(order[4], 4);
	assert_int_equal(order[5], 5);
	assert_true(split_rank_tied(&k[1], &k[0]) && !split_rank_tied(&k[3], &k[0]));
	assert_false(split_rank_tied(&k[2], &k[0]));
	/* below goodput: shares within a point tie, and the simpler plan wins */
	split_rank_order(&k[4], 2, order);
	assert_int_equal(order[0], 1);
	assert_true(split_rank_tied(&k[5], &k[4]));
	/* a plan short of 99% does not tie one above it, however close */
	pr[2].p50 = 100e-6;
	split_rank_key(&o, &pr[2], 0, 1, &k[2]);
	assert_false(split_rank_tied(&k[2], &k[0]));
	/* stability second: a plan answering everything only through a saturated stage (the
	 * NIC's overflow to the host's fallback) ranks after every plan below saturation, however
	 * much faster its p50, and ties none of them */
	pr[2] = (struct split_load_pred){.p50 = 80e-6, .answered = 1, .rho_max = 7.0};
	split_rank_key(&o, &pr[2], 0, 2, &k[2]);
	split_rank_order(k, 4, order);
	assert_int_equal(order[0], 1);
	assert_int_equal(order[1], 0);
	assert_int_equal(order[2], 3);
	assert_int_equal(order[3], 2);
	assert_true(split_rank_before(&k[3], &k[2]) && !split_rank_tied(&k[2], &k[1]));
	/* among saturated plans the value decides again */
	pr[3].rho_max = 1.5;
	split_rank_key(&o, &pr[3], 0, 1, &k[3]);
	assert_true(split_rank_before(&k[2], &k[3]));
}

/* The wait for a sleeping lcore by simulation: the schedule of dpdk/idle.h walked for each of
 * n gaps min(d, X), X ~ Exp(rate) (inverse transform of a fixed sequence). */
static double poll_wait_sim(double sleep_max, double late, double rate, double d, int n)
{
	double sum = 0;

	for (int i = 0; i < n; i++) {
		const double u = (i + 0.5) / n, x = rate > 0 ? -log(1 - u) / rate : INFINITY;
		const double g = fmin(d, x);
		double t = DPDK_IDLE_SPIN_NS * 1e-9;

		if (g < t)
			continue;
		while (t <= g)
			t +=
			    fmin(fmax(t / DPDK_IDLE_FRACTION, DPDK_IDLE_MIN_US * 1e-6), sleep_max) +
			    late;
		sum += t - g;
	}
	return sum / n;
}

static void test_poll_wait(void **state)
{
	static const double cases[][4] = {
	    /* sleep_max, late, rate, d */
	    {20e-6, 40e-6, 800, INFINITY}, {20e-6, 40e-6, 800, 850e-6},
	    {10e-3, 40e-6, 400, INFINITY}, {10e-3, 40e-6, 200, 2e-3},
	    {100e-6, 0, 3000, INFINITY},   {10e-3, 40e-6, 5, INFINITY},
	};
	(void)state;
	for (size_t i = 0; i < sizeof(cases) / sizeof(cases[0]); i++) {
		const double *c = cases[i];
		const double m = split_poll_wait(c[0], c[1], c[2], c[3]);
		const double sim = poll_wait_sim(c[0], c[1], c[2], c[3], 200000);

		assert_true(m > 0);
		assert_true(fabs(m - sim) < 0.01 * sim + 0.2e-6);
	}
	/* busy polling, and an idle gap timed from nothing, wait nothing; a gap inside the spin
	 * neither */
	assert_true(split_poll_wait(0, 40e-6, 800, INFINITY) == 0);
	assert_true(split_poll_wait(10e-3, 40e-6, 0, INFINITY) == 0);
	assert_true(split_poll_wait(10e-3, 40e-6, 0, 150e-6) == 0);
	/* a deterministic gap: the rest of the sleep it falls in (200 us spin, then 12.5 + 40) */
	assert_true(fabs(split_poll_wait(10e-3, 40e-6, 0, 220e-6) - 32.5e-6) < 1e-9);
	/* at 5 requests/s the loop mostly sleeps its longest: a wait near half a sleep */
	assert_true(split_poll_wait(10e-3, 40e-6, 5, INFINITY) > 3e-3);
}

static void test_wire_roundtrip_bits(void **state)
{
	const struct model_shape s = {MODEL_FMT_BITS, 100, 5, 3};
	const size_t words = 15 * model_words(100);
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
	    cmocka_unit_test(test_analyze_nic_as_compiled),
	    cmocka_unit_test(test_planner_equals_exhaustive),
	    cmocka_unit_test(test_planner_infeasible),
	    cmocka_unit_test(test_plan_rank_ties),
	    cmocka_unit_test(test_wire_roundtrip_bits),
	    cmocka_unit_test(test_profile_rejects),
	    cmocka_unit_test(test_plan_file_rejects),
	    cmocka_unit_test(test_queue_formulas),
	    cmocka_unit_test(test_poll_wait),
	    cmocka_unit_test(test_queue_pipeline),
	    cmocka_unit_test_setup_teardown(test_plan_load_enumerates, model_setup,
					    test_fx_teardown),
	    cmocka_unit_test_setup_teardown(test_plan_sys_frames, model_setup, test_fx_teardown),
	    cmocka_unit_test_setup_teardown(test_plan_load_changes_choice, model_setup,
					    test_fx_teardown),
	};

	return cmocka_run_group_tests(tests, NULL, NULL);
}
