#!/usr/bin/env bash
# Forwarding rate of splitnic-nic, wire -> host, with and without an inference load below the
# chain's capacity, as a ratio; and, separately, forwarding and inference at saturation.
#
# Method: a DPDK self-test, no kernel in the path. The wire port is net_pcap replaying a capture
# in a loop (infinite_rx=1; responses and errors go to tx_pcap=/dev/null), the host port is
# net_null (discards, receives nothing). Non-inference frames are 128-byte UDP datagrams;
# inference frames are REQUESTs for the bundled MLP (Fashion-MNIST images). The main lcore
# forwards and dispatches, the chain (platform lcore, E executors) runs on the worker lcore.
# Since the replay runs as fast as the main lcore reads, a capture with one REQUEST per k frames
# offers F/k inferences/s at a forwarding rate F.
#   1. idle: only non-inference frames: the forwarding rate F0;
#   2. saturation: one REQUEST per 64 frames, many times what the chain can answer: it answers its
#      capacity C (the queue of 64 stays full: ERROR busy for the rest) while the main lcore
#      still has time to forward: the forwarding rate at saturation;
#   3. load: k = F / (LOAD x C), F the larger of F0 and the forwarding rate at saturation,
#      LOAD = BENCH_NIC_LOAD (default 0.5): an inference load of at most about 50% of the
#      capacity (forwarding under load is no faster than F; the requests offered and answered,
#      their fraction of C, and ERROR busy are reported; at most 4,000 frames per REQUEST);
#   4. BENCH_NIC_ROUNDS (default 3) rounds of an idle run and a load run, the order alternating;
#      the figure is the median of the per-round ratios (load / idle) with its min and max.
# Each run lasts BENCH_NIC_SECONDS (default 3); rates come from splitnic-nic's counters
# (forwarded_to_host, answered, requests, error_busy) over the run. Needs no root.
#   usage: bench_nic_fwd.sh [SPLITNIC-NIC] [MODEL]
set -euo pipefail
cd "$(dirname "$0")/../.."
B=${B:-build}
NIC=${1:-$B/splitnic-nic}
MODEL=${2:-$B/models/fmnist-bmlp.snm}
SECS=${BENCH_NIC_SECONDS:-3}
EXEC=${BENCH_NIC_EXECUTORS:-16}
ROUNDS=${BENCH_NIC_ROUNDS:-3}
LOAD=${BENCH_NIC_LOAD:-0.5}
IMG=/usr/share/datasets/fashion-mnist/t10k-images-idx3-ubyte.gz
export BENCH_JSONL=${BENCH_JSONL:-$PWD/$B/bench.jsonl}
PY=/usr/bin/python3
for f in "$NIC" "$MODEL" "$IMG"; do
	[ -e "$f" ] || { echo "bench_nic_fwd: $f missing (make all)"; exit 1; }
done
tmp=$(mktemp -d)
trap 'rm -rf "$tmp" "/var/run/dpdk/snbench$$idle" "/var/run/dpdk/snbench$$load"' EXIT

