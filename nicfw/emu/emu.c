// SPDX-License-Identifier: MIT
/*
 * Platform `emu`: the HAL over host memory. Each call does the access for real (the results
 * are the firmware's) and appends a record to the calling thread's trace (the time is the
 * replay's, timing.c). Notifications are handled in FIFO order after the sender's handler
 * returns, which is a valid order for the chain: every handler runs to its end.
 */
#include <assert.h>
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "nicfw/emu/emu_impl.h"

static struct emu_thread *emu_th(struct nicfw_thread *th)
{
	return (struct emu_thread *)th;
}

static struct emu_rec *trace_add(struct emu_thread *t, uint8_t kind)
{
	struct emu_trace *tr = &t->tr;

	if (tr->n == tr->cap) {
		size_t cap = tr->cap ? 2 * tr->cap : 1024;
		struct emu_rec *r = realloc(tr->rec, cap * sizeof(*r));

		if (!r) {
			tr->oom = true;
			return &tr->sink;
		}
		tr->rec = r;
		tr->cap = cap;
	}
	tr->rec[tr->n] = (struct emu_rec){.kind = kind};
	return &tr->rec[tr->n++];
}

static void emu_check(const struct nicfw_emu *e, enum nicfw_mem mem, uint64_t off, uint32_t words)
{
	assert(mem < NICFW_MEM__COUNT && words && off + words <= e->ch.need[mem]);
}

static void emu_read(struct nicfw_thread *th, enum nicfw_mem mem, uint64_t off, uint64_t *dst,
		     uint32_t words, uint32_t sig)
{
	struct emu_thread *t = emu_th(th);
	struct emu_rec *r;

	emu_check(t->emu, mem, off, words);
	memcpy(dst, t->emu->mem[mem] + off, words * sizeof(*dst));
	r = trace_add(t, ER_READ);
	r->mem = (uint8_t)mem;
	r->sig = (uint8_t)sig;
	r->words = words;
	r->off = off;
}

static void emu_write(struct nicfw_thread *th, enum nicfw_mem mem, uint64_t off,
		      const uint64_t *src, uint32_t words)
{
	struct emu_thread *t = emu_th(th);
	struct emu_rec *r;

	emu_check(t->emu, mem, off, words);
	memcpy(t->emu->mem[mem] + off, src, words * sizeof(*src));
	r = trace_add(t, ER_WRITE);
	r->mem = (uint8_t)mem;
	r->words = words;
	r->off = off;
}

static void emu_atomic_or(struct nicfw_thread *th, enum nicfw_mem mem, uint64_t off, uint64_t bits)
{
	struct emu_thread *t = emu_th(th);
	struct emu_rec *r;

	emu_check(t->emu, mem, off, 1);
	t->emu->mem[mem][off] |= bits;
	r = trace_add(t, ER_WRITE);
	r->mem = (uint8_t)mem;
	r->words = 1;
	r->off = off;
}

static void emu_wait(struct nicfw_thread *th, uint32_t mask)
{
	trace_add(emu_th(th), ER_WAITMEM)->words = mask;
}

static void emu_sig_send(struct nicfw_thread *th, uint32_t dst, enum nicfw_sig sig)
{
	struct emu_thread *t = emu_th(th);
	struct nicfw_emu *e = t->emu;
	struct emu_rec *r;

	assert(dst < e->n_threads && e->q_tail - e->q_head < e->q_cap);
	e->q[e->q_tail++ % e->q_cap] = (struct emu_sigmsg){dst, sig};
	r = trace_add(t, ER_SEND);
	r->sig = (uint8_t)sig;
	r->words = dst;
}

static void emu_work(struct nicfw_thread *th, enum nicfw_work kind, uint64_t count)
{
	struct emu_thread *t = emu_th(th);
	double c = t->emu->p.v[NICFW_EP_WORK + kind] * (double)count;
	struct emu_trace *tr = &t->tr;

	if (!count)
		return;
	if (tr->n && tr->rec[tr->n - 1].kind == ER_WORK)
		tr->rec[tr->n - 1].cycles += c;
	else
		trace_add(t, ER_WORK)->cycles = c;
}

static void emu_pkt_tx(struct nicfw_thread *th, uint64_t off, uint32_t words)
{
	struct emu_thread *t = emu_th(th);
	struct nicfw_emu *e = t->emu;

	emu_check(e, NICFW_MEM_IMEM, off, words);
	assert(words == e->ch.classes);
	memcpy(e->resp, e->mem[NICFW_MEM_IMEM] + off, words * sizeof(double));
	e->resp_sent = true;
	trace_add(t, ER_DELAY)->cycles = e->p.v[NICFW_EP_PKT_TX];
}

static const struct nicfw_hal_ops emu_ops = {
    .read = emu_read,
    .write = emu_write,
    .atomic_or = emu_atomic_or,
    .wait = emu_wait,
    .sig_send = emu_sig_send,
    .work = emu_work,
    .pkt_tx = emu_pkt_tx,
};

static int emu_cache_init(struct emu_cache *c, const struct nicfw_emu_params *p)
{
	uint64_t lines = (uint64_t)p->v[NICFW_EP_CACHE_KIB] * 1024 / 64;

	c->ways = (uint32_t)p->v[NICFW_EP_CACHE_WAYS];
	c->sets = (uint32_t)(lines / c->ways ? lines / c->ways : 1);
	c->tag = calloc((size_t)c->sets * c->ways, sizeof(*c->tag));
	c->stamp = calloc((size_t)c->sets * c->ways, sizeof(*c->stamp));
	return c->tag && c->stamp ? 0 : -ENOMEM;
}

void emu_serve_free(struct emu_serve *sv)
{
	if (!sv)
		return;
	for (uint32_t k = 0; k < NICFW_MEM__COUNT; k++)
		free(sv->mem[k]);
	free(sv->t);
	free(sv);
}

