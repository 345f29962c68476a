#!/usr/bin/python3
"""Train Fashion-MNIST networks in PyTorch and export them in the splitnic
model-interchange format (arch.json + weights.npz, docs/model-format.md).

  train_fmnist.py --model bmlp|bcnn|fmlp|fcnn --epochs N --out DIR [--seed S]
  train_fmnist.py --onnx-from DIR [--onnx FILE]

The trained network is also exported as ONNX (DIR/model.onnx, torch.onnx.export, opset 13):
uint8 input, Cast to float, binary weights as int8 +-1 initializers Cast to float (a quarter
of float32's size), sign as Where(GreaterOrEqual(x, 0), 1, -1). --onnx-from rebuilds that
ONNX file from an existing DIR/arch.json + weights.npz (how the bundled models got theirs).

bmlp/bcnn are binarized (BinaryNet style): sign activations and sign weights with a
hardtanh straight-through estimator, latent real weights clipped to [-1, 1] after each
optimizer step. fmlp/fcnn are the float networks of the same shapes (ReLU instead of sign).
Inputs are the raw u8 pixel values 0..255 (no scaling), as the spec prescribes for u8 inputs.

After training the exported files are evaluated with models/scripts/refeval.py (float64, NumPy) on the
10,000 test images; DIR/accuracy.json records both accuracies.
"""
import argparse
import json
import os
import sys
import time

import numpy as np
import torch
import torch.nn as nn
import torch.nn.functional as F

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import refeval  # noqa: E402

DATA = "/usr/share/datasets/fashion-mnist"
BN_EPS = 1e-4


class SignSTE(torch.autograd.Function):
    """Forward: +1 where x >= 0 else -1. Backward: hardtanh STE (grad where |x| <= 1)."""

    @staticmethod
    def forward(ctx, x):
        ctx.save_for_backward(x)
        return torch.where(x >= 0, torch.ones_like(x), -torch.ones_like(x))

    @staticmethod
    def backward(ctx, g):
        (x,) = ctx.saved_tensors
        return g * (x.abs() <= 1).to(g.dtype)


sign_ste = SignSTE.apply


class Sign(nn.Module):
    def forward(self, x):
        return sign_ste(x)


class BinLinear(nn.Linear):
    binary = True

    def forward(self, x):
        return F.linear(x, sign_ste(self.weight), self.bias)


class BinConv2d(nn.Conv2d):
    binary = True

    def forward(self, x):
        return F.conv2d(x, sign_ste(self.weight), self.bias, self.stride, self.padding)


def build(model):
    """Returns (torch nn.Sequential, list of interchange layer dicts) in lock-step."""
    binary = model in ("bmlp", "bcnn")
    act = (lambda: (Sign(), {"type": "sign"})) if binary else (lambda: (nn.ReLU(), {"type": "relu"}))
    Lin = BinLinear if binary else nn.Linear
    Conv = BinConv2d if binary else nn.Conv2d
    pairs = []

    def dense(i, o):
        pairs.append((Lin(i, o, bias=True),
                      {"type": "dense", "out": o, "bias": True, "binary_weights": binary}))

    def bn(c, d2):
        m = nn.BatchNorm2d(c, eps=BN_EPS) if d2 else nn.BatchNorm1d(c, eps=BN_EPS)
        pairs.append((m, {"type": "batchnorm", "eps": BN_EPS}))

    if model in ("bmlp", "fmlp"):
        pairs.append((nn.Flatten(), {"type": "flatten"}))
        dense(784, 1024); bn(1024, False); pairs.append(act())
        dense(1024, 1024); bn(1024, False); pairs.append(act())
        dense(1024, 10); bn(10, False)
    elif model in ("bcnn", "fcnn"):
        # first conv always float weights
        pairs.append((nn.Conv2d(1, 32, 3, padding=1, bias=True),
                      {"type": "conv", "out": 32, "kernel": 3, "stride": 1, "pad": 1,
                       "bias": True, "binary_weights": False}))
        bn(32, True); pairs.append(act())
        pairs.append((Conv(32, 64, 3, padding=1, bias=True),
                      {"type": "conv", "out": 64, "kernel": 3, "stride": 1, "pad": 1,
                       "bias": True, "binary_weights": binary}))
        pairs.append((nn.MaxPool2d(2), {"type": "maxpool", "kernel": 2, "stride": 2}))
        bn(64, True); pairs.append(act())
        pairs.append((Conv(64, 64, 3, padding=1, bias=True),
                      {"type": "conv", "out": 64, "kernel": 3, "stride": 1, "pad": 1,
                       "bias": True, "binary_weights": binary}))
        pairs.append((nn.MaxPool2d(2), {"type": "maxpool", "kernel": 2, "stride": 2}))
        bn(64, True); pairs.append(act())
        pairs.append((nn.Flatten(), {"type": "flatten"}))
        dense(64 * 7 * 7, 256); bn(256, False); pairs.append(act())
        dense(256, 10); bn(10, False)
    else:
        raise ValueError(model)
    net = nn.Sequential(*[p[0] for p in pairs])
    return net, [p[1] for p in pairs]


