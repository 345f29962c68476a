// SPDX-License-Identifier: MIT
/* From packet-path measurements to the profile's load curves; how calibrations agree. */
#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "split/calib.h"
#include "split/stats.h"

enum what { W_P50, W_P99, W_ANSWERED, W_FALLBACK };

static int server_of(const struct split_pipeline *pl, uint32_t kind)
{
	for (uint32_t k = 0; k < pl->n; k++)
		if (pl->srv[k].kind == kind)
			return (int)k;
	return -1;
}

double split_cal_service(const struct split_cal_series *s, unsigned k)
{
	const int i = server_of(&s->pl, k == SPLIT_CAL_NIC ? SPLIT_SRV_NIC : SPLIT_SRV_HOST);

	if (k == SPLIT_CAL_SYS)
		return s->pl.sys_s;
	return i < 0 ? 0 : s->pl.srv[i].s;
}

static double predicted(const struct split_cal_series *s, double rps, enum what w)
{
	struct split_load_pred p;

	split_pipeline_predict(&s->pl, rps, &p);
	switch (w) {
	case W_P50:
		return p.p50;
	case W_P99:
		return p.p99;
	case W_ANSWERED:
		return p.answered;
	default:
		return p.answered > 0 ? p.fallback / p.answered : 0;
	}
}

static double measured(const struct split_cal_obs *o, enum what w)
{
	switch (w) {
	case W_P50:
		return o->p50;
	case W_P99:
		return o->p99;
	case W_ANSWERED:
		return o->answered;
	default:
		return o->answered > 0 ? o->fallback / o->answered : 0;
	}
}

/* Curve c at point i: the value in [lo, hi] whose prediction of series s's point i meets the
 * measurement (every prediction grows with its curve's value). */
static void solve_point(struct split_profile *pr, unsigned c, uint32_t i,
			const struct split_cal_series *s, enum what w, double hi)
{
	const double want = measured(&s->o[i], w);
	double lo = 0;

	for (int it = 0; it < 64; it++) {
		const double mid = (lo + hi) / 2;

		pr->curve[c][i] = mid;
		if (predicted(s, s->o[i].rps, w) < want)
			lo = mid;
		else
			hi = mid;
	}
	pr->curve[c][i] = (lo + hi) / 2;
}

/* The curves of one kind of server from its series (p50 curve's first point: 0, the base). */
static void fit_kind(struct split_profile *pr, struct split_cal_series *s, unsigned c50,
		     unsigned c99, unsigned cshare, enum what wshare, uint32_t from)
{
	for (uint32_t i = 0; i < pr->n_grid; i++)
		solve_point(pr, cshare, i, s, wshare, 1);
	for (uint32_t i = from; i < pr->n_grid; i++)
		solve_point(pr, c50, i, s, W_P50, 1e5);
	for (uint32_t i = 0; i < pr->n_grid; i++)
		solve_point(pr, c99, i, s, W_P99, 1e5);
}

/* The fixed delay of series s that makes its p50 at its lowest load the measured one. */
static double base_of(struct split_cal_series *s)
{
	const double saved = s->pl.fixed;
	double t;

	s->pl.fixed = 0;
	t = s->o[0].p50 - predicted(s, s->o[0].rps, W_P50);
	s->pl.fixed = saved;
	return t;
}

/*
 * Isotonic regression (pool adjacent violators) of y[0..n) in place: the non-decreasing
 * sequence nearest to it in least squares (sign -1: non-increasing). A load curve measured on a
 * busy machine is not monotone point by point; the model's curves are.
 */
static void isotonic(double *y, uint32_t n, double sign)
{
	double val[SPLIT_GRID_MAX], w[SPLIT_GRID_MAX];
	uint32_t len[SPLIT_GRID_MAX], b = 0;

	for (uint32_t i = 0; i < n; i++) {
		val[b] = sign * y[i];
		w[b] = 1;
		len[b] = 1;
		while (b > 0 && val[b - 1] > val[b]) {
			val[b - 1] = (val[b - 1] * w[b - 1] + val[b] * w[b]) / (w[b - 1] + w[b]);
			w[b - 1] += w[b];
			len[b - 1] += len[b];
			b--;
		}
		b++;
	}
	for (uint32_t k = 0, i = 0; k < b; k++)
		for (uint32_t j = 0; j < len[k]; j++)
			y[i++] = sign * val[k];
}

