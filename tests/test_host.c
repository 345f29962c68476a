// SPDX-License-Identifier: MIT
/*
 * splitnic-host's DPDK-free parts (host/host.h): the request table, plan execution (host
 * stage + NIC stage equal the whole model, bit for bit, with the NIC stage on the host or on
 * the NIC emulator), the fallback decisions of the in-flight window, frames and the allow-list.
 */
#include <errno.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include <cmocka.h>

#include "kernels/kexec.h"
#include "host/host.h"
#include "nicfw/chain.h"
#include "nicfw/dispatch.h"
#include "nicfw/emu/emu.h"
#include "tests/support/model_fixture.h"

/* --- request table ---------------------------------------------------------------------- */

static void test_host_reqtab_get_put(void **state)
{
	struct host_reqtab t;
	struct host_req *r[4];

	(void)state;
	assert_int_equal(host_reqtab_init(&t, 0, 8, 8, 2), -EINVAL);
	assert_int_equal(host_reqtab_init(&t, 3, 784, 392, 10), 0);
	for (int i = 0; i < 3; i++) {
		r[i] = host_reqtab_get(&t);
		assert_non_null(r[i]);
		assert_int_equal(r[i]->state, HOST_RS_QUEUED);
		assert_int_equal((uintptr_t)r[i] % HOST_CACHE_LINE, 0);
		memset(r[i]->in, 0xa5, 784); /* buffers are the slot's own: no overlap */
		memset(r[i]->act, 0x5a, 392);
		for (int k = 0; k < 10; k++)
			r[i]->scores[k] = i;
	}
	assert_int_equal(host_reqtab_in_use(&t), 3);
	assert_null(host_reqtab_get(&t)); /* full: the caller answers ERROR BUSY */
	for (int i = 0; i < 3; i++) {
		assert_int_equal(r[i]->in[783], 0xa5);
		assert_int_equal(r[i]->act[391], 0x5a);
		assert_true(r[i]->scores[9] == i);
	}
	r[1]->request_id = 77;
	host_reqtab_put(&t, r[1]);
	assert_int_equal(host_reqtab_in_use(&t), 2);
	r[3] = host_reqtab_get(&t);
	assert_ptr_equal(r[3], r[1]); /* the freed slot, reset */
	assert_int_equal(r[3]->request_id, 0);
	assert_ptr_equal(r[3]->in, r[1]->in); /* buffers kept */
	for (int i = 0; i < 3; i++)
		host_reqtab_put(&t, r[i == 1 ? 3 : i]);
	assert_int_equal(host_reqtab_in_use(&t), 0);
	host_reqtab_fini(&t);
}

/* --- fallback decisions ------------------------------------------------------------------- */

static struct host_req reqs[16];

static void test_host_nic_decide(void **state)
{
	struct host_nic n;

	(void)state;
	assert_int_equal(host_nic_init(&n, 0, 1000), -EINVAL);
	assert_int_equal(host_nic_init(&n, 2, 1000), 0);
	assert_int_equal(host_nic_decide(&n, HOST_MODE_COPROC, 0), HOST_FB_LINK_DOWN);
	n.link_up = true;
	assert_int_equal(host_nic_decide(&n, HOST_MODE_FALLBACK, 0), HOST_FB_FORCED);
	assert_int_equal(host_nic_decide(&n, HOST_MODE_COPROC, 0), HOST_FB_NONE);
	host_nic_sent(&n, &reqs[0], 10);
	assert_int_equal(reqs[0].state, HOST_RS_INFLIGHT);
	assert_int_equal(host_nic_decide(&n, HOST_MODE_COPROC, 10), HOST_FB_NONE);
	host_nic_sent(&n, &reqs[1], 20);
	assert_int_equal(host_nic_in_flight(&n), 2);
	assert_int_equal(host_nic_decide(&n, HOST_MODE_COPROC, 20), HOST_FB_WINDOW); /* saturated */
	assert_string_equal(host_fb_reason_name(HOST_FB_WINDOW), "window_full");
	host_nic_fini(&n);
}

