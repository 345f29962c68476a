/* SPDX-License-Identifier: MIT */
/* split/stats.h — the latency clock and latency summaries (the verbs, serve/, lab/, cli/). */
#ifndef SPLIT_STATS_H
#define SPLIT_STATS_H

#include <stddef.h>
#include <stdint.h>
#include <time.h>

/* CLOCK_MONOTONIC in nanoseconds: the clock every latency is measured on. */
static inline uint64_t lat_now_ns(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (uint64_t)ts.tv_sec * 1000000000ull + (uint64_t)ts.tv_nsec;
}

struct lat_summary {
	double min, mean, p50, p90, p99, p999, max; /* ns */
};

/* Summarize n samples (sorts ns in place). Nearest-rank percentiles; all zero when n == 0. */
void lat_summarize(uint64_t *ns, size_t n, struct lat_summary *out);

/* The median of n values (sorts v in place); NAN when n == 0. */
double stats_median(double *v, size_t n);

#endif /* SPLIT_STATS_H */
