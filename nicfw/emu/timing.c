// SPDX-License-Identifier: MIT
/*
 * The timing model: one request's traces replayed event by event. A thread runs when it is
 * ready and its ME's pipeline is free, holds the pipeline until its next yield (memory wait,
 * notification wait, packet engine), and pays ctx_swap_cycles on resuming. Memory units are
 * FIFO servers (bandwidth) plus a latency; EMEM lines go through an LRU cache whose misses
 * also queue on DRAM. Times are in cycles (double: bandwidths are fractional).
 */
#include <assert.h>
#include <stdlib.h>
#include <string.h>

#include "nicfw/emu/emu_impl.h"

#define RP_SIGQ	  4 /* notifications of one kind a thread can have pending */
#define RP_MEMSIG 4

struct rp_thread {
	size_t pos;
	int blocked; /* notification waited for, or -1 */
	double memdone[RP_MEMSIG];
	double arr[NICFW_SIG__COUNT][RP_SIGQ];
	uint32_t ah[NICFW_SIG__COUNT], at[NICFW_SIG__COUNT];
	double active_since, active, end;
};

/* Ties in time go by push order: an ME serves the threads waiting for it in turn (round robin,
 * as the ME's context arbiter), never the lowest-numbered first. */
struct rp_ev {
	double t;
	uint64_t seq;
	uint32_t id;
};

struct emu_replay {
	struct rp_thread *th;
	double *me_free, *me_busy;
	struct rp_ev *heap;
	uint32_t nh;
	uint64_t seq;
	double unit_free[NICFW_MEM__COUNT], dram_free;
	double clock; /* end of the previous request */
};

struct emu_replay *emu_replay_create(const struct nicfw_emu *e)
{
	struct emu_replay *rp = calloc(1, sizeof(*rp));

	if (!rp)
		return NULL;
	rp->th = calloc(e->n_threads, sizeof(*rp->th));
	rp->heap = calloc(e->n_threads, sizeof(*rp->heap));
	rp->me_free = calloc(e->n_mes, sizeof(double));
	rp->me_busy = calloc(e->n_mes, sizeof(double));
	if (!rp->th || !rp->heap || !rp->me_free || !rp->me_busy) {
		emu_replay_free(rp);
		return NULL;
	}
	return rp;
}

void emu_replay_free(struct emu_replay *rp)
{
	if (!rp)
		return;
	free(rp->th);
	free(rp->heap);
	free(rp->me_free);
	free(rp->me_busy);
	free(rp);
}

static bool ev_before(const struct rp_ev *a, const struct rp_ev *b)
{
	return a->t < b->t || (a->t == b->t && a->seq < b->seq);
}

static void heap_push(struct emu_replay *rp, double t, uint32_t id)
{
	uint32_t i = rp->nh++;

	rp->heap[i] = (struct rp_ev){t, rp->seq++, id};
	while (i && ev_before(&rp->heap[i], &rp->heap[(i - 1) / 2])) {
		struct rp_ev tmp = rp->heap[i];

		rp->heap[i] = rp->heap[(i - 1) / 2];
		rp->heap[(i - 1) / 2] = tmp;
		i = (i - 1) / 2;
	}
}

static struct rp_ev heap_pop(struct emu_replay *rp)
{
	struct rp_ev top = rp->heap[0];
	uint32_t i = 0;

	rp->heap[0] = rp->heap[--rp->nh];
	for (;;) {
		uint32_t l = 2 * i + 1, r = l + 1, m = i;
		struct rp_ev tmp;

		if (l < rp->nh && ev_before(&rp->heap[l], &rp->heap[m]))
			m = l;
		if (r < rp->nh && ev_before(&rp->heap[r], &rp->heap[m]))
			m = r;
		if (m == i)
			break;
		tmp = rp->heap[i];
		rp->heap[i] = rp->heap[m];
		rp->heap[m] = tmp;
		i = m;
	}
	return top;
}

static double max_d(double a, double b)
{
	return a > b ? a : b;
}

/* Look up (and fill) the EMEM lines of [byte, byte + len); returns the misses. */
static uint32_t cache_access(struct emu_cache *c, uint64_t byte, uint64_t len,
			     struct nicfw_emu_report *rep)
{
	uint32_t misses = 0;

