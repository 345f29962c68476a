// SPDX-License-Identifier: MIT
/* Ethernet/IPv4/UDP frames (built by nicfw/frame.c), and the front-end allow-list. */
#include <arpa/inet.h>
#include <errno.h>
#include <stdlib.h>
#include <string.h>

#include "host/host.h"
#include "nicfw/frame.h"

_Static_assert(HOST_FRAME_HDRS == NICFW_FRAME_HDRS, "host frames are nicfw frames");

uint32_t host_frame_udp(uint8_t *f, const struct host_addr *a, uint32_t plen)
{
	struct nicfw_frame_addr fa = {
	    .sip = a->sip, .dip = a->dip, .sport = a->sport, .dport = a->dport};

	memcpy(fa.smac, a->smac, 6);
	memcpy(fa.dmac, a->dmac, 6);
	return nicfw_frame_udp(f, &fa, plen);
}

int host_frame_parse(const uint8_t *f, uint32_t len, struct host_addr *a, const uint8_t **p,
		     uint32_t *plen)
{
	const uint8_t *ip = f + NICFW_ETH_HLEN, *udp;
	uint32_t ihl, tot, ulen;

	if (len < NICFW_ETH_HLEN || nicfw_get16(f + 12) != NICFW_ETYPE_IPV4)
		return -EPROTONOSUPPORT;
	if (len < NICFW_ETH_HLEN + NICFW_IP_HLEN || (ip[0] >> 4) != 4)
		return -EINVAL;
	ihl = (ip[0] & 0xfu) * 4u;
	tot = nicfw_get16(ip + 2);
	if (ihl < NICFW_IP_HLEN || tot < ihl || tot > len - NICFW_ETH_HLEN)
		return -EINVAL;
	if (ip[9] != NICFW_IPPROTO_UDP)
		return -EPROTONOSUPPORT;
	if (nicfw_get16(ip + 6) & 0x3fff)
		return -EPROTONOSUPPORT; /* IP fragments: never the protocol's datagrams */
	if (tot < ihl + NICFW_UDP_HLEN)
		return -EINVAL;
	udp = ip + ihl;
	ulen = nicfw_get16(udp + 4);
	if (ulen < NICFW_UDP_HLEN || ulen > tot - ihl)
		return -EINVAL;
	memcpy(a->smac, f + 6, 6);
	memcpy(a->dmac, f, 6);
	a->sip = nicfw_get32(ip + 12);
	a->dip = nicfw_get32(ip + 16);
	a->sport = nicfw_get16(udp);
	a->dport = nicfw_get16(udp + 2);
	*p = udp + NICFW_UDP_HLEN;
	*plen = ulen - NICFW_UDP_HLEN;
	return 0;
}

int host_cidr_parse(const char *s, struct host_cidr *c)
{
	char buf[32], *slash, *end;
	struct in_addr a;
	unsigned long bits = 32;

	if (strlen(s) >= sizeof(buf))
		return -EINVAL;
	strcpy(buf, s);
	slash = strchr(buf, '/');
	if (slash) {
		*slash = 0;
		bits = strtoul(slash + 1, &end, 10);
		if (end == slash + 1 || *end || bits > 32)
			return -EINVAL;
	}
	if (inet_pton(AF_INET, buf, &a) != 1)
		return -EINVAL;
	c->mask = bits ? ~0u << (32 - bits) : 0;
	c->net = ntohl(a.s_addr) & c->mask;
	return 0;
}

bool host_cidr_allowed(const struct host_cidr *c, uint32_t n, uint32_t ip)
{
	if (!n)
		return true;
	for (uint32_t i = 0; i < n; i++)
		if ((ip & c[i].mask) == c[i].net)
			return true;
	return false;
}
