/* SPDX-License-Identifier: MIT */
/*
 * lab/sweep.h — splitnic sweep over the packet path (lab/sweep_packet.c); the in-process
 * sweep is cli/cmd_sweep.c, which parses the options of both.
 */
#ifndef LAB_SWEEP_H
#define LAB_SWEEP_H

#include <signal.h>
#include <stdbool.h>
#include <stdint.h>

#include <jansson.h>

#include "kernels/kern.h"
#include "protocol/proto.h"
#include "split/split.h"

#define SWEEP_MAX_BW	 8
#define SWEEP_MAX_LOAD	 8
#define SWEEP_MAX_ROUNDS 9
/* goodput first: a split answering less of what was offered is never best on latency */
#define SWEEP_MIN_ANSWERED 0.99

struct sweep_pk_opts {
	const char *model_path;
	const char *images; /* IDX inputs for the client; NULL: random tensors of the model's */
	const char *json;   /* --json FILE */
	const char *replay; /* --replay FILE: a recorded sweep's --json, predicted again */
	const char *plot;   /* --plot FILE */
	bool normalize;	    /* --normalize: bars over the all-host bar of their panel */
	double rate[SWEEP_MAX_BW]; /* Gbit/s on the host <-> NIC link; 0: not shaped */
	uint32_t n_rate;
	double load[SWEEP_MAX_LOAD]; /* requests/s, or a multiple of the all-host capacity */
	bool load_rel[SWEEP_MAX_LOAD];
	uint32_t n_load;
	double duration;      /* seconds of offered load per point and round */
	uint32_t rounds;      /* interleaved rounds, 1..SWEEP_MAX_ROUNDS */
	uint32_t objective;   /* the planner's: enum split_objective */
	const char *platform; /* splitnic-nic --platform */
	uint32_t executors;   /* splitnic-nic --executors */
	const char *host_opt; /* extra splitnic-host options, space-separated */
	const char *nic_opt;  /* extra splitnic-nic options, space-separated */
	const char *lab;      /* lab/sweep_lab.sh; NULL: found from the executable */
	const char *tag;      /* the lab's namespaces; NULL: from the pid */
	const char *servers;  /* --servers: running servers at this address, no lab */
	const char *netns;    /* --netns: the front-end's namespace for --servers */
	int64_t split;	      /* the op where the NIC starts (m->n_layers: all-host); -1 */
	uint32_t splits[64];  /* --splits: the candidates to measure (none: every one) */
	uint32_t n_splits;
	struct sweep_pk_result *result; /* not NULL: filled (points copied) when the sweep ends */
};

/* ---- the lab (lab/sweep_lab.c, the C side of lab/sweep_lab.sh) ------------------------ */

/* What the client measured (MEASURED) and, for the sweep, what the cost model says (MODELED). */
struct sweep_point {
	double load; /* offered, requests/s; 0: closed loop */
	bool done;
	double p50, p99, mean, thr; /* us, us, us, responses/s; NAN without answers */
	uint64_t requests, responses, errors, busy, timeouts, ex_nic, ex_fallback;
	double srv[PROTO_T_COUNT];     /* mean ns of the RESPONSE timing fields */
	double srv_p50[PROTO_T_COUNT]; /* their medians */
	double spread;		       /* the rounds' relative range of the p50 (0: one round) */
	double ans_spread; /* the rounds' range of the answered share, in shares (0: one round) */
	struct split_load_pred pred;
};

/* plan --measure: the measured points of the candidates, at the first rate and load */
#define SWEEP_MAX_CAND 64
struct sweep_pk_result {
	uint32_t n;
	uint32_t k[SWEEP_MAX_CAND]; /* NIC from op k; n_layers: all-host */
	struct sweep_point pt[SWEEP_MAX_CAND];
};

struct sweep_lab {
	char exe[4096];	   /* this executable (SPLITNIC for the script) */
	char script[4096]; /* lab/sweep_lab.sh */
	char tag[16];	   /* its namespaces: snsw-TAG-{c,n,h} */
	char dir[64];	   /* logs, pid and stats files of the servers */
	bool up;
	const char *servers, *netns;	   /* running servers instead (no lab) */
	const volatile sig_atomic_t *stop; /* when set and non-zero: no new client run (-EINTR) */
};

/*
 * script: lab/sweep_lab.sh (NULL: the tree's BUILD/../lab/, else the installed
 * PREFIX/share/splitnic/lab/, from this executable's path);
 * tag: NULL for one from the pid; servers: an address of running servers (no lab; the client
 * in namespace netns when not NULL). 0, or -errno after a message.
 */
int sweep_lab_init(struct sweep_lab *l, const char *script, const char *tag, const char *servers,
		   const char *netns);
