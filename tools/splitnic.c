// SPDX-License-Identifier: MIT
/* splitnic: the command-line tool. Sub-commands come from one table. */
#include <stdio.h>
#include <string.h>

#include "kernels/kern_ops.h"
#include "tools/cmds.h"

static const struct splitnic_cmd cmds[] = {
    {"convert", cmd_convert,
     "convert ARCH.json WEIGHTS.npz -o MODEL\n"
     "compile an interchange model (docs/model-format.md) into a model file"},
    {"import", cmd_import,
     "import MODEL.onnx (-o MODEL.snm | --interchange DIR)\n"
     "import an ONNX or QONNX model (docs/onnx-import.md) into a model file"},
    {"inspect", cmd_inspect,
     "inspect MODEL [--json] [--ops]\n"
     "a model file's source layers (and compiled ops with --ops)"},
    {"run", cmd_run,
     "run MODEL --images IDX[.gz]|--npy FILE [--labels IDX] [--count N] [--batch B] "
     "[--threads T] [--scores FILE.csv] [--exec cpu|gpu] [--json]\n"
     "run a model in process: accuracy, latency p50/p99, images/s"},
    {"client", cmd_client,
     "client ADDR[:PORT] (--images IDX [--labels IDX] | --shape C,H,W [--dtype u8|f32] | "
     "--model FILE) [--count N] [--model-id ID] [--rate R | --outstanding N] [--timeout-ms T] "
     "[--payload B | --mtu B] [--classes FILE] [--json]\n"
     "front-end and load generator over UDP; exit status 3 when a request got no RESPONSE"},
    {"respond-ref", cmd_respond_ref,
     "respond-ref [--port P] [--classes N] [--images IDX --labels IDX] [--wrong-every K] "
     "[--error-every K] [--drop-every K] [--count N]\n"
     "the reference responder the client is tested against"},
    {"serve", cmd_serve,
     "serve --model [ID=]MODEL [--model ...] [--bind ADDR] [--port P] [--payload B] "
     "[--stats-file FILE]\n"
     "a minimal inference server on a kernel UDP socket (the CPU kernels, no DPDK)"},
    {"emu", cmd_emu,
     "emu MODEL (--images IDX[.gz]|--npy FILE) [--labels IDX] [--executors E] [--count N] "
     "[--param NAME=VALUE ...] [--json] | emu --params\n"
     "a model's NIC part on the NFP-style emulator (modeled time)"},
    {"xdp", cmd_xdp,
     "xdp attach IFACE MODEL [--mode native|generic] [--port P] | pass IFACE | detach IFACE | "
     "stats IFACE | test MODEL [--images IDX|--npy FILE] [--bits] [--count N] [--scores FILE]\n"
     "the binary MLP answered in the kernel's XDP hook"},
    {"analyze", cmd_analyze,
     "analyze MODEL|ARCH.json [--csv|--json] [--plot FILE.png|FILE.svg]\n"
     "per layer: output size at f32/fp16/int8/1-bit, parameters, ops, executors"},
    {"gen", cmd_gen,
     "gen ARCH.json -o WEIGHTS.npz [--seed S]\n"
     "random weights for any interchange architecture"},
    {"calibrate", cmd_calibrate,
     "calibrate [-o PROFILE] [--quick] [--keys] [--packet [--profile IN] [--platform emu|lcore] "
     "[--executors E]]\n"
     "measure this machine's executors and transfer costs (and the packet path) into a profile"},
    {"plan", cmd_plan,
     "plan MODEL [--profile P] [--link-gbps X] [--load RPS] [--objective latency|p99|throughput] "
     "[--in-process] [--allow-approx] [-o PLAN]\n"
     "choose the split (CPU, GPU, NIC stages) from the cost model, under load"},
    {"sweep", cmd_sweep,
     "sweep MODEL [--profile P] [--link-gbps X,Y,Z] [--plot FILE.png|FILE.svg] [--normalize] "
     "[--json FILE] ([--images IDX|--npy FILE] [--count N] | --packet [--load R,...|Fx,...] "
     "[--duration S] [--rounds N] [--splits K,...,host] [--platform emu|lcore] | --packet "
     "--servers ADDR "
     "--split K|host)\n"
     "every single split and the planner's choice, in process or over the packet path"},
};

#define N_CMDS (sizeof(cmds) / sizeof(cmds[0]))

static void usage(FILE *f)
{
	fprintf(f, "usage: splitnic COMMAND [ARGS]   (splitnic COMMAND --help for one command)\n\n"
		   "commands:\n");
	for (size_t i = 0; i < N_CMDS; i++) {
		const char *what = strchr(cmds[i].summary, '\n');

		fprintf(f, "  %-12s %s\n", cmds[i].name, what ? what + 1 : cmds[i].summary);
	}
	fprintf(f,
		"\nsplitnic %s; docs/ holds the model format, the wire protocol, the "
		"architecture and the operator's guide\n",
		SPLITNIC_VERSION);
}

static void cmd_help(const struct splitnic_cmd *c)
{
	const char *what = strchr(c->summary, '\n');

	if (what)
		printf("usage: splitnic %.*s\n\n  %s\n", (int)(what - c->summary), c->summary,
		       what + 1);
	else
		printf("usage: splitnic %s\n", c->summary);
}

/* --help or --version anywhere among a command's arguments (before a "--"), or 0. */
static const char *help_arg(int argc, char **argv)
{
	for (int i = 2; i < argc && strcmp(argv[i], "--"); i++)
		if (!strcmp(argv[i], "--help") || !strcmp(argv[i], "-h") ||
		    !strcmp(argv[i], "--version"))
			return argv[i];
	return NULL;
}

int main(int argc, char **argv)
{
	const struct splitnic_cmd *c = NULL;
	const char *h;

	if (argc < 2) {
		usage(stderr);
		return 2;
	}
	if (!strcmp(argv[1], "-h") || !strcmp(argv[1], "--help") || !strcmp(argv[1], "help")) {
		usage(stdout);
		return 0;
	}
	if (!strcmp(argv[1], "--version")) {
		printf("splitnic %s\n", SPLITNIC_VERSION);
		return 0;
	}
	for (size_t i = 0; i < N_CMDS; i++)
		if (!strcmp(argv[1], cmds[i].name))
			c = &cmds[i];
	if (!c) {
		fprintf(stderr, "splitnic: unknown command '%s'\n\n", argv[1]);
		usage(stderr);
		return 2;
	}
	h = help_arg(argc, argv);
	if (h && !strcmp(h, "--version")) {
		printf("splitnic %s %s\n", c->name, SPLITNIC_VERSION);
		return 0;
	}
	if (h) {
		cmd_help(c);
		return 0;
	}
	/* Every executor here is single-threaded (parallelism is --threads); OpenBLAS must not
	 * start its own threads, which on a busy machine costs more than they bring. */
	kern_blas_threads(1);
	return c->fn(argc - 1, argv + 1);
}