void nicfw_emu_free(struct nicfw_emu *e)
{
	if (!e)
		return;
	emu_replay_free(e->rp);
	emu_serve_free(e->sv);
	for (uint32_t i = 0; e->t && i < e->n_threads; i++)
		free(e->t[i].tr.rec);
	free(e->t);
	free(e->q);
	free(e->resp);
	free(e->cache.tag);
	free(e->cache.stamp);
	for (uint32_t m = 0; m < NICFW_MEM__COUNT; m++)
		free(e->mem[m]);
	free(e);
}

/* Placement: dispatcher alone on ME 0, executor e on ME 1 + e / exec_per_me. */
static int emu_place(struct nicfw_emu *e, char *err, size_t errlen)
{
	const uint32_t per_me = (uint32_t)e->p.v[NICFW_EP_EXEC_PER_ME];
	const uint32_t per_island = (uint32_t)e->p.v[NICFW_EP_MES_PER_ISLAND];
	const uint32_t mes = (uint32_t)e->p.v[NICFW_EP_MES];

	e->n_mes = 2 + (e->ch.n_exec - 1) / per_me;
	if (per_me > e->p.v[NICFW_EP_THREADS_PER_ME] || e->n_mes > mes) {
		snprintf(err, errlen,
			 "%u executors at %u per ME (of %.0f threads) need %u MEs; the NIC has "
			 "%u",
			 e->ch.n_exec, per_me, e->p.v[NICFW_EP_THREADS_PER_ME], e->n_mes, mes);
		return -EINVAL;
	}
	for (uint32_t i = 0; i < e->n_threads; i++) {
		struct emu_thread *t = &e->t[i];

		t->th = (struct nicfw_thread){&emu_ops, i};
		t->emu = e;
		t->me = i ? 1 + (i - 1) / per_me : 0;
		t->island = t->me / per_island;
	}
	return 0;
}

struct nicfw_emu *nicfw_emu_create(const struct model *m, uint32_t first, uint32_t n_exec,
				   const struct nicfw_emu_params *p, char *err, size_t errlen)
{
	struct nicfw_emu *e = calloc(1, sizeof(*e));

	if (!e) {
		snprintf(err, errlen, "out of memory");
		return NULL;
	}
	e->p = *p;
	if (nicfw_chain_init(&e->ch, m, first, n_exec, NICFW_LAYOUT_RECORDS, err, errlen))
		goto err_free;
	e->n_threads = n_exec + 1;
	e->q_cap = 2 * e->n_threads + 2;
	e->t = calloc(e->n_threads, sizeof(*e->t));
	e->q = calloc(e->q_cap, sizeof(*e->q));
	e->resp = calloc(e->ch.classes, sizeof(double));
	if (!e->t || !e->q || !e->resp)
		goto err_nomem;
	if (emu_place(e, err, errlen))
		goto err_free;
	for (uint32_t k = 0; k < NICFW_MEM__COUNT; k++) {
		e->mem[k] = calloc(e->ch.need[k], sizeof(uint64_t));
		if (!e->mem[k])
			goto err_nomem;
	}
	if (emu_cache_init(&e->cache, p))
		goto err_nomem;
	e->rp = emu_replay_create(e);
	if (!e->rp)
		goto err_nomem;
	nicfw_chain_load(&e->ch, m, e->mem[NICFW_MEM_EMEM]);
	return e;

err_nomem:
	snprintf(err, errlen, "out of memory for the emulated NIC (%llu EMEM words)",
		 (unsigned long long)e->ch.need[NICFW_MEM_EMEM]);
err_free:
	nicfw_emu_free(e);
	return NULL;
}

const struct nicfw_chain *nicfw_emu_chain(const struct nicfw_emu *e)
{
	return &e->ch;
}

void emu_run_signals(struct nicfw_emu *e, struct nicfw_chain *ch, void *t, size_t stride)
{
	while (e->q_head != e->q_tail) {
		struct emu_sigmsg msg = e->q[e->q_head++ % e->q_cap];
		struct nicfw_thread *th = (struct nicfw_thread *)((char *)t + msg.dst * stride);

		if (th->ops == &emu_ops)
			trace_add(emu_th(th), ER_WAITSIG)->sig = (uint8_t)msg.sig;
		nicfw_chain_signal(th, ch, msg.sig);
	}
}

int nicfw_emu_infer(struct nicfw_emu *e, const void *in, double *scores,
		    struct nicfw_emu_report *rep)
{
	uint64_t *pkt = e->mem[NICFW_MEM_CTM] + e->ch.ctm_pkt;
	struct nicfw_emu_report tmp;
	int ret;

	for (uint32_t i = 0; i < e->n_threads; i++) {
		e->t[i].tr.n = 0;
		e->t[i].tr.oom = false;
	}
	pkt[(e->ch.in_bytes + 7) / 8 - 1] = 0;
	memcpy(pkt, in, e->ch.in_bytes);
	e->resp_sent = false;
	e->q_head = e->q_tail = 0;
	trace_add(&e->t[0], ER_DELAY)->cycles = e->p.v[NICFW_EP_PKT_RX];
	ret = nicfw_chain_request(&e->t[0].th, &e->ch);
	if (ret)
		return ret;
	emu_run_signals(e, &e->ch, e->t, sizeof(*e->t));
	for (uint32_t i = 0; i < e->n_threads; i++)
		if (e->t[i].tr.oom)
			return -ENOMEM;
	if (!e->resp_sent)
		return -EIO;
	memcpy(scores, e->resp, e->ch.classes * sizeof(double));
	emu_replay_run(e, rep ? rep : &tmp);
	return 0;
}
