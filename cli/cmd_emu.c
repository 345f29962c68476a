// SPDX-License-Identifier: MIT
/*
 * splitnic emu: a model's NIC part on the NIC emulator (nicfw/emu). The host part, if any, runs
 * first on the CPU kernels; every response is compared with kern_forward's scores.
 */
#include <errno.h>
#include <stddef.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "cli/cmds.h"
#include "cli/dataset.h"
#include "cli/progress.h"
#include "exec/kexec.h"
#include "kernels/kern.h"
#include "nicfw/emu/emu.h"
#include "split/stats.h"

#define EMU_MAX_PARAMS 64

struct emu_totals {
	uint32_t count, correct, agree;
	struct nicfw_emu_report sum; /* every field summed over requests */
	uint64_t *lat_ns;	     /* modeled, per request */
};

static void print_params(const struct nicfw_emu_params *p)
{
	for (uint32_t i = 0; i < NICFW_EP__COUNT; i++) {
		const struct nicfw_emu_param_info *in = nicfw_emu_param_info(i);

		printf("%-22s %10g %-12s %s\n", in->name, p->v[i], in->unit, in->why);
	}
}

static void totals_add(struct emu_totals *t, const struct nicfw_emu_report *r)
{
	struct nicfw_emu_report *s = &t->sum;

	t->lat_ns[t->count] = (uint64_t)(r->latency_us * 1e3 + 0.5);
	s->latency_us += r->latency_us;
	s->n_layers = r->n_layers;
	for (uint32_t i = 0; i < r->n_layers; i++) {
		s->layer_op[i] = r->layer_op[i];
		s->layer_us[i] += r->layer_us[i];
	}
	s->rx_us = r->rx_us;
	s->tx_us = r->tx_us;
	s->exec_active += r->exec_active;
	s->me_busy += r->me_busy;
	for (uint32_t m = 0; m < NICFW_MEM__COUNT; m++) {
		s->rd_bytes[m] += r->rd_bytes[m];
		s->wr_bytes[m] += r->wr_bytes[m];
	}
	s->emem_hits += r->emem_hits;
	s->emem_misses += r->emem_misses;
}

static const char *const mem_name[NICFW_MEM__COUNT] = {"emem", "ctm", "imem"};

