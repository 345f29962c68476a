/* SPDX-License-Identifier: MIT */
/*
 * XDP executor tests: the BPF program run through BPF_PROG_TEST_RUN must give exactly
 * kern_forward's class and scores (every bit) on random binary MLPs with odd widths and on the
 * bundled Fashion-MNIST MLP; malformed and foreign packets get the documented verdict, are
 * counted under their reason, and are never answered wrongly; a wrong format or shape is
 * answered ERROR bad_shape (as splitnic-nic and splitnic-host answer it), within the source's
 * ERROR rate; no reply is larger than its request.
 *
 * Needs root and BPF. Outside CI the tests skip with a message when either is missing; under
 * CI=true they fail instead (CI has both).
 */
#include "tests/support/xdp_fixture.h"

/* One request through the program; the answer must equal kern_forward bit for bit. */
static void check_one(struct xdp_infer *x, const struct model *m, struct kern_ctx *ctx,
		      const uint8_t *in, uint64_t rid)
{
	const struct xdp_infer_cfg *c = &xdp_infer_get_plan(x)->cfg;
	uint8_t frame[2048], out[4096];
	double cpu[MAXC], got[MAXC];
	uint32_t olen = sizeof(out), verdict, cls, classes = model_classes(m);
	char err[256];
	int len, nc;

	len = xdp_infer_build_request_hdr(frame, sizeof(frame), PORT, c->model_id, rid,
					  PROTO_FMT_U8, m->input.c, m->input.h, m->input.w, in,
					  xdp_infer_request_hdr_len(x, PROTO_FMT_U8));
	assert_true(len > 0);
	assert_int_equal(xdp_infer_test_run(x, frame, (uint32_t)len, out, &olen, 1, &verdict, NULL),
			 0);
	assert_int_equal(verdict, XDP_TX);
	expect_protocol_frame(frame, (uint32_t)len, out, olen);
	nc = xdp_infer_parse_response(out, olen, rid, &cls, got, MAXC, err, sizeof(err));
	if (nc < 0)
		fail_msg("%s: request %lu: %s", m->name, (unsigned long)rid, err);
	assert_int_equal(nc, classes);
	assert_int_equal(kern_forward(ctx, in, 1, cpu), 0);
	if (cls != kern_argmax(cpu, classes) || memcmp(cpu, got, classes * sizeof(double))) {
		for (uint32_t k = 0; k < classes; k++)
			print_message("class %u: cpu %.17g xdp %.17g\n", k, cpu[k], got[k]);
		fail_msg("%s: request %lu: class %u, CPU kernels say %u", m->name,
			 (unsigned long)rid, cls, kern_argmax(cpu, classes));
	}
}

static void check_random_model(uint32_t n, const uint32_t *widths, uint32_t nw, bool final_sign,
			       uint32_t count)
{
	struct model *m;
	struct kern_ctx *ctx;
	struct xdp_infer *x;
	uint64_t st[XDP_INFER_ST__COUNT];
	uint32_t verified, insns, jited;
	uint8_t *in;

	need_bpf();
	m = random_mlp(n, widths, nw, final_sign);
	x = load(m);
	if (!xdp_infer_prog_size(x, &verified, &insns, &jited))
		print_message("%s: %u binary layers, %u classes: verifier processed %u "
			      "instructions\n",
			      m->name, nw, model_classes(m), verified);
	ctx = kern_ctx_create(m, 1);
	in = malloc(n);
	assert_non_null(ctx);
	assert_non_null(in);
	for (uint32_t i = 0; i < count; i++) {
		for (uint32_t j = 0; j < n; j++) {
			uint64_t r = test_rng();

			/* extremes often, so the bit-planes and the dot range ends are hit */
			in[j] = (r & 3) == 0 ? 0 : (r & 3) == 1 ? 255 : (uint8_t)(r >> 8);
		}
		check_one(x, m, ctx, in, i + 1);
	}
	assert_int_equal(xdp_infer_read_stats(x, st), 0);
	assert_int_equal(st[XDP_INFER_ST_ANSWERED], count);
	free(in);
	kern_ctx_free(ctx);
	xdp_infer_free(x);
	model_free(m);
}

static void test_xdp_random_width1_hidden(void **state)
{
	check_random_model(63, (uint32_t[]){1, 65, 3}, 3, false, 60);
}

static void test_xdp_random_input1(void **state)
{
	check_random_model(1, (uint32_t[]){63, 5}, 2, false, 60);
}

