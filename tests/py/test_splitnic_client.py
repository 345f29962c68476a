#!/usr/bin/python3
"""client/python/splitnic_client.py against `splitnic respond-ref` over loopback UDP: answers
(classes of the labels, scores), fragmented requests and responses, ERRORs, retransmission
with the same request id, timeouts, asynchronous use, bad arguments.
Run: /usr/bin/python3 tests/py/test_splitnic_client.py (needs build/splitnic and Fashion-MNIST)."""
import gzip
import os
import socket
import struct
import subprocess
import sys
import tempfile
import threading
import time
import traceback

ROOT = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
sys.path.insert(0, os.path.join(ROOT, "client", "python"))
import splitnic_client  # noqa: E402
from splitnic_client import Client, ServerError  # noqa: E402

S = os.environ.get("SPLITNIC", os.path.join(ROOT, "build", "splitnic"))
D = "/usr/share/datasets/fashion-mnist"
IMG, LAB = D + "/t10k-images-idx3-ubyte.gz", D + "/t10k-labels-idx1-ubyte.gz"
N = 60
images = gzip.open(IMG).read()[16:16 + N * 784]
labels = list(gzip.open(LAB).read()[8:8 + N])


def image(i):
    return images[i * 784:(i + 1) * 784]


def free_port():
    s = socket.socket(socket.AF_INET, socket.SOCK_DGRAM)
    s.bind(("127.0.0.1", 0))
    port = s.getsockname()[1]
    s.close()
    return port


