// SPDX-License-Identifier: MIT
/*
 * bench_kernels: binary dense (XNOR/popcount) against OpenBLAS float on the same shape, one
 * thread, side by side in one run. Times are medians of repeated runs after a warm-up.
 *   - 4096 -> 4096, batch 1: best ISA, reference C, OpenBLAS sgemv;
 *   - batch 64: binary GEMM vs OpenBLAS sgemm (4096x4096 times 4096x64);
 *   - the VPOPCNTDQ peak of this core (register-only popcount + add chains) and the fraction
 *     of it the batch-64 binary GEMM reaches, counting one XOR+popcount per 64-bit word.
 */
#include <stdbool.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "kernels/kern.h"
#include "kernels/kern_ops.h"
#include "tests/bench/bench.h"

#define N     4096u
#define OUT   4096u
#define BATCH 64u

static double now_s(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (double)ts.tv_sec + (double)ts.tv_nsec * 1e-9;
}

static int cmp_double(const void *a, const void *b)
{
	double x = *(const double *)a, y = *(const double *)b;

	return (x > y) - (x < y);
}

struct job {
	void (*fn)(const struct job *j);
	const struct kern_bin_ops *ops;
	const uint64_t *x, *w;
	const float *fa, *fx;
	float *fy;
	int32_t *y;
	uint32_t batch;
};

static void run_bdense(const struct job *j)
{
	j->ops->bdense(j->x, j->batch, j->w, OUT, N, j->y);
}

static void run_sgemv(const struct job *j)
{
	kern_blas_sgemv(j->fa, OUT, N, j->fx, j->fy);
}

static void run_sgemm(const struct job *j)
{
	kern_blas_sgemm(j->fa, OUT, N, j->fx, BATCH, j->fy);
}

/* Median seconds of reps runs, after warm runs. */
static double median_time(const struct job *j, int warm, int reps)
{
	double t[32];

	for (int i = 0; i < warm; i++)
		j->fn(j);
	for (int i = 0; i < reps; i++) {
		double t0 = now_s();

		j->fn(j);
		t[i] = now_s() - t0;
	}
	qsort(t, (size_t)reps, sizeof(*t), cmp_double);
	return t[reps / 2];
}

#define PEAK_ITERS 2000000L
#define ROUNDS	   15

/*
 * Eight independent vpopcntq + vpaddq chains on registers only (no loads): the throughput
 * ceiling of the popcount unit. Written in assembly so the compiler cannot hoist the
 * loop-invariant popcounts, and so this file needs no ISA flags (it runs only if supported).
 */
static double popcnt_peak_words_per_ns(void)
{
	double best = 0.0;

	for (int r = 0; r < 3; r++) {
		long n = PEAK_ITERS;
		double t0 = now_s(), dt;

		__asm__ volatile("vpternlogd $0xff, %%zmm0, %%zmm0, %%zmm0\n\t"
				 "vpaddq %%zmm0, %%zmm0, %%zmm1\n\t"
				 "vpaddq %%zmm1, %%zmm0, %%zmm2\n\t"
				 "vpaddq %%zmm2, %%zmm0, %%zmm3\n\t"
				 "1:\n\t"
				 "vpopcntq %%zmm0, %%zmm4\n\t"
				 "vpaddq %%zmm4, %%zmm8, %%zmm8\n\t"
				 "vpopcntq %%zmm1, %%zmm5\n\t"
				 "vpaddq %%zmm5, %%zmm9, %%zmm9\n\t"
				 "vpopcntq %%zmm2, %%zmm6\n\t"
				 "vpaddq %%zmm6, %%zmm10, %%zmm10\n\t"
				 "vpopcntq %%zmm3, %%zmm7\n\t"
				 "vpaddq %%zmm7, %%zmm11, %%zmm11\n\t"
				 "vpopcntq %%zmm0, %%zmm4\n\t"
				 "vpaddq %%zmm4, %%zmm12, %%zmm12\n\t"
				 "vpopcntq %%zmm1, %%zmm5\n\t"
				 "vpaddq %%zmm5, %%zmm13, %%zmm13\n\t"
				 "vpopcntq %%zmm2, %%zmm6\n\t"
				 "vpaddq %%zmm6, %%zmm14, %%zmm14\n\t"
				 "vpopcntq %%zmm3, %%zmm7\n\t"
				 "vpaddq %%zmm7, %%zmm15, %%zmm15\n\t"
				 "dec %0\n\t"
				 "jnz 1b\n\t"
				 "vzeroupper"
				 : "+r"(n)
				 :
				 : "xmm0", "xmm1", "xmm2", "xmm3", "xmm4", "xmm5", "xmm6", "xmm7",
				   "xmm8", "xmm9", "xmm10", "xmm11", "xmm12", "xmm13", "xmm14",
				   "xmm15", "cc");
		dt = now_s() - t0;
		if (PEAK_ITERS * 8.0 * 8.0 / dt / 1e9 > best)
			best = PEAK_ITERS * 8.0 * 8.0 / dt / 1e9;
	}
	return best;
}

static void fill(uint64_t *p, size_t words, uint32_t n, size_t rows)
{
	uint64_t s = 0x243f6a8885a308d3ull;

	for (size_t i = 0; i < words; i++) {
		s = s * 6364136223846793005ull + 1442695040888963407ull;
		p[i] = s ^ (s >> 29);
	}
	for (size_t r = 0; r < rows && n % 64; r++)
		p[r * kern_words(n) + kern_words(n) - 1] &= (1ull << (n % 64)) - 1;
}

static double median(double *v, int n)
{
	qsort(v, (size_t)n, sizeof(*v), cmp_double);
	return v[n / 2];
}

