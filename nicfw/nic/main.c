// SPDX-License-Identifier: MIT
/*
 * splitnic-nic: a DPDK process that is the NIC. Two ports: the wire (front-ends) and the host.
 * The main lcore runs the packet loop (rx burst -> dispatcher -> tx burst, both directions) and
 * never computes a layer; the executor chains run on the worker lcores (platform lcore, wall
 * time) or, with no worker, interleaved with the loop in bounded slices. Platform emu makes the
 * emulator's modeled time real: at start each model's chain is warmed on the emulator until its
 * modeled time per request is steady (nicfw/emu/emu.h); each request is then computed by the same
 * firmware in the loop (DIRECT layout) and its result released when the loop's clock reaches its
 * modeled completion, the chain busy until then: modeled start = max(arrival, the previous
 * request's modeled completion), so requests back to back queue as on the NFP. Each model's
 * chain is its own modeled NIC. The RESPONSE's nic field is then time really spent.
 *
 * Its options: nicfw/nic/opts.c (`splitnic-nic --help`, man/splitnic-nic.8).
 *
 * @K: the NIC part of that model starts at op K (an ACTIVATION's layer), K >= kexec_nic_first;
 * default kexec_nic_split (splitnic-host's default too). --notify-host: each RESPONSE to an
 * ACTIVATION is also sent to the host port in the notice form (splitnic-host's completion notice,
 * see nicfw/dispatch.h).
 * --allow: the front-ends the NIC answers itself (others: dropped, counted; without it every
 * front-end is answered, never with a reply larger than its request); --error-rate/--error-burst:
 * ERRORs per second, and at once, per front-end address (nicfw/dispatch.h).
 *
 * Links: a net_memif port is polled and transmitted to only while its link is up and memif's
 * control plane (on EAL's interrupt thread, where a disconnecting peer makes it unmap the shared
 * rings) is held off, see ctl_hold(). At exit the ports are stopped and closed from an EAL
 * alarm, i.e. on that same interrupt thread, so that a disconnect of the peer stopping at the
 * same moment cannot run in the middle of ours.
 *
 * HEALTH (nicfw/health.h): the NIC answers probes on its wire port with its identity (--name,
 * default splitnic-nic@--ip), its models (stand-alone ones whole, co-processor parts as nic-part)
 * and its state: degraded while it holds a NIC part and the host port's link is down. SIGINT/
 * SIGTERM: the state becomes draining (REQUESTs for its stand-alone models are refused with
 * ERROR BUSY, detail 1; ACTIVATIONs from its host are still run), and the NIC exits once it holds
 * nothing, or after --drain-ms (default 1000).
 *
 * --idle-sleep-us US: after 1000 loop turns without a frame, sleep US between turns (for shared
 * cores: tests, several servers on one machine); 0 (default) busy-polls.
 *
 * Telemetry: /splitnic/nic/stats (every counter), /splitnic/nic/models, /splitnic/nic/timing
 * (per model: the NIC time measured from submit to result, i.e. the RESPONSE's nic field, its
 * mean and percentiles; on emu also the modeled time per request, labelled modeled, and the
 * results that came later than their modeled completion). docs/operator-guide.md lists the keys.
 */
#include <arpa/inet.h>
#include <errno.h>
#include <semaphore.h>
#include <signal.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <rte_alarm.h>
#include <rte_cycles.h>
#include <rte_eal.h>
#include <rte_errno.h>
#include <rte_ethdev.h>
#include <rte_lcore.h>
#include <rte_malloc.h>
#include <rte_mbuf.h>
#include <rte_prefetch.h>
#include <rte_ring.h>
#include <rte_telemetry.h>

#include "conf/conf.h"
#include "exec/kexec.h"
#include "kernels/kern.h"
#include "kernels/kern_ops.h"
#include "nicfw/chain.h"
#include "nicfw/dispatch.h"
#include "nicfw/emu/emu.h"
#include "nicfw/health.h"
#include "nicfw/lcore/lcore.h"

#define NIC_BURST	  32
#define NIC_RX_DESC	  1024
#define NIC_TX_DESC	  1024
#define NIC_MBUFS	  8191
#define NIC_TX_TRIES	  64
#define NIC_RUN_SLICE	  64	      /* inline runner: handlers per loop turn */
#define NIC_EMU_WARM	  32	      /* emu: most warm-up requests to find the steady state */
#define NIC_LINK_POLL_NS  10000000ull /* HEALTH state: link and signals checked this often */
#define NIC_CTL_PERIOD_US 2000000     /* memif's control plane let go at least this often, */
#define NIC_CTL_QUIET_US  20000	      /* when the port has been quiet this long, ... */
#define NIC_CTL_GAP_US	  100	      /* ... for this long at least (see ctl_hold()) */
#define NIC_BACKLOG	  4096	      /* frames a gated port keeps while it is not usable */

