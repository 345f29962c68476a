// SPDX-License-Identifier: MIT
/*
 * splitnic run: a model over a data set, in process, on the CPU kernels through libsplitnic
 * (include/splitnic/splitnic.h), the GPU (--exec), or
 * stage by stage as a plan file says (--plan: CPU, GPU and NIC-emulator executors through the
 * one executor interface, exec/kexec.h).
 */
#include <errno.h>
#include <pthread.h>
#include <stddef.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "cli/cmds.h"
#include "cli/dataset.h"
#include "cli/progress.h"
#include "conf/args.h"
#include "exec/kexec.h"
#include "kernels/cuda/kcuda.h"
#include "kernels/kern.h"
#include "kernels/kern_ops.h"
#include "lib/snlib.h"
#include "nicfw/emu/exec_emu.h"
#include "split/split.h"
#include "split/stats.h"

struct run_job {
	const struct model *m;
	const struct dataset *ds;
	uint32_t count, batch, threads, index;
	uint32_t classes;
	double *scores;	  /* [count][classes] */
	uint64_t *lat_ns; /* per batch */
	struct splitnic_ctx *ctx;
	int ret;
	struct splitnic_error err;
	struct kcuda_model *gpu;    /* --exec gpu: runs instead of ctx */
	const struct kcuda_ops *cu; /* its table */
	struct kexec_pipe pipe;	    /* --plan: runs instead of ctx */
	struct cli_progress *progress;
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
			 : j->gpu  ? j->cu->forward(j->gpu, in, n, out)
				   : splitnic_predict(j->ctx, in, n * j->ds->item_bytes, n, out,
						      (size_t)n * j->classes, NULL, &j->err);
		j->lat_ns[b] = lat_now_ns() - t0;
		if (j->ret)
			break;
		cli_progress_add(j->progress, n);
	}
	return NULL;
}

/*
 * One line per input: --scores its scores, comma-separated; --classes (class_only) its predicted
 * class (ties: the first, as argmax).
 */
