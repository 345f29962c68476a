/* SPDX-License-Identifier: MIT */
/*
 * protocol/proto_hdr.h — header-only, bounded parser and writer of the splitnic fixed headers.
 *
 * The wire layout is documented byte by byte in protocol/proto.h. This file is usable from BPF C
 * (clang -target bpf): fixed-size types only, no libc calls, no loops, every read preceded by an
 * explicit check against data_end. Multi-byte header fields are assembled byte by byte, so the
 * code is independent of host byte order and alignment.
 *
 * Contract of proto_hdr_parse(data, data_end, dgram_len, m):
 *   data       first byte of the UDP payload;
 *   data_end   end of readable memory (the packet end in XDP: may include link padding);
 *   dgram_len  the UDP payload length (from the UDP header, or recv()'s return value); bytes
 *              beyond it are never read, and it must not exceed data_end - data;
 *   m          filled in host order; m->data points at this datagram's data section.
 * Returns PROTO_OK, or the first reason the datagram is rejected (enum proto_verdict). Every
 * length field is checked against dgram_len and the protocol limits; on rejection the contents
 * of *m are unspecified.
 */
#ifndef PROTO_HDR_H
#define PROTO_HDR_H

#include <stdint.h>

#define PROTO_INLINE static inline __attribute__((always_inline))

#define PROTO_MAGIC	      0x534eu /* "SN" */
#define PROTO_VERSION	      1u
#define PROTO_DEFAULT_PORT    21326u /* 0x534e */
#define PROTO_COMMON_LEN      32u
#define PROTO_MAX_HDR_LEN     256u
#define PROTO_MAX_TOTAL	      (64u << 20) /* largest data section of one message */
#define PROTO_MAX_ELEMS	      (64u << 20) /* largest tensor element count */
#define PROTO_FRAG_ALIGN      8u	  /* fragment offsets, and lengths but the last's */
#define PROTO_REASON_MAX      64u	  /* ERROR reason bytes */
#define PROTO_T_COUNT	      8u	  /* RESPONSE timing fields */
#define PROTO_REQUEST_HDR_LEN (PROTO_COMMON_LEN + 32u)
#define PROTO_ACT_HDR_LEN     (PROTO_COMMON_LEN + 80u)
#define PROTO_RESP_HDR_LEN    (PROTO_COMMON_LEN + 48u)
#define PROTO_ERROR_HDR_LEN   (PROTO_COMMON_LEN + 8u)
#define PROTO_HEALTH_HDR_LEN  (PROTO_COMMON_LEN + 16u)
/* Completion notices (NIC to host) carry the request's cookie: longer RESPONSE and ERROR. */
#define PROTO_RESP_NOTICE_HDR_LEN  (PROTO_COMMON_LEN + 56u)
#define PROTO_ERROR_NOTICE_HDR_LEN (PROTO_COMMON_LEN + 24u)
/* HEALTH: data of a report (identity + model entries), never fragmented. */
#define PROTO_HEALTH_IDENT_LEN 32u
#define PROTO_HEALTH_ENTRY_LEN 48u
#define PROTO_HEALTH_NAME_LEN  24u
#define PROTO_HEALTH_MAX_DATA  1352u /* 1400-byte datagram less the 48-byte header */
#define PROTO_HEALTH_MAX_MODELS                                                                    \
	((PROTO_HEALTH_MAX_DATA - PROTO_HEALTH_IDENT_LEN) / PROTO_HEALTH_ENTRY_LEN)

enum proto_type {
	PROTO_REQUEST = 1,
	PROTO_ACTIVATION = 2,
	PROTO_RESPONSE = 3,
	PROTO_ERROR = 4,
	PROTO_HEALTH = 5,
};