int sweep_lab_up(struct sweep_lab *l);
/* lab/sweep_lab.sh VERB TAG ARGS... (args NULL-terminated, or NULL); its exit status. */
int sweep_lab_verb(struct sweep_lab *l, const char *verb, char *const args[]);
/*
 * The options every lab start gives splitnic-host after its models: --queue and --nic-window
 * from the profile pr, then the words of host_opt (space-separated; NULL: none), held in buf.
 * Appended to args from n while n < max; returns the new n (args not terminated).
 */
#define SWEEP_OPT_LEN 512
struct sweep_host_args {
	char queue[16], window[16], opt[SWEEP_OPT_LEN];
};
size_t sweep_lab_host_args(char **args, size_t n, size_t max, const struct split_profile *pr,
			   const char *host_opt, struct sweep_host_args *buf);
/* The words of opts (space-separated; NULL: none), held in buf, appended to args from n while
 * n < max; returns the new n (splitnic-nic's extra options). */
size_t sweep_lab_words(char **args, size_t n, size_t max, const char *opts,
		       char buf[SWEEP_OPT_LEN]);
/*
 * The servers' idle policy as the lab runs them, into pr: poll.host_sleep_s and
 * poll.nic_sleep_s, each server's longest sleep from its extra options (the last
 * --idle-sleep-us wins; --poll busy or --idle-sleep-us 0: 0, it never sleeps; neither: the
 * servers' default, DPDK_IDLE_DEFAULT_US).
 */
void sweep_lab_poll(struct split_profile *pr, const char *host_opt, const char *nic_opt);
/* The link at gbps (<= 0: not shaped), a token bucket of burst bytes. */
int sweep_lab_shape(struct sweep_lab *l, double gbps, double burst);
/* Stop the servers, delete the namespaces and the servers' folder (when up). */
void sweep_lab_down(struct sweep_lab *l);
/* The files of a flat folder, then the folder (what is left is left quietly). */
void sweep_remove_dir(const char *dir);
/* `splitnic client ADDR ARGS... --json` against the lab (or --servers); into pt. */
int sweep_lab_client(struct sweep_lab *l, char *const args[], struct sweep_point *pt);

/*
 * The capacity of the servers for model_path as the planner defines it
 * (split_pipeline_capacity): the largest open-loop (Poisson) load answered at `answered`. A
 * closed loop overstates it (16 outstanding never queue what a Poisson burst queues). From
 * `start` requests/s (<= 0: a quarter of a closed-loop probe's rate), halved until it is
 * answered, the load rises by a quarter until less is answered or the p50 passes 30 times the
 * first answered one's, then three halvings of that last step (2.8%) between the two; a load
 * that does not hold is tried once more before it counts (a lone burst lost to a descheduled
 * server is not the capacity); `seconds` of load a step; images: the client's --images (or
 * NULL).
 * 0, or -EIO after a message.
 */
int sweep_lab_capacity(struct sweep_lab *l, const char *model_path, const char *images,
		       double start, double seconds, double answered, double *cap);

/*
 * --json: the root object of a sweep's report (model, mode, method) to fill; sweep_json_write
 * writes it to path and frees it: 0, or -EIO after a message.
 */
json_t *sweep_json_root(const char *model, const char *mode, const char *method);
int sweep_json_write(json_t *root, const char *path);

/* ---- the sweep's figure (lab/sweep_plot.c) ---------------------------------------------- */

/* host compute, pack, NIC, the servers' other time, the rest of the p50 (wire, link, kernel) */
#define SWEEP_PLOT_PARTS 5
struct sweep_plot_bar {
	char name[48];
	double part[SWEEP_PLOT_PARTS]; /* MEASURED medians, in the plot's unit */
	double p50, pred_p50;	       /* MEASURED, MODELED (<= 0: none) */
	double answered, by_nic;       /* MEASURED shares: answered, answered by the NIC */
	bool planner, best;	       /* the planner's choice; the measured best or tied */
};
struct sweep_plot_panel {
	char title[128];
	uint32_t n;
	struct sweep_plot_bar bar[SWEEP_MAX_CAND];
};
/* panels[row * cols + col] drawn to out (.png or .svg); 0, or -1 after a message. */
int sweep_plot_write(const char *out, const char *title, const char *unit,
		     const struct sweep_plot_panel *panels, uint32_t rows, uint32_t cols);

/* Measure and report; 0, or 1 after a message (the sweep failed or was interrupted). */
int sweep_packet_run(const struct model *m, const struct split_profile *pr,
		     const struct sweep_pk_opts *o);

/* "0.1,1,10" (or "none" entries with allow_none) into v; -EINVAL on anything else. */
int sweep_parse_list(const char *arg, double *v, bool *rel, uint32_t *n, uint32_t max,
		     bool allow_none);

#endif /* LAB_SWEEP_H */
