// SPDX-License-Identifier: MIT
/*
 * splitnic-host: the host's DPDK application (host/host.h tells a request's life, and
 * host/host_dpdk.h the lcore model).
 *
 *   splitnic-host EAL-ARGS -- --model FILE[:MODE[:SPLIT]] [--model ...] --ip A.B.C.D
 *       [--port UDP] [--nic-ip A.B.C.D] [--nic-timeout-us US] [--nic-window N] [--queue N]
 *       [--batch MAX] [--batch-wait-us US] [--allow CIDR ...] [--payload BYTES]
 *       [--drain-ms MS] [--drain-hold-ms MS] [--idle-sleep-us US] [--error-rate N] [--queues N]
 *       [--stats-file FILE] [--nic port|inproc] [--nic-executors E] [--name NAME]
 *
 * MODE: coproc (default), host-only or fallback; SPLIT: the op index where the NIC stage starts
 * (ops before it on the CPU), or a plan file (`splitnic plan -o`), run as planned: its cpu and gpu
 * stages on the host, in order, through the executor interface (exec/kexec.h), its nic stage
 * on the NIC through the same interface (the NIC over packets, host_exec_remote_ops); a plan
 * without a nic stage is served host-only. A gpu stage without a usable GPU runs on the CPU
 * kernels: said once at start-up, counted (gpu_fallback_requests). One port (port 0; any PMD,
 * normally net_memif role=client facing splitnic-nic's host port, or net_af_packet facing the
 * front-ends). Every lcore is a worker that receives, computes and transmits its own requests
 * (run to completion); --queues N queue pairs (default: one per worker where the port has them;
 * net_memif: 1, as splitnic-nic has); --queue, --nic-window and --error-rate are per worker.
 *
 * Addresses: the NIC and its host are one server: --ip is splitnic-nic's --ip (the NIC answers
 * ARP for it; the host answers no ARP). Front-ends send to that address; the NIC passes the
 * host's REQUESTs up; the host answers from it (RESPONSE/ERROR frames leave through the NIC),
 * and sends ACTIVATIONs to --nic-ip (default: --ip), UDP --port, over its port. Completion
 * notices (RESPONSE and ERROR frames) are taken only from --nic-ip, and only with the cookie of
 * the request they name.
 *
 * --nic inproc: no splitnic-nic; the NIC stage runs in this process (DESIGN.md, "On one
 * machine"): the same dispatcher (nicfw/dispatch.h, with completion notices) and executor
 * chains (platform lcore, its inline runner) on the NIC lcore, the last lcore (with only one,
 * worker 0 runs it in between its own work). ACTIVATION frames go to it over an rte_ring
 * instead of the port; what it sends comes back to the worker that owns the request over
 * another: RESPONSEs for the front-end leave through the port (destination MAC learnt from the
 * REQUESTs), notices and ERRORs are read as if they had come from the NIC. Deadline, window and
 * fallback work unchanged. The port then faces the front-ends directly (e.g. net_af_packet);
 * the host answers no ARP, and takes no notice from the port.
 *
 * Admission (every REQUEST gets a RESPONSE or an ERROR, except from addresses outside the
 * allow-list, which are counted and dropped: no reflection to unknown senders; ERRORs are
 * rate-limited per source, --error-rate a second, and without an allow-list no reply is larger
 * than its request):
 *   unknown model          ERROR UNKNOWN_MODEL (detail: the model id)
 *   format/shape differs   ERROR BAD_SHAPE (detail: the model's input elements)
 *   parser rejected        ERROR BAD_REQUEST (detail: the verdict), when it says REQUEST
 *   queue or table full    ERROR BUSY (detail: the queue bound): overloaded
 *   reassembly table full  ERROR BUSY (detail 0); message too large: ERROR TOO_LARGE
 *   reply above request    ERROR TOO_LARGE (detail: the reply's bytes), no allow-list given
 *   shutting down          ERROR BUSY (detail 1)
 * A fragmented REQUEST that does not complete within 1 s is dropped (reasm_expired).
 *
 * Shutdown: SIGINT/SIGTERM stop admission and drain every request in the tables (NIC notices
 * awaited until their deadline, then the fallback), for at most --drain-ms (and at least
 * --drain-hold-ms, while HEALTH says draining); then exit 0.
 *
 * HEALTH: probes for any role or splitnic-host's (the NIC passes up those for the host's role)
 * from allowed addresses are answered, by the worker that receives them, with the host's identity
 * (--name, default splitnic-host@--ip), its models (coproc, host-only or fallback; the REQUEST's
 * tensor) and its state: draining from SIGTERM on, degraded while a co-processor model's NIC link
 * is down.
 *
 * Telemetry: /splitnic/host/stats (counters by reason, summed over the workers, and requests
 * per worker), /splitnic/host/latency (histograms, bucket b = [2^(b-1), 2^b) us),
 * /splitnic/host/models.
 */
