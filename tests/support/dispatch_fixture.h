/* SPDX-License-Identifier: MIT */
/*
 * What the dispatcher's tests (tests/test_dispatch.c, tests/test_dispatch_host.c) share: the
 * NIC's addresses, a fake transmit that keeps the frames sent, fake executors (one struct kexec
 * per model), dispatchers made of them, and hand-made frames (UDP, REQUESTs) with the check of a
 * reply to the client. Header-only: each test program includes it once.
 */
#ifndef TESTS_SUPPORT_DISPATCH_FIXTURE_H
#define TESTS_SUPPORT_DISPATCH_FIXTURE_H

#include <errno.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <string.h>

#include <cmocka.h>

#include "nicfw/dispatch.h"
#include "protocol/proto.h"

#define NIC_IP	0x0a580001u /* 10.88.0.1 */
#define CLI_IP	0x0a580002u
#define HOST_IP 0x0a580003u
#define MODEL	0x1234u
#define IN	64u

static const uint8_t nic_mac[6] = {2, 0, 0, 0, 0, 1}, cli_mac[6] = {2, 0, 0, 0, 0, 2};

struct sent {
	uint8_t frame[2048];
	uint32_t len;
	enum nicfw_port port;
};

static struct sent out[128];
static uint32_t n_out;
static bool eng_hold;  /* the fake executors finish nothing */
static int eng_status; /* ... and what they finish ends so (0: done) */

static inline int fake_tx(void *arg, enum nicfw_port port, const uint8_t *frame, uint32_t len)
{
	struct sent *o = &out[n_out++ % 128]; /* the last 128 are kept */

	assert_true(len <= sizeof(o->frame));
	memcpy(o->frame, frame, len);
	o->len = len;
	o->port = port;
	return 0;
}

/*
 * A fake executor for one model (a model of first + 1 ops whose op `first` takes the input): its
 * submissions wait in order; each kexec_poll finishes the oldest, unless eng_hold, scoring
 * class in[0] % 3 5.0 and class k -k.
 */
struct fake_exec {
	struct model m;
	struct model_layer l[4];
	struct kexec x;
	const uint8_t *in[KEXEC_FIFO];
	double *out[KEXEC_FIFO];
	uint64_t tag[KEXEC_FIFO];
	uint32_t head, tail;
};

static struct fake_exec fakes[4];
static uint32_t n_fakes;

static inline int fake_load(struct kexec *x, const struct model *m, uint32_t first, uint32_t last,
			    uint32_t max_batch, char *err, size_t errlen)
{
	return 0;
}
static inline int fake_submit(struct kexec *x, const void *in, uint32_t n, void *scores,
			      uint64_t tag)
{
	struct fake_exec *f = x->priv;
	const uint32_t j = f->tail++ % KEXEC_FIFO;

	f->in[j] = in;
	f->out[j] = scores;
	f->tag[j] = tag;
	return 0;
}

static inline void fake_progress(struct kexec *x)
{
	struct fake_exec *f = x->priv;
	uint32_t j;

	if (eng_hold || f->head == f->tail)
		return;
	j = f->head++ % KEXEC_FIFO;
	for (uint32_t k = 0; k < 3; k++)
		f->out[j][k] = k == f->in[j][0] % 3 ? 5.0 : -1.0 * k;
	kexec_complete(x, f->tag[j], eng_status);
}

static inline void fake_caps(const struct kexec *x, struct kexec_caps *c)
{
	c->kind = KEXEC_KIND_CPU; /* any op range */
	c->max_batch = 1;
}

static const struct kexec_ops fake_ops =
    KEXEC_OPS("fake", NULL, fake_load, fake_submit, fake_progress, fake_caps, NULL);

/* md: model `id` on a fresh fake executor, its part from op `first` taking (c,h,w) of fmt. */
static inline void fake_model(struct nicfw_disp_model *md, uint32_t id, uint32_t first,
			      uint32_t fmt, uint32_t c, uint32_t h, uint32_t w)
{
	struct fake_exec *f = &fakes[n_fakes++ % 4];
	char err[256];

	memset(f, 0, sizeof(*f));
	snprintf(f->m.name, sizeof(f->m.name), "fake-%x", id);
	f->m.n_layers = first + 1;
	f->m.layers = f->l;
	f->m.input = (struct model_shape){fmt, c, h, w};
	f->l[first].in = f->m.input;
	f->l[first].out = (struct model_shape){MODEL_FMT_F64, 3, 1, 1};
	assert_int_equal(kexec_open(&f->x, &fake_ops, NULL, err, sizeof(err)), 0);
	f->x.priv = f;
	if (kexec_load(&f->x, &f->m, first, first + 1, 1, err, sizeof(err)) ||
	    nicfw_disp_model_init(md, id, &f->x, err, sizeof(err)))
		fail_msg("%s", err);
}

