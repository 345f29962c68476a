/* SPDX-License-Identifier: MIT */
/*
 * The packet dispatcher (nicfw/dispatch.c) on hand-made frames with fake executors (one
 * struct kexec per model, exec/kexec.h; an inference that fails answered ERROR): ARP for the
 * NIC's address answered; non-inference traffic passed; a REQUEST answered with a RESPONSE
 * whose addresses are swapped; an ACTIVATION answered to its reply address; unknown model and
 * not-my-layer passed up (but an ACTIVATION from the host for them answered with ERROR); the
 * RESPONSE's total covering the host's time carried in the ACTIVATION; bad shape and
 * malformed requests answered with ERROR; a full queue answered BUSY; fragments reassembled;
 * counters by reason; the NIC times kept per model. The trust boundary: ACTIVATION,
 * RESPONSE and ERROR from the wire dropped and counted; completion notices (RESPONSE and
 * ERROR, with host_ref and cookie) to the host port only; the shape check on (C,H,W); no reply
 * larger than its request to a source not allowed; the allow-list; ERRORs rate-limited per
 * source. Models changed while it runs (slots, the map, draining). The fixture:
 * tests/support/dispatch_fixture.h.
 */
#include "tests/support/dispatch_fixture.h"

static void test_dispatch_arp_and_forward(void **state)
{
	struct nicfw_disp *d = mk_disp();
	uint8_t f[128] = {0}, pl[10] = {0};
	uint64_t c[NICFW_C__COUNT];
	uint32_t len;

	memset(f, 0xff, 6);
	memcpy(f + 6, cli_mac, 6);
	proto_put16(f + 12, 0x0806);
	proto_put16(f + 14, 1);
	proto_put16(f + 16, 0x0800);
	f[18] = 6;
	f[19] = 4;
	proto_put16(f + 20, 1);
	memcpy(f + 22, cli_mac, 6);
	proto_put32(f + 28, CLI_IP);
	proto_put32(f + 38, NIC_IP);
	assert_int_equal(nicfw_disp_rx(d, NICFW_PORT_WIRE, f, 60, 0), NICFW_DISP_REPLY);
	assert_memory_equal(f, cli_mac, 6);
	assert_memory_equal(f + 22, nic_mac, 6);
	assert_int_equal(f[21], 2);
	proto_put32(f + 38, HOST_IP); /* ARP for someone else: forwarded */
	assert_int_equal(nicfw_disp_rx(d, NICFW_PORT_WIRE, f, 60, 0), NICFW_DISP_PASS);
	len = udp_frame(f, HOST_IP, 9999, pl, sizeof(pl));
	assert_int_equal(nicfw_disp_rx(d, NICFW_PORT_WIRE, f, len, 0), NICFW_DISP_PASS);
	assert_int_equal(nicfw_disp_rx(d, NICFW_PORT_HOST, f, len, 0), NICFW_DISP_PASS);
	nicfw_disp_counters(d, c, NULL);
	assert_int_equal(c[NICFW_C_ARP_REPLIES], 1);
	assert_int_equal(c[NICFW_C_FWD_TO_HOST], 2);
	assert_int_equal(c[NICFW_C_FWD_TO_WIRE], 1);
	assert_int_equal(n_out, 0);
	nicfw_disp_free(d);
}

static void test_dispatch_request_response(void **state)
{
	struct nicfw_disp *d = mk_disp();
	uint8_t f[2048];
	struct proto_msg m;
	uint64_t c[NICFW_C__COUNT], v[PROTO_VERDICT__COUNT];
	uint32_t len = request(f, MODEL, 77, IN, 4);

	assert_int_equal(nicfw_disp_rx(d, NICFW_PORT_WIRE, f, len, 10), NICFW_DISP_CONSUMED);
	assert_int_equal(nicfw_disp_poll(d, 20), 1);
	assert_int_equal(n_out, 1);
	expect_reply(&out[0], PROTO_RESPONSE, &m);
	assert_int_equal(out[0].port, NICFW_PORT_WIRE);
	assert_int_equal(m.request_id, 77);
	assert_int_equal(m.resp.cls, 1); /* 4 % 3 */
	assert_int_equal(m.resp.num_classes, 3);
	assert_true(m.resp.executors & PROTO_EX_NIC);
	assert_true(proto_le_get_f64(m.data + 8) == 5.0);
	/* model id 0: the default (first) model */
	len = request(f, 0, 78, IN, 0);
	assert_int_equal(nicfw_disp_rx(d, NICFW_PORT_WIRE, f, len, 30), NICFW_DISP_CONSUMED);
	assert_int_equal(nicfw_disp_poll(d, 40), 1);
	nicfw_disp_counters(d, c, v);
	assert_int_equal(c[NICFW_C_REQUESTS], 2);
	assert_int_equal(c[NICFW_C_ANSWERED], 2);
	assert_int_equal(v[PROTO_OK], 2);
	nicfw_disp_free(d);
}

static void test_dispatch_passed_up_and_errors(void **state)
{
	struct nicfw_disp *d = mk_disp();
	uint8_t f[2048];
	struct proto_msg m;
	uint64_t c[NICFW_C__COUNT], v[PROTO_VERDICT__COUNT];
	uint32_t len;

	len = request(f, 0x5555, 1, IN, 0); /* unknown model */
	assert_int_equal(nicfw_disp_rx(d, NICFW_PORT_WIRE, f, len, 0), NICFW_DISP_PASS);
	len = request(f, 0x99, 2, IN, 0); /* the NIC holds only its tail: not my layer */
	assert_int_equal(nicfw_disp_rx(d, NICFW_PORT_WIRE, f, len, 0), NICFW_DISP_PASS);
	len = request(f, MODEL, 3, 9, 0); /* wrong shape */
	assert_int_equal(nicfw_disp_rx(d, NICFW_PORT_WIRE, f, len, 0), NICFW_DISP_CONSUMED);
	assert_int_equal(n_out, 1);
	expect_reply(&out[0], PROTO_ERROR, &m);
	assert_int_equal(m.err.code, PROTO_ERR_BAD_SHAPE);
	len = request(f, MODEL, 4, IN, 0); /* a malformed request: trailing byte */
	f[len] = 0;
	f[14 + 3] = (uint8_t)(f[14 + 3] + 1);
	f[14 + 20 + 5] = (uint8_t)(f[14 + 20 + 5] + 1);
	assert_int_equal(nicfw_disp_rx(d, NICFW_PORT_WIRE, f, len + 1, 0), NICFW_DISP_CONSUMED);
	assert_int_equal(n_out, 2);
	expect_reply(&out[1], PROTO_ERROR, &m);
	assert_int_equal(m.err.code, PROTO_ERR_BAD_REQUEST);
	assert_int_equal(m.err.detail, PROTO_BAD_TRAILING);
	assert_int_equal(m.request_id, 4);
	len = udp_frame(f, NIC_IP, PROTO_DEFAULT_PORT, "junk", 4); /* junk: counted, not answered */
	assert_int_equal(nicfw_disp_rx(d, NICFW_PORT_WIRE, f, len, 0), NICFW_DISP_CONSUMED);
	assert_int_equal(n_out, 2);
	nicfw_disp_counters(d, c, v);
	assert_int_equal(c[NICFW_C_UNKNOWN_MODEL], 1);
	assert_int_equal(c[NICFW_C_NOT_MY_LAYER], 1);
	assert_int_equal(c[NICFW_C_ERR_BAD_SHAPE], 1);
	assert_int_equal(c[NICFW_C_ERR_BAD_REQUEST], 1);
	assert_int_equal(v[PROTO_BAD_SHORT], 1);
	assert_int_equal(v[PROTO_BAD_TRAILING], 1);
	nicfw_disp_free(d);
}

