#!/usr/bin/python3
"""A classification head at the end of an ONNX graph: `splitnic import` drops it, or refuses it.

Exporters end most classifiers in Softmax (or LogSoftmax, or an ArgMax). The importer drops a
trailing Softmax, LogSoftmax or ArgMax over the classes with one note naming the nodes: the
model's classes (the argmax) are those of the graph, its scores the logits. Checked here on an
MLP built with the onnx package (the graph builder of test_onnx_qonnx.py): each head gives
exactly the scores of the same graph without it and the classes of a NumPy float64 evaluation
with the head; --keep-softmax refuses the head naming its node; a head that is not at the end,
over another axis, or an ArgMax picking the last of ties is refused naming the node and why.
"""
import os
import sys
import tempfile

import numpy as np

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from test_onnx_qonnx import G, check, failures, onnx, splitnic  # noqa: E402

rng = np.random.default_rng(11)


W1 = rng.normal(size=(24, 16)).astype(np.float32)
W2 = rng.normal(size=(10, 24)).astype(np.float32)
B1, B2 = rng.normal(size=24).astype(np.float32), rng.normal(size=10).astype(np.float32)


def mlp(g):
    """x (16) -> Gemm 24 -> Relu -> Gemm 10 (the same weights each time): the logits' name."""
    w1, b1, w2, b2 = W1, B1, W2, B2
    t = g.node("Gemm", ["x", g.const(w1, "w"), g.const(b1, "b")], transB=1)
    t = g.node("Relu", [t])
    return g.node("Gemm", [t, g.const(w2, "w"), g.const(b2, "b")], transB=1, name="logits"), \
        (w1, b1, w2, b2)


def logits_ref(x, p):
    w1, b1, w2, b2 = [np.asarray(a, np.float64) for a in p]
    return np.maximum(x.astype(np.float64) @ w1.T + b1, 0) @ w2.T + b2


def imported(tmp, name, model, *extra):
    path = os.path.join(tmp, name + ".onnx")
    onnx.save(model, path)
    snm = os.path.join(tmp, name + ".snm")
    return splitnic("import", path, "-o", snm, *extra), snm


def scores(tmp, snm, npy):
    csv = snm + ".csv"
    cls = snm + ".classes"
    r = splitnic("run", snm, "--npy", npy, "--scores", csv, "--classes", cls)
    if r.returncode:
        return None, None
    return open(csv).read(), [int(v) for v in open(cls).read().split()]


def main():
    with tempfile.TemporaryDirectory() as tmp:
        x = rng.normal(size=(200, 16)).astype(np.float32)
        npy = os.path.join(tmp, "x.npy")
        np.save(npy, x.reshape(200, 16, 1, 1))
        g = G()
        out, params = mlp(g)
        p, snm = imported(tmp, "bare", g.model((16,), out))
        check(p.returncode == 0 and not p.stderr, "the MLP without a head imports silently")
        want_scores, want_cls = scores(tmp, snm, npy)
        ref = logits_ref(x, params)
        check(want_cls == list(ref.argmax(1)), "  its classes are float64's")

        heads = {
            "softmax": [("Softmax", {"axis": 1})],
            "softmax13": [("Softmax", {})],
            "logsoftmax": [("LogSoftmax", {"axis": -1})],
            "argmax": [("ArgMax", {"axis": 1, "keepdims": 0})],
            "softmax_argmax": [("Softmax", {}), ("ArgMax", {"axis": -1, "keepdims": 1})],
        }
        for name, nodes in heads.items():
            g = G()
            t, _ = mlp(g)
            names = []
            for k, (op, attrs) in enumerate(nodes):
                names.append(f"{op.lower()}{k}")
                t = g.node(op, [t], name=names[-1], **attrs)
            p, snm = imported(tmp, name, g.model((16,), t))
            note = [ln for ln in p.stderr.splitlines() if ln]
            said = (len(note) == 1 and "note: dropped the trailing" in note[0]
                    and all(f"node '{n}' ({op})" in note[0] for n, (op, _) in zip(names, nodes))
                    and "classes are the same" in note[0] and "logits" in note[0])
            check(p.returncode == 0 and said, f"{name}: imported, one note: {' '.join(note)}")
            got_scores, got_cls = scores(tmp, snm, npy)
            check(got_scores == want_scores and got_cls == want_cls,
                  f"  {name}: the scores of the graph without it, bit for bit; the same classes")
            p, _ = imported(tmp, name + "_keep", g.model((16,), t), "--keep-softmax")
            check(p.returncode == 1 and f"node '{names[0]}' ({nodes[0][0]})" in p.stderr
                  and "--keep-softmax" in p.stderr,
                  f"  {name} --keep-softmax: refused: {p.stderr.strip()}")

        def refused(name, model, want):
            p, _ = imported(tmp, name, model)
            msg = p.stderr.strip()
            check(p.returncode == 1 and all(w in msg for w in want), f"{name}: refused: {msg}")

        g = G()
        t, _ = mlp(g)
        t = g.node("Softmax", [t], name="sm")
        t = g.node("Relu", [t], name="r")
        refused("softmax_then_relu", g.model((16,), t), ["node 'sm' (Softmax)", "only at the end",
                                                         "node 'r' (Relu)"])
        g = G()
        t, _ = mlp(g)
        t = g.node("ArgMax", [t], name="am")  # axis 0: the batch
        refused("argmax_axis0", g.model((16,), t), ["node 'am' (ArgMax)", "axis 0"])
        g = G()
        t, _ = mlp(g)
        t = g.node("ArgMax", [t], name="am", axis=1, select_last_index=1)
        refused("argmax_last", g.model((16,), t), ["node 'am' (ArgMax)", "select_last_index"])
        g = G()
        t = g.node("Conv", ["x", g.const(np.ones((2, 1, 3, 3), np.float32))], pads=[1, 1, 1, 1])
        t = g.node("Softmax", [t], name="sm", axis=1)
        refused("softmax_chw", g.model((1, 4, 4), t), ["node 'sm' (Softmax)", "(batch, classes)"])
    print(f"{len(failures)} failure(s)")
    return 1 if failures else 0


if __name__ == "__main__":
    sys.exit(main())
