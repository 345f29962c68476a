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
# Then the packet path against kern_forward on the same core, and one worker lcore against two
# (the last section, its method there). Figures are appended to $BENCH_JSONL as
# {"name","value","unit","method"}. Needs root (namespaces); without it prints a skip line and
# appends nothing. BENCH_HOST_MODES="host-only": only those modes in the first section.
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
. lab/netns.sh

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
	[ -n "$host_pid" ] && dpdk_telemetry "snbh$tag" /splitnic/host/stats | tr ',' '\n' | grep -v ': 0$'
	exit 1
}

netns_wire "$ns_c" "$ns_n" 10.88.3.2/24 || die "namespaces and veth: $NETNS_WHY"
K=$(netns_split "$S" "$CNN") || die "no flatten in $CNN"

# the in-process baseline while no server runs
"$S" run "$CNN" --images "$IMG" --count "$N" --json >"$tmp/inproc.json" || die "splitnic run"

ip netns exec "$ns_n" "$NIC" -l 0 --no-huge -m 512 --file-prefix "snbn$tag" --no-pci \
	--vdev net_af_packet0,iface=vw \
	--vdev "net_memif0,role=server,socket=$tmp/memif.sock,socket-abstract=no" -- \
	--model "$CNN@$K" --ip 10.88.3.1 --notify-host >"$tmp/nic.log" 2>&1 &
nic_pid=$!
netns_wait_log "$tmp/nic.log" "^nic: forwarding" "" splitnic-nic || die "$NETNS_WHY"

for mode in ${BENCH_HOST_MODES-coproc host-only fallback}; do
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
# --- the packet path against kern_forward on the same core; one worker against two ------------
# splitnic-host facing the front-ends directly (net_af_packet on veths of their own, no
# splitnic-nic), fmnist-bcnn host-only. Three servers are started once and take turns: each is
# stopped (SIGSTOP: no CPU at all) while it is not measured, so that measurements interleave in
# BENCH_HOST_ROUNDS short rounds (default 9) and the load of a shared machine falls on all of
# them alike. Each round:
#   in-process  every server stopped: `splitnic run` (kern_forward, batch 1, one thread) pinned to
#               CPU 1 on N/2 images: images/s and p50;
#   one worker  server A, splitnic-host -l 1 (one lcore on CPU 1: it polls the port, computes and
#               answers, run to completion: the only busy-polling thread), the client pinned to
#               CPU 0 and its kernel's receive work too (RPS on its veth to CPU 0: delivering a
#               reply to the client's socket is the client's work, not the server's; the server's
#               own af_packet and veth work stays on CPU 1): p50 at low load (1 outstanding, N/8
#               images), req/s at saturation (16 outstanding, N/2 images); the worker's mean
#               compute per request from its counters at the end;
#   workers     one `splitnic client` over 16 sockets (16 flows, 32 outstanding, N/2 images,
#               unpinned) against server B, 1 worker (-l 0, qpairs=1), then server C, 2 workers
#               (-l 0-1, qpairs=2: two queue pairs, the kernel's fanout hash spreads the flows):
#               req/s at saturation. No NIC stage (host-only); the kernel's veth and af_packet
#               work, the client and the workers share the machine's two CPUs.
# Figures: medians over the rounds of the per-round values and ratios (every round printed).
kill -TERM "$nic_pid" && wait "$nic_pid"
nic_pid=
R=${BENCH_HOST_ROUNDS:-9}
declare -A pid
start_direct() { # NAME EAL-LCORES QPAIRS SUBNET: a server on its own veth, then stopped
	netns_direct "$ns_c" "c$1" "10.88.$4.2/24" "$ns_n" "w$1" "10.88.$4.1" || die "veth for $1: $NETNS_WHY"
	ip netns exec "$ns_n" "$HOST" $2 --no-huge -m 512 --file-prefix "snbh$1$tag" --no-pci \
		--vdev "net_af_packet0,iface=w$1,qpairs=$3" -- --model "$CNN:host-only" \
		--ip "10.88.$4.1" >"$tmp/host$1.log" 2>&1 &
	pid[$1]=$!
	netns_wait_log "$tmp/host$1.log" "^host: serving" "${pid[$1]}" splitnic-host || die "splitnic-host $1"
	sleep 0.5
	kill -STOP "${pid[$1]}"
}
flows() { # SUBNET OUT: one client, 16 flows
	ip netns exec "$ns_c" "$S" client "10.88.$1.1" --images "$IMG" --count "$((N / 2))" \
		--sockets 16 --outstanding 32 --timeout-ms 3000 --json >"$2" || die "client (workers)"
}
trap 'for p in "${pid[@]}"; do kill -CONT "$p"; done 2>/dev/null; netns_kill "${pid[@]}"; netns_cleanup /var/run/dpdk/snbh*"$tag" "/var/run/dpdk/snbn$tag" "$tmp"' EXIT
start_direct a "-l 1" 1 4
ip netns exec "$ns_c" sh -c 'echo 1 >/sys/class/net/ca/queues/rx-0/rps_cpus' || die "RPS on ca"
start_direct b "-l 0" 1 5
start_direct c "-l 0-1" 2 6
for r in $(seq "$R"); do
	taskset -c 1 "$S" run "$CNN" --images "$IMG" --count "$((N / 2))" --json \
		>"$tmp/r$r.inproc.json" || die "splitnic run"
	kill -CONT "${pid[a]}"
	ip netns exec "$ns_c" taskset -c 0 "$S" client 10.88.4.1 --images "$IMG" --count "$((N / 8))" \
		--outstanding 1 --timeout-ms 3000 --json >"$tmp/r$r.lat.json" || die "client (latency)"
	ip netns exec "$ns_c" taskset -c 0 "$S" client 10.88.4.1 --images "$IMG" --count "$((N / 2))" \
		--outstanding 16 --timeout-ms 3000 --json >"$tmp/r$r.sat.json" || die "client (saturation)"
	kill -STOP "${pid[a]}"
	kill -CONT "${pid[b]}"
	flows 5 "$tmp/r$r.w1.json"
	kill -STOP "${pid[b]}"
	kill -CONT "${pid[c]}"
	flows 6 "$tmp/r$r.w2.json"
	kill -STOP "${pid[c]}"
