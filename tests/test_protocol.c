// SPDX-License-Identifier: MIT
/*
 * protocol/: build and parse of every message type and tensor format, the verdict of every
 * truncation point, field checks, helpers, the ERROR cut to fit (the trust policy's own tests:
 * tests/test_trust.c). test_proto_pcap writes a capture of sample
 * messages to $PROTO_PCAP_OUT (tests/integration/test_dissector.sh decodes it with tshark), or to a
 * temporary file it removes.
 */
#include <errno.h>
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

#include "protocol/frame.h"
#include "protocol/proto.h"

#define BUF 70000

static uint8_t buf[BUF];
static uint8_t body[BUF];

static void fill(uint8_t *p, size_t n, uint32_t seed)
{
	for (size_t i = 0; i < n; i++) {
		seed = seed * 1103515245u + 12345u;
		p[i] = (uint8_t)(seed >> 16);
	}
}

/* One datagram carrying the whole message; checks the common fields on the way back. */
static void roundtrip(const struct proto_msg *m, const void *data, size_t len,
		      struct proto_msg *out)
{
	int n = proto_build(m, data, len, buf, sizeof(buf));

	assert_int_equal(n, m->hdr_len + len);
	assert_int_equal(proto_parse(buf, (size_t)n, out), PROTO_OK);
	assert_int_equal(out->type, m->type);
	assert_int_equal(out->version, PROTO_VERSION);
	assert_int_equal(out->model_id, m->model_id);
	assert_true(out->request_id == m->request_id);
	assert_int_equal(out->total_len, len);
	assert_int_equal(out->frag_off, 0);
	assert_int_equal(out->frag_len, len);
	assert_ptr_equal(out->data, buf + m->hdr_len);
	assert_memory_equal(out->data, data, len);
}

static void test_proto_request_formats(void **state)
{
	static const unsigned fmts[] = {PROTO_FMT_U8,	PROTO_FMT_F32,	PROTO_FMT_FP16,
					PROTO_FMT_INT8, PROTO_FMT_BITS, PROTO_FMT_F64};
	struct proto_msg m, out;

	for (size_t i = 0; i < sizeof(fmts) / sizeof(fmts[0]); i++) {
		size_t len;

		proto_msg_init(&m, PROTO_REQUEST, 0xdeadbeef, 0x0102030405060708ull + i);
		proto_msg_set_tensor(&m, fmts[i], 3, 5, 7, 0.125f, -12);
		len = proto_msg_body_len(&m);
		fill(body, len, (uint32_t)i);
		if (fmts[i] == PROTO_FMT_BITS) /* 105 elements: the last word's tail bits are 0 */
			body[len - 1] = 0, body[len - 2] = 0, body[len - 3] &= 0x01;
		roundtrip(&m, body, len, &out);
		assert_int_equal(out.tensor.fmt, fmts[i]);
		assert_int_equal(out.tensor.c, 3);
		assert_int_equal(out.tensor.h, 5);
		assert_int_equal(out.tensor.w, 7);
		assert_int_equal(out.tensor.count, 105);
		assert_int_equal(out.tensor.layer, 0);
		if (fmts[i] == PROTO_FMT_INT8) {
			assert_true(proto_f32_from_bits(out.tensor.scale_bits) == 0.125f);
			assert_int_equal(out.tensor.zero_point, -12);
		} else {
			assert_int_equal(out.tensor.scale_bits, 0);
			assert_int_equal(out.tensor.zero_point, 0);
		}
	}
	assert_int_equal(proto_fmt_bytes(PROTO_FMT_BITS, 105), 16);
	assert_int_equal(proto_fmt_bytes(PROTO_FMT_BITS, 64), 8);
	assert_int_equal(proto_fmt_bytes(PROTO_FMT_BITS, 65), 16);
	assert_int_equal(proto_fmt_bytes(PROTO_FMT_FP16, 3), 6);
}

static void test_proto_tensor_values(void **state)
{
	/* f32 / f64 / fp16 elements survive the trip bit for bit, in little-endian. */
	static const double vals[] = {0.0, -0.0, 1.0, -2.5, 1e-300, 3.0e38, INFINITY, -INFINITY};
	size_t n = sizeof(vals) / sizeof(vals[0]);
	struct proto_msg m, out;

	proto_msg_init(&m, PROTO_REQUEST, 1, 2);
	proto_msg_set_tensor(&m, PROTO_FMT_F64, (uint32_t)n, 1, 1, 0, 0);
	for (size_t i = 0; i < n; i++)
		proto_le_put_f64(body + 8 * i, vals[i]);
	roundtrip(&m, body, 8 * n, &out);
	for (size_t i = 0; i < n; i++) {
		double v = proto_le_get_f64(out.data + 8 * i);

		assert_memory_equal(&v, &vals[i], sizeof(v));
	}
	assert_int_equal(body[8 * 2 + 7], 0x3f); /* 1.0 = 0x3ff0...: high byte last */

	proto_msg_set_tensor(&m, PROTO_FMT_F32, (uint32_t)n, 1, 1, 0, 0);
	for (size_t i = 0; i < n; i++)
		proto_le_put_f32(body + 4 * i, (float)vals[i]);
	roundtrip(&m, body, 4 * n, &out);
	for (size_t i = 0; i < n; i++)
		assert_true(proto_le_get_f32(out.data + 4 * i) == (float)vals[i]);
}

static void test_proto_fp16(void **state)
{
	assert_int_equal(proto_f32_to_fp16(1.0f), 0x3c00);
	assert_int_equal(proto_f32_to_fp16(-2.0f), 0xc000);
	assert_int_equal(proto_f32_to_fp16(65504.0f), 0x7bff);
	assert_int_equal(proto_f32_to_fp16(65536.0f), 0x7c00);
	assert_int_equal(proto_f32_to_fp16(5.9604645e-8f), 0x0001);
	assert_int_equal(proto_f32_to_fp16(1.0f + 1.0f / 2048), 0x3c00); /* tie to even */
	assert_int_equal(proto_f32_to_fp16(1.0f + 3.0f / 2048), 0x3c02);
	assert_int_equal(proto_f32_to_fp16(0.0f), 0);
	assert_true(isnan(proto_fp16_to_f32(proto_f32_to_fp16(NAN))));
	/* Every finite half converts to float and back unchanged. */
	for (uint32_t h = 0; h < 0x10000; h++) {
		if ((h & 0x7c00) == 0x7c00 && (h & 0x3ff))
			continue;
		assert_int_equal(proto_f32_to_fp16(proto_fp16_to_f32((uint16_t)h)), h);
	}
}

static void test_proto_bits_layout(void **state)
{
	double x[130];
	uint8_t w[24];

	for (int i = 0; i < 130; i++)
		x[i] = (i % 3 == 0 || i == 64 || i == 129) ? 1.0 : -1.0;
	memset(w, 0xee, sizeof(w));
	proto_bits_pack(x, 130, w);
	/* element 64j+i is bit i of little-endian word j */
	assert_int_equal(w[0], 0x49);  /* elements 0, 3, 6 */
	assert_int_equal(w[8] & 1, 1); /* element 64 */
	assert_int_equal(w[16], 0x02); /* element 129 (128 is -1) */
	assert_int_equal(w[17], 0);    /* tail bits are zero */
	assert_int_equal(w[23], 0);
	for (int i = 0; i < 130; i++)
		assert_int_equal(proto_bits_get(w, (size_t)i), x[i] > 0 ? 1 : -1);
}

