// SPDX-License-Identifier: MIT
/*
 * splitnic run: a model over a data set, in process, on the CPU kernels through libsplitnic
 * (include/splitnic/splitnic.h) or on the GPU (--exec).
 */
#include <errno.h>
#include <getopt.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "kernels/kern.h"
#include "kernels/kern_ops.h"
#include "kernels/cuda/kcuda.h"
#include "lib/snlib.h"
#include "tools/cli_util.h"
#include "tools/cmds.h"
#include "tools/dataset.h"
#include "tools/stats.h"

struct run_job {
	const struct kern_model *m;
	const struct dataset *ds;
	uint32_t count, batch, threads, index;
	uint32_t classes;
	double *scores;	  /* [count][classes] */
	uint64_t *lat_ns; /* per batch */
	struct splitnic_ctx *ctx;
	int ret;
	struct splitnic_error err;
	struct kcuda_model *gpu; /* --exec gpu: runs instead of ctx */
};

static void *run_worker(void *arg)
{
	struct run_job *j = arg;
	const uint32_t nbatches = (j->count + j->batch - 1) / j->batch;

	for (uint32_t b = j->index; b < nbatches; b += j->threads) {
		uint32_t first = b * j->batch;
		uint32_t n = j->count - first < j->batch ? j->count - first : j->batch;
		uint64_t t0 = lat_now_ns();

		j->ret = j->gpu ? kcuda_forward(j->gpu, dataset_item(j->ds, first), n,
						j->scores + (size_t)first * j->classes)
				: splitnic_predict(j->ctx, dataset_item(j->ds, first),
						   n * j->ds->item_bytes, n,
						   j->scores + (size_t)first * j->classes,
						   (size_t)n * j->classes, NULL, &j->err);
		j->lat_ns[b] = lat_now_ns() - t0;
		if (j->ret)
			break;
	}
	return NULL;
}

static int write_scores(const char *path, const double *scores, uint32_t count, uint32_t classes)
{
	FILE *f = fopen(path, "w");

	if (!f) {
		fprintf(stderr, "splitnic run: %s: %s\n", path, strerror(errno));
		return -errno;
	}
	for (uint32_t i = 0; i < count; i++)
		for (uint32_t c = 0; c < classes; c++)
			fprintf(f, "%.17g%c", scores[(size_t)i * classes + c],
				c + 1 == classes ? '\n' : ',');
	if (fclose(f)) {
		fprintf(stderr, "splitnic run: %s: %s\n", path, strerror(errno));
		return -EIO;
	}
	return 0;
}

static void usage(FILE *f)
{
	fprintf(f, "usage: splitnic run MODEL (--images IDX[.gz] | --npy FILE.npy) [--labels "
		   "IDX[.gz]]\n"
		   "                    [--count N] [--batch B] [--threads T] [--scores FILE.csv] "
		   "[--json]\n"
		   "                    [--exec cpu|gpu]\n");
}

