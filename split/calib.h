/* SPDX-License-Identifier: MIT */
/*
 * split/calib.h — from packet-path measurements to the profile's load model: the curves that
 * make the planner's own predictions (split_pipeline_predict) reproduce what was measured, and
 * how far a calibration's rounds, or two calibrations, agree. `splitnic calibrate --packet`
 * (cli/calibrate_packet.c) measures; this file only computes, so that tests can check it.
 */
#ifndef SPLIT_CALIB_H
#define SPLIT_CALIB_H

#include <stdbool.h>
#include <stdint.h>
#include <stdio.h>

#include "split/split.h"

/* One calibration model at one offered load: medians over the rounds (seconds, and shares of
 * the offered requests). */
struct split_cal_obs {
	double rps, p50, p99, answered, fallback;
};

/*
 * The three calibration series, each a model whose plan exercises one kind of server:
 *   SPLIT_CAL_SYS:  a model without compute, all on the host (the path: front-end, kernel,
 *                   both servers' packet handling);
 *   SPLIT_CAL_HOST: a model whose compute keeps the host's core busy, all on the host;
 *   SPLIT_CAL_NIC:  a co-processor plan whose NIC stage is the busy one.
 * pl: its plan's servers (split_plan_pipeline with the profile's scalars already fitted);
 * o[i]: measured at the grid's utilisation i of that kind of server (rps = u_i / its service).
 */
enum { SPLIT_CAL_SYS, SPLIT_CAL_HOST, SPLIT_CAL_NIC, SPLIT_CAL__COUNT };

struct split_cal_series {
	struct split_pipeline pl;
	struct split_cal_obs o[SPLIT_GRID_MAX];
};

/* The service time whose utilisation series k is measured at (rps_i = grid_i / it). */
double split_cal_service(const struct split_cal_series *s, unsigned k);

/*
 * Fit path.fixed_s and path.coproc_s and every curve of pr, point by point, so that each
 * series' MODELED p50, p99 and shares at its measured loads equal the measurements: each value
 * by bisection, the kinds in turn, three passes (each series also crosses the other kinds'
 * servers). path.fixed_s comes from the SYS series' lowest load, where its p50 curve is 0 by
 * definition (never below 0). path.coproc_s comes from hop's o[0] when hop is not NULL: a
 * co-processor plan with a short chain measured at one light load (the nic series' long chain
 * hid some 40-60 us of the path that short chains pay, 2026-11-30; docs/split-planning.md),
 * and the NIC series' p50 curve is then fitted from its lowest load too; with ref (the SYS
 * series' plan measured at hop's rate) it is hop's excess over that path beyond the model's,
 * so that an error of the model at that rate (its wake-ups, 20-60 us) stays out of the term;
 * without hop, from the NIC series' lowest load, whose p50 curve point is 0. A measurement the
 * model cannot reach within the curves' ranges (below the no-load time, say) leaves the curve at
 * its bound. Then each curve is made monotone in the load (isotonic regression: waits and fallback
 * never fall, answered shares never rise as the load rises). Returns the largest relative
 * difference left between a MODELED and a MEASURED p50 over the series' points.
 */
double split_cal_fit(struct split_profile *pr, struct split_cal_series s[SPLIT_CAL__COUNT],
		     struct split_cal_series *hop, const struct split_cal_obs *ref);

/* The relative range (max - min) / median of n > 0 values; 0 for n < 2 or a median of 0. */
double split_cal_range(const double *v, uint32_t n);

/*
 * A profile's figures that two calibrations of one machine must agree on (each a time the
 * planner's predictions rest on): path.fixed_s, path.nic_s, sys.s, host.req_s + host.scale x
 * 100 us (the host's service of a 100 us stage), nic.stage_s, and the p50 the profile predicts
 * for each kind of server at utilisation 0.55 (the path; a 100 us host stage; a 100 us NIC
 * stage): its no-load time and its excess; the path's work for a request of 18 frames and its
 * p50 at 0.55 (sys.frame_s, sys.frames_exp). The first SPLIT_CAL_JUDGED are judged; the excesses
 * alone follow, shown only: a difference of two measured times, its relative change overstates
 * how far the predictions move (2026-11-28: host excess 60.5 vs 47.0 us, 22%; the host's p50 it
 * is part of 165.8 vs 154.7 us, 6.7%).
 */
#define SPLIT_CAL_FIGURES 13
#define SPLIT_CAL_JUDGED  10
void split_cal_figures(const struct split_profile *pr, double fig[SPLIT_CAL_FIGURES],
		       const char **names);

/*
 * Compare two profiles' figures: prints each (a, b, relative difference) to f when f is not
 * NULL, and returns the largest relative difference |a - b| / max(|a|, |b|) of the judged
 * ones (figures under 1 us in both count as equal).
 */
double split_cal_compare(const struct split_profile *a, const struct split_profile *b, FILE *f);

#endif /* SPLIT_CALIB_H */
