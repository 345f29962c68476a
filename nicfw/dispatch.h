/* SPDX-License-Identifier: MIT */
/*
 * nicfw/dispatch.h — the NIC's packet dispatcher: the first thing every frame meets.
 *
 * The NIC sits on the wire between the front-ends (wire port) and its host (host port). For each
 * Ethernet frame the dispatcher decides, in this order:
 *   - ARP request for the NIC's own IPv4 address, on the wire port: answered in place (REPLY);
 *   - not IPv4/UDP to the inference port (or an IP fragment, or a bad IP/UDP header): PASS, out
 *     of the other port untouched (the forwarding function), counted as forwarded;
 *   - UDP to the inference port from the wire port that says it is an ACTIVATION, a RESPONSE or
 *     an ERROR (well-formed or not): dropped and counted (dropped_wire_activations,
 *     dropped_wire_replies), never answered, never passed up: only the host hands work to the
 *     NIC, and only the NIC sends the host completion notices (the trust boundary);
 *   - UDP to the inference port: parsed (protocol/proto_hdr.h); a datagram the parser rejects is
 *     counted by verdict and, if it says it is a REQUEST (or, from the host port, an
 *     ACTIVATION), answered with ERROR BAD_REQUEST (detail = the verdict); RESPONSE and ERROR
 *     from the host pass to the wire (the host's answers to front-ends);
 *   - a REQUEST or ACTIVATION for a model the NIC does not hold (passed up: unknown model), or
 *     not starting where the NIC's part of that model starts (passed up: not my layer): PASS;
 *     but an ACTIVATION (from the host port) is never passed on to the wire: it is answered with
 *     ERROR UNKNOWN_MODEL (detail = the model id) or ERROR UNSUPPORTED (detail = the layer the
 *     NIC's part starts at), counted, so that the host falls back at once;
 *   - with cfg.host (what the NIC's owner learns of its host from HEALTH probes, struct
 *     nicfw_host_view), a REQUEST is passed up only to a host that answers and holds its model
 *     (or the co-processor model whose NIC part the NIC holds; any, while the host is fresh
 *     and has not reported yet):
 *     one for an id neither the NIC nor the host's last report lists is answered ERROR
 *     UNKNOWN_MODEL, one for a model of a host that does not answer ERROR UNAVAILABLE (detail =
 *     the model id both), counted, so that no request is passed up to a host that is not there;
 *   - otherwise it is the NIC's: fragments go through the reassembly table (protocol/reasm.h,
 *     fixed size), a complete message is checked against the model's input (a REQUEST: format
 *     and (C,H,W) by proto_input_matches(), the check every executor shares; an ACTIVATION:
 *     format and element count, the activation crossing as a flat vector) else ERROR BAD_SHAPE
 *     (its reason "nic: bad_shape: expects FMT CxHxW", the model's input; detail = elements),
 *     and submitted to the model's executor (queue full: ERROR BUSY; a REQUEST while the NIC
 *     drains: ERROR BUSY, detail 1). The frame is CONSUMED;
 *   - HEALTH (with cfg.health): answered, passed up or dropped as nicfw/health.h says.
 *
 * Replies to the wire side: the trust policy (protocol/trust.h, cfg.trust) decides each one, and
 * the dispatcher counts its verdict:
 *   - allow-list: when one is given, what comes from other addresses gets nothing: REQUESTs the
 *     NIC would serve or answer itself and HEALTH probes it would answer are dropped and counted
 *     (dropped_not_allowed); what it passes up is the host's to judge;
 *   - no amplification: a source that is not on an allow-list never gets a reply larger than
 *     what caused it (UDP payload bytes): an ERROR's reason is cut to fit (an ERROR that cannot
 *     fit, for a datagram under 40 bytes, is not sent), and a REQUEST whose RESPONSE would be
 *     larger than the REQUEST is answered ERROR TOO_LARGE (detail = the RESPONSE's bytes; the
 *     front-end may pad its REQUEST header up to 256 bytes); both counted refused_larger_reply;
 *   - ERRORs to the wire side are rate-limited per source address (a fixed table of token
 *     buckets); those over the limit are not sent and are counted (error_rate_limited).
 *     error_<code> counts every ERROR decided for an allowed source, errors_sent those that left.
 * The host port is trusted: its ERRORs are completion notices, never limited or cut.
 *
 * Executors: each model is one executor of the one interface (exec/kexec.h) holding the NIC's
 * part of it, loaded for batches of one: the emulator (nicfw/emu/exec_emu.h; serving, it
 * releases results at their modeled completion) or the chain on lcores (nicfw/lcore/lcore.h).
 * An accepted request is submitted at once (kexec_submit; at most NICFW_DISP_QUEUE per model
 * wait or run, the executor running them in order, one at a time); nicfw_disp_poll() collects
 * what finished (kexec_poll) and sends each RESPONSE (one datagram or fragments, scores in f64,
 * class = arg-max): to the requester (L2/L3/L4 addresses swapped) for a REQUEST, to the
 * ACTIVATION's reply address and port for an ACTIVATION (its MAC learnt from frames seen on the
 * wire port, else broadcast). An inference that fails is answered ERROR INTERNAL.
 *
 * Completion notices (notify_host): the RESPONSE to an ACTIVATION is copied to the host, out of
 * the host port only, in the notice form (hdr_len PROTO_RESP_NOTICE_HDR_LEN: the ACTIVATION's
 * host_ref and cookie); every ERROR about an ACTIVATION goes to the host in the notice form
 * (hdr_len PROTO_ERROR_NOTICE_HDR_LEN, host_ref and cookie), never to the front-end, so that the
 * host falls back. Front-ends get the short forms, without a cookie.
 *
 * Timing: a RESPONSE's rx, queue, host and pack fields are the ACTIVATION's (the NIC adds its
 * own queueing to queue: from its arrival to its start, the later of its arrival and the
 * previous request's collection), nic is the chain's run time (from that start to its
 * collection; also kept per model, nicfw_disp_timing), and total is the server-side total: the
 * ACTIVATION's four fields, which the host fills so that they tile its time from the request's
 * first byte to the ACTIVATION's send, plus the NIC's time from the ACTIVATION's arrival to the
 * RESPONSE (so total >= rx + queue + host + pack + nic; the host-to-NIC transfer, on no single
 * clock, is the one part not counted). For a REQUEST the prior fields are 0.
 *
 * Threading: one dispatcher per packet thread; rx and poll from that thread only. Counters are
 * single-writer 64-bit words that other threads (telemetry) may read at any time.
 *
 * Memory: everything (reassembly table, request queues with their input and score buffers, the
 * frame buffer for replies) is allocated by nicfw_disp_create(); rx and poll allocate nothing,
 * lock nothing and log nothing (nor do the executors' submit and poll).
 */
