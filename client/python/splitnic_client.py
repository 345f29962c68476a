# SPDX-License-Identifier: MIT
"""splitnic_client: a front-end's side of the splitnic wire protocol, pure standard library.

Sends REQUESTs (a tensor for a model) over UDP to splitnic-nic, splitnic-host or any server of
the protocol, and receives RESPONSEs (class, scores, server timing) and ERRORs. The wire format
is documented in the splitnic source tree's protocol/proto.h; this module speaks version 1.

    from splitnic_client import Client
    with Client("10.88.0.1") as c:
        r = c.request(image_bytes, (1, 28, 28), "u8", timeout=1.0, retries=3)
        print(r.cls, r.scores)

Asynchronous use: ``send`` any number of requests (distinct request ids), then ``poll`` (never
blocks) or ``wait`` (blocks up to a timeout) for the answers in whatever order they come;
``fileno`` is the socket for selectors. A request not answered in time is retransmitted by
sending it again with the same request id; one answer per request id is returned (a second
answer, e.g. from another server behind a load balancer, is dropped and counted in
``duplicates``) until that id is sent again. Tensors larger than one datagram are fragmented;
fragmented responses are reassembled (incomplete ones are dropped after 2 s).

Health: ``health(role="any", timeout=1.0)`` sends a HEALTH probe and returns the server's
Health report (identity, role, state "serving"/"draining"/"degraded", models).

Errors: bad arguments raise ValueError naming the argument; a server ERROR is a Response with
``error`` set (``request`` raises ServerError); ``request`` raises TimeoutError when no answer
came after the last try. A Client is not thread-safe: one per thread.
"""

import os
import select
import socket
import struct
import time

__all__ = ["Client", "Response", "Health", "ServerError", "model_id", "DEFAULT_PORT", "FORMATS",
           "ROLES"]

DEFAULT_PORT = 21326
MAGIC = 0x534E
VERSION = 1
REQUEST, ACTIVATION, RESPONSE, ERROR, HEALTH = 1, 2, 3, 4, 5
ROLES = {"any": 0, "nic": 1, "host": 2, "serve": 3, "xdp": 4}
STATES = {0: "serving", 1: "draining", 2: "degraded"}
MODES = {1: "whole", 2: "coproc", 3: "nic-part", 4: "host-only", 5: "fallback"}
FORMATS = {"u8": 1, "f32": 2, "fp16": 3, "int8": 4, "bits": 5, "f64": 6}
_ELEM_BITS = {1: 8, 2: 32, 3: 16, 4: 8, 5: 1, 6: 64}
ERROR_NAMES = {1: "bad request", 2: "unknown model", 3: "bad shape", 4: "busy", 5: "timeout",
               6: "too large", 7: "internal", 8: "unsupported", 9: "unavailable"}

_COMMON = struct.Struct(">HBBHHIHHQII")  # 32 bytes
_TENSOR = struct.Struct(">BBHIIIIIiI")  # 32 bytes
_RESP = struct.Struct(">IHBB8I8x")  # 48 bytes
_ERR = struct.Struct(">HHI")  # 8 bytes
_HEALTH = struct.Struct(">BBBBHHII")  # 16 bytes
_HEALTH_MODEL = struct.Struct(">IHBBIIIHH24s")  # 48 bytes
_SEEN_MAX = 65536  # answered request ids remembered
_MIN_HDR = {REQUEST: 64, ACTIVATION: 112, RESPONSE: 80, ERROR: 40}
_MAX_TOTAL = 64 << 20
_REASM_TIMEOUT = 2.0


def model_id(name):
    """The protocol's id of a model name (FNV-1a, 32 bits): what servers answer to by default."""
    h = 2166136261
    for b in name.encode():
        h = ((h ^ b) * 16777619) & 0xFFFFFFFF
    return h


def tensor_bytes(fmt, count):
    """Bytes of `count` elements of format fmt on the wire."""
    bits = _ELEM_BITS[fmt]
    return (count + 63) // 64 * 8 if bits == 1 else count * bits // 8