#include <arpa/inet.h>
#include <dirent.h>
#include <assert.h>
#include <errno.h>
#include <limits.h>
#include <signal.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include <rte_cycles.h>
#include <rte_eal.h>
#include <rte_errno.h>
#include <rte_ethdev.h>
#include <rte_launch.h>
#include <rte_lcore.h>
#include <rte_malloc.h>
#include <rte_mbuf.h>
#include <rte_ring.h>

#include "conf/conf.h"
#include "host/host_dpdk.h"
#include "kernels/kern.h"
#include "kernels/kern_ops.h"
#include "split/split.h"

volatile sig_atomic_t host_quit;
struct host_app *host_g;

static void on_signal(int sig)
{
	host_quit = sig;
}

/* --- options ------------------------------------------------------------------------------- */

static int parse_u64(const char *s, uint64_t lo, uint64_t hi, uint64_t *v)
{
	char *end;
	unsigned long long x;

	errno = 0;
	x = strtoull(s, &end, 0);
	if (errno || end == s || *end || x < lo || x > hi)
		return -EINVAL;
	*v = x;
	return 0;
}

static int parse_ip(const char *s, uint32_t *ip)
{
	struct in_addr a;

	if (inet_pton(AF_INET, s, &a) != 1)
		return -EINVAL;
	*ip = ntohl(a.s_addr);
	return 0;
}

/* The numeric options: each a range, and the factor from its unit to the field's (us -> ns). */
struct num_opt {
	const char *name;
	uint64_t lo, hi, scale;
	size_t off;   /* in struct host_opts */
	uint32_t len; /* bytes of that field */
};

#define NUM_OPT(nm, l, h, sc, field)                                                               \
	{                                                                                          \
		nm, l, h, sc, offsetof(struct host_opts, field),                                   \
		    sizeof(((struct host_opts *)0)->field)                                         \
	}

static const struct num_opt num_opts[] = {
    NUM_OPT("port", 1, 65535, 1, udp_port),
    NUM_OPT("nic-timeout-us", 1, 60000000, 1000, nic_timeout_ns),
    NUM_OPT("nic-window", 1, KEXEC_FIFO, 1, window),
    NUM_OPT("queue", 1, 65536, 1, queue),
    NUM_OPT("batch", 1, HOST_MAX_BATCH, 1, batch),
    NUM_OPT("batch-wait-us", 0, 1000000, 1000, batch_wait_ns),
    NUM_OPT("payload", PROTO_MIN_PAYLOAD, 1472, 1, payload),
    NUM_OPT("drain-ms", 0, 600000, 1000000, drain_ns),
    NUM_OPT("drain-hold-ms", 0, 600000, 1000000, drain_hold_ns),
    NUM_OPT("idle-sleep-us", 0, 100000, 1, idle_sleep_us),
    NUM_OPT("nic-executors", 1, NICFW_MAX_EXEC, 1, nic_executors),
    NUM_OPT("error-rate", 0, 10000000, 1, error_rate),
    NUM_OPT("queues", 1, HOST_MAX_WORKERS, 1, queues),
};

#define N_NUM_OPTS (sizeof(num_opts) / sizeof(num_opts[0]))

static int set_num_opt(struct host_opts *o, const struct num_opt *n, const char *arg)
{
	uint8_t *dst = (uint8_t *)o + n->off;
	uint64_t v;

	if (parse_u64(arg, n->lo, n->hi, &v)) {
		fprintf(stderr, "host: --%s: %lu to %lu, got '%s'\n", n->name, (unsigned long)n->lo,
			(unsigned long)n->hi, arg);
		return -EINVAL;
	}
	v *= n->scale;
	if (n->len == sizeof(uint16_t))
		*(uint16_t *)(void *)dst = (uint16_t)v;
	else if (n->len == sizeof(uint32_t))
		*(uint32_t *)(void *)dst = (uint32_t)v;
	else
		*(uint64_t *)(void *)dst = v;
	return 0;
}

