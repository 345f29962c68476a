// SPDX-License-Identifier: MIT
/* The NIC stage's in-flight window and the fallback decisions (see host/host.h). */
#include <errno.h>
#include <stdlib.h>
#include <string.h>

#include "host/host.h"

static const char *const fb_names[HOST_FB__COUNT] = {
    [HOST_FB_NONE] = "none",	       [HOST_FB_FORCED] = "forced",
    [HOST_FB_LINK_DOWN] = "link_down", [HOST_FB_WINDOW] = "window_full",
    [HOST_FB_TIMEOUT] = "timeout",     [HOST_FB_NIC_ERROR] = "nic_error",
    [HOST_FB_SUSPECT] = "nic_suspect",
};

const char *host_fb_reason_name(unsigned r)
{
	return r < HOST_FB__COUNT ? fb_names[r] : "?";
}

int host_nic_init(struct host_nic *n, uint32_t window, uint64_t timeout_ns)
{
	memset(n, 0, sizeof(*n));
	if (!window)
		return -EINVAL;
	n->window = window;
	n->timeout_ns = timeout_ns;
	n->cap = 1;
	while (n->cap < 2 * window)
		n->cap <<= 1;
	n->ring = calloc(n->cap, sizeof(*n->ring));
	return n->ring ? 0 : -ENOMEM;
}

void host_nic_fini(struct host_nic *n)
{
	free(n->ring);
	memset(n, 0, sizeof(*n));
}

enum host_fb_reason host_nic_decide(const struct host_nic *n, uint32_t mode, uint64_t now_ns)
{
	if (mode == HOST_MODE_FALLBACK)
		return HOST_FB_FORCED;
	if (!n->link_up)
		return HOST_FB_LINK_DOWN;
	/* a removed entry keeps its ring position until the head passes it: count <= cap */
	if (n->live >= n->window || n->count >= n->cap)
		return HOST_FB_WINDOW;
	if (now_ns < n->suspect_until)
		return HOST_FB_SUSPECT;
	return HOST_FB_NONE;
}

void host_nic_sent(struct host_nic *n, struct host_req *r, uint64_t now_ns)
{
	r->t_sent = now_ns;
	r->state = HOST_RS_INFLIGHT;
	r->nic_pos = (n->head + n->count) & (n->cap - 1);
	n->ring[r->nic_pos] = r;
	n->count++;
	n->live++;
}

static void pop_removed(struct host_nic *n)
{
	while (n->count && !n->ring[n->head]) {
		n->head = (n->head + 1) & (n->cap - 1);
		n->count--;
	}
}

struct host_req *host_nic_complete(struct host_nic *n, uint32_t model_id, uint64_t request_id)
{
	for (uint32_t i = 0; i < n->count; i++) {
		struct host_req *r = n->ring[(n->head + i) & (n->cap - 1)];

		if (r && r->request_id == request_id && r->model_id == model_id) {
			host_nic_remove(n, r);
			return r;
		}
	}
	return NULL;
}

void host_nic_remove(struct host_nic *n, struct host_req *r)
{
	n->ring[r->nic_pos] = NULL;
	n->live--;
	n->suspect_until = 0;
	pop_removed(n);
}

struct host_req *host_nic_expired(struct host_nic *n, uint64_t now_ns)
{
	struct host_req *r;

	pop_removed(n);
	if (!n->count)
		return NULL;
	r = n->ring[n->head];
	if (n->link_up && now_ns < r->t_sent + n->timeout_ns)
		return NULL;
	if (n->link_up)
		n->suspect_until = now_ns + 10 * n->timeout_ns;
	n->ring[n->head] = NULL;
	n->live--;
	pop_removed(n);
	return r;
}
