/* SPDX-License-Identifier: MIT */
/*
 * XDP executor tests on f32 input: models whose first op binarizes an f32 tensor (batch-norms
 * then sign, flattened before or after), served as f32 or as bit-packed requests. The program
 * must give kern_forward's class and scores bit for bit, also for inputs placed at the sign's
 * boundary; requests of another format or shape get ERROR bad_shape, models over the program's
 * limits are refused at load with the reason.
 *
 * Needs root and BPF, as tests/test_xdp.c.
 */
#include "tests/support/xdp_fixture.h"

/* --- f32 input: binarized at the input, served as f32 or bits requests ------------------- */

/* The batch-norms before the first sign of a random f32 model (for boundary inputs). */
struct pre_bn {
	uint32_t nbn, ch, hw;
	bool flat_first;
	double p[2][4][352]; /* [bn][gamma, beta, mean, sd][channel] */
};

/*
 * A random MLP on f32 input (c,h,w): [flatten] batchnorm x nbn (gamma positive, negative or
 * zero) sign [flatten], then binary dense + bias + batchnorm (+ sign) per width.
 */
static struct model *random_f32_mlp(uint32_t c, uint32_t h, uint32_t w, uint32_t nbn,
				    bool flat_first, const uint32_t *widths, uint32_t nw,
				    struct pre_bn *pb)
{
	struct test_gen g = {0};
	char json[4096];
	uint32_t li = 0, n = c * h * w, in = n, ch = flat_first ? n : c;
	size_t jl;

	jl = (size_t)snprintf(json, sizeof(json),
			      "{\"name\": \"f32-%u-%u\", \"input\": {\"shape\": [%u, %u, %u], "
			      "\"dtype\": \"f32\"}, \"layers\": [",
			      n, nbn, c, h, w);
	if (flat_first) {
		jl += (size_t)snprintf(json + jl, sizeof(json) - jl, "{\"type\": \"flatten\"}, ");
		li++;
	}
	if (pb) {
		pb->nbn = nbn;
		pb->ch = ch;
		pb->hw = flat_first ? 1 : h * w;
		pb->flat_first = flat_first;
	}
	for (uint32_t k = 0; k < nbn; k++) {
		for (int q = 0; q < 4; q++) {
			double *v = test_gen_array(&g, li, bn_names[q], "<f8", 1, (uint64_t[]){ch});

			for (uint32_t i = 0; i < ch; i++) {
				double r = test_urand(0, 1);

				v[i] = q == 0	? (r < 0.2   ? 0.0
						   : r < 0.6 ? -test_urand(0.1, 2)
							     : test_urand(0.1, 2))
				       : q == 1 ? (r < 0.2 ? 0.0 : test_urand(-1, 1))
				       : q == 2 ? (r < 0.2 ? 0.0 : test_urand(-1, 1))
						: (r < 0.1 ? 0.0 : test_urand(0.01, 4));
				if (pb && ch <= 352)
					pb->p[k][q][i] = q == 3 ? sqrt(v[i] + 1e-5) : v[i];
			}
		}
		jl += (size_t)snprintf(json + jl, sizeof(json) - jl,
				       "{\"type\": \"batchnorm\", \"eps\": 1e-05}, ");
		li++;
	}
	jl += (size_t)snprintf(json + jl, sizeof(json) - jl, "{\"type\": \"sign\"}");
	li++;
	if (!flat_first && h * w > 1) {
		jl += (size_t)snprintf(json + jl, sizeof(json) - jl, ", {\"type\": \"flatten\"}");
		li++;
	}
	for (uint32_t k = 0; k < nw; k++) {
		uint32_t o = widths[k];

		gen_dense_bn(&g, li, o, in, in);
		jl += (size_t)snprintf(json + jl, sizeof(json) - jl,
				       ", {\"type\": \"dense\", \"out\": %u, \"bias\": true, "
				       "\"binary_weights\": true}, {\"type\": \"batchnorm\", "
				       "\"eps\": 0.0001}",
				       o);
		li += 2;
		if (k + 1 < nw) {
			jl += (size_t)snprintf(json + jl, sizeof(json) - jl,
					       ", {\"type\": \"sign\"}");
			li++;
		}
		in = o;
	}
	snprintf(json + jl, sizeof(json) - jl, "]}");
	return test_model_build(json, &g);
}

static float f32_of(uint32_t b)
{
	float f;

	memcpy(&f, &b, 4);
	return f;
}

