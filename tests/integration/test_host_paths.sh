#!/usr/bin/env bash
# splitnic-host with splitnic-nic over memif, the front-end over a real veth:
#
#   cli (10.88.1.2, vc) ==veth== nic ns: [vw] splitnic-nic [memif server] <-> [memif client]
#                                                                      splitnic-host
#
# splitnic-nic: wire port net_af_packet on vw, host port net_memif (server), server address
# 10.88.1.1 (it answers ARP), --notify-host (completion notices to the host). splitnic-host:
# net_memif (client), the same server address (the NIC and its host are one server).
#   1. co-processor mode: the binary CNN, host ops [0, k) and NIC ops [k, n) with k the default
#      split of both servers (neither given @K nor :K; kexec_nic_split), which their
#      /models telemetry (read with dpdk-telemetry.py) reports; every request answered by the NIC
#      (executors cpu|nic) with exactly the classes of `splitnic run`, its timing total the
#      server-side total (mean total >= mean host + pack + nic);
#   2. host-only mode: the same, every answer from the host (cpu);
#   3. fallback mode: the NIC stage run by the host (cpu|host_fallback), same classes;
#   4. kill: co-processor mode, splitnic-nic killed (SIGKILL) in the middle of a run and
#      restarted 1 s later without the CNN's NIC part (a NIC that lost its stage): the host sees
#      the memif link drop, finishes the requests in flight itself, and every later request is
#      answered by the fallback (the NIC answers its ACTIVATIONs with ERROR unknown model; no
#      longer forwarded to the wire); a front-end that retransmits a request
#      unanswered for 1 s (same request id) gets every request answered, with the classes of
#      `splitnic run`;
#   8. (run before 4) splits that disagree: the NIC from op k, the host handing over at k + 1:
#      every ACTIVATION refused (ERROR unsupported), every request finished by the host with the
#      classes of `splitnic run`, counted (nic_refused_layer) and said once in the host's log;
#   6. (run before 5) a worker lcore with dynamic batching (--batch 8): classes unchanged,
#      batches above 1;
#   7. (run before 5) two worker lcores on the one memif queue pair (the software spread; the
#      second worker sends through the first's TX queue; notices go to the worker their
#      host_ref names): two front-ends at two addresses using the same request ids at the same
#      time each get their own image's class from the NIC, with no fallback; meanwhile forged
#      RESPONSE and ERROR notices with the NIC's own address spoofed from the front-end side:
#      every one dropped and counted (by the NIC, which takes no notice from its wire port, or
#      by the host: no such request in flight, or the cookie wrong), none completes a request;
#   5. overload: a bounded queue (--queue 8) and an open-loop load well above capacity for a
#      few seconds: every request answered or errored (BUSY), the host's counters consistent
#      (requests = accepted + errors; accepted = answered), RSS flat (growth < 2 MiB between
#      two overload rounds), graceful SIGTERM with the table drained.
# Exit 0 pass, 1 fail, 77 skip (only when not root, and never under CI=true).
# HOST_COUNT=N: fewer images per mode (default: the whole test set, 10,000); HOST_PARTS="1 5":
# only those parts (debugging).
set -u
cd "$(dirname "$0")/../.."
. tests/integration/paths.sh
CNN=${HOST_MODEL:-$B/models/fmnist-bcnn.snm}
N=${HOST_COUNT:-10000}
PARTS=" ${HOST_PARTS:-1 2 3 8 4 5 6 7} "
part() { [[ $PARTS == *" $1 "* ]]; }
. lab/netns.sh

netns_need_root af_packet
netns_need_files FAIL: "make all" "$S" "$NIC" "$HOST" "$CNN" "$IMG" "$LAB"

tag=$$
ns_c=snhost-cli-$tag
ns_n=snhost-nic-$tag
tmp=$(mktemp -d)
nic_pid=
host_pid=
cleanup() {
	netns_kill "$host_pid" "$nic_pid"
	netns_cleanup "/var/run/dpdk/snhn$tag" "/var/run/dpdk/snhh$tag" "$tmp"
}
trap cleanup EXIT
fail() {
	echo "FAIL: $*"
	for l in nic host; do [ -f "$tmp/$l.log" ] && { echo "--- $l.log"; grep -v '^EAL\|^TELEMETRY' "$tmp/$l.log" | tail -15; }; done
	[ -n "$host_pid" ] && { echo "--- host counters"; host_stats 2>/dev/null | tr -d '{}"' | tr ',' '\n' | grep -v ': 0$' | tr '\n' ' '; echo; }
	exit 1
}

