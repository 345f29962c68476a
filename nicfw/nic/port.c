// SPDX-License-Identifier: MIT
/*
 * splitnic-nic's two ports (nicfw/nic/nic.h): set-up, frames out (buffered, or burst), and the
 * gated ports: a net_memif port is polled and transmitted to only while its link is up and
 * memif's control plane (on EAL's interrupt thread, where a disconnecting peer makes it unmap
 * the shared rings) is held off, see ctl_hold(). At exit the ports are stopped and closed from
 * an EAL alarm, i.e. on that same interrupt thread, so that a disconnect of the peer stopping at
 * the same moment cannot run in the middle of ours; then that thread is parked for good.
 */
#include <errno.h>
#include <semaphore.h>
#include <string.h>

#include <rte_alarm.h>
#include <rte_cycles.h>
#include <rte_errno.h>
#include <rte_ethdev.h>
#include <rte_malloc.h>
#include <rte_mbuf.h>
#include <rte_ring.h>

#include "nicfw/nic/nic.h"

int nic_tx(void *arg, enum nicfw_port port, const uint8_t *frame, uint32_t len)
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
		nic_send(n, port, &mb, 1);
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

int nic_port_init(struct nic *n, int which, char *err, size_t errlen)
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

void nic_send(struct nic *n, int port, struct rte_mbuf **pkts, uint16_t cnt)
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
void nic_links_check(struct nic *n, uint64_t cyc)
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
			nic_send(n, p, pkts, (uint16_t)k);
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

/* The last EAL alarm: says it runs, then keeps the interrupt thread until the process ends
 * (see nic_ports_close()). */
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

bool nic_ports_close(struct nic *n)
{
	bool parked;

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
	return parked;
}
