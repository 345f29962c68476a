// SPDX-License-Identifier: MIT
/* Reply templates: headers written once, checksums updated by the per-message words only
 * (RFC 1624), see host/host.h. */
#include <errno.h>
#include <string.h>

#include "host/host.h"

#define IP_OFF	 PROTO_ETH_HLEN
#define UDP_OFF	 (PROTO_ETH_HLEN + PROTO_IP_HLEN)
#define DATA_OFF PROTO_FRAME_HDRS

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
	struct proto_addr a = *from;
	uint8_t *f = t->frame, *p = f + DATA_OFF;
	struct proto_msg c = *m;
	uint32_t ulen;

	memset(t, 0, sizeof(*t));
	if (m->frag_off || m->frag_len != m->total_len || m->hdr_len > PROTO_MAX_HDR_LEN ||
	    var_from < PROTO_COMMON_LEN || var_from > m->hdr_len || (var_from & 1) ||
	    PROTO_FRAME_HDRS + m->hdr_len + m->total_len > PROTO_FRAME_MAX)
		return -EINVAL;
	c.model_id = 0;
	c.request_id = 0;
	if (!proto_hdr_write(&c, p, p + PROTO_MAX_HDR_LEN))
		return -EINVAL;
	t->hdr_len = m->hdr_len;
	t->var_from = var_from;
	t->data_len = m->total_len;
	t->udp_offload = udp_offload;
	memset(p + var_from, 0, m->hdr_len - var_from);
	memset(a.dmac, 0, 6);
	memset(a.smac, 0, 6);
	a.dip = 0;
	a.dport = 0;
	ulen = PROTO_UDP_HLEN + m->hdr_len + m->total_len;
	/* headers only: the data is summed with each message */
	proto_frame_udp(f, &a, m->hdr_len + m->total_len, true);
	proto_put16(f + IP_OFF + 10, 0);
	t->ip_sum = proto_csum_add(0, f + IP_OFF, PROTO_IP_HLEN);
	t->pseudo_sum = proto_csum_pseudo(f + IP_OFF, PROTO_IPPROTO_UDP, ulen);
	proto_put16(f + UDP_OFF + 6, 0);
	t->udp_sum = proto_csum_add(t->pseudo_sum, f + UDP_OFF, PROTO_UDP_HLEN + m->hdr_len);
	return 0;
}

uint32_t host_tpl_fill(const struct host_tpl *t, uint8_t *f, const struct proto_msg *m,
		       const void *data, const struct proto_addr *to)
{
	uint8_t *p = f + DATA_OFF;
	uint32_t s;
	uint16_t c;

	memcpy(f, t->frame, DATA_OFF + t->hdr_len);
	proto_hdr_write(m, p, p + t->hdr_len);
	memcpy(p + t->hdr_len, data, t->data_len);
	memcpy(f, to->dmac, 6);
	memcpy(f + 6, to->smac, 6);
	proto_put32(f + IP_OFF + 16, to->dip);
	proto_put16(f + UDP_OFF + 2, to->dport);
	s = proto_csum_add(t->ip_sum, f + IP_OFF + 16, 4);
	proto_put16(f + IP_OFF + 10, (uint16_t)~proto_csum_fold(s));
	if (t->udp_offload) {
		proto_put16(f + UDP_OFF + 6,
			    proto_csum_fold(proto_csum_add(t->pseudo_sum, f + IP_OFF + 16, 4)));
	} else {
		s = proto_csum_add(t->udp_sum, f + IP_OFF + 16, 4) + to->dport;
		s = sum_var(t, s, p);
		s = proto_csum_add(s, p + t->hdr_len, t->data_len);
		c = (uint16_t)~proto_csum_fold(s);
		proto_put16(f + UDP_OFF + 6, c ? c : 0xffff);
	}
	return DATA_OFF + t->hdr_len + t->data_len;
}
