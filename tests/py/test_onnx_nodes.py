#!/usr/bin/python3
"""ONNX's own backend node tests (Debian libonnx-testdata) through `splitnic import` + `run`.

Every test in data/node/ whose graph uses only the operators the importer handles runs here:
the test's inputs after the first become initializers (the importer takes one data input; the
weights of a deployed model are initializers), the model is imported, input_0 is run with
`splitnic run --npy ... --scores ...` and the scores are compared with output_0.pb at ONNX's
tolerance (rtol 1e-3, atol 1e-7). A case passes, or is refused with the importer's message.
The table is printed; the test fails on a wrong result, a crash, a refusal without a message,
or when a case of the acceptance list (MUST_PASS) does not pass.
"""
import glob
import os
import subprocess
import sys
import tempfile

import numpy as np

try:
    import onnx
    from onnx import numpy_helper
except ImportError:
    print("skip: python3-onnx not installed")
    sys.exit(77)

NODE_DIR = "/usr/share/libonnx-testdata/data/node"
SPLITNIC = os.environ.get("SPLITNIC", "build/splitnic")
OPS = {"Conv", "MaxPool", "BatchNormalization", "Gemm", "MatMul", "Add", "Relu", "Flatten",
       "Reshape", "LRN", "Sign", "Identity", "Dropout"}
MUST_PASS = (
    ["test_conv_with_autopad_same", "test_conv_with_strides_and_asymmetric_padding",
     "test_conv_with_strides_no_padding", "test_conv_with_strides_padding"]
    + ["test_maxpool_2d_" + s for s in ("ceil", "default", "pads", "precomputed_pads",
                                        "precomputed_same_upper", "precomputed_strides",
                                        "same_lower", "same_upper", "strides")]
    + ["test_batchnorm_epsilon", "test_batchnorm_example"]
    + ["test_gemm_" + s for s in ("alpha", "beta", "default_no_bias", "default_scalar_bias",
                                  "default_single_elem_vector_bias", "default_vector_bias",
                                  "default_zero_bias", "transposeB")]
    + ["test_matmul_2d", "test_relu", "test_sign", "test_lrn", "test_lrn_default",
       "test_flatten_axis1", "test_flatten_default_axis"])


def cases():
    for d in sorted(glob.glob(os.path.join(NODE_DIR, "test_*"))):
        path = os.path.join(d, "model.onnx")
        if not os.path.exists(path):
            continue
        m = onnx.load(path)
        if m.graph.node and all(n.op_type in OPS and n.domain in ("", "ai.onnx")
                                for n in m.graph.node):
            yield os.path.basename(d), d, m


def tensor(path):
    t = onnx.TensorProto()
    with open(path, "rb") as f:
        t.ParseFromString(f.read())
    return numpy_helper.to_array(t)


def run_case(name, d, m, tmp):
    ds = sorted(glob.glob(os.path.join(d, "test_data_set_0", "input_*.pb")))
    try:
        inputs = [tensor(p) for p in ds]
    except ValueError:  # an optional or sequence input: not a tensor, the import must refuse
        inputs = []
    outputs = sorted(glob.glob(os.path.join(d, "test_data_set_0", "output_*.pb")))
    g = m.graph
    for i, vi in enumerate(list(g.input)[1:len(inputs)], start=1):
        g.initializer.append(numpy_helper.from_array(inputs[i], vi.name))
    model = os.path.join(tmp, name + ".onnx")
    onnx.save(m, model)
    snm = os.path.join(tmp, name + ".snm")
    p = subprocess.run([SPLITNIC, "import", model, "-o", snm], capture_output=True, text=True)
    if p.returncode < 0 or p.returncode > 2:
        return "CRASH", f"import exit {p.returncode}: {p.stderr.strip()}"
    if p.returncode != 0:
        msg = p.stderr.strip().splitlines()
        if not msg or "splitnic import:" not in msg[-1]:
            return "CRASH", "refused without a message"
        return "refused", msg[-1].split(": ", 2)[-1]
    if not inputs:
        return "FAIL", "imported a model whose inputs are not tensors"
    x = inputs[0].astype(np.float32)
    dims = list(x.shape[1:]) + [1] * (3 - (x.ndim - 1))
    npy = os.path.join(tmp, name + ".npy")
    np.save(npy, x.reshape([x.shape[0]] + dims))
    csv = os.path.join(tmp, name + ".csv")
    p = subprocess.run([SPLITNIC, "run", snm, "--npy", npy, "--scores", csv],
                       capture_output=True, text=True)
    if p.returncode != 0:
        return "CRASH" if p.returncode < 0 else "FAIL", f"run exit {p.returncode}: {p.stderr.strip()}"
    got = np.array([[float(v) for v in line.split(",")] for line in open(csv) if line.strip()])
    ref = tensor(outputs[0]).astype(np.float64)
    ref = ref.reshape(ref.shape[0] if ref.ndim > 1 else ref.size, -1) if ref.ndim else ref
    if len(outputs) != 1 or got.shape != ref.shape:
        return "FAIL", f"output shape {got.shape}, expected {ref.shape} ({len(outputs)} outputs)"
    if not np.allclose(got, ref, rtol=1e-3, atol=1e-7):
        err = np.max(np.abs(got - ref))
        return "FAIL", f"max abs error {err:g}"
    return "PASS", ""


def main():
    if not os.path.isdir(NODE_DIR):
        print(f"skip: {NODE_DIR} missing (Debian package libonnx-testdata)")
        return 77
    results = {}
    with tempfile.TemporaryDirectory() as tmp:
        for name, d, m in cases():
            results[name] = run_case(name, d, m, tmp)
    width = max(len(n) for n in results)
    for name, (status, msg) in results.items():
        print(f"{name:<{width}}  {status:<8} {msg}")
    counts = {s: sum(1 for v in results.values() if v[0] == s) for s in
              ("PASS", "refused", "FAIL", "CRASH")}
    print(f"\n{len(results)} node tests: " + ", ".join(f"{v} {k}" for k, v in counts.items()))
    bad = [n for n, (s, _) in results.items() if s in ("FAIL", "CRASH")]
    missing = [n for n in MUST_PASS if results.get(n, ("absent",))[0] != "PASS"]
    if bad:
        print("wrong result or crash:", " ".join(bad))
    if missing:
        print("required to pass but did not:", " ".join(missing))
    return 1 if bad or missing else 0


if __name__ == "__main__":
    sys.exit(main())
