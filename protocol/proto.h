/* SPDX-License-Identifier: MIT */
/*
 * protocol/proto.h — the splitnic wire protocol: layout, limits, build, parse, fragmentation.
 *
 * Transport: UDP, default port 21326 (PROTO_DEFAULT_PORT, 0x534e), configurable everywhere.
 * One datagram = common header (32 bytes) + the type's header (hdr_len - 32 bytes) + a data
 * section fragment (frag_len bytes). A message whose data section does not fit one datagram is
 * split into fragments; every fragment repeats both headers, so any one of them tells what the
 * message is, and a receiver can reject fragments that disagree with the first one it saw.
 *
 * Byte order: every header field is big-endian (network order). Data sections are little-endian
 * element arrays (f32, fp16, f64 and the 64-bit words of packed bits), so x86 and Arm hosts can
 * copy them as they are.
 *
 * Common header (every datagram):
 *
 *   #   off  size  field
 *   1     0     2  magic       0x534e ("SN")
 *   2     2     1  version     1; any other value is rejected (PROTO_BAD_VERSION)
 *   3     3     1  type        1 REQUEST, 2 ACTIVATION, 3 RESPONSE, 4 ERROR, 5 HEALTH
 *   4     4     2  hdr_len     bytes from offset 0 to the data: 32 + the type header; a multiple
 *                              of 4, at least the type's size in this version, at most 256.
 *                              Room to grow: a receiver skips header bytes it does not know.
 *   5     6     2  frag_len    data bytes in this datagram; hdr_len + frag_len must equal the
 *                              datagram length exactly
 *   6     8     4  model_id    the model: a number assigned by the operator, or the FNV-1a 32-bit
 *                              hash of the model's name (proto_model_id()); 0 = the default
 *   7    12     2  flags       none defined in version 1: sent 0, ignored on receipt
 *   8    14     2  reserved    sent 0, ignored
 *   9    16     8  request_id  chosen by the front-end; unique per front-end (address, port)
 *                              while the request is outstanding; echoed in RESPONSE and ERROR
 *  10    24     4  total_len   bytes of the whole message's data section, <= 64 MiB
 *  11    28     4  frag_off    offset of this datagram's data within the data section
 *
 * Fragments: frag_off + frag_len <= total_len; frag_off is a multiple of 8, and so is frag_len
 * unless the fragment ends the message (frag_off + frag_len == total_len); frag_len is 0 only
 * when total_len is 0. A message is complete when every byte of [0, total_len) has arrived.
 * Fragments may arrive in any order, duplicated or overlapping (overlapping bytes must be equal).
 *
 * Tensor header (REQUEST, ACTIVATION; offsets from byte 32):
 *
 *   #   off  size  field
 *  12     0     1  fmt         1 u8, 2 f32, 3 fp16, 4 int8, 5 bits (1-bit packed), 6 f64
 *  13     1     1  reserved
 *  14     2     2  layer       ACTIVATION: index of the first layer the receiver runs;
 *                              REQUEST: 0
 *  15     4     4  c           channels  }
 *  16     8     4  h           height    } shape (C,H,W), each >= 1; a flat vector is (n,1,1)
 *  17    12     4  w           width     }
 *  18    16     4  count       elements, must equal C*H*W, <= 64 Mi
 *  19    20     4  scale       int8: IEEE-754 binary32 bits, positive and finite; else ignored
 *  20    24     4  zero_point  int8: signed 32-bit; real = scale * (q - zero_point); else ignored
 *  21    28     4  reserved
 *
 * REQUEST: type header = the tensor header (hdr_len >= 64); data = the tensor. The data
 * section holds `count` elements in C-major order ([c][h][w]), total_len = its exact size:
 *   u8, int8   1 byte each;  fp16  2 bytes (IEEE binary16, little-endian);
 *   f32        4 bytes (binary32, little-endian);  f64  8 bytes (binary64, little-endian);
 *   bits       ceil(count/64) 64-bit little-endian words; element 64j+i is bit i of word j;
 *              bit 1 = +1, bit 0 = -1; the unused high bits of the last word are 0.
 *
 * ACTIVATION (host to NIC): the tensor header, then (offsets from byte 32; hdr_len >= 112):
 *
 *  22    32    16  reply_addr  the front-end's address, IPv6 or IPv4-mapped (::ffff:a.b.c.d)
 *  23    48     2  reply_port  the front-end's UDP port (the NIC answers it directly)
 *  24    50     1  executors   PROTO_EX_* bits of the stages that already ran
 *  25    51     1  reserved
 *  26    52     4  t_rx        ns spent so far in receive/reassembly   } copied into the
 *  27    56     4  t_queue     ns spent so far queued                  } RESPONSE timing
 *  28    60     4  t_host      ns of host compute (CPU/GPU stages)     } fields of the same
 *  29    64     4  t_pack      ns of sign + pack + serialize           } name
 *  30    68     4  host_ref    the host's own reference for the request (e.g. its slot), echoed
 *                              in the RESPONSE; opaque to the NIC; 0 = none
 *  40    72     8  cookie      the host's unguessable secret for this request (a CSPRNG key at
 *                              start-up and a counter); echoed only in the completion notice to
 *                              the host, which accepts a notice only with the cookie it sent
 * The data section is the activation at the split point, as for REQUEST (typically bits).
 *
 * RESPONSE: (offsets from byte 32; hdr_len >= 80)
 *
 *  31     0     4  class       predicted class (arg-max, lowest index on ties), < num_classes
 *  32     4     2  num_classes >= 1
 *  33     6     1  score_fmt   6 f64 (exact values of the compute core) or 2 f32
 *  34     7     1  executors   bitmask: CPU 1, GPU 2, NIC 4, XDP 8, HOST_FALLBACK 16 (the host
 *                              ran the NIC's layers itself because the NIC was unavailable)
 *  35     8    32  timing      8 x u32 ns, saturating: total, rx, queue, host, pack, xfer, nic,
 *                              tx (enum proto_timing); 0 = not measured / not applicable
 *  36    40     4  host_ref    the host_ref of the ACTIVATION it answers (a completion notice
 *                              finds its request by it in O(1)); 0 for a REQUEST's
 *        44     4  reserved
 *  41    48     8  cookie      completion notices only (NIC to host, hdr_len >= 88): the
 *                              ACTIVATION's cookie. A RESPONSE to a front-end has hdr_len 80 and
 *                              no cookie; a receiver reads cookie 0 from a shorter header.
 * Data: num_classes scores in score_fmt, little-endian, total_len = num_classes * 8 (or 4).
 * With the default 1400-byte payload a RESPONSE is one datagram up to 165 f64 classes; larger
 * ones are fragmented like any message.
 *
 * ERROR: (offsets from byte 32; hdr_len >= 40)
 *
 *  37     0     2  code        enum proto_error_code (>= 1)
 *  38     2     2  reserved
 *  39     4     4  detail      code-specific: the parser verdict, the model id, a limit
 *  42     8     4  host_ref    } completion notices only (NIC to host about an ACTIVATION,
 *        12     4  reserved    } hdr_len >= 56): the ACTIVATION's host_ref and cookie; 0 when
 *  43    16     8  cookie      } the header is shorter
 * Data: a short reason, ASCII, not NUL-terminated, total_len <= 64; never fragmented. It reads
 * "WHO: CODE[: TEXT]" (WHO nic, host, serve); bad_shape's TEXT is "expects FMT CxHxW".
 *
 * HEALTH: a probe (any prober: keepalived, a front-end) and the server's report. (offsets from
 * byte 32; hdr_len >= 48)
 *
 *  44     0     1  kind        0 probe, 1 report
 *  45     1     1  state       report: 0 serving, 1 draining (finishing what it holds, taking
 *                              nothing new), 2 degraded (serving, but a part it needs is away)
 *  46     2     1  role        report: 1 splitnic-nic, 2 splitnic-host, 3 splitnic serve, 4 XDP;
 *                              probe: the role asked (0 any): a server answers its own role or
 *                              0, and passes others on (splitnic-nic: up to its host)
 *  47     3     1  hflags      report: bit 0 truncated (fewer models listed than it holds)
 *  48     4     2  n_models    report: model entries in the data
 *         6     2  reserved
 *  49     8     4  in_flight   report: requests the server holds now
 *        12     4  reserved
 * Never fragmented (frag_len = total_len <= 1352). request_id is echoed; model_id is 0.
 * Probe data: padding, any bytes, ignored. Report data: the server's identity (32 bytes, ASCII,
 * NUL-padded: its name) then n_models entries of 48 bytes (total_len = 32 + 48 n_models):
 *   off size  field
 *     0    4  model_id
 *     4    2  first_op    the first compiled op this server runs (0: from the input)
 *     6    1  mode        1 whole (answers REQUESTs alone), 2 co-processor host part, 3 the
 *                         NIC part (ACTIVATIONs from its host), 4 host-only, 5 fallback
 *     7    1  in_fmt      the REQUEST (or ACTIVATION) tensor format it takes
 *     8   12  c, h, w     that tensor's shape
 *    20    2  classes
 *    22    2  reserved
 *    24   24  name        the model's name, ASCII, NUL-padded (cut at 24 bytes)
 * No amplification: a report is never longer than the probe datagram that asked for it; the
 * server lists as many models as fit and sets truncated. Probers pad probes (1400 bytes lists up
 * to 27 models).
 *
 * The fixed headers are parsed by header-only bounded code (protocol/proto_hdr.h) that BPF
 * programs include as well. Everything below is the host-side library (libsnproto).
 */
