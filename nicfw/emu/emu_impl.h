/* SPDX-License-Identifier: MIT */
/*
 * nicfw/emu/emu_impl.h — the emulator's insides, shared by emu.c (the platform: regions, HAL,
 * traces, the emulator's lifetime), timing.c (the replay of one request's traces on the modeled
 * NIC) and serve.c (serving requests). Calls point one way: serve.c calls emu.c, emu.c calls
 * timing.c.
 */
#ifndef NICFW_EMU_IMPL_H
#define NICFW_EMU_IMPL_H

#include <stdbool.h>

#include "nicfw/emu/emu.h"

enum emu_rec_kind {
	ER_WORK = 0, /* the ME pipeline for `cycles` */
	ER_READ,     /* memory read command, completion sets memory signal `sig` */
	ER_WRITE,    /* posted write / atomic */
	ER_WAITMEM,  /* yield until the memory signals in `words` (a mask) are set */
	ER_WAITSIG,  /* yield until notification `sig` arrives */
	ER_SEND,     /* notification `sig` to thread `words` */
	ER_DELAY,    /* yield for `cycles` without the pipeline (packet engines) */
};

struct emu_rec {
	uint8_t kind, mem, sig;
	uint32_t words;
	union {
		uint64_t off;
		double cycles;
	};
};

struct emu_trace {
	struct emu_rec *rec;
	size_t n, cap;
	bool oom;	     /* a record was lost: the request fails with -ENOMEM */
	struct emu_rec sink; /* where records go once oom */
};

struct emu_thread {
	struct nicfw_thread th; /* first: the HAL hands this back */
	struct nicfw_emu *emu;
	struct emu_trace tr;
	uint32_t me, island;
};

struct emu_cache {
	uint64_t *tag; /* [sets][ways], line + 1; 0 = empty */
	uint64_t *stamp;
	uint32_t sets, ways;
	uint64_t clock;
};

struct emu_sigmsg {
	uint32_t dst, sig;
};

/* serve.c: the same chain in its DIRECT layout, for results without a trace. */
struct emu_sthread {
	struct nicfw_thread th; /* first: the HAL hands this back */
	struct nicfw_emu *emu;
};

struct emu_serve {
	struct nicfw_chain ch;
	uint64_t *mem[NICFW_MEM__COUNT];
	struct emu_sthread *t; /* n_threads */
};

struct nicfw_emu {
	struct nicfw_emu_params p;
	struct nicfw_chain ch;
	uint64_t *mem[NICFW_MEM__COUNT];
	uint32_t n_threads, n_mes;
	struct emu_thread *t;
	struct emu_sigmsg *q; /* notifications not yet handled, FIFO */
	uint32_t q_head, q_tail, q_cap;
	double *resp;
	bool resp_sent;
	struct emu_cache cache;
	struct emu_replay *rp; /* timing.c's state */
	struct emu_serve *sv;  /* serve.c's, once prepared */
};

/* emu.c: handle the queued notifications in FIFO order, each on thread t[dst] of chain ch
 * (t: an array of n_threads structs of `stride` bytes, each starting with its nicfw_thread). */
void emu_run_signals(struct nicfw_emu *e, struct nicfw_chain *ch, void *t, size_t stride);
/* emu.c: free serve.c's state (with the emulator, or when serve.c's preparation fails). */
void emu_serve_free(struct emu_serve *sv);

/* timing.c: state sized for e (threads, MEs); NULL on allocation failure. */
struct emu_replay *emu_replay_create(const struct nicfw_emu *e);
void emu_replay_free(struct emu_replay *rp);
/* Replay the traces recorded for one request; fills rep. */
void emu_replay_run(struct nicfw_emu *e, struct nicfw_emu_report *rep);

#endif /* NICFW_EMU_IMPL_H */