/* HEALTH kind, state, role and flags (protocol/proto.h). */
enum proto_health_kind { PROTO_HEALTH_PROBE = 0, PROTO_HEALTH_REPORT = 1 };
enum proto_health_state {
	PROTO_HEALTH_SERVING = 0,
	PROTO_HEALTH_DRAINING = 1, /* finishing what it holds; takes no new requests */
	PROTO_HEALTH_DEGRADED = 2, /* serving, but a part it needs is away (the NIC's host) */
};
enum proto_health_role {
	PROTO_ROLE_NIC = 1,   /* splitnic-nic */
	PROTO_ROLE_HOST = 2,  /* splitnic-host */
	PROTO_ROLE_SERVE = 3, /* splitnic serve (kernel sockets) */
	PROTO_ROLE_XDP = 4,   /* the XDP program */
};
#define PROTO_HEALTH_F_TRUNCATED 0x01u /* the model list was cut to fit the probe's size */
/* HEALTH model entry modes: how this server takes part in the model. */
enum proto_health_mode {
	PROTO_MODE_WHOLE = 1,	  /* answers REQUESTs alone (stand-alone NIC, serve, XDP) */
	PROTO_MODE_COPROC = 2,	  /* host part; the NIC runs the rest */
	PROTO_MODE_NIC_PART = 3,  /* the NIC part: ACTIVATIONs from its host */
	PROTO_MODE_HOST_ONLY = 4, /* the host runs the whole model */
	PROTO_MODE_FALLBACK = 5,  /* host part, and the rest too while the NIC is away */
};

enum proto_fmt {
	PROTO_FMT_U8 = 1,
	PROTO_FMT_F32 = 2,
	PROTO_FMT_FP16 = 3,
	PROTO_FMT_INT8 = 4,
	PROTO_FMT_BITS = 5,
	PROTO_FMT_F64 = 6,
};

/* RESPONSE executors bitmask (ACTIVATION carries the bits set so far). */
#define PROTO_EX_CPU	       0x01u
#define PROTO_EX_GPU	       0x02u
#define PROTO_EX_NIC	       0x04u
#define PROTO_EX_XDP	       0x08u
#define PROTO_EX_HOST_FALLBACK 0x10u

/* RESPONSE timing fields, nanoseconds, saturating at UINT32_MAX. */
enum proto_timing {
	PROTO_T_TOTAL = 0, /* server: first byte of the request in to the response out */
	PROTO_T_RX = 1,	   /* receive, parse and reassembly */
	PROTO_T_QUEUE = 2, /* waiting for an executor */
	PROTO_T_HOST = 3,  /* host compute (CPU/GPU stages) */
	PROTO_T_PACK = 4,  /* sign + bit-pack + serialize at the split */
	PROTO_T_XFER = 5,  /* host to NIC transfer of the ACTIVATION */
	PROTO_T_NIC = 6,   /* NIC compute (executor chain) */
	PROTO_T_TX = 7,	   /* response build and transmit */
};

enum proto_error_code {
	PROTO_ERR_BAD_REQUEST = 1,   /* the parser rejected it; detail = enum proto_verdict */
	PROTO_ERR_UNKNOWN_MODEL = 2, /* detail = the model id */
	PROTO_ERR_BAD_SHAPE = 3,     /* tensor format/shape differs from the model's input */
	PROTO_ERR_BUSY = 4,	     /* no room: queue or reassembly table full */
	PROTO_ERR_TIMEOUT = 5,	     /* reassembly or compute did not finish in time */
	PROTO_ERR_TOO_LARGE = 6,     /* detail = the limit in bytes */
	PROTO_ERR_INTERNAL = 7,
	PROTO_ERR_UNSUPPORTED = 8, /* a version, format or feature this server lacks */
	PROTO_ERR_UNAVAILABLE = 9, /* the part that runs the model is away (the NIC's host) */
	PROTO_ERR__COUNT
};

