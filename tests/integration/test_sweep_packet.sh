#!/usr/bin/env bash
# The packet path that `splitnic sweep --packet` measures (lab/sweep_lab.sh), as root:
#   1. the link made real: a binary MLP split so that its ACTIVATION is 65,536 bits (8 KiB, 7
#      datagrams); splitnic-host and splitnic-nic joined by a veth (net_af_packet both, through
#      the qdisc), shaped by tc tbf at 50 Mbit/s: every request answered by the NIC, and tbf's
#      own counters on the host's end hold exactly the ACTIVATIONs' frames and bytes. (How much
#      the shaping delays them is a timing figure: tests/bench/bench_link.sh, make bench-split.)
#   2. a short sweep over the packet path (fmnist-bcnn, all-host and the NIC from op 9, one
#      rate, two loads, two interleaved rounds): every point has answers and every request is accounted for (answered,
#      refused or timed out), SWEEP lines, the JSON holds measured and MODELED numbers apart
#      (the latter labelled), the answered shares measured (= responses / requests) and
#      predicted (by the NIC + by the fallback = answered), the measured best and the model's
#      ranking per load, the plot says MODELED and marks the planner's choice and the measured
#      best; the lab is gone afterwards;
#      The same sweep replayed (`sweep --replay`, no lab): its measurements unchanged and, with
#      the same profile and the ops priced as recorded, its predictions and choices again;
#   3. plan --measure 2: the plan file carries the measured figures and `splitnic run --plan`
#      takes it. How well the planner does is a timing figure (make bench-split), not asserted
#      here.
# Exit 0 pass, 1 fail, 77 skip (only when not root, and never under CI=true).
set -u
cd "$(dirname "$0")/../.."
. tests/integration/paths.sh
CNN=$B/models/fmnist-bcnn.snm
. lab/netns.sh
netns_need_root "af_packet and tc"
netns_need_files FAIL: "make all" "$S" "$B/splitnic-nic" "$B/splitnic-host" "$CNN"
command -v tc >/dev/null || { echo "FAIL: tc missing (make deps: iproute2)"; exit 1; }
LAB=lab/sweep_lab.sh
tag=t$$
tag=${tag:0:8}
tmp=$(mktemp -d)
trap 'bash $LAB stop $tag "$tmp/lab" 2>/dev/null; bash $LAB down $tag 2>/dev/null; rm -rf "$tmp"' EXIT
fail() {
	echo "FAIL: $*"
	for l in nic host; do
		[ -f "$tmp/lab/$l.log" ] && grep -v '^EAL\|^TELEMETRY' "$tmp/lab/$l.log" | tail -5
	done
	exit 1
}
export SPLITNIC=$S

# --- 1. the link ---------------------------------------------------------------------------------
"$S" gen tests/data/wide-act.json -o "$tmp/wide.npz" --seed 3 >/dev/null &&
	"$S" convert tests/data/wide-act.json "$tmp/wide.npz" -o "$tmp/wide.snm" >/dev/null || fail "gen/convert"
K=$("$S" inspect "$tmp/wide.snm" --ops | awk '/compiled ops:/ {on = 1} on && $2 == "bdense" {print $1; exit}')
[ -n "$K" ] || fail "no bdense op in the wide model"
bash $LAB up $tag || fail "lab up"
# no HEALTH probes from the NIC (--host-probe-ms 0): the shaped link carries the ACTIVATIONs alone
bash $LAB start $tag "$tmp/lab" --model "$tmp/wide.snm@$K" --notify-host --platform emu \
	--host-probe-ms 0 -- \
	--model "$tmp/wide.snm:coproc:$K" --idle-sleep-us 20 --nic-timeout-us 2000000 || fail "lab start"
# 100 requests at one outstanding with the link at 50 Mbit/s: tbf's counters on the host's end
bash $LAB shape $tag 0.05 || fail "shape"
bash $LAB client $tag --model "$tmp/wide.snm" --count 100 --outstanding 1 --timeout-ms 5000 \
	--json >"$tmp/c.json" || fail "client"
