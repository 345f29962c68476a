// SPDX-License-Identifier: MIT
/*
 * bench_models IMAGES.idx MODEL...: per-image latency of each model in process on one thread:
 * batch 1 (median over images, after a warm-up pass) and batch 64 (per image).
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "kernels/kern.h"
#include "kernels/kern_ops.h"
#include "tests/bench/bench.h"
#include "tools/dataset.h"
#include "tools/stats.h"

#define BENCH_IMAGES 2000u

static uint64_t now_ns(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (uint64_t)ts.tv_sec * 1000000000ull + (uint64_t)ts.tv_nsec;
}

static int bench_model(const char *path, const char *images)
{
	static uint64_t lat[BENCH_IMAGES];
	struct kern_model *m;
	struct kern_ctx *c1 = NULL, *c64 = NULL;
	struct dataset ds;
	struct lat_summary s;
	double *scores = NULL;
	char err[512], name[160], method[256];
	uint32_t n, classes;
	uint64_t t0, total;
	int ret = 1;

	m = kern_model_load(path, err, sizeof(err));
	if (!m) {
		fprintf(stderr, "bench_models: %s\n", err);
		return 1;
	}
	if (m->input.fmt != KERN_FMT_U8 || dataset_open(&ds, m, images, NULL, err, sizeof(err))) {
		fprintf(stderr, "bench_models: %s: skipped (needs u8 IDX input)\n", path);
		kern_model_free(m);
		return 0;
	}
	n = ds.count < BENCH_IMAGES ? ds.count : BENCH_IMAGES;
	n -= n % 64;
	classes = kern_model_classes(m);
	c1 = kern_ctx_create(m, 1);
	c64 = kern_ctx_create(m, 64);
	scores = calloc((size_t)64 * classes, sizeof(double));
	if (!c1 || !c64 || !scores)
		goto out;
	for (uint32_t i = 0; i < n; i++)
		kern_forward(c1, dataset_item(&ds, i), 1, scores);
	for (uint32_t i = 0; i < n; i++) {
		t0 = now_ns();
		kern_forward(c1, dataset_item(&ds, i), 1, scores);
		lat[i] = now_ns() - t0;
	}
	lat_summarize(lat, n, &s);
	snprintf(name, sizeof(name), "model.%s.latency_batch1_p50", m->name);
	snprintf(method, sizeof(method),
		 "kern_forward batch 1, %s kernels, 1 thread, median of %u test images after a "
		 "warm-up pass (p99 %.1f us)",
		 kern_ops_get()->name, n, s.p99 / 1e3);
	bench_record(name, s.p50 / 1e3, "us", method);
	t0 = now_ns();
	for (uint32_t i = 0; i < n; i += 64)
		kern_forward(c64, dataset_item(&ds, i), 64, scores);
	total = now_ns() - t0;
	snprintf(name, sizeof(name), "model.%s.per_image_batch64", m->name);
	snprintf(method, sizeof(method),
		 "kern_forward batch 64, %s kernels, 1 thread, wall time over %u test images / %u",
		 kern_ops_get()->name, n, n);
	bench_record(name, total / 1e3 / n, "us", method);
	ret = 0;
out:
	free(scores);
	kern_ctx_free(c1);
	kern_ctx_free(c64);
	dataset_close(&ds);
	kern_model_free(m);
	return ret;
}

int main(int argc, char **argv)
{
	int ret = 0;

	if (argc < 3) {
		fprintf(stderr, "usage: bench_models IMAGES.idx[.gz] MODEL...\n");
		return 2;
	}
	kern_blas_threads(1);
	for (int i = 2; i < argc; i++)
		ret |= bench_model(argv[i], argv[1]);
	return ret;
}
