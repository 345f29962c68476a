/* SPDX-License-Identifier: MIT */
/*
 * What the XDP tests (tests/test_xdp.c, tests/test_xdp_f32.c) share: random binary MLPs, the
 * program loaded for a model, one frame run through BPF_PROG_TEST_RUN with its counters, and
 * whether BPF is here (needs root; under CI=true its absence fails the tests instead of skipping
 * them). Header-only: each test program includes it once.
 */
#ifndef TESTS_SUPPORT_XDP_FIXTURE_H
#define TESTS_SUPPORT_XDP_FIXTURE_H

#include <errno.h>
#include <float.h>
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
#include <linux/bpf.h>

#include "kernels/kern.h"
#include "model/idx.h"
#include "nicfw/xdp/xdp_infer.h"
#include "protocol/frame.h"
#include "protocol/proto.h"
#include "tests/support/model_fixture.h"

#define FMNIST_IMAGES "/usr/share/datasets/fashion-mnist/t10k-images-idx3-ubyte.gz"
#define PORT	      PROTO_DEFAULT_PORT
#define MAXC	      XDP_INFER_MAX_CLASSES

static bool ci;
static char no_bpf[256]; /* why BPF is unavailable, empty if it is */

static inline void need_bpf(void)
{
	if (!no_bpf[0])
		return;
	if (ci)
		fail_msg("BPF unavailable under CI=true: %s", no_bpf);
	print_message("skip: %s\n", no_bpf);
	skip();
}

static const char *const bn_names[4] = {"gamma", "beta", "mean", "var"};

/*
 * Layer li: binary dense (o, in) with bias; layer li + 1: its batch-norm, some gammas 0, means
 * spread about +-0.3 scale.
 */
static inline void gen_dense_bn(struct test_gen *g, uint32_t li, uint32_t o, uint32_t in,
				double scale)
{
	double *w = test_gen_array(g, li, "weight", NULL, 2, (uint64_t[]){o, in});
	double *b = test_gen_array(g, li, "bias", NULL, 1, (uint64_t[]){o});

	for (uint64_t i = 0; i < (uint64_t)o * in; i++)
		w[i] = test_urand(-1, 1);
	for (uint32_t i = 0; i < o; i++)
		b[i] = test_urand(-5, 5);
	for (int p = 0; p < 4; p++) {
		double *v = test_gen_array(g, li + 1, bn_names[p], NULL, 1, (uint64_t[]){o});

		for (uint32_t i = 0; i < o; i++) {
			double r = test_urand(0, 1);

			v[i] = p == 0	? (r < 0.1 ? 0.0 : test_urand(-2, 2))
			       : p == 1 ? test_urand(-1, 1)
			       : p == 2 ? test_urand(-0.3, 0.3) * scale
					: test_urand(0.5, 50);
		}
	}
}

/*
 * A random binary MLP on u8 input (n,1,1): dense(binary, bias) + batchnorm (+ sign but after the
 * last, unless final_sign) for each width. Written as arch.json + weights.npz and converted.
 */
static inline struct model *random_mlp(uint32_t n, const uint32_t *widths, uint32_t nw,
				       bool final_sign)
{
	struct test_gen g = {0};
	char json[4096];
	uint32_t li = 0, in = n;
	size_t jl;

	jl = (size_t)snprintf(json, sizeof(json),
			      "{\"name\": \"rnd-%u\", \"input\": {\"shape\": [%u, 1, 1], "
			      "\"dtype\": \"u8\"}, \"layers\": [",
			      n, n);
	for (uint32_t k = 0; k < nw; k++) {
		uint32_t o = widths[k];

		gen_dense_bn(&g, li, o, in, k == 0 ? 255.0 * n : in);
		jl += (size_t)snprintf(json + jl, sizeof(json) - jl,
				       "%s{\"type\": \"dense\", \"out\": %u, \"bias\": true, "
				       "\"binary_weights\": true}, {\"type\": \"batchnorm\", "
				       "\"eps\": 0.0001}",
				       k ? ", " : "", o);
		li += 2;
		if (k + 1 < nw || final_sign) {
			jl += (size_t)snprintf(json + jl, sizeof(json) - jl,
					       ", {\"type\": \"sign\"}");
			li++;
		}
		in = o;
	}
	snprintf(json + jl, sizeof(json) - jl, "]}");
	return test_model_build(json, &g);
}

