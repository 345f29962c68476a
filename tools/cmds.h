/* SPDX-License-Identifier: MIT */
/* tools/cmds.h — the splitnic sub-commands; each takes argv from its own name on. */
#ifndef TOOLS_CMDS_H
#define TOOLS_CMDS_H

/* The version every splitnic program reports with --version. */
#define SPLITNIC_VERSION "0.1.0"

/*
 * One row of the command table (tools/splitnic.c): `splitnic --help` and `splitnic NAME --help`
 * are generated from it. summary is the synopsis after "splitnic ", optionally followed by
 * "\n" and one line of purpose.
 */
struct splitnic_cmd {
	const char *name;
	int (*fn)(int argc, char **argv);
	const char *summary;
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

#endif /* TOOLS_CMDS_H */
