// SPDX-License-Identifier: MIT
/*
 * An activation across a cut, through the real protocol code: pack to the wire layout, build
 * and fragment ACTIVATION datagrams, copy them to the receive side, parse, reassemble, unpack.
 */
#include <errno.h>
#include <stdlib.h>
#include <string.h>

#include "kernels/kern_ops.h"
#include "protocol/proto.h"
#include "protocol/reasm.h"
#include "split/split.h"

struct split_wire {
	uint32_t payload, max_pkts, n_pkts;
	uint64_t max_bytes, seq;
	uint8_t *pack;	  /* the data section */
	uint8_t *tx, *rx; /* max_pkts datagrams of `payload` bytes each */
	uint32_t *len;	  /* datagram lengths */
	struct proto_reasm *ra;
};

struct split_wire *split_wire_create(uint64_t max_bytes, uint32_t payload)
{
	struct proto_reasm_config cfg = {.slots = 2, .timeout_ns = UINT64_MAX / 2};
	struct split_wire *w = calloc(1, sizeof(*w));

	if (!w || max_bytes > PROTO_MAX_TOTAL || payload < PROTO_MIN_PAYLOAD ||
	    payload > PROTO_MAX_PAYLOAD)
		goto err_free;
	w->payload = payload;
	w->max_bytes = max_bytes ? max_bytes : 8;
	w->max_pkts = proto_frag_count(PROTO_ACT_HDR_LEN, w->max_bytes, payload);
	cfg.max_msg = (uint32_t)w->max_bytes;
	w->pack = aligned_alloc(64, (w->max_bytes + 63) / 64 * 64);
	w->tx = malloc((size_t)w->max_pkts * payload);
	w->rx = malloc((size_t)w->max_pkts * payload);
	w->len = calloc(w->max_pkts, sizeof(*w->len));
	w->ra = proto_reasm_create(&cfg);
	if (!w->pack || !w->tx || !w->rx || !w->len || !w->ra)
		goto err_free;
	return w;

err_free:
	split_wire_free(w);
	return NULL;
}

void split_wire_free(struct split_wire *w)
{
	if (!w)
		return;
	if (w->ra)
		proto_reasm_destroy(w->ra);
	free(w->pack);
	free(w->tx);
	free(w->rx);
	free(w->len);
	free(w);
}

/* Channel-packed pixel-major bits -> the wire's C-major bits; and back. */
static void bits_from_wire(const uint64_t *x, uint32_t c, uint32_t h, uint32_t w, uint64_t *y)
{
	const uint32_t hw = h * w, wpp = model_words(c);

	memset(y, 0, (size_t)hw * wpp * 8);
	for (uint32_t ch = 0; ch < c; ch++)
		for (uint32_t p = 0; p < hw; p++) {
			const uint64_t i = (uint64_t)ch * hw + p;

			if (x[i / 64] >> (i % 64) & 1)
				y[(size_t)p * wpp + ch / 64] |= 1ull << (ch % 64);
		}
}

int split_wire_send(struct split_wire *w, const struct model_shape *s, const void *in,
		    uint32_t layer)
{
	const bool repack = s->fmt == MODEL_FMT_BITS && s->h * s->w > 1;
	const unsigned fmt = model_fmt_wire(s->fmt);
	const uint8_t *body = in;
	struct proto_msg m;
	struct proto_frag f;
	uint64_t bytes;
	int ret, len;

	proto_msg_init(&m, PROTO_ACTIVATION, 0, ++w->seq);
	proto_msg_set_tensor(&m, fmt, s->c, s->h, s->w, 1.0f, 0);
	m.tensor.layer = (uint16_t)layer;
	bytes = proto_msg_body_len(&m);
	if (bytes > w->max_bytes)
		return -EMSGSIZE;
	if (repack) {
		kern_flatten_bits(in, 1, s->c, s->h, s->w, (uint64_t *)w->pack);
		body = w->pack;
	}
	ret = proto_frag_init(&f, &m, body, bytes, w->payload);
	if (ret)
		return ret;
	w->n_pkts = 0;
	while ((len = proto_frag_next(&f, w->tx + (size_t)w->n_pkts * w->payload, w->payload)) >
	       0) {
		w->len[w->n_pkts++] = (uint32_t)len;
		if (w->n_pkts > w->max_pkts)
			return -EMSGSIZE;
	}
	return len < 0 ? len : (int)w->n_pkts;
}

uint64_t split_wire_sent_bytes(const struct split_wire *w)
{
	uint64_t b = 0;

	for (uint32_t i = 0; i < w->n_pkts; i++)
		b += w->len[i];
	return b;
}

uint32_t split_wire_sent_packets(const struct split_wire *w)
{
	return w->n_pkts;
}

void split_wire_copy(struct split_wire *w)
{
	for (uint32_t i = 0; i < w->n_pkts; i++)
		memcpy(w->rx + (size_t)i * w->payload, w->tx + (size_t)i * w->payload, w->len[i]);
}

int split_wire_recv(struct split_wire *w, const struct model_shape *s, void *out)
{
	struct proto_reasm_msg rm;
	int ret = -EPROTO;

	for (uint32_t i = 0; i < w->n_pkts; i++) {
		struct proto_msg m;
		enum proto_ra_verdict v;

		if (proto_parse(w->rx + (size_t)i * w->payload, w->len[i], &m) != PROTO_OK ||
		    m.type != PROTO_ACTIVATION)
			return -EPROTO;
		v = proto_reasm_push(w->ra, 1, &m, 0, &rm);
		if (v == PROTO_RA_PARTIAL)
			continue;
		if (v != PROTO_RA_COMPLETE || rm.hdr.tensor.c != s->c || rm.hdr.tensor.h != s->h ||
		    rm.hdr.tensor.w != s->w || rm.hdr.tensor.fmt != model_fmt_wire(s->fmt))
			return -EPROTO;
		if (s->fmt == MODEL_FMT_BITS && s->h * s->w > 1)
			bits_from_wire((const uint64_t *)rm.data, s->c, s->h, s->w, out);
		else
			memcpy(out, rm.data, rm.len);
		proto_reasm_release(w->ra, &rm);
		ret = 0;
	}
	return ret;
}