static void test_proto_activation(void **state)
{
	struct proto_msg m, out;

	proto_msg_init(&m, PROTO_ACTIVATION, 77, 99);
	proto_msg_set_tensor(&m, PROTO_FMT_BITS, 4096, 1, 1, 0, 0);
	m.tensor.layer = 5;
	m.act.reply_addr[10] = m.act.reply_addr[11] = 0xff;
	m.act.reply_addr[12] = 10, m.act.reply_addr[15] = 7;
	m.act.reply_port = 40000;
	m.act.executors = PROTO_EX_CPU | PROTO_EX_GPU;
	m.act.t_rx_ns = 1, m.act.t_queue_ns = 2, m.act.t_host_ns = 3, m.act.t_pack_ns = 4;
	fill(body, 512, 5);
	roundtrip(&m, body, 512, &out);
	assert_int_equal(out.hdr_len, PROTO_ACT_HDR_LEN);
	assert_int_equal(out.tensor.layer, 5);
	assert_memory_equal(out.act.reply_addr, m.act.reply_addr, 16);
	assert_int_equal(out.act.reply_port, 40000);
	assert_int_equal(out.act.executors, 3);
	assert_int_equal(out.act.t_rx_ns, 1);
	assert_int_equal(out.act.t_queue_ns, 2);
	assert_int_equal(out.act.t_host_ns, 3);
	assert_int_equal(out.act.t_pack_ns, 4);
	/* header fields are big-endian on the wire */
	assert_int_equal(buf[0], 0x53);
	assert_int_equal(buf[1], 0x4e);
	assert_int_equal(buf[32 + 48], 40000 >> 8);
	assert_true(out.act.cookie == 0);
	m.act.cookie = 0x0123456789abcdefull;
	roundtrip(&m, body, 512, &out);
	assert_true(out.act.cookie == 0x0123456789abcdefull);
	assert_int_equal(buf[32 + 72], 0x01);
	assert_int_equal(buf[32 + 79], 0xef);
}

/* Completion notices: RESPONSE and ERROR with the longer header carry host_ref and cookie; the
 * short forms read as cookie 0, and a header that claims the long form but ends early is short. */
static void test_proto_notice_cookie(void **state)
{
	struct proto_msg m, out;
	int n;

	proto_msg_init(&m, PROTO_RESPONSE, 5, 6);
	m.resp.num_classes = 2, m.resp.score_fmt = PROTO_FMT_F64;
	m.resp.host_ref = 0x11223344u;
	m.resp.cookie = 0xfeedfacecafebeefull;
	fill(body, 16, 1);
	roundtrip(&m, body, 16, &out);
	assert_true(out.resp.cookie == 0); /* hdr_len 80: no cookie field */
	m.hdr_len = PROTO_RESP_NOTICE_HDR_LEN;
	roundtrip(&m, body, 16, &out);
	assert_int_equal(out.hdr_len, 88);
	assert_int_equal(out.resp.host_ref, 0x11223344u);
	assert_true(out.resp.cookie == 0xfeedfacecafebeefull);

	proto_msg_init(&m, PROTO_ERROR, 5, 6);
	m.err.code = PROTO_ERR_BUSY, m.err.detail = 9;
	m.err.host_ref = 77, m.err.cookie = 0x8000000000000001ull;
	roundtrip(&m, "busy", 4, &out);
	assert_true(out.err.cookie == 0 && out.err.host_ref == 0);
	m.hdr_len = PROTO_ERROR_NOTICE_HDR_LEN;
	roundtrip(&m, "busy", 4, &out);
	assert_int_equal(out.hdr_len, 56);
	assert_int_equal(out.err.host_ref, 77);
	assert_true(out.err.cookie == 0x8000000000000001ull);
	assert_int_equal(out.err.detail, 9);
	n = proto_build(&m, "busy", 4, buf, sizeof(buf));
	for (int l = PROTO_ERROR_HDR_LEN; l < n; l++)
		assert_int_not_equal(proto_parse(buf, (size_t)l, &out), PROTO_OK);
}

static void test_proto_health(void **state)
{
	struct proto_health_model models[30], e;
	char ident[PROTO_HEALTH_IDENT_LEN + 1];
	struct proto_msg out;
	int n;

	n = proto_build_health_probe(buf, sizeof(buf), 42, 1400);
	assert_int_equal(n, 1400);
	assert_int_equal(proto_parse(buf, (size_t)n, &out), PROTO_OK);
	assert_int_equal(out.type, PROTO_HEALTH);
	assert_int_equal(out.health.kind, PROTO_HEALTH_PROBE);
	assert_true(out.request_id == 42);
	assert_int_equal(out.total_len, 1400 - PROTO_HEALTH_HDR_LEN);
	assert_int_equal(proto_build_health_probe(buf, sizeof(buf), 1, PROTO_HEALTH_HDR_LEN), 48);
	assert_int_equal(proto_build_health_probe(buf, sizeof(buf), 1, 47), -EINVAL);
	assert_int_equal(proto_build_health_probe(buf, sizeof(buf), 1, 1401), -EINVAL);
	assert_int_equal(proto_build_health_probe(buf, 100, 1, 200), -EMSGSIZE);

	for (unsigned i = 0; i < 30; i++) {
		memset(&models[i], 0, sizeof(models[i]));
		models[i].model_id = 0xa0000000u + i;
		models[i].first_op = (uint16_t)i;
		models[i].mode = PROTO_MODE_NIC_PART;
		models[i].in_fmt = PROTO_FMT_BITS;
		models[i].c = 256, models[i].h = 1, models[i].w = 1;
		models[i].classes = 10;
		snprintf(models[i].name, sizeof(models[i].name), "model-%u", i);
	}
	/* a full probe lists 27 models and says the list was cut */
	n = proto_build_health_report(buf, sizeof(buf), 1400, 43, PROTO_ROLE_NIC,
				      PROTO_HEALTH_DRAINING, 5, "edge-1", models, 30);
	assert_int_equal(n, 48 + 32 + 27 * 48);
	assert_int_equal(proto_parse(buf, (size_t)n, &out), PROTO_OK);
	assert_int_equal(out.health.kind, PROTO_HEALTH_REPORT);
	assert_int_equal(out.health.state, PROTO_HEALTH_DRAINING);
	assert_int_equal(out.health.role, PROTO_ROLE_NIC);
	assert_int_equal(out.health.flags, PROTO_HEALTH_F_TRUNCATED);
	assert_int_equal(out.health.n_models, 27);
	assert_int_equal(out.health.in_flight, 5);
	proto_health_ident(&out, ident);
	assert_string_equal(ident, "edge-1");
	proto_health_model_get(&out, 26, &e);
	assert_int_equal(e.model_id, 0xa0000000u + 26);
	assert_int_equal(e.first_op, 26);
	assert_int_equal(e.mode, PROTO_MODE_NIC_PART);
	assert_int_equal(e.in_fmt, PROTO_FMT_BITS);
	assert_int_equal(e.c, 256);
	assert_int_equal(e.classes, 10);
	assert_string_equal(e.name, "model-26");
	/* never longer than the probe: a 100-byte probe gets identity + 0 models, 80 bytes */
	n = proto_build_health_report(buf, sizeof(buf), 100, 1, PROTO_ROLE_HOST,
				      PROTO_HEALTH_SERVING, 0, "h", models, 2);
	assert_int_equal(n, 80);
	assert_int_equal(proto_parse(buf, (size_t)n, &out), PROTO_OK);
	assert_int_equal(out.health.n_models, 0);
	assert_int_equal(out.health.flags, PROTO_HEALTH_F_TRUNCATED);
	n = proto_build_health_report(buf, sizeof(buf), 128, 1, PROTO_ROLE_HOST,
				      PROTO_HEALTH_SERVING, 0, "h", models, 2);
	assert_int_equal(n, 128);
	assert_int_equal(proto_build_health_report(buf, sizeof(buf), 79, 1, PROTO_ROLE_SERVE,
						   PROTO_HEALTH_SERVING, 0, NULL, models, 1),
			 -EMSGSIZE);
	n = proto_build_health_report(buf, sizeof(buf), 1400, 1, PROTO_ROLE_XDP,
				      PROTO_HEALTH_SERVING, 0, NULL, models, 1);
	assert_int_equal(proto_parse(buf, (size_t)n, &out), PROTO_OK);
	proto_health_ident(&out, ident);
	assert_string_equal(ident, "");
	assert_string_equal(proto_type_name(PROTO_HEALTH), "health");
	assert_string_equal(proto_health_state_name(PROTO_HEALTH_DEGRADED), "degraded");
	assert_string_equal(proto_health_role_name(PROTO_ROLE_SERVE), "serve");
	assert_string_equal(proto_health_mode_name(PROTO_MODE_HOST_ONLY), "host-only");
	assert_string_equal(proto_health_role_name(9), "?");
}

