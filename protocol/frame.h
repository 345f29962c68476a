/* SPDX-License-Identifier: MIT */
/*
 * protocol/frame.h — Ethernet/ARP/IPv4/UDP framing, done once for every user (the NIC
 * firmware's dispatcher, splitnic-host, the XDP loader's test frames): no OS or DPDK headers, so
 * that it builds for any platform. The headers of a sent frame are protocol/frame_hdr.h's, the
 * one writer the XDP program shares.
 *
 * Checksums are protocol/csum.h's. Frames built here have no VLAN tag and no IP options: the
 * UDP payload starts at frame + PROTO_FRAME_HDRS. Addresses travel in one struct, struct
 * proto_addr (protocol/frame_hdr.h).
 *
 * The neighbour table maps IPv4 addresses to MACs learnt from received frames: a fixed array
 * of PROTO_NEIGH_SLOTS entries indexed by a hash of the address (a newer entry replaces an
 * older one in its slot), so that learning and lookup are O(1) and allocate nothing.
 */
#ifndef PROTO_FRAME_H
#define PROTO_FRAME_H

#include <stdbool.h>
#include <stdint.h>

#include "protocol/csum.h"
#include "protocol/frame_hdr.h"
#include "protocol/proto_hdr.h"

#define PROTO_ARP_LEN	  28u
#define PROTO_FRAME_MAX	  1514u /* largest frame built (Ethernet without FCS) */
#define PROTO_ETYPE_ARP	  0x0806u
#define PROTO_NEIGH_SLOTS 256u /* a power of two */

/*
 * Frame the plen-byte UDP payload already at frame + PROTO_FRAME_HDRS: its headers as
 * proto_frame_udp_hdrs() writes them (DF set, TTL 64, IP checksum filled in), the UDP checksum
 * summed over the payload where it lies. The UDP checksum: the full checksum, or with udp_offload
 * only the pseudo-header sum (not complemented), which is what a port that offloads UDP checksums
 * (DPDK's RTE_MBUF_F_TX_UDP_CKSUM) expects in the field. Returns the frame length.
 */
uint32_t proto_frame_udp(uint8_t *frame, const struct proto_addr *a, uint32_t plen,
			 bool udp_offload);

/* What proto_frame_parse found. */
enum proto_frame_kind {
	PROTO_FRAME_UDP = 0,  /* IPv4/UDP, consistent: payload and addresses filled */
	PROTO_FRAME_NOT_IPV4, /* not IPv4 (ARP, IPv6, ...) */
	PROTO_FRAME_BAD,      /* truncated or inconsistent Ethernet/IPv4/UDP headers */
	PROTO_FRAME_NOT_UDP,  /* IPv4, another protocol (MACs and IPs filled) */
	PROTO_FRAME_IP_FRAG,  /* an IPv4 fragment (MACs, IPs and, if present, ports filled) */
};

/*
 * Parse an Ethernet frame of len bytes as IPv4/UDP, checking, in this order: Ethernet length
 * and type, IPv4 version, header length and that the UDP header fits (BAD), the protocol
 * (NOT_UDP), fragmentation (IP_FRAG), then the IPv4 total length and the UDP length against the
 * frame (BAD). On PROTO_FRAME_UDP: a (sender in s*), the payload (p, plen) and *ihl, the IPv4
 * header length (20 without options).
 */
enum proto_frame_kind proto_frame_parse(const uint8_t *frame, uint32_t len, struct proto_addr *a,
					const uint8_t **p, uint32_t *plen, uint32_t *ihl);

/*
 * Do the checksums of a frame that proto_frame_parse found PROTO_FRAME_UDP (ihl: its IPv4
 * header length) verify: the IPv4 header's, and the UDP checksum unless it is 0 (none sent)?
 */
bool proto_frame_csum_ok(const uint8_t *frame, uint32_t ihl);

/*
 * An ARP request for target_ip (host order) from (mac, ip)? Then turn the frame into the
 * reply in place and return true. *sender_ip/sender_mac: the requester (to learn), set for any
 * well-formed Ethernet/IPv4 ARP packet (else *sender_ip = 0).
 */
bool proto_arp_reply(uint8_t *frame, uint32_t len, const uint8_t mac[6], uint32_t ip,
		     uint32_t *sender_ip, const uint8_t **sender_mac);

struct proto_neigh {
	uint32_t ip;
	uint8_t mac[6];
};

struct proto_neigh_table {
	struct proto_neigh slot[PROTO_NEIGH_SLOTS];
};

/* Learn ip -> mac (ignored for 0.0.0.0 and multicast/broadcast MACs). */
void proto_neigh_learn(struct proto_neigh_table *t, uint32_t ip, const uint8_t mac[6]);
/* mac of ip if known (true), else the broadcast address (false). */
bool proto_neigh_lookup(const struct proto_neigh_table *t, uint32_t ip, uint8_t mac[6]);

#endif /* PROTO_FRAME_H */
