// SPDX-License-Identifier: MIT
/* The calibration's models, its nonnegative least squares, and how late a sleep wakes
 * (cli/calibrate_util.h). */
#include <errno.h>
#include <math.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/prctl.h>
#include <time.h>
#include <unistd.h>

#include "cli/calibrate_util.h"
#include "cli/cmds.h"
#include "model/model.h"

/* An all-binary MLP with u8 input [in], written to dir/name.snm (path in out_path). */
int cal_mlp(const char *dir, const char *name, uint32_t in, const uint32_t *hidden, uint32_t out,
	    char *out_path, size_t len)
{
	char arch[256], npz[256], err[512];
	FILE *f;
	int ret;

	snprintf(arch, sizeof(arch), "%s/%s.json", dir, name);
	snprintf(npz, sizeof(npz), "%s/%s.npz", dir, name);
	snprintf(out_path, len, "%s/%s.snm", dir, name);
	f = fopen(arch, "w");
	if (!f) {
		fprintf(stderr, "splitnic calibrate: %s: %s\n", arch, strerror(errno));
		return -EIO;
	}
	fprintf(f, "{\"name\":\"%s\",\"input\":{\"shape\":[%u,1,1],\"dtype\":\"u8\"},\"layers\":[",
		name, in);
	for (uint32_t i = 0; i < 4 && hidden[i]; i++)
		fprintf(f,
			"{\"type\":\"dense\",\"out\":%u,\"bias\":true,\"binary_weights\":true},"
			"{\"type\":\"batchnorm\"},{\"type\":\"sign\"},",
			hidden[i]);
	fprintf(f,
		"{\"type\":\"dense\",\"out\":%u,\"bias\":true,\"binary_weights\":true},"
		"{\"type\":\"batchnorm\"}]}\n",
		out);
	fclose(f);
	ret = split_tools_gen(arch, npz, 1, err, sizeof(err));
	if (!ret)
		ret = model_convert(arch, npz, out_path, err, sizeof(err));
	unlink(arch);
	unlink(npz);
	if (ret) {
		fprintf(stderr, "splitnic calibrate: %s: %s\n", name, err);
		return -EINVAL;
	}
	return 0;
}

/*
 * Least squares y ~ x beta over n points and k <= FIT_K features, every coefficient >= 0:
 * solve the normal equations (Gaussian elimination) over the active features, drop the most
 * negative coefficient, repeat.
 */
void lsq_nonneg(const double (*x)[FIT_K], const double *y, uint32_t n, int nk, double *beta)
{
	bool act[FIT_K] = {nk > 0, nk > 1, nk > 2, nk > 3};

	for (;;) {
		double a[FIT_K][FIT_K + 1] = {{0}};
		int idx[FIT_K], k = 0, worst = -1;

		for (int j = 0; j < FIT_K; j++)
			if (act[j])
				idx[k++] = j;
		for (uint32_t i = 0; i < n; i++)
			for (int r = 0; r < k; r++) {
				for (int c = 0; c < k; c++)
					a[r][c] += x[i][idx[r]] * x[i][idx[c]];
				a[r][k] += x[i][idx[r]] * y[i];
			}
		for (int c = 0; c < k; c++) {
			int piv = c;

			for (int r = c + 1; r < k; r++)
				if (fabs(a[r][c]) > fabs(a[piv][c]))
					piv = r;
			for (int q = 0; q <= k; q++) {
				double t = a[c][q];

				a[c][q] = a[piv][q];
				a[piv][q] = t;
			}
			for (int r = 0; r < k; r++) {
				const double f = a[c][c] != 0 ? a[r][c] / a[c][c] : 0;

				for (int q = c; r != c && q <= k; q++)
					a[r][q] -= f * a[c][q];
			}
		}
		for (int j = 0; j < FIT_K; j++)
			beta[j] = 0;
		for (int r = 0; r < k; r++) {
			beta[idx[r]] = a[r][r] != 0 ? a[r][k] / a[r][r] : 0;
			if (beta[idx[r]] < 0 && (worst < 0 || beta[idx[r]] < beta[worst]))
				worst = idx[r];
		}
		if (worst < 0)
			return;
		act[worst] = false;
	}
}

static int cmp_double(const void *a, const void *b)
{
	const double x = *(const double *)a, y = *(const double *)b;

	return (x > y) - (x < y);
}

/* How late a timed sleep wakes on this machine, as the servers sleep (dpdk/idle.h: nanosleep
 * with a timer slack of 1 us), while the lab's servers run: the median of WAKE_SLEEPS. */
double cal_wake_lateness(void)
{
	const int slack = prctl(PR_GET_TIMERSLACK, 0, 0, 0, 0);
	double late[WAKE_SLEEPS];

	prctl(PR_SET_TIMERSLACK, 1000ul, 0ul, 0ul, 0ul);
	for (int i = 0; i < WAKE_SLEEPS; i++) {
		const struct timespec d = {0, WAKE_SLEEP_US * 1000l};
		struct timespec t0, t1;

		clock_gettime(CLOCK_MONOTONIC, &t0);
		nanosleep(&d, NULL);
		clock_gettime(CLOCK_MONOTONIC, &t1);
		late[i] = (double)(t1.tv_sec - t0.tv_sec) +
			  1e-9 * (double)(t1.tv_nsec - t0.tv_nsec) - WAKE_SLEEP_US * 1e-6;
	}
	if (slack > 0)
		prctl(PR_SET_TIMERSLACK, (unsigned long)slack, 0ul, 0ul, 0ul);
	qsort(late, WAKE_SLEEPS, sizeof(late[0]), cmp_double);
	return fmax(0, late[WAKE_SLEEPS / 2]);
}
