#!/usr/bin/env bash
# The bundled models: splitnic run on all 10,000 Fashion-MNIST test images must give the same
# accuracy as the float64 reference recorded at export (models/*/accuracy.json), and its scores
# must equal the float64 reference (models/scripts/refeval.py) on the first 1,000 images.
set -euo pipefail
cd "$(dirname "$0")/../.."
B=${B:-build}
S=${SPLITNIC:-$B/splitnic}
PY=/usr/bin/python3
D=/usr/share/datasets/fashion-mnist
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT
for m in fmnist-bmlp fmnist-bcnn fmnist-fmlp fmnist-fcnn; do
	snm=$B/models/$m.snm
	json=$($S run "$snm" --images $D/t10k-images-idx3-ubyte.gz --labels $D/t10k-labels-idx1-ubyte.gz --batch 32 --json)
	ours=$(echo "$json" | $PY -c 'import json,sys; print(json.load(sys.stdin)["correct"])')
	want=$($PY -c "import json; a=json.load(open('models/$m/accuracy.json')); print(round(a['test_accuracy_ref_f64']*10000))")
	echo "$m: splitnic run $ours/10000 correct, float64 reference $want/10000"
	[ "$ours" = "$want" ] || { echo "FAIL: accuracy differs from the float64 reference"; exit 1; }
	$S run "$snm" --images $D/t10k-images-idx3-ubyte.gz --count 1000 --scores "$tmp/ours.csv" >/dev/null
	$PY models/scripts/refeval.py models/$m/arch.json models/$m/weights.npz --images $D/t10k-images-idx3-ubyte.gz \
		--count 1000 --scores "$tmp/ref.csv" >/dev/null
	$PY tests/py/compare_scores.py "$tmp/ref.csv" "$tmp/ours.csv"
done
