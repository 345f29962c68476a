#!/usr/bin/env bash
# splitnic-host through the packet path against in-process compute, per mode, as ratios.
#
# Method: the topology of tests/integration/test_host_paths.sh (front-end namespace, veth,
# splitnic-nic on lcore 0 with net_af_packet + net_memif server, splitnic-host on lcore 1 with
# net_memif client, both --no-huge), the bundled binary CNN. Per mode (coproc, host-only,
# fallback):
#   - end-to-end latency p50/p99: `splitnic client` closed loop, 1 outstanding, BENCH_HOST_N
#     images (default 2000), round trip measured by the front-end;
#   - in-process compute latency of the same model: `splitnic run` (CPU kernels, batch 1, one
#     thread) on the same images while no server runs (before splitnic-nic starts: the DPDK
#     servers busy-poll their lcores, which would slow the baseline), p50/p99; the overhead
#     ratio = packet path / in-process;
#   - requests/s at saturation: closed loop with 32 outstanding (no errors expected: the queue
#     is 64), responses / duration.
# Figures are appended to $BENCH_JSONL as {"name","value","unit","method"}. Needs root
# (namespaces); without it prints a skip line and appends nothing.
#   usage: bench_host.sh [BUILD-DIR]
set -uo pipefail
cd "$(dirname "$0")/../.."
B=${1:-${B:-build}}
S=$(realpath "$B/splitnic")
NIC=$B/splitnic-nic
HOST=$B/splitnic-host
CNN=$B/models/fmnist-bcnn.snm
N=${BENCH_HOST_N:-2000}
export BENCH_JSONL=${BENCH_JSONL:-$PWD/$B/bench.jsonl}
IMG=/usr/share/datasets/fashion-mnist/t10k-images-idx3-ubyte.gz
PY=/usr/bin/python3
. tests/integration/netns.sh

if [ "$(id -u)" != 0 ]; then
	echo "bench_host: skip: not root (needs network namespaces and af_packet)"
	exit 0
fi
netns_need_files bench_host: "make all" "$S" "$NIC" "$HOST" "$CNN" "$IMG"
tag=$$ tmp=$(mktemp -d) nic_pid= host_pid=
ns_c=snbh-cli-$tag ns_n=snbh-nic-$tag
trap 'netns_kill "$host_pid" "$nic_pid"; netns_cleanup "/var/run/dpdk/snbn$tag" "/var/run/dpdk/snbh$tag" "$tmp"' EXIT
die() {
	echo "bench_host: $*"
	tail -5 "$tmp/nic.log" "$tmp/host.log" 2>/dev/null
	exit 1
}

netns_add "$ns_c" "$ns_n" || die "ip netns add"
netns_veth "$ns_c" vc "$ns_n" vw || die "veth"
netns_link "$ns_c" vc 10.88.3.2/24
netns_link "$ns_n" vw
netns_tx_csum_off "$ns_c" vc
K=$("$S" inspect "$CNN" --ops | awk '/compiled ops:/ {on = 1} on && $2 == "flatten" {print $1 + 1; exit}')

# the in-process baseline while no server runs
"$S" run "$CNN" --images "$IMG" --count "$N" --json >"$tmp/inproc.json" || die "splitnic run"

ip netns exec "$ns_n" "$NIC" -l 0 --no-huge -m 512 --file-prefix "snbn$tag" --no-pci \
	--vdev net_af_packet0,iface=vw \
	--vdev "net_memif0,role=server,socket=$tmp/memif.sock,socket-abstract=no" -- \
	--model "$CNN@$K" --ip 10.88.3.1 --notify-host >"$tmp/nic.log" 2>&1 &
nic_pid=$!
netns_wait_log "$tmp/nic.log" "^nic: forwarding" "" splitnic-nic || die "$NETNS_WHY"

