// SPDX-License-Identifier: MIT
/*
 * The NIC chain on DPDK lcores as an executor (nicfw/lcore/lcore.h): a batch is fed to the
 * chain one request at a time; it completes when its last request has.
 */
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>

#include "nicfw/lcore/lcore.h"

struct lcore_job {
	const uint8_t *in;
	uint8_t *out;
	uint32_t n, next; /* requests, and the one running */
	uint64_t tag;
};

struct lcore_exec {
	struct nicfw_exec_lcore_conf conf;
	struct nicfw_lcore *p;
	int chain;
	bool running;	     /* q[head]'s request `next` is on the chain */
	uint32_t head, tail; /* masked by KEXEC_FIFO - 1 */
	struct lcore_job q[KEXEC_FIFO];
};

static int lc_init(struct kexec *x, const void *conf, char *err, size_t errlen)
{
	struct lcore_exec *le = calloc(1, sizeof(*le));

	if (!le) {
		snprintf(err, errlen, "nic lcore executor: out of memory");
		return -ENOMEM;
	}
	x->priv = le;
	le->chain = -1;
	if (conf)
		le->conf = *(const struct nicfw_exec_lcore_conf *)conf;
	if (!le->conf.executors)
		le->conf.executors = NICFW_MAX_EXEC;
	le->p = le->conf.platform
		    ? le->conf.platform
		    : nicfw_lcore_create(le->conf.lcores, le->conf.n_lcores, err, errlen);
	return le->p ? 0 : -EINVAL;
}

static int lc_load(struct kexec *x, const struct model *m, uint32_t first, uint32_t last,
		   uint32_t max_batch, char *err, size_t errlen)
{
	struct lcore_exec *le = x->priv;

	le->chain = nicfw_lcore_add(le->p, m, first, le->conf.executors, err, errlen);
	if (le->chain < 0)
		return le->chain;
	return le->conf.platform ? 0 : nicfw_lcore_start(le->p, err, errlen);
}

static void lc_start_next(struct kexec *x, struct lcore_exec *le)
{
	struct lcore_job *j = &le->q[le->head & (KEXEC_FIFO - 1)];

	le->running =
	    le->head != le->tail &&
	    !nicfw_lcore_submit(le->p, (uint32_t)le->chain, j->in + (size_t)j->next * x->in_bytes);
}

static int lc_submit(struct kexec *x, const void *in, uint32_t n, void *out, uint64_t tag)
{
	struct lcore_exec *le = x->priv;

	le->q[le->tail++ & (KEXEC_FIFO - 1)] = (struct lcore_job){in, out, n, 0, tag};
	if (!le->running)
		lc_start_next(x, le);
	return 0;
}

static void lc_progress(struct kexec *x)
{
	struct lcore_exec *le = x->priv;
	struct lcore_job *j;

	if (!le->conf.platform && !le->conf.n_lcores)
		nicfw_lcore_run(le->p, 64);
	if (!le->running) {
		lc_start_next(x, le);
		return;
	}
	j = &le->q[le->head & (KEXEC_FIFO - 1)];
	if (!nicfw_lcore_poll(le->p, (uint32_t)le->chain,
			      (double *)(j->out + (size_t)j->next * x->out_bytes)))
		return;
	if (++j->next == j->n) {
		kexec_complete(x, j->tag, 0);
		le->head++;
	}
	lc_start_next(x, le);
}

static void lc_caps(const struct kexec *x, struct kexec_caps *c)
{
	const struct lcore_exec *le = x->priv;

	c->kind = KEXEC_KIND_NIC;
	c->tail_only = true;
	c->max_batch = x->max_batch;
	if (le && le->chain >= 0 && x->m)
		c->mem_bytes =
		    nicfw_lcore_chain(le->p, (uint32_t)le->chain)->need[NICFW_MEM_EMEM] * 8;
}

static void lc_close(struct kexec *x)
{
	struct lcore_exec *le = x->priv;

	if (!le)
		return;
	if (!le->conf.platform)
		nicfw_lcore_free(le->p);
	else if (le->chain >= 0)
		nicfw_lcore_remove(le->p, (uint32_t)le->chain); /* freed when nothing is in it */
	free(le);
}

int nicfw_exec_lcore_chain(const struct kexec *x)
{
	const struct lcore_exec *le = x->priv;

	return le ? le->chain : -1;
}

const struct kexec_ops nicfw_exec_lcore_ops =
    KEXEC_OPS("nic-lcore", lc_init, lc_load, lc_submit, lc_progress, lc_caps, lc_close);
