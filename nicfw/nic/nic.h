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
#include "nicfw/dispatch.h"
#include "nicfw/emu/emu.h"
#include "nicfw/health.h"
#include "nicfw/lcore/lcore.h"
#include "nicfw/nic/opts.h"

#define NIC_SAMPLES 4096 /* per model: the last NIC times kept for percentiles */

enum nic_ctl { NIC_CTL_FREE = 0, NIC_CTL_HELD, NIC_CTL_RELEASING };

/* Platform emu, per model: the emulator and its modeled schedule (ns on the loop's clock). */
struct nic_emu_model {
	struct nicfw_emu *e;
	double *scores;
	uint64_t modeled_ns; /* per request, steady state (modeled) */
	uint32_t warmed;     /* warm-up requests it took */
	uint64_t free_at;    /* modeled completion of the last request started */
	uint64_t release;    /* of the running one */
	bool running;
	uint64_t compute_ns_max;    /* the longest computation of a result (wall) */
	uint64_t overruns;	    /* computations longer than the modeled time */
	uint64_t late, late_ns_max; /* released over 5% of the modeled time after completion */
};

/* Per model, measured by the engine wrapper: submit to result collected (the RESPONSE's nic). */
struct nic_timing {
	uint64_t t_submit;
	uint64_t requests, ns_sum;
	uint32_t ns[NIC_SAMPLES]; /* the last NIC_SAMPLES, saturated at UINT32_MAX */
};

struct nic {
	struct nic_opts o;
	struct model *m[NICFW_DISP_MAX_MODELS];
	struct nicfw_disp *disp;
	struct nicfw_health health;
	struct nicfw_lcore *lc;
	struct nic_emu_model emu[NICFW_DISP_MAX_MODELS];
	struct nic_timing *tm; /* n_models */
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
