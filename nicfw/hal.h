/* SPDX-License-Identifier: MIT */
/*
 * nicfw/hal.h — the hardware-abstraction layer the NIC firmware is written against.
 *
 * The firmware (the C files of nicfw/) touches hardware only through this header, so the same code
 * runs on every platform: `emu` (nicfw/emu/, a cycle-approximate NFP model), DPDK lcores, and later
 * a real NIC. A platform fills one struct nicfw_hal_ops and gives each firmware thread a struct
 * nicfw_thread.
 *
 * Memories. Three fixed regions, sized at model load from what the firmware declares
 * (nicfw_chain_need()) and never resized: EMEM (weights, DRAM-backed), CTM (packet data and the
 * activation a layer reads), IMEM (results). Addresses are 64-bit word offsets into a region.
 * Data moves between a region and the thread's own registers (a local array standing for the
 * NFP's transfer registers) by explicit commands; a read completes asynchronously and sets a
 * memory signal bit, on which the thread then waits (and yields, on threads that can).
 *
 * Signals. Threads are numbered 0..n-1 on the platform (the dispatcher and the executors, see
 * nicfw/chain.h). sig_send posts a numbered notification to another thread; the platform calls
 * the firmware's handler for it on that thread (event-driven firmware: a handler runs to its end
 * and never blocks on another thread).
 *
 * Packets. pkt_rx has placed a packet's payload in CTM before the firmware's rx handler runs;
 * pkt_tx sends the response from IMEM. Both are hooks whose cost is the platform's.
 *
 * Work. nicfw_work() tells the platform how much arithmetic the code just did, in units of
 * enum nicfw_work; a timing model turns it into cycles, a real platform ignores it.
 *
 * Direct access. A platform whose regions are plain memory of the core that runs the thread
 * (lcore: a DPU's or the host's cores) fills `map`: the firmware then lays EMEM out as the CPU
 * kernels take it and each executor runs its whole slice with them (NICFW_LAYOUT_DIRECT in
 * nicfw/chain.h) instead of streaming chunks through read commands. A platform that models the
 * NFP's memories (emu) leaves map NULL.
 *
 * Contract on the data path: no allocation, no locking, no logging, no libc. Every call below
 * is valid only between a platform's start and stop, from the thread that owns `th`.
 */
#ifndef NICFW_HAL_H
#define NICFW_HAL_H

#include <stdint.h>

enum nicfw_mem { NICFW_MEM_EMEM = 0, NICFW_MEM_CTM = 1, NICFW_MEM_IMEM = 2, NICFW_MEM__COUNT };

/* Units of work reported by the firmware; the timing model prices each. */
enum nicfw_work {
	NICFW_WORK_XORPOP = 0,	/* one 64-bit word: XOR with the input, popcount, accumulate */
	NICFW_WORK_ANDPOP,	/* one 64-bit word of one bit-plane: AND, popcount, shift-add */
	NICFW_WORK_NEURON,	/* per neuron: loop set-up, threshold compare, output bit */
	NICFW_WORK_PLANE_BYTE,	/* dispatcher: one u8 input split into its 8 bit-planes */
	NICFW_WORK_FLATTEN_BIT, /* dispatcher: one bit moved by a BITS flatten */
	NICFW_WORK_COPY_WORD,	/* one 64-bit word moved through registers */
	NICFW_WORK_FLOAT_OP,	/* one double-precision operation (MEs have no FPU) */
	NICFW_WORK_LAYER,	/* dispatcher: per-layer set-up */
	NICFW_WORK_REQUEST,	/* dispatcher: per-request parse and model look-up */
	NICFW_WORK__COUNT
};

/* Notifications between threads. */
enum nicfw_sig {
	NICFW_SIG_START = 0, /* down the chain: compute your slice of the current layer */
	NICFW_SIG_END = 1,   /* up the chain: every executor from here on has finished */
	NICFW_SIG__COUNT
};

struct nicfw_thread;

struct nicfw_hal_ops {
	/* Start a read of `words` words at `off` into dst; completion sets memory signal `sig`. */
	void (*read)(struct nicfw_thread *th, enum nicfw_mem mem, uint64_t off, uint64_t *dst,
		     uint32_t words, uint32_t sig);
	/* Write `words` words from src at `off` (posted: the thread does not wait). */
	void (*write)(struct nicfw_thread *th, enum nicfw_mem mem, uint64_t off,
		      const uint64_t *src, uint32_t words);
	/* Atomic OR of one word at `off` (posted). Executors share output words this way. */
	void (*atomic_or)(struct nicfw_thread *th, enum nicfw_mem mem, uint64_t off, uint64_t bits);
	/* Wait until every memory signal in `mask` has been set, then clear them. */
	void (*wait)(struct nicfw_thread *th, uint32_t mask);
	/* Post notification `sig` to thread `dst`. */
	void (*sig_send)(struct nicfw_thread *th, uint32_t dst, enum nicfw_sig sig);
	/* Report `count` units of work of kind `kind` (see enum nicfw_work). */
	void (*work)(struct nicfw_thread *th, enum nicfw_work kind, uint64_t count);
	/* Transmit `words` words at IMEM offset `off` as the response to the current request. */
	void (*pkt_tx)(struct nicfw_thread *th, uint64_t off, uint32_t words);
	/* Optional: the base of region `mem` as plain memory the thread may access itself. */
	uint64_t *(*map)(struct nicfw_thread *th, enum nicfw_mem mem);
};

/* What a firmware thread sees. The platform owns it and may embed it in its own state. */
struct nicfw_thread {
	const struct nicfw_hal_ops *ops;
	uint32_t id; /* 0: dispatcher; 1 + e: executor e */
};

static inline void nicfw_read(struct nicfw_thread *th, enum nicfw_mem mem, uint64_t off,
			      uint64_t *dst, uint32_t words, uint32_t sig)
{
	th->ops->read(th, mem, off, dst, words, sig);
}

static inline void nicfw_write(struct nicfw_thread *th, enum nicfw_mem mem, uint64_t off,
			       const uint64_t *src, uint32_t words)
{
	th->ops->write(th, mem, off, src, words);
}

static inline void nicfw_atomic_or(struct nicfw_thread *th, enum nicfw_mem mem, uint64_t off,
				   uint64_t bits)
{
	th->ops->atomic_or(th, mem, off, bits);
}

static inline void nicfw_wait(struct nicfw_thread *th, uint32_t mask)
{
	th->ops->wait(th, mask);
}

static inline void nicfw_sig_send(struct nicfw_thread *th, uint32_t dst, enum nicfw_sig sig)
{
	th->ops->sig_send(th, dst, sig);
}

static inline void nicfw_work(struct nicfw_thread *th, enum nicfw_work kind, uint64_t count)
{
	th->ops->work(th, kind, count);
}

static inline uint64_t *nicfw_map(struct nicfw_thread *th, enum nicfw_mem mem)
{
	return th->ops->map(th, mem);
}

static inline void nicfw_pkt_tx(struct nicfw_thread *th, uint64_t off, uint32_t words)
{
	th->ops->pkt_tx(th, off, words);
}

#endif /* NICFW_HAL_H */
