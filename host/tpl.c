// SPDX-License-Identifier: MIT
/* Reply templates: the protocol header written once, the payload's checksum updated by the
 * per-message words only (RFC 1624), see host/host.h. */
#include <errno.h>
#include <string.h>

#include "host/host.h"

/* The per-message words of the protocol header at p: model id, request id, the type header
 * from var_from on. */
static uint32_t sum_var(const struct host_tpl *t, uint32_t s, const uint8_t *p)
{
	s = proto_csum_add(s, p + 8, 4);
	s = proto_csum_add(s, p + 16, 8);
	return proto_csum_add(s, p + t->var_from, t->hdr_len - t->var_from);
}

int host_tpl_init(struct host_tpl *t, const struct proto_msg *m, uint32_t var_from,
		  const struct proto_addr *from, bool udp_offload)
{
	struct proto_msg c = *m;

	memset(t, 0, sizeof(*t));
	if (m->frag_off || m->frag_len != m->total_len || m->hdr_len > PROTO_MAX_HDR_LEN ||
	    var_from < PROTO_COMMON_LEN || var_from > m->hdr_len || (var_from & 1) ||
	    PROTO_FRAME_HDRS + m->hdr_len + m->total_len > PROTO_FRAME_MAX)
		return -EINVAL;
	c.model_id = 0;
	c.request_id = 0;
	if (!proto_hdr_write(&c, t->hdr, t->hdr + PROTO_MAX_HDR_LEN))
		return -EINVAL;
	t->hdr_len = m->hdr_len;
	t->var_from = var_from;
	t->data_len = m->total_len;
	t->udp_offload = udp_offload;
	t->from.sip = from->sip;
	t->from.sport = from->sport;
	memset(t->hdr + var_from, 0, m->hdr_len - var_from);
	t->hdr_sum = proto_csum_add(0, t->hdr, m->hdr_len);
	return 0;
}

uint32_t host_tpl_fill(const struct host_tpl *t, uint8_t *f, const struct proto_msg *m,
		       const void *data, const struct proto_addr *to)
{
	uint8_t *p = f + PROTO_FRAME_HDRS;
	struct proto_addr a = t->from;
	uint32_t sum = 0;

	memcpy(p, t->hdr, t->hdr_len);
	proto_hdr_write(m, p, p + t->hdr_len);
	memcpy(p + t->hdr_len, data, t->data_len);
	memcpy(a.dmac, to->dmac, 6);
	memcpy(a.smac, to->smac, 6);
	a.dip = to->dip;
	a.dport = to->dport;
	/* the protocol header is a multiple of 4 bytes: the data's words line up after it */
	if (!t->udp_offload)
		sum = proto_csum_add(sum_var(t, t->hdr_sum, p), p + t->hdr_len, t->data_len);
	return proto_frame_udp_hdrs(f, &a, t->hdr_len + t->data_len, sum, t->udp_offload);
}
