// SPDX-License-Identifier: MIT
#include "protocol/proto.h"

#include <errno.h>
#include <string.h>

static uint32_t frag_step(uint32_t hdr_len, size_t payload)
{
	size_t room = payload - hdr_len;

	if (room > 0xffff)
		room = 0xffff;
	return (uint32_t)(room & ~(size_t)(PROTO_FRAG_ALIGN - 1));
}

uint32_t proto_frag_count(uint32_t hdr_len, size_t body_len, size_t payload)
{
	uint32_t step;

	if (payload > PROTO_MAX_PAYLOAD)
		payload = PROTO_MAX_PAYLOAD;
	if (payload < hdr_len + PROTO_FRAG_ALIGN)
		return 0;
	step = frag_step(hdr_len, payload);
	return body_len == 0 ? 1 : (uint32_t)((body_len + step - 1) / step);
}

uint32_t proto_wire_bytes(uint32_t hdr_len, size_t body_len, size_t payload)
{
	return proto_frag_count(hdr_len, body_len, payload) * hdr_len + (uint32_t)body_len;
}

int proto_frag_init(struct proto_frag *f, const struct proto_msg *m, const void *body,
		    size_t body_len, size_t payload)
{
	int err;

	if (payload < PROTO_MIN_PAYLOAD || payload < (size_t)m->hdr_len + PROTO_FRAG_ALIGN)
		return -EINVAL;
	if (payload > PROTO_MAX_PAYLOAD)
		payload = PROTO_MAX_PAYLOAD;
	err = proto_msg_check(m, body_len);
	if (err)
		return err;
	if ((m->type == PROTO_ERROR || m->type == PROTO_HEALTH) && m->hdr_len + body_len > payload)
		return -EMSGSIZE;
	memset(f, 0, sizeof(*f));
	f->m = *m;
	f->m.total_len = (uint32_t)body_len;
	f->body = body;
	f->step = frag_step(m->hdr_len, payload);
	return 0;
}

int proto_frag_next(struct proto_frag *f, void *buf, size_t cap)
{
	uint8_t *p = buf;
	uint32_t len;

	if (f->done)
		return 0;
	len = f->m.total_len - f->off;
	if (len > f->step)
		len = f->step;
	if (f->m.hdr_len + (size_t)len > cap)
		return -ENOSPC;
	f->m.frag_off = f->off;
	f->m.frag_len = (uint16_t)len;
	proto_hdr_write(&f->m, p, p + cap);
	if (len)
		memcpy(p + f->m.hdr_len, f->body + f->off, len);
	f->off += len;
	f->done = f->off == f->m.total_len;
	return (int)(f->m.hdr_len + len);
}
