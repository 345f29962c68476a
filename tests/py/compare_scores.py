#!/usr/bin/python3
"""compare_scores.py REF.csv OURS.csv [--tol 1e-4]

The spec's acceptance rule for an executor against the float64 reference: same number of rows
and classes, identical predicted classes (arg-max, lowest index on ties), and every score b'
within tol * max(1, |b|) of the reference b. Exit 0 if all hold, 1 (with details) if not.
"""
import sys

import numpy as np


def load(path):
    rows = [line.strip() for line in open(path) if line.strip()]
    return np.array([[float(v) for v in r.split(",")] for r in rows], dtype=np.float64)


def main():
    args = sys.argv[1:]
    tol = 1e-4
    if "--tol" in args:
        i = args.index("--tol")
        tol = float(args[i + 1])
        del args[i:i + 2]
    ref, ours = load(args[0]), load(args[1])
    if ref.shape != ours.shape:
        print(f"shape mismatch: reference {ref.shape}, ours {ours.shape}")
        return 1
    bad_cls = np.nonzero(ref.argmax(axis=1) != ours.argmax(axis=1))[0]
    err = np.abs(ours - ref) / np.maximum(1.0, np.abs(ref))
    bad = np.argwhere(err > tol)
    if len(bad_cls) or len(bad):
        print(f"{len(bad_cls)} class mismatches, {len(bad)} scores out of tolerance {tol}")
        for i in bad_cls[:5]:
            print(f"  row {i}: ref class {ref[i].argmax()} ours {ours[i].argmax()}")
        for i, j in bad[:5]:
            print(f"  row {i} class {j}: ref {ref[i, j]!r} ours {ours[i, j]!r}")
        return 1
    print(f"ok: {ref.shape[0]} rows x {ref.shape[1]} classes, classes identical, "
          f"max relative error {err.max() if err.size else 0:.3g}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
