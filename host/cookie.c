// SPDX-License-Identifier: MIT
/* Per-request cookies: SipHash-2-4 of a counter under a key from getrandom (host/host.h). */
#include <errno.h>
#include <sys/random.h>

#include "host/host.h"

static inline uint64_t rotl(uint64_t x, unsigned b)
{
	return x << b | x >> (64 - b);
}

#define SIPROUND(v0, v1, v2, v3)                                                                   \
	do {                                                                                       \
		v0 += v1;                                                                          \
		v1 = rotl(v1, 13);                                                                 \
		v1 ^= v0;                                                                          \
		v0 = rotl(v0, 32);                                                                 \
		v2 += v3;                                                                          \
		v3 = rotl(v3, 16);                                                                 \
		v3 ^= v2;                                                                          \
		v0 += v3;                                                                          \
		v3 = rotl(v3, 21);                                                                 \
		v3 ^= v0;                                                                          \
		v2 += v1;                                                                          \
		v1 = rotl(v1, 17);                                                                 \
		v1 ^= v2;                                                                          \
		v2 = rotl(v2, 32);                                                                 \
	} while (0)

uint64_t host_siphash64(uint64_t k0, uint64_t k1, uint64_t m)
{
	uint64_t v0 = k0 ^ 0x736f6d6570736575ull, v1 = k1 ^ 0x646f72616e646f6dull;
	uint64_t v2 = k0 ^ 0x6c7967656e657261ull, v3 = k1 ^ 0x7465646279746573ull;
	const uint64_t last = 8ull << 56; /* the length byte of an 8-byte message */

	v3 ^= m;
	SIPROUND(v0, v1, v2, v3);
	SIPROUND(v0, v1, v2, v3);
	v0 ^= m;
	v3 ^= last;
	SIPROUND(v0, v1, v2, v3);
	SIPROUND(v0, v1, v2, v3);
	v0 ^= last;
	v2 ^= 0xff;
	for (int i = 0; i < 4; i++)
		SIPROUND(v0, v1, v2, v3);
	return v0 ^ v1 ^ v2 ^ v3;
}

int host_cookie_init(struct host_cookie *c)
{
	uint64_t k[2];
	size_t got = 0;

	while (got < sizeof(k)) {
		ssize_t n = getrandom((uint8_t *)k + got, sizeof(k) - got, 0);

		if (n < 0) {
			if (errno == EINTR)
				continue;
			return -errno;
		}
		got += (size_t)n;
	}
	c->k0 = k[0];
	c->k1 = k[1];
	c->ctr = 0;
	return 0;
}

uint64_t host_cookie_next(struct host_cookie *c)
{
	uint64_t v;

	do
		v = host_siphash64(c->k0, c->k1, c->ctr++);
	while (!v);
	return v;
}
