// SPDX-License-Identifier: MIT
/*
 * bench_models [-n COUNT] [-r ROUNDS] [-p PRECISIONS] INPUTS MODEL...: per-image latency of
 * each model in process on one thread. INPUTS: IDX images (u8 models) or a .npy (f32 models),
 * as for `splitnic run`; a model whose input does not match is skipped. Each round runs a
 * batch-1 pass (every image timed) and a batch-64 pass over the same COUNT images (default
 * 1984, a multiple of 64), after one warm-up pass of each; figures are medians over the rounds
 * (default 5): batch-1 p50 / p99 / mean, batch-64 per image, and the median of the per-round
 * ratios batch-1 mean / batch-64 per image (above 1: a batch is faster per image).
 * PRECISIONS (default "certified,exact,float32"): each round runs every listed precision in turn
 * (docs/float.md); figures of the default precision keep their names, the others' names carry
 * the precision (model.NAME.exact.per_image_batch64), and each non-default precision's
 * batch-64 time is also given as a ratio to the default's, per round. For certified, the
 * float64 rechecks per image (images whose float32 arg-max the bound could not certify, and
 * float32 conv outputs of binary networks decided in float64) are recorded too.
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
#define MAX_PREC   3

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

struct prec_run {
	enum kern_precision p;
	struct kern_ctx *c1, *c64;
	struct round r[MAX_ROUNDS];
};

static void record_prec(const struct model *m, const struct prec_run *pr,
			const struct prec_run *def, uint32_t n, int rounds)
{
	const char *pn = kern_precision_name(pr->p);
	const bool dflt = pr == def;
	char name[160], method[400], tag[24];
	double v[MAX_ROUNDS];

	snprintf(tag, sizeof(tag), dflt ? "" : ".%s", pn);
	snprintf(method, sizeof(method),
		 "kern_forward batch 1, precision %s, %s kernels, 1 thread, p50 over %u inputs, "
		 "median of %d rounds interleaved with batch 64 and the other precisions",
		 pn, kern_ops_get()->name, n, rounds);
	for (int i = 0; i < rounds; i++)
		v[i] = pr->r[i].p50;
	snprintf(name, sizeof(name), "model.%s%s.latency_batch1_p50", m->name, tag);
	bench_record(name, median(v, rounds), "us", method);
	for (int i = 0; i < rounds; i++)
		v[i] = pr->r[i].p99;
	snprintf(name, sizeof(name), "model.%s%s.latency_batch1_p99", m->name, tag);
	bench_record(name, median(v, rounds), "us", "same runs, p99");
	for (int i = 0; i < rounds; i++)
		v[i] = pr->r[i].b64;
	snprintf(name, sizeof(name), "model.%s%s.per_image_batch64", m->name, tag);
	snprintf(method, sizeof(method),
		 "kern_forward batch 64, precision %s, %s kernels, 1 thread, wall time over %u "
		 "inputs / %u, median of %d rounds",
		 pn, kern_ops_get()->name, n, n, rounds);
	bench_record(name, median(v, rounds), "us", method);
	for (int i = 0; i < rounds; i++)
		v[i] = pr->r[i].mean / pr->r[i].b64;
	snprintf(name, sizeof(name), "model.%s%s.batch64_speedup_per_image", m->name, tag);
	bench_record(name, median(v, rounds), "x",
		     "batch-1 mean / batch-64 per-image time, same inputs, median of per-round "
		     "ratios (target > 1)");
	if (!dflt) {
		for (int i = 0; i < rounds; i++)
			v[i] = pr->r[i].b64 / def->r[i].b64;
		snprintf(name, sizeof(name), "model.%s.%s_over_%s_batch64", m->name, pn,
			 kern_precision_name(def->p));
		snprintf(method, sizeof(method),
			 "batch-64 per-image time at precision %s / at %s, same round, median of "
			 "per-round ratios",
			 pn, kern_precision_name(def->p));
		bench_record(name, median(v, rounds), "x", method);
	}
	if (pr->p == KERN_PRECISION_CERTIFIED) {
		/* both contexts ran the warm-up and every round: 2 (rounds + 1) passes over n */
		double per = (double)(kern_ctx_rechecked(pr->c1) + kern_ctx_rechecked(pr->c64)) /
			     (2.0 * (rounds + 1) * n);
		double outs = (double)(kern_ctx_recomputed(pr->c1) + kern_ctx_recomputed(pr->c64)) /
			      (2.0 * (rounds + 1) * n);

		snprintf(name, sizeof(name), "model.%s.float64_rechecked_images_per_image",
			 m->name);
		bench_record(name, per, "images",
			     "images whose float32 scores the error bound could not certify, run "
			     "again in float64, per image, batch 1 and 64, all rounds");
		snprintf(name, sizeof(name), "model.%s.float64_recomputed_outputs_per_image",
			 m->name);
		bench_record(name, outs, "outputs",
			     "float32 conv outputs (a float conv feeding a sign) decided from the "
			     "float64 conv, per image, batch 1 and 64, all rounds");
	}
}

