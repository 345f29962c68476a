// SPDX-License-Identifier: MIT
/*
 * libFuzzer target: the NIC's packet dispatcher (nicfw/dispatch.c) on a sequence of frames, each
 * from the wire or the host port, with fake executors (exec/kexec.h) that finish one inference
 * per poll, in order. Input:
 * records of [port (bit 0 of one byte: 0 wire, 1 host)] [length (2 bytes, big-endian)] [frame].
 * Two models: a stand-alone u8 one whose RESPONSE (104 bytes) is larger than a plain REQUEST
 * for it (80 bytes), and a co-processor part (bits, from op 3); completion notices on; no
 * allow-list; a small ERROR rate; HEALTH answered (nicfw/health.h). After every frame and every
 * poll it checks the trust boundary:
 *   - every frame sent is Ethernet/IPv4/UDP with a message the parser accepts;
 *   - a frame from the wire that says it is an ACTIVATION, a RESPONSE or an ERROR gets nothing
 *     and is consumed; what the wire gets back for a frame is an ERROR, or a HEALTH report for
 *     a probe, to that frame's sender, out of the wire port, no larger than the frame's UDP
 *     payload (no amplification);
 *   - what a frame from the host gets back goes out of the host port;
 *   - RESPONSEs to the wire have the short header (no cookie); a notice (to the host port)
 *     carries the cookie of an ACTIVATION the host sent;
 *   - RESPONSE bytes sent to an address never exceed the bytes it sent to the inference port,
 *     unless the host named it as an ACTIVATION's reply address.
 */
#include <errno.h>
#include <stdbool.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "nicfw/dispatch.h"
#include "nicfw/health.h"
#include "protocol/frame.h"

#define CHECK(c)                                                                                   \
	do {                                                                                       \
		if (!(c))                                                                          \
			__builtin_trap();                                                          \
	} while (0)

#define NIC_IP	0x0a000001u
#define MAX_OUT 256
#define COOKIES 64

struct out {
	uint8_t port;
	uint32_t len;
	uint8_t frame[PROTO_FRAME_MAX];
};

static struct out out[MAX_OUT];
static uint32_t n_out;
static uint64_t cookies[COOKIES];
static uint32_t n_cookies;

/* Bytes to and from each address (ip << 16 | port); `trusted`: an ACTIVATION's reply address. */
struct peer {
	uint64_t key, in, out;
	bool trusted;
};
static struct peer peers[MAX_OUT];
static uint32_t n_peers;

static struct peer *peer(uint32_t ip, uint16_t port)
{
	uint64_t key = (uint64_t)ip << 16 | port;

	for (uint32_t i = 0; i < n_peers; i++)
		if (peers[i].key == key)
			return &peers[i];
	if (n_peers == MAX_OUT)
		return NULL;
	peers[n_peers] = (struct peer){.key = key};
	return &peers[n_peers++];
}

static int fake_tx(void *arg, enum nicfw_port port, const uint8_t *frame, uint32_t len)
{
	CHECK(len <= PROTO_FRAME_MAX);
	if (n_out == MAX_OUT)
		return -ENOBUFS;
	out[n_out].port = (uint8_t)port;
	out[n_out].len = len;
	memcpy(out[n_out++].frame, frame, len);
	return 0;
}

/* A fake executor for one model whose op `first` takes the input: submissions wait in order,
 * each poll finishes the oldest with scores 0, 1, 2. */
struct fake_exec {
	struct model m;
	struct model_layer l[4];
	struct kexec x;
	double *scores[KEXEC_FIFO];
	uint64_t tag[KEXEC_FIFO];
	uint32_t head, tail;
};

static struct fake_exec fakes[2];

static int fake_init(struct kexec *x, const void *conf, char *err, size_t errlen)
{
	x->priv = (void *)conf;
	return 0;
}

static int fake_load(struct kexec *x, const struct model *m, uint32_t first, uint32_t last,
		     uint32_t max_batch, char *err, size_t errlen)
{
	return 0;
}

