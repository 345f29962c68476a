#!/usr/bin/env bash
# make bench: every benchmark, one after the other on an otherwise idle machine. Each figure is
# printed with its method and appended to build/bench.jsonl as {"name","value","unit","method"}.
set -euo pipefail
cd "$(dirname "$0")/../.."
B=${B:-build}
export BENCH_JSONL=${BENCH_JSONL:-$PWD/$B/bench.jsonl}
D=/usr/share/datasets/fashion-mnist
echo "== bench: $(date -u +%FT%TZ) $(uname -m) $(grep -m1 'model name' /proc/cpuinfo | cut -d: -f2)"
echo "== part 1: kernels vs OpenBLAS and the popcount peak, memory bandwidth, bundled models"
echo "   per image, and the peers (PyTorch, ONNX Runtime float32), one thread: make bench-kernels"
"${MAKE:-make}" --no-print-directory B="$B" bench-kernels
echo
echo "== NIC emulator: modeled latency of one binary FC layer (4096 inputs, 256 executors) against neurons"
"$B/bench/bench_nicfw"
echo
echo "== NIC lcore chain vs kern_forward on the same core (fmnist-bmlp, BinaryNet MLP)"
tests/bench/bench_lcore.sh "$B"
echo
echo "== splitnic-nic: forwarding rate with and without inference load below capacity; saturation"
tests/bench/bench_nic_fwd.sh "$B/splitnic-nic" "$B/models/fmnist-bmlp.snm"
echo
echo "== split planning: the planner's choice against the measured best split over the packet path is"
echo "   make bench-split (tests/bench/bench_split.sh, about 45 minutes)"
echo
echo "== splitnic-host: packet path vs in-process compute, per mode (needs root)"
tests/bench/bench_host.sh "$B"
echo
echo "== splitnic-host: capacity while its metrics endpoint is scraped every 10 ms, against not scraped (needs root)"
tests/bench/bench_metrics.sh "$B"
echo
echo "== one front-end, four servers: XDP, splitnic-nic stand-alone, splitnic-host host-only, splitnic serve (needs root)"
tests/bench/bench_fourway.sh
echo
echo "== dynamic batching: capacity at saturation and p50 at low load, batched against unbatched (needs root)"
tests/bench/bench_batch.sh
echo
echo "== idle policy: --poll adaptive vs --poll busy, idle CPU and p50 (needs root)"
tests/bench/bench_poll.sh
echo
echo "== XDP executor vs CPU kernels, ns per inference (BPF_PROG_TEST_RUN; needs root)"
"$B/bench/bench_xdp" "$D/t10k-images-idx3-ubyte.gz" "$B"/models/fmnist-bmlp.snm
echo
echo "== GPU: binary GEMM 8192^3 (popc, b1 MMA) vs cuBLAS sgemm; models on the GPU"
"$B/bench/bench_cuda" "$D/t10k-images-idx3-ubyte.gz" "$B"/models/fmnist-*.snm
echo
echo "figures appended to $BENCH_JSONL"