static int bench_model(const char *path, const char *inputs, uint32_t count, int rounds,
		       const enum kern_precision *precs, int nprec)
{
	struct model *m;
	struct prec_run *pr = NULL;
	struct dataset ds;
	uint64_t *lat = NULL;
	double *scores = NULL;
	char err[512];
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
	pr = calloc((size_t)nprec, sizeof(*pr));
	scores = calloc((size_t)64 * model_classes(m), sizeof(double));
	lat = calloc(n, sizeof(*lat));
	if (!pr || !scores || !lat)
		goto out;
	for (int k = 0; k < nprec; k++) {
		pr[k].p = precs[k];
		pr[k].c1 = kern_ctx_create_prec(m, 1, precs[k]);
		pr[k].c64 = kern_ctx_create_prec(m, 64, precs[k]);
		if (!pr[k].c1 || !pr[k].c64)
			goto out;
		run_round(pr[k].c1, pr[k].c64, &ds, n, lat, scores, &pr[k].r[0]); /* warm-up */
	}
	for (int i = 0; i < rounds; i++)
		for (int k = 0; k < nprec; k++)
			run_round(pr[k].c1, pr[k].c64, &ds, n, lat, scores, &pr[k].r[i]);
	for (int k = 0; k < nprec; k++)
		record_prec(m, &pr[k], &pr[0], n, rounds);
	ret = 0;
out:
	for (int k = 0; pr && k < nprec; k++) {
		kern_ctx_free(pr[k].c1);
		kern_ctx_free(pr[k].c64);
	}
	free(pr);
	free(lat);
	free(scores);
out_ds:
	dataset_close(&ds);
	model_free(m);
	return ret;
}

int main(int argc, char **argv)
{
	uint32_t count = 1984;
	int rounds = 5, c, ret = 0, nprec = 0;
	enum kern_precision precs[MAX_PREC];
	char plist[64] = "certified,exact,float32", *tok, *save = NULL;

	while ((c = getopt(argc, argv, "n:r:p:")) != -1) {
		switch (c) {
		case 'p':
			snprintf(plist, sizeof(plist), "%s", optarg);
			break;
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
			"usage: bench_models [-n COUNT >= 64] [-r ROUNDS 1..%d] [-p PRECISION,...] "
			"IMAGES.idx[.gz]|INPUTS.npy MODEL...\n",
			MAX_ROUNDS);
		return 2;
	}
	for (tok = strtok_r(plist, ",", &save); tok; tok = strtok_r(NULL, ",", &save)) {
		int p = kern_precision_from_name(tok);

		if (p < 0 || nprec == MAX_PREC) {
			fprintf(stderr,
				"bench_models: -p %s: up to %d of certified, exact, float32\n", tok,
				MAX_PREC);
			return 2;
		}
		precs[nprec++] = (enum kern_precision)p;
	}
	if (!nprec)
		return 2;
	kern_blas_threads(1);
	for (int i = optind + 1; i < argc; i++)
		ret |= bench_model(argv[i], argv[optind], count, rounds, precs, nprec);
	return ret;
}
