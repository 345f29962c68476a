// SPDX-License-Identifier: MIT
#include <stdio.h>

#include "lib/snlib_obj.h"

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

int snlib_handle_check(const uint32_t *magic, const struct snlib_handle_kind *k,
		       struct splitnic_error *err)
{
	if (!magic)
		return snlib_fail(err, SPLITNIC_E_INVALID, "%s is NULL", k->arg);
	if (*magic == k->dead)
		return snlib_fail(err, SPLITNIC_E_BAD_HANDLE, "%s used after %s", k->noun,
				  k->freed_by);
	if (*magic != k->magic)
		return snlib_fail(err, SPLITNIC_E_BAD_HANDLE, "not a %s made by %s (magic 0x%08x)",
				  k->noun, k->made_by, *magic);
	return SPLITNIC_OK;
}