done
for k in a b c; do
	kill -CONT "${pid[$k]}"
	dpdk_telemetry "snbh$k$tag" /splitnic/host/stats >"$tmp/$k.stats" || die "telemetry $k"
	kill -TERM "${pid[$k]}" && wait "${pid[$k]}"
done
pid=()
$PY - "$tmp" "$R" "$N" <<'EOF'
import json, os, statistics, sys
tmp, R, n = sys.argv[1], int(sys.argv[2]), int(sys.argv[3])
J = lambda f: json.load(open(os.path.join(tmp, f)))
rows, per = [], {"ratio": [], "added": [], "sat": [], "inproc": [], "comp": [], "w1": [], "w2": [], "wr": []}
for r in range(1, R + 1):
    inp, lat, sat = J(f"r{r}.inproc.json"), J(f"r{r}.lat.json"), J(f"r{r}.sat.json")
    agg = {}
    for w in ("w1", "w2"):
        c = J(f"r{r}.{w}.json")
        agg[w] = c["throughput_rps"]
        if c["errors"]["total"] or c["timeouts"]:
            sys.exit(f"bench_host: round {r}, {w}: errors or timeouts")
    per["ratio"].append(sat["throughput_rps"] / inp["images_per_s"])
    per["added"].append(lat["latency_us"]["p50"] - inp["latency_us"]["p50"])
    per["sat"].append(sat["throughput_rps"])
    per["inproc"].append(inp["images_per_s"])
    per["w1"].append(agg["w1"])
    per["w2"].append(agg["w2"])
    per["wr"].append(agg["w2"] / agg["w1"])
    print(f"round {r}: in-process {inp['images_per_s']:.0f}/s p50 {inp['latency_us']['p50']:.1f} us | "
          f"one worker {sat['throughput_rps']:.0f} req/s ({sat['responses']}/{sat['requests']}), "
          f"ratio {per['ratio'][-1]:.3f}, p50 {lat['latency_us']['p50']:.1f} us (added "
          f"{per['added'][-1]:.1f} us) | 16 flows: 1 worker {agg['w1']:.0f} req/s, 2 workers "
          f"{agg['w2']:.0f} req/s, ratio {per['wr'][-1]:.2f}")
    if sat["errors"]["total"] or sat["timeouts"] or lat["errors"]["total"] or lat["timeouts"]:
        sys.exit(f"bench_host: round {r}: errors or timeouts")
