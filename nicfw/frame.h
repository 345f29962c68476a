/* SPDX-License-Identifier: MIT */
/*
 * nicfw/frame.h — Ethernet/IPv4/UDP frames by hand (no OS or DPDK headers, so that it builds for
 * any platform): big-endian field access and the builder of a UDP datagram's headers.
 *
 * Frames built here have no VLAN tag and no IP options: the UDP payload starts at
 * frame + NICFW_FRAME_HDRS.
 */
#ifndef NICFW_FRAME_H
#define NICFW_FRAME_H

#include <stdint.h>

#define NICFW_ETH_HLEN	  14u
#define NICFW_IP_HLEN	  20u
#define NICFW_UDP_HLEN	  8u
#define NICFW_FRAME_HDRS  (NICFW_ETH_HLEN + NICFW_IP_HLEN + NICFW_UDP_HLEN)
#define NICFW_ETYPE_IPV4  0x0800u
#define NICFW_IPPROTO_UDP 17u

/* A datagram's addresses; IPv4 addresses and ports in host order. */
struct nicfw_frame_addr {
	uint8_t smac[6], dmac[6];
	uint32_t sip, dip;
	uint16_t sport, dport;
};

static inline uint16_t nicfw_get16(const uint8_t *p)
{
	return (uint16_t)(p[0] << 8 | p[1]);
}

static inline uint32_t nicfw_get32(const uint8_t *p)
{
	return (uint32_t)p[0] << 24 | (uint32_t)p[1] << 16 | (uint32_t)p[2] << 8 | p[3];
}

static inline void nicfw_put16(uint8_t *p, uint16_t v)
{
	p[0] = (uint8_t)(v >> 8);
	p[1] = (uint8_t)v;
}

static inline void nicfw_put32(uint8_t *p, uint32_t v)
{
	nicfw_put16(p, (uint16_t)(v >> 16));
	nicfw_put16(p + 2, (uint16_t)v);
}

/*
 * Write the Ethernet/IPv4/UDP headers (DF set, TTL 64, IP and UDP checksums filled in) for the
 * plen-byte UDP payload already at frame + NICFW_FRAME_HDRS. Returns the frame length.
 */
uint32_t nicfw_frame_udp(uint8_t *frame, const struct nicfw_frame_addr *a, uint32_t plen);

#endif /* NICFW_FRAME_H */