for mode in coproc host-only fallback; do
	spec="$CNN:$mode"
	[ "$mode" = host-only ] || spec="$CNN:$mode:$K"
	ip netns exec "$ns_n" "$HOST" -l 1 --no-huge -m 512 --file-prefix "snbh$tag" --no-pci \
		--vdev "net_memif0,role=client,socket=$tmp/memif.sock,socket-abstract=no" -- \
		--model "$spec" --ip 10.88.3.1 >"$tmp/host.log" 2>&1 &
	host_pid=$!
	netns_wait_log "$tmp/host.log" "^host: serving" "" splitnic-host ||
		die "splitnic-host did not start ($mode)"
	sleep 1
	ip netns exec "$ns_c" "$S" client 10.88.3.1 --images "$IMG" --count "$N" --outstanding 1 \
		--timeout-ms 3000 --json >"$tmp/lat.json" || die "client ($mode, latency)"
	# at saturation ERROR busy answers are expected: exit status 3 is not a failure here
	ip netns exec "$ns_c" "$S" client 10.88.3.1 --images "$IMG" --count "$N" --outstanding 32 \
		--timeout-ms 3000 --json >"$tmp/sat.json" || [ $? -eq 3 ] ||
		die "client ($mode, saturation)"
	kill -TERM "$host_pid" && wait "$host_pid"
	host_pid=
	$PY - "$mode" "$tmp/lat.json" "$tmp/sat.json" "$tmp/inproc.json" "$N" <<'EOF'
import json, os, sys
mode, lat, sat, inp, n = sys.argv[1], *(json.load(open(f)) for f in sys.argv[2:5]), int(sys.argv[5])
tag = mode.replace("-", "_")
ratio50 = lat["latency_us"]["p50"] / inp["latency_us"]["p50"]
ratio99 = lat["latency_us"]["p99"] / inp["latency_us"]["p99"]
m_lat = (f"splitnic client closed loop 1 outstanding, {n} Fashion-MNIST images, fmnist-bcnn {mode} "
         f"through veth+af_packet splitnic-nic (lcore 0) + memif splitnic-host (lcore 1), 2-core box")
m_in = f"splitnic run fmnist-bcnn, CPU kernels batch 1 one thread, same {n} images, same run, no server running"
m_sat = f"splitnic client closed loop 32 outstanding, {n} images, responses/duration; {mode}"
rows = [
    (f"host_{tag}_e2e_p50", lat["latency_us"]["p50"], "us", m_lat),
    (f"host_{tag}_e2e_p99", lat["latency_us"]["p99"], "us", m_lat),
    (f"host_{tag}_inproc_p50", inp["latency_us"]["p50"], "us", m_in),
    (f"host_{tag}_inproc_p99", inp["latency_us"]["p99"], "us", m_in),
    (f"host_{tag}_overhead_ratio_p50", ratio50, "x", "e2e p50 / in-process p50 (" + m_lat + ")"),
    (f"host_{tag}_overhead_ratio_p99", ratio99, "x", "e2e p99 / in-process p99"),
    (f"host_{tag}_saturation_rps", sat["throughput_rps"], "req/s", m_sat),
]
print(f"{mode:10s} e2e p50 {lat['latency_us']['p50']:8.1f} us p99 {lat['latency_us']['p99']:8.1f} us | "
      f"in-process p50 {inp['latency_us']['p50']:7.1f} us p99 {inp['latency_us']['p99']:7.1f} us | "
      f"overhead x{ratio50:.2f} (p50) x{ratio99:.2f} (p99) | saturation {sat['throughput_rps']:.0f} req/s "
      f"({sat['responses']}/{sat['requests']} answered, {sat['errors']['total']} errors); "
      f"server mean ns " + " ".join(f"{k}={v:.0f}" for k, v in lat["server_mean_ns"].items() if v))
with open(os.environ["BENCH_JSONL"], "a") as f:
    for name, v, unit, method in rows:
        f.write(json.dumps({"name": name, "value": round(v, 3), "unit": unit, "method": method}) + "\n")