/* Why a datagram was rejected; PROTO_OK when it was not. Order is the order of the checks. */
enum proto_verdict {
	PROTO_OK = 0,
	PROTO_BAD_SHORT,     /* shorter than the 32-byte common header */
	PROTO_BAD_MAGIC,     /* field 1 is not "SN" */
	PROTO_BAD_VERSION,   /* field 2 is not a version this code speaks */
	PROTO_BAD_TYPE,	     /* field 3 is not a message type */
	PROTO_BAD_HDR_LEN,   /* hdr_len not a multiple of 4, below the type's size or above 256 */
	PROTO_BAD_SHORT_EXT, /* the datagram ends inside the header (hdr_len) */
	PROTO_BAD_TRUNCATED, /* the datagram ends inside the data (frag_len) */
	PROTO_BAD_TRAILING,  /* bytes after hdr_len + frag_len */
	PROTO_BAD_TOTAL_LEN, /* total_len above the limit or not what the type header implies */
	PROTO_BAD_FRAG,	     /* fragment outside total_len, empty, or misaligned */
	PROTO_BAD_FORMAT,    /* unknown tensor or score format */
	PROTO_BAD_SHAPE,     /* a zero dimension, count != C*H*W, or count above the limit */
	PROTO_BAD_FIELD,     /* another field out of range (class, scale, error code, ...) */
	PROTO_VERDICT__COUNT
};

/* Tensor descriptor (REQUEST, ACTIVATION). scale is IEEE-754 binary32 bits (no floats in BPF). */
struct proto_tensor {
	uint8_t fmt;	/* enum proto_fmt */
	uint16_t layer; /* ACTIVATION: first layer the receiver runs; REQUEST: 0 */
	uint32_t c, h, w;
	uint32_t count; /* C*H*W */
	uint32_t scale_bits;
	int32_t zero_point;
};

struct proto_act {
	uint8_t reply_addr[16]; /* the front-end, IPv6 or IPv4-mapped (::ffff:a.b.c.d) */
	uint16_t reply_port;
	uint8_t executors; /* PROTO_EX_* that ran the layers before `layer` */
	uint32_t t_rx_ns, t_queue_ns, t_host_ns, t_pack_ns;
	uint32_t host_ref; /* the host's, echoed in the RESPONSE (0: none) */
	uint64_t cookie;   /* the host's secret for this request, echoed in the notice */
};

struct proto_resp {
	uint32_t cls;
	uint16_t num_classes;
	uint8_t score_fmt; /* PROTO_FMT_F64 or PROTO_FMT_F32 */
	uint8_t executors;
	uint32_t t_ns[PROTO_T_COUNT];
	uint32_t host_ref; /* the ACTIVATION's host_ref it answers (0: none) */
	uint64_t cookie;   /* notices (hdr_len >= PROTO_RESP_NOTICE_HDR_LEN): the ACTIVATION's */
};

struct proto_err {
	uint16_t code; /* enum proto_error_code */
	uint32_t detail;
	/* notices (hdr_len >= PROTO_ERROR_NOTICE_HDR_LEN): the ACTIVATION's; else 0 */
	uint32_t host_ref;
	uint64_t cookie;
};

struct proto_health {
	uint8_t kind;  /* enum proto_health_kind */
	uint8_t state; /* enum proto_health_state (reports) */
	uint8_t role;  /* enum proto_health_role (reports) */
	uint8_t flags; /* PROTO_HEALTH_F_* (reports) */
	uint16_t n_models;
	uint32_t in_flight; /* requests the server holds now (reports) */
};

/* One datagram's headers in host order. Only the part for m->type is meaningful. */
struct proto_msg {
	uint8_t version;
	uint8_t type;
	uint16_t hdr_len;
	uint16_t frag_len;
	uint16_t flags;
	uint32_t model_id;
	uint64_t request_id;
	uint32_t total_len;
	uint32_t frag_off;
	struct proto_tensor tensor; /* REQUEST, ACTIVATION */
	struct proto_act act;	    /* ACTIVATION */
	struct proto_resp resp;	    /* RESPONSE */
	struct proto_err err;	    /* ERROR */
	struct proto_health health; /* HEALTH */
	const uint8_t *data;	    /* this datagram's data section (frag_len bytes) */
};

PROTO_INLINE uint16_t proto_get16(const uint8_t *p)
{
	return (uint16_t)((uint16_t)p[0] << 8 | p[1]);
}

PROTO_INLINE uint32_t proto_get32(const uint8_t *p)
{
	return (uint32_t)p[0] << 24 | (uint32_t)p[1] << 16 | (uint32_t)p[2] << 8 | p[3];
}

