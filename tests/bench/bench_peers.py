#!/usr/bin/python3
# SPDX-License-Identifier: MIT
"""bench_peers.py: splitnic against PyTorch and ONNX Runtime (CPU, float32), one thread.

For each binary model, the float network of the same shape (ReLU where the binary one has sign,
float weights) is run by splitnic (at its default precision, certified, and at float32, the
way frameworks run it; docs/float.md), by PyTorch float32 (Debian python3-torch) and
by ONNX Runtime CPU float32 (onnxruntime-node under node, installed into build/peers/ with
`npm install --ignore-scripts onnxruntime-node`; PyTorch alone if that fails, and said so).

  pairs: fmnist-bmlp / fmnist-fmlp and fmnist-bcnn / fmnist-fcnn (bundled, trained weights,
  Fashion-MNIST test images); split/arch bmlp / bmlp-float and bcnn-cifar / bcnn-cifar-float
  (random weights from `splitnic gen --seed 1`, random u8 inputs); alexnet-bin / alexnet-float
  with --alexnet (large: about 1 GB of model files, seconds per float64 image).

First the peers are checked to compute the same function as splitnic's float model: classes
on the same inputs, from the same weights (PyTorch module built from arch.json + weights.npz,
exported to ONNX). Then ROUNDS rounds, each running every engine once on the same inputs
(splitnic through build/bench/bench_models, one round per call; PyTorch in this process;
ONNX Runtime in one node process): batch-1 p50 / p99 and batch-64 images/s. Ratios are
medians of per-round ratios (5 rounds, 3 for the CIFAR pair, whose float64 model takes about
0.3 s an image). Figures are printed with their method and appended to
$BENCH_JSONL (default build/bench.jsonl).
"""
import argparse
import ctypes
import json
import os
import shutil
import subprocess
import sys
import tempfile
import time

import numpy as np

ROOT = os.path.abspath(os.path.join(os.path.dirname(__file__), "..", ".."))
sys.path.insert(0, os.path.join(ROOT, "models", "scripts"))
import refeval  # noqa: E402

B = os.path.join(ROOT, os.environ.get("B", "build"))
PEERS = os.path.join(B, "peers")
SPLITNIC = os.path.join(B, "splitnic")
BENCH_MODELS = os.path.join(B, "bench", "bench_models")
JSONL = os.environ.get("BENCH_JSONL") or os.path.join(B, "bench.jsonl")
FMNIST = "/usr/share/datasets/fashion-mnist/t10k-images-idx3-ubyte.gz"


def record(name, value, unit, method):
    print("%-44s %12.3f %-10s %s" % (name, value, unit, method), flush=True)
    with open(JSONL, "a") as f:
        f.write(json.dumps({"name": name, "value": float("%.6g" % value), "unit": unit,
                            "method": method}) + "\n")


def one_thread_blas():
    """OpenBLAS (which Debian's torch calls for float32 GEMM) and torch on one thread."""
    import torch
    done = []
    for lib in ("libopenblas.so.0", "libblas.so.3"):
        try:
            f = getattr(ctypes.CDLL(lib), "openblas_set_num_threads")
        except (OSError, AttributeError):
            continue
        f(1)
        done.append(lib)
    torch.set_num_threads(1)
    torch.set_num_interop_threads(1)
    return done


def write_idx(path, x):
    x = np.ascontiguousarray(x, dtype=np.uint8)
    with open(path, "wb") as f:
        f.write(bytes([0, 0, 0x08, x.ndim]))
        for d in x.shape:
            f.write(int(d).to_bytes(4, "big"))
        f.write(x.tobytes())


