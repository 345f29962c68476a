// SPDX-License-Identifier: MIT
/*
 * bench_kernels: binary dense (XNOR/popcount) against OpenBLAS float on the same shape, one
 * thread, side by side in one run. Times are medians of repeated runs after a warm-up.
 *   - 4096 -> 4096, batch 1: best ISA, reference C, OpenBLAS sgemv;
 *   - batch 64: binary GEMM vs OpenBLAS sgemm (4096x4096 times 4096x64);
 *   - the VPOPCNTDQ peak of this core (register-only popcount + add chains) and the fraction
 *     of it the batch-64 binary GEMM reaches, counting one XOR+popcount per 64-bit word; the
 *     same loop with the XOR (the ceiling of any XOR + popcount + add kernel);
 *   - streaming-read bandwidth of L1, L2, L3 (where the caches are that large) and DRAM, and the
 *     batch-1 binary GEMV's weight bytes per second against the level its weights live in;
 *   - the binary conv layers of the BinaryNet CIFAR-10 CNN (split/arch/bcnn-cifar.json, random
 *     weights and inputs) against the peak of the same round.
 */
#include <stdbool.h>
#include <math.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include <immintrin.h>

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

/* Best of reps runs (no warm-up): set against a peak taken the same way. */
static double best_time(const struct job *j, int reps)
{
	double best = 1e9;

	for (int i = 0; i < reps; i++) {
		double t0 = now_s(), dt;

		j->fn(j);
		dt = now_s() - t0;
		best = dt < best ? dt : best;
	}
	return best;
}

#define ROUNDS		15
#define GEMM_PEAK_ITERS 150000L /* about as long as one batch-64 GEMM */

/*
 * Eight independent vpopcntq + vpaddq chains on registers only (no loads): the throughput
 * ceiling of the popcount unit. Written in assembly so the compiler cannot hoist the
 * loop-invariant popcounts, and so this file needs no ISA flags (it runs only if supported).
 */
static double popcnt_peak_words_per_ns(long iters, int reps)
{
	double best = 0.0;

	for (int r = 0; r < reps; r++) {
		long n = iters;
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
		if (iters * 8.0 * 8.0 / dt / 1e9 > best)
			best = iters * 8.0 * 8.0 / dt / 1e9;
	}
	return best;
}

/* The same chains with a vpxorq before each vpopcntq: the ceiling of XOR + popcount + add. */
static double popcnt_xor_peak_words_per_ns(long iters, int reps)
{
	double best = 0.0;

	for (int r = 0; r < reps; r++) {
		long n = iters;
		double t0 = now_s(), dt;

		__asm__ volatile("vpternlogd $0xff, %%zmm0, %%zmm0, %%zmm0\n\t"
				 "vpaddq %%zmm0, %%zmm0, %%zmm1\n\t"
				 "1:\n\t"
				 "vpxorq %%zmm0, %%zmm1, %%zmm4\n\t"
				 "vpopcntq %%zmm4, %%zmm4\n\t"
				 "vpaddq %%zmm4, %%zmm8, %%zmm8\n\t"
				 "vpxorq %%zmm0, %%zmm1, %%zmm5\n\t"
				 "vpopcntq %%zmm5, %%zmm5\n\t"
				 "vpaddq %%zmm5, %%zmm9, %%zmm9\n\t"
				 "vpxorq %%zmm0, %%zmm1, %%zmm6\n\t"
				 "vpopcntq %%zmm6, %%zmm6\n\t"
				 "vpaddq %%zmm6, %%zmm10, %%zmm10\n\t"
				 "vpxorq %%zmm0, %%zmm1, %%zmm7\n\t"
				 "vpopcntq %%zmm7, %%zmm7\n\t"
				 "vpaddq %%zmm7, %%zmm11, %%zmm11\n\t"
				 "vpxorq %%zmm0, %%zmm1, %%zmm4\n\t"
				 "vpopcntq %%zmm4, %%zmm4\n\t"
				 "vpaddq %%zmm4, %%zmm12, %%zmm12\n\t"
				 "vpxorq %%zmm0, %%zmm1, %%zmm5\n\t"
				 "vpopcntq %%zmm5, %%zmm5\n\t"
				 "vpaddq %%zmm5, %%zmm13, %%zmm13\n\t"
				 "vpxorq %%zmm0, %%zmm1, %%zmm6\n\t"
				 "vpopcntq %%zmm6, %%zmm6\n\t"
				 "vpaddq %%zmm6, %%zmm14, %%zmm14\n\t"
				 "vpxorq %%zmm0, %%zmm1, %%zmm7\n\t"
				 "vpopcntq %%zmm7, %%zmm7\n\t"
				 "vpaddq %%zmm7, %%zmm15, %%zmm15\n\t"
				 "dec %0\n\t"
				 "jnz 1b\n\t"
				 "vzeroupper"
				 : "+r"(n)
				 :
				 : "xmm0", "xmm1", "xmm4", "xmm5", "xmm6", "xmm7", "xmm8", "xmm9",
				   "xmm10", "xmm11", "xmm12", "xmm13", "xmm14", "xmm15", "cc");
		dt = now_s() - t0;
		if (iters * 8.0 * 8.0 / dt / 1e9 > best)
			best = iters * 8.0 * 8.0 / dt / 1e9;
	}
	return best;
}