netns_wire "$ns_c" "$ns_n" 10.88.1.2/24 || fail "namespaces and veth: $NETNS_WHY"
ip -n "$ns_c" addr add 10.88.1.3/24 dev vc
K=$(netns_split "$S" "$CNN") || fail "split point"

# start_nic [NIC-MODEL-ARGS...]: splitnic-nic on core 0
start_nic() {
	rm -f "$tmp/memif.sock" # a server killed or stopped may leave it behind
	ip netns exec "$ns_n" "$NIC" -l 0 --no-huge -m 512 --file-prefix "snhn$tag" --no-pci \
		--vdev net_af_packet0,iface=vw \
		--vdev "net_memif0,role=server,socket=$tmp/memif.sock,socket-abstract=no" -- \
		"$@" --ip 10.88.1.1 --notify-host --executors 16 \
		--stats-file "$tmp/nic.final" >>"$tmp/nic.log" 2>&1 &
	nic_pid=$!
	netns_wait_log "$tmp/nic.log" "^nic: forwarding" "$nic_pid" splitnic-nic || fail "$NETNS_WHY"
}
# start_host MODEL-SPEC [HOST-ARGS...]: splitnic-host on core 1
start_host() {
	local spec=$1
	shift
	: >"$tmp/host.log"
	ip netns exec "$ns_n" "$HOST" ${HOST_LCORES:--l 1} --no-huge -m 512 --file-prefix "snhh$tag" --no-pci \
		--vdev "net_memif0,role=client,socket=$tmp/memif.sock,socket-abstract=no" -- \
		--model "$spec" --ip 10.88.1.1 --allow 10.88.1.0/24 --stats-file "$tmp/host.final" \
		"$@" >>"$tmp/host.log" 2>&1 &
	host_pid=$!
	netns_wait_log "$tmp/host.log" "^host: serving" "$host_pid" splitnic-host || fail "$NETNS_WHY"
	for _ in $(seq 100); do # the memif link
		[ "$(host_stat link_up 2>/dev/null)" = 1 ] && return 0
		sleep 0.1
	done
	fail "memif link did not come up"
}
stop_host() {
	kill -TERM "$host_pid"
	wait "$host_pid"
	local rc=$?
	host_pid=
	[ "$rc" -eq 0 ] || fail "splitnic-host exited $rc on SIGTERM"
	grep -q "SIGTERM: draining" "$tmp/host.log" || fail "no graceful-shutdown message"
}
stop_nic() {
	kill -TERM "$nic_pid"
	wait "$nic_pid"
	nic_pid=
}
host_tel() { dpdk_telemetry "snhh$tag" "$1"; } # a telemetry endpoint of splitnic-host, as JSON
host_stats() { host_tel /splitnic/host/stats; }
host_stat() { host_stats | $PY -c "import json,sys; print(json.load(sys.stdin)['$1'])"; }

client() { # client OUT-PREFIX [ARGS...]
	local out=$1
	shift
	ip netns exec "$ns_c" "$S" client 10.88.1.1 --images "$IMG" --labels "$LAB" --count "$N" \
		--timeout-ms 3000 --json --classes "$out.classes" "$@" >"$out.json"
}

netns_run_classes "$CNN" "$tmp/cpu" --images "$IMG" --labels "$LAB" --count "$N" ||
	fail "splitnic run"

# check_mode NAME OUT-PREFIX WANT-EXECUTOR: all answered, classes equal, executors as wanted
check_mode() {
	$PY - "$1" "$2" "$tmp/cpu.classes" "$3" "$N" <<'EOF' || fail "$1 mode"
import sys
sys.path.insert(0, "tests/integration")
from host_check import client_answers, server_total_ok, verdict
name, prefix, want, ex, n = sys.argv[1], sys.argv[2], sys.argv[3], sys.argv[4], int(sys.argv[5])
cli, bad = client_answers(name, prefix, want, n)
if cli["executors"][ex] != n:
    bad.append(f"only {cli['executors'][ex]} of {n} responses have executor {ex}")
if ex == "nic" and not server_total_ok(cli):
    bad.append("RESPONSE total is not the server-side total (< host + pack + nic)")
verdict(bad)
EOF
}

