#!/usr/bin/env bash
# make bench-split: split experiments measured over the packet path, and the planner scored
# against those MEASUREMENTS (never against its own model), beside the policy "always all-host".
#   1. `splitnic calibrate` in process, with no server running (-> profile), then
#      `splitnic calibrate --packet --platform emu` twice in a row (each repeats itself while
#      its rounds spread more than 10%); `calibrate --compare` says whether the two agree
#      within 10%; the planner uses the second;
#   2. `splitnic sweep --packet` over the project's models (the bundled CNN fmnist-bcnn, the
#      BinaryNet MLP and the CIFAR-10 CNN of split/arch/) and, unless SPLIT_HELDOUT=0, three
#      architectures the planner was never tuned on (tests/bench/split-heldout/: a VGG-like CNN
#      with a heavy binary FC head, a 256-512-512-256-2 traffic MLP, a conv-heavy 64x64 CNN with
#      a tiny head), all binary, `splitnic gen` weights (seed 7): every split where the NIC can
#      start and all-host, emu NIC, link rates $SPLIT_RATES Gbit/s (tc tbf), offered loads
#      $SPLIT_LOADS (multiples of the all-host capacity measured first at each rate), Poisson
#      arrivals, $SPLIT_DURATION s a point in each of $SPLIT_ROUNDS interleaved rounds;
#   3. the sweeps predicted again from the first calibration (`splitnic sweep --replay`, the
#      groups project-cal1 and heldout-cal1): the same measurements, the other profile;
#   4. tests/bench/bench_split_score.py per group (project, held-out): per model, rate and load
#      (a case) the measured best split (goodput first: under 99% answered never wins; ties
#      within 3% or the rounds' spread), whether the planner's choice, always all-host and
#      `plan --measure 3` (replayed on the sweep's measurements) are within 5% of it; the median
#      p50 prediction error over unsaturated points; the answered share's error; and how far the
#      two calibrations' predictions of the same points are apart (--agree);
#   5. tests/bench/bench_link.sh: the shaped link's delay against the transfer time.
# Figures to $BENCH_JSONL; logs, sweeps' text, JSON and plots in $B/bench-split/. Needs root.
# A reduced run (checks the machinery, not the figures): SPLIT_MODELS="fmnist-bcnn"
# SPLIT_HELDOUT=0 SPLIT_RATES=1 SPLIT_LOADS=0.3x SPLIT_ROUNDS=1 SPLIT_DURATION=0.5
# SPLIT_CAL_OPTS="--rounds 1 --attempts 1 --duration 0.3" SPLIT_LINK=0.
set -uo pipefail
cd "$(dirname "$0")/../.."
B=${B:-build}
S=$(realpath "$B/splitnic")
export BENCH_JSONL=${BENCH_JSONL:-$PWD/$B/bench.jsonl}
W=$B/bench-split
RATES=${SPLIT_RATES:-0.1,1,10}
LOADS=${SPLIT_LOADS:-0.3x,0.7x,1.3x}
DURATION=${SPLIT_DURATION:-1}
ROUNDS=${SPLIT_ROUNDS:-3}
MODELS=${SPLIT_MODELS:-fmnist-bcnn bmlp bcnn-cifar}
HELDOUT=${SPLIT_HELDOUT:-1}
CAL_OPTS=${SPLIT_CAL_OPTS:-}
PY=/usr/bin/python3
[ "$(id -u)" = 0 ] || { echo "bench_split: skip: not root (namespaces, tc, DPDK)"; exit 0; }
mkdir -p "$W"
t0=$(date +%s)

# model NAME ARCH.json: $W/NAME.snm from random weights (seed 7), made again when splitnic is newer
model() {
	if [ ! -f "$W/$1.snm" ] || [ "$S" -nt "$W/$1.snm" ] || [ "$2" -nt "$W/$1.snm" ]; then
		"$S" gen "$2" -o "$W/$1.npz" --seed 7 >/dev/null &&
			"$S" convert "$2" "$W/$1.npz" -o "$W/$1.snm" >/dev/null ||
			{ echo "bench_split: gen/convert $1 failed"; exit 1; }
		rm -f "$W/$1.npz"
	fi
}
groups=()
for a in $MODELS; do
	if [ "$a" = fmnist-bcnn ]; then
		groups+=("project:$B/models/fmnist-bcnn.snm")
	else
		model "$a" "split/arch/$a.json"
		groups+=("project:$W/$a.snm")
	fi
