// SPDX-License-Identifier: MIT
/* Ethernet/IPv4/UDP frames by hand (no OS or DPDK headers), and the front-end allow-list. */
#include <arpa/inet.h>
#include <errno.h>
#include <stdlib.h>
#include <string.h>

#include "host/host.h"

#define ETH_HLEN 14u
#define IP_HLEN	 20u
#define UDP_HLEN 8u

static void put16(uint8_t *p, uint16_t v)
{
	p[0] = (uint8_t)(v >> 8);
	p[1] = (uint8_t)v;
}

static void put32(uint8_t *p, uint32_t v)
{
	put16(p, (uint16_t)(v >> 16));
	put16(p + 2, (uint16_t)v);
}

static uint16_t get16(const uint8_t *p)
{
	return (uint16_t)(p[0] << 8 | p[1]);
}

static uint32_t get32(const uint8_t *p)
{
	return (uint32_t)get16(p) << 16 | get16(p + 2);
}

static uint32_t csum_add(uint32_t sum, const uint8_t *p, uint32_t len)
{
	uint32_t i;

	for (i = 0; i + 1 < len; i += 2)
		sum += get16(p + i);
	if (len & 1)
		sum += (uint32_t)p[len - 1] << 8;
	return sum;
}

static uint16_t csum_fold(uint32_t sum)
{
	while (sum >> 16)
		sum = (sum & 0xffff) + (sum >> 16);
	return (uint16_t)~sum;
}

uint32_t host_frame_udp(uint8_t *f, const struct host_addr *a, uint32_t plen)
{
	uint8_t *ip = f + ETH_HLEN, *udp = ip + IP_HLEN;
	uint32_t sum;
	uint16_t c;

	memcpy(f, a->dmac, 6);
	memcpy(f + 6, a->smac, 6);
	put16(f + 12, 0x0800);
	ip[0] = 0x45;
	ip[1] = 0;
	put16(ip + 2, (uint16_t)(IP_HLEN + UDP_HLEN + plen));
	put16(ip + 4, 0);
	put16(ip + 6, 0x4000);
	ip[8] = 64;
	ip[9] = 17;
	put16(ip + 10, 0);
	put32(ip + 12, a->sip);
	put32(ip + 16, a->dip);
	put16(ip + 10, csum_fold(csum_add(0, ip, IP_HLEN)));
	put16(udp, a->sport);
	put16(udp + 2, a->dport);
	put16(udp + 4, (uint16_t)(UDP_HLEN + plen));
	put16(udp + 6, 0);
	sum = csum_add(0, ip + 12, 8) + 17 + UDP_HLEN + plen;
	c = csum_fold(csum_add(sum, udp, UDP_HLEN + plen));
	put16(udp + 6, c ? c : 0xffff);
	return HOST_FRAME_HDRS + plen;
}

int host_frame_parse(const uint8_t *f, uint32_t len, struct host_addr *a, const uint8_t **p,
		     uint32_t *plen)
{
	const uint8_t *ip = f + ETH_HLEN, *udp;
	uint32_t ihl, tot, ulen;

	if (len < ETH_HLEN || get16(f + 12) != 0x0800)
		return -EPROTONOSUPPORT;
	if (len < ETH_HLEN + IP_HLEN || (ip[0] >> 4) != 4)
		return -EINVAL;
	ihl = (ip[0] & 0xfu) * 4u;
	tot = get16(ip + 2);
	if (ihl < IP_HLEN || tot < ihl || tot > len - ETH_HLEN)
		return -EINVAL;
	if (ip[9] != 17)
		return -EPROTONOSUPPORT;
	if (get16(ip + 6) & 0x3fff)
		return -EPROTONOSUPPORT; /* IP fragments: never the protocol's datagrams */
	if (tot < ihl + UDP_HLEN)
		return -EINVAL;
	udp = ip + ihl;
	ulen = get16(udp + 4);
	if (ulen < UDP_HLEN || ulen > tot - ihl)
		return -EINVAL;
	memcpy(a->smac, f + 6, 6);
	memcpy(a->dmac, f, 6);
	a->sip = get32(ip + 12);
	a->dip = get32(ip + 16);
	a->sport = get16(udp);
	a->dport = get16(udp + 2);
	*p = udp + UDP_HLEN;
	*plen = ulen - UDP_HLEN;
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
