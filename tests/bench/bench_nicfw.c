// SPDX-License-Identifier: MIT
/*
 * bench_nicfw: modeled latency of one binary FC layer (4096 inputs, thresholds) on the NIC
 * emulator against its neuron count, 256 executors (the shape of the seed's Figure 14), and the
 * modeled throughput without batching. Modeled NIC time, not wall time: the figures depend only
 * on the emulator's parameters (nicfw/emu/params.c), which are printed with --params.
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "nicfw/emu/emu.h"
#include "tests/bench/bench.h"
#include "tests/support/rng.h"

#define FC_INPUTS   4096u
#define FC_EXEC	    256u
#define FC_REQUESTS 3u /* the first warms the EMEM cache; the last is reported */

static uint64_t rng_state = 0x9e3779b97f4a7c15ull;

/* Modeled latency (us) of a 4096 x `neurons` thresholded binary layer, or < 0 on error. */
static double fc_latency(uint32_t neurons, double *cold_us)
{
	const uint32_t nw = FC_INPUTS / 64;
	uint64_t *w = malloc((size_t)neurons * nw * sizeof(uint64_t)), x[FC_INPUTS / 64];
	int32_t *thr = malloc(neurons * sizeof(int32_t));
	uint8_t *flip = calloc(neurons, 1);
	double *scores = malloc(neurons * sizeof(double)), lat = -1;
	struct model_layer layer = {
	    .op = MODEL_OP_BDENSE,
	    .flags = MODEL_LF_THRESH,
	    .in = {MODEL_FMT_BITS, FC_INPUTS, 1, 1},
	    .out = {MODEL_FMT_BITS, neurons, 1, 1},
	};
	struct model m = {.name = "fc", .n_layers = 1, .layers = &layer};
	struct nicfw_emu_params p;
	struct nicfw_emu_report rep;
	struct nicfw_emu *e = NULL;
	char err[256];

	if (!w || !thr || !flip || !scores)
		goto out;
	for (size_t i = 0; i < (size_t)neurons * nw; i++)
		w[i] = test_xorshift(&rng_state);
	for (uint32_t o = 0; o < neurons; o++)
		thr[o] = (int32_t)(test_xorshift(&rng_state) % 65) - 32;
	layer.blob[0] = w;
	layer.blob[1] = thr;
	layer.blob[2] = flip;
	m.input = layer.in;
	nicfw_emu_params_default(&p);
	e = nicfw_emu_create(&m, 0, FC_EXEC, &p, err, sizeof(err));
	if (!e) {
		fprintf(stderr, "bench_nicfw: %s\n", err);
		goto out;
	}
	for (uint32_t r = 0; r < FC_REQUESTS; r++) {
		for (uint32_t j = 0; j < nw; j++)
			x[j] = test_xorshift(&rng_state);
		if (nicfw_emu_infer(e, x, scores, &rep))
			goto out;
		if (!r)
			*cold_us = rep.latency_us;
	}
	lat = rep.latency_us;
out:
	nicfw_emu_free(e);
	free(scores);
	free(flip);
	free(thr);
	free(w);
	return lat;
}

int main(int argc, char **argv)
{
	static const uint32_t sizes[] = {512, 1024, 2048, 3072, 4096, 6144, 8192, 12288, 16384};
	const char *method = "modeled NIC time (nicfw emu, NFP4000-class parameters), 1 binary FC "
			     "layer, 4096 inputs, 256 executors, warm EMEM cache, rx+tx included";
	char name[96];

	if (argc > 1 && !strcmp(argv[1], "--params")) {
		for (uint32_t i = 0; i < NICFW_EP__COUNT; i++) {
			struct nicfw_emu_params p;

			nicfw_emu_params_default(&p);
			printf("%-22s %10g %-12s %s\n", nicfw_emu_param_info(i)->name, p.v[i],
			       nicfw_emu_param_info(i)->unit, nicfw_emu_param_info(i)->why);
		}
		return 0;
	}
	for (size_t i = 0; i < sizeof(sizes) / sizeof(sizes[0]); i++) {
		double cold = 0, lat = fc_latency(sizes[i], &cold);

		if (lat < 0)
			return 1;
		snprintf(name, sizeof(name), "nicfw_emu_fc4096x%u_latency", sizes[i]);
		bench_record(name, lat, "us", method);
		snprintf(name, sizeof(name), "nicfw_emu_fc4096x%u_latency_cold", sizes[i]);
		bench_record(name, cold, "us", "as above, first request (cold EMEM cache)");
		if (sizes[i] == 4096)
			bench_record("nicfw_emu_fc4096x4096_throughput", 1e6 / lat, "FC/s",
				     "modeled, requests back to back without batching (seed: "
				     "~1,350 FC/s)");
	}
	return 0;
}
