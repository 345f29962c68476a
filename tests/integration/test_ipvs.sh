#!/usr/bin/env bash
# Scale-out behind Linux IPVS, health-checked by keepalived (docs/scale-out.md):
#
#   cli (10.89.0.2) == router: IPVS UDP 10.89.0.100:21326, mh + mh-port, NAT; keepalived
#                              MISC_CHECK = `splitnic client --health` on each server
#                       == s1 (10.89.1.1) splitnic-nic [af_packet] <-memif-> splitnic-host
#                       == s2 (10.89.2.1)   "        co-processor, the bundled CNN
#                       == s3 (10.89.3.1)   "
# The router is each server's gateway (IPVS NAT: replies go back through it). Each splitnic-nic
# answers ARP for its server address and HEALTH on its wire port (and passes the host's probes
# up); keepalived's conf comes from lab/ipvs-setup.sh.
#   1. spread: the Fashion-MNIST test set (10,000 images; 3,000 in User-Mode Linux, below) over
#      2048 client sockets: every request answered once, with the classes of `splitnic run`;
#      per-server counts (the hosts' requests) within 20% of even;
#   2. failover: the same images again, every request fragmented (a 300-byte payload: 4
#      datagrams each); one server's splitnic-nic and splitnic-host killed (SIGKILL) once it
#      has been sent an eighteenth of the requests (a sixth of its share; each look at the
#      count takes seconds in User-Mode Linux, so the kill comes well after): keepalived
#      removes it within its check interval and the check's timeout (delay_loop 1 s + 1 s, and
#      1 s of slack or twice a check's time under this load, if longer), the client's
#      retransmissions (same request id) are answered by the other two; every request answered
#      exactly once to the application (duplicates counted, never delivered), correct classes;
#      the fragments of a request stay together on the others: no reassembly table full, and
#      no more reassemblies expired than the client retransmitted (a retransmitted copy can be
#      cut in two, by the server's removal between its fragments or by the original's answer,
#      which frees its reassembly slot, between them: the rest of that copy then waits out the
#      reassembly timeout);
#   3. draining: a server's splitnic-host (--drain-hold-ms 2500) gets SIGTERM while loaded;
#      HEALTH says draining until it exits 0 with its table empty, no sooner than 2.5 s.
# This kernel without IPVS: the test runs in User-Mode Linux (tests/integration/uml.sh).
# Exit 0 pass, 1 fail, 77 skip (not root, or no IPVS anywhere; never under CI=true).
# IPVS_COUNT=N: that many images (default the whole set, 3,000 in User-Mode Linux: its one
# emulated CPU answers some 90 requests a second for six servers and the client).
set -u
cd "$(dirname "$0")/../.."
. tests/integration/paths.sh
CNN=$B/models/fmnist-bcnn.snm
N=${IPVS_COUNT:-$([ "${UML_GUEST:-}" = 1 ] && echo 3000 || echo 10000)}
VIP=10.89.0.100
. lab/netns.sh
. tests/integration/uml.sh

netns_need_root "IPVS"
netns_need_files FAIL: "make all" "$S" "$NIC" "$HOST" "$CNN" "$IMG" "$LAB"
for t in ipvsadm keepalived ethtool; do
	command -v $t >/dev/null || { echo "FAIL: $t missing (make deps)"; exit 1; }
done
# the operator's script refuses what it cannot use, naming it (before any set-up)
for bad in "--vip 10.89.0.300 10.89.1.1|--vip: an IPv4 address" \
	"--vip 10.89.0.100 --scheduler rr 10.89.1.1|--scheduler: sh or mh" \
	"--vip 10.89.0.100 10.89.1.1:0|port 1 to 65535" "--vip 10.89.0.100|at least one SERVER"; do
	# shellcheck disable=SC2086
	if msg=$(lab/ipvs-setup.sh ${bad%%|*} 2>&1); then
		echo "FAIL: lab/ipvs-setup.sh ${bad%%|*} accepted"; exit 1
	fi
	[[ $msg == *"${bad#*|}"* ]] || { echo "FAIL: ipvs-setup.sh said '$msg'"; exit 1; }
