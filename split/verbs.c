// SPDX-License-Identifier: MIT
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "exec/kexec.h"
#include "split/stats.h"
#include "split/verbs.h"

int split_tools_usage(const char *usage, bool help)
{
	fprintf(help ? stdout : stderr, "%s", usage);
	return help ? 0 : 2;
}

int split_tools_is_json(const char *path)
{
	size_t n = strlen(path);

	return n > 5 && !strcmp(path + n - 5, ".json");
}

int split_tools_load_arch(const char *path, struct split_arch *a, char *err, size_t errlen)
{
	struct model *m;
	int ret;

	if (split_tools_is_json(path))
		return split_arch_load(path, a, err, errlen);
	m = model_load(path, err, errlen);
	ret = m ? split_arch_from_model(m, kexec_nic_first(m), a, err, errlen) : -EINVAL;
	model_free(m);
	return ret;
}

int split_tools_load_profile(const char *verb, const char *path, struct split_profile *pr)
{
	char err[512];
	int ret;

	if (!path) {
		split_profile_default(pr);
		fprintf(stderr,
			"splitnic %s: no --profile: using the built-in defaults (run `splitnic "
			"calibrate -o PROFILE`)\n",
			verb);
		return 0;
	}
	ret = split_profile_load(path, pr, err, sizeof(err));
	if (ret)
		fprintf(stderr, "splitnic %s: %s\n", verb, err);
	return ret;
}

int split_tools_plan(const struct model *m, const struct split_profile *pr, struct split_opts *o,
		     bool use_gpu, struct split_problem *p, struct split_plan *plan,
		     struct split_load_pred *pred, char *err, size_t errlen)
{
	struct split_pipeline pl;
	int ret;

	o->nic_first = kexec_nic_first(m);
	o->exec_mask = SPLIT_EXM(SPLIT_EX_CPU) | SPLIT_EXM(SPLIT_EX_NIC) |
		       (use_gpu && pr->v[SPLIT_P_GPU_PRESENT] ? SPLIT_EXM(SPLIT_EX_GPU) : 0);
	ret = split_problem_from_model(p, m, pr, o);
	if (ret) {
		snprintf(err, errlen, "model %s: cannot build the cost model: %s", m->name,
			 strerror(-ret));
		return ret;
	}
	if (o->packet || o->load_rps > 0 || o->objective == SPLIT_OBJ_P99)
		ret = split_plan_solve_load(p, m, pr, o, plan, pred);
	else
		ret = split_plan_solve(p, plan);
	if (ret) {
		snprintf(err, errlen, "model %s: %s", m->name,
			 ret == -E2BIG ? "too many ops to enumerate the plans under load"
				       : "no feasible plan");
		split_problem_free(p);
		return ret;
	}
	if (pred && !(o->packet || o->load_rps > 0 || o->objective == SPLIT_OBJ_P99) &&
	    !split_plan_pipeline(p, m, pr, o, plan, &pl))
		split_pipeline_predict(&pl, o->load_rps, pred);
	return 0;
}

static int cmp_u64(const void *a, const void *b)
{
	const uint64_t x = *(const uint64_t *)a, y = *(const uint64_t *)b;

	return (x > y) - (x < y);
}

/* One pass of rounds into ns[k - 1][at ..], interleaved over k; each run timed right after an
 * untimed run of the same prefix: a server running split k has k's weights in cache, not those
 * of the prefix timed before it (BinaryNet MLP: ops 0..3 timed after 0..2 took 195 us, after
 * themselves 206.5 us, as the whole model and splitnic-host). */
static int time_pass(struct kern_ctx *ctx, const struct model *m, uint32_t at, uint32_t rounds,
		     uint32_t cap, uint8_t *in, uint8_t *out, uint64_t *rng, uint64_t *ns,
		     char *err, size_t errlen)
{
	const uint32_t n = m->n_layers, warm = 2;

	for (uint32_t r = 0; r < rounds + warm; r++) {
		for (size_t i = 0; i < model_shape_elems(&m->input); i++) {
			*rng ^= *rng << 13, *rng ^= *rng >> 7, *rng ^= *rng << 17;
			if (m->input.fmt == MODEL_FMT_U8)
				in[i] = (uint8_t)*rng;
			else
				((float *)in)[i] = (float)(*rng >> 40) / (float)(1u << 24);
		}
		for (uint32_t k = 1; k <= n; k++) {
			uint64_t t0;
			int ret = kern_forward_range(ctx, 0, k, in, 1, out);

			t0 = lat_now_ns();
			if (!ret)
				ret = kern_forward_range(ctx, 0, k, in, 1, out);
			if (ret) {
				snprintf(err, errlen, "model %s: ops 0..%u: %s", m->name, k - 1,
					 strerror(-ret));
				return ret;
			}
			if (r >= warm)
				ns[(size_t)(k - 1) * cap + at + r - warm] = lat_now_ns() - t0;
		}
	}
	return 0;
}

