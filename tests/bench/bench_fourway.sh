#!/usr/bin/env bash
# make bench: one front-end, four servers, the same two models. The 256-32-16-2 traffic MLP
# (u8, binary; split/arch/traffic-mlp.json with `splitnic gen` weights, seed 1) and fmnist-bmlp,
# answered by
#   xdp    the XDP program (`splitnic xdp attach`, native mode on a veth; one model at a time);
#   nic    splitnic-nic stand-alone, platform lcore (the chain on its one lcore, wall time); its
#          host port net_null with no-rx=1 (without it every poll of the host port returns a
#          burst of frames, which the NIC forwards to the wire: a cost on every turn of its
#          loop that is not the NIC's work);
#   host   splitnic-host host-only, facing the front-end on its veth (net_af_packet);
#   serve  `splitnic serve` on a kernel UDP socket.
# Each server has its own veth pair from the front-end's namespace and runs alone (the DPDK
# ones poll, busy while requests flow); the DPDK servers and `serve` on CPU 1, the client on
# CPU 0 (XDP runs where the frames arrive). Per round, for each server and model: `splitnic client` closed loop, one
# outstanding, BENCH_4W_N requests (default 2,000); BENCH_4W_ROUNDS interleaved rounds (default
# 3); the figure is the median over rounds of each p50 and p99. Printed as a table, appended to
# $BENCH_JSONL. Needs root; without it prints a skip line.
set -uo pipefail
cd "$(dirname "$0")/../.."
B=${B:-build}
S=$(realpath "$B/splitnic")
N=${BENCH_4W_N:-2000}
ROUNDS=${BENCH_4W_ROUNDS:-3}
export BENCH_JSONL=${BENCH_JSONL:-$PWD/$B/bench.jsonl}
PY=/usr/bin/python3
MLP=$B/models/fmnist-bmlp.snm
. lab/netns.sh

[ "$(id -u)" = 0 ] || { echo "bench_fourway: skip: not root (namespaces, XDP, af_packet)"; exit 0; }
netns_need_files bench_fourway: "make all" "$S" "$B/splitnic-nic" "$B/splitnic-host" "$MLP"
tag=$$ tmp=$(mktemp -d) pid=
ns_c=sn4c-$tag ns_x=sn4x-$tag ns_d=sn4d-$tag ns_s=sn4s-$tag
cleanup() {
	netns_kill "$pid"
	netns_cleanup "/var/run/dpdk/sn4n$tag" "/var/run/dpdk/sn4h$tag" "$tmp"
}
trap cleanup EXIT
die() {
	echo "bench_fourway: $*"
	tail -5 "$tmp/server.log" 2>/dev/null
	exit 1
}

"$S" gen split/arch/traffic-mlp.json -o "$tmp/t.npz" --seed 1 >/dev/null &&
	"$S" convert split/arch/traffic-mlp.json "$tmp/t.npz" -o "$tmp/traffic.snm" >/dev/null ||
	die "traffic MLP"
TRAFFIC=$tmp/traffic.snm

netns_add "$ns_c" "$ns_x" "$ns_d" "$ns_s" || die "ip netns add"
netns_no_ipv6 "$ns_c" "$ns_x" "$ns_d" "$ns_s"
netns_veth "$ns_c" vx "$ns_x" xx && netns_veth "$ns_c" vd "$ns_d" dw &&
	netns_veth "$ns_c" vs "$ns_s" ss || die "veth: $NETNS_WHY"
netns_link "$ns_c" vx 10.90.1.2/24
netns_link "$ns_x" xx 10.90.1.1/24
netns_link "$ns_c" vd 10.90.2.2/24
netns_link "$ns_d" dw
netns_link "$ns_c" vs 10.90.3.2/24
netns_link "$ns_s" ss 10.90.3.1/24
for i in "$ns_c vx" "$ns_x xx" "$ns_c vd" "$ns_c vs"; do netns_tx_csum_off $i || die "ethtool $i"; done
# splitnic-host answers no ARP: the front-end knows the DPDK port's MAC
ip -n "$ns_c" neigh replace 10.90.2.1 lladdr "$(ip netns exec "$ns_d" cat /sys/class/net/dw/address)" \
	dev vd nud permanent || die "neighbour"
ip netns exec "$ns_c" "$S" xdp pass vx --mode native >/dev/null || die "XDP_PASS on vx"

