#!/usr/bin/python3
"""QONNX-style binarized networks, ONNX Sign, --interchange and refusals of `splitnic import`.

A binarized MLP and CNN are built here with the onnx package (BipolarQuant in both QONNX
domains on weights and activations, the Where(GreaterOrEqual) and Cast/Mul/Sub binarizers,
weights with -0.0, inputs with exact zeros), imported, run, and compared with a float64
evaluation of the same graph in NumPy: identical classes and scores within 1e-9 relative.
ONNX Sign must compile to one bit where its input provably is never 0 and run three-valued
(Sign(0) = 0, said once naming the node) where it can be 0. Every refusal names the node.
"""
import os
import subprocess
import sys
import tempfile

import numpy as np

try:
    import onnx
    from onnx import TensorProto, helper, numpy_helper
except ImportError:
    print("skip: python3-onnx not installed")
    sys.exit(77)

SPLITNIC = os.environ.get("SPLITNIC", "build/splitnic")
QONNX = "qonnx.custom_op.general"
FINN = "finn.custom_op.general"
rng = np.random.default_rng(7)
failures = []


def check(cond, what):
    print(("ok   " if cond else "FAIL ") + what)
    if not cond:
        failures.append(what)


class G:
    """A graph under construction: nodes, initializers, unique names."""

    def __init__(self):
        self.nodes, self.inits, self.k = [], [], 0

    def name(self, p):
        self.k += 1
        return f"{p}{self.k}"

    def const(self, arr, p="c", typed=False):
        """An initializer, as raw_data or (typed) in float_data."""
        n = self.name(p)
        arr = np.asarray(arr)
        if typed:
            self.inits.append(helper.make_tensor(n, TensorProto.FLOAT, arr.shape,
                                                 arr.reshape(-1).tolist()))
        else:
            self.inits.append(numpy_helper.from_array(arr, n))
        return n

    def node(self, op, inputs, domain="", name=None, **attrs):
        out = self.name("t")
        self.nodes.append(helper.make_node(op, inputs, [out], name=name or self.name(op.lower()),
                                           domain=domain, **attrs))
        return out

    def model(self, x_shape, out, opset=13):
        x = helper.make_tensor_value_info("x", TensorProto.FLOAT, ["N"] + list(x_shape))
        y = helper.make_tensor_value_info(out, TensorProto.FLOAT, None)
        g = helper.make_graph(self.nodes, "qtest", [x], [y], self.inits)
        ops = [helper.make_opsetid("", opset), helper.make_opsetid(QONNX, 1),
               helper.make_opsetid(FINN, 1)]
        return helper.make_model(g, opset_imports=ops, ir_version=8)


def sgn(v):
    return np.where(v >= 0, 1.0, -1.0)


def bn_params(c, eps):
    g = rng.normal(size=c).astype(np.float32)
    g[0] = -abs(g[0])
    if c > 2:
        g[2] = 0.0
    b = rng.normal(size=c).astype(np.float32)
    m = (rng.normal(size=c) * 3).astype(np.float32)
    v = rng.uniform(0.5, 4, size=c).astype(np.float32)
    return g, b, m, v, eps


def add_bn(G_, x, p):
    g, b, m, v, eps = p
    return G_.node("BatchNormalization", [x, G_.const(g), G_.const(b), G_.const(m), G_.const(v)],
                   epsilon=eps)


def eval_bn(x, p):
    g, b, m, v, eps = [np.asarray(a, np.float64) for a in p[:4]] + [p[4]]
    sh = (1, -1) + (1,) * (x.ndim - 2)
    sd = np.sqrt(v.reshape(sh) + eps)
    return (x - m.reshape(sh)) / sd * g.reshape(sh) + b.reshape(sh)


def weights(shape, n_zero=3):
    w = rng.normal(size=shape).astype(np.float32)
    flat = w.reshape(-1)
    flat[:n_zero] = -0.0  # BipolarQuant: x >= 0 -> +1, so -0.0 gives +1
    flat[n_zero:2 * n_zero] = 0.0
    return w


def conv(x, w, b, pad, stride=1):
    x = np.pad(x, ((0, 0), (0, 0), (pad, pad), (pad, pad)))
    n, c, h, wd = x.shape
    o, _, k, _ = w.shape
    oh, ow = (h - k) // stride + 1, (wd - k) // stride + 1
    y = np.zeros((n, o, oh, ow))
    for i in range(oh):
        for j in range(ow):
            patch = x[:, :, i * stride:i * stride + k, j * stride:j * stride + k]
            y[:, :, i, j] = np.tensordot(patch, w.astype(np.float64), axes=([1, 2, 3], [1, 2, 3]))
    return y + (0 if b is None else np.asarray(b, np.float64).reshape(1, -1, 1, 1))


