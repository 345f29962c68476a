/* SPDX-License-Identifier: MIT */
/*
 * protocol/reasm.h — bounded reassembly of fragmented messages.
 *
 * A table of `slots` messages in progress, each with a data buffer of `max_msg` bytes and a
 * bitmap of its 8-byte units (fragments are 8-byte aligned, see proto.h), all allocated by
 * proto_reasm_create and nothing afterwards: memory = slots * (max_msg + max_msg / 64) plus a
 * few words per slot. A message is keyed by (src, type, request_id); `src` is the caller's name
 * for the sender (e.g. its IPv4 address and port), so request ids of different front-ends never
 * mix.
 *
 * Rules, per fragment (already accepted by the parser):
 *   - a message that fits one datagram is returned at once, pointing into the datagram, and
 *     takes no slot;
 *   - total_len above max_msg: PROTO_RA_TOO_LARGE;
 *   - the first fragment of a key takes a slot; later ones must carry the same headers (model,
 *     total_len, hdr_len, the type header): else PROTO_RA_INCONSISTENT, dropped, slot kept;
 *   - bytes already held must be equal to the fragment's (first writer wins): a full duplicate
 *     is PROTO_RA_DUPLICATE, a partial overlap adds its new bytes, a mismatch is
 *     PROTO_RA_OVERLAP (the fragment is dropped);
 *   - a slot that has not completed `timeout_ns` after its first fragment is freed by
 *     proto_reasm_expire (called by push too): that message is lost, and counted;
 *   - no free slot and none expired: PROTO_RA_TABLE_FULL.
 * When the last byte arrives, push returns PROTO_RA_COMPLETE and the message; its slot stays
 * held (duplicates of it keep answering DUPLICATE) until proto_reasm_release. Completed slots
 * never expire. Not thread-safe: one table per thread.
 */
#ifndef PROTO_REASM_H
#define PROTO_REASM_H

#include <stdbool.h>
#include <stdint.h>

#include "protocol/proto.h"

struct proto_reasm_config {
	uint32_t slots;	     /* messages in progress at once, >= 1 */
	uint32_t max_msg;    /* largest data section, bytes, <= PROTO_MAX_TOTAL */
	uint64_t timeout_ns; /* from the first fragment */
};

enum proto_ra_verdict {
	PROTO_RA_COMPLETE = 0,
	PROTO_RA_PARTIAL,
	PROTO_RA_DUPLICATE,
	PROTO_RA_TOO_LARGE,
	PROTO_RA_INCONSISTENT,
	PROTO_RA_OVERLAP,
	PROTO_RA_TABLE_FULL,
	PROTO_RA__COUNT
};

/* A complete message: hdr with frag_off 0 and frag_len = min(total_len, 0xffff). */
struct proto_reasm_msg {
	struct proto_msg hdr;
	const uint8_t *data; /* total_len bytes, valid until release (or the datagram's life) */
	uint32_t len;
	int32_t slot; /* -1: not from the table, nothing to release */
};

struct proto_reasm_stats {
	uint64_t verdicts[PROTO_RA__COUNT];
	uint64_t expired; /* messages lost to the timeout */
	uint32_t in_use;  /* slots held now (in progress + completed, not released) */
};

struct proto_reasm;

/* NULL on a bad config (zero slots, max_msg above the limit) or out of memory. */
struct proto_reasm *proto_reasm_create(const struct proto_reasm_config *cfg);
void proto_reasm_destroy(struct proto_reasm *ra);

/* A message in one datagram (frag_off 0, frag_len total_len) is complete as it is: out points
 * into the datagram (slot -1, nothing to release) and true; else false. No table needed. */
bool proto_reasm_whole(const struct proto_msg *frag, struct proto_reasm_msg *out);
enum proto_ra_verdict proto_reasm_push(struct proto_reasm *ra, uint64_t src,
				       const struct proto_msg *frag, uint64_t now_ns,
				       struct proto_reasm_msg *out);
void proto_reasm_release(struct proto_reasm *ra, struct proto_reasm_msg *msg);
/* Does the table hold a message of frag's key (src, type, request_id), in progress or complete
 * and not released? (A server that drains finishes those and takes no new ones.) */
bool proto_reasm_holds(const struct proto_reasm *ra, uint64_t src, const struct proto_msg *frag);
/* Free the slots whose time is up; returns how many. */
uint32_t proto_reasm_expire(struct proto_reasm *ra, uint64_t now_ns);
void proto_reasm_stats(const struct proto_reasm *ra, struct proto_reasm_stats *st);
const char *proto_ra_verdict_name(unsigned v);

#endif /* PROTO_REASM_H */