/* One option of conf_host's table (conf/servers.c), or its default: 0, or -1 after a message. */
static int host_opt(void *p, const struct conf_opt *opt, const char *arg)
{
	struct host_opts *o = p;

	switch (opt->key) {
	case CONF_HOST_MODEL:
		if (o->n_models == HOST_MAX_MODELS) {
			fprintf(stderr, "host: at most %u models\n", HOST_MAX_MODELS);
			return -1;
		}
		o->model_spec[o->n_models++] = arg;
		return 0;
	case CONF_HOST_IP:
	case CONF_HOST_NIC_IP:
		if (!parse_ip(arg, opt->key == CONF_HOST_IP ? &o->ip : &o->nic_ip))
			return 0;
		fprintf(stderr, "host: --%s: an IPv4 address, got '%s'\n", opt->name, arg);
		return -1;
	case CONF_HOST_ALLOW:
		if (o->n_allow < HOST_MAX_ALLOW && !proto_cidr_parse(arg, &o->allow[o->n_allow])) {
			o->n_allow++;
			return 0;
		}
		fprintf(stderr, "host: --allow: A.B.C.D/N (at most %u), got '%s'\n", HOST_MAX_ALLOW,
			arg);
		return -1;
	case CONF_HOST_STATS_FILE:
		o->stats_file = arg;
		return 0;
	case CONF_HOST_NAME:
		return conf_text("host", opt, arg, PROTO_HEALTH_IDENT_LEN, &o->name);
	case CONF_HOST_PRECISION:
		if (kern_precision_from_name(arg) < 0) {
			fprintf(stderr,
				"host: --precision: certified, exact or float32, got '%s'\n", arg);
			return -1;
		}
		kern_precision_set_default((enum kern_precision)kern_precision_from_name(arg));
		return 0;
	case CONF_HOST_NIC:
		if (strcmp(arg, "port") && strcmp(arg, "inproc")) {
			fprintf(stderr, "host: --nic: port or inproc, got '%s'\n", arg);
			return -1;
		}
		o->inproc = !strcmp(arg, "inproc");
		return 0;
	default: /* a number of num_opts, by its name */
		for (size_t i = 0; i < N_NUM_OPTS; i++)
			if (!strcmp(num_opts[i].name, opt->name))
				return set_num_opt(o, &num_opts[i], arg) ? -1 : 0;
		assert(!"a numeric option of conf_host without its range in num_opts");
		return -1;
	}
}

static int parse_opts(int argc, char **argv, struct host_opts *o)
{
	int arg;

	memset(o, 0, sizeof(*o));
	arg = conf_server_parse(&conf_host, argc, argv, o, host_opt);
	if (arg < 0)
		return -EINVAL;
	if (arg < argc || !o->n_models || !o->ip) {
		fprintf(stderr, "host: %s\n",
			arg < argc     ? "unexpected argument"
			: !o->n_models ? "give at least one --model"
				       : "give --ip (the server address, splitnic-nic's --ip)");
		conf_usage(stderr, conf_host.cmd);
		return -EINVAL;
	}
	if (!o->nic_ip)
		o->nic_ip = o->ip;
	return 0;
}

