/* SPDX-License-Identifier: MIT */
/*
 * lab/sweep_pk.h — inside `splitnic sweep --packet`: the sweep's state, shared by
 * lab/sweep_packet.c (set-up, predictions, measuring) and lab/sweep_report.c (the MEASURED
 * verdict per case, the text table, the JSON and the plot).
 */
#ifndef LAB_SWEEP_PK_H
#define LAB_SWEEP_PK_H

#include <stdint.h>

#include "lab/plan_measure.h"
#include "lab/sweep.h"
#include "split/split.h"

enum pk_time { PT_TOTAL, PT_RX, PT_QUEUE, PT_HOST, PT_PACK, PT_XFER, PT_NIC, PT_TX };

struct pk_cand {
	uint32_t k;		   /* NIC from op k; m->n_layers: all-host */
	struct sweep_point *pt;	   /* [rate][load]: the medians over the rounds */
	struct sweep_point *rnd;   /* [rate][load][round] */
	struct split_plan plan;	   /* its stages */
	double smax[SWEEP_MAX_BW]; /* [rate]: its slowest server's service time (s) */
};

struct pk {
	const struct model *m;
	const struct sweep_pk_opts *o;
	struct split_profile pr;
	struct pk_cand *cand;
	uint32_t n_cand;
	double load[SWEEP_MAX_BW][SWEEP_MAX_LOAD]; /* absolute, per rate */
	double cap[SWEEP_MAX_BW];		   /* measured all-host capacity */
	uint32_t plan_k[SWEEP_MAX_BW][SWEEP_MAX_LOAD];
	struct split_load_pred plan_pred[SWEEP_MAX_BW][SWEEP_MAX_LOAD];
	struct sweep_lab lab;
	uint32_t points, points_done;
	uint64_t t_start;
	struct plan_measured pm; /* MEASURED in process before the servers start */
};

/* A candidate's name: all-host, nic-alone or nic@K:OP. */
const char *pk_cand_name(const struct pk *p, uint32_t k, char *buf, size_t len);
/* The lab link's token bucket depth (bytes) at r Gbit/s; 0: not shaped. */
double pk_lab_burst(double r);

/* The candidates: every split where the NIC can take over on the packet path (and all-host
 * first), those of --split/--splits when given; their points allocated. 0, or -errno. */
int pk_candidates(struct pk *p);

/* --replay (lab/sweep_replay.c): ro (the sweep's options, ro->replay the file) takes the
 * recorded sweep's rates, loads, splits and platform; p its candidates (pk_candidates), loads,
 * capacities and MEASURED points, its servers' polling into p->pr, and into p->pm the ops'
 * timings its predictions priced (p->pm.n 0 when the file has none). 0, or -errno after a
 * message naming what in the file is wrong. */
int pk_replay_load(struct pk *p, struct sweep_pk_opts *ro);

/* The measured points against the model: the table on standard output, --json, --plot (0, or
 * -errno after a message). */
void pk_report_text(struct pk *p);
int pk_report_json(const struct pk *p);
int pk_report_plot(const struct pk *p);

#endif /* LAB_SWEEP_PK_H */
