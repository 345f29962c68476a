#!/usr/bin/env bash
# The NIC's trust boundary under forged traffic from the front-end side:
#
#   cli (10.88.9.2, vc) ==veth== nic ns: [vw] splitnic-nic [memif server] <-> [memif client]
#                                                                      splitnic-host
#
# splitnic-nic (co-processor CNN at op K, --notify-host) and splitnic-host (coproc:K) as in
# test_host_paths.sh. While `splitnic client` sends the test set (closed loop), a forger in the
# client's namespace (scapy, from 10.88.9.2 port 5555 and from a spoofed 10.88.9.66) sends:
#   - ACTIVATIONs for the CNN at layer K (the NIC's own part), reply address 10.88.9.77:7777 (a
#     third party) and broadcast, plus malformed ones;
#   - RESPONSEs and ERRORs in the notice form (hdr_len 88/56) to the inference port, guessing
#     the host's references (slots 0..255, generations 1..4) and the client's request ids, with
#     random cookies: what would free or fail the client's requests in flight if it reached
#     the host.
# Checks:
#   - the NIC drops and counts them (telemetry /splitnic/nic/stats: dropped_wire_activations
#     and dropped_wire_replies equal to what was sent, less what the port's ring lost; no
#     activation, error or pass-up for them);
#   - the host never sees one (nic_errors 0, no fallback for a NIC error, no late notice unless
#     the NIC really was late);
#   - nothing leaves the NIC's wire port for a third address or for the forger's port: a capture
#     on the client's end of the wire (tshark) holds UDP from 10.88.9.1 to 10.88.9.2 only, and
#     none to port 5555 or 7777;
#   - the requests in flight are unaffected: every request answered with the classes of
#     `splitnic run`, by the NIC (or by the host's fallback when the NIC was late: a loaded
#     machine, said in the output).
# Exit 0 pass, 1 fail, 77 skip (only when not root, and never under CI=true).
# TRUST_COUNT=N: fewer images (default 3000).
set -u
cd "$(dirname "$0")/../.."
. tests/integration/paths.sh
CNN=${TRUST_MODEL:-$B/models/fmnist-bcnn.snm}
N=${TRUST_COUNT:-3000}
. lab/netns.sh

netns_need_root "af_packet, memif and packet capture"
netns_need_files FAIL: "make all" "$S" "$NIC" "$HOST" "$CNN" "$IMG" "$LAB"
command -v tshark >/dev/null || { echo "FAIL: tshark missing (make deps)"; exit 1; }

tag=$$
ns_c=sntr-cli-$tag
ns_n=sntr-nic-$tag
tmp=$(mktemp -d)
nic_pid=
host_pid=
cap_pid=
cleanup() {
	netns_kill "$cap_pid" "$host_pid" "$nic_pid"
	netns_cleanup "/var/run/dpdk/sntrn$tag" "/var/run/dpdk/sntrh$tag" "$tmp"
}
trap cleanup EXIT
fail() {
	echo "FAIL: $*"
	netns_logs "$tmp" nic host forger
	exit 1
}

netns_wire "$ns_c" "$ns_n" 10.88.9.2/24 || fail "namespaces and veth: $NETNS_WHY"

K=$(netns_split "$S" "$CNN") || fail "split point"

ip netns exec "$ns_n" "$NIC" -l 0 --no-huge -m 512 --file-prefix "sntrn$tag" --no-pci \
	--vdev net_af_packet0,iface=vw \
	--vdev "net_memif0,role=server,socket=$tmp/memif.sock,socket-abstract=no" -- \
	--model "$CNN@$K" --ip 10.88.9.1 --notify-host --executors 16 >"$tmp/nic.log" 2>&1 &
nic_pid=$!
netns_wait_log "$tmp/nic.log" "^nic: forwarding" "$nic_pid" splitnic-nic || fail "$NETNS_WHY"
ip netns exec "$ns_n" "$HOST" -l 1 --no-huge -m 512 --file-prefix "sntrh$tag" --no-pci \
	--vdev "net_memif0,role=client,socket=$tmp/memif.sock,socket-abstract=no" -- \
	--model "$CNN:coproc:$K" --ip 10.88.9.1 --allow 10.88.9.0/24 >"$tmp/host.log" 2>&1 &
host_pid=$!
netns_wait_log "$tmp/host.log" "^host: serving" "$host_pid" splitnic-host || fail "$NETNS_WHY"
nic_stats() { dpdk_telemetry "sntrn$tag" /splitnic/nic/stats; }
host_stats() { dpdk_telemetry "sntrh$tag" /splitnic/host/stats; }
for _ in $(seq 100); do
	host_stats 2>/dev/null | grep -q '"link_up": 1' && break
	sleep 0.1
done
host_stats | grep -q '"link_up": 1' || fail "memif link did not come up"
mid=$(sed -n 's/^host: model [^ ]* id \(0x[0-9a-f]*\):.*/\1/p' "$tmp/host.log")
[ -n "$mid" ] || fail "no model id in the host's log"

