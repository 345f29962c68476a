// SPDX-License-Identifier: MIT
/*
 * splitnic-nic (man/splitnic-nic.8): a DPDK process that is the NIC, run by the DPDK servers'
 * skeleton (dpdk/server.h). Two ports, the wire (front-ends) and the host (nicfw/nic/port.c).
 * The main lcore runs the packet loop (rx burst -> dispatcher -> tx burst, both directions) and
 * never computes a layer; the executor chains run on the worker lcores (platform lcore, wall
 * time) or, with no worker, interleaved with the loop in bounded slices. Each model is one
 * executor (exec/kexec.h) that the dispatcher drives: a chain on the lcore platform the models
 * share, or the emulator serving in modeled time (nicfw/emu/exec_emu.h): at start each model's
 * chain is warmed on the emulator until its modeled time per request is steady; each request is
 * then computed by the same firmware in the loop (DIRECT layout) and its result released when
 * the clock reaches its modeled completion, the chain busy until then: modeled start =
 * max(arrival, the previous request's modeled completion), so requests back to back queue as on
 * the NFP. Each model's chain is its own modeled NIC. The RESPONSE's nic field is then time
 * really spent.
 */
#include <errno.h>
#include <semaphore.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <rte_cycles.h>
#include <rte_ethdev.h>
#include <rte_lcore.h>
#include <rte_mbuf.h>
#include <rte_prefetch.h>
#include <rte_random.h>

#include "dpdk/server.h"
#include "exec/kexec.h"
#include "kernels/kern.h"
#include "nicfw/chain.h"
#include "nicfw/dispatch.h"
#include "nicfw/emu/exec_emu.h"
#include "nicfw/health.h"
#include "nicfw/lcore/lcore.h"
#include "nicfw/nic/nic.h"

/* The loop's clock: ns since start, the clock the dispatcher's now_ns is on. */
static uint64_t nic_now(const struct nic *n)
{
	return (uint64_t)((double)(rte_get_tsc_cycles() - n->tsc0) * n->ns_per_tsc);
}

/* --- set-up -------------------------------------------------------------------------------- */

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
		ret = nic_slot_load(n, i, n->o.model_path[i], n->o.id_given[i], n->o.model_id[i],
				    n->o.first[i], &dc->model[i], "nic", err, errlen);
		if (ret)
			return ret;
		n->map[i] = (uint8_t)i;
	}
	dc->n_models = n->n_map = n->o.n_models;
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
	dc->health = &n->health;
	return nic_health_models(n, n->map, n->n_map, &n->health, err, errlen);
}

static int nic_setup(void *srv, char *err, size_t errlen)
{
	struct nic *n = srv;
	struct nicfw_disp_config dc = {0};
	struct rte_ether_addr mac;
	int ret;

	if (!rte_eth_dev_is_valid_port(n->o.wire) || !rte_eth_dev_is_valid_port(n->o.host)) {
		snprintf(
		    err, errlen,
		    "no port %u (--%s-port): %u port(s) found (listed above); the wire and the "
		    "host need one each: give a --vdev (or a PCI device) for each",
		    rte_eth_dev_is_valid_port(n->o.wire) ? n->o.host : n->o.wire,
		    rte_eth_dev_is_valid_port(n->o.wire) ? "host" : "wire",
		    rte_eth_dev_count_avail());
		return -ENODEV;
	}
	n->tsc0 = rte_get_tsc_cycles();
	n->ns_per_tsc = 1e9 / (double)rte_get_tsc_hz();
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
		ret = nic_port_init(n, p, err, errlen);
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
	dc.trust = n->o.trust;
	proto_trust_set_rate(&dc.trust, n->o.err_rate, n->o.err_burst);
	dc.tx = nic_tx;
	dc.tx_arg = n;
	if (n->o.host_probe_ns) {
		n->hostv.key = rte_rand();
		dc.host = &n->hostv;
	}
	ret = nic_health_setup(n, &dc, err, errlen);
	if (ret)
		return ret;
	n->disp = nicfw_disp_create(&dc, err, errlen);
	if (!n->disp)
		return -EINVAL;
	return nic_reload_setup(n, err, errlen);
}

/* --- the packet loop ----------------------------------------------------------------------- */

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
		nic_send(n, !from, pass, np);
	if (nb)
		nic_send(n, from, back, nb);
}

/* With --host-probe-ms, every loop turn: a probe when one is due, and whether the host answers:
 * its link up and a frame from it (a report, an ACTIVATION, anything) within NIC_HOST_MISSES
 * periods; the NIC's start and the link coming up count as one (a host that has just connected
 * is given the periods to answer, as one that has just gone is given them to be missed; till
 * then it is fresh: a host that has not listed its models yet gets any model passed up), and
 * a time the NIC did not listen does not count as silence: this loop not running (descheduled,
 * the machine paused), or a gated host port not polled (port.c: memif's control plane let go,
 * the host's frames waiting). */
static void nic_host_check(struct nic *n, uint64_t now, bool link_up)
{
	const uint64_t period = n->o.host_probe_ns;
	struct nicfw_host_view *h = &n->hostv;

	if (link_up && (!n->host_link_seen || !h->last_heard)) {
		h->last_heard = now ? now : 1;
		n->host_fresh_end = now + NIC_HOST_MISSES * period;
		n->probe_next = now;
	} else if (now - n->host_checked > period || !n->usable[NICFW_PORT_HOST]) {
		/* not listening: not heard either */
		h->last_heard = RTE_MIN(now, h->last_heard + (now - n->host_checked));
	}
	n->host_checked = now;
	n->host_link_seen = link_up;
	if (link_up && now >= n->probe_next) {
		nicfw_disp_probe_host(n->disp, now);
		n->probe_next = now + period;
	}
	h->up = link_up && h->last_heard && h->last_heard + NIC_HOST_MISSES * period >= now;
	h->fresh = h->up && now < n->host_fresh_end;
}