/* The co-processor term from hop beside the path measured at its rate (ref): what hop's p50
 * exceeds the path's by beyond what the model puts between them (path.fixed_s cancels). */
static double hop_term(struct split_cal_series *hop, struct split_cal_series *sys,
		       const struct split_cal_obs *ref)
{
	const double saved = sys->pl.fixed;
	double t;

	sys->pl.fixed = 0;
	t = base_of(hop) - (ref->p50 - predicted(sys, ref->rps, W_P50));
	sys->pl.fixed = saved;
	return t;
}

double split_cal_fit(struct split_profile *pr, struct split_cal_series s[SPLIT_CAL__COUNT],
		     struct split_cal_series *hop, const struct split_cal_obs *ref)
{
	double worst = 0;

	for (unsigned k = 0; k < SPLIT_CAL__COUNT; k++)
		s[k].pl.pr = pr;
	if (hop)
		hop->pl.pr = pr;
	/* the host curves are the host series': a longer stage adds its own queue beyond them */
	pr->v[SPLIT_P_HOST_CURVE] = split_cal_service(&s[SPLIT_CAL_HOST], SPLIT_CAL_HOST);
	for (int pass = 0; pass < 3; pass++) {
		struct split_cal_series *const co = hop ? hop : &s[SPLIT_CAL_NIC];

		pr->curve[SPLIT_CV_SYS_P50][0] = 0;
		pr->v[SPLIT_P_PATH_FIXED] = fmax(0, base_of(&s[SPLIT_CAL_SYS]));
		s[SPLIT_CAL_SYS].pl.fixed = s[SPLIT_CAL_HOST].pl.fixed = pr->v[SPLIT_P_PATH_FIXED];
		s[SPLIT_CAL_NIC].pl.fixed = co->pl.fixed =
		    pr->v[SPLIT_P_PATH_FIXED] + pr->v[SPLIT_P_PATH_COPROC];
		fit_kind(pr, &s[SPLIT_CAL_SYS], SPLIT_CV_SYS_P50, SPLIT_CV_SYS_P99,
			 SPLIT_CV_SYS_ANS, W_ANSWERED, 1);
		fit_kind(pr, &s[SPLIT_CAL_HOST], SPLIT_CV_HOST_P50, SPLIT_CV_HOST_P99,
			 SPLIT_CV_HOST_ANS, W_ANSWERED, 0);
		for (uint32_t i = 0; i < pr->n_grid; i++)
			solve_point(pr, SPLIT_CV_NIC_FB, i, &s[SPLIT_CAL_NIC], W_FALLBACK, 1);
		if (!hop || !pass) /* with hop, a start: the nic series fits it below */
			pr->curve[SPLIT_CV_NIC_P50][0] = 0;
		pr->v[SPLIT_P_PATH_COPROC] =
		    fmin(1, fmax(-pr->v[SPLIT_P_PATH_FIXED],
				 hop && ref ? hop_term(hop, &s[SPLIT_CAL_SYS], ref)
					    : base_of(co) - pr->v[SPLIT_P_PATH_FIXED]));
		s[SPLIT_CAL_NIC].pl.fixed = co->pl.fixed =
		    pr->v[SPLIT_P_PATH_FIXED] + pr->v[SPLIT_P_PATH_COPROC];
		/* with the hop taken from its own plan, the nic series' lowest load is a point of
		 * its curve like the others (no lower than 0) */
		fit_kind(pr, &s[SPLIT_CAL_NIC], SPLIT_CV_NIC_P50, SPLIT_CV_NIC_P99, SPLIT_CV_NIC_FB,
			 W_FALLBACK, hop ? 0 : 1);
	}
	for (unsigned c = 0; c < SPLIT_CV__COUNT; c++)
		isotonic(pr->curve[c], pr->n_grid,
			 c == SPLIT_CV_SYS_ANS || c == SPLIT_CV_HOST_ANS ? -1 : 1);
	for (unsigned k = 0; k < SPLIT_CAL__COUNT; k++)
		for (uint32_t i = 0; i < pr->n_grid; i++)
			if (s[k].o[i].p50 > 0)
				worst = fmax(worst, fabs(predicted(&s[k], s[k].o[i].rps, W_P50) -
							 s[k].o[i].p50) /
							s[k].o[i].p50);
	return worst;
}

