// SPDX-License-Identifier: MIT
/*
 * splitnic-host: the host's DPDK application (host/host.h tells a request's life).
 *
 *   splitnic-host EAL-ARGS -- --model FILE[:MODE[:SPLIT]] [--model ...] --ip A.B.C.D
 *       [--port UDP] [--nic-ip A.B.C.D] [--nic-timeout-us US] [--nic-window N] [--queue N]
 *       [--batch MAX] [--batch-wait-us US] [--allow CIDR ...] [--payload BYTES]
 *       [--drain-ms MS] [--idle-sleep-us US] [--stats-file FILE]
 *       [--nic port|inproc] [--nic-executors E] [--name NAME]
 *
 * MODE: coproc (default), host-only or fallback; SPLIT: the op index where the NIC stage starts
 * (ops before it on the CPU), or a plan file (`splitnic plan -o`), run as planned: its cpu and gpu
 * stages on the host, in order, through the executor interface (kernels/kexec.h), its nic stage
 * on the NIC; a plan without a nic stage is served host-only. A gpu stage without a usable GPU
 * runs on the CPU kernels: said once at start-up, counted (gpu_fallback_requests). One port (port
 * 0; any PMD, normally net_memif role=client facing splitnic-nic's host port). The main lcore is
 * the RX/TX lcore (parse, reassembly, admission, hand-off to the NIC, fallback decisions,
 * responses); worker lcores run the host stages; with no worker lcore the main lcore runs them in
 * between.
 *
 * Addresses: the NIC and its host are one server: --ip is splitnic-nic's --ip (the NIC answers
 * ARP for it; the host answers no ARP). Front-ends send to that address; the NIC passes the
 * host's REQUESTs up; the host answers from it (RESPONSE/ERROR frames leave through the NIC),
 * and sends ACTIVATIONs to --nic-ip (default: --ip), UDP --port, over its port.
 *
 * --nic inproc: no splitnic-nic; the NIC stage runs in this process (DESIGN.md, "On one
 * machine"): the same dispatcher (nicfw/dispatch.h, with completion notices) and executor
 * chains (platform lcore, its inline runner) on the NIC lcore, the last worker lcore (with none,
 * the main lcore runs it in between its own work). ACTIVATION frames go to it over an rte_ring
 * instead of the port; what it sends comes back over another: RESPONSEs for the front-end
 * leave through the port (destination MAC learnt from the REQUESTs), notices and ERRORs are
 * read as if they had come from the port. Deadline, window and fallback work unchanged. The
 * port then faces the front-ends directly (e.g. net_af_packet); the host answers no ARP.
 *
 * Admission (every REQUEST gets a RESPONSE or an ERROR, except from addresses outside the
 * allow-list, which are counted and dropped: no reflection to unknown senders):
 *   unknown model          ERROR UNKNOWN_MODEL (detail: the model id)
 *   format/shape differs   ERROR BAD_SHAPE (detail: the model's input elements)
 *   parser rejected        ERROR BAD_REQUEST (detail: the verdict), when it says REQUEST
 *   queue or table full    ERROR BUSY (detail: the queue bound): overloaded
 *   reassembly table full  ERROR BUSY (detail 0); message too large: ERROR TOO_LARGE
 *   shutting down          ERROR BUSY (detail 1)
 * A fragmented REQUEST that does not complete within 1 s is dropped (reasm_expired).
 *
 * Shutdown: SIGINT/SIGTERM stop admission and drain every request in the table (NIC notices
 * awaited until their deadline, then the fallback), for at most --drain-ms; then exit 0.
 *
 * HEALTH: probes for any role or splitnic-host's (the NIC passes up those for the host's role)
 * from allowed addresses are answered with the host's identity (--name, default
 * splitnic-host@--ip), its models (coproc, host-only or fallback; the REQUEST's tensor) and its
 * state: draining from SIGTERM on, degraded while a co-processor model's NIC link is down.
 *
 * Telemetry: /splitnic/host/stats (counters by reason), /splitnic/host/latency (histograms,
 * bucket b = [2^(b-1), 2^b) us), /splitnic/host/models.
 */