/* HEALTH field checks: kind, state, role, the report's length, fragmentation. */
static void test_proto_health_bad(void **state)
{
	static const struct proto_health_model one = {.model_id = 1, .mode = 1, .name = "x"};
	struct proto_msg out;
	int n;

	n = proto_build_health_report(buf, sizeof(buf), 1400, 1, PROTO_ROLE_NIC,
				      PROTO_HEALTH_SERVING, 0, "n", &one, 1);
	assert_int_equal(proto_parse(buf, (size_t)n, &out), PROTO_OK);
	buf[32] = 2; /* kind */
	assert_int_equal(proto_parse(buf, (size_t)n, &out), PROTO_BAD_FIELD);
	buf[32] = 1, buf[33] = 3; /* state */
	assert_int_equal(proto_parse(buf, (size_t)n, &out), PROTO_BAD_FIELD);
	buf[33] = 0, buf[34] = 0; /* role */
	assert_int_equal(proto_parse(buf, (size_t)n, &out), PROTO_BAD_FIELD);
	buf[34] = 5;
	assert_int_equal(proto_parse(buf, (size_t)n, &out), PROTO_BAD_FIELD);
	buf[34] = 1, buf[37] = 2; /* n_models says 2, data holds 1 */
	assert_int_equal(proto_parse(buf, (size_t)n, &out), PROTO_BAD_TOTAL_LEN);
	buf[37] = 1;
	assert_int_equal(proto_parse(buf, (size_t)n, &out), PROTO_OK);
	/* a probe is one datagram: a fragment of a longer one is refused */
	n = proto_build_health_probe(buf, sizeof(buf), 7, 200);
	proto_put32(buf + 24, 400);
	assert_int_equal(proto_parse(buf, (size_t)n, &out), PROTO_BAD_FRAG);
	proto_put32(buf + 24, PROTO_HEALTH_MAX_DATA + 8);
	assert_int_equal(proto_parse(buf, (size_t)n, &out), PROTO_BAD_TOTAL_LEN);
	/* any probe content is accepted; fields the probe does not use are not checked */
	n = proto_build_health_probe(buf, sizeof(buf), 7, 200);
	buf[33] = 0xff, buf[34] = 0xff;
	assert_int_equal(proto_parse(buf, (size_t)n, &out), PROTO_OK);
}

static void test_proto_response(void **state)
{
	struct proto_msg m, out;
	double scores[10];

	proto_msg_init(&m, PROTO_RESPONSE, 5, 6);
	m.resp.num_classes = 10;
	m.resp.cls = 9;
	m.resp.score_fmt = PROTO_FMT_F64;
	m.resp.executors = PROTO_EX_NIC | PROTO_EX_HOST_FALLBACK;
	for (unsigned i = 0; i < PROTO_T_COUNT; i++)
		m.resp.t_ns[i] = 1000u * i + 0x80000000u;
	for (int i = 0; i < 10; i++) {
		scores[i] = -1.0 / (i + 3);
		proto_le_put_f64(body + 8 * i, scores[i]);
	}
	roundtrip(&m, body, 80, &out);
	assert_int_equal(out.resp.cls, 9);
	assert_int_equal(out.resp.num_classes, 10);
	assert_int_equal(out.resp.executors, PROTO_EX_NIC | PROTO_EX_HOST_FALLBACK);
	for (unsigned i = 0; i < PROTO_T_COUNT; i++)
		assert_int_equal(out.resp.t_ns[i], 1000u * i + 0x80000000u);
	for (int i = 0; i < 10; i++)
		assert_true(proto_le_get_f64(out.data + 8 * i) == scores[i]);
	/* 165 f64 classes fit one default datagram, 166 do not */
	assert_int_equal(proto_frag_count(PROTO_RESP_HDR_LEN, 165 * 8, PROTO_DEFAULT_PAYLOAD), 1);
	assert_int_equal(proto_frag_count(PROTO_RESP_HDR_LEN, 166 * 8, PROTO_DEFAULT_PAYLOAD), 2);

	m.resp.score_fmt = PROTO_FMT_F32;
	roundtrip(&m, body, 40, &out);
	assert_int_equal(out.resp.score_fmt, PROTO_FMT_F32);
	assert_int_equal(proto_build(&m, body, 80, buf, sizeof(buf)), -EINVAL);
}

static void test_proto_error(void **state)
{
	struct proto_msg out;
	int n;

	n = proto_build_error(buf, sizeof(buf), 3, 4, PROTO_ERR_UNKNOWN_MODEL, 0xabc, "model %x",
			      3);
	assert_int_equal(n, PROTO_ERROR_HDR_LEN + 7);
	assert_int_equal(proto_parse(buf, (size_t)n, &out), PROTO_OK);
	assert_int_equal(out.err.code, PROTO_ERR_UNKNOWN_MODEL);
	assert_int_equal(out.err.detail, 0xabc);
	assert_memory_equal(out.data, "model 3", 7);
	/* the reason is cut at 64 bytes */
	n = proto_build_error(buf, sizeof(buf), 3, 4, PROTO_ERR_INTERNAL, 0, "%0100d", 1);
	assert_int_equal(n, PROTO_ERROR_HDR_LEN + PROTO_REASON_MAX);
	assert_int_equal(proto_parse(buf, (size_t)n, &out), PROTO_OK);
	assert_string_equal(proto_error_name(PROTO_ERR_BUSY), "busy");
}

/* No amplification: an ERROR's reason cut to fit what caused it, none when its header does not
 * fit; the notice form keeps its host_ref and cookie. */
