// SPDX-License-Identifier: MIT
/*
 * bench_xdp IMAGES.idx[.gz] [MODEL...]: ns per inference of the XDP executor (BPF program run by
 * BPF_PROG_TEST_RUN, JIT-compiled) next to the CPU kernels in user space (kern_forward batch 1,
 * one thread) on the same inputs: a traffic-analysis-sized 256-32-16-2 binary MLP on u8 input
 * (random weights, built in memory) and each MODEL given (u8 IDX images as input).
 * Needs root for BPF; without it, prints why and records nothing.
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include <linux/bpf.h>

#include "cli/dataset.h"
#include "kernels/kern.h"
#include "kernels/kern_ops.h"
#include "model/compile.h"
#include "nicfw/xdp/xdp_infer.h"
#include "protocol/proto.h"
#include "tests/bench/bench.h"

#define BENCH_N 2000u

static uint64_t now_ns(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (uint64_t)ts.tv_sec * 1000000000ull + (uint64_t)ts.tv_nsec;
}

static uint64_t rng = 0x2545f4914f6cdd1dull;

static double urand(double lo, double hi)
{
	rng ^= rng << 13;
	rng ^= rng >> 7;
	rng ^= rng << 17;
	return lo + (hi - lo) * (double)(rng >> 11) / 9007199254740992.0;
}

/* 256-32-16-2: dense(binary, bias) + batchnorm (+ sign) per width, compiled in memory. */
static int build_traffic_mlp(struct model *m, char *err, size_t errlen)
{
	static const uint32_t widths[3] = {32, 16, 2};
	static const char *const bn[4] = {"mean", "var", "gamma", "beta"};
	struct model_ic_layer layers[8] = {0};
	struct model_ic_array arrays[18] = {0};
	struct model_ic_model ic = {.arch_path = "(bench)",
				    .weights_path = "(bench)",
				    .name = "traffic-256-32-16-2",
				    .input = {MODEL_FMT_U8, 256, 1, 1},
				    .layers = layers,
				    .arrays = arrays};
	uint32_t in = 256, nl = 0, na = 0;
	int ret;

	for (uint32_t k = 0; k < 3; k++) {
		const uint32_t o = widths[k];
		const double scale = k == 0 ? 255.0 * 16 : 4.0;

		layers[nl] = (struct model_ic_layer){
		    .type = MODEL_SRC_DENSE, .out = o, .bias = true, .binw = true};
		arrays[na] = (struct model_ic_array){.ndim = 2, .shape = {o, in}, .count = o * in};
		arrays[na + 1] = (struct model_ic_array){.ndim = 1, .shape = {o}, .count = o};
		for (int p = 0; p < 2; p++) {
			arrays[na + p].key = malloc(16);
			arrays[na + p].data = malloc(sizeof(double) * arrays[na + p].count);
			if (!arrays[na + p].key || !arrays[na + p].data)
				return -1;
			snprintf(arrays[na + p].key, 16, "%u.%s", nl, p ? "bias" : "weight");
			for (uint64_t i = 0; i < arrays[na + p].count; i++)
				arrays[na + p].data[i] = urand(-1, 1);
		}
		na += 2;
		nl++;
		layers[nl] = (struct model_ic_layer){.type = MODEL_SRC_BATCHNORM, .eps = 1e-4};
		for (int p = 0; p < 4; p++) {
			struct model_ic_array *a = &arrays[na++];

			*a = (struct model_ic_array){.ndim = 1, .shape = {o}, .count = o};
			a->key = malloc(16);
			a->data = malloc(sizeof(double) * o);
			if (!a->key || !a->data)
				return -1;
			snprintf(a->key, 16, "%u.%s", nl, bn[p]);
			for (uint32_t i = 0; i < o; i++)
				a->data[i] = p == 0   ? urand(-scale, scale)
					     : p == 1 ? urand(1, 100)
					     : p == 2 ? urand(-2, 2)
						      : urand(-1, 1);
		}
		nl++;
		if (k < 2)
			layers[nl++] = (struct model_ic_layer){.type = MODEL_SRC_SIGN};
		in = o;
	}
	ic.n_layers = nl;
	ic.n_arrays = na;
	ret = model_compile(&ic, m, err, errlen);
	for (uint32_t i = 0; i < na; i++) {
		free(arrays[i].key);
		free(arrays[i].data);
	}
	return ret;
}