#include <arpa/inet.h>
#include <errno.h>
#include <getopt.h>
#include <signal.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

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
#include "kernels/kern_ops.h"
#include "split/split.h"

volatile sig_atomic_t host_quit;
struct host_app *host_g;

static void on_signal(int sig)
{
	host_quit = sig;
}

/* --- options ------------------------------------------------------------------------------- */

static void usage(FILE *f)
{
	fprintf(
	    f,
	    "usage: splitnic-host EAL-ARGS -- --model FILE[:MODE[:SPLIT]] [--model ...]\n"
	    "         --ip A.B.C.D [--port UDP (%u)] [--nic-ip A.B.C.D (--ip)]\n"
	    "         [--nic-timeout-us US (200000)] [--nic-window N (32)] [--queue N (64)]\n"
	    "         [--batch MAX (1)] [--batch-wait-us US (0)] [--allow CIDR ...]\n"
	    "         [--payload BYTES (1400)] [--drain-ms MS (5000)] [--idle-sleep-us US (0)]\n"
	    "         [--stats-file FILE] [--nic port|inproc (port)] [--nic-executors E (16)]\n"
	    "         [--name NAME (splitnic-host@IP)]\n"
	    "  MODE coproc|host-only|fallback; SPLIT: op index or plan file (splitnic plan -o)\n",
	    PROTO_DEFAULT_PORT);
}

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