start_dpdk() { # BINARY PREFIX READY-RE ARGS...
	local bin=$1 pfx=$2 re=$3
	shift 3
	: >"$tmp/server.log"
	ip netns exec "$ns_d" "$B/$bin" -l 1 --no-huge -m 512 --file-prefix "$pfx" --no-pci "$@" \
		>"$tmp/server.log" 2>&1 &
	pid=$!
	netns_wait_log "$tmp/server.log" "$re" "$pid" "$bin" || die "$NETNS_WHY"
	sleep 0.5
}
stop() {
	netns_kill "$pid"
	pid=
	rm -rf "/var/run/dpdk/sn4n$tag" "/var/run/dpdk/sn4h$tag"
}
measure() { # SERVER MODEL-NAME ADDR MODEL-FILE
	ip netns exec "$ns_c" taskset -c 0 "$S" client "$3" --model "$4" --count "$N" --outstanding 1 \
		--timeout-ms 3000 --json >"$tmp/c.json" || die "client: $1 $2 exited $?"
	$PY -c 'import json,sys; c=json.load(open(sys.argv[1])); print(sys.argv[2], sys.argv[3], c["latency_us"]["p50"], c["latency_us"]["p99"], c["responses"])' \
		"$tmp/c.json" "$1" "$2" >>"$tmp/results" || die "client JSON"
}

for round in $(seq "$ROUNDS"); do
	echo "round $round of $ROUNDS"
	for m in traffic bmlp; do
		f=$TRAFFIC
		[ $m = bmlp ] && f=$MLP
		ip netns exec "$ns_x" "$S" xdp attach xx "$f" --mode native >/dev/null || die "xdp attach $m"
		measure xdp $m 10.90.1.1 "$f"
		ip netns exec "$ns_x" "$S" xdp detach xx >/dev/null
	done
	start_dpdk splitnic-nic "sn4n$tag" "^nic: forwarding" --vdev net_af_packet0,iface=dw \
		--vdev net_null0,no-rx=1 -- --model "$TRAFFIC" --model "$MLP" --platform lcore --ip 10.90.2.1
	measure nic traffic 10.90.2.1 "$TRAFFIC"
	measure nic bmlp 10.90.2.1 "$MLP"
	stop
	start_dpdk splitnic-host "sn4h$tag" "^host: serving" --vdev net_af_packet0,iface=dw -- \
		--model "$TRAFFIC:host-only" --model "$MLP:host-only" --ip 10.90.2.1
	measure host traffic 10.90.2.1 "$TRAFFIC"
	measure host bmlp 10.90.2.1 "$MLP"
	stop
	ip netns exec "$ns_s" taskset -c 1 "$S" serve --model "$TRAFFIC" --model "$MLP" \
		--bind 10.90.3.1 >"$tmp/server.log" 2>&1 &
	pid=$!
	netns_wait_log "$tmp/server.log" "^serve: listening" "$pid" "splitnic serve" || die "$NETNS_WHY"
	measure serve traffic 10.90.3.1 "$TRAFFIC"
	measure serve bmlp 10.90.3.1 "$MLP"
	stop
done

$PY - "$tmp/results" "$N" "$ROUNDS" <<'EOF'
import json, os, statistics, sys
rows = [l.split() for l in open(sys.argv[1])]
n, rounds = int(sys.argv[2]), int(sys.argv[3])
servers = ["xdp", "nic", "host", "serve"]
label = {"xdp": "XDP (splitnic xdp attach)", "nic": "splitnic-nic stand-alone (lcore)",
         "host": "splitnic-host host-only", "serve": "splitnic serve (kernel UDP)"}
method = (f"tests/bench/bench_fourway.sh: splitnic client closed loop, 1 outstanding, {n} requests, "
          f"each server alone on its own veth (DPDK servers and serve on CPU 1, client on CPU 0), "
          f"median of {rounds} interleaved rounds")
print(f"{'server':36s} {'traffic MLP p50':>16s} {'p99':>9s} {'fmnist-bmlp p50':>16s} {'p99':>9s}   (us)")
with open(os.environ["BENCH_JSONL"], "a") as f:
    for s in servers:
        cells = []
        for m in ("traffic", "bmlp"):
            r = [x for x in rows if x[0] == s and x[1] == m]
            p50 = statistics.median(float(x[2]) for x in r)
            p99 = statistics.median(float(x[3]) for x in r)
            cells += [p50, p99]
            for q, v in (("p50", p50), ("p99", p99)):
                f.write(json.dumps({"name": f"fourway_{s}_{m}_{q}", "value": round(v, 1),
                                    "unit": "us", "method": method}) + "\n")
        print(f"{label[s]:36s} {cells[0]:16.1f} {cells[1]:9.1f} {cells[2]:16.1f} {cells[3]:9.1f}")
print("method: " + method)
EOF