#ifndef PROTO_H
#define PROTO_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "protocol/proto_hdr.h"

#define PROTO_DEFAULT_PAYLOAD 1400u /* bytes of UDP payload per datagram by default */
#define PROTO_MIN_PAYLOAD     256u  /* smallest payload limit the fragmenter accepts */
#define PROTO_MAX_PAYLOAD     65507u

/* FNV-1a 32-bit hash of a model name: the model id when none is assigned. */
static inline uint32_t proto_model_id(const char *name)
{
	uint32_t h = 2166136261u;

	while (*name)
		h = (h ^ (uint8_t)*name++) * 16777619u;
	return h;
}

/* Parse one datagram held in memory (buf, len): proto_hdr_parse with data_end = buf + len. */
enum proto_verdict proto_parse(const void *buf, size_t len, struct proto_msg *m);

/* Names for counters and messages ("short", "magic", ...; "?" for an unknown value). */
const char *proto_verdict_name(unsigned v);
const char *proto_type_name(unsigned type);
const char *proto_fmt_name(unsigned fmt);
const char *proto_error_name(unsigned code);
/* enum proto_fmt from its name ("u8", "f32", "fp16", "int8", "bits", "f64"); 0 if unknown. */
unsigned proto_fmt_from_name(const char *name);

/*
 * Start a message: zero m, set version, type, ids and hdr_len to the type's size. The caller then
 * fills m->tensor / act / resp / err. proto_msg_body_len() is the data size the headers imply
 * (tensor bytes, scores bytes; for ERROR the reason length the caller puts in total_len).
 */