static inline struct xdp_infer *load(const struct model *m)
{
	char err[1024];
	struct xdp_infer *x = xdp_infer_load(m, PORT, 0, err, sizeof(err));

	if (!x)
		fail_msg("xdp_infer_load(%s): %s", m->name, err);
	return x;
}

/* --- one frame through the program --------------------------------------------------------- */

struct pkt_fx {
	struct model *m;
	struct kern_ctx *ctx;
	struct xdp_infer *x;
	uint8_t good[2048];
	int good_len;
	uint8_t in[70];
};

static inline void pkt_setup(struct pkt_fx *f)
{
	const struct xdp_infer_cfg *c;

	need_bpf();
	f->m = random_mlp(70, (uint32_t[]){65, 4}, 2, false);
	f->x = load(f->m);
	f->ctx = kern_ctx_create(f->m, 1);
	assert_non_null(f->ctx);
	for (int i = 0; i < 70; i++)
		f->in[i] = (uint8_t)test_rng();
	c = &xdp_infer_get_plan(f->x)->cfg;
	f->good_len = xdp_infer_build_request(f->good, sizeof(f->good), PORT, c->model_id, 7, 70, 1,
					      1, f->in);
	assert_true(f->good_len > 0);
}

static inline void pkt_teardown(struct pkt_fx *f)
{
	kern_ctx_free(f->ctx);
	xdp_infer_free(f->x);
	model_free(f->m);
}

static inline void fix_lengths(uint8_t *p, int len)
{
	uint32_t sum = 0;

	proto_put16(p + 16, (uint16_t)(len - 14));
	proto_put16(p + 38, (uint16_t)(len - 34));
	proto_put16(p + 24, 0);
	for (int i = 14; i < 34; i += 2)
		sum += (uint32_t)p[i] << 8 | p[i + 1];
	while (sum >> 16)
		sum = (sum & 0xffff) + (sum >> 16);
	proto_put16(p + 24, (uint16_t)~sum);
}

/* Run one frame; return the counter deltas, the verdict and the output frame. */
static inline void run_frame(struct pkt_fx *f, const uint8_t *p, int len, uint8_t *out,
			     uint32_t *olen, uint32_t *verdict, uint64_t d[XDP_INFER_ST__COUNT])
{
	uint64_t before[XDP_INFER_ST__COUNT], after[XDP_INFER_ST__COUNT];

	assert_int_equal(xdp_infer_read_stats(f->x, before), 0);
	assert_int_equal(xdp_infer_test_run(f->x, p, (uint32_t)len, out, olen, 1, verdict, NULL),
			 0);
	assert_int_equal(xdp_infer_read_stats(f->x, after), 0);
	for (unsigned k = 0; k < XDP_INFER_ST__COUNT; k++)
		d[k] = after[k] - before[k];
}

/*
 * The program's reply out[0, olen) to the frame req[0, len) is, byte for byte, what
 * proto_frame_udp() frames for the same payload back to req's sender: every Ethernet, IPv4 and
 * UDP header field and both checksums as splitnic-nic and splitnic-host write them.
 */
static inline void expect_protocol_frame(const uint8_t *req, uint32_t len, const uint8_t *out,
					 uint32_t olen)
{
	struct proto_addr q, r;
	uint8_t want[2048];
	const uint8_t *p;
	uint32_t plen, ihl;

	assert_int_equal(proto_frame_parse(req, len, &q, &p, &plen, &ihl), PROTO_FRAME_UDP);
	assert_true(olen >= PROTO_FRAME_HDRS && olen <= sizeof(want));
	memcpy(r.smac, q.dmac, 6);
	memcpy(r.dmac, q.smac, 6);
	r.sip = q.dip;
	r.dip = q.sip;
	r.sport = q.dport;
	r.dport = q.sport;
	memcpy(want + PROTO_FRAME_HDRS, out + PROTO_FRAME_HDRS, olen - PROTO_FRAME_HDRS);
	assert_int_equal(proto_frame_udp(want, &r, olen - PROTO_FRAME_HDRS, false), olen);
	for (uint32_t i = 0; i < PROTO_FRAME_HDRS; i++)
		if (out[i] != want[i])
			fail_msg("reply of %u bytes: header byte %u is 0x%02x, proto_frame_udp "
				 "writes 0x%02x",
				 olen, i, out[i], want[i]);
}

