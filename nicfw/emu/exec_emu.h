/* SPDX-License-Identifier: MIT */
/*
 * nicfw/emu/exec_emu.h — the NIC as executors of the one interface (exec/kexec.h): the emulator
 * here, the DPDK lcores in nicfw/lcore/lcore.h. Both load the NIC part [first, n) of a model
 * (kexec_can_run(KEXEC_KIND_NIC, ...)), take bits or u8 at layers[first].in and give scores.
 */
#ifndef NICFW_EMU_EXEC_EMU_H
#define NICFW_EMU_EXEC_EMU_H

#include <stdint.h>

#include "exec/kexec.h"
#include "nicfw/emu/emu.h"

struct nicfw_exec_emu_conf {
	uint32_t executors;		       /* 1..NICFW_MAX_EXEC */
	const struct nicfw_emu_params *params; /* NULL: the defaults */
};

/*
 * The NFP emulator (nicfw/emu/emu.h): bit-exact results, modeled time. conf: struct
 * nicfw_exec_emu_conf, or NULL for NICFW_MAX_EXEC executors and the default parameters.
 * Requests run one after the other, synchronously, in submit.
 */
extern const struct kexec_ops nicfw_exec_emu_ops;

/* The modeled NIC time (us) of every request run so far on an emu executor x. */
double nicfw_exec_emu_modeled_us(const struct kexec *x);

#endif /* NICFW_EMU_EXEC_EMU_H */
