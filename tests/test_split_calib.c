// SPDX-License-Identifier: MIT
/*
 * split/calib.c and the packet path's load model: the fit reproduces measurements made by a
 * known profile (and recovers its curves), a profile's curves survive a save and a load, bad
 * curve lines are refused with their line named, two calibrations are compared on the figures
 * the planner rests on, and the MODELED capacity is where the answered share drops under 99%.
 */
#include <errno.h>
#include <math.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include <cmocka.h>

#include "split/calib.h"
#include "split/split.h"

/* The three calibration series' plans as calibrate --packet builds them, by hand. */
static void series(struct split_cal_series s[SPLIT_CAL__COUNT], const struct split_profile *pr)
{
	const double host_s = pr->v[SPLIT_P_HOST_REQ], scale = pr->v[SPLIT_P_HOST_SCALE];

	memset(s, 0, SPLIT_CAL__COUNT * sizeof(*s));
	for (unsigned k = 0; k < SPLIT_CAL__COUNT; k++) {
		s[k].pl.pr = pr;
		s[k].pl.sys_s = pr->v[SPLIT_P_SYS_S] * (k == SPLIT_CAL_NIC ? 1.25 : 1);
		s[k].pl.sys_w = s[k].pl.sys_s; /* sys.frames_exp 1 */
		s[k].pl.n = 1;
		s[k].pl.srv[0] = (struct split_server){.name = "host",
						       .own = k == SPLIT_CAL_HOST ? 80e-6 : 2e-6,
						       .cap = 64,
						       .kind = SPLIT_SRV_HOST};
		s[k].pl.srv[0].s = host_s + scale * s[k].pl.srv[0].own;
	}
	s[SPLIT_CAL_NIC].pl.n = 2;
	s[SPLIT_CAL_NIC].pl.srv[1] = (struct split_server){
	    .name = "nic", .s = 120e-6, .own = 120e-6, .cap = 32, .kind = SPLIT_SRV_NIC};
	s[SPLIT_CAL_NIC].pl.fb.on = true;
	s[SPLIT_CAL_NIC].pl.fb.host = 0;
	s[SPLIT_CAL_NIC].pl.fb.nic = 1;
	s[SPLIT_CAL_NIC].pl.fb.own_back = 30e-6;
	s[SPLIT_CAL_NIC].pl.fb.s_back = scale * 30e-6;
}

static void truth(struct split_profile *t)
{
	split_profile_default(t);
	t->v[SPLIT_P_SYS_S] = 15e-6;
	t->v[SPLIT_P_HOST_REQ] = 6e-6;
	t->v[SPLIT_P_HOST_SCALE] = 1.2;
	t->v[SPLIT_P_PATH_FIXED] = 40e-6;
	t->v[SPLIT_P_PATH_COPROC] = 7e-6;
	/* curves unlike the defaults: the waits 1.7 times M/D/1's, a NIC that falls back early */
	for (uint32_t i = 0; i < t->n_grid; i++) {
		const double u = t->grid[i];

		t->curve[SPLIT_CV_SYS_P50][i] *= 1.7;
		t->curve[SPLIT_CV_HOST_P50][i] *= 1.3;
		t->curve[SPLIT_CV_HOST_P99][i] *= 0.8;
		t->curve[SPLIT_CV_NIC_P50][i] *= 2.0;
		t->curve[SPLIT_CV_NIC_FB][i] = u < 0.5 ? 0 : fmin(0.9, (u - 0.5) * 0.6);
		t->curve[SPLIT_CV_HOST_ANS][i] = u < 0.9 ? 1 : fmax(0.3, 1 - (u - 0.9));
	}
	t->curve[SPLIT_CV_SYS_P50][0] = t->curve[SPLIT_CV_NIC_P50][0] = 0;
	/* the host curves in the host series' service (split_cal_fit sets it so) */
	t->v[SPLIT_P_HOST_CURVE] = t->v[SPLIT_P_HOST_REQ] + t->v[SPLIT_P_HOST_SCALE] * 80e-6;
	/* servers that busy-poll: the curves alone (test_calib_fit_wake: adaptive) */
	t->v[SPLIT_P_POLL_HOST] = t->v[SPLIT_P_POLL_NIC] = 0;
}

/* The three series "measured" with the true profile t at the grid's utilisations, into sf
 * (whose profile f knows t's scalars, not its curves or fixed delays). */
