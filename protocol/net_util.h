/* SPDX-License-Identifier: MIT */
/* protocol/net_util.h — socket helpers shared by the kernel-socket servers (serve/, lab/). */
#ifndef PROTO_NET_UTIL_H
#define PROTO_NET_UTIL_H

/*
 * Ask for `bytes` of receive and send buffer on fd: bursts of fragments need room. The receive
 * side tries SO_RCVBUFFORCE first (past rmem_max when privileged), then SO_RCVBUF; the kernel
 * caps what it grants, and a refusal is not an error.
 */
void net_grow_buffers(int fd, int bytes);

#endif /* PROTO_NET_UTIL_H */
