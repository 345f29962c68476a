#!/usr/bin/env bash
# Nothing vanishes: splitnic-nic and splitnic-host over two lossy links, every request accounted
# for by the counters of the clients, the kernel, the links and the servers:
#
#   cli (10.88.12.2, vc) == ra [relay] rb == [vw] splitnic-nic [vn] == rc [relay] rd == [vh]
#                                                                             splitnic-host
#
# The links lose, duplicate and reorder frames in both directions: tests/integration/
# lossy_relay.py between two veths each (raw AF_PACKET sockets). tc netem would do the same, but
# the kernels this runs on (CI's included) are built without sch_netem, and netem does not count
# the frames it duplicates; the relay counts everything it does.
# splitnic-nic: fmnist-bmlp stand-alone and fmnist-bcnn's NIC part, --notify-host, probing its
# host (--host-probe-ms 200, the default); splitnic-host: fmnist-bcnn co-processor, the same
# server address.
#   1. 5% loss on each of the four directions: LOSSY_COUNT (default 10,000) requests, half for
#      each model, by two clients at once that retransmit (same request id) after 250 ms up to 8
#      times. Then the sums, each of which must leave 0 unaccounted:
#        - each client: requests = responses + errors + timeouts;
#        - each hop of each link: what a sender's counter says it sent (the clients' datagrams
#          and the kernel's ICMP in the client's namespace, a DPDK port's opackets) = what the
#          relay received there; the relay's rx - dropped + duplicated = its tx = what the
#          receiver's counter says it got (a DPDK port's ipackets + imissed, the client
#          namespace's IP InReceives); the client namespace's UDP datagrams delivered = the
#          clients' datagrams received;
#        - splitnic-nic: every frame received is forwarded, answered as ARP or an inference
#          datagram; every inference datagram has one outcome counter (accepted, passed up,
#          an ERROR decided, a HEALTH report or probe, a rejected datagram); every accepted
#          REQUEST or ACTIVATION answered (or ERROR internal); splitnic-host: every REQUEST
#          accepted or refused with an ERROR, every accepted one answered by the NIC (notice)
#          or by the host;
#   2. duplication and reordering too (loss 2%, duplicate 2%, reorder 10%), 1,000 requests: the
#      same sums;
#   3. the reasons: a REQUEST of the wrong shape (Python client) gets ERROR bad_shape naming the
#      model's input, and `splitnic client` prints it; an id neither server holds gets ERROR
#      unknown_model from the NIC;
#   4. the host killed (SIGKILL): within 2 s its co-processor model's REQUESTs get ERROR
#      unavailable from the NIC (not silence), HEALTH says degraded, the stand-alone model is
#      still answered.
# Exit 0 pass, 1 fail, 77 skip (only when not root, and never under CI=true).
set -u
cd "$(dirname "$0")/../.."
. tests/integration/paths.sh
. lab/netns.sh
MLP=$B/models/fmnist-bmlp.snm
CNN=$B/models/fmnist-bcnn.snm
N=${LOSSY_COUNT:-10000}

netns_need_root "af_packet"
netns_need_files FAIL: "make all" "$S" "$NIC" "$HOST" "$MLP" "$CNN" "$IMG" "$LAB"

tag=$$
ns_c=snloss-cli-$tag
ns_n=snloss-nic-$tag
tmp=$(mktemp -d)
nic_pid=
host_pid=
relay_pid=
cleanup() {
	netns_kill "$host_pid" "$nic_pid" "$relay_pid"
	netns_cleanup "/var/run/dpdk/snln$tag" "/var/run/dpdk/snlh$tag" "$tmp"
}
trap cleanup EXIT
fail() { netns_fail "$*" "$tmp/nic.log" "$tmp/host.log"; }

netns_add "$ns_c" "$ns_n" || fail "$NETNS_WHY"
for v in "$ns_c vc $ns_n ra" "$ns_n rb $ns_n vw" "$ns_n vn $ns_n rc" "$ns_n rd $ns_n vh"; do
	# shellcheck disable=SC2086 # four words
	netns_veth $v || fail "veth: $NETNS_WHY"