static void test_dispatch_busy(void **state)
{
	struct nicfw_disp *d = mk_disp();
	uint8_t f[2048];
	struct proto_msg m;
	uint32_t len;

	eng_hold = true;
	for (uint32_t i = 0; i <= NICFW_DISP_QUEUE; i++) {
		len = request(f, MODEL, i, IN, (uint8_t)i);
		assert_int_equal(nicfw_disp_rx(d, NICFW_PORT_WIRE, f, len, 0), NICFW_DISP_CONSUMED);
	}
	assert_int_equal(nicfw_disp_pending(d), NICFW_DISP_QUEUE);
	assert_int_equal(n_out, 1);
	expect_reply(&out[0], PROTO_ERROR, &m);
	assert_int_equal(m.err.code, PROTO_ERR_BUSY);
	eng_hold = false;
	for (uint32_t i = 0; i < NICFW_DISP_QUEUE; i++)
		assert_int_equal(nicfw_disp_poll(d, 1), 1);
	assert_int_equal(n_out, 1 + NICFW_DISP_QUEUE);
	for (uint32_t i = 0; i < NICFW_DISP_QUEUE; i++) {
		expect_reply(&out[1 + i], PROTO_RESPONSE, &m);
		assert_int_equal(m.request_id, i); /* in order */
	}
	nicfw_disp_free(d);
}

/* An ACTIVATION from the host: the RESPONSE goes out of the wire port to its reply address. */
static void test_dispatch_activation(void **state)
{
	struct nicfw_disp *d = mk_disp();
	uint8_t f[2048], dg[256], body[8] = {1};
	struct proto_msg m;
	uint32_t len;
	int n;

	len = request(f, MODEL, 1, IN, 0); /* teaches the NIC the front-end's MAC */
	nicfw_disp_rx(d, NICFW_PORT_WIRE, f, len, 0);
	nicfw_disp_poll(d, 0);
	proto_msg_init(&m, PROTO_ACTIVATION, 0x99, 55);
	proto_msg_set_tensor(&m, PROTO_FMT_BITS, 64, 1, 1, 0, 0);
	m.tensor.layer = 2;
	memcpy(m.act.reply_addr, (uint8_t[16]){[10] = 0xff, [11] = 0xff, 10, 88, 0, 2}, 16);
	m.act.reply_port = 40000;
	m.act.executors = PROTO_EX_CPU;
	n = proto_build(&m, body, 8, dg, sizeof(dg));
	assert_true(n > 0);
	len = udp_frame(f, NIC_IP, PROTO_DEFAULT_PORT, dg, (uint32_t)n);
	assert_int_equal(nicfw_disp_rx(d, NICFW_PORT_HOST, f, len, 0), NICFW_DISP_CONSUMED);
	assert_int_equal(nicfw_disp_poll(d, 0), 1);
	assert_int_equal(n_out, 2);
	assert_int_equal(out[1].port, NICFW_PORT_WIRE);
	expect_reply(&out[1], PROTO_RESPONSE, &m);
	assert_int_equal(m.request_id, 55);
	assert_int_equal(m.resp.executors, PROTO_EX_CPU | PROTO_EX_NIC);
	nicfw_disp_free(d);
}

static uint32_t activation_ref(uint8_t *f, uint32_t model, uint16_t layer, uint64_t rid,
			       const uint32_t t_prior[4], uint32_t host_ref, uint64_t cookie)
{
	uint8_t dg[256], body[8] = {1};
	struct proto_msg m;
	int n;

	proto_msg_init(&m, PROTO_ACTIVATION, model, rid);
	m.act.host_ref = host_ref;
	m.act.cookie = cookie;
	proto_msg_set_tensor(&m, PROTO_FMT_BITS, 64, 1, 1, 0, 0);
	m.tensor.layer = layer;
	memcpy(m.act.reply_addr, (uint8_t[16]){[10] = 0xff, [11] = 0xff, 10, 88, 0, 2}, 16);
	m.act.reply_port = 40000;
	m.act.executors = PROTO_EX_CPU;
	m.act.t_rx_ns = t_prior[0];
	m.act.t_queue_ns = t_prior[1];
	m.act.t_host_ns = t_prior[2];
	m.act.t_pack_ns = t_prior[3];
	n = proto_build(&m, body, 8, dg, sizeof(dg));
	assert_true(n > 0);
	return udp_frame(f, NIC_IP, PROTO_DEFAULT_PORT, dg, (uint32_t)n);
}

static uint32_t activation(uint8_t *f, uint32_t model, uint16_t layer, uint64_t rid,
			   const uint32_t t_prior[4])
{
	return activation_ref(f, model, layer, rid, t_prior, 0, 0);
}

/* An ACTIVATION from the host for a model or layer the NIC does not hold: never forwarded to
 * the wire, answered to the host with an ERROR (so that it falls back at once), counted. */