void proto_msg_init(struct proto_msg *m, enum proto_type type, uint32_t model_id,
		    uint64_t request_id);
uint64_t proto_msg_body_len(const struct proto_msg *m);
/* 0 if headers m with a body of body_len bytes make a valid message, -EINVAL or -EMSGSIZE. */
int proto_msg_check(const struct proto_msg *m, size_t body_len);
/* Set a tensor header: format, shape (count = C*H*W), int8 quantizer (ignored otherwise). */
void proto_msg_set_tensor(struct proto_msg *m, enum proto_fmt fmt, uint32_t c, uint32_t h,
			  uint32_t w, float scale, int32_t zero_point);

/*
 * Fragmenter: produces the datagrams of one message in order into caller buffers, allocating
 * nothing. Each datagram holds at most `payload` bytes (headers + data); data per fragment is
 * (payload - hdr_len) rounded down to a multiple of 8.
 *
 * proto_frag_init checks m against body_len (which becomes total_len) and the limits and
 * returns 0, -EINVAL (inconsistent message, payload below PROTO_MIN_PAYLOAD) or -EMSGSIZE
 * (body over PROTO_MAX_TOTAL, or an ERROR that does not fit one datagram). `body` must stay
 * valid until the last proto_frag_next. proto_frag_next writes the next datagram to buf and
 * returns its length, 0 when none is left, or -ENOSPC if cap is too small.
 */
struct proto_frag {
	struct proto_msg m;
	const uint8_t *body;
	uint32_t step;
	uint32_t off;
	bool done;
};

int proto_frag_init(struct proto_frag *f, const struct proto_msg *m, const void *body,
		    size_t body_len, size_t payload);
int proto_frag_next(struct proto_frag *f, void *buf, size_t cap);
/* Number of datagrams for body_len bytes with this header length and payload limit. */
uint32_t proto_frag_count(uint32_t hdr_len, size_t body_len, size_t payload);
/* UDP payload bytes of all those datagrams (headers repeated in each): what a reply weighs
 * against the request that caused it (no amplification). */
uint32_t proto_wire_bytes(uint32_t hdr_len, size_t body_len, size_t payload);

/*
 * Build a whole single-datagram message (headers + body) into buf; total_len = frag_len =
 * body_len. Returns the datagram length, -EMSGSIZE if it needs more than `cap` bytes or one
 * datagram, -EINVAL if m is inconsistent with body_len.
 */