/* FILE[:MODE[:SPLIT]] -> a loaded, split model. */
static int load_model(struct host_model *hm, char *spec, char *err, size_t errlen)
{
	char *mode_s = strchr(spec, ':'), *split_s = NULL, *plan_s = NULL, *end;
	uint32_t mode = HOST_MODE_COPROC, k = UINT32_MAX, n_hs = 0;
	struct host_plan_stage hs[SPLIT_EX__COUNT];
	struct split_plan plan;
	struct model *m;
	int ret;

	if (mode_s) {
		*mode_s++ = 0;
		split_s = strchr(mode_s, ':');
		if (split_s)
			*split_s++ = 0;
		if (!strcmp(mode_s, "coproc") || !*mode_s)
			mode = HOST_MODE_COPROC;
		else if (!strcmp(mode_s, "host-only"))
			mode = HOST_MODE_HOST_ONLY;
		else if (!strcmp(mode_s, "fallback"))
			mode = HOST_MODE_FALLBACK;
		else {
			snprintf(err, errlen, "%s: mode '%s': coproc, host-only or fallback", spec,
				 mode_s);
			return -EINVAL;
		}
	}
	m = model_load(spec, err, errlen);
	if (!m)
		return -EINVAL;
	if (split_s && *split_s) {
		unsigned long x = strtoul(split_s, &end, 10);

		if (!*end)
			k = (uint32_t)x;
		else
			plan_s = split_s;
	}
	if (plan_s) {
		ret = split_plan_load(plan_s, m, &plan, err, errlen);
		if (ret)
			goto out_free;
		for (uint32_t s = 0; s < plan.n_stages; s++) {
			const struct split_stage *ps = &plan.stage[s];

			if (ps->exec == SPLIT_EX_NIC) {
				k = ps->first;
				break;
			}
			if (ps->first &&
			    !split_fmt_exact(m->layers[ps->first].in.fmt, ps->fmt_in)) {
				snprintf(err, errlen,
					 "%s: stage %u at op %u: the activation crosses as %s: "
					 "the host runs exact cuts only",
					 plan_s, s, ps->first, split_fmt_name(ps->fmt_in));
				ret = -EINVAL;
				goto out_free;
			}
			hs[n_hs++] = (struct host_plan_stage){
			    ps->exec == SPLIT_EX_GPU ? KEXEC_KIND_GPU : KEXEC_KIND_CPU, ps->first,
			    ps->last};
		}
		if (k == UINT32_MAX && mode != HOST_MODE_HOST_ONLY) {
			printf("host: %s: the plan has no nic stage: serving %s host-only\n",
			       plan_s, m->name);
			mode = HOST_MODE_HOST_ONLY;
		}
	}
	ret = host_model_init(hm, m, mode, k, err, errlen);
	if (!ret && plan_s)
		ret = host_model_set_stages(hm, hs, n_hs, err, errlen);
	if (!ret)
		return 0;
out_free:
	model_free(m);
	return ret;
}

/* --- set-up -------------------------------------------------------------------------------- */

static uint32_t pow2_at_least(uint32_t v)
{
	uint32_t p = 1;

	while (p < v)
		p <<= 1;
	return p;
}

static int load_models(struct host_app *a, uint32_t *max_in, uint32_t *max_act, uint32_t *max_cls,
		       char *err, size_t errlen)
{
	int ret;

	*max_in = *max_act = *max_cls = 1;
	for (uint32_t i = 0; i < a->o.n_models; i++) {
		struct host_model *hm = &a->hm[i];

		ret = load_model(hm, (char *)a->o.model_spec[i], err, errlen);
		if (ret)
			return ret;
		a->n_models++;
		*max_in = RTE_MAX(*max_in, hm->in_bytes);
		*max_act = RTE_MAX(*max_act, hm->act_bytes);
		*max_cls = RTE_MAX(*max_cls, hm->classes);
		printf("host: model %s id %#x: %s, host ops 0..%u%s, input %s %ux%ux%u, %u "
		       "classes\n",
		       hm->m->name, hm->model_id, host_mode_name(hm->mode),
		       hm->split ? hm->split - 1 : 0,
		       hm->mode == HOST_MODE_HOST_ONLY ? " (whole model)" : ", the NIC the rest",
		       hm->in_fmt == PROTO_FMT_U8 ? "u8" : "f32", hm->in_c, hm->in_h, hm->in_w,
		       hm->classes);
		for (uint32_t s = 0; s < hm->n_stages; s++)
			printf("host:   stage %u: %s ops %u..%u\n", s,
			       kexec_kind_name(hm->stage[s].kind), hm->stage[s].first,
			       hm->stage[s].last - 1);
		if (hm->mode != HOST_MODE_HOST_ONLY)
			printf("host:   NIC stage ops %u..%u over packets, activation %u bits (%u "
			       "bytes)\n",
			       hm->split, hm->m->n_layers - 1, hm->act_count, hm->act_bytes);
	}
	return 0;
}

/* Every lcore is a worker but the in-process NIC's (the last worker lcore, if there is one). */
static void count_workers(struct host_app *a)
{
	unsigned l;

	a->inproc.lcore = RTE_MAX_LCORE;
	a->n_workers = 1;
	RTE_LCORE_FOREACH_WORKER(l)
	{
		if (a->o.inproc)
			a->inproc.lcore = l;
	}
	RTE_LCORE_FOREACH_WORKER(l)
	{
		if (l != a->inproc.lcore && a->n_workers < HOST_MAX_WORKERS)
			a->n_workers++;
	}
}

