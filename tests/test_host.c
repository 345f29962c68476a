// SPDX-License-Identifier: MIT
/*
 * splitnic-host's DPDK-free parts (host/host.h): the request table, the NIC over packets as an
 * executor (window, notices checked by host_ref, ids and cookie, deadlines, the link), reply
 * templates (checksums updated incrementally equal the full ones), cookies, the spread, plan
 * execution (host stage + NIC stage equal the whole model, bit for bit, with the NIC stage on the
 * host or on the NIC emulator). The allow-list and the ERROR rate limit are protocol/'s
 * (tests/test_protocol.c); the NIC's completion notices are tests/test_dispatch.c's.
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

#include "exec/kexec.h"
#include "host/host.h"
#include "nicfw/emu/emu.h"
#include "tests/support/model_fixture.h"

/* --- request table ---------------------------------------------------------------------- */

static void test_host_reqtab_get_put(void **state)
{
	struct host_reqtab t;
	struct host_req *r[4];

	(void)state;
	assert_int_equal(host_reqtab_init(&t, 0, 8, 2), -EINVAL);
	assert_int_equal(host_reqtab_init(&t, 3, 392, 10), 0);
	for (int i = 0; i < 3; i++) {
		r[i] = host_reqtab_get(&t);
		assert_non_null(r[i]);
		assert_int_equal(r[i]->state, HOST_RS_QUEUED);
		assert_int_equal(r[i]->ra_slot, -1);
		assert_int_equal((uintptr_t)r[i] % HOST_CACHE_LINE, 0);
		memset(r[i]->act, 0x5a, 392); /* buffers are the slot's own: no overlap */
		for (int k = 0; k < 10; k++)
			r[i]->scores[k] = i;
	}
	assert_int_equal(host_reqtab_in_use(&t), 3);
	assert_null(host_reqtab_get(&t)); /* full: the caller answers ERROR BUSY */
	for (int i = 0; i < 3; i++) {
		assert_int_equal(r[i]->act[391], 0x5a);
		assert_true(r[i]->scores[9] == i);
	}
	r[1]->request_id = 77;
	assert_int_equal(host_reqtab_put(&t, r[1]), 0);
	assert_int_equal(host_reqtab_in_use(&t), 2);
	/* a second put of the same slot is refused and counted: never twice on the free stack */
	assert_int_equal(host_reqtab_put(&t, r[1]), -EALREADY);
	assert_int_equal(t.double_puts, 1);
	assert_int_equal(host_reqtab_in_use(&t), 2);
	r[3] = host_reqtab_get(&t);
	assert_ptr_equal(r[3], r[1]); /* the freed slot, reset */
	assert_int_equal(r[3]->request_id, 0);
	assert_null(host_reqtab_get(&t));
	for (int i = 0; i < 3; i++)
		assert_int_equal(host_reqtab_put(&t, r[i == 1 ? 3 : i]), 0);
	assert_int_equal(host_reqtab_in_use(&t), 0);
	assert_int_equal(host_reqtab_put(&t, r[0]), -EALREADY);
	assert_int_equal(t.double_puts, 2);
	host_reqtab_fini(&t);
}

/* --- the NIC over packets: window, notices, deadlines ------------------------------------- */

/* A fake transport: what the executor sent, and a clock. */
struct fake_net {
	uint64_t now;
	int send_ret;
	uint32_t n_sent;
	struct proto_msg last;
	uint8_t body[64];
};

struct fake_req {
	uint32_t model_id;
	uint64_t request_id;
	double scores[2];
	uint8_t act[8];
};

static void fake_describe(void *arg, uint64_t tag, struct proto_msg *m)
{
	const struct fake_req *r = (const struct fake_req *)(uintptr_t)tag;

	(void)arg;
	m->model_id = r->model_id;
	m->request_id = r->request_id;
	m->act.reply_port = 4242;
}

