/* SPDX-License-Identifier: MIT */
/*
 * nicfw/emu/exec_emu.h — the NIC as executors of the one interface (exec/kexec.h): the emulator
 * here, the DPDK lcores in nicfw/lcore/lcore.h. Both load the NIC part [first, n) of a model
 * (kexec_can_run(KEXEC_KIND_NIC, ...)), take bits or u8 at layers[first].in and give scores.
 */
#ifndef NICFW_EMU_EXEC_EMU_H
#define NICFW_EMU_EXEC_EMU_H

#include <stdbool.h>
#include <stdint.h>

#include "exec/kexec.h"
#include "nicfw/emu/emu.h"

#define NICFW_EXEC_EMU_WARM 32 /* serve: the most warm-up requests to find the steady state */

struct nicfw_exec_emu_conf {
	uint32_t executors;		       /* 1..NICFW_MAX_EXEC */
	const struct nicfw_emu_params *params; /* NULL: the defaults */
	/*
	 * false: every request is traced and replayed in submit, completed at once, its modeled
	 * time added up (nicfw_exec_emu_modeled_us). true: the emulator's modeled time is spent
	 * for real (splitnic-nic's platform emu): load warms the chain until its modeled time per
	 * request T is steady (nicfw_emu_serve_prepare, at most max_warm requests, 0:
	 * NICFW_EXEC_EMU_WARM); a request is computed by the same firmware (DIRECT layout) when
	 * the chain starts it, at the later of its submission and the previous request's modeled
	 * completion, and completes when the monotonic clock reaches its start + T (the chain busy
	 * meanwhile: requests submitted back to back queue as on the NFP, and none drifts with the
	 * caller's polling). kexec_poll drives it.
	 */
	bool serve;
	uint32_t max_warm;
};

/*
 * The NFP emulator (nicfw/emu/emu.h): bit-exact results, modeled time. conf: struct
 * nicfw_exec_emu_conf, or NULL for NICFW_MAX_EXEC executors, the default parameters, not serving.
 */
extern const struct kexec_ops nicfw_exec_emu_ops;

/* The modeled NIC time (us) of every request run so far on an emu executor x (not serving). */
double nicfw_exec_emu_modeled_us(const struct kexec *x);

/* A serving emu executor's figures; its counters may be read from any thread. */
struct nicfw_exec_emu_stats {
	uint64_t modeled_ns;	 /* T: per request, steady state (modeled) */
	uint32_t warmed;	 /* warm-up requests it took */
	bool steady;		 /* false: max_warm ran out first; T is the last one's */
	uint64_t compute_ns_max; /* the longest computation of a result (wall) */
	uint64_t overruns;	 /* computations longer than T */
	uint64_t late;		 /* results collected over 5% of T after their modeled completion */
	uint64_t late_ns_max;
};

void nicfw_exec_emu_stats(const struct kexec *x, struct nicfw_exec_emu_stats *st);

#endif /* NICFW_EMU_EXEC_EMU_H */