static void report(const struct model *m, const struct nicfw_chain *ch, struct emu_totals *t,
		   bool labels, bool json)
{
	const struct nicfw_emu_report *s = &t->sum;
	const double n = t->count;
	struct lat_summary lat;

	lat_summarize(t->lat_ns, t->count, &lat);
	if (json) {
		printf("{\"model\":\"%s\",\"nic_first_op\":%u,\"executors\":%u,\"requests\":%u,",
		       m->name, ch->first, ch->n_exec, t->count);
		if (labels)
			printf("\"accuracy\":%.6f,\"correct\":%u,", t->correct / n, t->correct);
		printf("\"agree_cpu\":%u,\"latency_us\":{\"mean\":%.3f,\"p50\":%.3f,\"p99\":%.3f},"
		       "\"rx_us\":%.3f,\"tx_us\":%.3f,\"requests_per_s\":%.1f,\"layers\":[",
		       t->agree, s->latency_us / n, lat.p50 / 1e3, lat.p99 / 1e3, s->rx_us,
		       s->tx_us, n / s->latency_us * 1e6);
		for (uint32_t i = 0; i < s->n_layers; i++)
			printf(
			    "%s{\"op\":%u,\"kind\":\"%s\",\"neurons\":%llu,\"us\":%.3f}",
			    i ? "," : "", s->layer_op[i],
			    model_op_name(m->layers[s->layer_op[i]].op),
			    (unsigned long long)model_shape_elems(&m->layers[s->layer_op[i]].out),
			    s->layer_us[i] / n);
		printf(
		    "],\"executor_active\":%.4f,\"me_busy\":%.4f,\"traffic_bytes_per_request\":{",
		    s->exec_active / n, s->me_busy / n);
		for (uint32_t k = 0; k < NICFW_MEM__COUNT; k++)
			printf("%s\"%s_read\":%.0f,\"%s_write\":%.0f", k ? "," : "", mem_name[k],
			       s->rd_bytes[k] / n, mem_name[k], s->wr_bytes[k] / n);
		printf("},\"emem_cache_hit_rate\":%.4f}\n",
		       (double)s->emem_hits /
			   (double)(s->emem_hits + s->emem_misses + !s->emem_hits));
		return;
	}
	printf("model %s: NIC part = ops %u..%u on %u executors (emulated NFP), %u requests\n",
	       m->name, ch->first, m->n_layers - 1, ch->n_exec, t->count);
	if (labels)
		printf("accuracy   %.2f%% (%u/%u)\n", 100.0 * t->correct / n, t->correct, t->count);
	printf("agree      %u/%u responses equal to the CPU kernels' scores\n", t->agree, t->count);
	printf(
	    "latency    mean %.1f us  p50 %.1f us  p99 %.1f us (modeled; rx %.1f + tx %.1f us)\n",
	    s->latency_us / n, lat.p50 / 1e3, lat.p99 / 1e3, s->rx_us, s->tx_us);
	printf("throughput %.0f requests/s (modeled, no batching)\n", n / s->latency_us * 1e6);
	for (uint32_t i = 0; i < s->n_layers; i++)
		printf("  layer op %-3u %-10s %7llu neurons  %9.1f us\n", s->layer_op[i],
		       model_op_name(m->layers[s->layer_op[i]].op),
		       (unsigned long long)model_shape_elems(&m->layers[s->layer_op[i]].out),
		       s->layer_us[i] / n);
	printf("executors  active %.1f%% of the request time; ME pipelines busy %.1f%%\n",
	       100 * s->exec_active / n, 100 * s->me_busy / n);
	printf("traffic    per request:");
	for (uint32_t k = 0; k < NICFW_MEM__COUNT; k++)
		printf(" %s %.0f B read, %.0f B written;", mem_name[k], s->rd_bytes[k] / n,
		       s->wr_bytes[k] / n);
	printf(" EMEM cache hit rate %.1f%%\n",
	       100.0 * (double)s->emem_hits /
		   (double)(s->emem_hits + s->emem_misses + !s->emem_hits));
}

static bool scores_equal(const double *a, const double *b, uint32_t n)
{
	return !memcmp(a, b, n * sizeof(double));
}

/* One input through the host part (CPU), the NIC part (emulator) and the whole model (CPU). */
static int emu_one(struct nicfw_emu *e, struct kern_ctx *ctx, const struct model *m, const void *in,
		   void *act, double *nic, double *cpu, struct nicfw_emu_report *r)
{
	const uint32_t first = nicfw_emu_chain(e)->first;
	int ret = first ? kern_forward_range(ctx, 0, first, in, 1, act) : 0;

	if (!ret)
		ret = nicfw_emu_infer(e, first ? act : in, nic, r);
	if (!ret)
		ret = kern_forward(ctx, in, 1, cpu);
	return ret;
}

struct emu_opts {
	struct dataset_opts ds;
	long executors;
	struct nicfw_emu_params p;
	bool json, list, quiet;
};

#define EMU_OPT(f) offsetof(struct emu_opts, f)

static int emu_opt(void *o, const struct conf_opt *opt, const char *arg)
{
	struct emu_opts *e = o;
	char err[512];

	if (!nicfw_emu_param_set(&e->p, arg, err, sizeof(err)))
		return 0;
	fprintf(stderr, "splitnic emu: %s\n", err);
	return -1;
}

static const struct conf_opt emu_opts[] = {
    DATASET_OPT_ROWS(struct emu_opts, ds),
    CONF_LONG_ROW("executors", "E", EMU_OPT(executors), 1, NICFW_MAX_EXEC, "256",
		  "executors in the chain, as on the NFP (256)"),
    CONF_CALL_ROW("param", "NAME=VALUE", 0, NULL, "an emulator parameter (--params lists them)"),
    CONF_FLAG_ROW("params", EMU_OPT(list), "list the emulator's parameters and their sources"),
    CONF_FLAG_ROW("json", EMU_OPT(json), "one JSON object instead of text"),
    CONF_FLAG_ROW("quiet", EMU_OPT(quiet), "no progress line (drawn only on a terminal)"),
};

