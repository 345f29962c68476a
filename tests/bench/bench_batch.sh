#!/usr/bin/env bash
# make bench: dynamic batching (--max-batch, --max-queue-delay-us) against none, on the two
# servers that batch: splitnic-host host-only (net_af_packet on a veth, -l 1) and `splitnic
# serve` (kernel UDP, taskset -c 1), fmnist-bmlp, the front-end `splitnic client` on CPU 0 in
# its own namespace.
#
# Method: BENCH_BATCH_ROUNDS rounds (default 5); in each, for each server, the unbatched
# (--max-batch 1) and the batched configuration (--max-batch BENCH_BATCH_MAX, default 8,
# --max-queue-delay-us 0: a batch is what has arrived together), in alternating order from round
# to round, each started fresh and measured twice:
#   - capacity at saturation: closed loop, 64 outstanding, BENCH_BATCH_SAT requests (default
#     20,000): responses / duration (ERROR busy and timeouts are not answers);
#   - p50 at low load: closed loop, 1 outstanding, BENCH_BATCH_LOW requests (default 2,000).
# Figures: per server, the median over rounds of the per-round ratio batched / unbatched
# capacity and of the per-round difference batched - unbatched p50 (goal: ratio >= 1.4 for
# fmnist-bmlp, difference <= 10 us), with the medians of the absolute figures beside them.
# Printed as a table, appended to $BENCH_JSONL. Needs root; without it prints a skip line.
set -uo pipefail
cd "$(dirname "$0")/../.."
B=${B:-build}
S=$(realpath "$B/splitnic")
ROUNDS=${BENCH_BATCH_ROUNDS:-5}
NSAT=${BENCH_BATCH_SAT:-20000}
NLOW=${BENCH_BATCH_LOW:-2000}
MAXB=${BENCH_BATCH_MAX:-8}
export BENCH_JSONL=${BENCH_JSONL:-$PWD/$B/bench.jsonl}
PY=/usr/bin/python3
MLP=$B/models/fmnist-bmlp.snm
IMG=/usr/share/datasets/fashion-mnist/t10k-images-idx3-ubyte.gz
. lab/netns.sh

[ "$(id -u)" = 0 ] || { echo "bench_batch: skip: not root (namespaces, af_packet)"; exit 0; }
netns_need_files bench_batch: "make all" "$S" "$B/splitnic-host" "$MLP" "$IMG"
tag=$$ tmp=$(mktemp -d) pid=
ns_c=snbc-$tag ns_d=snbd-$tag ns_s=snbs-$tag
cleanup() {
	netns_kill "$pid"
	netns_cleanup "/var/run/dpdk/snbb$tag" "$tmp"
}
trap cleanup EXIT
die() {
	echo "bench_batch: $*"
	tail -5 "$tmp/server.log" 2>/dev/null
	exit 1
}

netns_add "$ns_c" "$ns_d" "$ns_s" || die "ip netns add"
netns_no_ipv6 "$ns_c" "$ns_d" "$ns_s"
netns_veth "$ns_c" vd "$ns_d" dw && netns_veth "$ns_c" vs "$ns_s" ss || die "veth: $NETNS_WHY"
netns_link "$ns_c" vd 10.91.2.2/24
netns_link "$ns_d" dw
netns_link "$ns_c" vs 10.91.3.2/24
netns_link "$ns_s" ss 10.91.3.1/24
for i in "$ns_c vd" "$ns_c vs"; do netns_tx_csum_off $i || die "ethtool $i"; done
# splitnic-host answers no ARP: the front-end knows the DPDK port's MAC
ip -n "$ns_c" neigh replace 10.91.2.1 lladdr "$(ip netns exec "$ns_d" cat /sys/class/net/dw/address)" \
	dev vd nud permanent || die "neighbour"

