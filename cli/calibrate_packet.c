// SPDX-License-Identifier: MIT
/*
 * splitnic calibrate --packet: the packet path measured as deployed, fitted into the profile.
 *
 * Calibration models (all-binary MLPs on 256 u8 inputs, random weights): twelve NIC models
 * answered stand-alone (the NIC's time per request against its chain's own time); "sys", no
 * compute, all on the host (the path's capacity and how it waits under load); "host", a stage
 * that keeps the host's core busy; "host2", a small one (the host's service against compute,
 * and an out-of-sample check); "nic", a co-processor plan whose NIC stage is the busy one. One
 * splitnic-nic and one splitnic-host serve them all, as the sweeps start them; the client loads
 * them open loop (Poisson) at the utilisations of the profile's grid, every figure in
 * interleaved rounds. A noisy machine is measured again, and every attempt's rounds are kept:
 * the fit takes the medians of all of them (split/calib.c fits the curves), so that a second
 * calibration converges on the same figures rather than on another attempt's luck.
 */
#include <errno.h>
#include <math.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include "cli/calibrate_packet.h"
#include "cli/calibrate_util.h"
#include "cli/cmds.h"
#include "exec/kexec.h"
#include "lab/plan_measure.h"
#include "lab/sweep.h"
#include "split/calib.h"
#include "split/stats.h"

#define CAL_IN	    256	  /* u8 inputs of the host and co-processor models */
#define CAL_WIDE_IN 10000 /* u8 inputs of "sys-wide": a REQUEST of 8 datagrams */
#define CAL_NIC_IN  64	  /* u8 inputs of the NIC models */
#define CAL_CLASS   16
#define CAL_OUT	    2 /* classes of "sys" */
#define UNSHAPED    1000.0
#define MAX_ROUNDS  9
#define MAX_POOL    (MAX_ROUNDS * 9) /* rounds of every attempt: --rounds x --attempts */
#define N_VALID	    3		     /* host2's points: utilisations 0.25, 0.55, 0.85 */
#define CAP_SECONDS 0.5

/* NIC models, stand-alone: hidden widths, 0-terminated. */
static const uint32_t nic_fit_hidden[][4] = {
    {0},
    {1024, 0},
    {4096, 0},
    {256, 256, 256},
    {1024, 1024, 0},
    {2048, 2048, 0},
    {4096, 4096, 0},
    {256, 4096, 0},
    {4096, 256, 0},
    {2048, 4096, 2048},
    {4096, 4096, 4096},
    {8192, 0},
};
#define N_NIC (sizeof(nic_fit_hidden) / sizeof(nic_fit_hidden[0]))

enum { M_SYS, M_HOST, M_HOST2, M_NIC, M_WIDE, M_COPROC, M__COUNT };

static const struct {
	const char *name;
	uint32_t in, hidden[4], out, split; /* split: the NIC from this op (0: all on the host) */
} cal_models[M__COUNT] = {
    [M_SYS] = {"cal-sys", CAL_IN, {32, 16}, CAL_OUT, 0},
    [M_HOST] = {"cal-host", CAL_IN, {4096, 4096, 2048}, CAL_CLASS, 0},
    [M_HOST2] = {"cal-host2", CAL_IN, {1024, 1024}, CAL_CLASS, 0},
    [M_NIC] = {"cal-nic", CAL_IN, {64, 1024, 1024}, CAL_CLASS, 1},
    [M_WIDE] = {"cal-sys-wide", CAL_WIDE_IN, {32, 16}, CAL_OUT, 0},
    /* a co-processor plan whose chain is short (two small layers): path.coproc_s */
    [M_COPROC] = {"cal-coproc", CAL_IN, {64, 64}, CAL_CLASS, 1},
};

static const double valid_u[N_VALID] = {0.25, 0.55, 0.85};

struct cal_model {
	char path[300];
	struct model *m;
	struct plan_measured pm;
	struct split_problem prob;
	struct split_plan plan;
	struct split_pipeline pl;
	double nic_t; /* NIC models: the chain's own time */
	double x[4];  /* NIC models: 1, layers, neuron-words, neurons */
};

struct cal {
	const struct cal_pk_opts *o;
	struct split_profile *pr;
	struct sweep_lab lab;
	char dir[64];
	struct cal_model nic[N_NIC], mod[M__COUNT];
	/* per round, the attempts' rounds one after the other: this attempt's are [r0, r0 +
	 * rounds), the fit's [0, n) */
	uint32_t r0, n;
	double cap[MAX_POOL][4]; /* open-loop capacity of sys, host, host2, sys-wide */
	struct sweep_point nicpt[MAX_POOL][N_NIC];
	struct sweep_point grid[MAX_POOL][SPLIT_CAL__COUNT][SPLIT_GRID_MAX];
	struct sweep_point sys_base[MAX_POOL]; /* sys at the nic series' lowest rate */
	struct split_cal_obs base;	       /* its medians: path.coproc_s's reference */
	struct sweep_point hop[MAX_POOL];      /* cal-coproc at the same rate: path.coproc_s */
	struct sweep_point valid[MAX_POOL][N_VALID];
	double valid_rps[N_VALID];
	struct sweep_point wide[MAX_POOL][N_VALID]; /* sys-wide at the utilisations valid_u */
	double wide_rps[N_VALID];
	double spread; /* this attempt's rounds */
	char spread_what[96];
};

/* SIGINT or SIGTERM: the next measurement is not started and the lab comes down (its servers
 * would otherwise go on polling two cores, unseen, under whatever is measured next). */
static volatile sig_atomic_t cal_stop;

static void on_signal(int sig)
{
	cal_stop = sig;
}

/* ---- set-up: models, their measured ops and plans, the servers --------------------------- */

