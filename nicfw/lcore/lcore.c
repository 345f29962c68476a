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
#include <rte_rcu_qsbr.h>
#include <rte_ring.h>

#include "nicfw/lcore/lcore.h"

#define LC_SIG_REQUEST NICFW_SIG__COUNT /* platform-internal: run nicfw_chain_request */
#define LC_SIG_MASK    15ul		/* a message: its thread's address | its signal */
#define LC_BURST       32
/* a chain has at most one START or END per thread and one REQUEST in flight: a ring holds
 * every message of the most chains of the most executors, whichever runner they are for */
#define LC_RING_MSGS (16 + NICFW_LCORE_MAX_CHAINS * 2 * (NICFW_MAX_EXEC + 2))

struct lc_chain;

struct lc_thread {
	struct nicfw_thread th; /* first: the HAL hands it back to us */
	struct nicfw_lcore *p;
	struct lc_chain *c;
	uint32_t runner;
} __rte_cache_aligned;

struct lc_chain {
	struct nicfw_chain ch;
	uint64_t *mem[NICFW_MEM__COUNT];
	struct lc_thread *t; /* n_exec + 1 */
	double *resp;
	uint32_t slot;
	uint32_t done; /* written by pkt_tx (release), read by poll and reclaim (acquire) */
	bool busy;     /* submitted and not yet collected: packet thread (reclaim: once removed) */
	uint64_t handled0[NICFW_LCORE_MAX_RUNNERS]; /* each runner's handled[slot] at add */
} __rte_cache_aligned;

/* A slot's life, on the control thread: LIVE from add to remove; DRAINING while the request it
 * holds is still running; GRACE from then until every runner has passed a quiescent point. */
enum lc_state { LC_FREE = 0, LC_LIVE, LC_DRAINING, LC_GRACE };

struct lc_runner {
	struct rte_ring *ring; /* from other runners and the packet thread */
	uintptr_t *local;      /* from handlers on this runner: only this runner touches it */
	uint32_t l_head, l_tail, l_mask;
	unsigned lcore; /* RTE_MAX_LCORE: inline */
	uint32_t id;	/* its index: its QSBR thread id */
	struct nicfw_lcore *p;
	uint64_t handled[NICFW_LCORE_MAX_CHAINS]; /* per slot; written by this runner only */
} __rte_cache_aligned;

struct nicfw_lcore {
	/* published by add (store-release), read by submit and poll (load-acquire) */
	struct lc_chain *chain[NICFW_LCORE_MAX_CHAINS];
	uint8_t state[NICFW_LCORE_MAX_CHAINS];	/* enum lc_state: control thread only */
	uint64_t token[NICFW_LCORE_MAX_CHAINS]; /* GRACE: rte_rcu_qsbr_start's token */
	struct lc_runner run[NICFW_LCORE_MAX_RUNNERS];
	uint32_t n_runners;
	struct rte_rcu_qsbr *qs; /* one reader per runner: quiescent between two drains */
	bool inline_runner, started;
	volatile uint32_t stop;
};

static inline uintptr_t lc_msg(struct lc_thread *t, uint32_t sig)
{
	return (uintptr_t)t | sig;
}

static inline struct lc_thread *lc_th(struct nicfw_thread *th)
{
	return (struct lc_thread *)th;
}

static void lc_read(struct nicfw_thread *th, enum nicfw_mem mem, uint64_t off, uint64_t *dst,
		    uint32_t words, uint32_t sig)
{
	memcpy(dst, lc_th(th)->c->mem[mem] + off, words * sizeof(*dst));
}

static void lc_write(struct nicfw_thread *th, enum nicfw_mem mem, uint64_t off, const uint64_t *src,
		     uint32_t words)
{
	memcpy(lc_th(th)->c->mem[mem] + off, src, words * sizeof(*src));
}

static void lc_atomic_or(struct nicfw_thread *th, enum nicfw_mem mem, uint64_t off, uint64_t bits)
{
	__atomic_fetch_or(lc_th(th)->c->mem[mem] + off, bits, __ATOMIC_RELAXED);
}

static void lc_wait(struct nicfw_thread *th, uint32_t mask)
{
}