class ServerError(Exception):
    """The server answered a request with an ERROR message (the Response is .response)."""

    def __init__(self, response):
        super().__init__("request %d: server error %d (%s): %s" % (
            response.request_id, response.error, ERROR_NAMES.get(response.error, "?"),
            response.reason))
        self.response = response


class Response:
    """A RESPONSE (error == 0: cls, scores, executors, timing) or an ERROR (error, detail,
    reason). recv_time is time.monotonic() when the message was complete."""

    __slots__ = ("request_id", "model_id", "error", "detail", "reason", "cls", "scores",
                 "executors", "timing", "recv_time")

    def __init__(self, request_id, model_id_, recv_time):
        self.request_id, self.model_id, self.recv_time = request_id, model_id_, recv_time
        self.error, self.detail, self.reason = 0, 0, ""
        self.cls, self.scores, self.executors, self.timing = None, [], 0, [0] * 8

    def __repr__(self):
        if self.error:
            return "Response(id=%d, error=%d %r)" % (self.request_id, self.error, self.reason)
        return "Response(id=%d, cls=%d)" % (self.request_id, self.cls)


class Health:
    """A HEALTH report: ident, role ("nic", "host", "serve", "xdp"), state ("serving",
    "draining", "degraded"), in_flight, truncated, models (dicts: name, id, mode, first_op,
    fmt, shape, classes), rtt (seconds)."""

    __slots__ = ("ident", "role", "state", "in_flight", "truncated", "models", "rtt")

    def __repr__(self):
        return "Health(%r, %s, %s, %d models)" % (self.ident, self.role, self.state,
                                                 len(self.models))


