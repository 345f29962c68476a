// SPDX-License-Identifier: MIT
/* splitnic: the command-line tool. Sub-commands come from one table, their options from theirs. */
#include <stdio.h>
#include <string.h>

#include "cli/cmds.h"
#include "kernels/kern_ops.h"

static const struct splitnic_cmd cmds[] = {
    {"convert", cmd_convert, &cmd_convert_spec},
    {"import", cmd_import, &cmd_import_spec},
    {"inspect", cmd_inspect, &cmd_inspect_spec},
    {"run", cmd_run, &cmd_run_spec},
    {"client", cmd_client, &cmd_client_spec},
    {"respond-ref", cmd_respond_ref, &cmd_respond_ref_spec},
    {"serve", cmd_serve, &cmd_serve_spec},
    {"emu", cmd_emu, &cmd_emu_spec},
    {"xdp", cmd_xdp, &cmd_xdp_spec},
    {"analyze", cmd_analyze, &cmd_analyze_spec},
    {"gen", cmd_gen, &cmd_gen_spec},
    {"calibrate", cmd_calibrate, &cmd_calibrate_spec},
    {"plan", cmd_plan, &cmd_plan_spec},
    {"sweep", cmd_sweep, &cmd_sweep_spec},
};

#define N_CMDS (sizeof(cmds) / sizeof(cmds[0]))

static void usage(FILE *f)
{
	fprintf(f, "usage: splitnic COMMAND [ARGS]   (splitnic help COMMAND, or splitnic COMMAND "
		   "--help, for one command)\n\n"
		   "commands:\n");
	for (size_t i = 0; i < N_CMDS; i++)
		fprintf(f, "  %-12s %s\n", cmds[i].name, cmds[i].spec->purpose);
	fprintf(f,
		"\nexit status: 0 done, 1 failed, 2 bad arguments, 3 done in part (client: "
		"requests without an answer)\n"
		"splitnic %s (--version: this build's features); docs/ holds the model format, the "
		"wire protocol, the architecture and the operator's guide\n",
		CONF_VERSION);
}

static const struct splitnic_cmd *find_cmd(const char *name)
{
	for (size_t i = 0; i < N_CMDS; i++)
		if (!strcmp(name, cmds[i].name))
			return &cmds[i];
	return NULL;
}

int main(int argc, char **argv)
{
	const struct splitnic_cmd *c = NULL;
	const char *h;

	if (argc < 2) {
		usage(stderr);
		return CLI_EXIT_USAGE;
	}
	if (!strcmp(argv[1], "-h") || !strcmp(argv[1], "--help") ||
	    (!strcmp(argv[1], "help") && argc == 2)) {
		usage(stdout);
		return CLI_EXIT_OK;
	}
	if (!strcmp(argv[1], "--version")) {
		cli_version(stdout);
		return CLI_EXIT_OK;
	}
	if (!strcmp(argv[1], "help")) { /* splitnic help VERB */
		c = find_cmd(argv[2]);
		if (!c || argc > 3) {
			fprintf(stderr, "splitnic help: %s'%s'\n\n",
				c ? "one command, got more after " : "unknown command ", argv[2]);
			usage(stderr);
			return CLI_EXIT_USAGE;
		}
		conf_help(stdout, c->spec);
		return CLI_EXIT_OK;
	}
	c = find_cmd(argv[1]);
	if (!c) {
		fprintf(stderr, "splitnic: unknown command '%s'\n\n", argv[1]);
		usage(stderr);
		return CLI_EXIT_USAGE;
	}
	h = conf_help_arg(argc - 1, argv + 1, true);
	if (h && !strcmp(h, "--version")) {
		printf("splitnic %s %s\n", c->name, CONF_VERSION);
		return 0;
	}
	if (h) {
		conf_help(stdout, c->spec);
		return 0;
	}
	/* Every executor here is single-threaded (parallelism is --threads); OpenBLAS must not
	 * start its own threads, which on a busy machine costs more than they bring. */
	kern_blas_threads(1);
	return c->fn(argc - 1, argv + 1);
}
