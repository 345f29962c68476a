#!/usr/bin/python3
# SPDX-License-Identifier: MIT
"""Write the seed corpus of fuzz_disp (tests/fuzz/fuzz_disp.c) to tests/fuzz/corpus/disp/.

    /usr/bin/python3 tests/fuzz/make_disp_seeds.py

Each seed is a sequence of records [port: 0 wire, 1 host][length: 2 bytes big-endian][frame]
for the fuzzer's two models: a stand-alone u8 one (id 1, 1x4x4, 3 classes) and a co-processor
part (id 2, 64 bits from op 3). The same files every run.
"""
import os
import struct

OUT = os.path.join(os.path.dirname(os.path.abspath(__file__)), "corpus", "disp")
NIC, CLI, HOST = bytes([10, 0, 0, 1]), bytes([10, 0, 0, 2]), bytes([10, 0, 0, 3])


def csum(b):
    s = sum(struct.unpack(f">{len(b) // 2}H", b))
    while s >> 16:
        s = (s & 0xFFFF) + (s >> 16)
    return ~s & 0xFFFF


def frame(payload, src=CLI, sport=40000, dport=21326):
    ip = bytearray(struct.pack(">BBHHHBBH4s4s", 0x45, 0, 28 + len(payload), 0, 0x4000, 64, 17, 0,
                               src, NIC))
    ip[10:12] = struct.pack(">H", csum(bytes(ip)))
    udp = struct.pack(">HHHH", sport, dport, 8 + len(payload), 0)
    eth = bytes([2, 0, 0, 0, 0, 1, 2, 0, 0, 0, 0, 2]) + b"\x08\x00"
    return eth + bytes(ip) + udp + payload


def common(typ, hdr_len, frag_len, model, rid, total, off=0):
    return struct.pack(">HBBHHIHHQII", 0x534E, 1, typ, hdr_len, frag_len, model, 0, 0, rid,
                       total, off)


def tensor(fmt, layer, c, h, w):
    return struct.pack(">BBHIIIIIiI", fmt, 0, layer, c, h, w, c * h * w, 0, 0, 0)


def request(rid, hdr_len=64, shape=(1, 4, 4)):
    data = bytes(range(16))
    return common(1, hdr_len, 16, 1, rid, 16) + tensor(1, 0, *shape) + bytes(hdr_len - 64) + data


def activation(rid, cookie, layer=3, model=2):
    ext = bytes(10) + b"\xff\xff" + CLI + struct.pack(">HBBIIIIIQ", 40000, 1, 0, 0, 0, 0, 0,
                                                       0x01000001, cookie)
    return common(2, 112, 8, model, rid, 8) + tensor(5, layer, 64, 1, 1) + ext + bytes(8)


def response(rid, cookie):
    hdr = struct.pack(">IHBB", 1, 3, 6, 4) + bytes(32) + struct.pack(">IIQ", 0x01000001, 0, cookie)
    return common(3, 88, 24, 2, rid, 24) + hdr + bytes(24)


def error(rid, cookie):
    hdr = struct.pack(">HHIIIQ", 4, 0, 0, 0x01000001, 0, cookie)
    return common(4, 56, 4, 2, rid, 4) + hdr + b"busy"


def health_probe(rid, pad=80):
    return common(5, 48, pad, 0, rid, pad) + bytes(16) + bytes(pad)


def rec(port, f):
    return bytes([port]) + struct.pack(">H", len(f)) + f


SEEDS = {
    "request_padded": rec(0, frame(request(1, hdr_len=128))),
    "request_plain": rec(0, frame(request(2))),
    "request_bad_shape": rec(0, frame(request(3, shape=(1, 16, 1)))),
    "activation_host": rec(1, frame(activation(4, 0x1122334455667788, ), src=HOST, sport=21326)),
    "activation_wire": rec(0, frame(activation(5, 7))),
    "activation_other_layer": rec(1, frame(activation(6, 8, layer=2), src=HOST, sport=21326)),
    "forged_notices": rec(0, frame(response(7, 9))) + rec(0, frame(error(7, 9))),
    "health": rec(0, frame(health_probe(10))) + rec(0, frame(health_probe(11, pad=8))),
    "mixed": (rec(1, frame(activation(8, 10), src=HOST, sport=21326))
              + rec(0, frame(request(9, hdr_len=128))) + rec(0, frame(response(8, 10)))
              + rec(1, frame(error(8, 10), src=HOST, sport=21326))
              + rec(0, frame(b"SN\x01\x01" + bytes(36)))),
}

os.makedirs(OUT, exist_ok=True)
for name, data in SEEDS.items():
    with open(os.path.join(OUT, name), "wb") as f:
        f.write(data)
print(f"{len(SEEDS)} seeds in {OUT}")