start_nic --model "$CNN" # the default split: op K, as splitnic-host's (part 1)
grep "^nic: model" "$tmp/nic.log"

# --- 1. co-processor ----------------------------------------------------------------------
if part 1; then
# both default splits (no @K, no :K): the NIC must take every ACTIVATION the host sends
start_host "$CNN:coproc" --nic-timeout-us 2000000 # every request the NIC's, even on a loaded box
grep "^host:" "$tmp/host.log"
# the models as an operator reads them, with DPDK's own dpdk-telemetry.py
echo /splitnic/nic/models | dpdk-telemetry.py -f "snhn$tag" >"$tmp/nic.models" &&
	echo /splitnic/host/models | dpdk-telemetry.py -f "snhh$tag" >"$tmp/host.models" ||
	fail "dpdk-telemetry.py"
$PY - "$tmp/nic.models" "$tmp/host.models" "$(basename "$CNN" .snm)" "$K" <<'EOF' ||
import json, sys
nic = json.load(open(sys.argv[1]))["/splitnic/nic/models"]
host = json.load(open(sys.argv[2]))["/splitnic/host/models"]
name, k = sys.argv[3], int(sys.argv[4])
print("telemetry: nic", nic, "host", host)
want_nic = {"models": 1, "m0_name": name, "m0_first_op": k}
want_host = {"models": 1, "m0_name": name, "m0_mode": "coproc", "m0_split": k}
bad = [f"{key} {d.get(key)!r}, want {v!r}" for d, w in ((nic, want_nic), (host, want_host))
       for key, v in w.items() if d.get(key) != v]
if bad or nic.get("m0_id") != host.get("m0_id"):
    print("FAIL: /models: " + "; ".join(bad or ["the model ids differ"]))
    sys.exit(1)
EOF
	fail "telemetry /models (the default splits)"
client "$tmp/coproc" --outstanding 4 || fail "client (coproc) exited $?"
check_mode coproc "$tmp/coproc" nic
host_stats >"$tmp/coproc.stats"
host_tel /splitnic/host/latency >"$tmp/coproc.lat"
$PY - "$tmp/coproc.stats" "$N" "$tmp/coproc.lat" <<'EOF' || fail "coproc counters"
import json, sys
s, n, lat = json.load(open(sys.argv[1])), int(sys.argv[2]), json.load(open(sys.argv[3]))
print("latency histograms (telemetry):", {k: sum(v) for k, v in lat.items()})
if sum(lat["server_total_us"]) != n or sum(lat["nic_round_trip_us"]) != n:
    print("FAIL: latency histograms do not count every request")
    sys.exit(1)
print("host counters:", {k: v for k, v in s.items() if v and not k.startswith("verdict_")})
fb = sum(v for k, v in s.items() if k.startswith("fallback_"))
if s["answered_nic"] != n or s["activations"] != n or fb or s["answered_host"]:
    print(f"FAIL: answered_nic {s['answered_nic']}, activations {s['activations']}, fallbacks {fb}")
    sys.exit(1)
EOF
stop_host
fi

# --- 2. host-only ---------------------------------------------------------------------------
if part 2; then
	start_host "$CNN:host-only"
	client "$tmp/hostonly" --outstanding 4 || fail "client (host-only) exited $?"
	check_mode host-only "$tmp/hostonly" cpu
	stop_host
fi

# --- 3. fallback ------------------------------------------------------------------------------
if part 3; then
	start_host "$CNN:fallback:$K"
	client "$tmp/fallback" --outstanding 4 || fail "client (fallback) exited $?"
	check_mode fallback "$tmp/fallback" host_fallback
	stop_host
fi

