/* SPDX-License-Identifier: MIT */
/*
 * nicfw/nic/nic.h — splitnic-nic's own state, shared by its packet loop (main.c), its ports
 * (port.c) and its telemetry and counters (telemetry.c); its options are nicfw/nic/opts.h. Not a
 * library interface. Calls go one way: main.c -> port.c, telemetry.c.
 */
#ifndef NICFW_NIC_NIC_H
#define NICFW_NIC_NIC_H

#include <pthread.h>
#include <semaphore.h>
#include <stdbool.h>
#include <stdint.h>
#include <stdio.h>

#include <rte_ethdev.h>
#include <rte_mempool.h>
#include <rte_ring.h>

#include "dpdk/server.h"
#include "exec/kexec.h"
#include "kernels/kern.h"
#include "nicfw/dispatch.h"
#include "nicfw/health.h"
#include "nicfw/lcore/lcore.h"
#include "nicfw/nic/opts.h"

#define NIC_BURST	  32
#define NIC_RX_DESC	  1024
#define NIC_TX_DESC	  1024
#define NIC_MBUFS	  8191
#define NIC_TX_TRIES	  64
#define NIC_RUN_SLICE	  64	      /* inline runner: handlers per loop turn */
#define NIC_EMU_WARM	  32	      /* emu: most warm-up requests to find the steady state */
#define NIC_LINK_POLL_NS  10000000ull /* HEALTH state: the host port's link checked this often */
#define NIC_CTL_PERIOD_US 2000000     /* memif's control plane let go at least this often, */
#define NIC_CTL_QUIET_US  20000	      /* when the port has been quiet this long, ... */
#define NIC_CTL_GAP_US	  100	      /* ... for this long at least (see ctl_hold()) */
#define NIC_BACKLOG	  4096	      /* frames a gated port keeps while it is not usable */

enum nic_ctl { NIC_CTL_FREE = 0, NIC_CTL_HELD, NIC_CTL_RELEASING };

/* A model slot: the model n->m[k], its executor n->x[k], the dispatcher's slot k. */
struct nic_slot {
	const char *path;     /* its file (NULL: the slot is free) */
	uint32_t id, first;   /* its model id and the op its NIC part starts at */
	bool id_given;	      /* --model ID=FILE */
	uint32_t first_asked; /* --model FILE@K: K; UINT32_MAX: kexec_nic_split */
};

/* The NIC times of a model name's versions gone (reload.c adds a slot's when it frees it): the
 * metrics' histograms go on counting across versions. */
#define NIC_HISTS 32
struct nic_hist {
	char name[64];
	uint64_t hist[NICFW_DISP_HIST], ns_sum;
};

struct nic_reload;

struct nic {
	struct nic_opts o;
	struct model *m[NICFW_DISP_MAX_MODELS];
	struct nicfw_disp *disp;
	struct nicfw_health health;
	struct nicfw_lcore *lc;		       /* platform lcore: shared by the executors */
	struct kexec x[NICFW_DISP_MAX_MODELS]; /* each model's executor (the NIC's part) */
	/* The models served: the slots, and those named, in order (the first is model id 0's).
	 * Telemetry and metrics read them under rd_lock; the reloader changes them under it. */
	struct nic_slot sl[NICFW_DISP_MAX_MODELS];
	uint8_t map[NICFW_DISP_MAX_MODELS];
	uint32_t n_map;
	pthread_mutex_t rd_lock;
	struct nic_hist gone[NIC_HISTS]; /* under rd_lock */
	/* A change of the models for the packet loop: the reloader writes chg_map, chg_n and
	 * chg_health, then moves chg_asked on (release); the loop applies it between two turns
	 * (nicfw_disp_map, the HEALTH report's models) and sets chg_done to it (release). */
	uint8_t chg_map[NICFW_DISP_MAX_MODELS];
	uint32_t chg_n;
	struct nicfw_health chg_health;
	uint32_t chg_asked, chg_done;
	bool loop_over; /* atomic: the packet loop has ended */
	struct nic_reload *reload;
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
	uint64_t rx_frames;	      /* both ports */
	bool draining;		      /* from the first SIGINT/SIGTERM */
	uint64_t health_next;	      /* ns: the HEALTH state's next update */
	struct nicfw_host_view hostv; /* the host, from HEALTH probes (--host-probe-ms) */
	uint64_t probe_next;	      /* ns: the next probe */
	bool host_link_seen;	      /* the host port's link was up at the last check */
	uint64_t host_checked;	      /* ns: that check */
	uint64_t host_fresh_end;      /* ns: the host is fresh until then */
};

