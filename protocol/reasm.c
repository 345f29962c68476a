// SPDX-License-Identifier: MIT
#include "protocol/reasm.h"

#include <stdlib.h>
#include <string.h>

#define UNIT PROTO_FRAG_ALIGN

enum slot_state { SLOT_FREE, SLOT_PARTIAL, SLOT_DONE };

struct ra_slot {
	uint64_t src;
	uint64_t born_ns;
	struct proto_msg hdr;
	uint32_t units; /* 8-byte units of the message */
	uint32_t have;	/* units held */
	int32_t hnext;	/* hash chain */
	int32_t prev;	/* in-progress FIFO (oldest first) */
	int32_t next;	/* in-progress FIFO, or the free list */
	uint8_t state;
};

struct proto_reasm {
	struct proto_reasm_config cfg;
	struct ra_slot *slots;
	int32_t *buckets;
	uint32_t bucket_mask;
	uint8_t *data;	 /* slots * max_msg */
	uint64_t *bits;	 /* slots * bm_words */
	size_t bm_words; /* per slot */
	int32_t free_head;
	int32_t fifo_head, fifo_tail;
	struct proto_reasm_stats st;
};

static const char *const ra_names[PROTO_RA__COUNT] = {
    [PROTO_RA_COMPLETE] = "complete",	      [PROTO_RA_PARTIAL] = "partial",
    [PROTO_RA_DUPLICATE] = "duplicate",	      [PROTO_RA_TOO_LARGE] = "too_large",
    [PROTO_RA_INCONSISTENT] = "inconsistent", [PROTO_RA_OVERLAP] = "overlap",
    [PROTO_RA_TABLE_FULL] = "table_full",
};

const char *proto_ra_verdict_name(unsigned v)
{
	return v < PROTO_RA__COUNT ? ra_names[v] : "?";
}

struct proto_reasm *proto_reasm_create(const struct proto_reasm_config *cfg)
{
	struct proto_reasm *ra;
	uint32_t nb = 1;

	if (cfg->slots == 0 || cfg->slots > (1u << 20) || cfg->max_msg == 0 ||
	    cfg->max_msg > PROTO_MAX_TOTAL)
		return NULL;
	while (nb < 2 * cfg->slots)
		nb <<= 1;
	ra = calloc(1, sizeof(*ra));
	if (!ra)
		return NULL;
	ra->cfg = *cfg;
	ra->bm_words = ((size_t)cfg->max_msg + UNIT * 64 - 1) / (UNIT * 64);
	ra->slots = calloc(cfg->slots, sizeof(*ra->slots));
	if (!ra->slots)
		goto err_free_ra;
	ra->buckets = malloc(nb * sizeof(*ra->buckets));
	if (!ra->buckets)
		goto err_free_slots;
	ra->bits = calloc((size_t)cfg->slots * ra->bm_words, sizeof(*ra->bits));
	if (!ra->bits)
		goto err_free_buckets;
	ra->data = malloc((size_t)cfg->slots * cfg->max_msg);
	if (!ra->data)
		goto err_free_bits;
	ra->bucket_mask = nb - 1;
	for (uint32_t i = 0; i < nb; i++)
		ra->buckets[i] = -1;
	for (uint32_t i = 0; i < cfg->slots; i++)
		ra->slots[i].next = i + 1 < cfg->slots ? (int32_t)i + 1 : -1;
	ra->free_head = 0;
	ra->fifo_head = ra->fifo_tail = -1;
	return ra;

err_free_bits:
	free(ra->bits);
err_free_buckets:
	free(ra->buckets);
err_free_slots:
	free(ra->slots);
err_free_ra:
	free(ra);
	return NULL;
}

void proto_reasm_destroy(struct proto_reasm *ra)
{
	if (!ra)
		return;
	free(ra->data);
	free(ra->bits);
	free(ra->buckets);
	free(ra->slots);
	free(ra);
}

static uint32_t key_hash(const struct proto_reasm *ra, uint64_t src, uint8_t type, uint64_t rid)
{
	uint64_t h = (src ^ (rid * 0x9e3779b97f4a7c15ull) ^ type) * 0xff51afd7ed558ccdull;

	return (uint32_t)(h >> 32) & ra->bucket_mask;
}

static int32_t lookup(const struct proto_reasm *ra, uint64_t src, const struct proto_msg *m)
{
	int32_t i = ra->buckets[key_hash(ra, src, m->type, m->request_id)];

	while (i >= 0) {
		const struct ra_slot *s = &ra->slots[i];

		if (s->src == src && s->hdr.request_id == m->request_id && s->hdr.type == m->type)
			return i;
		i = s->hnext;
	}
	return -1;
}