# --- 8. splits that disagree: the NIC from op K, the host handing over at K + 1 ----------------
if part 8; then
	start_host "$CNN:coproc:$((K + 1))" --nic-timeout-us 2000000
	client "$tmp/mismatch" --outstanding 4 || fail "client (mismatch) exited $?"
	check_mode mismatch "$tmp/mismatch" host_fallback
	refused=$(host_stat nic_refused_layer)
	warned=$(grep -c "^host: warning: the NIC refused model" "$tmp/host.log")
	echo "mismatched splits: $refused ACTIVATIONs refused by the NIC, $warned warning(s)"
	[ "$refused" = "$N" ] || fail "nic_refused_layer $refused, want $N"
	[ "$warned" = 1 ] || fail "$warned warnings about the refusal, want exactly 1"
	stop_host
fi

# --- 4. kill splitnic-nic in the middle of a run ------------------------------------------------
if part 4; then
start_host "$CNN:coproc:$K" --nic-timeout-us 100000
mid=$(sed -n 's/^host: model [^ ]* id \(0x[0-9a-f]*\):.*/\1/p' "$tmp/host.log")
ip netns exec "$ns_c" $PY - "$IMG" "$N" "$tmp/kill" "$mid" <<'EOF' &
# a front-end that retransmits: closed loop, 4 outstanding, resend after 1 s, give up after 30 s
import gzip, json, socket, struct, sys, time
img, n, out, mid = sys.argv[1], int(sys.argv[2]), sys.argv[3], int(sys.argv[4], 16)
raw = gzip.open(img).read()[16:]
s = socket.socket(socket.AF_INET, socket.SOCK_DGRAM)
s.connect(("10.88.1.1", 21326))
s.settimeout(0.05)
def req(i):
    hdr = struct.pack(">HBBHHIHHQII", 0x534E, 1, 1, 64, 784, mid, 0, 0, i, 784, 0)
    return hdr + struct.pack(">BBHIIIIIiI", 1, 0, 0, 1, 28, 28, 784, 0, 0, 0) + raw[i * 784:(i + 1) * 784]
cls, ex, sent_at, resent = {}, {}, {}, 0
nxt, t_end = 0, time.monotonic() + 600
while len(cls) < n and time.monotonic() < t_end:
    now = time.monotonic()
    while nxt < n and len(sent_at) < 4:
        s.send(req(nxt)); sent_at[nxt] = now; nxt += 1
    for i, t in list(sent_at.items()):
        if now - t > 1.0:
            s.send(req(i)); sent_at[i] = now; resent += 1
    try:
        d = s.recv(2048)
    except socket.timeout:
        continue
    typ, rid = d[3], struct.unpack(">Q", d[16:24])[0]
    if rid in sent_at and typ == 3:
        cls[rid] = struct.unpack(">I", d[32:36])[0]
        ex[rid] = d[39]
        del sent_at[rid]
    if len(cls) == n // 3:
        open(out + ".third", "w").write("x")
json.dump({"classes": [cls.get(i, -1) for i in range(n)], "executors": [ex.get(i, 0) for i in range(n)],
           "resent": resent}, open(out + ".json", "w"))
EOF
kpid=$!
for _ in $(seq 600); do [ -e "$tmp/kill.third" ] && break; sleep 0.1; done
[ -e "$tmp/kill.third" ] || fail "kill test: the run did not get a third of the way"
kill -KILL "$nic_pid"
wait "$nic_pid" 2>/dev/null
nic_pid=
rm -rf "/var/run/dpdk/snhn$tag" "$tmp/memif.sock"
sleep 1
start_nic --model "$B/models/fmnist-bmlp.snm" # the NIC is back, without the CNN's part
wait "$kpid" || fail "kill-test front-end"
host_stats >"$tmp/kill.stats"
$PY - "$tmp/kill.json" "$tmp/cpu.classes" "$tmp/kill.stats" "$N" <<'EOF' || fail "kill test"
import json, sys
r, want, s, n = json.load(open(sys.argv[1])), [int(l) for l in open(sys.argv[2])], json.load(open(sys.argv[3])), int(sys.argv[4])
got, ex = r["classes"], r["executors"]
diff = sum(1 for a, b in zip(got, want) if a != b)
missing = got.count(-1)
nic = sum(1 for e in ex if e & 4)
fbk = sum(1 for e in ex if e & 16)
print(f"kill: {n - missing}/{n} answered ({nic} by the NIC, {fbk} by the host fallback), "
      f"{r['resent']} retransmissions, classes differing: {diff}; host: link_down_events "
      f"{s['link_down_events']}, fallback link_down {s['fallback_link_down']}, timeout "
      f"{s['fallback_timeout']}, port_restarts {s['port_restarts']}")
