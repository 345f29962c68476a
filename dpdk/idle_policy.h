/* SPDX-License-Identifier: MIT */
/*
 * dpdk/idle_policy.h — the numbers of the servers' adaptive polling (dpdk/idle.h), without
 * DPDK: the planner's model of a sleeping lcore (split/queue.c) prices the same policy.
 */
#ifndef DPDK_IDLE_POLICY_H
#define DPDK_IDLE_POLICY_H

#define DPDK_IDLE_SPIN_NS    200000ull /* busy-poll this long after the last work */
#define DPDK_IDLE_FRACTION   16	       /* then sleep 1/16 of the time idle so far ... */
#define DPDK_IDLE_MIN_US     10	       /* ... at least this long */
#define DPDK_IDLE_DEFAULT_US 10000     /* ... at most --idle-sleep-us, by default this */

#endif /* DPDK_IDLE_POLICY_H */