static void measure(struct split_cal_series st[SPLIT_CAL__COUNT],
		    struct split_cal_series sf[SPLIT_CAL__COUNT], const struct split_profile *t,
		    struct split_profile *f)
{
	series(st, t);
	st[SPLIT_CAL_SYS].pl.fixed = st[SPLIT_CAL_HOST].pl.fixed = t->v[SPLIT_P_PATH_FIXED];
	st[SPLIT_CAL_NIC].pl.fixed = t->v[SPLIT_P_PATH_FIXED] + t->v[SPLIT_P_PATH_COPROC];
	split_profile_default(f);
	f->v[SPLIT_P_SYS_S] = t->v[SPLIT_P_SYS_S];
	f->v[SPLIT_P_HOST_REQ] = t->v[SPLIT_P_HOST_REQ];
	f->v[SPLIT_P_HOST_SCALE] = t->v[SPLIT_P_HOST_SCALE];
	for (unsigned k = SPLIT_P_POLL_WAKE; k <= SPLIT_P_POLL_NIC; k++)
		f->v[k] = t->v[k];
	series(sf, f);
	for (unsigned k = 0; k < SPLIT_CAL__COUNT; k++)
		for (uint32_t i = 0; i < t->n_grid; i++) {
			const double rps = t->grid[i] / split_cal_service(&st[k], k);
			struct split_load_pred p;

			split_pipeline_predict(&st[k].pl, rps, &p);
			sf[k].o[i] = (struct split_cal_obs){.rps = rps,
							    .p50 = p.p50,
							    .p99 = p.p99,
							    .answered = p.answered,
							    .fallback = p.fallback};
		}
}

static void test_calib_fit_reproduces(void **state)
{
	struct split_profile t, f;
	struct split_cal_series st[SPLIT_CAL__COUNT], sf[SPLIT_CAL__COUNT];
	double worst;

	(void)state;
	truth(&t);
	/* "measure" with the true profile at the grid's utilisations of each kind */
	measure(st, sf, &t, &f);
	worst = split_cal_fit(&f, sf, NULL, NULL);
	assert_true(worst < 0.01);
	assert_true(fabs(f.v[SPLIT_P_PATH_FIXED] - 40e-6) < 0.5e-6);
	assert_true(fabs(f.v[SPLIT_P_PATH_COPROC] - 7e-6) < 0.5e-6);
	/* below saturation (where a point moves the prediction) the curves are the true ones */
	for (uint32_t i = 1; i < t.n_grid && t.grid[i] < 0.9; i++) {
		assert_true(fabs(f.curve[SPLIT_CV_SYS_P50][i] - t.curve[SPLIT_CV_SYS_P50][i]) <
			    0.02 * t.curve[SPLIT_CV_SYS_P50][i] + 1e-3);
		/* the host's rise from its first point: a host stage's excess is counted from
		 * what the sys curve holds, below that point the curve's first value */
		const double rf = f.curve[SPLIT_CV_HOST_P50][i] - f.curve[SPLIT_CV_HOST_P50][0];
		const double rt = t.curve[SPLIT_CV_HOST_P50][i] - t.curve[SPLIT_CV_HOST_P50][0];

		assert_true(fabs(rf - rt) < 0.02 * rt + 1e-3);
		assert_true(fabs(f.curve[SPLIT_CV_NIC_FB][i] - t.curve[SPLIT_CV_NIC_FB][i]) < 0.01);
	}
	/* a spike in one measurement (a descheduled round) leaves the curves monotone */
	sf[SPLIT_CAL_HOST].o[3].p50 *= 4;
	sf[SPLIT_CAL_SYS].o[2].answered = 0.5;
	split_cal_fit(&f, sf, NULL, NULL);
	for (uint32_t i = 1; i < f.n_grid; i++) {
		assert_true(f.curve[SPLIT_CV_HOST_P50][i] >= f.curve[SPLIT_CV_HOST_P50][i - 1]);
		assert_true(f.curve[SPLIT_CV_SYS_ANS][i] <= f.curve[SPLIT_CV_SYS_ANS][i - 1]);
	}
	assert_true(f.curve[SPLIT_CV_HOST_P50][3] > t.curve[SPLIT_CV_HOST_P50][3]);
	/* and the predictions rise with the load */
	for (unsigned k = 0; k < SPLIT_CAL__COUNT; k++)
		for (uint32_t i = 1; i < f.n_grid && f.grid[i] < 0.9; i++) {
			struct split_load_pred a, b;

			split_pipeline_predict(&sf[k].pl, sf[k].o[i - 1].rps, &a);
			split_pipeline_predict(&sf[k].pl, sf[k].o[i].rps, &b);
			assert_true(b.p50 > a.p50 && b.p99 >= a.p99);
		}
}

