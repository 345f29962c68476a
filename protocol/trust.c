// SPDX-License-Identifier: MIT
/* The trust policy's configuration (contracts and the decision in protocol/trust.h). */
#include <errno.h>

#include "protocol/trust.h"

_Static_assert((PROTO_TRUST_SLOTS & (PROTO_TRUST_SLOTS - 1)) == 0,
	       "PROTO_TRUST_SLOTS must be a power of two");

/* A decimal number in [0, max] at *s, advancing *s past it; -1 if there is none. */
static long dec_field(const char **s, long max)
{
	long v = 0;
	int n = 0;

	while (**s >= '0' && **s <= '9' && n < 3) {
		v = v * 10 + (**s - '0');
		(*s)++;
		n++;
	}
	return n && v <= max && !(**s >= '0' && **s <= '9') ? v : -1;
}

int proto_cidr_parse(const char *s, struct proto_cidr *c)
{
	uint32_t ip = 0;
	long v, bits = 32;

	for (int i = 0; i < 4; i++) {
		v = dec_field(&s, 255);
		if (v < 0 || (i < 3 && *s++ != '.'))
			return -EINVAL;
		ip = ip << 8 | (uint32_t)v;
	}
	if (*s == '/') {
		s++;
		bits = dec_field(&s, 32);
		if (bits < 0)
			return -EINVAL;
	}
	if (*s)
		return -EINVAL;
	c->mask = bits ? ~0u << (32 - bits) : 0;
	c->net = ip & c->mask;
	return 0;
}

int proto_trust_allow(struct proto_trust_cfg *c, const char *cidr)
{
	if (c->n_allow >= PROTO_TRUST_MAX_ALLOW)
		return -ENOSPC;
	if (proto_cidr_parse(cidr, &c->allow[c->n_allow]))
		return -EINVAL;
	c->n_allow++;
	return 0;
}

void proto_trust_set_rate(struct proto_trust_cfg *c, uint32_t rate, uint32_t burst)
{
	c->err_interval_ns = rate ? 1000000000ull / rate : 0;
	c->err_burst = burst ? burst : 1;
}
