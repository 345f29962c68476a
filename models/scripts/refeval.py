#!/usr/bin/python3
"""Independent float64 reference evaluator of the splitnic model-interchange spec
(arch.json + weights.npz, see docs/model-format.md). NumPy only.

CLI:
  refeval.py ARCH.json WEIGHTS.npz (--images IDX[.gz] | --npy FILE.npy)
             [--labels IDX[.gz]] [--count N] [--scores OUT.csv] [--batch B]

Importable:
  evaluate(arch, weights, x) -> float64 scores (N, classes)
    arch:    dict (parsed arch.json) or path
    weights: mapping key -> array (np.load(npz) result, dict) or path
    x:       (N, C, H, W) array (uint8 for u8 models, float for f32 models)
"""
import argparse
import gzip
import json
import sys

import numpy as np

_IDX_DTYPES = {0x08: np.uint8, 0x09: np.int8, 0x0B: ">i2", 0x0C: ">i4",
               0x0D: ">f4", 0x0E: ">f8"}


def read_idx(path):
    """Read an IDX file (optionally gzip-compressed). Returns an ndarray."""
    opener = gzip.open if str(path).endswith(".gz") else open
    with opener(path, "rb") as f:
        data = f.read()
    if len(data) < 4 or data[0] != 0 or data[1] != 0:
        raise ValueError("%s: bad IDX magic" % path)
    code, ndim = data[2], data[3]
    if code not in _IDX_DTYPES:
        raise ValueError("%s: unknown IDX type 0x%02x" % (path, code))
    dims = [int.from_bytes(data[4 + 4 * i:8 + 4 * i], "big") for i in range(ndim)]
    dt = np.dtype(_IDX_DTYPES[code])
    off = 4 + 4 * ndim
    n = int(np.prod(dims)) if dims else 1
    arr = np.frombuffer(data, dtype=dt, count=n, offset=off)
    return arr.reshape(dims).astype(dt.newbyteorder("="))


def write_idx_images(path, images):
    """Write uint8 images (N,H,W) as an uncompressed IDX file (magic 0x00000803)."""
    images = np.ascontiguousarray(images, dtype=np.uint8)
    assert images.ndim == 3
    with open(path, "wb") as f:
        f.write(bytes([0, 0, 0x08, 3]))
        for d in images.shape:
            f.write(int(d).to_bytes(4, "big"))
        f.write(images.tobytes())


def load_arch(arch):
    if isinstance(arch, dict):
        return arch
    with open(arch) as f:
        return json.load(f)


def load_weights(weights):
    if isinstance(weights, (str, bytes)) or hasattr(weights, "__fspath__"):
        with np.load(weights, allow_pickle=False) as z:
            return {k: np.array(z[k]) for k in z.files}
    return weights


def _w(weights, i, name):
    key = "%d.%s" % (i, name)
    if key not in weights:
        raise KeyError("missing array %s" % key)
    a = np.asarray(weights[key])
    if a.dtype not in (np.float32, np.float64):
        raise ValueError("%s: dtype %s (need float32/float64)" % (key, a.dtype))
    return a.astype(np.float64)


def _binarize(w):
    # +1 where W >= 0 (both +0.0 and -0.0), -1 otherwise
    return np.where(w >= 0, 1.0, -1.0)


def _conv(x, w, b, stride, pad):
    """x (N,C,H,W) f64, w (O,C,k,k) f64 -> (N,O,Ho,Wo), zero padding."""
    n, c, h, wd = x.shape
    o, c2, k, k2 = w.shape
    assert c == c2 and k == k2, "conv weight shape mismatch"
    if pad:
        x = np.pad(x, ((0, 0), (0, 0), (pad, pad), (pad, pad)))
    hp, wp = x.shape[2], x.shape[3]
    ho = (hp - k) // stride + 1
    wo = (wp - k) // stride + 1
    if ho <= 0 or wo <= 0:
        raise ValueError("conv output would be empty")
    # im2col: (N, C, k, k, Ho, Wo)
    cols = np.empty((n, c, k, k, ho, wo), dtype=np.float64)
    for dy in range(k):
        for dx in range(k):
            cols[:, :, dy, dx] = x[:, :, dy:dy + stride * (ho - 1) + 1:stride,
                                   dx:dx + stride * (wo - 1) + 1:stride]
    cols = cols.reshape(n, c * k * k, ho * wo)
    y = np.matmul(w.reshape(o, c * k * k)[None], cols)  # (N, O, Ho*Wo)
    y = y.reshape(n, o, ho, wo)
    if b is not None:
        y = y + b[None, :, None, None]
    return y


def _maxpool(x, k, s):
    n, c, h, w = x.shape
    ho = (h - k) // s + 1
    wo = (w - k) // s + 1
    if ho <= 0 or wo <= 0:
        raise ValueError("maxpool output would be empty")
    y = None
    for dy in range(k):
        for dx in range(k):
            v = x[:, :, dy:dy + s * (ho - 1) + 1:s, dx:dx + s * (wo - 1) + 1:s]
            y = v.copy() if y is None else np.maximum(y, v)
    return y


def _lrn(x, size, alpha, beta, k):
    if size % 2 != 1:
        raise ValueError("lrn size must be odd")
    c = x.shape[1]
    half = size // 2
    sq = x * x
    padw = [(0, 0)] * x.ndim
    padw[1] = (half, half)
    sqp = np.pad(sq, padw)
    s = np.zeros_like(x)
    for j in range(size):
        s = s + sqp[:, j:j + c]
    return x / np.power(k + (alpha / size) * s, beta)


