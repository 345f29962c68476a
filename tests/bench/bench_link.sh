#!/usr/bin/env bash
# make bench-split: the host <-> NIC link made real, measured. A binary MLP split so that its
# ACTIVATION is 65,536 bits (8 KiB, 7 datagrams) runs over the lab of lab/sweep_lab.sh
# (splitnic-host and splitnic-nic joined by a veth, net_af_packet through the qdisc); the
# client's p50 at one outstanding with the link not shaped, at 50 and at 200 Mbit/s (tc tbf, a
# 1,600-byte burst), in BENCH_LINK_ROUNDS interleaved rounds of 150 requests (medians of the
# per-round differences). Expected: the ACTIVATION's bytes from the Ethernet header beyond the
# burst, x 8 / rate (tbf spends that much holding its frames); printed beside the measured added
# delay, appended to $BENCH_JSONL. Needs root; without it prints a skip line.
set -uo pipefail
cd "$(dirname "$0")/../.."
B=${B:-build}
S=$(realpath "$B/splitnic")
export SPLITNIC=$S BENCH_JSONL=${BENCH_JSONL:-$PWD/$B/bench.jsonl}
PY=/usr/bin/python3
LAB=lab/sweep_lab.sh
ROUNDS=${BENCH_LINK_ROUNDS:-7}
[ "$(id -u)" = 0 ] || { echo "bench_link: skip: not root (namespaces, tc)"; exit 0; }
tag=bl$$
tag=${tag:0:8}
tmp=$(mktemp -d)
trap 'bash $LAB stop $tag "$tmp/lab" 2>/dev/null; bash $LAB down $tag 2>/dev/null; rm -rf "$tmp"' EXIT
die() {
	echo "bench_link: $*"
	exit 1
}
"$S" gen tests/data/wide-act.json -o "$tmp/wide.npz" --seed 3 >/dev/null &&
	"$S" convert tests/data/wide-act.json "$tmp/wide.npz" -o "$tmp/wide.snm" >/dev/null || die "gen/convert"
K=$("$S" inspect "$tmp/wide.snm" --ops | awk '/compiled ops:/ {on = 1} on && $2 == "bdense" {print $1; exit}')
bash $LAB up $tag || die "lab up"
bash $LAB start $tag "$tmp/lab" --model "$tmp/wide.snm@$K" --notify-host --platform emu -- \
	--model "$tmp/wide.snm:coproc:$K" --idle-sleep-us 20 --nic-timeout-us 2000000 || die "lab start"
p50() { # RATE: the client's p50 (us) at one outstanding, the link at RATE (Gbit/s|none)
	bash $LAB shape $tag "$1" || return 1
	bash $LAB client $tag --model "$tmp/wide.snm" --count 150 --outstanding 1 \
		--timeout-ms 5000 --json >"$tmp/c.json"
	[ $? -le 3 ] || return 1
	$PY -c 'import json,sys; print(json.load(open(sys.argv[1]))["latency_us"]["p50"])' "$tmp/c.json"
}
for _ in $(seq "$ROUNDS"); do
	a=$(p50 none) && b=$(p50 0.05) && c=$(p50 0.2) || die "a round"
	echo "$a $b $c" >>"$tmp/rounds"
done
$PY - "$tmp/rounds" <<'EOF'
import json, math, os, statistics, sys
rounds = [[float(x) for x in l.split()] for l in open(sys.argv[1])]
act = 65536 // 8
frags = math.ceil(act / ((1400 - 112) // 8 * 8))
wire = act + frags * (112 + 42)
method = (f"tests/bench/bench_link.sh: 8 KiB ACTIVATION ({frags} datagrams, {wire} bytes of frames) "
          f"over a veth shaped by tc tbf (burst 1600 B), client p50 at 1 outstanding, medians of "
          f"{len(rounds)} interleaved rounds of 150 requests (not shaped / shaped)")
with open(os.environ["BENCH_JSONL"], "a") as f:
    for k, rate in ((1, 0.05e9), (2, 0.2e9)):
        d = statistics.median(r[k] - r[0] for r in rounds)
        want = (wire - 1600) * 8 / rate * 1e6
        print(f"link {rate / 1e6:.0f} Mbit/s: ACTIVATION delayed {d:.0f} us (measured), "
              f"expected {want:.0f} us: ratio {d / want:.2f}")
        for name, v, unit in ((f"link_{rate / 1e6:.0f}mbit_added_us", d, "us"),
                              (f"link_{rate / 1e6:.0f}mbit_expected_us", want, "us"),
                              (f"link_{rate / 1e6:.0f}mbit_ratio", d / want, "x")):
            f.write(json.dumps({"name": name, "value": round(v, 3), "unit": unit, "method": method}) + "\n")
EOF
