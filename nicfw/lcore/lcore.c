// SPDX-License-Identifier: MIT
/*
 * Platform `lcore`: HAL over plain memory (the chain in its DIRECT layout: whole slices on the
 * CPU kernels), notifications over one rte_ring per runner, or a plain FIFO of the runner's own
 * when sender and receiver are on the same runner.
 */
#include <errno.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include <rte_common.h>
#include <rte_errno.h>
#include <rte_launch.h>
#include <rte_lcore.h>
#include <rte_pause.h>
#include <rte_ring.h>

#include "nicfw/lcore/lcore.h"

#define LC_SIG_REQUEST NICFW_SIG__COUNT /* platform-internal: run nicfw_chain_request */
#define LC_BURST       32

struct lc_thread {
	struct nicfw_thread th; /* first: the HAL hands it back to us */
	struct nicfw_lcore *p;
	uint32_t chain;
	uint32_t runner;
} __rte_cache_aligned;

struct lc_chain {
	struct nicfw_chain ch;
	uint64_t *mem[NICFW_MEM__COUNT];
	struct lc_thread *t; /* n_exec + 1 */
	double *resp;
	uint32_t done; /* written by pkt_tx (release), read by poll (acquire) */
	bool busy;     /* submitted and not yet collected: packet thread only */
} __rte_cache_aligned;

struct lc_runner {
	struct rte_ring *ring; /* from other runners and the packet thread */
	uintptr_t *local;      /* from handlers on this runner: only this runner touches it */
	uint32_t l_head, l_tail, l_mask;
	unsigned lcore; /* RTE_MAX_LCORE: inline */
	struct nicfw_lcore *p;
} __rte_cache_aligned;

struct nicfw_lcore {
	struct lc_chain chain[NICFW_LCORE_MAX_CHAINS];
	uint32_t n_chains;
	struct lc_runner run[NICFW_LCORE_MAX_RUNNERS];
	uint32_t n_runners;
	bool inline_runner, started;
	volatile uint32_t stop;
};

static inline uintptr_t lc_msg(uint32_t chain, uint32_t thread, uint32_t sig)
{
	return (uintptr_t)chain << 24 | (uintptr_t)thread << 4 | sig;
}

static inline struct lc_thread *lc_th(struct nicfw_thread *th)
{
	return (struct lc_thread *)th;
}

static void lc_read(struct nicfw_thread *th, enum nicfw_mem mem, uint64_t off, uint64_t *dst,
		    uint32_t words, uint32_t sig)
{
	struct lc_thread *t = lc_th(th);

	memcpy(dst, t->p->chain[t->chain].mem[mem] + off, words * sizeof(*dst));
}

static void lc_write(struct nicfw_thread *th, enum nicfw_mem mem, uint64_t off, const uint64_t *src,
		     uint32_t words)
{
	struct lc_thread *t = lc_th(th);

	memcpy(t->p->chain[t->chain].mem[mem] + off, src, words * sizeof(*src));
}

static void lc_atomic_or(struct nicfw_thread *th, enum nicfw_mem mem, uint64_t off, uint64_t bits)
{
	struct lc_thread *t = lc_th(th);

	__atomic_fetch_or(t->p->chain[t->chain].mem[mem] + off, bits, __ATOMIC_RELAXED);
}

static void lc_wait(struct nicfw_thread *th, uint32_t mask)
{
}

static void lc_post(struct nicfw_lcore *p, uint32_t chain, uint32_t dst, uint32_t sig)
{
	struct lc_runner *r = &p->run[p->chain[chain].t[dst].runner];
	void *msg = (void *)lc_msg(chain, dst, sig);

	while (unlikely(rte_ring_mp_enqueue(r->ring, msg)))
		rte_pause();
}

/* A handler on runner R notifying a thread of R: R's own FIFO, no atomics (handlers of one
 * runner run one after the other on its lcore). */
static void lc_sig_send(struct nicfw_thread *th, uint32_t dst, enum nicfw_sig sig)
{
	struct lc_thread *t = lc_th(th);
	struct lc_runner *r = &t->p->run[t->runner];

	if (t->p->chain[t->chain].t[dst].runner != t->runner) {
		lc_post(t->p, t->chain, dst, sig);
		return;
	}
	r->local[r->l_tail++ & r->l_mask] = lc_msg(t->chain, dst, sig);
}

static void lc_work(struct nicfw_thread *th, enum nicfw_work kind, uint64_t count)
{
}

static void lc_pkt_tx(struct nicfw_thread *th, uint64_t off, uint32_t words)
{
	struct lc_thread *t = lc_th(th);
	struct lc_chain *c = &t->p->chain[t->chain];

	memcpy(c->resp, c->mem[NICFW_MEM_IMEM] + off, words * sizeof(double));
	__atomic_store_n(&c->done, 1, __ATOMIC_RELEASE);
}

static uint64_t *lc_map(struct nicfw_thread *th, enum nicfw_mem mem)
{
	struct lc_thread *t = lc_th(th);

	return t->p->chain[t->chain].mem[mem];
}