#ifndef NICFW_DISPATCH_H
#define NICFW_DISPATCH_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "exec/kexec.h"
#include "nicfw/health.h"
#include "protocol/frame.h"
#include "protocol/proto.h"
#include "protocol/reasm.h"
#include "protocol/trust.h"

#define NICFW_DISP_MAX_MODELS 16
#define NICFW_DISP_QUEUE      KEXEC_FIFO /* requests per model waiting or running */
#define NICFW_DISP_SAMPLES    4096	 /* per model: the last NIC times kept (timing) */
#define NICFW_DISP_HIST	      24	 /* per model: log2 buckets of every NIC time (timing) */

enum nicfw_port { NICFW_PORT_WIRE = 0, NICFW_PORT_HOST = 1 };

/* What the caller does with the frame after nicfw_disp_rx(). */
enum nicfw_disp_action {
	NICFW_DISP_PASS = 0, /* send it, untouched, out of the other port */
	NICFW_DISP_CONSUMED, /* the dispatcher took what it needed: free the frame */
	NICFW_DISP_REPLY,    /* rewritten in place (ARP): send it back out of the same port */
};

/* Per-reason counters. Names (nicfw_disp_counter_name) are the telemetry keys. */
enum nicfw_disp_counter {
	NICFW_C_RX_WIRE = 0,	/* frames received on the wire port */
	NICFW_C_RX_HOST,	/* frames received on the host port */
	NICFW_C_FWD_TO_HOST,	/* not inference traffic, wire -> host */
	NICFW_C_FWD_TO_WIRE,	/* not inference traffic, host -> wire */
	NICFW_C_NOT_IPV4,	/* forwarded: not IPv4 (ARP not for us, IPv6, ...) */
	NICFW_C_IP_BAD,		/* forwarded: truncated or inconsistent IPv4/UDP header */
	NICFW_C_IP_FRAG,	/* forwarded: an IP fragment (inference datagrams never are) */
	NICFW_C_ARP_REPLIES,	/* ARP requests for the NIC's address answered */
	NICFW_C_INFER_RX,	/* datagrams to the inference port */
	NICFW_C_PASSED_UP_TYPE, /* RESPONSE/ERROR from the host, HEALTH: passed on */
	NICFW_C_UNKNOWN_MODEL,	/* passed up: a model the NIC does not hold */
	NICFW_C_NOT_MY_LAYER,	/* passed up: the NIC's part of the model starts elsewhere */
	NICFW_C_FRAGMENTS,	/* fragments taken into the reassembly table */
	NICFW_C_REQUESTS,	/* complete REQUESTs accepted */
	NICFW_C_ACTIVATIONS,	/* complete ACTIVATIONs accepted */
	NICFW_C_ANSWERED,	/* RESPONSEs sent (messages) */
	NICFW_C_RESP_DGRAMS,	/* RESPONSE datagrams sent */
	NICFW_C_ERRORS_SENT,	/* ERROR datagrams sent, all codes */
	NICFW_C_ERR_BAD_REQUEST,
	NICFW_C_ERR_BAD_SHAPE,
	NICFW_C_ERR_BUSY,
	NICFW_C_ERR_TOO_LARGE,
	NICFW_C_ERR_INTERNAL,
	NICFW_C_ERR_UNKNOWN_MODEL,     /* ACTIVATION from the host for a model the NIC lacks */
	NICFW_C_ERR_UNSUPPORTED_LAYER, /* ACTIVATION from the host not at the NIC's layer */
	NICFW_C_TX_FAIL,	       /* replies the port would not take */
	NICFW_C_HOST_NOTICES,	       /* completion notices (RESPONSE copies) sent to the host */
	NICFW_C_WIRE_ACTIVATION,       /* dropped: an ACTIVATION from the wire port */
	NICFW_C_WIRE_REPLY,	       /* dropped: a RESPONSE/ERROR from the wire port */
	NICFW_C_NOT_ALLOWED,	       /* dropped: a REQUEST or probe from outside the allow-list */
	NICFW_C_REPLY_TOO_LARGE,       /* replies larger than their request, not sent */
	NICFW_C_ERR_RATE_LIMITED,      /* ERRORs over their source's rate, not sent */
	NICFW_C_ERROR_NOTICES,	       /* ERRORs about an ACTIVATION, sent to the host */
	NICFW_C_HEALTH_ANSWERED,       /* HEALTH probes answered with the NIC's report */
	NICFW_C_HEALTH_PASSED_UP,      /* HEALTH probes for the host's role, passed up */
	NICFW_C_HEALTH_DROPPED,	 /* HEALTH reports from the wire, probes too short to answer */
	NICFW_C_ERR_DRAINING,	 /* REQUESTs refused while draining (ERROR BUSY, detail 1) */
	NICFW_C_ERR_UNAVAILABLE, /* REQUESTs for a model of a host that does not answer */
	NICFW_C_NOT_HELD,	 /* ERROR unknown_model: an id neither the NIC nor its host holds */
	NICFW_C_HOST_PROBES,	 /* HEALTH probes sent to the host (cfg.host) */
	NICFW_C_HOST_REPORTS,	 /* the host's reports to them, taken */
	NICFW_C__COUNT
};

