/* SPDX-License-Identifier: MIT */
/*
 * protocol/trust.h — the one trust policy: whom a server answers, how large its reply may be, how
 * many ERRORs one source gets. Header-only and usable from BPF C (bounded loops, no libc, no
 * division); the configuration helpers below `#ifndef __BPF__` are in protocol/trust.c.
 *
 * Every server asks proto_trust_decide() before each reply and counts its verdict: splitnic-nic's
 * dispatcher (nicfw/dispatch.c), splitnic-host (host/dpdk_rx.c, dpdk_tx.c, dpdk_health.c),
 * splitnic serve (serve/serve.c) and the XDP program (nicfw/xdp/xdp_infer.bpf.c). None decides
 * otherwise. docs/wire-protocol.md says the same for operators.
 *
 * Configuration (struct proto_trust_cfg):
 *   allow[n_allow]   IPv4 prefixes of the front-ends the operator trusts (at most
 *                    PROTO_TRUST_MAX_ALLOW). n_allow 0: no list, every source is answered under
 *                    the size rule; else the sources outside it get nothing at all.
 *   err_interval_ns  ERRORs to one source: one per interval (1e9 / rate; proto_trust_set_rate());
 *                    0: no limit.
 *   err_burst        ... and this many at once; 0 counts as 1.
 *
 * The question (struct proto_trust_ask): the source, whether it is trusted by where it is (the
 * NIC's host port) or can never be listed (an IPv6 address), the reply (RESPONSE, ERROR, HEALTH
 * report, or 0 for the admission of a datagram before any reply is known), the UDP payload bytes
 * of what caused the reply (a whole message: header and data section) and of the reply (a
 * RESPONSE: all its datagrams; an ERROR or a HEALTH report: the least it can be cut to, its
 * header, or header and identity).
 *
 * The decision, in this order:
 *   1. a trusted source: SEND, no size limit, no rate;
 *   2. a list is given and the source is not on it: NOT_ALLOWED (nothing is sent, not even an
 *      ERROR; the datagram is dropped and counted);
 *   3. admission (reply 0): SEND (the datagram may be taken; each reply is decided later);
 *   4. the cap: a listed source has none, any other the bytes that caused the reply; a HEALTH
 *      report never more than its probe, listed or not;
 *   5. the reply's least size above the cap: TOO_LARGE (a RESPONSE is answered ERROR too_large
 *      instead, detail its bytes; an ERROR or a report that cannot fit is not sent);
 *   6. an ERROR: one more in its source's bucket (below); over the rate: RATE_LIMITED (not sent);
 *   7. SEND, at most *cap bytes: an ERROR's reason is cut to fit (proto_trust_cut(),
 *      proto_build_error_cut()), a HEALTH report lists as many models as fit.
 *
 * Rate limit: a fixed table of PROTO_TRUST_SLOTS buckets that the caller keeps (an array, a BPF
 * map), indexed by proto_trust_slot() of the source (sources that share a slot share its budget;
 * nothing is allocated, nothing evicted). A bucket is one 64-bit word, the theoretical arrival
 * time of GCRA (the generic cell rate algorithm, a token bucket in one word), in the caller's
 * monotonic nanoseconds. Only ERRORs are counted, and only those that would be sent: a refused
 * or oversized ERROR costs its source nothing.
 */
#ifndef PROTO_TRUST_H
#define PROTO_TRUST_H

#include <stdint.h>

#include "protocol/proto_hdr.h"

#define PROTO_TRUST_MAX_ALLOW 16u
#define PROTO_TRUST_SLOTS     256u  /* rate-limit buckets, a power of two */
#define PROTO_TRUST_RATE      1000u /* ERRORs per second per source, the servers' default */
#define PROTO_TRUST_BURST     100u  /* ERRORs at once per source, the servers' default */
#define PROTO_TRUST_NO_CAP    0xffffffffu

/* An IPv4 prefix (host order): an address matches when (ip & mask) == net. */
struct proto_cidr {
	uint32_t net, mask;
};

struct proto_trust_cfg {
	uint32_t n_allow;
	uint32_t err_burst;
	uint64_t err_interval_ns;
	struct proto_cidr allow[PROTO_TRUST_MAX_ALLOW];
};

#define PROTO_TRUST_F_TRUSTED 0x01u /* trusted by where it is (splitnic-nic's host port) */
#define PROTO_TRUST_F_UNNAMED 0x02u /* an address no list can name (IPv6): never listed */

