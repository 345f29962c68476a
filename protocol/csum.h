/* SPDX-License-Identifier: MIT */
/*
 * protocol/csum.h — the Internet checksum (RFC 1071), header-only and usable from BPF C (no
 * libc; the one loop is bounded by its length argument), so that every framer of the project
 * (protocol/frame_hdr.h for the host, the NIC dispatcher and the XDP program; host/tpl.c's
 * templates; protocol/frame.c's receive checks) sums the same way.
 *
 * Sums are partial: 16-bit big-endian words added into 32 bits, folded at the end. A header's
 * checksum field holds ~proto_csum_fold(sum of the header with the field 0); a received header
 * is intact when proto_csum_fold(sum of it as received) is 0xffff.
 */
#ifndef PROTO_CSUM_H
#define PROTO_CSUM_H

#include <stdint.h>

#include "protocol/proto_hdr.h"

/* Add the len bytes at p as big-endian 16-bit words (an odd last byte padded with zero) to
 * sum; len up to 2^17 bytes. */
PROTO_INLINE uint32_t proto_csum_add(uint32_t sum, const uint8_t *p, uint32_t len)
{
	for (uint32_t i = 0; i + 1 < len; i += 2)
		sum += proto_get16(p + i);
	if (len & 1)
		sum += (uint32_t)p[len - 1] << 8;
	return sum;
}

/* Fold a partial sum to 16 bits (not complemented); two folds reach 16 bits from any 32. */
PROTO_INLINE uint16_t proto_csum_fold(uint32_t sum)
{
	sum = (sum & 0xffff) + (sum >> 16);
	sum = (sum & 0xffff) + (sum >> 16);
	return (uint16_t)sum;
}

/* The pseudo-header's partial sum for the IPv4 header at ip (its source and destination
 * addresses), transport protocol proto and transport length len. */
PROTO_INLINE uint32_t proto_csum_pseudo(const uint8_t *ip, uint32_t proto, uint32_t len)
{
	return proto_csum_add(0, ip + 12, 8) + proto + len;
}

#endif /* PROTO_CSUM_H */
