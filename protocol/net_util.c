// SPDX-License-Identifier: MIT
#include <sys/socket.h>

#include "protocol/net_util.h"

void net_grow_buffers(int fd, int bytes)
{
	if (setsockopt(fd, SOL_SOCKET, SO_RCVBUFFORCE, &bytes, sizeof(bytes)))
		setsockopt(fd, SOL_SOCKET, SO_RCVBUF, &bytes, sizeof(bytes));
	setsockopt(fd, SOL_SOCKET, SO_SNDBUF, &bytes, sizeof(bytes));
}