static int fake_send(void *arg, uint64_t tag, const struct proto_msg *m, const void *body,
		     uint32_t len)
{
	struct fake_net *n = arg;

	(void)tag;
	if (n->send_ret)
		return n->send_ret;
	n->last = *m;
	assert_true(len <= sizeof(n->body));
	memcpy(n->body, body, len);
	n->n_sent++;
	return 0;
}

static uint64_t fake_now(void *arg)
{
	return ((struct fake_net *)arg)->now;
}

/* A model whose NIC part [2, 4) takes 64 flat bits: flatten of bits, binary dense, batch-norm. */
static struct model *remote_model(void)
{
	struct model *m = calloc(1, sizeof(*m));

	m->n_layers = 4;
	m->layers = calloc(4, sizeof(*m->layers));
	m->input = (struct model_shape){MODEL_FMT_U8, 64, 1, 1};
	m->layers[0] = (struct model_layer){.op = MODEL_OP_FLATTEN,
					    .in = {MODEL_FMT_F64, 64, 1, 1},
					    .out = {MODEL_FMT_F64, 64, 1, 1}};
	m->layers[1] = (struct model_layer){.op = MODEL_OP_SIGN,
					    .in = {MODEL_FMT_F64, 64, 1, 1},
					    .out = {MODEL_FMT_BITS, 64, 1, 1}};
	m->layers[2] = (struct model_layer){.op = MODEL_OP_BDENSE,
					    .in = {MODEL_FMT_BITS, 64, 1, 1},
					    .out = {MODEL_FMT_F64, 2, 1, 1}};
	m->layers[3] = (struct model_layer){.op = MODEL_OP_BATCHNORM,
					    .in = {MODEL_FMT_F64, 2, 1, 1},
					    .out = {MODEL_FMT_F64, 2, 1, 1}};
	snprintf(m->name, sizeof(m->name), "remote");
	return m;
}

static void remote_open(struct kexec *x, struct fake_net *net, const struct model *m,
			uint32_t window, uint32_t worker)
{
	const struct host_remote_conf c = {.window = window,
					   .timeout_ns = 1000,
					   .ref_base = HOST_REF_WORKER(worker),
					   .arg = net,
					   .describe = fake_describe,
					   .send = fake_send,
					   .now = fake_now};
	char err[256];

	memset(net, 0, sizeof(*net));
	assert_int_equal(kexec_open(x, &host_exec_remote_ops, &c, err, sizeof(err)), 0);
	assert_int_equal(kexec_load(x, m, 2, 4, 1, err, sizeof(err)), 0);
}

/* The notice the NIC would send for the last ACTIVATION (scores -1, 3). */
static struct proto_msg notice_for(const struct fake_net *net, uint8_t type, uint8_t *data)
{
	struct proto_msg m;

	proto_msg_init(&m, type, net->last.model_id, net->last.request_id);
	if (type == PROTO_RESPONSE) {
		m.hdr_len = PROTO_RESP_NOTICE_HDR_LEN;
		m.resp.host_ref = net->last.act.host_ref;
		m.resp.cookie = net->last.act.cookie;
		m.resp.num_classes = 2;
		proto_le_put_f64(data, -1.0);
		proto_le_put_f64(data + 8, 3.0);
		m.frag_len = (uint16_t)(m.total_len = 16);
	} else {
		m.hdr_len = PROTO_ERROR_NOTICE_HDR_LEN;
		m.err.code = PROTO_ERR_BUSY;
		m.err.host_ref = net->last.act.host_ref;
		m.err.cookie = net->last.act.cookie;
	}
	m.data = data;
	return m;
}