/* One timing of a model's ops (plan_measure once: measure_own spaces the calibration models'
 * timings itself; the NIC models are priced by the emulator, not by their ops' time). */
static int measure_model(struct cal *c, struct cal_model *cm, uint32_t rounds)
{
	char err[512];
	int ret;

	if (!cm->m)
		cm->m = model_load(cm->path, err, sizeof(err));
	ret = cm->m ? plan_measure(cm->m, c->pr, rounds, 1, c->o->executors, &cm->pm, err,
				   sizeof(err))
		    : -EINVAL;
	if (ret)
		fprintf(stderr, "splitnic calibrate: %s\n", err);
	return ret;
}

/*
 * The calibration models' in-process times, which the host's line relates every stage to,
 * timed as plan and the sweeps time a model (OWN_ROUNDS runs of every prefix in passes), but
 * OWN_TIMES times before, between and after the NIC models' (tens of seconds apart, where plan
 * takes two a second apart): the fastest is kept, the machine outside a spell, as
 * split_tools_measure_ops prices it. Timed once with fewer runs, cal-host's own work was
 * 62.3 us in one calibration and 70.9 us in the next (2026-11-29), and host.scale followed
 * (1.05 against 0.92); a sweep timed the same model at 60.6 us an hour later.
 */
#define OWN_ROUNDS 31
#define OWN_TIMES  3

static int measure_own(struct cal *c, uint32_t time_no, double (*own)[OWN_TIMES])
{
	int ret = 0;

	for (unsigned k = 0; k < M__COUNT && !ret; k++) {
		struct cal_model *cm = &c->mod[k];
		struct plan_measured kept = cm->pm;

		ret = measure_model(c, cm, OWN_ROUNDS);
		if (ret) {
			cm->pm = kept;
			break;
		}
		own[k][time_no] = cm->pm.cpu_total_s;
		if (time_no && kept.cpu_total_s <= cm->pm.cpu_total_s) {
			plan_measured_free(&cm->pm);
			cm->pm = kept;
		} else {
			plan_measured_free(&kept);
		}
	}
	return ret;
}

static int make_models(struct cal *c)
{
	double own[M__COUNT][OWN_TIMES] = {{0}};
	int ret = 0;

	for (unsigned k = 0; k < M__COUNT && !ret; k++)
		ret = cal_mlp(c->dir, cal_models[k].name, cal_models[k].in, cal_models[k].hidden,
			      cal_models[k].out, c->mod[k].path, sizeof(c->mod[k].path));
	if (!ret)
		ret = measure_own(c, 0, own);
	for (uint32_t g = 0; g < N_NIC && !ret; g++) {
		struct cal_model *cm = &c->nic[g];
		uint32_t prev = CAL_NIC_IN, nh = 0;
		char name[32];

		snprintf(name, sizeof(name), "cal-nic-%u", g);
		ret = cal_mlp(c->dir, name, CAL_NIC_IN, nic_fit_hidden[g], CAL_CLASS, cm->path,
			      sizeof(cm->path));
		if (!ret)
			ret = measure_model(c, cm, 15);
		if (ret)
			break;
		/* the profile's per-op model of the NIC (split_op_cost): u8 layers count 8 words */
		cm->x[0] = 1;
		cm->x[1] = 1;
		cm->x[3] = CAL_CLASS;
		for (; nh < 4 && nic_fit_hidden[g][nh]; nh++) {
			cm->x[1] += 1;
			cm->x[2] +=
			    (double)nic_fit_hidden[g][nh] * model_words(prev) * (nh ? 1 : 8);
			cm->x[3] += nic_fit_hidden[g][nh];
			prev = nic_fit_hidden[g][nh];
		}
		cm->x[2] += (double)CAL_CLASS * model_words(prev) * (nh ? 1 : 8);
		cm->nic_t = cm->pm.nic_suffix_s[0];
	}
	if (!ret)
		ret = measure_own(c, 1, own);
	for (uint32_t t = 2; t < OWN_TIMES && !ret; t++) {
		sleep(2);
		ret = measure_own(c, t, own);
	}
	if (ret)
		return ret;
	printf("calibrate: in-process own work (MEASURED, %u timings of %u runs, the fastest "
	       "kept):",
	       OWN_TIMES, OWN_ROUNDS);
	for (unsigned k = 0; k < M__COUNT; k++) {
		printf("%s %s", k ? ";" : "", cal_models[k].name);
		for (uint32_t t = 0; t < OWN_TIMES; t++)
			printf("%s%.1f", t ? " / " : " ", own[k][t] * 1e6);
		printf(" us");
	}
	printf("\n");
	return 0;
}

/* The plan of calibration model k and its servers under the profile as it stands. */
static int model_pipeline(struct cal *c, unsigned k)
{
	struct cal_model *cm = &c->mod[k];
	const struct model *m = cm->m;
	const uint32_t sp = cal_models[k].split;
	struct split_opts o = {.link_gbps = UNSHAPED,
			       .packet = true,
			       .exec_mask = SPLIT_EXM(SPLIT_EX_CPU) | SPLIT_EXM(SPLIT_EX_NIC),
			       .nic_first = kexec_nic_first(m),
			       .cpu_op_s = cm->pm.cpu_op_s,
			       .nic_suffix_s = cm->pm.nic_suffix_s};
	int ret;

	split_problem_free(&cm->prob);
	ret = split_problem_from_model(&cm->prob, m, c->pr, &o);
	if (ret)
		return ret;
	memset(&cm->plan, 0, sizeof(cm->plan));
	cm->plan.stage[cm->plan.n_stages++] =
	    (struct split_stage){.exec = SPLIT_EX_CPU, .first = 0, .last = sp ? sp : m->n_layers};
	if (sp)
		cm->plan.stage[cm->plan.n_stages++] =
		    (struct split_stage){.exec = SPLIT_EX_NIC, .first = sp, .last = m->n_layers};
	ret = split_plan_pipeline(&cm->prob, m, c->pr, &o, &cm->plan, &cm->pl);
	if (ret)
		fprintf(stderr, "splitnic calibrate: %s: not a plan of the cost model\n", m->name);
	return ret;
}