static void test_xdp_random_odd_widths(void **state)
{
	check_random_model(130, (uint32_t[]){65, 63, 130, 10}, 4, false, 60);
}

static void test_xdp_random_input65(void **state)
{
	check_random_model(65, (uint32_t[]){130, 7}, 2, false, 60);
}

/* One u8 layer only: the final dot spans [-255 n, 255 n]. */
static void test_xdp_random_single_u8_layer(void **state)
{
	check_random_model(63, (uint32_t[]){4}, 1, false, 60);
}

/* The model ends with sign: the last layer has thresholds and the scores are +-1. */
static void test_xdp_random_final_sign(void **state)
{
	check_random_model(65, (uint32_t[]){63, 9}, 2, true, 60);
}

/* Every limit at once: the largest input, layer count and class count; then the widest layer. */
static void test_xdp_random_at_limits(void **state)
{
	check_random_model(XDP_INFER_MAX_INPUT, (uint32_t[]){3, 3, 3, 3, 3, 3, 3, MAXC},
			   XDP_INFER_MAX_LAYERS, false, 20);
	check_random_model(64, (uint32_t[]){XDP_INFER_MAX_WIDTH, XDP_INFER_MAX_WIDTH - 1, 5}, 3,
			   false, 10);
}

static void test_xdp_bundled_mlp(void **state)
{
	char exe[512], path[600], err[512];
	struct idx_data img = {0};
	struct model *m;
	struct kern_ctx *ctx;
	struct xdp_infer *x;
	ssize_t n;
	char *slash;

	need_bpf();
	n = readlink("/proc/self/exe", exe, sizeof(exe) - 1);
	assert_true(n > 0);
	exe[n] = '\0';
	slash = strrchr(exe, '/');
	*slash = '\0';
	snprintf(path, sizeof(path), "%s/../models/fmnist-bmlp.snm", exe);
	if (access(path, R_OK)) {
		if (ci)
			fail_msg("bundled model %s missing (make models)", path);
		print_message("skip: bundled model %s missing (make models)\n", path);
		skip();
	}
	m = model_load(path, err, sizeof(err));
	if (!m)
		fail_msg("%s", err);
	if (idx_load(FMNIST_IMAGES, &img, err, sizeof(err)))
		fail_msg("%s", err);
	x = load(m);
	ctx = kern_ctx_create(m, 1);
	assert_non_null(ctx);
	assert_int_equal(img.item_bytes, model_shape_bytes(&m->input));
	for (uint32_t i = 0; i < 2000 && i < img.count; i++)
		check_one(x, m, ctx, img.data + (size_t)i * img.item_bytes, i + 1);
	kern_ctx_free(ctx);
	xdp_infer_free(x);
	idx_free(&img);
	model_free(m);
}

/* A HEALTH probe of plen bytes asking role through the program: its verdict, the report in m. */
static uint8_t probe_out[2048]; /* the last report (m->data points into it) */

static uint32_t probe(struct xdp_infer *x, uint32_t plen, uint8_t role, struct proto_msg *m,
		      uint32_t *rlen)
{
	struct proto_addr a = {.smac = {2, 0, 0, 0, 0, 1},
			       .dmac = {2, 0, 0, 0, 0, 2},
			       .sip = 0x0a000002,
			       .dip = 0x0a000001,
			       .sport = 40000,
			       .dport = PORT};
	uint8_t frame[2048], *out = probe_out;
	uint32_t olen = sizeof(probe_out), verdict, len, ihl;
	struct proto_addr back;
	const uint8_t *p;

	assert_int_equal(proto_build_health_probe(frame + PROTO_FRAME_HDRS, 1500, 77, plen),
			 (int)plen);
	frame[PROTO_FRAME_HDRS + PROTO_COMMON_LEN + 2] = role;
	len = proto_frame_udp(frame, &a, plen, false);
	assert_int_equal(xdp_infer_test_run(x, frame, len, out, &olen, 1, &verdict, NULL), 0);
	if (verdict != XDP_TX)
		return verdict;
	expect_protocol_frame(frame, len, out, olen);
	assert_int_equal(proto_frame_parse(out, olen, &back, &p, rlen, &ihl), PROTO_FRAME_UDP);
	assert_int_equal(back.dip, a.sip);
	assert_int_equal(back.dport, a.sport);
	assert_memory_equal(back.dmac, a.smac, 6);
	assert_int_equal(proto_parse(p, *rlen, m), PROTO_OK);
	return verdict;
}