/* Sum of 64-bit words with eight independent 512-bit accumulators (bytes a multiple of 512). */
__attribute__((target("avx512f"))) static uint64_t read_avx512(const uint64_t *p, size_t bytes)
{
	__m512i a0 = _mm512_setzero_si512(), a1 = a0, a2 = a0, a3 = a0, a4 = a0, a5 = a0;
	__m512i a6 = a0, a7 = a0;

	for (size_t i = 0; i < bytes / 8; i += 64) {
		a0 = _mm512_add_epi64(a0, _mm512_load_si512(p + i));
		a1 = _mm512_add_epi64(a1, _mm512_load_si512(p + i + 8));
		a2 = _mm512_add_epi64(a2, _mm512_load_si512(p + i + 16));
		a3 = _mm512_add_epi64(a3, _mm512_load_si512(p + i + 24));
		a4 = _mm512_add_epi64(a4, _mm512_load_si512(p + i + 32));
		a5 = _mm512_add_epi64(a5, _mm512_load_si512(p + i + 40));
		a6 = _mm512_add_epi64(a6, _mm512_load_si512(p + i + 48));
		a7 = _mm512_add_epi64(a7, _mm512_load_si512(p + i + 56));
	}
	a0 = _mm512_add_epi64(_mm512_add_epi64(_mm512_add_epi64(a0, a1), _mm512_add_epi64(a2, a3)),
			      _mm512_add_epi64(_mm512_add_epi64(a4, a5), _mm512_add_epi64(a6, a7)));
	return (uint64_t)_mm512_reduce_add_epi64(a0);
}

static volatile uint64_t sink;