static void test_host_remote_window(void **state)
{
	struct model *m = remote_model();
	struct fake_req q[3] = {{7, 100, {0}, {0}}, {7, 101, {0}, {0}}, {7, 102, {0}, {0}}};
	const struct host_remote_conf bad = {.window = KEXEC_FIFO + 1};
	struct fake_net net;
	struct kexec x;
	struct kexec_done d[4];
	struct kexec_caps caps;
	struct proto_msg n;
	uint8_t data[16];
	char err[256];

	(void)state;
	assert_int_equal(kexec_open(&x, &host_exec_remote_ops, &bad, err, sizeof(err)), -EINVAL);
	remote_open(&x, &net, m, 2, 3);
	kexec_get_caps(&x, &caps);
	assert_int_equal(caps.kind, KEXEC_KIND_NIC);
	assert_int_equal(caps.max_batch, 1);
	/* the link down: refused, nothing sent */
	assert_int_equal(kexec_submit(&x, q[0].act, 1, q[0].scores, (uintptr_t)&q[0]), -ENOLINK);
	assert_int_equal(net.n_sent, 0);
	host_remote_set_link(&x, true);
	q[0].act[0] = 0xa5;
	assert_int_equal(kexec_submit(&x, q[0].act, 1, q[0].scores, (uintptr_t)&q[0]), 0);
	/* the ACTIVATION: the caller's ids, flat bits at the NIC's first op, a host_ref naming
	 * worker 3, the activation as its body */
	assert_int_equal(net.last.type, PROTO_ACTIVATION);
	assert_int_equal(net.last.request_id, 100);
	assert_int_equal(net.last.act.reply_port, 4242);
	assert_int_equal(net.last.tensor.fmt, PROTO_FMT_BITS);
	assert_int_equal(net.last.tensor.c, 64);
	assert_int_equal(net.last.tensor.layer, 2);
	assert_int_equal(host_ref_worker(net.last.act.host_ref), 3);
	assert_int_not_equal(net.last.act.host_ref >> 24, 0);
	assert_int_equal(net.body[0], 0xa5);
	n = notice_for(&net, PROTO_RESPONSE, data);
	assert_int_equal(kexec_submit(&x, q[1].act, 1, q[1].scores, (uintptr_t)&q[1]), 0);
	assert_int_equal(host_remote_in_flight(&x), 2);
	/* window full: refused (the caller falls back) */
	assert_int_equal(kexec_submit(&x, q[2].act, 1, q[2].scores, (uintptr_t)&q[2]), -EBUSY);
	assert_int_equal(kexec_poll(&x, d, 4), 0);
	/* the first one's notice completes it, out of order, with the scores it carries */
	assert_int_equal(host_remote_notice(&x, &n), HOST_NOTICE_OK);
	assert_int_equal(host_remote_notice(&x, &n), HOST_NOTICE_STALE); /* only once */
	assert_int_equal(kexec_poll(&x, d, 4), 1);
	assert_int_equal(d[0].tag, (uintptr_t)&q[0]);
	assert_int_equal(d[0].status, 0);
	assert_true(q[0].scores[0] == -1.0 && q[0].scores[1] == 3.0);
	assert_int_equal(kexec_submit(&x, q[2].act, 1, q[2].scores, (uintptr_t)&q[2]), 0);
	/* a send that fails leaves nothing in flight */
	kexec_close(&x);
	remote_open(&x, &net, m, 2, 0);
	host_remote_set_link(&x, true);
	net.send_ret = -ENOBUFS;
	assert_int_equal(kexec_submit(&x, q[0].act, 1, q[0].scores, (uintptr_t)&q[0]), -ENOBUFS);
	assert_int_equal(host_remote_in_flight(&x), 0);
	kexec_close(&x);
	/* only the NIC's range, entered as flat bits */
	remote_open(&x, &net, m, 2, 0);
	kexec_close(&x);
	assert_int_equal(kexec_open(&x, &host_exec_remote_ops,
				    &(struct host_remote_conf){.window = 1,
							       .describe = fake_describe,
							       .send = fake_send,
							       .now = fake_now,
							       .arg = &net},
				    err, sizeof(err)),
			 0);
	assert_int_equal(kexec_load(&x, m, 1, 4, 1, err, sizeof(err)), -EINVAL);
	assert_int_equal(kexec_load(&x, m, 2, 4, 2, err, sizeof(err)), -EINVAL); /* batch 2 */
	kexec_close(&x);
	free(m->layers);
	free(m);
}

