// SPDX-License-Identifier: MIT
/* The progress line of the verbs' long work (cli/progress.h). */
#include <stdio.h>
#include <time.h>
#include <unistd.h>

#include "cli/progress.h"

#define PROGRESS_DELAY_NS 1000000000ull /* silent for the first second */
#define PROGRESS_EVERY_NS 250000000ull	/* then at most 4 redraws a second */

static uint64_t progress_now_ns(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (uint64_t)ts.tv_sec * 1000000000ull + (uint64_t)ts.tv_nsec;
}

void cli_progress_start(struct cli_progress *p, const char *who, const char *unit, uint64_t total,
			bool quiet)
{
	p->who = who;
	p->unit = unit;
	p->total = total;
	p->on = !quiet && isatty(STDERR_FILENO);
	p->t0_ns = progress_now_ns();
	atomic_store(&p->done, 0);
	atomic_store(&p->next_ns, p->t0_ns + PROGRESS_DELAY_NS);
	atomic_store(&p->drawn, false);
}

/* "1:05" or "12 s" */
static void progress_dur(double s, char *buf, size_t len)
{
	unsigned long t = (unsigned long)(s + 0.5);

	if (t < 60)
		snprintf(buf, len, "%lu s", t);
	else if (t < 3600)
		snprintf(buf, len, "%lu:%02lu", t / 60, t % 60);
	else
		snprintf(buf, len, "%lu:%02lu:%02lu", t / 3600, t / 60 % 60, t % 60);
}

static void progress_draw(struct cli_progress *p, uint64_t done, uint64_t now)
{
	const double secs = (double)(now - p->t0_ns) / 1e9;
	const double rate = secs > 0 ? (double)done / secs : 0;
	char eta[32] = "";

	if (p->total && rate > 0 && done <= p->total)
		progress_dur((double)(p->total - done) / rate, eta, sizeof(eta));
	if (p->total)
		fprintf(stderr, "\r%s: %llu/%llu %s, %.*f %s/s%s%s\033[K", p->who,
			(unsigned long long)done, (unsigned long long)p->total, p->unit,
			rate < 10 ? 1 : 0, rate, p->unit, eta[0] ? ", ETA " : "", eta);
	else
		fprintf(stderr, "\r%s: %llu %s, %.*f %s/s\033[K", p->who, (unsigned long long)done,
			p->unit, rate < 10 ? 1 : 0, rate, p->unit);
	fflush(stderr);
	atomic_store(&p->drawn, true);
}

static void progress_maybe_draw(struct cli_progress *p, uint64_t done)
{
	uint64_t now, due;

	if (!p->on)
		return;
	now = progress_now_ns();
	due = atomic_load(&p->next_ns);
	if (now < due ||
	    !atomic_compare_exchange_strong(&p->next_ns, &due, now + PROGRESS_EVERY_NS))
		return;
	progress_draw(p, done, now);
}

void cli_progress_add(struct cli_progress *p, uint64_t n)
{
	progress_maybe_draw(p, atomic_fetch_add(&p->done, n) + n);
}

void cli_progress_set(struct cli_progress *p, uint64_t done)
{
	atomic_store(&p->done, done);
	progress_maybe_draw(p, done);
}

void cli_progress_end(struct cli_progress *p)
{
	if (p->on && atomic_load(&p->drawn)) {
		fputs("\r\033[K", stderr);
		fflush(stderr);
	}
	atomic_store(&p->drawn, false);
}
