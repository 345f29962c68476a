// SPDX-License-Identifier: MIT
/* HEALTH probes and reports (layout in protocol/proto.h). */
#include "protocol/proto.h"

#include <errno.h>
#include <string.h>

int proto_build_health_probe(void *buf, size_t cap, uint64_t request_id, size_t len)
{
	struct proto_msg m;
	uint8_t *p = buf;

	if (len < PROTO_HEALTH_HDR_LEN || len > PROTO_HEALTH_HDR_LEN + PROTO_HEALTH_MAX_DATA)
		return -EINVAL;
	if (len > cap)
		return -EMSGSIZE;
	proto_msg_init(&m, PROTO_HEALTH, 0, request_id);
	m.health.kind = PROTO_HEALTH_PROBE;
	m.total_len = m.frag_len = (uint16_t)(len - PROTO_HEALTH_HDR_LEN);
	proto_hdr_write(&m, p, p + cap);
	memset(p + PROTO_HEALTH_HDR_LEN, 0, len - PROTO_HEALTH_HDR_LEN);
	return (int)len;
}

static void put_name(uint8_t *dst, const char *src, size_t n)
{
	size_t k = src ? strnlen(src, n) : 0;

	if (k)
		memcpy(dst, src, k);
	memset(dst + k, 0, n - k);
}

int proto_build_health_report(void *buf, size_t cap, size_t probe_len, uint64_t request_id,
			      enum proto_health_role role, enum proto_health_state state,
			      uint32_t in_flight, const char *ident,
			      const struct proto_health_model *models, uint32_t n)
{
	size_t room = probe_len < cap ? probe_len : cap;
	uint32_t fit, i;
	struct proto_msg m;
	uint8_t *p = buf, *e;

	if (room > PROTO_HEALTH_HDR_LEN + PROTO_HEALTH_MAX_DATA)
		room = PROTO_HEALTH_HDR_LEN + PROTO_HEALTH_MAX_DATA;
	if (room < PROTO_HEALTH_HDR_LEN + PROTO_HEALTH_IDENT_LEN)
		return -EMSGSIZE;
	fit = (uint32_t)((room - PROTO_HEALTH_HDR_LEN - PROTO_HEALTH_IDENT_LEN) /
			 PROTO_HEALTH_ENTRY_LEN);
	if (fit > n)
		fit = n;
	proto_msg_init(&m, PROTO_HEALTH, 0, request_id);
	m.health.kind = PROTO_HEALTH_REPORT;
	m.health.state = (uint8_t)state;
	m.health.role = (uint8_t)role;
	m.health.flags = fit < n ? PROTO_HEALTH_F_TRUNCATED : 0;
	m.health.n_models = (uint16_t)fit;
	m.health.in_flight = in_flight;
	m.total_len = PROTO_HEALTH_IDENT_LEN + fit * PROTO_HEALTH_ENTRY_LEN;
	m.frag_len = (uint16_t)m.total_len;
	proto_hdr_write(&m, p, p + cap);
	put_name(p + PROTO_HEALTH_HDR_LEN, ident, PROTO_HEALTH_IDENT_LEN);
	for (i = 0; i < fit; i++) {
		e = p + PROTO_HEALTH_HDR_LEN + PROTO_HEALTH_IDENT_LEN + i * PROTO_HEALTH_ENTRY_LEN;
		proto_put32(e, models[i].model_id);
		proto_put16(e + 4, models[i].first_op);
		e[6] = models[i].mode;
		e[7] = models[i].in_fmt;
		proto_put32(e + 8, models[i].c);
		proto_put32(e + 12, models[i].h);
		proto_put32(e + 16, models[i].w);
		proto_put16(e + 20, models[i].classes);
		proto_put16(e + 22, 0);
		put_name(e + 24, models[i].name, PROTO_HEALTH_NAME_LEN);
	}
	return (int)(PROTO_HEALTH_HDR_LEN + m.total_len);
}

void proto_health_ident(const struct proto_msg *m, char ident[PROTO_HEALTH_IDENT_LEN + 1])
{
	memcpy(ident, m->data, PROTO_HEALTH_IDENT_LEN);
	ident[PROTO_HEALTH_IDENT_LEN] = 0;
}

void proto_health_model_get(const struct proto_msg *m, uint32_t i, struct proto_health_model *e)
{
	const uint8_t *p = m->data + PROTO_HEALTH_IDENT_LEN + (size_t)i * PROTO_HEALTH_ENTRY_LEN;

	e->model_id = proto_get32(p);
	e->first_op = proto_get16(p + 4);
	e->mode = p[6];
	e->in_fmt = p[7];
	e->c = proto_get32(p + 8);
	e->h = proto_get32(p + 12);
	e->w = proto_get32(p + 16);
	e->classes = proto_get16(p + 20);
	memcpy(e->name, p + 24, PROTO_HEALTH_NAME_LEN);
	e->name[PROTO_HEALTH_NAME_LEN] = 0;
}
