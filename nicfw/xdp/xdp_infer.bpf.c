// SPDX-License-Identifier: (MIT OR GPL-2.0)
/*
 * XDP executor: answers splitnic REQUESTs for a binary MLP in the XDP hook (see xdp_infer.h for
 * the maps, the served models and the verdicts). BPF has no popcount instruction and no floating
 * point: popcount is SWAR arithmetic, scores come from the load-time table.
 */
#include <linux/bpf.h>
#include <linux/if_ether.h>
#include <linux/in.h>
#include <linux/ip.h>
#include <linux/udp.h>
#include <bpf/bpf_endian.h>
#include <bpf/bpf_helpers.h>

#include "nicfw/xdp/xdp_infer.h"
#include "protocol/csum.h"
#include "protocol/frame_hdr.h"

const volatile struct xdp_infer_cfg cfg = {};

struct {
	__uint(type, BPF_MAP_TYPE_ARRAY);
	__uint(max_entries, 1);
	__uint(key_size, sizeof(__u32));
	__uint(value_size, sizeof(__u64)); /* resized to cfg.model_words words at load */
} xdp_model SEC(".maps");

struct {
	__uint(type, BPF_MAP_TYPE_PERCPU_ARRAY);
	__uint(max_entries, 1);
	__type(key, __u32);
	__type(value, struct xdp_infer_scratch);
} xdp_scratch SEC(".maps");

struct {
	__uint(type, BPF_MAP_TYPE_PERCPU_ARRAY);
	__uint(max_entries, XDP_INFER_ST__COUNT);
	__type(key, __u32);
	__type(value, __u64);
} xdp_stats SEC(".maps");

struct {
	__uint(type, BPF_MAP_TYPE_ARRAY);
	__uint(max_entries, PROTO_TRUST_SLOTS);
	__type(key, __u32);
	__type(value, uint64_t); /* protocol/trust.h's bucket */
} xdp_err_rl SEC(".maps");

enum work { W_U8, W_BITS, W_FEATURE };

/* Per-layer arguments of the neuron callbacks (on the program's stack). */
struct layer_ctx {
	__u32 n, nw, out, w_off, t_off;
	__u32 in_sel, out_sel, last;
	__u32 input; /* XDP_INFER_L_IN: the input bits in planes[] */
	__u32 mode;  /* enum work */
	__s64 sumx;  /* U8 layer: sum of the input bytes */
};

static __always_inline int count(__u32 st, int verdict)
{
	__u64 *v = bpf_map_lookup_elem(&xdp_stats, &st);

	if (v)
		*v += 1;
	return verdict;
}

/*
 * The trust policy's verdict (protocol/trust.h) on a reply of kind `reply` and at least out_bytes
 * to saddr (host order) for the plen bytes of UDP payload it sent; *cap: the most bytes the
 * reply may take.
 */
static __always_inline enum proto_trust_verdict decide(__u32 saddr, __u32 reply, __u32 plen,
						       __u32 out_bytes, __u32 *cap)
{
	const struct proto_trust_ask q = {
	    .src = saddr, .reply = (__u8)reply, .in_bytes = plen, .out_bytes = out_bytes};
	__u32 slot = proto_trust_slot(saddr);
	uint64_t *tat = reply == PROTO_ERROR ? bpf_map_lookup_elem(&xdp_err_rl, &slot) : NULL;

	return proto_trust_decide(&cfg.trust, &q, tat, bpf_ktime_get_ns(), cap);
}

/* What is done with a reply the trust policy refuses (v not SEND), counted: nothing is sent to
 * a source off the allow-list nor over its ERROR rate (dropped); one too large: `big`. */
static __always_inline int refused(enum proto_trust_verdict v, __u32 big, int big_action)
{
	if (v == PROTO_TRUST_NOT_ALLOWED)
		return count(XDP_INFER_ST_NOT_ALLOWED, XDP_DROP);
	if (v == PROTO_TRUST_RATE_LIMITED)
		return count(XDP_INFER_ST_ERR_LIMITED, XDP_DROP);
	return count(big, big_action);
}

