/* SPDX-License-Identifier: MIT */
/*
 * dpdk/idle.h — the idle policy of the DPDK servers' poll loops (the main lcore's and the
 * workers'), as DPDK's l3fwd-power does it: every loop reports each turn's work to
 * dpdk_idle_after() and keeps its own struct dpdk_idle.
 *
 *   busy      (--poll busy) every turn polls again at once: the lowest latency, a whole core
 *             per lcore whether traffic flows or not.
 *   adaptive  (--poll adaptive, the default) after work, the loop busy-polls for
 *             DPDK_IDLE_SPIN_NS (a burst of traffic, a closed-loop client's next request see no
 *             change); then it sleeps between turns, each sleep 1/DPDK_IDLE_FRACTION of the time
 *             it has been idle (at least DPDK_IDLE_MIN_US), at most max_sleep_us
 *             (--idle-sleep-us). Any work returns it to busy polling at once. So a request that
 *             finds the server asleep after an idle gap g waits at most g / DPDK_IDLE_FRACTION
 *             (and max_sleep_us) more than with busy polling, and an idle server wakes every
 *             max_sleep_us: with the default 10 ms, a fraction of a percent of a core.
 *
 * The sleeps are nanosleep (rte_delay_us_sleep), with the thread's timer slack set to 1 us so
 * that a short sleep is short: the core goes back to the kernel, to the front-ends and the other
 * server that share it on a small machine. RX interrupts (l3fwd-power's deepest state) are not
 * used: the ports of the lab (net_af_packet, net_memif as set up here) poll.
 */
#ifndef DPDK_IDLE_H
#define DPDK_IDLE_H

#include <stdint.h>
#include <sys/prctl.h>

#include <rte_branch_prediction.h>
#include <rte_cycles.h>
#include <rte_pause.h>

#include "dpdk/idle_policy.h"

enum dpdk_poll { DPDK_POLL_ADAPTIVE = 0, DPDK_POLL_BUSY = 1 };

struct dpdk_idle {
	uint32_t mode;	       /* enum dpdk_poll */
	uint32_t max_sleep_us; /* adaptive: the longest sleep */
	uint64_t spin_tsc;     /* DPDK_IDLE_SPIN_NS in TSC cycles */
	uint64_t tsc_per_us;
	uint64_t idle_since; /* TSC of the first idle turn in a row, 0 after work */
	uint64_t sleeps;     /* sleeps so far */
};

static inline void dpdk_idle_init(struct dpdk_idle *p, enum dpdk_poll mode, uint32_t max_sleep_us)
{
	const uint64_t hz = rte_get_tsc_hz();

	*p = (struct dpdk_idle){.mode = mode, .max_sleep_us = max_sleep_us};
	p->spin_tsc = hz * DPDK_IDLE_SPIN_NS / 1000000000ull;
	p->tsc_per_us = hz / 1000000 ? hz / 1000000 : 1;
	if (mode == DPDK_POLL_ADAPTIVE)
		prctl(PR_SET_TIMERSLACK, 1000ul, 0ul, 0ul, 0ul);
}

static inline void dpdk_idle_after(struct dpdk_idle *p, uint32_t work)
{
	uint64_t now, idle, us;

	if (work || p->mode == DPDK_POLL_BUSY || !p->max_sleep_us) {
		p->idle_since = 0;
		return;
	}
	now = rte_get_tsc_cycles();
	if (unlikely(!p->idle_since))
		p->idle_since = now;
	idle = now - p->idle_since;
	if (idle < p->spin_tsc) {
		rte_pause();
		return;
	}
	us = idle / p->tsc_per_us / DPDK_IDLE_FRACTION;
	if (us < DPDK_IDLE_MIN_US)
		us = DPDK_IDLE_MIN_US;
	p->sleeps++;
	rte_delay_us_sleep(us < p->max_sleep_us ? (unsigned)us : p->max_sleep_us);
}

#endif /* DPDK_IDLE_H */
