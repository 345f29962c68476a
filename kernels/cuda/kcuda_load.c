/* SPDX-License-Identifier: MIT */
/*
 * The loader of kernels/cuda/kcuda.h: opens libsncuda.so with dlopen on first use and takes its
 * one table with one dlsym. Built without nvcc, it answers "built without CUDA".
 *
 * The object is looked for in $SPLITNIC_CUDA_LIB, then beside the executable, in its parent
 * folder and in ../lib/splitnic (an installed tree).
 */
#include <dlfcn.h>
#include <errno.h>
#include <limits.h>
#include <stdbool.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "kernels/cuda/kcuda.h"

#ifndef KCUDA_BUILT
#error "KCUDA_BUILT (0 or 1) comes from mk/cuda.mk"
#endif

#define KCUDA_SO "libsncuda.so"

const int kcuda_built = KCUDA_BUILT;

static pthread_once_t load_once = PTHREAD_ONCE_INIT;
static const struct kcuda_ops *loaded;
static char load_msg[PATH_MAX + 256];

/* Folder of the running executable, "" if unknown. */
static void exe_dir(char *dir, size_t len)
{
	ssize_t n = readlink("/proc/self/exe", dir, len - 1);
	char *slash;

	dir[n > 0 ? n : 0] = '\0';
	slash = strrchr(dir, '/');
	if (slash)
		*slash = '\0';
	else
		dir[0] = '\0';
}

/* The path to load: $SPLITNIC_CUDA_LIB, or the first candidate that exists; false if none. */
static bool find_so(char *path, size_t len)
{
	static const char *const rel[] = {"/" KCUDA_SO, "/../" KCUDA_SO,
					  "/../lib/splitnic/" KCUDA_SO};
	const char *env = getenv("SPLITNIC_CUDA_LIB");
	char dir[PATH_MAX];

	if (env && *env) {
		snprintf(path, len, "%s", env);
		return true;
	}
	exe_dir(dir, sizeof(dir));
	for (size_t i = 0; i < sizeof(rel) / sizeof(rel[0]); i++) {
		snprintf(path, len, "%s%s", dir, rel[i]);
		if (!access(path, F_OK))
			return true;
	}
	snprintf(load_msg, sizeof(load_msg),
		 "no usable CUDA GPU: GPU executor " KCUDA_SO
		 " not found beside %s (set SPLITNIC_CUDA_LIB to its path)",
		 dir[0] ? dir : "the executable");
	return false;
}

/* The table if it is one this loader was built for, else NULL with the reason in load_msg. */
static const struct kcuda_ops *table_fits(const struct kcuda_ops *t, const char *path)
{
	if (t->abi == KCUDA_ABI && t->size == sizeof(struct kcuda_ops))
		return t;
	snprintf(load_msg, sizeof(load_msg),
		 "no usable CUDA GPU: GPU executor %s has table version %u (%u bytes); this "
		 "program needs version %u (%zu bytes): build or install both from one tree",
		 path, t->abi, t->size, KCUDA_ABI, sizeof(struct kcuda_ops));
	return NULL;
}

static void load(void)
{
	char path[PATH_MAX];
	const struct kcuda_ops *t;
	void *h;

	if (!kcuda_built) {
		snprintf(load_msg, sizeof(load_msg), "built without CUDA (nvcc not found)");
		return;
	}
	if (!find_so(path, sizeof(path)))
		return;
	h = dlopen(path, RTLD_NOW | RTLD_LOCAL);
	if (!h) {
		snprintf(load_msg, sizeof(load_msg),
			 "no usable CUDA GPU: cannot load the GPU executor: %s", dlerror());
		return;
	}
	t = dlsym(h, KCUDA_TABLE_SYMBOL);
	if (!t)
		snprintf(load_msg, sizeof(load_msg),
			 "no usable CUDA GPU: GPU executor %s: no symbol " KCUDA_TABLE_SYMBOL,
			 path);
	else
		loaded = table_fits(t, path);
	if (!loaded)
		dlclose(h);
}

const struct kcuda_ops *kcuda_load(char *msg, size_t len)
{
	pthread_once(&load_once, load);
	if (!loaded && msg && len)
		snprintf(msg, len, "%s", load_msg);
	return loaded;
}

const struct kcuda_ops *kcuda_open(char *msg, size_t len)
{
	const struct kcuda_ops *t = kcuda_load(msg, len);

	return t && !t->probe(msg, len) ? t : NULL;
}
