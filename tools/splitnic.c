// SPDX-License-Identifier: MIT
/* splitnic: the command-line tool. Sub-commands come from one table. */
#include <stdio.h>
#include <string.h>

#include "kernels/kern_ops.h"
#include "tools/cmds.h"

static const struct splitnic_cmd cmds[] = {
    {"convert", cmd_convert, "convert ARCH.json WEIGHTS.npz -o MODEL"},
    {"import", cmd_import, "import MODEL.onnx (-o MODEL.snm | --interchange DIR)"},
    {"inspect", cmd_inspect, "inspect MODEL [--json] [--ops]"},
    {"run", cmd_run,
     "run MODEL --images IDX[.gz]|--npy FILE [--labels IDX] [--count N] [--batch B] "
     "[--threads T] [--scores FILE.csv] [--exec cpu|gpu] [--json]"},
    {"client", cmd_client,
     "client ADDR[:PORT] (--images IDX [--labels IDX] | --shape C,H,W [--dtype u8|f32] | "
     "--model FILE) [--count N] [--model-id ID] [--rate R | --outstanding N] [--timeout-ms T] "
     "[--payload B | --mtu B] [--classes FILE] [--json]"},
    {"respond-ref", cmd_respond_ref,
     "respond-ref [--port P] [--classes N] [--images IDX --labels IDX] [--wrong-every K] "
     "[--error-every K] [--drop-every K] [--count N]"},
    {"emu", cmd_emu,
     "emu MODEL (--images IDX[.gz]|--npy FILE) [--labels IDX] [--executors E] [--count N] "
     "[--param NAME=VALUE ...] [--json] | emu --params"},
    {"xdp", cmd_xdp,
     "xdp attach IFACE MODEL [--mode native|generic] | pass IFACE | detach IFACE | stats IFACE | "
     "test MODEL [--images IDX|--npy FILE] [--bits] [--count N]"},
    {"analyze", cmd_analyze, "analyze MODEL|ARCH.json [--csv|--json] [--plot FILE.png|FILE.svg]"},
    {"gen", cmd_gen, "gen ARCH.json -o WEIGHTS.npz [--seed S]"},
    {"calibrate", cmd_calibrate, "calibrate [-o PROFILE] [--quick] [--keys]"},
    {"plan", cmd_plan,
     "plan MODEL [--profile P] [--link-gbps X] [--objective latency|throughput] "
     "[--allow-approx] [-o PLAN]"},
    {"sweep", cmd_sweep,
     "sweep MODEL [--profile P] [--link-gbps X,Y,Z] [--images IDX|--npy FILE] [--count N] "
     "[--plot FILE.png|FILE.svg] [--csv FILE]"},
};

static void usage(FILE *f)
{
	fprintf(f, "usage: splitnic COMMAND [ARGS]\n\ncommands:\n");
	for (size_t i = 0; i < sizeof(cmds) / sizeof(cmds[0]); i++)
		fprintf(f, "  %s\n", cmds[i].summary);
}

int main(int argc, char **argv)
{
	if (argc < 2) {
		usage(stderr);
		return 2;
	}
	if (!strcmp(argv[1], "-h") || !strcmp(argv[1], "--help") || !strcmp(argv[1], "help")) {
		usage(stdout);
		return 0;
	}
	/* Every executor here is single-threaded (parallelism is --threads); OpenBLAS must not
	 * start its own threads, which on a busy machine costs more than they bring. */
	kern_blas_threads(1);
	for (size_t i = 0; i < sizeof(cmds) / sizeof(cmds[0]); i++)
		if (!strcmp(argv[1], cmds[i].name))
			return cmds[i].fn(argc - 1, argv + 1);
	fprintf(stderr, "splitnic: unknown command '%s'\n\n", argv[1]);
	usage(stderr);
	return 2;
}