/* A notice is taken only for the request in flight it names: host_ref (slot, generation,
 * worker), model and request id, and the cookie of that request. */
static void test_host_remote_notice_checks(void **state)
{
	struct model *m = remote_model();
	struct fake_req q = {7, 100, {0}, {0}};
	struct fake_net net;
	struct kexec x;
	struct kexec_done d[2];
	struct proto_msg n, bad;
	uint8_t data[16];

	(void)state;
	remote_open(&x, &net, m, 4, 1);
	host_remote_set_link(&x, true);
	assert_int_equal(kexec_submit(&x, q.act, 1, q.scores, (uintptr_t)&q), 0);
	n = notice_for(&net, PROTO_RESPONSE, data);
	bad = n;
	bad.resp.host_ref = 0;
	assert_int_equal(host_remote_notice(&x, &bad), HOST_NOTICE_STALE);
	bad.resp.host_ref = n.resp.host_ref ^ (1u << 24); /* another generation */
	assert_int_equal(host_remote_notice(&x, &bad), HOST_NOTICE_STALE);
	bad.resp.host_ref = n.resp.host_ref ^ HOST_REF_WORKER(3); /* another worker's */
	assert_int_equal(host_remote_notice(&x, &bad), HOST_NOTICE_STALE);
	bad.resp.host_ref = n.resp.host_ref + 1; /* an entry not in flight */
	assert_int_equal(host_remote_notice(&x, &bad), HOST_NOTICE_STALE);
	bad = n;
	bad.request_id = 101; /* another front-end's request with the same slot guessed */
	assert_int_equal(host_remote_notice(&x, &bad), HOST_NOTICE_MISMATCH);
	bad = n;
	bad.model_id = 8;
	assert_int_equal(host_remote_notice(&x, &bad), HOST_NOTICE_MISMATCH);
	bad = n;
	bad.resp.cookie ^= 1; /* everything right but the cookie: forged */
	assert_int_equal(host_remote_notice(&x, &bad), HOST_NOTICE_BAD_COOKIE);
	bad.resp.cookie = 0; /* the short form of a RESPONSE (a front-end's) reads cookie 0 */
	assert_int_equal(host_remote_notice(&x, &bad), HOST_NOTICE_BAD_COOKIE);
	bad = notice_for(&net, PROTO_ERROR, data);
	bad.err.cookie++;
	assert_int_equal(host_remote_notice(&x, &bad), HOST_NOTICE_BAD_COOKIE);
	assert_int_equal(kexec_poll(&x, d, 2), 0); /* still in flight */
	assert_int_equal(host_remote_in_flight(&x), 1);
	assert_int_equal(host_remote_notice(&x, &n), HOST_NOTICE_OK);
	assert_int_equal(kexec_poll(&x, d, 2), 1);
	assert_int_equal(d[0].status, 0);
	/* an ERROR notice with the right cookie: the request fails (-EIO: the caller falls back) */
	assert_int_equal(kexec_submit(&x, q.act, 1, q.scores, (uintptr_t)&q), 0);
	assert_int_not_equal(net.last.act.cookie, n.resp.cookie); /* a fresh cookie per request */
	n = notice_for(&net, PROTO_ERROR, data);
	assert_int_equal(host_remote_notice(&x, &n), HOST_NOTICE_OK);
	assert_int_equal(kexec_poll(&x, d, 2), 1);
	assert_int_equal(d[0].status, -EIO);
	kexec_close(&x);
	free(m->layers);
	free(m);
}

