#!/usr/bin/env bash
# Forwarding rate of splitnic-nic, wire -> host, with and without inference load, as a ratio.
#
# Method: a DPDK self-test, no kernel in the path. The wire port is net_pcap replaying a
# capture in a loop (infinite_rx=1; responses and errors go to tx_pcap=/dev/null), the host
# port is net_null (discards). `fwd.pcap` holds 1,000 non-inference UDP datagrams (128-byte
# frames); `load.pcap` holds the same 1,000 plus 100 REQUESTs for the bundled MLP (Fashion-MNIST
# images), so the executor chain (platform lcore, its own lcore) computes all the time while the
# main lcore forwards. Each run lasts BENCH_NIC_SECONDS (default 5); the rate is
# forwarded_to_host / duration from splitnic-nic's counters. Needs no root.
#   usage: bench_nic_fwd.sh [SPLITNIC-NIC] [MODEL]
set -euo pipefail
cd "$(dirname "$0")/../.."
B=${B:-build}
NIC=${1:-$B/splitnic-nic}
MODEL=${2:-$B/models/fmnist-bmlp.snm}
SECS=${BENCH_NIC_SECONDS:-5}
EXEC=${BENCH_NIC_EXECUTORS:-16}
export BENCH_JSONL=${BENCH_JSONL:-$PWD/$B/bench.jsonl}
PY=/usr/bin/python3
for f in "$NIC" "$MODEL"; do
	[ -e "$f" ] || { echo "bench_nic_fwd: $f missing (make all)"; exit 1; }
done
tmp=$(mktemp -d)
trap 'rm -rf "$tmp" "/var/run/dpdk/snbench$$idle" "/var/run/dpdk/snbench$$load"' EXIT

$PY - "$tmp" /usr/share/datasets/fashion-mnist/t10k-images-idx3-ubyte.gz <<'PYEOF'
import gzip, struct, sys
import logging
logging.getLogger("scapy.runtime").setLevel(logging.ERROR)
from scapy.all import Ether, IP, UDP, Raw, wrpcap
out, images = sys.argv[1], sys.argv[2]
raw = gzip.open(images).read()[16:]
eth = Ether(src="02:00:00:00:00:02", dst="02:00:00:00:00:03")
fwd = [eth / IP(src="10.88.0.2", dst="10.88.0.3") / UDP(sport=5000 + i % 64, dport=9999)
       / Raw(b"x" * 86) for i in range(1000)]
def req(i):
    hdr = struct.pack(">HBBHHIHHQII", 0x534E, 1, 1, 64, 784, 0, 0, 0, i, 784, 0)
    ten = struct.pack(">BBHIIIIIiI", 1, 0, 0, 1, 28, 28, 784, 0, 0, 0)
    return (Ether(src="02:00:00:00:00:02", dst="02:00:00:00:00:01")
            / IP(src="10.88.0.2", dst="10.88.0.1") / UDP(sport=4000, dport=21326)
            / Raw(hdr + ten + raw[784 * i:784 * (i + 1)]))
load = []
for i, p in enumerate(fwd):
    load.append(p)
    if i % 10 == 9:
        load.append(req(i // 10))
wrpcap(f"{out}/fwd.pcap", fwd)
wrpcap(f"{out}/load.pcap", load)
PYEOF

run() { # run NAME PCAP: forwarded datagrams per second
	"$NIC" -l 0-1 --no-huge -m 512 --file-prefix "snbench$$$1" --no-pci --no-telemetry \
		--log-level=3 \
		--vdev "net_pcap0,rx_pcap=$tmp/$2,tx_pcap=/dev/null,infinite_rx=1" --vdev net_null0 \
		-- --model "$MODEL" --executors "$EXEC" --duration "$SECS" \
		--stats-file "$tmp/$1.stats" >"$tmp/$1.log" 2>&1 ||
		{ echo "bench_nic_fwd: splitnic-nic failed:"; tail -5 "$tmp/$1.log"; exit 1; }
	awk -v s="$SECS" '$1 == "forwarded_to_host" { printf "%.0f\n", $2 / s }' "$tmp/$1.stats"
}
base=$(run idle fwd.pcap)
loaded=$(run load load.pcap)
answered=$(awk '$1 == "answered" { print $2 }' "$tmp/load.stats")
busy=$(awk '$1 == "error_busy" { print $2 }' "$tmp/load.stats")
$PY - "$base" "$loaded" "$answered" "$SECS" "$busy" "$EXEC" <<'PYEOF'
import os, sys
sys.path.insert(0, "tests/bench")
base, loaded, answered, secs, busy, ex = (float(x) for x in sys.argv[1:7])
method = ("splitnic-nic, net_pcap replay (infinite_rx) -> net_null, 128-byte UDP frames, "
          f"{secs:.0f} s per run, main lcore forwards, chain of {ex:.0f} executors on a worker "
          "lcore; load: 1 REQUEST per 10 frames (bundled MLP)")
def rec(name, value, unit):
    import json
    print(f"{name:<44} {value:12.3f} {unit:<10} {method}")
    with open(os.environ["BENCH_JSONL"], "a") as f:
        f.write(json.dumps({"name": name, "value": value, "unit": unit, "method": method}) + "\n")
rec("nic forwarding rate, no inference", base / 1e6, "Mpps")
rec("nic forwarding rate, inference load", loaded / 1e6, "Mpps")
rec("nic inferences answered under load", answered / secs, "req/s")
rec("nic forwarding ratio, load / no load", loaded / base if base else 0.0, "ratio")
print(f"  ({busy:.0f} requests answered with ERROR busy: the queue of 64 per model was full)")
PYEOF
