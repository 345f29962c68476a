/* SPDX-License-Identifier: MIT */
/*
 * nicfw/emu/emu.h — platform `emu`: the firmware (nicfw/chain.c) run in process on a
 * cycle-approximate model of an NFP4000-class NIC.
 *
 * Results: the firmware's own code runs on the host CPU over three regions standing for EMEM,
 * CTM and IMEM, so the response is the firmware's, bit for bit.
 *
 * Time: while the firmware runs, every HAL call is recorded per thread (a trace: memory
 * commands, waits, notifications, work). The timing model then replays the traces of one
 * request event by event on the modeled NIC: micro-engines (MEs) of 8 hardware threads at
 * clock_mhz, grouped in islands; a thread holds its ME's pipeline until it yields (every wait),
 * so threads on one ME share it; memory units with a latency and a bandwidth (a FIFO server
 * each), CTM on the dispatcher's island (other islands pay xisland_cycles), EMEM behind an
 * LRU cache whose misses queue on DRAM; notifications take sig_hop_cycles (+ sig_xisland_cycles
 * between islands). Requests run one after the other (no batching); the cache stays warm
 * between them.
 *
 * Placement: the dispatcher alone on ME 0 (island 0), executor e on ME 1 + e / exec_per_me.
 *
 * Every parameter is in the table of nicfw/emu/params.c with its unit and its source or
 * rationale; nicfw_emu_param_set() overrides one ("name=value").
 */
#ifndef NICFW_EMU_H
#define NICFW_EMU_H

#include <stddef.h>
#include <stdint.h>

#include "kernels/kern.h"
#include "nicfw/chain.h"
#include "nicfw/hal.h"

enum nicfw_emu_param {
	NICFW_EP_CLOCK_MHZ = 0,
	NICFW_EP_MES,
	NICFW_EP_MES_PER_ISLAND,
	NICFW_EP_THREADS_PER_ME,
	NICFW_EP_EXEC_PER_ME,
	NICFW_EP_CTX_SWAP,
	NICFW_EP_CMD_ISSUE,
	NICFW_EP_CTM_LAT,
	NICFW_EP_CTM_BW,
	NICFW_EP_XISLAND,
	NICFW_EP_IMEM_LAT,
	NICFW_EP_IMEM_BW,
	NICFW_EP_EMEM_LAT,
	NICFW_EP_EMEM_BW,
	NICFW_EP_CACHE_KIB,
	NICFW_EP_CACHE_WAYS,
	NICFW_EP_DRAM_LAT,
	NICFW_EP_DRAM_BW,
	NICFW_EP_SIG_HOP,
	NICFW_EP_SIG_XISLAND,
	NICFW_EP_WORK, /* NICFW_WORK__COUNT entries, in the order of enum nicfw_work */
	NICFW_EP_PKT_RX = NICFW_EP_WORK + NICFW_WORK__COUNT,
	NICFW_EP_PKT_TX,
	NICFW_EP__COUNT
};

struct nicfw_emu_params {
	double v[NICFW_EP__COUNT];
};

struct nicfw_emu_param_info {
	const char *name;
	const char *unit;
	const char *why; /* source or rationale */
};

/* The defaults (NFP4000-class, calibrated where the table says so). */
void nicfw_emu_params_default(struct nicfw_emu_params *p);
/* Name, unit and rationale of parameter i (< NICFW_EP__COUNT). */
const struct nicfw_emu_param_info *nicfw_emu_param_info(uint32_t i);
/*
 * Override one parameter from "name=value" (rates > 0, costs >= 0, counts whole).
 * Returns 0, or -EINVAL with a message naming the parameter or the value in err.
 */
int nicfw_emu_param_set(struct nicfw_emu_params *p, const char *kv, char *err, size_t errlen);

/* Modeled figures of one request. Times in microseconds of modeled NIC time. */
struct nicfw_emu_report {
	double latency_us;		     /* payload in CTM -> response sent */
	double rx_us, tx_us;		     /* packet reception / transmission */
	uint32_t n_layers;		     /* binary layers run on the chain */
	uint32_t layer_op[NICFW_MAX_STAGES]; /* model op of each */
	double layer_us[NICFW_MAX_STAGES];   /* dispatcher set-up to END back */
	double exec_active; /* mean over executors: time on its own slices / latency */
	double me_busy;	    /* mean over the MEs in use: pipeline busy / latency */
	uint64_t rd_bytes[NICFW_MEM__COUNT], wr_bytes[NICFW_MEM__COUNT];
	uint64_t emem_hits, emem_misses; /* EMEM cache, in 64-byte lines */
};

struct nicfw_emu;

/*
 * An emulated NIC holding ops [first, m->n_layers) of m (see kexec_nic_first()) on a chain of
 * n_exec executors: regions allocated, the firmware's EMEM image written, the cache cold.
 * m may be freed afterwards. Returns NULL with a message in err.
 */
struct nicfw_emu *nicfw_emu_create(const struct model *m, uint32_t first, uint32_t n_exec,
				   const struct nicfw_emu_params *p, char *err, size_t errlen);
void nicfw_emu_free(struct nicfw_emu *e);

/* The chain the emulator runs (input format and size, classes). */
const struct nicfw_chain *nicfw_emu_chain(const struct nicfw_emu *e);

/*
 * One request: `in` holds chain->in_bytes bytes in layers[first].in's format; `scores`
 * receives chain->classes doubles; rep (may be NULL) the modeled figures. Trace buffers grow on
 * the first requests and are reused. Returns 0, -ENOMEM, or -EIO if the firmware sent no
 * response.
 */
int nicfw_emu_infer(struct nicfw_emu *e, const void *in, double *scores,
		    struct nicfw_emu_report *rep);

/*
 * Serving (splitnic-nic's emu platform, whose results are released at their modeled completion).
 *
 * The firmware's memory commands, waits, notifications and work do not depend on a request's
 * data, only on the model and the chain; so a request's modeled time depends only on what the
 * requests before it left behind (the EMEM cache, memory units still busy), and requests back to
 * back reach a steady state. nicfw_emu_serve_prepare() builds a second copy of the chain in its
 * DIRECT layout (nicfw/chain.h) from m (the model given to nicfw_emu_create), then traces and
 * replays requests on a zero input back to back, at most max_warm (>= 2), until two in a row
 * give the same modeled latency (relative 1e-9); rep receives the last one's figures and
 * *warmed the count. Returns 0 at the steady state, 1 if max_warm ran out first (rep then holds
 * the last request's figures), or -errno with a message in err. tests/test_nicfw.c checks that
 * traced requests on other inputs after it give rep's latency.
 *
 * nicfw_emu_serve() then computes one request's scores (equal to nicfw_emu_infer's) with the
 * DIRECT copy: whole slices on the CPU kernels, no trace, no replay, nothing allocated. Its
 * modeled time is rep->latency_us. Returns 0, -EINVAL before prepare, -EIO if no response.
 */
int nicfw_emu_serve_prepare(struct nicfw_emu *e, const struct model *m, uint32_t max_warm,
			    struct nicfw_emu_report *rep, uint32_t *warmed, char *err,
			    size_t errlen);
int nicfw_emu_serve(struct nicfw_emu *e, const void *in, double *scores);

#endif /* NICFW_EMU_H */
