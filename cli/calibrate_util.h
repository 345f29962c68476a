/* SPDX-License-Identifier: MIT */
/*
 * cli/calibrate_util.h — what `splitnic calibrate --packet` builds its measurements from and
 * fits them with, apart from the packet path itself: its calibration models, a nonnegative
 * least-squares fit, and how late a sleeping thread wakes on this machine.
 */
#ifndef CLI_CALIBRATE_UTIL_H
#define CLI_CALIBRATE_UTIL_H

#include <stddef.h>
#include <stdint.h>

/*
 * An all-binary MLP on `in` u8 inputs: hidden widths (0-terminated, at most 4), `out` classes,
 * random weights (split_tools_gen, seed 1), written to dir/name.snm (its path in out_path).
 * Returns 0, or -errno after a message.
 */
int cal_mlp(const char *dir, const char *name, uint32_t in, const uint32_t *hidden, uint32_t out,
	    char *out_path, size_t len);

#define FIT_K 4 /* features of lsq_nonneg at most */

/* Least squares y ~ x beta over n points and nk <= FIT_K features, every coefficient >= 0. */
void lsq_nonneg(const double (*x)[FIT_K], const double *y, uint32_t n, int nk, double *beta);

#define WAKE_SLEEPS   301
#define WAKE_SLEEP_US 20

/* How late a timed sleep of WAKE_SLEEP_US wakes, as the servers sleep (dpdk/idle.h: nanosleep
 * with a timer slack of 1 us): the median of WAKE_SLEEPS, in seconds. */
double cal_wake_lateness(void);

#endif /* CLI_CALIBRATE_UTIL_H */
