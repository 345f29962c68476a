/* SPDX-License-Identifier: MIT */
/* Choice of the binary kernel table: once, from the CPU's features or SPLITNIC_ISA. */
#include <pthread.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "kernels/kern_ops.h"

static bool cpu_has_avx2(void)
{
	__builtin_cpu_init();
	return __builtin_cpu_supports("avx2") && __builtin_cpu_supports("fma") &&
	       __builtin_cpu_supports("popcnt") && __builtin_cpu_supports("bmi2");
}

static bool cpu_has_avx512(void)
{
	__builtin_cpu_init();
	return cpu_has_avx2() && __builtin_cpu_supports("avx512f") &&
	       __builtin_cpu_supports("avx512bw") && __builtin_cpu_supports("avx512vl") &&
	       __builtin_cpu_supports("avx512dq") && __builtin_cpu_supports("avx512vpopcntdq");
}

const struct kern_bin_ops *kern_ops_by_name(const char *name)
{
	if (!strcmp(name, "ref"))
		return &kern_ops_ref;
	if (!strcmp(name, "avx2"))
		return cpu_has_avx2() ? &kern_ops_avx2 : NULL;
	if (!strcmp(name, "avx512"))
		return cpu_has_avx512() ? &kern_ops_avx512 : NULL;
	return NULL;
}

static const struct kern_bin_ops *chosen;
static pthread_once_t chosen_once = PTHREAD_ONCE_INIT;

static void choose(void)
{
	const char *env = getenv("SPLITNIC_ISA");

	if (env && *env) {
		chosen = kern_ops_by_name(env);
		if (chosen)
			return;
		fprintf(stderr,
			"splitnic: SPLITNIC_ISA=%s is unknown or unsupported by this CPU, "
			"choosing automatically\n",
			env);
	}
	if (cpu_has_avx512())
		chosen = &kern_ops_avx512;
	else if (cpu_has_avx2())
		chosen = &kern_ops_avx2;
	else
		chosen = &kern_ops_ref;
}

const struct kern_bin_ops *kern_ops_get(void)
{
	pthread_once(&chosen_once, choose);
	return chosen;
}
