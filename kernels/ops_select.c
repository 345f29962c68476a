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

const char *kern_ops_missing(const char *name)
{
	static __thread char buf[96];
	size_t n, off = 0;

	__builtin_cpu_init();
	/* the avx2 table's needs, then the avx512 table's (which needs both) */
	const struct {
		const char *name;
		bool has;
	} feat[] = {
	    {"avx2", __builtin_cpu_supports("avx2")},
	    {"fma", __builtin_cpu_supports("fma")},
	    {"popcnt", __builtin_cpu_supports("popcnt")},
	    {"bmi2", __builtin_cpu_supports("bmi2")},
	    {"avx512f", __builtin_cpu_supports("avx512f")},
	    {"avx512bw", __builtin_cpu_supports("avx512bw")},
	    {"avx512vl", __builtin_cpu_supports("avx512vl")},
	    {"avx512dq", __builtin_cpu_supports("avx512dq")},
	    {"avx512vpopcntdq", __builtin_cpu_supports("avx512vpopcntdq")},
	};

	if (!strcmp(name, "ref"))
		n = 0;
	else if (!strcmp(name, "avx2"))
		n = 4;
	else if (!strcmp(name, "avx512"))
		n = sizeof(feat) / sizeof(*feat);
	else
		return NULL;
	buf[0] = 0;
	for (size_t i = 0; i < n; i++)
		if (!feat[i].has && off < sizeof(buf))
			off += (size_t)snprintf(buf + off, sizeof(buf) - off, "%s%s",
						off ? " " : "", feat[i].name);
	return buf;
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
		const char *why = kern_ops_missing(env);

		fprintf(stderr, "splitnic: SPLITNIC_ISA=%s is %s%s, choosing automatically\n", env,
			why ? "not supported by this CPU, which lacks "
			    : "unknown (ref, avx2 or avx512)",
			why ? why : "");
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