/* A worker's own state: request table, queues, reassembly, stages, NIC executors, rings, TX
 * queue and templates. */
static int worker_setup(struct host_app *a, struct host_worker *w, uint32_t max_in,
			uint32_t max_act, uint32_t max_cls, char *err, size_t errlen)
{
	const uint32_t slots = a->n_models * (a->o.queue + a->o.window) + 2 * HOST_MAX_BATCH;
	const struct host_remote_conf rc = {
	    .window = a->o.window,
	    .timeout_ns = a->o.nic_timeout_ns,
	    .ref_base = HOST_REF_WORKER(w->id),
	    .arg = w,
	    .describe = host_act_describe,
	    .send = host_act_send,
	    .now = host_act_now,
	};
	struct proto_reasm_config rac = {HOST_REASM_SLOTS, max_in, 1000000000ull};
	char name[RTE_RING_NAMESIZE];
	int ret;

	w->a = a;
	w->rxq = w->id < a->nq ? (int32_t)w->id : -1;
	w->txq = w->rxq;
	ret = host_reqtab_init(&w->tab, slots, max_act, max_cls);
	w->held = calloc(slots, sizeof(*w->held));
	w->body = calloc(max_cls, 8);
	w->ra = proto_reasm_create(&rac);
	if (ret || !w->held || !w->body || !w->ra)
		goto err_nomem;
	for (uint32_t k = 0; k < a->n_models; k++) {
		struct host_rq *q = &w->q[k];

		q->mask = pow2_at_least(a->o.queue) - 1;
		q->r = calloc(q->mask + 1, sizeof(*q->r));
		if (!q->r)
			goto err_nomem;
		ret = host_stage_init(&w->st[k], &a->hm[k], a->o.batch, err, errlen);
		if (ret)
			return ret;
		if (a->hm[k].mode == HOST_MODE_COPROC) {
			ret = kexec_open(&w->nic[k], &host_exec_remote_ops, &rc, err, errlen);
			if (!ret)
				ret = kexec_load(&w->nic[k], a->hm[k].m, a->hm[k].split,
						 a->hm[k].m->n_layers, 1, err, errlen);
			if (ret)
				return ret;
		}
		host_tx_templates(w, k);
	}
	snprintf(name, sizeof(name), "snhost_in%u", w->id);
	w->in = rte_ring_create(name, HOST_RING, rte_socket_id(), RING_F_SC_DEQ);
	if (!w->in)
		goto err_ring;
	if (w->txq < 0) {
		struct host_worker *owner = &a->w[w->id % a->nq];

		snprintf(name, sizeof(name), "snhost_tx%u", w->id);
		w->tx_via = rte_ring_create(name, HOST_RING, rte_socket_id(),
					    RING_F_SP_ENQ | RING_F_SC_DEQ);
		if (!w->tx_via)
			goto err_ring;
		owner->fed[owner->n_fed++] = w;
	}
	return host_tx_setup(w, err, errlen);
err_ring:
	snprintf(err, errlen, "worker %u: rings: %s", w->id, rte_strerror(rte_errno));
	return -ENOMEM;
err_nomem:
	snprintf(err, errlen, "worker %u: request table of %u slots: out of memory", w->id, slots);
	return -ENOMEM;
}