def torch_net(arch, w):
    """The interchange model as an nn.Sequential in float32 (eval mode)."""
    import torch
    from torch import nn
    layers, c = [], arch["input"]["shape"][0]
    flat = False
    for i, L in enumerate(arch["layers"]):
        t = L["type"]
        p = lambda k: torch.from_numpy(np.asarray(w["%d.%s" % (i, k)], dtype=np.float32))  # noqa
        if t == "conv":
            m = nn.Conv2d(c, L["out"], L["kernel"], L.get("stride", 1), L.get("pad", 0),
                          bias=L.get("bias", False))
            m.weight.data = p("weight")
            if L.get("bias", False):
                m.bias.data = p("bias")
            c = L["out"]
        elif t == "dense":
            m = nn.Linear(p("weight").shape[1], L["out"], bias=L.get("bias", False))
            m.weight.data = p("weight")
            if L.get("bias", False):
                m.bias.data = p("bias")
            c = L["out"]
        elif t == "batchnorm":
            m = (nn.BatchNorm1d if flat else nn.BatchNorm2d)(c, eps=L.get("eps", 1e-5))
            m.weight.data, m.bias.data = p("gamma"), p("beta")
            m.running_mean.data, m.running_var.data = p("mean"), p("var")
        elif t == "relu":
            m = nn.ReLU()
        elif t == "maxpool":
            m = nn.MaxPool2d(L["kernel"], L.get("stride", L["kernel"]))
        elif t == "flatten":
            m, flat = nn.Flatten(), True
        elif t == "lrn":
            m = nn.LocalResponseNorm(L.get("size", 5), float(L.get("alpha", 1e-4)),
                                     float(L.get("beta", 0.75)), float(L.get("k", 1.0)))
        else:
            raise ValueError("layer %d: %s has no float peer" % (i, t))
        layers.append(m)
    return nn.Sequential(*layers).eval()


def sh(*args):
    subprocess.run(args, check=True, stdout=subprocess.DEVNULL)


def arch_model(name, n, seed):
    """split/arch/NAME.json with random weights (splitnic gen), its model file and inputs."""
    d = os.path.join(PEERS, "arch")
    os.makedirs(d, exist_ok=True)
    src = os.path.join(ROOT, "split", "arch", name + ".json")
    npz, snm = os.path.join(d, name + ".npz"), os.path.join(d, name + ".snm")
    if not os.path.exists(snm) or os.path.getmtime(snm) < os.path.getmtime(SPLITNIC):
        sh(SPLITNIC, "gen", src, "-o", npz, "--seed", "1")
        sh(SPLITNIC, "convert", src, npz, "-o", snm)
    arch = refeval.load_arch(src)
    c, h, wd = arch["input"]["shape"]
    rng = np.random.default_rng(seed)
    x = rng.integers(0, 256, size=(n, c, h, wd), dtype=np.uint8)
    return arch, npz, snm, x


class Ort:
    def __init__(self):
        self.p = None
        js = os.path.join(ROOT, "tests", "bench", "peer_ort.js")
        mod = os.path.join(PEERS, "node_modules", "onnxruntime-node")
        if not shutil.which("node") or not shutil.which("npm"):
            self.why = "no node or npm on this machine"
            return
        if not os.path.isdir(mod):
            os.makedirs(PEERS, exist_ok=True)
            r = subprocess.run(["npm", "install", "--ignore-scripts", "--no-audit", "--no-fund",
                                "--prefix", PEERS, "onnxruntime-node"],
                               stdout=subprocess.DEVNULL, stderr=subprocess.PIPE, text=True)
            if r.returncode:
                self.why = "npm install onnxruntime-node failed: " + r.stderr.strip()[-200:]
                return
        self.p = subprocess.Popen(["node", js], stdin=subprocess.PIPE, stdout=subprocess.PIPE,
                                  text=True, env=dict(os.environ, ORT_NODE=mod))
        with open(os.path.join(mod, "package.json")) as f:
            self.version = json.load(f)["version"]

    def cmd(self, **kw):
        self.p.stdin.write(json.dumps(kw) + "\n")
        self.p.stdin.flush()
        ans = json.loads(self.p.stdout.readline())
        if "error" in ans:
            raise RuntimeError("onnxruntime: " + ans["error"])
        return ans

    def close(self):
        if self.p:
            self.p.stdin.close()
            self.p.wait()


