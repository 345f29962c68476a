#!/usr/bin/env bash
# splitnic-host with two worker lcores (RSS inside one server) and its trust boundary
# seen from the front-end side, the port facing the front-ends (net_af_packet):
#
#   cli ns (10.88.6.2 and 10.88.6.3 on vc) ==veth== srv ns: [vw] splitnic-host, two workers
#
#   1. the port spreads: af_packet qpairs=2 (two queue pairs; the kernel's fanout hash of the
#      flow picks the queue), host-only CNN, 16 front-ends at once: every request answered with
#      the class of `splitnic run`; both workers served requests; none handed between workers.
#   2. the software spread: qpairs=1 (one queue, two workers), one front-end (`splitnic
#      client`): every answer right; both workers served at least a quarter of the requests,
#      handed over by the worker that polls the queue (the second one's frames leave through the
#      first one's TX queue).
#   3. co-processor with the in-process NIC, two workers and the NIC lcore (--lcores: three
#      lcores on the two CPUs): two front-ends at two addresses using the same request ids at
#      the same time: each request answered by the NIC with the class of its own image, no
#      fallback, no notice mismatched; meanwhile a forger on the front-end side sends RESPONSE
#      and ERROR notices with guessed host_refs and cookies: every one dropped and counted
#      (notice_not_from_nic: the host takes notices only from its NIC), none answered.
#   4. ERRORs rate-limited per source (--error-rate 20): 300 requests for an unknown model in a
#      burst get at most 20 (the burst) plus 20 a second ERRORs back; the rest are counted
#      (errors_rate_limited), every one of them counted as an unknown-model request.
#   5. no amplification: a model whose RESPONSE (64 classes, 592 bytes) is larger than its
#      REQUEST (4 u8, 68 bytes): without an allow-list every request is refused with an ERROR
#      too_large no larger than the request (error_reply_larger); with the front-end on the
#      allow-list it is answered.
# Exit 0 pass, 1 fail, 77 skip (only when not root, and never under CI=true).
# WORKERS_COUNT=N: images per front-end (default 1000).
set -u
cd "$(dirname "$0")/../.."
. tests/integration/paths.sh
CNN=${HOST_MODEL:-$B/models/fmnist-bcnn.snm} N=${WORKERS_COUNT:-1000}
. lab/netns.sh
netns_need_root af_packet
netns_need_files FAIL: "make all" "$S" "$HOST" "$CNN" "$IMG"

tag=$$ tmp=$(mktemp -d) host_pid=
ns_c=snwk-cli-$tag ns_s=snwk-srv-$tag
trap 'netns_kill "$host_pid"; netns_cleanup "/var/run/dpdk/snwk$tag" "$tmp"' EXIT
fail() { netns_fail "$*" "$tmp/host.log"; }
{ netns_add "$ns_c" "$ns_s" && netns_direct "$ns_c" vc 10.88.6.2/24 "$ns_s" vw 10.88.6.1 &&
	ip -n "$ns_c" addr add 10.88.6.3/24 dev vc; } || fail "namespaces, veth, addresses: ${NETNS_WHY:-see above}"
K=$(netns_split "$S" "$CNN") || fail "split point"
netns_run_classes "$CNN" "$tmp/cpu" --images "$IMG" --count "$N" || fail "splitnic run"