done
netns_no_ipv6 "$ns_c" "$ns_n"
netns_link "$ns_c" vc 10.88.12.2/24
for d in ra rb vw vn rc rd vh; do netns_link "$ns_n" $d; done
netns_tx_csum_off "$ns_c" vc || fail "ethtool -K vc tx off"
echo "loss 0" >"$tmp/relay.json.ctl"
ip netns exec "$ns_n" $PY tests/integration/lossy_relay.py "$tmp/relay.json" ra:rb rc:rd &
relay_pid=$!
for _ in $(seq 50); do [ -e "$tmp/relay.json.ready" ] && break; sleep 0.1; done
[ -e "$tmp/relay.json.ready" ] || fail "lossy_relay.py did not start"
# no ARP from the client's side: only the clients' datagrams (and the kernel's ICMP) leave vc
ip -n "$ns_c" neigh replace 10.88.12.1 dev vc nud permanent \
	lladdr "$(ip netns exec "$ns_n" cat /sys/class/net/vw/address)" || fail "static neighbour"

ip netns exec "$ns_n" "$NIC" -l 0 --no-huge -m 512 --file-prefix "snln$tag" --no-pci \
	--vdev net_af_packet0,iface=vw --vdev net_af_packet1,iface=vn -- \
	--model "$MLP" --model "$CNN" --ip 10.88.12.1 --notify-host --executors 16 \
	>"$tmp/nic.log" 2>&1 &
nic_pid=$!
netns_wait_log "$tmp/nic.log" "^nic: forwarding" "$nic_pid" splitnic-nic || fail "$NETNS_WHY"
ip netns exec "$ns_n" "$HOST" -l 1 --no-huge -m 512 --file-prefix "snlh$tag" --no-pci \
	--vdev net_af_packet0,iface=vh -- \
	--model "$CNN:coproc" --ip 10.88.12.1 --allow 10.88.12.0/24 --nic-timeout-us 30000 \
	>"$tmp/host.log" 2>&1 &
host_pid=$!
netns_wait_log "$tmp/host.log" "^host: serving" "$host_pid" splitnic-host || fail "$NETNS_WHY"

nic_stats() { dpdk_telemetry "snln$tag" /splitnic/nic/stats; }
# the NIC says its host answers (its probes' reports come back) before the traffic starts
for _ in $(seq 50); do
	[ "$(nic_stats | $PY -c 'import json,sys; print(json.load(sys.stdin)["host_reports"])')" -gt 0 ] &&
		break
	sleep 0.1
done

# impair SPEC: the relay's impairment, every direction ("loss P dup P reorder P")
impair() {
	echo "$*" >"$tmp/relay.json.ctl" && kill -HUP "$relay_pid"
}

# snapshot FILE: every counter the sums read, as one JSON object (snapshot_once), read again
# while the host link's cumulative counts are caught in the middle of a HEALTH round trip
snapshot() {
	local try
	for try in 1 2 3 4 5; do
		snapshot_once "$1" || return 1
		# the HEALTH frames apart, the host link's counts hold since the servers started; they
		# do not when a probe or report passed between the reading of a server's own counters
		# and of its port's (one telemetry call, but not one instant): read again then
		$PY - "$1" <<'PYEOF' && return 0
import json, sys
s = json.load(open(sys.argv[1]))
n, h, r = s["nic"], s["host"], s["relay"]
ok = (n["host_opackets"] - n["host_probes"] - n["health_passed_up"] ==
      r["rc>rd"]["rx"] - r["rc>rd"]["rx_health"] and
      r["rd>rc"]["tx"] - r["rd>rc"]["tx_health"] ==
      n["host_ipackets"] + n["host_imissed"] - n["host_reports"] and
      r["rc>rd"]["tx"] - r["rc>rd"]["tx_health"] ==
      h["port_ipackets"] + h["port_imissed"] - h["health_answered"] - h["health_dropped"] and
      h["port_opackets"] - h["health_answered"] == r["rd>rc"]["rx"] - r["rd>rc"]["rx_health"])
sys.exit(0 if ok else 1)
PYEOF
		echo "snapshot $try: a HEALTH frame between a server's counters and its port's: again"
	done
}