/* Sends one frame out of a port; returns 0 or -errno (the frame is the caller's to copy). */
typedef int (*nicfw_disp_tx_fn)(void *arg, enum nicfw_port port, const uint8_t *frame,
				uint32_t len);

/* One model: its executor and what the dispatcher checks against (nicfw_disp_model_init). */
struct nicfw_disp_model {
	uint32_t model_id;	   /* proto_model_id(name) or the operator's number */
	struct kexec *x;	   /* the executor, loaded for batches of 1 (the caller's) */
	uint32_t layer;		   /* first model op the NIC runs (ACTIVATION layer field) */
	uint32_t in_fmt;	   /* enum proto_fmt the executor takes: U8 or BITS */
	uint32_t in_count;	   /* elements */
	uint32_t in_bytes;	   /* bytes (the executor's in_bytes) */
	uint32_t classes;	   /* doubles in the response (the executor's out_bytes / 8) */
	bool standalone;	   /* the NIC runs the whole model: it answers REQUESTs */
	uint32_t in_c, in_h, in_w; /* a REQUEST's shape; all 0: (in_count, 1, 1) */
};

/*
 * md for model_id on executor x (loaded with ops [x->first, n) of x->m, the NIC's part): every
 * field from x and its model. 0, or -EINVAL with a message in err when the part's input is
 * neither u8 nor bits (no ACTIVATION or REQUEST format carries it).
 */