class Client:
    """A UDP client connected to one server (host, port)."""

    def __init__(self, host, port=DEFAULT_PORT, payload=1400):
        if not 256 <= payload <= 65507:
            raise ValueError("payload %r: 256 to 65507 bytes" % (payload,))
        self.payload = payload
        self.dropped = 0  # datagrams that failed to parse or reassemble
        self._partial = {}  # (type, request_id) -> [first_time, total_len, headers, {off: data}]
        self._seen = {}  # request ids answered (insertion order: the oldest first)
        self.duplicates = 0  # answers to a request id already answered, dropped
        self._health = None
        self._next_id = int.from_bytes(os.urandom(4), "big") << 32
        infos = socket.getaddrinfo(host, port, type=socket.SOCK_DGRAM)
        last = None
        for family, kind, proto, _, addr in infos:
            s = socket.socket(family, kind, proto)
            try:
                s.connect(addr)
            except OSError as e:
                s.close()
                last = e
                continue
            self.sock = s
            break
        else:
            raise OSError("%s:%s: cannot connect: %s" % (host, port, last))
        self.sock.setblocking(False)
        for opt in (socket.SO_RCVBUF, socket.SO_SNDBUF):
            self.sock.setsockopt(socket.SOL_SOCKET, opt, 4 << 20)

    def fileno(self):
        return self.sock.fileno()

    def close(self):
        self.sock.close()

    def __enter__(self):
        return self

    def __exit__(self, *exc):
        self.close()

    def send(self, data, shape, fmt="u8", model=0, request_id=None):
        """Send one REQUEST: data (bytes-like) of shape (C, H, W) in format fmt ("u8", "f32",
        "fp16", "int8", "bits", "f64", or the protocol's number), for model (an id, 0 for the
        server's default, or a name). Sending again with the same request_id retransmits.
        Returns the request id (a new one when None is given)."""
        f = FORMATS.get(fmt, fmt)
        if f not in _ELEM_BITS:
            raise ValueError("fmt %r: one of %s" % (fmt, ", ".join(FORMATS)))
        if len(shape) != 3 or any(not isinstance(d, int) or d < 1 for d in shape):
            raise ValueError("shape %r: (C, H, W), each >= 1" % (shape,))
        count = shape[0] * shape[1] * shape[2]
        data = memoryview(data).cast("B")
        need = tensor_bytes(f, count)
        if len(data) != need:
            raise ValueError("tensor is %d bytes; %r of %s needs %d" % (len(data), shape, fmt,
                                                                       need))
        if need > _MAX_TOTAL:
            raise ValueError("tensor of %d bytes: the limit is 64 MiB" % need)
        mid = model_id(model) if isinstance(model, str) else model
        if request_id is None:
            request_id = self._next_id
            self._next_id += 1
        self._seen.pop(request_id, None)
        tensor = _TENSOR.pack(f, 0, 0, shape[0], shape[1], shape[2], count, 0, 0, 0)
        step = (self.payload - 64) // 8 * 8
        off = 0
        while True:
            n = min(step, need - off)
            hdr = _COMMON.pack(MAGIC, VERSION, REQUEST, 64, n, mid, 0, 0, request_id, need, off)
            self.sock.send(hdr + tensor + data[off:off + n])
            off += n
            if off >= need:
                return request_id

    def poll(self):
        """A complete RESPONSE or ERROR if one is waiting, else None. Never blocks."""
        while True:
            try:
                dgram = self.sock.recv(65535)
            except (BlockingIOError, InterruptedError, ConnectionRefusedError):
                return None
            r = self._push(dgram, time.monotonic())
            if r is None:
                continue
            if r.request_id in self._seen:
                self.duplicates += 1
                continue
            self._seen[r.request_id] = True
            if len(self._seen) > _SEEN_MAX:
                del self._seen[next(iter(self._seen))]
            return r

    def wait(self, timeout=None):
        """As poll, but wait up to timeout seconds (None: forever); None if nothing came."""
        deadline = None if timeout is None else time.monotonic() + timeout
        while True:
            r = self.poll()
            if r is not None:
                return r
            left = None if deadline is None else deadline - time.monotonic()
            if left is not None and left <= 0:
                return None
            select.select([self.sock], [], [], left)

    def request(self, data, shape, fmt="u8", model=0, timeout=1.0, retries=3):
        """Blocking request: send, wait up to timeout s for its answer (others are dropped),
        retransmitting with the same request id up to retries times. Returns the Response;
        raises ServerError for an ERROR, TimeoutError when no answer came."""
        rid = None
        for _ in range(retries + 1):
            rid = self.send(data, shape, fmt, model, rid)
            deadline = time.monotonic() + timeout
            while True:
                r = self.wait(max(0.0, deadline - time.monotonic()))
                if r is None:
                    break
                if r.request_id != rid:
                    continue
                if r.error:
                    raise ServerError(r)
                return r
        raise TimeoutError("request %d: no answer in %d tries of %g s" % (rid, retries + 1,
                                                                        timeout))

    def health(self, role="any", timeout=1.0):
        """Send a HEALTH probe asking role ("any", "nic", "host", "serve", "xdp"; splitnic-nic
        passes probes for "host" up to its host), padded to min(payload, 1400) bytes, again at
        each third of timeout; return the Health report. Answers to requests arriving meanwhile
        are dropped. Raises TimeoutError when no report came, ValueError for a bad role."""
        if role not in ROLES:
            raise ValueError("role %r: one of %s" % (role, ", ".join(ROLES)))
        rid = self._next_id
        self._next_id += 1
        size = min(self.payload, 1400)
        probe = (_COMMON.pack(MAGIC, VERSION, HEALTH, 48, size - 48, 0, 0, 0, rid, size - 48, 0)
                 + _HEALTH.pack(0, 0, ROLES[role], 0, 0, 0, 0, 0) + bytes(size - 48))
        t0 = time.monotonic()
        for k in (1, 2, 3):
            self.sock.send(probe)
            deadline = t0 + timeout * k / 3
            while True:
                self._health = None
                self.poll()
                h = self._health
                if h is not None and h[0] == rid:
                    return self._health_report(h[1], h[2], time.monotonic() - t0)
                left = deadline - time.monotonic()
                if left <= 0:
                    break
                select.select([self.sock], [], [], left)
        raise TimeoutError("no HEALTH report within %g s" % timeout)

    @staticmethod
    def _health_report(hdr, data, rtt):
        _, state, role, flags, n, _, in_flight, _ = _HEALTH.unpack_from(hdr)
        h = Health()
        h.ident = data[:32].rstrip(b"\0").decode("ascii", "replace")
        h.role = {v: k for k, v in ROLES.items()}.get(role, str(role))
        h.state = STATES.get(state, str(state))
        h.in_flight, h.truncated, h.rtt, h.models = in_flight, bool(flags & 1), rtt, []
        for i in range(n):
            mid, first, mode, fmt, c, hh, w, classes, _, name = _HEALTH_MODEL.unpack_from(
                data, 32 + 48 * i)
            h.models.append({"name": name.rstrip(b"\0").decode("ascii", "replace"), "id": mid,
                             "mode": MODES.get(mode, str(mode)), "first_op": first,
                             "fmt": {v: k for k, v in FORMATS.items()}.get(fmt, fmt),
                             "shape": (c, hh, w), "classes": classes})
        return h

    # --- receive side -----------------------------------------------------------------------

    def _parse(self, d):
        if len(d) < 32:
            return None
        magic, ver, typ, hdr_len, frag_len, mid, _, _, rid, total, off = _COMMON.unpack_from(d)
        if magic != MAGIC or ver != VERSION:
            return None
        if typ == HEALTH and 48 <= hdr_len <= 256 and len(d) == hdr_len + frag_len and \
                frag_len == total and d[32] == 1 and total == 32 + 48 * (d[36] << 8 | d[37]):
            self._health = (rid, d[32:hdr_len], bytes(d[hdr_len:]))
            return HEALTH
        if typ not in (RESPONSE, ERROR):
            return None
        if hdr_len % 4 or hdr_len < _MIN_HDR[typ] or hdr_len > 256 or len(d) != hdr_len + frag_len:
            return None
        if total > _MAX_TOTAL or off + frag_len > total or off % 8:
            return None
        return typ, rid, mid, total, off, d[32:hdr_len], d[hdr_len:]

    def _push(self, dgram, now):
        p = self._parse(dgram)
        if p is None or p == HEALTH:
            self.dropped += p is None
            return None
        typ, rid, mid, total, off, hdr, data = p
        if off == 0 and len(data) == total:
            return self._message(typ, rid, mid, hdr, bytes(data), now)
        for key in [k for k, v in self._partial.items() if now - v[0] > _REASM_TIMEOUT]:
            del self._partial[key]
        entry = self._partial.setdefault((typ, rid), [now, total, hdr, {}])
        if entry[1] != total or entry[2] != hdr:
            self.dropped += 1
            return None
        entry[3][off] = bytes(data)
        buf = bytearray(total)
        have = bytearray(total)
        for o, chunk in entry[3].items():
            buf[o:o + len(chunk)] = chunk
            have[o:o + len(chunk)] = b"\x01" * len(chunk)
        if have.count(0):
            return None
        del self._partial[(typ, rid)]
        return self._message(typ, rid, mid, hdr, bytes(buf), now)

    @staticmethod
    def _message(typ, rid, mid, hdr, data, now):
        r = Response(rid, mid, now)
        if typ == ERROR:
            code, _, detail = _ERR.unpack_from(hdr)
            r.error, r.detail = code or 7, detail
            r.reason = data[:64].decode("ascii", "replace")
            return r
        fields = _RESP.unpack_from(hdr)
        r.cls, n, score_fmt, r.executors = fields[:4]
        r.timing = list(fields[4:12])
        fmt = "<%dd" % n if score_fmt == FORMATS["f64"] else "<%df" % n
        if struct.calcsize(fmt) != len(data):
            r.error, r.reason = 7, "malformed scores"
            return r
        r.scores = list(struct.unpack(fmt, data))
        return r