snapshot_once() {
	{
		echo "{\"nic\": $(nic_stats), \"host\": $(dpdk_telemetry "snlh$tag" /splitnic/host/stats),"
		rm -f "$tmp/relay.json"
		kill -USR1 "$relay_pid"
		for _ in $(seq 50); do [ -e "$tmp/relay.json" ] && break; sleep 0.05; done
		echo "\"relay\": $(cat "$tmp/relay.json"),"
		echo "\"snmp\": $(ip netns exec "$ns_c" $PY -c '
import json
rows = [l.split() for l in open("/proc/net/snmp")]
print(json.dumps({a[0][:-1] + "." + k: int(v) for a, b in zip(rows[::2], rows[1::2])
                  for k, v in zip(a[1:], b[1:])}))')}"
	} >"$1" || return 1
}

# clients PREFIX COUNT: the two clients at once, COUNT requests in all (within 150 s: about 25
# for 10,000 on a quiet 2-core machine)
clients() {
	local half=$(($2 / 2)) p rc=0
	timeout 150 ip netns exec "$ns_c" "$S" client 10.88.12.1 --images "$IMG" --labels "$LAB" \
		--model "$MLP" --count "$half" --outstanding 16 --timeout-ms 250 --retries 8 \
		--json >"$1.mlp.json" &
	p=$!
	timeout 150 ip netns exec "$ns_c" "$S" client 10.88.12.1 --images "$IMG" --labels "$LAB" \
		--model "$CNN" --count $(($2 - half)) --outstanding 16 --timeout-ms 250 --retries 8 \
		--json >"$1.cnn.json" || rc=$?
	wait "$p" || rc=$?
	[ "$rc" -ne 124 ] || fail "the clients did not finish in 150 s"
	sleep 1.5 # late answers, the host's fallbacks, the probes' round trips: all settle
}