const struct conf_cmd cmd_emu_spec = {CONF_CMD(
    "splitnic emu",
    "MODEL (--images IDX[.gz] | --npy FILE.npy) [--labels IDX[.gz]] [OPTIONS]\n"
    "--params",
    "a model's NIC part on the NFP-style emulator (modeled time)", emu_opts, 0, 1, emu_opt)};

int cmd_emu(int argc, char **argv)
{
	struct emu_opts o = {.ds.count = -1};
	struct dataset ds = {0};
	struct model *m = NULL;
	struct kern_ctx *ctx = NULL;
	struct nicfw_emu *e = NULL;
	struct emu_totals t = {0};
	struct cli_progress progress;
	double *nic = NULL, *cpu = NULL;
	void *act = NULL;
	char err[512];
	int arg, ret = 1;

	nicfw_emu_params_default(&o.p);
	arg = conf_parse(&cmd_emu_spec, argc, argv, &o);
	if (arg < 0)
		return 2;
	if (o.list) {
		print_params(&o.p);
		return 0;
	}
	if (arg == argc)
		return cli_usage_error(&cmd_emu_spec, "no MODEL");
	if (!dataset_opts_valid(&o.ds))
		return cli_usage_error(&cmd_emu_spec, "give one of --images IDX and --npy FILE");
	m = model_load(argv[arg], err, sizeof(err));
	if (!m) {
		fprintf(stderr, "splitnic emu: %s\n", err);
		return 1;
	}
	if (kexec_nic_first(m) == m->n_layers) {
		fprintf(stderr, "splitnic emu: %s: no trailing binary dense layers for the NIC\n",
			argv[arg]);
		goto out_model;
	}
	e = nicfw_emu_create(m, kexec_nic_first(m), (uint32_t)o.executors, &o.p, err, sizeof(err));
	if (!e) {
		fprintf(stderr, "splitnic emu: %s\n", err);
		goto out_model;
	}
	if (dataset_open_opts(&ds, m, &o.ds, err, sizeof(err))) {
		fprintf(stderr, "splitnic emu: %s\n", err);
		goto out_emu;
	}
	ctx = kern_ctx_create(m, 1);
	nic = calloc(model_classes(m), sizeof(double));
	cpu = calloc(model_classes(m), sizeof(double));
	act = calloc(1, model_shape_bytes(&m->layers[kexec_nic_first(m)].in) + 64);
	t.lat_ns = calloc((size_t)o.ds.count, sizeof(uint64_t));
	if (!ctx || !nic || !cpu || !act || !t.lat_ns) {
		fprintf(stderr, "splitnic emu: out of memory\n");
		goto out_free;
	}
	cli_progress_start(&progress, "splitnic emu", "inputs", (uint64_t)o.ds.count, o.quiet);
	for (uint32_t i = 0; i < o.ds.count; i++) {
		struct nicfw_emu_report r;
		int err_one = emu_one(e, ctx, m, dataset_item(&ds, i), act, nic, cpu, &r);

		if (err_one) {
			cli_progress_end(&progress);
			fprintf(stderr, "splitnic emu: request %u: %s\n", i, strerror(-err_one));
			goto out_free;
		}
		cli_progress_add(&progress, 1);
		totals_add(&t, &r);
		t.count++;
		t.agree += scores_equal(nic, cpu, model_classes(m));
		if (ds.labels)
			t.correct += kern_argmax(nic, model_classes(m)) == ds.labels[i];
	}
	cli_progress_end(&progress);
	report(m, nicfw_emu_chain(e), &t, ds.labels != NULL, o.json);
	ret = t.agree == t.count ? 0 : 1;
	if (ret)
		fprintf(stderr, "splitnic emu: %u responses differ from the CPU kernels\n",
			t.count - t.agree);
out_free:
	free(t.lat_ns);
	free(act);
	free(cpu);
	free(nic);
	kern_ctx_free(ctx);
	dataset_close(&ds);
out_emu:
	nicfw_emu_free(e);
out_model:
	model_free(m);
	return ret;
}