/* Where feature i's chain crosses 0 (inverted from the last batch-norm), k ulps away. */
static float near_boundary(const struct pre_bn *pb, uint32_t i, int k)
{
	uint32_t chn = pb->flat_first ? i : i / pb->hw;
	double y = 0;
	float f;

	for (int b = (int)pb->nbn - 1; b >= 0; b--) {
		const double g = pb->p[b][0][chn], be = pb->p[b][1][chn], mu = pb->p[b][2][chn],
			     sd = pb->p[b][3][chn];

		y = g == 0 ? mu : mu + (y - be) * sd / g;
	}
	f = (float)y;
	for (; k > 0; k--)
		f = nextafterf(f, INFINITY);
	for (; k < 0; k++)
		f = nextafterf(f, -INFINITY);
	return f;
}

/* One input value: the hard cases often. */
static float hard_value(const struct pre_bn *pb, uint32_t i)
{
	static const uint32_t nans[] = {0x7fc00000u, 0xffc00000u, 0x7f800001u,
					0xff800001u, 0x7fabcdefu, 0xffffffffu};
	uint64_t r = test_rng();
	float sg = (r >> 20) & 1 ? -1.0f : 1.0f;

	switch (r % 16) {
	case 0:
		return -0.0f;
	case 1:
		return 0.0f;
	case 2:
	case 3:
	case 4:
	case 5:
		return pb && pb->nbn ? near_boundary(pb, i, (int)((r >> 8) % 7) - 3)
				     : f32_of((uint32_t)(r >> 8) % 3) * sg;
	case 6:
		return sg * FLT_TRUE_MIN;
	case 7:
		return sg * f32_of((uint32_t)(r >> 24) & 0x7fffffu);
	case 8:
		return INFINITY;
	case 9:
		return -INFINITY;
	case 10:
		return f32_of(nans[(r >> 8) % 6]);
	case 11:
		return sg * FLT_MAX;
	default:
		return (float)test_urand(-3, 3);
	}
}

/* One request of format fmt (body in wire order); the answer must equal kern_forward(in). */
static void check_fmt(struct xdp_infer *x, const struct model *m, struct kern_ctx *ctx,
		      uint32_t fmt, const void *body, const void *in, uint64_t rid)
{
	const struct xdp_infer_cfg *c = &xdp_infer_get_plan(x)->cfg;
	uint8_t frame[2048], out[4096];
	double cpu[MAXC], got[MAXC];
	uint32_t olen = sizeof(out), verdict, cls, classes = model_classes(m);
	char err[256];
	int len, nc;

	len = xdp_infer_build_request_hdr(frame, sizeof(frame), PORT, c->model_id, rid, fmt,
					  m->input.c, m->input.h, m->input.w, body,
					  xdp_infer_request_hdr_len(x, fmt));
	assert_true(len > 0);
	assert_int_equal(xdp_infer_test_run(x, frame, (uint32_t)len, out, &olen, 1, &verdict, NULL),
			 0);
	if (verdict != XDP_TX)
		fail_msg("%s: request %lu (fmt %u): verdict %u", m->name, (unsigned long)rid, fmt,
			 verdict);
	nc = xdp_infer_parse_response(out, olen, rid, &cls, got, MAXC, err, sizeof(err));
	if (nc < 0)
		fail_msg("%s: request %lu: %s", m->name, (unsigned long)rid, err);
	assert_int_equal(nc, classes);
	assert_int_equal(kern_forward(ctx, in, 1, cpu), 0);
	if (cls != kern_argmax(cpu, classes) || memcmp(cpu, got, classes * sizeof(double))) {
		for (uint32_t k = 0; k < classes; k++)
			print_message("class %u: cpu %.17g xdp %.17g\n", k, cpu[k], got[k]);
		fail_msg("%s: request %lu (fmt %u): class %u, CPU kernels say %u", m->name,
			 (unsigned long)rid, fmt, cls, kern_argmax(cpu, classes));
	}
}

/* The bits a front end sends for x: sign(x) packed (x >= 0 -> 1; NaN -> 0). */
static void pack_signs(const float *x, uint32_t n, uint8_t *out)
{
	double *d = malloc(sizeof(double) * n);

	assert_non_null(d);
	for (uint32_t i = 0; i < n; i++)
		d[i] = x[i];
	proto_bits_pack(d, n, out);
	free(d);
}

/*
 * count random hard inputs as f32 requests (if served) and, for a plain-sign model, as bits
 * requests too; every answer equals kern_forward on the f32 input.
 */
