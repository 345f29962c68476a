// SPDX-License-Identifier: MIT
/* The request table: fixed slots, a stack of free ones. */
#include <errno.h>
#include <stdlib.h>
#include <string.h>

#include "host/host.h"

static size_t round_up(size_t v)
{
	return (v + HOST_CACHE_LINE - 1) / HOST_CACHE_LINE * HOST_CACHE_LINE;
}

int host_reqtab_init(struct host_reqtab *t, uint32_t slots, uint32_t act_bytes, uint32_t classes)
{
	const size_t act_sz = round_up(act_bytes ? act_bytes : 1);
	const size_t sc_sz = round_up((size_t)(classes ? classes : 1) * sizeof(double));
	const size_t per = act_sz + sc_sz;

	memset(t, 0, sizeof(*t));
	if (!slots)
		return -EINVAL;
	t->req = aligned_alloc(HOST_CACHE_LINE, sizeof(*t->req) * slots);
	t->free = calloc(slots, sizeof(*t->free));
	t->mem = aligned_alloc(HOST_CACHE_LINE, per * slots);
	if (!t->req || !t->free || !t->mem) {
		host_reqtab_fini(t);
		return -ENOMEM;
	}
	memset(t->req, 0, sizeof(*t->req) * slots);
	memset(t->mem, 0, per * slots);
	t->slots = slots;
	for (uint32_t i = 0; i < slots; i++) {
		struct host_req *r = &t->req[i];

		r->index = i;
		r->act = t->mem + per * i;
		r->scores = (double *)(void *)(r->act + act_sz);
		t->free[slots - 1 - i] = i;
	}
	t->n_free = slots;
	return 0;
}

void host_reqtab_fini(struct host_reqtab *t)
{
	free(t->req);
	free(t->free);
	free(t->mem);
	memset(t, 0, sizeof(*t));
}

struct host_req *host_reqtab_get(struct host_reqtab *t)
{
	struct host_req *r;
	uint8_t *act;
	double *scores;
	uint32_t idx;

	if (!t->n_free)
		return NULL;
	r = &t->req[t->free[--t->n_free]];
	act = r->act;
	scores = r->scores;
	idx = r->index;
	memset(r, 0, sizeof(*r));
	r->act = act;
	r->scores = scores;
	r->index = idx;
	r->ra_slot = -1;
	r->state = HOST_RS_QUEUED;
	return r;
}

int host_reqtab_put(struct host_reqtab *t, struct host_req *r)
{
	if (r->state == HOST_RS_FREE || t->n_free == t->slots) {
		t->double_puts++;
		return -EALREADY;
	}
	r->state = HOST_RS_FREE;
	t->free[t->n_free++] = r->index;
	return 0;
}
