// SPDX-License-Identifier: MIT
/*
 * splitnic-host: a worker lcore's loop, run to completion: its RX queue and the frames other
 * lcores hand it, NIC completions, one batch per model through the host stages, the hand-off to
 * the NIC or the answer, fallbacks, and its TX queue flushed.
 */
#include <errno.h>

#include <rte_ethdev.h>
#include <rte_prefetch.h>

#include "dpdk/idle.h"
#include "host/host_dpdk.h"

/* Give back what held a request's input: its frame, or its reassembly slot. */
static void release_input(struct host_worker *w, struct host_req *r)
{
	if (r->hold) {
		rte_pktmbuf_free(r->hold);
		r->hold = NULL;
	}
	if (r->ra_slot >= 0) {
		struct proto_reasm_msg msg = {.slot = r->ra_slot};

		proto_reasm_release(w->ra, &msg);
		r->ra_slot = -1;
	}
	r->in = NULL;
}

void host_req_done(struct host_worker *w, struct host_req *r)
{
	uint32_t *n = &w->slot_reqs[r->model];

	release_input(w, r);
	host_reqtab_put(&w->tab, r);
	__atomic_store_n(n, *n - 1, __ATOMIC_RELEASE);
}

/* The host's RESPONSE (held while the link is down: it has no way out), then the slot freed. */
static void answer(struct host_worker *w, struct host_req *r, uint64_t now)
{
	if (unlikely(!w->link_up)) {
		w->held[w->n_held++] = r;
		return;
	}
	host_tx_response(w, r, now);
	host_req_done(w, r);
}

static void stage_failed(struct host_worker *w, struct host_req *r, uint64_t now)
{
	host_req_error(w, r, PROTO_ERR_INTERNAL, 0, HOST_C_ERR_INTERNAL, now);
	host_req_done(w, r);
}

/* The NIC stage of the requests waiting for it, on the CPU, as one batch. */
static uint32_t run_fallbacks(struct host_worker *w, uint32_t k)
{
	struct host_app *a = w->a;
	const uint32_t n = w->nfb[k];
	uint64_t t0, t1;
	int ret;

	if (!n)
		return 0;
	t0 = host_now_ns(a);
	host_tx_flush_before(w, t0, w->st[k].last_ns[1]);
	ret = host_stage_run(&w->st[k], HOST_STAGE_BACK, w->fb[k], n);
	t1 = host_now_ns(a);
	w->st[k].last_ns[1] = t1 - t0;
	for (uint32_t i = 0; i < n; i++) {
		struct host_req *r = w->fb[k][i];

		if (unlikely(ret)) {
			stage_failed(w, r, t1);
			continue;
		}
		r->t_host = host_sat32((uint64_t)r->t_host + t1 - t0);
		r->t_done = t1;
		r->state = HOST_RS_SCORES;
		answer(w, r, t1);
	}
	w->fallbacks += n;
	w->compute_ns += t1 - t0;
	w->nfb[k] = 0;
	return n;
}

void host_fallback(struct host_worker *w, struct host_req *r, enum host_fb_reason why)
{
	const uint32_t k = r->model;

	w->c[HOST_C_FB_FORCED + why]++;
	r->state = HOST_RS_FALLBACK;
	w->fb[k][w->nfb[k]++] = r;
	if (w->nfb[k] == w->st[k].max_batch)
		run_fallbacks(w, k);
}

/* The activation at the split goes to the NIC executor, or to the fallback if it refuses. */
static void hand_off(struct host_worker *w, struct host_req *r)
{
	int ret;

	if (w->a->hm[r->model].mode == HOST_MODE_FALLBACK) {
		host_fallback(w, r, HOST_FB_FORCED);
		return;
	}
	ret = kexec_submit(&w->nic[r->model], r->act, 1, r->scores, (uint64_t)(uintptr_t)r);
	if (likely(!ret)) {
		r->state = HOST_RS_INFLIGHT;
		return;
	}
	host_fallback(w, r,
		      ret == -ENOLINK  ? HOST_FB_LINK_DOWN
		      : ret == -EAGAIN ? HOST_FB_SUSPECT
				       : HOST_FB_WINDOW);
}

/* One batch of model k's queue through its host stages (dynamic batching, conf/batch.h): what
 * is queued, at most max_batch, once the batch is full or its oldest request has waited
 * max_delay_ns; each request then handed off or answered. */
static uint32_t run_batch(struct host_worker *w, uint32_t k, uint64_t now)
{
	struct host_app *a = w->a;
	const struct host_model *hm = &a->hm[k];
	struct host_req *reqs[HOST_MAX_BATCH];
	struct host_rq *q = &w->q[k];
	const uint32_t max = w->st[k].max_batch;
	const uint32_t n = RTE_MIN(q->n, max);
	uint64_t t0, t1;
	int ret;

	if (!n || (n < max && now - q->r[q->head & q->mask]->t_queued < hm->batch.max_delay_ns))
		return 0;
	for (uint32_t i = 0; i < n; i++)
		reqs[i] = q->r[(q->head + i) & q->mask];
	q->head += n;
	q->n -= n;
	host_tx_flush_before(w, now, w->st[k].last_ns[0]);
	t0 = host_now_ns(a);
	ret = host_stage_run(&w->st[k],
			     hm->mode == HOST_MODE_HOST_ONLY ? HOST_STAGE_WHOLE : HOST_STAGE_FRONT,
			     reqs, n);
	t1 = host_now_ns(a);
	w->st[k].last_ns[0] = t1 - t0;
	for (uint32_t i = 0; i < n; i++) {
		struct host_req *r = reqs[i];

		release_input(w, r);
		r->t_queue = host_sat32(t0 - r->t_queued);
		r->t_host = host_sat32(t1 - t0);
		r->t_done = t1;
		host_hist_add(&w->h[w->a->slot_hist[k]][HOST_H_QUEUE], r->t_queue);
		if (unlikely(ret)) {
			stage_failed(w, r, t1);
		} else if (hm->mode == HOST_MODE_HOST_ONLY) {
			r->state = HOST_RS_SCORES;
			answer(w, r, t1);
		} else {
			r->state = HOST_RS_ACT;
			hand_off(w, r);
		}
	}
	w->batches++;
	w->reqs += n;
	w->compute_ns += t1 - t0;
	host_hist_add(&w->h[w->a->slot_hist[k]][HOST_H_COMPUTE], t1 - t0);
	return n;
}