#include "nicfw/nic/nic.h"

static volatile sig_atomic_t nic_quit;

static void on_signal(int sig)
{
	nic_quit = sig;
}

/* --- engines ----------------------------------------------------------------------------- */

/* The loop's clock: ns since start, the clock the dispatcher's now_ns is on. */
static uint64_t nic_now(const struct nic *n)
{
	return (uint64_t)((double)(rte_get_tsc_cycles() - n->tsc0) * n->ns_per_tsc);
}

static void timing_submitted(struct nic *n, uint32_t model)
{
	n->tm[model].t_submit = nic_now(n);
}

static void timing_collected(struct nic *n, uint32_t model)
{
	struct nic_timing *t = &n->tm[model];
	uint64_t ns = nic_now(n) - t->t_submit;

	t->ns[t->requests % NIC_SAMPLES] = ns > UINT32_MAX ? UINT32_MAX : (uint32_t)ns;
	__atomic_store_n(&t->ns_sum, t->ns_sum + ns, __ATOMIC_RELAXED);
	__atomic_store_n(&t->requests, t->requests + 1, __ATOMIC_RELAXED);
}

/* Computed now, released at max(arrival, previous modeled completion) + modeled time. */
static int emu_submit(void *engine, uint32_t model, const void *in)
{
	struct nic *n = engine;
	struct nic_emu_model *x = &n->emu[model];
	uint64_t arrival, start, took;

	if (x->running)
		return -EBUSY;
	arrival = nicfw_disp_arrival(n->disp, model);
	start = arrival > x->free_at ? arrival : x->free_at;
	timing_submitted(n, model);
	if (nicfw_emu_serve(x->e, in, x->scores))
		return -EIO;
	x->release = x->free_at = start + x->modeled_ns;
	x->running = true;
	took = nic_now(n) - n->tm[model].t_submit;
	if (took > x->compute_ns_max)
		__atomic_store_n(&x->compute_ns_max, took, __ATOMIC_RELAXED);
	if (unlikely(took > x->modeled_ns))
		__atomic_store_n(&x->overruns, x->overruns + 1, __ATOMIC_RELAXED);
	return 0;
}

static int emu_poll(void *engine, uint32_t model, double *scores)
{
	struct nic *n = engine;
	struct nic_emu_model *x = &n->emu[model];

	uint64_t now = nic_now(n);

	if (!x->running || now < x->release)
		return 0;
	if (unlikely(now - x->release > x->modeled_ns / 20)) {
		__atomic_store_n(&x->late, x->late + 1, __ATOMIC_RELAXED);
		if (now - x->release > x->late_ns_max)
			__atomic_store_n(&x->late_ns_max, now - x->release, __ATOMIC_RELAXED);
	}
	memcpy(scores, x->scores, nicfw_emu_chain(x->e)->classes * sizeof(double));
	x->running = false;
	timing_collected(n, model);
	return 1;
}

static const struct nicfw_engine_ops emu_engine_ops = {.submit = emu_submit, .poll = emu_poll};

static int lc_submit(void *engine, uint32_t model, const void *in)
{
	struct nic *n = engine;
	int ret = nicfw_lcore_submit(n->lc, model, in);

	if (!ret)
		timing_submitted(n, model);
	return ret;
}

static int lc_poll(void *engine, uint32_t model, double *scores)
{
	struct nic *n = engine;
	int ret = nicfw_lcore_poll(n->lc, model, scores);

	if (ret > 0)
		timing_collected(n, model);
	return ret;
}

static const struct nicfw_engine_ops lcore_engine_ops = {.submit = lc_submit, .poll = lc_poll};

/* --- ports ------------------------------------------------------------------------------- */

static void send_all(struct nic *n, int port, struct rte_mbuf **pkts, uint16_t cnt);

static int nic_tx(void *arg, enum nicfw_port port, const uint8_t *frame, uint32_t len)
{
	struct nic *n = arg;
	struct rte_mbuf *mb;
	char *p;

	if (unlikely(!n->link_up[port])) {
		n->link_down_drop[port]++;
		return -ENETDOWN;
	}
	mb = rte_pktmbuf_alloc(n->pool);
	if (unlikely(!mb))
		return -ENOMEM;
	p = rte_pktmbuf_append(mb, (uint16_t)len);
	if (unlikely(!p)) {
		rte_pktmbuf_free(mb);
		return -ENOSPC;
	}
	rte_memcpy(p, frame, len);
	if (unlikely(!n->usable[port])) {
		send_all(n, port, &mb, 1);
		return 0;
	}
	rte_eth_tx_buffer(n->port_id[port], 0, n->txb[port], mb);
	return 0;
}

static void tx_drop_cb(struct rte_mbuf **pkts, uint16_t unsent, void *arg)
{
	uint64_t *drops = arg;

	*drops += unsent;
	rte_pktmbuf_free_bulk(pkts, unsent);
}

