/* SPDX-License-Identifier: MIT */
/*
 * nicfw/xdp/xdp_infer.h — the XDP executor: a binary MLP answered entirely in the XDP hook.
 *
 * Shared by the BPF program (xdp_infer.bpf.c) and its loader (xdp_infer.c); the part below
 * `#ifndef __BPF__` is the loader's C API.
 *
 * What the program serves. A model whose compiled ops are
 *     [FLATTEN of U8]  BDENSE_U8  BDENSE*  [trailing element-wise ops on the class scores]
 * where every binary dense but the last carries thresholds (BITS out), and the trailing ops are
 * BIAS, BATCHNORM, RELU, SIGN, THRESHOLD, UNPACK or a flat FLATTEN. Requests are single-datagram
 * REQUESTs over IPv4/UDP to the configured port, fmt u8, the model's exact (C,H,W), checked by
 * proto_input_matches() as in splitnic-nic and splitnic-host.
 *
 * Maps:
 *   xdp_model    ARRAY, 1 entry, one value of model_words u64 (set at load):
 *                  [weight rows of every layer, [out][nw] packed as model/model.h]
 *                  [thresholds: one word per neuron of every thresholded layer,
 *                   bits 0..31 = thr (int32), bit 32 = flip]
 *                  [score table: classes x span float64 bit patterns, score of class c for
 *                   final value v at c * span + v + range]
 *                  [XDP_INFER_MAX_WORDS zero words, so one bounds check per neuron covers a
 *                   whole row]
 *   xdp_scratch  PERCPU_ARRAY, 1 entry of struct xdp_infer_scratch (bit-planes, activations,
 *                final values, the response being built).
 *   xdp_stats    PERCPU_ARRAY, XDP_INFER_ST__COUNT u64 counters (enum xdp_infer_stat).
 *   xdp_err_rl   ARRAY, PROTO_RL_SLOTS u64: the ERROR rate limit per source address
 *                (protocol/ratelimit.h; shared by every CPU, updated without atomics: CPUs
 *                racing on one bucket may each let one extra ERROR through).
 *   .rodata      struct xdp_infer_cfg (layer geometry, port, model id), frozen at load, so the
 *                verifier sees its values as constants.
 *
 * Exact scores without floating point: the last binary dense gives an integer v per class
 * (a dot in [-range, range], or a bit when it has thresholds); everything after it is an
 * element-wise float64 function of v, tabulated at load by running the CPU kernels on every v.
 * The program copies the table's bit patterns into the RESPONSE (score_fmt f64) and takes the
 * arg-max on an order-preserving integer key of each double (lowest index on ties; -0.0 equals
 * +0.0), so class and scores equal kern_forward's bit for bit.
 *
 * Verdicts (every packet is counted under exactly one reason):
 *   not IPv4/UDP to the port; IPv4 options, fragments, a version
 *   other than 4 or inconsistent IP/UDP lengths                    XDP_PASS  (to the stack)
 *   on the port but rejected by proto_hdr_parse (malformed)        XDP_DROP  (per verdict)
 *   well-formed but not ours: not a REQUEST, another model id, a
 *   fragment of a larger message                                   XDP_PASS  (a host server
 *                                                                   can answer or send ERROR)
 *   the model's own input format, which the program cannot take
 *   (f32 wider than one packet)                                    XDP_PASS
 *   another format or shape than the model's input                 XDP_TX    ERROR bad_shape,
 *                                                                   as every executor answers
 *   ... over the source's ERROR rate                               XDP_DROP
 *   answered                                                       XDP_TX
 *   the reply would be larger than the request (no amplification:
 *   the program has no allow-list; a host server with one may
 *   answer)                                                        XDP_PASS
 *   the response could not be written (tail adjust failed)         XDP_PASS
 *   an internal bounds check failed (cannot happen with a sane plan) XDP_PASS
 */
#ifndef NICFW_XDP_INFER_H
#define NICFW_XDP_INFER_H

#include <linux/types.h>

#include "protocol/proto_hdr.h"
#include "protocol/ratelimit.h"

