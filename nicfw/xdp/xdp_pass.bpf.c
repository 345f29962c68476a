// SPDX-License-Identifier: (MIT OR GPL-2.0)
/*
 * The do-nothing XDP program for the far end of a veth pair: a native XDP_TX on a veth reaches
 * its peer only if the peer has an XDP program too.
 */
#include <linux/bpf.h>
#include <bpf/bpf_helpers.h>

SEC("xdp")
int xdp_pass(struct xdp_md *ctx)
{
	return XDP_PASS;
}

char LICENSE[] SEC("license") = "Dual MIT/GPL";
