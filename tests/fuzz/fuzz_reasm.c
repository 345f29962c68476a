// SPDX-License-Identifier: MIT
/*
 * libFuzzer target: the reassembler, driven by a small program in the input.
 *
 *   byte 0     slots (1..4);  byte 1  max_msg = 256 * (1 + b % 16);  bytes 2..5  message sizes
 *   then 8-byte ops, op = b[0] % 4:
 *     0  a fragment of reference message k = b[1] % 4 at offset/length from b[2..5]; b[6] bit 0
 *        corrupts one byte, bit 1 changes the model id (an inconsistent header)
 *     1  advance the clock by b[1] ms (the timeout is 100 ms)
 *     2  a raw datagram: b[1] bytes taken from the rest of the input, parsed, then pushed
 *     3  expire now
 * Every datagram goes through the real builder and parser. A completed reference message must
 * hold exactly its bytes unless a corrupt or inconsistent fragment of it was sent since its last
 * completion from the table; an untouched message is never rejected as overlapping or
 * inconsistent.
 */
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "protocol/reasm.h"

#define CHECK(c)                                                                                   \
	do {                                                                                       \
		if (!(c))                                                                          \
			__builtin_trap();                                                          \
	} while (0)

#define NREF 4

static uint8_t ref_byte(uint32_t k, uint32_t i)
{
	return (uint8_t)(i * 131u + k * 7u + (i >> 8));
}

static uint8_t dgram[PROTO_MAX_PAYLOAD];
static uint8_t body[8192];

static void check_msg(const struct proto_reasm_msg *out, uint32_t k, uint32_t total)
{
	CHECK(out->len == total);
	for (uint32_t i = 0; i < total; i++)
		CHECK(out->data[i] == ref_byte(k, i));
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	struct proto_reasm_config cfg;
	struct proto_reasm_stats st;
	struct proto_reasm *ra;
	uint32_t total[NREF];
	bool tainted[NREF] = {false};
	uint64_t now = 1000;
	size_t pos = 6;

	if (size < 6)
		return 0;
	cfg.slots = 1 + data[0] % 4;
	cfg.max_msg = 256u * (1 + data[1] % 16);
	cfg.timeout_ns = 100 * 1000000ull;
	for (int k = 0; k < NREF; k++)
		total[k] = 1 + (uint32_t)data[2 + k] * 23u % 5000u;
	ra = proto_reasm_create(&cfg);
	CHECK(ra);

	while (pos + 8 <= size) {
		const uint8_t *op = data + pos;
		struct proto_reasm_msg out;
		struct proto_msg m, p;
		enum proto_ra_verdict rv;
		uint32_t k, off, len, t;
		int n;

		pos += 8;
		switch (op[0] % 4) {
		case 0:
			k = op[1] % NREF;
			t = total[k];
			off = ((uint32_t)op[2] | (uint32_t)op[3] << 8) * 8u % ((t + 7) / 8 * 8);
			len = 8 + ((uint32_t)op[4] | (uint32_t)op[5] << 8) % 1200u;
			if (off + len >= t)
				len = t - off;
			else
				len &= ~7u;
			for (uint32_t i = 0; i < len; i++)
				body[i] = ref_byte(k, off + i);
			if (op[6] & 1)
				body[op[7] % len] ^= 0x5a;
			proto_msg_init(&m, PROTO_REQUEST, (op[6] & 2) ? 999 : 7, 100 + k);
			proto_msg_set_tensor(&m, PROTO_FMT_U8, t, 1, 1, 0, 0);
			m.total_len = t;
			m.frag_off = off;
			m.frag_len = (uint16_t)len;
			CHECK(proto_hdr_write(&m, dgram, dgram + sizeof(dgram)) == m.hdr_len);
			memcpy(dgram + m.hdr_len, body, len);
			CHECK(proto_parse(dgram, m.hdr_len + len, &p) == PROTO_OK);
			if (op[6] & 3)
				tainted[k] = true;
			rv = proto_reasm_push(ra, 1, &p, now, &out);
			CHECK(rv < PROTO_RA__COUNT);
			if (!tainted[k])
				CHECK(rv != PROTO_RA_OVERLAP && rv != PROTO_RA_INCONSISTENT);
			CHECK((rv == PROTO_RA_TOO_LARGE) == (t > cfg.max_msg));
			if (rv == PROTO_RA_COMPLETE && out.slot < 0) {
				if (!(op[6] & 1))
					check_msg(&out, k, t);
			} else if (rv == PROTO_RA_COMPLETE) {
				if (!tainted[k])
					check_msg(&out, k, t);
				tainted[k] = false;
				proto_reasm_release(ra, &out);
			}
			break;
		case 1:
			now += op[1] * 1000000ull;
			break;
		case 2:
			len = op[1];
			if (pos + len > size)
				len = (uint32_t)(size - pos);
			memcpy(dgram, data + pos, len);
			pos += len;
			if (proto_parse(dgram, len, &p) != PROTO_OK)
				break;
			/* Raw datagrams come from another sender: they never touch the references.
			 */
			rv = proto_reasm_push(ra, 2, &p, now, &out);
			if (rv == PROTO_RA_COMPLETE) {
				CHECK(out.len == p.total_len);
				n = out.len ? out.data[0] + out.data[out.len - 1] : 0;
				CHECK(n >= 0);
				proto_reasm_release(ra, &out);
			}
			break;
		case 3:
			proto_reasm_expire(ra, now);
			break;
		}
		proto_reasm_stats(ra, &st);
		CHECK(st.in_use <= cfg.slots);
	}
	proto_reasm_destroy(ra);
	return 0;
}