int main(void)
{
	const struct kern_bin_ops *best = kern_ops_get();
	bool have_peak = kern_ops_by_name("avx512") != NULL;
	size_t nw = kern_words(N);
	uint64_t *w = aligned_alloc(64, OUT * nw * 8), *x = aligned_alloc(64, BATCH * nw * 8);
	int32_t *y = aligned_alloc(64, (size_t)BATCH * OUT * 4);
	float *fa = aligned_alloc(64, (size_t)OUT * N * 4);
	float *fx = aligned_alloc(64, (size_t)N * BATCH * 4);
	float *fy = aligned_alloc(64, (size_t)OUT * BATCH * 4);
	struct job j = {.x = x, .w = w, .fa = fa, .fx = fx, .fy = fy, .y = y};
	double b1[ROUNDS], ref1[ROUNDS], sgv[ROUNDS], b64[ROUNDS], sgm[ROUNDS], peak[ROUNDS];
	double r_sgemv[ROUNDS], r_ref[ROUNDS], r_sgemm[ROUNDS], frac[ROUNDS], rate[ROUNDS];
	char method[256];

	if (!w || !x || !y || !fa || !fx || !fy) {
		fprintf(stderr, "bench_kernels: out of memory\n");
		return 1;
	}
	kern_blas_threads(1);
	fill(w, OUT * nw, N, OUT);
	fill(x, BATCH * nw, N, BATCH);
	for (size_t i = 0; i < (size_t)OUT * N; i++)
		fa[i] = (float)((int)(i * 2654435761u >> 16) % 3 - 1);
	for (size_t i = 0; i < (size_t)N * BATCH; i++)
		fx[i] = (float)((int)(i * 40503u >> 8) % 3 - 1);

	/*
	 * Rounds interleave every measurement so that a ratio compares runs taken moments apart
	 * (this matters on a shared machine); each ratio is the median of its per-round ratios.
	 */
	for (int r = 0; r < ROUNDS; r++) {
		int warm = r == 0;

		j.fn = run_bdense;
		j.ops = best;
		j.batch = 1;
		b1[r] = median_time(&j, warm * 20, 9);
		j.ops = &kern_ops_ref;
		ref1[r] = median_time(&j, warm, 1);
		j.fn = run_sgemv;
		sgv[r] = median_time(&j, warm * 3, 1);
		j.fn = run_bdense;
		j.ops = best;
		j.batch = BATCH;
		b64[r] = median_time(&j, warm * 3, 3);
		peak[r] = have_peak ? popcnt_peak_words_per_ns() : 0.0;
		j.fn = run_sgemm;
		sgm[r] = median_time(&j, warm, 1);
		r_sgemv[r] = sgv[r] / b1[r];
		r_ref[r] = ref1[r] / b1[r];
		r_sgemm[r] = sgm[r] / b64[r];
		rate[r] = (double)OUT * BATCH * nw / b64[r] / 1e9;
		frac[r] = have_peak ? 100.0 * rate[r] / peak[r] : 0.0;
	}

	snprintf(method, sizeof(method),
		 "kern_ops_%s bdense, 4096 bits x 4096 rows, batch 1, median over %d rounds",
		 best->name, ROUNDS);
	bench_record("bdense_4096x4096_b1", median(b1, ROUNDS) * 1e6, "us", method);
	bench_record("bdense_4096x4096_b1_ref", median(ref1, ROUNDS) * 1e6, "us",
		     "kern_ops_ref bdense (plain C, __builtin_popcountll), median over rounds");
	bench_record("sgemv_4096x4096", median(sgv, ROUNDS) * 1e6, "us",
		     "OpenBLAS cblas_sgemv float32, 1 thread, median over rounds");
	bench_record(
	    "bdense_b1_speedup_vs_sgemv", median(r_sgemv, ROUNDS), "x",
	    "sgemv / binary GEMV time, same shape, median of per-round ratios (target >= 40)");
	bench_record(
	    "bdense_b1_speedup_vs_ref", median(r_ref, ROUNDS), "x",
	    "reference C / best-ISA time, batch 1, median of per-round ratios (target >= 3)");

	snprintf(method, sizeof(method),
		 "kern_ops_%s bdense, 4096x4096 times 4096x64 bits, median over %d rounds",
		 best->name, ROUNDS);
	bench_record("bdense_4096x4096_b64", median(b64, ROUNDS) * 1e6, "us", method);
	bench_record("sgemm_4096x4096x64", median(sgm, ROUNDS) * 1e6, "us",
		     "OpenBLAS cblas_sgemm float32, 1 thread, median over rounds");
	bench_record("bdense_b64_speedup_vs_sgemm", median(r_sgemm, ROUNDS), "x",
		     "sgemm / binary GEMM time, same shape, median of per-round ratios");
	bench_record("bdense_b64_rate", median(rate, ROUNDS), "words/ns",
		     "64-bit words XOR+popcounted per ns by the batch-64 binary GEMM");
	if (have_peak) {
		bench_record("vpopcntq_peak", median(peak, ROUNDS), "words/ns",
			     "register-only loop, 8 independent vpopcntq zmm + vpaddq chains");
		bench_record("vpopcntq_peak_bitops", median(peak, ROUNDS) * 64.0, "Gbitop/s",
			     "the same peak, 64 bit-ops per popcounted word");
		bench_record("bdense_b64_fraction_of_peak", median(frac, ROUNDS), "%",
			     "batch-64 GEMM words/ns over the peak of the same round, median "
			     "(target >= 50)");
	} else {
		printf("vpopcntq peak: skipped (no AVX-512 VPOPCNTDQ on this CPU)\n");
	}
	free(w), free(x), free(y), free(fa), free(fx), free(fy);
	return 0;
}
