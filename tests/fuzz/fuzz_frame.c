// SPDX-License-Identifier: MIT
/*
 * libFuzzer target: the Ethernet/IPv4/UDP frame parser and the ARP responder
 * (protocol/frame.h). Any input is one frame. Checks that an accepted frame's payload lies
 * within it, that the verdict does not depend on bytes past the frame, and that rebuilding the
 * headers from the parsed addresses around the same payload parses back to the same addresses.
 */
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "protocol/frame.h"

#define CHECK(c)                                                                                   \
	do {                                                                                       \
		if (!(c))                                                                          \
			__builtin_trap();                                                          \
	} while (0)

static uint8_t padded[65536 + 64];
static uint8_t again[PROTO_FRAME_HDRS + 65536];

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	static const uint8_t mac[6] = {2, 0, 0, 0, 0, 1};
	struct proto_addr a, b;
	const uint8_t *p, *q, *smac;
	uint32_t plen, qlen, ihl, sip;
	enum proto_frame_kind k;

	if (size > 65536)
		return 0;
	memcpy(padded, data, size);
	memset(padded + size, 0xa5, 64);
	k = proto_frame_parse(padded, (uint32_t)size, &a, &p, &plen, &ihl);
	memset(padded + size, 0x5a, 64);
	CHECK(proto_frame_parse(padded, (uint32_t)size, &b, &q, &qlen, &ihl) == k);
	if (k == PROTO_FRAME_UDP) {
		CHECK(p >= padded && p + plen <= padded + size);
		memcpy(again + PROTO_FRAME_HDRS, p, plen);
		proto_frame_udp(again, &a, plen, false);
		CHECK(proto_frame_parse(again, PROTO_FRAME_HDRS + plen, &b, &q, &qlen, &ihl) ==
		      PROTO_FRAME_UDP);
		CHECK(qlen == plen && !memcmp(q, p, plen) && b.sip == a.sip && b.dip == a.dip &&
		      b.sport == a.sport && b.dport == a.dport && !memcmp(b.smac, a.smac, 6));
	}
	proto_arp_reply(padded, (uint32_t)size, mac, 0x0a000001, &sip, &smac);
	return 0;
}