/* Limits (the budget check at load names each one it refuses). */
#define XDP_INFER_MAX_LAYERS 8u	   /* binary dense ops */
#define XDP_INFER_MAX_WIDTH  4096u /* bits into, or out of, a BITS layer */
#define XDP_INFER_MAX_WORDS  (XDP_INFER_MAX_WIDTH / 64u)
#define XDP_INFER_MTU	     1500u
/* u8 input elements one datagram carries: MTU - IPv4 (20) - UDP (8) - REQUEST header (64) */
#define XDP_INFER_MAX_INPUT    (XDP_INFER_MTU - 20u - 8u - 64u)
#define XDP_INFER_MAX_IN_WORDS ((XDP_INFER_MAX_INPUT + 63u) / 64u)
/* f32 input features one datagram carries (4 bytes each), and bits input features (1 bit each) */
#define XDP_INFER_MAX_F32_INPUT	 (XDP_INFER_MAX_INPUT / 4u)
#define XDP_INFER_MAX_BITS_INPUT (XDP_INFER_MAX_INPUT * 8u)
#define XDP_INFER_MAX_BITS_WORDS (XDP_INFER_MAX_BITS_INPUT / 64u)
/* zero words after the model: one bounds check per neuron covers the widest row */
#define XDP_INFER_PAD_WORDS   XDP_INFER_MAX_BITS_WORDS
#define XDP_INFER_MAX_CLASSES 128u
#define XDP_INFER_RESP_HDR    80u
#define XDP_INFER_RESP_MAX    (XDP_INFER_RESP_HDR + 8u * XDP_INFER_MAX_CLASSES)
#define XDP_INFER_MAX_TABLE   (1u << 20)  /* score table entries (classes x span) */
#define XDP_INFER_MAX_MODEL   (16u << 20) /* bytes of the xdp_model value */
#define XDP_INFER_NO_THRESH   0xffffffffu
#define XDP_INFER_ERR_REASON  "xdp: bad_shape"
#define XDP_INFER_ERR_LEN     (PROTO_ERROR_HDR_LEN + sizeof(XDP_INFER_ERR_REASON) - 1u)

enum xdp_infer_layer_kind {
	XDP_INFER_L_U8 = 1,   /* BDENSE_U8: bit-planes of the request's bytes */
	XDP_INFER_L_BITS = 2, /* BDENSE: the previous layer's bits */
	XDP_INFER_L_IN = 3,   /* BDENSE on the input bits (in planes[]): a bits request, or an
				 f32 request binarized by the per-feature thresholds */
};

/* The model's input as the program sees it. */
enum xdp_infer_input {
	XDP_INFER_IN_U8 = 0,  /* u8 requests, bit-planes into BDENSE_U8 */
	XDP_INFER_IN_F32 = 1, /* f32 model: CAST [FLATTEN] [BIAS|BATCHNORM]* SIGN|THRESHOLD
				 [FLATTEN] BDENSE ... */
};

/*
 * Per-feature word of an f32 model (at f_off + i for input feature i, C-major):
 *   bits 0..31  t: the threshold on the order-preserving key of the float32 x_i,
 *               key = bits ^ (sign ? 0xffffffff : 0x80000000); finite x: bit = (key >= t) ^ flip
 *   bit 32      flip
 *   bits 33..36 the bit for NaN with sign 0, NaN with sign 1, +inf, -inf
 */
#define XDP_INFER_FW_FLIP  32u
#define XDP_INFER_FW_NAN_P 33u
#define XDP_INFER_FW_NAN_N 34u
#define XDP_INFER_FW_INF_P 35u
#define XDP_INFER_FW_INF_N 36u

struct xdp_infer_layer {
	__u32 kind;  /* enum xdp_infer_layer_kind */
	__u32 n;     /* inputs */
	__u32 nw;    /* words per weight row (per bit-plane for U8) */
	__u32 out;   /* neurons */
	__u32 w_off; /* word offset of row 0 in xdp_model */
	__u32 t_off; /* word offset of the thresholds, or XDP_INFER_NO_THRESH */
};

struct xdp_infer_cfg {
	__u32 port;	/* UDP destination port served */
	__u32 model_id; /* served id; requests with model_id 0 (the default) are served too */
	__u32 in_c, in_h, in_w, in_n, in_words;
	__u32 n_layers;
	__u32 classes;
	__u32 range;	       /* final value v in [-range, range] */
	__u32 span;	       /* table entries per class */
	__u32 tab_off;	       /* word offset of the score table */
	__u32 row_limit;       /* largest valid row start: model_words - XDP_INFER_MAX_WORDS */
	__u32 model_words;     /* words of the xdp_model value */
	__u32 in_kind;	       /* enum xdp_infer_input */
	__u32 in_f32;	       /* IN_F32: f32 requests served (in_n <= XDP_INFER_MAX_F32_INPUT) */
	__u32 in_bits;	       /* IN_F32: bits requests served (the prefix is a plain sign) */
	__u32 in_tail;	       /* mask of the valid bits of the last input word (bits requests) */
	__u32 f_off;	       /* word offset of the per-feature words (in_f32) */
	__u32 err_interval_ns; /* ERRORs per source: one per interval (1e9 / rate) ... */
	__u32 err_burst;       /* ... and this many at once */
	struct xdp_infer_layer l[XDP_INFER_MAX_LAYERS];
	/* HEALTH report: the identity and the served model's name, NUL-padded */
	char ident[PROTO_HEALTH_IDENT_LEN];
	char name[PROTO_HEALTH_NAME_LEN];
};