static __always_inline __u32 popcount64(__u64 x)
{
	x = x - ((x >> 1) & 0x5555555555555555ull);
	x = (x & 0x3333333333333333ull) + ((x >> 2) & 0x3333333333333333ull);
	x = (x + (x >> 4)) & 0x0f0f0f0f0f0f0f0full;
	return (__u32)((x * 0x0101010101010101ull) >> 56);
}

#define M1 0x5555555555555555ull
#define M2 0x3333333333333333ull
#define M4 0x0f0f0f0f0f0f0f0full
#define M8 0x00ff00ff00ff00ffull

/* Per-nibble popcount (each nibble <= 4). */
static __always_inline __u64 nib_count(__u64 x)
{
	x = x - ((x >> 1) & M1);
	return (x & M2) + ((x >> 2) & M2);
}

/* Nibbles (each <= 12) summed into bytes (each <= 24). */
static __always_inline __u64 byte_sum(__u64 x)
{
	return (x & M4) + ((x >> 4) & M4);
}

/*
 * sum_b 2^b popcount(p[b] & w) over 8 bit-planes, sharing the SWAR steps: planes are paired in
 * nibbles (c + 2c' <= 12), pairs in bytes (s + 4s' <= 120), the two halves in 16-bit lanes
 * (h + 16h' <= 4080), and the four lanes summed by one multiply.
 */
static __always_inline __u64 planes_dot(const __u64 *p, __u64 w)
{
	__u64 g0 = byte_sum(nib_count(p[0] & w) + (nib_count(p[1] & w) << 1)) +
		   (byte_sum(nib_count(p[2] & w) + (nib_count(p[3] & w) << 1)) << 2);
	__u64 g1 = byte_sum(nib_count(p[4] & w) + (nib_count(p[5] & w) << 1)) +
		   (byte_sum(nib_count(p[6] & w) + (nib_count(p[7] & w) << 1)) << 2);
	__u64 t = (g0 & M8) + ((g0 >> 8) & M8) + (((g1 & M8) + ((g1 >> 8) & M8)) << 4);

	return (t * 0x0001000100010001ull) >> 48;
}

/* The neuron's output: a bit of the next activation, or the final value of its class. */
static __always_inline long emit(const struct layer_ctx *c, struct xdp_infer_scratch *s,
				 const __u64 *mw, __u32 o, __s64 dot)
{
	__u64 ti, tw, bit;

	if (c->t_off != XDP_INFER_NO_THRESH) {
		ti = (__u64)c->t_off + o;
		if (ti >= cfg.model_words)
			return 1;
		tw = mw[ti];
		bit = (__u64)(dot >= (__s64)(__s32)(__u32)tw) ^ ((tw >> 32) & 1);
		if (!c->last) {
			s->act[c->out_sel & 1][(o >> 6) & (XDP_INFER_MAX_WORDS - 1)] |= bit
											<< (o & 63);
			return 0;
		}
		dot = (__s64)bit;
	}
	s->final[o & (XDP_INFER_MAX_CLASSES - 1)] = dot;
	return 0;
}

_Static_assert(XDP_INFER_MAX_IN_WORDS * 8 == XDP_INFER_MAX_BITS_WORDS,
	       "planes[] holds the widest bits input");

/*
 * BDENSE: dot = n - 2 popcount(x ^ w), x the previous layer's bits, or the input bits in
 * planes[] (layer 0 of an f32 model). One callback for both: clang would otherwise merge the
 * bpf_loop calls into one with a selected callback, which the verifier cannot inline.
 */
static __always_inline long neuron_bits(__u64 idx, void *data)
{
	const struct layer_ctx *c = data;
	struct xdp_infer_scratch *s;
	const __u64 *mw, *x;
	__u32 zero = 0, o = (__u32)idx, nw = c->nw, pop = 0;
	__u64 row;

	mw = bpf_map_lookup_elem(&xdp_model, &zero);
	s = bpf_map_lookup_elem(&xdp_scratch, &zero);
	if (!mw || !s)
		return 1;
	row = (__u64)c->w_off + (__u64)o * nw;
	if (row > cfg.row_limit)
		return 1;
	if (c->input) {
		x = s->planes;
		for (__u32 j = 0; j < XDP_INFER_MAX_BITS_WORDS; j++) {
			if (j >= nw)
				break;
			pop += popcount64(x[j] ^ mw[row + j]);
		}
	} else {
		x = s->act[c->in_sel & 1];
		for (__u32 j = 0; j < XDP_INFER_MAX_WORDS; j++) {
			if (j >= nw)
				break;
			pop += popcount64(x[j] ^ mw[row + j]);
		}
	}
	return emit(c, s, mw, o, (__s64)c->n - 2 * (__s64)pop);
}

