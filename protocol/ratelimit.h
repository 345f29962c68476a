/* SPDX-License-Identifier: MIT */
/*
 * protocol/ratelimit.h — per-source rate limit of the ERRORs a server sends (header-only, usable
 * from BPF C: no loops, no libc, no division on the packet path).
 *
 * A fixed table of PROTO_RL_SLOTS buckets indexed by a hash of the source IPv4 address (sources
 * that share a slot share its budget; nothing is allocated, nothing evicted). Each bucket is one
 * 64-bit word, the theoretical arrival time of GCRA (the generic cell rate algorithm, a token
 * bucket in one word): a source may send `burst` ERRORs at once and then one every `interval_ns`
 * (1e9 / rate); an ERROR that does not fit is not sent and is counted by the caller.
 */
#ifndef PROTO_RATELIMIT_H
#define PROTO_RATELIMIT_H

#include <stdint.h>

#include "protocol/proto_hdr.h"

#define PROTO_RL_SLOTS 256u  /* a power of two */
#define PROTO_RL_RATE  1000u /* default ERRORs per second per source */
#define PROTO_RL_BURST 100u  /* default burst per source */

/* The bucket of an IPv4 source address (host order): a multiplicative hash. */
PROTO_INLINE uint32_t proto_rl_slot(uint32_t ip)
{
	return ((ip * 2654435761u) >> 24) & (PROTO_RL_SLOTS - 1);
}

/*
 * One more event at `now` (ns, monotonic) in the bucket *tat? 1 and the bucket charged, or 0 (over
 * the limit: nothing changed). interval_ns = 1e9 / rate; burst >= 1.
 */
PROTO_INLINE int proto_rl_take(uint64_t *tat, uint64_t now, uint64_t interval_ns, uint64_t burst)
{
	uint64_t t = *tat > now ? *tat : now;

	if (t - now > interval_ns * (burst - 1))
		return 0;
	*tat = t + interval_ns;
	return 1;
}

#endif /* PROTO_RATELIMIT_H */