static int start_servers(struct cal *c)
{
	char nicmod[N_NIC + 2][320], hostmod[M__COUNT][340], execs[16], *args[120];
	char nic_opt[SWEEP_OPT_LEN];
	struct sweep_host_args host;
	size_t n = 0;

	args[n++] = c->lab.dir;
	for (uint32_t g = 0; g < N_NIC; g++) {
		snprintf(nicmod[g], sizeof(nicmod[g]), "%s", c->nic[g].path);
		args[n++] = "--model";
		args[n++] = nicmod[g];
	}
	for (unsigned k = 0; k < 2; k++) {
		const unsigned m = k ? M_COPROC : M_NIC;

		snprintf(nicmod[N_NIC + k], sizeof(nicmod[N_NIC + k]), "%s@%u", c->mod[m].path,
			 cal_models[m].split);
		args[n++] = "--model";
		args[n++] = nicmod[N_NIC + k];
	}
	snprintf(execs, sizeof(execs), "%u", c->o->executors);
	args[n++] = "--notify-host";
	args[n++] = "--executors";
	args[n++] = execs;
	args[n++] = "--platform";
	args[n++] = (char *)c->o->platform;
	n = sweep_lab_words(args, n, 60, c->o->nic_opt, nic_opt);
	args[n++] = "--";
	for (unsigned k = 0; k < M__COUNT; k++) {
		if (cal_models[k].split)
			snprintf(hostmod[k], sizeof(hostmod[k]), "%s:coproc:%u", c->mod[k].path,
				 cal_models[k].split);
		else
			snprintf(hostmod[k], sizeof(hostmod[k]), "%s:host-only", c->mod[k].path);
		args[n++] = "--model";
		args[n++] = hostmod[k];
	}
	n = sweep_lab_host_args(args, n, 118, c->pr, c->o->host_opt, &host);
	args[n] = NULL;
	if (sweep_lab_verb(&c->lab, "start", args)) {
		fprintf(stderr, "splitnic calibrate: the servers did not start\n");
		return -EIO;
	}
	return 0;
}

/* ---- measuring ----------------------------------------------------------------------------- */

/* The client on model `path`: open loop (Poisson) at rps for count requests, or closed loop
 * with 16 outstanding (rps 0). */
static int client(struct cal *c, const char *path, double rps, uint32_t count,
		  struct sweep_point *pt)
{
	char cnt[32], rate[32];
	char *args[] = {
	    "--model", (char *)path,   "--count", cnt,	rps > 0 ? "--rate" : "--outstanding",
	    rate,      "--timeout-ms", "5000",	  NULL, NULL};

	snprintf(cnt, sizeof(cnt), "%u", count);
	if (rps > 0) {
		snprintf(rate, sizeof(rate), "%.3f", rps);
		args[8] = "--poisson";
	} else {
		snprintf(rate, sizeof(rate), "16");
	}
	if (sweep_lab_client(&c->lab, args, pt)) {
		if (cal_stop)
			return -EINTR;
		fprintf(stderr, "splitnic calibrate: the client failed on %s\n", path);
		return -EIO;
	}
	if (!pt->responses) {
		fprintf(stderr, "splitnic calibrate: %s: no answers\n", path);
		return -EIO;
	}
	return 0;
}

static uint32_t count_for(double rps, double seconds)
{
	const double n = rps * seconds;

	return n < 150 ? 150 : n > 100000 ? 100000 : (uint32_t)n;
}

/* The capacities of sys, host, host2 and sys-wide in round r. */
static int measure_capacity(struct cal *c, uint32_t r)
{
	static const unsigned which[4] = {M_SYS, M_HOST, M_HOST2, M_WIDE};

	for (unsigned i = 0; i < 4; i++) {
		/* open loop, as the planner defines a capacity (sweep_lab_capacity) */
		if (sweep_lab_capacity(&c->lab, c->mod[which[i]].path, NULL,
				       r ? c->cap[r - 1][i] / 2 : 0, CAP_SECONDS,
				       SPLIT_CAPACITY_ANSWERED, &c->cap[r][i]))
			return -EIO;
	}
	return 0;
}

/* The NIC models at a quarter of their capacity (at most 300/s), round r. */
static int measure_nic(struct cal *c, uint32_t r)
{
	for (uint32_t g = 0; g < N_NIC; g++) {
		const double rps = fmin(300, 0.25 / fmax(c->nic[g].nic_t, 1e-6));
		int ret =
		    client(c, c->nic[g].path, rps, count_for(rps, c->o->duration), &c->nicpt[r][g]);

		if (ret)
			return ret;
	}
	return 0;
}

static double med_round(const double *v, uint32_t n)
{
	double tmp[MAX_POOL];

	memcpy(tmp, v, n * sizeof(double));
	return stats_median(tmp, n);
}

/* nic.stage_s and nic.scale (the NIC field against the chain's own time), the per-op model of
 * the chain's own time, path.nic_s (the end to end beyond the field). */