static int port_init(struct nic *n, int which, char *err, size_t errlen)
{
	const uint16_t id = n->port_id[which];
	struct rte_eth_conf conf = {0};
	struct rte_eth_dev_info info;
	uint16_t nrx = NIC_RX_DESC, ntx = NIC_TX_DESC;
	int ret;

	ret = rte_eth_dev_info_get(id, &info);
	if (ret)
		goto out_err;
	n->link_gated[which] = info.driver_name && !strcmp(info.driver_name, "net_memif");
	if (n->link_gated[which]) {
		char name[32];

		snprintf(name, sizeof(name), "snnic_backlog%d", which);
		n->backlog[which] = rte_ring_create(name, NIC_BACKLOG, rte_eth_dev_socket_id(id),
						    RING_F_SP_ENQ | RING_F_SC_DEQ);
		if (!n->backlog[which]) {
			ret = -rte_errno;
			goto out_err;
		}
	}
	if (info.tx_offload_capa & RTE_ETH_TX_OFFLOAD_MBUF_FAST_FREE)
		conf.txmode.offloads |= RTE_ETH_TX_OFFLOAD_MBUF_FAST_FREE;
	ret = rte_eth_dev_configure(id, 1, 1, &conf);
	if (ret)
		goto out_err;
	ret = rte_eth_dev_adjust_nb_rx_tx_desc(id, &nrx, &ntx);
	if (ret)
		goto out_err;
	ret = rte_eth_rx_queue_setup(id, 0, nrx, rte_eth_dev_socket_id(id), NULL, n->pool);
	if (ret)
		goto out_err;
	ret = rte_eth_tx_queue_setup(id, 0, ntx, rte_eth_dev_socket_id(id), NULL);
	if (ret)
		goto out_err;
	n->txb[which] = rte_zmalloc_socket("snnic_txb", RTE_ETH_TX_BUFFER_SIZE(NIC_BURST), 0,
					   rte_eth_dev_socket_id(id));
	if (!n->txb[which]) {
		ret = -ENOMEM;
		goto out_err;
	}
	rte_eth_tx_buffer_init(n->txb[which], NIC_BURST);
	rte_eth_tx_buffer_set_err_callback(n->txb[which], tx_drop_cb, &n->tx_drop[which]);
	ret = rte_eth_dev_start(id);
	if (ret)
		goto out_err;
	rte_eth_promiscuous_enable(id);
	n->link_up[which] = n->usable[which] = true; /* gated: links_check(), every turn */
	return 0;

out_err:
	snprintf(err, errlen, "port %u (%s): %s", id, which ? "host" : "wire", strerror(-ret));
	return ret;
}

/* --- set-up -------------------------------------------------------------------------------- */

/* Platform emu: the emulator, warmed to its steady state, ready to serve (nicfw/emu/emu.h). */
static int nic_setup_emu(struct nic *n, uint32_t i, uint32_t first, char *err, size_t errlen)
{
	struct nic_emu_model *x = &n->emu[i];
	struct nicfw_emu_report rep;
	struct nicfw_emu_params ep;
	int ret;

	nicfw_emu_params_default(&ep);
	x->e = nicfw_emu_create(n->m[i], first, n->o.executors, &ep, err, errlen);
	if (!x->e)
		return -EINVAL;
	x->scores = calloc(nicfw_emu_chain(x->e)->classes, sizeof(double));
	if (!x->scores)
		return -ENOMEM;
	ret = nicfw_emu_serve_prepare(x->e, n->m[i], NIC_EMU_WARM, &rep, &x->warmed, err, errlen);
	if (ret < 0)
		return ret;
	x->modeled_ns = (uint64_t)(rep.latency_us * 1e3 + 0.5);
	printf("nic: model %s on emu: modeled %.1f us per request (modeled, steady state after %u "
	       "warm-up requests%s); results released at their modeled completion\n",
	       n->m[i]->name, rep.latency_us, x->warmed, ret ? ", not steady: the last one's" : "");
	return 0;
}

