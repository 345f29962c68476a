// SPDX-License-Identifier: MIT
/*
 * The packet sweep's figure (lab/sweep_plot.c) from panels made by hand: gnuplot draws it, the
 * legend names the MEASURED parts, the MODELED p50, the planner's choice and the measured best
 * once, a panel whose split saturates has its axis cut with the cut bar's value written over it,
 * and the answered shares are written over the bars.
 */
#include <errno.h>
#include <math.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include <cmocka.h>

#include "lab/sweep.h"

static char *slurp(const char *path)
{
	FILE *f = fopen(path, "r");
	char *buf;
	long n;

	assert_non_null(f);
	fseek(f, 0, SEEK_END);
	n = ftell(f);
	rewind(f);
	buf = calloc(1, (size_t)n + 1);
	assert_non_null(buf);
	assert_int_equal(fread(buf, 1, (size_t)n, f), (size_t)n);
	fclose(f);
	return buf;
}

static size_t count(const char *hay, const char *needle)
{
	size_t n = 0;

	for (const char *p = strstr(hay, needle); p; p = strstr(p + 1, needle))
		n++;
	return n;
}

static void bar(struct sweep_plot_bar *b, const char *name, double p50, double pred, double ans,
		double nic)
{
	memset(b, 0, sizeof(*b));
	snprintf(b->name, sizeof(b->name), "%s", name);
	b->part[0] = 0.4 * p50;
	b->part[2] = 0.3 * p50;
	b->part[4] = 0.5 * p50; /* medians that add up past the p50: scaled down to it */
	b->p50 = p50;
	b->pred_p50 = pred;
	b->answered = ans;
	b->by_nic = nic;
}

static void test_plot_panels(void **state)
{
	struct sweep_plot_panel pn[2];
	char path[] = "/tmp/test-split-plot-XXXXXX", svg[64];
	char *text;
	int fd;

	(void)state;
	memset(pn, 0, sizeof(pn));
	snprintf(pn[0].title, sizeof(pn[0].title), "link 1 Gbit/s, 300 requests/s");
	bar(&pn[0].bar[0], "all-host", 400, 380, 1, 0);
	bar(&pn[0].bar[1], "nic@9:bdense", 500, 520, 1, 0.97);
	pn[0].bar[0].best = pn[0].bar[1].planner = true;
	pn[0].n = 2;
	snprintf(pn[1].title, sizeof(pn[1].title), "link 1 Gbit/s, 3000 requests/s");
	bar(&pn[1].bar[0], "all-host", 48000, 52000, 0.62, 0);
	bar(&pn[1].bar[1], "nic@9:bdense", 700, 650, 0.995, 0.7);
	pn[1].bar[1].best = pn[1].bar[1].planner = true;
	pn[1].n = 2;
	fd = mkstemp(path);
	assert_true(fd >= 0);
	close(fd);
	unlink(path);
	snprintf(svg, sizeof(svg), "%s.svg", path);
	assert_int_equal(sweep_plot_write(svg, "test figure", "us", pn, 2, 1), 0);
	text = slurp(svg);
	unlink(svg);
	/* one legend */
	assert_int_equal(count(text, "MODELED p50"), 1);
	assert_int_equal(count(text, "MEASURED best (and ties)"), 1);
	assert_int_equal(count(text, "MEASURED: host compute"), 1);
	assert_int_equal(count(text, "planner"), 1);
	/* the saturated panel: cut axis, the bar's and the model's values over it */
	assert_non_null(strstr(text, "62% ^48000 (MODELED ^52000)"));
	assert_non_null(strstr(text, "100%/97%"));
	assert_non_null(strstr(text, "link 1 Gbit/s, 3000 requests/s"));
	free(text);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
	    cmocka_unit_test(test_plot_panels),
	};

	return cmocka_run_group_tests(tests, NULL, NULL);
}