med = {k: statistics.median(v) for k, v in per.items() if v}
st, ws = J("a.stats"), J("c.stats")
med["comp"] = st["worker_compute_ns"] / max(1, st["worker_requests"]) / 1e3
print(f"server A (one worker): {st['worker_requests']} requests, worker compute {med['comp']:.0f} "
      f"us/req; server C (two workers): per worker "
      f"{[ws[f'worker{i}_requests'] for i in range(ws['workers'])]}")
m1 = (f"fmnist-bcnn host-only, {R} interleaved rounds (servers SIGSTOPped when not measured), "
      f"medians of per-round values: splitnic-host -l 1 (one worker lcore on CPU 1: RX, compute, "
      f"TX run to completion) on net_af_packet, client and its veth's receive work (RPS) on CPU 0 "
      f"({n // 2} images, 16 outstanding; latency 1 outstanding, {n // 8} images); in-process: "
      f"splitnic run (kern_forward, batch 1) pinned to CPU 1 on {n // 2} images with every server "
      f"stopped, same round")
m2 = (f"fmnist-bcnn host-only (no NIC stage), {R} interleaved rounds, medians: one splitnic "
      f"client, 16 sockets, 32 outstanding, {n // 2} images, unpinned; splitnic-host -l 0 (1 "
      f"worker, 1 queue pair) vs -l 0-1 (2 workers, net_af_packet qpairs=2: the kernel's fanout "
      f"hash spreads the flows); clients, workers and the kernel's veth/af_packet work on the "
      f"same 2 CPUs; req/s at saturation")
rows = [("host_w1_saturation_rps", med["sat"], "req/s", m1),
        ("host_w1_inproc_rps", med["inproc"], "req/s", m1),
        ("host_w1_rps_ratio", med["ratio"], "x", "packet path req/s at saturation / in-process, "
         "median of per-round ratios; target >= 0.9; " + m1),
        ("host_w1_added_p50", med["added"], "us", "p50 client round trip (1 outstanding) - p50 "
         "in-process, median of rounds; " + m1),
        ("host_w1_worker_compute_us", med["comp"], "us", "worker_compute_ns / worker_requests "
         "over every round; " + m1),
        ("host_workers1_rps", med["w1"], "req/s", m2),
        ("host_workers2_rps", med["w2"], "req/s", m2),
        ("host_workers_ratio", med["wr"], "x", "2 workers / 1 worker, median of per-round "
         "ratios; " + m2)]
print(f"one worker: packet path {med['sat']:.0f} req/s vs in-process {med['inproc']:.0f}/s: ratio "
      f"{med['ratio']:.3f} (target >= 0.9); p50 added at low load {med['added']:.1f} us; worker "
      f"compute {med['comp']:.0f} us/req (medians of {R} rounds)")
print(f"workers: 1 worker {med['w1']:.0f} req/s, 2 workers {med['w2']:.0f} req/s: ratio "
      f"{med['wr']:.2f} (median of {R} rounds)")
with open(os.environ["BENCH_JSONL"], "a") as f:
    for name, v, unit, method in rows:
        f.write(json.dumps({"name": name, "value": round(v, 3), "unit": unit, "method": method}) + "\n")
EOF
echo "method: see the header of tests/bench/bench_host.sh; figures appended to $BENCH_JSONL"