/* With adaptive polling in the model (the lab's 20 us sleeps, a 40 us late timer) the fit still
 * reproduces every measurement and finds the fixed delays: the wake-ups are the model's, not the
 * curves'. */
static void test_calib_fit_wake(void **state)
{
	struct split_profile t, f;
	struct split_cal_series st[SPLIT_CAL__COUNT], sf[SPLIT_CAL__COUNT];

	(void)state;
	truth(&t);
	t.v[SPLIT_P_POLL_HOST] = t.v[SPLIT_P_POLL_NIC] = 20e-6;
	t.v[SPLIT_P_POLL_WAKE] = 40e-6;
	measure(st, sf, &t, &f);
	assert_true(split_cal_fit(&f, sf, NULL, NULL) < 0.01);
	assert_true(fabs(f.v[SPLIT_P_PATH_FIXED] - 40e-6) < 0.5e-6);
	assert_true(fabs(f.v[SPLIT_P_PATH_COPROC] - 7e-6) < 0.5e-6);
	/* the sleeps cost the low loads more than the busy servers' model says */
	{
		struct split_profile b = t;
		struct split_load_pred pa, pb;

		b.v[SPLIT_P_POLL_HOST] = b.v[SPLIT_P_POLL_NIC] = 0;
		st[SPLIT_CAL_HOST].pl.pr = &t;
		split_pipeline_predict(&st[SPLIT_CAL_HOST].pl, sf[SPLIT_CAL_HOST].o[0].rps, &pa);
		st[SPLIT_CAL_HOST].pl.pr = &b;
		split_pipeline_predict(&st[SPLIT_CAL_HOST].pl, sf[SPLIT_CAL_HOST].o[0].rps, &pb);
		assert_true(pa.p50 > pb.p50 + 5e-6);
	}
}

/*
 * path.coproc_s from a short chain's plan (hop): the nic series' long chain measured 30 us below
 * what the true profile gives at every load (a chain that hides part of the path) no longer
 * drags the co-processor term below the truth; without hop it does.
 */
static void test_calib_fit_hop(void **state)
{
	struct split_profile t, f;
	struct split_cal_series st[SPLIT_CAL__COUNT], sf[SPLIT_CAL__COUNT], ht, hf;
	struct split_load_pred p;

	(void)state;
	truth(&t);
	measure(st, sf, &t, &f);
	ht = st[SPLIT_CAL_NIC];
	ht.pl.srv[1].s = ht.pl.srv[1].own = 40e-6;
	hf = sf[SPLIT_CAL_NIC];
	hf.pl.srv[1] = ht.pl.srv[1];
	split_pipeline_predict(&ht.pl, sf[SPLIT_CAL_NIC].o[0].rps, &p);
	hf.o[0] = (struct split_cal_obs){.rps = sf[SPLIT_CAL_NIC].o[0].rps,
					 .p50 = p.p50,
					 .p99 = p.p99,
					 .answered = p.answered,
					 .fallback = p.fallback};
	/* measured as the truth: the same fit, whichever point the term comes from (from the
	 * curves a first fit leaves: an overloaded point whose p99 does not see the NIC's curve
	 * is solved to its bound, and where that lands moves with the start) */
	split_cal_fit(&f, sf, NULL, NULL);
	assert_true(split_cal_fit(&f, sf, &hf, NULL) < 0.01);
	assert_true(fabs(f.v[SPLIT_P_PATH_COPROC] - 7e-6) < 0.5e-6);
	assert_true(f.curve[SPLIT_CV_NIC_P50][0] < 1e-3);
	/* the long chain 30 us faster than the truth at every load */
	for (uint32_t i = 0; i < t.n_grid; i++)
		sf[SPLIT_CAL_NIC].o[i].p50 -= 30e-6;
	split_cal_fit(&f, sf, &hf, NULL);
	assert_true(fabs(f.v[SPLIT_P_PATH_COPROC] - 7e-6) < 0.5e-6);
	assert_true(f.curve[SPLIT_CV_NIC_P50][0] >= 0);
	split_cal_fit(&f, sf, NULL, NULL);
	assert_true(fabs(f.v[SPLIT_P_PATH_COPROC] + 23e-6) < 0.5e-6);
	/* the path at hop's rate 50 us slower than the model says (its wake-ups), hop as well:
	 * with the path measured there (ref) the term is the co-processor's own */
	{
		struct split_cal_obs ref = {.rps = hf.o[0].rps, .answered = 1};

		split_pipeline_predict(&st[SPLIT_CAL_SYS].pl, ref.rps, &p);
		ref.p50 = p.p50 + 50e-6;
		hf.o[0].p50 += 50e-6;
		split_cal_fit(&f, sf, &hf, NULL);
		assert_true(fabs(f.v[SPLIT_P_PATH_COPROC] - 57e-6) < 0.5e-6);
		split_cal_fit(&f, sf, &hf, &ref);
		assert_true(fabs(f.v[SPLIT_P_PATH_COPROC] - 7e-6) < 0.5e-6);
	}
}

