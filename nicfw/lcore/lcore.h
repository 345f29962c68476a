/* SPDX-License-Identifier: MIT */
/*
 * nicfw/lcore/lcore.h — platform `lcore`: the firmware's executor chain (nicfw/chain.c) on DPDK
 * lcores, real cores measured in wall time (as on a DPU's Arm cores).
 *
 * HAL: EMEM, CTM and IMEM are plain memory per chain (cache-line aligned, allocated at
 * nicfw_lcore_add), mapped (hal.h's map), so the chain runs in its DIRECT layout: each executor
 * computes its whole slice with the CPU's kernels (kernels/kern_ops.h) in one call; a read
 * completes at once (wait has nothing to wait for); atomic_or is a relaxed __atomic_fetch_or. A
 * notification is one pointer-sized message (the thread's address | signal): to a thread of the
 * same runner it goes on that runner's own FIFO (plain stores, no atomics: only that runner's lcore
 * touches it), to another runner on that runner's rte_ring. The ring's release/acquire ordering
 * is what makes the dispatcher's CTM writes visible to executors on other runners and their IMEM
 * results visible to the dispatcher. pkt_tx copies the scores out of IMEM and raises the chain's
 * done flag (store-release), which nicfw_lcore_poll reads (load-acquire).
 *
 * Runners and multiplexing: a runner is one lcore draining its ring and running each message's
 * handler to its end (handlers never block, chain.h). Firmware threads are placed on runners:
 * the dispatcher thread on runner 0, executor e on runner e * R / E (contiguous blocks), so E is
 * independent of the core count: E = 256 on 2 cores is 256 executor contexts, about 128 per
 * core, each with its own struct nicfw_thread and slice. The executors of one runner run as one
 * group (nicfw_chain_group): one START and one END per runner and layer, one kernel call over
 * the runner's slices, as they would run back to back on that core anyway. With no worker lcore
 * (n_lcores = 0) there is one inline runner that the caller drives with nicfw_lcore_run(),
 * interleaved with its own work (e.g. the packet loop).
 *
 * Chains come and go while the runners run: a message carries its thread's address, so a runner
 * never looks a chain up; add builds a chain on the control thread and publishes it in a free
 * slot (store-release; submit and poll load it with acquire, and the ring's ordering carries it
 * to the runners); remove retires it: once the request it holds (if any) is done, no message of
 * it is left, and once every runner has then passed a quiescent point (DPDK's RCU QSBR: a worker
 * runner reports one between two drains, the inline runner at the end of nicfw_lcore_run) none
 * is inside one of its handlers: its memory is freed and its slot is free again. The runners'
 * loop takes no lock, allocates nothing and logs nothing for this: one QSBR report per drain.
 * The rings are sized at start for NICFW_LCORE_MAX_CHAINS chains of NICFW_MAX_EXEC executors.
 *
 * Threading: create, add, remove, reclaim, start, stop and free from one control thread (it may
 * be another than the packet thread: add and remove while the runners and the packet thread
 * run); submit and poll from one thread (the packet thread), on a chain from the moment its
 * index is handed to it until it hands it back for remove; the ring messages carry everything
 * else.
 */
#ifndef NICFW_LCORE_H
#define NICFW_LCORE_H

#include <stddef.h>
#include <stdint.h>

#include "exec/kexec.h"
#include "kernels/kern.h"
#include "nicfw/chain.h"

#define NICFW_LCORE_MAX_CHAINS	16
#define NICFW_LCORE_MAX_RUNNERS 64

struct nicfw_lcore;

/*
 * A platform whose runners are the given worker lcores (launched by nicfw_lcore_start), or
 * one inline runner when n_lcores is 0. NULL with a message in err.
 */
struct nicfw_lcore *nicfw_lcore_create(const unsigned *lcores, uint32_t n_lcores, char *err,
				       size_t errlen);
/* Stops the runners if started, frees everything. */
void nicfw_lcore_free(struct nicfw_lcore *p);

/*
 * Add a chain for ops [first, m->n_layers) of m on n_exec executors, before start or while the
 * runners run (executor e on runner e * R / E either way); its EMEM image is written here (m
 * may be freed afterwards). Returns the chain's index, or -EINVAL / -ENOMEM / -ENOSPC (every
 * slot held, removed chains still waiting included) with a message in err.
 */