/* Notices find their request by host_ref in O(1); a reused slot's old ref finds nothing. */
static void test_host_nic_ref(void **state)
{
	struct host_reqtab t;
	struct host_req *r, *q;
	struct host_nic n;
	uint32_t ref;

	(void)state;
	assert_int_equal(host_reqtab_init(&t, 4, 8, 8, 2), 0);
	assert_int_equal(host_nic_init(&n, 3, 1000), 0);
	assert_int_equal(n.cap, 8); /* a power of two >= 2 * window */
	n.link_up = true;
	r = host_reqtab_get(&t);
	q = host_reqtab_get(&t);
	ref = host_req_ref(r);
	assert_int_not_equal(ref, 0);
	assert_int_not_equal(ref, host_req_ref(q));
	host_nic_sent(&n, q, 5);
	host_nic_sent(&n, r, 10);
	assert_ptr_equal(host_reqtab_ref(&t, ref), r);
	assert_null(host_reqtab_ref(&t, ref & (HOST_REF_SLOTS - 1))); /* generation 0: none */
	assert_null(host_reqtab_ref(&t, ref + 4));		      /* no such slot */
	host_nic_remove(&n, r);
	assert_int_equal(host_nic_in_flight(&n), 1);
	assert_ptr_equal(host_nic_expired(&n, 1005), q);
	host_reqtab_put(&t, r);
	assert_ptr_equal(host_reqtab_get(&t), r); /* the same slot again, a new generation */
	assert_null(host_reqtab_ref(&t, ref));
	assert_ptr_equal(host_reqtab_ref(&t, host_req_ref(r)), r);
	host_nic_fini(&n);
	host_reqtab_fini(&t);
}

static void test_host_nic_complete_out_of_order(void **state)
{
	struct host_nic n;

	(void)state;
	assert_int_equal(host_nic_init(&n, 3, 1000), 0);
	n.link_up = true;
	for (int i = 0; i < 3; i++) {
		reqs[i].request_id = 100 + i;
		reqs[i].model_id = 7;
		host_nic_sent(&n, &reqs[i], 10 * i);
	}
	assert_null(host_nic_complete(&n, 7, 999));		   /* unknown: a late notice */
	assert_null(host_nic_complete(&n, 8, 101));		   /* other model */
	assert_ptr_equal(host_nic_complete(&n, 7, 101), &reqs[1]); /* the middle one */
	assert_null(host_nic_complete(&n, 7, 101));		   /* only once */
	assert_int_equal(host_nic_in_flight(&n), 2);
	assert_int_equal(host_nic_decide(&n, HOST_MODE_COPROC, 30), HOST_FB_NONE);
	/* expiry in order, skipping the completed entry */
	assert_null(host_nic_expired(&n, 999));
	assert_ptr_equal(host_nic_expired(&n, 1000), &reqs[0]);
	assert_null(host_nic_expired(&n, 1019));
	assert_ptr_equal(host_nic_expired(&n, 1020), &reqs[2]);
	assert_int_equal(host_nic_in_flight(&n), 0);
	/* a missed deadline makes the NIC suspect for 10 x timeout; a notice clears it */
	assert_int_equal(host_nic_decide(&n, HOST_MODE_COPROC, 1021), HOST_FB_SUSPECT);
	assert_int_equal(host_nic_decide(&n, HOST_MODE_COPROC, 1020 + 10000), HOST_FB_NONE);
	host_nic_sent(&n, &reqs[3], 1030);
	reqs[3].request_id = 5;
	reqs[3].model_id = 7;
	n.suspect_until = 5000;
	assert_ptr_equal(host_nic_complete(&n, 7, 5), &reqs[3]);
	assert_int_equal(host_nic_decide(&n, HOST_MODE_COPROC, 1040), HOST_FB_NONE);
	host_nic_fini(&n);
}

