/* SPDX-License-Identifier: MIT */
/*
 * dpdk/preflight.h — what the DPDK servers' skeleton (dpdk/server.h) checks before rte_eal_init,
 * so that a start that cannot work stops with one line naming its cause rather than EAL's
 * chatter or a misleading error later, and what it says after: the ports EAL found.
 *
 * Before EAL, on the EAL arguments (those before "--"), in this order; each failure is one line
 * "WHO: CAUSE: what to do" on stderr and an exit status (docs/operator-guide.md lists them):
 *   - (nothing when EAL is asked for its usage: --help before "--", what --eal-help gives it)
 *   - a server option before "--" (it would reach EAL, which prints its whole usage): exit 2,
 *     "put it after --";
 *   - a --vdev without its interface (net_af_packet, net_af_xdp: iface=): exit 2;
 *   - privileges: not root and without CAP_NET_RAW while a port needs a raw socket (net_af_packet,
 *     net_af_xdp) or PCI devices are scanned: exit 1;
 *   - hugepages: without --no-huge, no hugetlbfs mounted or no free hugepage of any size: exit 1;
 *   - each --vdev's interface (net_af_packet, net_af_xdp, net_pcap iface=), pcap file or memif
 *     socket folder, and each -a/--allow PCI address (present in /sys/bus/pci, bound to a driver
 *     DPDK can use): exit 1 naming the one missing;
 *   - the runtime folder of --file-prefix (default "rte") held by another live DPDK process
 *     (its config file locked; not checked for --proc-type secondary or auto, or --in-memory):
 *     exit 1 naming that process.
 * Nothing is created before these checks, so a start they stop leaves no runtime folder.
 *
 * After EAL: each port found, one line, as testpmd prints them ("WHO: Port N: MAC, name,
 * driver"); a --vdev EAL did not create is named (exit 1).
 */
#ifndef DPDK_PREFLIGHT_H
#define DPDK_PREFLIGHT_H

#include "dpdk/server.h"

/* The checks before EAL on argv (argc entries, argv[0] the program): 0, or the exit status. */
int dpdk_preflight_eal(const struct dpdk_server *s, int argc, char **argv);

/* After rte_eal_init: the ports printed, each --vdev looked for: 0, or the exit status. */
int dpdk_preflight_ports(const struct dpdk_server *s);

#endif /* DPDK_PREFLIGHT_H */