# sums PHASE BEFORE AFTER CLIENT-JSON... : every sum printed, 0 unaccounted in each
sums() {
	$PY - "$@" <<'EOF'
import json, sys
phase, before, after, clis = sys.argv[1], json.load(open(sys.argv[2])), json.load(open(sys.argv[3])), [json.load(open(f)) for f in sys.argv[4:]]
def d(path):
    a, b = after, before
    for k in path.split("/"):
        a, b = a[k], b[k]
    return a - b
bad, rows = [], []
def check(name, left, right):
    rows.append(f"  {name}: {left} = {right}" if left == right else
                f"  {name}: {left} vs {right} ({left - right:+d})")
    if left != right:
        bad.append(name)
def near(name, left, right):  # counters read a few probe periods apart
    rows.append(f"  {name}: {left} ~ {right} (at most 10 apart)")
    if abs(left - right) > 10:
        bad.append(name)
# the clients
for c in clis:
    check(f"client {c['requests']} requests = responses + errors + timeouts", c["requests"],
          c["responses"] + c["errors"]["total"] + c["timeouts"])
out = sum(c["sent"] + c["retransmissions"] for c in clis)
got = sum(c["responses"] + c["errors"]["total"] + c["late"] + c["duplicates"] + c["stray"] +
          c["busy_retries"] + sum(c["rejected"].values()) for c in clis)
# the links: sender = relay rx; relay rx - dropped + duplicated = relay tx = receiver
def r(key, k):
    return after["relay"][key][k] - before["relay"][key][k]
for key in after["relay"]:
    check(f"relay {key}: rx - dropped + duplicated = tx",
          r(key, "rx") - r(key, "dropped") + r(key, "duplicated"), r(key, "tx"))
n = lambda k: d("nic/" + k)
h = lambda k: d("host/" + k)
icmp = d("snmp/Icmp.OutMsgs")
check("client side: the kernel's UDP out = the clients' datagrams", d("snmp/Udp.OutDatagrams"), out)
check("clients' datagrams + ICMP out = relay vc>nic rx", out + icmp, r("ra>rb", "rx"))
check("relay vc>nic tx = nic wire port ipackets + imissed", r("ra>rb", "tx"),
      n("wire_ipackets") + n("wire_imissed"))
check("nic wire port opackets = relay nic>vc rx", n("wire_opackets"), r("rb>ra", "rx"))
check("relay nic>vc tx = IP datagrams in, client side", r("rb>ra", "tx"), d("snmp/Ip.InReceives"))
check("UDP delivered, client side = the clients' datagrams received", d("snmp/Udp.InDatagrams"),
      got)
# the host link, HEALTH apart (the NIC's probes and the host's reports flow all the time, and a
# snapshot reads the servers and the relay a few probe periods apart)
check("nic host port opackets - its probes = relay nic>host rx, HEALTH apart",
      n("host_opackets") - n("host_probes") - n("health_passed_up"),
      r("rc>rd", "rx") - r("rc>rd", "rx_health"))
check("relay nic>host tx = host port ipackets + imissed, HEALTH apart",
      r("rc>rd", "tx") - r("rc>rd", "tx_health"),
      h("port_ipackets") + h("port_imissed") - h("health_answered") - h("health_dropped"))
check("host port opackets = relay host>nic rx, HEALTH apart",
      h("port_opackets") - h("health_answered"), r("rd>rc", "rx") - r("rd>rc", "rx_health"))
check("relay host>nic tx = nic host port ipackets + imissed, HEALTH apart",
      r("rd>rc", "tx") - r("rd>rc", "tx_health"),
      n("host_ipackets") + n("host_imissed") - n("host_reports"))
near("NIC's probes = relay nic>host HEALTH in", n("host_probes"), r("rc>rd", "rx_health"))
near("host's reports = relay host>nic HEALTH in", h("health_answered"), r("rd>rc", "rx_health"))
# splitnic-nic: frames, inference datagrams, accepted requests
check("nic: frames in = forwarded + ARP answered + inference", n("rx_wire") + n("rx_host"),
      n("forwarded_to_host") + n("forwarded_to_wire") + n("arp_replies") + n("inference_rx"))
outcomes = ["passed_up_type", "passed_up_unknown_model", "passed_up_not_my_layer", "requests",
            "activations", "host_reports", "health_answered", "health_passed_up",
            "health_dropped", "dropped_wire_activations", "dropped_wire_replies",
            "dropped_not_allowed", "error_bad_shape", "error_draining", "error_unavailable",
            "error_unknown_model", "error_unsupported_layer", "error_too_large"]
rejected = sum(v - before["nic"][k] for k, v in after["nic"].items() if k.startswith("verdict_")
               and k != "verdict_ok")
busy_refused = n("error_busy")  # a full queue or reassembly table: refused, not accepted
check("nic: inference datagrams = one outcome each (" + ", ".join(o for o in outcomes if n(o)) + ", rejected, busy)",
      n("inference_rx"), sum(n(o) for o in outcomes) + rejected + busy_refused)
check("nic: accepted REQUESTs + ACTIVATIONs = answered + ERROR internal",
      n("requests") + n("activations"), n("answered") + n("error_internal"))
herr = sum(h(k) for k in after["host"] if k.startswith("error_"))
check("host: REQUESTs = accepted + refused (ERROR)", h("requests"), h("accepted") + herr)
check("host: accepted = answered by the NIC + by the host", h("accepted"),
      h("answered_nic") + h("answered_host"))
print(f"{phase}: " + ", ".join(f"{c['requests']} requests: {c['responses']} answered, "
      f"{c['errors']['total']} errors {c['error_reasons']}, {c['timeouts']} timeouts, "
      f"{c['retransmissions']} retransmissions" for c in clis))
print(f"{phase}: the links: " + ", ".join(
      f"{k} {r(k, 'rx')} in, {r(k, 'dropped')} lost, {r(k, 'duplicated')} duplicated, "
      f"{r(k, 'reordered')} reordered" for k in after["relay"]) + "; host fallbacks "
      f"{ {k[9:]: h(k) for k in after['host'] if k.startswith('fallback_') and h(k)} }")
print("\n".join(rows))
if bad:
    print(f"FAIL: {phase}: unaccounted in: " + "; ".join(bad))
    sys.exit(1)
EOF
}