static void test_host_nic_link_down(void **state)
{
	struct host_nic n;

	(void)state;
	assert_int_equal(host_nic_init(&n, 4, 1000000), 0);
	n.link_up = true;
	for (int i = 0; i < 4; i++)
		host_nic_sent(&n, &reqs[i], 0);
	assert_null(host_nic_expired(&n, 10)); /* within the deadline */
	n.link_up = false;		       /* the NIC went away: every one falls back now */
	for (int i = 0; i < 4; i++)
		assert_ptr_equal(host_nic_expired(&n, 10), &reqs[i]);
	assert_null(host_nic_expired(&n, 10));
	assert_int_equal(host_nic_decide(&n, HOST_MODE_COPROC, 10), HOST_FB_LINK_DOWN);
	host_nic_fini(&n);
}

/* The ring wraps many times under a steady window without losing entries. */
static void test_host_nic_wrap(void **state)
{
	struct host_nic n;
	uint64_t t = 0;

	(void)state;
	assert_int_equal(host_nic_init(&n, 3, 100), 0);
	n.link_up = true;
	for (int round = 0; round < 50; round++) {
		for (int i = 0; i < 3; i++) {
			assert_int_equal(host_nic_decide(&n, HOST_MODE_COPROC, t), HOST_FB_NONE);
			reqs[i].request_id = (uint64_t)round * 3 + i;
			reqs[i].model_id = 7;
			host_nic_sent(&n, &reqs[i], t++);
		}
		assert_int_equal(host_nic_decide(&n, HOST_MODE_COPROC, t), HOST_FB_WINDOW);
		assert_ptr_equal(host_nic_complete(&n, 7, (uint64_t)round * 3 + 2), &reqs[2]);
		assert_ptr_equal(host_nic_complete(&n, 7, (uint64_t)round * 3), &reqs[0]);
		assert_ptr_equal(host_nic_complete(&n, 7, (uint64_t)round * 3 + 1), &reqs[1]);
		assert_int_equal(host_nic_in_flight(&n), 0);
	}
	host_nic_fini(&n);
}

/* --- plan execution ----------------------------------------------------------------------------
 */

static struct kern_model *bundled(const char *name)
{
	const char *bin = getenv("SPLITNIC");
	char path[512], err[512];
	struct kern_model *m;

	if (bin && strrchr(bin, '/'))
		snprintf(path, sizeof(path), "%.*s/models/%s.snm", (int)(strrchr(bin, '/') - bin),
			 bin, name);
	else
		snprintf(path, sizeof(path), "build/models/%s.snm", name);
	if (access(path, R_OK))
		return NULL;
	m = kern_model_load(path, err, sizeof(err));
	if (!m)
		fail_msg("%s", err);
	return m;
}

