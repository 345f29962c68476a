/* SPDX-License-Identifier: MIT */
/*
 * dpdk/idle.h — the idle policy of the servers' poll loops (the main lcore's and the workers'):
 * after DPDK_IDLE_TURNS turns without work in a row, a loop sleeps sleep_us between turns (for
 * shared cores: tests, several servers on one machine); 0 busy-polls. Work resets it. Each loop
 * keeps its own struct dpdk_idle and reports every turn's work to dpdk_idle_after().
 */
#ifndef DPDK_IDLE_H
#define DPDK_IDLE_H

#include <stdint.h>

#include <rte_cycles.h>

#define DPDK_IDLE_TURNS 1000

struct dpdk_idle {
	uint32_t sleep_us; /* 0: busy-poll */
	uint32_t turns;	   /* idle turns in a row */
};

static inline void dpdk_idle_after(struct dpdk_idle *p, uint32_t work)
{
	if (work)
		p->turns = 0;
	else if (p->sleep_us && ++p->turns > DPDK_IDLE_TURNS)
		rte_delay_us_sleep(p->sleep_us);
}

#endif /* DPDK_IDLE_H */