static const struct nicfw_hal_ops lc_ops = {
    .read = lc_read,
    .write = lc_write,
    .atomic_or = lc_atomic_or,
    .wait = lc_wait,
    .sig_send = lc_sig_send,
    .work = lc_work,
    .pkt_tx = lc_pkt_tx,
    .map = lc_map,
};

static void *lc_zalloc(size_t bytes)
{
	void *q = aligned_alloc(RTE_CACHE_LINE_SIZE, RTE_ALIGN_CEIL(bytes, RTE_CACHE_LINE_SIZE));

	if (q)
		memset(q, 0, bytes);
	return q;
}

struct nicfw_lcore *nicfw_lcore_create(const unsigned *lcores, uint32_t n_lcores, char *err,
				       size_t errlen)
{
	struct nicfw_lcore *p;

	if (n_lcores > NICFW_LCORE_MAX_RUNNERS) {
		snprintf(err, errlen, "lcore platform: %u lcores, at most %u", n_lcores,
			 NICFW_LCORE_MAX_RUNNERS);
		return NULL;
	}
	for (uint32_t i = 0; i < n_lcores; i++)
		if (lcores[i] >= RTE_MAX_LCORE || !rte_lcore_is_enabled(lcores[i]) ||
		    lcores[i] == rte_get_main_lcore()) {
			snprintf(err, errlen,
				 "lcore platform: lcore %u is not an enabled worker lcore",
				 lcores[i]);
			return NULL;
		}
	p = lc_zalloc(sizeof(*p));
	if (!p) {
		snprintf(err, errlen, "lcore platform: out of memory");
		return NULL;
	}
	p->inline_runner = n_lcores == 0;
	p->n_runners = n_lcores ? n_lcores : 1;
	for (uint32_t i = 0; i < p->n_runners; i++) {
		p->run[i].lcore = n_lcores ? lcores[i] : RTE_MAX_LCORE;
		p->run[i].p = p;
	}
	return p;
}

static void lc_chain_free(struct lc_chain *c)
{
	for (uint32_t k = 0; k < NICFW_MEM__COUNT; k++)
		free(c->mem[k]);
	free(c->t);
	free(c->resp);
	memset(c, 0, sizeof(*c));
}

void nicfw_lcore_free(struct nicfw_lcore *p)
{
	if (!p)
		return;
	nicfw_lcore_stop(p);
	for (uint32_t i = 0; i < p->n_chains; i++)
		lc_chain_free(&p->chain[i]);
	for (uint32_t i = 0; i < p->n_runners; i++) {
		rte_ring_free(p->run[i].ring);
		free(p->run[i].local);
	}
	free(p);
}

int nicfw_lcore_add(struct nicfw_lcore *p, const struct model *m, uint32_t first, uint32_t n_exec,
		    char *err, size_t errlen)
{
	uint32_t idx = p->n_chains, group[NICFW_MAX_EXEC];
	struct lc_chain *c;

	if (p->started || idx == NICFW_LCORE_MAX_CHAINS) {
		snprintf(err, errlen, "lcore platform: %s",
			 p->started ? "chains are added before start" : "too many chains");
		return -EINVAL;
	}
	c = &p->chain[idx];
	if (nicfw_chain_init(&c->ch, m, first, n_exec, NICFW_LAYOUT_DIRECT, err, errlen))
		return -EINVAL;
	for (uint32_t k = 0; k < NICFW_MEM__COUNT; k++)
		c->mem[k] = lc_zalloc(c->ch.need[k] * sizeof(uint64_t));
	c->t = lc_zalloc((size_t)(n_exec + 1) * sizeof(*c->t));
	c->resp = lc_zalloc(c->ch.classes * sizeof(double));
	if (!c->mem[0] || !c->mem[1] || !c->mem[2] || !c->t || !c->resp) {
		lc_chain_free(c);
		snprintf(err, errlen, "lcore platform: out of memory for %s's chain", m->name);
		return -ENOMEM;
	}
	for (uint32_t i = 0; i <= n_exec; i++) {
		struct lc_thread *t = &c->t[i];

		t->th = (struct nicfw_thread){&lc_ops, i};
		t->p = p;
		t->chain = idx;
		t->runner = i ? (uint32_t)((uint64_t)(i - 1) * p->n_runners / n_exec) : 0;
		if (i)
			group[i - 1] = t->runner;
	}
	nicfw_chain_group(&c->ch, group);
	nicfw_chain_load(&c->ch, m, c->mem[NICFW_MEM_EMEM]);
	p->n_chains++;
	return (int)idx;
}

const struct nicfw_chain *nicfw_lcore_chain(const struct nicfw_lcore *p, uint32_t chain)
{
	return &p->chain[chain].ch;
}

static void lc_handle(struct nicfw_lcore *p, uintptr_t msg)
{
	struct lc_chain *c = &p->chain[msg >> 24];
	struct lc_thread *t = &c->t[(msg >> 4) & 0xfffff];
	uint32_t sig = msg & 0xf;

	if (sig == LC_SIG_REQUEST)
		nicfw_chain_request(&t->th, &c->ch);
	else
		nicfw_chain_signal(&t->th, &c->ch, (enum nicfw_sig)sig);
}

