// SPDX-License-Identifier: MIT
/*
 * The emulator serving requests (nicfw_emu_serve_prepare, nicfw_emu_serve): the modeled time of
 * the steady state, taken once by tracing and replaying requests back to back; the results of
 * every request from the same firmware in its DIRECT layout (a second copy of the chain on plain
 * memory, whole slices on the CPU kernels, the executors of one modeled ME as one group), run
 * with the emulator's notification FIFO.
 */
#include <errno.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "nicfw/emu/emu_impl.h"

static struct emu_sthread *sv_th(struct nicfw_thread *th)
{
	return (struct emu_sthread *)th;
}

static void sv_read(struct nicfw_thread *th, enum nicfw_mem mem, uint64_t off, uint64_t *dst,
		    uint32_t words, uint32_t sig)
{
	memcpy(dst, sv_th(th)->emu->sv->mem[mem] + off, words * sizeof(*dst));
}

static void sv_write(struct nicfw_thread *th, enum nicfw_mem mem, uint64_t off, const uint64_t *src,
		     uint32_t words)
{
	memcpy(sv_th(th)->emu->sv->mem[mem] + off, src, words * sizeof(*src));
}

static void sv_atomic_or(struct nicfw_thread *th, enum nicfw_mem mem, uint64_t off, uint64_t bits)
{
	sv_th(th)->emu->sv->mem[mem][off] |= bits;
}

static void sv_wait(struct nicfw_thread *th, uint32_t mask)
{
}

static void sv_sig_send(struct nicfw_thread *th, uint32_t dst, enum nicfw_sig sig)
{
	struct nicfw_emu *e = sv_th(th)->emu;

	e->q[e->q_tail++ % e->q_cap] = (struct emu_sigmsg){dst, sig};
}

static void sv_work(struct nicfw_thread *th, enum nicfw_work kind, uint64_t count)
{
}

static void sv_pkt_tx(struct nicfw_thread *th, uint64_t off, uint32_t words)
{
	struct nicfw_emu *e = sv_th(th)->emu;

	memcpy(e->resp, e->sv->mem[NICFW_MEM_IMEM] + off, words * sizeof(double));
	e->resp_sent = true;
}

static uint64_t *sv_map(struct nicfw_thread *th, enum nicfw_mem mem)
{
	return sv_th(th)->emu->sv->mem[mem];
}

static const struct nicfw_hal_ops sv_ops = {
    .read = sv_read,
    .write = sv_write,
    .atomic_or = sv_atomic_or,
    .wait = sv_wait,
    .sig_send = sv_sig_send,
    .work = sv_work,
    .pkt_tx = sv_pkt_tx,
    .map = sv_map,
};

static int serve_chain(struct nicfw_emu *e, const struct model *m, char *err, size_t errlen)
{
	struct emu_serve *sv = calloc(1, sizeof(*sv));
	uint32_t group[NICFW_MAX_EXEC];

	if (!sv)
		goto err_nomem;
	e->sv = sv;
	if (nicfw_chain_init(&sv->ch, m, e->ch.first, e->ch.n_exec, NICFW_LAYOUT_DIRECT, err,
			     errlen))
		return -EINVAL;
	for (uint32_t k = 0; k < NICFW_MEM__COUNT; k++) {
		sv->mem[k] = aligned_alloc(64, (sv->ch.need[k] * sizeof(uint64_t) + 63) & ~63ull);
		if (!sv->mem[k])
			goto err_nomem;
		memset(sv->mem[k], 0, sv->ch.need[k] * sizeof(uint64_t));
	}
	sv->t = calloc(e->n_threads, sizeof(*sv->t));
	if (!sv->t)
		goto err_nomem;
	for (uint32_t i = 0; i < e->n_threads; i++)
		sv->t[i] = (struct emu_sthread){{&sv_ops, i}, e};
	for (uint32_t x = 0; x < e->ch.n_exec; x++)
		group[x] = e->t[x + 1].me;
	nicfw_chain_group(&sv->ch, group);
	nicfw_chain_load(&sv->ch, m, sv->mem[NICFW_MEM_EMEM]);
	return 0;

err_nomem:
	snprintf(err, errlen, "out of memory for the emulator's serving chain");
	return -ENOMEM;
}

static bool same_latency(double a, double b)
{
	return fabs(a - b) <= 1e-9 * fabs(b);
}

int nicfw_emu_serve_prepare(struct nicfw_emu *e, const struct model *m, uint32_t max_warm,
			    struct nicfw_emu_report *rep, uint32_t *warmed, char *err,
			    size_t errlen)
{
	const struct nicfw_chain *ch = &e->ch;
	uint8_t *zero;
	double *scores, prev = -1;
	uint32_t n = 0;
	int ret;

	if (e->sv || max_warm < 2) {
		snprintf(err, errlen, "emulator: %s",
			 e->sv ? "already prepared to serve" : "at least 2 warm-up requests");
		return -EINVAL;
	}
	ret = serve_chain(e, m, err, errlen);
	if (ret)
		goto err_free;
	if (e->sv->ch.in_bytes != ch->in_bytes || e->sv->ch.classes != ch->classes ||
	    e->sv->ch.n_stages != ch->n_stages) {
		snprintf(err, errlen, "emulator: model %s is not the one it holds", m->name);
		ret = -EINVAL;
		goto err_free;
	}
	zero = calloc(1, ch->in_bytes);
	scores = calloc(ch->classes, sizeof(double));
	ret = -ENOMEM;
	while (zero && scores && n < max_warm) {
		ret = nicfw_emu_infer(e, zero, scores, rep);
		if (ret)
			break;
		n++;
		if (same_latency(rep->latency_us, prev))
			break;
		prev = rep->latency_us;
	}
	free(scores);
	free(zero);
	if (ret) {
		snprintf(err, errlen, "emulator: warm-up request %u failed: %s", n + 1,
			 strerror(-ret));
		goto err_free;
	}
	*warmed = n;
	return same_latency(rep->latency_us, prev) ? 0 : 1;

err_free:
	emu_serve_free(e->sv);
	e->sv = NULL;
	return ret;
}

int nicfw_emu_serve(struct nicfw_emu *e, const void *in, double *scores)
{
	struct emu_serve *sv = e->sv;
	uint64_t *pkt;
	int ret;

	if (!sv)
		return -EINVAL;
	pkt = sv->mem[NICFW_MEM_CTM] + sv->ch.ctm_pkt;
	pkt[(sv->ch.in_bytes + 7) / 8 - 1] = 0;
	memcpy(pkt, in, sv->ch.in_bytes);
	e->resp_sent = false;
	e->q_head = e->q_tail = 0;
	ret = nicfw_chain_request(&sv->t[0].th, &sv->ch);
	if (ret)
		return ret;
	emu_run_signals(e, &sv->ch, sv->t, sizeof(*sv->t));
	if (!e->resp_sent)
		return -EIO;
	memcpy(scores, e->resp, sv->ch.classes * sizeof(double));
	return 0;
}