class Responder:
    """respond-ref on a free loopback port with the given extra options."""

    def __init__(self, *args):
        self.port = free_port()
        self.dir = tempfile.mkdtemp()
        ready = os.path.join(self.dir, "ready")
        self.p = subprocess.Popen([S, "respond-ref", "--bind", "127.0.0.1", "--port",
                                   str(self.port), "--images", IMG, "--labels", LAB,
                                   "--ready-file", ready] + list(args),
                                  stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
        for _ in range(100):
            if os.path.exists(ready):
                return
            time.sleep(0.05)
        raise RuntimeError("respond-ref did not start")

    def __enter__(self):
        return self

    def __exit__(self, *exc):
        self.p.terminate()
        self.p.wait()
        os.remove(os.path.join(self.dir, "ready"))
        os.rmdir(self.dir)


def test_blocking_requests_fragmented_both_ways():
    # 784-byte requests in 256-byte datagrams (4 fragments); 300 f64 scores (2400 bytes)
    # come back in two datagrams
    with Responder("--classes", "300") as r, Client("127.0.0.1", r.port, payload=256) as c:
        for i in range(N):
            resp = c.request(image(i), (1, 28, 28), "u8", model="fmnist-bmlp", timeout=2)
            assert resp.error == 0 and resp.cls == labels[i], (i, resp)
            assert len(resp.scores) == 300
            assert resp.scores[resp.cls] == 1.0
            other = (resp.cls + 1) % 300
            assert resp.scores[other] == -other / 300, resp.scores[other]
            assert resp.executors == 1


def test_async_window():
    with Responder() as r, Client("127.0.0.1", r.port) as c:
        ids = {c.send(image(i), (1, 28, 28)): i for i in range(N)}
        got = {}
        deadline = time.monotonic() + 5
        while len(got) < N and time.monotonic() < deadline:
            resp = c.wait(0.5)
            if resp is not None:
                got[ids[resp.request_id]] = resp.cls
        assert got == {i: labels[i] for i in range(N)}, got
        assert c.poll() is None


def test_errors_and_retransmission():
    # every 3rd request is answered with ERROR busy, every 4th not at all
    with Responder("--error-every", "3", "--drop-every", "4") as r, \
            Client("127.0.0.1", r.port) as c:
        errors = answered = 0
        for i in range(24):
            try:
                resp = c.request(image(i), (1, 28, 28), timeout=0.2, retries=3)
                assert resp.cls == labels[i]
                answered += 1
            except ServerError as e:
                assert e.response.error == 4 and e.response.reason == "reference error", e
                assert "server error 4 (busy)" in str(e)
                errors += 1
        assert answered + errors == 24 and errors >= 6, (answered, errors)


def test_one_answer_per_request_id():
    # a retransmission answered too: the second answer is dropped and counted; the id sent
    # again after its answer is a new request
    with Responder() as r, Client("127.0.0.1", r.port) as c:
        rid = c.send(image(0), (1, 28, 28))
        c.send(image(0), (1, 28, 28), request_id=rid)
        first = c.wait(2.0)
        assert first is not None and first.request_id == rid and first.cls == labels[0]
        assert c.wait(0.2) is None
        assert c.duplicates == 1, c.duplicates
        c.send(image(0), (1, 28, 28), request_id=rid)
        again = c.wait(2.0)
        assert again is not None and again.request_id == rid


def test_health_probe():
    # against a hand-made server: the probe is padded to 1400 bytes with the role asked; no
    # answer is a TimeoutError; a report is parsed; a bad role is a ValueError
    srv = socket.socket(socket.AF_INET, socket.SOCK_DGRAM)
    srv.bind(("127.0.0.1", 0))
    with Client("127.0.0.1", srv.getsockname()[1]) as c:
        try:
            c.health("host", timeout=0.05)
        except TimeoutError:
            pass
        else:
            raise AssertionError("no TimeoutError")
        probe = srv.recv(2048)
        assert len(probe) == 1400 and probe[3] == 5 and probe[32] == 0 and probe[34] == 2
        srv.setblocking(False)
        while True:  # the probe's repeats
            try:
                srv.recv(2048)
            except BlockingIOError:
                break
        srv.setblocking(True)
        entry = struct.pack(">IHBBIIIHH24s", 7, 9, 3, 5, 3136, 1, 1, 10, 0, b"fmnist-bcnn")
        body = b"srv-a".ljust(32, b"\0") + entry

        def answer():
            p, a = srv.recvfrom(2048)
            srv.sendto(struct.pack(">HBBHHIHH", 0x534E, 1, 5, 48, len(body), 0, 0, 0) + p[16:24]
                       + struct.pack(">II", len(body), 0)
                       + struct.pack(">BBBBHHII", 1, 2, 1, 0, 1, 0, 4, 0) + body, a)
        t = threading.Thread(target=answer)
        t.start()
        h = c.health("nic", timeout=2.0)
        t.join()
        assert (h.ident, h.role, h.state, h.in_flight) == ("srv-a", "nic", "degraded", 4), h
        assert h.models == [{"name": "fmnist-bcnn", "id": 7, "mode": "nic-part", "first_op": 9,
                             "fmt": "bits", "shape": (3136, 1, 1), "classes": 10}], h.models
        try:
            c.health("router")
        except ValueError as e:
            assert "role 'router'" in str(e)
        else:
            raise AssertionError("bad role accepted")
    srv.close()


def test_timeout_without_server():
    with Client("127.0.0.1", free_port()) as c:
        t0 = time.monotonic()
        try:
            c.request(image(0), (1, 28, 28), timeout=0.1, retries=2)
        except TimeoutError as e:
            assert "no answer in 3 tries" in str(e)
        else:
            raise AssertionError("no TimeoutError")
        assert time.monotonic() - t0 >= 0.3


def test_bad_arguments():
    with Client("127.0.0.1", free_port()) as c:
        for args, needle in [((image(0)[:783], (1, 28, 28)), "783 bytes"),
                             ((image(0), (1, 28, 28), "u4"), "fmt 'u4'"),
                             ((image(0), (0, 28, 28)), "shape"),
                             ((image(0), (784,)), "shape")]:
            try:
                c.send(*args)
            except ValueError as e:
                assert needle in str(e), (str(e), needle)
            else:
                raise AssertionError("accepted %r" % (args[1:],))
    try:
        Client("127.0.0.1", 1, payload=100)
    except ValueError as e:
        assert "payload 100" in str(e)
    else:
        raise AssertionError("payload 100 accepted")


def test_model_id_is_fnv1a():
    assert splitnic_client.model_id("") == 2166136261
    assert splitnic_client.model_id("a") == 0xE40C292C


def main():
    if not os.access(S, os.X_OK):
        print("FAIL: %s not built" % S)
        return 1
    tests = [(k, v) for k, v in sorted(globals().items()) if k.startswith("test_")]
    ok = bad = 0
    for name, fn in tests:
        try:
            fn()
            ok += 1
        except Exception:
            bad += 1
            print("FAIL", name)
            traceback.print_exc()
    print("%d passed, %d failed" % (ok, bad))
    return 1 if bad else 0


if __name__ == "__main__":
    sys.exit(main())