static void fifo_unlink(struct proto_reasm *ra, int32_t i)
{
	struct ra_slot *s = &ra->slots[i];

	if (s->prev >= 0)
		ra->slots[s->prev].next = s->next;
	else
		ra->fifo_head = s->next;
	if (s->next >= 0)
		ra->slots[s->next].prev = s->prev;
	else
		ra->fifo_tail = s->prev;
}

static void slot_free(struct proto_reasm *ra, int32_t i)
{
	struct ra_slot *s = &ra->slots[i];
	int32_t *pp = &ra->buckets[key_hash(ra, s->src, s->hdr.type, s->hdr.request_id)];

	while (*pp != i)
		pp = &ra->slots[*pp].hnext;
	*pp = s->hnext;
	if (s->state == SLOT_PARTIAL)
		fifo_unlink(ra, i);
	s->state = SLOT_FREE;
	s->next = ra->free_head;
	ra->free_head = i;
	ra->st.in_use--;
}

uint32_t proto_reasm_expire(struct proto_reasm *ra, uint64_t now_ns)
{
	uint32_t n = 0;

	while (ra->fifo_head >= 0) {
		struct ra_slot *s = &ra->slots[ra->fifo_head];

		if (now_ns < s->born_ns || now_ns - s->born_ns < ra->cfg.timeout_ns)
			break;
		slot_free(ra, ra->fifo_head);
		n++;
	}
	ra->st.expired += n;
	return n;
}

static int32_t slot_take(struct proto_reasm *ra, uint64_t src, const struct proto_msg *m,
			 uint64_t now_ns)
{
	int32_t i = ra->free_head;
	uint32_t b;
	struct ra_slot *s;

	if (i < 0)
		return -1;
	s = &ra->slots[i];
	ra->free_head = s->next;
	b = key_hash(ra, src, m->type, m->request_id);
	s->src = src;
	s->born_ns = now_ns;
	s->hdr = *m;
	s->hdr.frag_off = 0;
	s->hdr.frag_len = m->total_len > 0xffff ? 0xffff : (uint16_t)m->total_len;
	s->hdr.data = NULL;
	s->units = (m->total_len + UNIT - 1) / UNIT;
	s->have = 0;
	s->state = SLOT_PARTIAL;
	s->hnext = ra->buckets[b];
	ra->buckets[b] = i;
	s->prev = ra->fifo_tail;
	s->next = -1;
	if (ra->fifo_tail >= 0)
		ra->slots[ra->fifo_tail].next = i;
	else
		ra->fifo_head = i;
	ra->fifo_tail = i;
	memset(ra->bits + (size_t)i * ra->bm_words, 0, (s->units + 63) / 64 * sizeof(uint64_t));
	ra->st.in_use++;
	return i;
}

static bool same_tensor(const struct proto_tensor *a, const struct proto_tensor *b)
{
	return a->fmt == b->fmt && a->layer == b->layer && a->c == b->c && a->h == b->h &&
	       a->w == b->w && a->count == b->count && a->scale_bits == b->scale_bits &&
	       a->zero_point == b->zero_point;
}

static bool same_act(const struct proto_act *a, const struct proto_act *b)
{
	return !memcmp(a->reply_addr, b->reply_addr, sizeof(a->reply_addr)) &&
	       a->reply_port == b->reply_port && a->executors == b->executors &&
	       a->t_rx_ns == b->t_rx_ns && a->t_queue_ns == b->t_queue_ns &&
	       a->t_host_ns == b->t_host_ns && a->t_pack_ns == b->t_pack_ns;
}

static bool same_resp(const struct proto_resp *a, const struct proto_resp *b)
{
	return a->cls == b->cls && a->num_classes == b->num_classes &&
	       a->score_fmt == b->score_fmt && a->executors == b->executors &&
	       !memcmp(a->t_ns, b->t_ns, sizeof(a->t_ns));
}

/* Every field but the fragment's own (frag_off, frag_len, data) must match the first one. */
static bool consistent(const struct proto_msg *a, const struct proto_msg *b)
{
	if (a->hdr_len != b->hdr_len || a->model_id != b->model_id ||
	    a->total_len != b->total_len || a->flags != b->flags)
		return false;
	switch (a->type) {
	case PROTO_ACTIVATION:
		if (!same_act(&a->act, &b->act))
			return false;
		/* fall through */
	case PROTO_REQUEST:
		return same_tensor(&a->tensor, &b->tensor);
	case PROTO_RESPONSE:
		return same_resp(&a->resp, &b->resp);
	}
	return a->err.code == b->err.code && a->err.detail == b->err.detail;
}