static void test_proto_error_cut(void **state)
{
	struct proto_msg m, out;
	int n;

	(void)state;
	n = proto_build_error_text(buf, PROTO_ERROR_HDR_LEN + 10, 3, 4, PROTO_ERR_TOO_LARGE, 592,
				   "host: ", "reply larger than the request");
	assert_int_equal(n, PROTO_ERROR_HDR_LEN + 10);
	assert_int_equal(proto_parse(buf, (size_t)n, &out), PROTO_OK);
	assert_int_equal(out.err.code, PROTO_ERR_TOO_LARGE);
	assert_int_equal(out.err.detail, 592);
	assert_memory_equal(out.data, "host: repl", 10);
	n = proto_build_error_text(buf, PROTO_ERROR_HDR_LEN + 3, 3, 4, PROTO_ERR_BUSY, 1,
				   "serve: ", "shutting down");
	assert_int_equal(n, PROTO_ERROR_HDR_LEN + 3); /* the prefix cut too */
	assert_int_equal(proto_parse(buf, (size_t)n, &out), PROTO_OK);
	assert_memory_equal(out.data, "ser", 3);
	assert_int_equal(
	    proto_build_error_text(buf, PROTO_ERROR_HDR_LEN, 3, 4, PROTO_ERR_BUSY, 1, "x: ", "y"),
	    PROTO_ERROR_HDR_LEN);
	assert_int_equal(proto_build_error_text(buf, PROTO_ERROR_HDR_LEN - 1, 3, 4, PROTO_ERR_BUSY,
						1, "x: ", "y"),
			 -EMSGSIZE);
	/* room enough: the whole reason, at most PROTO_REASON_MAX bytes */
	n = proto_build_error_text(buf, sizeof(buf), 3, 4, PROTO_ERR_BUSY, 1, "nic: ", "busy");
	assert_int_equal(n, PROTO_ERROR_HDR_LEN + 9);
	proto_msg_init(&m, PROTO_ERROR, 7, 8);
	m.hdr_len = PROTO_ERROR_NOTICE_HDR_LEN;
	m.err.code = PROTO_ERR_UNKNOWN_MODEL;
	m.err.host_ref = 0x02000007;
	m.err.cookie = 0x1122334455667788ull;
	n = proto_build_error_cut(&m, "nic: ", "unknown_model", buf,
				  PROTO_ERROR_NOTICE_HDR_LEN + 6);
	assert_int_equal(n, PROTO_ERROR_NOTICE_HDR_LEN + 6);
	assert_int_equal(m.total_len, 6);
	assert_int_equal(proto_parse(buf, (size_t)n, &out), PROTO_OK);
	assert_int_equal(out.err.host_ref, 0x02000007);
	assert_true(out.err.cookie == 0x1122334455667788ull);
	assert_memory_equal(out.data, "nic: u", 6);
	assert_int_equal(proto_build_error_cut(&m, "nic: ", "unknown_model", buf,
					       PROTO_ERROR_NOTICE_HDR_LEN - 1),
			 -EMSGSIZE);
}

/* What a reply weighs on the wire, headers repeated in every datagram. */
static void test_proto_wire_bytes(void **state)
{
	(void)state;
	assert_int_equal(proto_wire_bytes(PROTO_RESP_HDR_LEN, 80, 1400), PROTO_RESP_HDR_LEN + 80);
	assert_int_equal(proto_wire_bytes(PROTO_RESP_HDR_LEN, 512, 1400), 592);
	/* 8000 bytes of scores: 1320 bytes per datagram, 7 datagrams */
	assert_int_equal(proto_wire_bytes(PROTO_RESP_HDR_LEN, 8000, 1400),
			 7 * PROTO_RESP_HDR_LEN + 8000);
	assert_int_equal(proto_wire_bytes(PROTO_ERROR_HDR_LEN, 0, 1400), PROTO_ERROR_HDR_LEN);
}

/* Every message type, whole and as a middle fragment, cut at every length. */
static void test_proto_truncation_every_point(void **state)
{
	struct proto_msg m, out;
	struct proto_frag f;
	uint8_t dg[4][2048];
	int len[4], frag_n;

	proto_msg_init(&m, PROTO_REQUEST, 1, 1);
	proto_msg_set_tensor(&m, PROTO_FMT_U8, 1, 28, 28, 0, 0);
	fill(body, 784, 1);
	len[0] = proto_build(&m, body, 784, dg[0], sizeof(dg[0]));
	proto_msg_init(&m, PROTO_ACTIVATION, 1, 2);
	proto_msg_set_tensor(&m, PROTO_FMT_INT8, 4, 3, 3, 0.5f, 1);
	len[1] = proto_build(&m, body, 36, dg[1], sizeof(dg[1]));
	proto_msg_init(&m, PROTO_RESPONSE, 1, 3);
	m.resp.num_classes = 3, m.resp.score_fmt = PROTO_FMT_F64;
	len[2] = proto_build(&m, body, 24, dg[2], sizeof(dg[2]));
	len[3] = proto_build_error(dg[3], sizeof(dg[3]), 1, 4, PROTO_ERR_BUSY, 0, "busy");

	for (int t = 0; t < 4; t++) {
		struct proto_msg whole;

		assert_true(len[t] > 0);
		assert_int_equal(proto_parse(dg[t], (size_t)len[t], &whole), PROTO_OK);
		for (int l = 0; l < len[t]; l++) {
			enum proto_verdict want = l < (int)PROTO_COMMON_LEN ? PROTO_BAD_SHORT
						  : l < whole.hdr_len	    ? PROTO_BAD_SHORT_EXT
									    : PROTO_BAD_TRUNCATED;

			assert_int_equal(proto_parse(dg[t], (size_t)l, &out), want);
		}
		dg[t][len[t]] = 0;
		assert_int_equal(proto_parse(dg[t], (size_t)len[t] + 1, &out), PROTO_BAD_TRAILING);
	}

	/* a middle fragment of a fragmented request */
	proto_msg_init(&m, PROTO_REQUEST, 1, 5);
	proto_msg_set_tensor(&m, PROTO_FMT_F32, 1, 28, 28, 0, 0);
	assert_int_equal(proto_frag_init(&f, &m, body, 784 * 4, 1024), 0);
	frag_n = 0;
	while ((len[0] = proto_frag_next(&f, dg[0], sizeof(dg[0]))) > 0 && ++frag_n < 2)
		;
	assert_int_equal(proto_parse(dg[0], (size_t)len[0], &out), PROTO_OK);
	assert_int_equal(out.frag_off, 1024 - 64);
	for (int l = 0; l < len[0]; l++)
		assert_int_equal(proto_parse(dg[0], (size_t)l, &out), l < 32 ? PROTO_BAD_SHORT
								      : l < 64
									  ? PROTO_BAD_SHORT_EXT
									  : PROTO_BAD_TRUNCATED);
}

static int base_request(uint8_t *p)
{
	struct proto_msg m;

	proto_msg_init(&m, PROTO_REQUEST, 1, 1);
	proto_msg_set_tensor(&m, PROTO_FMT_U8, 1, 4, 4, 0, 0);
	return proto_build(&m, body, 16, p, 256);
}