/* BDENSE_U8: dot = 2 sum_b 2^b popcount(P_b & w) - sum_i x_i (w = +1 where the bit is set). */
static __always_inline long neuron_u8(__u64 idx, void *data)
{
	const struct layer_ctx *c = data;
	struct xdp_infer_scratch *s;
	const __u64 *mw, *p;
	__u32 zero = 0, o = (__u32)idx, nw = c->nw;
	__u64 row, w, acc = 0;

	mw = bpf_map_lookup_elem(&xdp_model, &zero);
	s = bpf_map_lookup_elem(&xdp_scratch, &zero);
	if (!mw || !s)
		return 1;
	row = (__u64)c->w_off + (__u64)o * nw;
	if (row > cfg.row_limit)
		return 1;
	for (__u32 j = 0; j < XDP_INFER_MAX_IN_WORDS; j++) {
		if (j >= nw)
			break;
		w = mw[row + j];
		p = &s->planes[j * 8];
		acc += planes_dot(p, w);
	}
	return emit(c, s, mw, o, 2 * (__s64)acc - c->sumx);
}

/* The request's bytes at `off` as 8 bit-planes per 64 inputs; returns the sum of the bytes. */
static __always_inline int load_planes(struct xdp_md *ctx, struct xdp_infer_scratch *s, __u32 off,
				       __s64 *sumx)
{
	__u64 v, g, *in = (__u64 *)s->in;
	__s64 sum = 0;
	__u32 len;

	for (__u32 j = 0; j < XDP_INFER_MAX_IN_WORDS; j++) {
		if (j >= cfg.in_words)
			break;
		len = cfg.in_n - j * 64;
		if (len > 64)
			len = 64;
		for (__u32 k = 0; k < 8; k++)
			in[k] = 0;
		if (bpf_xdp_load_bytes(ctx, off + j * 64, s->in, len))
			return -1;
		for (__u32 b = 0; b < 8; b++)
			s->planes[j * 8 + b] = 0;
		for (__u32 k = 0; k < 8; k++) {
			v = in[k];
			for (__u32 b = 0; b < 8; b++) {
				/* bit b of the 8 bytes of v, byte i to bit i */
				g = (((v >> b) & 0x0101010101010101ull) * 0x0102040810204080ull) >>
				    56;
				s->planes[j * 8 + b] |= g << (k * 8);
			}
		}
		for (__u32 b = 0; b < 8; b++)
			sum += (__s64)popcount64(s->planes[j * 8 + b]) << b;
	}
	*sumx = sum;
	return 0;
}

/* `bytes` (a .rodata constant) of the request's data at `off` into planes[], 64 at a time. */
static __always_inline int load_raw(struct xdp_md *ctx, struct xdp_infer_scratch *s, __u32 off,
				    __u32 bytes)
{
	__u8 *dst = (__u8 *)s->planes;
	__u32 len;

	for (__u32 j = 0; j < XDP_INFER_MAX_BITS_WORDS / 8; j++) {
		if (j * 64 >= bytes)
			break;
		len = bytes - j * 64;
		if (len > 64)
			len = 64;
		if (bpf_xdp_load_bytes(ctx, off + j * 64, dst + j * 64, len))
			return -1;
	}
	return 0;
}

/*
 * f32 feature i: its bit from the float32 bit pattern by integer compares on the
 * order-preserving key (thresholds computed at load by the CPU kernels); NaN and +-inf take
 * the bits stored for them. The bit goes to act[1] (layer 0 writes act[0]).
 */
