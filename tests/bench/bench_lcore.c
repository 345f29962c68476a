// SPDX-License-Identifier: MIT
/*
 * bench_lcore [--executors E,...] [--rounds R] [--count N] MODEL...: the NIC's `lcore` chain
 * (nicfw/lcore/, dispatcher and E executors on one inline runner) against kern_forward, both on
 * the calling core (EAL -l pins it). For each model and E: R interleaved rounds (the order
 * alternates), each timing N inferences of one then N of the other at batch 1 on the same random
 * inputs; the figure is the median of the per-round ratios (chain / kern_forward), beside the
 * medians of the per-inference means. Every chain result is compared with kern_forward's bit for
 * bit (a difference fails the run). Wall time, measured.
 */
#include <errno.h>
#include <sched.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include <rte_eal.h>

#include "conf/opts.h"
#include "exec/kexec.h"
#include "kernels/kern.h"
#include "nicfw/lcore/lcore.h"
#include "split/stats.h"
#include "tests/bench/bench.h"
#include "tests/support/rng.h"

#define MAX_ROUNDS 101
#define MAX_EXECS  8

static uint64_t rng_state = 0x2545f4914f6cdd1dull;

static int cmp_double(const void *a, const void *b)
{
	double x = *(const double *)a, y = *(const double *)b;

	return (x > y) - (x < y);
}

static double median(double *v, uint32_t n)
{
	qsort(v, n, sizeof(*v), cmp_double);
	return n % 2 ? v[n / 2] : (v[n / 2 - 1] + v[n / 2]) / 2;
}

struct run {
	struct model *m;
	struct kern_ctx *ctx;
	struct nicfw_lcore *p;
	uint8_t *in;
	size_t in_bytes;
	double *cpu, *nic;
	uint32_t classes, count;
};

/* Mean ns per inference over the run's inputs; -1 when the chain's scores differ. */
static double time_cpu(struct run *r)
{
	uint64_t t0 = lat_now_ns();

	for (uint32_t i = 0; i < r->count; i++)
		kern_forward(r->ctx, r->in + i * r->in_bytes, 1, r->cpu + (size_t)i * r->classes);
	return (double)(lat_now_ns() - t0) / r->count;
}

static double time_chain(struct run *r)
{
	uint64_t t0 = lat_now_ns(), t;

	for (uint32_t i = 0; i < r->count; i++)
		if (nicfw_lcore_infer(r->p, 0, r->in + i * r->in_bytes,
				      r->nic + (size_t)i * r->classes))
			return -1;
	t = lat_now_ns() - t0;
	return memcmp(r->cpu, r->nic, (size_t)r->count * r->classes * sizeof(double))
		   ? -1
		   : (double)t / r->count;
}