int nicfw_lcore_add(struct nicfw_lcore *p, const struct model *m, uint32_t first, uint32_t n_exec,
		    char *err, size_t errlen);
/*
 * Remove chain `chain`, whose owner no longer submits to it nor polls it: the request it holds
 * (if any) still runs to its end on the runners (its result is dropped); the chain is freed
 * once that is done and every runner has passed a quiescent point since. 0: freed now; -EBUSY:
 * still waiting, freed by a later nicfw_lcore_reclaim, add or free; -EINVAL: not a chain.
 */
int nicfw_lcore_remove(struct nicfw_lcore *p, uint32_t chain);
/* Free the removed chains that nothing can be in any more; returns how many still wait. Never
 * blocks. */
uint32_t nicfw_lcore_reclaim(struct nicfw_lcore *p);
const struct nicfw_chain *nicfw_lcore_chain(const struct nicfw_lcore *p, uint32_t chain);
/*
 * Where chain `chain` runs: the lcores of the runners its threads are on, into lcores (at most
 * NICFW_LCORE_MAX_RUNNERS; RTE_MAX_LCORE: the inline runner, i.e. the thread calling
 * nicfw_lcore_run), and in *handled the handlers those runners have run for it since it was
 * added. Returns how many lcores. Any thread, while the chain is not removed (relaxed reads).
 */
uint32_t nicfw_lcore_where(const struct nicfw_lcore *p, uint32_t chain, unsigned *lcores,
			   uint64_t *handled);

/* Create the rings (emptied at a start after a stop: the work a stop left is dropped) and launch
 * the runners on their lcores. 0 or -errno (message in err). */
int nicfw_lcore_start(struct nicfw_lcore *p, char *err, size_t errlen);
/* Ask the runners to return and wait for them. */
void nicfw_lcore_stop(struct nicfw_lcore *p);

/*
 * Start one inference on chain `chain`: in holds its in_bytes bytes. 0, or -EBUSY while the
 * previous one has not been collected by nicfw_lcore_poll.
 */
int nicfw_lcore_submit(struct nicfw_lcore *p, uint32_t chain, const void *in);
/* 1 with the chain's classes scores once its inference is done (the chain is free again), else 0.
 */
int nicfw_lcore_poll(struct nicfw_lcore *p, uint32_t chain, double *scores);
/* Inline runner only: run up to max pending handlers; returns how many ran. */
uint32_t nicfw_lcore_run(struct nicfw_lcore *p, uint32_t max);
/* submit, then wait for the result (running the inline runner meanwhile). 0 or -errno. */
int nicfw_lcore_infer(struct nicfw_lcore *p, uint32_t chain, const void *in, double *scores);

/* ---- the chain as an executor (exec/kexec.h) ------------------------------------------ */

struct nicfw_exec_lcore_conf {
	const unsigned *lcores; /* runner lcores (as nicfw_lcore_create); none: run inline from
				 * kexec_poll */
	uint32_t n_lcores;
	uint32_t executors; /* 0: NICFW_MAX_EXEC */
	/*
	 * A platform several executors share (one chain each: the models of splitnic-nic, of
	 * splitnic-host's in-process NIC), created, started after every executor's load, run
	 * (inline runner) and freed by the caller, before or after this executor's load (close
	 * removes its chain: nicfw_lcore_remove); lcores and n_lcores are then unused. NULL: the
	 * executor's own.
	 */
	struct nicfw_lcore *platform;
};

/*
 * Platform `lcore` as an executor: init creates the platform (conf: struct
 * nicfw_exec_lcore_conf, NULL for one inline runner) or takes the shared one, load adds the
 * chain (and starts the runners of its own platform). Requests of a batch go down the chain one
 * after the other; kexec_poll drives it (and runs its own inline runner).
 */
extern const struct kexec_ops nicfw_exec_lcore_ops;
/* The index of x's chain on its platform (nicfw_lcore_where), -1 before its load. */
int nicfw_exec_lcore_chain(const struct kexec *x);

#endif /* NICFW_LCORE_H */