static int nic_setup_models(struct nic *n, struct nicfw_disp_config *dc, char *err, size_t errlen)
{
	unsigned lcores[RTE_MAX_LCORE], l;
	uint32_t nl = 0;
	int ret;

	if (!n->o.emu) {
		RTE_LCORE_FOREACH_WORKER(l)
		{
			if (nl < NICFW_LCORE_MAX_RUNNERS)
				lcores[nl++] = l;
		}
		n->lc = nicfw_lcore_create(lcores, nl, err, errlen);
		if (!n->lc)
			return -EINVAL;
	}
	for (uint32_t i = 0; i < n->o.n_models; i++) {
		struct nicfw_disp_model *md = &dc->model[i];
		const struct nicfw_chain *ch;
		struct model *m;
		uint32_t first;

		m = n->m[i] = model_load(n->o.model_path[i], err, errlen);
		if (!m)
			return -EINVAL;
		first = kexec_nic_first(m);
		if (first == m->n_layers) {
			snprintf(err, errlen, "%s: model %s has no part the NIC can run",
				 n->o.model_path[i], m->name);
			return -EINVAL;
		}
		if (n->o.first[i] == UINT32_MAX) {
			first = kexec_nic_split(m); /* splitnic-host's default too */
		} else {
			if (n->o.first[i] < first || n->o.first[i] >= m->n_layers) {
				snprintf(err, errlen,
					 "%s: @%u: the NIC can run ops %u..%u of model %s",
					 n->o.model_path[i], n->o.first[i], first, m->n_layers - 1,
					 m->name);
				return -EINVAL;
			}
			first = n->o.first[i];
		}
		if (!n->o.id_given[i])
			n->o.model_id[i] = proto_model_id(m->name);
		if (n->o.emu) {
			ret = nic_setup_emu(n, i, first, err, errlen);
			if (ret)
				return ret;
			ch = nicfw_emu_chain(n->emu[i].e);
		} else {
			ret = nicfw_lcore_add(n->lc, m, first, n->o.executors, err, errlen);
			if (ret < 0)
				return ret;
			ch = nicfw_lcore_chain(n->lc, (uint32_t)ret);
		}
		n->o.first[i] = first; /* resolved: /splitnic/nic/models says it */
		md->model_id = n->o.model_id[i];
		md->layer = first;
		md->standalone = first == 0;
		md->in_fmt = ch->in_fmt == MODEL_FMT_U8 ? PROTO_FMT_U8 : PROTO_FMT_BITS;
		md->in_count = (uint32_t)model_shape_elems(&m->layers[first].in);
		if (md->standalone) { /* REQUESTs: the model's input shape, checked in full */
			md->in_c = m->input.c;
			md->in_h = m->input.h;
			md->in_w = m->input.w;
		}
		md->in_bytes = ch->in_bytes;
		md->classes = ch->classes;
		printf("nic: model %s (%s) id %#x: ops %u..%u on %u executors (%s%s), input %u x "
		       "%s, %u classes%s\n",
		       m->name, n->o.model_path[i], md->model_id, first, m->n_layers - 1,
		       n->o.executors, n->o.emu ? "emu" : "lcore",
		       n->o.emu ? "" : (nl ? "" : ", inline"), md->in_count,
		       proto_fmt_name(md->in_fmt), md->classes,
		       md->standalone ? ", stand-alone" : "");
	}
	dc->n_models = n->o.n_models;
	dc->eng_ops = n->o.emu ? &emu_engine_ops : &lcore_engine_ops;
	dc->engine = n;
	if (!n->o.emu) {
		ret = nicfw_lcore_start(n->lc, err, errlen);
		if (ret)
			return ret;
		printf("nic: executor chains on %u worker lcore(s)%s\n", nl,
		       nl ? "" : " (inline, interleaved with the packet loop)");
	}
	return 0;
}

/* The HEALTH report: identity and the models as the dispatcher holds them. */
static int nic_health_setup(struct nic *n, struct nicfw_disp_config *dc, char *err, size_t errlen)
{
	char ident[PROTO_HEALTH_IDENT_LEN + 1];

	snprintf(ident, sizeof(ident), "splitnic-nic@%u.%u.%u.%u", n->o.ip >> 24,
		 (n->o.ip >> 16) & 0xff, (n->o.ip >> 8) & 0xff, n->o.ip & 0xff);
	nicfw_health_init(&n->health, n->o.name ? n->o.name : ident);
	for (uint32_t i = 0; i < dc->n_models; i++) {
		const struct nicfw_disp_model *md = &dc->model[i];
		const struct model_shape *in = &n->m[i]->layers[md->layer].in;
		bool bits = md->in_fmt == PROTO_FMT_BITS;

		if (nicfw_health_add(&n->health, md->model_id, md->layer, md->in_fmt,
				     bits ? md->in_count : in->c, bits ? 1 : in->h,
				     bits ? 1 : in->w, md->classes, n->m[i]->name)) {
			snprintf(err, errlen, "health: more than %u models",
				 NICFW_HEALTH_MAX_MODELS);
			return -EINVAL;
		}
	}
	dc->health = &n->health;
	return 0;
}