static const struct nicfw_health *disp_health; /* mk_disp's cfg.health */

/* The NIC's address, port, payload and the fake transmit. */
static inline void cfg_init(struct nicfw_disp_config *c)
{
	memcpy(c->mac, nic_mac, 6);
	c->ip = NIC_IP;
	c->port = PROTO_DEFAULT_PORT;
	c->payload = PROTO_DEFAULT_PAYLOAD;
	c->tx = fake_tx;
}

/* A dispatcher for c, nothing sent yet, the executors idle. */
static inline struct nicfw_disp *create(const struct nicfw_disp_config *c)
{
	struct nicfw_disp *d;
	char err[256];

	for (uint32_t i = 0; i < c->n_models; i++) { /* nothing left from another dispatcher */
		struct kexec *x = c->model[i].x;

		((struct fake_exec *)x->priv)->head = ((struct fake_exec *)x->priv)->tail = 0;
		x->head = x->tail = x->pending = 0;
	}
	d = nicfw_disp_create(c, err, sizeof(err));
	if (!d)
		fail_msg("%s", err);
	n_out = 0;
	eng_hold = false;
	eng_status = 0;
	return d;
}

static inline struct nicfw_disp *mk_disp(void)
{
	struct nicfw_disp_config c = {0};
	struct nicfw_disp *d;

	cfg_init(&c);
	c.n_models = 2;
	fake_model(&c.model[0], MODEL, 0, MODEL_FMT_U8, 1, 1, IN);
	fake_model(&c.model[1], 0x99, 2, MODEL_FMT_BITS, 64, 1, 1);
	c.health = disp_health;
	d = create(&c);
	return d;
}

/* Ethernet + IPv4 + UDP from sip:40000 around payload; returns the frame length. */
static inline uint32_t udp_frame_from(uint8_t *f, uint32_t sip, uint32_t dip, uint16_t dport,
				      const void *pl, uint32_t n)
{
	uint8_t *ip = f + 14, *udp = ip + 20;

	memset(f, 0, 42);
	memcpy(f, nic_mac, 6);
	memcpy(f + 6, cli_mac, 6);
	proto_put16(f + 12, 0x0800);
	ip[0] = 0x45;
	proto_put16(ip + 2, (uint16_t)(28 + n));
	ip[8] = 64;
	ip[9] = 17;
	proto_put32(ip + 12, sip);
	proto_put32(ip + 16, dip);
	proto_put16(udp, 40000);
	proto_put16(udp + 2, dport);
	proto_put16(udp + 4, (uint16_t)(8 + n));
	memcpy(udp + 8, pl, n);
	return 42 + n;
}

static inline uint32_t udp_frame(uint8_t *f, uint32_t dip, uint16_t dport, const void *pl,
				 uint32_t n)
{
	return udp_frame_from(f, CLI_IP, dip, dport, pl, n);
}

static inline uint32_t request(uint8_t *f, uint32_t model, uint64_t rid, uint32_t count, uint8_t x0)
{
	uint8_t body[64] = {x0}, dg[256];
	struct proto_msg m;
	int n;

	proto_msg_init(&m, PROTO_REQUEST, model, rid);
	proto_msg_set_tensor(&m, PROTO_FMT_U8, 1, 1, count, 0, 0);
	n = proto_build(&m, body, count, dg, sizeof(dg));
	assert_true(n > 0);
	return udp_frame(f, NIC_IP, PROTO_DEFAULT_PORT, dg, (uint32_t)n);
}

static inline void expect_reply(const struct sent *s, uint8_t type, struct proto_msg *m)
{
	const uint8_t *ip = s->frame + 14, *udp = ip + 20;

	assert_memory_equal(s->frame, cli_mac, 6);
	assert_memory_equal(s->frame + 6, nic_mac, 6);
	assert_int_equal(ip[12] << 24 | ip[13] << 16 | ip[14] << 8 | ip[15], NIC_IP);
	assert_int_equal(ip[16] << 24 | ip[17] << 16 | ip[18] << 8 | ip[19], CLI_IP);
	assert_int_equal(udp[0] << 8 | udp[1], PROTO_DEFAULT_PORT);
	assert_int_equal(udp[2] << 8 | udp[3], 40000);
	assert_int_equal(proto_parse(udp + 8, s->len - 42, m), PROTO_OK);
	assert_int_equal(m->type, type);
}

#endif /* TESTS_SUPPORT_DISPATCH_FIXTURE_H */
