// SPDX-License-Identifier: MIT
/* The exact planner for chains: dynamic program, exhaustive search, plan evaluation. */
#include <errno.h>
#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "split/split.h"

#define NMASK (1u << SPLIT_EX__COUNT)

int split_problem_alloc(struct split_problem *p, uint32_t n, uint32_t n_exec)
{
	memset(p, 0, sizeof(*p));
	if (!n || n > SPLIT_MAX_OPS || !n_exec || n_exec > SPLIT_EX__COUNT)
		return -EINVAL;
	p->n = n;
	p->n_exec = n_exec;
	p->op = calloc(n, sizeof(*p->op));
	p->wbytes = calloc(n, sizeof(*p->wbytes));
	p->start_ok = calloc(n, sizeof(*p->start_ok));
	p->cut = calloc(n, sizeof(*p->cut));
	p->fmt = calloc(n, sizeof(*p->fmt));
	if (!p->op || !p->wbytes || !p->start_ok || !p->cut || !p->fmt) {
		split_problem_free(p);
		return -ENOMEM;
	}
	for (uint32_t i = 0; i < n; i++) {
		p->start_ok[i] = NMASK - 1;
		for (uint32_t e = 0; e < SPLIT_EX__COUNT; e++)
			p->op[i][e] = INFINITY;
	}
	for (uint32_t e = 0; e < SPLIT_EX__COUNT; e++)
		p->mem[e] = UINT64_MAX;
	return 0;
}

void split_problem_free(struct split_problem *p)
{
	free(p->op);
	free(p->wbytes);
	free(p->start_ok);
	free(p->cut);
	free(p->fmt);
	memset(p, 0, sizeof(*p));
}

static double combine(const struct split_problem *p, double a, double b)
{
	if (p->objective == SPLIT_OBJ_THROUGHPUT)
		return a > b ? a : b;
	return a + b;
}

/* Compute time of ops [i, j) on e, or INFINITY if e cannot hold or run them. */
static double stage_time(const struct split_problem *p, uint32_t e, uint32_t i, uint32_t j)
{
	uint64_t w = 0;
	double t = p->stage_cost[e];

	if (!(p->start_ok[i] & SPLIT_EXM(e)))
		return INFINITY;
	for (uint32_t k = i; k < j; k++) {
		t += p->op[k][e];
		w += p->wbytes[k][e];
		if (w > p->mem[e] || isinf(t))
			return INFINITY;
	}
	return t;
}

static double cut_cost(const struct split_problem *p, uint32_t i, uint32_t from, uint32_t to)
{
	return from == to ? 0 : p->cut[i][from][to];
}

double split_plan_eval(const struct split_problem *p, struct split_plan *plan)
{
	uint32_t used = 0, prev = p->origin, at = 0;
	double cost = 0, lat = 0;

	if (!plan->n_stages || plan->n_stages > p->n_exec)
		return INFINITY;
	for (uint32_t s = 0; s < plan->n_stages; s++) {
		struct split_stage *st = &plan->stage[s];
		double c, t;

		if (st->exec >= p->n_exec || (used & SPLIT_EXM(st->exec)) || st->first != at ||
		    st->last <= st->first || st->last > p->n)
			return INFINITY;
		if (p->terminal[st->exec] && s + 1 != plan->n_stages)
			return INFINITY;
		if (s && st->exec == prev)
			return INFINITY;
		c = (s || st->exec != p->origin) ? cut_cost(p, at, prev, st->exec) : 0;
		t = stage_time(p, st->exec, st->first, st->last);
		if (isinf(t) || isinf(c))
			return INFINITY;
		st->fmt_in = (s || st->exec != p->origin) ? p->fmt[at][prev][st->exec] : 0;
		st->cut_in = c;
		st->compute = t;
		cost = s ? combine(p, cost, combine(p, c, t)) : combine(p, c, t);
		lat += c + t;
		used |= SPLIT_EXM(st->exec);
		prev = st->exec;
		at = st->last;
	}
	if (at != p->n)
		return INFINITY;
	plan->cost = cost;
	plan->latency = lat;
	return cost;
}

struct dp_cell {
	double v;
	uint32_t from, prev_exec, prev_mask;
};