static void test_dispatch_activation_not_held(void **state)
{
	static const uint32_t t0[4] = {0};
	struct nicfw_disp *d = mk_disp();
	uint64_t c[NICFW_C__COUNT];
	uint8_t f[2048];
	struct proto_msg m;
	uint32_t len;

	len = activation(f, 0x5555, 2, 61, t0);
	assert_int_equal(nicfw_disp_rx(d, NICFW_PORT_HOST, f, len, 0), NICFW_DISP_CONSUMED);
	assert_int_equal(n_out, 1);
	assert_int_equal(out[0].port, NICFW_PORT_HOST);
	expect_reply(&out[0], PROTO_ERROR, &m);
	assert_int_equal(m.err.code, PROTO_ERR_UNKNOWN_MODEL);
	assert_int_equal(m.err.detail, 0x5555);
	assert_int_equal(m.request_id, 61);
	len = activation(f, 0x99, 1, 62, t0); /* the NIC's part starts at op 2 */
	assert_int_equal(nicfw_disp_rx(d, NICFW_PORT_HOST, f, len, 0), NICFW_DISP_CONSUMED);
	assert_int_equal(n_out, 2);
	assert_int_equal(out[1].port, NICFW_PORT_HOST);
	expect_reply(&out[1], PROTO_ERROR, &m);
	assert_int_equal(m.err.code, PROTO_ERR_UNSUPPORTED);
	assert_int_equal(m.err.detail, 2);
	assert_int_equal(m.request_id, 62);
	/* from the wire, the same ACTIVATION is dropped: neither answered nor passed up */
	len = activation(f, 0x5555, 2, 63, t0);
	assert_int_equal(nicfw_disp_rx(d, NICFW_PORT_WIRE, f, len, 0), NICFW_DISP_CONSUMED);
	assert_int_equal(n_out, 2);
	assert_int_equal(nicfw_disp_poll(d, 0), 0);
	nicfw_disp_counters(d, c, NULL);
	assert_int_equal(c[NICFW_C_ERR_UNKNOWN_MODEL], 1);
	assert_int_equal(c[NICFW_C_ERR_UNSUPPORTED_LAYER], 1);
	assert_int_equal(c[NICFW_C_UNKNOWN_MODEL], 1);
	assert_int_equal(c[NICFW_C_WIRE_ACTIVATION], 1);
	assert_int_equal(c[NICFW_C_ERROR_NOTICES], 2);
	assert_int_equal(c[NICFW_C_NOT_MY_LAYER], 1);
	assert_int_equal(c[NICFW_C_ERRORS_SENT], 2);
	assert_int_equal(c[NICFW_C_FWD_TO_WIRE], 0);
	assert_int_equal(c[NICFW_C_ACTIVATIONS], 0);
	nicfw_disp_free(d);
}

/* The RESPONSE to an ACTIVATION: total is the server-side total, the host's time carried in
 * the ACTIVATION plus the NIC's, so total = rx + queue + host + pack + nic. */
static void test_dispatch_activation_total(void **state)
{
	static const uint32_t prior[4] = {1000, 2000, 30000, 4000};
	struct nicfw_disp *d = mk_disp();
	uint8_t f[2048];
	struct proto_msg m;
	const uint32_t *t;
	uint32_t len;

	len = udp_frame(f, HOST_IP, 9999, "x", 1); /* teaches the NIC the front-end's MAC */
	assert_int_equal(nicfw_disp_rx(d, NICFW_PORT_WIRE, f, len, 0), NICFW_DISP_PASS);
	eng_hold = true;
	len = activation(f, 0x99, 2, 70, prior);
	assert_int_equal(nicfw_disp_rx(d, NICFW_PORT_HOST, f, len, 100000), NICFW_DISP_CONSUMED);
	len = activation(f, 0x99, 2, 71, prior); /* queued behind 70 */
	assert_int_equal(nicfw_disp_rx(d, NICFW_PORT_HOST, f, len, 100500), NICFW_DISP_CONSUMED);
	assert_int_equal(nicfw_disp_poll(d, 150000), 0);
	eng_hold = false;
	assert_int_equal(nicfw_disp_poll(d, 160000), 1); /* 70 done, 71 submitted */
	assert_int_equal(nicfw_disp_poll(d, 170000), 1);
	assert_int_equal(n_out, 2);
	for (uint32_t i = 0; i < 2; i++) {
		expect_reply(&out[i], PROTO_RESPONSE, &m);
		t = m.resp.t_ns;
		assert_int_equal(m.request_id, 70 + i);
		assert_int_equal(t[PROTO_T_RX], 1000);
		assert_int_equal(t[PROTO_T_HOST], 30000);
		assert_int_equal(t[PROTO_T_PACK], 4000);
		assert_int_equal(t[PROTO_T_NIC], i ? 10000 : 60000);
		assert_int_equal(t[PROTO_T_QUEUE], i ? 2000 + 59500 : 2000);
		assert_int_equal(t[PROTO_T_TOTAL],
				 1000 + 2000 + 30000 + 4000 + (i ? 69500 : 60000));
		assert_int_equal(t[PROTO_T_TOTAL], t[PROTO_T_RX] + t[PROTO_T_QUEUE] +
						       t[PROTO_T_HOST] + t[PROTO_T_PACK] +
						       t[PROTO_T_NIC]);
	}
	/* the NIC times kept per model are the RESPONSEs' */
	assert_true(nicfw_disp_timing(d, 1)->requests == 2 &&
		    nicfw_disp_timing(d, 1)->ns_sum == 70000);
	assert_true(nicfw_disp_timing(d, 1)->ns[0] == 60000 &&
		    nicfw_disp_timing(d, 1)->ns[1] == 10000);
	assert_int_equal(nicfw_disp_timing(d, 0)->requests, 0);
	nicfw_disp_free(d);
}

/* An inference its executor fails: ERROR internal, to the requester or (an ACTIVATION) to the
 * host as a notice; the queue moves on. */
