/* SPDX-License-Identifier: MIT */
/*
 * nicfw/nic/nic.h — splitnic-nic's own state, shared by its packet loop (main.c) and its
 * telemetry and counters (telemetry.c). Not a library interface.
 */
#ifndef NICFW_NIC_NIC_H
#define NICFW_NIC_NIC_H

#include <semaphore.h>
#include <stdbool.h>
#include <stdint.h>
#include <stdio.h>

#include <rte_ethdev.h>
#include <rte_mempool.h>
#include <rte_ring.h>

#include "kernels/kern.h"
#include "exec/kexec.h"
#include "nicfw/dispatch.h"
#include "nicfw/health.h"
#include "nicfw/lcore/lcore.h"

enum nic_ctl { NIC_CTL_FREE = 0, NIC_CTL_HELD, NIC_CTL_RELEASING };

struct nic_opts {
	const char *model_path[NICFW_DISP_MAX_MODELS];
	uint32_t model_id[NICFW_DISP_MAX_MODELS];
	uint32_t first[NICFW_DISP_MAX_MODELS]; /* @K; UINT32_MAX: kexec_nic_split */
	bool id_given[NICFW_DISP_MAX_MODELS];
	bool notify_host;
	struct proto_trust_cfg trust; /* --allow, then the rate below */
	uint32_t err_rate, err_burst;
	uint32_t n_models;
	uint32_t executors;
	bool emu;
	uint16_t udp_port;
	uint32_t ip;
	uint16_t wire, host;
	uint32_t payload;
	double duration;
	const char *stats_file;
	const char *name;
	uint32_t idle_sleep_us;
	uint64_t drain_ns;
};

struct nic {
	struct nic_opts o;
	struct model *m[NICFW_DISP_MAX_MODELS];
	struct nicfw_disp *disp;
	struct nicfw_health health;
	struct nicfw_lcore *lc;		       /* platform lcore: shared by the executors */
	struct kexec x[NICFW_DISP_MAX_MODELS]; /* each model's executor (the NIC's part) */
	uint64_t tsc0;
	double ns_per_tsc;
	struct rte_mempool *pool;
	struct rte_eth_dev_tx_buffer *txb[2];
	uint16_t port_id[2];
	bool link_gated[2]; /* memif: used only while its link is up and ctl_hold() holds */
	bool link_up[2];    /* this loop turn: the link (always true for other ports) */
	bool usable[2];	    /* this loop turn: the port may be polled and sent to */
	struct rte_ring *backlog[2]; /* a gated port's frames while it is up but not usable */
	bool ports_closed;	     /* set by the alarm that closes them */
	bool intr_parked;	     /* set by the last alarm (intr_park()) */
	sem_t ctl_sem;		     /* memif's control plane held: see ctl_hold() */
	int ctl_state;		     /* enum nic_ctl */
	bool ctl_armed, ctl_rearm;
	uint64_t ctl_next;		 /* TSC of the next release */
	uint64_t ctl_quiet;		 /* TSC since which the gated ports moved no frame */
	uint64_t gated_frames;		 /* frames received from and sent to the gated ports */
	uint64_t gated_seen, drops_seen; /* gated_frames and tx_drop at the last check */
	uint64_t tx_drop[2];		 /* frames a port would not take after NIC_TX_TRIES */
	uint64_t link_down_drop[2]; /* frames for a gated port dropped while its link was down */
	uint64_t backlogged[2];	    /* frames that waited in the backlog */
	uint64_t loops;
	uint64_t rx_frames; /* both ports */
};

/*
 * Telemetry (/splitnic/nic/stats, /models, /timing) of n, registered once n's dispatcher
 * exists; nic_telemetry_register(NULL) before n goes away (the callbacks then answer {}).
 */
void nic_telemetry_register(struct nic *n);
/* Every counter and the timing figures of n, as lines `KEY VALUE` (the --stats-file). */
void nic_stats_write(struct nic *n, FILE *f);

#endif /* NICFW_NIC_NIC_H */