bad = []
if missing or diff:
    bad.append(f"{missing} unanswered, {diff} classes differ")
if not nic or not fbk or not s["link_down_events"]:
    bad.append("no NIC answers before the kill, or no fallback after it")
sys.path.insert(0, "tests/integration")
from host_check import verdict
verdict(bad)
EOF
stop_host
stop_nic
start_nic --model "$CNN@$K"
fi

# --- 6. a worker lcore and dynamic batching ---------------------------------------------------
# (the worker shares core 0 with splitnic-nic on this 2-core box, so it sleeps when idle)
if part 6; then
	HOST_LCORES="--main-lcore 1 -l 0-1" start_host "$CNN:coproc:$K" --batch 8 \
		--batch-wait-us 500 --idle-sleep-us 20
	n6=$((N < 2000 ? N : 2000))
	ip netns exec "$ns_c" "$S" client 10.88.1.1 --images "$IMG" --labels "$LAB" --count "$n6" \
		--timeout-ms 3000 --json --classes "$tmp/batch.classes" --outstanding 16 \
		>"$tmp/batch.json" || fail "client (batching) exited $?"
	head -"$n6" "$tmp/cpu.classes" | cmp -s - "$tmp/batch.classes" ||
		fail "batching: classes differ from splitnic run"
	host_stats >"$tmp/batch.stats"
	$PY - "$tmp/batch.stats" <<'EOF' || fail "batching: no batch above 1"
import json, sys
s = json.load(open(sys.argv[1]))
print(f"batching: {s['worker_requests']} requests in {s['worker_batches']} batches on a worker "
      f"lcore, {s['answered_nic']} answered by the NIC, {s['answered_host']} by the host")
sys.exit(s["worker_batches"] >= s["worker_requests"])
EOF
	stop_host
fi

# --- 7. two workers on one queue pair: colliding ids, forged notices from the NIC's address ------
if part 7; then
	HOST_LCORES="--main-lcore 1 -l 0-1" start_host "$CNN:coproc:$K" --idle-sleep-us 20 --nic-timeout-us 2000000
	n7=$((N < 1000 ? N : 1000))
	ip netns exec "$ns_c" $PY tests/integration/host_front.py 10.88.1.1 "$IMG" "$n7" \
		"$tmp/p7.json" --from 10.88.1.2 --from 10.88.1.3 --same-ids --timeout 4 \
		--forge 400 --forge-from 10.88.1.1 || fail "front-ends (7)"
	host_stats >"$tmp/p7.stats"
	dpdk_telemetry "snhn$tag" /splitnic/nic/stats >"$tmp/p7.nic" || fail "NIC telemetry (7)"
	$PY - "$tmp/p7.json" "$tmp/p7.stats" "$tmp/p7.nic" "$tmp/cpu.classes" <<'EOF' || fail "two workers"
import json, sys
fr, s, nic = (json.load(open(f)) for f in sys.argv[1:4])
want = [int(l) for l in open(sys.argv[4])]
wrong = sum(1 for f in fr["fronts"] for i, c in enumerate(f["classes"]) if c != want[f["images"][i]])
n = sum(len(f["classes"]) for f in fr["fronts"])
fb = sum(v for k, v in s.items() if k.startswith("fallback_"))
at_host = s["notice_not_from_nic"] + s["notice_mismatch"] + s["notice_bad_cookie"] + s["late_notices"]
at_nic = nic.get("dropped_wire_replies", 0)
print(f"two workers: {n} requests from 2 front-ends with colliding ids: {wrong} wrong, per worker "
      f"{[s[f'worker{i}_requests'] for i in range(s['workers'])]}, spread {s['spread']}, "
      f"answered by the NIC {s['answered_nic']}, fallbacks {fb}; {fr['forged']} forged notices: "
      f"dropped at the NIC {at_nic}, at the host {at_host} (not from the NIC "
      f"{s['notice_not_from_nic']}, mismatched {s['notice_mismatch']}, bad cookie "
      f"{s['notice_bad_cookie']}, not in flight {s['late_notices']})")