done
uml_need_ipvs "$0" "$@"
# what this test asks of the kernel, loaded where it is a module (veth: netns_veth)
netns_kmods ip_vs ip_vs_mh || { echo "FAIL: $NETNS_WHY"; exit 1; }
T0=$(date +%s.%N)
since() { awk -v a="$1" -v b="$(date +%s.%N)" 'BEGIN { printf "%.2f", b - a }'; }
mark() { echo "[$(since "$T0") s] $*"; }

tag=$$
ns_c=snipvs-c-$tag
ns_r=snipvs-r-$tag
tmp=$(mktemp -d)
ka_pid=
nic_pid=(- "" "" "")
host_pid=(- "" "" "")
cleanup() {
	netns_kill "$ka_pid" "${host_pid[@]:1}" "${nic_pid[@]:1}"
	netns_cleanup "$tmp" /var/run/dpdk/snipvs*"$tag"
}
trap cleanup EXIT
fail() {
	echo "FAIL: $*"
	for f in "$tmp"/*.log; do
		[ -f "$f" ] && { echo "--- $(basename "$f")"; grep -v '^EAL\|^TELEMETRY' "$f" | tail -8; }
	done
	ip netns exec "$ns_r" ipvsadm -Ln --stats 2>/dev/null
	exit 1
}
# one lcore per process; with two cores the NICs on one and the hosts on the other
if [ "$(nproc)" -ge 2 ]; then lc_nic=0 lc_host=1; else lc_nic=0 lc_host=0; fi
# idle servers sleep between polls: 1 ms in User-Mode Linux (one CPU, costly wake-ups)
idle_us=${IPVS_IDLE_US:-$([ "${UML_GUEST:-}" = 1 ] && echo 1000 || echo 100)}

netns_add "$ns_c" "$ns_r" || fail "ip netns add"
netns_veth "$ns_c" vc "$ns_r" rc || fail "$NETNS_WHY"
netns_link "$ns_c" vc 10.89.0.2/24
netns_link "$ns_r" rc 10.89.0.1/24
ip -n "$ns_r" addr add "$VIP/32" dev rc
ip -n "$ns_c" route add default via 10.89.0.1
netns_tx_csum_off "$ns_c" vc || fail "ethtool -K vc tx off"
ip netns exec "$ns_r" sysctl -qw net.ipv4.ip_forward=1 net.ipv4.vs.expire_nodest_conn=1 ||
	fail "router sysctls (IPVS loaded?)"
for k in 1 2 3; do
	ns=snipvs-s$k-$tag
	netns_add "$ns" || fail "ip netns add"
	netns_veth "$ns_r" "rs$k" "$ns" vw || fail "$NETNS_WHY"
	netns_link "$ns_r" "rs$k" "10.89.$k.254/24"
	netns_link "$ns" vw
	netns_tx_csum_off "$ns_r" "rs$k" || fail "ethtool -K rs$k tx off"
	netns_no_ipv6 "$ns"
done
netns_no_ipv6 "$ns_c" "$ns_r"

# start_nic K, start_host K: splitnic-nic (memif server) and splitnic-host (co-processor) in
# server K's namespace, address 10.89.K.1, gateway the router (the NIC answers whoever sent the
# frame)
start_nic() {
	local k=$1 ns=snipvs-s$1-$tag
	rm -f "$tmp/memif$k.sock"
	ip netns exec "$ns" "$NIC" -l $lc_nic --no-huge -m 128 --file-prefix "snipvsn$k$tag" \
		--no-pci --vdev net_af_packet0,iface=vw \
		--vdev "net_memif0,role=server,socket=$tmp/memif$k.sock,socket-abstract=no" -- \
		--model "$CNN@$K" --ip "10.89.$k.1" --notify-host --executors 4 --idle-sleep-us $idle_us \
		--name "server-$k" >"$tmp/nic$k.log" 2>&1 &
	nic_pid[$k]=$!
	netns_wait_log "$tmp/nic$k.log" "^nic: forwarding" "${nic_pid[$k]}" "splitnic-nic $k" ||
		fail "$NETNS_WHY"
}
start_host() {
	local k=$1 ns=snipvs-s$1-$tag
	ip netns exec "$ns" "$HOST" -l $lc_host --no-huge -m 128 --file-prefix "snipvsh$k$tag" \
		--no-pci --vdev "net_memif0,role=client,socket=$tmp/memif$k.sock,socket-abstract=no" \
		-- --model "$CNN:coproc:$K" --ip "10.89.$k.1" --allow 10.89.0.0/16 --queue 512 --idle-sleep-us $idle_us \
		--nic-timeout-us 2000000 --drain-hold-ms 2500 \
		--name "server-$k-host" --stats-file "$tmp/host$k.final" >"$tmp/host$k.log" 2>&1 &
	host_pid[$k]=$!
	netns_wait_log "$tmp/host$k.log" "^host: serving" "${host_pid[$k]}" "splitnic-host $k" ||
		fail "$NETNS_WHY"
}
# host_stats K:KEY...: counters of the hosts (telemetry), one line, in one Python process;
# KEY "answered": the requests a host saw answered, by its NIC or itself
host_stats() {
	$PY - "$tag" "$@" <<'EOF'
import json, socket, sys
got = {}
def stats(k):
    if k not in got:
        s = socket.socket(socket.AF_UNIX, socket.SOCK_SEQPACKET)
        s.connect(f"/var/run/dpdk/snipvsh{k}{sys.argv[1]}/dpdk_telemetry.v2")
        json.loads(s.recv(16384))
        s.send(b"/splitnic/host/stats")
        got[k] = json.loads(s.recv(65536))["/splitnic/host/stats"]
    return got[k]
out = []
for a in sys.argv[2:]:
    k, key = a.split(":")
    s = stats(k)
    out.append(s["answered_nic"] + s["answered_host"] if key == "answered" else s[key])
print(*out)
EOF
}
rs_count() { ip netns exec "$ns_r" ipvsadm -Ln -u "$VIP:21326" 2>/dev/null | grep -c -- '->.*Masq'; }

K=$(netns_split "$S" "$CNN") || fail "split point of $CNN"
netns_run_classes "$CNN" "$tmp/cpu" --images "$IMG" --labels "$LAB" --count "$N" ||
	fail "splitnic run"

mark "reference classes"
start_nic 1; start_host 1; start_nic 2; start_host 2; start_nic 3
# a NIC whose host is away: degraded, and the check fails
out=$(ip netns exec "$ns_r" "$S" client --health 10.89.3.1 --timeout-ms 300 2>&1)
rc=$?
echo "$out" | head -1
echo "$out" | grep -q "(splitnic-nic) degraded, " && [ $rc = 1 ] ||
	fail "a NIC without its host: --health exit $rc, want 1 and degraded"
start_host 3
mark "servers started"
t_start=$(since "$T0")
for k in 1 2 3; do # each server healthy as a prober sees it (NIC, then its host)
	ok=0
	for _ in $(seq 50); do
		ip netns exec "$ns_r" "$S" client --health "10.89.$k.1" --timeout-ms 300 \
			>"$tmp/health$k.txt" 2>&1 && { ok=1; break; }
		sleep 0.1
	done
	[ $ok = 1 ] || { cat "$tmp/health$k.txt"; fail "server $k not healthy"; }
done
cat "$tmp/health1.txt"

lab/ipvs-setup.sh --vip "$VIP" --scheduler mh --method nat --delay-loop 1 \
	--check-timeout-ms 1000 --misc-timeout 10 --splitnic "$S" --keepalived "$tmp/keepalived.conf" \
	10.89.1.1 10.89.2.1 10.89.3.1 || fail "lab/ipvs-setup.sh"
ip netns exec "$ns_r" keepalived --dont-fork --log-console --log-detail --check \
	--use-file "$tmp/keepalived.conf" --pid "$tmp/ka.pid" --checkers_pid "$tmp/kac.pid" \
	>"$tmp/keepalived.log" 2>&1 &
ka_pid=$!
for _ in $(seq 100); do
	[ "$(rs_count)" = 3 ] && break
	sleep 0.1
done
[ "$(rs_count)" = 3 ] || fail "keepalived did not add the three servers"
mark "keepalived added the three servers"
ip netns exec "$ns_r" ipvsadm -Ln

client() { # OUT-PREFIX [ARGS...]
	local out=$1
	shift
	ip netns exec "$ns_c" "$S" client "$VIP" --images "$IMG" --labels "$LAB" --count "$N" \
		--outstanding 64 --sockets 2048 --retries 30 --timeout-ms 1000 --json \
		--classes "$out.classes" "$@" >"$out.json"
}
check_run() { # NAME OUT-PREFIX
	$PY - "$1" "$2.json" "$2.classes" "$tmp/cpu.classes" "$N" <<'EOF' || fail "$1"
import json, sys
name, cli, got, want, n = sys.argv[1], json.load(open(sys.argv[2])), sys.argv[3], sys.argv[4], int(sys.argv[5])
got = [int(l) for l in open(got)]
want = [int(l) for l in open(want)]
diff = sum(1 for a, b in zip(got, want) if a != b)
print(f"{name}: {cli['responses']}/{cli['requests']} answered, {cli['errors']['total']} errors, "
      f"{cli['timeouts']} timeouts, {cli['retransmissions']} retransmissions "
      f"({cli['busy_retries']} after busy), {cli['duplicates']} duplicate answers dropped, "
      f"classes differing from splitnic run: {diff}, accuracy {cli['accuracy']:.4f}; "
      f"{cli['throughput_rps']:.0f} req/s, p50 {cli['latency_us']['p50']:.0f} us, "
      f"p99 {cli['latency_us']['p99']:.0f} us")
bad = []
if cli["responses"] != n or len(got) != n or len(want) != n or min(got) < 0:
    bad.append(f"{cli['responses']} answered of {n}")
if cli["errors"]["total"] or cli["timeouts"] or cli["stray"]:
    bad.append("errors, timeouts or stray answers")
if diff:
    bad.append(f"{diff} classes differ from splitnic run")
if bad:
    print("FAIL: " + "; ".join(bad))
    sys.exit(1)
EOF
}

# --- 1. spread ---------------------------------------------------------------------------------
read -r a1 a2 a3 <<<"$(host_stats 1:answered 2:answered 3:answered)"
a0=(- "$a1" "$a2" "$a3")
t=$(date +%s.%N)
client "$tmp/spread" || fail "client (spread) exited $?"
echo "spread run: $(since "$t") s"
check_run spread "$tmp/spread"
counts=
for k in 1 2 3; do
	counts="$counts $(($(host_stats $k:answered) - a0[k]))"
done
ip netns exec "$ns_r" ipvsadm -Ln --stats -u "$VIP:21326"
for k in 1 2 3; do
	echo "server $k: $(dpdk_telemetry "snipvsh$k$tag" /splitnic/host/stats | tr -d '{}"' |
		tr ',' '\n' | grep -E 'error|fallback|requests|fragments' | grep -v ': 0$' | tr '\n' ' ')"
done
$PY - "$N" "$tmp/spread.json" $counts <<'EOF' || fail "spread"
import json, sys
n, c = int(sys.argv[1]), [int(x) for x in sys.argv[3:]]
# a retransmission (same request id) that reaches a server after the first copy was answered
# is answered again: the client drops the second answer, the servers count both
re = json.load(open(sys.argv[2]))["retransmissions"]
even = n / 3
print(f"per-server answers: {c} (sum {sum(c)}, even {even:.0f}, {re} retransmissions, "
      f"largest deviation {max(abs(x - even) for x in c) / even * 100:.1f}%)")
if not n <= sum(c) <= n + re or any(abs(x - even) > 0.2 * even for x in c):
    print("FAIL: not all answered by the servers, or not within 20% of even")
    sys.exit(1)
EOF

# --- 2. failover -------------------------------------------------------------------------------
read -r a1 a2 a3 <<<"$(host_stats 1:answered 2:answered 3:answered)"
a0=(- "$a1" "$a2" "$a3")
# the router's count of the datagrams it sent server 2 (ipvsadm, not a Python process per look:
# those cost seconds in User-Mode Linux under this load); 4 per request
rs2_pkts() {
	ip netns exec "$ns_r" ipvsadm -Ln --stats --exact -u "$VIP:21326" |
		awk '$2 == "10.89.2.1:21326" { print $4 }'
}
p0=$(rs2_pkts)
client "$tmp/failover" --payload 300 &
cli_pid=$!
# keepalived's check as it runs under this load, timed beside the run (not to delay the kill):
# its own start and answer (a process start costs seconds in User-Mode Linux under this load)
(
	sleep 1
	t=$EPOCHREALTIME
	ip netns exec "$ns_r" "$S" client --health 10.89.1.1 --timeout-ms 1000 >/dev/null 2>&1 ||
		exit 1
	echo $(((${EPOCHREALTIME/./} - ${t/./}) / 1000)) >"$tmp/check_ms"
) &
check_pid=$!
for _ in $(seq 600); do
	[ $(($(rs2_pkts) - p0)) -ge $((4 * N / 18)) ] && break
	sleep 0.05
done
# the time from the kill to the real server's removal, read from /proc/net/ip_vs in one shell
# (10.89.2.1 is 0A590201 there); at most delay_loop 1 s + the failing check's 1 s + the slack:
# 1 s, or twice the check's own time where that is longer (the check running at the kill, then
# the failing one, each start to finish)
removed_ms=$(ip netns exec "$ns_r" bash -c 'kill -KILL "$1" "$2"; t=$EPOCHREALTIME
	while :; do
		v=$(</proc/net/ip_vs)
		[[ $v == *0A590201* ]] || break
		[ "$(((${EPOCHREALTIME/./} - ${t/./}) / 1000))" -gt 60000 ] && exit 1
		sleep 0.005
	done
	echo $(((${EPOCHREALTIME/./} - ${t/./}) / 1000))' - "${host_pid[2]}" "${nic_pid[2]}") ||
	fail "keepalived did not remove the killed server within 60 s"
wait "$check_pid" || fail "server 1's health check failed under load"
check_ms=$(<"$tmp/check_ms")
limit_ms=$((2000 + (2 * check_ms > 1000 ? 2 * check_ms : 1000)))
[ "$removed_ms" -le "$limit_ms" ] ||
	fail "keepalived removed the killed server after $removed_ms ms, more than $limit_ms ms" \
		"(a check took $check_ms ms)"
removed=$(awk -v ms="$removed_ms" 'BEGIN { printf "%.2f", ms / 1000 }')
wait "${host_pid[2]}" "${nic_pid[2]}" 2>/dev/null
host_pid[2]= nic_pid[2]=
rm -rf /var/run/dpdk/snipvs?2"$tag"
read -r a1 a3 <<<"$(host_stats 1:answered 3:answered)"
echo "server 2 killed after $((a1 - a0[1] + a3 - a0[3])) answers" \
	"by the others: keepalived removed it after ${removed} s (at most $limit_ms ms: a check" \
	"took $check_ms ms)"
wait "$cli_pid" || fail "client (failover) exited $?"
check_run failover "$tmp/failover"
retrans=$($PY -c "import json; print(json.load(open('$tmp/failover.json'))['retransmissions'])")
[ "$retrans" -gt 0 ] ||
	fail "no retransmission in the failover run: the kill came too late to test failover"
expired_all=0
for k in 1 3; do
	read -r expired full frags answered <<<"$(host_stats $k:reasm_expired $k:error_busy_reasm \
		$k:fragments $k:answered)"
	expired_all=$((expired_all + expired))
	[ "$full" = 0 ] || fail "server $k: reassembly table full"
	[ "$frags" -ge $((4 * (answered - a0[k]))) ] ||
		fail "server $k: fewer than 4 fragments per request in the failover run"
done
echo "reassemblies expired on the two others: $expired_all ($retrans retransmissions)"
[ "$expired_all" -le "$retrans" ] ||
	fail "$expired_all reassemblies expired, more than the $retrans retransmitted requests"
grep -h "Removing service\|Adding service\|Misc check.*failed\|exited with status" \
	"$tmp/keepalived.log" | tail -3

mark "failover done"
# --- 3. draining -------------------------------------------------------------------------------
# a prober (the Python client) asks server 1's host every 5 ms and logs each state change
ip netns exec "$ns_r" $PY - "$tmp/states" <<'EOF' &
import sys, time
sys.path.insert(0, "client/python")
from splitnic_client import Client
out, last, quiet = open(sys.argv[1], "w", buffering=1), None, None
with Client("10.89.1.1") as c:
    while True:
        try:
            h = c.health("host", timeout=0.3)
            quiet = None
            if h.state != last:
                out.write(f"{h.state} {h.ident} in_flight {h.in_flight}\n")
                last = h.state
        except TimeoutError:
            quiet = quiet or time.monotonic()
            if last is not None and time.monotonic() - quiet > 1.5:
                out.write("no answer\n")
                break
        time.sleep(0.005)
EOF
prober_pid=$!
r0=$(host_stats 1:requests) # the counter is cumulative: 300 more than before this load
ip netns exec "$ns_c" "$S" client 10.89.1.1 --images "$IMG" --count 3000 --outstanding 256 \
	--timeout-ms 5000 --json >"$tmp/drain-load.json" 2>/dev/null & # refused once draining
load_pid=$!
for _ in $(seq 200); do
	[ "$(host_stats 1:requests)" -ge $((r0 + 300)) ] && grep -q serving "$tmp/states" 2>/dev/null && break
	sleep 0.05
done
t=$EPOCHREALTIME
kill -TERM "${host_pid[1]}"
wait "${host_pid[1]}"
rc=$?
held_ms=$(((${EPOCHREALTIME/./} - ${t/./}) / 1000))
host_pid[1]=
wait "$load_pid" "$prober_pid"
cat "$tmp/states"
[ "$rc" = 0 ] || fail "splitnic-host exited $rc after SIGTERM"
grep -q "stopped, 0 request(s) left" "$tmp/host1.log" || fail "splitnic-host left requests"
grep -q "^draining server-1-host" "$tmp/states" ||
	fail "HEALTH never said draining while splitnic-host drained"
[ "$held_ms" -ge 2500 ] || fail "splitnic-host left after $held_ms ms, before --drain-hold-ms 2500"
echo "drain: $(grep 'draining' "$tmp/host1.log" | head -1), exited 0 after $held_ms ms" \
	"(--drain-hold-ms 2500) with its table empty"

echo "pass: IPVS (mh, mh-port, NAT) over three co-processor servers checked by keepalived:" \
	"$N requests x 2 answered with the classes of splitnic run, spread within 20%," \
	"failover in ${removed} s with nothing lost or answered twice, draining seen;" \
	"$(since "$T0") s"
