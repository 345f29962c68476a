#!/usr/bin/python3
"""The bundled models from ONNX: `splitnic import` of each model's ONNX export must give the
same classes and scores as its interchange files (`splitnic convert`), bit for bit, on the whole
Fashion-MNIST test set (10,000 images).

The binarized models ship models/NAME/model.onnx; the float ones (fmlp, fcnn: 3 to 7 MB of
float32 weights, too big to commit) are exported here with models/scripts/train_fmnist.py --onnx-from.
"""
import glob
import os
import subprocess
import sys
import tempfile

SPLITNIC = os.environ.get("SPLITNIC", "build/splitnic")
B = os.environ.get("B", "build")
IMAGES = "/usr/share/datasets/fashion-mnist/t10k-images-idx3-ubyte.gz"


def run(args):
    p = subprocess.run(args, capture_output=True, text=True)
    if p.returncode != 0:
        print(" ".join(args), "->", p.returncode, p.stderr)
        sys.exit(1)
    return p.stdout


def main():
    if not os.path.exists(IMAGES):
        print("skip: Fashion-MNIST (dataset-fashion-mnist) not installed")
        return 77
    bad = 0
    with tempfile.TemporaryDirectory() as tmp:
        for d in sorted(glob.glob("models/*/arch.json")):
            d = os.path.dirname(d)
            name = os.path.basename(d)
            onnx_file = os.path.join(d, "model.onnx")
            shipped = os.path.exists(onnx_file)
            if not shipped:
                onnx_file = os.path.join(tmp, name + ".onnx")
                run(["/usr/bin/python3", "models/scripts/train_fmnist.py", "--onnx-from", d,
                     "--onnx", onnx_file])
            ic = os.path.join(tmp, name + ".ic.snm")
            ox = os.path.join(tmp, name + ".onnx.snm")
            run([SPLITNIC, "convert", os.path.join(d, "arch.json"),
                 os.path.join(d, "weights.npz"), "-o", ic])
            run([SPLITNIC, "import", onnx_file, "-o", ox])
            scores = []
            for snm in (ic, ox):
                csv = snm + ".csv"
                run([SPLITNIC, "run", snm, "--images", IMAGES, "--scores", csv])
                scores.append(open(csv).read())
            rows = scores[0].count("\n")
            same = scores[0] == scores[1] and rows == 10000
            bad += not same
            print(f"{name}: ONNX {'shipped' if shipped else 'exported here'} "
                  f"({os.path.getsize(onnx_file)} bytes); {rows} images: scores "
                  f"{'identical bit for bit' if same else 'DIFFER'}")
    return 1 if bad else 0


if __name__ == "__main__":
    sys.exit(main())
