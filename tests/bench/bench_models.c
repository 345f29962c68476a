// SPDX-License-Identifier: MIT
/*
 * bench_models [-n COUNT] [-r ROUNDS] INPUTS MODEL...: per-image latency of each model in
 * process on one thread. INPUTS: IDX images (u8 models) or a .npy (f32 models), as for
 * `splitnic run`; a model whose input does not match is skipped. Each round runs a batch-1
 * pass (every image timed) and a batch-64 pass over the same COUNT images (default 1984, a
 * multiple of 64), after one warm-up pass of each; figures are medians over the rounds
 * (default 5): batch-1 p50 / p99 / mean, batch-64 per image, and the median of the per-round
 * ratios batch-1 mean / batch-64 per image (above 1: a batch is faster per image).
 */
#include <getopt.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "cli/dataset.h"
#include "kernels/kern.h"
#include "kernels/kern_ops.h"
#include "split/stats.h"
#include "tests/bench/bench.h"

#define MAX_ROUNDS 64

static uint64_t now_ns(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (uint64_t)ts.tv_sec * 1000000000ull + (uint64_t)ts.tv_nsec;
}

static int cmp_double(const void *a, const void *b)
{
	double x = *(const double *)a, y = *(const double *)b;

	return (x > y) - (x < y);
}

static double median(double *v, int n)
{
	qsort(v, (size_t)n, sizeof(*v), cmp_double);
	return v[n / 2];
}

struct round {
	double p50, p99, mean, b64;
};

/* One batch-1 pass (latencies into lat) and one batch-64 pass over n images. */
static void run_round(struct kern_ctx *c1, struct kern_ctx *c64, const struct dataset *ds,
		      uint32_t n, uint64_t *lat, double *scores, struct round *r)
{
	struct lat_summary s;
	uint64_t t0, total = 0;

	for (uint32_t i = 0; i < n; i++) {
		t0 = now_ns();
		kern_forward(c1, dataset_item(ds, i), 1, scores);
		lat[i] = now_ns() - t0;
		total += lat[i];
	}
	lat_summarize(lat, n, &s);
	r->p50 = s.p50 / 1e3;
	r->p99 = s.p99 / 1e3;
	r->mean = total / 1e3 / n;
	t0 = now_ns();
	for (uint32_t i = 0; i < n; i += 64)
		kern_forward(c64, dataset_item(ds, i), 64, scores);
	r->b64 = (now_ns() - t0) / 1e3 / n;
}

static int bench_model(const char *path, const char *inputs, uint32_t count, int rounds)
{
	struct model *m;
	struct kern_ctx *c1 = NULL, *c64 = NULL;
	struct dataset ds;
	struct round r[MAX_ROUNDS];
	double v[MAX_ROUNDS];
	uint64_t *lat = NULL;
	double *scores = NULL;
	char err[512], name[160], method[400];
	uint32_t n;
	int ret = 1;

	m = model_load(path, err, sizeof(err));
	if (!m) {
		fprintf(stderr, "bench_models: %s\n", err);
		return 1;
	}
	if (dataset_open(&ds, m, inputs, NULL, err, sizeof(err))) {
		fprintf(stderr, "bench_models: %s: skipped (%s)\n", path, err);
		model_free(m);
		return 0;
	}
	n = ds.count < count ? ds.count : count;
	n -= n % 64;
	if (!n) {
		fprintf(stderr, "bench_models: %s: fewer than 64 inputs\n", inputs);
		goto out_ds;
	}
	c1 = kern_ctx_create(m, 1);
	c64 = kern_ctx_create(m, 64);
	scores = calloc((size_t)64 * model_classes(m), sizeof(double));
	lat = calloc(n, sizeof(*lat));
	if (!c1 || !c64 || !scores || !lat)
		goto out;
	run_round(c1, c64, &ds, n, lat, scores, &r[0]); /* warm-up */
	for (int i = 0; i < rounds; i++)
		run_round(c1, c64, &ds, n, lat, scores, &r[i]);

	snprintf(method, sizeof(method),
		 "kern_forward batch 1, %s kernels, 1 thread, p50 over %u inputs, median of %d "
		 "rounds interleaved with batch 64",
		 kern_ops_get()->name, n, rounds);
	for (int i = 0; i < rounds; i++)
		v[i] = r[i].p50;
	snprintf(name, sizeof(name), "model.%s.latency_batch1_p50", m->name);
	bench_record(name, median(v, rounds), "us", method);
	for (int i = 0; i < rounds; i++)
		v[i] = r[i].p99;
	snprintf(name, sizeof(name), "model.%s.latency_batch1_p99", m->name);
	bench_record(name, median(v, rounds), "us", "same runs, p99");
	for (int i = 0; i < rounds; i++)
		v[i] = r[i].b64;
	snprintf(name, sizeof(name), "model.%s.per_image_batch64", m->name);
	snprintf(method, sizeof(method),
		 "kern_forward batch 64, %s kernels, 1 thread, wall time over %u inputs / %u, "
		 "median of %d rounds",
		 kern_ops_get()->name, n, n, rounds);
	bench_record(name, median(v, rounds), "us", method);
	for (int i = 0; i < rounds; i++)
		v[i] = r[i].mean / r[i].b64;
	snprintf(name, sizeof(name), "model.%s.batch64_speedup_per_image", m->name);
	bench_record(name, median(v, rounds), "x",
		     "batch-1 mean / batch-64 per-image time, same inputs, median of per-round "
		     "ratios (target > 1)");
	ret = 0;
out:
	free(lat);
	free(scores);
	kern_ctx_free(c1);
	kern_ctx_free(c64);
out_ds:
	dataset_close(&ds);
	model_free(m);
	return ret;
}

int main(int argc, char **argv)
{
	uint32_t count = 1984;
	int rounds = 5, c, ret = 0;

	while ((c = getopt(argc, argv, "n:r:")) != -1) {
		switch (c) {
		case 'n':
			count = (uint32_t)strtoul(optarg, NULL, 10);
			break;
		case 'r':
			rounds = atoi(optarg);
			break;
		default:
			return 2;
		}
	}
	if (argc - optind < 2 || count < 64 || rounds < 1 || rounds > MAX_ROUNDS) {
		fprintf(stderr,
			"usage: bench_models [-n COUNT >= 64] [-r ROUNDS 1..%d] "
			"IMAGES.idx[.gz]|INPUTS.npy MODEL...\n",
			MAX_ROUNDS);
		return 2;
	}
	kern_blas_threads(1);
	for (int i = optind + 1; i < argc; i++)
		ret |= bench_model(argv[i], argv[optind], count, rounds);
	return ret;
}