static void lc_post(struct nicfw_lcore *p, struct lc_thread *dst, uint32_t sig)
{
	struct lc_runner *r = &p->run[dst->runner];
	void *msg = (void *)lc_msg(dst, sig);

	while (unlikely(rte_ring_mp_enqueue(r->ring, msg)))
		rte_pause();
}

/* A handler on runner R notifying a thread of R: R's own FIFO, no atomics (handlers of one
 * runner run one after the other on its lcore). */
static void lc_sig_send(struct nicfw_thread *th, uint32_t dst, enum nicfw_sig sig)
{
	struct lc_thread *t = lc_th(th), *d = &t->c->t[dst];
	struct lc_runner *r = &t->p->run[t->runner];

	if (d->runner != t->runner) {
		lc_post(t->p, d, sig);
		return;
	}
	r->local[r->l_tail++ & r->l_mask] = lc_msg(d, sig);
}

static void lc_work(struct nicfw_thread *th, enum nicfw_work kind, uint64_t count)
{
}

static void lc_pkt_tx(struct nicfw_thread *th, uint64_t off, uint32_t words)
{
	struct lc_chain *c = lc_th(th)->c;

	memcpy(c->resp, c->mem[NICFW_MEM_IMEM] + off, words * sizeof(double));
	__atomic_store_n(&c->done, 1, __ATOMIC_RELEASE);
}

static uint64_t *lc_map(struct nicfw_thread *th, enum nicfw_mem mem)
{
	return lc_th(th)->c->mem[mem];
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
	size_t qs_bytes;

	RTE_BUILD_BUG_ON(LC_SIG_MASK >= RTE_CACHE_LINE_SIZE || LC_SIG_REQUEST > LC_SIG_MASK);
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
	qs_bytes = rte_rcu_qsbr_get_memsize(p->n_runners);
	p->qs = lc_zalloc(qs_bytes);
	if (!p->qs || rte_rcu_qsbr_init(p->qs, p->n_runners)) {
		free(p->qs);
		free(p);
		snprintf(err, errlen, "lcore platform: out of memory");
		return NULL;
	}
	for (uint32_t i = 0; i < p->n_runners; i++) {
		p->run[i].lcore = n_lcores ? lcores[i] : RTE_MAX_LCORE;
		p->run[i].id = i;
		p->run[i].p = p;
		rte_rcu_qsbr_thread_register(p->qs, i);
	}
	return p;
}

static void lc_chain_free(struct lc_chain *c)
{
	if (!c)
		return;
	for (uint32_t k = 0; k < NICFW_MEM__COUNT; k++)
		free(c->mem[k]);
	free(c->t);
	free(c->resp);
	free(c);
}

/* Slot i's chain unpublished and freed: no runner can be in it (control thread). */
static void lc_slot_free(struct nicfw_lcore *p, uint32_t i)
{
	struct lc_chain *c = p->chain[i];

	__atomic_store_n(&p->chain[i], NULL, __ATOMIC_RELEASE);
	p->state[i] = LC_FREE;
	lc_chain_free(c);
}

void nicfw_lcore_free(struct nicfw_lcore *p)
{
	if (!p)
		return;
	nicfw_lcore_stop(p);
	for (uint32_t i = 0; i < NICFW_LCORE_MAX_CHAINS; i++)
		lc_slot_free(p, i);
	for (uint32_t i = 0; i < p->n_runners; i++) {
		rte_ring_free(p->run[i].ring);
		free(p->run[i].local);
	}
	free(p->qs);
	free(p);
}

uint32_t nicfw_lcore_reclaim(struct nicfw_lcore *p)
{
	uint32_t waiting = 0;

	for (uint32_t i = 0; i < NICFW_LCORE_MAX_CHAINS; i++) {
		struct lc_chain *c = p->chain[i];

		if (p->state[i] == LC_DRAINING &&
		    (!p->started || __atomic_load_n(&c->done, __ATOMIC_ACQUIRE))) {
			/* no message of it is left: its last handler may still be running */
			p->token[i] = rte_rcu_qsbr_start(p->qs);
			p->state[i] = LC_GRACE;
		}
		if (p->state[i] == LC_GRACE &&
		    (!p->started || rte_rcu_qsbr_check(p->qs, p->token[i], false) == 1))
			lc_slot_free(p, i);
		waiting += p->state[i] == LC_DRAINING || p->state[i] == LC_GRACE;
	}
	return waiting;
}