int nicfw_disp_model_init(struct nicfw_disp_model *md, uint32_t model_id, struct kexec *x,
			  char *err, size_t errlen);

/* Per model: the NIC time of its RESPONSEs (the nic field), single writer, read from anywhere. */
struct nicfw_disp_timing {
	uint64_t requests, ns_sum;
	uint64_t hist[NICFW_DISP_HIST];	 /* all of them: bucket b counts [2^(b-1), 2^b) us */
	uint32_t ns[NICFW_DISP_SAMPLES]; /* the last ones, saturated at UINT32_MAX */
};

/*
 * What the NIC knows of its host, from HEALTH probes out of the host port (nicfw_disp_probe_host:
 * role any, to the server's own address (the host shares it) and the inference port, from the
 * same, request id key << 16 | a counter, padded to list up to 27 models). The host's report comes
 * back in on the host port to that address and port: the dispatcher takes it (never passed to
 * the wire) and writes the models here. Any frame from the host port says it is there (a busy
 * host answers probes late, but sends ACTIVATIONs): last_heard. The owner decides `up` from it
 * (and its host port's link), on the packet thread.
 */
#define NICFW_HOST_MAX_MODELS 32
struct nicfw_host_view {
	uint64_t key;	     /* the owner's: a random number, the probes' request ids' top bits */
	bool up;	     /* the owner's: the host answers */
	bool fresh;	     /* the owner's: its link came up (or the NIC started) lately */
	uint64_t last_heard; /* now_ns of the last frame from the host port; 0: none came yet */
	bool listed;	     /* a report came: n_models and model_id are its list */
	uint32_t n_models;   /* the model ids of the host's last report */
	uint32_t model_id[NICFW_HOST_MAX_MODELS];
};