/* Completions of model k's NIC executor: answered by the NIC, or to the fallback. */
static uint32_t nic_completions(struct host_worker *w, uint32_t k, uint64_t now)
{
	struct kexec_done d[HOST_BURST];
	uint32_t n;

	host_remote_set_link(&w->nic[k], w->link_up);
	n = kexec_poll(&w->nic[k], d, HOST_BURST);
	for (uint32_t i = 0; i < n; i++) {
		struct host_req *r = (struct host_req *)(uintptr_t)d[i].tag;

		if (likely(!d[i].status)) {
			w->c[HOST_C_ANSWERED_NIC]++;
			host_hist_add(&w->h[w->a->slot_hist[k]][HOST_H_NIC_RTT], now - r->t_sent);
			host_hist_add(&w->h[w->a->slot_hist[k]][HOST_H_TOTAL], now - r->t_in);
			host_req_done(w, r);
			continue;
		}
		host_fallback(w, r,
			      d[i].status == -ETIMEDOUT ? HOST_FB_TIMEOUT
			      : d[i].status == -EIO	? HOST_FB_NIC_ERROR
							: HOST_FB_LINK_DOWN);
	}
	return n;
}

static uint32_t rx_ring(struct host_worker *w, struct rte_ring *ring, enum host_src src,
			uint64_t now)
{
	struct rte_mbuf *pkts[HOST_BURST];
	uint32_t n = rte_ring_sc_dequeue_burst(ring, (void **)pkts, HOST_BURST, NULL);

	for (uint32_t i = 0; i < n; i++)
		host_rx_frame(w, pkts[i], src, now);
	return n;
}

/* Requests waiting for this worker's next turn: a queue or a fallback batch not empty. */
static bool more_work(const struct host_worker *w)
{
	for (uint32_t k = 0; k < host_slots(w->a); k++)
		if (host_slot_on(w->a, k) && (w->q[k].n || w->nfb[k]))
			return true;
	return false;
}

uint32_t host_worker_step(struct host_worker *w, uint64_t now)
{
	struct host_app *a = w->a;
	struct rte_mbuf *pkts[HOST_BURST];
	uint32_t work = 0, slots;
	uint16_t n;

	/* this turn sees the models as of this epoch (dpdk_reload.c waits for it) */
	__atomic_store_n(&w->model_epoch, __atomic_load_n(&a->epoch, __ATOMIC_ACQUIRE),
			 __ATOMIC_RELEASE);
	slots = host_slots(a);
	w->io = host_port_enter(w);
	if (w->io && w->rxq >= 0) {
		n = rte_eth_rx_burst(a->port, (uint16_t)w->rxq, pkts, HOST_BURST);
		for (uint16_t i = 0; i < n; i++) {
			if (i + 1 < n)
				rte_prefetch0(rte_pktmbuf_mtod(pkts[i + 1], void *));
			host_rx_frame(w, pkts[i], HOST_SRC_PORT, now);
		}
		work += n;
	}
	work += rx_ring(w, w->in, HOST_SRC_SPREAD, now);
	if (w->from_nic)
		work += rx_ring(w, w->from_nic, HOST_SRC_NIC, now);
	for (uint32_t k = 0; k < slots; k++) {
		if (!host_slot_on(a, k))
			continue;
		if (w->nic[k].priv)
			work += nic_completions(w, k, now);
		work += run_batch(w, k, host_now_ns(a));
		work += run_fallbacks(w, k);
	}
	if (unlikely(w->link_up && w->n_held)) {
		now = host_now_ns(a);
		for (uint32_t i = 0; i < w->n_held; i++) {
			host_tx_response(w, w->held[i], now);
			host_req_done(w, w->held[i]);
		}
		w->n_held = 0;
	}
	host_tx_flush(w, host_now_ns(a), more_work(w));
	if (unlikely(now - w->reasm_checked > HOST_REASM_CHECK_NS)) {
		w->reasm_checked = now;
		proto_reasm_expire(w->ra, now);
	}
	return work;
}

int host_worker_main(void *arg)
{
	struct host_worker *w = arg;
	struct host_app *a = w->a;
	struct dpdk_idle idle;

	dpdk_idle_init(&idle, a->o.run.poll, a->o.run.idle_sleep_us);
	while (!a->workers_stop)
		dpdk_idle_after(&idle, host_worker_step(w, host_now_ns(a)));
	return 0;
}