# capture NAME K: one REQUEST per K frames (K = 0: none); at most 4,000 frames (net_pcap holds a
# looped capture in mbufs)
capture() {
	$PY - "$tmp/$1.pcap" "$2" "$IMG" <<'PYEOF'
import gzip, struct, sys
out, k, images = sys.argv[1], int(sys.argv[2]), sys.argv[3]
raw = gzip.open(images).read()[16:]
def csum(b):
    s = sum(struct.unpack(f">{len(b) // 2}H", b))
    while s >> 16:
        s = (s & 0xFFFF) + (s >> 16)
    return ~s & 0xFFFF
def frame(dmac, dip, sport, dport, payload):
    udp = struct.pack(">HHHH", sport, dport, 8 + len(payload), 0) + payload
    ip = struct.pack(">BBHHHBBH4s4s", 0x45, 0, 20 + len(udp), 0, 0, 64, 17, 0,
                     bytes([10, 88, 0, 2]), bytes(dip))
    ip = ip[:10] + struct.pack(">H", csum(ip)) + ip[12:]
    return bytes.fromhex(dmac) + bytes.fromhex("020000000002") + b"\x08\x00" + ip + udp
def fwd(i):
    return frame("020000000003", [10, 88, 0, 3], 5000 + i % 64, 9999, b"x" * 86)
def req(i):
    hdr = struct.pack(">HBBHHIHHQII", 0x534E, 1, 1, 64, 784, 0, 0, 0, i, 784, 0)
    ten = struct.pack(">BBHIIIIIiI", 1, 0, 0, 1, 28, 28, 784, 0, 0, 0)
    return frame("020000000001", [10, 88, 0, 1], 4000, 21326,
                 hdr + ten + raw[784 * i:784 * (i + 1)])
if k == 0:
    frames = [fwd(i) for i in range(1000)]
else:
    if k > 4000:
        sys.exit(f"one REQUEST per {k} frames: more than a capture of 4,000 frames holds")
    frames = []
    for r in range(max(1, 4000 // k)):
        frames.append(req(r % 1000))
        frames.extend(fwd(r * k + j) for j in range(k - 1))
with open(out, "wb") as f:
    f.write(struct.pack("<IHHiIII", 0xA1B2C3D4, 2, 4, 0, 0, 65535, 1))
    for fr in frames:
        f.write(struct.pack("<IIII", 0, 0, len(fr), len(fr)) + fr)
PYEOF
}

run() { # run NAME PCAP: splitnic-nic for SECS seconds; counters in $tmp/NAME.stats
	local rc=0
	"$NIC" -l 0-1 --no-huge -m 512 --file-prefix "snbench$$$1" --no-pci --no-telemetry \
		--log-level=3 \
		--vdev "net_pcap0,rx_pcap=$tmp/$2,tx_pcap=/dev/null,infinite_rx=1" \
		--vdev net_null0,no-rx=1 \
		-- --model "$MODEL" --executors "$EXEC" --duration "$SECS" --ip 10.89.9.1 \
		--stats-file "$tmp/$1.stats" >"$tmp/$1.log" 2>&1 || rc=$?
	rm -rf "/var/run/dpdk/snbench$$$1"
	[ "$rc" -eq 0 ] || { echo "bench_nic_fwd: splitnic-nic failed:"; tail -5 "$tmp/$1.log"; exit 1; }
}
stat() { awk -v k="$2" '$1 == k { print $2 }' "$tmp/$1.stats"; }

capture idle 0
capture sat 64
run idle0 idle.pcap
run sat sat.pcap
f0=$(($(stat idle0 forwarded_to_host) > $(stat sat forwarded_to_host) ? $(stat idle0 forwarded_to_host) : $(stat sat forwarded_to_host)))
cap=$(stat sat answered)
k=$($PY -c "import sys; f, c, l = (float(x) for x in sys.argv[1:]); print(min(4000, max(2, round(f / (l * c)))) if c else 0)" "$f0" "$cap" "$LOAD")
[ "$k" -gt 0 ] || { echo "bench_nic_fwd: the chain answered nothing at saturation"; exit 1; }
capture load "$k"
for r in $(seq "$ROUNDS"); do
	if [ $((r % 2)) -eq 1 ]; then
		run "idle$r" idle.pcap
		run "load$r" load.pcap
	else
		run "load$r" load.pcap
		run "idle$r" idle.pcap
	fi
done
{
	echo "sat $(stat sat forwarded_to_host) $(stat sat answered) $(stat sat requests) $(stat sat error_busy)"
	for r in $(seq "$ROUNDS"); do
		echo "round $(stat "idle$r" forwarded_to_host) $(stat "load$r" forwarded_to_host) $(stat "load$r" answered) $(stat "load$r" requests) $(stat "load$r" error_busy)"
	done
} >"$tmp/figures"
$PY - "$tmp/figures" "$SECS" "$EXEC" "$k" "$LOAD" <<'PYEOF'
import json, os, statistics, sys
rows = [l.split() for l in open(sys.argv[1])]
secs, ex, k, load = float(sys.argv[2]), int(sys.argv[3]), int(sys.argv[4]), float(sys.argv[5])
sat = [float(x) for x in rows[0][1:]]
rounds = [[float(x) for x in r[1:]] for r in rows[1:]]
cap = sat[1] / secs
base = "splitnic-nic, net_pcap replay (infinite_rx) -> net_null, 128-byte UDP frames, " \
       f"{secs:.0f} s per run, main lcore forwards, chain of {ex} executors on a worker lcore"
def rec(name, value, unit, method):
    print(f"{name:<44} {value:12.3f} {unit:<10} {method}")
    with open(os.environ["BENCH_JSONL"], "a") as f:
        f.write(json.dumps({"name": name, "value": value, "unit": unit, "method": method}) + "\n")
ratios = [ld / idle if idle else 0.0 for idle, ld, *_ in rounds]
idle = statistics.median(r[0] for r in rounds) / secs
loaded = statistics.median(r[1] for r in rounds) / secs
offered = statistics.median(r[3] + r[4] for r in rounds) / secs
answered = statistics.median(r[2] for r in rounds) / secs
busy = sum(r[4] for r in rounds)
m = (f"{base}; load: 1 REQUEST (bundled MLP) per {k} frames, at most {load:.0%} of the chain's "
     f"capacity measured first; median of {len(rounds)} interleaved rounds "
     f"(ratio min {min(ratios):.3f}, max {max(ratios):.3f})")
rec("nic forwarding rate, no inference", idle / 1e6, "Mpps", m)
rec("nic forwarding rate, inference load", loaded / 1e6, "Mpps", m)
rec("nic forwarding ratio, load / no load", statistics.median(ratios), "ratio", m)
rec("nic inferences offered under load", offered, "req/s", m)
rec("nic inferences answered under load", answered, "req/s", m)
rec("nic inference load, fraction of capacity", answered / cap if cap else 0.0, "ratio",
    f"answered under load / answered at saturation; {busy:.0f} ERROR busy in all load runs")
ms = (f"{base}; saturation: 1 REQUEST per 64 frames ({(sat[2] + sat[3]) / secs:.0f} offered/s), "
      f"the queue of 64 full ({sat[3] / secs:.0f} ERROR busy/s)")
rec("nic chain capacity at saturation", cap, "req/s", ms)
rec("nic forwarding rate at saturation", sat[0] / secs / 1e6, "Mpps", ms)
PYEOF