static int fake_submit(struct kexec *x, const void *in, uint32_t n, void *scores, uint64_t tag)
{
	struct fake_exec *f = x->priv;

	CHECK(n == 1 && f->tail - f->head < KEXEC_FIFO);
	f->scores[f->tail % KEXEC_FIFO] = scores;
	f->tag[f->tail++ % KEXEC_FIFO] = tag;
	return 0;
}

static void fake_progress(struct kexec *x)
{
	struct fake_exec *f = x->priv;
	uint32_t j;

	if (f->head == f->tail)
		return;
	j = f->head++ % KEXEC_FIFO;
	for (uint32_t k = 0; k < 3; k++)
		f->scores[j][k] = (double)k;
	kexec_complete(x, f->tag[j], 0);
}

static void fake_caps(const struct kexec *x, struct kexec_caps *c)
{
	c->kind = KEXEC_KIND_CPU;
	c->max_batch = 1;
}

static const struct kexec_ops fake_ops =
    KEXEC_OPS("fake", fake_init, fake_load, fake_submit, fake_progress, fake_caps, NULL);

/* md: model id on fakes[i], its part from op first taking (c,h,w) of fmt, 3 classes. */
static bool fake_model(struct nicfw_disp_model *md, uint32_t i, uint32_t id, uint32_t first,
		       uint32_t fmt, uint32_t c, uint32_t h, uint32_t w)
{
	struct fake_exec *f = &fakes[i];
	char err[256];

	memset(f, 0, sizeof(*f));
	f->m.n_layers = first + 1;
	f->m.layers = f->l;
	f->m.input = (struct model_shape){fmt, c, h, w};
	f->l[first].in = f->m.input;
	f->l[first].out = (struct model_shape){MODEL_FMT_F64, 3, 1, 1};
	return !kexec_open(&f->x, &fake_ops, f, err, sizeof(err)) &&
	       !kexec_load(&f->x, &f->m, first, first + 1, 1, err, sizeof(err)) &&
	       !nicfw_disp_model_init(md, id, &f->x, err, sizeof(err));
}

static struct nicfw_disp *make(void)
{
	static struct nicfw_health health;
	struct nicfw_disp_config c = {0};
	char err[256];

	nicfw_health_init(&health, "fuzz-nic");
	nicfw_health_add(&health, 1, 0, PROTO_FMT_U8, 1, 4, 4, 3, "standalone");
	nicfw_health_add(&health, 2, 3, PROTO_FMT_BITS, 64, 1, 1, 3, "coproc-part");
	c.health = &health;
	c.mac[0] = 2, c.mac[5] = 1;
	c.ip = NIC_IP;
	c.port = PROTO_DEFAULT_PORT;
	c.payload = PROTO_DEFAULT_PAYLOAD;
	c.reasm_slots = 4;
	c.reasm_timeout_ns = 1000000;
	c.notify_host = true;
	proto_trust_set_rate(&c.trust, 10, 3);
	c.n_models = 2;
	CHECK(fake_model(&c.model[0], 0, 1, 0, MODEL_FMT_U8, 1, 4, 4));
	CHECK(fake_model(&c.model[1], 1, 2, 3, MODEL_FMT_BITS, 64, 1, 1));
	c.tx = fake_tx;
	return nicfw_disp_create(&c, err, sizeof(err));
}

/* An output frame: parsed (it must be a valid splitnic datagram), its message in m. */
static void parse_out(const struct out *o, struct proto_addr *a, struct proto_msg *m)
{
	const uint8_t *p;
	uint32_t plen, ihl;

	CHECK(proto_frame_parse(o->frame, o->len, a, &p, &plen, &ihl) == PROTO_FRAME_UDP);
	CHECK(proto_parse(p, plen, m) == PROTO_OK);
}

static bool cookie_sent(uint64_t cookie)
{
	for (uint32_t i = 0; i < n_cookies && i < COOKIES; i++)
		if (cookies[i] == cookie)
			return true;
	return false;
}

/* The RESPONSEs of a poll: notices to the host with a cookie it sent, short ones to the wire,
 * none larger in all than what their address sent (unless the host named it). */