int split_tools_measure_ops(const struct model *m, uint32_t rounds, double *op_s, char *err,
			    size_t errlen)
{
	/*
	 * This machine has spells of 0.1 s to 10 s and more in which the same code runs 35-80%
	 * slower (a shared host: the conv-heavy CNN's 141 us took 190-255 us; one plan in five
	 * or six caught one, and a sweep priced every op that much too high). The rounds come
	 * in PASSES passes, GAP_US apart (1.5 s and more in all), and a round whose whole model
	 * took more than SPELL x the fastest round's is left out: what is priced is the machine
	 * outside a spell. A spell that outlasts every pass prices the machine as it then was
	 * (12 plans back to back: none was; with 0.4-0.5 s gaps at another hour, 1 and 3 of 12
	 * still were; a bench sweep timed the VGG-head at 217.9 us against 152.3 us).
	 */
	enum { PASSES = 6, GAP_US = 300000 };
	const double SPELL = 1.1;
	const uint32_t n = m->n_layers, per = rounds ? (rounds + PASSES - 1) / PASSES : 1,
		       cap = per * PASSES;
	struct kern_ctx *ctx = kern_ctx_create(m, 1);
	size_t bytes = model_shape_bytes(&m->input);
	uint64_t *ns = NULL, *col = NULL, rng = 0x9e3779b97f4a7c15ull, fast = UINT64_MAX;
	uint8_t *in = NULL, *out = NULL;
	double *pre = NULL;
	int ret = -ENOMEM;

	for (uint32_t j = 0; j < n; j++)
		if (model_shape_bytes(&m->layers[j].out) > bytes)
			bytes = model_shape_bytes(&m->layers[j].out);
	in = malloc(bytes);
	out = malloc(bytes);
	ns = calloc((size_t)n * cap, sizeof(*ns));
	col = calloc(cap, sizeof(*col));
	pre = calloc(n + 1, sizeof(*pre));
	if (!ctx || !in || !out || !ns || !col || !pre || !rounds) {
		snprintf(err, errlen, "model %s: timing its ops: %s", m->name,
			 rounds ? "out of memory" : "no rounds");
		goto out;
	}
	for (uint32_t p = 0; p < PASSES; p++) {
		if (p)
			usleep(GAP_US);
		ret = time_pass(ctx, m, p * per, per, cap, in, out, &rng, ns, err, errlen);
		if (ret)
			goto out;
	}
	for (uint32_t r = 0; r < cap; r++)
		if (ns[(size_t)(n - 1) * cap + r] < fast)
			fast = ns[(size_t)(n - 1) * cap + r];
	for (uint32_t k = 1; k <= n; k++) {
		uint32_t c = 0;

		for (uint32_t r = 0; r < cap; r++)
			if (ns[(size_t)(n - 1) * cap + r] <= SPELL * (double)fast)
				col[c++] = ns[(size_t)(k - 1) * cap + r];
		qsort(col, c, sizeof(*col), cmp_u64);
		pre[k] = (double)col[c / 2] * 1e-9;
	}
	/*
	 * A prefix can cost more than a longer one (a float conv whose consumer is cut off runs
	 * in float64, kernels/fconv.c): the costs per op follow the lower envelope from the right,
	 * so that they are never negative and the whole model costs what it measured.
	 */
	for (uint32_t k = n; k-- > 1;)
		if (pre[k] > pre[k + 1])
			pre[k] = pre[k + 1];
	for (uint32_t j = 0; j < n; j++)
		op_s[j] = pre[j + 1] - pre[j];
	ret = 0;
out:
	kern_ctx_free(ctx);
	free(in);
	free(out);
	free(ns);
	free(col);
	free(pre);
	return ret;
}

