// SPDX-License-Identifier: MIT
/* The plan file (format in split/split.h) and gnuplot runs. */
#include <errno.h>
#include <inttypes.h>
#include <math.h>
#include <stdarg.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/wait.h>

#include "split/split.h"

uint64_t split_model_hash(const struct model *m)
{
	const uint8_t *p = m->map;
	uint64_t h = 14695981039346656037ull;

	for (size_t i = 0; i < m->map_size; i++)
		h = (h ^ p[i]) * 1099511628211ull;
	return h;
}

int split_plan_save(const char *path, const struct model *m, const struct split_plan *plan,
		    const struct split_opts *o, double link_gbps)
{
	return split_plan_save_figures(path, m, plan, o, link_gbps, NULL);
}

int split_plan_save_figures(const char *path, const struct model *m, const struct split_plan *plan,
			    const struct split_opts *o, double link_gbps,
			    const struct split_plan_figures *fig)
{
	FILE *f = fopen(path, "w");
	int ret = 0;

	if (!f)
		return -errno;
	fprintf(f, "splitnic-plan 1\nmodel %s %016" PRIx64 " %u\nobjective %s\nlink_gbps %g\n",
		m->name[0] ? m->name : "-", split_model_hash(m), m->n_layers,
		split_objective_name(o->objective), link_gbps);
	if (o->load_rps > 0)
		fprintf(f, "load_rps %g\n", o->load_rps);
	fprintf(f, "predicted_us %.3f\n", plan->cost * 1e6);
	if (fig && fig->measured && isfinite(fig->p50_us) && isfinite(fig->p99_us))
		fprintf(f, "measured_p50_us %.3f\nmeasured_p99_us %.3f\nmeasured_answered %.4f\n",
			fig->p50_us, fig->p99_us, fig->answered);
	for (uint32_t s = 0; s < plan->n_stages; s++)
		fprintf(f, "stage %s %u %u %s\n", split_exec_name(plan->stage[s].exec),
			plan->stage[s].first, plan->stage[s].last,
			split_fmt_name(plan->stage[s].fmt_in));
	if (fclose(f))
		ret = -errno;
	return ret;
}

/* Line length of a plan file (a longer line is an error, not two lines). */
#define PLAN_LINE_MAX 256

struct plan_parse {
	const char *path;
	unsigned lineno;
	char *err;
	size_t errlen;
	char name[MODEL_NAME_MAX + 8];
	uint64_t hash;
	unsigned n_ops;
	bool seen[8]; /* model, objective, link_gbps, predicted_us, load_rps, measured_p50_us,
		       * measured_p99_us, measured_answered */
};

__attribute__((format(printf, 2, 3))) static int plan_fail(struct plan_parse *pp, const char *fmt,
							   ...)
{
	char msg[160];
	va_list ap;

	va_start(ap, fmt);
	vsnprintf(msg, sizeof(msg), fmt, ap);
	va_end(ap);
	snprintf(pp->err, pp->errlen, "%s:%u: %s", pp->path, pp->lineno, msg);
	return -EINVAL;
}

/* 1 where line is a `name` record (marked seen), 0 where not, -EINVAL where seen before. */
static int plan_record(struct plan_parse *pp, int rec, const char *line, const char *name)
{
	size_t n = strlen(name);

	if (strncmp(line, name, n) || line[n] != ' ')
		return 0;
	if (rec >= 0 && pp->seen[rec])
		return plan_fail(pp, "%s given twice", name);
	if (rec >= 0)
		pp->seen[rec] = true;
	return 1;
}

/* A number >= 0 after the record name. */
static int plan_number(struct plan_parse *pp, const char *line, double *v)
{
	const char *arg = strchr(line, ' ');
	int end = -1;

	if (sscanf(arg, "%lf%n", v, &end) != 1 || arg[end] || !isfinite(*v) || *v < 0)
		return plan_fail(pp, "expected a finite number >= 0");
	return 0;
}

