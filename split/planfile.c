// SPDX-License-Identifier: MIT
/* The plan file (format in split/split.h) and gnuplot runs. */
#include <errno.h>
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/wait.h>

#include "split/split.h"

uint64_t split_model_hash(const struct kern_model *m)
{
	const uint8_t *p = m->map;
	uint64_t h = 14695981039346656037ull;

	for (size_t i = 0; i < m->map_size; i++)
		h = (h ^ p[i]) * 1099511628211ull;
	return h;
}

int split_plan_save(const char *path, const struct kern_model *m, const struct split_plan *plan,
		    const struct split_opts *o, double link_gbps)
{
	FILE *f = fopen(path, "w");
	int ret = 0;

	if (!f)
		return -errno;
	fprintf(f, "splitnic-plan 1\nmodel %s %016" PRIx64 " %u\nobjective %s\nlink_gbps %g\n",
		m->name[0] ? m->name : "-", split_model_hash(m), m->n_layers,
		o->objective == SPLIT_OBJ_THROUGHPUT ? "throughput" : "latency", link_gbps);
	fprintf(f, "predicted_us %.3f\n", plan->cost * 1e6);
	for (uint32_t s = 0; s < plan->n_stages; s++)
		fprintf(f, "stage %s %u %u %s\n", split_exec_name(plan->stage[s].exec),
			plan->stage[s].first, plan->stage[s].last,
			split_fmt_name(plan->stage[s].fmt_in));
	if (fclose(f))
		ret = -errno;
	return ret;
}

int split_plan_load(const char *path, const struct kern_model *m, struct split_plan *plan,
		    char *err, size_t errlen)
{
	FILE *f = fopen(path, "r");
	char line[256], name[KERN_NAME_MAX + 8], ex[16], fmt[16];
	unsigned lineno = 0, n_ops = 0, first, last, version = 0;
	uint64_t hash = 0;
	bool have_model = false;
	int ret = -EINVAL;

	memset(plan, 0, sizeof(*plan));
	if (!f) {
		snprintf(err, errlen, "%s: %s", path, strerror(errno));
		return -errno;
	}
	while (fgets(line, sizeof(line), f)) {
		double v;

		lineno++;
		if (lineno == 1) {
			if (sscanf(line, "splitnic-plan %u", &version) != 1 || version != 1) {
				snprintf(err, errlen, "%s:1: not a splitnic-plan 1 file", path);
				goto out_close;
			}
		} else if (sscanf(line, "model %63s %" SCNx64 " %u", name, &hash, &n_ops) == 3) {
			have_model = true;
		} else if (sscanf(line, "predicted_us %lf", &v) == 1) {
			plan->cost = v * 1e-6;
		} else if (sscanf(line, "stage %15s %u %u %15s", ex, &first, &last, fmt) == 4) {
			int e = split_exec_from_name(ex), fm = split_fmt_from_name(fmt);
			struct split_stage *st = &plan->stage[plan->n_stages];

			if (e < 0 || plan->n_stages == SPLIT_EX__COUNT ||
			    (fm < 0 && strcmp(fmt, "-"))) {
				snprintf(err, errlen, "%s:%u: bad stage", path, lineno);
				goto out_close;
			}
			*st =
			    (struct split_stage){.exec = (uint32_t)e, .first = first, .last = last};
			st->fmt_in = fm < 0 ? 0 : (uint32_t)fm;
			plan->n_stages++;
		} else if (strncmp(line, "objective ", 10) && strncmp(line, "link_gbps ", 10)) {
			snprintf(err, errlen, "%s:%u: unknown record", path, lineno);
			goto out_close;
		}
	}
	if (!have_model || strcmp(name, m->name[0] ? m->name : "-") || n_ops != m->n_layers ||
	    hash != split_model_hash(m)) {
		snprintf(err, errlen, "%s: plan made for another model (name, hash or op count)",
			 path);
		goto out_close;
	}
	for (uint32_t s = 0, at = 0; s < plan->n_stages; at = plan->stage[s++].last)
		if (plan->stage[s].first != at || plan->stage[s].last <= at ||
		    (s + 1 == plan->n_stages && plan->stage[s].last != n_ops)) {
			snprintf(err, errlen, "%s: stage %u does not continue the op ranges", path,
				 s);
			goto out_close;
		}
	ret = plan->n_stages ? 0 : -EINVAL;
	if (ret)
		snprintf(err, errlen, "%s: no stages", path);

out_close:
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