int nicfw_lcore_remove(struct nicfw_lcore *p, uint32_t chain)
{
	struct lc_chain *c;

	if (chain >= NICFW_LCORE_MAX_CHAINS || p->state[chain] != LC_LIVE)
		return -EINVAL;
	c = p->chain[chain];
	/* the owner no longer submits nor polls: a request it left runs to its end */
	p->state[chain] = __atomic_load_n(&c->busy, __ATOMIC_RELAXED) ? LC_DRAINING : LC_GRACE;
	p->token[chain] = rte_rcu_qsbr_start(p->qs);
	nicfw_lcore_reclaim(p);
	return p->state[chain] == LC_FREE ? 0 : -EBUSY;
}

int nicfw_lcore_add(struct nicfw_lcore *p, const struct model *m, uint32_t first, uint32_t n_exec,
		    char *err, size_t errlen)
{
	uint32_t idx, group[NICFW_MAX_EXEC];
	struct lc_chain *c;

	nicfw_lcore_reclaim(p);
	for (idx = 0; idx < NICFW_LCORE_MAX_CHAINS && p->state[idx] != LC_FREE; idx++)
		;
	if (idx == NICFW_LCORE_MAX_CHAINS) {
		snprintf(err, errlen,
			 "lcore platform: %s: more than %u chains (removed ones included "
			 "until their work is done)",
			 m->name, NICFW_LCORE_MAX_CHAINS);
		return -ENOSPC;
	}
	c = lc_zalloc(sizeof(*c));
	if (!c) {
		snprintf(err, errlen, "lcore platform: out of memory for %s's chain", m->name);
		return -ENOMEM;
	}
	if (nicfw_chain_init(&c->ch, m, first, n_exec, NICFW_LAYOUT_DIRECT, err, errlen)) {
		free(c);
		return -EINVAL;
	}
	for (uint32_t k = 0; k < NICFW_MEM__COUNT; k++)
		c->mem[k] = lc_zalloc(c->ch.need[k] * sizeof(uint64_t));
	c->t = lc_zalloc((size_t)(n_exec + 1) * sizeof(*c->t));
	c->resp = lc_zalloc(c->ch.classes * sizeof(double));
	if (!c->mem[0] || !c->mem[1] || !c->mem[2] || !c->t || !c->resp) {
		lc_chain_free(c);
		snprintf(err, errlen, "lcore platform: out of memory for %s's chain", m->name);
		return -ENOMEM;
	}
	c->slot = idx;
	for (uint32_t i = 0; i <= n_exec; i++) {
		struct lc_thread *t = &c->t[i];

		t->th = (struct nicfw_thread){&lc_ops, i};
		t->p = p;
		t->c = c;
		t->runner = i ? (uint32_t)((uint64_t)(i - 1) * p->n_runners / n_exec) : 0;
		if (i)
			group[i - 1] = t->runner;
	}
	for (uint32_t r = 0; r < p->n_runners; r++)
		c->handled0[r] = __atomic_load_n(&p->run[r].handled[idx], __ATOMIC_RELAXED);
	nicfw_chain_group(&c->ch, group);
	nicfw_chain_load(&c->ch, m, c->mem[NICFW_MEM_EMEM]);
	p->state[idx] = LC_LIVE;
	__atomic_store_n(&p->chain[idx], c, __ATOMIC_RELEASE);
	return (int)idx;
}

const struct nicfw_chain *nicfw_lcore_chain(const struct nicfw_lcore *p, uint32_t chain)
{
	return &__atomic_load_n(&p->chain[chain], __ATOMIC_ACQUIRE)->ch;
}

uint32_t nicfw_lcore_where(const struct nicfw_lcore *p, uint32_t chain, unsigned *lcores,
			   uint64_t *handled)
{
	const struct lc_chain *c = __atomic_load_n(&p->chain[chain], __ATOMIC_ACQUIRE);
	bool on[NICFW_LCORE_MAX_RUNNERS] = {false};
	uint32_t n = 0;

	*handled = 0;
	for (uint32_t i = 0; i <= c->ch.n_exec; i++)
		on[c->t[i].runner] = true;
	for (uint32_t r = 0; r < p->n_runners; r++) {
		if (!on[r])
			continue;
		lcores[n++] = p->run[r].lcore;
		*handled +=
		    __atomic_load_n(&p->run[r].handled[chain], __ATOMIC_RELAXED) - c->handled0[r];
	}
	return n;
}

