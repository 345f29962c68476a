#!/usr/bin/env bash
# What the metrics endpoint costs the packet path: splitnic-host's capacity while its
# /metrics is scraped hard, against the same server not scraped, as a ratio.
#
# Method: the topology of tests/integration/test_host_paths.sh (front-end namespace, veth,
# splitnic-nic on lcore 0 with net_af_packet + net_memif server, splitnic-host on lcore 1 with
# net_memif client, both --no-huge), the bundled binary CNN host-only. BENCH_METRICS_ROUNDS
# rounds (default 5), each one run of every configuration in turn, the server restarted for
# each: requests/s at saturation (`splitnic client`, closed loop, 32 outstanding,
# BENCH_METRICS_N images, default 3000):
#   plain      splitnic-host with --metrics-port, nobody scraping;
#   scraped    the same while a scraper fetches /metrics every 10 ms (100 scrapes a second,
#              1,500 times Prometheus's default rate);
#   base       (only with BENCH_METRICS_BASE=another splitnic-host, e.g. one built from the
#              commit before these changes) that binary, without --metrics-port.
# The figure: the median over rounds of scraped / plain (and plain / base), per-round ratios.
# Appended to $BENCH_JSONL as {"name","value","unit","method"}. Needs root; without it prints a
# skip line and appends nothing.
#   usage: bench_metrics.sh [BUILD-DIR]
set -uo pipefail
cd "$(dirname "$0")/../.."
B=${1:-${B:-build}}
S=$(realpath "$B/splitnic")
NIC=$B/splitnic-nic
HOST=$B/splitnic-host
BASE=${BENCH_METRICS_BASE:-}
CNN=$B/models/fmnist-bcnn.snm
N=${BENCH_METRICS_N:-3000}
ROUNDS=${BENCH_METRICS_ROUNDS:-5}
export BENCH_JSONL=${BENCH_JSONL:-$PWD/$B/bench.jsonl}
IMG=/usr/share/datasets/fashion-mnist/t10k-images-idx3-ubyte.gz
PY=/usr/bin/python3
. lab/netns.sh

if [ "$(id -u)" != 0 ]; then
	echo "bench_metrics: skip: not root (needs network namespaces and af_packet)"
	exit 0
fi
netns_need_files bench_metrics: "make all" "$S" "$NIC" "$HOST" "$CNN" "$IMG"
tag=$$ tmp=$(mktemp -d) nic_pid= host_pid= scr_pid=
ns_c=snbm-cli-$tag ns_n=snbm-nic-$tag
trap 'netns_kill "$scr_pid" "$host_pid" "$nic_pid"; netns_cleanup "/var/run/dpdk/snbmn$tag" "/var/run/dpdk/snbmh$tag" "$tmp"' EXIT
die() {
	echo "bench_metrics: $*"
	tail -5 "$tmp/nic.log" "$tmp/host.log" 2>/dev/null
	exit 1
}

netns_wire "$ns_c" "$ns_n" 10.88.7.2/24 || die "namespaces and veth: $NETNS_WHY"
K=$(netns_split "$S" "$CNN") || die "no flatten in $CNN"
ip netns exec "$ns_n" "$NIC" -l 0 --no-huge -m 512 --file-prefix "snbmn$tag" --no-pci \
	--vdev net_af_packet0,iface=vw \
	--vdev "net_memif0,role=server,socket=$tmp/memif.sock,socket-abstract=no" -- \
	--model "$CNN@$K" --ip 10.88.7.1 --notify-host >"$tmp/nic.log" 2>&1 &
nic_pid=$!
netns_wait_log "$tmp/nic.log" "^nic: forwarding" "" splitnic-nic || die "$NETNS_WHY"

# run CONFIG: one saturation run, its requests/s on stdout
run() {
	local bin=$HOST args=(--metrics-port 9120 --metrics-addr 127.0.0.1)
	[ "$1" = base ] && { bin=$BASE; args=(); }
	ip netns exec "$ns_n" "$bin" -l 1 --no-huge -m 512 --file-prefix "snbmh$tag" --no-pci \
		--vdev "net_memif0,role=client,socket=$tmp/memif.sock,socket-abstract=no" -- \
		--model "$CNN:host-only" --ip 10.88.7.1 "${args[@]}" >"$tmp/host.log" 2>&1 &
	host_pid=$!
	netns_wait_log "$tmp/host.log" "^host: serving" "" splitnic-host || die "splitnic-host ($1)"
	sleep 1
	if [ "$1" = scraped ]; then
		ip netns exec "$ns_n" "$PY" -c '
import time, urllib.request
while True:
    urllib.request.urlopen("http://127.0.0.1:9120/metrics").read()
    time.sleep(0.01)' 2>/dev/null &
		scr_pid=$!
	fi
	ip netns exec "$ns_c" "$S" client 10.88.7.1 --images "$IMG" --count "$N" --outstanding 32 \
		--timeout-ms 3000 --json >"$tmp/sat.json" || [ $? -eq 3 ] || die "client ($1)"
	netns_kill "$scr_pid"
	scr_pid=
	kill -TERM "$host_pid" && wait "$host_pid"
	host_pid=
	$PY -c 'import json, sys; print(json.load(open(sys.argv[1]))["throughput_rps"])' "$tmp/sat.json"
}

configs="plain scraped"
[ -n "$BASE" ] && configs="base plain scraped"
for r in $(seq "$ROUNDS"); do
	for c in $configs; do
		echo "$r $c $(run "$c")" | tee -a "$tmp/rounds"
	done
done
$PY - "$tmp/rounds" "$N" "$ROUNDS" <<'EOF'
import json, os, statistics, sys
rows = [l.split() for l in open(sys.argv[1])]
n, rounds = sys.argv[2], int(sys.argv[3])
by = {}
for r, c, v in rows:
    by.setdefault(int(r), {})[c] = float(v)
method = (f"splitnic-host host-only fmnist-bcnn on lcore 1 behind splitnic-nic (memif), closed loop "
          f"32 outstanding, {n} images per run; {rounds} rounds of every configuration in turn, "
          f"restarted each run; median of per-round ratios; scraped: /metrics fetched every 10 ms")
out = []
def ratio(name, a, b, what):
    rs = [by[r][a] / by[r][b] for r in by if a in by[r] and b in by[r] and by[r][b] > 0]
    if rs:
        v = statistics.median(rs)
        print(f"{what}: {v:.3f} (per round: {', '.join(f'{x:.3f}' for x in rs)})")
        out.append((name, v, "ratio"))
ratio("host_capacity_scraped_vs_plain", "scraped", "plain",
      "splitnic-host capacity scraped every 10 ms / not scraped")
ratio("host_capacity_vs_base", "plain", "base",
      "splitnic-host capacity, this build / BENCH_METRICS_BASE")
for c in ("plain", "scraped", "base"):
    vs = [by[r][c] for r in by if c in by[r]]
    if vs:
        print(f"{c}: median {statistics.median(vs):.0f} requests/s")
with open(os.environ["BENCH_JSONL"], "a") as f:
    for name, v, unit in out:
        f.write(json.dumps({"name": name, "value": round(v, 3), "unit": unit, "method": method}) + "\n")
EOF
