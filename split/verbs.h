/* SPDX-License-Identifier: MIT */
/*
 * split/verbs.h — what the split verbs (analyze, plan, gen, calibrate, sweep: cli/) and the
 * packet sweep (lab/sweep_packet.c) share: a model's architecture and profile loaded, a model
 * planned, its ops timed on this CPU, plans printed and plotted.
 */
#ifndef SPLIT_VERBS_H
#define SPLIT_VERBS_H

#include <stdbool.h>
#include <stdint.h>
#include <stdio.h>

#include "kernels/kern.h"
#include "split/split.h"

/*
 * A verb's usage line, for the end of its option switch: on stdout with exit status 0 for
 * --help, else on stderr with exit status 2 (a bad option or argument).
 */
int split_tools_usage(const char *usage, bool help);

/* Does path end in ".json"? (an interchange architecture rather than a model file) */
int split_tools_is_json(const char *path);

/*
 * The architecture at path: an interchange ARCH.json, or a model file analysed with its NIC
 * part from kexec_nic_first. Returns 0 (caller frees a with split_arch_free), or -errno with a
 * message in err.
 */
int split_tools_load_arch(const char *path, struct split_arch *a, char *err, size_t errlen);

/*
 * The profile at path, or the built-in defaults when path is NULL (with a note on stderr that
 * names the verb). Returns 0, or -errno after a message on stderr.
 */
int split_tools_load_profile(const char *verb, const char *path, struct split_profile *pr);

/*
 * Plan m under profile pr: executors CPU, NIC (from kexec_nic_first) and the GPU when the
 * profile has one and use_gpu. In process without load for latency or throughput: the dynamic
 * program; on the packet path, under load or for p99: split_plan_solve_load. Fills p (caller
 * frees it with split_problem_free), plan and, when not NULL, pred (the plan's MODELED
 * end-to-end at o->load_rps). Returns 0, or -errno with a message in err.
 */
int split_tools_plan(const struct model *m, const struct split_profile *pr, struct split_opts *o,
		     bool use_gpu, struct split_problem *p, struct split_plan *plan,
		     struct split_load_pred *pred, char *err, size_t errlen);

/*
 * Each op of m timed on this CPU into op_s[n_layers], in seconds (what split_opts.cpu_op_s
 * takes): every prefix [0, k) run as the host runs it, one image at a time (random inputs of
 * m's input format, the executor's kernels, the median of about `rounds` interleaved runs in
 * passes spread over 1.5 s, leaving out the rounds caught in a spell of the machine running
 * slower); op j costs the difference of its prefixes, on their lower envelope (a prefix that
 * cuts a fused float32 conv off its sign costs more than the longer one). Run it while nothing
 * else loads the machine. Returns 0, or -errno with a message in err.
 */
int split_tools_measure_ops(const struct model *m, uint32_t rounds, double *op_s, char *err,
			    size_t errlen);

/* Print a plan's stages and predicted breakdown. */
void split_tools_print_plan(const struct model *m, const struct split_plan *plan);
/* Print a plan's servers (service time, utilisation, waits) and its MODELED end-to-end at
 * o->load_rps. */
void split_tools_print_load(const struct model *m, const struct split_profile *pr,
			    const struct split_opts *o, const struct split_problem *p,
			    const struct split_plan *plan);

/*
 * A gnuplot script that draws to out (.png or .svg): a temporary file (its path in script, at
 * least 32 bytes) that starts with the terminal and output lines. Returns the open stream, or
 * NULL after a message on stderr that names the verb.
 */
FILE *split_tools_plot_open(const char *verb, const char *out, char *script, size_t len);

/* Close the script f, run gnuplot on it and remove it. Returns 0, or -errno after a message. */
int split_tools_plot_run(const char *verb, FILE *f, const char *script);

#endif /* SPLIT_VERBS_H */