static void test_host_remote_deadline(void **state)
{
	struct model *m = remote_model();
	struct fake_req q[4] = {
	    {7, 1, {0}, {0}}, {7, 2, {0}, {0}}, {7, 3, {0}, {0}}, {7, 4, {0}, {0}}};
	struct fake_net net;
	struct kexec x;
	struct kexec_done d[4];
	struct proto_msg n;
	uint8_t data[16];

	(void)state;
	remote_open(&x, &net, m, 4, 0);
	host_remote_set_link(&x, true);
	for (int i = 0; i < 3; i++) {
		net.now = 10 * (uint64_t)i;
		assert_int_equal(kexec_submit(&x, q[i].act, 1, q[i].scores, (uintptr_t)&q[i]), 0);
		if (i == 1)
			n = notice_for(&net, PROTO_RESPONSE, data);
	}
	assert_int_equal(host_remote_notice(&x, &n), HOST_NOTICE_OK); /* the middle one */
	net.now = 999;
	assert_int_equal(kexec_poll(&x, d, 4), 1); /* the notice; no deadline passed yet */
	assert_int_equal(d[0].tag, (uintptr_t)&q[1]);
	/* expiry in order, skipping the completed entry */
	net.now = 1000;
	assert_int_equal(kexec_poll(&x, d, 4), 1);
	assert_int_equal(d[0].tag, (uintptr_t)&q[0]);
	assert_int_equal(d[0].status, -ETIMEDOUT);
	net.now = 1019;
	assert_int_equal(kexec_poll(&x, d, 4), 0);
	net.now = 1020;
	assert_int_equal(kexec_poll(&x, d, 4), 1);
	assert_int_equal(d[0].tag, (uintptr_t)&q[2]);
	/* a missed deadline makes the NIC suspect for 10 x timeout */
	net.now = 1021;
	assert_int_equal(kexec_submit(&x, q[3].act, 1, q[3].scores, (uintptr_t)&q[3]), -EAGAIN);
	net.now = 1020 + 10000;
	assert_int_equal(kexec_submit(&x, q[3].act, 1, q[3].scores, (uintptr_t)&q[3]), 0);
	/* the NIC went away: every request in flight fails at the next poll, new ones refused */
	host_remote_set_link(&x, false);
	assert_int_equal(kexec_poll(&x, d, 4), 1);
	assert_int_equal(d[0].status, -ENOLINK);
	assert_int_equal(kexec_submit(&x, q[0].act, 1, q[0].scores, (uintptr_t)&q[0]), -ENOLINK);
	assert_int_equal(host_remote_in_flight(&x), 0);
	kexec_close(&x);
	free(m->layers);
	free(m);
}

/* The window's ring wraps many times, notices arriving in any order, without losing entries. */
static void test_host_remote_wrap(void **state)
{
	struct model *m = remote_model();
	struct fake_req q[3];
	struct proto_msg n[3];
	struct fake_net net;
	struct kexec x;
	struct kexec_done d[4];
	uint8_t data[3][16];

	(void)state;
	remote_open(&x, &net, m, 3, 2);
	host_remote_set_link(&x, true);
	for (int round = 0; round < 100; round++) {
		for (int i = 0; i < 3; i++) {
			q[i] = (struct fake_req){7, (uint64_t)round * 3 + i, {0}, {0}};
			assert_int_equal(
			    kexec_submit(&x, q[i].act, 1, q[i].scores, (uintptr_t)&q[i]), 0);
			n[i] = notice_for(&net, PROTO_RESPONSE, data[i]);
		}
		assert_int_equal(kexec_submit(&x, q[0].act, 1, q[0].scores, (uintptr_t)&q[0]),
				 -EBUSY);
		for (int i = 0; i < 3; i++)
			assert_int_equal(host_remote_notice(&x, &n[(i + round) % 3]),
					 HOST_NOTICE_OK);
		assert_int_equal(kexec_poll(&x, d, 4), 3);
		assert_int_equal(d[0].tag, (uintptr_t)&q[round % 3]);
		assert_int_equal(host_remote_in_flight(&x), 0);
	}
	kexec_close(&x);
	free(m->layers);
	free(m);
}

/* --- reply templates, cookies, source checks, the spread ------------------------------------ */

