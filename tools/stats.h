/* SPDX-License-Identifier: MIT */
/* tools/stats.h — latency summaries and strict numeric option parsing for the CLI. */
#ifndef TOOLS_STATS_H
#define TOOLS_STATS_H

#include <stddef.h>
#include <stdint.h>

struct lat_summary {
	double min, mean, p50, p90, p99, p999, max; /* ns */
};

/* Summarize n samples (sorts ns in place). Nearest-rank percentiles; all zero when n == 0. */
void lat_summarize(uint64_t *ns, size_t n, struct lat_summary *out);

/* Parse a whole decimal integer in [min, max]; prints "OPTION: ..." and returns -1 if not. */
int parse_count(const char *s, long *out, long min, long max, const char *what);

#endif /* TOOLS_STATS_H */