static void test_dispatch_executor_fails(void **state)
{
	static const uint32_t t0[4] = {0};
	struct nicfw_disp *d = mk_disp();
	uint64_t k[NICFW_C__COUNT];
	uint8_t f[2048];
	struct proto_msg m;
	uint32_t len;

	eng_status = -EIO;
	len = request(f, MODEL, 1, IN, 1);
	assert_int_equal(nicfw_disp_rx(d, NICFW_PORT_WIRE, f, len, 0), NICFW_DISP_CONSUMED);
	len = activation_ref(f, 0x99, 2, 2, t0, 0x02000001, 0x77);
	assert_int_equal(nicfw_disp_rx(d, NICFW_PORT_HOST, f, len, 0), NICFW_DISP_CONSUMED);
	assert_int_equal(nicfw_disp_poll(d, 10), 0);
	assert_int_equal(nicfw_disp_pending(d), 0);
	assert_int_equal(n_out, 2);
	expect_reply(&out[0], PROTO_ERROR, &m);
	assert_true(out[0].port == NICFW_PORT_WIRE && m.err.code == PROTO_ERR_INTERNAL);
	expect_reply(&out[1], PROTO_ERROR, &m);
	assert_true(out[1].port == NICFW_PORT_HOST && m.err.code == PROTO_ERR_INTERNAL);
	assert_true(m.err.host_ref == 0x02000001 && m.err.cookie == 0x77);
	eng_status = 0;
	len = request(f, MODEL, 3, IN, 1);
	assert_int_equal(nicfw_disp_rx(d, NICFW_PORT_WIRE, f, len, 20), NICFW_DISP_CONSUMED);
	assert_int_equal(nicfw_disp_poll(d, 30), 1);
	expect_reply(&out[2], PROTO_RESPONSE, &m);
	assert_int_equal(m.request_id, 3);
	nicfw_disp_counters(d, k, NULL);
	assert_int_equal(k[NICFW_C_ERR_INTERNAL], 2);
	assert_int_equal(k[NICFW_C_ANSWERED], 1);
	nicfw_disp_free(d);
}

/* A RESPONSE (1 class) or an ERROR datagram as a front-end could forge it; returns its length. */
static int forged_reply(uint8_t *dg, size_t cap, uint8_t type, uint64_t rid, uint32_t host_ref,
			uint64_t cookie)
{
	uint8_t score[8] = {0};
	struct proto_msg m;

	proto_msg_init(&m, type, 0x99, rid);
	if (type == PROTO_RESPONSE) {
		m.hdr_len = PROTO_RESP_NOTICE_HDR_LEN;
		m.resp.num_classes = 1;
		m.resp.score_fmt = PROTO_FMT_F64;
		m.resp.host_ref = host_ref;
		m.resp.cookie = cookie;
		return proto_build(&m, score, 8, dg, cap);
	}
	m.hdr_len = PROTO_ERROR_NOTICE_HDR_LEN;
	m.err.code = PROTO_ERR_BUSY;
	m.err.host_ref = host_ref;
	m.err.cookie = cookie;
	m.total_len = 1;
	return proto_build(&m, "x", 1, dg, cap);
}

/* From the wire: ACTIVATIONs (valid or not), RESPONSEs and ERRORs are dropped, counted, never
 * answered and never passed up; the same RESPONSE from the host passes to the wire. */
static void test_dispatch_wire_trust(void **state)
{
	static const uint32_t t0[4] = {0};
	struct nicfw_disp *d = mk_disp();
	uint64_t c[NICFW_C__COUNT];
	uint8_t f[2048], dg[256];
	uint32_t len;
	int n;

	len = activation(f, 0x99, 2, 80, t0); /* held, at the right layer: still refused */
	assert_int_equal(nicfw_disp_rx(d, NICFW_PORT_WIRE, f, len, 0), NICFW_DISP_CONSUMED);
	f[14 + 3] = (uint8_t)(f[14 + 3] + 1); /* malformed: a trailing byte */
	f[14 + 20 + 5] = (uint8_t)(f[14 + 20 + 5] + 1);
	f[len] = 0;
	assert_int_equal(nicfw_disp_rx(d, NICFW_PORT_WIRE, f, len + 1, 0), NICFW_DISP_CONSUMED);
	for (uint8_t t = PROTO_RESPONSE; t <= PROTO_ERROR; t++) {
		n = forged_reply(dg, sizeof(dg), t, 80, 0x01000001, 42);
		assert_true(n > 0);
		len = udp_frame(f, NIC_IP, PROTO_DEFAULT_PORT, dg, (uint32_t)n);
		assert_int_equal(nicfw_disp_rx(d, NICFW_PORT_WIRE, f, len, 0), NICFW_DISP_CONSUMED);
		assert_int_equal(nicfw_disp_rx(d, NICFW_PORT_HOST, f, len, 0), NICFW_DISP_PASS);
	}
	assert_int_equal(nicfw_disp_poll(d, 0), 0);
	assert_int_equal(n_out, 0);
	assert_int_equal(nicfw_disp_pending(d), 0);
	nicfw_disp_counters(d, c, NULL);
	assert_int_equal(c[NICFW_C_WIRE_ACTIVATION], 2);
	assert_int_equal(c[NICFW_C_WIRE_REPLY], 2);
	assert_int_equal(c[NICFW_C_PASSED_UP_TYPE], 2);
	assert_int_equal(c[NICFW_C_ACTIVATIONS], 0);
	assert_int_equal(c[NICFW_C_ERRORS_SENT], 0);
	assert_int_equal(c[NICFW_C_FWD_TO_HOST], 0);
	nicfw_disp_free(d);
}

/* Completion notices: the RESPONSE to the front-end in the short form, its copy to the host
 * port in the notice form with host_ref and cookie; ERRORs about ACTIVATIONs (unknown model, a
 * malformed one, a full queue) as notices to the host port. */
