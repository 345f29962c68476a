// SPDX-License-Identifier: MIT
/* The front-ends' allow-list. */
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