def export(net, layers, name, out):
    os.makedirs(out, exist_ok=True)
    arch = {"name": name, "input": {"shape": [1, 28, 28], "dtype": "u8"}, "layers": layers}
    w = {}
    for i, (m, L) in enumerate(zip(net, layers)):
        t = L["type"]
        if t in ("dense", "conv"):
            W = m.weight.detach().cpu().numpy().astype(np.float32)
            if L["binary_weights"]:
                W = np.where(W >= 0, np.float32(1.0), np.float32(-1.0)).astype(np.float32)
            w["%d.weight" % i] = np.ascontiguousarray(W)
            if L.get("bias"):
                w["%d.bias" % i] = np.ascontiguousarray(m.bias.detach().numpy().astype(np.float32))
        elif t == "batchnorm":
            assert m.eps == L["eps"]
            w["%d.gamma" % i] = m.weight.detach().numpy().astype(np.float32)
            w["%d.beta" % i] = m.bias.detach().numpy().astype(np.float32)
            w["%d.mean" % i] = m.running_mean.detach().numpy().astype(np.float32)
            w["%d.var" % i] = m.running_var.detach().numpy().astype(np.float32)
    with open(os.path.join(out, "arch.json"), "w") as f:
        json.dump(arch, f, indent=2)
        f.write("\n")
    np.savez_compressed(os.path.join(out, "weights.npz"), **w)
    return arch, w


class OnnxNet(nn.Module):
    """The interchange model (arch.json + weights) as a torch module written for export."""

    def __init__(self, arch, w):
        super().__init__()
        self.layers = arch["layers"]
        for i, L in enumerate(self.layers):
            for k in ("weight", "bias", "gamma", "beta", "mean", "var"):
                key = "%d.%s" % (i, k)
                if key not in w:
                    continue
                v = np.asarray(w[key], dtype=np.float32)
                if k == "weight" and L.get("binary_weights"):
                    v = np.where(v >= 0, 1, -1).astype(np.int8)
                self.register_buffer("p%d_%s" % (i, k), torch.from_numpy(np.ascontiguousarray(v)))

    def p(self, i, k):
        return getattr(self, "p%d_%s" % (i, k), None)

    def forward(self, x):
        x = x.float()
        for i, L in enumerate(self.layers):
            t = L["type"]
            if t in ("dense", "conv"):
                W = self.p(i, "weight").float()
                if t == "dense":
                    x = F.linear(x, W, self.p(i, "bias"))
                else:
                    x = F.conv2d(x, W, self.p(i, "bias"), L.get("stride", 1), L.get("pad", 0))
            elif t == "batchnorm":
                x = F.batch_norm(x, self.p(i, "mean"), self.p(i, "var"), self.p(i, "gamma"),
                                 self.p(i, "beta"), False, 0.0, L.get("eps", 1e-5))
            elif t == "sign":
                x = torch.where(x >= 0, torch.tensor(1.0), torch.tensor(-1.0))
            elif t == "relu":
                x = F.relu(x)
            elif t == "maxpool":
                x = F.max_pool2d(x, L["kernel"], L.get("stride", L["kernel"]))
            elif t == "flatten":
                x = torch.flatten(x, 1)
            else:
                raise ValueError("no ONNX export for layer type " + t)
        return x


def export_onnx(arch, w, path):
    net = OnnxNet(arch, w).eval()
    c, h, wd = arch["input"]["shape"]
    dtype = torch.uint8 if arch["input"]["dtype"] == "u8" else torch.float32
    x = torch.zeros((1, c, h, wd), dtype=dtype)
    torch.onnx.export(net, (x,), path, opset_version=13, do_constant_folding=False,
                      input_names=["image"], output_names=["scores"],
                      dynamic_axes={"image": {0: "batch"}, "scores": {0: "batch"}})
    import onnx  # Debian python3-onnx: name the graph after the model
    m = onnx.load(path)
    m.graph.name = arch["name"]
    onnx.save(m, path)


def onnx_from(d, path):
    arch = json.load(open(os.path.join(d, "arch.json")))
    with np.load(os.path.join(d, "weights.npz")) as z:
        w = {k: z[k] for k in z.files}
    export_onnx(arch, w, path or os.path.join(d, "model.onnx"))
    return 0