static void test_dispatch_notices(void **state)
{
	static const uint32_t t0[4] = {0};
	struct nicfw_disp_config c = {0};
	struct nicfw_disp *d;
	uint8_t f[2048];
	struct proto_msg m;
	uint32_t len;

	cfg_init(&c);
	c.notify_host = true;
	c.n_models = 1;
	fake_model(&c.model[0], 0x99, 2, MODEL_FMT_BITS, 64, 1, 1);
	d = create(&c);
	len = udp_frame(f, HOST_IP, 9999, "x", 1); /* teaches the NIC the front-end's MAC */
	assert_int_equal(nicfw_disp_rx(d, NICFW_PORT_WIRE, f, len, 0), NICFW_DISP_PASS);
	len = activation_ref(f, 0x99, 2, 90, t0, 0x02000007, 0x1122334455667788ull);
	assert_int_equal(nicfw_disp_rx(d, NICFW_PORT_HOST, f, len, 0), NICFW_DISP_CONSUMED);
	assert_int_equal(nicfw_disp_poll(d, 0), 1);
	assert_int_equal(n_out, 2);
	assert_int_equal(out[0].port, NICFW_PORT_WIRE);
	expect_reply(&out[0], PROTO_RESPONSE, &m);
	assert_int_equal(m.hdr_len, PROTO_RESP_HDR_LEN);
	assert_int_equal(m.resp.cookie, 0);
	assert_int_equal(out[1].port, NICFW_PORT_HOST);
	expect_reply(&out[1], PROTO_RESPONSE, &m);
	assert_int_equal(m.hdr_len, PROTO_RESP_NOTICE_HDR_LEN);
	assert_int_equal(m.request_id, 90);
	assert_int_equal(m.resp.host_ref, 0x02000007);
	assert_true(m.resp.cookie == 0x1122334455667788ull);
	/* unknown model: an ERROR notice to the host port */
	len = activation_ref(f, 0x5555, 2, 91, t0, 0x02000008, 0xabcdefull);
	assert_int_equal(nicfw_disp_rx(d, NICFW_PORT_HOST, f, len, 0), NICFW_DISP_CONSUMED);
	assert_int_equal(n_out, 3);
	assert_int_equal(out[2].port, NICFW_PORT_HOST);
	expect_reply(&out[2], PROTO_ERROR, &m);
	assert_int_equal(m.hdr_len, PROTO_ERROR_NOTICE_HDR_LEN);
	assert_int_equal(m.err.code, PROTO_ERR_UNKNOWN_MODEL);
	assert_int_equal(m.err.host_ref, 0x02000008);
	assert_true(m.err.cookie == 0xabcdefull);
	/* malformed (a trailing byte): ERROR bad_request, still with its host_ref and cookie */
	len = activation_ref(f, 0x99, 2, 92, t0, 0x02000009, 0xfeedull);
	f[14 + 3] = (uint8_t)(f[14 + 3] + 1);
	f[14 + 20 + 5] = (uint8_t)(f[14 + 20 + 5] + 1);
	f[len] = 0;
	assert_int_equal(nicfw_disp_rx(d, NICFW_PORT_HOST, f, len + 1, 0), NICFW_DISP_CONSUMED);
	assert_int_equal(n_out, 4);
	assert_int_equal(out[3].port, NICFW_PORT_HOST);
	expect_reply(&out[3], PROTO_ERROR, &m);
	assert_int_equal(m.err.code, PROTO_ERR_BAD_REQUEST);
	assert_int_equal(m.err.detail, PROTO_BAD_TRAILING);
	assert_int_equal(m.request_id, 92);
	assert_int_equal(m.err.host_ref, 0x02000009);
	assert_true(m.err.cookie == 0xfeedull);
	/* a full queue: ERROR busy notices, never limited (the host port is trusted) */
	eng_hold = true;
	for (uint32_t i = 0; i < NICFW_DISP_QUEUE + 300; i++) {
		len = activation_ref(f, 0x99, 2, 1000 + i, t0, 0x03000000 + i, i);
		assert_int_equal(nicfw_disp_rx(d, NICFW_PORT_HOST, f, len, 0), NICFW_DISP_CONSUMED);
	}
	assert_int_equal(n_out, 4 + 300);
	for (uint32_t i = 4; i < n_out; i++) {
		assert_int_equal(out[i % 128].port, NICFW_PORT_HOST);
	}
	nicfw_disp_free(d);
}

/* A REQUEST of a u8 tensor (c,h,w) with hdr_len hl, from sip; returns the frame length. */
static uint32_t request_shaped(uint8_t *f, uint32_t sip, uint32_t model, uint64_t rid, uint32_t c,
			       uint32_t h, uint32_t w, uint16_t hl)
{
	uint8_t body[IN] = {1}, dg[512];
	struct proto_msg m;
	int n;

	proto_msg_init(&m, PROTO_REQUEST, model, rid);
	proto_msg_set_tensor(&m, PROTO_FMT_U8, c, h, w, 0, 0);
	m.hdr_len = hl;
	n = proto_build(&m, body, (size_t)c * h * w, dg, sizeof(dg));
	assert_true(n > 0);
	return udp_frame_from(f, sip, NIC_IP, PROTO_DEFAULT_PORT, dg, (uint32_t)n);
}

/* The shape check: the element count is not enough, (C,H,W) and the format must be the
 * model's (proto_input_matches, as in splitnic-host and the XDP program). */
static void test_dispatch_shape(void **state)
{
	struct nicfw_disp *d = mk_disp();
	uint8_t f[2048], dg[512], body[4 * IN] = {0};
	uint64_t c[NICFW_C__COUNT];
	struct proto_msg m;
	uint32_t len;
	int n;

	len = request_shaped(f, CLI_IP, MODEL, 1, 1, 1, IN, 64); /* the model's (1,1,IN) */
	assert_int_equal(nicfw_disp_rx(d, NICFW_PORT_WIRE, f, len, 0), NICFW_DISP_CONSUMED);
	assert_int_equal(nicfw_disp_poll(d, 0), 1);
	len = request_shaped(f, CLI_IP, MODEL, 2, 1, IN, 1, 64); /* same count, (1,IN,1) */
	assert_int_equal(nicfw_disp_rx(d, NICFW_PORT_WIRE, f, len, 0), NICFW_DISP_CONSUMED);
	len = request_shaped(f, CLI_IP, MODEL, 3, 4, 4, IN / 16, 64); /* (4,4,IN/16) */
	assert_int_equal(nicfw_disp_rx(d, NICFW_PORT_WIRE, f, len, 0), NICFW_DISP_CONSUMED);
	proto_msg_init(&m, PROTO_REQUEST, MODEL, 4); /* f32 of the right shape */
	proto_msg_set_tensor(&m, PROTO_FMT_F32, 1, 1, IN, 0, 0);
	n = proto_build(&m, body, 4 * IN, dg, sizeof(dg));
	assert_true(n > 0);
	len = udp_frame(f, NIC_IP, PROTO_DEFAULT_PORT, dg, (uint32_t)n);
	assert_int_equal(nicfw_disp_rx(d, NICFW_PORT_WIRE, f, len, 0), NICFW_DISP_CONSUMED);
	assert_int_equal(nicfw_disp_poll(d, 0), 0);
	assert_int_equal(n_out, 4);
	for (uint32_t i = 1; i < 4; i++) {
		expect_reply(&out[i], PROTO_ERROR, &m);
		assert_int_equal(m.err.code, PROTO_ERR_BAD_SHAPE);
		assert_int_equal(m.request_id, i + 1);
	}
	nicfw_disp_counters(d, c, NULL);
	assert_int_equal(c[NICFW_C_ERR_BAD_SHAPE], 3);
	assert_int_equal(c[NICFW_C_ANSWERED], 1);
	nicfw_disp_free(d);
}

