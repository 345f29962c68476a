# SPDX-License-Identifier: MIT
"""A lossy link for the integration tests: Ethernet frames relayed between pairs of interfaces
over raw AF_PACKET sockets, each direction losing, duplicating and reordering them at random
(what tc netem does, on kernels without sch_netem), and counting exactly what it did.

    lossy_relay.py STATS-FILE A:B [C:D ...]

Frames received on A go out of B and the other way round (frames this process sent are not
taken back). The impairment, read from CONTROL-FILE (STATS-FILE.ctl) at start and on SIGHUP:
"loss P dup P reorder P" (probabilities 0..1; a reordered frame is held and sent after the next
frame of its direction, or after 2 ms). SIGUSR1 writes the counters to STATS-FILE (JSON:
{"A>B": {"rx", "dropped", "duplicated", "reordered", "tx", "rx_health", "tx_health"}, ...},
tx = rx - dropped + duplicated; rx_health and tx_health: those of them that are splitnic HEALTH
datagrams, which servers send on their own), then renames it in place; SIGTERM ends it. A dump
first sends the frames it holds for reordering, so that tx = rx - dropped + duplicated holds at
every dump (the servers' probes flow all the time, and a probe held at the moment of a dump
would otherwise be counted in rx and not yet in tx).
"""

import json
import os
import random
import select
import signal
import socket
import sys
import time

ETH_P_ALL = 3
PACKET_OUTGOING = 4
PROTO_PORT = 21326


def is_health(f):
    """An IPv4/UDP frame to or from the splitnic port holding a HEALTH message (type 5)."""
    if len(f) < 46 or f[12:14] != b"\x08\x00" or f[23] != 17:
        return False
    u = 14 + (f[14] & 15) * 4
    ports = (int.from_bytes(f[u:u + 2], "big"), int.from_bytes(f[u + 2:u + 4], "big"))
    return PROTO_PORT in ports and len(f) > u + 11 and f[u + 8:u + 10] == b"SN" and f[u + 11] == 5
HOLD_S = 0.002


def main():
    stats_file, pairs = sys.argv[1], [p.split(":") for p in sys.argv[2:]]
    rnd = random.Random(1)
    imp = {"loss": 0.0, "dup": 0.0, "reorder": 0.0}
    socks, route, count, held = {}, {}, {}, {}
    for a, b in pairs:
        for x in (a, b):
            s = socket.socket(socket.AF_PACKET, socket.SOCK_RAW, socket.htons(ETH_P_ALL))
            s.setsockopt(socket.SOL_SOCKET, socket.SO_RCVBUF, 4 << 20)
            s.setsockopt(socket.SOL_SOCKET, socket.SO_SNDBUF, 4 << 20)
            s.bind((x, 0))
            socks[x] = s
        route[a], route[b] = b, a
        for x, y in ((a, b), (b, a)):
            count[f"{x}>{y}"] = dict(rx=0, dropped=0, duplicated=0, reordered=0, tx=0,
                                     rx_health=0, tx_health=0)
    fd_if = {s.fileno(): x for x, s in socks.items()}
    flags = {"dump": False, "reload": True, "stop": False}

    def load():
        try:
            w = open(stats_file + ".ctl").read().split()
            for k, v in zip(w[::2], w[1::2]):
                imp[k] = float(v)
        except FileNotFoundError:
            pass

    def dump():
        tmp = stats_file + ".tmp"
        with open(tmp, "w") as f:
            json.dump(count, f)
        os.rename(tmp, stats_file)

    signal.signal(signal.SIGUSR1, lambda *_: flags.update(dump=True))
    signal.signal(signal.SIGHUP, lambda *_: flags.update(reload=True))
    signal.signal(signal.SIGTERM, lambda *_: flags.update(stop=True))

    def send(x, frame, c):
        socks[x].send(frame)
        c["tx"] += 1
        c["tx_health"] += is_health(frame)

    open(stats_file + ".ready", "w").close()
    while not flags["stop"]:
        if flags["reload"]:
            flags["reload"] = False
            load()
        if flags["dump"]:
            flags["dump"] = False
            for key in list(held):
                send(key.split(">")[1], held.pop(key)[0], count[key])
            dump()
        try:
            ready, _, _ = select.select(list(fd_if), [], [], HOLD_S if held else 0.05)
        except InterruptedError:
            continue
        now = time.monotonic()
        for key, (frame, t) in list(held.items()):
            if now - t >= HOLD_S:
                del held[key]
                send(key.split(">")[1], frame, count[key])
        for fd in ready:
            x = fd_if[fd]
            try:
                frame, addr = socks[x].recvfrom(65535)
            except InterruptedError:
                continue
            if addr[2] == PACKET_OUTGOING:
                continue
            y = route[x]
            key = f"{x}>{y}"
            c = count[key]
            c["rx"] += 1
            c["rx_health"] += is_health(frame)
            if rnd.random() < imp["loss"]:
                c["dropped"] += 1
                continue
            copies = 2 if rnd.random() < imp["dup"] else 1
            c["duplicated"] += copies - 1
            if key not in held and rnd.random() < imp["reorder"]:
                held[key] = (frame, now)
                copies -= 1
                c["reordered"] += 1
            for _ in range(copies):
                send(y, frame, c)
            if key in held and held[key][0] is not frame:
                send(y, held.pop(key)[0], c)
    for key in list(held):
        send(key.split(">")[1], held.pop(key)[0], count[key])
    dump()


if __name__ == "__main__":
    main()
