#!/usr/bin/python3
# SPDX-License-Identifier: MIT
"""examples/client.py — a front-end with the pure-Python splitnic_client module: keeps up to
WINDOW requests in flight, retransmits (same request id) what is not answered within 0.5 s, up
to 5 times.

    ./client.py HOST PORT u8|f32 C,H,W INPUTS [WINDOW [MODEL]]

INPUTS holds raw tensors back to back (for the bundled models: 784-byte u8 images). Prints one
line per input, in input order: the class, or "error CODE REASON" / "timeout". MODEL is the
model's name or number (default 0: the server's first model).
"""
import sys
import time

from splitnic_client import Client

TIMEOUT, TRIES = 0.5, 6


def main(argv):
    if len(argv) not in (6, 7, 8) or argv[3] not in ("u8", "f32"):
        sys.exit("usage: client.py HOST PORT u8|f32 C,H,W INPUTS [WINDOW [MODEL]]")
    host, port, fmt = argv[1], int(argv[2]), argv[3]
    shape = tuple(int(x) for x in argv[4].split(","))
    window = int(argv[6]) if len(argv) > 6 else 16
    model = argv[7] if len(argv) > 7 else 0
    if isinstance(model, str) and model.isdigit():
        model = int(model)
    item = shape[0] * shape[1] * shape[2] * (1 if fmt == "u8" else 4)
    data = open(argv[5], "rb").read()
    if len(shape) != 3 or len(data) % item:
        sys.exit("client.py: %s: not a whole number of %d-byte tensors" % (argv[5], item))
    count = len(data) // item
    results = [None] * count
    sent, tries = {}, {}
    nxt = head = 0
    with Client(host, port) as c:
        while head < count:
            while nxt < count and len(sent) < window:
                c.send(data[nxt * item:(nxt + 1) * item], shape, fmt, model, request_id=nxt)
                sent[nxt], tries[nxt] = time.monotonic(), 1
                nxt += 1
            r = c.wait(0.05)
            if r is not None and r.request_id in sent:
                del sent[r.request_id]
                results[r.request_id] = ("error %d %s" % (r.error, r.reason) if r.error
                                         else str(r.cls))
            now = time.monotonic()
            for i, t in list(sent.items()):
                if now - t < TIMEOUT:
                    continue
                if tries[i] == TRIES:
                    del sent[i]
                    results[i] = "timeout"
                    continue
                c.send(data[i * item:(i + 1) * item], shape, fmt, model, request_id=i)
                sent[i], tries[i] = now, tries[i] + 1
            while head < count and results[head] is not None:
                head += 1
    print("\n".join(results))


if __name__ == "__main__":
    main(sys.argv)
