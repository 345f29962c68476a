// SPDX-License-Identifier: MIT
#include "protocol/proto.h"
#include "protocol/trust.h"

#include <errno.h>
#include <stdarg.h>
#include <stdio.h>
#include <string.h>

void proto_msg_init(struct proto_msg *m, enum proto_type type, uint32_t model_id,
		    uint64_t request_id)
{
	memset(m, 0, sizeof(*m));
	m->version = PROTO_VERSION;
	m->type = (uint8_t)type;
	m->hdr_len = (uint16_t)proto_type_hdr_len(type);
	m->model_id = model_id;
	m->request_id = request_id;
}

void proto_msg_set_tensor(struct proto_msg *m, enum proto_fmt fmt, uint32_t c, uint32_t h,
			  uint32_t w, float scale, int32_t zero_point)
{
	m->tensor.fmt = (uint8_t)fmt;
	m->tensor.c = c;
	m->tensor.h = h;
	m->tensor.w = w;
	m->tensor.count = (uint32_t)((uint64_t)c * h * w);
	m->tensor.scale_bits = fmt == PROTO_FMT_INT8 ? proto_f32_bits(scale) : 0;
	m->tensor.zero_point = fmt == PROTO_FMT_INT8 ? zero_point : 0;
}

uint64_t proto_msg_body_len(const struct proto_msg *m)
{
	switch (m->type) {
	case PROTO_REQUEST:
	case PROTO_ACTIVATION:
		return proto_fmt_bytes(m->tensor.fmt, m->tensor.count);
	case PROTO_RESPONSE:
		return proto_fmt_bytes(m->resp.score_fmt, m->resp.num_classes);
	case PROTO_ERROR:
	case PROTO_HEALTH:
		return m->total_len;
	}
	return 0;
}

/*
 * The headers of m must pass the parser's own checks for a message of body_len bytes: parse
 * them as the first fragment of that message (the parser reads headers only, never the data).
 */
int proto_msg_check(const struct proto_msg *m, size_t body_len)
{
	uint8_t hdr[PROTO_MAX_HDR_LEN];
	struct proto_msg tmp = *m, out;

	if (body_len > PROTO_MAX_TOTAL)
		return -EMSGSIZE;
	tmp.total_len = (uint32_t)body_len;
	tmp.frag_off = 0;
	tmp.frag_len = body_len <= 0xffff ? (uint16_t)body_len : 0xfff8;
	if (!proto_hdr_write(&tmp, hdr, hdr + sizeof(hdr)))
		return -EINVAL;
	if (proto_hdr_parse(hdr, hdr + tmp.hdr_len, tmp.hdr_len + tmp.frag_len, &out) != PROTO_OK)
		return -EINVAL;
	return 0;
}

int proto_build(const struct proto_msg *m, const void *body, size_t body_len, void *buf, size_t cap)
{
	struct proto_msg tmp = *m;
	uint8_t *p = buf;
	int err;

	err = proto_msg_check(m, body_len);
	if (err)
		return err;
	if (m->hdr_len + body_len > cap || m->hdr_len + body_len > PROTO_MAX_PAYLOAD)
		return -EMSGSIZE;
	tmp.total_len = (uint32_t)body_len;
	tmp.frag_off = 0;
	tmp.frag_len = (uint16_t)body_len;
	proto_hdr_write(&tmp, p, p + cap);
	if (body_len)
		memcpy(p + tmp.hdr_len, body, body_len);
	return (int)(tmp.hdr_len + body_len);
}

int proto_build_error_cut(struct proto_msg *m, const char *prefix, const char *reason, void *buf,
			  size_t cap)
{
	const uint32_t room = proto_trust_cut(cap < UINT32_MAX ? (uint32_t)cap : UINT32_MAX,
					      m->hdr_len, PROTO_REASON_MAX);
	char text[PROTO_REASON_MAX];
	size_t a = strnlen(prefix, room);
	size_t b = strnlen(reason, room - a);

	if (cap < m->hdr_len)
		return -EMSGSIZE;
	memcpy(text, prefix, a);
	memcpy(text + a, reason, b);
	m->total_len = (uint32_t)(a + b);
	return proto_build(m, text, a + b, buf, cap);
}

int proto_build_error_text(void *buf, size_t cap, uint32_t model_id, uint64_t request_id,
			   enum proto_error_code code, uint32_t detail, const char *prefix,
			   const char *reason)
{
	struct proto_msg m;

	proto_msg_init(&m, PROTO_ERROR, model_id, request_id);
	m.err.code = (uint16_t)code;
	m.err.detail = detail;
	return proto_build_error_cut(&m, prefix, reason, buf, cap);
}

int proto_build_error(void *buf, size_t cap, uint32_t model_id, uint64_t request_id,
		      enum proto_error_code code, uint32_t detail, const char *fmt, ...)
{
	char reason[PROTO_REASON_MAX + 1];
	va_list ap;

	va_start(ap, fmt);
	vsnprintf(reason, sizeof(reason), fmt, ap);
	va_end(ap);
	return proto_build_error_text(buf, cap, model_id, request_id, code, detail, "", reason);
}