static int nic_setup(struct nic *n, char *err, size_t errlen)
{
	struct nicfw_disp_config dc = {0};
	struct rte_ether_addr mac;
	int ret;

	if (rte_eth_dev_count_avail() < 2 || !rte_eth_dev_is_valid_port(n->o.wire) ||
	    !rte_eth_dev_is_valid_port(n->o.host)) {
		snprintf(err, errlen,
			 "need two ports (wire %u, host %u); %u available: give two --vdev",
			 n->o.wire, n->o.host, rte_eth_dev_count_avail());
		return -ENODEV;
	}
	n->tsc0 = rte_get_tsc_cycles();
	n->ns_per_tsc = 1e9 / (double)rte_get_tsc_hz();
	n->tm = calloc(n->o.n_models, sizeof(*n->tm));
	if (!n->tm) {
		snprintf(err, errlen, "out of memory");
		return -ENOMEM;
	}
	n->port_id[NICFW_PORT_WIRE] = n->o.wire;
	n->port_id[NICFW_PORT_HOST] = n->o.host;
	if (sem_init(&n->ctl_sem, 0, 0)) {
		snprintf(err, errlen, "semaphore: %s", strerror(errno));
		return -errno;
	}
	n->pool = rte_pktmbuf_pool_create("snnic_pool", NIC_MBUFS, 256, 0,
					  RTE_MBUF_DEFAULT_BUF_SIZE, rte_socket_id());
	if (!n->pool) {
		snprintf(err, errlen, "mbuf pool: %s", rte_strerror(rte_errno));
		return -ENOMEM;
	}
	ret = nic_setup_models(n, &dc, err, errlen);
	if (ret)
		return ret;
	for (int p = 0; p < 2; p++) {
		ret = port_init(n, p, err, errlen);
		if (ret)
			return ret;
	}
	ret = rte_eth_macaddr_get(n->o.wire, &mac);
	if (ret) {
		snprintf(err, errlen, "port %u: no MAC address", n->o.wire);
		return ret;
	}
	memcpy(dc.mac, mac.addr_bytes, 6);
	dc.ip = n->o.ip;
	dc.port = n->o.udp_port;
	dc.payload = n->o.payload;
	dc.notify_host = n->o.notify_host;
	dc.n_allow = n->o.n_allow;
	memcpy(dc.allow, n->o.allow, sizeof(dc.allow));
	dc.err_rate = n->o.err_rate;
	dc.err_burst = n->o.err_burst;
	dc.tx = nic_tx;
	dc.tx_arg = n;
	ret = nic_health_setup(n, &dc, err, errlen);
	if (ret)
		return ret;
	n->disp = nicfw_disp_create(&dc, err, errlen);
	if (!n->disp)
		return -EINVAL;
	nic_telemetry_register(n);
	return 0;
}

/* --- the packet loop ----------------------------------------------------------------------- */

static void send_all(struct nic *n, int port, struct rte_mbuf **pkts, uint16_t cnt)
{
	uint16_t sent = 0;

	if (unlikely(!n->usable[port])) { /* the backlog while the link is up, else dropped */
		if (n->link_up[port])
			sent = (uint16_t)rte_ring_sp_enqueue_burst(n->backlog[port], (void **)pkts,
								   cnt, NULL);
		n->backlogged[port] += sent;
		n->link_down_drop[port] += cnt - sent;
		rte_pktmbuf_free_bulk(pkts + sent, cnt - sent);
		return;
	}
	for (int tries = 0; sent < cnt && tries < NIC_TX_TRIES; tries++)
		sent += rte_eth_tx_burst(n->port_id[port], 0, pkts + sent, cnt - sent);
	if (n->link_gated[port])
		n->gated_frames += sent;
	if (unlikely(sent < cnt)) {
		n->tx_drop[port] += cnt - sent;
		rte_pktmbuf_free_bulk(pkts + sent, cnt - sent);
	}
}

static void rx_port(struct nic *n, enum nicfw_port from, uint64_t now)
{
	struct rte_mbuf *pkts[NIC_BURST], *pass[NIC_BURST], *back[NIC_BURST];
	uint16_t cnt, np = 0, nb = 0;

	if (unlikely(!n->usable[from]))
		return;
	cnt = rte_eth_rx_burst(n->port_id[from], 0, pkts, NIC_BURST);
	if (!cnt)
		return;
	if (n->link_gated[from])
		n->gated_frames += cnt;
	n->rx_frames += cnt;
	for (uint16_t i = 0; i < cnt; i++) {
		struct rte_mbuf *mb = pkts[i];
		enum nicfw_disp_action a;

		if (i + 1 < cnt)
			rte_prefetch0(rte_pktmbuf_mtod(pkts[i + 1], void *));
		if (unlikely(mb->nb_segs != 1)) {
			pass[np++] = mb; /* jumbo chains: not ours to parse, forwarded */
			nicfw_disp_count(
			    n->disp,
			    from == NICFW_PORT_WIRE ? NICFW_C_FWD_TO_HOST : NICFW_C_FWD_TO_WIRE, 1);
			continue;
		}
		a = nicfw_disp_rx(n->disp, from, rte_pktmbuf_mtod(mb, uint8_t *),
				  rte_pktmbuf_data_len(mb), now);
		if (likely(a == NICFW_DISP_PASS))
			pass[np++] = mb;
		else if (a == NICFW_DISP_REPLY)
			back[nb++] = mb;
		else
			rte_pktmbuf_free(mb);
	}
	if (np)
		send_all(n, !from, pass, np);
	if (nb)
		send_all(n, from, back, nb);
}

