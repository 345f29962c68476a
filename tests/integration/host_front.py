# SPDX-License-Identifier: MIT
"""Front-ends for the splitnic-host tests: several at once, each its own UDP socket (its own
source address and port), closed loop, retransmitting with the same request id.

    host_front.py SERVER IMAGES COUNT OUT.json [--from ADDR]... [--sockets N] [--same-ids]
        [--outstanding K] [--timeout S] [--forge N [--forge-from ADDR]]

--from ADDR: one front-end bound to ADDR (repeatable; default one, any address); --sockets N:
N front-ends per address. Front-end k sends COUNT requests; with --same-ids every front-end
uses request ids 0..COUNT-1 at the same time (colliding ids), and front-end k's request i
carries image (i + 997 k) % COUNT, so that colliding requests have different answers.
--forge N: meanwhile a forger (the first address) sends N RESPONSE and ERROR datagrams that
claim to be completion notices for guessed host_refs, cookies and the front-ends' ids; with
--forge-from ADDR they carry that source address (a raw socket: e.g. the NIC's own).
OUT.json: per front-end the image of each request, its class (-1: none), its executors bits,
errors and retransmissions; and the forged datagrams sent.
"""

import gzip
import json
import os
import random
import selectors
import socket
import struct
import sys
import time

sys.path.insert(0, os.path.join(os.path.dirname(__file__), "../../client/python"))
from splitnic_client import Client  # noqa: E402

PORT = 21326


def args():
    a = {"from": [], "sockets": 1, "same_ids": False, "outstanding": 4, "timeout": 1.0,
         "forge": 0, "forge_from": ""}
    v = sys.argv[1:]
    a["server"], a["images"], a["count"], a["out"] = v[0], v[1], int(v[2]), v[3]
    i = 4
    while i < len(v):
        k = v[i].lstrip("-").replace("-", "_")
        if k == "same_ids":
            a[k] = True
            i += 1
            continue
        if k == "from":
            a["from"].append(v[i + 1])
        else:
            a[k] = type(a[k])(v[i + 1])
        i += 2
    return a


def forged(rid, kind):
    """A RESPONSE (hdr_len 88) or ERROR (hdr_len 56) notice with a guessed host_ref and cookie."""
    ref = random.randrange(1, 256) << 24 | random.randrange(0, 8) << 20 | random.randrange(0, 64)
    cookie = random.getrandbits(64)
    if kind == 3:
        hdr = struct.pack(">HBBHHIHHQII", 0x534E, 1, 3, 88, 80, 0, 0, 0, rid, 80, 0)
        t = struct.pack(">IHBB8IIIQ", 1, 10, 6, 1, *([0] * 8), ref, 0, cookie)
        return hdr + t + b"\0" * 80
    hdr = struct.pack(">HBBHHIHHQII", 0x534E, 1, 4, 56, 0, 0, 0, 0, rid, 0, 0)
    return hdr + struct.pack(">HHIIIQ", 4, 0, 0, ref, 0, cookie)


def spoofed(src, dst, payload):
    """An IPv4/UDP datagram from src (any address) to dst:PORT, no UDP checksum."""
    udp = struct.pack(">HHHH", 40000, PORT, 8 + len(payload), 0) + payload
    ip = struct.pack(">BBHHHBBH4s4s", 0x45, 0, 20 + len(udp), 0, 0, 64, 17, 0,
                     socket.inet_aton(src), socket.inet_aton(dst))
    s = sum(struct.unpack(">10H", ip))
    while s >> 16:
        s = (s & 0xFFFF) + (s >> 16)
    return ip[:10] + struct.pack(">H", ~s & 0xFFFF) + ip[12:] + udp


def main():
    a = args()
    raw = gzip.open(a["images"]).read()[16:]
    n = a["count"]
    srcs = a["from"] or [None]
    fronts = []
    for addr in srcs:
        for _ in range(a["sockets"]):
            c = Client(a["server"])
            if addr:
                c.sock.close()
                s = socket.socket(socket.AF_INET, socket.SOCK_DGRAM)
                s.bind((addr, 0))
                s.connect((a["server"], PORT))
                s.setblocking(False)
                c.sock = s
            k = len(fronts)
            fronts.append({"c": c, "addr": addr, "next": 0, "sent": {}, "cls": [-1] * n,
                           "ex": [0] * n, "errors": 0, "resent": 0,
                           "img": [(i + 997 * k) % n for i in range(n)]})
    base = {id(f): (0 if a["same_ids"] else (k + 1) << 32) for k, f in enumerate(fronts)}
    sel = selectors.DefaultSelector()
    for f in fronts:
        sel.register(f["c"].sock, selectors.EVENT_READ, f)
    if a["forge_from"]:
        forger = socket.socket(socket.AF_INET, socket.SOCK_RAW, socket.IPPROTO_RAW)
    else:
        forger = socket.socket(socket.AF_INET, socket.SOCK_DGRAM)
        if srcs[0]:
            forger.bind((srcs[0], 0))
    n_forged, t_end = 0, time.monotonic() + 300
    done = lambda f: f["next"] == n and not f["sent"]  # noqa: E731
    while not all(done(f) for f in fronts) and time.monotonic() < t_end:
        now = time.monotonic()
        for f in fronts:
            while f["next"] < n and len(f["sent"]) < a["outstanding"]:
                i = f["next"]
                f["c"].send(raw[f["img"][i] * 784:(f["img"][i] + 1) * 784], (1, 28, 28),
                            request_id=base[id(f)] + i)
                f["sent"][i] = now
                f["next"] += 1
            for i, t in list(f["sent"].items()):
                if now - t > a["timeout"]:
                    f["c"].send(raw[f["img"][i] * 784:(f["img"][i] + 1) * 784], (1, 28, 28),
                                request_id=base[id(f)] + i)
                    f["sent"][i] = now
                    f["resent"] += 1
        if n_forged < a["forge"]:
            for _ in range(min(16, a["forge"] - n_forged)):
                d = forged(random.randrange(0, n), 3 + n_forged % 2)
                if a["forge_from"]:
                    d = spoofed(a["forge_from"], a["server"], d)
                forger.sendto(d, (a["server"], PORT))
                n_forged += 1
        for key, _ in sel.select(0.05):
            f = key.data
            while True:
                r = f["c"].poll()
                if r is None:
                    break
                i = r.request_id - base[id(f)]
                if i not in f["sent"]:
                    continue
                del f["sent"][i]
                if r.error:
                    f["errors"] += 1
                else:
                    f["cls"][i] = r.cls
                    f["ex"][i] = r.executors
    out = {"fronts": [{"addr": f["addr"], "port": f["c"].sock.getsockname()[1],
                       "images": f["img"], "classes": f["cls"], "executors": f["ex"],
                       "errors": f["errors"], "resent": f["resent"]} for f in fronts],
           "forged": n_forged}
    json.dump(out, open(a["out"], "w"))


main()