PROTO_INLINE uint64_t proto_get64(const uint8_t *p)
{
	return (uint64_t)proto_get32(p) << 32 | proto_get32(p + 4);
}

PROTO_INLINE void proto_put16(uint8_t *p, uint16_t v)
{
	p[0] = (uint8_t)(v >> 8);
	p[1] = (uint8_t)v;
}

PROTO_INLINE void proto_put32(uint8_t *p, uint32_t v)
{
	p[0] = (uint8_t)(v >> 24);
	p[1] = (uint8_t)(v >> 16);
	p[2] = (uint8_t)(v >> 8);
	p[3] = (uint8_t)v;
}

PROTO_INLINE void proto_put64(uint8_t *p, uint64_t v)
{
	proto_put32(p, (uint32_t)(v >> 32));
	proto_put32(p + 4, (uint32_t)v);
}

/* Minimum hdr_len of a type in this version, 0 for an unknown type. */
PROTO_INLINE uint32_t proto_type_hdr_len(uint32_t type)
{
	switch (type) {
	case PROTO_REQUEST:
		return PROTO_REQUEST_HDR_LEN;
	case PROTO_ACTIVATION:
		return PROTO_ACT_HDR_LEN;
	case PROTO_RESPONSE:
		return PROTO_RESP_HDR_LEN;
	case PROTO_ERROR:
		return PROTO_ERROR_HDR_LEN;
	case PROTO_HEALTH:
		return PROTO_HEALTH_HDR_LEN;
	}
	return 0;
}

/* Bytes of `count` elements of a tensor format (0 for an unknown format). */
PROTO_INLINE uint64_t proto_fmt_bytes(uint32_t fmt, uint64_t count)
{
	switch (fmt) {
	case PROTO_FMT_U8:
	case PROTO_FMT_INT8:
		return count;
	case PROTO_FMT_FP16:
		return count * 2;
	case PROTO_FMT_F32:
		return count * 4;
	case PROTO_FMT_F64:
		return count * 8;
	case PROTO_FMT_BITS:
		return (count + 63) / 64 * 8;
	}
	return 0;
}

PROTO_INLINE void proto_read_tensor(const uint8_t *t, struct proto_tensor *d)
{
	d->fmt = t[0];
	d->layer = proto_get16(t + 2);
	d->c = proto_get32(t + 4);
	d->h = proto_get32(t + 8);
	d->w = proto_get32(t + 12);
	d->count = proto_get32(t + 16);
	d->scale_bits = proto_get32(t + 20);
	d->zero_point = (int32_t)proto_get32(t + 24);
}

PROTO_INLINE enum proto_verdict proto_check_tensor(const struct proto_tensor *d, uint32_t total_len)
{
	uint64_t ch;

	if (proto_fmt_bytes(d->fmt, 1) == 0)
		return PROTO_BAD_FORMAT;
	if (d->c == 0 || d->h == 0 || d->w == 0 || d->count == 0 || d->count > PROTO_MAX_ELEMS)
		return PROTO_BAD_SHAPE;
	ch = (uint64_t)d->c * d->h;
	if (ch > PROTO_MAX_ELEMS || ch * d->w != d->count)
		return PROTO_BAD_SHAPE;
	if (proto_fmt_bytes(d->fmt, d->count) != total_len)
		return PROTO_BAD_TOTAL_LEN;
	/* INT8 needs a positive, finite, non-zero scale. */
	if (d->fmt == PROTO_FMT_INT8 &&
	    ((d->scale_bits >> 31) != 0 || (d->scale_bits & 0x7fffffffu) == 0 ||
	     (d->scale_bits & 0x7f800000u) == 0x7f800000u))
		return PROTO_BAD_FIELD;
	return PROTO_OK;
}

/*
 * The input check every executor applies to a parsed REQUEST (splitnic-nic, splitnic-host, the
 * XDP program): its tensor is the model's input when the format and the shape (C,H,W) are
 * exactly the model's; anything else is answered ERROR bad_shape. (The parser has already
 * checked count == C*H*W and total_len == the format's size of count elements.)
 */
