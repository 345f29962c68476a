// SPDX-License-Identifier: MIT
/* A served model's dynamic batching from its --model value (conf/batch.h). */
#include <errno.h>
#include <stdio.h>
#include <string.h>

#include "conf/batch.h"
#include "conf/opts.h"

static const char *const batch_keys[] = {",max-batch=", ",max-queue-delay-us="};

/* One key=value of the suffix at p: its value into b, *next past it. 0 or -EINVAL (message). */
static int batch_one(const char *spec, const char *p, uint32_t max_batch_hi, struct conf_batch *b,
		     const char **next, char *err, size_t errlen)
{
	char val[24];
	unsigned k;
	int64_t v, hi;
	size_t len;

	for (k = 0; k < 2; k++)
		if (!strncmp(p, batch_keys[k], strlen(batch_keys[k])))
			break;
	if (k == 2) {
		snprintf(err, errlen,
			 "--model %s: '%s': after the model only ,max-batch=N and "
			 ",max-queue-delay-us=US",
			 spec, p);
		return -EINVAL;
	}
	p += strlen(batch_keys[k]);
	*next = strchr(p, ',');
	len = *next ? (size_t)(*next - p) : strlen(p);
	hi = k ? CONF_BATCH_MAX_DELAY_US : max_batch_hi;
	snprintf(val, sizeof(val), "%.*s", (int)(len < sizeof(val) ? len : sizeof(val) - 1), p);
	if (len >= sizeof(val) || conf_int(NULL, NULL, val, k ? 0 : 1, hi, &v)) {
		snprintf(err, errlen, "--model %s: %.*s: an integer in %u..%ld, got '%.*s'", spec,
			 (int)strlen(batch_keys[k]) - 2, batch_keys[k] + 1, k ? 0 : 1, (long)hi,
			 (int)len, p);
		return -EINVAL;
	}
	if (k)
		b->max_delay_ns = (uint64_t)v * 1000;
	else
		b->max_batch = (uint32_t)v;
	return 0;
}

size_t conf_batch_at(const char *spec)
{
	size_t at = strlen(spec);

	for (unsigned k = 0; k < 2; k++) {
		const char *p = strstr(spec, batch_keys[k]);

		if (p && (size_t)(p - spec) < at)
			at = (size_t)(p - spec);
	}
	return at;
}

int conf_batch_suffix(char *spec, uint32_t max_batch_hi, struct conf_batch *b, char *err,
		      size_t errlen)
{
	struct conf_batch nb = *b;
	char *cut = spec + conf_batch_at(spec);
	const char *p, *next;

	for (p = cut; p && *p; p = next)
		if (batch_one(spec, p, max_batch_hi, &nb, &next, err, errlen))
			return -EINVAL;
	*cut = 0;
	*b = nb;
	return 0;
}

int conf_batch_spec(const char *max_batch, const char *max_delay_us, char *out, size_t outlen)
{
	size_t len = strlen(out);
	int n = snprintf(out + len, outlen - len, "%s%s%s%s", max_batch ? batch_keys[0] : "",
			 max_batch ? max_batch : "", max_delay_us ? batch_keys[1] : "",
			 max_delay_us ? max_delay_us : "");

	return n < 0 || (size_t)n >= outlen - len ? -ENAMETOOLONG : 0;
}