def torch_times(net, xf, batch):
    import torch
    us, classes = [], []
    with torch.inference_mode():
        for i in range(0, len(xf) - batch + 1, batch):
            t = torch.from_numpy(xf[i:i + batch])
            t0 = time.perf_counter_ns()
            y = net(t)
            us.append((time.perf_counter_ns() - t0) / 1e3)
            classes.extend(y.argmax(1).tolist())
    return us, classes


def splitnic_round(inputs, models, n):
    with tempfile.NamedTemporaryFile("r", suffix=".jsonl") as f:
        subprocess.run([BENCH_MODELS, "-n", str(n), "-r", "1", "-p", "certified,float32", inputs]
                       + models, check=True,
                       stdout=subprocess.DEVNULL, env=dict(os.environ, BENCH_JSONL=f.name))
        return {r["name"]: r["value"] for r in map(json.loads, f)}


def splitnic_classes(snm, inputs, n):
    with tempfile.NamedTemporaryFile("r", suffix=".csv") as f:
        flag = "--npy" if inputs.endswith(".npy") else "--images"
        sh(SPLITNIC, "run", snm, flag, inputs, "--count", str(n), "--scores", f.name)
        return [int(np.argmax(np.array(line.split(","), dtype=np.float64))) for line in f]


def pct(v, q):
    return float(np.percentile(np.asarray(v), q))


