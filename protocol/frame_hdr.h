/* SPDX-License-Identifier: MIT */
/*
 * protocol/frame_hdr.h — the Ethernet/IPv4/UDP headers of every frame the project sends, written
 * by one function: header-only and usable from BPF C (fixed-size types, no libc or OS headers, no
 * loops but protocol/csum.h's, bounded by their length), so that proto_frame_udp()
 * (protocol/frame.h: the NIC dispatcher, splitnic-host, the XDP loader's test frames) and the
 * XDP program (nicfw/xdp/xdp_infer.bpf.c) put the same bytes on the wire.
 *
 * Frames have no VLAN tag and no IP options: the UDP payload starts at frame + PROTO_FRAME_HDRS.
 * Addresses travel in struct proto_addr (IPv4 addresses and ports in host order; s* is the
 * sender, d* the destination).
 */
#ifndef PROTO_FRAME_HDR_H
#define PROTO_FRAME_HDR_H

#include <stdbool.h>
#include <stdint.h>

#include "protocol/csum.h"
#include "protocol/proto_hdr.h"

#define PROTO_ETH_HLEN	  14u
#define PROTO_IP_HLEN	  20u
#define PROTO_UDP_HLEN	  8u
#define PROTO_FRAME_HDRS  (PROTO_ETH_HLEN + PROTO_IP_HLEN + PROTO_UDP_HLEN)
#define PROTO_ETYPE_IPV4  0x0800u
#define PROTO_IPPROTO_UDP 17u

struct proto_addr {
	uint8_t smac[6], dmac[6];
	uint32_t sip, dip;
	uint16_t sport, dport;
};

/*
 * Write the PROTO_FRAME_HDRS bytes of Ethernet/IPv4/UDP headers at f (DF set, identification 0,
 * TTL 64, IP checksum filled in) for a UDP payload of plen bytes whose partial sum is psum
 * (proto_csum_add(0, payload, plen)). The payload itself is not read: it may sit at
 * f + PROTO_FRAME_HDRS already or be stored there later (the XDP program's, from its scratch
 * buffer). The UDP checksum: the full checksum, or with udp_offload only the pseudo-header sum
 * (not complemented; psum unused), which is what a port that offloads UDP checksums (DPDK's
 * RTE_MBUF_F_TX_UDP_CKSUM) expects in the field. plen at most 65507 (the IPv4 limit). Returns
 * the frame length, PROTO_FRAME_HDRS + plen.
 */
PROTO_INLINE uint32_t proto_frame_udp_hdrs(uint8_t *f, const struct proto_addr *a, uint32_t plen,
					   uint32_t psum, bool udp_offload)
{
	uint8_t *ip = f + PROTO_ETH_HLEN, *udp = ip + PROTO_IP_HLEN;
	const uint32_t ulen = PROTO_UDP_HLEN + plen;
	uint32_t sum;
	uint16_t c;

	__builtin_memcpy(f, a->dmac, 6);
	__builtin_memcpy(f + 6, a->smac, 6);
	proto_put16(f + 12, PROTO_ETYPE_IPV4);
	ip[0] = 0x45;
	ip[1] = 0;
	proto_put16(ip + 2, (uint16_t)(PROTO_IP_HLEN + ulen));
	proto_put16(ip + 4, 0);
	proto_put16(ip + 6, 0x4000); /* DF */
	ip[8] = 64;
	ip[9] = PROTO_IPPROTO_UDP;
	proto_put16(ip + 10, 0);
	proto_put32(ip + 12, a->sip);
	proto_put32(ip + 16, a->dip);
	proto_put16(ip + 10, (uint16_t)~proto_csum_fold(proto_csum_add(0, ip, PROTO_IP_HLEN)));
	proto_put16(udp, a->sport);
	proto_put16(udp + 2, a->dport);
	proto_put16(udp + 4, (uint16_t)ulen);
	proto_put16(udp + 6, 0);
	sum = proto_csum_pseudo(ip, PROTO_IPPROTO_UDP, ulen);
	if (udp_offload) {
		proto_put16(udp + 6, proto_csum_fold(sum));
	} else {
		/* the header is 8 bytes: the payload's words line up as if summed after it */
		c = (uint16_t)~proto_csum_fold(proto_csum_add(sum, udp, PROTO_UDP_HLEN) + psum);
		proto_put16(udp + 6, c ? c : 0xffff); /* 0 would mean "no checksum" */
	}
	return PROTO_FRAME_HDRS + plen;
}

#endif /* PROTO_FRAME_HDR_H */