# --- 1. 5% loss on every direction ----------------------------------------------------------
impair loss 0.05 || fail "relay"
snapshot "$tmp/s0.json" || fail "counters"
t0=$(date +%s)
clients "$tmp/loss" "$N"
snapshot "$tmp/s1.json" || fail "counters"
echo "part 1: $N requests in $(($(date +%s) - t0)) s"
sums loss "$tmp/s0.json" "$tmp/s1.json" "$tmp/loss.mlp.json" "$tmp/loss.cnn.json" ||
	fail "5% loss: requests unaccounted for"

# --- 2. duplication and reordering ----------------------------------------------------------
impair loss 0.02 dup 0.02 reorder 0.1 || fail "relay"
clients "$tmp/dup" 1000
snapshot "$tmp/s2.json" || fail "counters"
sums dup "$tmp/s1.json" "$tmp/s2.json" "$tmp/dup.mlp.json" "$tmp/dup.cnn.json" ||
	fail "duplication and reordering: requests unaccounted for"
impair loss 0 dup 0 reorder 0 || fail "relay"

# --- 3. the reasons ---------------------------------------------------------------------------
ip netns exec "$ns_c" $PY - "$MLP" <<'EOF' || fail "ERROR reasons (Python client)"
import sys
sys.path.insert(0, "client/python")
from splitnic_client import Client, ServerError, model_id
with Client("10.88.12.1") as c:
    try:
        c.request(bytes(10), (1, 1, 10), "u8", model=model_id("fmnist-bmlp"), timeout=1.0, retries=3)
        sys.exit("FAIL: a REQUEST of the wrong shape answered")
    except ServerError as e:
        print("python client:", e)
        assert e.response.error == 3 and e.response.reason == "nic: bad_shape: expects u8 1x28x28", e
    try:
        c.request(bytes(784), (1, 28, 28), "u8", model=0x5eed, timeout=1.0, retries=3)
        sys.exit("FAIL: an unknown model answered")
    except ServerError as e:
        print("python client:", e)
        assert e.response.error == 2 and e.response.detail == 0x5eed, e
EOF
ip netns exec "$ns_c" "$S" client 10.88.12.1 --shape 1,1,10 --model-id fmnist-bmlp --count 1 \
	--timeout-ms 1000 --retries 3 >"$tmp/shape.txt"
rc=$?
cat "$tmp/shape.txt"
[ $rc -eq 3 ] || fail "splitnic client (wrong shape) exited $rc, want 3"
grep -q 'error bad_shape: the server said "nic: bad_shape: expects u8 1x28x28"' "$tmp/shape.txt" ||
	fail "splitnic client does not print the server's reason"

# --- 4. the host gone -------------------------------------------------------------------------
kill -KILL "$host_pid"
wait "$host_pid" 2>/dev/null
host_pid=
t_kill=$(date +%s%N)
ip netns exec "$ns_c" $PY - "$t_kill" <<'EOF' || fail "host gone"
import sys, time
sys.path.insert(0, "client/python")
from splitnic_client import Client, ServerError, model_id
t_kill = int(sys.argv[1]) / 1e9
with Client("10.88.12.1") as c:
    while True:
        try:
            c.request(bytes(784), (1, 28, 28), "u8", model=model_id("fmnist-bcnn"), timeout=0.2)
        except ServerError as e:
            if e.response.error != 9:
                raise
            said = str(e)
            break
        except TimeoutError:
            pass
        if time.time() - t_kill > 2.0:
            sys.exit("FAIL: no ERROR unavailable 2 s after the host died")
    dt = time.time() - t_kill
    print(f"host killed: ERROR unavailable after {dt:.2f} s: {said}")
    h = c.health(timeout=1.0)
    assert h.state == "degraded", h.state
    r = c.request(bytes(784), (1, 28, 28), "u8", model=model_id("fmnist-bmlp"), timeout=1.0, retries=3)
    print(f"HEALTH {h.state}; the stand-alone model still answers (class {r.cls})")
EOF
netns_term "$nic_pid" splitnic-nic || { nic_pid=; fail "$NETNS_WHY"; }
nic_pid=
echo "pass: $N requests over two links with 5% loss each way (and 1,000 with duplication and reordering): every one answered, errored or timed out, each hop's and each server's counters summing with 0 unaccounted; ERROR reasons name the expected input; a dead host's model answered ERROR unavailable"