/* HEALTH in the program: answered in place for any role or XDP's, never longer than the probe;
 * other roles and short probes are not answered. */
static void test_xdp_health(void **state)
{
	static const uint32_t widths[] = {32, 10};
	struct proto_health_model e;
	struct model *mdl;
	struct xdp_infer *x;
	struct proto_msg m;
	uint64_t st[XDP_INFER_ST__COUNT];
	char ident[PROTO_HEALTH_IDENT_LEN + 1];
	uint32_t rlen;

	need_bpf();
	mdl = random_mlp(784, widths, 2, false);
	x = load(mdl);
	for (uint8_t role = 0; role <= PROTO_ROLE_XDP; role += PROTO_ROLE_XDP) {
		assert_int_equal(probe(x, 1400, role, &m, &rlen), XDP_TX);
		assert_int_equal(m.type, PROTO_HEALTH);
		assert_int_equal(m.health.kind, PROTO_HEALTH_REPORT);
		assert_int_equal(m.health.role, PROTO_ROLE_XDP);
		assert_int_equal(m.health.state, PROTO_HEALTH_SERVING);
		assert_int_equal(m.request_id, 77);
		assert_int_equal(m.health.n_models, 1);
		proto_health_ident(&m, ident);
		if (!strstr(ident, "splitnic-xdp"))
			fail_msg("identity '%s'", ident);
		proto_health_model_get(&m, 0, &e);
		assert_int_equal(e.model_id, proto_model_id(mdl->name));
		assert_int_equal(e.mode, PROTO_MODE_WHOLE);
		assert_int_equal(e.in_fmt, PROTO_FMT_U8);
		assert_int_equal(e.c * e.h * e.w, 784);
		assert_int_equal(e.classes, 10);
		assert_string_equal(e.name, mdl->name);
	}
	/* a probe too short for a model entry: the identity alone, truncated, as long as asked */
	assert_int_equal(probe(x, 80, 0, &m, &rlen), XDP_TX);
	assert_int_equal(rlen, 80);
	assert_int_equal(m.health.n_models, 0);
	assert_int_equal(m.health.flags, PROTO_HEALTH_F_TRUNCATED);
	assert_int_equal(probe(x, 128, 0, &m, &rlen), XDP_TX);
	assert_int_equal(rlen, 128);
	assert_int_equal(m.health.n_models, 1);
	assert_int_equal(probe(x, 76, 0, &m, &rlen), XDP_DROP);
	assert_int_equal(probe(x, 1400, PROTO_ROLE_HOST, &m, &rlen), XDP_PASS);
	assert_int_equal(probe(x, 1400, PROTO_ROLE_SERVE, &m, &rlen), XDP_PASS);
	assert_int_equal(xdp_infer_read_stats(x, st), 0);
	assert_int_equal(st[XDP_INFER_ST_HEALTH], 4);
	assert_int_equal(st[XDP_INFER_ST_HEALTH_SHORT], 1);
	assert_int_equal(st[XDP_INFER_ST_HEALTH_PASS], 2);
	xdp_infer_free(x);
	model_free(mdl);
}

/*
 * Every reply's Ethernet/IPv4/UDP headers are proto_frame_udp()'s whatever the request's carried:
 * a REQUEST with TOS, an identification, no DF and TTL 3 gets a RESPONSE, and in another shape
 * an ERROR, framed exactly as the host's framer frames them (check_one, expect_bad_shape and the
 * HEALTH probes compare every other reply the same way).
 */