static __always_inline long feature_f32(__u64 idx, void *data)
{
	struct xdp_infer_scratch *s;
	__u32 zero = 0, i = (__u32)idx, b, key;
	const __u64 *mw;
	const __u8 *p;
	__u64 ti, tw, bit;

	mw = bpf_map_lookup_elem(&xdp_model, &zero);
	s = bpf_map_lookup_elem(&xdp_scratch, &zero);
	if (!mw || !s || i >= XDP_INFER_MAX_F32_INPUT)
		return 1;
	ti = (__u64)cfg.f_off + i;
	if (ti >= cfg.model_words)
		return 1;
	tw = mw[ti];
	p = (const __u8 *)s->planes + 4 * (i & 511); /* i < 352; the mask is for the verifier */
	b = (__u32)p[0] | (__u32)p[1] << 8 | (__u32)p[2] << 16 | (__u32)p[3] << 24;
	if ((b & 0x7f800000u) == 0x7f800000u) {
		if (b & 0x007fffffu)
			bit = tw >> (b >> 31 ? XDP_INFER_FW_NAN_N : XDP_INFER_FW_NAN_P);
		else
			bit = tw >> (b >> 31 ? XDP_INFER_FW_INF_N : XDP_INFER_FW_INF_P);
		bit &= 1;
	} else {
		key = b ^ (b >> 31 ? 0xffffffffu : 0x80000000u);
		bit = (__u64)(key >= (__u32)tw) ^ ((tw >> XDP_INFER_FW_FLIP) & 1);
	}
	s->act[1][(i >> 6) & (XDP_INFER_MAX_WORDS - 1)] |= bit << (i & 63);
	return 0;
}

/*
 * The one bpf_loop callback of the per-neuron and per-feature work. One subprogram: the kernel
 * (6.18) fails to JIT ("No program to jit ... subprog < 0") when the verifier removes a whole
 * dead callback between others, which separate callbacks are for the paths .rodata rules out.
 */
static long work_one(__u64 idx, void *data)
{
	const struct layer_ctx *c = data;

	if (c->mode == W_FEATURE)
		return feature_f32(idx, data);
	if (c->mode == W_U8)
		return neuron_u8(idx, data);
	return neuron_bits(idx, data);
}

/* The input bits of an f32 or bits request into planes[0, in_words). */
static __always_inline int load_input_bits(struct xdp_md *ctx, struct xdp_infer_scratch *s,
					   __u32 off, int f32)
{
	__u32 last = (cfg.in_words - 1) & (XDP_INFER_MAX_BITS_WORDS - 1);
	struct layer_ctx w = {.mode = W_FEATURE};

	if (!f32) {
		if (load_raw(ctx, s, off, cfg.in_words * 8))
			return -1;
		if (cfg.in_words > XDP_INFER_MAX_BITS_WORDS || last >= XDP_INFER_MAX_BITS_WORDS)
			return -1;
		s->planes[last] &= cfg.in_tail ? (1ull << cfg.in_tail) - 1 : ~0ull;
		return 0;
	}
	if (load_raw(ctx, s, off, cfg.in_n * 4))
		return -1;
	for (__u32 k = 0; k < XDP_INFER_MAX_F32_INPUT / 64 + 1; k++)
		s->act[1][k] = 0;
	if (bpf_loop(cfg.in_n, work_one, &w, 0) != cfg.in_n)
		return -1;
	for (__u32 k = 0; k < XDP_INFER_MAX_F32_INPUT / 64 + 1; k++) {
		if (k >= cfg.in_words)
			break;
		s->planes[k] = s->act[1][k];
	}
	return 0;
}

static __always_inline int run_layers(struct xdp_infer_scratch *s, __s64 sumx)
{
	struct layer_ctx c;
	long done;

	for (__u32 l = 0; l < XDP_INFER_MAX_LAYERS; l++) {
		if (l >= cfg.n_layers)
			break;
		c.n = cfg.l[l].n;
		c.nw = cfg.l[l].nw;
		c.out = cfg.l[l].out;
		c.w_off = cfg.l[l].w_off;
		c.t_off = cfg.l[l].t_off;
		c.in_sel = (l + 1) & 1;
		c.out_sel = l & 1;
		c.last = l + 1 == cfg.n_layers;
		c.sumx = sumx;
		c.input = cfg.l[l].kind == XDP_INFER_L_IN;
		for (__u32 k = 0; k < XDP_INFER_MAX_WORDS; k++)
			s->act[l & 1][k] = 0;
		c.mode = cfg.l[l].kind == XDP_INFER_L_U8 ? W_U8 : W_BITS;
		done = bpf_loop(c.out, work_one, &c, 0);
		if (done != c.out)
			return -1;
	}
	return 0;
}