struct xdp_infer_scratch {
	/* u8: bit-planes [word][bit-plane]; f32/bits: the raw request, then the input bits */
	__u64 planes[XDP_INFER_MAX_IN_WORDS * 8];
	__u64 act[2][XDP_INFER_MAX_WORDS];
	__s64 final[XDP_INFER_MAX_CLASSES]; /* last layer: dot, or bit */
	__u8 in[64];			    /* one word's worth of input bytes */
	__u8 resp[XDP_INFER_RESP_MAX];	    /* UDP payload of the RESPONSE */
};

/* Per-reason counters; XDP_INFER_ST_MALFORMED + v for proto_hdr_parse verdict v. */
enum xdp_infer_stat {
	XDP_INFER_ST_ANSWERED = 0, /* XDP_TX: RESPONSE sent */
	XDP_INFER_ST_OTHER,	   /* PASS: not IPv4/UDP to the port */
	XDP_INFER_ST_IP_OPTS,	   /* PASS: IPv4 options or fragment, version, bad lengths */
	XDP_INFER_ST_NOT_REQUEST,  /* PASS: ACTIVATION, RESPONSE or ERROR */
	XDP_INFER_ST_OTHER_MODEL,  /* PASS: model_id neither ours nor 0 */
	XDP_INFER_ST_FRAGMENT,	   /* PASS: one fragment of a larger message */
	XDP_INFER_ST_BAD_SHAPE,	   /* TX: ERROR bad_shape (format or shape not the model's) */
	XDP_INFER_ST_TX_FAIL,	   /* PASS: could not resize the packet for the response */
	XDP_INFER_ST_INTERNAL,	   /* PASS: a bounds check failed (a loader bug; never seen) */
	XDP_INFER_ST_UNSERVED,	   /* PASS: the model's format, too wide for the program */
	XDP_INFER_ST_ERR_LIMITED,  /* DROP: an ERROR over its source's rate */
	XDP_INFER_ST_LARGER,	   /* PASS: the reply would be larger than the request */
	XDP_INFER_ST_HEALTH,	   /* XDP_TX: a HEALTH probe answered with the report, in place */
	XDP_INFER_ST_HEALTH_PASS,  /* PASS: a HEALTH probe for another role, or a report */
	XDP_INFER_ST_HEALTH_SHORT, /* DROP: a probe shorter than the report (80 bytes) */
	XDP_INFER_ST_MALFORMED,	   /* DROP: + enum proto_verdict (1 .. PROTO_VERDICT__COUNT-1) */
	XDP_INFER_ST__COUNT = XDP_INFER_ST_MALFORMED + PROTO_VERDICT__COUNT,
};

#ifndef __BPF__

#include <stdbool.h>
#include <stddef.h>

struct model;

enum xdp_infer_mode {
	XDP_INFER_NATIVE = 0,
	XDP_INFER_GENERIC = 1,
};

/* What the budget check found; filled by xdp_infer_plan(). */
struct xdp_infer_plan {
	struct xdp_infer_cfg cfg;
	uint32_t first_bin; /* model op of the first binary dense */
	uint32_t last_bin;  /* model op of the last binary dense */
	uint32_t sign_op;   /* f32 input: model op of the SIGN/THRESHOLD binarizing the input */
	uint64_t model_bytes;
	uint64_t table_entries;
	uint64_t ops_estimate; /* BPF instructions executed per inference, estimated */
};

struct xdp_infer;

/*
 * Budget check: can the XDP program serve this model? Returns 0 and fills p, or -E2BIG /
 * -EOPNOTSUPP with a message in err naming the op, the limit and its value.
 */
int xdp_infer_plan(const struct model *m, struct xdp_infer_plan *p, char *err, size_t errlen);

/*
 * Open the skeleton, configure .rodata from the plan, load (the verifier runs here), upload the
 * weights, thresholds and score table. port 0 means PROTO_DEFAULT_PORT; model_id 0 means
 * proto_model_id(m->name). Returns NULL with a message in err (budget, verifier log tail).
 */
struct xdp_infer *xdp_infer_load(const struct model *m, uint32_t port, uint32_t model_id, char *err,
				 size_t errlen);
/* The same with the ERROR rate limit per source: err_rate per second, err_burst at once (0:
 * PROTO_RL_RATE, PROTO_RL_BURST). */