def bench_pair(p, ort, rounds):
    name, n = p["name"], p["n"]
    arch, w = p["arch"], p["w"]
    xf = p["x"].astype(np.float32)
    raw = os.path.join(PEERS, name + ".f32")
    xf.tofile(raw)
    net = torch_net(arch, w)
    shape = [n] + list(arch["input"]["shape"])
    # same function: classes of splitnic's float model, PyTorch and ONNX Runtime
    m = min(n, p.get("check", n))
    want = splitnic_classes(p["float_snm"], p["inputs"], m)
    got_t = torch_times(net, xf[:m], 1)[1]
    same = {"pytorch": sum(a == b for a, b in zip(want, got_t))}
    if ort.p:
        import torch
        onnx_path = os.path.join(PEERS, name + ".onnx")
        torch.onnx.export(net, torch.from_numpy(xf[:1]), onnx_path, opset_version=13,
                          input_names=["x"], output_names=["y"],
                          dynamic_axes={"x": {0: "n"}, "y": {0: "n"}})
        ort.cmd(op="load", name=name, path=onnx_path)
        got_o = ort.cmd(op="run", name=name, input=raw, shape=[m] + shape[1:], batch=1)
        same["onnxruntime"] = sum(a == b for a, b in zip(want, got_o["classes"]))
    for k, v in same.items():
        record("peers.%s.%s_same_class" % (name, k), 100.0 * v / m, "%",
               "classes equal to splitnic's float model (certified: float64 classes) on %d of "
               "%d inputs (same weights)"
               % (v, m))
    # rounds
    per = {k: [] for k in ("sb1", "sb99", "sb64", "fb1", "fb99", "fb64", "gb1", "gb99", "gb64",
                           "tb1", "tb99", "tb64", "ob1", "ob99", "ob64")}
    models = [p["bin_snm"], p["float_snm"]]
    torch_times(net, xf[:64], 64)  # warm-up (bench_models warms splitnic up itself)
    if ort.p:
        ort.cmd(op="run", name=name, input=raw, shape=[64] + shape[1:], batch=64)
    for r in range(rounds):
        s = splitnic_round(p["inputs"], models, n)
        bn, fn = p["bin_name"], p["float_name"]
        t1, _ = torch_times(net, xf, 1)
        t64, _ = torch_times(net, xf, 64)
        o1 = o64 = None
        if ort.p:
            o1 = ort.cmd(op="run", name=name, input=raw, shape=shape, batch=1)["us"]
            o64 = ort.cmd(op="run", name=name, input=raw, shape=shape, batch=64)["us"]
        per["sb1"].append(s["model.%s.latency_batch1_p50" % bn])
        per["sb99"].append(s["model.%s.latency_batch1_p99" % bn])
        per["sb64"].append(s["model.%s.per_image_batch64" % bn])
        per["fb1"].append(s["model.%s.latency_batch1_p50" % fn])
        per["fb99"].append(s["model.%s.latency_batch1_p99" % fn])
        per["fb64"].append(s["model.%s.per_image_batch64" % fn])
        per["gb1"].append(s["model.%s.float32.latency_batch1_p50" % fn])
        per["gb99"].append(s["model.%s.float32.latency_batch1_p99" % fn])
        per["gb64"].append(s["model.%s.float32.per_image_batch64" % fn])
        per["tb1"].append(pct(t1, 50))
        per["tb99"].append(pct(t1, 99))
        per["tb64"].append(sum(t64) / (64 * len(t64)))
        if ort.p:
            per["ob1"].append(pct(o1, 50))
            per["ob99"].append(pct(o1, 99))
            per["ob64"].append(sum(o64) / (64 * len(o64)))
    med = lambda k: float(np.median(per[k]))  # noqa: E731
    ratio = lambda a, b: float(np.median(np.array(per[a]) / np.array(per[b])))  # noqa: E731
    how = "%d inputs, 1 thread, median of %d interleaved rounds" % (n, rounds)
    engines = [("splitnic_binary", "s", "splitnic %s (kern_forward)" % p["bin_name"]),
               ("splitnic_float_certified", "f", "splitnic %s (precision certified: classes "
                "of float64)" % p["float_name"]),
               ("splitnic_float32", "g", "splitnic %s (precision float32)" % p["float_name"]),
               ("pytorch_f32", "t", "PyTorch %s float32, torch.inference_mode, nn.Sequential"
                % __import__("torch").__version__)]
    if ort.p:
        engines.append(("onnxruntime_f32", "o", "ONNX Runtime %s CPU float32 (node, "
                        "onnxruntime-node; the time of session.run from node)" % ort.version))
    for eng, k, what in engines:
        record("peers.%s.%s.batch1_p50" % (name, eng), med(k + "b1"), "us", what + ", " + how)
        record("peers.%s.%s.batch1_p99" % (name, eng), med(k + "b99"), "us", "same, p99")
        record("peers.%s.%s.batch64_rate" % (name, eng), 1e6 / med(k + "b64"), "images/s",
               "same, batch 64")
    ref, refname = ("o", "ONNX Runtime") if ort.p else ("t", "PyTorch")
    record("peers.%s.binary_vs_%s_batch1" % (name, "ort" if ort.p else "torch"),
           ratio(ref + "b1", "sb1"), "x",
           "%s float32 p50 / splitnic binary p50, batch 1, median of per-round ratios "
           "(target >= 10)" % refname)
    record("peers.%s.binary_vs_%s_batch64" % (name, "ort" if ort.p else "torch"),
           ratio(ref + "b64", "sb64"), "x",
           "%s float32 / splitnic binary per-image time, batch 64, median of per-round "
           "ratios (target >= 4)" % refname)
    peer = "ort" if ort.p else "torch"
    for b, k in (("1", "b1"), ("64", "b64")):
        record("peers.%s.float32_vs_%s_batch%s" % (name, peer, b), ratio("g" + k, ref + k), "x",
               "splitnic float32 / %s float32 time per image, batch %s, median of per-round "
               "ratios (target <= 1.5)" % (refname, b))
        record("peers.%s.certified_vs_%s_batch%s" % (name, peer, b), ratio("f" + k, ref + k),
               "x", "splitnic certified (float64 classes) / %s float32 time per image, batch "
               "%s, median of per-round ratios" % (refname, b))
    record("peers.%s.float32_vs_torch_batch64" % name, ratio("gb64", "tb64"), "x",
           "splitnic float32 / PyTorch float32 per-image time, batch 64, median of "
           "per-round ratios")


