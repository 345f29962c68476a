/* SPDX-License-Identifier: MIT */
/*
 * nicfw/health.h — what the NIC says about itself in a HEALTH report (protocol/proto.h): its
 * identity, its models and its state, filled by the dispatcher's owner (splitnic-nic) and read
 * by the dispatcher (nicfw/dispatch.h), which answers probes on the wire port.
 *
 * Which probes the NIC answers (the probe's role byte is the role asked, 0 = any): a probe for
 * any role or for splitnic-nic, arriving on the wire port, is answered by the NIC itself (it
 * is the server's address); a probe for another role (splitnic-host) passes up to the host,
 * whose report passes back out; a HEALTH report arriving on the wire port is dropped (counted).
 *
 * State: draining from the owner's SIGTERM until it exits; degraded while a model's NIC part
 * needs the host (an ACTIVATION source) and the host port's link is down (the NIC still
 * answers its stand-alone models, but the co-processor models are away); serving otherwise.
 */
#ifndef NICFW_HEALTH_H
#define NICFW_HEALTH_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "protocol/proto.h"

#define NICFW_HEALTH_MAX_MODELS 16

struct nicfw_health {
	char ident[PROTO_HEALTH_IDENT_LEN + 1];
	uint32_t n_models;
	struct proto_health_model model[NICFW_HEALTH_MAX_MODELS];
	uint8_t state; /* enum proto_health_state; the owner's loop writes it */
};

/* An empty report for identity ident (cut at 32 bytes), state serving. */
void nicfw_health_init(struct nicfw_health *h, const char *ident);
/*
 * Add a model: `first` its first op on the NIC (0: the whole model, answered alone; else the
 * NIC part of a co-processor model, taking `in_count` bits), in_fmt (enum proto_fmt) and shape
 * of what it takes, classes, name. -ENOSPC when NICFW_HEALTH_MAX_MODELS are listed.
 */
int nicfw_health_add(struct nicfw_health *h, uint32_t model_id, uint32_t first, uint32_t in_fmt,
		     uint32_t c, uint32_t hh, uint32_t w, uint32_t classes, const char *name);
/* The state for these conditions (the rules above). */
enum proto_health_state nicfw_health_state(const struct nicfw_health *h, bool draining,
					   bool host_link_up);
/* The report answering a probe of probe_len bytes (proto_build_health_report's contract). */
int nicfw_health_report(const struct nicfw_health *h, void *buf, size_t cap, size_t probe_len,
			uint64_t request_id, uint32_t in_flight);

#endif /* NICFW_HEALTH_H */