struct xdp_infer *xdp_infer_load_limited(const struct model *m, uint32_t port, uint32_t model_id,
					 uint32_t err_rate, uint32_t err_burst, char *err,
					 size_t errlen);
void xdp_infer_free(struct xdp_infer *x);
const struct xdp_infer_plan *xdp_infer_get_plan(const struct xdp_infer *x);
int xdp_infer_prog_fd(const struct xdp_infer *x);
/* The loaded program's size: instructions the verifier processed, BPF instructions, JIT bytes. */
int xdp_infer_prog_size(const struct xdp_infer *x, uint32_t *verified, uint32_t *insns,
			uint32_t *jited_bytes);

/* Attach to an interface (replacing any program there); the attachment outlives the process. */
int xdp_infer_attach(struct xdp_infer *x, int ifindex, enum xdp_infer_mode mode);
/* Detach whatever XDP program is on the interface (native or generic). */
int xdp_infer_detach(int ifindex);
/* Attach the dummy XDP_PASS program (so native XDP_TX on a veth reaches this peer). */
int xdp_infer_attach_pass(int ifindex, enum xdp_infer_mode mode);

/* Sum the per-CPU counters of a loaded program. */
int xdp_infer_read_stats(const struct xdp_infer *x, uint64_t st[XDP_INFER_ST__COUNT]);
/* Same, for the program attached to an interface (found by its xdp_stats map). */
int xdp_infer_read_iface_stats(int ifindex, uint64_t st[XDP_INFER_ST__COUNT], char *err,
			       size_t errlen);
const char *xdp_infer_stat_name(unsigned st);

/*
 * BPF_PROG_TEST_RUN: run the program `repeat` times on one frame; the (possibly rewritten)
 * frame lands in out (*out_len: in capacity, out length). Returns 0 or -errno; *verdict is the
 * XDP action, *ns_per_run the kernel's mean duration.
 */
int xdp_infer_test_run(const struct xdp_infer *x, const void *frame, uint32_t len, void *out,
		       uint32_t *out_len, uint32_t repeat, uint32_t *verdict, uint32_t *ns_per_run);

/*
 * A test frame: Ethernet + IPv4 + UDP (protocol/frame.h's, checksums filled in) from
 * 10.0.0.1:40000 to 10.0.0.2:`port` carrying a REQUEST for model_id with the u8 tensor (c,h,w).
 * Returns its length or -ENOSPC.
 */
int xdp_infer_build_request(void *buf, size_t cap, uint32_t port, uint32_t model_id,
			    uint64_t request_id, uint32_t c, uint32_t h, uint32_t w,
			    const uint8_t *x);
/*
 * The same with a tensor of format fmt (enum proto_fmt); data holds the body in wire order
 * (PROTO_FMT_F32: little-endian float32 bits; PROTO_FMT_BITS: little-endian 64-bit words).
 */
int xdp_infer_build_request_fmt(void *buf, size_t cap, uint32_t port, uint32_t model_id,
				uint64_t request_id, uint32_t fmt, uint32_t c, uint32_t h,
				uint32_t w, const void *data);
/* The same with the REQUEST header padded to hdr_len bytes (64..256, a multiple of 4). */
int xdp_infer_build_request_hdr(void *buf, size_t cap, uint32_t port, uint32_t model_id,
				uint64_t request_id, uint32_t fmt, uint32_t c, uint32_t h,
				uint32_t w, const void *data, uint32_t hdr_len);
/*
 * The REQUEST header length (64..256) that makes a request of format fmt to x at least as long
 * as its RESPONSE, which the program sends only then (no amplification); 256 when even that is
 * not enough (such requests are passed to the stack).
 */
uint32_t xdp_infer_request_hdr_len(const struct xdp_infer *x, uint32_t fmt);

/*
 * Check a frame the program answered with XDP_TX: Ethernet/IPv4/UDP headers (swapped addresses,
 * lengths, IPv4 and UDP checksums) and a parsable RESPONSE; returns the number of classes and
 * fills the class and scores (up to max_classes), or -EBADMSG with the reason in err.
 */
int xdp_infer_parse_response(const void *frame, uint32_t len, uint64_t request_id, uint32_t *cls,
			     double *scores, uint32_t max_classes, char *err, size_t errlen);
/* The same checks for a frame answered with an ERROR: 0 and its code, or -EBADMSG. */
int xdp_infer_parse_error(const void *frame, uint32_t len, uint64_t request_id, uint32_t *code,
			  char *err, size_t errlen);

#endif /* !__BPF__ */

#endif /* NICFW_XDP_INFER_H */