static enum proto_verdict mutate(size_t off, unsigned width, uint32_t v)
{
	uint8_t p[256];
	struct proto_msg out;
	int n = base_request(p);

	if (width == 1)
		p[off] = (uint8_t)v;
	else if (width == 2)
		proto_put16(p + off, (uint16_t)v);
	else
		proto_put32(p + off, v);
	return proto_parse(p, (size_t)n, &out);
}

static void test_proto_bad_fields(void **state)
{
	struct proto_msg m, out;
	uint8_t p[512];
	int n;

	assert_int_equal(mutate(0, 2, 0x4e53), PROTO_BAD_MAGIC);
	assert_int_equal(mutate(2, 1, 2), PROTO_BAD_VERSION);
	assert_int_equal(mutate(2, 1, 0), PROTO_BAD_VERSION);
	assert_int_equal(mutate(3, 1, 0), PROTO_BAD_TYPE);
	assert_int_equal(mutate(3, 1, 6), PROTO_BAD_TYPE);
	assert_int_equal(mutate(4, 2, 62), PROTO_BAD_HDR_LEN);
	assert_int_equal(mutate(4, 2, 60), PROTO_BAD_HDR_LEN);
	assert_int_equal(mutate(4, 2, 260), PROTO_BAD_HDR_LEN);
	assert_int_equal(mutate(4, 2, 68), PROTO_BAD_TRUNCATED); /* eats 4 data bytes */
	assert_int_equal(mutate(6, 2, 15), PROTO_BAD_TRAILING);
	assert_int_equal(mutate(6, 2, 17), PROTO_BAD_TRUNCATED);
	assert_int_equal(mutate(24, 4, PROTO_MAX_TOTAL + 1), PROTO_BAD_TOTAL_LEN);
	assert_int_equal(mutate(24, 4, 17), PROTO_BAD_TOTAL_LEN); /* not what 1x4x4 u8 implies */
	assert_int_equal(mutate(24, 4, 15), PROTO_BAD_FRAG);	  /* fragment past the end */
	assert_int_equal(mutate(28, 4, 8), PROTO_BAD_FRAG);
	assert_int_equal(mutate(28, 4, 0xfffffff8u), PROTO_BAD_FRAG);
	assert_int_equal(mutate(32, 1, 0), PROTO_BAD_FORMAT);
	assert_int_equal(mutate(32, 1, 7), PROTO_BAD_FORMAT);
	assert_int_equal(mutate(36, 4, 0), PROTO_BAD_SHAPE);
	assert_int_equal(mutate(40, 4, 0), PROTO_BAD_SHAPE);
	assert_int_equal(mutate(44, 4, 0), PROTO_BAD_SHAPE);
	assert_int_equal(mutate(48, 4, 17), PROTO_BAD_SHAPE);
	assert_int_equal(mutate(48, 4, 0), PROTO_BAD_SHAPE);
	assert_int_equal(mutate(36, 4, 0x10000), PROTO_BAD_SHAPE); /* c*h*w overflows count */
	assert_int_equal(mutate(48, 4, PROTO_MAX_ELEMS + 1), PROTO_BAD_SHAPE);
	/* flags, reserved and layer of a REQUEST are ignored (room to grow) */
	assert_int_equal(mutate(12, 2, 0xffff), PROTO_OK);
	assert_int_equal(mutate(33, 1, 0xff), PROTO_OK);
	assert_int_equal(mutate(60, 4, 0xffffffffu), PROTO_OK);

	/* int8 scale must be positive and finite */
	proto_msg_init(&m, PROTO_REQUEST, 1, 1);
	proto_msg_set_tensor(&m, PROTO_FMT_INT8, 1, 1, 8, 1.0f, 0);
	n = proto_build(&m, body, 8, p, sizeof(p));
	assert_int_equal(proto_parse(p, (size_t)n, &out), PROTO_OK);
	proto_put32(p + 52, proto_f32_bits(-1.0f));
	assert_int_equal(proto_parse(p, (size_t)n, &out), PROTO_BAD_FIELD);
	proto_put32(p + 52, proto_f32_bits(INFINITY));
	assert_int_equal(proto_parse(p, (size_t)n, &out), PROTO_BAD_FIELD);
	proto_put32(p + 52, 0);
	assert_int_equal(proto_parse(p, (size_t)n, &out), PROTO_BAD_FIELD);

	/* response: class < num_classes, score format */
	proto_msg_init(&m, PROTO_RESPONSE, 1, 1);
	m.resp.num_classes = 2, m.resp.cls = 1, m.resp.score_fmt = PROTO_FMT_F64;
	n = proto_build(&m, body, 16, p, sizeof(p));
	assert_int_equal(proto_parse(p, (size_t)n, &out), PROTO_OK);
	proto_put32(p + 32, 2);
	assert_int_equal(proto_parse(p, (size_t)n, &out), PROTO_BAD_FIELD);
	proto_put32(p + 32, 1);
	p[38] = PROTO_FMT_U8;
	assert_int_equal(proto_parse(p, (size_t)n, &out), PROTO_BAD_FORMAT);
	m.resp.cls = 2;
	assert_int_equal(proto_build(&m, body, 16, p, sizeof(p)), -EINVAL);

	/* error: code >= 1, reason <= 64 bytes, never fragmented */
	n = proto_build_error(p, sizeof(p), 1, 1, PROTO_ERR_BUSY, 0, "12345678");
	proto_put16(p + 32, 0);
	assert_int_equal(proto_parse(p, (size_t)n, &out), PROTO_BAD_FIELD);
	proto_put16(p + 32, PROTO_ERR__COUNT);
	assert_int_equal(proto_parse(p, (size_t)n, &out), PROTO_BAD_FIELD);
	proto_put16(p + 32, PROTO_ERR_BUSY);
	proto_put32(p + 24, 16); /* a first fragment of a 16-byte reason */
	assert_int_equal(proto_parse(p, (size_t)n, &out), PROTO_BAD_FRAG);
	proto_put32(p + 24, 65);
	assert_int_equal(proto_parse(p, (size_t)n, &out), PROTO_BAD_TOTAL_LEN);

	/* misaligned fragments */
	proto_msg_init(&m, PROTO_REQUEST, 1, 1);
	proto_msg_set_tensor(&m, PROTO_FMT_U8, 1, 1, 100, 0, 0);
	m.total_len = 100, m.frag_off = 4, m.frag_len = 8;
	proto_hdr_write(&m, p, p + sizeof(p));
	assert_int_equal(proto_parse(p, 72, &out), PROTO_BAD_FRAG);
	m.frag_off = 0, m.frag_len = 12;
	proto_hdr_write(&m, p, p + sizeof(p));
	assert_int_equal(proto_parse(p, 76, &out), PROTO_BAD_FRAG);
	m.frag_off = 96, m.frag_len = 4; /* the last fragment may be short */
	proto_hdr_write(&m, p, p + sizeof(p));
	assert_int_equal(proto_parse(p, 68, &out), PROTO_OK);
	m.frag_off = 8, m.frag_len = 0;
	proto_hdr_write(&m, p, p + sizeof(p));
	assert_int_equal(proto_parse(p, 64, &out), PROTO_BAD_FRAG);
	assert_string_equal(proto_verdict_name(PROTO_BAD_FRAG), "frag");
	assert_string_equal(proto_verdict_name(99), "?");
}

