#!/usr/bin/python3
"""Sanity checks of models/scripts/refeval.py on tiny hand-computed models.
Run: /usr/bin/python3 tests/py/test_refeval_selfcheck.py"""
import os
import subprocess
import sys
import tempfile

import numpy as np

from runner import run_tests

ROOT = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
sys.path.insert(0, os.path.join(ROOT, "models", "scripts"))
import refeval  # noqa: E402


def model(shape, dtype, layers):
    return {"name": "t", "input": {"shape": list(shape), "dtype": dtype}, "layers": layers}


def ev(arch, w, x):
    return refeval.evaluate(arch, w, np.asarray(x))


def test_dense_float():
    a = model([2, 1, 1], "f32", [{"type": "dense", "out": 2, "bias": True}])
    w = {"0.weight": np.array([[1, 2], [-3, 0.5]], np.float32),
         "0.bias": np.array([0.5, -1], np.float32)}
    y = ev(a, w, np.array([1, 2], np.float32).reshape(1, 2, 1, 1))
    assert np.array_equal(y, [[5.5, -3.0]]), y


def test_dense_binary_zero_weights():
    a = model([2, 1, 1], "f32", [{"type": "dense", "out": 2, "binary_weights": True}])
    w = {"0.weight": np.array([[0.3, -0.0], [-0.1, 0.0]], np.float32)}
    y = ev(a, w, np.array([3, -2], np.float32).reshape(1, 2, 1, 1))
    assert np.array_equal(y, [[1.0, -5.0]]), y


def test_sign_zero():
    a = model([4, 1, 1], "f32", [{"type": "sign"}])
    y = ev(a, {}, np.array([0.0, -0.0, -1e-30, 2.0], np.float32).reshape(1, 4, 1, 1))
    assert np.array_equal(y, [[1, 1, -1, 1]]), y


def test_batchnorm():
    a = model([2, 1, 1], "f32", [{"type": "batchnorm", "eps": 1.0}])
    w = {"0.gamma": np.array([4.0, 0.0]), "0.beta": np.array([-1.0, 0.25]),
         "0.mean": np.array([1.0, 7.0]), "0.var": np.array([3.0, 3.0])}
    y = ev(a, w, np.array([2.0, 100.0], np.float32).reshape(1, 2, 1, 1))
    assert np.array_equal(y, [[1.0, 0.25]]), y  # (2-1)/2*4-1 = 1; gamma 0 -> beta


def test_batchnorm_default_eps_per_channel():
    a = model([2, 1, 2], "f32", [{"type": "batchnorm"}])
    w = {"0.gamma": np.ones(2), "0.beta": np.zeros(2), "0.mean": np.array([0.0, 1.0]),
         "0.var": np.zeros(2)}
    y = ev(a, w, np.array([[[1.0, 2.0]], [[1.0, 3.0]]], np.float32)[None])
    s = np.sqrt(np.float64(1e-5))
    assert np.allclose(y, [[1 / s, 2 / s, 0.0, 2 / s]], rtol=0, atol=0), y


def test_conv_zero_padding():
    a = model([1, 3, 3], "u8", [{"type": "conv", "out": 1, "kernel": 3, "pad": 1,
                                 "binary_weights": True}])
    w = {"0.weight": np.full((1, 1, 3, 3), 0.5, np.float32)}
    y = ev(a, w, np.ones((1, 1, 3, 3), np.uint8))
    assert np.array_equal(y.reshape(3, 3), [[4, 6, 4], [6, 9, 6], [4, 6, 4]]), y


def test_conv_stride_bias_u8():
    a = model([1, 5, 5], "u8", [{"type": "conv", "out": 2, "kernel": 3, "stride": 2,
                                 "bias": True}])
    wt = np.zeros((2, 1, 3, 3), np.float32)
    wt[0, 0, 1, 1] = 1.0          # centre tap
    wt[1, 0, 0, 0] = -2.0         # top-left tap
    w = {"0.weight": wt, "0.bias": np.array([0.0, 1.0], np.float32)}
    x = np.arange(25, dtype=np.uint8).reshape(1, 1, 5, 5) * 10
    y = ev(a, w, x).reshape(2, 2, 2)
    assert np.array_equal(y[0], [[60, 80], [160, 180]]), y
    assert np.array_equal(y[1], [[1, -39], [-199, -239]]), y