int proto_build(const struct proto_msg *m, const void *body, size_t body_len, void *buf,
		size_t cap);
/*
 * An ERROR whose headers m holds (ids, code, detail; for a notice, hdr_len and host_ref/cookie)
 * with the reason prefix + reason, cut to PROTO_REASON_MAX and to what fits in cap bytes
 * (proto_trust_cut()): with the cap of the trust policy's verdict (protocol/trust.h), the
 * no-amplification rule's ERROR.
 * Sets m->total_len. Bytes written, or -EMSGSIZE when not even the headers fit (send nothing).
 * No formatting: for the packet path, where reasons come from static tables.
 */
int proto_build_error_cut(struct proto_msg *m, const char *prefix, const char *reason, void *buf,
			  size_t cap);
/* proto_build_error_cut for a plain ERROR (hdr_len PROTO_ERROR_HDR_LEN) to a front-end. */
int proto_build_error_text(void *buf, size_t cap, uint32_t model_id, uint64_t request_id,
			   enum proto_error_code code, uint32_t detail, const char *prefix,
			   const char *reason);
/* ERROR with a printf-style reason truncated to PROTO_REASON_MAX bytes (not on packet paths). */
int proto_build_error(void *buf, size_t cap, uint32_t model_id, uint64_t request_id,
		      enum proto_error_code code, uint32_t detail, const char *fmt, ...)
    __attribute__((format(printf, 7, 8)));

/* ---- HEALTH ---------------------------------------------------------------------------- */

/* One model of a HEALTH report, in host order. */
struct proto_health_model {
	uint32_t model_id;
	uint16_t first_op;
	uint8_t mode;	/* enum proto_health_mode */
	uint8_t in_fmt; /* enum proto_fmt */
	uint32_t c, h, w;
	uint16_t classes;
	char name[PROTO_HEALTH_NAME_LEN + 1]; /* NUL-terminated */
};

/* A probe padded to `len` bytes (PROTO_HEALTH_HDR_LEN..PROTO_MAX_PAYLOAD, at most one
 * datagram: the header plus PROTO_HEALTH_MAX_DATA): bytes written or -EINVAL/-EMSGSIZE. */
int proto_build_health_probe(void *buf, size_t cap, uint64_t request_id, size_t len);
/*
 * A report answering a probe of probe_len bytes: identity `ident` (cut at 32 bytes) and as many
 * of the n models as fit in min(probe_len, cap, one datagram); PROTO_HEALTH_F_TRUNCATED when not
 * all fit. Bytes written, or -EMSGSIZE if not even the header and identity fit (send nothing).
 * Allocates nothing, formats nothing: usable on packet paths.
 */
int proto_build_health_report(void *buf, size_t cap, size_t probe_len, uint64_t request_id,
			      enum proto_health_role role, enum proto_health_state state,
			      uint32_t in_flight, const char *ident,
			      const struct proto_health_model *models, uint32_t n);
/* From a parsed report m: the identity (NUL-terminated, ident holds 33 bytes) and model i
 * (< m->health.n_models; m->data must hold the whole data section). */
void proto_health_ident(const struct proto_msg *m, char ident[PROTO_HEALTH_IDENT_LEN + 1]);
void proto_health_model_get(const struct proto_msg *m, uint32_t i, struct proto_health_model *e);
const char *proto_health_state_name(unsigned state);
const char *proto_health_role_name(unsigned role);
const char *proto_health_mode_name(unsigned mode);

/* Tensor element helpers (data sections are little-endian; see the layout above). */
uint16_t proto_f32_to_fp16(float f); /* round to nearest even; overflow to inf, NaN kept */
float proto_fp16_to_f32(uint16_t h);
float proto_f32_from_bits(uint32_t bits);
uint32_t proto_f32_bits(float f);
/* Pack n signs (x >= 0 -> bit 1) into ceil(n/64) little-endian words at out (tail bits 0). */
void proto_bits_pack(const double *x, size_t n, uint8_t *out);
/* Element i of a packed tensor: +1 or -1. */
int proto_bits_get(const uint8_t *words, size_t i);
/* Little-endian element stores/loads for data sections. */
void proto_le_put_f32(uint8_t *p, float v);
float proto_le_get_f32(const uint8_t *p);
void proto_le_put_f64(uint8_t *p, double v);
double proto_le_get_f64(const uint8_t *p);

#endif /* PROTO_H */