/* Order-preserving key of a double's bit pattern; -0.0 maps to +0.0 (they compare equal). */
static __always_inline __u64 order_key(__u64 b)
{
	if (b == 0x8000000000000000ull)
		b = 0;
	return (b >> 63) ? ~b : b | 0x8000000000000000ull;
}

struct score_ctx {
	__u64 best_key; /* every non-NaN double's key is > 0, so class 0 always sets it */
	__u32 best;
	__u32 err;
};

/*
 * Class k: its score (the table's bit pattern, little-endian) into the RESPONSE data, and the
 * arg-max on the keys (strictly greater: the lowest index wins ties). A callback rather than an
 * unrolled loop: the verifier would otherwise follow both sides of every comparison.
 */
static long score_one(__u64 idx, void *data)
{
	struct score_ctx *c = data;
	struct xdp_infer_scratch *s;
	__u32 zero = 0, k = (__u32)idx & (XDP_INFER_MAX_CLASSES - 1);
	__u64 key, bits, ti;
	const __u64 *mw;
	__s64 v;
	__u8 *d;

	mw = bpf_map_lookup_elem(&xdp_model, &zero);
	s = bpf_map_lookup_elem(&xdp_scratch, &zero);
	if (!mw || !s)
		goto err;
	v = s->final[k] + (__s64)cfg.range; /* a dot in [-range, range], or a bit (range 0) */
	if (v < 0 || v >= cfg.span)
		goto err;
	ti = (__u64)cfg.tab_off + (__u64)k * cfg.span + (__u64)v;
	if (ti >= cfg.model_words)
		goto err;
	bits = mw[ti];
	key = order_key(bits);
	if (key > c->best_key) {
		c->best_key = key;
		c->best = k;
	}
	d = &s->resp[XDP_INFER_RESP_HDR + 8 * k];
	for (__u32 i = 0; i < 8; i++)
		d[i] = (__u8)(bits >> (8 * i));
	return 0;
err:
	c->err = 1;
	return 1;
}

/* Scores after the RESPONSE header; returns the arg-max, or -1. */
static __always_inline int write_scores(void)
{
	struct score_ctx c = {0};

	bpf_loop(cfg.classes, score_one, &c, 0);
	return c.err ? -1 : (int)c.best;
}

static __always_inline __u32 sat32(__u64 v)
{
	return v > 0xffffffffull ? 0xffffffffu : (__u32)v;
}

/*
 * The UDP payload s->resp[0, rlen) sent back to the frame's sender in place: the packet shrunk
 * or grown to fit, the headers written by protocol/frame_hdr.h as every framer of the project
 * writes them (addresses swapped, checksums filled in), then the payload stored after them (its
 * size the trust policy's to allow: decide() first). Counted under `stat`.
 */
