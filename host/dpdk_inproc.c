// SPDX-License-Identifier: MIT
/*
 * splitnic-host: the in-process NIC stage (--nic inproc): the dispatcher and executor chains
 * on the NIC lcore, ACTIVATIONs in and frames out over rte_rings. Each co-processor model's
 * NIC part is an executor (exec/kexec.h) on the lcore platform they share, whose inline runner
 * this lcore drives.
 */
#include <errno.h>
#include <string.h>

#include <rte_errno.h>
#include <rte_lcore.h>
#include <rte_memcpy.h>

#include "dpdk/idle.h"
#include "host/host_dpdk.h"

/* The dispatcher's transmit: every frame back to the worker that owns its request, over that
 * worker's ring, its NIC port in mb->port. Runs on the NIC lcore. */
static int inproc_tx(void *arg, enum nicfw_port port, const uint8_t *frame, uint32_t len)
{
	struct host_app *a = arg;
	struct rte_mbuf *mb = rte_pktmbuf_alloc(a->pool);
	char *p;

	if (unlikely(!mb))
		goto out_drop;
	p = rte_pktmbuf_append(mb, (uint16_t)len);
	if (unlikely(!p))
		goto out_free;
	rte_memcpy(p, frame, len);
	mb->port = (uint16_t)port;
	if (likely(!rte_ring_sp_enqueue(a->w[host_frame_owner(a, frame, len)].from_nic, mb)))
		return 0;
out_free:
	rte_pktmbuf_free(mb);
out_drop:
	a->inproc.tx_drop++;
	return -ENOBUFS;
}

/* One turn of the NIC: ACTIVATION frames in, chain handlers, finished inferences out. */
uint32_t host_inproc_step(struct host_app *a)
{
	struct host_inproc *x = &a->inproc;
	struct rte_mbuf *pkts[HOST_BURST];
	uint32_t n = rte_ring_sc_dequeue_burst(x->to_nic, (void **)pkts, HOST_BURST, NULL);
	uint64_t now = host_now_ns(a);

	for (uint32_t i = 0; i < n; i++) {
		/* PASS or REPLY: nowhere to go (no wire port in this process); dropped */
		if (likely(pkts[i]->nb_segs == 1))
			nicfw_disp_rx(x->disp, NICFW_PORT_HOST,
				      rte_pktmbuf_mtod(pkts[i], uint8_t *),
				      rte_pktmbuf_data_len(pkts[i]), now);
	}
	if (n)
		rte_pktmbuf_free_bulk(pkts, n);
	n += nicfw_lcore_run(x->lc, HOST_NIC_SLICE);
	n += nicfw_disp_poll(x->disp, host_now_ns(a));
	return n;
}

int host_inproc_main(void *arg)
{
	struct host_app *a = arg;
	struct dpdk_idle idle;

	dpdk_idle_init(&idle, a->o.run.poll, a->o.run.idle_sleep_us);
	while (!a->workers_stop)
		dpdk_idle_after(&idle, host_inproc_step(a));
	return 0;
}

/* The NIC stage of every co-processor model at its split, on the platform lcore's inline
 * runner (driven by host_inproc_step()), and the dispatcher in front of it. */
int host_inproc_setup(struct host_app *a, char *err, size_t errlen)
{
	struct host_inproc *x = &a->inproc;
	struct nicfw_disp_config dc = {0};
	char name[RTE_RING_NAMESIZE];
	int ret;

	x->lc = nicfw_lcore_create(NULL, 0, err, errlen);
	if (!x->lc)
		return -EINVAL;
	for (uint32_t k = 0; k < a->n_models; k++) {
		const struct nicfw_exec_lcore_conf lc = {.executors = a->o.nic_executors,
							 .platform = x->lc};
		const struct host_model *hm = &a->hm[k];
		struct kexec *e = &x->x[dc.n_models];

		if (hm->mode != HOST_MODE_COPROC)
			continue;
		ret = kexec_open(e, &nicfw_exec_lcore_ops, &lc, err, errlen);
		if (!ret)
			ret = kexec_load(e, hm->m, hm->split, hm->m->n_layers, 1, err, errlen);
		if (!ret)
			ret = nicfw_disp_model_init(&dc.model[dc.n_models], hm->model_id, e, err,
						    errlen);
		if (ret)
			return ret;
		dc.n_models++;
	}
	ret = nicfw_lcore_start(x->lc, err, errlen);
	if (ret)
		return ret;
	x->to_nic = rte_ring_create("snhost_to_nic", HOST_NIC_RING, rte_socket_id(), RING_F_SC_DEQ);
	for (unsigned i = 0; x->to_nic && i < a->n_workers; i++) {
		snprintf(name, sizeof(name), "snhost_nic%u", i);
		a->w[i].from_nic = rte_ring_create(name, HOST_NIC_RING, rte_socket_id(),
						   RING_F_SP_ENQ | RING_F_SC_DEQ);
		if (!a->w[i].from_nic)
			break;
	}
	if (!x->to_nic || !a->w[a->n_workers - 1].from_nic) {
		snprintf(err, errlen, "in-process NIC rings: %s", rte_strerror(rte_errno));
		return -ENOMEM;
	}
	memcpy(dc.mac, a->mac, 6);
	dc.ip = 0; /* the port faces the front-ends: no ARP from the NIC stage */
	dc.port = a->o.udp_port;
	dc.payload = a->o.payload;
	dc.notify_host = true;
	dc.tx = inproc_tx;
	dc.tx_arg = a;
	x->disp = nicfw_disp_create(&dc, err, errlen);
	if (!x->disp)
		return -EINVAL;
	printf("host: in-process NIC stage: %u model(s) on %u executors each, %s\n", dc.n_models,
	       a->o.nic_executors,
	       x->lcore == RTE_MAX_LCORE ? "inline on the main lcore" : "on its own lcore");
	return 0;
}

void host_inproc_teardown(struct host_app *a)
{
	struct host_inproc *x = &a->inproc;
	struct rte_mbuf *mb = NULL;

	for (unsigned i = 0; i <= a->n_workers; i++) {
		struct rte_ring *r = i < a->n_workers && a->w ? a->w[i].from_nic : x->to_nic;

		while (r && !rte_ring_dequeue(r, (void **)&mb))
			rte_pktmbuf_free(mb);
		rte_ring_free(r);
	}
	nicfw_disp_free(x->disp);
	for (uint32_t k = 0; k < HOST_MAX_MODELS; k++)
		kexec_close(&x->x[k]);
	nicfw_lcore_free(x->lc);
}