struct proto_trust_ask {
	uint32_t src;	    /* IPv4 source, host order (an IPv6 one folded to 32 bits) */
	uint8_t flags;	    /* PROTO_TRUST_F_* */
	uint8_t reply;	    /* PROTO_RESPONSE, PROTO_ERROR, PROTO_HEALTH; 0: admission */
	uint32_t in_bytes;  /* UDP payload bytes of what caused the reply */
	uint32_t out_bytes; /* UDP payload bytes of the reply, at the least */
};

enum proto_trust_verdict {
	PROTO_TRUST_SEND = 0,
	PROTO_TRUST_NOT_ALLOWED,  /* outside the allow-list: nothing, the datagram dropped */
	PROTO_TRUST_TOO_LARGE,	  /* larger than what caused it (RESPONSE: ERROR too_large) */
	PROTO_TRUST_RATE_LIMITED, /* an ERROR over its source's rate: not sent */
	PROTO_TRUST__COUNT
};

/* The bucket of an IPv4 source address (host order): a multiplicative hash. */
PROTO_INLINE uint32_t proto_trust_slot(uint32_t ip)
{
	return ((ip * 2654435761u) >> 24) & (PROTO_TRUST_SLOTS - 1);
}

/* Is ip on the allow-list (false when there is none)? c is volatile for the BPF program, whose
 * configuration is .rodata set at load (the compiler must not take its initial zeros). */
PROTO_INLINE int proto_trust_listed(const volatile struct proto_trust_cfg *c, uint32_t ip)
{
	for (uint32_t i = 0; i < PROTO_TRUST_MAX_ALLOW; i++) {
		if (i >= c->n_allow)
			break;
		if ((ip & c->allow[i].mask) == c->allow[i].net)
			return 1;
	}
	return 0;
}

/* Bytes of text that fit after a header of hdr_len bytes in a reply of at most cap bytes. */
PROTO_INLINE uint32_t proto_trust_cut(uint32_t cap, uint32_t hdr_len, uint32_t text_len)
{
	if (cap <= hdr_len)
		return 0;
	return text_len < cap - hdr_len ? text_len : cap - hdr_len;
}

/*
 * The decision (see the top). bucket: the source's rate-limit word (an ERROR only; NULL: not
 * limited), now: the caller's monotonic clock in ns. *cap: the most bytes the reply may take
 * (PROTO_TRUST_NO_CAP: any), set whatever the verdict.
 */
PROTO_INLINE enum proto_trust_verdict proto_trust_decide(const volatile struct proto_trust_cfg *c,
							 const struct proto_trust_ask *q,
							 uint64_t *bucket, uint64_t now,
							 uint32_t *cap)
{
	const int listed = !(q->flags & PROTO_TRUST_F_UNNAMED) && proto_trust_listed(c, q->src);
	const uint64_t interval = c->err_interval_ns;
	const uint32_t burst = c->err_burst;
	uint64_t t;

	*cap = PROTO_TRUST_NO_CAP;
	if (q->flags & PROTO_TRUST_F_TRUSTED)
		return PROTO_TRUST_SEND;
	if (c->n_allow && !listed)
		return PROTO_TRUST_NOT_ALLOWED;
	if (!q->reply)
		return PROTO_TRUST_SEND;
	if (!listed || q->reply == PROTO_HEALTH)
		*cap = q->in_bytes;
	if (q->out_bytes > *cap)
		return PROTO_TRUST_TOO_LARGE;
	if (q->reply != PROTO_ERROR || !bucket || !interval)
		return PROTO_TRUST_SEND;
	t = *bucket > now ? *bucket : now;
	if (t - now > interval * (burst > 1 ? burst - 1 : 0))
		return PROTO_TRUST_RATE_LIMITED;
	*bucket = t + interval;
	return PROTO_TRUST_SEND;
}

#ifndef __BPF__

/* Parse "A.B.C.D" or "A.B.C.D/N" (N 0..32, decimal; host bits dropped) into c: 0 or -EINVAL. */
int proto_cidr_parse(const char *s, struct proto_cidr *c);
/* Add one prefix (as proto_cidr_parse reads it) to c's list: 0, -EINVAL, or -ENOSPC (full). */
int proto_trust_allow(struct proto_trust_cfg *c, const char *cidr);
/* ERRORs per second per source (0: no limit) and at once (0 counts as 1). */
void proto_trust_set_rate(struct proto_trust_cfg *c, uint32_t rate, uint32_t burst);

#endif /* __BPF__ */

#endif /* PROTO_TRUST_H */