/*
 * Holding memif's control plane. memif connects and disconnects (unmapping the rings) on EAL's
 * interrupt thread, with nothing to keep it off the rings this loop is reading and writing: a
 * peer that goes away in the middle of a burst crashes the loop. So while a memif link is up the
 * loop keeps that thread waiting in ctl_hold() (an EAL alarm, which runs on it) and uses the
 * port only while it waits there. It lets the thread go (memif then handles what came in
 * meanwhile: a disconnect, a message) when the port has moved no frame for NIC_CTL_QUIET_US, when
 * the peer would not take what was sent (a full ring: it may be gone), when the link goes down,
 * and at least every NIC_CTL_PERIOD_US; the thread is free for at least NIC_CTL_GAP_US and held
 * again when it comes back. Until then, frames for the port wait in its backlog (NIC_BACKLOG)
 * and those from it in its ring: under traffic that pause (the interrupt thread's scheduling
 * delay, more on a loaded machine) comes once every NIC_CTL_PERIOD_US at most. A peer that is
 * gone is noticed within NIC_CTL_PERIOD_US; until then its rings stay mapped and simply fill up.
 * While the link is down the thread runs free (the peer can connect) and the port is not
 * touched.
 */
static void ctl_hold(void *arg)
{
	struct nic *n = arg;

	__atomic_store_n(&n->ctl_state, NIC_CTL_HELD, __ATOMIC_RELEASE);
	while (sem_wait(&n->ctl_sem) && errno == EINTR)
		;
	__atomic_store_n(&n->ctl_state, NIC_CTL_FREE, __ATOMIC_RELEASE);
	/* a gap: EAL runs every alarm already due before it polls its descriptors again */
	if (__atomic_load_n(&n->ctl_rearm, __ATOMIC_ACQUIRE) &&
	    !rte_eal_alarm_set(NIC_CTL_GAP_US, ctl_hold, n))
		return;
	__atomic_store_n(&n->ctl_armed, false, __ATOMIC_RELEASE);
}

/* Let the interrupt thread go; rearm: hold it again when it is done (ctl_hold()). */
static void ctl_release(struct nic *n, bool rearm)
{
	__atomic_store_n(&n->ctl_rearm, rearm, __ATOMIC_RELEASE);
	__atomic_store_n(&n->ctl_state, NIC_CTL_RELEASING, __ATOMIC_RELEASE);
	sem_post(&n->ctl_sem);
}

/* A gated port's link, read from memory (memif's link_update does no I/O). */
static bool link_is_up(const struct nic *n, int p)
{
	struct rte_eth_link link;

	return !rte_eth_link_get_nowait(n->port_id[p], &link) &&
	       link.link_status == RTE_ETH_LINK_UP;
}

/*
 * This turn's use of the gated ports: usable only while the interrupt thread is held and the
 * link is up. A port that is up but not usable (the thread let go for a moment) keeps its frames
 * in its backlog, sent once it is usable again; a port whose link is down drops them.
 */
static void links_check(struct nic *n, uint64_t cyc)
{
	bool held = __atomic_load_n(&n->ctl_state, __ATOMIC_ACQUIRE) == NIC_CTL_HELD;
	bool any_up = false, stuck;
	struct rte_mbuf *pkts[NIC_BURST];
	uint64_t drops;
	unsigned k;

	if (likely(!n->link_gated[0] && !n->link_gated[1]))
		return;
	for (int p = 0; p < 2; p++) {
		if (!n->link_gated[p])
			continue;
		n->link_up[p] = link_is_up(n, p);
		n->usable[p] = held && n->link_up[p];
		any_up |= n->link_up[p];
		if (unlikely(!n->usable[p] && n->txb[p]->length)) {
			n->link_down_drop[p] += n->txb[p]->length;
			rte_pktmbuf_free_bulk(n->txb[p]->pkts, n->txb[p]->length);
			n->txb[p]->length = 0;
		}
		while (
		    (n->usable[p] || !n->link_up[p]) &&
		    (k = rte_ring_sc_dequeue_burst(n->backlog[p], (void **)pkts, NIC_BURST, NULL)))
			send_all(n, p, pkts, (uint16_t)k);
	}
	/* what the peer did: frames moved (it is there), or some it would not take (it may not be)
	 */
	drops = n->link_gated[0] * n->tx_drop[0] + n->link_gated[1] * n->tx_drop[1];
	stuck = drops != n->drops_seen;
	n->drops_seen = drops;
	if (n->gated_frames != n->gated_seen || !held) {
		n->gated_seen = n->gated_frames;
		n->ctl_quiet = cyc;
	}
	if (held && (!any_up || stuck || cyc >= n->ctl_next ||
		     cyc - n->ctl_quiet >= rte_get_tsc_hz() / 1000000 * NIC_CTL_QUIET_US)) {
		ctl_release(n, any_up);
		n->ctl_next = cyc + rte_get_tsc_hz() / 1000000 * NIC_CTL_PERIOD_US;
		n->ctl_quiet = cyc;
		n->usable[0] = !n->link_gated[0];
		n->usable[1] = !n->link_gated[1];
	} else if (!held && any_up && !__atomic_load_n(&n->ctl_armed, __ATOMIC_ACQUIRE)) {
		__atomic_store_n(&n->ctl_rearm, true, __ATOMIC_RELEASE);
		__atomic_store_n(&n->ctl_armed, true, __ATOMIC_RELEASE);
		if (rte_eal_alarm_set(1, ctl_hold, n))
			__atomic_store_n(&n->ctl_armed, false, __ATOMIC_RELEASE);
	}
}