static void fit_nic(struct cal *c)
{
	const uint32_t R = c->n;
	double x[N_NIC][FIT_K], y[N_NIC], t[N_NIC], rest[N_NIC], beta[FIT_K];
	struct split_profile *pr = c->pr;
	const bool field = c->nicpt[0][0].srv_p50[PROTO_T_NIC] > 0;

	for (uint32_t g = 0; g < N_NIC; g++) {
		double f[MAX_POOL], e[MAX_POOL];

		for (uint32_t r = 0; r < R; r++) {
			f[r] = c->nicpt[r][g].srv_p50[PROTO_T_NIC] * 1e-9;
			e[r] = c->nicpt[r][g].p50 * 1e-6;
		}
		y[g] = med_round(f, R);
		rest[g] = med_round(e, R) - (field ? y[g] : 0);
		x[g][0] = 1;
		x[g][1] = c->nic[g].nic_t;
		x[g][2] = x[g][3] = 0;
		t[g] = c->nic[g].nic_t;
	}
	if (field) {
		lsq_nonneg((const double(*)[FIT_K])x, y, N_NIC, 2, beta);
		pr->v[SPLIT_P_NIC_STAGE] = beta[0];
		pr->v[SPLIT_P_NIC_SCALE] = beta[1] > 0 ? beta[1] : 1;
		pr->v[SPLIT_P_PATH_NIC] = fmax(0, stats_median(rest, N_NIC));
	} else {
		double e2e[N_NIC];

		for (uint32_t g = 0; g < N_NIC; g++)
			e2e[g] = rest[g];
		lsq_nonneg((const double(*)[FIT_K])x, e2e, N_NIC, 2, beta);
		pr->v[SPLIT_P_PATH_NIC] = beta[0];
		pr->v[SPLIT_P_NIC_STAGE] = 0;
		pr->v[SPLIT_P_NIC_SCALE] = beta[1] > 0 ? beta[1] : 1;
	}
	/* the per-op model (split_op_cost, for a plan without the chain's measured times) */
	for (uint32_t g = 0; g < N_NIC; g++)
		memcpy(x[g], &c->nic[g].x[1], 3 * sizeof(double));
	lsq_nonneg((const double(*)[FIT_K])x, t, N_NIC, 3, beta);
	pr->v[SPLIT_P_NIC_LAYER] = beta[0];
	pr->v[SPLIT_P_NIC_NWORD] = beta[1];
	pr->v[SPLIT_P_NIC_NEURON] = beta[2];
	printf("nic (%s, %u executors, MEASURED through the packet path, medians of %u rounds): "
	       "its time per request = %.1f us + %.3f x the chain's own time (%s); the path around "
	       "a stand-alone NIC %.1f us (p50)\n",
	       c->o->platform, c->o->executors, R, pr->v[SPLIT_P_NIC_STAGE] * 1e6,
	       pr->v[SPLIT_P_NIC_SCALE], c->o->platform[0] == 'e' ? "modeled" : "in process",
	       pr->v[SPLIT_P_PATH_NIC] * 1e6);
	for (uint32_t g = 0; g < N_NIC; g++)
		printf("  %-10s chain %8.1f us  nic field %8.1f us  fitted %8.1f us\n",
		       c->nic[g].m->name, t[g] * 1e6, y[g] * 1e6,
		       (pr->v[SPLIT_P_NIC_STAGE] + pr->v[SPLIT_P_NIC_SCALE] * t[g]) * 1e6);
}

/* The host's line through two models' capacities and own work: a stage costs its core
 * host.req_s + host.scale x its in-process time. Returns host.scale. */
static double host_line(struct split_profile *pr, double cap_a, double own_a, double cap_b,
			double own_b)
{
	const double scale = (1 / cap_a - 1 / cap_b) / (own_a - own_b);

	pr->v[SPLIT_P_HOST_SCALE] = scale;
	pr->v[SPLIT_P_HOST_REQ] = 1 / cap_a - scale * own_a;
	return scale;
}

/* sys.s, host.req_s and host.scale from the capacities (medians over the rounds). */
static void fit_capacity(struct cal *c)
{
	const uint32_t R = c->n;
	struct split_profile *pr = c->pr;
	double cap[4], own[3], col[MAX_POOL], raw, frames;

	for (unsigned i = 0; i < 4; i++) {
		for (uint32_t r = 0; r < R; r++)
			col[r] = c->cap[r][i];
		cap[i] = med_round(col, R);
	}
	pr->v[SPLIT_P_SYS_S] = 1 / cap[0];
	/* the path's work per frame: the line through sys's 4 frames and sys-wide's, neither
	 * part below 0 */
	model_pipeline(c, M_WIDE);
	frames = c->mod[M_WIDE].pl.frames;
	pr->v[SPLIT_P_SYS_FRAME] =
	    fmin(fmax(0, (1 / cap[3] - 1 / cap[0]) / (frames - 4)), 1 / cap[0] / 4);
	/* the host's own work of host, host2 and sys with a scale of 1 and no per-request cost */
	pr->v[SPLIT_P_HOST_REQ] = 0;
	pr->v[SPLIT_P_HOST_SCALE] = 1;
	for (unsigned i = 0; i < 3; i++) {
		static const unsigned which[3] = {M_HOST, M_HOST2, M_SYS};

		model_pipeline(c, which[i]);
		own[i] = c->mod[which[i]].pl.srv[0].own;
	}
	raw = host_line(pr, cap[1], own[0], cap[2], own[1]);
	if (pr->v[SPLIT_P_HOST_REQ] + raw * own[2] > 1 / cap[0] && own[0] > own[2]) {
		/* sys is all on the host too: its host core cannot cost more than the whole
		 * path did. host2's capacity was then the shared cores', not its core's (seen
		 * 2026-11-29: 25.1 us a request against sys's 19.9): the line through sys and
		 * host instead */
		raw = host_line(pr, cap[1], own[0], cap[0], own[2]);
		printf(
		    "capacity: host2's capacity puts the host's core above the whole path's cost "
		    "(sys's); the host's line taken through sys and host\n");
	}
	if (!(raw >= 0.5 && raw <= 4) || pr->v[SPLIT_P_HOST_REQ] < 0) {
		/* a core doing the work costs 0.5-4x its in-process time: outside that, what
		 * limited the two capacities was not the host's core (a busy machine) */
		pr->v[SPLIT_P_HOST_SCALE] = 1;
		pr->v[SPLIT_P_HOST_REQ] = fmax(0, fmin(1 / cap[1] - own[0], 1 / cap[2] - own[1]));
		printf("capacity: the host's two capacities do not fit a core doing the work "
		       "(%.2f x its in-process time): the machine was busy; 1 x kept\n",
		       raw);
	}
	printf("capacity (MEASURED: the largest open-loop load answered at 99%%, medians of %u "
	       "rounds): sys %.0f/s, sys-wide %.0f/s (%.0f frames), "
	       "host %.0f/s (own work %.1f us), host2 %.0f/s (%.1f us): sys.s %.2f us (4 frames) "
	       "+ %.2f us a further frame, a host "
	       "stage costs its core %.2f us + %.3f x its in-process time\n",
	       R, cap[0], cap[3], frames, cap[1], own[0] * 1e6, cap[2], own[1] * 1e6,
	       pr->v[SPLIT_P_SYS_S] * 1e6, pr->v[SPLIT_P_SYS_FRAME] * 1e6,
	       pr->v[SPLIT_P_HOST_REQ] * 1e6, pr->v[SPLIT_P_HOST_SCALE]);
}

