/* SPDX-License-Identifier: MIT */
/*
 * cli/progress.h — the one progress line of the verbs' long work (run, emu, calibrate, sweep,
 * import): on stderr, redrawn in place, e.g.
 *
 *   splitnic run: 3200/10000 images, 1850 images/s, ETA 0:04
 *
 * drawn only when stderr is a terminal and --quiet was not given (a pipe, a log file or a test
 * sees nothing), from one second after the start (short work stays silent), at most four times
 * a second, and erased at the end so that what the verb prints next starts on a clean line.
 *
 * cli_progress_add may be called from several threads at once: it adds to an atomic count, and
 * the one caller that moves the next redraw time forward draws.
 */
#ifndef CLI_PROGRESS_H
#define CLI_PROGRESS_H

#include <stdatomic.h>
#include <stdbool.h>
#include <stdint.h>

struct cli_progress {
	const char *who;  /* "splitnic run" */
	const char *unit; /* what is counted: "images" */
	uint64_t total;	  /* 0: unknown (no ETA) */
	uint64_t t0_ns;
	_Atomic uint64_t done;
	_Atomic uint64_t next_ns; /* the next redraw, on CLOCK_MONOTONIC */
	atomic_bool drawn;	  /* something to erase */
	bool on;
};

/* Starts counting toward total units; draws nothing when quiet or stderr is no terminal. */
void cli_progress_start(struct cli_progress *p, const char *who, const char *unit, uint64_t total,
			bool quiet);

/* n more units done; redraws when due. */
void cli_progress_add(struct cli_progress *p, uint64_t n);

/* done units so far (for work that counts itself); redraws when due. */
void cli_progress_set(struct cli_progress *p, uint64_t done);

/* Erases the line (if drawn); p may be started again. */
void cli_progress_end(struct cli_progress *p);

#endif /* CLI_PROGRESS_H */