static void test_proto_header_growth(void **state)
{
	/* a longer header (a later version's extra fields) is skipped */
	struct proto_msg m, out;
	int n;

	proto_msg_init(&m, PROTO_REQUEST, 9, 9);
	proto_msg_set_tensor(&m, PROTO_FMT_U8, 1, 1, 16, 0, 0);
	m.hdr_len = 96;
	fill(body, 16, 3);
	n = proto_build(&m, body, 16, buf, sizeof(buf));
	assert_int_equal(n, 112);
	memset(buf + 64, 0x77, 32);
	assert_int_equal(proto_parse(buf, (size_t)n, &out), PROTO_OK);
	assert_int_equal(out.hdr_len, 96);
	assert_ptr_equal(out.data, buf + 96);
	assert_memory_equal(out.data, body, 16);
}

static void test_proto_build_checks(void **state)
{
	struct proto_msg m;
	struct proto_frag f;

	proto_msg_init(&m, PROTO_REQUEST, 1, 1);
	proto_msg_set_tensor(&m, PROTO_FMT_U8, 1, 28, 28, 0, 0);
	assert_int_equal(proto_build(&m, body, 783, buf, sizeof(buf)), -EINVAL);
	assert_int_equal(proto_build(&m, body, 784, buf, 847), -EMSGSIZE);
	assert_int_equal(proto_build(&m, body, 784, buf, 848), 848);
	assert_int_equal(proto_frag_init(&f, &m, body, 784, 100), -EINVAL);
	assert_int_equal(proto_frag_init(&f, &m, body, 785, 1400), -EINVAL);
	proto_msg_set_tensor(&m, PROTO_FMT_F64, 1024, 1024, 9, 0, 0);
	assert_int_equal(proto_frag_init(&f, &m, body, (size_t)72 << 20, 1400), -EMSGSIZE);
	proto_msg_init(&m, PROTO_ERROR, 1, 1);
	m.err.code = 0;
	assert_int_equal(proto_build(&m, "x", 1, buf, sizeof(buf)), -EINVAL);
	/* fragment count and sizes: data per fragment = (payload - hdr_len) & ~7 */
	assert_int_equal(proto_frag_count(64, 784, 1400), 1);
	assert_int_equal(proto_frag_count(64, 1336, 1400), 1);
	assert_int_equal(proto_frag_count(64, 1337, 1400), 2);
	assert_int_equal(proto_frag_count(64, 0, 1400), 1);
	assert_int_equal(proto_frag_count(64, 4u << 20, 1400), (4u << 20) / 1336 + 1);
}

static void test_proto_names(void **state)
{
	assert_int_equal(proto_model_id(""), 0x811c9dc5u);
	assert_int_equal(proto_model_id("a"), 0xe40c292cu);
	assert_int_equal(proto_fmt_from_name("fp16"), PROTO_FMT_FP16);
	assert_int_equal(proto_fmt_from_name("f16"), 0);
	assert_string_equal(proto_fmt_name(PROTO_FMT_BITS), "bits");
	assert_string_equal(proto_type_name(PROTO_ACTIVATION), "activation");
	for (unsigned v = 0; v < PROTO_VERDICT__COUNT; v++)
		assert_string_not_equal(proto_verdict_name(v), "?");
}

/* --- a capture of sample traffic for the dissector test ------------------------------------ */

static void pcap_put(FILE *f, const uint8_t *udp_payload, size_t len, uint16_t sport,
		     uint16_t dport, uint32_t ts)
{
	uint8_t fr[2048] = {0};
	uint32_t rec[4] = {ts, 0, (uint32_t)(14 + 28 + len), (uint32_t)(14 + 28 + len)};
	uint32_t sum = 0;
	uint8_t *ip = fr + 14, *udp = ip + 20;

	memcpy(fr, "\x02\0\0\0\0\x02\x02\0\0\0\0\x01\x08\x00", 14);
	ip[0] = 0x45;
	proto_put16(ip + 2, (uint16_t)(28 + len));
	ip[8] = 64;
	ip[9] = 17;
	memcpy(ip + 12, "\x7f\0\0\x01\x7f\0\0\x01", 8);
	for (int i = 0; i < 20; i += 2)
		sum += proto_get16(ip + i);
	sum = (sum & 0xffff) + (sum >> 16);
	proto_put16(ip + 10, (uint16_t) ~(sum + (sum >> 16)));
	proto_put16(udp, sport);
	proto_put16(udp + 2, dport);
	proto_put16(udp + 4, (uint16_t)(8 + len));
	memcpy(udp + 8, udp_payload, len);
	fwrite(rec, sizeof(rec), 1, f);
	fwrite(fr, 1, 14 + 28 + len, f);
}