static bool bit_test(const uint64_t *bm, uint32_t u)
{
	return (bm[u / 64] >> (u % 64)) & 1;
}

/* Units of [u0, u1) already held; sets them all when `set`. */
static uint32_t bits_range(uint64_t *bm, uint32_t u0, uint32_t u1, bool set)
{
	uint32_t n = 0;

	while (u0 < u1) {
		uint32_t w = u0 / 64, lo = u0 % 64;
		uint32_t hi = (u1 - w * 64) < 64 ? (u1 - w * 64) : 64;
		uint64_t mask = (hi == 64 ? ~0ull : (1ull << hi) - 1) & (~0ull << lo);

		n += (uint32_t)__builtin_popcountll(bm[w] & mask);
		if (set)
			bm[w] |= mask;
		u0 = w * 64 + hi;
	}
	return n;
}

static enum proto_ra_verdict count(struct proto_reasm *ra, enum proto_ra_verdict v)
{
	ra->st.verdicts[v]++;
	return v;
}

bool proto_reasm_whole(const struct proto_msg *frag, struct proto_reasm_msg *out)
{
	if (frag->frag_off || frag->frag_len != frag->total_len)
		return false;
	out->hdr = *frag;
	out->hdr.data = NULL;
	out->data = frag->data;
	out->len = frag->total_len;
	out->slot = -1;
	return true;
}

enum proto_ra_verdict proto_reasm_push(struct proto_reasm *ra, uint64_t src,
				       const struct proto_msg *frag, uint64_t now_ns,
				       struct proto_reasm_msg *out)
{
	uint32_t u0, u1, held, total = frag->total_len;
	uint8_t *buf;
	uint64_t *bm;
	struct ra_slot *s;
	int32_t i;

	if (total > ra->cfg.max_msg)
		return count(ra, PROTO_RA_TOO_LARGE);
	if (proto_reasm_whole(frag, out))
		return count(ra, PROTO_RA_COMPLETE);
	proto_reasm_expire(ra, now_ns);
	i = lookup(ra, src, frag);
	if (i < 0) {
		i = slot_take(ra, src, frag, now_ns);
		if (i < 0)
			return count(ra, PROTO_RA_TABLE_FULL);
	} else if (!consistent(&ra->slots[i].hdr, frag)) {
		return count(ra, PROTO_RA_INCONSISTENT);
	}
	s = &ra->slots[i];
	buf = ra->data + (size_t)i * ra->cfg.max_msg;
	bm = ra->bits + (size_t)i * ra->bm_words;
	u0 = frag->frag_off / UNIT;
	u1 = (frag->frag_off + frag->frag_len + UNIT - 1) / UNIT;
	held = bits_range(bm, u0, u1, false);
	if (held == u1 - u0) {
		if (memcmp(buf + frag->frag_off, frag->data, frag->frag_len))
			return count(ra, PROTO_RA_OVERLAP);
		return count(ra, PROTO_RA_DUPLICATE);
	}
	if (held) {
		for (uint32_t u = u0; u < u1; u++) {
			uint32_t off = u * UNIT;
			uint32_t len = total - off < UNIT ? total - off : UNIT;

			if (bit_test(bm, u) &&
			    memcmp(buf + off, frag->data + (off - frag->frag_off), len))
				return count(ra, PROTO_RA_OVERLAP);
		}
	}
	memcpy(buf + frag->frag_off, frag->data, frag->frag_len);
	bits_range(bm, u0, u1, true);
	s->have += (u1 - u0) - held;
	if (s->have < s->units)
		return count(ra, PROTO_RA_PARTIAL);
	fifo_unlink(ra, i);
	s->state = SLOT_DONE;
	out->hdr = s->hdr;
	out->data = buf;
	out->len = total;
	out->slot = i;
	return count(ra, PROTO_RA_COMPLETE);
}

void proto_reasm_release(struct proto_reasm *ra, struct proto_reasm_msg *msg)
{
	if (msg->slot >= 0 && (uint32_t)msg->slot < ra->cfg.slots &&
	    ra->slots[msg->slot].state == SLOT_DONE)
		slot_free(ra, msg->slot);
	msg->slot = -1;
	msg->data = NULL;
}

bool proto_reasm_holds(const struct proto_reasm *ra, uint64_t src, const struct proto_msg *frag)
{
	return lookup(ra, src, frag) >= 0;
}

void proto_reasm_stats(const struct proto_reasm *ra, struct proto_reasm_stats *st)
{
	*st = ra->st;
}