static int read_text(const char *text, struct split_profile *p, char *err, size_t len)
{
	FILE *f = fmemopen((void *)text, strlen(text), "r");
	int ret;

	assert_non_null(f);
	ret = split_profile_read(f, "t.profile", p, err, len);
	fclose(f);
	return ret;
}

/* An all-host pipeline of one host stage of `own` seconds (scale 1), no fixed delay. */
static void one_host(struct split_pipeline *pl, const struct split_profile *pr, double own)
{
	memset(pl, 0, sizeof(*pl));
	pl->pr = pr;
	pl->n = 1;
	pl->sys_s = pl->sys_w = pr->v[SPLIT_P_SYS_S];
	pl->srv[0] =
	    (struct split_server){.name = "host", .own = own, .cap = 64, .kind = SPLIT_SRV_HOST};
	pl->srv[0].s = pr->v[SPLIT_P_HOST_REQ] + own;
}

/*
 * Up to host.curve_s (the calibration host's service) a host stage's excess is its curve in its
 * own service; a longer stage adds its own M/D/1 queue beyond the calibration's excess, not that
 * excess scaled up. Without the key (a profile from before): the curve in the stage's service.
 */
static void test_calib_host_curve_time(void **state)
{
	struct split_profile pr;
	struct split_pipeline pl;
	struct split_load_pred lo, hi;
	const double own = 900e-6, u = 0.7, ref = 100e-6;
	double s, h, excess, md1;

	(void)state;
	split_profile_default(&pr);
	pr.v[SPLIT_P_SYS_S] = 15e-6;
	pr.v[SPLIT_P_HOST_REQ] = 6e-6;
	pr.v[SPLIT_P_HOST_SCALE] = 1;
	pr.v[SPLIT_P_POLL_HOST] = pr.v[SPLIT_P_POLL_NIC] = 0;
	one_host(&pl, &pr, own);
	s = pl.srv[0].s;
	/* the curve's rise from 1 request/s (below its first point it stays at that point's) */
	h = split_curve_at(&pr, SPLIT_CV_HOST_P50, u) - split_curve_at(&pr, SPLIT_CV_HOST_P50, s);
	assert_true(h > 0.5);
	split_pipeline_predict(&pl, 1, &lo);
	split_pipeline_predict(&pl, u / s, &hi);
	excess = hi.p50 - lo.p50;
	assert_true(fabs(excess - s * h) < 0.03 * s * h);
	/* M/D/1's p50 wait (the exponential tail through its mean) for s, less ref's */
	md1 = (u * s / (2 * (1 - u)) - u * ref / (2 * (1 - u))) / u * log(u / 0.5);
	pr.v[SPLIT_P_HOST_CURVE] = ref;
	split_pipeline_predict(&pl, 1, &lo);
	split_pipeline_predict(&pl, u / s, &hi);
	excess = hi.p50 - lo.p50;
	assert_true(fabs(excess - (ref * h + md1)) < 0.03 * (ref * h + md1));
	assert_true(excess < 0.6 * s * h);
	/* a stage no longer than the calibration's: its own service times, as before */
	assert_true(fabs(split_host_excess(&pr, false, 60e-6, u, 64) -
			 60e-6 * split_curve_at(&pr, SPLIT_CV_HOST_P50, u)) < 1e-12);
	assert_true(fabs(split_host_excess(&pr, false, ref, u, 64) -
			 ref * split_curve_at(&pr, SPLIT_CV_HOST_P50, u)) < 1e-12);
}

