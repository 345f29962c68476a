// SPDX-License-Identifier: MIT
/*
 * splitnic-host: the port: how many queue pairs, who spreads requests between the workers, the
 * link state and restarts (see host/host_dpdk.h for the lcore model).
 */
#include <errno.h>
#include <string.h>

#include <rte_ethdev.h>
#include <rte_pause.h>

#include "host/host_dpdk.h"

/* The queue pairs: --queues, else as many as the workers where the port has them; a memif's
 * peer must have as many (splitnic-nic has one), so one unless asked. */
static int port_queues(struct host_app *a, const struct rte_eth_dev_info *info, bool memif,
		       bool afp, char *err, size_t errlen)
{
	const uint16_t max = RTE_MIN(info->max_rx_queues, info->max_tx_queues);
	uint32_t nq = a->o.queues ? a->o.queues : memif ? 1 : RTE_MIN(a->n_workers, max);

	if (!nq || nq > max || nq > a->n_workers) {
		snprintf(err, errlen,
			 "--queues %u: the port (%s) has %u queue pairs, and %u worker "
			 "lcore(s) to poll them",
			 nq, info->driver_name, max, a->n_workers);
		return -EINVAL;
	}
	if (afp && info->max_rx_queues != nq) {
		/* every af_packet socket of the fanout group receives its share, polled or not */
		snprintf(err, errlen,
			 "net_af_packet has qpairs=%u and every queue receives: give "
			 "as many worker lcores as qpairs (%u worker lcore(s) here)",
			 info->max_rx_queues, a->n_workers);
		return -EINVAL;
	}
	a->nq = (uint16_t)nq;
	return 0;
}

int host_port_init(struct host_app *a, char *err, size_t errlen)
{
	struct rte_eth_conf conf = {0};
	struct rte_eth_dev_info info;
	struct rte_ether_addr mac;
	uint16_t nrx = HOST_RX_DESC, ntx = HOST_TX_DESC;
	bool memif, afp, rss = false;
	int ret;

	if (!rte_eth_dev_count_avail()) {
		snprintf(err, errlen, "no port: give one --vdev (net_memif role=client, ...)");
		return -ENODEV;
	}
	a->port = 0;
	ret = rte_eth_dev_info_get(a->port, &info);
	if (ret) {
		snprintf(err, errlen, "port %u: %s", a->port, strerror(-ret));
		return ret;
	}
	memif = !strcmp(info.driver_name, "net_memif");
	afp = !strcmp(info.driver_name, "net_af_packet");
	ret = port_queues(a, &info, memif, afp, err, errlen);
	if (ret)
		return ret;
	if (a->nq > 1 && (info.flow_type_rss_offloads & RTE_ETH_RSS_NONFRAG_IPV4_UDP)) {
		conf.rxmode.mq_mode = RTE_ETH_MQ_RX_RSS;
		conf.rx_adv_conf.rss_conf.rss_hf = RTE_ETH_RSS_NONFRAG_IPV4_UDP;
		rss = true;
	}
	a->sw_spread = a->n_workers > 1 && !(a->nq == a->n_workers && (afp || rss));
	a->spread_by = a->n_workers == 1 ? "one worker"
		       : !a->sw_spread ? (afp ? "by the port (af_packet's fanout hash of the flow)"
					      : "by the port (RSS on the UDP 5-tuple)")
				       : "in software (front-end address, port and request id)";
	a->udp_offload = (info.tx_offload_capa & RTE_ETH_TX_OFFLOAD_UDP_CKSUM) != 0;
	if (a->udp_offload)
		conf.txmode.offloads |= RTE_ETH_TX_OFFLOAD_UDP_CKSUM;
	ret = rte_eth_dev_configure(a->port, a->nq, a->nq, &conf);
	if (!ret)
		ret = rte_eth_dev_adjust_nb_rx_tx_desc(a->port, &nrx, &ntx);
	for (uint16_t q = 0; !ret && q < a->nq; q++) {
		ret = rte_eth_rx_queue_setup(a->port, q, nrx, rte_eth_dev_socket_id(a->port), NULL,
					     a->pool);
		if (!ret)
			ret = rte_eth_tx_queue_setup(a->port, q, ntx,
						     rte_eth_dev_socket_id(a->port), NULL);
	}
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

bool host_port_enter(struct host_worker *w)
{
	const uint32_t e = __atomic_load_n(&w->a->port_epoch, __ATOMIC_ACQUIRE);

	__atomic_store_n(&w->seen_epoch, e, __ATOMIC_RELEASE);
	w->link_up = w->a->link_up;
	return !(e & 1) && w->a->started;
}

/* Stop and start the port with no worker on it: an odd epoch, acknowledged by every worker
 * (each reads the epoch at the start of a turn and touches the port only under an even one). */
static void port_restart(struct host_app *a)
{
	const uint32_t e = a->port_epoch + 1;

	__atomic_store_n(&a->port_epoch, e, __ATOMIC_RELEASE);
	for (unsigned i = 1; i < a->n_workers; i++)
		while (__atomic_load_n(&a->w[i].seen_epoch, __ATOMIC_ACQUIRE) != e &&
		       !a->workers_stop)
			rte_pause();
	if (a->started)
		rte_eth_dev_stop(a->port);
	a->started = rte_eth_dev_start(a->port) == 0;
	__atomic_store_n(&a->port_epoch, e + 1, __ATOMIC_RELEASE);
}

/* Link state of the port (the NIC's memif server): polled, restarted while down. */
void host_link_check(struct host_app *a, uint64_t now)
{
	struct rte_eth_link l;

	if (now - a->link_checked < HOST_LINK_POLL_NS)
		return;
	a->link_checked = now;
	if (rte_eth_link_get_nowait(a->port, &l))
		return;
	if (a->link_up && !l.link_status) {
		a->w[0].c[HOST_C_LINK_DOWN]++;
		a->link_restarted = now;
	}
	a->link_up = l.link_status;
	if (!l.link_status && now - a->link_restarted > HOST_RESTART_NS) {
		/* memif: a client reconnects at start; a restarted server needs a new start */
		a->link_restarted = now;
		a->w[0].c[HOST_C_PORT_RESTARTS]++;
		port_restart(a);
	}
}