/* A frame with another format or shape: ERROR bad_shape back to its sender, no larger than the
 * request, counted error_bad_shape and nothing else. */
static inline void expect_bad_shape(struct pkt_fx *f, const uint8_t *p, int len, const char *what)
{
	uint64_t d[XDP_INFER_ST__COUNT];
	uint8_t out[4096];
	uint32_t olen = sizeof(out), verdict, code;
	struct proto_msg m;
	char err[256];

	run_frame(f, p, len, out, &olen, &verdict, d);
	if (verdict != XDP_TX)
		fail_msg("%s: verdict %u, want XDP_TX (ERROR bad_shape)", what, verdict);
	for (unsigned k = 0; k < XDP_INFER_ST__COUNT; k++)
		if (d[k] != (k == XDP_INFER_ST_BAD_SHAPE))
			fail_msg("%s: counter %s moved by %lu", what, xdp_infer_stat_name(k),
				 (unsigned long)d[k]);
	assert_int_equal(proto_parse(p + 42, (size_t)len - 42, &m), PROTO_OK);
	if (xdp_infer_parse_error(out, olen, m.request_id, &code, err, sizeof(err)))
		fail_msg("%s: %s", what, err);
	assert_int_equal(code, PROTO_ERR_BAD_SHAPE);
	assert_true(olen <= (uint32_t)len);
	expect_protocol_frame(p, (uint32_t)len, out, olen);
}

/* Run one frame; it must get `want`, be counted under `reason`, and come back unchanged. */
static inline void expect_verdict(struct pkt_fx *f, const uint8_t *p, int len, uint32_t want,
				  unsigned reason, const char *what)
{
	uint64_t before[XDP_INFER_ST__COUNT], after[XDP_INFER_ST__COUNT];
	uint8_t out[4096];
	uint32_t olen = sizeof(out), verdict;

	assert_int_equal(xdp_infer_read_stats(f->x, before), 0);
	assert_int_equal(xdp_infer_test_run(f->x, p, (uint32_t)len, out, &olen, 1, &verdict, NULL),
			 0);
	assert_int_equal(xdp_infer_read_stats(f->x, after), 0);
	if (verdict != want)
		fail_msg("%s: verdict %u, want %u", what, verdict, want);
	for (unsigned k = 0; k < XDP_INFER_ST__COUNT; k++) {
		uint64_t d = after[k] - before[k];

		if (d != (k == reason))
			fail_msg("%s: counter %s moved by %lu (want reason %s)", what,
				 xdp_infer_stat_name(k), (unsigned long)d,
				 xdp_infer_stat_name(reason));
	}
	assert_int_equal(olen, len);
	assert_memory_equal(out, p, (size_t)len);
}

/* At the start of main(): the random generator seeded, and whether BPF can be used here. */
static inline void xdp_fixture_init(void)
{
	const char *c = getenv("CI");

	test_rng_seed(0x9e3779b97f4a7c15ull);
	ci = c && !strcmp(c, "true");
	if (geteuid() != 0) {
		snprintf(no_bpf, sizeof(no_bpf), "not root: BPF_PROG_TEST_RUN needs root");
	} else {
		uint32_t w[] = {3, 2};
		struct model *m = random_mlp(5, w, 2, false);
		char err[1024];
		struct xdp_infer *x = xdp_infer_load(m, PORT, 0, err, sizeof(err));

		if (!x)
			snprintf(no_bpf, sizeof(no_bpf), "BPF unavailable: %.200s", err);
		xdp_infer_free(x);
		model_free(m);
	}
}

#endif /* TESTS_SUPPORT_XDP_FIXTURE_H */