static const unsigned series_model[SPLIT_CAL__COUNT] = {M_SYS, M_HOST, M_NIC};
static const char *const series_name[SPLIT_CAL__COUNT] = {"sys", "host", "nic"};

/*
 * The light-load rate: the nic series' lowest. cal-coproc (a short chain) is measured there
 * and path.coproc_s fitted from it: taken from the nic series' long chain (220 us) it came out
 * at -27 to -69 us in every calibration, where the sweeps' short chains cost about their chain
 * beyond all-host (2026-11-30; docs/split-planning.md). sys is measured there too and printed
 * beside its series, not fitted: what the path costs at that rate.
 */
static double sys_base_rps(const struct cal *c, const struct split_cal_series *s)
{
	return c->pr->grid[0] / split_cal_service(&s[SPLIT_CAL_NIC], SPLIT_CAL_NIC);
}

/* sys and cal-coproc at the light-load rate, the grid's loads of each series and host2's checks,
 * round r (the series interleaved). */
static int measure_grid(struct cal *c, uint32_t r, struct split_cal_series *s)
{
	const struct split_profile *pr = c->pr;
	const double base_rps = sys_base_rps(c, s);
	int ret = client(c, c->mod[M_SYS].path, base_rps, count_for(base_rps, c->o->duration),
			 &c->sys_base[r]);

	if (!ret)
		ret = client(c, c->mod[M_COPROC].path, base_rps,
			     count_for(base_rps, c->o->duration), &c->hop[r]);
	if (ret)
		return ret;
	for (uint32_t i = 0; i < pr->n_grid; i++)
		for (unsigned k = 0; k < SPLIT_CAL__COUNT; k++) {
			const double rps = pr->grid[i] / split_cal_service(&s[k], k);
			struct sweep_point *pt = &c->grid[r][k][i];

			ret = client(c, c->mod[series_model[k]].path, rps,
				     count_for(rps, c->o->duration), pt);
			if (ret)
				return ret;
			pt->load = rps;
			if (pr->grid[i] >= 1)
				usleep(300000); /* let a full queue drain */
		}
	for (uint32_t v = 0; v < N_VALID; v++) {
		ret = client(c, c->mod[M_HOST2].path, c->valid_rps[v],
			     count_for(c->valid_rps[v], c->o->duration), &c->valid[r][v]);
		if (!ret)
			ret = client(c, c->mod[M_WIDE].path, c->wide_rps[v],
				     count_for(c->wide_rps[v], c->o->duration), &c->wide[r][v]);
		if (ret)
			return ret;
	}
	return 0;
}

/*
 * The medians of a grid point over the rounds, as an observation (seconds, shares) at rps. A
 * point is a utilisation: each attempt loaded it at the rate its own fit gave, and the pooled
 * observation sits at the rate the pooled fit gives (rps), as the curves are read.
 */
static void observe(const struct sweep_point *const *pts, uint32_t R, double rps,
		    struct split_cal_obs *ob)
{
	double a[MAX_POOL], b[MAX_POOL], d[MAX_POOL], e[MAX_POOL];

	for (uint32_t r = 0; r < R; r++) {
		const struct sweep_point *p = pts[r];
		const double req = p->requests ? (double)p->requests : 1;

		a[r] = isfinite(p->p50) ? p->p50 * 1e-6 : 0;
		b[r] = isfinite(p->p99) ? p->p99 * 1e-6 : 0;
		d[r] = (double)p->responses / req;
		e[r] = (double)p->ex_fallback / req;
	}
	ob->rps = rps;
	ob->p50 = med_round(a, R);
	ob->p99 = med_round(b, R);
	ob->answered = med_round(d, R);
	ob->fallback = med_round(e, R);
}

/* The largest relative range over the rounds of the figures the fit rests on. */
static void spread_of(struct cal *c)
{
	const uint32_t R = c->o->rounds, r0 = c->r0, at[2] = {0, c->pr->n_grid / 4};
	double v[MAX_POOL];

	c->spread = 0;
	for (unsigned i = 0; i < 3; i++) {
		for (uint32_t r = 0; r < R; r++)
			v[r] = c->cap[r0 + r][i];
		if (split_cal_range(v, R) > c->spread) {
			c->spread = split_cal_range(v, R);
			snprintf(c->spread_what, sizeof(c->spread_what), "the capacity of %s",
				 cal_models[i == 0   ? M_SYS
					    : i == 1 ? M_HOST
						     : M_HOST2]
				     .name);
		}
	}
	for (unsigned k = 0; k < SPLIT_CAL__COUNT; k++)
		for (uint32_t j = 0; j < 2; j++) {
			const uint32_t i = at[j];

			for (uint32_t r = 0; r < R; r++)
				v[r] = c->grid[r0 + r][k][i].p50;
			if (split_cal_range(v, R) > c->spread) {
				c->spread = split_cal_range(v, R);
				snprintf(c->spread_what, sizeof(c->spread_what),
					 "the p50 of %s at utilisation %.2f", series_name[k],
					 c->pr->grid[i]);
			}
		}
}