def apply_layer(i, L, weights, x):
    """Apply layer L (index i, for weight keys) to batch x (N,...) in float64."""
    t = L["type"]
    if t == "dense":
        w = _w(weights, i, "weight")
        if L.get("binary_weights", False):
            w = _binarize(w)
        xf = x.reshape(x.shape[0], -1)
        if w.shape != (L["out"], xf.shape[1]):
            raise ValueError("%d.weight shape %s, expected %s"
                             % (i, w.shape, (L["out"], xf.shape[1])))
        x = xf @ w.T
        if L.get("bias", False):
            x = x + _w(weights, i, "bias")[None]
    elif t == "conv":
        if x.ndim != 4:
            raise ValueError("layer %d: conv needs (C,H,W) input" % i)
        w = _w(weights, i, "weight")
        if L.get("binary_weights", False):
            w = _binarize(w)
        k = L["kernel"]
        if w.shape != (L["out"], x.shape[1], k, k):
            raise ValueError("%d.weight shape %s" % (i, w.shape))
        b = _w(weights, i, "bias") if L.get("bias", False) else None
        x = _conv(x, w, b, L.get("stride", 1), L.get("pad", 0))
    elif t == "batchnorm":
        eps = np.float64(L.get("eps", 1e-5))
        g = _w(weights, i, "gamma")
        be = _w(weights, i, "beta")
        m = _w(weights, i, "mean")
        v = _w(weights, i, "var")
        if np.any(v + eps <= 0):
            raise ValueError("layer %d: var + eps <= 0" % i)
        if x.ndim == 4:
            sh = (1, -1, 1, 1)
        else:
            sh = (1, -1)
        if g.shape[0] != x.shape[1]:
            raise ValueError("layer %d: batchnorm size %d != %d" % (i, g.shape[0], x.shape[1]))
        x = (x - m.reshape(sh)) / np.sqrt(v.reshape(sh) + eps) * g.reshape(sh) + be.reshape(sh)
    elif t == "sign":
        x = np.where(x >= 0, 1.0, -1.0)
    elif t == "relu":
        x = np.maximum(x, 0.0)
    elif t == "maxpool":
        if x.ndim != 4:
            raise ValueError("layer %d: maxpool needs (C,H,W) input" % i)
        k = L["kernel"]
        x = _maxpool(x, k, L.get("stride", k))
    elif t == "flatten":
        x = x.reshape(x.shape[0], -1)
    elif t == "lrn":
        if x.ndim != 4:
            raise ValueError("layer %d: lrn needs (C,H,W) input" % i)
        x = _lrn(x, L.get("size", 5), float(L.get("alpha", 1e-4)),
                 float(L.get("beta", 0.75)), float(L.get("k", 1.0)))
    else:
        raise ValueError("layer %d: unknown type %r" % (i, t))
    return x


def evaluate(arch, weights, x):
    """Evaluate the model on a batch x of shape (N, C, H, W). Returns float64 (N, classes)."""
    arch = load_arch(arch)
    weights = load_weights(weights)
    x = np.asarray(x)
    shape = list(arch["input"]["shape"])
    if x.ndim == 3 and len(shape) == 3 and x.shape == tuple(shape):
        x = x[None]
    if x.ndim == 3 and shape[0] == 1:  # (N,H,W) images
        x = x[:, None]
    if list(x.shape[1:]) != shape:
        raise ValueError("input shape %s != model input %s" % (x.shape[1:], shape))
    x = x.astype(np.float64)  # u8 values used as their integer value
    for i, L in enumerate(arch["layers"]):
        x = apply_layer(i, L, weights, x)
    return x.reshape(x.shape[0], -1).astype(np.float64)


def evaluate_batched(arch, weights, x, batch=500):
    arch = load_arch(arch)
    weights = load_weights(weights)
    out = [evaluate(arch, weights, x[s:s + batch]) for s in range(0, len(x), batch)]
    return np.concatenate(out, axis=0)


def predict(scores):
    return np.argmax(scores, axis=1)  # lowest index on ties


def load_inputs(arch, images=None, npy=None, count=None):
    arch = load_arch(arch)
    if images is not None:
        x = read_idx(images)
        if x.ndim == 3:
            x = x[:, None]
    else:
        x = np.load(npy, allow_pickle=False)
        if arch["input"].get("dtype") == "f32":
            x = x.astype(np.float32)  # an f32 model's inputs are float32 values
    if count is not None:
        x = x[:count]
    return x


def main(argv=None):
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("arch")
    ap.add_argument("weights")
    g = ap.add_mutually_exclusive_group(required=True)
    g.add_argument("--images")
    g.add_argument("--npy")
    ap.add_argument("--labels")
    ap.add_argument("--count", type=int)
    ap.add_argument("--scores")
    ap.add_argument("--batch", type=int, default=500)
    a = ap.parse_args(argv)
    arch = load_arch(a.arch)
    weights = load_weights(a.weights)
    x = load_inputs(arch, a.images, a.npy, a.count)
    scores = evaluate_batched(arch, weights, x, a.batch)
    if a.scores:
        with open(a.scores, "w") as f:
            for row in scores:
                f.write(",".join("%.17g" % v for v in row) + "\n")
    pred = predict(scores)
    if a.labels:
        lab = read_idx(a.labels).astype(np.int64)
        if a.count is not None:
            lab = lab[:a.count]
        lab = lab[:len(pred)]
        acc = float(np.mean(pred == lab))
        print("images %d  correct %d  accuracy %.4f" % (len(lab), int(np.sum(pred == lab)), acc))
    else:
        print("images %d evaluated" % len(pred))
    return 0


if __name__ == "__main__":
    sys.exit(main())