PROTO_INLINE int proto_input_matches(const struct proto_tensor *t, uint32_t fmt, uint32_t c,
				     uint32_t h, uint32_t w)
{
	return t->fmt == fmt && t->c == c && t->h == h && t->w == w;
}

PROTO_INLINE enum proto_verdict proto_hdr_parse(const void *data, const void *data_end,
						uint32_t dgram_len, struct proto_msg *m)
{
	const uint8_t *p = (const uint8_t *)data;
	const uint8_t *end = (const uint8_t *)data_end;
	const uint8_t *t;
	uint32_t min_len, last;
	enum proto_verdict v;

	if (dgram_len < PROTO_COMMON_LEN || p + PROTO_COMMON_LEN > end)
		return PROTO_BAD_SHORT;
	if (proto_get16(p) != PROTO_MAGIC)
		return PROTO_BAD_MAGIC;
	m->version = p[2];
	if (m->version != PROTO_VERSION)
		return PROTO_BAD_VERSION;
	m->type = p[3];
	min_len = proto_type_hdr_len(m->type);
	if (min_len == 0)
		return PROTO_BAD_TYPE;
	m->hdr_len = proto_get16(p + 4);
	if ((m->hdr_len & 3) != 0 || m->hdr_len < min_len || m->hdr_len > PROTO_MAX_HDR_LEN)
		return PROTO_BAD_HDR_LEN;
	if (dgram_len < m->hdr_len || p + m->hdr_len > end)
		return PROTO_BAD_SHORT_EXT;
	m->frag_len = proto_get16(p + 6);
	if (dgram_len - m->hdr_len < m->frag_len)
		return PROTO_BAD_TRUNCATED;
	if (dgram_len - m->hdr_len > m->frag_len)
		return PROTO_BAD_TRAILING;
	m->model_id = proto_get32(p + 8);
	m->flags = proto_get16(p + 12);
	m->request_id = proto_get64(p + 16);
	m->total_len = proto_get32(p + 24);
	m->frag_off = proto_get32(p + 28);
	m->data = p + m->hdr_len;
	if (m->total_len > PROTO_MAX_TOTAL)
		return PROTO_BAD_TOTAL_LEN;
	if (m->frag_off > m->total_len || m->frag_len > m->total_len - m->frag_off)
		return PROTO_BAD_FRAG;
	last = m->frag_off + m->frag_len;
	if (m->frag_len == 0 && m->total_len != 0)
		return PROTO_BAD_FRAG;
	if ((m->frag_off % PROTO_FRAG_ALIGN) != 0 ||
	    (last != m->total_len && (m->frag_len % PROTO_FRAG_ALIGN) != 0))
		return PROTO_BAD_FRAG;

	t = p + PROTO_COMMON_LEN;
	switch (m->type) {
	case PROTO_ACTIVATION:
		if (t + 80 > end)
			return PROTO_BAD_SHORT_EXT;
		__builtin_memcpy(m->act.reply_addr, t + 32, 16);
		m->act.reply_port = proto_get16(t + 48);
		m->act.executors = t[50];
		m->act.t_rx_ns = proto_get32(t + 52);
		m->act.t_queue_ns = proto_get32(t + 56);
		m->act.t_host_ns = proto_get32(t + 60);
		m->act.t_pack_ns = proto_get32(t + 64);
		m->act.host_ref = proto_get32(t + 68);
		m->act.cookie = proto_get64(t + 72);
		/* fall through */
	case PROTO_REQUEST:
		if (t + 32 > end)
			return PROTO_BAD_SHORT_EXT;
		proto_read_tensor(t, &m->tensor);
		v = proto_check_tensor(&m->tensor, m->total_len);
		if (v != PROTO_OK)
			return v;
		break;
	case PROTO_RESPONSE:
		if (t + 48 > end)
			return PROTO_BAD_SHORT_EXT;
		m->resp.cls = proto_get32(t);
		m->resp.num_classes = proto_get16(t + 4);
		m->resp.score_fmt = t[6];
		m->resp.executors = t[7];
		m->resp.t_ns[0] = proto_get32(t + 8);
		m->resp.t_ns[1] = proto_get32(t + 12);
		m->resp.t_ns[2] = proto_get32(t + 16);
		m->resp.t_ns[3] = proto_get32(t + 20);
		m->resp.t_ns[4] = proto_get32(t + 24);
		m->resp.t_ns[5] = proto_get32(t + 28);
		m->resp.t_ns[6] = proto_get32(t + 32);
		m->resp.t_ns[7] = proto_get32(t + 36);
		m->resp.host_ref = proto_get32(t + 40);
		m->resp.cookie = 0;
		if (m->hdr_len >= PROTO_RESP_NOTICE_HDR_LEN) {
			if (t + 56 > end)
				return PROTO_BAD_SHORT_EXT;
			m->resp.cookie = proto_get64(t + 48);
		}
		if (m->resp.score_fmt != PROTO_FMT_F64 && m->resp.score_fmt != PROTO_FMT_F32)
			return PROTO_BAD_FORMAT;
		if (m->total_len !=
		    (uint32_t)proto_fmt_bytes(m->resp.score_fmt, m->resp.num_classes))
			return PROTO_BAD_TOTAL_LEN;
		if (m->resp.num_classes == 0 || m->resp.cls >= m->resp.num_classes)
			return PROTO_BAD_FIELD;
		break;
	case PROTO_ERROR:
		if (t + 8 > end)
			return PROTO_BAD_SHORT_EXT;
		m->err.code = proto_get16(t);
		m->err.detail = proto_get32(t + 4);
		m->err.host_ref = 0;
		m->err.cookie = 0;
		if (m->hdr_len >= PROTO_ERROR_NOTICE_HDR_LEN) {
			if (t + 24 > end)
				return PROTO_BAD_SHORT_EXT;
			m->err.host_ref = proto_get32(t + 8);
			m->err.cookie = proto_get64(t + 16);
		}
		if (m->total_len > PROTO_REASON_MAX)
			return PROTO_BAD_TOTAL_LEN;
		if (m->frag_len != m->total_len)
			return PROTO_BAD_FRAG;
		if (m->err.code == 0 || m->err.code >= PROTO_ERR__COUNT)
			return PROTO_BAD_FIELD;
		break;
	case PROTO_HEALTH:
		if (t + 16 > end)
			return PROTO_BAD_SHORT_EXT;
		m->health.kind = t[0];
		m->health.state = t[1];
		m->health.role = t[2];
		m->health.flags = t[3];
		m->health.n_models = proto_get16(t + 4);
		m->health.in_flight = proto_get32(t + 8);
		if (m->total_len > PROTO_HEALTH_MAX_DATA)
			return PROTO_BAD_TOTAL_LEN;
		if (m->frag_len != m->total_len)
			return PROTO_BAD_FRAG;
		if (m->health.kind > PROTO_HEALTH_REPORT)
			return PROTO_BAD_FIELD;
		if (m->health.kind == PROTO_HEALTH_REPORT &&
		    (m->health.state > PROTO_HEALTH_DEGRADED || m->health.role == 0 ||
		     m->health.role > PROTO_ROLE_XDP))
			return PROTO_BAD_FIELD;
		if (m->health.kind == PROTO_HEALTH_REPORT &&
		    m->total_len != PROTO_HEALTH_IDENT_LEN +
					(uint32_t)m->health.n_models * PROTO_HEALTH_ENTRY_LEN)
			return PROTO_BAD_TOTAL_LEN;
		break;
	}
	return PROTO_OK;
}