static int host_setup(struct host_app *a, char *err, size_t errlen)
{
	uint32_t max_in, max_act, max_cls, mbufs;
	int ret;

	ret = load_models(a, &max_in, &max_act, &max_cls, err, errlen);
	if (ret)
		return ret;
	count_workers(a);
	a->rl_interval_ns = a->o.error_rate ? 1000000000ull / a->o.error_rate : 0;
	a->w = rte_zmalloc("snhost_workers", sizeof(*a->w) * a->n_workers, RTE_CACHE_LINE_SIZE);
	if (!a->w)
		return -ENOMEM;
	for (unsigned i = 0; i < a->n_workers; i++)
		a->w[i].id = i;
	mbufs = a->n_workers * (HOST_RX_DESC + HOST_TX_DESC + a->n_models * a->o.queue +
				4 * HOST_BURST + HOST_TXQ) +
		(a->o.inproc ? 2048 : 0) + 2048;
	a->pool = rte_pktmbuf_pool_create("snhost_pool", RTE_MAX(mbufs, 8191u), 256,
					  RTE_ALIGN(sizeof(uint64_t), RTE_MBUF_PRIV_ALIGN),
					  RTE_MBUF_DEFAULT_BUF_SIZE, rte_socket_id());
	if (!a->pool) {
		snprintf(err, errlen, "mbuf pool: %s", rte_strerror(rte_errno));
		return -ENOMEM;
	}
	ret = host_port_init(a, err, errlen);
	if (ret)
		return ret;
	a->tsc0 = rte_get_tsc_cycles();
	a->ns_per_cyc = 1e9 / (double)rte_get_tsc_hz();
	host_health_setup(a);
	for (unsigned i = 0; i < a->n_workers; i++) {
		ret = worker_setup(a, &a->w[i], max_in, max_act, max_cls, err, errlen);
		if (ret)
			return ret;
	}
	for (uint32_t k = 0; k < a->n_models; k++)
		for (uint32_t s = 0; s < a->w[0].st[k].front.n; s++)
			if (a->w[0].st[k].front.x[s].note[0])
				printf("host: model %s: %s (counted: gpu_fallback_requests)\n",
				       a->hm[k].m->name, a->w[0].st[k].front.x[s].note);
	if (a->o.inproc) {
		ret = host_inproc_setup(a, err, errlen);
		if (ret)
			return ret;
	}
	host_g = a;
	host_telemetry_register();
	printf("host: %u worker lcore(s), port %u with %u queue pair(s), requests spread: %s; "
	       "per worker: %u slots, queue %u per model, NIC window %u, timeout %lu us, batch %u "
	       "(wait %lu us); UDP checksums %s\n",
	       a->n_workers, a->port, a->nq, a->spread_by, a->w[0].tab.slots, a->o.queue,
	       a->o.window, (unsigned long)(a->o.nic_timeout_ns / 1000), a->o.batch,
	       (unsigned long)(a->o.batch_wait_ns / 1000),
	       a->udp_offload ? "offloaded to the port" : "in software, from templates");
	return 0;
}

static bool host_drained(const struct host_app *a)
{
	for (unsigned i = 0; i < a->n_workers; i++)
		if (__atomic_load_n(&a->w[i].tab.n_free, __ATOMIC_RELAXED) != a->w[i].tab.slots)
			return false;
	return true;
}

uint32_t host_in_use(const struct host_app *a)
{
	uint32_t n = 0;

	for (unsigned i = 0; i < a->n_workers; i++)
		n += a->w[i].tab.slots - __atomic_load_n(&a->w[i].tab.n_free, __ATOMIC_RELAXED);
	return n;
}

/* Worker 0, on the main lcore: its own work, the link, the in-process NIC when it has no lcore
 * of its own, and the drain at shutdown. */
static void host_loop(struct host_app *a)
{
	uint64_t now, drain_end = 0, hold_end = 0;
	uint32_t idle = 0, work;

	for (;;) {
		now = host_now_ns(a);
		if (unlikely(host_quit && !a->draining)) {
			a->draining = true;
			hold_end = now + a->o.drain_hold_ns;
			drain_end = now + RTE_MAX(a->o.drain_ns, a->o.drain_hold_ns);
			printf("host: %s: draining %u request(s)\n",
			       host_quit == SIGINT ? "SIGINT" : "SIGTERM", host_in_use(a));
			fflush(stdout);
		}
		if (unlikely(a->draining) &&
		    ((now >= hold_end && host_drained(a)) || now >= drain_end))
			break;
		host_link_check(a, now);
		work = host_worker_step(&a->w[0], now);
		if (a->o.inproc && a->inproc.lcore == RTE_MAX_LCORE)
			work += host_inproc_step(a);
		if (work) {
			idle = 0;
		} else if (a->o.idle_sleep_us && ++idle > 1000) {
			rte_delay_us_sleep(a->o.idle_sleep_us);
		}
	}
	a->workers_stop = true;
}

static void free_ring(struct rte_ring *r)
{
	struct rte_mbuf *mb;

	while (r && !rte_ring_dequeue(r, (void **)&mb))
		rte_pktmbuf_free(mb);
	rte_ring_free(r);
}