def help_rss():
    """Peak RSS of `splitnic --help` (at most 30 MiB without a GPU), by GNU time: a process
    forked from this Python one keeps Python's pages until its exec, and they stay in its
    ru_maxrss (35 MiB read so for a program that peaks at 7)."""
    p = subprocess.run(["/usr/bin/time", "-f", "%M", SPLITNIC, "--help"],
                       stdout=subprocess.DEVNULL, stderr=subprocess.PIPE, text=True)
    if p.returncode:
        sys.exit("splitnic --help exited %d" % p.returncode)
    record("splitnic_help_peak_rss", int(p.stderr.split()[-1]) / 1024.0, "MiB",
           "ru_maxrss of `splitnic --help`, by /usr/bin/time -f %M (target <= 30 MiB)")


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--rounds", type=int, default=5)
    ap.add_argument("--alexnet", action="store_true")
    ap.add_argument("--only", help="pair names, comma-separated")
    args = ap.parse_args()
    os.makedirs(PEERS, exist_ok=True)
    help_rss()
    blas = one_thread_blas()
    print("PyTorch: torch.set_num_threads(1); openblas_set_num_threads(1) through %s"
          % (", ".join(blas) or "no OpenBLAS found"))
    ort = Ort()
    if not ort.p:
        print("ONNX Runtime: not available (%s); PyTorch is the peer" % ort.why)
    pairs = []
    x = refeval.read_idx(FMNIST)[:256]
    fm = os.path.join(PEERS, "fmnist-256.idx")
    write_idx(fm, x)
    for b, f in (("fmnist-bmlp", "fmnist-fmlp"), ("fmnist-bcnn", "fmnist-fcnn")):
        d = os.path.join(ROOT, "models", f)
        pairs.append(dict(name=f, n=256, x=x[:, None], inputs=fm, bin_name=b, float_name=f,
                          arch=refeval.load_arch(os.path.join(d, "arch.json")),
                          w=refeval.load_weights(os.path.join(d, "weights.npz")),
                          bin_snm=os.path.join(B, "models", b + ".snm"),
                          float_snm=os.path.join(B, "models", f + ".snm")))
    # (binary, float, inputs, inputs checked, rounds at most): the float64 CIFAR CNN takes about
    # 0.3 s an image, AlexNet's several
    archs = [("bmlp", "bmlp-float", 128, 128, 5), ("bcnn-cifar", "bcnn-cifar-float", 64, 64, 3)]
    if args.alexnet:
        archs.append(("alexnet-bin", "alexnet-float", 64, 16, 1))
    for b, f, n, check, rounds in archs:
        _, _, bsnm, xb = arch_model(b, n, 7)
        arch, npz, fsnm, _ = arch_model(f, n, 7)
        if arch["input"]["dtype"] == "u8":
            inputs = os.path.join(PEERS, "%s-%d.idx" % (f, n))
            write_idx(inputs, xb)
        else:
            inputs = os.path.join(PEERS, "%s-%d.npy" % (f, n))
            np.save(inputs, xb.astype(np.float32))
        pairs.append(dict(name=f, n=n, x=xb, inputs=inputs, bin_name=b, float_name=f,
                          arch=arch, w=refeval.load_weights(npz), bin_snm=bsnm,
                          float_snm=fsnm, check=check, rounds=rounds))
    for p in pairs:
        if args.only and p["name"] not in args.only.split(","):
            continue
        print("== %s: %s (binary) against %s (float)" % (p["name"], p["bin_name"],
                                                         p["float_name"]), flush=True)
        bench_pair(p, ort, min(args.rounds, p.get("rounds", args.rounds)))
    ort.close()


if __name__ == "__main__":
    main()
