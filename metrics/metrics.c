// SPDX-License-Identifier: MIT
/* The Prometheus text exposition (metrics/metrics.h). */
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "metrics/metrics.h"

void metrics_printf(struct metrics_buf *b, const char *fmt, ...)
{
	va_list ap;
	int n;

	if (b->full)
		return;
	for (;;) {
		size_t room = b->cap - b->len;

		va_start(ap, fmt);
		n = vsnprintf(b->p ? b->p + b->len : NULL, room, fmt, ap);
		va_end(ap);
		if (n < 0) {
			b->full = true;
			return;
		}
		if ((size_t)n < room) {
			b->len += (size_t)n;
			return;
		}
		size_t want = b->cap ? 2 * b->cap : 16384;
		while (want < b->len + (size_t)n + 1)
			want *= 2;
		if (want > METRICS_BUF_MAX) {
			b->full = true;
			return;
		}
		char *p = realloc(b->p, want);
		if (!p) {
			b->full = true;
			return;
		}
		b->p = p;
		b->cap = want;
	}
}

void metrics_family(struct metrics_buf *b, const char *name, const char *type, const char *help)
{
	metrics_printf(b, "# HELP %s %s\n# TYPE %s %s\n", name, help, name, type);
}

void metrics_sample(struct metrics_buf *b, const char *name, const char *labels, uint64_t v)
{
	metrics_printf(b, "%s%s%s%s %llu\n", name, labels[0] ? "{" : "", labels,
		       labels[0] ? "}" : "", (unsigned long long)v);
}

void metrics_histogram(struct metrics_buf *b, const char *name, const char *labels,
		       const uint64_t *buckets, unsigned n, uint64_t sum_ns)
{
	const char *sep = labels[0] ? "," : "";
	uint64_t cum = 0;

	for (unsigned i = 0; i < n; i++) {
		cum += __atomic_load_n(&buckets[i], __ATOMIC_RELAXED);
		if (i + 1 < n)
			metrics_printf(b, "%s_bucket{%s%sle=\"%.9g\"} %llu\n", name, labels, sep,
				       (double)(1ull << i) * 1e-6, (unsigned long long)cum);
	}
	metrics_printf(b, "%s_bucket{%s%sle=\"+Inf\"} %llu\n", name, labels, sep,
		       (unsigned long long)cum);
	metrics_printf(b, "%s_count%s%s%s %llu\n", name, labels[0] ? "{" : "", labels,
		       labels[0] ? "}" : "", (unsigned long long)cum);
	metrics_printf(b, "%s_sum%s%s%s %.9f\n", name, labels[0] ? "{" : "", labels,
		       labels[0] ? "}" : "", (double)sum_ns * 1e-9);
}

size_t metrics_label(char *out, size_t outlen, const char *key, const char *value)
{
	size_t n = 0;

	if (!outlen)
		return 0;
	for (const char *k = key; *k && n + 1 < outlen; k++)
		out[n++] = *k;
	if (n + 3 < outlen) {
		out[n++] = '=';
		out[n++] = '"';
	}
	/* room kept for the closing quote */
	for (const char *v = value; *v && n + 2 < outlen; v++) {
		char c = *v;

		if (c == '\\' || c == '"' || c == '\n') {
			if (n + 3 >= outlen)
				break;
			out[n++] = '\\';
			c = c == '\n' ? 'n' : c;
		}
		out[n++] = c;
	}
	if (n + 1 < outlen)
		out[n++] = '"';
	out[n] = 0;
	return n;
}
