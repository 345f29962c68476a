// SPDX-License-Identifier: MIT
/*
 * splitnic run: a model over a data set, in process, on the CPU kernels through libsplitnic
 * (include/splitnic/splitnic.h), the GPU (--exec), or
 * stage by stage as a plan file says (--plan: CPU, GPU and NIC-emulator executors through the
 * one executor interface, kernels/kexec.h).
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
#include "kernels/kexec.h"
#include "lib/snlib.h"
#include "nicfw/exec.h"
#include "split/split.h"
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
	struct kexec_pipe pipe;	 /* --plan: runs instead of ctx */
};

static void *run_worker(void *arg)
{
	struct run_job *j = arg;
	const uint32_t nbatches = (j->count + j->batch - 1) / j->batch;

	for (uint32_t b = j->index; b < nbatches; b += j->threads) {
		uint32_t first = b * j->batch;
		uint32_t n = j->count - first < j->batch ? j->count - first : j->batch;
		uint64_t t0 = lat_now_ns();

		const void *in = dataset_item(j->ds, first);
		double *out = j->scores + (size_t)first * j->classes;

		j->ret = j->pipe.n ? kexec_pipe_run(&j->pipe, in, n, out)
			 : j->gpu  ? kcuda_forward(j->gpu, in, n, out)
				   : splitnic_predict(j->ctx, in, n * j->ds->item_bytes, n, out,
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

#define RUN_NIC_EXECUTORS 16 /* the emulated NIC stage's chain */

static const struct kexec_ops *const stage_ops[SPLIT_EX__COUNT] = {
    [SPLIT_EX_CPU] = &kexec_cpu_ops,
    [SPLIT_EX_GPU] = &kexec_gpu_ops,
    [SPLIT_EX_NIC] = &nicfw_exec_emu_ops,
};

/* The plan's stages as executors on one thread's pipeline; cuts must be exact. */
static int plan_pipe(struct kexec_pipe *p, const struct kern_model *m, const struct split_plan *pl,
		     uint32_t batch, char *err, size_t errlen)
{
	const struct nicfw_exec_emu_conf nic = {.executors = RUN_NIC_EXECUTORS};

	kexec_pipe_init(p);
	for (uint32_t i = 0; i < pl->n_stages; i++) {
		const struct split_stage *st = &pl->stage[i];
		int ret;

		if (st->first && !split_fmt_exact(m->layers[st->first].in.fmt, st->fmt_in)) {
			snprintf(
			    err, errlen,
			    "stage %u (%s at op %u): the activation crosses as %s, which changes "
			    "%s values; run --plan takes exact cuts only",
			    i, split_exec_name(st->exec), st->first, split_fmt_name(st->fmt_in),
			    kern_fmt_name(m->layers[st->first].in.fmt));
			kexec_pipe_fini(p);
			return -EINVAL;
		}
		ret = kexec_pipe_add(p, stage_ops[st->exec], st->exec == SPLIT_EX_NIC ? &nic : NULL,
				     m, st->first, st->last, batch, err, errlen);
		if (ret) {
			kexec_pipe_fini(p);
			return ret;
		}
	}
	return 0;
}

static void usage(FILE *f)
{
	fprintf(f, "usage: splitnic run MODEL (--images IDX[.gz] | --npy FILE.npy) [--labels "
		   "IDX[.gz]]\n"
		   "                    [--count N] [--batch B] [--threads T] [--scores FILE.csv] "
		   "[--json]\n"
		   "                    [--exec cpu|gpu | --plan PLAN]\n");
}

int cmd_run(int argc, char **argv)
{
	static const struct option opts[] = {
	    {"images", required_argument, NULL, 'i'}, {"npy", required_argument, NULL, 'n'},
	    {"labels", required_argument, NULL, 'l'}, {"count", required_argument, NULL, 'c'},
	    {"batch", required_argument, NULL, 'b'},  {"threads", required_argument, NULL, 't'},
	    {"scores", required_argument, NULL, 's'}, {"json", no_argument, NULL, 'j'},
	    {"exec", required_argument, NULL, 'e'},   {"plan", required_argument, NULL, 'p'},
	    {"help", no_argument, NULL, 'h'},	      {0},
	};
	struct dataset_opts dso = {.count = -1};
	const char *scores_path = NULL, *plan_path = NULL;
	long batch = 1, threads = 1;
	struct split_plan plan = {0};
	uint64_t gpu_fallback = 0;
	char plan_desc[256] = "";
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
		case 'p':
			plan_path = optarg;
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
	if (plan_path && gpu) {
		fprintf(stderr,
			"splitnic run: --plan and --exec gpu: the plan names the executors\n");
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
	if (plan_path) {
		size_t off = 0;

		if (split_plan_load(plan_path, m, &plan, err, sizeof(err))) {
			fprintf(stderr, "splitnic run: %s\n", err);
			goto out_model;
		}
		for (uint32_t i = 0; i < plan.n_stages && off < sizeof(plan_desc); i++)
			off += (size_t)snprintf(plan_desc + off, sizeof(plan_desc) - off,
						"%s%s [%u, %u)", i ? " -> " : "",
						split_exec_name(plan.stage[i].exec),
						plan.stage[i].first, plan.stage[i].last);
	}
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
					   NULL,
					   {0}};
		if (plan_path) {
			if (plan_pipe(&jobs[t].pipe, m, &plan, (uint32_t)batch, err, sizeof(err))) {
				fprintf(stderr, "splitnic run: --plan %s: %s\n", plan_path, err);
				goto out_ctx;
			}
			for (uint32_t i = 0; !t && i < jobs[t].pipe.n; i++)
				if (jobs[t].pipe.x[i].note[0])
					fprintf(stderr, "splitnic run: %s\n",
						jobs[t].pipe.x[i].note);
			continue;
		}
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
				gpu		 ? kcuda_last_error()
				: jobs[t].pipe.n ? strerror(-jobs[t].ret)
						 : jobs[t].err.msg);
			goto out_ctx;
		}
	for (long t = 0; t < threads; t++)
		for (uint32_t i = 0; i < jobs[t].pipe.n; i++)
			gpu_fallback += jobs[t].pipe.x[i].fallback_reqs;
	if (ds.labels)
		for (uint32_t i = 0; i < dso.count; i++)
			correct +=
			    kern_argmax(scores + (size_t)i * classes, classes) == ds.labels[i];
	lat_summarize(lat_ns, nbatches, &lat);
	if (json) {
		printf("{\"model\":\"%s\",\"exec\":\"%s\",\"isa\":\"%s\",\"images\":%ld,"
		       "\"batch\":%ld,\"threads\":%ld,",
		       m->name,
		       plan_path ? "plan"
		       : gpu	 ? "gpu"
				 : "cpu",
		       gpu ? "cuda" : kern_ops_get()->name, dso.count, batch, threads);
		if (gpu)
			printf("\"device\":\"%s\",", gpu_name);
		if (plan_path)
			printf("\"plan\":\"%s\",\"gpu_fallback_requests\":%llu,", plan_desc,
			       (unsigned long long)gpu_fallback);
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
		if (plan_path)
			printf(
			    "executor  plan %s: %s; %llu requests of GPU stages ran on the CPU\n",
			    plan_path, plan_desc, (unsigned long long)gpu_fallback);
		else
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
		kexec_pipe_fini(&jobs[t].pipe);
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
