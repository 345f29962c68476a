#!/usr/bin/env bash
# make bench: splitnic sweep on the bundled models and the three architectures at 0.1, 1 and
# 10 Gbit/s (tests/integration/test_sweep.sh does the runs), then the share of cases where the
# planner's choice is within 5% of the measured best split (issue target: >= 90%).
set -euo pipefail
cd "$(dirname "$0")/../.."
B=${B:-build}
export SWEEP_DIR=$B/bench-sweep SWEEP_COUNT=${SWEEP_COUNT:-15}
bash tests/integration/test_sweep.sh >"$B/bench-sweep.log" 2>&1 || { tail -20 "$B/bench-sweep.log"; exit 1; }
grep '^SWEEP' "$B/bench-sweep.log"
total=$(grep -c '^SWEEP' "$B/bench-sweep.log")
ok=$(grep '^SWEEP' "$B/bench-sweep.log" | grep -c 'within5=yes')
method="splitnic sweep --count $SWEEP_COUNT (medians; host, serialize, copy, deserialize measured in process; wire modeled at the link rate; NIC time from the NFP emulator), 5 models x 3 link rates; profile from splitnic calibrate --quick"
echo "planner within 5% of the measured best split: $ok of $total cases"
printf '{"name":"sweep.planner_within_5pct","value":%s,"unit":"%%","method":"%s"}\n' \
	"$(awk -v a="$ok" -v b="$total" 'BEGIN {printf "%.1f", 100 * a / b}')" "$method" >>"$BENCH_JSONL"