/* Streaming-read GB/s over a buffer of `bytes`, best of reps passes after one warm pass. */
static double read_gbs(const uint64_t *p, size_t bytes, int reps)
{
	double best = 0.0;

	sink += read_avx512(p, bytes);
	for (int r = 0; r < reps; r++) {
		double t0 = now_s(), dt;

		sink += read_avx512(p, bytes);
		dt = now_s() - t0;
		best = bytes / dt / 1e9 > best ? bytes / dt / 1e9 : best;
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
		p[r * model_words(n) + model_words(n) - 1] &= (1ull << (n % 64)) - 1;
}

static double median(double *v, int n)
{
	qsort(v, (size_t)n, sizeof(*v), cmp_double);
	return v[n / 2];
}

#define MEM_ROUNDS 5

/*
 * Streaming-read bandwidth per level (buffers of half of L1, half of L2, a quarter of L3 where
 * it is at least 8 MiB, and 1 GiB or 4x L3 for DRAM) and the batch-1 binary GEMV 4096x4096
 * (2 MiB of packed weights): its weight bytes per second against a streaming read of a buffer
 * of the same size (the level its weights live in) and against each named level.
 */
static void bench_memory(const uint64_t *w, const uint64_t *x, int32_t *y,
			 const struct kern_bin_ops *ops)
{
	long l1 = sysconf(_SC_LEVEL1_DCACHE_SIZE), l2 = sysconf(_SC_LEVEL2_CACHE_SIZE);
	long l3 = sysconf(_SC_LEVEL3_CACHE_SIZE);
	size_t wbytes = (size_t)OUT * model_words(N) * 8, dram = (size_t)1 << 30;
	struct {
		const char *name;
		size_t bytes;
	} lv[5] = {{"l1", (size_t)(l1 > 0 ? l1 : 32768) / 2},
		   {"l2", (size_t)(l2 > 0 ? l2 : 1 << 20) / 2},
		   {"l3", l3 >= (8l << 20) ? (size_t)l3 / 4 : 0},
		   {"dram", 0},
		   {"gemv_weights_size", wbytes}};
	double bw[5][MEM_ROUNDS], gemv[MEM_ROUNDS], frac[5][MEM_ROUNDS];
	char name[96], method[320];
	uint64_t *buf;
	size_t max;

	if (l3 > 0 && (size_t)l3 * 4 > dram)
		dram = (size_t)l3 * 4 > ((size_t)4 << 30) ? (size_t)4 << 30 : (size_t)l3 * 4;
	lv[3].bytes = dram;
	max = dram;
	buf = aligned_alloc(64, max);
	if (!buf || !__builtin_cpu_supports("avx512f")) {
		printf("memory bandwidth: skipped (%s)\n", buf ? "no AVX-512" : "out of memory");
		free(buf);
		return;
	}
	for (size_t i = 0; i < max / 8; i++)
		buf[i] = i;
	for (int r = 0; r < MEM_ROUNDS; r++) {
		struct job j = {.fn = run_bdense, .ops = ops, .x = x, .w = w, .y = y, .batch = 1};

		for (int k = 0; k < 5; k++)
			bw[k][r] = lv[k].bytes ? read_gbs(buf, lv[k].bytes & ~(size_t)511,
							  lv[k].bytes >= (64u << 20) ? 1 : 20)
					       : 0.0;
		gemv[r] = wbytes / median_time(&j, 20, 9) / 1e9;
		for (int k = 0; k < 5; k++)
			frac[k][r] = bw[k][r] > 0 ? 100.0 * gemv[r] / bw[k][r] : 0.0;
	}
	for (int k = 0; k < 5; k++) {
		if (!lv[k].bytes)
			continue;
		snprintf(name, sizeof(name), "read_bandwidth_%s", lv[k].name);
		snprintf(method, sizeof(method),
			 "streaming read (AVX-512 loads, 8 accumulators) of a %zu KiB buffer, best "
			 "pass of each round, median over %d rounds (L1d %ld, L2 %ld, L3 %ld KiB)",
			 lv[k].bytes >> 10, MEM_ROUNDS, l1 >> 10, l2 >> 10, l3 >> 10);
		bench_record(name, median(bw[k], MEM_ROUNDS), "GB/s", method);
	}
	snprintf(method, sizeof(method),
		 "kern_ops_%s bdense 4096x4096 batch 1: %zu KiB of packed weights / median time, "
		 "median over %d rounds",
		 ops->name, wbytes >> 10, MEM_ROUNDS);
	bench_record("bdense_b1_weight_bandwidth", median(gemv, MEM_ROUNDS), "GB/s", method);
	bench_record("bdense_b1_fraction_of_its_level", median(frac[4], MEM_ROUNDS), "%",
		     "binary GEMV weight GB/s over a streaming read of a buffer of the weights' "
		     "size (the level they live in) in the same round, median");
	bench_record("bdense_b1_fraction_of_l2", median(frac[1], MEM_ROUNDS), "%",
		     "binary GEMV weight GB/s over the L2 read bandwidth, same round, median (its "
		     "2 MiB of weights are at the L2's size)");
	free(buf);
}

#define CONV_ROUNDS 7
#define SHORT_ITERS 40000L

/*
 * The binary conv layers of split/arch/bcnn-cifar.json (3x3, pad 1), thresholds, batch 1. On a
 * shared machine the core's speed moves between runs: each layer's best run is set against the
 * best of short peak loops taken just before and after it.
 */
static void bench_cifar_convs(void)
{
	static const uint32_t shape[][3] = {
	    {128, 128, 32}, {128, 256, 16}, {256, 256, 16}, {256, 512, 8}, {512, 512, 8}};
	const struct kern_bin_ops *ops = kern_ops_get();
	double all[CONV_ROUNDS], peak[CONV_ROUNDS], xpeak[CONV_ROUNDS];
	double layer[5][CONV_ROUNDS];
	uint64_t total_words = 0;
	char name[96], method[320];

	for (int l = 0; l < 5; l++)
		total_words += (uint64_t)shape[l][1] * shape[l][2] * shape[l][2] * 9 *
			       model_words(shape[l][0]);
	for (int r = 0; r < CONV_ROUNDS; r++) {
		double t = 0.0, words = 0.0;

		peak[r] = 0.0;
		xpeak[r] = 0.0;
		for (int l = 0; l < 5; l++) {
			struct kern_conv_geom g = {shape[l][0], shape[l][2], shape[l][2],
						   shape[l][1], shape[l][2], shape[l][2],
						   3,		1,	     1};
			size_t in = (size_t)g.h * g.w * model_words(g.c);
			size_t wn = (size_t)g.o * 9 * model_words(g.c);
			size_t out = (size_t)g.oh * g.ow * model_words(g.o);
			uint64_t *x = aligned_alloc(64, in * 8), *w = aligned_alloc(64, wn * 8);
			uint64_t *y = aligned_alloc(64, out * 8);
			int32_t *thr = calloc(g.o, 4);
			uint8_t *flip = calloc(g.o, 1);
			struct kern_thresh th = {thr, flip};
			double best = 1e9, n = (double)g.o * g.oh * g.ow * 9 * model_words(g.c);
			double pk = popcnt_peak_words_per_ns(SHORT_ITERS, 8);

			fill(x, in, 64, 0);
			fill(w, wn, 64, 0);
			for (int k = 0; k < 8; k++) {
				double t0 = now_s(), dt;

				ops->bconv_thr(x, 1, &g, w, &th, y);
				dt = now_s() - t0;
				best = dt < best ? dt : best;
			}
			pk = fmax(pk, popcnt_peak_words_per_ns(SHORT_ITERS, 8));
			layer[l][r] = 100.0 * n / best / 1e9 / pk;
			peak[r] = fmax(peak[r], pk);
			xpeak[r] = fmax(xpeak[r], popcnt_xor_peak_words_per_ns(SHORT_ITERS, 8));
			t += best;
			words += n;
			free(x), free(w), free(y), free(thr), free(flip);
		}
		all[r] = 100.0 * words / t / 1e9 / peak[r];
		xpeak[r] = 100.0 * xpeak[r] / peak[r];
	}
	for (int l = 0; l < 5; l++) {
		snprintf(name, sizeof(name), "bconv_cifar_%ux%u_%ux%u_fraction_of_peak",
			 shape[l][0], shape[l][1], shape[l][2], shape[l][2]);
		snprintf(
		    method, sizeof(method),
		    "kern_ops_%s bconv_thr 3x3 pad 1, %u -> %u channels at %ux%u, batch 1, best "
		    "of 8 runs, words/ns over the best of 16 short peak loops around it, median "
		    "over %d rounds",
		    ops->name, shape[l][0], shape[l][1], shape[l][2], shape[l][2], CONV_ROUNDS);
		bench_record(name, median(layer[l], CONV_ROUNDS), "%", method);
	}
	bench_record("bconv_cifar_all_fraction_of_peak", median(all, CONV_ROUNDS), "%",
		     "the five binary conv layers of bcnn-cifar together, batch 1, same method "
		     "(target >= 50)");
	bench_record(
	    "vpopcntq_xor_ceiling_fraction_of_peak", median(xpeak, CONV_ROUNDS), "%",
	    "register-only vpxorq + vpopcntq + vpaddq chains over the popcount + add peak, "
	    "same round, median: the ceiling of an XOR-popcount kernel on this core");
}

int main(void)
{
	const struct kern_bin_ops *best = kern_ops_get();
	bool have_peak = kern_ops_by_name("avx512") != NULL;
	size_t nw = model_words(N);
	uint64_t *w = aligned_alloc(64, OUT * nw * 8), *x = aligned_alloc(64, BATCH * nw * 8);
	int32_t *y = aligned_alloc(64, (size_t)BATCH * OUT * 4);
	float *fa = aligned_alloc(64, (size_t)OUT * N * 4);
	float *fx = aligned_alloc(64, (size_t)N * BATCH * 4);
	float *fy = aligned_alloc(64, (size_t)OUT * BATCH * 4);
	struct job j = {.x = x, .w = w, .fa = fa, .fx = fx, .fy = fy, .y = y};
	double b1[ROUNDS], ref1[ROUNDS], sgv[ROUNDS], b64[ROUNDS], sgm[ROUNDS], peak[ROUNDS];
	double xpeak[ROUNDS], xfrac[ROUNDS];
	double r_sgemv[ROUNDS], r_ref[ROUNDS], r_sgemm[ROUNDS], frac[ROUNDS], rate[ROUNDS], best64;
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
		peak[r] = have_peak ? popcnt_peak_words_per_ns(GEMM_PEAK_ITERS, 3) : 0.0;
		b64[r] = median_time(&j, warm * 3, 3);
		best64 = best_time(&j, 3);
		if (have_peak) {
			peak[r] = fmax(peak[r], popcnt_peak_words_per_ns(GEMM_PEAK_ITERS, 3));
			xpeak[r] = popcnt_xor_peak_words_per_ns(GEMM_PEAK_ITERS, 3);
		}
		j.fn = run_sgemm;
		sgm[r] = median_time(&j, warm, 1);
		r_sgemv[r] = sgv[r] / b1[r];
		r_ref[r] = ref1[r] / b1[r];
		r_sgemm[r] = sgm[r] / b64[r];
		rate[r] = (double)OUT * BATCH * nw / best64 / 1e9;
		frac[r] = have_peak ? 100.0 * rate[r] / peak[r] : 0.0;
		xfrac[r] = have_peak ? 100.0 * rate[r] / xpeak[r] : 0.0;
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
		     "64-bit words XOR+popcounted per ns by the batch-64 binary GEMM, best of 3 "
		     "runs, median over rounds");
	if (have_peak) {
		bench_record(
		    "vpopcntq_peak", median(peak, ROUNDS), "words/ns",
		    "register-only loop, 8 independent vpopcntq zmm + vpaddq chains, best "
		    "of 6 runs about as long as the batch-64 GEMM, taken around it, median "
		    "over rounds");
		bench_record("vpopcntq_peak_bitops", median(peak, ROUNDS) * 64.0, "Gbitop/s",
			     "the same peak, 64 bit-ops per popcounted word");
		bench_record("bdense_b64_fraction_of_peak", median(frac, ROUNDS), "%",
			     "batch-64 GEMM words/ns over the peak taken around it, median "
			     "(target >= 70; an XOR + popcount + add kernel's ceiling is "
			     "vpopcntq_xor_ceiling_fraction_of_peak)");
		bench_record("bdense_b64_fraction_of_xor_ceiling", median(xfrac, ROUNDS), "%",
			     "batch-64 GEMM words/ns over the register-only vpxorq + vpopcntq + "
			     "vpaddq chains taken right after it, same round, median of per-round "
			     "ratios (target >= 85)");
	} else {
		printf("vpopcntq peak: skipped (no AVX-512 VPOPCNTDQ on this CPU)\n");
	}
	if (have_peak)
		bench_cifar_convs();
	bench_memory(w, x, y, best);
	free(w), free(x), free(y), free(fa), free(fx), free(fy);
	return 0;
}
