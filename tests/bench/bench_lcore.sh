#!/usr/bin/env bash
# The NIC's lcore chain against kern_forward on the same core (bench_lcore): fmnist-bmlp and the
# BinaryNet MLP (split/arch/bmlp.json, binary, random weights from `splitnic gen --seed 7`, built
# once into $B/bench/models/), E = 16 (splitnic-nic's default) and 256 executors.
#   usage: bench_lcore.sh [BUILD-DIR]
set -euo pipefail
cd "$(dirname "$0")/../.."
B=${1:-${B:-build}}
S=$B/splitnic
M=$B/bench/models
export BENCH_JSONL=${BENCH_JSONL:-$PWD/$B/bench.jsonl}
mkdir -p "$M"
if [ ! -e "$M/bnn-mlp.snm" ] || [ "$S" -nt "$M/bnn-mlp.snm" ]; then
	"$S" gen split/arch/bmlp.json -o "$M/bnn-mlp.npz" --seed 7 >/dev/null
	"$S" convert split/arch/bmlp.json "$M/bnn-mlp.npz" -o "$M/bnn-mlp.snm" >/dev/null
	rm -f "$M/bnn-mlp.npz"
fi
"$B/bench/bench_lcore" --executors "${BENCH_LCORE_EXECUTORS:-16,256}" \
	--rounds "${BENCH_LCORE_ROUNDS:-15}" "$B/models/fmnist-bmlp.snm" "$M/bnn-mlp.snm"
