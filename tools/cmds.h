/* SPDX-License-Identifier: MIT */
/* tools/cmds.h — the splitnic sub-commands; each takes argv from its own name on. */
#ifndef TOOLS_CMDS_H
#define TOOLS_CMDS_H

#include "conf/opts.h"

/*
 * One row of the command table (tools/splitnic.c). spec is the command's option table, its
 * synopsis and purpose: `splitnic --help`, `splitnic NAME --help` and the command's own parsing
 * (conf_parse) come from it.
 */
struct splitnic_cmd {
	const char *name;
	int (*fn)(int argc, char **argv);
	const struct conf_cmd *spec;
};

int cmd_convert(int argc, char **argv);
int cmd_import(int argc, char **argv);
int cmd_inspect(int argc, char **argv);
int cmd_run(int argc, char **argv);
int cmd_client(int argc, char **argv);
int cmd_respond_ref(int argc, char **argv);
int cmd_serve(int argc, char **argv);
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
extern const struct conf_cmd cmd_respond_ref_spec;
extern const struct conf_cmd cmd_serve_spec;
extern const struct conf_cmd cmd_xdp_spec;
extern const struct conf_cmd cmd_emu_spec;
extern const struct conf_cmd cmd_analyze_spec;
extern const struct conf_cmd cmd_plan_spec;
extern const struct conf_cmd cmd_gen_spec;
extern const struct conf_cmd cmd_calibrate_spec;
extern const struct conf_cmd cmd_sweep_spec;

#endif /* TOOLS_CMDS_H */
