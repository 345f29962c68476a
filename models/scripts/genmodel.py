#!/usr/bin/python3
"""Random model-interchange models (arch.json + weights.npz) for tests.

  genmodel.py --out DIR --seed S --kind mlp|cnn|hard [--widths 63,65,100] [--count N]

Writes DIR/arch.json, DIR/weights.npz and the inputs: DIR/images.idx (uncompressed IDX,
magic 0x00000803, N images) for u8 models, DIR/inputs.npy (N, C, H, W) float32 for f32
models. Also DIR/scores.csv with the float64 reference scores (models/scripts/refeval.py) and
DIR/info.json (variant, input file, which hard cases the model exercises).

Deterministic from --seed. Batch-norm parameters are calibrated on the generated inputs so
that signs are balanced; on integer-valued paths (u8 input or sign activations into binary
or integer weights) the batch-norm mean is set to a value that actually occurs, so
(x - mean) == 0 exactly for some inputs, and some channels get a beta that puts the
threshold exactly on (or within rounding of) an attainable integer. On float-valued paths
the mean is put between observed values (away from them), so that a float32 executor is
not asked to resolve an ill-conditioned sign.

kind=hard has 4 variants (seed % 4):
  0  u8 CNN: binary conv on u8 with zero padding, maxpool before sign, stride-2 binary conv,
     overlapping maxpool (k3 s2) after sign, dense widths 63/100/130/13, float dense + relu,
     binary dense on float input, bn with negative/zero gamma, var=0 channel.
  1  u8 MLP: binary dense directly on u8 (bit planes), widths 66/64/63/31/100 and a single
     output (width 1), sign right after a bias-free binary dense (exact zeros), bn
     thresholds at attainable integers.
  2  f32 CNN: float conv + relu + lrn, binary conv on float input with zero padding, bn,
     overlapping maxpool after sign, stride-2 binary conv straight into sign, dense 65/31.
  3  u8 MLP/CNN mix: float dense with small integer weights on u8 (exact zero sums, some
     all-zero rows) into sign, maxpool before and after sign, lrn on +-1 maps, relu.
"""
import argparse
import json
import os
import sys

import numpy as np

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import refeval  # noqa: E402