/* At exit: the interrupt thread free for good (before anything else is asked of it). */
static void ctl_stop(struct nic *n)
{
	__atomic_store_n(&n->ctl_rearm, false, __ATOMIC_RELEASE);
	for (int i = 0; i < 5000 && __atomic_load_n(&n->ctl_armed, __ATOMIC_ACQUIRE); i++) {
		if (__atomic_load_n(&n->ctl_state, __ATOMIC_ACQUIRE) == NIC_CTL_HELD)
			ctl_release(n, false);
		rte_delay_us_sleep(1000);
	}
	rte_eal_alarm_cancel(ctl_hold, n);
}

/* Every NIC_LINK_POLL_NS: the HEALTH state from SIGTERM and the host port's link. Returns
 * false when the drain is over (nothing held, or --drain-ms passed). */
static bool nic_health_update(struct nic *n, uint64_t now, uint64_t *next, uint64_t *drain_end)
{
	struct rte_eth_link l = {0};

	if (unlikely(nic_quit && !*drain_end)) {
		*drain_end = now + n->o.drain_ns + 1;
		printf("nic: %s: draining %u request(s)\n",
		       nic_quit == SIGINT ? "SIGINT" : "SIGTERM", nicfw_disp_pending(n->disp));
		fflush(stdout);
	}
	if (*drain_end && (!nicfw_disp_pending(n->disp) || now >= *drain_end))
		return false;
	if (now < *next)
		return true;
	*next = now + NIC_LINK_POLL_NS;
	rte_eth_link_get_nowait(n->port_id[NICFW_PORT_HOST], &l);
	n->health.state = nicfw_health_state(&n->health, *drain_end != 0, l.link_status);
	return true;
}

static void nic_loop(struct nic *n)
{
	const uint64_t t_end =
	    n->o.duration > 0
		? rte_get_tsc_cycles() + (uint64_t)(n->o.duration * (double)rte_get_tsc_hz())
		: UINT64_MAX;
	uint64_t cyc, now, next_check = 0, drain_end = 0, rx0;
	uint32_t idle = 0;

	for (;;) {
		cyc = rte_get_tsc_cycles();
		if (unlikely(cyc >= t_end))
			break;
		now = (uint64_t)((double)(cyc - n->tsc0) * n->ns_per_tsc);
		if (!nic_health_update(n, now, &next_check, &drain_end))
			break;
		links_check(n, cyc);
		rx0 = n->rx_frames;
		rx_port(n, NICFW_PORT_WIRE, now);
		rx_port(n, NICFW_PORT_HOST, now);
		if (n->lc)
			nicfw_lcore_run(n->lc, NIC_RUN_SLICE);
		nicfw_disp_poll(n->disp, nic_now(n));
		for (int p = 0; p < 2; p++)
			if (likely(n->usable[p]))
				n->gated_frames +=
				    n->link_gated[p] *
				    rte_eth_tx_buffer_flush(n->port_id[p], 0, n->txb[p]);
		n->loops++;
		if (n->rx_frames != rx0 || nicfw_disp_pending(n->disp))
			idle = 0;
		else if (n->o.idle_sleep_us && ++idle > 1000)
			rte_delay_us_sleep(n->o.idle_sleep_us);
	}
}

/* The last EAL alarm: says it runs, then keeps the interrupt thread until the process ends
 * (see nic_teardown()). */
static void intr_park(void *arg)
{
	struct nic *n = arg;

	__atomic_store_n(&n->intr_parked, true, __ATOMIC_RELEASE);
	while (sem_wait(&n->ctl_sem) == 0 || errno == EINTR)
		;
}

/* Run cb on the interrupt thread (an EAL alarm) and wait, at most 5 s, until *done; false if it
 * did not (cb then runs later or never). */