	for (uint64_t line = byte / 64; line <= (byte + len - 1) / 64; line++) {
		uint64_t *tag = c->tag + (line % c->sets) * c->ways;
		uint64_t *stamp = c->stamp + (line % c->sets) * c->ways;
		uint32_t victim = 0, w;

		for (w = 0; w < c->ways; w++) {
			if (tag[w] == line + 1)
				break;
			if (stamp[w] < stamp[victim])
				victim = w;
		}
		if (w == c->ways) {
			misses++;
			w = victim;
			tag[w] = line + 1;
		}
		stamp[w] = ++c->clock;
	}
	rep->emem_hits += (byte + len - 1) / 64 - byte / 64 + 1 - misses;
	rep->emem_misses += misses;
	return misses;
}

/* A memory command issued at t from `island`; returns when its data is back. */
static double rp_mem(struct nicfw_emu *e, const struct emu_rec *r, bool rd, double t,
		     uint32_t island, struct nicfw_emu_report *rep)
{
	static const uint32_t lat_p[] = {NICFW_EP_EMEM_LAT, NICFW_EP_CTM_LAT, NICFW_EP_IMEM_LAT};
	static const uint32_t bw_p[] = {NICFW_EP_EMEM_BW, NICFW_EP_CTM_BW, NICFW_EP_IMEM_BW};
	struct emu_replay *rp = e->rp;
	const double *p = e->p.v;
	const uint64_t bytes = (uint64_t)r->words * 8;
	double lat = p[lat_p[r->mem]], svc = (double)bytes / p[bw_p[r->mem]];
	double start = max_d(t, rp->unit_free[r->mem]), done;

	if (r->mem == NICFW_MEM_CTM && island != e->t[0].island)
		lat += p[NICFW_EP_XISLAND];
	rp->unit_free[r->mem] = start + svc;
	done = start + svc + lat;
	if (r->mem == NICFW_MEM_EMEM) {
		uint32_t miss = cache_access(&e->cache, r->off * 8, bytes, rep);

		if (miss) {
			double d = max_d(start, rp->dram_free),
			       s2 = miss * 64.0 / p[NICFW_EP_DRAM_BW];

			rp->dram_free = d + s2;
			done = max_d(done, d + s2 + p[NICFW_EP_DRAM_LAT] + lat);
		}
	}
	if (rd)
		rep->rd_bytes[r->mem] += bytes;
	else
		rep->wr_bytes[r->mem] += bytes;
	return done;
}

static void rp_deliver(struct emu_replay *rp, uint32_t dst, uint32_t sig, double t)
{
	struct rp_thread *d = &rp->th[dst];

	assert(d->at[sig] - d->ah[sig] < RP_SIGQ);
	d->arr[sig][d->at[sig]++ % RP_SIGQ] = t;
	if (d->blocked == (int)sig) {
		d->blocked = -1;
		heap_push(rp, t, dst);
	}
}

/*
 * Run thread id from `now` until it yields; returns the time it gave the pipeline back.
 * *layer_begin tracks the dispatcher's current layer for the per-layer figures.
 */
static double rp_run(struct nicfw_emu *e, uint32_t id, double now, double *layer_begin,
		     struct nicfw_emu_report *rep)
{
	struct emu_replay *rp = e->rp;
	struct rp_thread *T = &rp->th[id];
	const struct emu_thread *et = &e->t[id];
	const double *p = e->p.v;