def maxpool(x, k):
    n, c, h, w = x.shape
    return x[:, :, :h // k * k, :w // k * k].reshape(n, c, h // k, k, w // k, k).max(axis=(3, 5))


def compiled_ops(snm):
    """The op names of `splitnic inspect --ops` (its compiled-ops table)."""
    out = splitnic("inspect", snm, "--ops").stdout.split("compiled ops:")[-1]
    return [line.split()[1] for line in out.splitlines()[2:] if line.strip()]


def splitnic(*args):
    return subprocess.run([SPLITNIC] + list(args), capture_output=True, text=True)


def run_model(tmp, name, model, x):
    path = os.path.join(tmp, name + ".onnx")
    onnx.save(model, path)
    snm = os.path.join(tmp, name + ".snm")
    p = splitnic("import", path, "-o", snm)
    if p.returncode != 0:
        return None, p.stderr, path
    npy = os.path.join(tmp, name + ".npy")
    dims = list(x.shape[1:]) + [1] * (4 - x.ndim)
    np.save(npy, x.reshape([x.shape[0]] + dims).astype(np.float32))
    csv = os.path.join(tmp, name + ".csv")
    r = splitnic("run", snm, "--npy", npy, "--scores", csv)
    if r.returncode != 0:
        return None, r.stderr, path
    got = np.array([[float(v) for v in line.split(",")] for line in open(csv) if line.strip()])
    return got, p.stderr, path


def compare(name, got, ref):
    if got is None:
        check(False, f"{name}: imported and ran")
        return
    ref = ref.reshape(ref.shape[0], -1)
    err = np.max(np.abs(got - ref) / np.maximum(1.0, np.abs(ref)))
    check(got.shape == ref.shape and np.array_equal(got.argmax(1), ref.argmax(1)) and err <= 1e-9,
          f"{name}: {got.shape[0]} inputs, classes equal to float64, max rel error {err:.2g}")


def inputs(shape, n=64):
    x = rng.normal(size=(n,) + shape).astype(np.float32)
    x.reshape(n, -1)[:, :2] = 0.0
    x.reshape(n, -1)[:, 2] = -0.0
    return x


def mlp(tmp):
    g = G()
    bn1, bn2 = bn_params(33, 1e-3), bn_params(10, 1e-4)
    w1, w2 = weights((20, 33)), weights((33, 10))
    b1, b2 = rng.normal(size=33).astype(np.float32), rng.normal(size=10).astype(np.float32)
    one = g.const(np.float32(1.0), "scale")
    t = g.node("BipolarQuant", ["x", one], domain=QONNX)
    t = g.node("MatMul", [t, g.node("BipolarQuant", [g.const(w1, "w"), one], domain=QONNX)])
    t = g.node("Add", [t, g.const(b1, "b", typed=True)])
    t = add_bn(g, t, bn1)
    t = g.node("BipolarQuant", [t, one], domain=FINN)
    t = g.node("MatMul", [t, g.node("BipolarQuant", [g.const(w2, "w", typed=True), one],
                                    domain=FINN)])
    t = g.node("Add", [t, g.const(b2, "b")])
    t = add_bn(g, t, bn2)
    x = inputs((20,))
    h = sgn(x.astype(np.float64)) @ sgn(w1) + b1
    ref = eval_bn(sgn(eval_bn(h, bn1)) @ sgn(w2) + b2, bn2)
    model = g.model((20,), t)
    got, _, path = run_model(tmp, "qmlp", model, x)
    compare("QONNX binarized MLP", got, ref)
    ops = compiled_ops(os.path.join(tmp, "qmlp.snm"))
    check(ops.count("bdense") == 2 and "dense" not in ops,
          "QONNX MLP compiles to bit-packed dense layers")
    return path, x, got


def cnn(tmp):
    g = G()
    w0 = rng.normal(size=(4, 1, 3, 3)).astype(np.float32)
    b0 = rng.normal(size=4).astype(np.float32)
    w1, w2 = weights((6, 4, 3, 3)), sgn(rng.normal(size=(6, 6, 3, 3))).astype(np.float32)
    w3, b3 = weights((10, 96)), rng.normal(size=10).astype(np.float32)
    bn0, bn1, bn2 = bn_params(4, 1e-5), bn_params(6, 1e-4), bn_params(6, 1e-3)
    one = g.const(np.float32(1.0), "scale")
    zero = g.const(np.float32(0.0), "zero")
    t = g.node("Conv", ["x", g.const(w0, "w"), g.const(b0, "b")], pads=[1, 1, 1, 1],
               kernel_shape=[3, 3])
    t = add_bn(g, t, bn0)
    t = g.node("Where", [g.node("GreaterOrEqual", [t, zero]), g.const(np.float32(1.0)),
                         g.const(np.float32(-1.0))])
    wq = g.node("BipolarQuant", [g.const(w1, "w"), one], domain=QONNX)
    t = g.node("Conv", [t, wq, g.const(rng.normal(size=6).astype(np.float32), "b")],
               pads=[1, 1, 1, 1])
    b1 = numpy_helper.to_array(g.inits[-1])
    t = g.node("MaxPool", [t], kernel_shape=[2, 2], strides=[2, 2])
    t = add_bn(g, t, bn1)
    t = g.node("Cast", [g.node("GreaterOrEqual", [t, zero])], to=TensorProto.FLOAT)
    t = g.node("Sub", [g.node("Mul", [t, g.const(np.float32(2.0))]), g.const(np.float32(1.0))])
    t = g.node("Conv", [t, g.const(w2, "w")], pads=[1, 1, 1, 1], strides=[1, 1])
    t = add_bn(g, t, bn2)
    t = g.node("BipolarQuant", [t, one], domain=FINN)
    t = g.node("Flatten", [t], axis=1)
    wq3 = g.node("BipolarQuant", [g.const(w3, "w"), one], domain=QONNX)
    t = g.node("Gemm", [t, wq3, g.const(b3, "b")], transB=1)
    x = inputs((1, 8, 8))
    h = sgn(eval_bn(conv(x.astype(np.float64), w0, b0, 1), bn0))
    h = sgn(eval_bn(maxpool(conv(h, sgn(w1), b1, 1), 2), bn1))
    h = sgn(eval_bn(conv(h, w2, None, 1), bn2)).reshape(len(x), -1)
    ref = h @ sgn(w3).T + b3
    got, err, _ = run_model(tmp, "qcnn", g.model((1, 8, 8), t), x)
    compare("QONNX binarized CNN", got, ref)
    ops = compiled_ops(os.path.join(tmp, "qcnn.snm"))
    check(ops.count("bconv") >= 2, "QONNX CNN compiles its binary convs to bconv")


def sign_cases(tmp):
    for mean, proven in ((0.5, True), (0.0, False)):
        g = G()
        w1, w2 = sgn(rng.normal(size=(16, 8))), sgn(rng.normal(size=(8, 4)))
        bn = (np.ones(8, np.float32), np.zeros(8, np.float32), np.full(8, mean, np.float32),
              np.full(8, 1.0, np.float32), 1e-5)
        one = g.const(np.float32(1.0), "scale")
        t = g.node("BipolarQuant", ["x", one], domain=QONNX)
        t = g.node("MatMul", [t, g.const(w1.astype(np.float32), "w")])
        t = add_bn(g, t, bn)
        t = g.node("Sign", [t], name="the_sign")
        t = g.node("MatMul", [t, g.const(w2.astype(np.float32), "w")])
        x = inputs((16,), 256)
        ref = np.sign(eval_bn(sgn(x) @ w1, bn)) @ w2
        got, err, _ = run_model(tmp, f"sign{int(proven)}", g.model((16,), t), x)
        compare(f"Sign after batch-norm with mean {mean}", got, ref)
        note = "node 'the_sign' (Sign): Sign runs three-valued" in err
        ops = compiled_ops(os.path.join(tmp, f"sign{int(proven)}.snm"))
        if proven:
            check(not note and "sign3" not in ops and "bdense" in ops,
                  "Sign whose input is never 0 compiles to one bit, without a note")
        else:
            check(note and err.count("three-valued") == 1 and "sign3" in ops,
                  "Sign whose input can be 0 runs three-valued, said once naming the node")
            check(np.any(np.sign(eval_bn(sgn(x) @ w1, bn)) == 0), "  (zeros do occur there)")


def interchange(tmp, path, x, got):
    d = os.path.join(tmp, "ic")
    p = splitnic("import", path, "--interchange", d)
    check(p.returncode == 0, "--interchange writes arch.json + weights.npz")
    snm = os.path.join(tmp, "ic.snm")
    p = splitnic("convert", os.path.join(d, "arch.json"), os.path.join(d, "weights.npz"), "-o", snm)
    check(p.returncode == 0, "splitnic convert accepts them " + p.stderr.strip())
    npy = os.path.join(tmp, "qmlp.npy")
    csv = os.path.join(tmp, "ic.csv")
    splitnic("run", snm, "--npy", npy, "--scores", csv)
    ic = np.array([[float(v) for v in line.split(",")] for line in open(csv) if line.strip()])
    check(ic.shape == got.shape and np.array_equal(ic, got),
          "the interchange pair gives the import's scores bit for bit")
    p = splitnic("import", os.path.join(tmp, "sign0.onnx"), "--interchange", d + "2")
    check(p.returncode == 1 and "node 'the_sign' (Sign)" in p.stderr
          and "can be exactly 0" in p.stderr,
          "--interchange refuses a three-valued Sign, naming it and why: " + p.stderr.strip())
    # a Sign proven never to see 0 is the interchange's 1-bit sign: written, same scores
    p = splitnic("import", os.path.join(tmp, "sign1.onnx"), "--interchange", d + "3")
    check(p.returncode == 0, "--interchange writes a Sign proven 1-bit as a sign " + p.stderr)
    snm = os.path.join(tmp, "ic3.snm")
    p = splitnic("convert", os.path.join(d + "3", "arch.json"), os.path.join(d + "3", "weights.npz"),
                 "-o", snm)
    r = splitnic("run", snm, "--npy", os.path.join(tmp, "sign1.npy"), "--scores",
                 os.path.join(tmp, "ic3.csv"))
    r1 = splitnic("run", os.path.join(tmp, "sign1.snm"), "--npy", os.path.join(tmp, "sign1.npy"),
                  "--scores", os.path.join(tmp, "sign1.csv"))
    same = (p.returncode == 0 and r.returncode == 0 and r1.returncode == 0 and
            open(os.path.join(tmp, "ic3.csv")).read() == open(os.path.join(tmp, "sign1.csv")).read())
    check(same, "  its interchange pair gives the import's scores bit for bit")
    # padding the interchange format has no form for: refused naming the node and the pads
    for name, op, want in (("ceil", "MaxPool", "node 'pool1' (MaxPool): max-pool padding (top 0, "
                            "left 0, bottom 1, right 1"),
                           ("asym", "Conv", "node 'conv1' (Conv): asymmetric padding (top 0, "
                            "left 0, bottom 1, right 1)")):
        g = G()
        if op == "MaxPool":
            t = g.node("MaxPool", ["x"], name="pool1", kernel_shape=[2, 2], strides=[2, 2],
                       ceil_mode=1)
        else:
            t = g.node("Conv", ["x", g.const(np.ones((2, 1, 3, 3), np.float32))], name="conv1",
                       pads=[0, 0, 1, 1])
        path = os.path.join(tmp, name + ".onnx")
        onnx.save(g.model((1, 5, 5), g.node("Flatten", [t], axis=1)), path)
        p = splitnic("import", path, "--interchange", os.path.join(tmp, name))
        check(p.returncode == 1 and want in p.stderr and "import it with -o" in p.stderr,
              f"--interchange refuses {op} padding: " + p.stderr.strip())


def refusals(tmp):
    def refused(name, model_or_bytes, want):
        path = os.path.join(tmp, name + ".onnx")
        if isinstance(model_or_bytes, bytes):
            open(path, "wb").write(model_or_bytes)
        else:
            onnx.save(model_or_bytes, path)
        p = splitnic("import", path, "-o", os.path.join(tmp, name + ".snm"))
        msg = p.stderr.strip()
        check(p.returncode == 1 and all(w in msg for w in want), f"{name}: {msg}")

    g = G()
    t = g.node("Relu", ["x"])
    t = g.node("Add", [t, "x"], name="residual")
    refused("residual", g.model((8,), t), ["node 'residual' (Add)", "not a constant"])
    g = G()
    t = g.node("Conv", ["x", g.const(np.ones((4, 1, 3, 3), np.float32))], name="c1", group=2)
    refused("group", g.model((1, 5, 5), t), ["node 'c1' (Conv)", "attribute 'group'"])
    g = G()
    t = g.node("MatMul", ["x", g.const(np.ones((8, 3), np.float32))], name="mm")
    m = g.model((8,), t)
    ext = m.graph.initializer[0]
    ext.ClearField("raw_data")
    ext.data_location = TensorProto.EXTERNAL
    ext.external_data.add(key="location", value="weights.bin")
    refused("external", m, ["external data"])
    g = G()
    t = g.node("MatMul", ["x", g.const(np.ones((8, 3), np.float32))])
    refused("opset8", g.model((8,), t, opset=8), ["opset 8"])
    g = G()
    t = g.node("Softmax", ["x"], name="sm")
    t = g.node("MatMul", [t, g.const(np.ones((8, 3), np.float32))], name="after")
    refused("softmax", g.model((8,), t), ["node 'sm' (Softmax)", "only at the end",
                                          "node 'after' (MatMul)"])
    good = open(os.path.join(tmp, "qmlp.onnx"), "rb").read()
    refused("truncated", good[:len(good) // 2], ["not a valid ONNX protobuf"])
    refused("garbage", bytes(rng.integers(0, 256, 4096, dtype=np.uint8)),
            ["not a valid ONNX protobuf"])


def main():
    with tempfile.TemporaryDirectory() as tmp:
        path, x, got = mlp(tmp)
        cnn(tmp)
        sign_cases(tmp)
        if got is not None:
            interchange(tmp, path, x, got)
        refusals(tmp)
    print(f"{len(failures)} failure(s)")
    return 1 if failures else 0


if __name__ == "__main__":
    sys.exit(main())