class Builder:
    def __init__(self, rng, x, dtype):
        self.rng = rng
        self.x0 = x
        self.dtype = dtype
        self.cur = x.astype(np.float64)
        self.integer = dtype == "u8"  # current activations are exact integers
        self.layers = []
        self.w = {}
        self.cases = set()
        self.zero_signs = 0  # exact zeros seen at sign inputs (over all generated inputs)

    # -- helpers -----------------------------------------------------------------------
    def _store(self, key, arr, prefer64=False):
        rng = self.rng
        if prefer64 or rng.random() < 0.3:
            self.w[key] = np.ascontiguousarray(arr, dtype=np.float64)
            self.cases.add("float64 arrays")
        else:
            a32 = np.ascontiguousarray(arr, dtype=np.float32)
            self.w[key] = a32
        return self.w[key]

    def _add(self, L):
        i = len(self.layers)
        self.layers.append(L)
        self.cur = refeval.apply_layer(i, L, self.w, self.cur)
        return i

    def _in_features(self):
        return int(np.prod(self.cur.shape[1:]))

    def _chan(self):
        return self.cur.shape[1]

    # -- layers --------------------------------------------------------------------------
    def dense(self, out, binary=True, bias=None, int_weights=False, zero_rows=0):
        rng = self.rng
        i = len(self.layers)
        n_in = self._in_features()
        if bias is None:
            bias = bool(rng.random() < 0.5)
        if binary:
            W = rng.standard_normal((out, n_in))
            # some exact +0.0 / -0.0 latent weights: both binarize to +1
            z = rng.random((out, n_in)) < 0.02
            W[z] = 0.0
            W[z & (rng.random((out, n_in)) < 0.5)] = -0.0
            if self.dtype == "u8" and len(self.layers) <= 1:
                self.cases.add("binary layer on u8 input")
            elif not self.integer:
                self.cases.add("binary layer on float input")
        elif int_weights:
            W = rng.integers(-2, 3, size=(out, n_in)).astype(np.float64)
            # sparse rows with a +1/-1 pair: zero sum when the two inputs are equal
            for r in range(out // 2):
                W[r] = 0.0
                a, b = rng.choice(n_in, 2, replace=False)
                W[r, a], W[r, b] = 1.0, -1.0
            for r in range(zero_rows):
                W[out - 1 - r] = 0.0
            self.cases.add("float dense with integer weights (exact zero sums)")
        else:
            W = rng.standard_normal((out, n_in)) / np.sqrt(n_in)
        self._store("%d.weight" % i, W)
        L = {"type": "dense", "out": out}
        if bias:
            L["bias"] = True
            if self.integer and (binary or int_weights):
                b = rng.integers(-3, 4, size=out).astype(np.float64)
            else:
                b = rng.standard_normal(out)
            self._store("%d.bias" % i, b)
        if binary:
            L["binary_weights"] = True
        elif rng.random() < 0.5:
            L["binary_weights"] = False
        was_int = self.integer
        self._add(L)
        self.integer = was_int and (binary or int_weights) and (
            not bias or np.all(np.floor(self.w["%d.bias" % i]) == self.w["%d.bias" % i]))
        if out % 64:
            self.cases.add("width not multiple of 64")
        self.cases.add("dense with bias" if bias else "dense without bias")

    def conv(self, out, k=3, stride=1, pad=1, binary=True, bias=None):
        rng = self.rng
        i = len(self.layers)
        c = self._chan()
        if bias is None:
            bias = bool(rng.random() < 0.5)
        W = rng.standard_normal((out, c, k, k))
        if binary:
            W[rng.random(W.shape) < 0.02] = -0.0
            if self.dtype == "u8" and len(self.layers) == 0:
                self.cases.add("binary layer on u8 input")
            elif not self.integer:
                self.cases.add("binary layer on float input")
            if pad:
                self.cases.add("binary conv with zero padding")
        else:
            W = W / np.sqrt(c * k * k)
        self._store("%d.weight" % i, W)
        L = {"type": "conv", "out": out, "kernel": k}
        if stride != 1 or rng.random() < 0.5:
            L["stride"] = stride
        if pad or rng.random() < 0.5:
            L["pad"] = pad
        if stride > 1:
            self.cases.add("stride > 1")
        if bias:
            L["bias"] = True
            if self.integer and binary:
                b = rng.integers(-3, 4, size=out).astype(np.float64)
            else:
                b = rng.standard_normal(out) * 0.1
            self._store("%d.bias" % i, b)
        if binary:
            L["binary_weights"] = True
        was_int = self.integer
        self._add(L)
        self.integer = was_int and binary and (
            not bias or np.all(np.floor(self.w["%d.bias" % i]) == self.w["%d.bias" % i]))
        if out % 64:
            self.cases.add("width not multiple of 64")

    def batchnorm(self, last=False, q=0.5):
        """Calibrated batch-norm; hard parameters (negative / zero gamma, var = 0,
        mean at an attainable value, threshold at an attainable integer). q: the fraction
        of values that the following sign maps to -1 (0.5 balanced; higher before a
        max-pool of signs, so that the pooled map is not all +1)."""
        rng = self.rng
        i = len(self.layers)
        x = self.cur
        c = x.shape[1]
        vals = np.moveaxis(x, 1, 0).reshape(c, -1)
        eps = float(rng.choice([1e-5, 1e-4, 1e-3, 1e-2]))
        gamma = rng.uniform(0.5, 2.0, c) * np.where(rng.random(c) < 0.35, -1.0, 1.0)
        beta = np.zeros(c)
        mean = np.zeros(c)
        var = np.zeros(c)
        exact = self.integer
        hard_beta = np.zeros(c, dtype=bool)
        for ch in range(c):
            v = np.unique(vals[ch])
            med = np.quantile(vals[ch], q if gamma[ch] >= 0 else 1.0 - q)
            var[ch] = max(float(np.var(vals[ch])), 0.25)
            if exact:
                # mean = an observed value near the median: (x - mean) == 0 exactly sometimes
                mean[ch] = v[np.argmin(np.abs(v - med))]
                if not last and rng.random() < 0.3 and len(v) > 1:
                    # beta puts the threshold on another attainable integer t
                    j = np.searchsorted(v, mean[ch])
                    t = v[min(j + 1, len(v) - 1)] if rng.random() < 0.5 else v[max(j - 1, 0)]
                    beta[ch] = -(t - mean[ch]) / np.sqrt(var[ch] + eps) * gamma[ch]
                    hard_beta[ch] = True
            else:
                # keep a margin: mean halfway between two neighbouring observed values
                j = int(np.clip(np.searchsorted(v, med), 1, max(len(v) - 1, 1)))
                if len(v) >= 2:
                    # the widest gap near the target, so no value sits near the threshold
                    r = max(1, len(v) // 20)
                    lo, hi = max(1, j - r), min(len(v) - 1, j + r)
                    gaps = v[lo:hi + 1] - v[lo - 1:hi]
                    j = lo + int(np.argmax(gaps))
                    mean[ch] = 0.5 * (v[j - 1] + v[j])
                else:
                    mean[ch] = v[0] - 1.0
                if last:
                    beta[ch] = rng.standard_normal() * 0.1
        if last:
            beta = beta + rng.standard_normal(c) * 0.1
        else:
            # at least one gamma == 0 (output = beta) and one negative gamma
            if c >= 2:
                z = rng.integers(0, c)
                gamma[z] = 0.0
                beta[z] = float(rng.choice([0.0, -0.0, 0.5, -0.5]))
                self.cases.add("batchnorm gamma == 0")
            if not np.any(gamma < 0):
                gamma[rng.integers(0, c)] *= -1
            if exact and c >= 3 and rng.random() < 0.5:
                # one channel with var = 0 (var + eps > 0 is still legal)
                ch = int(rng.integers(0, c))
                if gamma[ch] != 0:
                    var[ch] = 0.0
                    self.cases.add("batchnorm var == 0")
        if np.any(gamma < 0):
            self.cases.add("batchnorm gamma < 0")
        if exact:
            self.cases.add("exact zeros before sign (x - mean == 0)")
        self._store("%d.gamma" % i, gamma)
        # a hard beta / an exact mean must survive storage exactly: keep float64
        self._store("%d.beta" % i, beta, prefer64=bool(np.any(hard_beta)))
        self._store("%d.mean" % i, mean, prefer64=exact)
        self._store("%d.var" % i, var)
        L = {"type": "batchnorm"}
        if eps != 1e-5 or rng.random() < 0.5:
            L["eps"] = eps
        self._add(L)
        self.integer = False

    def sign(self):
        self.zero_signs += int(np.sum(self.cur == 0))
        if self.integer:
            self.cases.add("exact zeros before sign (integer sum)")
        self._add({"type": "sign"})
        self.integer = True

    def bn_sign(self, q=0.5):
        """batchnorm, then sign: a binary network's activation"""
        self.batchnorm(q=q)
        self.sign()

    def relu(self):
        self._add({"type": "relu"})
        self.cases.add("relu")

    def maxpool(self, k, s=None):
        L = {"type": "maxpool", "kernel": k}
        if s is not None and (s != k or self.rng.random() < 0.5):
            L["stride"] = s
        if s is not None and s < k:
            self.cases.add("overlapping maxpool")
        last = self.layers[-1]["type"] if self.layers else None
        self.cases.add("maxpool after sign" if last == "sign" else "maxpool before sign")
        self._add(L)

    def flatten(self):
        self._add({"type": "flatten"})

    def lrn(self, size=None):
        rng = self.rng
        L = {"type": "lrn"}
        if size is not None or rng.random() < 0.5:
            L["size"] = int(size if size is not None else rng.choice([3, 5, 7]))
        if rng.random() < 0.5:
            L["alpha"] = float(rng.choice([1e-4, 1e-3, 0.01, 0.5]))
            L["beta"] = float(rng.choice([0.75, 0.5, 1.0]))
            L["k"] = float(rng.choice([1.0, 2.0]))
        self._add(L)
        self.integer = False
        self.cases.add("lrn")


def make_inputs(rng, dtype, shape, n):
    c, h, w = shape
    if dtype == "u8":
        x = rng.integers(0, 256, size=(n, c, h, w))
        # half the images from a small palette: equal pixels (exact zero sums) are common
        pal = np.array([0, 1, 2, 128, 255])
        k = n // 2
        x[:k] = pal[rng.integers(0, len(pal), size=(k, c, h, w))]
        x[0] = 0  # an all-zero image
        if n > 1:
            x[1] = 255
        return x.astype(np.uint8)
    x = rng.standard_normal((n, c, h, w)).astype(np.float32)
    # some exact zeros and small integers
    m = rng.random(x.shape)
    x[m < 0.1] = 0.0
    x[(m >= 0.1) & (m < 0.2)] = np.round(x[(m >= 0.1) & (m < 0.2)] * 2)
    x[0] = 0.0
    return x


def gen_mlp(rng, widths, n):
    dtype = "u8" if rng.random() < 0.6 else "f32"
    shape = [1, int(rng.integers(5, 29)), int(rng.integers(5, 29))] if dtype == "u8" \
        else [int(rng.integers(1, 200)), 1, 1]
    b = Builder(rng, make_inputs(rng, dtype, shape, n), dtype)
    b.flatten()
    for wd in widths:
        b.dense(wd, binary=True)
        b.bn_sign()
    b.dense(1 if rng.random() < 0.15 else int(rng.integers(2, 12)), binary=True)
    b.batchnorm(last=True)
    return b, dtype, shape


def gen_cnn(rng, widths, n):
    dtype = "u8" if rng.random() < 0.5 else "f32"
    hw = int(rng.integers(8, 17))
    shape = [1 if dtype == "u8" else int(rng.integers(1, 4)), hw, hw]
    b = Builder(rng, make_inputs(rng, dtype, shape, n), dtype)
    c1, c2 = int(widths[0]), int(widths[1] if len(widths) > 1 else widths[0])
    b.conv(c1, binary=bool(rng.random() < 0.5), pad=1)
    b.bn_sign()
    b.conv(c2, binary=True, pad=1)
    b.maxpool(2)
    b.bn_sign()
    b.flatten()
    b.dense(int(widths[2]) if len(widths) > 2 else 65, binary=True)
    b.bn_sign()
    b.dense(10, binary=True)
    b.batchnorm(last=True)
    return b, dtype, shape


def gen_hard(rng, variant, n):
    if variant == 0:
        dtype, hw = "u8", int(rng.integers(12, 17))
        shape = [1, hw, hw]
        b = Builder(rng, make_inputs(rng, dtype, shape, n), dtype)
        b.conv(int(rng.choice([5, 7, 63])), k=3, stride=1, pad=1, binary=True, bias=True)
        b.maxpool(2)                      # max-pool before sign
        b.bn_sign()
        b.conv(65, k=3, stride=2, pad=1, binary=True, bias=False)
        b.bn_sign(q=0.9)
        b.maxpool(3, 2)                   # overlapping, after sign
        b.flatten()
        b.dense(63, binary=True, bias=True)
        b.bn_sign()
        b.dense(100, binary=False, bias=True)
        b.relu()
        b.dense(130, binary=True, bias=False)  # binary on float input
        b.bn_sign()
        b.dense(13, binary=True, bias=True)
        b.bn_sign()
        b.dense(10, binary=True, bias=True)
        b.batchnorm(last=True)
    elif variant == 1:
        dtype = "u8"
        shape = [1, int(rng.integers(7, 29)), int(rng.integers(7, 29))]
        b = Builder(rng, make_inputs(rng, dtype, shape, n), dtype)
        b.flatten()
        b.dense(66, binary=True, bias=False)   # binary on u8 input
        b.bn_sign()
        b.dense(64, binary=True, bias=False)   # even fan-in (66), no bias: sum 0 possible
        b.sign()                               # exact zeros straight into sign
        b.dense(63, binary=True, bias=True)
        b.bn_sign()
        b.dense(31, binary=True, bias=False)
        b.bn_sign()
        b.dense(100, binary=True, bias=True)
        b.bn_sign()
        # a single output: the argmax is always 0, the score itself is what is checked
        b.dense(1, binary=True, bias=True)
        b.batchnorm(last=True)
    elif variant == 2:
        dtype, hw = "f32", int(rng.integers(9, 15))
        shape = [int(rng.integers(1, 4)), hw, hw]
        b = Builder(rng, make_inputs(rng, dtype, shape, n), dtype)
        b.conv(int(rng.choice([6, 7, 9])), k=3, stride=1, pad=1, binary=False, bias=True)
        b.relu()
        b.lrn(size=5)
        b.conv(63, k=3, stride=1, pad=1, binary=True, bias=True)  # binary on float input
        b.bn_sign(q=0.9)
        b.maxpool(3, 2)                   # overlapping, after sign
        b.conv(65, k=3, stride=2, pad=1, binary=True, bias=False)
        b.sign()                          # exact zeros (integer sums) straight into sign
        b.flatten()
        b.dense(65, binary=True, bias=True)
        b.bn_sign()
        b.dense(31, binary=True, bias=False)
        b.bn_sign()
        b.dense(10, binary=False, bias=True)
        b.batchnorm(last=True)
    else:
        dtype, hw = "u8", int(rng.integers(10, 15))
        shape = [1, hw, hw]
        b = Builder(rng, make_inputs(rng, dtype, shape, n), dtype)
        b.conv(5, k=3, stride=2, pad=0, binary=True, bias=False)  # binary on u8, stride 2
        b.sign()
        b.maxpool(2, 1)                   # overlapping after sign
        b.lrn(size=3)                     # lrn on +-1 maps
        b.conv(33, k=2, stride=1, pad=1, binary=True, bias=True)  # binary on float input
        b.maxpool(3, 2)                   # before sign, overlapping
        b.bn_sign()
        b.flatten()
        b.dense(100, binary=False, int_weights=True, bias=False, zero_rows=2)
        b.sign()                          # exact zero sums into sign
        b.dense(130, binary=True, bias=True)
        b.batchnorm()
        b.relu()
        b.dense(65, binary=True, bias=False)
        b.bn_sign()
        b.dense(10, binary=True, bias=True)
        b.batchnorm(last=True)
    return b, dtype, shape


def main(argv=None):
    ap = argparse.ArgumentParser()
    ap.add_argument("--out", required=True)
    ap.add_argument("--seed", type=int, required=True)
    ap.add_argument("--kind", required=True, choices=["mlp", "cnn", "hard"])
    ap.add_argument("--widths", help="comma-separated hidden widths")
    ap.add_argument("--count", type=int, default=100, help="number of inputs")
    a = ap.parse_args(argv)
    rng = np.random.default_rng(a.seed)
    widths = [int(v) for v in a.widths.split(",")] if a.widths else None
    variant = None
    if a.kind == "mlp":
        if widths is None:
            widths = [int(v) for v in rng.choice([33, 63, 64, 65, 100, 130, 200],
                                                 size=int(rng.integers(1, 4)))]
        b, dtype, shape = gen_mlp(rng, widths, a.count)
    elif a.kind == "cnn":
        if widths is None:
            widths = [int(v) for v in rng.choice([3, 5, 16, 63, 65], size=2)] + \
                     [int(rng.choice([33, 63, 65, 100, 130]))]
        b, dtype, shape = gen_cnn(rng, widths, a.count)
    else:
        variant = a.seed % 4
        b, dtype, shape = gen_hard(rng, variant, a.count)

    os.makedirs(a.out, exist_ok=True)
    arch = {"name": "gen-%s-%d" % (a.kind, a.seed), "input": {"shape": shape, "dtype": dtype},
            "layers": b.layers}
    with open(os.path.join(a.out, "arch.json"), "w") as f:
        json.dump(arch, f, indent=2)
        f.write("\n")
    np.savez_compressed(os.path.join(a.out, "weights.npz"), **b.w)
    if dtype == "u8":
        inp = "images.idx"
        refeval.write_idx_images(os.path.join(a.out, inp), b.x0[:, 0])
    else:
        inp = "inputs.npy"
        np.save(os.path.join(a.out, inp), b.x0.astype(np.float32))
    scores = refeval.evaluate(arch, b.w, b.x0)
    assert np.array_equal(scores, b.cur.reshape(len(b.x0), -1))
    with open(os.path.join(a.out, "scores.csv"), "w") as f:
        for row in scores:
            f.write(",".join("%.17g" % v for v in row) + "\n")
    info = {"kind": a.kind, "seed": a.seed, "variant": variant, "input": inp,
            "count": a.count, "exact_zeros_at_sign": b.zero_signs, "cases": sorted(b.cases)}
    with open(os.path.join(a.out, "info.json"), "w") as f:
        json.dump(info, f, indent=2)
        f.write("\n")
    print("%s: %d layers, input %s %s, %d inputs, cases: %s"
          % (a.out, len(b.layers), dtype, shape, a.count, ", ".join(sorted(b.cases))))
    return 0


if __name__ == "__main__":
    sys.exit(main())