def test_maxpool_floor_and_overlap():
    x = np.arange(25, dtype=np.float32).reshape(1, 1, 5, 5)
    y = ev(model([1, 5, 5], "f32", [{"type": "maxpool", "kernel": 2}]), {}, x)
    assert np.array_equal(y.reshape(2, 2), [[6, 8], [16, 18]]), y
    y = ev(model([1, 5, 5], "f32", [{"type": "maxpool", "kernel": 3, "stride": 2}]), {}, x)
    assert np.array_equal(y.reshape(2, 2), [[12, 14], [22, 24]]), y


def test_lrn_edges():
    a = model([3, 1, 1], "f32", [{"type": "lrn", "size": 3, "alpha": 3.0, "beta": 1.0,
                                  "k": 1.0}])
    y = ev(a, {}, np.array([1, 2, 3], np.float32).reshape(1, 3, 1, 1))
    assert np.allclose(y, [[1 / 6, 2 / 15, 3 / 14]], rtol=1e-15), y


def test_lrn_defaults():
    a = model([1, 1, 1], "f32", [{"type": "lrn"}])
    y = ev(a, {}, np.array([2.0], np.float32).reshape(1, 1, 1, 1))
    assert np.allclose(y, [[2.0 / (1.0 + 1e-4 / 5 * 4.0) ** 0.75]], rtol=1e-15), y


def test_flatten_order_relu():
    a = model([2, 2, 2], "f32", [{"type": "relu"}, {"type": "flatten"},
                                 {"type": "dense", "out": 1}])
    wt = np.zeros((1, 8), np.float32)
    wt[0, 5] = 1.0                 # channel 1, row 0, col 1
    x = (np.arange(8, dtype=np.float32) - 3).reshape(1, 2, 2, 2)
    y = ev(a, {"2.weight": wt}, x)
    assert np.array_equal(y, [[2.0]]), y
    wt[0] = 0
    wt[0, 1] = 1.0                 # value -2 -> relu 0
    assert np.array_equal(ev(a, {"2.weight": wt}, x), [[0.0]])


def test_argmax_ties_lowest():
    assert list(refeval.predict(np.array([[1.0, 3.0, 3.0], [2.0, 2.0, 0.0]]))) == [1, 0]


def test_idx_roundtrip_and_cli():
    with tempfile.TemporaryDirectory() as d:
        imgs = np.random.default_rng(0).integers(0, 256, (3, 2, 2)).astype(np.uint8)
        refeval.write_idx_images(os.path.join(d, "im.idx"), imgs)
        with open(os.path.join(d, "im.idx"), "rb") as f:
            assert f.read(4) == b"\x00\x00\x08\x03"
        assert np.array_equal(refeval.read_idx(os.path.join(d, "im.idx")), imgs)
        import json
        a = model([1, 2, 2], "u8", [{"type": "flatten"},
                                    {"type": "dense", "out": 2, "bias": True}])
        wt = np.array([[0.1, 0.2, 0.3, 0.4], [-1, 1, -1, 1]], np.float32)
        bias = np.array([1 / 3, 0], np.float64)
        with open(os.path.join(d, "a.json"), "w") as f:
            json.dump(a, f)
        np.savez(os.path.join(d, "w.npz"), **{"1.weight": wt, "1.bias": bias})
        subprocess.check_call([sys.executable, os.path.join(ROOT, "models", "scripts", "refeval.py"),
                               os.path.join(d, "a.json"), os.path.join(d, "w.npz"),
                               "--images", os.path.join(d, "im.idx"),
                               "--scores", os.path.join(d, "s.csv")],
                              stdout=subprocess.DEVNULL)
        got = np.loadtxt(os.path.join(d, "s.csv"), delimiter=",")
        want = imgs.reshape(3, 4).astype(np.float64) @ wt.astype(np.float64).T + bias
        assert np.array_equal(got, want), (got, want)   # %.17g round-trips exactly


def main():
    return run_tests(globals())


if __name__ == "__main__":
    sys.exit(main())