	for (;;) {
		const struct emu_rec *r;
		double ready;

		if (T->pos == et->tr.n) {
			T->end = now;
			return now;
		}
		r = &et->tr.rec[T->pos];
		switch (r->kind) {
		case ER_WORK:
			now += r->cycles;
			break;
		case ER_READ:
			now += p[NICFW_EP_CMD_ISSUE];
			T->memdone[r->sig] =
			    max_d(T->memdone[r->sig], rp_mem(e, r, true, now, et->island, rep));
			break;
		case ER_WRITE:
			now += p[NICFW_EP_CMD_ISSUE];
			rp_mem(e, r, false, now, et->island, rep);
			break;
		case ER_WAITMEM:
			ready = now;
			for (uint32_t b = 0; b < RP_MEMSIG; b++)
				if (r->words & (1u << b))
					ready = max_d(ready, T->memdone[b]);
			T->pos++;
			heap_push(rp, ready, id);
			return now;
		case ER_SEND:
			now += p[NICFW_EP_CMD_ISSUE];
			rp_deliver(rp, r->words, r->sig,
				   now + p[NICFW_EP_SIG_HOP] +
				       (e->t[r->words].island != et->island
					    ? p[NICFW_EP_SIG_XISLAND]
					    : 0));
			break;
		case ER_DELAY:
			T->pos++;
			heap_push(rp, now + r->cycles, id);
			return now;
		case ER_WAITSIG:
			if (T->active_since >= 0) {
				T->active += now - T->active_since;
				T->active_since = -1;
			}
			if (T->ah[r->sig] == T->at[r->sig]) {
				T->blocked = r->sig;
				return now;
			}
			ready = T->arr[r->sig][T->ah[r->sig] % RP_SIGQ];
			if (ready > now) {
				heap_push(rp, ready, id);
				return now;
			}
			T->ah[r->sig]++;
			if (r->sig == NICFW_SIG_START)
				T->active_since = now;
			if (id == 0 && r->sig == NICFW_SIG_END &&
			    rep->n_layers < NICFW_MAX_STAGES) {
				rep->layer_us[rep->n_layers++] = now - *layer_begin;
				*layer_begin = now;
			}
			break;
		}
		T->pos++;
	}
}

void emu_replay_run(struct nicfw_emu *e, struct nicfw_emu_report *rep)
{
	struct emu_replay *rp = e->rp;
	const double *p = e->p.v;
	const double t0 = rp->clock, mhz = p[NICFW_EP_CLOCK_MHZ];
	double layer_begin = t0 + p[NICFW_EP_PKT_RX], end = t0, lat, active = 0, busy = 0;
	uint32_t k = 0;

	memset(rep, 0, sizeof(*rep));
	memset(rp->th, 0, e->n_threads * sizeof(*rp->th));
	for (uint32_t m = 0; m < e->n_mes; m++) {
		rp->me_free[m] = t0;
		rp->me_busy[m] = 0;
	}
	for (uint32_t m = 0; m < NICFW_MEM__COUNT; m++)
		rp->unit_free[m] = max_d(rp->unit_free[m], t0);
	rp->dram_free = max_d(rp->dram_free, t0);
	rp->nh = 0;
	for (uint32_t i = 0; i < e->n_threads; i++) {
		rp->th[i].blocked = -1;
		rp->th[i].active_since = -1;
		rp->th[i].end = t0;
		heap_push(rp, t0, i);
	}
	while (rp->nh) {
		struct rp_ev ev = heap_pop(rp);
		const uint32_t me = e->t[ev.id].me;
		double start = max_d(ev.t, rp->me_free[me]), stop;

		if (start > ev.t) {
			heap_push(rp, start, ev.id);
			continue;
		}
		stop = rp_run(e, ev.id, start + (rp->th[ev.id].pos ? p[NICFW_EP_CTX_SWAP] : 0),
			      &layer_begin, rep);
		rp->me_busy[me] += stop - start;
		rp->me_free[me] = stop;
	}
	for (uint32_t i = 0; i < e->n_threads; i++) {
		end = max_d(end, rp->th[i].end);
		if (i)
			active += rp->th[i].active;
	}
	for (uint32_t m = 0; m < e->n_mes; m++)
		busy += rp->me_busy[m];
	lat = end - t0;
	rp->clock = end;
	for (uint32_t i = 0; i < rep->n_layers; i++) {
		rep->layer_us[i] /= mhz;
		while (k < e->ch.n_stages && e->ch.stage[k].kind != NICFW_STAGE_BDENSE &&
		       e->ch.stage[k].kind != NICFW_STAGE_BDENSE_U8)
			k++;
		rep->layer_op[i] = k < e->ch.n_stages ? e->ch.stage[k++].op : 0;
	}
	rep->latency_us = lat / mhz;
	rep->rx_us = p[NICFW_EP_PKT_RX] / mhz;
	rep->tx_us = p[NICFW_EP_PKT_TX] / mhz;
	rep->exec_active = lat > 0 ? active / (lat * (e->n_threads - 1)) : 0;
	rep->me_busy = lat > 0 ? busy / (lat * e->n_mes) : 0;
}