static void check_f32_model(struct model *m, const struct pre_bn *pb, uint32_t count)
{
	uint32_t n = (uint32_t)model_shape_elems(&m->input), verified, insns, jited;
	uint64_t st[XDP_INFER_ST__COUNT], want = 0;
	const struct xdp_infer_cfg *c;
	struct kern_ctx *ctx;
	struct xdp_infer *x;
	uint8_t *bits, *body;
	float *in;

	x = load(m);
	c = &xdp_infer_get_plan(x)->cfg;
	assert_int_equal(c->in_kind, XDP_INFER_IN_F32);
	if (!xdp_infer_prog_size(x, &verified, &insns, &jited))
		print_message("%s: %u inputs (f32 %s, bits %s), %u binary layers, %u classes: "
			      "verifier processed %u instructions\n",
			      m->name, n, c->in_f32 ? "yes" : "no", c->in_bits ? "yes" : "no",
			      c->n_layers, c->classes, verified);
	assert_true(verified < 1000000 / 4);
	ctx = kern_ctx_create(m, 1);
	in = malloc(sizeof(float) * n);
	body = malloc(4u * n);
	bits = calloc(model_words(n), 8);
	assert_non_null(ctx);
	assert_non_null(in);
	assert_non_null(body);
	assert_non_null(bits);
	for (uint32_t it = 0; it < count; it++) {
		for (uint32_t i = 0; i < n; i++)
			in[i] = hard_value(pb, i);
		if (c->in_f32) {
			for (uint32_t i = 0; i < n; i++) {
				uint32_t b;

				memcpy(&b, &in[i], 4);
				for (int k = 0; k < 4; k++)
					body[4 * i + k] = (uint8_t)(b >> (8 * k));
			}
			check_fmt(x, m, ctx, PROTO_FMT_F32, body, in, 2 * it + 1);
			want++;
		}
		if (c->in_bits) {
			pack_signs(in, n, bits);
			/* a sloppy front end's tail bits are ignored */
			if ((it & 1) && n % 64)
				bits[8 * (model_words(n) - 1) + 7] |= 0x80;
			check_fmt(x, m, ctx, PROTO_FMT_BITS, bits, in, 2 * it + 2);
			want++;
		}
	}
	assert_int_equal(xdp_infer_read_stats(x, st), 0);
	assert_int_equal(st[XDP_INFER_ST_ANSWERED], want);
	free(bits);
	free(body);
	free(in);
	kern_ctx_free(ctx);
	xdp_infer_free(x);
}

static void f32_case(uint32_t c, uint32_t h, uint32_t w, uint32_t nbn, bool flat_first,
		     const uint32_t *widths, uint32_t nw, uint32_t count)
{
	static struct pre_bn pb;
	struct model *m;

	need_bpf();
	m = random_f32_mlp(c, h, w, nbn, flat_first, widths, nw, &pb);
	for (uint32_t i = 0; i < m->n_layers && i < 6; i++)
		print_message("  op %u %s\n", i, model_op_name(m->layers[i].op));
	check_f32_model(m, &pb, count);
	model_free(m);
}

/* Batch-norm (gamma > 0, < 0, == 0) before the first sign: f32 requests only. */
static void test_xdp_f32_random(void **state)
{
	f32_case(1, 1, 1, 1, false, (uint32_t[]){63, 5}, 2, 200);
	f32_case(63, 1, 1, 1, false, (uint32_t[]){65, 3}, 2, 100);
	f32_case(65, 1, 1, 2, false, (uint32_t[]){1, 130, 7}, 3, 100);
	f32_case(130, 1, 1, 1, false, (uint32_t[]){63, 10}, 2, 100);
	f32_case(3, 2, 5, 1, false, (uint32_t[]){65, 4}, 2, 100);
	f32_case(2, 3, 3, 1, true, (uint32_t[]){9}, 1, 100);
}

/* A plain sign on the input: f32 and bits requests give the same answers. */
static void test_xdp_bits_input(void **state)
{
	f32_case(130, 1, 1, 0, false, (uint32_t[]){65, 4}, 2, 100);
	f32_case(3, 5, 7, 0, false, (uint32_t[]){63, 3}, 2, 100);
	f32_case(1, 1, 1, 0, false, (uint32_t[]){2}, 1, 50);
	/* wider than one packet of f32: bits only */
	f32_case(1000, 1, 1, 0, false, (uint32_t[]){65, 4}, 2, 50);
}