def load_split(split):
    x = refeval.read_idx(os.path.join(DATA, "%s-images-idx3-ubyte.gz" % split))
    y = refeval.read_idx(os.path.join(DATA, "%s-labels-idx1-ubyte.gz" % split))
    return x[:, None].astype(np.uint8), y.astype(np.int64)


def torch_eval(net, x, bs=1000):
    net.eval()
    preds = []
    with torch.no_grad():
        for s in range(0, len(x), bs):
            xb = torch.from_numpy(x[s:s + bs].astype(np.float32))
            preds.append(net(xb).argmax(1).numpy())
    return np.concatenate(preds)


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--onnx-from", metavar="DIR")
    ap.add_argument("--onnx", metavar="FILE")
    ap.add_argument("--model", choices=["bmlp", "bcnn", "fmlp", "fcnn"])
    ap.add_argument("--epochs", type=int)
    ap.add_argument("--out")
    ap.add_argument("--seed", type=int, default=1)
    ap.add_argument("--batch", type=int, default=128)
    ap.add_argument("--lr", type=float, default=None)
    ap.add_argument("--threads", type=int, default=2)
    a = ap.parse_args()
    if a.onnx_from:
        return onnx_from(a.onnx_from, a.onnx)
    if not (a.model and a.epochs and a.out):
        ap.error("--model, --epochs and --out are required to train")

    torch.set_num_threads(a.threads)
    torch.manual_seed(a.seed)
    np.random.seed(a.seed)
    torch.use_deterministic_algorithms(True)

    binary = a.model in ("bmlp", "bcnn")
    lr = a.lr if a.lr is not None else (3e-3 if binary else 1e-3)
    name = "fmnist-" + a.model
    xtr, ytr = load_split("train")
    xte, yte = load_split("t10k")
    xtr_t = torch.from_numpy(xtr.astype(np.float32))  # raw 0..255
    ytr_t = torch.from_numpy(ytr)

    net, layers = build(a.model)
    opt = torch.optim.Adam(net.parameters(), lr=lr)
    steps_per_epoch = (len(xtr) + a.batch - 1) // a.batch
    sched = torch.optim.lr_scheduler.OneCycleLR(
        opt, max_lr=lr, total_steps=a.epochs * steps_per_epoch, pct_start=0.15)
    latent = [m.weight for m in net if getattr(m, "binary", False)]
    gen = torch.Generator().manual_seed(a.seed)

    t0 = time.time()
    for ep in range(a.epochs):
        net.train()
        perm = torch.randperm(len(xtr), generator=gen)
        tot, n = 0.0, 0
        for s in range(0, len(xtr), a.batch):
            idx = perm[s:s + a.batch]
            out = net(xtr_t[idx])
            loss = F.cross_entropy(out, ytr_t[idx])
            opt.zero_grad()
            loss.backward()
            opt.step()
            sched.step()
            with torch.no_grad():
                for p in latent:
                    p.clamp_(-1.0, 1.0)
            tot += loss.item() * len(idx)
            n += len(idx)
        acc = float(np.mean(torch_eval(net, xte) == yte))
        print("[%s] epoch %d/%d loss %.4f test %.4f  (%.0fs)"
              % (name, ep + 1, a.epochs, tot / n, acc, time.time() - t0), flush=True)
    train_s = time.time() - t0

    tpred = torch_eval(net, xte)
    tacc = float(np.mean(tpred == yte))
    arch, w = export(net, layers, name, a.out)
    export_onnx(arch, w, os.path.join(a.out, "model.onnx"))

    # independent check: float64 reference evaluation of the exported files
    arch2 = refeval.load_arch(os.path.join(a.out, "arch.json"))
    w2 = refeval.load_weights(os.path.join(a.out, "weights.npz"))
    scores = refeval.evaluate_batched(arch2, w2, xte, 500)
    rpred = refeval.predict(scores)
    racc = float(np.mean(rpred == yte))
    ndiff = int(np.sum(rpred != tpred))
    print("[%s] torch eval accuracy %.4f   refeval f64 accuracy %.4f   "
          "prediction differences %d/10000   train %.0fs"
          % (name, tacc, racc, ndiff, train_s))
    with open(os.path.join(a.out, "accuracy.json"), "w") as f:
        json.dump({"model": name, "test_accuracy_ref_f64": racc, "torch_eval_accuracy": tacc,
                   "prediction_differences": ndiff, "epochs": a.epochs,
                   "train_seconds": round(train_s, 1), "seed": a.seed, "batch": a.batch,
                   "optimizer": "Adam, OneCycle max_lr %g" % lr}, f, indent=2)
        f.write("\n")
    if abs(racc - tacc) > 0.001:
        print("WARNING: torch and reference accuracies differ by more than 10 images")
        return 1
    return 0


if __name__ == "__main__":
    sys.exit(main())