/* front [0, k) + back [k, n) == whole, and back on the NIC emulator == whole, bit for bit. */
static void expect_split_exact(struct kern_model *m, uint32_t k, uint32_t batch)
{
	struct host_model hm_c, hm_w;
	struct host_stage sc, sw;
	struct host_reqtab t;
	struct host_req *r[8];
	struct nicfw_emu_params ep;
	struct nicfw_emu *emu;
	char err[512];
	uint8_t *x;
	double nic[64];

	assert_true(batch <= 8);
	assert_int_equal(host_model_init(&hm_c, m, HOST_MODE_COPROC, k, err, sizeof(err)), 0);
	assert_int_equal(host_model_init(&hm_w, m, HOST_MODE_HOST_ONLY, k, err, sizeof(err)), 0);
	assert_int_equal(hm_w.split, m->n_layers);
	assert_int_equal(host_stage_init(&sc, &hm_c, batch, err, sizeof(err)), 0);
	assert_int_equal(host_stage_init(&sw, &hm_w, batch, err, sizeof(err)), 0);
	assert_int_equal(
	    host_reqtab_init(&t, 2 * batch, hm_c.in_bytes, hm_c.act_bytes, hm_c.classes), 0);
	nicfw_emu_params_default(&ep);
	emu = nicfw_emu_create(m, hm_c.split, 16, &ep, err, sizeof(err));
	if (!emu)
		fail_msg("%s", err);
	x = test_random_inputs(m, 2 * batch);
	for (uint32_t i = 0; i < 2 * batch; i++) {
		r[i % batch] = host_reqtab_get(&t);
		memcpy(r[i % batch]->in, x + (size_t)i * hm_c.in_bytes, hm_c.in_bytes);
		if (i % batch != batch - 1)
			continue;
		/* the whole model on one set of slots, front + back on copies */
		assert_int_equal(host_stage_run(&sw, HOST_STAGE_WHOLE, r, batch), 0);
		for (uint32_t j = 0; j < batch; j++) {
			struct host_req *c = host_reqtab_get(&t);
			struct host_req *w = r[j];

			memcpy(c->in, w->in, hm_c.in_bytes);
			assert_int_equal(w->executors, PROTO_EX_CPU);
			r[j] = c;
			assert_int_equal(host_stage_run(&sc, HOST_STAGE_FRONT, &r[j], 1), 0);
			assert_int_equal(nicfw_emu_infer(emu, c->act, nic, NULL), 0);
			assert_memory_equal(nic, w->scores, hm_c.classes * sizeof(double));
			r[j] = w; /* keep the whole-model slot for the batch check below */
			host_reqtab_put(&t, c);
			c->executors = 0;
		}
		/* the back stage as a batch: every activation recomputed from its own input */
		{
			struct host_req *c[8];

			for (uint32_t j = 0; j < batch; j++) {
				c[j] = host_reqtab_get(&t);
				memcpy(c[j]->in, r[j]->in, hm_c.in_bytes);
			}
			assert_int_equal(host_stage_run(&sc, HOST_STAGE_FRONT, c, batch), 0);
			assert_int_equal(host_stage_run(&sc, HOST_STAGE_BACK, c, batch), 0);
			for (uint32_t j = 0; j < batch; j++) {
				assert_memory_equal(c[j]->scores, r[j]->scores,
						    hm_c.classes * sizeof(double));
				assert_int_equal(c[j]->executors,
						 PROTO_EX_CPU | PROTO_EX_HOST_FALLBACK);
				host_reqtab_put(&t, c[j]);
			}
		}
		for (uint32_t j = 0; j < batch; j++)
			host_reqtab_put(&t, r[j]);
	}
	assert_int_equal(host_reqtab_in_use(&t), 0);
	assert_int_equal(host_stage_run(&sc, HOST_STAGE_FRONT, r, batch + 1), -EINVAL);
	free(x);
	nicfw_emu_free(emu);
	host_reqtab_fini(&t);
	host_stage_fini(&sc);
	host_stage_fini(&sw);
}

static void test_host_plan_bundled_cnn(void **state)
{
	struct kern_model *m = bundled("fmnist-bcnn");
	struct host_model hm;
	char err[512];

	(void)state;
	if (!m) {
		print_message("skip: fmnist-bcnn.snm absent (make builds it)\n");
		skip();
	}
	/* the default split: the NIC part, moved past the flatten of 64x7x7 bits */
	assert_int_equal(host_model_init(&hm, m, HOST_MODE_COPROC, UINT32_MAX, err, sizeof(err)),
			 0);
	assert_int_equal(m->layers[hm.split - 1].op, KERN_OP_FLATTEN);
	assert_true(hm.split > kexec_nic_first(m));
	assert_int_equal(hm.act_bytes, (hm.act_count + 63) / 64 * 8);
	expect_split_exact(m, UINT32_MAX, 1);
	expect_split_exact(m, UINT32_MAX, 4);
	expect_split_exact(m, hm.split + 1, 3); /* after the first binary dense layer */
	/* splits the NIC cannot take, or not as flat bits */
	assert_int_equal(host_model_init(&hm, m, HOST_MODE_COPROC, 2, err, sizeof(err)), -EINVAL);
	assert_int_equal(
	    host_model_init(&hm, m, HOST_MODE_COPROC, kexec_nic_first(m), err, sizeof(err)),
	    -EINVAL);
	assert_non_null(strstr(err, "flat bits"));
	assert_int_equal(host_model_init(&hm, m, HOST_MODE_COPROC, m->n_layers, err, sizeof(err)),
			 -EINVAL);
	kern_model_free(m);
}

