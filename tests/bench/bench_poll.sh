#!/usr/bin/env bash
# make bench: the DPDK servers' idle policy (dpdk/idle.h), --poll adaptive against --poll busy
# (and adaptive with --idle-sleep-us 20, the sleeps the split lab runs its servers with: sleep20),
# on splitnic-nic stand-alone (platform lcore; its host port a net_memif server no host joins:
# a net_null port would hand it frames at every poll) and splitnic-host host-only, each alone on
# CPU 1 with one lcore (-l 1, net_af_packet on a veth), fmnist-bmlp; the front-end on CPU 0.
#
# Method: BENCH_POLL_ROUNDS rounds (default 3); in each, for each server, the three modes in an
# order rotated from round to round, each started fresh:
#   - idle CPU: the server's utime + stime from /proc/PID/stat (fields 14 and 15, every thread
#     of the process) over BENCH_POLL_IDLE_S seconds (default 10) with no traffic, as a share
#     of one core: (ticks after - ticks before) / CLK_TCK / seconds;
#   - p50 at low load: closed loop, 1 outstanding, BENCH_POLL_N requests (default 2,000);
#   - p50 of sparse traffic: open loop, 200 requests/s, 400 requests (every request after an
#     idle gap of 5 ms: the adaptive loop's deepest sleep).
# Figures: per server and mode the median over rounds of each, and the median of the per-round
# differences adaptive - busy of the p50s. Goal: idle CPU <= 2% with adaptive polling, p50 at
# low load close to busy polling. Printed as a table, appended to $BENCH_JSONL. Needs root.
set -uo pipefail
cd "$(dirname "$0")/../.."
B=${B:-build}
S=$(realpath "$B/splitnic")
ROUNDS=${BENCH_POLL_ROUNDS:-3}
IDLE_S=${BENCH_POLL_IDLE_S:-10}
N=${BENCH_POLL_N:-2000}
export BENCH_JSONL=${BENCH_JSONL:-$PWD/$B/bench.jsonl}
PY=/usr/bin/python3
MLP=$B/models/fmnist-bmlp.snm
IMG=/usr/share/datasets/fashion-mnist/t10k-images-idx3-ubyte.gz
. lab/netns.sh

[ "$(id -u)" = 0 ] || { echo "bench_poll: skip: not root (namespaces, af_packet)"; exit 0; }
netns_need_files bench_poll: "make all" "$S" "$B/splitnic-nic" "$B/splitnic-host" "$MLP" "$IMG"
tag=$$ tmp=$(mktemp -d) pid=
ns_c=snpc-$tag ns_d=snpd-$tag
HZ=$(getconf CLK_TCK)
cleanup() {
	netns_kill "$pid"
	netns_cleanup "/var/run/dpdk/snpl$tag" "$tmp"
}
trap cleanup EXIT
die() {
	echo "bench_poll: $*"
	tail -5 "$tmp/server.log" 2>/dev/null
	exit 1
}
{ netns_add "$ns_c" "$ns_d" && netns_direct "$ns_c" vd 10.92.2.2/24 "$ns_d" dw 10.92.2.1; } ||
	die "namespaces, veth: ${NETNS_WHY:-see above}"

start() { # SERVER MODE
	local poll=(--poll "$2")
	[ "$2" = sleep20 ] && poll=(--poll adaptive --idle-sleep-us 20)
	: >"$tmp/server.log"
	if [ "$1" = nic ]; then
		ip netns exec "$ns_d" "$B/splitnic-nic" -l 1 --no-huge -m 512 --file-prefix "snpl$tag" \
			--no-pci --vdev net_af_packet0,iface=dw \
			--vdev "net_memif0,role=server,socket=$tmp/memif.sock,socket-abstract=no" -- --model "$MLP" \
			--platform lcore --ip 10.92.2.1 "${poll[@]}" >"$tmp/server.log" 2>&1 &
		pid=$!
		netns_wait_log "$tmp/server.log" "^nic: forwarding" "$pid" splitnic-nic || die "$NETNS_WHY"
	else
		ip netns exec "$ns_d" "$B/splitnic-host" -l 1 --no-huge -m 512 --file-prefix "snpl$tag" \
			--no-pci --vdev net_af_packet0,iface=dw -- --model "$MLP:host-only" \
			--ip 10.92.2.1 "${poll[@]}" >"$tmp/server.log" 2>&1 &
		pid=$!
		netns_wait_log "$tmp/server.log" "^host: serving" "$pid" splitnic-host || die "$NETNS_WHY"
	fi
	sleep 1
}
stop() {
	netns_kill "$pid"
	pid=
	rm -rf "/var/run/dpdk/snpl$tag"
}
ticks() { awk '{print $14 + $15}' "/proc/$1/stat"; }
measure() { # SERVER MODE ROUND
	local t0 t1
	t0=$(ticks "$pid")
	sleep "$IDLE_S"
	t1=$(ticks "$pid")
	# a request lost on the way is counted, not fatal: exit status 3
	ip netns exec "$ns_c" taskset -c 0 "$S" client 10.92.2.1 --images "$IMG" --count "$N" \
		--outstanding 1 --timeout-ms 3000 --json >"$tmp/low.json" || [ $? -eq 3 ] ||
		die "client: $1 $2 low load"
	ip netns exec "$ns_c" taskset -c 0 "$S" client 10.92.2.1 --images "$IMG" --count 400 \
		--rate 200 --timeout-ms 3000 --json >"$tmp/sparse.json" || [ $? -eq 3 ] ||
		die "client: $1 $2 sparse"
	$PY -c 'import json,sys
l=json.load(open(sys.argv[1])); s=json.load(open(sys.argv[2]))
for c in (l, s):
    if c["responses"] < c["requests"]:
        print("  %s %s: %d of %d unanswered, errors %d, timeouts %d" % (sys.argv[3], sys.argv[4],
              c["requests"] - c["responses"], c["requests"], c["errors"]["total"], c["timeouts"]),
              file=sys.stderr)
print(*sys.argv[3:6], 100 * float(sys.argv[6]) / float(sys.argv[7]) / float(sys.argv[8]),
      l["latency_us"]["p50"], s["latency_us"]["p50"])' \
		"$tmp/low.json" "$tmp/sparse.json" "$1" "$2" "$3" "$((t1 - t0))" "$HZ" "$IDLE_S" \
		>>"$tmp/results" || die "client JSON"
}

