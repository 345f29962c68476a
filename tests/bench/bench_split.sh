#!/usr/bin/env bash
# make bench-split: split experiments measured over the packet path, and how well the planner
# does against what the packet path measures.
#   1. `splitnic calibrate` in process, with no server running (-> profile), then
#      `splitnic calibrate --packet --platform emu` (the NIC's per-request time and the path's
#      costs measured through splitnic-nic and splitnic-host);
#   2. `splitnic sweep --packet` over the bundled CNN (fmnist-bcnn), the BinaryNet MLP and the
#      CIFAR-10 CNN (split/arch/bmlp.json, bcnn-cifar.json, binary, `splitnic gen` weights,
#      seed 7): every split where the NIC can start and all-host, emu NIC, link rates
#      $SPLIT_RATES Gbit/s (tc tbf), offered loads $SPLIT_LOADS (multiples of the all-host
#      capacity measured first at each rate: one past it), Poisson arrivals, $SPLIT_DURATION s a
#      point in each of $SPLIT_ROUNDS interleaved rounds (medians over the rounds);
#   3. per model, rate and load (a case): the planner's choice (`plan --load`, objective
#      latency: the p50) against the measured best split (end-to-end p50); the share of cases
#      within 5% (target >= 90%), the median prediction error |MODELED - MEASURED| / MEASURED
#      of the p50 over every point and over the planner's choices (target <= 15%), the cases
#      whose measured best is not all-host;
#   4. tests/bench/bench_link.sh: the shaped link's delay against the transfer time.
# Figures to $BENCH_JSONL; sweeps' text, JSON and plots in $B/bench-split/. Needs root.
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
PY=/usr/bin/python3
[ "$(id -u)" = 0 ] || { echo "bench_split: skip: not root (namespaces, tc, DPDK)"; exit 0; }
mkdir -p "$W"
t0=$(date +%s)

models=("$B/models/fmnist-bcnn.snm")
for a in bmlp bcnn-cifar; do
	if [ ! -f "$W/$a.snm" ] || [ "$S" -nt "$W/$a.snm" ]; then
		"$S" gen "split/arch/$a.json" -o "$W/$a.npz" --seed 7 >/dev/null &&
			"$S" convert "split/arch/$a.json" "$W/$a.npz" -o "$W/$a.snm" >/dev/null ||
			{ echo "bench_split: gen/convert $a failed"; exit 1; }
		rm -f "$W/$a.npz"
	fi
	models+=("$W/$a.snm")
done

echo "== calibration: in process (no server running), then through the packet path (emu NIC)"
"$S" calibrate -o "$W/inproc.profile" >"$W/calibrate.log" 2>&1 || { tail "$W/calibrate.log"; exit 1; }
"$S" calibrate --packet --platform emu --profile "$W/inproc.profile" -o "$W/packet.profile" \
	>"$W/calibrate-packet.log" 2>&1 || { tail "$W/calibrate-packet.log"; exit 1; }
grep -E "^(nic fit|host fit)" "$W/calibrate-packet.log"

for m in "${models[@]}"; do
	name=$(basename "$m" .snm)
	echo "== sweep over the packet path: $name"
	"$S" sweep "$m" --packet --profile "$W/packet.profile" --link-gbps "$RATES" --load "$LOADS" \
		--duration "$DURATION" --rounds "$ROUNDS" --json "$W/sweep-$name.json" --plot "$W/sweep-$name.png" \
		>"$W/sweep-$name.txt" 2>"$W/sweep-$name.err" ||
		{ tail -5 "$W/sweep-$name.err"; echo "bench_split: sweep $name failed"; exit 1; }
	grep -E '^SWEEP' "$W/sweep-$name.txt"
done

t1=$(date +%s)
$PY - "$W" "$((t1 - t0))" "$RATES" "$LOADS" "$DURATION s x $ROUNDS interleaved rounds" "${models[@]}" <<'EOF'
import json, os, statistics, sys
w, secs, rates, loads, dur, models = sys.argv[1], int(sys.argv[2]), sys.argv[3], sys.argv[4], sys.argv[5], sys.argv[6:]
cases, ok, errs, perrs, not_host = 0, 0, [], [], []
for m in models:
    j = json.load(open(os.path.join(w, f"sweep-{os.path.basename(m)[:-4]}.json")))
    for r in j["rates"]:
        for l in r["loads"]:
            pts = [s for s in l["splits"] if s["measured"]["p50_us"]]
            for s in pts:
                errs.append(abs(s["predicted"]["p50_us"] - s["measured"]["p50_us"]) / s["measured"]["p50_us"])
            if not pts:
                continue
            best = min(pts, key=lambda s: s["measured"]["p50_us"])
            mine = [s for s in l["splits"] if s["split"] == l["planner"]]
            cases += 1
            if not mine or not mine[0]["measured"]["p50_us"]:
                print(f"{j['model']} {r['link_gbps']} Gbit/s {l['offered_rps']:.0f}/s: the planner's "
                      f"{l['planner']} {'got no answers' if mine else 'was not measured'}: a miss")
                continue
            p = mine[0]
            regret = p["measured"]["p50_us"] / best["measured"]["p50_us"] - 1
            ok += regret <= 0.05
            perrs.append(abs(p["predicted"]["p50_us"] - p["measured"]["p50_us"]) / p["measured"]["p50_us"])
            if best["split"] != "all-host":
                not_host.append(f"{j['model']} at {r['link_gbps']} Gbit/s, {l['offered_rps']:.0f} req/s: "
                                f"best {best['split']} ({best['measured']['p50_us']:.0f} us), planner "
                                f"{l['planner']} ({p['measured']['p50_us']:.0f} us)")
share = 100 * ok / cases if cases else 0
med, medp = 100 * statistics.median(errs), 100 * statistics.median(perrs)
method = (f"tests/bench/bench_split.sh: splitnic sweep --packet, {len(models)} models x link "
          f"{rates} Gbit/s (tc tbf) x loads {loads} (x all-host capacity), emu NIC, Poisson, "
          f"{dur} a point; profile from calibrate + calibrate --packet; {secs} s in all")
print(f"planner within 5% of the measured best split (end-to-end p50): {ok} of {cases} cases "
      f"({share:.0f}%, target >= 90%)")
print(f"median prediction error of the p50: {med:.1f}% over {len(errs)} points, {medp:.1f}% over "
      f"the planner's choices (target <= 15%)")
print("cases whose measured best split is not all-host:" + ("" if not_host else " none"))
for c in not_host:
    print("  " + c)
print(f"make bench-split took {secs} s")
with open(os.environ["BENCH_JSONL"], "a") as f:
    for name, v, unit in (("split_planner_within_5pct", share, "%"), ("split_pred_err_median", med, "%"),
                          ("split_pred_err_median_planner", medp, "%"), ("split_cases_not_all_host", len(not_host), "cases"),
                          ("split_bench_seconds", secs, "s")):
        f.write(json.dumps({"name": name, "value": round(v, 2), "unit": unit, "method": method}) + "\n")
EOF
echo "== the shaped link"
tests/bench/bench_link.sh