static __always_inline int tx_reply(struct xdp_md *ctx, struct xdp_infer_scratch *s, __u32 rlen,
				    __u32 stat)
{
	void *data = (void *)(long)ctx->data, *data_end = (void *)(long)ctx->data_end;
	struct ethhdr *eth = data;
	struct iphdr *ip = data + sizeof(*eth);
	struct udphdr *udp = data + sizeof(*eth) + sizeof(*ip);
	struct proto_addr a;
	int delta;

	if (rlen > XDP_INFER_RESP_MAX)
		return count(XDP_INFER_ST_INTERNAL, XDP_PASS);
	if ((void *)(udp + 1) > data_end)
		return count(XDP_INFER_ST_INTERNAL, XDP_PASS);
	__builtin_memcpy(a.smac, eth->h_dest, ETH_ALEN);
	__builtin_memcpy(a.dmac, eth->h_source, ETH_ALEN);
	a.sip = bpf_ntohl(ip->daddr);
	a.dip = bpf_ntohl(ip->saddr);
	a.sport = bpf_ntohs(udp->dest);
	a.dport = bpf_ntohs(udp->source);
	delta = (int)(PROTO_FRAME_HDRS + rlen) - (int)(data_end - data);
	if (delta && bpf_xdp_adjust_tail(ctx, delta))
		return count(XDP_INFER_ST_TX_FAIL, XDP_PASS);

	data = (void *)(long)ctx->data;
	data_end = (void *)(long)ctx->data_end;
	if (data + PROTO_FRAME_HDRS > data_end)
		return count(XDP_INFER_ST_INTERNAL, XDP_DROP);
	proto_frame_udp_hdrs(data, &a, rlen, proto_csum_add(0, s->resp, rlen), false);
	if (bpf_xdp_store_bytes(ctx, PROTO_FRAME_HDRS, s->resp, rlen))
		return count(XDP_INFER_ST_INTERNAL, XDP_DROP);
	return count(stat, XDP_TX);
}

/*
 * ERROR bad_shape for request m of plen bytes from saddr (host order), as the trust policy
 * decides: one datagram of at most XDP_INFER_ERR_LEN bytes (its reason cut to fit), smaller
 * than any REQUEST (64 bytes and data).
 */
static __always_inline int bad_shape(struct xdp_md *ctx, struct proto_msg *m, __u32 saddr,
				     __u32 plen)
{
	const char reason[] = XDP_INFER_ERR_REASON; /* on the stack: no .rodata string */
	struct xdp_infer_scratch *s;
	__u32 zero = 0, cap, text;
	enum proto_trust_verdict v = decide(saddr, PROTO_ERROR, plen, PROTO_ERROR_HDR_LEN, &cap);

	if (v != PROTO_TRUST_SEND)
		return refused(v, XDP_INFER_ST_LARGER, XDP_PASS);
	s = bpf_map_lookup_elem(&xdp_scratch, &zero);
	if (!s)
		return count(XDP_INFER_ST_INTERNAL, XDP_PASS);
	text = proto_trust_cut(cap, PROTO_ERROR_HDR_LEN, sizeof(reason) - 1);
	m->type = PROTO_ERROR;
	m->hdr_len = PROTO_ERROR_HDR_LEN;
	m->frag_len = (__u16)text;
	m->frag_off = 0;
	m->total_len = text;
	m->flags = 0;
	m->err.code = PROTO_ERR_BAD_SHAPE;
	m->err.detail = cfg.in_n;
	if (proto_hdr_write(m, s->resp, s->resp + PROTO_ERROR_HDR_LEN) != PROTO_ERROR_HDR_LEN)
		return count(XDP_INFER_ST_INTERNAL, XDP_PASS);
	__builtin_memcpy(s->resp + PROTO_ERROR_HDR_LEN, reason, sizeof(reason) - 1);
	return tx_reply(ctx, s, PROTO_ERROR_HDR_LEN + text, XDP_INFER_ST_BAD_SHAPE);
}

/*
 * HEALTH (xdp_infer.h): a probe for any role or the XDP program's, at least as long as the
 * report and from a source the trust policy allows, is answered in place with one model (state
 * serving: the program cannot drain); anything else HEALTH passes to the stack (e.g. `splitnic
 * serve` behind the program).
 */