/* A frame from a template equals the one built and checksummed in full, byte for byte. */
static void expect_tpl_exact(const struct proto_msg *m, uint32_t var_from, const uint8_t *data,
			     bool offload)
{
	const struct proto_addr to = {.smac = {2, 0, 0, 0, 0, 1},
				      .dmac = {0x52, 0x54, 0, 0x12, 0x34, 0x56},
				      .sip = 0x0a580101,
				      .dip = 0x0a5801fe,
				      .sport = PROTO_DEFAULT_PORT,
				      .dport = 40001};
	uint8_t a[PROTO_FRAME_MAX], b[PROTO_FRAME_MAX];
	struct host_tpl t;
	struct proto_msg c = *m;
	uint32_t la, lb;
	int n;

	c.model_id = 0x1234;
	c.request_id = 0x0102030405060708ull;
	assert_int_equal(host_tpl_init(&t, m, var_from, &to, offload), 0);
	la = host_tpl_fill(&t, a, &c, data, &to);
	n = proto_build(&c, data, m->total_len, b + PROTO_FRAME_HDRS, sizeof(b) - PROTO_FRAME_HDRS);
	assert_true(n > 0);
	lb = proto_frame_udp(b, &to, (uint32_t)n, offload);
	assert_int_equal(la, lb);
	assert_memory_equal(a, b, la);
}

static void test_host_tpl_checksums(void **state)
{
	uint8_t data[1024];
	struct proto_msg m;

	(void)state;
	for (unsigned i = 0; i < sizeof(data); i++)
		data[i] = (uint8_t)(i * 37 + 11);
	for (int offload = 0; offload < 2; offload++) {
		proto_msg_init(&m, PROTO_RESPONSE, 0, 0);
		m.resp.num_classes = 10;
		m.resp.score_fmt = PROTO_FMT_F64;
		m.frag_len = (uint16_t)(m.total_len = 80);
		expect_tpl_exact(&m, PROTO_COMMON_LEN, data, offload);
		m.resp.cls = 7;
		m.resp.executors = PROTO_EX_CPU;
		for (unsigned t = 0; t < PROTO_T_COUNT; t++)
			m.resp.t_ns[t] = 0xabcd0000u + t;
		expect_tpl_exact(&m, PROTO_COMMON_LEN, data, offload);
		proto_msg_init(&m, PROTO_ACTIVATION, 0, 0);
		proto_msg_set_tensor(&m, PROTO_FMT_BITS, 3136, 1, 1, 0, 0);
		m.tensor.layer = 9;
		m.frag_len = (uint16_t)(m.total_len = 392);
		m.act.reply_addr[10] = m.act.reply_addr[11] = 0xff;
		m.act.reply_addr[15] = 2;
		m.act.reply_port = 40000;
		m.act.host_ref = 0x01300005;
		m.act.t_host_ns = 123456;
		expect_tpl_exact(&m, PROTO_COMMON_LEN + 32, data, offload);
	}
	/* a message of more than one datagram has no template */
	proto_msg_init(&m, PROTO_RESPONSE, 0, 0);
	m.frag_len = (uint16_t)(m.total_len = 1400); /* more than one datagram */
	{
		struct host_tpl t;
		const struct proto_addr from = {.sip = 1, .sport = 2};

		assert_int_equal(host_tpl_init(&t, &m, PROTO_COMMON_LEN, &from, false), -EINVAL);
	}
}

static void test_host_cookie(void **state)
{
	struct host_cookie a, b;
	uint64_t seen[512];

	(void)state;
	/* SipHash-2-4 reference vector: key 00..0f, message 00..07 */
	assert_int_equal(
	    host_siphash64(0x0706050403020100ull, 0x0f0e0d0c0b0a0908ull, 0x0706050403020100ull),
	    0x93f5f5799a932462ull);
	assert_int_equal(host_cookie_init(&a), 0);
	assert_int_equal(host_cookie_init(&b), 0);
	assert_true(a.k0 != b.k0 || a.k1 != b.k1); /* a fresh key each time */
	for (int i = 0; i < 512; i++) {
		seen[i] = host_cookie_next(&a);
		assert_int_not_equal(seen[i], 0);
		for (int j = 0; j < i; j++)
			assert_int_not_equal(seen[i], seen[j]);
	}
	assert_int_not_equal(host_cookie_next(&b), seen[0]);
}