netns_run_classes "$CNN" "$tmp/cpu" --images "$IMG" --labels "$LAB" --count "$N" ||
	fail "splitnic run"

ip netns exec "$ns_c" tshark -i vc -f "udp and src host 10.88.9.1" -w "$tmp/wire.pcapng" \
	>"$tmp/tshark.log" 2>&1 &
cap_pid=$!
for _ in $(seq 100); do grep -qs "Capturing on" "$tmp/tshark.log" && break; sleep 0.1; done
nic_stats >"$tmp/nic.before" || fail "telemetry /splitnic/nic/stats"

ip netns exec "$ns_c" "$S" client 10.88.9.1 --images "$IMG" --labels "$LAB" --count "$N" \
	--outstanding 4 --timeout-ms 3000 --json --classes "$tmp/client.classes" \
	>"$tmp/client.json" &
cli_pid=$!
sleep 0.5
ip netns exec "$ns_c" $PY - "$mid" "$K" "$tmp/forged.json" <<'EOF' >"$tmp/forger.log" 2>&1 ||
import json, random, struct, sys, time
import logging
logging.getLogger("scapy.runtime").setLevel(logging.ERROR)
from scapy.all import Ether, IP, UDP, Raw, conf, getmacbyip, sendp
conf.verb = 0
mid, k, out = int(sys.argv[1], 16), int(sys.argv[2]), sys.argv[3]
NIC, PORT = "10.88.9.1", 21326
rnd = random.Random(17)

def common(typ, hdr_len, frag_len, rid, total):
    return struct.pack(">HBBHHIHHQII", 0x534E, 1, typ, hdr_len, frag_len, mid, 0, 0, rid, total, 0)

def activation(rid, addr, port, host_ref=0, cookie=0):
    # 3136 bits = 392 bytes of data at layer k; reply to addr:port
    tensor = struct.pack(">BBHIIIIIiI", 5, 0, k, 3136, 1, 1, 3136, 0, 0, 0)
    a = bytes([0] * 10 + [0xFF, 0xFF]) + bytes(int(x) for x in addr.split("."))
    ext = a + struct.pack(">HBBIIIIIQ", port, 1, 0, 0, 0, 0, 0, host_ref, cookie)
    return common(2, 112, 392, rid, 392) + tensor + ext + bytes(rnd.randrange(256) for _ in range(392))

def response(rid, host_ref, cookie):
    body = struct.pack("<" + "d" * 10, *([0.0] * 9 + [1.0]))
    hdr = struct.pack(">IHBB", 9, 10, 6, 4) + bytes(32) + struct.pack(">IIQ", host_ref, 0, cookie)
    return common(3, 88, 80, rid, 80) + hdr + body

def error(rid, host_ref, cookie):
    reason = b"forged"
    hdr = struct.pack(">HHIIIQ", 4, 0, 0, host_ref, 0, cookie)
    return common(4, 56, len(reason), rid, len(reason)) + hdr + reason

eth = Ether(dst=getmacbyip(NIC))
frames, sent = [], {"activation": 0, "response": 0, "error": 0}
def add(kind, payload, src="10.88.9.2", sport=5555):
    frames.append(eth / IP(src=src, dst=NIC) / UDP(sport=sport, dport=PORT) / Raw(payload))
    sent[kind] += 1

for i in range(100):
    add("activation", activation(i, "10.88.9.77", 7777))
    add("activation", activation(i, "255.255.255.255", 7777), src="10.88.9.66")
    add("activation", activation(i, "10.88.9.2", 5555)[:-7])  # malformed: truncated
for slot in range(256):
    for gen in range(1, 5):
        ref = gen << 24 | slot
        rid = rnd.randrange(3000)
        add("response", response(rid, ref, rnd.getrandbits(64)))
        add("error", error(rid, ref, rnd.getrandbits(64)))
rnd.shuffle(frames)
t0 = time.monotonic()
for j in range(0, len(frames), 64):
    sendp(frames[j:j + 64], iface="vc")
    time.sleep(0.01)
json.dump(sent, open(out, "w"))
print(f"forged: {sent} in {time.monotonic() - t0:.1f} s")
EOF
	fail "forger: $(tail -3 "$tmp/forger.log")"
cat "$tmp/forger.log"
wait "$cli_pid"
crc=$?
[ "$crc" -eq 0 ] || fail "splitnic client exited $crc during the forgery"
sleep 1
nic_stats >"$tmp/nic.after" || fail "telemetry after"
host_stats >"$tmp/host.after" || fail "host telemetry after"
kill -INT "$cap_pid"
wait "$cap_pid" 2>/dev/null
cap_pid=
tshark -r "$tmp/wire.pcapng" -T fields -e ip.src -e ip.dst -e udp.srcport -e udp.dstport \
	>"$tmp/wire.txt" 2>"$tmp/tshark.err" || fail "reading the capture: $(tail -2 "$tmp/tshark.err")"