/* A stand-alone model (the NIC runs all of it) leaves the host nothing in co-processor mode. */
static void test_host_plan_standalone_mlp(void **state)
{
	struct kern_model *m = bundled("fmnist-bmlp");
	struct host_model hm;
	char err[512];

	(void)state;
	if (!m) {
		print_message("skip: fmnist-bmlp.snm absent (make builds it)\n");
		skip();
	}
	assert_int_equal(kexec_nic_first(m), 0);
	assert_int_equal(host_model_init(&hm, m, HOST_MODE_COPROC, UINT32_MAX, err, sizeof(err)),
			 -EINVAL);
	assert_int_equal(host_model_init(&hm, m, HOST_MODE_HOST_ONLY, UINT32_MAX, err, sizeof(err)),
			 0);
	kern_model_free(m);
}

/* --- the allow-list ------------------------------------------------------------------
 */

static void test_host_cidr(void **state)
{
	struct host_cidr c[2];

	(void)state;
	assert_int_equal(host_cidr_parse("10.88.1.0/24", &c[0]), 0);
	assert_int_equal(host_cidr_parse("192.168.0.7", &c[1]), 0);
	assert_int_equal(host_cidr_parse("10.0.0.0/33", &c[1]), -EINVAL);
	assert_int_equal(host_cidr_parse("nope", &c[1]), -EINVAL);
	assert_true(host_cidr_allowed(c, 0, 0x01020304)); /* no list: everyone */
	assert_true(host_cidr_allowed(c, 1, 0x0a5801fe));
	assert_false(host_cidr_allowed(c, 1, 0x0a5802fe));
	assert_int_equal(host_cidr_parse("192.168.0.7", &c[1]), 0);
	assert_true(host_cidr_allowed(c, 2, 0xc0a80007));
	assert_false(host_cidr_allowed(c, 2, 0xc0a80008));
	assert_int_equal(host_cidr_parse("0.0.0.0/0", &c[0]), 0);
	assert_true(host_cidr_allowed(c, 1, 0xdeadbeef));
}

static void test_host_hist(void **state)
{
	struct host_hist h = {0};

	(void)state;
	host_hist_add(&h, 500);	    /* < 1 us: bucket 0 */
	host_hist_add(&h, 1500);    /* 1 us: bucket 1 */
	host_hist_add(&h, 3000000); /* 3000 us: [2048, 4096) -> bucket 12 */
	host_hist_add(&h, ~0ull);   /* clamped to the last */
	assert_int_equal(h.b[0], 1);
	assert_int_equal(h.b[1], 1);
	assert_int_equal(h.b[12], 1);
	assert_int_equal(h.b[HOST_HIST_BUCKETS - 1], 1);
	assert_int_equal(h.count, 4);
}

/* --- the completion notice: splitnic-nic --notify-host, as the host relies on it ----------- */

static uint8_t out_frame[4][PROTO_FRAME_MAX];
static uint32_t out_len[4], out_port[4], n_out;

static int fake_submit(void *engine, uint32_t model, const void *in)
{
	return 0;
}

static int fake_poll(void *engine, uint32_t model, double *scores)
{
	scores[0] = -1.0;
	scores[1] = 3.0;
	return 1;
}

static int capture_tx(void *arg, enum nicfw_port port, const uint8_t *frame, uint32_t len)
{
	assert_true(n_out < 4 && len <= PROTO_FRAME_MAX);
	memcpy(out_frame[n_out], frame, len);
	out_len[n_out] = len;
	out_port[n_out++] = port;
	return 0;
}