# start_host EAL-LCORES QPAIRS MODEL-SPEC [HOST-ARGS...]
start_host() {
	local lc=$1 qp=$2 spec=$3
	shift 3
	: >"$tmp/host.log"
	ip netns exec "$ns_s" "$HOST" $lc --no-huge -m 512 --file-prefix "snwk$tag" --no-pci \
		--vdev "net_af_packet0,iface=vw,qpairs=$qp" -- --model "$spec" --ip 10.88.6.1 \
		${ALLOW---allow 10.88.6.0/24} "$@" >>"$tmp/host.log" 2>&1 &
	host_pid=$!
	netns_wait_log "$tmp/host.log" "^host: serving" "$host_pid" splitnic-host || fail "$NETNS_WHY"
	grep "^host: [0-9]* worker" "$tmp/host.log"
}
stop_host() {
	dpdk_telemetry "snwk$tag" /splitnic/host/stats >"$tmp/$1.stats" || fail "telemetry ($1)"
	kill -TERM "$host_pid"
	wait "$host_pid" || fail "splitnic-host exited $? on SIGTERM ($1)"
	host_pid=
	[ ! -e "/var/run/dpdk/snwk$tag" ] || fail "splitnic-host left /var/run/dpdk/snwk$tag behind"
}
# check PART FRONTS.json STATS: every request answered with its image's class; PART's own checks
check() {
	$PY - "$@" "$tmp/cpu.classes" <<'EOF' || fail "part $1"
import json, sys
part, fr, s, want = sys.argv[1], json.load(open(sys.argv[2])), json.load(open(sys.argv[3])), [int(l) for l in open(sys.argv[4])]
bad, n = [], len(fr["fronts"][0]["classes"])
for f in fr["fronts"]:
    wrong = sum(1 for i, c in enumerate(f["classes"]) if c != want[f["images"][i]])
    if wrong or f["errors"] or len(f["classes"]) != n:
        bad.append(f"front-end {f['addr']}:{f['port']}: {wrong} of {n} wrong or missing, {f['errors']} errors")
w = [s[f"worker{i}_requests"] for i in range(s["workers"])]
print(f"part {part}: {len(fr['fronts'])} front-end(s) x {n}: answers right; per worker {w}, "
      f"queue pairs {s['queue_pairs']}, spread {s['spread']}; answered nic {s['answered_nic']} "
      f"host {s['answered_host']}; notices: not from the NIC {s['notice_not_from_nic']}, "
      f"mismatched {s['notice_mismatch']}, bad cookie {s['notice_bad_cookie']}, late {s['late_notices']}")
if s["workers"] != 2 or min(w) == 0:
    bad.append("not both workers served requests")
if part == "1" and (s["queue_pairs"] != 2 or s["spread"]):
    bad.append("the port did not spread (two queue pairs, nothing handed over)")
if part == "2" and (s["queue_pairs"] != 1 or not s["spread"] or min(w) < sum(w) / 4):
    bad.append("no even software spread")
if part == "3":
    total = n * len(fr["fronts"])
    fb = sum(v for k, v in s.items() if k.startswith("fallback_"))
    if s["answered_nic"] != total or fb or s["notice_mismatch"] or s["notice_bad_cookie"]:
        bad.append(f"answered by the NIC {s['answered_nic']} of {total}, fallbacks {fb}")
    if any(e != 5 for f in fr["fronts"] for e in f["executors"]):
        bad.append("a response not from cpu|nic")
    if s["notice_not_from_nic"] != fr["forged"] or not fr["forged"]:
        bad.append(f"{fr['forged']} forged notices, {s['notice_not_from_nic']} dropped as not from the NIC")
if bad:
    sys.exit("FAIL: " + "; ".join(bad))
EOF
}

# --- 1. the port spreads: two queue pairs, the fanout hash -------------------------------------
start_host "-l 0-1" 2 "$CNN:host-only"
ip netns exec "$ns_c" $PY tests/integration/host_front.py 10.88.6.1 "$IMG" "$((N / 8))" \
	"$tmp/p1.json" --sockets 8 --from 10.88.6.2 --from 10.88.6.3 || fail "front-ends (1)"
stop_host p1
check 1 "$tmp/p1.json" "$tmp/p1.stats"

# --- 2. one queue, two workers: the software spread ------------------------------------------------
start_host "-l 0-1" 1 "$CNN:host-only"
ip netns exec "$ns_c" "$S" client 10.88.6.1 --images "$IMG" --count "$N" --outstanding 8 \
	--timeout-ms 3000 --json --classes "$tmp/p2.classes" >"$tmp/p2.client" || fail "client (2)"
stop_host p2
$PY - "$tmp/p2.classes" >"$tmp/p2.json" <<'EOF'
import json, sys
c = [int(l) for l in open(sys.argv[1])]
print(json.dumps({"fronts": [{"addr": "10.88.6.2", "port": 0, "images": list(range(len(c))),
                              "classes": c, "executors": [1] * len(c), "errors": 0}], "forged": 0}))
EOF
check 2 "$tmp/p2.json" "$tmp/p2.stats"

# --- 3. co-processor, two workers + the in-process NIC: colliding ids, forged notices -------------
start_host "--lcores 0@0,1@1,2@1" 1 "$CNN:coproc:$K" --nic inproc --idle-sleep-us 20 \
	--nic-timeout-us 2000000
ip netns exec "$ns_c" $PY tests/integration/host_front.py 10.88.6.1 "$IMG" "$N" "$tmp/p3.json" \
	--from 10.88.6.2 --from 10.88.6.3 --same-ids --forge 400 --timeout 4 || fail "front-ends (3)"
stop_host p3
check 3 "$tmp/p3.json" "$tmp/p3.stats"

