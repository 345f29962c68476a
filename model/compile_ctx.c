/* SPDX-License-Identifier: MIT */
/* What both halves of the compiler report through (model/compile_ctx.h): errors naming the
 * file and the layer, and the op last emitted. */
#include <errno.h>
#include <stdarg.h>
#include <stdio.h>

#include "model/compile_ctx.h"

int cc_fail(struct cc *c, const char *file, const char *fmt, ...)
{
	const struct model_ic_layer *L = &c->ic->layers[c->layer];
	char msg[320];
	va_list ap;

	va_start(ap, fmt);
	vsnprintf(msg, sizeof(msg), fmt, ap);
	va_end(ap);
	snprintf(c->err, c->errlen, "%s: layer %u (%s): %s", file, c->layer,
		 model_src_type_name(L->type), msg);
	return -EINVAL;
}

int cc_nomem(struct cc *c)
{
	snprintf(c->err, c->errlen, "%s: out of memory", c->ic->arch_path);
	return -ENOMEM;
}

struct model_layer *cc_last(struct cc *c)
{
	return &c->m->layers[c->m->n_layers - 1];
}
