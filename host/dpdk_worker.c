// SPDX-License-Identifier: MIT
/*
 * splitnic-host: the host stages on the worker lcores: batching, fallback execution.
 */
#include "host/host_dpdk.h"

uint32_t host_worker_step(struct host_app *a, struct host_worker *w)
{
	struct host_req *reqs[HOST_MAX_BATCH];
	uint32_t work = 0;

	for (uint32_t k = 0; k < a->n_models; k++) {
		const struct host_model *hm = &a->hm[k];
		struct host_stage *st = &w->st[k];
		uint64_t t0, t1;
		uint32_t n, room;

		n = rte_ring_dequeue_burst(a->fb[k], (void **)reqs, a->o.batch, NULL);
		if (n) {
			t0 = host_now_ns(a);
			if (unlikely(host_stage_run(st, HOST_STAGE_BACK, reqs, n)))
				for (uint32_t i = 0; i < n; i++)
					reqs[i]->failed = 1;
			t1 = host_now_ns(a);
			for (uint32_t i = 0; i < n; i++) {
				reqs[i]->t_host = host_sat32((uint64_t)reqs[i]->t_host + t1 - t0);
				reqs[i]->t_done = t1;
				reqs[i]->state = HOST_RS_SCORES;
			}
			w->fallbacks += n;
			w->compute_ns += t1 - t0;
			rte_ring_mp_enqueue_bulk(a->done, (void **)reqs, n, NULL);
			work += n;
		}
		room = a->o.batch - w->npend[k];
		if (room)
			w->npend[k] += rte_ring_dequeue_burst(
			    a->q[k], (void **)(w->pend[k] + w->npend[k]), room, NULL);
		n = w->npend[k];
		if (!n)
			continue;
		t0 = host_now_ns(a);
		if (n < a->o.batch && t0 - w->pend[k][0]->t_queued < a->o.batch_wait_ns)
			continue;
		if (unlikely(host_stage_run(
			st, hm->mode == HOST_MODE_HOST_ONLY ? HOST_STAGE_WHOLE : HOST_STAGE_FRONT,
			w->pend[k], n)))
			for (uint32_t i = 0; i < n; i++)
				w->pend[k][i]->failed = 1;
		t1 = host_now_ns(a);
		for (uint32_t i = 0; i < n; i++) {
			struct host_req *r = w->pend[k][i];

			r->t_queue = host_sat32(t0 - r->t_queued);
			r->t_host = host_sat32(t1 - t0);
			r->t_done = t1;
			r->state = hm->mode == HOST_MODE_HOST_ONLY ? HOST_RS_SCORES : HOST_RS_ACT;
		}
		w->batches++;
		w->reqs += n;
		w->compute_ns += t1 - t0;
		host_hist_add(&w->h_compute, t1 - t0);
		rte_ring_mp_enqueue_bulk(a->done, (void **)w->pend[k], n, NULL);
		w->npend[k] = 0;
		work += n;
	}
	return work;
}

int host_worker_main(void *arg)
{
	struct host_worker *w = arg;
	struct host_app *a = host_g;
	uint32_t idle = 0;

	while (!a->workers_stop) {
		if (host_worker_step(a, w)) {
			idle = 0;
		} else if (a->o.idle_sleep_us && ++idle > 1000) {
			rte_delay_us_sleep(a->o.idle_sleep_us);
		}
	}
	return 0;
}