static void test_xdp_reply_frame_is_protocol_frame(void **state)
{
	uint64_t d[XDP_INFER_ST__COUNT];
	uint8_t p[2048], out[4096];
	uint32_t olen = sizeof(out), verdict, cls;
	double cpu[MAXC], got[MAXC];
	struct pkt_fx f = {0};
	char err[256];

	pkt_setup(&f);
	memcpy(p, f.good, (size_t)f.good_len);
	p[15] = 0xb8;		     /* DSCP EF */
	proto_put16(p + 18, 0x1234); /* identification */
	proto_put16(p + 20, 0);	     /* DF clear */
	p[22] = 3;		     /* TTL */
	fix_lengths(p, f.good_len);
	run_frame(&f, p, f.good_len, out, &olen, &verdict, d);
	assert_int_equal(verdict, XDP_TX);
	assert_int_equal(d[XDP_INFER_ST_ANSWERED], 1);
	expect_protocol_frame(p, (uint32_t)f.good_len, out, olen);
	if (xdp_infer_parse_response(out, olen, 7, &cls, got, MAXC, err, sizeof(err)) != 4)
		fail_msg("request with TOS, id, TTL 3: %s", err);
	assert_int_equal(kern_forward(f.ctx, f.in, 1, cpu), 0);
	assert_int_equal(cls, kern_argmax(cpu, 4));
	assert_memory_equal(cpu, got, 4 * sizeof(double));
	proto_put32(p + 42 + 36, 7), proto_put32(p + 42 + 40, 10); /* 7x10x1 */
	expect_bad_shape(&f, p, f.good_len, "shape 7x10x1, request with TOS, id, TTL 3");
	pkt_teardown(&f);
}

/* Models the executor must refuse, each with a message naming the limit. */
static void test_xdp_budget_refusals(void **state)
{
	struct xdp_infer_plan p;
	char err[512];
	struct model *m;

	/* one u8 layer on 1024 inputs: table of 2 x (2*255*1024+1) entries is fine ... */
	m = random_mlp(1024, (uint32_t[]){2}, 1, false);
	assert_int_equal(xdp_infer_plan(m, &p, err, sizeof(err)), 0);
	model_free(m);
	/* ... 5 classes are not */
	m = random_mlp(1024, (uint32_t[]){5}, 1, false);
	assert_int_equal(xdp_infer_plan(m, &p, err, sizeof(err)), -E2BIG);
	assert_non_null(strstr(err, "XDP_INFER_MAX_TABLE"));
	model_free(m);
	/* more input than one packet carries */
	m = random_mlp(XDP_INFER_MAX_INPUT + 1, (uint32_t[]){3, 2}, 2, false);
	assert_int_equal(xdp_infer_plan(m, &p, err, sizeof(err)), -E2BIG);
	assert_non_null(strstr(err, "one packet's input"));
	model_free(m);
	/* a hidden layer wider than the per-layer limit */
	m = random_mlp(8, (uint32_t[]){XDP_INFER_MAX_WIDTH + 1, 2}, 2, false);
	assert_int_equal(xdp_infer_plan(m, &p, err, sizeof(err)), -E2BIG);
	assert_non_null(strstr(err, "XDP_INFER_MAX_WIDTH"));
	model_free(m);
	/* too many classes */
	m = random_mlp(8, (uint32_t[]){4, MAXC + 1}, 2, false);
	assert_int_equal(xdp_infer_plan(m, &p, err, sizeof(err)), -E2BIG);
	assert_non_null(strstr(err, "XDP_INFER_MAX_CLASSES"));
	model_free(m);
}

/* --- malformed and foreign packets ----------------------------------------------------- */