/* port.c: port which (NICFW_PORT_WIRE, _HOST) configured and started: 0, or -errno with err. */
int nic_port_init(struct nic *n, int which, char *err, size_t errlen);
/* The dispatcher's transmit (struct nicfw_disp_config's tx; arg: the struct nic). */
int nic_tx(void *arg, enum nicfw_port port, const uint8_t *frame, uint32_t len);
/* cnt frames out of port now (tried NIC_TX_TRIES times; the rest dropped and counted), or into
 * a gated port's backlog while it is up but not usable. */
void nic_send(struct nic *n, int port, struct rte_mbuf **pkts, uint16_t cnt);
/* This turn's use of the gated ports (cyc: the TSC now); see port.c. */
void nic_links_check(struct nic *n, uint64_t cyc);
/* At exit: the ports stopped and closed on EAL's interrupt thread, which then stays parked in an
 * alarm of ours: true when it is (rte_eal_cleanup must then be left out). */
bool nic_ports_close(struct nic *n);

/* slot.c: model path (id given or not: its name's, first_asked UINT32_MAX: the NIC's default
 * split) into free slot k: n->m[k], its executor n->x[k] (a chain on the shared lcore platform,
 * on its running worker lcores at a reload, or the emulator) and md, n->sl[k]; a line says so
 * (who: "nic", "nic: reload"). 0, or -errno with err (what was loaded freed, the slot free). */
int nic_slot_load(struct nic *n, uint32_t k, const char *path, bool id_given, uint32_t id,
		  uint32_t first_asked, struct nicfw_disp_model *md, const char *who, char *err,
		  size_t errlen);
/* The slot's model and executor freed (not polled), the slot free; its chain removed from the
 * lcore platform (freed once nothing is in it: nicfw_lcore_reclaim). */
void nic_slot_free(struct nic *n, uint32_t k);
/* The HEALTH report's models for the slots map[0..nm) into h. 0 or -EINVAL with err. */
int nic_health_models(const struct nic *n, const uint8_t *map, uint32_t nm, struct nicfw_health *h,
		      char *err, size_t errlen);

/* reload.c: models loaded, replaced and unloaded while the packet loop runs (SIGHUP, the
 * telemetry command /splitnic/nic/reload, POST /-/reload): a DPDK control thread reads the
 * options again, loads each new or changed --model into a free slot, hands the packet loop the
 * new map, and frees each slot no longer named once the dispatcher no longer polls it. */
int nic_reload_setup(struct nic *n, char *err, size_t errlen);
/* Its reloader (dpdk/reloader.h), which asks and waits; NULL before setup. */
struct dpdk_reloader *nic_reloader(void *srv);
/* The packet loop, between turns: the change asked for, applied. */
void nic_reload_apply(struct nic *n);
void nic_reload_teardown(struct nic *n);

/* telemetry.c: the commands /splitnic/nic/models and /splitnic/nic/timing (dpdk/server.h; the
 * skeleton registers them with /splitnic/nic/stats, nic_counters), every counter, and what the
 * stats file gets: the counters and the timing figures, as timing_m<i>_<key>. */
#define NIC_N_TEL_CMDS 2
extern const struct dpdk_tel_cmd nic_tel_cmds[NIC_N_TEL_CMDS];
/* ... and the metrics endpoint's histograms (per model, stage nic) and gauges (dpdk/metrics.h). */
extern const struct dpdk_metrics_ops nic_metrics_ops;
void nic_counters(void *srv, void (*put)(void *arg, const char *key, uint64_t v), void *arg);
void nic_report(void *srv, void (*put)(void *arg, const char *key, uint64_t v), void *arg);

#endif /* NICFW_NIC_NIC_H */