# --- 4. ERRORs rate-limited per source ---------------------------------------------------------------
start_host "-l 0" 1 "$CNN:host-only" --error-rate 20
ip netns exec "$ns_c" $PY - <<'EOF' >"$tmp/p4.count" || fail "unknown-model burst"
import socket, struct, time
s = socket.socket(socket.AF_INET, socket.SOCK_DGRAM)
s.connect(("10.88.6.1", 21326))
s.settimeout(0.5)
req = lambda i: struct.pack(">HBBHHIHHQII", 0x534E, 1, 1, 64, 1, 0x5555, 0, 0, i, 1, 0) + \
    struct.pack(">BBHIIIIIiI", 1, 0, 0, 1, 1, 1, 1, 0, 0, 0) + b"\0"
t0 = time.monotonic()
for i in range(300):
    s.send(req(i))
got = 0
try:
    while True:
        s.recv(2048)
        got += 1
except socket.timeout:
    pass
print(got, time.monotonic() - t0)
EOF
stop_host p4
$PY - "$tmp/p4.count" "$tmp/p4.stats" <<'EOF' || fail "rate limit"
import json, sys
got, secs = open(sys.argv[1]).read().split()
got, secs, s = int(got), float(secs), json.load(open(sys.argv[2]))
print(f"part 4: 300 unknown-model requests: {got} ERRORs back in {secs:.2f} s; host: "
      f"error_unknown_model {s['error_unknown_model']}, errors_sent {s['errors_sent']}, "
      f"errors_rate_limited {s['errors_rate_limited']}")
if not 20 <= got <= 20 + 20 * secs + 1 or s["errors_sent"] != got or \
        s["errors_sent"] + s["errors_rate_limited"] != 300 or s["error_unknown_model"] != 300:
    sys.exit("FAIL: ERRORs not limited to the source's rate, or not counted")
EOF
# --- 5. no reply larger than its request without an allow-list ----------------------------------
cat >"$tmp/wide.json" <<'EOF'
{"name": "wide", "input": {"shape": [1, 1, 4], "dtype": "u8"},
 "layers": [{"type": "flatten"}, {"type": "dense", "out": 64, "bias": true}]}
EOF
{ "$S" gen "$tmp/wide.json" -o "$tmp/wide.npz" && "$S" convert "$tmp/wide.json" "$tmp/wide.npz" \
	-o "$tmp/wide.snm"; } >/dev/null || fail "the wide model"
for allow in "" "--allow 10.88.6.2"; do
	ALLOW=$allow start_host "-l 0" 1 "$tmp/wide.snm:host-only"
	ip netns exec "$ns_c" $PY - "$allow" <<'EOF' || fail "no amplification ($allow)"
import socket, struct, sys
s = socket.socket(socket.AF_INET, socket.SOCK_DGRAM)
s.bind(("10.88.6.2", 0))
s.connect(("10.88.6.1", 21326))
s.settimeout(2)
got = []
for i in range(10):
    req = struct.pack(">HBBHHIHHQII", 0x534E, 1, 1, 64, 4, 0, 0, 0, i, 4, 0) + \
        struct.pack(">BBHIIIIIiI", 1, 0, 0, 1, 1, 4, 4, 0, 0, 0) + bytes([i, 2, 3, 4])
    s.send(req)
    d = s.recv(4096)
    got.append((d[3], len(d), d[32] << 8 | d[33]))
print(f"part 5 ({sys.argv[1] or 'no allow-list'}): {len(req)}-byte requests answered with "
      f"{sorted(set(got))} (type, bytes, error code)")
want = 3 if sys.argv[1] else 4
if any(t != want or (t == 4 and n > len(req)) for t, n, _ in got) or \
        (not sys.argv[1] and any(code != 6 for _, _, code in got)):
    sys.exit("FAIL: a reply larger than its request to a front-end not allowed, or no answer")
EOF
	stop_host "p5$allow"
done
grep -q "^error_reply_larger 10$" <(tr -d '{}" ' <"$tmp/p5.stats" | tr ',' '\n' | tr ':' ' ') ||
	fail "error_reply_larger is not 10"
echo "pass: splitnic-host with two workers: the port's spread (2 queue pairs) and the software spread (1 queue) answer every request right on both workers; co-processor with colliding request ids from two front-ends: each its own answer; forged notices from the front-end side dropped and counted; ERRORs rate-limited per source; no reply larger than its request without an allow-list; no DPDK runtime folder left"
exit 0