bad = []
if wrong or any(f["errors"] for f in fr["fronts"]) or s["answered_nic"] != n or fb:
    bad.append("not every request answered by the NIC with its own class")
if s["workers"] != 2 or min(s[f"worker{i}_requests"] for i in range(2)) == 0 or not s["spread"]:
    bad.append("not both workers served requests")
if not fr["forged"] or at_nic + at_host != fr["forged"]:
    bad.append("forged notices not all dropped and counted")
sys.path.insert(0, "tests/integration")
from host_check import verdict
verdict(bad)
EOF
	stop_host
fi

# --- 5. overload ---------------------------------------------------------------------------------
if part 5; then
start_host "$CNN:coproc:$K" --queue 8 --nic-window 8
rss() { awk '/^VmRSS/ {print $2}' "/proc/$host_pid/status"; }
over() { # open loop at OVER_RATE req/s (5,000: ~5x capacity) for OVER_N requests
	ip netns exec "$ns_c" "$S" client 10.88.1.1 --images "$IMG" --labels "$LAB" \
		--count "${OVER_N:-15000}" --rate "${OVER_RATE:-5000}" --timeout-ms 3000 --json >"$1"
	# 3: some requests were refused (ERROR busy), which overload is meant to cause
	local rc=$?
	[ "$rc" -eq 0 ] || [ "$rc" -eq 3 ] || fail "overload client exited $rc"
}
over "$tmp/over1.json"
rss1=$(rss)
over "$tmp/over2.json"
rss2=$(rss)
sleep 0.5
host_stats >"$tmp/over.stats"
$PY - "$tmp/over1.json" "$tmp/over2.json" "$tmp/over.stats" "$rss1" "$rss2" <<'EOF' || fail "overload"
import json, sys
c1, c2, s = (json.load(open(f)) for f in sys.argv[1:4])
rss1, rss2 = int(sys.argv[4]), int(sys.argv[5])
bad = []
for c in (c1, c2):
    print(f"overload: {c['requests']} requests at {c['rate']:.0f}/s: {c['responses']} responses, "
          f"{c['errors']['total']} errors (busy {c['errors'].get('busy', 0)}), {c['timeouts']} "
          f"timeouts, {c['throughput_rps']:.0f} responses/s")
    if c["responses"] + c["errors"]["total"] != c["requests"] or c["timeouts"]:
        bad.append("a request neither answered nor errored")
    if not c["errors"]["total"]:
        bad.append("no overload errors: load not above capacity")
errs = sum(s[k] for k in s if k.startswith("error_"))
print(f"host: requests {s['requests']} accepted {s['accepted']} answered nic {s['answered_nic']} "
      f"host {s['answered_host']} errors {errs} (sent {s['errors_sent']}, rate-limited "
      f"{s['errors_rate_limited']}), in_use {s['in_use']}; RSS {rss1} -> {rss2} kB")
total = c1["requests"] + c2["requests"]
if s["requests"] != total or s["accepted"] + errs != s["requests"] or \
        errs != s["errors_sent"] + s["errors_rate_limited"]:
    bad.append("requests != accepted + errors, or not every request seen")
if s["accepted"] != s["answered_nic"] + s["answered_host"] or s["in_use"]:
    bad.append("accepted != answered")
if rss2 - rss1 > 2048:
    bad.append(f"RSS grew {rss2 - rss1} kB")
sys.path.insert(0, "tests/integration")
from host_check import verdict
verdict(bad)
EOF
stop_host
fi
stop_nic
echo "pass: splitnic-host over memif with splitnic-nic: coproc, host-only and fallback modes give the classes of splitnic run on $N Fashion-MNIST images; NIC killed mid-run: every request answered (host fallback); two workers: colliding request ids answered right, forged notices dropped; overload: every request answered or errored, counters consistent, RSS flat; graceful SIGTERM"
exit 0