/* Requests in another format or shape than an f32 model's input: ERROR bad_shape. */
static void test_xdp_f32_refused_requests(void **state)
{
	struct pkt_fx f = {0};
	const struct xdp_infer_cfg *c;
	uint8_t frame[2048], bits[24] = {0}, u8in[130] = {0};
	float in[130] = {0};
	int len;

	need_bpf();
	f.m = random_f32_mlp(130, 1, 1, 1, false, (uint32_t[]){65, 4}, 2, NULL);
	f.x = load(f.m);
	c = &xdp_infer_get_plan(f.x)->cfg;
	assert_true(c->in_f32 && !c->in_bits);
	len = xdp_infer_build_request_fmt(frame, sizeof(frame), PORT, c->model_id, 3,
					  PROTO_FMT_BITS, 130, 1, 1, bits);
	expect_bad_shape(&f, frame, len, "bits request to a model with batch-norm before the sign");
	len = xdp_infer_build_request_fmt(frame, sizeof(frame), PORT, c->model_id, 4, PROTO_FMT_U8,
					  130, 1, 1, u8in);
	expect_bad_shape(&f, frame, len, "u8 request, f32 model");
	len = xdp_infer_build_request_fmt(frame, sizeof(frame), PORT, c->model_id, 5, PROTO_FMT_F32,
					  65, 2, 1, in);
	expect_bad_shape(&f, frame, len, "f32, shape 65x2x1");
	xdp_infer_free(f.x);
	model_free(f.m);
	/* f32 to a u8 model */
	f.m = random_mlp(130, (uint32_t[]){3}, 1, false);
	f.x = load(f.m);
	c = &xdp_infer_get_plan(f.x)->cfg;
	len = xdp_infer_build_request_fmt(frame, sizeof(frame), PORT, c->model_id, 6, PROTO_FMT_F32,
					  130, 1, 1, in);
	expect_bad_shape(&f, frame, len, "f32 request, u8 model");
	len = xdp_infer_build_request_fmt(frame, sizeof(frame), PORT, c->model_id, 7,
					  PROTO_FMT_BITS, 130, 1, 1, bits);
	expect_bad_shape(&f, frame, len, "bits request, u8 model");
	xdp_infer_free(f.x);
	model_free(f.m);
}

/* Every limit at once, for f32 and for bits input; the verifier stays well under 1M. */
static void test_xdp_f32_at_limits(void **state)
{
	static struct pre_bn pb;
	struct model *m;

	need_bpf();
	m = random_f32_mlp(XDP_INFER_MAX_F32_INPUT, 1, 1, 2, false,
			   (uint32_t[]){3, 3, 3, 3, 3, 3, 3, MAXC}, XDP_INFER_MAX_LAYERS, &pb);
	check_f32_model(m, &pb, 20);
	model_free(m);
	m = random_f32_mlp(XDP_INFER_MAX_BITS_INPUT, 1, 1, 0, false,
			   (uint32_t[]){3, 3, 3, 3, 3, 3, 3, MAXC}, XDP_INFER_MAX_LAYERS, NULL);
	check_f32_model(m, NULL, 10);
	model_free(m);
	m = random_f32_mlp(64, 1, 1, 0, false,
			   (uint32_t[]){XDP_INFER_MAX_WIDTH, XDP_INFER_MAX_WIDTH - 1, 5}, 3, NULL);
	check_f32_model(m, NULL, 5);
	model_free(m);
}

static void test_xdp_f32_refusals(void **state)
{
	struct xdp_infer_plan p;
	char err[512];
	struct model *m;

	m = random_f32_mlp(XDP_INFER_MAX_F32_INPUT + 1, 1, 1, 1, false, (uint32_t[]){3}, 1, NULL);
	assert_int_equal(xdp_infer_plan(m, &p, err, sizeof(err)), -E2BIG);
	assert_non_null(strstr(err, "XDP_INFER_MAX_F32_INPUT"));
	model_free(m);
	m = random_f32_mlp(XDP_INFER_MAX_F32_INPUT + 1, 1, 1, 0, false, (uint32_t[]){3}, 1, NULL);
	assert_int_equal(xdp_infer_plan(m, &p, err, sizeof(err)), 0);
	assert_true(!p.cfg.in_f32 && p.cfg.in_bits);
	model_free(m);
	m = random_f32_mlp(XDP_INFER_MAX_BITS_INPUT + 1, 1, 1, 0, false, (uint32_t[]){3}, 1, NULL);
	assert_int_equal(xdp_infer_plan(m, &p, err, sizeof(err)), -E2BIG);
	assert_non_null(strstr(err, "XDP_INFER_MAX_BITS_INPUT"));
	model_free(m);
	/* a hidden layer wider than the limit still names it */
	m = random_f32_mlp(8, 1, 1, 1, false, (uint32_t[]){XDP_INFER_MAX_WIDTH + 1, 2}, 2, NULL);
	assert_int_equal(xdp_infer_plan(m, &p, err, sizeof(err)), -E2BIG);
	assert_non_null(strstr(err, "XDP_INFER_MAX_WIDTH"));
	model_free(m);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
	    cmocka_unit_test(test_xdp_f32_random),
	    cmocka_unit_test(test_xdp_bits_input),
	    cmocka_unit_test(test_xdp_f32_refused_requests),
	    cmocka_unit_test(test_xdp_f32_at_limits),
	    cmocka_unit_test(test_xdp_f32_refusals),
	};

	xdp_fixture_init();
	return cmocka_run_group_tests(tests, NULL, NULL);
}
