// SPDX-License-Identifier: MIT
/* `splitnic serve`'s dynamic batching (serve/batch.h). */
#include <errno.h>
#include <stdlib.h>
#include <string.h>

#include "serve/batch.h"

int serve_batch_init(struct serve_batch *b, const struct conf_batch *cfg, uint32_t in_bytes,
		     uint32_t classes)
{
	const size_t in = ((size_t)cfg->max_batch * in_bytes + 63) / 64 * 64;

	memset(b, 0, sizeof(*b));
	b->cfg = *cfg;
	b->in_bytes = in_bytes;
	b->classes = classes;
	b->in = aligned_alloc(64, in ? in : 64);
	b->scores = calloc((size_t)cfg->max_batch * classes, sizeof(double));
	b->req = calloc(cfg->max_batch, sizeof(*b->req));
	return b->in && b->scores && b->req ? 0 : -ENOMEM;
}

void serve_batch_fini(struct serve_batch *b)
{
	free(b->in);
	free(b->scores);
	free(b->req);
	memset(b, 0, sizeof(*b));
}

uint64_t serve_batch_wait_ns(const struct serve_batch *b, uint64_t now)
{
	uint64_t due;

	if (!b->n)
		return UINT64_MAX;
	due = b->req[0].t_in + b->cfg.max_delay_ns;
	return b->n >= b->cfg.max_batch || now >= due ? 0 : due - now;
}

int serve_batch_run(struct serve_batch *b, struct kexec *x)
{
	return kexec_run(x, b->in, b->n, b->scores);
}