static void print_series(const struct cal *c, const struct split_cal_series *s,
			 const struct split_cal_series *hop)
{
	const struct split_profile *pr = c->pr;

	printf("load curves (MEASURED p50 / p99 / answered / fallback at each utilisation, medians "
	       "of %u rounds; MODELED p50 from the fitted curves):\n",
	       c->n);
	for (unsigned k = 0; k < SPLIT_CAL__COUNT; k++) {
		printf("  %s (%s, service %.1f us):\n", series_name[k],
		       c->mod[series_model[k]].m->name, split_cal_service(&s[k], k) * 1e6);
		for (uint32_t i = 0; i < pr->n_grid; i++) {
			const struct split_cal_obs *o = &s[k].o[i];
			struct split_load_pred p;

			split_pipeline_predict(&s[k].pl, o->rps, &p);
			printf("    u %4.2f %8.0f/s: p50 %9.1f us p99 %9.1f us answered %5.1f%% "
			       "fallback %5.1f%%  MODELED p50 %9.1f us\n",
			       pr->grid[i], o->rps, o->p50 * 1e6, o->p99 * 1e6, 100 * o->answered,
			       100 * o->fallback, p.p50 * 1e6);
		}
		if (k == SPLIT_CAL_SYS && c->base.rps > 0) {
			const struct split_cal_obs *o = &c->base;
			struct split_load_pred p;

			split_pipeline_predict(&s[k].pl, o->rps, &p);
			printf("    at the nic series' lowest rate (path.coproc_s is taken against "
			       "it) %6.0f/s: p50 "
			       "%8.1f us p99 %8.1f us answered %5.1f%%  MODELED p50 %8.1f us\n",
			       o->rps, o->p50 * 1e6, o->p99 * 1e6, 100 * o->answered, p.p50 * 1e6);
		}
	}
	{
		const struct split_cal_obs *o = &hop->o[0];
		struct split_load_pred p;

		split_pipeline_predict(&hop->pl, o->rps, &p);
		printf("  hop (%s, chain %.1f us; path.coproc_s: its excess over the path at this "
		       "rate) %6.0f/s: p50 %8.1f "
		       "us p99 %8.1f us answered %5.1f%%  MODELED p50 %8.1f us\n",
		       c->mod[M_COPROC].m->name, split_cal_service(hop, SPLIT_CAL_NIC) * 1e6,
		       o->rps, o->p50 * 1e6, o->p99 * 1e6, 100 * o->answered, p.p50 * 1e6);
	}
}

/*
 * The host series' compute as its server clocks it (the RESPONSE's host field, each run's
 * mean, the median over the rounds) at each utilisation up to 1, against its in-process time:
 * printed, not fitted. It shows what one host.scale leaves out: a stage served after its core
 * slept or ran other work finds its weights cold (cal-host 82 us served at low load against
 * 60 us in process on 2026-11-29, the sweeps' models 1.07-1.22 x), one served back to back
 * less so.
 */
static void print_served(const struct cal *c)
{
	const double own = c->mod[M_HOST].pm.cpu_total_s;
	bool any = false;

	for (uint32_t i = 0; i < c->pr->n_grid && c->pr->grid[i] <= 1; i++) {
		double v[MAX_POOL], med;
		uint32_t n = 0;

		for (uint32_t r = 0; r < c->n; r++) {
			const struct sweep_point *p = &c->grid[r][SPLIT_CAL_HOST][i];

			if (p->responses && p->srv[PROTO_T_HOST] > 0)
				v[n++] = p->srv[PROTO_T_HOST] * 1e-9;
		}
		if (!n)
			continue;
		if (!any)
			printf(
			    "served: %s's compute by splitnic-host's clock (MEASURED; in process "
			    "%.1f us, host.scale %.3f):",
			    c->mod[M_HOST].m->name, own * 1e6, c->pr->v[SPLIT_P_HOST_SCALE]);
		any = true;
		med = stats_median(v, n);
		printf(" u %.2f %.1f us (%.2f x)", c->pr->grid[i], med * 1e6,
		       own > 0 ? med / own : 0);
	}
	if (any)
		printf("\n");
}

/* host2, never fitted: MEASURED against MODELED. */
static void print_validation(struct cal *c)
{
	const uint32_t R = c->n;
	struct cal_model *cm = &c->mod[M_HOST2];

	model_pipeline(c, M_HOST2);
	cm->pl.pr = c->pr;
	printf("check (host2, not fitted; MEASURED against MODELED p50):\n");
	for (uint32_t v = 0; v < N_VALID; v++) {
		const struct sweep_point *pts[MAX_POOL];
		struct split_cal_obs ob;
		struct split_load_pred p;

		for (uint32_t r = 0; r < R; r++)
			pts[r] = &c->valid[r][v];
		observe(pts, R, c->valid_rps[v], &ob); /* the latest attempt's rate */
		split_pipeline_predict(&cm->pl, ob.rps, &p);
		printf("  u %4.2f %8.0f/s: MEASURED p50 %8.1f us, MODELED %8.1f us (%+.1f%%); "
		       "answered %5.1f%% (MODELED %5.1f%%)\n",
		       valid_u[v], ob.rps, ob.p50 * 1e6, p.p50 * 1e6,
		       ob.p50 > 0 ? 100 * (p.p50 - ob.p50) / ob.p50 : 0, 100 * ob.answered,
		       100 * p.answered);
	}
}

