// SPDX-License-Identifier: MIT
/* The NIC's HEALTH report (nicfw/health.h). */
#include <errno.h>
#include <stdio.h>
#include <string.h>

#include "nicfw/health.h"

void nicfw_health_init(struct nicfw_health *h, const char *ident)
{
	memset(h, 0, sizeof(*h));
	snprintf(h->ident, sizeof(h->ident), "%.*s", (int)PROTO_HEALTH_IDENT_LEN,
		 ident ? ident : "");
	h->state = PROTO_HEALTH_SERVING;
}

int nicfw_health_add(struct nicfw_health *h, uint32_t model_id, uint32_t first, uint32_t in_fmt,
		     uint32_t c, uint32_t hh, uint32_t w, uint32_t classes, const char *name)
{
	struct proto_health_model *e;

	if (h->n_models == NICFW_HEALTH_MAX_MODELS)
		return -ENOSPC;
	e = &h->model[h->n_models++];
	memset(e, 0, sizeof(*e));
	e->model_id = model_id;
	e->first_op = (uint16_t)first;
	e->mode = first ? PROTO_MODE_NIC_PART : PROTO_MODE_WHOLE;
	e->in_fmt = (uint8_t)in_fmt;
	e->c = c;
	e->h = hh;
	e->w = w;
	e->classes = (uint16_t)classes;
	snprintf(e->name, sizeof(e->name), "%.*s", (int)PROTO_HEALTH_NAME_LEN, name ? name : "");
	return 0;
}

enum proto_health_state nicfw_health_state(const struct nicfw_health *h, bool draining,
					   bool host_link_up)
{
	if (draining)
		return PROTO_HEALTH_DRAINING;
	for (uint32_t i = 0; !host_link_up && i < h->n_models; i++)
		if (h->model[i].mode == PROTO_MODE_NIC_PART)
			return PROTO_HEALTH_DEGRADED;
	return PROTO_HEALTH_SERVING;
}

int nicfw_health_report(const struct nicfw_health *h, void *buf, size_t cap, size_t probe_len,
			uint64_t request_id, uint32_t in_flight)
{
	return proto_build_health_report(buf, cap, probe_len, request_id, PROTO_ROLE_NIC,
					 (enum proto_health_state)h->state, in_flight, h->ident,
					 h->model, h->n_models);
}