static __always_inline int health(struct xdp_md *ctx, const struct proto_msg *m, __u32 saddr,
				  __u32 plen)
{
	struct xdp_infer_scratch *s;
	struct proto_msg r = {};
	__u32 zero = 0, rlen, cap;
	enum proto_trust_verdict v;
	__u8 *e;

	if (m->health.kind != PROTO_HEALTH_PROBE ||
	    (m->health.role != 0 && m->health.role != PROTO_ROLE_XDP))
		return count(XDP_INFER_ST_HEALTH_PASS, XDP_PASS);
	v = decide(saddr, PROTO_HEALTH, plen, PROTO_HEALTH_HDR_LEN + PROTO_HEALTH_IDENT_LEN, &cap);
	if (v != PROTO_TRUST_SEND)
		return refused(v, XDP_INFER_ST_HEALTH_SHORT, XDP_DROP);
	s = bpf_map_lookup_elem(&xdp_scratch, &zero);
	if (!s)
		return count(XDP_INFER_ST_INTERNAL, XDP_PASS);
	r.type = PROTO_HEALTH;
	r.hdr_len = PROTO_HEALTH_HDR_LEN;
	r.request_id = m->request_id;
	r.health.kind = PROTO_HEALTH_REPORT;
	r.health.state = PROTO_HEALTH_SERVING;
	r.health.role = PROTO_ROLE_XDP;
	r.health.n_models = 1;
	rlen = PROTO_HEALTH_HDR_LEN + PROTO_HEALTH_IDENT_LEN + PROTO_HEALTH_ENTRY_LEN;
	if (cap < rlen) { /* the report is never longer than the probe */
		r.health.n_models = 0;
		r.health.flags = PROTO_HEALTH_F_TRUNCATED;
		rlen = PROTO_HEALTH_HDR_LEN + PROTO_HEALTH_IDENT_LEN;
	}
	r.total_len = rlen - PROTO_HEALTH_HDR_LEN;
	r.frag_len = (__u16)r.total_len;
	if (proto_hdr_write(&r, s->resp, s->resp + PROTO_HEALTH_HDR_LEN) != PROTO_HEALTH_HDR_LEN)
		return count(XDP_INFER_ST_INTERNAL, XDP_PASS);
	for (__u32 i = 0; i < PROTO_HEALTH_IDENT_LEN; i++) /* volatile reads: set at load */
		s->resp[PROTO_HEALTH_HDR_LEN + i] = (__u8)cfg.ident[i];
	e = s->resp + PROTO_HEALTH_HDR_LEN + PROTO_HEALTH_IDENT_LEN;
	proto_put32(e, cfg.model_id);
	proto_put16(e + 4, 0);
	e[6] = PROTO_MODE_WHOLE;
	e[7] = cfg.in_kind == XDP_INFER_IN_U8 ? PROTO_FMT_U8 : PROTO_FMT_F32;
	proto_put32(e + 8, cfg.in_c);
	proto_put32(e + 12, cfg.in_h);
	proto_put32(e + 16, cfg.in_w);
	proto_put16(e + 20, (__u16)cfg.classes);
	proto_put16(e + 22, 0);
	for (__u32 i = 0; i < PROTO_HEALTH_NAME_LEN; i++)
		e[24 + i] = (__u8)cfg.name[i];
	return tx_reply(ctx, s, rlen, XDP_INFER_ST_HEALTH);
}

