// SPDX-License-Identifier: MIT
/*
 * The packet sweep's figure (gnuplot): one panel per link rate (columns) and offered load
 * (rows); per split a bar of the MEASURED end-to-end p50 split into the servers' per-stage
 * medians (scaled to add up to the p50: medians of parts do not add up to the median of the
 * whole), the MODELED p50 beside it, the planner's choice and the measured best marked, the
 * MEASURED shares answered and answered by the NIC written over each bar. One legend. When a
 * split's p50 is more than ten times the panel's smallest, the axis stops at six times that
 * smallest and the taller bars (and MODELED points) carry their value (^us).
 */
#include <math.h>
#include <stdio.h>

#include "lab/sweep.h"
#include "split/verbs.h"

/* The panel's y-axis top: none (autoscale) unless a bar dwarfs the others. */
static double axis_top(const struct sweep_plot_panel *pn)
{
	double lo = INFINITY, hi = 0;

	for (uint32_t j = 0; j < pn->n; j++) {
		const struct sweep_plot_bar *b = &pn->bar[j];

		if (b->p50 > 0) {
			lo = fmin(lo, b->p50);
			hi = fmax(hi, fmax(b->p50, b->pred_p50));
		}
		if (b->pred_p50 > 0)
			lo = fmin(lo, b->pred_p50);
	}
	return isfinite(lo) && hi > 10 * lo ? 6 * lo : 0;
}

int sweep_plot_write(const char *out, const char *title, const char *unit,
		     const struct sweep_plot_panel *pn, uint32_t rows, uint32_t cols)
{
	static const char *const part_name[SWEEP_PLOT_PARTS] = {
	    "host compute", "pack", "NIC", "servers, other", "wire, link, kernel"};
	static const char *const part_color[SWEEP_PLOT_PARTS] = {"#4472c4", "#ed7d31", "#70ad47",
								 "#a5a5a5", "#ffc000"};
	char script[64];
	FILE *f = split_tools_plot_open("sweep", out, script, sizeof(script));

	if (!f)
		return -1;
	for (uint32_t i = 0; i < rows * cols; i++) {
		const double top = axis_top(&pn[i]);

		fprintf(f, "$d%u << EOD\n", i);
		for (uint32_t j = 0; j < pn[i].n; j++) {
			const struct sweep_plot_bar *b = &pn[i].bar[j];
			const double bar = top > 0 ? fmin(b->p50, top) : b->p50;
			double sum = 0, k;

			for (int q = 0; q < SWEEP_PLOT_PARTS; q++)
				sum += b->part[q];
			/* the parts are medians: scaled so that they add up to the bar (the p50) */
			k = sum > 0 && b->p50 > 0 ? bar / sum : 0;
			fprintf(f, "\"%s\"", b->name);
			for (int q = 0; q < SWEEP_PLOT_PARTS; q++)
				fprintf(f, " %.6g", b->part[q] * k);
			fprintf(f, " %.6g %.6g %.6g %.6g \"%.0f%%",
				b->pred_p50 > 0 ? fmin(b->pred_p50, top > 0 ? top : INFINITY) : NAN,
				b->planner ? bar * 1.05 + 1e-9 : NAN,
				b->best ? bar * 1.05 + 1e-9 : NAN, bar, 100 * b->answered);
			if (b->by_nic > 0)
				fprintf(f, "/%.0f%%", 100 * b->by_nic);
			if (top > 0 && b->p50 > top)
				fprintf(f, " ^%.0f", b->p50);
			if (top > 0 && b->pred_p50 > top)
				fprintf(f, " (MODELED ^%.0f)", b->pred_p50);
			fprintf(f, "\"\n");
		}
		fprintf(f, "EOD\n");
	}
	fprintf(f,
		"set multiplot layout %u,%u title \"%s\" font ',11' margins 0.07,0.98,0.1,0.86 "
		"spacing 0.07,0.17\n"
		"set style fill solid 0.85 border -1\nset boxwidth 0.75\n"
		"set xtics rotate by -40 font ',8' nomirror\nset ytics font ',8'\n"
		"set grid ytics lc rgb '#dddddd'\nset style data histogram\n"
		"set style histogram rowstacked\nset datafile missing 'NaN'\n",
		rows, cols, title);
	for (uint32_t i = 0; i < rows * cols; i++) {
		const double top = axis_top(&pn[i]);

		fprintf(f, "set title \"%s%s\" font ',9'\nset ylabel 'p50 (%s)' font ',8'\n",
			pn[i].title, top > 0 ? " (axis cut: ^ the bars' values)" : "", unit);
		if (top > 0)
			fprintf(f, "set yrange [0:%.6g]\n", top * 1.2);
		else
			fprintf(f, "set yrange [0:*]\n");
		if (i)
			fprintf(f, "unset key\n");
		else
			fprintf(f, "set key at screen 0.5,0.935 center top horizontal maxrows 2 "
				   "font ',8' samplen 1.5 width 1\n");
		fprintf(f, "plot ");
		for (int q = 0; q < SWEEP_PLOT_PARTS; q++)
			fprintf(f, "%s$d%u using %d%s title 'MEASURED: %s' lc rgb '%s'",
				q ? ", " : "", i, q + 2, q ? "" : ":xtic(1)", part_name[q],
				part_color[q]);
		fprintf(f,
			", $d%u using 0:%d with points pt 7 ps 1.1 lc rgb '#c00000' title 'MODELED "
			"p50', '' using ($0-0.22):%d with points pt 9 ps 1.3 lc rgb 'black' title "
			"\"planner's choice\", '' using ($0+0.22):%d with points pt 4 ps 1.4 lw 2 "
			"lc rgb '#7030a0' title 'MEASURED best (and ties)', '' using 0:%d:%d with "
			"labels offset 0,0.8 font ',7' notitle\n",
			i, SWEEP_PLOT_PARTS + 2, SWEEP_PLOT_PARTS + 3, SWEEP_PLOT_PARTS + 4,
			SWEEP_PLOT_PARTS + 5, SWEEP_PLOT_PARTS + 6);
	}
	fprintf(f, "unset multiplot\n");
	return split_tools_plot_run("sweep", f, script);
}