static int plan_line(struct plan_parse *pp, const char *line, struct split_plan *plan)
{
	char ex[16], fmt[16], obj[16];
	unsigned first, last;
	int e, fm, end = -1, r;
	double v;

	if (pp->lineno == 1)
		return strcmp(line, "splitnic-plan 1") ? plan_fail(pp, "not a splitnic-plan 1 file")
						       : 0;
	if ((r = plan_record(pp, 0, line, "model"))) {
		if (r > 0 && (sscanf(line, "model %63s %16" SCNx64 " %u%n", pp->name, &pp->hash,
				     &pp->n_ops, &end) != 3 ||
			      line[end]))
			r = plan_fail(pp, "expected model NAME HASH N_OPS");
		return r < 0 ? r : 0;
	}
	if ((r = plan_record(pp, 1, line, "objective"))) {
		if (r > 0 && (sscanf(line, "objective %15s%n", obj, &end) != 1 || line[end] ||
			      split_objective_from_name(obj) < 0))
			r = plan_fail(pp, "expected objective latency|throughput|p99");
		return r < 0 ? r : 0;
	}
	if ((r = plan_record(pp, 2, line, "link_gbps")))
		return r < 0 ? r : plan_number(pp, line, &v);
	if ((r = plan_record(pp, 4, line, "load_rps")))
		return r < 0 ? r : plan_number(pp, line, &v);
	if ((r = plan_record(pp, 3, line, "predicted_us"))) {
		if (r > 0 && !(r = plan_number(pp, line, &v)))
			plan->cost = v * 1e-6;
		return r < 0 ? r : 0;
	}
	if ((r = plan_record(pp, 5, line, "measured_p50_us")) ||
	    (r = plan_record(pp, 6, line, "measured_p99_us")) ||
	    (r = plan_record(pp, 7, line, "measured_answered")))
		return r < 0 ? r : plan_number(pp, line, &v);
	if (!plan_record(pp, -1, line, "stage"))
		return plan_fail(pp, "unknown record");
	if (sscanf(line, "stage %15s %u %u %15s%n", ex, &first, &last, fmt, &end) != 4 || line[end])
		return plan_fail(pp, "expected stage EXEC FIRST LAST FMT_IN");
	e = split_exec_from_name(ex);
	fm = split_fmt_from_name(fmt);
	if (e < 0)
		return plan_fail(pp, "executor \"%s\" unknown", ex);
	if (fm < 0 && strcmp(fmt, "-"))
		return plan_fail(pp, "format \"%s\" unknown", fmt);
	if (plan->n_stages == SPLIT_EX__COUNT)
		return plan_fail(pp, "more than %d stages", SPLIT_EX__COUNT);
	plan->stage[plan->n_stages++] = (struct split_stage){.exec = (uint32_t)e,
							     .first = first,
							     .last = last,
							     .fmt_in = fm < 0 ? 0u : (uint32_t)fm};
	return 0;
}

int split_plan_read(FILE *f, const char *path, const struct model *m, struct split_plan *plan,
		    char *err, size_t errlen)
{
	struct plan_parse pp = {.path = path, .err = err, .errlen = errlen};
	char *line = NULL;
	size_t cap = 0;
	ssize_t n;
	int ret = 0;

	memset(plan, 0, sizeof(*plan));
	while (!ret && (n = getline(&line, &cap, f)) >= 0) {
		pp.lineno++;
		while (n && memchr(" \t\r\n", line[n - 1], 4))
			line[--n] = 0;
		if (memchr(line, '\0', (size_t)n))
			ret = plan_fail(&pp, "NUL byte: not a text file");
		else if (n >= PLAN_LINE_MAX)
			ret = plan_fail(&pp, "line longer than %d bytes", PLAN_LINE_MAX - 1);
		else
			ret = plan_line(&pp, line, plan);
	}
	free(line);
	if (ret)
		return ret;
	if (ferror(f)) {
		snprintf(err, errlen, "%s: read error", path);
		return -EIO;
	}
	if (!pp.lineno) {
		snprintf(err, errlen, "%s: empty, not a splitnic-plan 1 file", path);
		return -EINVAL;
	}
	if (!pp.seen[0] || strcmp(pp.name, m->name[0] ? m->name : "-") || pp.n_ops != m->n_layers ||
	    pp.hash != split_model_hash(m)) {
		snprintf(err, errlen, "%s: plan made for another model (name, hash or op count)",
			 path);
		return -EINVAL;
	}
	for (uint32_t s = 0, at = 0; s < plan->n_stages; at = plan->stage[s++].last)
		if (plan->stage[s].first != at || plan->stage[s].last <= at ||
		    (s + 1 == plan->n_stages && plan->stage[s].last != pp.n_ops)) {
			snprintf(err, errlen, "%s: stage %u does not continue the op ranges", path,
				 s);
			return -EINVAL;
		}
	if (!plan->n_stages) {
		snprintf(err, errlen, "%s: no stages", path);
		return -EINVAL;
	}
	return 0;
}

int split_plan_load(const char *path, const struct model *m, struct split_plan *plan, char *err,
		    size_t errlen)
{
	FILE *f = fopen(path, "r");
	int ret;

	memset(plan, 0, sizeof(*plan));
	if (!f) {
		ret = -errno;
		snprintf(err, errlen, "%s: %s", path, strerror(errno));
		return ret;
	}
	ret = split_plan_read(f, path, m, plan, err, errlen);
	fclose(f);
	return ret;
}

const char *split_plot_terminal(const char *out)
{
	const char *dot = strrchr(out, '.');

	if (dot && !strcmp(dot, ".png"))
		return "pngcairo size 1200,700 font \",10\"";
	if (dot && !strcmp(dot, ".svg"))
		return "svg size 1200,700 dynamic";
	return NULL;
}

int split_gnuplot(const char *script, char *err, size_t errlen)
{
	pid_t pid;
	int status;

	pid = fork();
	if (pid < 0) {
		snprintf(err, errlen, "fork: %s", strerror(errno));
		return -errno;
	}
	if (pid == 0) {
		execlp("gnuplot", "gnuplot", script, (char *)NULL);
		_exit(127);
	}
	if (waitpid(pid, &status, 0) < 0) {
		snprintf(err, errlen, "waitpid: %s", strerror(errno));
		return -errno;
	}
	if (WIFEXITED(status) && WEXITSTATUS(status) == 127) {
		snprintf(err, errlen, "gnuplot not found (apt-get install gnuplot-nox)");
		return -ENOENT;
	}
	if (!WIFEXITED(status) || WEXITSTATUS(status)) {
		snprintf(err, errlen, "gnuplot %s failed", script);
		return -EIO;
	}
	return 0;
}