static void test_host_nic_notice(void **state)
{
	static const struct nicfw_engine_ops ops = {.submit = fake_submit, .poll = fake_poll};
	struct nicfw_disp_config c = {0};
	struct proto_addr to_nic = {.smac = {2, 0, 0, 0, 0, 3},
				    .dmac = {2, 0, 0, 0, 0, 1},
				    .sip = 0x0a580101,
				    .dip = 0x0a580101,
				    .sport = PROTO_DEFAULT_PORT,
				    .dport = PROTO_DEFAULT_PORT},
			  a;
	uint8_t f[PROTO_FRAME_MAX], body[8] = {0xff};
	struct nicfw_disp *d;
	struct proto_msg m;
	const uint8_t *p;
	uint32_t plen, len, ihl;
	char err[256];
	int n;

	(void)state;
	c.mac[0] = 2, c.mac[5] = 1;
	c.ip = 0x0a580101;
	c.port = PROTO_DEFAULT_PORT;
	c.payload = PROTO_DEFAULT_PAYLOAD;
	c.reasm_slots = 4;
	c.reasm_timeout_ns = 1000000;
	c.notify_host = true;
	c.n_models = 1;
	c.model[0] = (struct nicfw_disp_model){.model_id = 0x99,
					       .layer = 3,
					       .in_fmt = PROTO_FMT_BITS,
					       .in_count = 64,
					       .in_bytes = 8,
					       .classes = 2};
	c.eng_ops = &ops;
	c.tx = capture_tx;
	d = nicfw_disp_create(&c, err, sizeof(err));
	assert_non_null(d);
	proto_msg_init(&m, PROTO_ACTIVATION, 0x99, 4242);
	proto_msg_set_tensor(&m, PROTO_FMT_BITS, 64, 1, 1, 0, 0);
	m.tensor.layer = 3;
	memcpy(m.act.reply_addr, (uint8_t[16]){[10] = 0xff, [11] = 0xff, 10, 88, 1, 2}, 16);
	m.act.reply_port = 40000;
	m.act.executors = PROTO_EX_CPU;
	n = proto_build(&m, body, sizeof(body), f + PROTO_FRAME_HDRS, sizeof(f) - PROTO_FRAME_HDRS);
	assert_true(n > 0);
	len = proto_frame_udp(f, &to_nic, (uint32_t)n, false);
	assert_int_equal(nicfw_disp_rx(d, NICFW_PORT_HOST, f, len, 0), NICFW_DISP_CONSUMED);
	assert_int_equal(nicfw_disp_poll(d, 10), 1);
	assert_int_equal(n_out, 2);
	/* the RESPONSE to the front-end, out of the wire port */
	assert_int_equal(out_port[0], NICFW_PORT_WIRE);
	assert_int_equal(proto_frame_parse(out_frame[0], out_len[0], &a, &p, &plen, &ihl),
			 PROTO_FRAME_UDP);
	assert_int_equal(a.dip, 0x0a580102);
	assert_int_equal(a.dport, 40000);
	/* the same RESPONSE back to the host: the notice the fallback logic waits for */
	assert_int_equal(out_port[1], NICFW_PORT_HOST);
	assert_int_equal(proto_frame_parse(out_frame[1], out_len[1], &a, &p, &plen, &ihl),
			 PROTO_FRAME_UDP);
	assert_int_equal(a.dip, to_nic.sip);
	assert_int_equal(a.dport, to_nic.sport);
	assert_memory_equal(a.dmac, to_nic.smac, 6);
	assert_int_equal(proto_parse(p, plen, &m), PROTO_OK);
	assert_int_equal(m.type, PROTO_RESPONSE);
	assert_int_equal(m.request_id, 4242);
	assert_int_equal(m.model_id, 0x99);
	assert_int_equal(m.resp.cls, 1);
	assert_int_equal(m.resp.executors, PROTO_EX_CPU | PROTO_EX_NIC);
	nicfw_disp_free(d);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
	    cmocka_unit_test(test_host_reqtab_get_put),
	    cmocka_unit_test(test_host_nic_decide),
	    cmocka_unit_test(test_host_nic_ref),
	    cmocka_unit_test(test_host_nic_complete_out_of_order),
	    cmocka_unit_test(test_host_nic_link_down),
	    cmocka_unit_test(test_host_nic_wrap),
	    cmocka_unit_test(test_host_plan_bundled_cnn),
	    cmocka_unit_test(test_host_plan_standalone_mlp),
	    cmocka_unit_test(test_host_cidr),
	    cmocka_unit_test(test_host_hist),
	    cmocka_unit_test(test_host_nic_notice),
	};

	return cmocka_run_group_tests(tests, NULL, NULL);
}