int split_plan_solve(const struct split_problem *p, struct split_plan *out)
{
	const uint32_t n = p->n, E = p->n_exec;
	struct dp_cell *dp = malloc((size_t)(n + 1) * SPLIT_EX__COUNT * NMASK * sizeof(*dp));
	struct dp_cell *best = NULL;
	uint32_t be = 0, bm = 0;

#define CELL(j, e, m) dp[((size_t)(j)*SPLIT_EX__COUNT + (e)) * NMASK + (m)]
	if (!dp)
		return -ENOMEM;
	for (size_t k = 0; k < (size_t)(n + 1) * SPLIT_EX__COUNT * NMASK; k++)
		dp[k].v = INFINITY;
	for (uint32_t j = 1; j <= n; j++) {
		for (uint32_t e = 0; e < E; e++) {
			for (uint32_t i = 0; i < j; i++) {
				double t = stage_time(p, e, i, j);

				if (isinf(t))
					continue;
				if (i == 0) {
					double c =
					    e == p->origin ? 0 : cut_cost(p, 0, p->origin, e);
					double v = combine(p, c, t);
					struct dp_cell *d = &CELL(j, e, SPLIT_EXM(e));

					if (v < d->v)
						*d = (struct dp_cell){v, 0, e, 0};
					continue;
				}
				for (uint32_t e0 = 0; e0 < E; e0++) {
					if (e0 == e || p->terminal[e0])
						continue;
					for (uint32_t m = 1; m < NMASK; m++) {
						struct dp_cell *s = &CELL(i, e0, m), *d;
						double v;

						if (isinf(s->v) || (m & SPLIT_EXM(e)))
							continue;
						v = combine(p, s->v,
							    combine(p, cut_cost(p, i, e0, e), t));
						d = &CELL(j, e, m | SPLIT_EXM(e));
						if (v < d->v)
							*d = (struct dp_cell){v, i, e0, m};
					}
				}
			}
		}
	}
	for (uint32_t e = 0; e < E; e++)
		for (uint32_t m = 1; m < NMASK; m++)
			if (!isinf(CELL(n, e, m).v) && (!best || CELL(n, e, m).v < best->v)) {
				best = &CELL(n, e, m);
				be = e;
				bm = m;
			}
	if (!best) {
		free(dp);
		return -ENOENT;
	}
	{
		struct split_stage rev[SPLIT_EX__COUNT];
		uint32_t ns = 0, j = n, e = be, m = bm;

		while (j) {
			struct dp_cell *c = &CELL(j, e, m);

			rev[ns++] = (struct split_stage){.exec = e, .first = c->from, .last = j};
			j = c->from;
			e = c->prev_exec;
			m = c->prev_mask;
		}
		memset(out, 0, sizeof(*out));
		out->n_stages = ns;
		for (uint32_t s = 0; s < ns; s++)
			out->stage[s] = rev[ns - 1 - s];
	}
#undef CELL
	free(dp);
	return isinf(split_plan_eval(p, out)) ? -ENOENT : 0;
}

int split_plan_exhaustive(const struct split_problem *p, struct split_plan *out)
{
	uint32_t a[SPLIT_MAX_OPS] = {0};
	bool found = false;

	if (p->n > 24)
		return -E2BIG;
	for (;;) {
		struct split_plan cand = {0};
		uint32_t k;

		for (uint32_t i = 0; i < p->n; i++) {
			if (i && a[i] == a[i - 1]) {
				cand.stage[cand.n_stages - 1].last = i + 1;
				continue;
			}
			if (cand.n_stages == p->n_exec) {
				cand.n_stages = 0;
				break;
			}
			cand.stage[cand.n_stages++] =
			    (struct split_stage){.exec = a[i], .first = i, .last = i + 1};
		}
		if (cand.n_stages && !isinf(split_plan_eval(p, &cand)) &&
		    (!found || cand.cost < out->cost)) {
			*out = cand;
			found = true;
		}
		for (k = 0; k < p->n && ++a[k] == p->n_exec; k++)
			a[k] = 0;
		if (k == p->n)
			break;
	}
	return found ? 0 : -ENOENT;
}
