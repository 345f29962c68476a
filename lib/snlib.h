/* SPDX-License-Identifier: MIT */
/*
 * lib/snlib.h — what the in-tree tools may see of libsplitnic's objects beyond the public
 * header (include/splitnic/splitnic.h). Not installed, not exported from libsplitnic.so.
 */
#ifndef SNLIB_H
#define SNLIB_H

#include <stdarg.h>

#include "kernels/kern.h"
#include "splitnic/splitnic.h"

/* The compiled model behind a live splitnic model (NULL if it is not one). */
const struct model *snlib_model_kern(const struct splitnic_model *model);

/* Set *err (if not NULL) to code and the formatted message; returns code. */
int snlib_fail(struct splitnic_error *err, int code, const char *fmt, ...)
    __attribute__((format(printf, 3, 4)));

/* Clear *err (if not NULL); returns SPLITNIC_OK. */
int snlib_ok(struct splitnic_error *err);

#endif /* SNLIB_H */
