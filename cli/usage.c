// SPDX-License-Identifier: MIT
/* A command's bad arguments: what is wrong, then its usage (exit status 2). */
#include <stdarg.h>
#include <stdio.h>

#include "cli/cmds.h"

int cli_usage_error(const struct conf_cmd *c, const char *fmt, ...)
{
	va_list ap;

	va_start(ap, fmt);
	conf_vsay(c->prog, fmt, ap);
	va_end(ap);
	return conf_usage_error(c);
}