static void test_xdp_malformed(void **state)
{
	struct pkt_fx f = {0};
	uint8_t p[2048];
	int len;

	pkt_setup(&f);
	check_one(f.x, f.m, f.ctx, f.in, 1);
#define MUT(stmt, want, reason, what)                                                              \
	do {                                                                                       \
		memcpy(p, f.good, (size_t)f.good_len);                                             \
		len = f.good_len;                                                                  \
		stmt;                                                                              \
		expect_verdict(&f, p, len, want, reason, what);                                    \
	} while (0)
	/* not ours: other traffic, passed */
	MUT(proto_put16(p + 12, 0x86dd), XDP_PASS, XDP_INFER_ST_OTHER, "IPv6 ethertype");
	MUT(proto_put16(p + 36, PORT + 1), XDP_PASS, XDP_INFER_ST_OTHER, "other UDP port");
	MUT(p[23] = 6, XDP_PASS, XDP_INFER_ST_OTHER, "TCP");
	MUT(len = 40, XDP_PASS, XDP_INFER_ST_OTHER, "frame shorter than its UDP header");
	/* IP layer oddities, passed to the stack */
	MUT(p[14] = 0x46, XDP_PASS, XDP_INFER_ST_IP_OPTS, "IPv4 options");
	MUT(proto_put16(p + 20, 0x2000), XDP_PASS, XDP_INFER_ST_IP_OPTS, "IPv4 more-fragments");
	MUT(proto_put16(p + 38, 4), XDP_PASS, XDP_INFER_ST_IP_OPTS, "UDP length below 8");
	MUT((len -= 10, proto_put16(p + 38, (uint16_t)(len - 24))), XDP_PASS, XDP_INFER_ST_IP_OPTS,
	    "UDP length beyond the frame");
	/* malformed splitnic datagrams: dropped, counted per parser verdict */
	MUT(p[42] = 'X', XDP_DROP, XDP_INFER_ST_MALFORMED + PROTO_BAD_MAGIC, "bad magic");
	MUT(p[44] = 2, XDP_DROP, XDP_INFER_ST_MALFORMED + PROTO_BAD_VERSION, "bad version");
	MUT(p[45] = 9, XDP_DROP, XDP_INFER_ST_MALFORMED + PROTO_BAD_TYPE, "bad type");
	MUT(proto_put16(p + 46, 66), XDP_DROP, XDP_INFER_ST_MALFORMED + PROTO_BAD_HDR_LEN,
	    "hdr_len not a multiple of 4");
	MUT((len = 42 + 20, fix_lengths(p, len)), XDP_DROP,
	    XDP_INFER_ST_MALFORMED + PROTO_BAD_SHORT, "shorter than the common header");
	MUT((len -= 3, fix_lengths(p, len)), XDP_DROP, XDP_INFER_ST_MALFORMED + PROTO_BAD_TRUNCATED,
	    "truncated data");
	MUT((len += 8, fix_lengths(p, len)), XDP_DROP, XDP_INFER_ST_MALFORMED + PROTO_BAD_TRAILING,
	    "trailing bytes");
	MUT(proto_put32(p + 42 + 24, 71), XDP_DROP, XDP_INFER_ST_MALFORMED + PROTO_BAD_FRAG,
	    "total_len disagrees with frag_len (misaligned fragment)");
	MUT(p[42 + 32] = 77, XDP_DROP, XDP_INFER_ST_MALFORMED + PROTO_BAD_FORMAT, "unknown format");
	MUT(proto_put32(p + 42 + 36, 2), XDP_DROP, XDP_INFER_ST_MALFORMED + PROTO_BAD_SHAPE,
	    "count != C*H*W");
	/* well-formed but not served here: passed for a host server to answer */
	MUT(proto_put32(p + 42 + 8, 0x1234567), XDP_PASS, XDP_INFER_ST_OTHER_MODEL,
	    "another model id");
	/* a wrong shape or format: ERROR bad_shape, as every executor answers it */
	memcpy(p, f.good, (size_t)f.good_len);
	proto_put32(p + 42 + 36, 35), proto_put32(p + 42 + 48, 35), proto_put32(p + 42 + 24, 35);
	proto_put16(p + 42 + 6, 35), len = 42 + 64 + 35, fix_lengths(p, len);
	expect_bad_shape(&f, p, len, "shape 35x1x1 for a 70x1x1 model");
	memcpy(p, f.good, (size_t)f.good_len);
	proto_put32(p + 42 + 36, 7), proto_put32(p + 42 + 40, 10); /* 7x10x1: the count, 70 */
	expect_bad_shape(&f, p, f.good_len, "shape 7x10x1 for a 70x1x1 model");
	memcpy(p, f.good, (size_t)f.good_len);
	proto_put32(p + 42 + 24, 140), proto_put16(p + 42 + 6, 140), p[42 + 32] = PROTO_FMT_FP16;
	len = 42 + 64 + 140, fix_lengths(p, len);
	expect_bad_shape(&f, p, len, "fp16 tensor");
	MUT((proto_put32(p + 42 + 24, 140), proto_put16(p + 42 + 6, 64),
	     p[42 + 32] = PROTO_FMT_FP16, len = 42 + 64 + 64, fix_lengths(p, len)),
	    XDP_PASS, XDP_INFER_ST_FRAGMENT, "first fragment of a larger message");
	{
		struct proto_msg m;
		double sc[2] = {1, 2};
		uint8_t body[16];

		proto_msg_init(&m, PROTO_RESPONSE, 0, 9);
		m.resp.num_classes = 2;
		m.resp.score_fmt = PROTO_FMT_F64;
		proto_le_put_f64(body, sc[0]);
		proto_le_put_f64(body + 8, sc[1]);
		MUT((len = 42 + proto_build(&m, body, 16, p + 42, sizeof(p) - 42),
		     fix_lengths(p, len)),
		    XDP_PASS, XDP_INFER_ST_NOT_REQUEST, "a RESPONSE");
	}
#undef MUT
	check_one(f.x, f.m, f.ctx, f.in, 2);
	pkt_teardown(&f);
}