static int bench_pair(const struct model *m, const uint8_t *inputs, uint32_t n, const char *what)
{
	const size_t in_bytes = model_shape_bytes(&m->input);
	const uint32_t classes = model_classes(m);
	uint8_t frame[2048], out[4096];
	uint64_t cpu_ns = 0, xdp_ns = 0, t0;
	uint32_t verdict, ns, olen, mismatch = 0, cls;
	struct kern_ctx *ctx = kern_ctx_create(m, 1);
	struct xdp_infer *x;
	double *scores = calloc(classes, sizeof(double)), *xs = calloc(classes, sizeof(double));
	char err[1024], name[160], method[400];
	int len, ret = 1;

	x = xdp_infer_load(m, 0, 0, err, sizeof(err));
	if (!x || !ctx || !scores || !xs) {
		fprintf(stderr, "bench_xdp: %s: %s\n", m->name, x ? "out of memory" : err);
		goto out;
	}
	for (uint32_t i = 0; i < n; i++)
		kern_forward(ctx, inputs + (size_t)i * in_bytes, 1, scores);
	t0 = now_ns();
	for (uint32_t i = 0; i < n; i++)
		kern_forward(ctx, inputs + (size_t)i * in_bytes, 1, scores);
	cpu_ns = now_ns() - t0;
	for (uint32_t pass = 0; pass < 2; pass++) {
		xdp_ns = 0;
		for (uint32_t i = 0; i < n; i++) {
			len = xdp_infer_build_request(frame, sizeof(frame), PROTO_DEFAULT_PORT, 0,
						      i + 1, m->input.c, m->input.h, m->input.w,
						      inputs + (size_t)i * in_bytes);
			olen = sizeof(out);
			if (len < 0 || xdp_infer_test_run(x, frame, (uint32_t)len, out, &olen, 1,
							  &verdict, &ns)) {
				fprintf(stderr, "bench_xdp: %s: test run failed\n", m->name);
				goto out;
			}
			xdp_ns += ns;
			if (pass == 1) {
				kern_forward(ctx, inputs + (size_t)i * in_bytes, 1, scores);
				mismatch +=
				    verdict != XDP_TX ||
				    xdp_infer_parse_response(out, olen, i + 1, &cls, xs, classes,
							     err, sizeof(err)) < 0 ||
				    cls != kern_argmax(scores, classes) ||
				    memcmp(scores, xs, classes * sizeof(double));
			}
		}
	}
	if (mismatch)
		fprintf(stderr, "bench_xdp: %s: %u of %u answers differ from the CPU kernels\n",
			m->name, mismatch, n);
	snprintf(name, sizeof(name), "xdp.%s.ns_per_inference", m->name);
	snprintf(method, sizeof(method),
		 "BPF_PROG_TEST_RUN (JIT), repeat 1 per frame (a repeated run would see its own "
		 "rewritten response), kernel-measured duration, mean over %u %s after a warm-up "
		 "pass; parse + bit-planes + layers + response + checksums",
		 n, what);
	bench_record(name, (double)xdp_ns / n, "ns", method);
	snprintf(name, sizeof(name), "xdp.%s.cpu_ns_per_inference", m->name);
	snprintf(method, sizeof(method),
		 "kern_forward batch 1, %s kernels, 1 thread, user space, wall time / %u %s "
		 "after a warm-up pass",
		 kern_ops_get()->name, n, what);
	bench_record(name, (double)cpu_ns / n, "ns", method);
	snprintf(name, sizeof(name), "xdp.%s.xdp_over_cpu", m->name);
	snprintf(method, sizeof(method),
		 "ratio of the two figures above (same inputs, same run); >1: XDP slower");
	bench_record(name, (double)xdp_ns / (double)cpu_ns, "x", method);
	ret = mismatch ? 1 : 0;
out:
	free(xs);
	free(scores);
	xdp_infer_free(x);
	kern_ctx_free(ctx);
	return ret;
}

int main(int argc, char **argv)
{
	struct model tm;
	struct dataset ds;
	uint8_t *in;
	char err[512];
	int ret = 0;

	if (argc < 2) {
		fprintf(stderr, "usage: bench_xdp IMAGES.idx[.gz] [MODEL...]\n");
		return 2;
	}
	if (geteuid() != 0) {
		printf("bench_xdp: skipped: BPF_PROG_TEST_RUN needs root\n");
		return 0;
	}
	kern_blas_threads(1);
	if (build_traffic_mlp(&tm, err, sizeof(err))) {
		fprintf(stderr, "bench_xdp: traffic MLP: %s\n", err);
		return 1;
	}
	in = malloc((size_t)BENCH_N * 256);
	if (!in)
		return 1;
	for (size_t i = 0; i < (size_t)BENCH_N * 256; i++)
		in[i] = (uint8_t)(urand(0, 256));
	ret |= bench_pair(&tm, in, BENCH_N, "random u8 inputs");
	free(in);
	model_compiled_free(&tm);
	for (int i = 2; i < argc; i++) {
		struct model *m = model_load(argv[i], err, sizeof(err));

		if (!m) {
			fprintf(stderr, "bench_xdp: %s\n", err);
			ret = 1;
			continue;
		}
		if (dataset_open(&ds, m, argv[1], NULL, err, sizeof(err))) {
			fprintf(stderr, "bench_xdp: %s: %s\n", argv[i], err);
			model_free(m);
			ret = 1;
			continue;
		}
		ret |=
		    bench_pair(m, ds.data, ds.count < BENCH_N ? ds.count : BENCH_N, "test images");
		dataset_close(&ds);
		model_free(m);
	}
	return ret;
}