struct nicfw_disp_config {
	uint8_t mac[6];	  /* the NIC's wire-side MAC (source of ARP replies) */
	uint32_t ip;	  /* the NIC's IPv4 address, host order (ARP); 0: answer no ARP */
	uint16_t port;	  /* inference UDP port */
	uint32_t payload; /* largest UDP payload of a RESPONSE datagram (PROTO_DEFAULT_PAYLOAD) */
	uint32_t reasm_slots;
	bool notify_host; /* copy each ACTIVATION's RESPONSE to the host (completion notice) */
	struct proto_trust_cfg trust; /* the wire side's (the host port is trusted) */
	uint64_t reasm_timeout_ns;
	uint32_t n_models;
	struct nicfw_disp_model model[NICFW_DISP_MAX_MODELS];
	/* the HEALTH report (its state kept by the owner); NULL: HEALTH passes like any datagram */
	const struct nicfw_health *health;
	/* the host as its owner sees it; NULL: REQUESTs not the NIC's pass up, whatever their id */
	struct nicfw_host_view *host;
	nicfw_disp_tx_fn tx;
	void *tx_arg;
};

struct nicfw_disp;

/* NULL with a message in err (bad config, out of memory). */
struct nicfw_disp *nicfw_disp_create(const struct nicfw_disp_config *cfg, char *err, size_t errlen);
void nicfw_disp_free(struct nicfw_disp *d);

/* One received frame (writable: REPLY rewrites it) from port `from`; now_ns: a monotonic clock. */
enum nicfw_disp_action nicfw_disp_rx(struct nicfw_disp *d, enum nicfw_port from, uint8_t *frame,
				     uint32_t len, uint64_t now_ns);

/* Collect finished inferences (each model's kexec_poll) and send their RESPONSEs; returns
 * responses sent. */
uint32_t nicfw_disp_poll(struct nicfw_disp *d, uint64_t now_ns);

/* A HEALTH probe to the host (struct nicfw_host_view; cfg.host required): 0 or -errno. */
int nicfw_disp_probe_host(struct nicfw_disp *d, uint64_t now_ns);

/* Count a frame forwarded by the caller without nicfw_disp_rx (e.g. a batch fast path). */
void nicfw_disp_count(struct nicfw_disp *d, enum nicfw_disp_counter c, uint64_t n);

/* Counters: a snapshot of all, and their names. Reassembly verdicts via nicfw_disp_reasm_stats. */
void nicfw_disp_counters(const struct nicfw_disp *d, uint64_t c[NICFW_C__COUNT],
			 uint64_t verdicts[PROTO_VERDICT__COUNT]);
const char *nicfw_disp_counter_name(unsigned c);
void nicfw_disp_reasm_stats(const struct nicfw_disp *d, struct proto_reasm_stats *st);
/* Requests queued or running, all models. */
uint32_t nicfw_disp_pending(const struct nicfw_disp *d);
/* Slot `model`'s NIC times (< NICFW_DISP_MAX_MODELS; the models at create are slots 0, 1, ...).
 */
const struct nicfw_disp_timing *nicfw_disp_timing(const struct nicfw_disp *d, uint32_t model);

/*
 * Models changed while the packet thread runs (its owner's reload). The models at create hold
 * slots 0 .. n_models - 1. The owner's control thread fills a slot the packet thread does not
 * poll (slot_set: checked as at create, its buffers allocated; -E2BIG when its input or classes
 * exceed what the reassembly table and the reply buffer were sized for at create), then the
 * packet thread, between two frames, names the slots that take new requests (map: in order, the
 * first the default model, model id 0); a slot no longer named takes no new request (a
 * fragment that completes a message after the map goes to the slot named now) and is polled
 * until the requests it holds are answered, then no longer: slot_polled says so (acquire), and
 * the control thread may close its executor and clear it (slot_clear frees its buffers and
 * zeroes its timing).
 */
int nicfw_disp_slot_set(struct nicfw_disp *d, uint32_t k, const struct nicfw_disp_model *md,
			char *err, size_t errlen);
void nicfw_disp_slot_clear(struct nicfw_disp *d, uint32_t k);
void nicfw_disp_map(struct nicfw_disp *d, const uint8_t *slots, uint32_t n);
bool nicfw_disp_slot_polled(const struct nicfw_disp *d, uint32_t k);

#endif /* NICFW_DISPATCH_H */
