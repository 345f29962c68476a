#!/usr/bin/python3
# SPDX-License-Identifier: MIT
"""Regenerate the seed corpora of the converter, model-file, plan and profile fuzz targets.

    /usr/bin/python3 tests/fuzz/make_seeds.py build/splitnic

Writes tests/fuzz/corpus/{arch,npz,model,plan,profile}/: a handful of small seeds each (model
files come from `splitnic convert` of the arch seeds; plans from `splitnic plan`, retargeted to
the model fuzz_plan builds in memory). The same files every run, but for the profile that
`splitnic calibrate --quick` measures.
"""
import io
import json
import os
import re
import subprocess
import sys
import tempfile
import zipfile

import numpy as np

ROOT = os.path.join(os.path.dirname(os.path.abspath(__file__)), "corpus")

# The architecture of tests/fuzz/fuzz_kern.h (fuzz_arch_json): fuzz_npz's archives are for it.
FIXED = {"name": "fuzz-npz", "input": {"shape": [2, 5, 5], "dtype": "u8"}, "layers": [
    {"type": "conv", "out": 3, "kernel": 3, "pad": 1, "bias": True, "binary_weights": True},
    {"type": "batchnorm", "eps": 1e-4}, {"type": "sign"},
    {"type": "maxpool", "kernel": 2, "stride": 1},
    {"type": "conv", "out": 4, "kernel": 2, "stride": 2},
    {"type": "lrn", "size": 3}, {"type": "relu"}, {"type": "flatten"},
    {"type": "dense", "out": 8, "bias": True, "binary_weights": True},
    {"type": "batchnorm"}, {"type": "sign"},
    {"type": "dense", "out": 3, "bias": True}, {"type": "batchnorm"}]}

MLP = {"name": "mlp", "input": {"shape": [1, 4, 4], "dtype": "u8"}, "layers": [
    {"type": "flatten"},
    {"type": "dense", "out": 70, "bias": True, "binary_weights": True},
    {"type": "batchnorm", "eps": 1e-4}, {"type": "sign"},
    {"type": "dense", "out": 3, "bias": True, "binary_weights": True},
    {"type": "batchnorm", "eps": 1e-4}]}

CNN = {"name": "cnn-f32", "input": {"shape": [3, 6, 6], "dtype": "f32"}, "layers": [
    {"type": "conv", "out": 4, "kernel": 3, "bias": True},
    {"type": "relu"}, {"type": "maxpool", "kernel": 2},
    {"type": "batchnorm"}, {"type": "sign"},
    {"type": "conv", "out": 2, "kernel": 2, "pad": 1, "binary_weights": True},
    {"type": "lrn", "size": 1, "alpha": 0.5}, {"type": "flatten"},
    {"type": "dense", "out": 2}]}


def weights(arch, rng, dtype):
    """Arrays with the shapes of the spec, as {key: array}."""
    c, h, w = arch["input"]["shape"]
    out = {}
    for i, L in enumerate(arch["layers"]):
        t = L["type"]
        if t == "dense":
            out[f"{i}.weight"] = rng.standard_normal((L["out"], c * h * w))
            if L.get("bias"):
                out[f"{i}.bias"] = rng.standard_normal(L["out"])
            c, h, w = L["out"], 1, 1
        elif t == "conv":
            k, s, p = L["kernel"], L.get("stride", 1), L.get("pad", 0)
            out[f"{i}.weight"] = rng.standard_normal((L["out"], c, k, k))
            if L.get("bias"):
                out[f"{i}.bias"] = rng.standard_normal(L["out"])
            c, h, w = L["out"], (h + 2 * p - k) // s + 1, (w + 2 * p - k) // s + 1
        elif t == "batchnorm":
            out[f"{i}.gamma"] = rng.standard_normal(c)
            out[f"{i}.beta"] = rng.standard_normal(c)
            out[f"{i}.mean"] = rng.standard_normal(c)
            out[f"{i}.var"] = rng.random(c) + 0.1
        elif t == "maxpool":
            k, s = L["kernel"], L.get("stride", L["kernel"])
            h, w = (h - k) // s + 1, (w - k) // s + 1
        elif t == "flatten":
            c, h, w = c * h * w, 1, 1
    return {k: v.astype(dtype) for k, v in out.items()}


def npz_bytes(arrays, compressed):
    buf = io.BytesIO()
    (np.savez_compressed if compressed else np.savez)(buf, **arrays)
    return buf.getvalue()


def write(kind, name, data):
    os.makedirs(os.path.join(ROOT, kind), exist_ok=True)
    with open(os.path.join(ROOT, kind, name), "wb") as f:
        f.write(data.encode() if isinstance(data, str) else data)


def main():
    splitnic = sys.argv[1]
    rng = np.random.default_rng(17)
    archs = {"fixed": FIXED, "mlp": MLP, "cnn": CNN}

    for name, arch in archs.items():
        write("arch", f"{name}.json", json.dumps(arch, indent=1) + "\n")
    # arch.json, a NUL, then bytes choosing the synthesized weights' values (fuzz_arch.c)
    write("arch", "mlp_values", json.dumps(MLP) + "\0" + "".join(map(chr, range(32, 96))))

    w = weights(FIXED, rng, np.float32)
    write("npz", "stored_f32.npz", npz_bytes(w, False))
    write("npz", "deflated_f64.npz", npz_bytes(weights(FIXED, rng, np.float64), True))
    del w["8.bias"]
    write("npz", "missing_bias.npz", npz_bytes(w, False))

    with tempfile.TemporaryDirectory() as tmp:
        for name, arch in archs.items():
            a, n, m = (os.path.join(tmp, f"{name}.{x}") for x in ("json", "npz", "snm"))
            with open(a, "w") as f:
                json.dump(arch, f)
            with open(n, "wb") as f:
                f.write(npz_bytes(weights(arch, rng, np.float32), name == "cnn"))
            subprocess.run([splitnic, "convert", a, n, "-o", m], check=True)
            with open(m, "rb") as f:
                write("model", f"{name}.snm", f.read())
        # plans for the fixed model, retargeted to the hash fuzz_plan's in-memory model has
        fixed = os.path.join(tmp, "fixed.snm")
        for obj in ("latency", "throughput"):
            p = os.path.join(tmp, f"{obj}.plan")
            subprocess.run([splitnic, "plan", fixed, "--objective", obj, "-o", p], check=True,
                           stdout=subprocess.DEVNULL)
            with open(p) as f:
                text = re.sub(r"^model (\S+) [0-9a-f]{16} ", r"model \1 cbf29ce484222325 ",
                              f.read(), flags=re.M)
            write("plan", f"{obj}.plan", text)
        n_ops = re.search(r"^model \S+ \S+ (\d+)", text, re.M).group(1)
        write("plan", "three_stages.plan",
              f"splitnic-plan 1\nmodel fuzz-npz cbf29ce484222325 {n_ops}\nobjective latency\n"
              f"link_gbps 10\npredicted_us 12.5\nstage cpu 0 3 -\nstage gpu 3 9 f64\n"
              f"stage nic 9 {n_ops} bits\n")
        prof = os.path.join(tmp, "p")
        subprocess.run([splitnic, "calibrate", "--quick", "-o", prof], check=True,
                       stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
        with open(prof) as f:
            write("profile", "calibrated", f.read())
    write("profile", "partial",
          "# a few keys\ncpu.op_s = 2e-6\ngpu.present = 1\nlink.gbps=25 # fast link\n"
          "link.payload = 8000\nnic.mem_bytes = 0x1p20\n\n")


if __name__ == "__main__":
    main()