start() { # SERVER MAX-BATCH
	: >"$tmp/server.log"
	if [ "$1" = host ]; then
		ip netns exec "$ns_d" "$B/splitnic-host" -l 1 --no-huge -m 512 --file-prefix "snbb$tag" \
			--no-pci --vdev net_af_packet0,iface=dw -- --model "$MLP:host-only" \
			--ip 10.91.2.1 --max-batch "$2" --max-queue-delay-us 0 >"$tmp/server.log" 2>&1 &
		pid=$!
		netns_wait_log "$tmp/server.log" "^host: serving" "$pid" splitnic-host || die "$NETNS_WHY"
	else
		ip netns exec "$ns_s" taskset -c 1 "$S" serve --model "$MLP" --bind 10.91.3.1 \
			--max-batch "$2" --max-queue-delay-us 0 >"$tmp/server.log" 2>&1 &
		pid=$!
		netns_wait_log "$tmp/server.log" "^serve: listening" "$pid" "splitnic serve" ||
			die "$NETNS_WHY"
	fi
	sleep 0.5
}
stop() {
	netns_kill "$pid"
	pid=
	rm -rf "/var/run/dpdk/snbb$tag"
}
measure() { # SERVER CONFIG ROUND
	local addr=10.91.2.1
	[ "$1" = serve ] && addr=10.91.3.1
	# at saturation ERROR busy answers may come: exit status 3 is not a failure here
	ip netns exec "$ns_c" taskset -c 0 "$S" client "$addr" --images "$IMG" --count "$NSAT" \
		--outstanding 64 --timeout-ms 3000 --json >"$tmp/sat.json" || [ $? -eq 3 ] ||
		die "client: $1 $2 saturation"
	ip netns exec "$ns_c" taskset -c 0 "$S" client "$addr" --images "$IMG" --count "$NLOW" \
		--outstanding 1 --timeout-ms 3000 --json >"$tmp/low.json" || [ $? -eq 3 ] ||
		die "client: $1 $2 low load"
	$PY -c 'import json,sys
s=json.load(open(sys.argv[1])); l=json.load(open(sys.argv[2]))
if l["responses"] < l["requests"]:
    print("  %s %s: %d of %d unanswered at low load, errors %d, timeouts %d" % (sys.argv[3],
          sys.argv[4], l["requests"] - l["responses"], l["requests"], l["errors"]["total"],
          l["timeouts"]), file=sys.stderr)
print(*sys.argv[3:], s["responses"] / s["duration_s"], l["latency_us"]["p50"])' \
		"$tmp/sat.json" "$tmp/low.json" "$1" "$2" "$3" >>"$tmp/results" || die "client JSON"
}

for round in $(seq "$ROUNDS"); do
	echo "round $round of $ROUNDS"
	order="1 $MAXB"
	[ $((round % 2)) = 0 ] && order="$MAXB 1"
	for srv in host serve; do
		for b in $order; do
			start "$srv" "$b"
			cfg=batched
			[ "$b" = 1 ] && cfg=unbatched
			measure "$srv" "$cfg" "$round"
			stop
		done
	done
done

$PY - "$tmp/results" "$ROUNDS" "$NSAT" "$NLOW" "$MAXB" <<'EOF'
import json, os, statistics as st, sys
rows = [l.split() for l in open(sys.argv[1])]
rounds, nsat, nlow, maxb = (int(x) for x in sys.argv[2:6])
method = (f"tests/bench/bench_batch.sh: fmnist-bmlp, server on CPU 1 (splitnic-host host-only on "
          f"net_af_packet, splitnic serve on a kernel UDP socket), splitnic client on CPU 0 over a "
          f"veth; --max-batch {maxb} --max-queue-delay-us 0 against --max-batch 1, each started "
          f"fresh; capacity = responses/s at 64 outstanding ({nsat} requests), p50 at 1 "
          f"outstanding ({nlow} requests); median over {rounds} interleaved rounds (order "
          f"alternating) of the per-round ratio (capacity) and difference (p50)")
label = {"host": "splitnic-host host-only", "serve": "splitnic serve (kernel UDP)"}
print(f"{'server':30s} {'capacity/s':>11s} {'batched':>9s} {'ratio':>6s}   "
      f"{'p50 us':>7s} {'batched':>8s} {'diff':>6s}")
with open(os.environ["BENCH_JSONL"], "a") as f:
    for s in ("host", "serve"):
        get = lambda cfg, r, i: float(next(x for x in rows if x[0] == s and x[1] == cfg
                                           and x[2] == str(r))[3 + i])
        rs = range(1, rounds + 1)
        ratio = st.median(get("batched", r, 0) / get("unbatched", r, 0) for r in rs)
        diff = st.median(get("batched", r, 1) - get("unbatched", r, 1) for r in rs)
        cu, cb = (st.median(get(c, r, 0) for r in rs) for c in ("unbatched", "batched"))
        pu, pb = (st.median(get(c, r, 1) for r in rs) for c in ("unbatched", "batched"))
        print(f"{label[s]:30s} {cu:11.0f} {cb:9.0f} {ratio:5.2f}x   {pu:7.1f} {pb:8.1f} {diff:+6.1f}")
        for name, v, unit in (("capacity_ratio", ratio, "x"), ("p50_low_diff", diff, "us"),
                              ("capacity_unbatched", cu, "req/s"), ("capacity_batched", cb, "req/s"),
                              ("p50_low_unbatched", pu, "us"), ("p50_low_batched", pb, "us")):
            f.write(json.dumps({"name": f"batch_{s}_{name}", "value": round(v, 3 if unit == "x" else 1),
                                "unit": unit, "method": method}) + "\n")
print("goal: capacity ratio >= 1.4x, p50 difference <= 10 us")
print("method: " + method)
EOF