EOF
done
# --- the packet path against kern_forward on the same core: host-only, one worker lcore ----------
# splitnic-host -l 0-1 facing the front-end directly (net_af_packet on a second veth, no
# splitnic-nic): lcore 0 receives and answers, lcore 1 (the one worker) computes; the client is
# pinned to CPU 0. The in-process baseline is `splitnic run` (kern_forward, batch 1, one thread)
# pinned to CPU 1 while no server runs.
kill -TERM "$nic_pid" && wait "$nic_pid"
nic_pid=
netns_veth "$ns_c" vc2 "$ns_n" vw2 || die "veth 2"
netns_link "$ns_c" vc2 10.88.4.2/24
netns_link "$ns_n" vw2
netns_tx_csum_off "$ns_c" vc2
mac2=$(ip netns exec "$ns_n" cat /sys/class/net/vw2/address)
ip -n "$ns_c" neigh replace 10.88.4.1 lladdr "$mac2" dev vc2 nud permanent || die "neighbour"
taskset -c 1 "$S" run "$CNN" --images "$IMG" --count "$N" --json >"$tmp/core1.json" || die "splitnic run"
ip netns exec "$ns_n" "$HOST" -l 0-1 --no-huge -m 512 --file-prefix "snbh$tag" --no-pci \
	--vdev net_af_packet0,iface=vw2 -- --model "$CNN:host-only" --ip 10.88.4.1 >"$tmp/host.log" 2>&1 &
host_pid=$!
netns_wait_log "$tmp/host.log" "^host: serving" "" splitnic-host || die "splitnic-host (one worker)"
sleep 1
ip netns exec "$ns_c" taskset -c 0 "$S" client 10.88.4.1 --images "$IMG" --count "$N" \
	--outstanding 1 --timeout-ms 3000 --json >"$tmp/w1lat.json" || die "client (one worker, latency)"
ip netns exec "$ns_c" taskset -c 0 "$S" client 10.88.4.1 --images "$IMG" --count "$N" \
	--outstanding 16 --timeout-ms 3000 --json >"$tmp/w1sat.json" || die "client (one worker, saturation)"
kill -TERM "$host_pid" && wait "$host_pid"
host_pid=
$PY - "$tmp/core1.json" "$tmp/w1lat.json" "$tmp/w1sat.json" "$N" <<'EOF'
import json, os, sys
inp, lat, sat, n = (*(json.load(open(f)) for f in sys.argv[1:4]), int(sys.argv[4]))
ratio = sat["throughput_rps"] / inp["images_per_s"]
added = lat["latency_us"]["p50"] - inp["latency_us"]["p50"]
m = (f"fmnist-bcnn host-only, splitnic-host -l 0-1 (RX/TX lcore 0, one worker lcore 1) on "
     f"net_af_packet, client pinned to CPU 0, {n} images; in-process: splitnic run (kern_forward, "
     f"batch 1) pinned to CPU 1 with no server running, same run")
rows = [("host_w1_saturation_rps", sat["throughput_rps"], "req/s", m + "; closed loop 16 outstanding"),
        ("host_w1_inproc_rps", inp["images_per_s"], "req/s", m),
        ("host_w1_rps_ratio", ratio, "x", "packet path req/s at saturation / in-process; target >= 0.9; " + m),
        ("host_w1_added_p50", added, "us", "p50 client round trip (1 outstanding) - p50 in-process; " + m)]
print(f"one worker: packet path {sat['throughput_rps']:.0f} req/s ({sat['responses']}/{sat['requests']}, "
      f"{sat['errors']['total']} errors) vs in-process {inp['images_per_s']:.0f}/s: ratio {ratio:.3f} "
      f"(target >= 0.9); p50 {lat['latency_us']['p50']:.1f} us vs {inp['latency_us']['p50']:.1f} us: "
      f"added {added:.1f} us")
with open(os.environ["BENCH_JSONL"], "a") as f:
    for name, v, unit, method in rows:
        f.write(json.dumps({"name": name, "value": round(v, 3), "unit": unit, "method": method}) + "\n")
EOF
echo "method: see the header of tests/bench/bench_host.sh; figures appended to $BENCH_JSONL"