/* A model whose RESPONSE (80 + 24 bytes) is larger than its REQUEST (64 + 8): no reply larger
 * than the request to a source not allowed (ERROR too_large instead, itself no larger); a
 * REQUEST padded to the RESPONSE's size is answered; an ERROR is cut to the datagram that
 * caused it, or not sent when even its header would not fit. With an allow-list, a listed
 * source gets the RESPONSE and others nothing. */
static void test_dispatch_no_amplification(void **state)
{
	struct nicfw_disp_config c = {0};
	struct nicfw_disp *d;
	uint8_t f[2048], dg[64];
	uint64_t k[NICFW_C__COUNT];
	struct proto_msg m;
	uint32_t len;

	cfg_init(&c);
	c.n_models = 1;
	fake_model(&c.model[0], MODEL, 0, MODEL_FMT_U8, 1, 1, 8);
	d = create(&c);
	len = request_shaped(f, CLI_IP, MODEL, 1, 1, 1, 8, 64); /* 72 bytes, RESPONSE 104 */
	assert_int_equal(nicfw_disp_rx(d, NICFW_PORT_WIRE, f, len, 0), NICFW_DISP_CONSUMED);
	assert_int_equal(nicfw_disp_poll(d, 0), 0);
	assert_int_equal(n_out, 1);
	expect_reply(&out[0], PROTO_ERROR, &m);
	assert_int_equal(m.err.code, PROTO_ERR_TOO_LARGE);
	assert_int_equal(m.err.detail, 104);
	assert_true(out[0].len - 42 <= 72);
	len = request_shaped(f, CLI_IP, MODEL, 2, 1, 1, 8, 96); /* padded header: 104 bytes */
	assert_int_equal(nicfw_disp_rx(d, NICFW_PORT_WIRE, f, len, 0), NICFW_DISP_CONSUMED);
	assert_int_equal(nicfw_disp_poll(d, 0), 1);
	expect_reply(&out[1], PROTO_RESPONSE, &m);
	assert_int_equal(out[1].len - 42, 104);
	/* a 48-byte datagram that says REQUEST (hdr_len 48: bad): a 48-byte ERROR, reason cut */
	memset(dg, 0, sizeof(dg));
	dg[0] = 0x53, dg[1] = 0x4e, dg[2] = 1, dg[3] = PROTO_REQUEST, dg[5] = 48, dg[23] = 3;
	len = udp_frame(f, NIC_IP, PROTO_DEFAULT_PORT, dg, 48);
	assert_int_equal(nicfw_disp_rx(d, NICFW_PORT_WIRE, f, len, 0), NICFW_DISP_CONSUMED);
	assert_int_equal(n_out, 3);
	expect_reply(&out[2], PROTO_ERROR, &m);
	assert_int_equal(m.err.code, PROTO_ERR_BAD_REQUEST);
	assert_int_equal(m.request_id, 3);
	assert_int_equal(out[2].len - 42, 48);
	/* 36 bytes: not even an ERROR's header fits; nothing is sent */
	len = udp_frame(f, NIC_IP, PROTO_DEFAULT_PORT, dg, 36);
	assert_int_equal(nicfw_disp_rx(d, NICFW_PORT_WIRE, f, len, 0), NICFW_DISP_CONSUMED);
	assert_int_equal(n_out, 3);
	nicfw_disp_counters(d, k, NULL);
	assert_int_equal(k[NICFW_C_REPLY_TOO_LARGE], 2);
	assert_int_equal(k[NICFW_C_ERR_TOO_LARGE], 1);
	assert_int_equal(k[NICFW_C_ERR_BAD_REQUEST], 2);
	assert_int_equal(k[NICFW_C_ERRORS_SENT], 2);
	nicfw_disp_free(d);

	/* an allow-list: CLI_IP/32 may get the larger RESPONSE; HOST_IP gets nothing at all */
	assert_int_equal(proto_trust_allow(&c.trust, "10.88.0.2/32"), 0);
	d = create(&c);
	len = request_shaped(f, CLI_IP, MODEL, 4, 1, 1, 8, 64);
	assert_int_equal(nicfw_disp_rx(d, NICFW_PORT_WIRE, f, len, 0), NICFW_DISP_CONSUMED);
	assert_int_equal(nicfw_disp_poll(d, 0), 1);
	expect_reply(&out[0], PROTO_RESPONSE, &m);
	assert_int_equal(m.request_id, 4);
	len = request_shaped(f, HOST_IP, MODEL, 5, 1, 1, 8, 96);
	assert_int_equal(nicfw_disp_rx(d, NICFW_PORT_WIRE, f, len, 0), NICFW_DISP_CONSUMED);
	len = request_shaped(f, HOST_IP, MODEL, 6, 1, 2, 4, 64); /* bad shape: no ERROR either */
	assert_int_equal(nicfw_disp_rx(d, NICFW_PORT_WIRE, f, len, 0), NICFW_DISP_CONSUMED);
	len = udp_frame_from(f, HOST_IP, NIC_IP, PROTO_DEFAULT_PORT, dg, 48); /* malformed */
	assert_int_equal(nicfw_disp_rx(d, NICFW_PORT_WIRE, f, len, 0), NICFW_DISP_CONSUMED);
	len = request_shaped(f, HOST_IP, 0x5555, 7, 1, 1, 8, 64); /* not the NIC's: passed up */
	assert_int_equal(nicfw_disp_rx(d, NICFW_PORT_WIRE, f, len, 0), NICFW_DISP_PASS);
	assert_int_equal(nicfw_disp_poll(d, 0), 0);
	assert_int_equal(n_out, 1);
	nicfw_disp_counters(d, k, NULL);
	assert_int_equal(k[NICFW_C_NOT_ALLOWED], 3);
	assert_int_equal(k[NICFW_C_ANSWERED], 1);
	nicfw_disp_free(d);
}

