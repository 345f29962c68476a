// SPDX-License-Identifier: MIT
/* Ethernet/ARP/IPv4/UDP framing and the neighbour table (contracts in protocol/frame.h). */
#include <string.h>

#include "protocol/frame.h"

_Static_assert((PROTO_NEIGH_SLOTS & (PROTO_NEIGH_SLOTS - 1)) == 0,
	       "PROTO_NEIGH_SLOTS must be a power of two");

uint32_t proto_frame_udp(uint8_t *f, const struct proto_addr *a, uint32_t plen, bool udp_offload)
{
	uint32_t psum = udp_offload ? 0 : proto_csum_add(0, f + PROTO_FRAME_HDRS, plen);

	return proto_frame_udp_hdrs(f, a, plen, psum, udp_offload);
}

enum proto_frame_kind proto_frame_parse(const uint8_t *f, uint32_t len, struct proto_addr *a,
					const uint8_t **p, uint32_t *plen, uint32_t *ihl_out)
{
	const uint8_t *ip = f + PROTO_ETH_HLEN, *udp;
	uint32_t ihl, tot, ulen;

	if (len < PROTO_ETH_HLEN)
		return PROTO_FRAME_BAD;
	if (proto_get16(f + 12) != PROTO_ETYPE_IPV4)
		return PROTO_FRAME_NOT_IPV4;
	ihl = (ip[0] & 0xfu) * 4u;
	if (len < PROTO_ETH_HLEN + PROTO_IP_HLEN || (ip[0] >> 4) != 4 || ihl < PROTO_IP_HLEN ||
	    len < PROTO_ETH_HLEN + ihl + PROTO_UDP_HLEN)
		return PROTO_FRAME_BAD;
	memcpy(a->smac, f + 6, 6);
	memcpy(a->dmac, f, 6);
	a->sip = proto_get32(ip + 12);
	a->dip = proto_get32(ip + 16);
	if (ip[9] != PROTO_IPPROTO_UDP)
		return PROTO_FRAME_NOT_UDP;
	udp = ip + ihl;
	a->sport = proto_get16(udp);
	a->dport = proto_get16(udp + 2);
	if (proto_get16(ip + 6) & 0x3fff)
		return PROTO_FRAME_IP_FRAG;
	tot = proto_get16(ip + 2);
	ulen = proto_get16(udp + 4);
	if (tot < ihl + PROTO_UDP_HLEN || tot > len - PROTO_ETH_HLEN || ulen < PROTO_UDP_HLEN ||
	    ulen > tot - ihl)
		return PROTO_FRAME_BAD;
	*p = udp + PROTO_UDP_HLEN;
	*plen = ulen - PROTO_UDP_HLEN;
	*ihl_out = ihl;
	return PROTO_FRAME_UDP;
}

bool proto_frame_csum_ok(const uint8_t *f, uint32_t ihl)
{
	const uint8_t *ip = f + PROTO_ETH_HLEN, *udp = ip + ihl;
	uint32_t ulen = proto_get16(udp + 4);

	if (proto_csum_fold(proto_csum_add(0, ip, ihl)) != 0xffff)
		return false;
	return !proto_get16(udp + 6) ||
	       proto_csum_fold(proto_csum_add(proto_csum_pseudo(ip, PROTO_IPPROTO_UDP, ulen), udp,
					      ulen)) == 0xffff;
}

bool proto_arp_reply(uint8_t *f, uint32_t len, const uint8_t mac[6], uint32_t ip,
		     uint32_t *sender_ip, const uint8_t **sender_mac)
{
	uint8_t *a = f + PROTO_ETH_HLEN;
	uint32_t spa;

	*sender_ip = 0;
	if (len < PROTO_ETH_HLEN + PROTO_ARP_LEN || proto_get16(f + 12) != PROTO_ETYPE_ARP ||
	    proto_get16(a) != 1 || proto_get16(a + 2) != PROTO_ETYPE_IPV4 || a[4] != 6 || a[5] != 4)
		return false;
	spa = proto_get32(a + 14);
	*sender_ip = spa;
	*sender_mac = a + 8;
	if (!ip || proto_get32(a + 24) != ip || proto_get16(a + 6) != 1)
		return false;
	proto_put16(a + 6, 2);
	memcpy(a + 18, a + 8, 6);
	proto_put32(a + 24, spa);
	memcpy(a + 8, mac, 6);
	proto_put32(a + 14, ip);
	memcpy(f, f + 6, 6);
	memcpy(f + 6, mac, 6);
	*sender_mac = a + 18;
	return true;
}

static uint32_t neigh_index(uint32_t ip)
{
	return (ip * 2654435761u) >> 24 & (PROTO_NEIGH_SLOTS - 1);
}

void proto_neigh_learn(struct proto_neigh_table *t, uint32_t ip, const uint8_t mac[6])
{
	struct proto_neigh *n = &t->slot[neigh_index(ip)];

	if (!ip || (mac[0] & 1))
		return;
	n->ip = ip;
	memcpy(n->mac, mac, 6);
}

bool proto_neigh_lookup(const struct proto_neigh_table *t, uint32_t ip, uint8_t mac[6])
{
	const struct proto_neigh *n = &t->slot[neigh_index(ip)];

	if (ip && n->ip == ip) {
		memcpy(mac, n->mac, 6);
		return true;
	}
	memset(mac, 0xff, 6);
	return false;
}