done
if [ "$HELDOUT" = 1 ]; then
	for a in vgg-head traffic-wide conv64; do
		model "heldout-$a" "tests/bench/split-heldout/$a.json"
		groups+=("heldout:$W/heldout-$a.snm")
	done
fi

echo "== calibration: in process (no server running), then twice through the packet path (emu NIC)"
"$S" calibrate -o "$W/inproc.profile" >"$W/calibrate.log" 2>&1 || { tail "$W/calibrate.log"; exit 1; }
for i in 1 2; do
	# shellcheck disable=SC2086
	"$S" calibrate --packet --platform emu --profile "$W/inproc.profile" $CAL_OPTS \
		-o "$W/packet-$i.profile" >"$W/calibrate-packet-$i.log" 2>&1 ||
		{ tail "$W/calibrate-packet-$i.log"; exit 1; }
	grep -E "^(nic \(|capacity|fit:|calibration)" "$W/calibrate-packet-$i.log"
done
"$S" calibrate --compare "$W/packet-1.profile" --profile "$W/packet-2.profile" | tee "$W/calibrate-compare.txt"
cal=$(sed -n 's/^CALCOMPARE largest_difference=\([0-9.]*\)%.*/\1/p' "$W/calibrate-compare.txt")

scored=()
for g in "${groups[@]}"; do
	m=${g#*:} name=$(basename "${g#*:}" .snm)
	echo "== sweep over the packet path: $name"
	"$S" sweep "$m" --packet --profile "$W/packet-2.profile" --link-gbps "$RATES" --load "$LOADS" \
		--duration "$DURATION" --rounds "$ROUNDS" --json "$W/sweep-$name.json" --plot "$W/sweep-$name.png" \
		>"$W/sweep-$name.txt" 2>"$W/sweep-$name.err" ||
		{ tail -5 "$W/sweep-$name.err"; echo "bench_split: sweep $name failed"; exit 1; }
	grep -E '^SWEEP' "$W/sweep-$name.txt"
	scored+=("${g%%:*}:$W/sweep-$name.json")
done

# the same measurements predicted from the first calibration (sweep --replay: no lab, the ops
# priced as the sweep priced them): how much the choice of calibration moves the predictions
mkdir -p "$W/cal1"
agree=()
for g in "${groups[@]}"; do
	m=${g#*:} name=$(basename "${g#*:}" .snm)
	"$S" sweep "$m" --packet --replay "$W/sweep-$name.json" --profile "$W/packet-1.profile" \
		--json "$W/cal1/sweep-$name.json" >"$W/cal1/sweep-$name.txt" 2>"$W/cal1/sweep-$name.err" ||
		{ tail -5 "$W/cal1/sweep-$name.err"; echo "bench_split: sweep --replay $name failed"; exit 1; }
	scored+=("${g%%:*}-cal1:$W/cal1/sweep-$name.json")
	case " ${agree[*]} " in *" ${g%%:*} "*) ;; *) agree+=(--agree "${g%%:*}" "${g%%:*}-cal1") ;; esac
done

t1=$(date +%s)
method="tests/bench/bench_split.sh: splitnic sweep --packet, link $RATES Gbit/s (tc tbf) x loads \
$LOADS (x all-host capacity), emu NIC, Poisson, $DURATION s x $ROUNDS interleaved rounds a point; \
profile from calibrate + calibrate --packet ${CAL_OPTS:-(defaults)}; scored against the \
MEASURED points (goodput first, ties within 3% or the rounds' spread); $((t1 - t0)) s in all"
$PY tests/bench/bench_split_score.py "$BENCH_JSONL" "$method" "${scored[@]}" "${agree[@]}" \
	${cal:+--cal-compare "$cal"} || exit 1
echo "two calibrate --packet runs in a row: largest difference ${cal:-?}% (target <= 10%)"
echo "make bench-split took $((t1 - t0)) s"
if [ "${SPLIT_LINK:-1}" = 1 ]; then
	echo "== the shaped link"
	tests/bench/bench_link.sh
fi