/*
 * sys.frames_exp: the wait of a request of F frames is sys.s x (F / 4)^x x the sys curve. The
 * model without compute on a REQUEST of 8 datagrams (18 frames through the path), measured at
 * the utilisations valid_u of its frames' work (its sys_s), against the model at x = 0, 0.05,
 * .., 1: the x whose p50s are nearest (the sum of |log MODELED / MEASURED| over the points
 * answered at 99%) is kept. Measured 2026-11-29 before it was fitted: 179-513 us at 0.25-0.85,
 * below the 4-frame model's 215-831 us at the same utilisations, where x = 1 put it at
 * 532-37,414 us.
 */
static void fit_frames(struct cal *c)
{
	struct split_profile *pr = c->pr;
	struct cal_model *cm = &c->mod[M_WIDE];
	struct split_cal_obs ob[N_VALID];
	double best = INFINITY, best_x = 1, frames = 0;
	uint32_t used = 0;

	for (uint32_t v = 0; v < N_VALID; v++) {
		const struct sweep_point *pts[MAX_POOL];

		for (uint32_t r = 0; r < c->n; r++)
			pts[r] = &c->wide[r][v];
		observe(pts, c->n, c->wide_rps[v], &ob[v]);
		used += ob[v].answered >= SPLIT_CAPACITY_ANSWERED && ob[v].p50 > 0;
	}
	for (int i = 0; i <= 20 && used; i++) {
		double e = 0;

		pr->v[SPLIT_P_SYS_FRAMES] = i / 20.0;
		if (model_pipeline(c, M_WIDE))
			return;
		for (uint32_t v = 0; v < N_VALID; v++) {
			struct split_load_pred p;

			if (ob[v].answered < SPLIT_CAPACITY_ANSWERED || !(ob[v].p50 > 0))
				continue;
			split_pipeline_predict(&cm->pl, ob[v].rps, &p);
			e += fabs(log(fmax(p.p50, 1e-9) / ob[v].p50));
		}
		if (e < best) {
			best = e;
			best_x = i / 20.0;
		}
	}
	pr->v[SPLIT_P_SYS_FRAMES] = best_x;
	if (model_pipeline(c, M_WIDE))
		return;
	frames = cm->pl.frames;
	printf("frames (%s, no compute, %.0f frames a request, not in the curves; MEASURED "
	       "against MODELED p50): the path's wait grows as (frames / 4)^%.2f",
	       cm->m->name, frames, best_x);
	if (!used)
		printf(" (no point answered at %.0f%%: the proportional default kept)",
		       100 * SPLIT_CAPACITY_ANSWERED);
	printf("\n");
	for (uint32_t v = 0; v < N_VALID; v++) {
		struct split_load_pred p;

		split_pipeline_predict(&cm->pl, ob[v].rps, &p);
		printf("  u %4.2f %8.0f/s: MEASURED p50 %8.1f us, MODELED %8.1f us (%+.1f%%); "
		       "answered %5.1f%%\n",
		       valid_u[v], ob[v].rps, ob[v].p50 * 1e6, p.p50 * 1e6,
		       ob[v].p50 > 0 ? 100 * (p.p50 - ob[v].p50) / ob[v].p50 : 0,
		       100 * ob[v].answered);
	}
}

/* One attempt: every measurement in rounds [r0, r0 + rounds), then the fits over every round
 * measured so far, this attempt's and the earlier ones'. */
static int attempt(struct cal *c)
{
	const uint32_t R = c->o->rounds, r0 = c->r0;
	struct split_cal_series s[SPLIT_CAL__COUNT], hop = {0};
	int ret = 0;

	for (uint32_t r = r0; r < r0 + R && !ret; r++) {
		ret = measure_capacity(c, r);
		if (!ret)
			ret = measure_nic(c, r);
	}
	if (ret)
		return ret;
	c->n = r0 + R;
	fit_nic(c);
	fit_capacity(c);
	for (unsigned k = 0; k < SPLIT_CAL__COUNT && !ret; k++) {
		ret = model_pipeline(c, series_model[k]);
		s[k].pl = c->mod[series_model[k]].pl;
	}
	if (!ret && model_pipeline(c, M_HOST2))
		ret = -EINVAL;
	if (!ret && model_pipeline(c, M_WIDE))
		ret = -EINVAL;
	if (!ret && !(ret = model_pipeline(c, M_COPROC)))
		hop.pl = c->mod[M_COPROC].pl;
	for (uint32_t v = 0; v < N_VALID && !ret; v++) {
		c->valid_rps[v] = valid_u[v] / c->mod[M_HOST2].pl.srv[0].s;
		c->wide_rps[v] = valid_u[v] / c->mod[M_WIDE].pl.sys_s;
	}
	for (uint32_t r = r0; r < r0 + R && !ret; r++) {
		fprintf(stderr, "calibrate: load curves, round %u of %u\n", r + 1, r0 + R);
		ret = measure_grid(c, r, s);
	}
	if (ret)
		return ret;
	for (unsigned k = 0; k < SPLIT_CAL__COUNT; k++)
		for (uint32_t i = 0; i < c->pr->n_grid; i++) {
			const struct sweep_point *pts[MAX_POOL];

			for (uint32_t r = 0; r < c->n; r++)
				pts[r] = &c->grid[r][k][i];
			observe(pts, c->n, c->pr->grid[i] / split_cal_service(&s[k], k),
				&s[k].o[i]);
		}
	{
		const struct sweep_point *pts[MAX_POOL];

		for (uint32_t r = 0; r < c->n; r++)
			pts[r] = &c->sys_base[r];
		observe(pts, c->n, sys_base_rps(c, s), &c->base);
		for (uint32_t r = 0; r < c->n; r++)
			pts[r] = &c->hop[r];
		observe(pts, c->n, sys_base_rps(c, s), &hop.o[0]);
	}
	{
		const double worst = split_cal_fit(c->pr, s, &hop, &c->base);

		print_series(c, s, &hop);
		printf("fit: path.fixed_s %.1f us, path.coproc_s %+.1f us; the MODELED p50 meets "
		       "the MEASURED one within %.1f%% at every fitted point\n",
		       c->pr->v[SPLIT_P_PATH_FIXED] * 1e6, c->pr->v[SPLIT_P_PATH_COPROC] * 1e6,
		       100 * worst);
	}
	fit_frames(c);
	print_served(c);
	print_validation(c);
	spread_of(c);
	return 0;
}

