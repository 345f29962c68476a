// SPDX-License-Identifier: MIT
/* The NIC emulator as an executor (nicfw/emu/exec_emu.h). */
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <time.h>

#include "nicfw/chain.h"
#include "nicfw/emu/exec_emu.h"

/* A submission waiting for the chain (serving only). */
struct emu_job {
	const uint8_t *in;
	uint8_t *out;
	uint32_t n;
	int status;
	uint64_t tag;
	uint64_t arrival; /* ns, monotonic */
};

struct emu_exec {
	struct nicfw_exec_emu_conf conf;
	struct nicfw_emu_params params;
	struct nicfw_emu *e;
	double modeled_us;
	/* serving: the modeled schedule, ns on the monotonic clock */
	struct nicfw_exec_emu_stats st;
	struct emu_job q[KEXEC_FIFO];
	uint32_t head, tail; /* masked by KEXEC_FIFO - 1 */
	bool running;	     /* q[head] is on the chain until `release` */
	uint64_t release, free_at;
};

static uint64_t mono_ns(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (uint64_t)ts.tv_sec * 1000000000ull + (uint64_t)ts.tv_nsec;
}

static void set_max(uint64_t *v, uint64_t x)
{
	if (x > *v)
		__atomic_store_n(v, x, __ATOMIC_RELAXED);
}

static void bump(uint64_t *v)
{
	__atomic_store_n(v, *v + 1, __ATOMIC_RELAXED);
}

static int emu_init(struct kexec *x, const void *conf, char *err, size_t errlen)
{
	const struct nicfw_exec_emu_conf *c = conf;
	struct emu_exec *ee = calloc(1, sizeof(*ee));

	if (!ee) {
		snprintf(err, errlen, "nic emu executor: out of memory");
		return -ENOMEM;
	}
	x->priv = ee;
	if (c)
		ee->conf = *c;
	if (!ee->conf.executors)
		ee->conf.executors = NICFW_MAX_EXEC;
	if (!ee->conf.max_warm)
		ee->conf.max_warm = NICFW_EXEC_EMU_WARM;
	if (c && c->params)
		ee->params = *c->params;
	else
		nicfw_emu_params_default(&ee->params);
	return 0;
}

static int emu_load(struct kexec *x, const struct model *m, uint32_t first, uint32_t last,
		    uint32_t max_batch, char *err, size_t errlen)
{
	struct emu_exec *ee = x->priv;
	struct nicfw_emu_report rep;
	int ret;

	ee->e = nicfw_emu_create(m, first, ee->conf.executors, &ee->params, err, errlen);
	if (!ee->e)
		return -EINVAL;
	if (!ee->conf.serve)
		return 0;
	ret =
	    nicfw_emu_serve_prepare(ee->e, m, ee->conf.max_warm, &rep, &ee->st.warmed, err, errlen);
	if (ret < 0)
		return ret;
	ee->st.steady = ret == 0;
	ee->st.modeled_ns = (uint64_t)(rep.latency_us * 1e3 + 0.5);
	snprintf(x->note, sizeof(x->note),
		 "modeled %.1f us per request (modeled, steady state after %u warm-up "
		 "requests%s); results released at their modeled completion",
		 rep.latency_us, ee->st.warmed,
		 ee->st.steady ? "" : ", not steady: the last one's");
	return 0;
}

/* Not serving: each request traced and replayed now, its modeled time added up. */
static int emu_submit_now(struct kexec *x, struct emu_exec *ee, const void *in, uint32_t n,
			  void *out, uint64_t tag)
{
	struct nicfw_emu_report rep;
	int ret = 0;

	for (uint32_t i = 0; i < n && !ret; i++) {
		ret = nicfw_emu_infer(ee->e, (const uint8_t *)in + (size_t)i * x->in_bytes,
				      (double *)((uint8_t *)out + (size_t)i * x->out_bytes), &rep);
		if (!ret)
			ee->modeled_us += rep.latency_us;
	}
	kexec_complete(x, tag, ret);
	return 0;
}