bash $LAB tc $tag >"$tmp/tc.txt" || fail "tc counters"
$PY - "$tmp/c.json" "$tmp/tc.txt" <<'EOF' || fail "the ACTIVATIONs did not all go through the shaped link"
import json, math, re, sys
c = json.load(open(sys.argv[1]))
act = 65536 // 8
frags = math.ceil(act / ((1400 - 112) // 8 * 8))
wire = act + frags * (112 + 42)
sent = re.search(r"Sent (\d+) bytes (\d+) pkt", open(sys.argv[2]).read())
byts, pkts = int(sent.group(1)), int(sent.group(2))
print(f"50 Mbit/s: {c['executors']['nic']} of {c['requests']} answered by the NIC; tbf on the "
      f"host's end sent {byts} bytes in {pkts} frames: 100 ACTIVATIONs x {wire} bytes in {frags} "
      f"frames would be {100 * wire} in {100 * frags}")
sys.exit(0 if (byts, pkts) == (100 * wire, 100 * frags) and c["executors"]["nic"] == 100 else 1)
EOF
bash $LAB stop $tag "$tmp/lab"
bash $LAB down $tag

# --- 2. a short sweep over the packet path --------------------------------------------------------
"$S" sweep "$CNN" --packet --splits 9,host --link-gbps 1 --load 200,0.5x --duration 0.5 --rounds 2 \
	--tag "$tag" --json "$tmp/sweep.json" --plot "$tmp/sweep.svg" >"$tmp/sweep.txt" \
	2>"$tmp/sweep.err" || { tail -5 "$tmp/sweep.err"; fail "splitnic sweep --packet"; }
grep '^SWEEP' "$tmp/sweep.txt"
ip netns list | grep -q "snsw-$tag-" && fail "the sweep left its namespaces behind"
[ "$(grep -c '^SWEEP mode=packet' "$tmp/sweep.txt")" = 2 ] || fail "not one SWEEP line per load"
grep -q 'MODELED' "$tmp/sweep.svg" || fail "the plot does not say MODELED"
grep -q '^sweep fmnist-bcnn: \[8/8\]' "$tmp/sweep.err" || fail "no progress lines"
$PY - "$tmp/sweep.json" <<'EOF' || fail "sweep JSON"
import json, sys
j = json.load(open(sys.argv[1]))
pts = [s for r in j["rates"] for l in r["loads"] for s in l["splits"]]
bad = [p["split"] for p in pts
       if p["measured"]["responses"] + p["measured"]["errors"] + p["measured"]["timeouts"]
       != p["measured"]["requests"] or not p["measured"]["responses"]
       or p["predicted"]["label"] != "MODELED" or not p["predicted"]["p50_us"]
       or abs(p["measured"]["answered_share"]
              - p["measured"]["responses"] / p["measured"]["requests"]) > 1e-9
       or not 0 <= p["predicted"]["answered_share"] <= 1
       or abs(p["predicted"]["answered_share"] + p["predicted"]["unanswered_share"] - 1) > 1e-6
       or (p["split"] != "all-host" and abs(p["predicted"]["nic_share"]
           + p["predicted"]["fallback_share"] - p["predicted"]["answered_share"]) > 1e-6)]
# the link's bucket: one full frame (1,600 B) and 100 us of 1 Gbit/s, in the JSON as in tc
bad += [r["link_burst_bytes"] for r in j["rates"] if r["link_burst_bytes"] != 14100]
# the servers' polling as the lab ran them (--host-opt, --nic-opt: 20 us sleeps), in the model
bad += [(k, j[k]) for k in ("poll_nic_sleep_us", "poll_host_sleep_us") if j[k] != 20]
bad += [("poll_wake_late_us", j["poll_wake_late_us"])] if j["poll_wake_late_us"] <= 0 else []
loads = [l for r in j["rates"] for l in r["loads"]]
bad += [l["offered_rps"] for l in loads if not l["measured_best"]
        or sorted(l["modeled_ranking"]) != ["all-host", "nic@9:bdense"]]
print(f"sweep JSON: {len(pts)} points, method: {j['method'][:60]}...")
sys.exit(1 if bad or len(pts) != 4 else 0)
EOF
grep -q 'planner' "$tmp/sweep.svg" && grep -q 'MEASURED best' "$tmp/sweep.svg" ||
	fail "the plot does not mark the planner's choice and the measured best"
# the same sweep replayed (no lab): the file's measurements as they were, and with the same
# profile and the ops priced as recorded, the same predictions and the same planner's choices
"$S" sweep "$CNN" --packet --replay "$tmp/sweep.json" --json "$tmp/replay.json" >"$tmp/replay.txt" \
	2>"$tmp/replay.err" || { cat "$tmp/replay.err"; fail "splitnic sweep --replay"; }
grep -q '^replayed: .* its CPU time as the file records it$' "$tmp/replay.txt" ||
	fail "the replay does not say it priced the ops as the sweep recorded them"
$PY - "$tmp/sweep.json" "$tmp/replay.json" <<'EOF' || fail "the replay does not reproduce the sweep"
import json, math, sys
a, b = (json.load(open(f)) for f in sys.argv[1:3])
bad = [] if b.get("replayed_from") == sys.argv[1] else ["replayed_from"]
bad += [] if len(a["cpu_op_us"]) == len(b["cpu_op_us"]) == 13 and all(
    math.isclose(x, y, rel_tol=1e-12) for x, y in zip(a["cpu_op_us"], b["cpu_op_us"])) else ["cpu_op_us"]
for ra, rb in zip(a["rates"], b["rates"]):
    for la, lb in zip(ra["loads"], rb["loads"]):
        bad += [] if la["planner"] == lb["planner"] else [("planner", la["offered_rps"])]
        for sa, sb in zip(la["splits"], lb["splits"]):
            bad += [] if sa["measured"] == sb["measured"] else [("measured", sa["split"])]
            for k, v in sa["predicted"].items():
                w = sb["predicted"][k]
                if v != w and not (isinstance(v, float) and math.isclose(v, w, rel_tol=1e-9)):
                    bad.append((sa["split"], k, v, w))
print(f"replay: {sum(len(l['splits']) for r in b['rates'] for l in r['loads'])} points as "
      f"measured, predictions as the sweep's{': ' + str(bad[:4]) if bad else ''}")
sys.exit(1 if bad else 0)
EOF

# --- 3. plan --measure: the model's best 2 splits measured, the best measured written -----------
"$S" plan "$CNN" --load 200 --measure 2 --duration 0.3 --rounds 1 --tag "$tag" -o "$tmp/m.plan" \
	>"$tmp/measure.txt" 2>"$tmp/measure.err" || { tail -5 "$tmp/measure.err"; fail "plan --measure"; }
grep '^--measure' "$tmp/measure.txt"
grep -q '^measured_p50_us [0-9.]*$' "$tmp/m.plan" && grep -q '^measured_answered ' "$tmp/m.plan" ||
	fail "plan --measure: no measured figures in the plan"
"$S" run "$CNN" --images "$IMG" --count 4 --plan "$tmp/m.plan" >/dev/null 2>"$tmp/run.err" ||
	fail "splitnic run --plan does not take the measured plan: $(cat "$tmp/run.err")"
ip netns list | grep -q "snsw-$tag-" && fail "plan --measure left its namespaces behind"
echo "pass: the ACTIVATIONs go through the tbf-shaped host <-> NIC link, frame for frame; a packet sweep measures, predicts (labelled MODELED, shares included) and cleans up, and its replay reproduces its predictions; plan --measure writes the best measured split"
exit 0