/* Up to max handlers: the runner's own FIFO first (what its handlers just sent), then a burst
 * from its ring. */
static uint32_t lc_drain(struct lc_runner *r, uint32_t max)
{
	void *msgs[LC_BURST];
	uint32_t n = 0;

	while (n < max && r->l_head != r->l_tail) {
		lc_handle(r->p, r->local[r->l_head++ & r->l_mask]);
		n++;
	}
	if (n == max)
		return n;
	max = rte_ring_sc_dequeue_burst(r->ring, msgs, RTE_MIN(max - n, (uint32_t)LC_BURST), NULL);
	for (uint32_t i = 0; i < max; i++)
		lc_handle(r->p, (uintptr_t)msgs[i]);
	return n + max;
}

static int lc_runner_main(void *arg)
{
	struct lc_runner *r = arg;

	while (!__atomic_load_n(&r->p->stop, __ATOMIC_RELAXED))
		if (!lc_drain(r, LC_BURST))
			rte_pause();
	return 0;
}

int nicfw_lcore_start(struct nicfw_lcore *p, char *err, size_t errlen)
{
	static uint32_t seq;
	uint32_t msgs = 16, i;
	char name[RTE_RING_NAMESIZE];
	int ret;

	if (p->started)
		return 0;
	/* a chain has at most one START or END per thread and one REQUEST in flight */
	for (i = 0; i < p->n_chains; i++)
		msgs += 2 * (p->chain[i].ch.n_exec + 2);
	for (i = 0; i < p->n_runners; i++) {
		if (p->run[i].ring)
			continue;
		snprintf(name, sizeof(name), "snlc%u_%u_%u", (unsigned)getpid(),
			 __atomic_fetch_add(&seq, 1, __ATOMIC_RELAXED), i);
		p->run[i].ring =
		    rte_ring_create(name, rte_align32pow2(msgs + 1), SOCKET_ID_ANY, RING_F_SC_DEQ);
		if (!p->run[i].ring) {
			snprintf(err, errlen, "lcore platform: rte_ring_create %s: %s", name,
				 rte_strerror(rte_errno));
			return -rte_errno;
		}
		p->run[i].l_mask = rte_align32pow2(msgs + 1) - 1;
		p->run[i].l_head = p->run[i].l_tail = 0;
		p->run[i].local = calloc(p->run[i].l_mask + 1, sizeof(uintptr_t));
		if (!p->run[i].local) {
			snprintf(err, errlen, "lcore platform: out of memory for %u messages",
				 msgs);
			return -ENOMEM;
		}
	}
	p->stop = 0;
	p->started = true;
	if (p->inline_runner)
		return 0;
	for (i = 0; i < p->n_runners; i++) {
		ret = rte_eal_remote_launch(lc_runner_main, &p->run[i], p->run[i].lcore);
		if (ret) {
			snprintf(err, errlen, "lcore platform: cannot launch on lcore %u: %s",
				 p->run[i].lcore, strerror(-ret));
			nicfw_lcore_stop(p);
			return ret;
		}
	}
	return 0;
}

void nicfw_lcore_stop(struct nicfw_lcore *p)
{
	if (!p->started)
		return;
	__atomic_store_n(&p->stop, 1, __ATOMIC_RELAXED);
	for (uint32_t i = 0; !p->inline_runner && i < p->n_runners; i++)
		rte_eal_wait_lcore(p->run[i].lcore);
	p->started = false;
}

int nicfw_lcore_submit(struct nicfw_lcore *p, uint32_t chain, const void *in)
{
	struct lc_chain *c = &p->chain[chain];
	uint64_t *pkt = c->mem[NICFW_MEM_CTM] + c->ch.ctm_pkt;

	if (unlikely(c->busy))
		return -EBUSY;
	c->busy = true;
	c->done = 0;
	pkt[(c->ch.in_bytes + 7) / 8 - 1] = 0;
	memcpy(pkt, in, c->ch.in_bytes);
	lc_post(p, chain, 0, LC_SIG_REQUEST);
	return 0;
}

int nicfw_lcore_poll(struct nicfw_lcore *p, uint32_t chain, double *scores)
{
	struct lc_chain *c = &p->chain[chain];

	if (!c->busy || !__atomic_load_n(&c->done, __ATOMIC_ACQUIRE))
		return 0;
	memcpy(scores, c->resp, c->ch.classes * sizeof(double));
	c->busy = false;
	return 1;
}

uint32_t nicfw_lcore_run(struct nicfw_lcore *p, uint32_t max)
{
	uint32_t n = 0, k;

	if (!p->inline_runner || !p->started)
		return 0;
	while (n < max && (k = lc_drain(&p->run[0], max - n)))
		n += k;
	return n;
}

int nicfw_lcore_infer(struct nicfw_lcore *p, uint32_t chain, const void *in, double *scores)
{
	int ret;

	if (!p->started)
		return -EINVAL;
	ret = nicfw_lcore_submit(p, chain, in);
	if (ret)
		return ret;
	while (!nicfw_lcore_poll(p, chain, scores))
		if (!nicfw_lcore_run(p, LC_BURST))
			rte_pause();
	return 0;
}
