/* SPDX-License-Identifier: MIT */
/*
 * The dispatcher (nicfw/dispatch.c) with a host view (struct nicfw_host_view): the HEALTH probe to
 * the host, its report taken and never passed to the wire, REQUESTs the NIC does not answer
 * passed up only to a host that answers and holds their model (any, before its first report),
 * the others answered ERROR unknown_model or unavailable, counted; an ERROR bad_shape's reason
 * naming the model's input.
 */
#include "tests/support/dispatch_fixture.h"

/* With a host view (cfg.host): the probe to the host, its report taken, and REQUESTs the NIC does
 * not answer passed up only to a host that answers and holds the model; the others answered
 * ERROR unknown_model or unavailable. A bad shape's reason says what the model expects. */
static void test_dispatch_host_view(void **state)
{
	struct nicfw_host_view hv = {.key = 0xabcdef};
	struct nicfw_disp_config c = {0};
	struct proto_health_model e = {.model_id = 0x5555, .mode = PROTO_MODE_HOST_ONLY};
	struct nicfw_disp *d;
	struct proto_msg m;
	uint64_t k[NICFW_C__COUNT], rid;
	uint8_t f[2048], rep[1500];
	uint32_t len;
	int n;

	cfg_init(&c);
	c.n_models = 2;
	fake_model(&c.model[0], MODEL, 0, MODEL_FMT_U8, 1, 1, IN);
	fake_model(&c.model[1], 0x99, 2, MODEL_FMT_BITS, 64, 1, 1);
	c.host = &hv;
	d = create(&c);
	/* the probe: out of the host port, to the server's address and port, broadcast at first */
	assert_int_equal(nicfw_disp_probe_host(d, 5), 0);
	assert_int_equal(n_out, 1);
	assert_int_equal(out[0].port, NICFW_PORT_HOST);
	assert_memory_equal(out[0].frame, "\xff\xff\xff\xff\xff\xff", 6);
	assert_int_equal(proto_get32(out[0].frame + 30), NIC_IP);
	assert_int_equal(proto_get16(out[0].frame + 36), PROTO_DEFAULT_PORT);
	assert_int_equal(proto_parse(out[0].frame + 42, out[0].len - 42, &m), PROTO_OK);
	assert_int_equal(m.type, PROTO_HEALTH);
	assert_int_equal(m.health.kind, PROTO_HEALTH_PROBE);
	assert_int_equal(m.request_id >> 16, 0xabcdef);
	rid = m.request_id;
	/* a host just come that has not listed its models yet: any id passes up; not once it has
	 * been there a while without a report (a kernel behind the NIC, not a splitnic-host) */
	hv.up = hv.fresh = true;
	len = request(f, 0x7777, 9, IN, 0);
	assert_int_equal(nicfw_disp_rx(d, NICFW_PORT_WIRE, f, len, 8), NICFW_DISP_PASS);
	hv.fresh = false;
	len = request(f, 0x7777, 10, IN, 0);
	assert_int_equal(nicfw_disp_rx(d, NICFW_PORT_WIRE, f, len, 8), NICFW_DISP_CONSUMED);
	expect_reply(&out[1], PROTO_ERROR, &m);
	assert_int_equal(m.err.code, PROTO_ERR_UNKNOWN_MODEL);
	hv.up = false;
	/* no report yet: an id nobody holds, and the co-processor model of a host not answering */
	len = request(f, 0x5555, 1, IN, 0);
	assert_int_equal(nicfw_disp_rx(d, NICFW_PORT_WIRE, f, len, 10), NICFW_DISP_CONSUMED);
	expect_reply(&out[2], PROTO_ERROR, &m);
	assert_int_equal(m.err.code, PROTO_ERR_UNKNOWN_MODEL);
	assert_int_equal(m.err.detail, 0x5555);
	assert_memory_equal(m.data, "nic: unknown_model", 18);
	len = request(f, 0x99, 2, IN, 0);
	assert_int_equal(nicfw_disp_rx(d, NICFW_PORT_WIRE, f, len, 10), NICFW_DISP_CONSUMED);
	expect_reply(&out[3], PROTO_ERROR, &m);
	assert_int_equal(m.err.code, PROTO_ERR_UNAVAILABLE);
	assert_int_equal(m.err.detail, 0x99);
	/* the host's report (to the probe's id, from the host port): taken, not passed on */
	n = proto_build_health_report(rep, sizeof(rep), 1400, rid, PROTO_ROLE_HOST,
				      PROTO_HEALTH_SERVING, 0, "host", &e, 1);
	assert_true(n > 0);
	len = udp_frame_from(f, NIC_IP, NIC_IP, PROTO_DEFAULT_PORT, rep, (uint32_t)n);
	assert_int_equal(nicfw_disp_rx(d, NICFW_PORT_HOST, f, len, 20), NICFW_DISP_CONSUMED);
	assert_int_equal(hv.n_models, 1);
	assert_int_equal(hv.model_id[0], 0x5555);
	assert_int_equal(hv.last_heard, 20);
	/* a report to another id (a front-end's probe): passed to the wire */
	n = proto_build_health_report(rep, sizeof(rep), 1400, 77, PROTO_ROLE_HOST,
				      PROTO_HEALTH_SERVING, 0, "host", &e, 1);
	len = udp_frame_from(f, NIC_IP, NIC_IP, PROTO_DEFAULT_PORT, rep, (uint32_t)n);
	assert_int_equal(nicfw_disp_rx(d, NICFW_PORT_HOST, f, len, 20), NICFW_DISP_PASS);
	/* the host answers: its models and the co-processor ones pass up; others are unknown */
	hv.up = true;
	len = request(f, 0x5555, 3, IN, 0);
	assert_int_equal(nicfw_disp_rx(d, NICFW_PORT_WIRE, f, len, 30), NICFW_DISP_PASS);
	len = request(f, 0x99, 4, IN, 0);
	assert_int_equal(nicfw_disp_rx(d, NICFW_PORT_WIRE, f, len, 30), NICFW_DISP_PASS);
	len = request(f, 0x7777, 5, IN, 0);
	assert_int_equal(nicfw_disp_rx(d, NICFW_PORT_WIRE, f, len, 30), NICFW_DISP_CONSUMED);
	expect_reply(&out[4], PROTO_ERROR, &m);
	assert_int_equal(m.err.code, PROTO_ERR_UNKNOWN_MODEL);
	/* the host gone: its model is unavailable */
	hv.up = false;
	len = request(f, 0x5555, 6, IN, 0);
	assert_int_equal(nicfw_disp_rx(d, NICFW_PORT_WIRE, f, len, 40), NICFW_DISP_CONSUMED);
	expect_reply(&out[5], PROTO_ERROR, &m);
	assert_int_equal(m.err.code, PROTO_ERR_UNAVAILABLE);
	assert_memory_equal(m.data, "nic: unavailable", 16);
	/* a wrong shape: the reason names the model's input */
	len = request(f, MODEL, 7, 9, 0);
	assert_int_equal(nicfw_disp_rx(d, NICFW_PORT_WIRE, f, len, 40), NICFW_DISP_CONSUMED);
	expect_reply(&out[6], PROTO_ERROR, &m);
	assert_int_equal(m.err.code, PROTO_ERR_BAD_SHAPE);
	assert_int_equal(m.total_len, strlen("nic: bad_shape: expects u8 1x1x64"));
	assert_memory_equal(m.data, "nic: bad_shape: expects u8 1x1x64", m.total_len);
	nicfw_disp_counters(d, k, NULL);
	assert_int_equal(k[NICFW_C_HOST_PROBES], 1);
	assert_int_equal(k[NICFW_C_HOST_REPORTS], 1);
	assert_int_equal(k[NICFW_C_NOT_HELD], 3);
	assert_int_equal(k[NICFW_C_ERR_UNKNOWN_MODEL], 3);
	assert_int_equal(k[NICFW_C_ERR_UNAVAILABLE], 2);
	assert_int_equal(k[NICFW_C_UNKNOWN_MODEL], 2);
	assert_int_equal(k[NICFW_C_NOT_MY_LAYER], 1);
	assert_int_equal(k[NICFW_C_ERRORS_SENT], 6);
	nicfw_disp_free(d);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
	    cmocka_unit_test(test_dispatch_host_view),
	};

	return cmocka_run_group_tests(tests, NULL, NULL);
}