void split_tools_print_plan(const struct model *m, const struct split_plan *plan)
{
	for (uint32_t s = 0; s < plan->n_stages; s++) {
		const struct split_stage *st = &plan->stage[s];

		printf("  stage %u: %-3s ops %2u..%-2u (%s .. %s)", s, split_exec_name(st->exec),
		       st->first, st->last - 1, model_op_name(m->layers[st->first].op),
		       model_op_name(m->layers[st->last - 1].op));
		if (st->fmt_in)
			printf("  cut in: %s %.1f us", split_fmt_name(st->fmt_in),
			       st->cut_in * 1e6);
		printf("  compute %.1f us\n", st->compute * 1e6);
	}
	printf("  predicted latency %.1f us\n", plan->latency * 1e6);
}

FILE *split_tools_plot_open(const char *verb, const char *out, char *script, size_t len)
{
	const char *term = split_plot_terminal(out);
	FILE *f;
	int fd;

	if (!term) {
		fprintf(stderr, "splitnic %s: --plot %s: use a .png or .svg file\n", verb, out);
		return NULL;
	}
	snprintf(script, len, "/tmp/splitnic-%s-XXXXXX", verb);
	fd = mkstemp(script);
	f = fd < 0 ? NULL : fdopen(fd, "w");
	if (!f) {
		fprintf(stderr, "splitnic %s: temporary file: %s\n", verb, strerror(errno));
		if (fd >= 0) {
			close(fd);
			unlink(script);
		}
		return NULL;
	}
	fprintf(f, "set terminal %s\nset termoption noenhanced\nset output '%s'\n", term, out);
	return f;
}

int split_tools_plot_run(const char *verb, FILE *f, const char *script)
{
	char err[256];
	int ret;

	fclose(f);
	ret = split_gnuplot(script, err, sizeof(err));
	unlink(script);
	if (ret)
		fprintf(stderr, "splitnic %s: %s\n", verb, err);
	return ret;
}

void split_tools_print_load(const struct model *m, const struct split_profile *pr,
			    const struct split_opts *o, const struct split_problem *p,
			    const struct split_plan *plan)
{
	static const char *const kind[] = {"queue", "host", "nic", "link"};
	struct split_load_pred lp;
	struct split_pipeline pl;

	if (split_plan_pipeline(p, m, pr, o, plan, &pl))
		return;
	split_pipeline_predict(&pl, o->load_rps, &lp);
	if (o->packet)
		printf("  MODELED packet path at %g requests/s: the host's and the NIC's waits and "
		       "shares from the profile's measured load curves, links as bounded queues\n",
		       o->load_rps);
	else
		printf("  MODELED in process at %g requests/s: each stage a FIFO queue (M/D/1, "
		       "bounded), quantiles summed over stages\n",
		       o->load_rps);
	for (uint32_t k = 0; k < pl.n; k++) {
		const struct split_server *v = &pl.srv[k];

		printf("    %-10s %-5s service %9.1f us  own %9.1f us  rho %5.2f  queue %u\n",
		       v->name, kind[v->kind < 4 ? v->kind : 0], v->s * 1e6, v->own * 1e6,
		       lp.rho[k], v->cap);
	}
	if (o->packet)
		printf("    %-10s %-5s service %9.1f us (front-end, kernel, packet handling: %.0f "
		       "frames; its wait counts in %.1f us)  rho %5.2f\n",
		       "path", "sys", pl.sys_s * 1e6, pl.frames, pl.sys_w * 1e6, lp.rho[pl.n]);
	printf("    %-10s %9.1f us (no queue)\n", "fixed", pl.fixed * 1e6);
	printf("  predicted p50 %.1f us  p99 %.1f us  mean %.1f us  throughput %.0f responses/s "
	       "(bottleneck %s, utilisation %.2f)\n",
	       lp.p50 * 1e6, lp.p99 * 1e6, lp.mean * 1e6, lp.throughput,
	       lp.bottleneck < pl.n ? pl.srv[lp.bottleneck].name : "path", lp.rho_max);
	printf("  predicted shares of the offered requests: answered %.1f%% (by the NIC %.1f%%, by "
	       "the host's fallback %.1f%%), not answered %.1f%%; MODELED capacity %.0f "
	       "requests/s (answered >= %.0f%%)\n",
	       100 * lp.answered, 100 * lp.by_nic, 100 * lp.fallback, 100 * lp.shed,
	       split_pipeline_capacity(&pl, SPLIT_CAPACITY_ANSWERED),
	       100 * SPLIT_CAPACITY_ANSWERED);
}