static void free_models(struct cal *c)
{
	for (uint32_t g = 0; g < N_NIC; g++) {
		model_free(c->nic[g].m);
		plan_measured_free(&c->nic[g].pm);
	}
	for (unsigned k = 0; k < M__COUNT; k++) {
		model_free(c->mod[k].m);
		plan_measured_free(&c->mod[k].pm);
		split_problem_free(&c->mod[k].prob);
	}
}

int cal_packet_run(struct split_profile *pr, const struct cal_pk_opts *o)
{
	struct cal *c = calloc(1, sizeof(*c));
	struct sigaction sa = {.sa_handler = on_signal}, old_int, old_term;
	struct split_profile fit = *pr;
	double best_spread = INFINITY;
	int ret;

	if (!c)
		return -ENOMEM;
	c->o = o;
	c->pr = pr;
	pr->v[SPLIT_P_NIC_EXECS] = o->executors;
	pr->v[SPLIT_P_NIC_EMU] = !strcmp(o->platform, "emu");
	snprintf(c->dir, sizeof(c->dir), "/tmp/splitnic-calpk-XXXXXX");
	if (o->rounds > MAX_ROUNDS || !o->rounds || o->attempts * o->rounds > MAX_POOL ||
	    !mkdtemp(c->dir)) {
		const bool bad =
		    o->rounds > MAX_ROUNDS || !o->rounds || o->attempts * o->rounds > MAX_POOL;

		free(c);
		return bad ? -EINVAL : -errno;
	}
	ret = make_models(c);
	if (!ret)
		ret = sweep_lab_init(&c->lab, o->lab, o->tag, NULL, NULL);
	c->lab.stop = &cal_stop; /* the capacity searches' clients too */
	cal_stop = 0;
	sigaction(SIGINT, &sa, &old_int);
	sigaction(SIGTERM, &sa, &old_term);
	if (!ret)
		ret = sweep_lab_up(&c->lab);
	if (!ret)
		ret = sweep_lab_shape(&c->lab, 0, 0);
	if (!ret)
		ret = start_servers(c);
	if (!ret) {
		sweep_lab_poll(pr, o->host_opt, o->nic_opt);
		pr->v[SPLIT_P_POLL_WAKE] = cal_wake_lateness();
		printf(
		    "calibrate: a sleeping lcore wakes %.1f us late (median of %d timed sleeps of "
		    "%d us)\n",
		    1e6 * pr->v[SPLIT_P_POLL_WAKE], WAKE_SLEEPS, WAKE_SLEEP_US);
	}
	for (uint32_t a = 0; a < o->attempts && !ret; a++) {
		struct split_profile trial = *pr;
		double moved = INFINITY;

		c->pr = &trial;
		c->r0 = a * o->rounds;
		ret = attempt(c);
		c->pr = pr;
		if (ret)
			break;
		if (a)
			moved = split_cal_compare(&fit, &trial, NULL);
		fit = trial;
		best_spread = fmin(best_spread, c->spread);
		if (o->rounds > 1)
			printf("calibration %u: its rounds agree within %.1f%% (largest: %s)\n",
			       a + 1, 100 * c->spread, c->spread_what);
		else
			printf("calibration %u: one round, no spread to judge the machine by\n",
			       a + 1);
		if (a)
			printf(
			    "calibration %u: fitted on the medians of all %u rounds; the figures "
			    "moved by %.1f%% with this attempt's %u\n",
			    a + 1, c->n, 100 * moved, o->rounds);
		if (c->spread <= o->max_spread)
			break;
		if (moved <= o->max_spread / 2) {
			printf("calibration %u: the machine was noisy (%s spread %.1f%%), but the "
			       "medians of %u rounds moved by %.1f%% (at most %.0f%%): kept\n",
			       a + 1, c->spread_what, 100 * c->spread, c->n, 100 * moved,
			       50 * o->max_spread);
			break;
		}
		printf("calibration %u: the machine was noisy: %s spread %.1f%% over %u rounds "
		       "(more than %.0f%%)%s\n",
		       a + 1, c->spread_what, 100 * c->spread, o->rounds, 100 * o->max_spread,
		       a + 1 < o->attempts ? "; measuring again, every round kept" : "");
	}
	sweep_lab_down(&c->lab);
	sigaction(SIGINT, &old_int, NULL);
	sigaction(SIGTERM, &old_term, NULL);
	if (cal_stop) {
		fprintf(stderr, "splitnic calibrate: interrupted; the lab is down\n");
		ret = -EINTR;
	}
	if (!ret) {
		*pr = fit;
		pr->v[SPLIT_P_CAL_TIME] = (double)time(NULL);
		pr->v[SPLIT_P_CAL_SPREAD] = best_spread;
		if (best_spread > o->max_spread)
			printf("calibration: NOISY: no attempt's rounds agreed within %.0f%% (the "
			       "quietest %.1f%%, cal.spread in the profile); the fit takes the "
			       "medians of all %u rounds\n",
			       100 * o->max_spread, 100 * best_spread, c->n);
	}
	free_models(c);
	sweep_remove_dir(c->dir);
	free(c);
	return ret;
}
