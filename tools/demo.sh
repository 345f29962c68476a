#!/usr/bin/env bash
# make demo: the bundled models (converted by make) on the Fashion-MNIST test set: first in
# process on the CPU kernels (accuracy and latency of each, and of the float networks of the
# same shapes), then the packet path (tools/demo_packet.sh): front-end -> splitnic-nic ->
# splitnic-host, the binary MLP stand-alone on the NIC and the binary CNN in co-processor mode.
set -euo pipefail
cd "$(dirname "$0")/.."
B=${B:-build}
S=$B/splitnic
D=/usr/share/datasets/fashion-mnist
IMAGES=$D/t10k-images-idx3-ubyte.gz
LABELS=$D/t10k-labels-idx1-ubyte.gz

for m in fmnist-bmlp fmnist-bcnn; do
	echo "== $m =="
	$S inspect "$B/models/$m.snm" | head -1
	$S run "$B/models/$m.snm" --images "$IMAGES" --labels "$LABELS"
	echo
done
echo "== float networks of the same shapes (baselines) =="
for m in fmnist-fmlp fmnist-fcnn; do
	[ -f "$B/models/$m.snm" ] || continue
	$S run "$B/models/$m.snm" --images "$IMAGES" --labels "$LABELS" --batch 64 | sed "s/^/  /"
done
echo
echo "== the packet path =="
exec tools/demo_packet.sh
