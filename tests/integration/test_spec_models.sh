#!/usr/bin/env bash
# splitnic convert + run against the float64 evaluation of the spec (models/scripts/refeval.py) on random
# models that cover the spec's hard cases (models/scripts/genmodel.py), with every kernel table this
# CPU can run (a table it cannot run is said, not passed), batch sizes that do not divide the input
# count, and several threads.
set -euo pipefail
cd "$(dirname "$0")/../.."
S=${SPLITNIC:-build/splitnic}
PY=/usr/bin/python3
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT
n=0
# the tables this CPU runs: SPLITNIC_ISA names one it cannot run -> a warning and another table
isas=() notrun=()
$PY models/scripts/genmodel.py --out "$tmp/probe" --seed 1 --kind mlp >/dev/null
$S convert "$tmp/probe/arch.json" "$tmp/probe/weights.npz" -o "$tmp/probe/m.snm"
for isa in ref avx2 avx512; do
	SPLITNIC_ISA=$isa $S run "$tmp/probe/m.snm" --images "$tmp/probe/images.idx" --count 1 \
		>/dev/null 2>"$tmp/probe/err" || { cat "$tmp/probe/err"; exit 1; }
	why=$(grep 'SPLITNIC_ISA' "$tmp/probe/err" || true)
	if [ -n "$why" ]; then notrun+=("$isa table: ${why#*SPLITNIC_ISA=}"); else isas+=("$isa"); fi
done
for kind in mlp cnn hard; do
	for seed in 1 2 3 4 5 6; do
		d=$tmp/$kind-$seed
		$PY models/scripts/genmodel.py --out "$d" --seed "$seed" --kind "$kind" >/dev/null
		$S convert "$d/arch.json" "$d/weights.npz" -o "$d/m.snm"
		if [ -f "$d/images.idx" ]; then in=(--images "$d/images.idx"); else in=(--npy "$d/inputs.npy"); fi
		$PY models/scripts/refeval.py "$d/arch.json" "$d/weights.npz" "${in[@]}" --scores "$d/ref.csv" >/dev/null
		for isa in "${isas[@]}"; do
			for opt in "--batch 1" "--batch 7 --threads 2"; do
				# shellcheck disable=SC2086
				SPLITNIC_ISA=$isa $S run "$d/m.snm" "${in[@]}" $opt --scores "$d/ours.csv" >/dev/null
				if ! $PY tests/py/compare_scores.py "$d/ref.csv" "$d/ours.csv" >"$d/cmp.txt"; then
					echo "FAIL: $kind seed $seed isa $isa $opt"
					cat "$d/cmp.txt"
					$S inspect --ops "$d/m.snm" || true
					exit 1
				fi
				n=$((n + 1))
			done
		done
	done
done
echo "$n runs equal the float64 reference (tables ${isas[*]})"
for w in "${notrun[@]}"; do echo "not run: the $w"; done