static bool on_intr_thread(rte_eal_alarm_callback cb, void *arg, bool *done)
{
	if (rte_eal_alarm_set(1, cb, arg))
		return false;
	for (int i = 0; i < 5000 && !__atomic_load_n(done, __ATOMIC_ACQUIRE); i++)
		rte_delay_us_sleep(1000);
	return __atomic_load_n(done, __ATOMIC_ACQUIRE);
}

/* Stop and close the ports (an EAL alarm: on the interrupt thread, see the top). */
static void ports_close(void *arg)
{
	struct nic *n = arg;

	for (int p = 0; p < 2; p++) {
		if (!n->txb[p])
			continue;
		rte_pktmbuf_free_bulk(n->txb[p]->pkts, n->txb[p]->length);
		n->txb[p]->length = 0;
		rte_eth_dev_stop(n->port_id[p]);
		rte_eth_dev_close(n->port_id[p]);
	}
	__atomic_store_n(&n->ports_closed, true, __ATOMIC_RELEASE);
}

/* Everything set up, undone; false when EAL's own cleanup must be left out (see below). */
static bool nic_teardown(struct nic *n)
{
	bool parked;

	nic_telemetry_register(NULL);
	if (n->lc)
		nicfw_lcore_stop(n->lc);
	ctl_stop(n);
	if (!on_intr_thread(ports_close, n, &n->ports_closed) &&
	    rte_eal_alarm_cancel(ports_close, n) > 0)
		ports_close(n);
	/*
	 * The interrupt thread reads the handles of every interrupt source, which live in DPDK's
	 * memory, whenever anything happens on one of them (e.g. the host's memif reconnecting
	 * while we exit; memif leaves its listener's source behind with a freed handle), and
	 * rte_eal_cleanup() unmaps that memory under it: keep the thread in an alarm of ours until
	 * the process ends, and leave rte_eal_cleanup() out (it would wait for that alarm forever).
	 */
	parked = on_intr_thread(intr_park, n, &n->intr_parked);
	for (int p = 0; p < 2; p++) {
		struct rte_mbuf *mb = NULL;

		rte_free(n->txb[p]);
		while (n->backlog[p] && !rte_ring_sc_dequeue(n->backlog[p], (void **)&mb))
			rte_pktmbuf_free(mb);
		rte_ring_free(n->backlog[p]);
	}
	nicfw_disp_free(n->disp);
	nicfw_lcore_free(n->lc);
	for (uint32_t i = 0; i < NICFW_DISP_MAX_MODELS; i++) {
		nicfw_emu_free(n->emu[i].e);
		free(n->emu[i].scores);
		model_free(n->m[i]);
	}
	free(n->tm);
	rte_mempool_free(n->pool);
	return !parked;
}

int main(int argc, char **argv)
{
	static struct nic nic;
	struct nic *n = &nic;
	int ret, status = 1;
	char err[512];
	FILE *f;

	ret = kern_blas_one_thread(argv);
	if (ret)
		fprintf(stderr, "nic: cannot restart with one OpenBLAS thread: %s\n",
			strerror(-ret));
	ret = conf_apply(&nic_conf, &argc, &argv);
	if (ret)
		return ret < 0 ? 2 : 0;
	ret = rte_eal_init(argc, argv);
	if (ret < 0) {
		fprintf(stderr, "nic: rte_eal_init: %s\n", rte_strerror(rte_errno));
		return 1;
	}
	argc -= ret;
	argv += ret;
	argv[0] = "splitnic-nic";
	ret = nic_opts_parse(&n->o, argc, argv);
	if (ret) {
		status = 2;
		goto out_eal;
	}
	signal(SIGINT, on_signal);
	signal(SIGTERM, on_signal);
	ret = nic_setup(n, err, sizeof(err));
	if (ret) {
		fprintf(stderr, "nic: %s\n", err);
		goto out_teardown;
	}
	printf("nic: forwarding port %u (wire) <-> port %u (host), inference on UDP %u%s; "
	       "telemetry /splitnic/nic/stats\n",
	       n->o.wire, n->o.host, n->o.udp_port, n->o.ip ? ", answering ARP" : "");
	fflush(stdout);
	nic_loop(n);
	printf("nic: %s after %lu loop turns, %u request(s) left\n",
	       nic_quit ? (nic_quit == SIGINT ? "SIGINT" : "SIGTERM") : "duration reached",
	       (unsigned long)n->loops, nicfw_disp_pending(n->disp));
	f = n->o.stats_file ? fopen(n->o.stats_file, "w") : NULL;
	if (n->o.stats_file && !f)
		fprintf(stderr, "nic: %s: %s\n", n->o.stats_file, strerror(errno));
	nic_stats_write(n, f ? f : stdout);
	if (f)
		fclose(f);
	fflush(stdout);
	status = 0;
out_teardown:
	if (!nic_teardown(n))
		return status;
out_eal:
	rte_eal_cleanup();
	return status;
}