static void test_host_spread(void **state)
{
	uint32_t n[3] = {0};

	(void)state;
	for (uint64_t rid = 0; rid < 3000; rid++) {
		uint32_t w = host_spread(0x0a580102, 40000, rid, 3);

		assert_true(w < 3);
		assert_int_equal(host_spread(0x0a580102, 40000, rid, 3), w); /* stable */
		n[w]++;
	}
	for (int w = 0; w < 3; w++) /* one front-end's requests spread evenly (within 10%) */
		assert_true(n[w] > 900 && n[w] < 1100);
	assert_int_equal(host_spread(0x0a580102, 40000, 77, 1), 0);
}

/* --- plan execution ----------------------------------------------------------------------------
 */

static struct model *bundled(const char *name)
{
	const char *bin = getenv("SPLITNIC");
	char path[512], err[512];
	struct model *m;

	if (bin && strrchr(bin, '/'))
		snprintf(path, sizeof(path), "%.*s/models/%s.snm", (int)(strrchr(bin, '/') - bin),
			 bin, name);
	else
		snprintf(path, sizeof(path), "build/models/%s.snm", name);
	if (access(path, R_OK))
		return NULL;
	m = model_load(path, err, sizeof(err));
	if (!m)
		fail_msg("%s", err);
	return m;
}

/* front [0, k) + back [k, n) == whole, and back on the NIC emulator == whole, bit for bit. */
static void expect_split_exact(struct model *m, uint32_t k, uint32_t batch)
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
	assert_int_equal(host_reqtab_init(&t, 2 * batch, hm_c.act_bytes, hm_c.classes), 0);
	nicfw_emu_params_default(&ep);
	emu = nicfw_emu_create(m, hm_c.split, 16, &ep, err, sizeof(err));
	if (!emu)
		fail_msg("%s", err);
	x = test_random_inputs(m, 2 * batch);
	for (uint32_t i = 0; i < 2 * batch; i++) {
		r[i % batch] = host_reqtab_get(&t);
		r[i % batch]->in = x + (size_t)i * hm_c.in_bytes; /* in its frame, as received */
		if (i % batch != batch - 1)
			continue;
		/* the whole model on one set of slots, front + back on copies */
		assert_int_equal(host_stage_run(&sw, HOST_STAGE_WHOLE, r, batch), 0);
		for (uint32_t j = 0; j < batch; j++) {
			struct host_req *c = host_reqtab_get(&t);
			struct host_req *w = r[j];

			c->in = w->in;
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
				c[j]->in = r[j]->in;
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
	struct model *m = bundled("fmnist-bcnn");
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
	assert_int_equal(m->layers[hm.split - 1].op, MODEL_OP_FLATTEN);
	assert_true(hm.split > kexec_nic_first(m));
	assert_int_equal(hm.split, kexec_nic_split(m)); /* splitnic-nic's default @K too */
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
	model_free(m);
}

/* A stand-alone model (the NIC runs all of it) leaves the host nothing in co-processor mode. */
static void test_host_plan_standalone_mlp(void **state)
{
	struct model *m = bundled("fmnist-bmlp");
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
	model_free(m);
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

int main(void)
{
	const struct CMUnitTest tests[] = {
	    cmocka_unit_test(test_host_reqtab_get_put),
	    cmocka_unit_test(test_host_remote_window),
	    cmocka_unit_test(test_host_remote_notice_checks),
	    cmocka_unit_test(test_host_remote_deadline),
	    cmocka_unit_test(test_host_remote_wrap),
	    cmocka_unit_test(test_host_tpl_checksums),
	    cmocka_unit_test(test_host_cookie),
	    cmocka_unit_test(test_host_spread),
	    cmocka_unit_test(test_host_plan_bundled_cnn),
	    cmocka_unit_test(test_host_plan_standalone_mlp),
	    cmocka_unit_test(test_host_hist),
	};

	return cmocka_run_group_tests(tests, NULL, NULL);
}
