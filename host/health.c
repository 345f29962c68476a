// SPDX-License-Identifier: MIT
/* splitnic-host's HEALTH report: its models as served, its state (host/host.h). */
#include <stdio.h>
#include <string.h>

#include "host/host.h"

static const uint8_t mode_entry[] = {
    [HOST_MODE_COPROC] = PROTO_MODE_COPROC,
    [HOST_MODE_HOST_ONLY] = PROTO_MODE_HOST_ONLY,
    [HOST_MODE_FALLBACK] = PROTO_MODE_FALLBACK,
};

void host_health_models(const struct host_model *hm, uint32_t n, struct proto_health_model *out)
{
	for (uint32_t i = 0; i < n; i++) {
		struct proto_health_model *e = &out[i];

		memset(e, 0, sizeof(*e));
		e->model_id = hm[i].model_id;
		e->mode = hm[i].mode < sizeof(mode_entry) ? mode_entry[hm[i].mode] : 0;
		e->in_fmt = (uint8_t)hm[i].in_fmt;
		e->c = hm[i].in_c;
		e->h = hm[i].in_h;
		e->w = hm[i].in_w;
		e->classes = (uint16_t)hm[i].classes;
		snprintf(e->name, sizeof(e->name), "%.*s", (int)PROTO_HEALTH_NAME_LEN,
			 hm[i].m->name);
	}
}

enum proto_health_state host_health_state(const struct host_model *hm, uint32_t n, bool draining,
					  bool nic_up)
{
	if (draining)
		return PROTO_HEALTH_DRAINING;
	for (uint32_t i = 0; !nic_up && i < n; i++)
		if (hm[i].mode == HOST_MODE_COPROC)
			return PROTO_HEALTH_DEGRADED;
	return PROTO_HEALTH_SERVING;
}

bool host_health_asks_me(const struct proto_msg *m)
{
	return m->health.kind == PROTO_HEALTH_PROBE &&
	       (m->health.role == 0 || m->health.role == PROTO_ROLE_HOST);
}
