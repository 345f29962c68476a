#!/usr/bin/env bash
# make demo: the bundled models (converted by make) on the Fashion-MNIST test set. First in
# process on the CPU kernels, each binary network beside the float network of the same shape,
# both at batch 1 (latency) and at batch 64 (throughput), one thread: like with like. Then the
# packet path (lab/demo_packet.sh): front-end -> splitnic-nic -> splitnic-host, the binary MLP
# stand-alone on the NIC and the binary CNN in co-processor mode, and why the NIC's numbers on
# this machine are what they are.
#   DEMO_COUNT=N: the first N test images (default: all 10,000).
set -euo pipefail
cd "$(dirname "$0")/.."
B=${B:-build}
MODELS=$B/models
# installed (this script in PREFIX/share/splitnic/lab/): the programs in PREFIX/bin, the models
# in PREFIX/share/splitnic/models
if [ ! -x "$B/splitnic" ] && [ -x ../../bin/splitnic ]; then B=../../bin MODELS=models; fi
S=$B/splitnic
D=/usr/share/datasets/fashion-mnist
IMAGES=$D/t10k-images-idx3-ubyte.gz
LABELS=$D/t10k-labels-idx1-ubyte.gz
count=${DEMO_COUNT:+--count $DEMO_COUNT}
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT

echo "== in process: CPU kernels, one thread, ${DEMO_COUNT:-10000} test images =="
echo "   each binary network beside the float network of the same shape, both at batch 1 and 64"
printf '%-12s %-26s %9s %16s %18s\n' model weights accuracy "batch 1 p50" "batch 64 per image"
for m in fmnist-bmlp fmnist-fmlp fmnist-bcnn fmnist-fcnn; do
	[ -f "$MODELS/$m.snm" ] || continue
	# the float networks in float32, as PyTorch and ONNX Runtime run them
	case $m in
	fmnist-b*) w="binary (XNOR/popcount)" p=certified ;;
	*) w="float32 (AVX-512/AVX2)" p=float32 ;;
	esac
	# shellcheck disable=SC2086
	$S run "$MODELS/$m.snm" --images "$IMAGES" --labels "$LABELS" $count --precision $p \
		--json >"$tmp/b1"
	# shellcheck disable=SC2086
	$S run "$MODELS/$m.snm" --images "$IMAGES" --labels "$LABELS" $count --batch 64 \
		--precision $p --json >"$tmp/b64"
	/usr/bin/python3 - "$m" "$w" "$tmp/b1" "$tmp/b64" <<'EOF'
import json, sys
m, w = sys.argv[1:3]
b1, b64 = (json.load(open(f)) for f in sys.argv[3:5])
print(f"{m:<12} {w:<26} {100 * b1['accuracy']:8.2f}% {b1['latency_us']['p50']:13.1f} us "
      f"{b64['latency_us']['p50'] / b64['batch']:15.1f} us")
EOF
done
cat <<'EOF'
   p50 is per request at batch 1; at batch 64 it is the median batch's time divided by 64.
   The binary networks trade about 1-2 points of accuracy for 1-bit weights and activations:
   their dense layers are XNOR + popcount over 64-bit words (AVX-512 VPOPCNTDQ here), so the
   MLP's 1.86 M weights fit in 233 KB and a request costs microseconds. The binary CNN's first
   conv stays float (its input is pixels: float32, with float64 rechecks of any sign that float32
   could get wrong); its binary convs end in thresholds, so max-pool works on bits. Convolving
   every 28x28 pixel costs far more than the MLP's dense layers, so it gains less.
   The float networks run in float32 (--precision float32), as frameworks run them; the default
   precision, certified, gives the float64 classes (docs/float.md). make bench puts ONNX
   Runtime's float32 time beside splitnic's (peers.*.float32_vs_ort_*).

EOF
echo "== the packet path =="
export B MODELS
exec lab/demo_packet.sh
