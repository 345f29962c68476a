#!/usr/bin/python3
"""Checks of models/scripts/genmodel.py: deterministic, files per the spec, hard cases covered.
Run: /usr/bin/python3 tests/py/test_genmodel.py"""
import json
import os
import subprocess
import sys
import tempfile

import numpy as np

ROOT = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
sys.path.insert(0, os.path.join(ROOT, "models", "scripts"))
import refeval  # noqa: E402

GEN = os.path.join(ROOT, "models", "scripts", "genmodel.py")
HARD = {"width not multiple of 64", "binary conv with zero padding", "batchnorm gamma < 0",
        "batchnorm gamma == 0", "maxpool before sign", "maxpool after sign", "stride > 1",
        "overlapping maxpool", "binary layer on u8 input", "binary layer on float input",
        "exact zeros before sign (integer sum)", "exact zeros before sign (x - mean == 0)",
        "float dense with integer weights (exact zero sums)", "relu", "lrn",
        "dense with bias", "dense without bias", "float64 arrays"}


def gen(d, kind, seed):
    subprocess.check_call([sys.executable, GEN, "--out", d, "--seed", str(seed), "--kind", kind,
                           "--count", "40"], stdout=subprocess.DEVNULL)
    with open(os.path.join(d, "arch.json")) as f:
        arch = json.load(f)
    with open(os.path.join(d, "info.json")) as f:
        info = json.load(f)
    return arch, info


def main():
    ok = bad = 0
    covered = set()
    with tempfile.TemporaryDirectory() as t:
        for kind in ("hard", "mlp", "cnn"):
            for seed in range(4):
                d = os.path.join(t, "%s%d" % (kind, seed))
                try:
                    arch, info = gen(d, kind, seed)
                    covered |= set(info["cases"])
                    with np.load(os.path.join(d, "weights.npz")) as z:
                        w = {k: z[k] for k in z.files}
                    for k, v in w.items():
                        assert v.dtype in (np.float32, np.float64), k
                    if arch["input"]["dtype"] == "u8":
                        with open(os.path.join(d, "images.idx"), "rb") as f:
                            assert f.read(4) == b"\x00\x00\x08\x03"
                        x = refeval.read_idx(os.path.join(d, "images.idx"))[:, None]
                    else:
                        x = np.load(os.path.join(d, "inputs.npy"))
                        assert x.dtype == np.float32 and x.ndim == 4
                    assert list(x.shape[1:]) == arch["input"]["shape"]
                    s = refeval.evaluate(arch, w, x)
                    want = np.loadtxt(os.path.join(d, "scores.csv"), delimiter=",", ndmin=2)
                    assert np.array_equal(s, want.reshape(s.shape))
                    d2 = d + "b"
                    gen(d2, kind, seed)
                    for fn in ("arch.json", "weights.npz", "scores.csv"):
                        with open(os.path.join(d, fn), "rb") as f1, \
                                open(os.path.join(d2, fn), "rb") as f2:
                            assert f1.read() == f2.read(), fn
                    ok += 1
                except Exception as e:  # noqa: BLE001
                    bad += 1
                    print("FAIL %s seed %d: %r" % (kind, seed, e))
    missing = HARD - covered
    if missing:
        bad += 1
        print("FAIL hard cases not covered:", sorted(missing))
    else:
        ok += 1
    print("%d passed, %d failed" % (ok, bad))
    return 1 if bad else 0


if __name__ == "__main__":
    sys.exit(main())