$PY - "$tmp/nic.before" "$tmp/nic.after" "$tmp/host.after" "$tmp/forged.json" \
	"$tmp/wire.txt" "$tmp/cpu.json" "$tmp/client.json" "$tmp/cpu.csv" "$tmp/client.classes" \
	"$N" <<'EOF' || fail "trust boundary"
import json, sys
b, a, h, sent = (json.load(open(f)) for f in sys.argv[1:5])
wire = [l.split("\t") for l in open(sys.argv[5]) if l.strip()]
run, cli = json.load(open(sys.argv[6])), json.load(open(sys.argv[7]))
cpu = []
for line in open(sys.argv[8]):
    v = [float(x) for x in line.split(",")]
    cpu.append(max(range(len(v)), key=lambda k: (v[k], -k)))
got = [int(l) for l in open(sys.argv[9])]
n = int(sys.argv[10])
d = {k: a[k] - b.get(k, 0) for k in a}
print("nic deltas:", {k: v for k, v in d.items() if v and not k.startswith(("wire_", "host_"))})
fb = {k: v for k, v in h.items() if k.startswith("fallback_") and v}
print(f"host: answered_nic {h['answered_nic']}, late_notices {h['late_notices']}, nic_errors "
      f"{h['nic_errors']}, fallbacks {fb or 0}")
third = [w for w in wire if w[1] != "10.88.9.2" or w[3] in ("5555", "7777")]
print(f"capture on the wire: {len(wire)} UDP datagrams from the NIC's address, "
      f"{len(third)} to a third address or to the forger's ports")
diff = sum(1 for x, y in zip(cpu, got) if x != y)
print(f"client: {cli['responses']}/{cli['requests']} responses, executors {cli['executors']}, "
      f"{cli['errors']['total']} errors, {cli['timeouts']} timeouts, classes differing from "
      f"splitnic run: {diff}")
bad = []
# frames the wire port's ring lost (a stalled loop on a loaded machine) never reached the NIC
lost = d.get("wire_imissed", 0)
act, rep = d.get("dropped_wire_activations", 0), d.get("dropped_wire_replies", 0)
if act > sent["activation"] or rep > sent["response"] + sent["error"] or \
        act + rep + lost < sent["activation"] + sent["response"] + sent["error"]:
    bad.append(f"dropped_wire_activations {act} of {sent['activation']}, dropped_wire_replies "
               f"{rep} of {sent['response'] + sent['error']} ({lost} lost at the port)")
if d.get("errors_sent", 0) or d.get("error_notices", 0) or d.get("passed_up_type", 0) or \
        d.get("activations", 0) + fb.get("fallback_timeout", 0) + fb.get("fallback_nic_suspect", 0) < n:
    bad.append(f"errors_sent {d.get('errors_sent')}, error_notices {d.get('error_notices')}, "
               f"passed_up_type {d.get('passed_up_type')}, activations {d.get('activations')} "
               f"(want {n}, the client's, but for those the host finished itself when the NIC "
               f"was late)")
# a forged ERROR would make the host fall back (nic_errors, fallback_nic_error); a forged notice
# would be a late notice without the NIC being late
if h["nic_errors"] or fb.get("fallback_nic_error") or (h["late_notices"] and not fb.get("fallback_timeout")):
    bad.append("a forged notice reached the host")
if third:
    bad.append(f"replies to a third address or the forger: {third[:5]}")
if len(wire) < n:
    bad.append(f"only {len(wire)} datagrams captured for {n} requests: the capture saw nothing")
if cli["responses"] != n or len(got) != n or diff:
    bad.append("requests in flight were affected")
if cli["executors"]["host_fallback"]:
    print(f"note: {cli['executors']['host_fallback']} answered by the host's fallback: the NIC "
          f"was late (a loaded machine: {fb}), not forged traffic")
# a late NIC answer after the host's fallback reaches the client as a duplicate (by design)
if cli["errors"]["total"] or cli["timeouts"] or cli["stray"] or \
        cli["duplicates"] > fb.get("fallback_timeout", 0):
    bad.append("errors, timeouts, duplicates or stray responses at the client")
if bad:
    print("FAIL: " + "; ".join(bad))
    sys.exit(1)
EOF
kill -TERM "$host_pid" "$nic_pid"
wait "$host_pid" || fail "splitnic-host exited $? on SIGTERM"
wait "$nic_pid" || fail "splitnic-nic exited $? on SIGTERM"
host_pid=
nic_pid=
echo "pass: forged ACTIVATION, RESPONSE and ERROR frames from the front-end side dropped and counted by splitnic-nic, none reached the host, no reply to a third address; $N requests in flight answered by the NIC with the classes of splitnic run"
exit 0