static int parse_opts(int argc, char **argv, struct host_opts *o)
{
	static const struct option lopts[] = {
	    {"model", required_argument, NULL, 'm'},
	    {"port", required_argument, NULL, 'p'},
	    {"ip", required_argument, NULL, 'i'},
	    {"nic-ip", required_argument, NULL, 'I'},
	    {"nic-timeout-us", required_argument, NULL, 't'},
	    {"nic-window", required_argument, NULL, 'W'},
	    {"queue", required_argument, NULL, 'q'},
	    {"batch", required_argument, NULL, 'b'},
	    {"batch-wait-us", required_argument, NULL, 'B'},
	    {"allow", required_argument, NULL, 'a'},
	    {"payload", required_argument, NULL, 'L'},
	    {"drain-ms", required_argument, NULL, 'd'},
	    {"idle-sleep-us", required_argument, NULL, 'S'},
	    {"stats-file", required_argument, NULL, 's'},
	    {"nic", required_argument, NULL, 'n'},
	    {"nic-executors", required_argument, NULL, 'E'},
	    {"name", required_argument, NULL, 'N'},
	    {"help", no_argument, NULL, 'h'},
	    {NULL, 0, NULL, 0},
	};
	uint64_t v;
	int c;

	memset(o, 0, sizeof(*o));
	o->udp_port = PROTO_DEFAULT_PORT;
	o->nic_timeout_ns = 200000000ull;
	o->window = 32;
	o->queue = 64;
	o->batch = 1;
	o->payload = PROTO_DEFAULT_PAYLOAD;
	o->drain_ns = 5000000000ull;
	o->nic_executors = 16;
	optind = 1;
	while ((c = getopt_long(argc, argv, "", lopts, NULL)) != -1) {
		const char *name = NULL;
		uint64_t lo = 0, hi = 0, *dst = &v;

		switch (c) {
		case 'm':
			if (o->n_models == HOST_MAX_MODELS) {
				fprintf(stderr, "host: at most %u models\n", HOST_MAX_MODELS);
				return -EINVAL;
			}
			o->model_spec[o->n_models++] = optarg;
			continue;
		case 'i':
		case 'I':
			if (parse_ip(optarg, c == 'i' ? &o->ip : &o->nic_ip)) {
				fprintf(stderr, "host: %s: an IPv4 address, got '%s'\n",
					c == 'i' ? "--ip" : "--nic-ip", optarg);
				return -EINVAL;
			}
			continue;
		case 'a':
			if (o->n_allow == HOST_MAX_ALLOW ||
			    host_cidr_parse(optarg, &o->allow[o->n_allow])) {
				fprintf(stderr, "host: --allow: A.B.C.D/N (at most %u), got '%s'\n",
					HOST_MAX_ALLOW, optarg);
				return -EINVAL;
			}
			o->n_allow++;
			continue;
		case 's':
			o->stats_file = optarg;
			continue;
		case 'N':
			if (!*optarg || strlen(optarg) > PROTO_HEALTH_IDENT_LEN) {
				fprintf(stderr, "host: --name: 1 to %u characters, got '%s'\n",
					PROTO_HEALTH_IDENT_LEN, optarg);
				return -EINVAL;
			}
			o->name = optarg;
			continue;
		case 'n':
			if (strcmp(optarg, "port") && strcmp(optarg, "inproc")) {
				fprintf(stderr, "host: --nic: port or inproc, got '%s'\n", optarg);
				return -EINVAL;
			}
			o->inproc = !strcmp(optarg, "inproc");
			continue;
		case 'h':
			usage(stdout);
			return 1;
		case 'p':
			name = "--port", lo = 1, hi = 65535;
			break;
		case 't':
			name = "--nic-timeout-us", lo = 1, hi = 60000000;
			break;
		case 'W':
			name = "--nic-window", lo = 1, hi = 4096;
			break;
		case 'q':
			name = "--queue", lo = 1, hi = 65536;
			break;
		case 'b':
			name = "--batch", lo = 1, hi = HOST_MAX_BATCH;
			break;
		case 'B':
			name = "--batch-wait-us", lo = 0, hi = 1000000;
			break;
		case 'L':
			name = "--payload", lo = PROTO_MIN_PAYLOAD, hi = 1472;
			break;
		case 'd':
			name = "--drain-ms", lo = 0, hi = 600000;
			break;
		case 'S':
			name = "--idle-sleep-us", lo = 0, hi = 100000;
			break;
		case 'E':
			name = "--nic-executors", lo = 1, hi = NICFW_MAX_EXEC;
			break;
		default:
			usage(stderr);
			return -EINVAL;
		}
		if (parse_u64(optarg, lo, hi, dst)) {
			fprintf(stderr, "host: %s: %lu to %lu, got '%s'\n", name, (unsigned long)lo,
				(unsigned long)hi, optarg);
			return -EINVAL;
		}
		switch (c) {
		case 'p':
			o->udp_port = (uint16_t)v;
			break;
		case 't':
			o->nic_timeout_ns = v * 1000;
			break;
		case 'W':
			o->window = (uint32_t)v;
			break;
		case 'q':
			o->queue = (uint32_t)v;
			break;
		case 'b':
			o->batch = (uint32_t)v;
			break;
		case 'B':
			o->batch_wait_ns = v * 1000;
			break;
		case 'L':
			o->payload = (uint32_t)v;
			break;
		case 'd':
			o->drain_ns = v * 1000000;
			break;
		case 'S':
			o->idle_sleep_us = (uint32_t)v;
			break;
		case 'E':
			o->nic_executors = (uint32_t)v;
			break;
		}
	}
	if (optind < argc || !o->n_models || !o->ip) {
		fprintf(stderr, "host: %s\n",
			optind < argc  ? "unexpected argument"
			: !o->n_models ? "give at least one --model"
				       : "give --ip (the server address, splitnic-nic's --ip)");
		usage(stderr);
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
	struct kern_model *m;
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
	m = kern_model_load(spec, err, errlen);
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
	kern_model_free(m);
	return ret;
}

/* --- set-up -------------------------------------------------------------------------------- */

static int port_init(struct host_app *a, char *err, size_t errlen)
{
	struct rte_eth_conf conf = {0};
	struct rte_eth_dev_info info;
	struct rte_ether_addr mac;
	uint16_t nrx = HOST_RX_DESC, ntx = HOST_TX_DESC;
	int ret;

	if (!rte_eth_dev_count_avail()) {
		snprintf(err, errlen, "no port: give one --vdev (net_memif role=client, ...)");
		return -ENODEV;
	}
	a->port = 0;
	ret = rte_eth_dev_info_get(a->port, &info);
	if (!ret) {
		a->udp_offload = (info.tx_offload_capa & RTE_ETH_TX_OFFLOAD_UDP_CKSUM) != 0;
		if (a->udp_offload)
			conf.txmode.offloads |= RTE_ETH_TX_OFFLOAD_UDP_CKSUM;
		ret = rte_eth_dev_configure(a->port, 1, 1, &conf);
	}
	if (!ret)
		ret = rte_eth_dev_adjust_nb_rx_tx_desc(a->port, &nrx, &ntx);
	if (!ret)
		ret = rte_eth_rx_queue_setup(a->port, 0, nrx, rte_eth_dev_socket_id(a->port), NULL,
					     a->pool);
	if (!ret)
		ret = rte_eth_tx_queue_setup(a->port, 0, ntx, rte_eth_dev_socket_id(a->port), NULL);
	if (!ret)
		ret = rte_eth_macaddr_get(a->port, &mac);
	if (ret) {
		snprintf(err, errlen, "port %u: %s", a->port, strerror(-ret));
		return ret;
	}
	memcpy(a->mac, mac.addr_bytes, 6);
	/* a memif client cannot start before its server exists: retried by host_link_check() */
	a->started = rte_eth_dev_start(a->port) == 0;
	if (!a->started)
		printf("host: port %u does not start yet (NIC away?): retrying every second\n",
		       a->port);
	rte_eth_promiscuous_enable(a->port);
	return 0;
}

static int host_setup(struct host_app *a, char *err, size_t errlen)
{
	uint32_t max_in = 1, max_act = 1, max_cls = 1, slots;
	struct proto_reasm_config rc;
	char name[RTE_RING_NAMESIZE];
	unsigned l;
	int ret;

	for (uint32_t i = 0; i < a->o.n_models; i++) {
		struct host_model *hm = &a->hm[i];

		ret = load_model(hm, (char *)a->o.model_spec[i], err, errlen);
		if (ret)
			return ret;
		a->n_models++;
		max_in = RTE_MAX(max_in, hm->in_bytes);
		max_act = RTE_MAX(max_act, hm->act_bytes);
		max_cls = RTE_MAX(max_cls, hm->classes);
		printf("host: model %s id %#x: %s, host ops 0..%u%s, input %s %ux%ux%u, %u "
		       "classes\n",
		       hm->m->name, hm->model_id, host_mode_name(hm->mode),
		       hm->split ? hm->split - 1 : 0,
		       hm->mode == HOST_MODE_HOST_ONLY ? " (whole model)" : ", NIC from op",
		       hm->in_fmt == PROTO_FMT_U8 ? "u8" : "f32", hm->in_c, hm->in_h, hm->in_w,
		       hm->classes);
		for (uint32_t s = 0; s < hm->n_stages; s++)
			printf("host:   stage %u: %s ops %u..%u\n", s,
			       kexec_kind_name(hm->stage[s].kind), hm->stage[s].first,
			       hm->stage[s].last - 1);
		if (hm->mode != HOST_MODE_HOST_ONLY)
			printf("host:   NIC stage ops %u..%u, activation %u bits (%u bytes)\n",
			       hm->split, hm->m->n_layers - 1, hm->act_count, hm->act_bytes);
	}
	slots = a->n_models * (a->o.queue + a->o.window) + 2 * HOST_MAX_BATCH;
	ret = host_reqtab_init(&a->tab, slots, max_in, max_act, max_cls);
	if (!ret)
		ret = host_nic_init(&a->nic, a->o.window, a->o.nic_timeout_ns);
	a->held = calloc(slots, sizeof(*a->held));
	a->body = calloc(max_cls, 8);
	if (ret || !a->held || !a->body) {
		snprintf(err, errlen, "request table of %u slots: out of memory", slots);
		return -ENOMEM;
	}
	a->n_workers = 0;
	a->inproc.lcore = RTE_MAX_LCORE;
	RTE_LCORE_FOREACH_WORKER(l)
	{
		if (a->o.inproc)
			a->inproc.lcore = l; /* the last worker lcore */
	}
	RTE_LCORE_FOREACH_WORKER(l)
	{
		if (l != a->inproc.lcore && a->n_workers < HOST_MAX_WORKERS)
			a->n_workers++;
	}
	a->w = rte_zmalloc("snhost_workers", sizeof(*a->w) * (a->n_workers ? a->n_workers : 1),
			   RTE_CACHE_LINE_SIZE);
	if (!a->w)
		return -ENOMEM;
	for (unsigned i = 0; i < (a->n_workers ? a->n_workers : 1); i++)
		for (uint32_t k = 0; k < a->n_models; k++) {
			struct host_stage *st = &a->w[i].st[k];

			ret = host_stage_init(st, &a->hm[k], a->o.batch, err, errlen);
			if (ret)
				return ret;
			for (uint32_t s = 0; !i && s < st->front.n; s++)
				if (st->front.x[s].note[0])
					printf(
					    "host: model %s: %s (counted: gpu_fallback_requests)\n",
					    a->hm[k].m->name, st->front.x[s].note);
		}
	for (uint32_t k = 0; k < a->n_models; k++) {
		const unsigned mc = a->n_workers > 1 ? 0 : RING_F_SC_DEQ;

		snprintf(name, sizeof(name), "snhost_q%u", k);
		a->q[k] = rte_ring_create(name, a->o.queue, rte_socket_id(),
					  RING_F_SP_ENQ | RING_F_EXACT_SZ | mc);
		snprintf(name, sizeof(name), "snhost_fb%u", k);
		a->fb[k] = rte_ring_create(name, slots, rte_socket_id(),
					   RING_F_SP_ENQ | RING_F_EXACT_SZ | mc);
		if (!a->q[k] || !a->fb[k]) {
			snprintf(err, errlen, "rings: %s", rte_strerror(rte_errno));
			return -ENOMEM;
		}
	}
	a->done =
	    rte_ring_create("snhost_done", slots, rte_socket_id(), RING_F_SC_DEQ | RING_F_EXACT_SZ);
	a->pool = rte_pktmbuf_pool_create("snhost_pool", HOST_MBUFS, 256, 0,
					  RTE_MBUF_DEFAULT_BUF_SIZE, rte_socket_id());
	if (!a->done || !a->pool) {
		snprintf(err, errlen, "ring/mbuf pool: %s", rte_strerror(rte_errno));
		return -ENOMEM;
	}
	rc.slots = HOST_REASM_SLOTS;
	rc.max_msg = max_in;
	rc.timeout_ns = 1000000000ull;
	a->ra = proto_reasm_create(&rc);
	if (!a->ra) {
		snprintf(err, errlen, "reassembly table: out of memory");
		return -ENOMEM;
	}
	ret = port_init(a, err, errlen);
	if (!ret)
		ret = host_tx_setup(a, err, errlen);
	if (ret)
		return ret;
	if (a->o.inproc) {
		ret = host_inproc_setup(a, err, errlen);
		if (ret)
			return ret;
	}
	a->tsc0 = rte_get_tsc_cycles();
	a->ns_per_cyc = 1e9 / (double)rte_get_tsc_hz();
	host_health_setup(a);
	host_g = a;
	host_telemetry_register();
	printf("host: %u slots, queue %u per model, NIC window %u, timeout %lu us, batch %u "
	       "(wait %lu us), %u worker lcore(s)%s; UDP checksums %s\n",
	       slots, a->o.queue, a->o.window, (unsigned long)(a->o.nic_timeout_ns / 1000),
	       a->o.batch, (unsigned long)(a->o.batch_wait_ns / 1000), a->n_workers,
	       a->n_workers ? "" : " (inline on the main lcore)",
	       a->udp_offload ? "offloaded to the port" : "in software");
	return 0;
}

static void host_loop(struct host_app *a)
{
	uint64_t now, drain_end = 0;
	uint32_t idle = 0, work;

	for (;;) {
		now = host_now_ns(a);
		if (unlikely(host_quit && !a->draining)) {
			a->draining = true;
			drain_end = now + a->o.drain_ns;
			printf("host: %s: draining %u request(s)\n",
			       host_quit == SIGINT ? "SIGINT" : "SIGTERM",
			       host_reqtab_in_use(&a->tab));
			fflush(stdout);
		}
		if (unlikely(a->draining) && (!host_reqtab_in_use(&a->tab) || now >= drain_end))
			break;
		host_link_check(a, now);
		work = host_rx_port(a);
		if (!a->n_workers)
			work += host_worker_step(a, &a->w[0]);
		if (a->o.inproc) {
			if (a->inproc.lcore == RTE_MAX_LCORE)
				work += host_inproc_step(a);
			work += host_rx_nic(a);
		}
		work += host_collect(a, host_now_ns(a));
		host_expire(a, now);
		host_tx_flush(a);
		if (work) {
			idle = 0;
		} else if (a->o.idle_sleep_us && ++idle > 1000) {
			rte_delay_us_sleep(a->o.idle_sleep_us);
		}
		if (unlikely((now & 0xfffff) < 64))
			proto_reasm_expire(a->ra, now);
	}
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
	for (unsigned i = 0; a->w && i < (a->n_workers ? a->n_workers : 1); i++)
		for (uint32_t k = 0; k < a->n_models; k++)
			host_stage_fini(&a->w[i].st[k]);
	rte_free(a->w);
	for (uint32_t k = 0; k < a->n_models; k++) {
		rte_ring_free(a->q[k]);
		rte_ring_free(a->fb[k]);
		kern_model_free(a->hm[k].m);
	}
	rte_ring_free(a->done);
	host_inproc_teardown(a);
	proto_reasm_destroy(a->ra);
	host_nic_fini(&a->nic);
	host_reqtab_fini(&a->tab);
	free(a->held);
	free(a->body);
	rte_free(a->txb);
	rte_mempool_free(a->pool);
}

int main(int argc, char **argv)
{
	static struct host_app app;
	struct host_app *a = &app;
	char err[512];
	unsigned l, i = 0;
	FILE *f;
	int ret;

	ret = kern_blas_one_thread(argv);
	if (ret)
		fprintf(stderr, "host: cannot restart with one OpenBLAS thread: %s\n",
			strerror(-ret));
	if (conf_apply(&conf_host, &argc, &argv))
		return 1;
	ret = rte_eal_init(argc, argv);
	if (ret < 0) {
		fprintf(stderr, "host: rte_eal_init: %s\n", rte_strerror(rte_errno));
		return 1;
	}
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
	printf("host: stopped, %u request(s) left in the table\n", host_reqtab_in_use(&a->tab));
	f = a->o.stats_file ? fopen(a->o.stats_file, "w") : NULL;
	if (a->o.stats_file && !f)
		fprintf(stderr, "host: %s: %s\n", a->o.stats_file, strerror(errno));
	a->workers_stop = true;
	rte_eal_mp_wait_lcore();
	host_stats_write(a, f ? f : stdout);
	if (f)
		fclose(f);
	fflush(stdout);
out_teardown:
	host_teardown(a);
out_eal:
	rte_eal_cleanup();
	return ret ? 1 : 0;
}