double split_cal_range(const double *v, uint32_t n)
{
	double lo = INFINITY, hi = -INFINITY, med, tmp[64];

	if (n < 2)
		return 0;
	n = n > 64 ? 64 : n;
	for (uint32_t i = 0; i < n; i++) {
		lo = fmin(lo, v[i]);
		hi = fmax(hi, v[i]);
		tmp[i] = v[i];
	}
	med = stats_median(tmp, n);
	return med > 0 ? (hi - lo) / med : 0;
}

void split_cal_figures(const struct split_profile *pr, double fig[SPLIT_CAL_FIGURES],
		       const char **names)
{
	static const char *const nm[SPLIT_CAL_FIGURES] = {
	    "path.fixed_s",
	    "path.nic_s",
	    "sys.s",
	    "host service of a 100 us stage",
	    "nic service of a 100 us chain",
	    "path p50 at 0.55",
	    "host p50 at 0.55 (100 us stage)",
	    "nic p50 at 0.55 (100 us stage)",
	    "sys work of an 18-frame request",
	    "path p50 at 0.55 (18 frames)",
	    "sys p50 excess at 0.55",
	    "host p50 excess at 0.55 (100 us)",
	    "nic p50 excess at 0.55 (100 us)",
	};
	/* a server's fixed cost is judged as part of its service of a 100 us stage, the host's and
	 * the NIC's alike: alone it is an intercept of a few microseconds (the NIC's 1.0 against
	 * 1.9 us in two calibrations in a row: 48% apart, 0.9% of the service) */
	const double host_s = pr->v[SPLIT_P_HOST_REQ] + pr->v[SPLIT_P_HOST_SCALE] * 100e-6;
	const double nic_s = pr->v[SPLIT_P_NIC_STAGE] + pr->v[SPLIT_P_NIC_SCALE] * 100e-6;
	double wait18;

	fig[0] = pr->v[SPLIT_P_PATH_FIXED];
	fig[1] = pr->v[SPLIT_P_PATH_NIC];
	fig[2] = pr->v[SPLIT_P_SYS_S];
	fig[3] = host_s;
	fig[4] = nic_s;
	fig[10] = pr->v[SPLIT_P_SYS_S] * split_curve_at(pr, SPLIT_CV_SYS_P50, 0.55);
	fig[11] = split_host_excess(pr, false, host_s, 0.55, (uint32_t)pr->v[SPLIT_P_HOST_QUEUE]);
	fig[12] = 100e-6 * split_curve_at(pr, SPLIT_CV_NIC_P50, 0.55);
	/* what the planner predicts there: the no-load time and the excess, as split/queue.c */
	fig[5] = fig[0] + fig[10];
	fig[6] = host_s + fig[11];
	fig[7] = nic_s + fig[12];
	/* a request of 18 frames (calibrate's cal-sys-wide): the path's work, and its p50 there */
	split_sys_service(pr, 18, &fig[8], &wait18);
	fig[9] = fig[0] + wait18 * split_curve_at(pr, SPLIT_CV_SYS_P50, 0.55);
	for (int i = 0; names && i < SPLIT_CAL_FIGURES; i++)
		names[i] = nm[i];
}

double split_cal_compare(const struct split_profile *a, const struct split_profile *b, FILE *f)
{
	double fa[SPLIT_CAL_FIGURES], fb[SPLIT_CAL_FIGURES], worst = 0;
	const char *names[SPLIT_CAL_FIGURES];

	split_cal_figures(a, fa, names);
	split_cal_figures(b, fb, NULL);
	for (int i = 0; i < SPLIT_CAL_FIGURES; i++) {
		const double m = fmax(fabs(fa[i]), fabs(fb[i]));
		const double d = m < 1e-6 ? 0 : fabs(fa[i] - fb[i]) / m;
		const bool judged = i < SPLIT_CAL_JUDGED;

		if (judged)
			worst = fmax(worst, d);
		if (f)
			fprintf(f, "  %-34s %10.1f us %10.1f us  %5.1f%%%s\n", names[i],
				fa[i] * 1e6, fb[i] * 1e6, 100 * d,
				judged ? "" : "  (shown, not judged: part of the p50 above)");
	}
	return worst;
}