/*
 * Write the headers of m (common + its type's, m->hdr_len bytes: extra bytes beyond the type's
 * size are zeroed) at buf. Fields are taken as they are: the caller sets hdr_len, frag_off,
 * frag_len and total_len. Returns hdr_len, or 0 if m->type or m->hdr_len is invalid or the
 * headers do not fit before end.
 */
PROTO_INLINE uint32_t proto_hdr_write(const struct proto_msg *m, void *buf, void *end)
{
	uint8_t *p = (uint8_t *)buf;
	uint8_t *t = p + PROTO_COMMON_LEN;
	uint32_t min_len = proto_type_hdr_len(m->type);
	uint32_t i;

	if (min_len == 0 || m->hdr_len < min_len || m->hdr_len > PROTO_MAX_HDR_LEN ||
	    (m->hdr_len & 3) != 0)
		return 0;
	if (p + m->hdr_len > (uint8_t *)end)
		return 0;
	proto_put16(p, PROTO_MAGIC);
	p[2] = PROTO_VERSION;
	p[3] = m->type;
	proto_put16(p + 4, m->hdr_len);
	proto_put16(p + 6, m->frag_len);
	proto_put32(p + 8, m->model_id);
	proto_put16(p + 12, m->flags);
	proto_put16(p + 14, 0);
	proto_put64(p + 16, m->request_id);
	proto_put32(p + 24, m->total_len);
	proto_put32(p + 28, m->frag_off);
	for (i = min_len; i < PROTO_MAX_HDR_LEN; i += 4) {
		if (i >= m->hdr_len)
			break;
		proto_put32(p + i, 0);
	}
	switch (m->type) {
	case PROTO_REQUEST:
	case PROTO_ACTIVATION:
		t[0] = m->tensor.fmt;
		t[1] = 0;
		proto_put16(t + 2, m->tensor.layer);
		proto_put32(t + 4, m->tensor.c);
		proto_put32(t + 8, m->tensor.h);
		proto_put32(t + 12, m->tensor.w);
		proto_put32(t + 16, m->tensor.count);
		proto_put32(t + 20, m->tensor.scale_bits);
		proto_put32(t + 24, (uint32_t)m->tensor.zero_point);
		proto_put32(t + 28, 0);
		if (m->type == PROTO_REQUEST)
			break;
		__builtin_memcpy(t + 32, m->act.reply_addr, 16);
		proto_put16(t + 48, m->act.reply_port);
		t[50] = m->act.executors;
		t[51] = 0;
		proto_put32(t + 52, m->act.t_rx_ns);
		proto_put32(t + 56, m->act.t_queue_ns);
		proto_put32(t + 60, m->act.t_host_ns);
		proto_put32(t + 64, m->act.t_pack_ns);
		proto_put32(t + 68, m->act.host_ref);
		proto_put64(t + 72, m->act.cookie);
		break;
	case PROTO_RESPONSE:
		proto_put32(t, m->resp.cls);
		proto_put16(t + 4, m->resp.num_classes);
		t[6] = m->resp.score_fmt;
		t[7] = m->resp.executors;
		proto_put32(t + 8, m->resp.t_ns[0]);
		proto_put32(t + 12, m->resp.t_ns[1]);
		proto_put32(t + 16, m->resp.t_ns[2]);
		proto_put32(t + 20, m->resp.t_ns[3]);
		proto_put32(t + 24, m->resp.t_ns[4]);
		proto_put32(t + 28, m->resp.t_ns[5]);
		proto_put32(t + 32, m->resp.t_ns[6]);
		proto_put32(t + 36, m->resp.t_ns[7]);
		proto_put32(t + 40, m->resp.host_ref);
		proto_put32(t + 44, 0);
		if (m->hdr_len >= PROTO_RESP_NOTICE_HDR_LEN)
			proto_put64(t + 48, m->resp.cookie);
		break;
	case PROTO_ERROR:
		proto_put16(t, m->err.code);
		proto_put16(t + 2, 0);
		proto_put32(t + 4, m->err.detail);
		if (m->hdr_len >= PROTO_ERROR_NOTICE_HDR_LEN) {
			proto_put32(t + 8, m->err.host_ref);
			proto_put64(t + 16, m->err.cookie);
		}
		break;
	case PROTO_HEALTH:
		t[0] = m->health.kind;
		t[1] = m->health.state;
		t[2] = m->health.role;
		t[3] = m->health.flags;
		proto_put16(t + 4, m->health.n_models);
		proto_put16(t + 6, 0);
		proto_put32(t + 8, m->health.in_flight);
		proto_put32(t + 12, 0);
		break;
	}
	return m->hdr_len;
}

#endif /* PROTO_HDR_H */