/* ERRORs to the wire side are rate-limited per source: a burst, then one per interval. */
static void test_dispatch_error_rate(void **state)
{
	struct nicfw_disp_config c = {0};
	struct nicfw_disp *d;
	uint8_t f[2048];
	uint64_t k[NICFW_C__COUNT];
	struct proto_msg m;
	uint32_t len;

	cfg_init(&c);
	proto_trust_set_rate(&c.trust, 10, 3); /* one per 100 ms, 3 at once */
	c.n_models = 1;
	fake_model(&c.model[0], MODEL, 0, MODEL_FMT_U8, 1, 1, IN);
	d = create(&c);
	for (uint32_t i = 0; i < 5; i++) { /* bad shape, all at t = 1 s */
		len = request_shaped(f, CLI_IP, MODEL, i, 1, 2, IN / 2, 64);
		nicfw_disp_rx(d, NICFW_PORT_WIRE, f, len, 1000000000ull);
	}
	assert_int_equal(n_out, 3);
	len = request_shaped(f, HOST_IP, MODEL, 9, 1, 2, IN / 2, 64); /* another source */
	nicfw_disp_rx(d, NICFW_PORT_WIRE, f, len, 1000000000ull);
	assert_int_equal(n_out, 4);
	len = request_shaped(f, CLI_IP, MODEL, 10, 1, 2, IN / 2, 64); /* 100 ms later: one more */
	nicfw_disp_rx(d, NICFW_PORT_WIRE, f, len, 1100000000ull);
	nicfw_disp_rx(d, NICFW_PORT_WIRE, f, len, 1100000000ull);
	assert_int_equal(n_out, 5);
	expect_reply(&out[4], PROTO_ERROR, &m);
	assert_int_equal(m.request_id, 10);
	nicfw_disp_counters(d, k, NULL);
	assert_int_equal(k[NICFW_C_ERR_BAD_SHAPE], 8);
	assert_int_equal(k[NICFW_C_ERR_RATE_LIMITED], 3);
	assert_int_equal(k[NICFW_C_ERRORS_SENT], 5);
	nicfw_disp_free(d);
}

/* A request in 3 fragments (payload 256): reassembled, answered once. */
/* A HEALTH probe of len bytes asking role, from the wire (or the host port). */
static uint32_t probe(uint8_t *f, uint32_t len, uint8_t role)
{
	uint8_t dg[1500];

	assert_int_equal(proto_build_health_probe(dg, sizeof(dg), 5, len), (int)len);
	dg[PROTO_COMMON_LEN + 2] = role;
	return udp_frame(f, NIC_IP, PROTO_DEFAULT_PORT, dg, len);
}

static void test_dispatch_health(void **state)
{
	struct nicfw_health h;
	struct proto_health_model e;
	struct nicfw_disp *d;
	struct proto_msg m;
	uint64_t c[NICFW_C__COUNT];
	uint8_t f[2048], rep[1500];
	uint32_t len;
	int n;

	nicfw_health_init(&h, "edge-1");
	assert_int_equal(nicfw_health_add(&h, MODEL, 0, PROTO_FMT_U8, 1, 1, IN, 3, "mlp"), 0);
	assert_int_equal(nicfw_health_add(&h, 0x99, 2, PROTO_FMT_BITS, 64, 1, 1, 3, "cnn"), 0);
	assert_int_equal(nicfw_health_state(&h, false, true), PROTO_HEALTH_SERVING);
	assert_int_equal(nicfw_health_state(&h, false, false), PROTO_HEALTH_DEGRADED);
	assert_int_equal(nicfw_health_state(&h, true, false), PROTO_HEALTH_DRAINING);
	disp_health = &h;
	d = mk_disp();
	disp_health = NULL;
	/* any role or the NIC's: the NIC's report, to the prober, never longer than the probe */
	for (uint8_t role = 0; role <= PROTO_ROLE_NIC; role++) {
		len = probe(f, 1400, role);
		assert_int_equal(nicfw_disp_rx(d, NICFW_PORT_WIRE, f, len, 10),
				 NICFW_DISP_CONSUMED);
	}
	assert_int_equal(n_out, 2);
	expect_reply(&out[1], PROTO_HEALTH, &m);
	assert_int_equal(m.health.kind, PROTO_HEALTH_REPORT);
	assert_int_equal(m.health.role, PROTO_ROLE_NIC);
	assert_int_equal(m.health.state, PROTO_HEALTH_SERVING);
	assert_int_equal(m.health.n_models, 2);
	assert_int_equal(m.request_id, 5);
	proto_health_model_get(&m, 1, &e);
	assert_int_equal(e.mode, PROTO_MODE_NIC_PART);
	assert_int_equal(e.first_op, 2);
	assert_string_equal(e.name, "cnn");
	/* a 100-byte probe: only the identity fits, truncated */
	len = probe(f, 100, 0);
	assert_int_equal(nicfw_disp_rx(d, NICFW_PORT_WIRE, f, len, 10), NICFW_DISP_CONSUMED);
	assert_true(out[2].len - 42 <= 100);
	expect_reply(&out[2], PROTO_HEALTH, &m);
	assert_int_equal(m.health.n_models, 0);
	assert_int_equal(m.health.flags, PROTO_HEALTH_F_TRUNCATED);
	/* the host's role: passed up; from the host port: passed to the wire; a report from the
	 * wire: dropped */
	len = probe(f, 1400, PROTO_ROLE_HOST);
	assert_int_equal(nicfw_disp_rx(d, NICFW_PORT_WIRE, f, len, 10), NICFW_DISP_PASS);
	assert_int_equal(nicfw_disp_rx(d, NICFW_PORT_HOST, f, len, 10), NICFW_DISP_PASS);
	n = proto_build_health_report(rep, sizeof(rep), 1400, 5, PROTO_ROLE_HOST,
				      PROTO_HEALTH_SERVING, 0, "host", NULL, 0);
	assert_true(n > 0);
	len = udp_frame(f, NIC_IP, PROTO_DEFAULT_PORT, rep, (uint32_t)n);
	assert_int_equal(nicfw_disp_rx(d, NICFW_PORT_WIRE, f, len, 10), NICFW_DISP_CONSUMED);
	assert_int_equal(nicfw_disp_rx(d, NICFW_PORT_HOST, f, len, 10), NICFW_DISP_PASS);
	assert_int_equal(n_out, 3);
	/* draining: the report says so, and a REQUEST for the stand-alone model is refused */
	h.state = PROTO_HEALTH_DRAINING;
	len = probe(f, 1400, 0);
	assert_int_equal(nicfw_disp_rx(d, NICFW_PORT_WIRE, f, len, 10), NICFW_DISP_CONSUMED);
	expect_reply(&out[3], PROTO_HEALTH, &m);
	assert_int_equal(m.health.state, PROTO_HEALTH_DRAINING);
	len = request(f, MODEL, 9, IN, 1);
	assert_int_equal(nicfw_disp_rx(d, NICFW_PORT_WIRE, f, len, 20), NICFW_DISP_CONSUMED);
	expect_reply(&out[4], PROTO_ERROR, &m);
	assert_int_equal(m.err.code, PROTO_ERR_BUSY);
	assert_int_equal(m.err.detail, 1);
	nicfw_disp_counters(d, c, NULL);
	assert_int_equal(c[NICFW_C_HEALTH_ANSWERED], 4);
	assert_int_equal(c[NICFW_C_HEALTH_PASSED_UP], 1);
	assert_int_equal(c[NICFW_C_HEALTH_DROPPED], 1);
	assert_int_equal(c[NICFW_C_ERR_DRAINING], 1);
	assert_int_equal(c[NICFW_C_REQUESTS], 0);
	nicfw_disp_free(d);
}

