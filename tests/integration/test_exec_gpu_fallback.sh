#!/usr/bin/env bash
# `splitnic run --exec gpu` on a machine without a usable GPU: it says so on stderr, with the
# CUDA error and its number (or that CUDA was not built in), falls back to the CPU kernels, and
# gives the CPU's scores; the JSON says which executor ran. On a GPU machine it checks that the
# GPU ran and agrees with the CPU on every class instead. On either, a GPU executor that is not
# the one this build made (SPLITNIC_CUDA_LIB: a table of another version or size, no table, no
# file) is refused with that reason, and the run falls back to the CPU. Exit 0 pass, 1 fail.
set -u
cd "$(dirname "$0")/../.."
B=${B:-build}
SPLITNIC=${SPLITNIC:-$PWD/$B/splitnic}
T=$(mktemp -d)
trap 'rm -rf "$T"' EXIT
fail() { echo "FAIL: $*"; exit 1; }

[ -x "$SPLITNIC" ] || fail "$SPLITNIC not built"
# a small random binary MLP over 20 random u8 images (IDX), converted by splitnic itself
/usr/bin/python3 - "$T" <<'PY' || fail "cannot write the fixture"
import json, struct, sys, zipfile, io
import numpy as np
d = sys.argv[1]
rng = np.random.default_rng(5)
arch = {"name": "fallback-mlp", "input": {"shape": [1, 8, 8], "dtype": "u8"}, "layers": [
    {"type": "flatten"},
    {"type": "dense", "out": 33, "bias": True, "binary_weights": True},
    {"type": "batchnorm"}, {"type": "sign"},
    {"type": "dense", "out": 10, "binary_weights": True}, {"type": "batchnorm"}]}
open(f"{d}/arch.json", "w").write(json.dumps(arch))
w = {"1.weight": rng.standard_normal((33, 64)), "1.bias": rng.standard_normal(33),
     "4.weight": rng.standard_normal((10, 33))}
for i, c in ((2, 33), (5, 10)):
    w[f"{i}.gamma"] = rng.standard_normal(c); w[f"{i}.beta"] = rng.standard_normal(c)
    w[f"{i}.mean"] = rng.standard_normal(c) * 10; w[f"{i}.var"] = rng.uniform(0.5, 4, c)
np.savez(f"{d}/w.npz", **{k: v.astype(np.float32) for k, v in w.items()})
imgs = rng.integers(0, 256, (20, 8, 8), dtype=np.uint8)
with open(f"{d}/img.idx", "wb") as f:
    f.write(struct.pack(">IIII", 0x803, 20, 8, 8)); f.write(imgs.tobytes())
PY
"$SPLITNIC" convert "$T/arch.json" "$T/w.npz" -o "$T/m.snm" >"$T/convert.log" 2>&1 ||
	fail "convert: $(cat "$T/convert.log")"
"$SPLITNIC" run "$T/m.snm" --images "$T/img.idx" --scores "$T/cpu.csv" --json \
	>"$T/cpu.json" 2>"$T/cpu.err" || fail "run --exec cpu (default): $(cat "$T/cpu.err")"
"$SPLITNIC" run "$T/m.snm" --images "$T/img.idx" --scores "$T/gpu.csv" --json --exec gpu \
	>"$T/gpu.json" 2>"$T/gpu.err" || fail "run --exec gpu exited non-zero: $(cat "$T/gpu.err")"
cat "$T/gpu.err"
grep -q '"exec":"cpu"' "$T/cpu.json" || fail "CPU run's JSON lacks \"exec\":\"cpu\": $(cat "$T/cpu.json")"
if grep -q 'falling back to the CPU kernels' "$T/gpu.err"; then
	grep -Eq '^splitnic run: --exec gpu: (no CUDA GPU found: .*\([0-9]+\)|no CUDA GPU found: .*0 devices|no usable CUDA GPU: .*|built without CUDA \(nvcc not found\)); falling back to the CPU kernels$' \
		"$T/gpu.err" || fail "fallback message without the CUDA error and number: $(cat "$T/gpu.err")"
	grep -q '"exec":"cpu"' "$T/gpu.json" || fail "fallback JSON does not say exec cpu: $(cat "$T/gpu.json")"
	cmp -s "$T/cpu.csv" "$T/gpu.csv" || fail "fallback scores differ from the CPU run"
	echo "pass: --exec gpu fell back to the CPU with the reason"
else
	grep -q '"exec":"gpu"' "$T/gpu.json" || fail "GPU run's JSON does not say exec gpu: $(cat "$T/gpu.json")"
	/usr/bin/python3 - "$T/cpu.csv" "$T/gpu.csv" <<'PY' || fail "GPU scores or classes differ from the CPU"
import sys
a = [list(map(float, l.split(","))) for l in open(sys.argv[1])]
b = [list(map(float, l.split(","))) for l in open(sys.argv[2])]
assert len(a) == len(b) == 20
for x, y in zip(a, b):
    assert x.index(max(x)) == y.index(max(y))
    assert all(abs(p - q) <= 1e-12 * max(1.0, abs(p)) for p, q in zip(x, y))
PY
	echo "pass: --exec gpu ran on the GPU and matches the CPU"
fi

# a mismatched or missing GPU executor: refused with its reason, the CPU's scores all the same
refused() { # NAME SO REGEX
	SPLITNIC_CUDA_LIB=$2 "$SPLITNIC" run "$T/m.snm" --images "$T/img.idx" --scores "$T/$1.csv" \
		--exec gpu >"$T/$1.out" 2>"$T/$1.err" || fail "$1: run exited non-zero: $(cat "$T/$1.err")"
	grep -Eq "^splitnic run: --exec gpu: ($3); falling back to the CPU kernels\$" "$T/$1.err" ||
		fail "$1: no fallback message matching '$3': $(cat "$T/$1.err")"
	cmp -s "$T/cpu.csv" "$T/$1.csv" || fail "$1: fallback scores differ from the CPU run"
	echo "pass: $1: $(cat "$T/$1.err")"
}
if grep -q 'built without CUDA' "$T/gpu.err"; then
	echo "pass: built without CUDA: no GPU executor to refuse"
	exit 0
fi
B_ABS=$(cd "$B" && pwd)
table='has table version ([0-9]+) \(([0-9]+) bytes\); this program needs version ([0-9]+) \(([0-9]+) bytes\)'
refused other-version "$B_ABS/tests/kcuda_fake_abi.so" \
	"no usable CUDA GPU: GPU executor .*kcuda_fake_abi\\.so $table: build or install both from one tree"
sed -E "s/.*$table.*/\1 \3/" "$T/other-version.err" | awk '$1 != $2 {ok = 1} END {exit !ok}' ||
	fail "other-version: the versions it names are equal: $(cat "$T/other-version.err")"
refused other-size "$B_ABS/tests/kcuda_fake_size.so" \
	"no usable CUDA GPU: GPU executor .*kcuda_fake_size\\.so $table: build or install both from one tree"
sed -E "s/.*$table.*/\2 \4/" "$T/other-size.err" | awk '$1 != $2 {ok = 1} END {exit !ok}' ||
	fail "other-size: the sizes it names are equal: $(cat "$T/other-size.err")"
refused no-table "$B_ABS/tests/kcuda_fake_none.so" \
	'no usable CUDA GPU: GPU executor .*kcuda_fake_none\.so: no symbol kcuda_table'
refused no-file "$T/none/libsncuda.so" \
	'no usable CUDA GPU: cannot load the GPU executor: .*none/libsncuda\.so: cannot open shared object file.*'
exit 0
