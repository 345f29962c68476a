// SPDX-License-Identifier: MIT
#include "split/stats.h"

#include <math.h>
#include <stdio.h>
#include <stdlib.h>

static int cmp_u64(const void *a, const void *b)
{
	uint64_t x = *(const uint64_t *)a, y = *(const uint64_t *)b;

	return (x > y) - (x < y);
}

static int cmp_double(const void *a, const void *b)
{
	const double x = *(const double *)a, y = *(const double *)b;

	return (x > y) - (x < y);
}

double stats_median(double *v, size_t n)
{
	if (!n)
		return NAN;
	qsort(v, n, sizeof(*v), cmp_double);
	return n % 2 ? v[n / 2] : (v[n / 2 - 1] + v[n / 2]) / 2;
}

static double rank(const uint64_t *s, size_t n, double q)
{
	size_t r = (size_t)ceil(q * (double)n);

	return (double)s[r ? r - 1 : 0];
}

void lat_summarize(uint64_t *ns, size_t n, struct lat_summary *out)
{
	double sum = 0;

	*out = (struct lat_summary){0};
	if (!n)
		return;
	qsort(ns, n, sizeof(*ns), cmp_u64);
	for (size_t i = 0; i < n; i++)
		sum += (double)ns[i];
	out->min = (double)ns[0];
	out->max = (double)ns[n - 1];
	out->mean = sum / (double)n;
	out->p50 = rank(ns, n, 0.50);
	out->p90 = rank(ns, n, 0.90);
	out->p99 = rank(ns, n, 0.99);
	out->p999 = rank(ns, n, 0.999);
}