static void test_dispatch_fragments(void **state)
{
	struct nicfw_disp_config c = {0};
	struct nicfw_disp *d;
	uint8_t f[2048], dg[512], body[600] = {7};
	struct proto_frag fr;
	struct proto_msg m;
	int n, k = 0;

	cfg_init(&c);
	c.n_models = 1;
	fake_model(&c.model[0], MODEL, 0, MODEL_FMT_U8, 1, 1, 600);
	d = create(&c);
	proto_msg_init(&m, PROTO_REQUEST, MODEL, 9);
	proto_msg_set_tensor(&m, PROTO_FMT_U8, 1, 1, 600, 0, 0);
	assert_int_equal(proto_frag_init(&fr, &m, body, 600, 256), 0);
	while ((n = proto_frag_next(&fr, dg, sizeof(dg))) > 0) {
		uint32_t len = udp_frame(f, NIC_IP, PROTO_DEFAULT_PORT, dg, (uint32_t)n);

		assert_int_equal(nicfw_disp_rx(d, NICFW_PORT_WIRE, f, len, 0), NICFW_DISP_CONSUMED);
		k++;
	}
	assert_true(k >= 3);
	assert_int_equal(nicfw_disp_poll(d, 0), 1);
	assert_int_equal(n_out, 1);
	expect_reply(&out[0], PROTO_RESPONSE, &m);
	assert_int_equal(m.resp.cls, 1); /* body[0] = 7, 7 % 3 */
	nicfw_disp_free(d);
}

/* Models changed while it runs: a new version of MODEL in a free slot takes the requests that
 * come after the map, the old one answers what it holds and is polled until then; model id 0
 * follows the map's first slot; a model no longer named is passed up; a slot larger than the
 * buffers set at create is refused. */
static void test_dispatch_reload(void **state)
{
	struct nicfw_disp *d = mk_disp();
	struct fake_exec *old, *nv;
	struct nicfw_disp_model md;
	const uint8_t map[2] = {2, 1}, only[1] = {1};
	uint8_t f[2048];
	struct proto_msg m;
	char err[256];
	uint32_t len;

	old = &fakes[(n_fakes - 2) % 4];
	eng_hold = true;
	len = request(f, MODEL, 1, IN, 0);
	assert_int_equal(nicfw_disp_rx(d, NICFW_PORT_WIRE, f, len, 0), NICFW_DISP_CONSUMED);
	fake_model(&md, MODEL, 0, MODEL_FMT_U8, 1, 1, IN);
	nv = md.x->priv;
	assert_false(nicfw_disp_slot_polled(d, 2));
	assert_int_equal(nicfw_disp_slot_set(d, 2, &md, err, sizeof(err)), 0);
	nicfw_disp_map(d, map, 2);
	len = request(f, MODEL, 2, IN, 1);
	assert_int_equal(nicfw_disp_rx(d, NICFW_PORT_WIRE, f, len, 0), NICFW_DISP_CONSUMED);
	assert_int_equal(old->tail, 1); /* request 1 on the old version, 2 on the new */
	assert_int_equal(nv->tail, 1);
	assert_int_equal(nicfw_disp_pending(d), 2);
	eng_hold = false;
	assert_int_equal(nicfw_disp_poll(d, 10), 2);
	assert_int_equal(n_out, 2);
	expect_reply(&out[0], PROTO_RESPONSE, &m);
	assert_int_equal(m.request_id, 1);
	expect_reply(&out[1], PROTO_RESPONSE, &m);
	assert_int_equal(m.request_id, 2);
	assert_true(nicfw_disp_slot_polled(d, 0)); /* seen empty at the next poll */
	nicfw_disp_poll(d, 20);
	assert_false(nicfw_disp_slot_polled(d, 0));
	assert_true(nicfw_disp_slot_polled(d, 2));
	nicfw_disp_slot_clear(d, 0);
	len = request(f, 0, 3, IN, 2); /* model id 0: the map's first */
	assert_int_equal(nicfw_disp_rx(d, NICFW_PORT_WIRE, f, len, 30), NICFW_DISP_CONSUMED);
	assert_int_equal(nv->tail, 2);
	assert_int_equal(nicfw_disp_poll(d, 40), 1);
	nicfw_disp_map(d, only, 1); /* unloaded: passed up (no host view) */
	len = request(f, MODEL, 4, IN, 0);
	assert_int_equal(nicfw_disp_rx(d, NICFW_PORT_WIRE, f, len, 50), NICFW_DISP_PASS);
	fake_model(&md, 0x77, 0, MODEL_FMT_U8, 1, 1, 2 * IN); /* beyond the reassembly's room */
	assert_int_equal(nicfw_disp_slot_set(d, 3, &md, err, sizeof(err)), -E2BIG);
	assert_non_null(strstr(err, "restart to serve it"));
	nicfw_disp_free(d);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
	    cmocka_unit_test(test_dispatch_arp_and_forward),
	    cmocka_unit_test(test_dispatch_request_response),
	    cmocka_unit_test(test_dispatch_passed_up_and_errors),
	    cmocka_unit_test(test_dispatch_busy),
	    cmocka_unit_test(test_dispatch_activation),
	    cmocka_unit_test(test_dispatch_activation_not_held),
	    cmocka_unit_test(test_dispatch_activation_total),
	    cmocka_unit_test(test_dispatch_executor_fails),
	    cmocka_unit_test(test_dispatch_fragments),
	    cmocka_unit_test(test_dispatch_wire_trust),
	    cmocka_unit_test(test_dispatch_notices),
	    cmocka_unit_test(test_dispatch_shape),
	    cmocka_unit_test(test_dispatch_no_amplification),
	    cmocka_unit_test(test_dispatch_error_rate),
	    cmocka_unit_test(test_dispatch_health),
	    cmocka_unit_test(test_dispatch_reload),
	};

	return cmocka_run_group_tests(tests, NULL, NULL);
}