SEC("xdp")
int xdp_infer(struct xdp_md *ctx)
{
	void *data = (void *)(long)ctx->data, *data_end = (void *)(long)ctx->data_end;
	struct ethhdr *eth = data;
	struct iphdr *ip = data + sizeof(*eth);
	struct udphdr *udp = data + sizeof(*eth) + sizeof(*ip);
	__u8 *payload = data + PROTO_FRAME_HDRS;
	__u32 zero = 0, rlen, ulen, fmt, cap;
	__u64 t0 = bpf_ktime_get_ns(), t1;
	struct xdp_infer_scratch *s;
	struct proto_msg m;
	enum proto_trust_verdict tv;
	enum proto_verdict v;
	__s64 sumx;
	int cls;

	if ((void *)(udp + 1) > data_end || eth->h_proto != bpf_htons(ETH_P_IP) ||
	    ip->protocol != IPPROTO_UDP || udp->dest != bpf_htons(cfg.port))
		return count(XDP_INFER_ST_OTHER, XDP_PASS);
	ulen = bpf_ntohs(udp->len);
	if (ip->version != 4 || ip->ihl != 5 || (ip->frag_off & bpf_htons(0x3fff)) != 0 ||
	    bpf_ntohs(ip->tot_len) != sizeof(*ip) + ulen || ulen < sizeof(*udp) ||
	    (void *)payload + (ulen - sizeof(*udp)) > data_end)
		return count(XDP_INFER_ST_IP_OPTS, XDP_PASS);

	v = proto_hdr_parse(payload, data_end, ulen - sizeof(*udp), &m);
	if (v != PROTO_OK)
		return count(XDP_INFER_ST_MALFORMED + (v < PROTO_VERDICT__COUNT ? v : 0), XDP_DROP);
	if (m.type == PROTO_HEALTH)
		return health(ctx, &m, bpf_ntohl(ip->saddr), ulen - sizeof(*udp));
	if (m.type != PROTO_REQUEST)
		return count(XDP_INFER_ST_NOT_REQUEST, XDP_PASS);
	if (m.model_id != 0 && m.model_id != cfg.model_id)
		return count(XDP_INFER_ST_OTHER_MODEL, XDP_PASS);
	if (m.frag_off != 0 || m.frag_len != m.total_len)
		return count(XDP_INFER_ST_FRAGMENT, XDP_PASS);
	/* the model's own input format; bits also for an f32 model whose prefix is a plain sign */
	fmt = cfg.in_kind == XDP_INFER_IN_U8 ? PROTO_FMT_U8 : PROTO_FMT_F32;
	if (proto_input_matches(&m.tensor, fmt, cfg.in_c, cfg.in_h, cfg.in_w)) {
		if (fmt == PROTO_FMT_F32 && !cfg.in_f32)
			return count(XDP_INFER_ST_UNSERVED, XDP_PASS);
	} else if (!(cfg.in_bits && proto_input_matches(&m.tensor, PROTO_FMT_BITS, cfg.in_c,
							cfg.in_h, cfg.in_w))) {
		return bad_shape(ctx, &m, bpf_ntohl(ip->saddr), ulen - sizeof(*udp));
	}
	rlen = XDP_INFER_RESP_HDR + 8 * cfg.classes;
	tv = decide(bpf_ntohl(ip->saddr), PROTO_RESPONSE, ulen - sizeof(*udp), rlen, &cap);
	if (tv != PROTO_TRUST_SEND)
		return refused(tv, XDP_INFER_ST_LARGER, XDP_PASS);

	s = bpf_map_lookup_elem(&xdp_scratch, &zero);
	if (!s)
		return count(XDP_INFER_ST_INTERNAL, XDP_PASS);
	sumx = 0;
	if (cfg.in_kind == XDP_INFER_IN_U8) {
		if (load_planes(ctx, s, PROTO_FRAME_HDRS + m.hdr_len, &sumx))
			return count(XDP_INFER_ST_INTERNAL, XDP_PASS);
	} else if (load_input_bits(ctx, s, PROTO_FRAME_HDRS + m.hdr_len,
				   m.tensor.fmt == PROTO_FMT_F32)) {
		return count(XDP_INFER_ST_INTERNAL, XDP_PASS);
	}
	if (run_layers(s, sumx))
		return count(XDP_INFER_ST_INTERNAL, XDP_PASS);
	cls = write_scores();
	if (cls < 0)
		return count(XDP_INFER_ST_INTERNAL, XDP_PASS);
	t1 = bpf_ktime_get_ns();

	m.type = PROTO_RESPONSE;
	m.hdr_len = XDP_INFER_RESP_HDR;
	m.frag_len = (__u16)(8 * cfg.classes);
	m.frag_off = 0;
	m.total_len = 8 * cfg.classes;
	m.flags = 0;
	m.resp.cls = (__u32)cls;
	m.resp.num_classes = (__u16)cfg.classes;
	m.resp.score_fmt = PROTO_FMT_F64;
	m.resp.executors = PROTO_EX_XDP;
	m.resp.host_ref = 0;
	for (__u32 i = 0; i < PROTO_T_COUNT; i++)
		m.resp.t_ns[i] = 0;
	m.resp.t_ns[PROTO_T_NIC] = sat32(t1 - t0);
	m.resp.t_ns[PROTO_T_TOTAL] = sat32(bpf_ktime_get_ns() - t0);
	if (proto_hdr_write(&m, s->resp, s->resp + XDP_INFER_RESP_HDR) != XDP_INFER_RESP_HDR)
		return count(XDP_INFER_ST_INTERNAL, XDP_PASS);
	return tx_reply(ctx, s, rlen, XDP_INFER_ST_ANSWERED);
}

char LICENSE[] SEC("license") = "Dual MIT/GPL";
