// SPDX-License-Identifier: MIT
/* splitnic --version: the version and what this build and this machine offer. */
#include <bpf/libbpf.h>
#include <stdio.h>
#include <string.h>

#include "cli/cmds.h"
#include "kernels/cuda/kcuda.h"
#include "kernels/kern_ops.h"

#ifndef SN_DPDK_VERSION
#define SN_DPDK_VERSION "unknown"
#endif

void cli_version(FILE *f)
{
	static const char *const isa[] = {"ref", "avx2", "avx512"};
	char msg[512];

	fprintf(f, "splitnic %s\n", CONF_VERSION);
	fprintf(f, "  binary kernels: tables ref, avx2, avx512 compiled in; this CPU runs");
	for (size_t i = 0; i < sizeof(isa) / sizeof(isa[0]); i++) {
		const char *miss = kern_ops_missing(isa[i]);

		if (miss && !*miss)
			fprintf(f, " %s", isa[i]);
	}
	fprintf(f, "; in use: %s", kern_ops_get()->name);
	for (size_t i = 0; i < sizeof(isa) / sizeof(isa[0]); i++) {
		const char *miss = kern_ops_missing(isa[i]);

		if (miss && *miss)
			fprintf(f, "; %s needs %s", isa[i], miss);
	}
	fprintf(f, "\n  CUDA: ");
	if (!kcuda_built)
		fprintf(f, "not compiled (no nvcc at build time)\n");
	else if (!kcuda_load(msg, sizeof(msg)))
		fprintf(f, "compiled; the GPU executor does not load: %s\n", msg);
	else if (!kcuda_open(msg, sizeof(msg)))
		fprintf(f, "compiled, the GPU executor loads; no usable GPU: %s\n", msg);
	else
		fprintf(f, "compiled, the GPU executor loads; GPU %s\n", msg);
	fprintf(f, "  DPDK: %s (splitnic-nic and splitnic-host were built with it)\n",
		SN_DPDK_VERSION);
	fprintf(f, "  libbpf: %s (the XDP executor, splitnic xdp)\n", libbpf_version_string());
}