int cmd_run(int argc, char **argv)
{
	static const struct option opts[] = {
	    {"images", required_argument, NULL, 'i'},
	    {"npy", required_argument, NULL, 'n'},
	    {"labels", required_argument, NULL, 'l'},
	    {"count", required_argument, NULL, 'c'},
	    {"batch", required_argument, NULL, 'b'},
	    {"threads", required_argument, NULL, 't'},
	    {"scores", required_argument, NULL, 's'},
	    {"json", no_argument, NULL, 'j'},
	    {"exec", required_argument, NULL, 'e'},
	    {"help", no_argument, NULL, 'h'},
	    {0},
	};
	struct dataset_opts dso = {.count = -1};
	const char *scores_path = NULL;
	long batch = 1, threads = 1;
	struct run_job *jobs = NULL;
	pthread_t *tids = NULL;
	struct dataset ds = {0};
	struct splitnic_model *sm = NULL;
	const struct kern_model *m;
	struct splitnic_error se;
	struct lat_summary lat;
	uint64_t *lat_ns = NULL;
	double *scores = NULL;
	uint32_t classes, nbatches, correct = 0;
	bool json = false, gpu = false;
	char err[512], gpu_name[512] = "";
	int c, ret = 1;
	uint64_t t0, wall;

	while ((c = getopt_long(argc, argv, "h", opts, NULL)) != -1) {
		int taken = dataset_opt(&dso, c, optarg);

		if (taken < 0)
			return 2;
		if (taken)
			continue;
		switch (c) {
		case 'b':
			if (parse_count(optarg, &batch, 1, 4096, "--batch"))
				return 2;
			break;
		case 't':
			if (parse_count(optarg, &threads, 1, 256, "--threads"))
				return 2;
			break;
		case 's':
			scores_path = optarg;
			break;
		case 'j':
			json = true;
			break;
		case 'e':
			if (strcmp(optarg, "cpu") && strcmp(optarg, "gpu")) {
				fprintf(stderr, "splitnic run: --exec: '%s' is not cpu or gpu\n",
					optarg);
				return 2;
			}
			gpu = !strcmp(optarg, "gpu");
			break;
		case 'h':
			usage(stdout);
			return 0;
		default:
			usage(stderr);
			return 2;
		}
	}
	if (argc - optind != 1 || !dataset_opts_valid(&dso)) {
		usage(stderr);
		return 2;
	}
	if (scores_path && cli_output_ok("run", "--scores", scores_path))
		return 1;
	if (gpu && kcuda_probe(gpu_name, sizeof(gpu_name))) {
		fprintf(stderr, "splitnic run: --exec gpu: %s; falling back to the CPU kernels\n",
			gpu_name);
		gpu = false;
	}
	if (splitnic_model_load(argv[optind], &sm, &se)) {
		fprintf(stderr, "splitnic run: %s\n", se.msg);
		return 1;
	}
	m = snlib_model_kern(sm);
	if (dataset_open_opts(&ds, m, &dso, err, sizeof(err))) {
		fprintf(stderr, "splitnic run: %s\n", err);
		goto out_model;
	}
	classes = kern_model_classes(m);
	nbatches = (uint32_t)((dso.count + batch - 1) / batch);
	if (threads > nbatches)
		threads = nbatches;
	scores = calloc((size_t)dso.count * classes, sizeof(double));
	lat_ns = calloc(nbatches, sizeof(uint64_t));
	jobs = calloc((size_t)threads, sizeof(*jobs));
	tids = calloc((size_t)threads, sizeof(*tids));
	if (!scores || !lat_ns || !jobs || !tids) {
		fprintf(stderr, "splitnic run: out of memory\n");
		goto out_free;
	}
	for (long t = 0; t < threads; t++) {
		jobs[t] = (struct run_job){m,
					   &ds,
					   (uint32_t)dso.count,
					   (uint32_t)batch,
					   (uint32_t)threads,
					   (uint32_t)t,
					   classes,
					   scores,
					   lat_ns,
					   NULL,
					   0,
					   {0},
					   NULL};
		if (gpu) {
			jobs[t].gpu = kcuda_model_upload(m, (uint32_t)batch, err, sizeof(err));
			if (!jobs[t].gpu) {
				fprintf(stderr, "splitnic run: --exec gpu: %s\n", err);
				goto out_ctx;
			}
			continue;
		}
		if (splitnic_ctx_create(sm, (uint32_t)batch, 1, &jobs[t].ctx, &se)) {
			fprintf(stderr, "splitnic run: %s\n", se.msg);
			goto out_ctx;
		}
	}
	t0 = lat_now_ns();
	for (long t = 0; t < threads; t++)
		pthread_create(&tids[t], NULL, run_worker, &jobs[t]);
	for (long t = 0; t < threads; t++)
		pthread_join(tids[t], NULL);
	wall = lat_now_ns() - t0;
	for (long t = 0; t < threads; t++)
		if (jobs[t].ret) {
			fprintf(stderr, "splitnic run: forward pass failed: %s\n",
				gpu ? kcuda_last_error() : jobs[t].err.msg);
			goto out_ctx;
		}
	if (ds.labels)
		for (uint32_t i = 0; i < dso.count; i++)
			correct +=
			    kern_argmax(scores + (size_t)i * classes, classes) == ds.labels[i];
	lat_summarize(lat_ns, nbatches, &lat);
	if (json) {
		printf("{\"model\":\"%s\",\"exec\":\"%s\",\"isa\":\"%s\",\"images\":%ld,"
		       "\"batch\":%ld,\"threads\":%ld,",
		       m->name, gpu ? "gpu" : "cpu", gpu ? "cuda" : kern_ops_get()->name, dso.count,
		       batch, threads);
		if (gpu)
			printf("\"device\":\"%s\",", gpu_name);
		if (ds.labels)
			printf("\"accuracy\":%.6f,\"correct\":%u,", (double)correct / dso.count,
			       correct);
		printf("\"latency_us\":{\"p50\":%.3f,\"p99\":%.3f,\"mean\":%.3f},"
		       "\"images_per_s\":%.1f}\n",
		       lat.p50 / 1e3, lat.p99 / 1e3, lat.mean / 1e3, dso.count / (wall / 1e9));
	} else {
		printf("model %s (%s kernels): %ld images, batch %ld, %ld thread%s\n", m->name,
		       gpu ? "cuda" : kern_ops_get()->name, dso.count, batch, threads,
		       threads > 1 ? "s" : "");
		printf("executor  %s%s\n", gpu ? "gpu, " : "cpu", gpu ? gpu_name : "");
		if (ds.labels)
			printf("accuracy  %.2f%% (%u/%ld)\n", 100.0 * correct / dso.count, correct,
			       dso.count);
		printf("latency   p50 %.1f us  p99 %.1f us  (per batch of %ld)\n", lat.p50 / 1e3,
		       lat.p99 / 1e3, batch);
		printf("throughput %.0f images/s\n", dso.count / (wall / 1e9));
	}
	ret = 0;
	if (scores_path && write_scores(scores_path, scores, (uint32_t)dso.count, classes))
		ret = 1;
out_ctx:
	for (long t = 0; t < threads; t++) {
		splitnic_ctx_free(jobs[t].ctx, NULL);
		kcuda_model_free(jobs[t].gpu);
	}
out_free:
	free(tids);
	free(jobs);
	free(lat_ns);
	free(scores);
	dataset_close(&ds);
out_model:
	splitnic_model_free(sm, NULL);
	return ret;
}
