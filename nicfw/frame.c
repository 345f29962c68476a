// SPDX-License-Identifier: MIT
/* Ethernet/IPv4/UDP header building (the contract is in nicfw/frame.h). */
#include <string.h>

#include "nicfw/frame.h"

static uint32_t csum_add(uint32_t sum, const uint8_t *p, uint32_t len)
{
	for (uint32_t i = 0; i + 1 < len; i += 2)
		sum += nicfw_get16(p + i);
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

uint32_t nicfw_frame_udp(uint8_t *f, const struct nicfw_frame_addr *a, uint32_t plen)
{
	uint8_t *ip = f + NICFW_ETH_HLEN, *udp = ip + NICFW_IP_HLEN;
	uint32_t sum;
	uint16_t c;

	memcpy(f, a->dmac, 6);
	memcpy(f + 6, a->smac, 6);
	nicfw_put16(f + 12, NICFW_ETYPE_IPV4);
	ip[0] = 0x45;
	ip[1] = 0;
	nicfw_put16(ip + 2, (uint16_t)(NICFW_IP_HLEN + NICFW_UDP_HLEN + plen));
	nicfw_put16(ip + 4, 0);
	nicfw_put16(ip + 6, 0x4000); /* DF */
	ip[8] = 64;
	ip[9] = NICFW_IPPROTO_UDP;
	nicfw_put16(ip + 10, 0);
	nicfw_put32(ip + 12, a->sip);
	nicfw_put32(ip + 16, a->dip);
	nicfw_put16(ip + 10, csum_fold(csum_add(0, ip, NICFW_IP_HLEN)));
	nicfw_put16(udp, a->sport);
	nicfw_put16(udp + 2, a->dport);
	nicfw_put16(udp + 4, (uint16_t)(NICFW_UDP_HLEN + plen));
	nicfw_put16(udp + 6, 0);
	sum = csum_add(0, ip + 12, 8) + NICFW_IPPROTO_UDP + NICFW_UDP_HLEN + plen;
	c = csum_fold(csum_add(sum, udp, NICFW_UDP_HLEN + plen));
	nicfw_put16(udp + 6, c ? c : 0xffff); /* 0 would mean "no checksum" */
	return NICFW_FRAME_HDRS + plen;
}
