// SPDX-License-Identifier: MIT
/* Source checks: the front-ends' allow-list, ERRORs rate-limited per source. */
#include <arpa/inet.h>
#include <errno.h>
#include <stdlib.h>
#include <string.h>

#include "host/host.h"

int host_cidr_parse(const char *s, struct host_cidr *c)
{
	char buf[32], *slash, *end;
	struct in_addr a;
	unsigned long bits = 32;

	if (strlen(s) >= sizeof(buf))
		return -EINVAL;
	strcpy(buf, s);
	slash = strchr(buf, '/');
	if (slash) {
		*slash = 0;
		bits = strtoul(slash + 1, &end, 10);
		if (end == slash + 1 || *end || bits > 32)
			return -EINVAL;
	}
	if (inet_pton(AF_INET, buf, &a) != 1)
		return -EINVAL;
	c->mask = bits ? ~0u << (32 - bits) : 0;
	c->net = ntohl(a.s_addr) & c->mask;
	return 0;
}

bool host_cidr_allowed(const struct host_cidr *c, uint32_t n, uint32_t ip)
{
	if (!n)
		return true;
	for (uint32_t i = 0; i < n; i++)
		if ((ip & c[i].mask) == c[i].net)
			return true;
	return false;
}

void host_rl_init(struct host_rl *rl, uint32_t rate, uint32_t burst)
{
	memset(rl, 0, sizeof(*rl));
	rl->rate = rate;
	rl->burst = burst ? burst : 1;
}

bool host_rl_take(struct host_rl *rl, uint32_t ip, uint64_t now_ns)
{
	const uint32_t h = ((ip * 0x9e3779b1u) >> 24) & (HOST_RL_SLOTS - 1);
	uint64_t *t = &rl->slot[h].t_ns, add;
	uint32_t *tok = &rl->slot[h].tokens;

	if (!rl->rate)
		return true;
	if (!*t || now_ns - *t > 1000000000ull * rl->burst / rl->rate) {
		*tok = rl->burst; /* idle long enough to refill: a full bucket */
		*t = now_ns;
	} else {
		add = (now_ns - *t) * rl->rate / 1000000000ull;
		if (add) {
			*tok = (uint32_t)(*tok + add > rl->burst ? rl->burst : *tok + add);
			*t += add * 1000000000ull / rl->rate;
		}
	}
	if (!*tok)
		return false;
	(*tok)--;
	return true;
}