for round in $(seq "$ROUNDS"); do
	echo "round $round of $ROUNDS"
	case $((round % 3)) in
	1) order="busy adaptive sleep20" ;;
	2) order="adaptive sleep20 busy" ;;
	*) order="sleep20 busy adaptive" ;;
	esac
	for srv in nic host; do
		for mode in $order; do
			start "$srv" "$mode"
			measure "$srv" "$mode" "$round"
			stop
		done
	done
done

$PY - "$tmp/results" "$ROUNDS" "$IDLE_S" "$N" <<'EOF'
import json, os, statistics as st, sys
rows = [l.split() for l in open(sys.argv[1])]
rounds, idle_s, n = (int(x) for x in sys.argv[2:5])
method = (f"tests/bench/bench_poll.sh: fmnist-bmlp, each server alone with -l 1 on CPU 1 "
          f"(net_af_packet on a veth), splitnic client on CPU 0; idle CPU = (utime + stime) from "
          f"/proc/PID/stat over {idle_s} s without traffic / CLK_TCK / {idle_s} s; p50 low = closed "
          f"loop 1 outstanding, {n} requests; p50 sparse = open loop 200 requests/s, 400 requests; "
          f"--poll adaptive (and with --idle-sleep-us 20: sleep20) against --poll busy, each "
          f"started fresh, median over {rounds} "
          f"interleaved rounds (differences: median of per-round differences)")
label = {"nic": "splitnic-nic stand-alone", "host": "splitnic-host host-only"}
print(f"{'server':26s} {'mode':9s} {'idle CPU %':>10s} {'p50 low us':>11s} {'p50 sparse us':>14s}")
with open(os.environ["BENCH_JSONL"], "a") as f:
    def put(name, v, unit):
        f.write(json.dumps({"name": name, "value": round(v, 2), "unit": unit, "method": method}) + "\n")
    for s in ("nic", "host"):
        get = lambda m, r, i: float(next(x for x in rows if x[0] == s and x[1] == m
                                         and x[2] == str(r))[3 + i])
        rs = range(1, rounds + 1)
        for m in ("busy", "adaptive", "sleep20"):
            cpu, low, sparse = (st.median(get(m, r, i) for r in rs) for i in range(3))
            print(f"{label[s]:26s} {m:9s} {cpu:10.2f} {low:11.1f} {sparse:14.1f}")
            put(f"poll_{s}_{m}_idle_cpu", cpu, "%")
            put(f"poll_{s}_{m}_p50_low", low, "us")
            put(f"poll_{s}_{m}_p50_sparse", sparse, "us")
        for m, tag in (("adaptive", ""), ("sleep20", "_sleep20")):
            dl = st.median(get(m, r, 1) - get("busy", r, 1) for r in rs)
            ds = st.median(get(m, r, 2) - get("busy", r, 2) for r in rs)
            print(f"{label[s]:26s} {m} - busy: p50 low {dl:+.1f} us, p50 sparse {ds:+.1f} us")
            put(f"poll_{s}_p50_low_diff{tag}", dl, "us")
            put(f"poll_{s}_p50_sparse_diff{tag}", ds, "us")
print("goal: idle CPU <= 2% with --poll adaptive; p50 at low load close to --poll busy")
print("method: " + method)
EOF