static void test_proto_pcap(void **state)
{
	const char *path = getenv("PROTO_PCAP_OUT");
	uint32_t ghdr[6] = {0xa1b2c3d4u, 0x00040002u, 0, 0, 65535, 1};
	char tmp[] = "/tmp/splitnic-proto-XXXXXX";
	struct proto_msg m;
	struct proto_frag fr;
	uint32_t ts = 1700000000;
	FILE *f;
	int n, fd = -1;

	if (path) {
		f = fopen(path, "wb");
	} else {
		fd = mkstemp(tmp);
		assert_true(fd >= 0);
		f = fdopen(fd, "wb");
	}
	assert_non_null(f);
	fwrite(ghdr, sizeof(ghdr), 1, f);

	/* 1: REQUEST u8 1x28x28 in one datagram, model 0x00c0ffee, request 1 */
	proto_msg_init(&m, PROTO_REQUEST, 0x00c0ffee, 1);
	proto_msg_set_tensor(&m, PROTO_FMT_U8, 1, 28, 28, 0, 0);
	fill(body, 784, 1);
	n = proto_build(&m, body, 784, buf, sizeof(buf));
	pcap_put(f, buf, (size_t)n, 40000, PROTO_DEFAULT_PORT, ts++);
	/* 2: RESPONSE class 7 of 10, f64 scores (score i = i / 10), CPU|NIC */
	proto_msg_init(&m, PROTO_RESPONSE, 0x00c0ffee, 1);
	m.resp.num_classes = 10, m.resp.cls = 7, m.resp.score_fmt = PROTO_FMT_F64;
	m.resp.executors = PROTO_EX_CPU | PROTO_EX_NIC;
	m.resp.t_ns[PROTO_T_TOTAL] = 1050000, m.resp.t_ns[PROTO_T_NIC] = 400000;
	for (int i = 0; i < 10; i++)
		proto_le_put_f64(body + 8 * i, i / 10.0);
	n = proto_build(&m, body, 80, buf, sizeof(buf));
	pcap_put(f, buf, (size_t)n, PROTO_DEFAULT_PORT, 40000, ts++);
	/* 3-5: REQUEST f32 1x28x28 (3136 bytes), request 2, in 3 fragments of <= 1400 bytes */
	proto_msg_init(&m, PROTO_REQUEST, 0x00c0ffee, 2);
	proto_msg_set_tensor(&m, PROTO_FMT_F32, 1, 28, 28, 0, 0);
	fill(body, 3136, 2);
	assert_int_equal(proto_frag_init(&fr, &m, body, 3136, 1400), 0);
	while ((n = proto_frag_next(&fr, buf, sizeof(buf))) > 0)
		pcap_put(f, buf, (size_t)n, 40000, PROTO_DEFAULT_PORT, ts++);
	/* 6: ACTIVATION bits 4096 at layer 3, reply to 127.0.0.1:40000 */
	proto_msg_init(&m, PROTO_ACTIVATION, 0x00c0ffee, 3);
	proto_msg_set_tensor(&m, PROTO_FMT_BITS, 4096, 1, 1, 0, 0);
	m.tensor.layer = 3;
	m.act.reply_addr[10] = m.act.reply_addr[11] = 0xff;
	m.act.reply_addr[12] = 127, m.act.reply_addr[15] = 1;
	m.act.reply_port = 40000, m.act.executors = PROTO_EX_CPU, m.act.t_host_ns = 250000;
	n = proto_build(&m, body, 512, buf, sizeof(buf));
	pcap_put(f, buf, (size_t)n, 5000, PROTO_DEFAULT_PORT, ts++);
	/* 7: ERROR unknown_model */
	n = proto_build_error(buf, sizeof(buf), 0x00c0ffee, 4, PROTO_ERR_UNKNOWN_MODEL, 0xc0ffee,
			      "no such model");
	pcap_put(f, buf, (size_t)n, PROTO_DEFAULT_PORT, 40000, ts++);
	/* 8: a malformed datagram (bad version) */
	buf[2] = 9;
	pcap_put(f, buf, (size_t)n, PROTO_DEFAULT_PORT, 40000, ts++);
	/* 9: REQUEST int8 on a non-default port (heuristic dissector) */
	proto_msg_init(&m, PROTO_REQUEST, 0x00c0ffee, 5);
	proto_msg_set_tensor(&m, PROTO_FMT_INT8, 2, 2, 2, 0.5f, -4);
	n = proto_build(&m, body, 8, buf, sizeof(buf));
	pcap_put(f, buf, (size_t)n, 40001, 9999, ts++);
	/* 10: a completion notice (RESPONSE with host_ref and cookie), NIC to host */
	proto_msg_init(&m, PROTO_RESPONSE, 0x00c0ffee, 3);
	m.hdr_len = PROTO_RESP_NOTICE_HDR_LEN;
	m.resp.num_classes = 2, m.resp.cls = 1, m.resp.score_fmt = PROTO_FMT_F64;
	m.resp.host_ref = 0x2a, m.resp.cookie = 0x0123456789abcdefull;
	n = proto_build(&m, body, 16, buf, sizeof(buf));
	pcap_put(f, buf, (size_t)n, PROTO_DEFAULT_PORT, 5000, ts++);
	/* 11-12: a HEALTH probe of 200 bytes and its report: one model, draining */
	n = proto_build_health_probe(buf, sizeof(buf), 6, 200);
	pcap_put(f, buf, (size_t)n, 40002, PROTO_DEFAULT_PORT, ts++);
	{
		const struct proto_health_model hm = {.model_id = 0x00c0ffee,
						      .first_op = 9,
						      .mode = PROTO_MODE_NIC_PART,
						      .in_fmt = PROTO_FMT_BITS,
						      .c = 3136,
						      .h = 1,
						      .w = 1,
						      .classes = 10,
						      .name = "fmnist-bcnn"};
		n = proto_build_health_report(buf, sizeof(buf), 200, 6, PROTO_ROLE_NIC,
					      PROTO_HEALTH_DRAINING, 3, "edge-1", &hm, 1);
	}
	pcap_put(f, buf, (size_t)n, PROTO_DEFAULT_PORT, 40002, ts++);
	assert_int_equal(fclose(f), 0);
	if (!path)
		unlink(tmp);
}

static void test_proto_frame_round_trip(void **state)
{
	struct proto_addr a = {.smac = {2, 0, 0, 0, 0, 1},
			       .dmac = {2, 0, 0, 0, 0, 2},
			       .sip = 0x0a580101,
			       .dip = 0x0a580102,
			       .sport = 21326,
			       .dport = 40000},
			  b;
	uint8_t f[PROTO_FRAME_MAX];
	const uint8_t *p;
	uint32_t len, plen, ihl, sum = 0;

	(void)state;
	memcpy(f + PROTO_FRAME_HDRS, "hello", 5);
	len = proto_frame_udp(f, &a, 5, false);
	assert_int_equal(len, PROTO_FRAME_HDRS + 5);
	assert_int_equal(proto_frame_parse(f, len, &b, &p, &plen, &ihl), PROTO_FRAME_UDP);
	assert_int_equal(plen, 5);
	assert_memory_equal(p, "hello", 5);
	assert_int_equal(b.sip, a.sip);
	assert_int_equal(b.dip, a.dip);
	assert_int_equal(b.sport, a.sport);
	assert_int_equal(b.dport, a.dport);
	assert_memory_equal(b.smac, a.smac, 6);
	for (int i = 0; i < 20; i += 2) /* the IPv4 header checksum verifies */
		sum += (uint32_t)(f[14 + i] << 8 | f[15 + i]);
	while (sum >> 16)
		sum = (sum & 0xffff) + (sum >> 16);
	assert_int_equal(sum, 0xffff);
	assert_int_equal(proto_frame_parse(f, 30, &b, &p, &plen, &ihl), PROTO_FRAME_BAD);
	f[12] = 0x08, f[13] = 0x06; /* ARP */
	assert_int_equal(proto_frame_parse(f, len, &b, &p, &plen, &ihl), PROTO_FRAME_NOT_IPV4);
}

/*
 * proto_frame_udp_hdrs() with the payload elsewhere and only its partial sum given (as the XDP
 * program calls it, the payload in its scratch buffer) writes the headers proto_frame_udp()
 * writes over the payload in place: at odd and even lengths, in both checksum modes.
 */
static void test_proto_frame_udp_hdrs_payload_apart(void **state)
{
	static const uint32_t lens[] = {0, 1, 2, 3, 7, 54, 55, 80, 81, 1103, 1104, 1471, 1472};
	const struct proto_addr a = {.smac = {2, 0, 0, 0, 0, 9},
				     .dmac = {0xfe, 0xff, 0xff, 0xff, 0xff, 0xfe},
				     .sip = 0xc0a80101,
				     .dip = 0xfffffffe,
				     .sport = 65535,
				     .dport = 21326};
	uint8_t f[PROTO_FRAME_MAX], g[PROTO_FRAME_HDRS], pay[PROTO_FRAME_MAX];

	(void)state;
	for (unsigned i = 0; i < sizeof(lens) / sizeof(lens[0]); i++) {
		for (int offload = 0; offload < 2; offload++) {
			uint32_t n = lens[i];

			for (uint32_t k = 0; k < n; k++)
				pay[k] = (uint8_t)(0xff - k * 13 - i);
			memcpy(f + PROTO_FRAME_HDRS, pay, n);
			memset(g, 0xa5, sizeof(g));
			assert_int_equal(proto_frame_udp(f, &a, n, offload), PROTO_FRAME_HDRS + n);
			assert_int_equal(
			    proto_frame_udp_hdrs(g, &a, n, proto_csum_add(0, pay, n), offload),
			    PROTO_FRAME_HDRS + n);
			assert_memory_equal(f, g, PROTO_FRAME_HDRS);
			if (!offload)
				assert_true(proto_frame_csum_ok(f, PROTO_IP_HLEN));
		}
	}
}

