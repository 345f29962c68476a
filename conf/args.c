// SPDX-License-Identifier: MIT
#include <errno.h>
#include <libgen.h>
#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "conf/args.h"
#include "conf/opts.h"

int conf_port(const char *verb, const char *opt, const char *s, uint16_t *port)
{
	char who[64];
	int64_t v;

	snprintf(who, sizeof(who), "splitnic %s", verb);
	if (conf_int(who, opt, s, 1, 65535, &v))
		return -EINVAL;
	*port = (uint16_t)v;
	return 0;
}

static int output_fail(const char *verb, const char *opt, const char *path, const char *what,
		       int err)
{
	fprintf(stderr, "splitnic %s: %s %s: %s%s\n", verb, opt, path, what, strerror(err));
	return -err;
}

int conf_output_ok(const char *verb, const char *opt, const char *path)
{
	char buf[PATH_MAX];
	const char *dir;
	struct stat st;

	if (!*path)
		return output_fail(verb, opt, path, "", ENOENT);
	if (!stat(path, &st)) {
		if (S_ISDIR(st.st_mode))
			return output_fail(verb, opt, path, "", EISDIR);
		if (access(path, W_OK))
			return output_fail(verb, opt, path, "", errno);
		return 0;
	}
	if (errno != ENOENT)
		return output_fail(verb, opt, path, "", errno);
	snprintf(buf, sizeof(buf), "%s", path);
	dir = dirname(buf);
	if (stat(dir, &st))
		return output_fail(verb, opt, path, "its directory: ", errno);
	if (!S_ISDIR(st.st_mode))
		return output_fail(verb, opt, path, "its directory: ", ENOTDIR);
	if (access(dir, W_OK | X_OK))
		return output_fail(verb, opt, path, "its directory: ", errno);
	return 0;
}