/* Every NIC_LINK_POLL_NS: the HEALTH state from the drain, the host port's link and (with
 * --host-probe-ms) whether the host answers. */
static void nic_health_update(struct nic *n, uint64_t now)
{
	struct rte_eth_link l = {0};
	bool host_up;

	if (now < n->health_next)
		return;
	n->health_next = now + NIC_LINK_POLL_NS;
	rte_eth_link_get_nowait(n->port_id[NICFW_PORT_HOST], &l);
	host_up = l.link_status && (n->o.host_probe_ns ? n->hostv.up : n->link_up[NICFW_PORT_HOST]);
	n->health.state = nicfw_health_state(&n->health, n->draining, host_up);
}

/* One turn of the packet loop: its work is the frames received and the requests held. */
static uint32_t nic_step(void *srv)
{
	struct nic *n = srv;
	const uint64_t cyc = rte_get_tsc_cycles(), rx0 = n->rx_frames;
	const uint64_t now = (uint64_t)((double)(cyc - n->tsc0) * n->ns_per_tsc);

	if (unlikely(__atomic_load_n(&n->chg_asked, __ATOMIC_ACQUIRE) != n->chg_done))
		nic_reload_apply(n);
	nic_links_check(n, cyc);
	/* the host port first: after a stall of this loop, what the host sent meanwhile says it
	 * is there before the HEALTH state and the wire's requests are decided */
	rx_port(n, NICFW_PORT_HOST, now);
	if (n->o.host_probe_ns)
		nic_host_check(n, now, n->link_up[NICFW_PORT_HOST]);
	nic_health_update(n, now);
	rx_port(n, NICFW_PORT_WIRE, now);
	if (n->lc)
		nicfw_lcore_run(n->lc, NIC_RUN_SLICE);
	nicfw_disp_poll(n->disp, nic_now(n));
	for (int p = 0; p < 2; p++)
		if (likely(n->usable[p]))
			n->gated_frames +=
			    n->link_gated[p] * rte_eth_tx_buffer_flush(n->port_id[p], 0, n->txb[p]);
	n->loops++;
	return (uint32_t)(n->rx_frames - rx0) + nicfw_disp_pending(n->disp);
}

/* --- the skeleton's operations (dpdk/server.h) --------------------------------------------- */

static int nic_options(void *srv, int argc, char **argv, struct dpdk_run *run)
{
	struct nic *n = srv;
	int ret = nic_opts_parse(&n->o, argc, argv);

	*run = n->o.run;
	return ret;
}

static void nic_start(void *srv)
{
	struct nic *n = srv;

	printf("nic: forwarding port %u (wire) <-> port %u (host), inference on UDP %u%s; "
	       "telemetry /splitnic/nic/stats\n",
	       n->o.wire, n->o.host, n->o.udp_port, n->o.ip ? ", answering ARP" : "");
}

/* SIGINT/SIGTERM: HEALTH says draining from now on, the dispatcher refuses new REQUESTs for
 * stand-alone models (nicfw/health.h). */
static void nic_drain(void *srv)
{
	struct nic *n = srv;

	n->draining = true;
	n->health_next = 0;
	nic_health_update(n, nic_now(n));
}

static uint32_t nic_in_use(void *srv)
{
	return nicfw_disp_pending(((struct nic *)srv)->disp);
}

static void nic_stop(void *srv, int sig)
{
	struct nic *n = srv;

	__atomic_store_n(&n->loop_over, true, __ATOMIC_RELEASE);
	printf("nic: %s after %lu loop turns, %u request(s) left\n",
	       sig ? dpdk_signal_name(sig) : "duration reached", (unsigned long)n->loops,
	       nicfw_disp_pending(n->disp));
}

static bool nic_teardown(void *srv)
{
	struct nic *n = srv;
	bool parked;

	__atomic_store_n(&n->loop_over, true, __ATOMIC_RELEASE);
	nic_reload_teardown(n);
	if (n->lc)
		nicfw_lcore_stop(n->lc);
	parked = nic_ports_close(n);
	nicfw_disp_free(n->disp);
	for (uint32_t i = 0; i < NICFW_DISP_MAX_MODELS; i++)
		kexec_close(&n->x[i]);
	nicfw_lcore_free(n->lc);
	for (uint32_t i = 0; i < NICFW_DISP_MAX_MODELS; i++)
		model_free(n->m[i]);
	rte_mempool_free(n->pool);
	return !parked;
}

static const struct dpdk_server nic_server = {
    .who = "nic",
    .conf = &nic_conf,
    .stats_path = "/splitnic/nic/stats",
    .stats_help = "splitnic-nic counters: dispatcher reasons, parser verdicts, reassembly, ports",
    .tel = nic_tel_cmds,
    .n_tel = NIC_N_TEL_CMDS,
    .metrics = &nic_metrics_ops,
    .options = nic_options,
    .setup = nic_setup,
    .start = nic_start,
    .step = nic_step,
    .drain = nic_drain,
    .in_use = nic_in_use,
    .stop = nic_stop,
    .counters = nic_counters,
    .report = nic_report,
    .teardown = nic_teardown,
    .reloader = nic_reloader,
    .no_reload = "no reloader: restart to change the models",
    .reload_path = "/splitnic/nic/reload",
};

int main(int argc, char **argv)
{
	static struct nic nic = {.rd_lock = PTHREAD_MUTEX_INITIALIZER};

	return dpdk_server_main(&nic_server, &nic, argc, argv);
}