static int bench_one(const char *path, uint32_t execs, uint32_t rounds, uint32_t count, int cpu)
{
	double ratio[MAX_ROUNDS], tc[MAX_ROUNDS], tn[MAX_ROUNDS];
	struct run r = {.count = count};
	char err[512], name[160], method[512];
	int ret = 1;

	r.m = model_load(path, err, sizeof(err));
	if (!r.m) {
		fprintf(stderr, "bench_lcore: %s\n", err);
		return 1;
	}
	if (kexec_nic_first(r.m) != 0) {
		fprintf(stderr, "bench_lcore: %s: the NIC cannot run the whole model\n", path);
		goto out;
	}
	r.classes = model_classes(r.m);
	r.in_bytes = model_shape_bytes(&r.m->input);
	r.ctx = kern_ctx_create(r.m, 1);
	r.in = malloc(r.in_bytes * count);
	r.cpu = calloc((size_t)count * r.classes, sizeof(double));
	r.nic = calloc((size_t)count * r.classes, sizeof(double));
	r.p = nicfw_lcore_create(NULL, 0, err, sizeof(err));
	if (!r.ctx || !r.in || !r.cpu || !r.nic || !r.p) {
		fprintf(stderr, "bench_lcore: %s: %s\n", path, r.p ? "out of memory" : err);
		goto out;
	}
	if (nicfw_lcore_add(r.p, r.m, 0, execs, err, sizeof(err)) < 0 ||
	    nicfw_lcore_start(r.p, err, sizeof(err))) {
		fprintf(stderr, "bench_lcore: %s: %s\n", path, err);
		goto out;
	}
	for (size_t i = 0; i < r.in_bytes * count; i++)
		r.in[i] = (uint8_t)test_xorshift(&rng_state);
	time_cpu(&r); /* warm caches and branch predictors */
	if (time_chain(&r) < 0)
		goto out_differ;
	for (uint32_t k = 0; k < rounds; k++) {
		if (k % 2) {
			tn[k] = time_chain(&r);
			tc[k] = time_cpu(&r);
		} else {
			tc[k] = time_cpu(&r);
			tn[k] = time_chain(&r);
		}
		if (tn[k] < 0)
			goto out_differ;
		ratio[k] = tn[k] / tc[k];
	}
	snprintf(method, sizeof(method),
		 "lcore chain (dispatcher + %u executors on one inline runner) vs kern_forward, "
		 "batch 1, both on CPU %d; median of %u per-round ratios, rounds interleaved "
		 "(order alternating), %u random inputs per round, scores bit-exact; wall time",
		 execs, cpu, rounds, count);
	snprintf(name, sizeof(name), "lcore_vs_kern_forward_%s_e%u", r.m->name, execs);
	bench_record(name, median(ratio, rounds), "ratio", method);
	snprintf(name, sizeof(name), "lcore_chain_%s_e%u", r.m->name, execs);
	bench_record(name, median(tn, rounds) / 1e3, "us",
		     "same run, chain, median of round means");
	snprintf(name, sizeof(name), "lcore_kern_forward_%s", r.m->name);
	bench_record(name, median(tc, rounds) / 1e3, "us",
		     "same run, kern_forward, median of round means");
	ret = 0;
	goto out;
out_differ:
	fprintf(stderr, "bench_lcore: %s, E=%u: the chain's scores differ from kern_forward's\n",
		path, execs);
out:
	nicfw_lcore_free(r.p);
	free(r.nic);
	free(r.cpu);
	free(r.in);
	kern_ctx_free(r.ctx);
	model_free(r.m);
	return ret;
}

static int parse_execs(const char *s, uint32_t *e, uint32_t *n)
{
	char *end;

	for (*n = 0; *s && *n < MAX_EXECS; s = *end ? end + 1 : end) {
		unsigned long v = strtoul(s, &end, 10);

		if (end == s || (*end && *end != ',') || v < 1 || v > NICFW_MAX_EXEC)
			return -EINVAL;
		e[(*n)++] = (uint32_t)v;
	}
	return *n && !*s ? 0 : -EINVAL;
}

int main(int argc, char **argv)
{
	uint32_t execs[MAX_EXECS] = {16}, n_execs = 1, rounds = 15, count = 200;
	char lc[16];
	char *eal[] = {"bench_lcore",  "-l",	      lc,
		       "--no-huge",    "-m",	      "256",
		       "--no-pci",     "--no-shconf", "--no-telemetry",
		       "--log-level=3"};
	int cpu = sched_getcpu(), i, ret = 0;

	for (i = 1; i < argc && argv[i][0] == '-'; i += 2) {
		int64_t v;

		if (i + 1 == argc)
			goto usage;
		if (!strcmp(argv[i], "--executors")) {
			if (parse_execs(argv[i + 1], execs, &n_execs))
				goto usage;
		} else if (!strcmp(argv[i], "--rounds")) {
			if (conf_int("bench_lcore", "--rounds", argv[i + 1], 1, MAX_ROUNDS, &v))
				return 2;
			rounds = (uint32_t)v;
		} else if (!strcmp(argv[i], "--count")) {
			if (conf_int("bench_lcore", "--count", argv[i + 1], 1, 100000, &v))
				return 2;
			count = (uint32_t)v;
		} else {
			goto usage;
		}
	}
	if (i == argc)
		goto usage;
	snprintf(lc, sizeof(lc), "%d", cpu < 0 ? 0 : cpu);
	if (rte_eal_init((int)(sizeof(eal) / sizeof(eal[0])), eal) < 0) {
		fprintf(stderr, "bench_lcore: rte_eal_init failed\n");
		return 1;
	}
	for (; i < argc; i++)
		for (uint32_t k = 0; k < n_execs; k++)
			ret |= bench_one(argv[i], execs[k], rounds, count, cpu < 0 ? 0 : cpu);
	rte_eal_cleanup();
	return ret;
usage:
	fprintf(stderr,
		"usage: bench_lcore [--executors E[,E...]] [--rounds R (1..%u)] "
		"[--count N] MODEL.snm...\n",
		MAX_ROUNDS);
	return 2;
}