static void lc_handle(struct lc_runner *r, uintptr_t msg)
{
	struct lc_thread *t = (struct lc_thread *)(msg & ~LC_SIG_MASK);
	struct lc_chain *c = t->c;
	const uint32_t sig = msg & LC_SIG_MASK;

	__atomic_store_n(&r->handled[c->slot], r->handled[c->slot] + 1, __ATOMIC_RELAXED);
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
		lc_handle(r, r->local[r->l_head++ & r->l_mask]);
		n++;
	}
	if (n == max)
		return n;
	max = rte_ring_sc_dequeue_burst(r->ring, msgs, RTE_MIN(max - n, (uint32_t)LC_BURST), NULL);
	for (uint32_t i = 0; i < max; i++)
		lc_handle(r, (uintptr_t)msgs[i]);
	return n + max;
}

/* A worker runner: between two drains it holds no chain (its quiescent point). */
static int lc_runner_main(void *arg)
{
	struct lc_runner *r = arg;
	struct rte_rcu_qsbr *qs = r->p->qs;

	rte_rcu_qsbr_thread_online(qs, r->id);
	while (!__atomic_load_n(&r->p->stop, __ATOMIC_RELAXED)) {
		if (!lc_drain(r, LC_BURST))
			rte_pause();
		rte_rcu_qsbr_quiescent(qs, r->id);
	}
	rte_rcu_qsbr_thread_offline(qs, r->id);
	return 0;
}

int nicfw_lcore_start(struct nicfw_lcore *p, char *err, size_t errlen)
{
	static uint32_t seq;
	const uint32_t size = rte_align32pow2(LC_RING_MSGS + 1);
	char name[RTE_RING_NAMESIZE];
	uint32_t i;
	int ret;

	if (p->started)
		return 0;
	for (i = 0; i < p->n_runners; i++) {
		struct lc_runner *r = &p->run[i];

		r->l_head = r->l_tail = 0;
		if (r->ring) {
			rte_ring_reset(r->ring); /* what a stop left is dropped */
			continue;
		}
		snprintf(name, sizeof(name), "snlc%u_%u_%u", (unsigned)getpid(),
			 __atomic_fetch_add(&seq, 1, __ATOMIC_RELAXED), i);
		r->ring = rte_ring_create(name, size, SOCKET_ID_ANY, RING_F_SC_DEQ);
		if (!r->ring) {
			snprintf(err, errlen, "lcore platform: rte_ring_create %s: %s", name,
				 rte_strerror(rte_errno));
			return -rte_errno;
		}
		r->l_mask = size - 1;
		r->local = calloc(size, sizeof(uintptr_t));
		if (!r->local) {
			snprintf(err, errlen, "lcore platform: out of memory for %u messages",
				 size);
			return -ENOMEM;
		}
	}
	for (i = 0; i < NICFW_LCORE_MAX_CHAINS; i++)
		if (p->chain[i])
			p->chain[i]->busy = false;
	p->stop = 0;
	p->started = true;
	if (p->inline_runner) {
		rte_rcu_qsbr_thread_online(p->qs, 0);
		return 0;
	}
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
	if (p->inline_runner)
		rte_rcu_qsbr_thread_offline(p->qs, 0);
	p->started = false;
}

int nicfw_lcore_submit(struct nicfw_lcore *p, uint32_t chain, const void *in)
{
	struct lc_chain *c = __atomic_load_n(&p->chain[chain], __ATOMIC_ACQUIRE);
	uint64_t *pkt = c->mem[NICFW_MEM_CTM] + c->ch.ctm_pkt;

	if (unlikely(c->busy))
		return -EBUSY;
	c->busy = true;
	c->done = 0;
	pkt[(c->ch.in_bytes + 7) / 8 - 1] = 0;
	memcpy(pkt, in, c->ch.in_bytes);
	lc_post(p, &c->t[0], LC_SIG_REQUEST);
	return 0;
}

int nicfw_lcore_poll(struct nicfw_lcore *p, uint32_t chain, double *scores)
{
	struct lc_chain *c = __atomic_load_n(&p->chain[chain], __ATOMIC_ACQUIRE);

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
	rte_rcu_qsbr_quiescent(p->qs, 0);
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
