// SPDX-License-Identifier: MIT
/*
 * bench_cuda [IMAGES.idx MODEL...]: the GPU side of `make bench`.
 *  - binary GEMM M = N = K = 8192 bits (A 8192 x 8192 bits, B 8192 x 8192 bits, C int32) with
 *    __popcll and with the b1 tensor-core MMA (AND + popc), next to cuBLAS sgemm of the same
 *    shape (8192^3 floats), device-resident operands, CUDA events around 10 runs after a
 *    warm-up; and the MMA's fraction of the 1-bit tensor-core peak;
 *  - per-image latency of each model on the GPU (the table's forward, batch 1 and 64).
 * Without a usable GPU it prints "skipped: no GPU (...)" and records nothing.
 *
 * 1-bit peak = SMs x SM clock x 32768 b1 ops per clock per SM (ops = 2 x bit MACs). 32768 is
 * NVIDIA's A100 figure (A100 whitepaper: 4992 dense binary TOPS = 108 SMs x 1.41 GHz x 32768);
 * NVIDIA publishes no b1 figure for Hopper, and the same per-SM rate is assumed for sm_90
 * (SPLITNIC_B1_OPS_PER_CLK_SM overrides it).
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "cli/dataset.h"
#include "kernels/cuda/kcuda.h"
#include "kernels/kern.h"
#include "split/stats.h"
#include "tests/bench/bench.h"

#define GEMM_DIM     8192u
#define GEMM_ITERS   10
#define BENCH_IMAGES 2000u

static const struct kcuda_ops *cu;

static uint64_t now_ns(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (uint64_t)ts.tv_sec * 1000000000ull + (uint64_t)ts.tv_nsec;
}

static int bench_gemm(const struct kcuda_info *info)
{
	const double ops = 2.0 * GEMM_DIM * GEMM_DIM * (double)GEMM_DIM;
	const char *env = getenv("SPLITNIC_B1_OPS_PER_CLK_SM");
	const double per_clk = env && *env ? atof(env) : 32768.0;
	const double peak = info->sm_count * (info->clock_khz * 1e3) * per_clk;
	double popc_ms, mma_ms, sgemm_ms;
	char method[512];

	if (cu->bench_bgemm(GEMM_DIM, GEMM_DIM, GEMM_DIM, KCUDA_BGEMM_POPC, GEMM_ITERS, &popc_ms) ||
	    cu->bench_bgemm(GEMM_DIM, GEMM_DIM, GEMM_DIM, KCUDA_BGEMM_MMA, GEMM_ITERS, &mma_ms) ||
	    cu->bench_sgemm(GEMM_DIM, GEMM_DIM, GEMM_DIM, GEMM_ITERS, &sgemm_ms)) {
		fprintf(stderr, "bench_cuda: %s\n", cu->last_error());
		return 1;
	}
	snprintf(method, sizeof(method),
		 "%s: C = A B^T, 8192 x 8192 x 8192 bits, int32 out, __popcll tiled GEMM, mean of "
		 "%d runs (CUDA events) after a warm-up; TOPS = 2 M N K / t",
		 info->name, GEMM_ITERS);
	bench_record("gpu.bgemm8192.popc_ms", popc_ms, "ms", method);
	bench_record("gpu.bgemm8192.popc_tops", ops / (popc_ms * 1e-3) / 1e12, "TOPS", method);
	snprintf(method, sizeof(method),
		 "%s: same shape, mma.sync m16n8k256 b1 AND+popc tensor cores, result checked "
		 "equal to the __popcll GEMM, mean of %d runs after a warm-up",
		 info->name, GEMM_ITERS);
	bench_record("gpu.bgemm8192.mma_ms", mma_ms, "ms", method);
	bench_record("gpu.bgemm8192.mma_tops", ops / (mma_ms * 1e-3) / 1e12, "TOPS", method);
	snprintf(method, sizeof(method),
		 "%s: cublasSgemm 8192 x 8192 x 8192 fp32 (default math mode, no TF32), mean of %d "
		 "runs after a warm-up",
		 info->name, GEMM_ITERS);
	bench_record("gpu.sgemm8192.ms", sgemm_ms, "ms", method);
	bench_record("gpu.sgemm8192.tflops", ops / (sgemm_ms * 1e-3) / 1e12, "TFLOPS", method);
	snprintf(method, sizeof(method), "same-run ratio: cuBLAS sgemm time / b1 MMA time, %s",
		 info->name);
	bench_record("gpu.bgemm8192.mma_speedup_vs_sgemm", sgemm_ms / mma_ms, "x", method);
	snprintf(method, sizeof(method),
		 "b1 MMA TOPS / peak; peak = %d SMs x %.0f MHz x %.0f b1 ops/clk/SM = %.0f TOPS "
		 "(32768/clk/SM: A100 whitepaper 4992 binary TOPS; assumed for sm_%d%d, no NVIDIA "
		 "b1 figure for Hopper)",
		 info->sm_count, info->clock_khz / 1e3, per_clk, peak / 1e12, info->cc_major,
		 info->cc_minor);
	bench_record("gpu.bgemm8192.mma_fraction_of_b1_peak", ops / (mma_ms * 1e-3) / peak,
		     "fraction", method);
	return 0;
}

static int bench_model(const char *path, const char *images)
{
	static uint64_t lat[BENCH_IMAGES];
	struct model *m;
	struct kcuda_model *g1 = NULL, *g64 = NULL;
	struct dataset ds;
	struct lat_summary s;
	double *scores = NULL;
	char err[1024], name[160], method[256];
	uint32_t n, classes;
	uint64_t t0, total;
	int ret = 1;

	m = model_load(path, err, sizeof(err));
	if (!m) {
		fprintf(stderr, "bench_cuda: %s\n", err);
		return 1;
	}
	if (m->input.fmt != MODEL_FMT_U8 || dataset_open(&ds, m, images, NULL, err, sizeof(err))) {
		fprintf(stderr, "bench_cuda: %s: skipped (needs u8 IDX input)\n", path);
		model_free(m);
		return 0;
	}
	n = ds.count < BENCH_IMAGES ? ds.count : BENCH_IMAGES;
	n -= n % 64;
	classes = model_classes(m);
	g1 = cu->model_upload(m, 1, err, sizeof(err));
	g64 = g1 ? cu->model_upload(m, 64, err, sizeof(err)) : NULL;
	scores = calloc((size_t)64 * classes, sizeof(double));
	if (!g1 || !g64 || !scores) {
		fprintf(stderr, "bench_cuda: %s\n", err);
		goto out;
	}
	for (uint32_t i = 0; i < n; i++)
		if (cu->forward(g1, dataset_item(&ds, i), 1, scores))
			goto out_err;
	for (uint32_t i = 0; i < n; i++) {
		t0 = now_ns();
		cu->forward(g1, dataset_item(&ds, i), 1, scores);
		lat[i] = now_ns() - t0;
	}
	lat_summarize(lat, n, &s);
	snprintf(name, sizeof(name), "gpu.model.%s.latency_batch1_p50", m->name);
	snprintf(method, sizeof(method),
		 "GPU forward batch 1 (host->device->host, pinned staging), median of %u test "
		 "images after a warm-up pass (p99 %.1f us)",
		 n, s.p99 / 1e3);
	bench_record(name, s.p50 / 1e3, "us", method);
	t0 = now_ns();
	for (uint32_t i = 0; i < n; i += 64)
		if (cu->forward(g64, dataset_item(&ds, i), 64, scores))
			goto out_err;
	total = now_ns() - t0;
	snprintf(name, sizeof(name), "gpu.model.%s.per_image_batch64", m->name);
	snprintf(method, sizeof(method), "GPU forward batch 64, wall time over %u test images / %u",
		 n, n);
	bench_record(name, total / 1e3 / n, "us", method);
	ret = 0;
	goto out;
out_err:
	fprintf(stderr, "bench_cuda: %s: %s\n", path, cu->last_error());
out:
	cu->model_free(g1);
	cu->model_free(g64);
	free(scores);
	dataset_close(&ds);
	model_free(m);
	return ret;
}

int main(int argc, char **argv)
{
	struct kcuda_info info;
	char msg[640];
	int ret = 0;

	cu = kcuda_open(msg, sizeof(msg));
	if (!cu) {
		printf("skipped: no GPU (%s)\n", msg);
		return 0;
	}
	if (cu->device_info(&info)) {
		fprintf(stderr, "bench_cuda: %s\n", cu->last_error());
		return 1;
	}
	printf("GPU: %s, compute capability %d.%d, %d SMs at %.0f MHz\n", info.name, info.cc_major,
	       info.cc_minor, info.sm_count, info.clock_khz / 1e3);
	ret |= bench_gemm(&info);
	for (int i = 2; i < argc; i++)
		ret |= bench_model(argv[i], argv[1]);
	return ret;
}
