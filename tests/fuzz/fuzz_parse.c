// SPDX-License-Identifier: MIT
/*
 * libFuzzer target: the datagram parser. Any input is one datagram. Checks that the verdict does
 * not depend on readable bytes past the datagram (XDP link padding), that an accepted datagram's
 * fields are within the datagram and the limits, and that writing the parsed headers back and
 * parsing them again gives the same message.
 */
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "protocol/proto.h"

#define CHECK(c)                                                                                   \
	do {                                                                                       \
		if (!(c))                                                                          \
			__builtin_trap();                                                          \
	} while (0)

static uint8_t padded[PROTO_MAX_PAYLOAD + 64];
static uint8_t again[PROTO_MAX_PAYLOAD];

static void check_same(const struct proto_msg *a, const struct proto_msg *b)
{
	CHECK(a->type == b->type && a->hdr_len == b->hdr_len && a->frag_len == b->frag_len);
	CHECK(a->model_id == b->model_id && a->request_id == b->request_id);
	CHECK(a->total_len == b->total_len && a->frag_off == b->frag_off && a->flags == b->flags);
	switch (a->type) {
	case PROTO_ACTIVATION:
		CHECK(!memcmp(&a->act.reply_addr, &b->act.reply_addr, 16));
		CHECK(a->act.reply_port == b->act.reply_port &&
		      a->act.executors == b->act.executors && a->act.t_pack_ns == b->act.t_pack_ns);
		CHECK(a->act.host_ref == b->act.host_ref && a->act.cookie == b->act.cookie);
		/* fall through */
	case PROTO_REQUEST:
		CHECK(a->tensor.fmt == b->tensor.fmt && a->tensor.count == b->tensor.count);
		CHECK(a->tensor.c == b->tensor.c && a->tensor.h == b->tensor.h &&
		      a->tensor.w == b->tensor.w && a->tensor.layer == b->tensor.layer);
		CHECK(a->tensor.scale_bits == b->tensor.scale_bits &&
		      a->tensor.zero_point == b->tensor.zero_point);
		break;
	case PROTO_RESPONSE:
		CHECK(a->resp.cls == b->resp.cls && a->resp.num_classes == b->resp.num_classes);
		CHECK(!memcmp(a->resp.t_ns, b->resp.t_ns, sizeof(a->resp.t_ns)));
		CHECK(a->resp.host_ref == b->resp.host_ref && a->resp.cookie == b->resp.cookie);
		break;
	case PROTO_ERROR:
		CHECK(a->err.code == b->err.code && a->err.detail == b->err.detail);
		CHECK(a->err.host_ref == b->err.host_ref && a->err.cookie == b->err.cookie);
		break;
	case PROTO_HEALTH:
		CHECK(a->health.kind == b->health.kind && a->health.n_models == b->health.n_models);
		CHECK(a->health.state == b->health.state && a->health.role == b->health.role);
		CHECK(a->health.flags == b->health.flags &&
		      a->health.in_flight == b->health.in_flight);
		break;
	}
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	struct proto_msg m, m2;
	enum proto_verdict v, v2;
	int n;

	if (size > PROTO_MAX_PAYLOAD)
		return 0;
	v = proto_parse(data, size, &m);
	CHECK(v < PROTO_VERDICT__COUNT);
	CHECK(proto_verdict_name(v)[0] != '?');

	memcpy(padded, data, size);
	memset(padded + size, 0xa5, 64);
	v2 = proto_hdr_parse(padded, padded + size + 64, (uint32_t)size, &m2);
	CHECK(v == v2);
	if (v != PROTO_OK)
		return 0;

	CHECK(m.data == data + m.hdr_len);
	CHECK((size_t)m.hdr_len + m.frag_len == size);
	CHECK(m.hdr_len >= proto_type_hdr_len(m.type) && m.hdr_len <= PROTO_MAX_HDR_LEN);
	CHECK(m.total_len <= PROTO_MAX_TOTAL);
	CHECK((uint64_t)m.frag_off + m.frag_len <= m.total_len);
	if (m.type == PROTO_REQUEST || m.type == PROTO_ACTIVATION)
		CHECK(proto_fmt_bytes(m.tensor.fmt, m.tensor.count) == m.total_len);
	if (m.type == PROTO_RESPONSE)
		CHECK(m.resp.cls < m.resp.num_classes);
	if (m.type == PROTO_HEALTH) {
		CHECK(m.frag_len == m.total_len && m.total_len <= PROTO_HEALTH_MAX_DATA);
		if (m.health.kind == PROTO_HEALTH_REPORT) {
			struct proto_health_model e;
			char ident[PROTO_HEALTH_IDENT_LEN + 1];

			proto_health_ident(&m, ident);
			for (uint32_t i = 0; i < m.health.n_models; i++)
				proto_health_model_get(&m, i, &e);
		}
	}

	CHECK(proto_hdr_write(&m, again, again + sizeof(again)) == m.hdr_len);
	memcpy(again + m.hdr_len, m.data, m.frag_len);
	CHECK(proto_parse(again, size, &m2) == PROTO_OK);
	check_same(&m, &m2);

	/* A whole message in one datagram rebuilds byte for byte (extra header bytes zeroed). */
	if (m.frag_off == 0 && m.frag_len == m.total_len) {
		m.hdr_len = (uint16_t)proto_type_hdr_len(m.type);
		n = proto_build(&m, m.data, m.total_len, again, sizeof(again));
		CHECK(n == (int)(m.hdr_len + m.total_len));
		CHECK(proto_parse(again, (size_t)n, &m2) == PROTO_OK);
		CHECK(!memcmp(again + m.hdr_len, data + (size - m.frag_len), m.frag_len));
	}
	return 0;
}
