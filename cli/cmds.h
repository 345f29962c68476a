/* SPDX-License-Identifier: MIT */
/* cli/cmds.h — the splitnic sub-commands; each takes argv from its own name on. */
#ifndef CLI_CMDS_H
#define CLI_CMDS_H

#include <stddef.h>
#include <stdint.h>
#include <stdio.h>

#include "conf/opts.h"
#include "lab/respond_ref.h"
#include "serve/serve.h"

/*
 * One row of the command table (cli/splitnic.c). spec is the command's option table, its
 * synopsis and purpose: `splitnic --help`, `splitnic NAME --help` and the command's own parsing
 * (conf_parse) come from it.
 */
struct splitnic_cmd {
	const char *name;
	int (*fn)(int argc, char **argv);
	const struct conf_cmd *spec;
};

/* serve and respond-ref are declared beside their code (serve/serve.h, lab/respond_ref.h). */
int cmd_convert(int argc, char **argv);
int cmd_import(int argc, char **argv);
int cmd_inspect(int argc, char **argv);
int cmd_run(int argc, char **argv);
int cmd_client(int argc, char **argv);
int cmd_xdp(int argc, char **argv);
int cmd_emu(int argc, char **argv);
int cmd_analyze(int argc, char **argv);
int cmd_plan(int argc, char **argv);
int cmd_gen(int argc, char **argv);
int cmd_calibrate(int argc, char **argv);
int cmd_sweep(int argc, char **argv);

extern const struct conf_cmd cmd_convert_spec;
extern const struct conf_cmd cmd_import_spec;
extern const struct conf_cmd cmd_inspect_spec;
extern const struct conf_cmd cmd_run_spec;
extern const struct conf_cmd cmd_client_spec;
extern const struct conf_cmd cmd_xdp_spec;
extern const struct conf_cmd cmd_emu_spec;
extern const struct conf_cmd cmd_analyze_spec;
extern const struct conf_cmd cmd_plan_spec;
extern const struct conf_cmd cmd_gen_spec;
extern const struct conf_cmd cmd_calibrate_spec;
extern const struct conf_cmd cmd_sweep_spec;

/*
 * The exit status of every splitnic program (the verbs, splitnic-nic, splitnic-host), as
 * docs/operator-guide.md lists them.
 */
enum cli_exit {
	CLI_EXIT_OK = 0,      /* done */
	CLI_EXIT_FAIL = 1,    /* failed: a file, a model, the network, a check; the message says */
	CLI_EXIT_USAGE = 2,   /* bad arguments: an option, a value, a missing argument */
	CLI_EXIT_PARTIAL = 3, /* done in part: some requests got no answer (client) */
};

/* "PROG: WHAT IS WRONG" and the command's usage on stderr; returns CLI_EXIT_USAGE. */
int cli_usage_error(const struct conf_cmd *c, const char *fmt, ...)
    __attribute__((format(printf, 2, 3)));

/* The version, the kernel tables compiled in and usable here, CUDA, DPDK, libbpf. */
void cli_version(FILE *f);

/*
 * Random weights for the interchange architecture at arch_path, written to npz_path as an .npz
 * of float32 arrays (cli/cmd_gen.c says how they are drawn); seed picks the draw. Returns 0,
 * or -errno with a message naming the file in err.
 */
int split_tools_gen(const char *arch_path, const char *npz_path, uint64_t seed, char *err,
		    size_t errlen);

#endif /* CLI_CMDS_H */