static void test_calib_profile_curves(void **state)
{
	static const struct {
		const char *text, *want;
	} bad[] = {
	    {"curve.u = 0.5 0.2\n", "t.profile:1: curve.u: increasing"},
	    {"curve.u = 0.1 0.5\ncurve.host.p50 = 1 2 3\n",
	     "t.profile:2: curve.host.p50: 2 values"},
	    {"curve.nic.fallback = 0 0 0 0 0 0 0 0 1.5\n", "curve.nic.fallback: values in 0..1"},
	    {"curve.sys.p50 = 1 2 x\n", "t.profile:1: curve.sys.p50: 1 to 12 numbers"},
	    {"curve.host.p50 = 0 0 0 0 0 0 0 0 0\ncurve.u = 0.5\n", "curve.u after"},
	    {"curve.u = 0.5\ncurve.u = 0.6\n", "t.profile:2: curve.u given twice"},
	};
	char path[] = "/tmp/test-split-calib-XXXXXX", err[256];
	struct split_profile a, b;
	int fd;

	(void)state;
	for (size_t i = 0; i < sizeof(bad) / sizeof(bad[0]); i++) {
		err[0] = 0;
		if (read_text(bad[i].text, &a, err, sizeof(err)) != -EINVAL ||
		    !strstr(err, bad[i].want))
			fail_msg("\"%s\": \"%s\", expected \"%s\"", bad[i].text, err, bad[i].want);
	}
	truth(&a);
	a.v[SPLIT_P_CAL_TIME] = 1.7e9;
	fd = mkstemp(path);
	assert_true(fd >= 0);
	close(fd);
	assert_int_equal(split_profile_save(path, &a, "test"), 0);
	assert_int_equal(split_profile_load(path, &b, err, sizeof(err)), 0);
	unlink(path);
	assert_int_equal(a.n_grid, b.n_grid);
	for (uint32_t i = 0; i < a.n_grid; i++)
		for (unsigned c = 0; c < SPLIT_CV__COUNT; c++)
			assert_true(fabs(a.curve[c][i] - b.curve[c][i]) <=
				    1e-5 * fabs(a.curve[c][i]) + 1e-9);
	assert_true(split_cal_compare(&a, &b, NULL) < 1e-4);
	/* between the points linear, past the last one a full queue and the fluid shares */
	assert_true(fabs(split_curve_at(&a, SPLIT_CV_HOST_ANS, 3.0) -
			 a.curve[SPLIT_CV_HOST_ANS][a.n_grid - 1] * a.grid[a.n_grid - 1] / 3) <
		    1e-12);
	assert_true(split_curve_at(&a, SPLIT_CV_HOST_P50, 5) ==
		    a.curve[SPLIT_CV_HOST_P50][a.n_grid - 1]);
}