static int write_per_input(const char *path, const double *scores, uint32_t count, uint32_t classes,
			   bool class_only)
{
	FILE *f = fopen(path, "w");

	if (!f) {
		fprintf(stderr, "splitnic run: %s: %s\n", path, strerror(errno));
		return -errno;
	}
	for (uint32_t i = 0; i < count; i++) {
		const double *s = scores + (size_t)i * classes;

		if (class_only)
			fprintf(f, "%u\n", kern_argmax(s, classes));
		else
			for (uint32_t c = 0; c < classes; c++)
				fprintf(f, "%.17g%c", s[c], c + 1 == classes ? '\n' : ',');
	}
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
static int plan_pipe(struct kexec_pipe *p, const struct model *m, const struct split_plan *pl,
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
			    model_fmt_name(m->layers[st->first].in.fmt));
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

struct run_opts {
	struct dataset_opts ds;
	long batch, threads;
	const char *scores, *classes, *exec, *plan, *precision;
	bool json, quiet;
};

#define RUN_OPT(f) offsetof(struct run_opts, f)

static const struct conf_opt run_opts[] = {
    DATASET_OPT_ROWS(struct run_opts, ds),
    CONF_LONG_ROW("batch", "B", RUN_OPT(batch), 1, 4096, "1", "inputs per forward pass"),
    CONF_LONG_ROW("threads", "T", RUN_OPT(threads), 1, 256, "1",
		  "threads, each with its own context, batches round-robin"),
    CONF_STR_ROW("scores", "FILE.csv", RUN_OPT(scores), NULL, "every score, one line per input"),
    CONF_STR_ROW("classes", "FILE", RUN_OPT(classes), NULL,
		 "the predicted class of each input, one per line"),
    CONF_CHOICE_ROW("exec", "cpu|gpu", RUN_OPT(exec), "cpu",
		    "the CPU kernels or the GPU (the CPU when no GPU is found)"),
    CONF_CHOICE_ROW("precision", "certified|exact|float32", RUN_OPT(precision), "certified",
		    "float layers: float32 + float64 rechecks, float64, plain float32"),
    CONF_STR_ROW("plan", "PLAN", RUN_OPT(plan), NULL,
		 "run a plan's stages on their executors (splitnic plan -o)"),
    CONF_FLAG_ROW("json", RUN_OPT(json), "one JSON object instead of text"),
    CONF_FLAG_ROW("quiet", RUN_OPT(quiet), "no progress line (drawn only on a terminal)"),
};

const struct conf_cmd cmd_run_spec = {CONF_CMD(
    "splitnic run", "MODEL (--images IDX[.gz] | --npy FILE.npy) [--labels IDX[.gz]] [OPTIONS]",
    "run a model in process: accuracy, latency p50/p99, images/s", run_opts, 1, 1, NULL)};

int cmd_run(int argc, char **argv)
{
	struct run_opts o = {.ds.count = -1};
	struct split_plan plan = {0};
	uint64_t gpu_fallback = 0;
	char plan_desc[256] = "";
	struct run_job *jobs = NULL;
	pthread_t *tids = NULL;
	struct dataset ds = {0};
	struct splitnic_model *sm = NULL;
	const struct model *m;
	struct splitnic_error se;
	struct lat_summary lat;
	struct cli_progress progress;
	uint64_t *lat_ns = NULL;
	double *scores = NULL;
	uint32_t classes, nbatches, correct = 0;
	const struct kcuda_ops *cu = NULL;
	bool gpu;
	char err[512], gpu_name[512] = "";
	int ret = 1, arg = conf_parse(&cmd_run_spec, argc, argv, &o);
	uint64_t t0, wall;

	if (arg < 0)
		return 2;
	if (!dataset_opts_valid(&o.ds))
		return cli_usage_error(&cmd_run_spec, "give one of --images IDX and --npy FILE");
	gpu = !strcmp(o.exec, "gpu");
	kern_precision_set_default(kern_precision_from_name(o.precision));
	if (o.plan && gpu) {
		fprintf(stderr,
			"splitnic run: --plan and --exec gpu: the plan names the executors\n");
		return 2;
	}
	if (o.scores && conf_output_ok("run", "--scores", o.scores))
		return 1;
	if (o.classes && conf_output_ok("run", "--classes", o.classes))
		return 1;
	if (gpu)
		cu = kcuda_open(gpu_name, sizeof(gpu_name));
	if (gpu && !cu) {
		fprintf(stderr, "splitnic run: --exec gpu: %s; falling back to the CPU kernels\n",
			gpu_name);
		gpu = false;
	}
	if (splitnic_model_load(argv[arg], &sm, &se)) {
		fprintf(stderr, "splitnic run: %s\n", se.msg);
		return 1;
	}
	m = snlib_model_kern(sm);
	if (o.plan) {
		size_t off = 0;

		if (split_plan_load(o.plan, m, &plan, err, sizeof(err))) {
			fprintf(stderr, "splitnic run: %s\n", err);
			goto out_model;
		}
		for (uint32_t i = 0; i < plan.n_stages && off < sizeof(plan_desc); i++)
			off += (size_t)snprintf(plan_desc + off, sizeof(plan_desc) - off,
						"%s%s [%u, %u)", i ? " -> " : "",
						split_exec_name(plan.stage[i].exec),
						plan.stage[i].first, plan.stage[i].last);
	}
	if (dataset_open_opts(&ds, m, &o.ds, err, sizeof(err))) {
		fprintf(stderr, "splitnic run: %s\n", err);
		goto out_model;
	}
	classes = model_classes(m);
	nbatches = (uint32_t)((o.ds.count + o.batch - 1) / o.batch);
	if (o.threads > nbatches)
		o.threads = nbatches;
	scores = calloc((size_t)o.ds.count * classes, sizeof(double));
	lat_ns = calloc(nbatches, sizeof(uint64_t));
	jobs = calloc((size_t)o.threads, sizeof(*jobs));
	tids = calloc((size_t)o.threads, sizeof(*tids));
	if (!scores || !lat_ns || !jobs || !tids) {
		fprintf(stderr, "splitnic run: out of memory\n");
		goto out_free;
	}
	for (long t = 0; t < o.threads; t++) {
		jobs[t] = (struct run_job){m,
					   &ds,
					   (uint32_t)o.ds.count,
					   (uint32_t)o.batch,
					   (uint32_t)o.threads,
					   (uint32_t)t,
					   classes,
					   scores,
					   lat_ns,
					   NULL,
					   0,
					   {0},
					   NULL,
					   NULL,
					   {0},
					   &progress};
		if (o.plan) {
			if (plan_pipe(&jobs[t].pipe, m, &plan, (uint32_t)o.batch, err,
				      sizeof(err))) {
				fprintf(stderr, "splitnic run: --plan %s: %s\n", o.plan, err);
				goto out_ctx;
			}
			for (uint32_t i = 0; !t && i < jobs[t].pipe.n; i++)
				if (jobs[t].pipe.x[i].note[0])
					fprintf(stderr, "splitnic run: %s\n",
						jobs[t].pipe.x[i].note);
			continue;
		}
		if (gpu) {
			jobs[t].cu = cu;
			jobs[t].gpu = cu->model_upload(m, (uint32_t)o.batch, err, sizeof(err));
			if (!jobs[t].gpu) {
				fprintf(stderr, "splitnic run: --exec gpu: %s\n", err);
				goto out_ctx;
			}
			continue;
		}
		if (splitnic_ctx_create(sm, (uint32_t)o.batch, 1, &jobs[t].ctx, &se) ||
		    splitnic_ctx_set_precision(
			jobs[t].ctx, (enum splitnic_precision)kern_precision_from_name(o.precision),
			&se)) {
			fprintf(stderr, "splitnic run: %s\n", se.msg);
			goto out_ctx;
		}
	}
	cli_progress_start(&progress, "splitnic run", "inputs", (uint64_t)o.ds.count, o.quiet);
	t0 = lat_now_ns();
	for (long t = 0; t < o.threads; t++)
		pthread_create(&tids[t], NULL, run_worker, &jobs[t]);
	for (long t = 0; t < o.threads; t++)
		pthread_join(tids[t], NULL);
	wall = lat_now_ns() - t0;
	cli_progress_end(&progress);
	for (long t = 0; t < o.threads; t++)
		if (jobs[t].ret) {
			fprintf(stderr, "splitnic run: forward pass failed: %s\n",
				gpu		 ? cu->last_error()
				: jobs[t].pipe.n ? strerror(-jobs[t].ret)
						 : jobs[t].err.msg);
			goto out_ctx;
		}
	for (long t = 0; t < o.threads; t++)
		for (uint32_t i = 0; i < jobs[t].pipe.n; i++)
			gpu_fallback += jobs[t].pipe.x[i].fallback_reqs;
	if (ds.labels)
		for (uint32_t i = 0; i < o.ds.count; i++)
			correct +=
			    kern_argmax(scores + (size_t)i * classes, classes) == ds.labels[i];
	lat_summarize(lat_ns, nbatches, &lat);
	if (o.json) {
		printf("{\"model\":\"%s\",\"exec\":\"%s\",\"isa\":\"%s\",\"images\":%ld,"
		       "\"batch\":%ld,\"threads\":%ld,",
		       m->name,
		       o.plan ? "plan"
		       : gpu  ? "gpu"
			      : "cpu",
		       gpu ? "cuda" : kern_ops_get()->name, o.ds.count, o.batch, o.threads);
		if (gpu)
			printf("\"device\":\"%s\",", gpu_name);
		if (o.plan)
			printf("\"plan\":\"%s\",\"gpu_fallback_requests\":%llu,", plan_desc,
			       (unsigned long long)gpu_fallback);
		if (ds.labels)
			printf("\"accuracy\":%.6f,\"correct\":%u,", (double)correct / o.ds.count,
			       correct);
		printf("\"latency_us\":{\"p50\":%.3f,\"p99\":%.3f,\"mean\":%.3f},"
		       "\"images_per_s\":%.1f}\n",
		       lat.p50 / 1e3, lat.p99 / 1e3, lat.mean / 1e3, o.ds.count / (wall / 1e9));
	} else {
		printf("model %s (%s kernels): %ld images, batch %ld, %ld thread%s\n", m->name,
		       gpu ? "cuda" : kern_ops_get()->name, o.ds.count, o.batch, o.threads,
		       o.threads > 1 ? "s" : "");
		if (o.plan)
			printf(
			    "executor  plan %s: %s; %llu requests of GPU stages ran on the CPU\n",
			    o.plan, plan_desc, (unsigned long long)gpu_fallback);
		else
			printf("executor  %s%s\n", gpu ? "gpu, " : "cpu", gpu ? gpu_name : "");
		if (ds.labels)
			printf("accuracy  %.2f%% (%u/%ld)\n", 100.0 * correct / o.ds.count, correct,
			       o.ds.count);
		printf("latency   p50 %.1f us  p99 %.1f us  (per batch of %ld)\n", lat.p50 / 1e3,
		       lat.p99 / 1e3, o.batch);
		printf("throughput %.0f images/s\n", o.ds.count / (wall / 1e9));
	}
	ret = 0;
	if (o.scores && write_per_input(o.scores, scores, (uint32_t)o.ds.count, classes, false))
		ret = 1;
	if (o.classes && write_per_input(o.classes, scores, (uint32_t)o.ds.count, classes, true))
		ret = 1;
out_ctx:
	for (long t = 0; t < o.threads; t++) {
		splitnic_ctx_free(jobs[t].ctx, NULL);
		if (jobs[t].gpu)
			cu->model_free(jobs[t].gpu);
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