static void host_teardown(struct host_app *a)
{
	a->workers_stop = true;
	rte_eal_mp_wait_lcore();
	host_g = NULL;
	if (a->pool && rte_eth_dev_count_avail()) {
		if (a->started)
			rte_eth_dev_stop(a->port);
		rte_eth_dev_close(a->port);
	}
	host_inproc_teardown(a);
	for (unsigned i = 0; a->w && i < a->n_workers; i++) {
		struct host_worker *w = &a->w[i];

		for (uint32_t k = 0; k < a->n_models; k++) {
			host_stage_fini(&w->st[k]);
			kexec_close(&w->nic[k]);
			free(w->q[k].r);
		}
		free_ring(w->in);
		free_ring(w->tx_via);
		proto_reasm_destroy(w->ra);
		host_reqtab_fini(&w->tab);
		free(w->held);
		free(w->body);
		rte_free(w->txb);
	}
	rte_free(a->w);
	for (uint32_t k = 0; k < a->n_models; k++)
		model_free(a->hm[k].m);
	rte_mempool_free(a->pool);
}

/* The EAL's runtime folder (/var/run/dpdk/PREFIX): its files, then the folder, once the EAL is
 * done with them; nothing else of this process reads them. */
static void remove_runtime_dir(const char *dir)
{
	char path[PATH_MAX];
	struct dirent *e;
	DIR *d = opendir(dir);

	if (!d)
		return;
	while ((e = readdir(d)) != NULL)
		if (strcmp(e->d_name, ".") && strcmp(e->d_name, "..") &&
		    snprintf(path, sizeof(path), "%s/%s", dir, e->d_name) < (int)sizeof(path))
			unlink(path);
	closedir(d);
	rmdir(dir);
}

int main(int argc, char **argv)
{
	char run_dir[PATH_MAX] = "";
	static struct host_app app;
	struct host_app *a = &app;
	char err[512];
	unsigned l, i = 1;
	FILE *f;
	int ret;

	ret = kern_blas_one_thread(argv);
	if (ret)
		fprintf(stderr, "host: cannot restart with one OpenBLAS thread: %s\n",
			strerror(-ret));
	ret = conf_apply(&conf_host, &argc, &argv);
	if (ret)
		return ret < 0 ? 1 : 0;
	ret = rte_eal_init(argc, argv);
	if (ret < 0) {
		fprintf(stderr, "host: rte_eal_init: %s\n", rte_strerror(rte_errno));
		return 1;
	}
	if (rte_eal_process_type() == RTE_PROC_PRIMARY)
		snprintf(run_dir, sizeof(run_dir), "%s", rte_eal_get_runtime_dir());
	argc -= ret;
	argv += ret;
	argv[0] = "splitnic-host";
	ret = parse_opts(argc, argv, &a->o);
	if (ret)
		goto out_eal;
	signal(SIGINT, on_signal);
	signal(SIGTERM, on_signal);
	ret = host_setup(a, err, sizeof(err));
	if (ret) {
		fprintf(stderr, "host: %s\n", err);
		goto out_teardown;
	}
	a->w[0].lcore = rte_get_main_lcore();
	RTE_LCORE_FOREACH_WORKER(l)
	{
		if (l == a->inproc.lcore) {
			rte_eal_remote_launch(host_inproc_main, a, l);
		} else if (i < a->n_workers) {
			a->w[i].lcore = l;
			rte_eal_remote_launch(host_worker_main, &a->w[i], l);
			i++;
		}
	}
	printf("host: serving UDP %u on port %u as %u.%u.%u.%u; telemetry /splitnic/host/stats\n",
	       a->o.udp_port, a->port, a->o.ip >> 24, (a->o.ip >> 16) & 0xff, (a->o.ip >> 8) & 0xff,
	       a->o.ip & 0xff);
	fflush(stdout);
	host_loop(a);
	rte_eal_mp_wait_lcore();
	printf("host: stopped, %u request(s) left in the tables\n", host_in_use(a));
	f = a->o.stats_file ? fopen(a->o.stats_file, "w") : NULL;
	if (a->o.stats_file && !f)
		fprintf(stderr, "host: %s: %s\n", a->o.stats_file, strerror(errno));
	host_stats_write(a, f ? f : stdout);
	if (f)
		fclose(f);
	fflush(stdout);
out_teardown:
	host_teardown(a);
out_eal:
	rte_eal_cleanup();
	if (run_dir[0])
		remove_runtime_dir(run_dir);
	return ret ? 1 : 0;
}