/* Serving: the head job onto the chain at the later of its arrival and the previous one's
 * modeled completion, its results computed now and released n modeled times later. */
static void emu_start(struct kexec *x, struct emu_exec *ee)
{
	struct emu_job *j = &ee->q[ee->head & (KEXEC_FIFO - 1)];
	const uint64_t start = j->arrival > ee->free_at ? j->arrival : ee->free_at;
	uint64_t t0 = mono_ns(), took;

	j->status = 0;
	for (uint32_t i = 0; i < j->n && !j->status; i++)
		j->status = nicfw_emu_serve(ee->e, j->in + (size_t)i * x->in_bytes,
					    (double *)(j->out + (size_t)i * x->out_bytes));
	took = mono_ns() - t0;
	set_max(&ee->st.compute_ns_max, took);
	if (took > j->n * ee->st.modeled_ns)
		bump(&ee->st.overruns);
	ee->release = ee->free_at = start + j->n * ee->st.modeled_ns;
	ee->running = true;
}

static int emu_submit(struct kexec *x, const void *in, uint32_t n, void *out, uint64_t tag)
{
	struct emu_exec *ee = x->priv;

	if (!ee->conf.serve)
		return emu_submit_now(x, ee, in, n, out, tag);
	ee->q[ee->tail++ & (KEXEC_FIFO - 1)] =
	    (struct emu_job){.in = in, .out = out, .n = n, .tag = tag, .arrival = mono_ns()};
	if (!ee->running)
		emu_start(x, ee);
	return 0;
}

static void emu_progress(struct kexec *x)
{
	struct emu_exec *ee = x->priv;
	uint64_t now;

	if (!ee->running)
		return;
	now = mono_ns();
	if (now < ee->release)
		return;
	if (now - ee->release > ee->st.modeled_ns / 20) {
		bump(&ee->st.late);
		set_max(&ee->st.late_ns_max, now - ee->release);
	}
	kexec_complete(x, ee->q[ee->head & (KEXEC_FIFO - 1)].tag,
		       ee->q[ee->head & (KEXEC_FIFO - 1)].status);
	ee->head++;
	ee->running = false;
	if (ee->head != ee->tail)
		emu_start(x, ee);
}

static void emu_caps(const struct kexec *x, struct kexec_caps *c)
{
	const struct emu_exec *ee = x->priv;

	c->kind = KEXEC_KIND_NIC;
	c->tail_only = true;
	c->max_batch = x->max_batch;
	if (ee && ee->e)
		c->mem_bytes = nicfw_emu_chain(ee->e)->need[NICFW_MEM_EMEM] * 8;
}

static void emu_close(struct kexec *x)
{
	struct emu_exec *ee = x->priv;

	if (!ee)
		return;
	nicfw_emu_free(ee->e);
	free(ee);
}

double nicfw_exec_emu_modeled_us(const struct kexec *x)
{
	return ((const struct emu_exec *)x->priv)->modeled_us;
}

void nicfw_exec_emu_stats(const struct kexec *x, struct nicfw_exec_emu_stats *st)
{
	const struct emu_exec *ee = x->priv;

	st->modeled_ns = ee->st.modeled_ns;
	st->warmed = ee->st.warmed;
	st->steady = ee->st.steady;
	st->compute_ns_max = __atomic_load_n(&ee->st.compute_ns_max, __ATOMIC_RELAXED);
	st->overruns = __atomic_load_n(&ee->st.overruns, __ATOMIC_RELAXED);
	st->late = __atomic_load_n(&ee->st.late, __ATOMIC_RELAXED);
	st->late_ns_max = __atomic_load_n(&ee->st.late_ns_max, __ATOMIC_RELAXED);
}

const struct kexec_ops nicfw_exec_emu_ops =
    KEXEC_OPS("nic-emu", emu_init, emu_load, emu_submit, emu_progress, emu_caps, emu_close);