/*
 * Random corruption of a valid request: whatever the program does, an answer (XDP_TX) must be
 * the CPU kernels' answer for the bytes it read, and anything the parser rejects is dropped.
 */
static void test_xdp_mutations_never_wrong(void **state)
{
	struct pkt_fx f = {0};
	uint8_t p[2048], out[4096];
	uint32_t olen, verdict, cls, tx = 0, drop = 0, pass = 0;
	double cpu[MAXC], got[MAXC];
	char err[256];
	struct proto_msg m;

	pkt_setup(&f);
	for (int it = 0; it < 3000; it++) {
		int len = f.good_len, nmut = 1 + (int)(test_rng() % 3);

		memcpy(p, f.good, (size_t)len);
		for (int k = 0; k < nmut; k++) {
			/* mostly the splitnic headers, sometimes IP/UDP lengths or the data */
			static const uint32_t ipf[] = {14, 16, 17, 20, 21, 23, 38, 39};
			uint64_t r = test_rng();
			uint32_t at = (r & 3)	? 42 + (uint32_t)(r >> 8) % 64
				      : (r & 4) ? ipf[(r >> 8) % 8]
						: 106 + (uint32_t)(r >> 8) % 70;

			p[at] ^= (uint8_t)(1u << ((r >> 40) % 8));
		}
		olen = sizeof(out);
		assert_int_equal(
		    xdp_infer_test_run(f.x, p, (uint32_t)len, out, &olen, 1, &verdict, NULL), 0);
		if (verdict == XDP_TX) {
			tx++;
			/* it was a valid request; recompute from what it carried */
			assert_int_equal(proto_parse(p + 42, (size_t)len - 42, &m), PROTO_OK);
			assert_int_equal(m.type, PROTO_REQUEST);
			if (!proto_input_matches(&m.tensor, PROTO_FMT_U8, 70, 1, 1)) {
				uint32_t code;

				if (xdp_infer_parse_error(out, olen, m.request_id, &code, err,
							  sizeof(err)))
					fail_msg("mutation %d: %s", it, err);
				assert_int_equal(code, PROTO_ERR_BAD_SHAPE);
				continue;
			}
			assert_int_equal(m.frag_len, 70);
			if (xdp_infer_parse_response(out, olen, m.request_id, &cls, got, MAXC, err,
						     sizeof(err)) < 0)
				fail_msg("mutation %d: %s", it, err);
			assert_int_equal(kern_forward(f.ctx, m.data, 1, cpu), 0);
			assert_int_equal(cls, kern_argmax(cpu, 4));
			assert_memory_equal(cpu, got, 4 * sizeof(double));
		} else {
			assert_int_equal(olen, len);
			assert_memory_equal(out, p, (size_t)len);
			if (verdict == XDP_DROP) {
				drop++;
				/* malformed, or an ERROR over the source's rate */
				if (proto_parse(p + 42, (size_t)len - 42, &m) == PROTO_OK)
					assert_false(
					    proto_input_matches(&m.tensor, PROTO_FMT_U8, 70, 1, 1));
			} else {
				assert_int_equal(verdict, XDP_PASS);
				pass++;
			}
		}
	}
	print_message("mutations: %u answered, %u dropped, %u passed\n", tx, drop, pass);
	assert_true(tx > 0 && drop > 0 && pass > 0);
	pkt_teardown(&f);
}

