// SPDX-License-Identifier: MIT
#include <stdio.h>

#include "lib/snlib.h"

int snlib_fail(struct splitnic_error *err, int code, const char *fmt, ...)
{
	va_list ap;

	if (!err)
		return code;
	err->code = code;
	va_start(ap, fmt);
	vsnprintf(err->msg, sizeof(err->msg), fmt, ap);
	va_end(ap);
	return code;
}

int snlib_ok(struct splitnic_error *err)
{
	if (err) {
		err->code = SPLITNIC_OK;
		err->msg[0] = 0;
	}
	return SPLITNIC_OK;
}