static void test_calib_compare(void **state)
{
	struct split_profile a, b;
	double v[5] = {10, 11, 9, 10.5, 10}, fa[SPLIT_CAL_FIGURES], fb[SPLIT_CAL_FIGURES];

	(void)state;
	truth(&a);
	a.v[SPLIT_P_HOST_CURVE] = 0; /* the host's excess in its own service: linear in the curve */
	b = a;
	assert_true(split_cal_compare(&a, &b, NULL) == 0);
	b.v[SPLIT_P_PATH_FIXED] *= 1.25; /* 40 -> 50 us: 20% of the larger */
	assert_true(fabs(split_cal_compare(&a, &b, NULL) - 0.2) < 1e-9);
	b = a;
	b.curve[SPLIT_CV_HOST_P50][3] *= 2; /* the excess at 0.55: twice */
	split_cal_figures(&a, fa, NULL);
	split_cal_figures(&b, fb, NULL);
	/* judged on the host's p50 there (no-load time and excess), the excess alone shown */
	assert_true(fabs(fb[11] - 2 * fa[11]) < 1e-12 && fabs(fb[6] - fa[6] - fa[11]) < 1e-12);
	assert_true(fabs(split_cal_compare(&a, &b, NULL) - fa[11] / fb[6]) < 1e-9);
	assert_true(fa[11] / fb[6] > 0.1); /* as the truth's curve has it: a difference, seen */
	b = a;
	b.v[SPLIT_P_NIC_STAGE] += 1e-6; /* the NIC's fixed microsecond: judged within its service */
	split_cal_figures(&b, fb, NULL);
	assert_true(fabs(fb[4] - fa[4] - 1e-6) < 1e-12 && fa[4] > 100e-6);
	assert_true(fabs(split_cal_compare(&a, &b, NULL) - 1e-6 / fb[4]) < 1e-9);
	b = a;
	b.curve[SPLIT_CV_NIC_P50][3] *= 3; /* the NIC's p50 at 0.55 */
	assert_true(split_cal_compare(&a, &b, NULL) > 0.1);
	/* an 18-frame request: its work (sys.frame_s) and its wait (sys.frames_exp) judged */
	b = a;
	a.v[SPLIT_P_SYS_FRAME] = b.v[SPLIT_P_SYS_FRAME] = a.v[SPLIT_P_SYS_S] / 4;
	assert_true(split_cal_compare(&a, &b, NULL) < 1e-12);
	b.v[SPLIT_P_SYS_FRAME] = a.v[SPLIT_P_SYS_S] / 8; /* 4.5 sys.s against 2.75 */
	split_cal_figures(&a, fa, NULL);
	split_cal_figures(&b, fb, NULL);
	assert_true(fabs(fa[8] - 4.5 * a.v[SPLIT_P_SYS_S]) < 1e-15);
	assert_true(fabs(split_cal_compare(&a, &b, NULL) - 1.75 / 4.5) < 1e-9);
	b = a;
	b.v[SPLIT_P_SYS_FRAMES] = 0; /* the wait of a 4-frame request, not 4.5 times it */
	split_cal_figures(&b, fb, NULL);
	assert_true(fabs(fa[9] - fa[0] - 4.5 * fa[10]) < 1e-15 &&
		    fabs(fb[9] - fb[0] - fb[10]) < 1e-15);
	assert_true(split_cal_compare(&a, &b, NULL) > 0);
	assert_true(fabs(split_cal_range(v, 5) - 0.2) < 1e-12);
	assert_true(split_cal_range(v, 1) == 0);
}

static void test_calib_capacity(void **state)
{
	struct split_profile pr;
	struct split_cal_series s[SPLIT_CAL__COUNT];
	struct split_load_pred p;
	double cap;

	(void)state;
	truth(&pr);
	series(s, &pr);
	cap = split_pipeline_capacity(&s[SPLIT_CAL_HOST].pl, 0.99);
	split_pipeline_predict(&s[SPLIT_CAL_HOST].pl, cap * 0.999, &p);
	assert_true(p.answered >= 0.99);
	split_pipeline_predict(&s[SPLIT_CAL_HOST].pl, cap * 1.01, &p);
	assert_true(p.answered < 0.99);
	split_pipeline_predict(&s[SPLIT_CAL_HOST].pl, 0, &p);
	assert_true(fabs(p.throughput - cap) < 1e-9 * cap);
	/* the fallback keeps answering past the NIC's saturation, until the host saturates */
	cap = split_pipeline_capacity(&s[SPLIT_CAL_NIC].pl, 0.99);
	assert_true(cap > 1 / s[SPLIT_CAL_NIC].pl.srv[1].s);
	split_pipeline_predict(&s[SPLIT_CAL_NIC].pl, cap * 0.999, &p);
	assert_true(p.fallback > 0.1 && p.by_nic + p.fallback > 0.99 - 1e-9);
	assert_true(fabs(p.by_nic + p.fallback + p.shed - 1) < 1e-9);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
	    cmocka_unit_test(test_calib_fit_reproduces),
	    cmocka_unit_test(test_calib_fit_wake),
	    cmocka_unit_test(test_calib_fit_hop),
	    cmocka_unit_test(test_calib_host_curve_time),
	    cmocka_unit_test(test_calib_profile_curves),
	    cmocka_unit_test(test_calib_compare),
	    cmocka_unit_test(test_calib_capacity),
	};

	return cmocka_run_group_tests(tests, NULL, NULL);
}