static void check_poll(uint32_t from)
{
	for (uint32_t i = from; i < n_out; i++) {
		struct proto_addr a;
		struct proto_msg m;
		struct peer *pr;

		parse_out(&out[i], &a, &m);
		CHECK(m.type == PROTO_RESPONSE);
		if (out[i].port ==
		    NICFW_PORT_HOST) { /* a notice, or the answer to a host REQUEST */
			CHECK(
			    m.hdr_len == PROTO_RESP_HDR_LEN ||
			    (m.hdr_len == PROTO_RESP_NOTICE_HDR_LEN && cookie_sent(m.resp.cookie)));
			continue;
		}
		CHECK(m.hdr_len == PROTO_RESP_HDR_LEN);
		pr = peer(a.dip, a.dport);
		if (!pr || pr->trusted)
			continue;
		pr->out += out[i].len - PROTO_FRAME_HDRS;
		CHECK(pr->out <= pr->in);
	}
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	static uint8_t frame[PROTO_FRAME_MAX + 64];
	struct nicfw_disp *d = make();
	uint64_t now = 1000000000ull;
	size_t at = 0;

	CHECK(d);
	n_cookies = n_peers = 0;
	while (at + 3 <= size) {
		const enum nicfw_port port = data[at] & 1 ? NICFW_PORT_HOST : NICFW_PORT_WIRE;
		uint32_t len = (uint32_t)data[at + 1] << 8 | data[at + 2], plen = 0, ihl;
		enum nicfw_disp_action act;
		enum proto_frame_kind fk;
		struct proto_addr in;
		const uint8_t *p = NULL;
		unsigned says = 0;
		struct proto_msg m;

		at += 3;
		if (len > size - at || len > PROTO_FRAME_MAX)
			len = (uint32_t)(size - at < PROTO_FRAME_MAX ? size - at : PROTO_FRAME_MAX);
		memcpy(frame, data + at, len);
		at += len;
		fk = proto_frame_parse(frame, len, &in, &p, &plen, &ihl);
		if (fk == PROTO_FRAME_UDP && in.dport == PROTO_DEFAULT_PORT && plen >= 4 &&
		    proto_get16(p) == PROTO_MAGIC && p[2] == PROTO_VERSION)
			says = p[3];
		if (fk == PROTO_FRAME_UDP && in.dport == PROTO_DEFAULT_PORT &&
		    port == NICFW_PORT_HOST && proto_parse(p, plen, &m) == PROTO_OK &&
		    m.type == PROTO_ACTIVATION) {
			struct peer *pr =
			    peer(proto_get32(m.act.reply_addr + 12), m.act.reply_port);

			cookies[n_cookies++ % COOKIES] = m.act.cookie;
			if (pr)
				pr->trusted = true;
		}
		if (fk == PROTO_FRAME_UDP && in.dport == PROTO_DEFAULT_PORT &&
		    port == NICFW_PORT_WIRE) {
			struct peer *pr = peer(in.sip, in.sport);

			if (pr)
				pr->in += plen;
		}
		n_out = 0;
		act = nicfw_disp_rx(d, port, frame, len, now);
		CHECK(act != NICFW_DISP_REPLY || fk == PROTO_FRAME_NOT_IPV4);
		if (port == NICFW_PORT_WIRE &&
		    (says == PROTO_ACTIVATION || says == PROTO_RESPONSE || says == PROTO_ERROR)) {
			CHECK(act == NICFW_DISP_CONSUMED);
			CHECK(n_out == 0);
		}
		for (uint32_t i = 0; i < n_out; i++) {
			struct proto_addr a;

			parse_out(&out[i], &a, &m);
			CHECK(m.type == PROTO_ERROR ||
			      (m.type == PROTO_HEALTH && says == PROTO_HEALTH));
			CHECK(out[i].port == (uint8_t)port);
			CHECK(a.dip == in.sip && a.dport == in.sport);
			if (port == NICFW_PORT_WIRE)
				CHECK(out[i].len - PROTO_FRAME_HDRS <= plen);
		}
		for (int k = 0; k < 4; k++) {
			uint32_t first = n_out;

			if (!nicfw_disp_poll(d, now))
				break;
			check_poll(first);
		}
		now += 1000 + (uint64_t)(len & 0xff) * 1000000;
	}
	nicfw_disp_free(d);
	return 0;
}