/* ERROR bad_shape is rate-limited per source: a burst, then none until the bucket refills. */
static void test_xdp_error_rate(void **state)
{
	struct proto_trust_cfg trust = {0};
	struct pkt_fx f = {0};
	uint64_t d[XDP_INFER_ST__COUNT];
	uint8_t p[2048], out[4096];
	uint32_t olen, verdict;
	char err[1024];
	int len;

	pkt_setup(&f);
	xdp_infer_free(f.x);
	proto_trust_set_rate(&trust, 1, 2); /* 1/s, 2 at once */
	f.x = xdp_infer_load_trust(f.m, PORT, 0, &trust, err, sizeof(err));
	if (!f.x)
		fail_msg("xdp_infer_load_trust: %s", err);
	memcpy(p, f.good, (size_t)f.good_len);
	proto_put32(p + 42 + 36, 7), proto_put32(p + 42 + 40, 10); /* 7x10x1 */
	len = f.good_len;
	expect_bad_shape(&f, p, len, "first bad shape");
	expect_bad_shape(&f, p, len, "second bad shape");
	olen = sizeof(out);
	run_frame(&f, p, len, out, &olen, &verdict, d);
	assert_int_equal(verdict, XDP_DROP);
	assert_int_equal(d[XDP_INFER_ST_ERR_LIMITED], 1);
	assert_int_equal(d[XDP_INFER_ST_BAD_SHAPE], 0);
	proto_put32(p + 26, 0x0a000063); /* another source (10.0.0.99): its own bucket */
	fix_lengths(p, len);
	olen = sizeof(out);
	run_frame(&f, p, len, out, &olen, &verdict, d);
	assert_int_equal(verdict, XDP_TX);
	assert_int_equal(d[XDP_INFER_ST_BAD_SHAPE], 1);
	/* valid requests are never limited */
	for (int i = 0; i < 5; i++)
		check_one(f.x, f.m, f.ctx, f.in, 10 + (uint64_t)i);
	pkt_teardown(&f);
}

/* A RESPONSE larger than its REQUEST (8 u8 inputs, 20 classes: 72 bytes in, 240 out) is not
 * sent: passed to the stack; the same REQUEST with its header padded to 256 bytes is answered. */
static void test_xdp_no_larger_reply(void **state)
{
	uint64_t d[XDP_INFER_ST__COUNT];
	uint8_t in[8] = {1, 2, 3, 4, 5, 6, 7, 8}, frame[2048], out[4096];
	uint32_t olen = sizeof(out), verdict, cls;
	struct pkt_fx f = {0};
	struct proto_msg m;
	double got[MAXC];
	char err[256];
	int len, n;

	need_bpf();
	f.m = random_mlp(8, (uint32_t[]){16, 20}, 2, false);
	f.x = load(f.m);
	len = xdp_infer_build_request(frame, sizeof(frame), PORT, 0, 5, 8, 1, 1, in);
	assert_true(len > 0);
	run_frame(&f, frame, len, out, &olen, &verdict, d);
	assert_int_equal(verdict, XDP_PASS);
	assert_int_equal(d[XDP_INFER_ST_LARGER], 1);
	assert_int_equal(olen, len);
	assert_memory_equal(out, frame, (size_t)len);
	proto_msg_init(&m, PROTO_REQUEST, 0, 6);
	proto_msg_set_tensor(&m, PROTO_FMT_U8, 8, 1, 1, 0, 0);
	m.hdr_len = PROTO_MAX_HDR_LEN;
	n = proto_build(&m, in, 8, frame + 42, sizeof(frame) - 42);
	assert_true(n > 0);
	len = 42 + n;
	fix_lengths(frame, len);
	olen = sizeof(out);
	run_frame(&f, frame, len, out, &olen, &verdict, d);
	assert_int_equal(verdict, XDP_TX);
	assert_int_equal(d[XDP_INFER_ST_ANSWERED], 1);
	if (xdp_infer_parse_response(out, olen, 6, &cls, got, MAXC, err, sizeof(err)) != 20)
		fail_msg("padded request: %s", err);
	assert_true(olen <= (uint32_t)len);
	xdp_infer_free(f.x);
	model_free(f.m);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
	    cmocka_unit_test(test_xdp_random_width1_hidden),
	    cmocka_unit_test(test_xdp_random_input1),
	    cmocka_unit_test(test_xdp_random_odd_widths),
	    cmocka_unit_test(test_xdp_random_input65),
	    cmocka_unit_test(test_xdp_random_single_u8_layer),
	    cmocka_unit_test(test_xdp_random_final_sign),
	    cmocka_unit_test(test_xdp_random_at_limits),
	    cmocka_unit_test(test_xdp_bundled_mlp),
	    cmocka_unit_test(test_xdp_health),
	    cmocka_unit_test(test_xdp_reply_frame_is_protocol_frame),
	    cmocka_unit_test(test_xdp_budget_refusals),
	    cmocka_unit_test(test_xdp_malformed),
	    cmocka_unit_test(test_xdp_mutations_never_wrong),
	    cmocka_unit_test(test_xdp_error_rate),
	    cmocka_unit_test(test_xdp_no_larger_reply),
	};

	xdp_fixture_init();
	return cmocka_run_group_tests(tests, NULL, NULL);
}