static uint16_t csum16(const uint8_t *p, uint32_t len, uint32_t sum)
{
	for (uint32_t i = 0; i + 1 < len; i += 2)
		sum += (uint32_t)(p[i] << 8 | p[i + 1]);
	if (len & 1)
		sum += (uint32_t)p[len - 1] << 8;
	while (sum >> 16)
		sum = (sum & 0xffff) + (sum >> 16);
	return (uint16_t)sum;
}

/* The full UDP checksum verifies; with udp_offload the field holds the pseudo-header sum that
 * completing the checksum over the datagram turns into the full one. */
static void test_proto_frame_udp_checksum(void **state)
{
	struct proto_addr a = {.sip = 0x0a000001, .dip = 0x0a000002, .sport = 1, .dport = 2};
	uint8_t f[PROTO_FRAME_MAX], g[PROTO_FRAME_MAX];
	const uint8_t *udp = f + PROTO_ETH_HLEN + PROTO_IP_HLEN;
	uint32_t len, phdr;
	uint16_t full;

	(void)state;
	for (unsigned i = 0; i < 101; i++)
		f[PROTO_FRAME_HDRS + i] = (uint8_t)(i * 7 + 3);
	memcpy(g, f, sizeof(f));
	len = proto_frame_udp(f, &a, 101, false);
	phdr = csum16(f + PROTO_ETH_HLEN + 12, 8, PROTO_IPPROTO_UDP + PROTO_UDP_HLEN + 101);
	assert_int_equal(csum16(udp, len - PROTO_ETH_HLEN - PROTO_IP_HLEN, phdr), 0xffff);
	full = proto_get16(udp + 6);
	proto_frame_udp(g, &a, 101, true);
	assert_int_equal(proto_get16(g + PROTO_ETH_HLEN + PROTO_IP_HLEN + 6),
			 csum16(NULL, 0, phdr));
	proto_put16(g + PROTO_ETH_HLEN + PROTO_IP_HLEN + 6, 0);
	assert_int_equal(
	    (uint16_t)~csum16(g + PROTO_ETH_HLEN + PROTO_IP_HLEN, PROTO_UDP_HLEN + 101, phdr),
	    full);
	/* the receiver's check: both checksums, the UDP one unless 0 */
	assert_true(proto_frame_csum_ok(f, PROTO_IP_HLEN));
	f[PROTO_FRAME_HDRS + 100] ^= 0x10;
	assert_false(proto_frame_csum_ok(f, PROTO_IP_HLEN));
	proto_put16(f + PROTO_ETH_HLEN + PROTO_IP_HLEN + 6, 0);
	assert_true(proto_frame_csum_ok(f, PROTO_IP_HLEN));
	f[PROTO_ETH_HLEN + 8] = 63; /* TTL */
	assert_false(proto_frame_csum_ok(f, PROTO_IP_HLEN));
	/* two folds reach 16 bits from any 32 */
	for (uint64_t v = 0; v <= 0xffffffffu; v += 0x10fff7u)
		assert_int_equal(proto_csum_fold((uint32_t)v), csum16(NULL, 0, (uint32_t)v));
	assert_int_equal(proto_csum_fold(0xffffffffu), csum16(NULL, 0, 0xffffffffu));
	assert_int_equal(proto_csum_fold(0x1fffeu), 0xffff);
}

static void test_proto_arp_and_neigh(void **state)
{
	static const uint8_t me[6] = {2, 0, 0, 0, 0, 9}, peer[6] = {2, 0, 0, 0, 0, 7};
	static struct proto_neigh_table t;
	uint8_t f[64] = {0}, mac[6];
	const uint8_t *smac;
	uint32_t sip;

	(void)state;
	memset(f, 0xff, 6);
	memcpy(f + 6, peer, 6);
	proto_put16(f + 12, PROTO_ETYPE_ARP);
	proto_put16(f + 14, 1);
	proto_put16(f + 16, PROTO_ETYPE_IPV4);
	f[18] = 6, f[19] = 4;
	proto_put16(f + 20, 1); /* request */
	memcpy(f + 22, peer, 6);
	proto_put32(f + 28, 0x0a000007);
	proto_put32(f + 38, 0x0a000009);
	assert_false(proto_arp_reply(f, 41, me, 0x0a000009, &sip, &smac)); /* truncated */
	assert_int_equal(sip, 0);
	assert_false(proto_arp_reply(f, 42, me, 0x0a000008, &sip, &smac)); /* not for us */
	assert_int_equal(sip, 0x0a000007);
	assert_memory_equal(smac, peer, 6);
	assert_true(proto_arp_reply(f, 42, me, 0x0a000009, &sip, &smac));
	assert_memory_equal(smac, peer, 6);
	assert_int_equal(proto_get16(f + 20), 2);
	assert_memory_equal(f, peer, 6);
	assert_memory_equal(f + 6, me, 6);
	assert_memory_equal(f + 22, me, 6);
	assert_int_equal(proto_get32(f + 28), 0x0a000009);
	assert_memory_equal(f + 32, peer, 6);
	assert_int_equal(proto_get32(f + 38), 0x0a000007);

	assert_false(proto_neigh_lookup(&t, 0x0a000007, mac));
	assert_memory_equal(mac, "\xff\xff\xff\xff\xff\xff", 6);
	proto_neigh_learn(&t, 0x0a000007, peer);
	proto_neigh_learn(&t, 0x0a000008, (const uint8_t *)"\x01\x00\x5e\x00\x00\x01");
	assert_true(proto_neigh_lookup(&t, 0x0a000007, mac));
	assert_memory_equal(mac, peer, 6);
	assert_false(proto_neigh_lookup(&t, 0x0a000008, mac)); /* multicast never learnt */
}

int main(void)
{
	const struct CMUnitTest tests[] = {
	    cmocka_unit_test(test_proto_request_formats),
	    cmocka_unit_test(test_proto_tensor_values),
	    cmocka_unit_test(test_proto_fp16),
	    cmocka_unit_test(test_proto_bits_layout),
	    cmocka_unit_test(test_proto_activation),
	    cmocka_unit_test(test_proto_response),
	    cmocka_unit_test(test_proto_error),
	    cmocka_unit_test(test_proto_error_cut),
	    cmocka_unit_test(test_proto_wire_bytes),
	    cmocka_unit_test(test_proto_notice_cookie),
	    cmocka_unit_test(test_proto_health),
	    cmocka_unit_test(test_proto_health_bad),
	    cmocka_unit_test(test_proto_truncation_every_point),
	    cmocka_unit_test(test_proto_bad_fields),
	    cmocka_unit_test(test_proto_header_growth),
	    cmocka_unit_test(test_proto_build_checks),
	    cmocka_unit_test(test_proto_names),
	    cmocka_unit_test(test_proto_pcap),
	    cmocka_unit_test(test_proto_frame_round_trip),
	    cmocka_unit_test(test_proto_frame_udp_checksum),
	    cmocka_unit_test(test_proto_frame_udp_hdrs_payload_apart),
	    cmocka_unit_test(test_proto_arp_and_neigh),
	};

	return cmocka_run_group_tests(tests, NULL, NULL);
}
