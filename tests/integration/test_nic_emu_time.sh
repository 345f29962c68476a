#!/usr/bin/env bash
# splitnic-nic's emu platform spends its modeled time for real, over the packet path:
#
#   cli (10.89.0.2, vc) ==veth== nic: [vw] splitnic-nic --platform emu [net_null, no rx]
#
# splitnic-nic holds the bundled binary MLP stand-alone on the emulator with E executors (default
# 16: a modeled time of about 0.75 ms per request, so that scheduling noise on a loaded 2-core
# machine stays small beside it). Its modeled time per request (steady state, from the telemetry
# endpoint /splitnic/nic/timing, labelled modeled there) is M; capacity 1/M.
#   1. Low load: `splitnic client` open loop at 25% of 1/M. The NIC time measured per request
#      (submit to result released: the RESPONSE's nic field; its median from the same endpoint)
#      must be within 10% of M, and the client's end-to-end p50 at least 0.95 M (results are not
#      released early).
#   2. High load: closed loop, 48 outstanding (the dispatcher's queue holds 64, so no ERROR
#      busy): requests queue (the RESPONSEs' mean queue time is over M) and the measured
#      throughput saturates at the modeled rate 1/M within 15%.
# In each, at most 5% of the requests may go without a RESPONSE (datagrams the kernel drops, or
# a queue overflowing, when other processes starve these of the CPU); how many did is printed.
# Exit 0 pass, 1 fail, 77 skip (only when not root, and never under CI=true).
set -u
cd "$(dirname "$0")/../.."
. tests/integration/paths.sh
MODEL=${NIC_MODEL:-$B/models/fmnist-bmlp.snm}
EXEC=${NIC_EMU_EXECUTORS:-16}
. lab/netns.sh

netns_need_root af_packet
netns_need_files FAIL: "make all" "$S" "$NIC" "$MODEL" "$IMG"

tag=$$
ns_c=snemu-cli-$tag
ns_n=snemu-nic-$tag
prefix=snemu$tag
tmp=$(mktemp -d)
nic_pid=
cleanup() {
	netns_kill "$nic_pid"
	netns_cleanup "/var/run/dpdk/$prefix" "$tmp"
}
trap cleanup EXIT
fail() {
	echo "FAIL: $*"
	[ -f "$tmp/nic.log" ] && tail -20 "$tmp/nic.log"
	exit 1
}

netns_wire "$ns_c" "$ns_n" 10.89.0.2/24 || fail "namespaces and veth: $NETNS_WHY"

ip netns exec "$ns_n" "$NIC" -l 0 --no-huge -m 512 --file-prefix "$prefix" --no-pci \
	--vdev net_af_packet0,iface=vw --vdev net_null0,no-rx=1 -- \
	--model "$MODEL" --executors "$EXEC" --platform emu --ip 10.89.0.1 \
	--stats-file "$tmp/final.txt" >"$tmp/nic.log" 2>&1 &
nic_pid=$!
netns_wait_log "$tmp/nic.log" "^nic: forwarding" "$nic_pid" splitnic-nic || fail "$NETNS_WHY"
grep "^nic:" "$tmp/nic.log"

timing() { dpdk_telemetry "$prefix" /splitnic/nic/timing; }
timing >"$tmp/t0.json" || fail "telemetry /splitnic/nic/timing"
modeled=$($PY -c 'import json,sys; print(json.load(open(sys.argv[1]))["m0_modeled_ns_per_request"])' "$tmp/t0.json") ||
	fail "no modeled_ns_per_request in /splitnic/nic/timing: $(cat "$tmp/t0.json")"
[ "$modeled" -gt 100000 ] || fail "modeled time $modeled ns: too small for this test (more than 100 us wanted)"
cap=$($PY -c "print(1e9 / $modeled)")
rate=$($PY -c "print(round(0.25 * $cap, 1))")
echo "modeled $modeled ns per request (capacity $cap req/s); low load $rate req/s"

# --- 1. low load: the enforced time is the modeled time ---------------------------------------
# a request lost on the way (the kernel's af_packet path drops datagrams when another suite
# starves these processes of the CPU) exits the client 3; the figures below say how many
ip netns exec "$ns_c" "$S" client 10.89.0.1 --images "$IMG" --count 300 --rate "$rate" \
	--timeout-ms 10000 --json >"$tmp/low.json"
[ $? -le 3 ] && [ -s "$tmp/low.json" ] || fail "client at low load failed"
timing >"$tmp/t1.json" || fail "telemetry after the low load"

# --- 2. high load: requests queue, the throughput saturates at the modeled rate -----------------
n_high=$($PY -c "print(max(500, int(2 * $cap)))")
ip netns exec "$ns_c" "$S" client 10.89.0.1 --images "$IMG" --count "$n_high" --outstanding 48 \
	--timeout-ms 10000 --json >"$tmp/high.json"
[ $? -le 3 ] && [ -s "$tmp/high.json" ] || fail "client at high load failed"
timing >"$tmp/t2.json" || fail "telemetry after the high load"

$PY - "$modeled" "$tmp/low.json" "$tmp/t1.json" "$tmp/high.json" "$tmp/t2.json" <<'EOF' || fail "enforced time"
import json, sys
M = float(sys.argv[1])
low, t1, high, t2 = (json.load(open(f)) for f in sys.argv[2:6])
t1 = {k[3:]: v for k, v in t1.items() if k.startswith("m0_")}
t2 = {k[3:]: v for k, v in t2.items() if k.startswith("m0_")}
bad = []
p50 = t1["nic_ns_p50"]
print(f"low load: {low['responses']}/{low['requests']} responses at {low['throughput_rps']:.0f} "
      f"req/s; NIC time p50 {p50 / 1e3:.1f} us (p90 {t1['nic_ns_p90'] / 1e3:.1f}, mean of the "
      f"RESPONSEs' nic field {low['server_mean_ns']['nic'] / 1e3:.1f}) against {M / 1e3:.1f} us "
      f"modeled ({(p50 - M) / M * 100:+.1f}%); end to end p50 {low['latency_us']['p50']:.1f} us; "
      f"released over 5% late: {t1['late_releases']}; longest computation of a result "
      f"{t1['compute_ns_max'] / 1e3:.1f} us")
def answered(name, c):
    lost = c["requests"] - c["responses"]
    errs = {k: v for k, v in c["errors"].items() if v and k != "total"}
    print(f"{name}: {lost} of {c['requests']} requests without RESPONSE (errors {errs or 0}, "
          f"{c['timeouts']} timeouts; at most 5% allowed)")
    if lost > 0.05 * c["requests"]:
        bad.append(f"{name}: {lost} of {c['requests']} requests without RESPONSE")
answered("low load", low)
if t1["samples"] < low["responses"]:
    bad.append(f"low load: telemetry has {t1['samples']} samples for {low['responses']} responses")
if abs(p50 - M) > 0.10 * M:
    bad.append(f"low load: NIC time p50 {p50} ns not within 10% of the modeled {M:.0f} ns")
if low["latency_us"]["p50"] * 1e3 < 0.95 * M:
    bad.append(f"low load: end-to-end p50 {low['latency_us']['p50']} us under the modeled time")
cap = 1e9 / M
tput = high["throughput_rps"]
q = high["server_mean_ns"]["queue"]
print(f"high load: {high['responses']}/{high['requests']} responses, {tput:.0f} req/s against "
      f"{cap:.0f} modeled ({(tput - cap) / cap * 100:+.1f}%); mean queue {q / 1e3:.0f} us, "
      f"mean NIC time {high['server_mean_ns']['nic'] / 1e3:.1f} us; released over 5% late: "
      f"{t2['late_releases'] - t1['late_releases']}; computations longer than the modeled time: "
      f"{t2['overruns']}")
answered("high load", high)
if q <= M:
    bad.append(f"high load: mean queue time {q:.0f} ns, not over one modeled request: no queueing")
if abs(tput - cap) > 0.15 * cap:
    bad.append(f"high load: {tput:.0f} req/s not within 15% of the modeled {cap:.0f} req/s")
if bad:
    print("FAIL: " + "; ".join(bad))
    sys.exit(1)
EOF

netns_term "$nic_pid" splitnic-nic || { nic_pid=; fail "$NETNS_WHY"; }
nic_pid=
grep -E "^timing_m0_(requests|nic_ns_p50|modeled_ns_per_request|late_releases) " "$tmp/final.txt" |
	tr '\n' ' '
echo
echo "pass: splitnic-nic --platform emu ($EXEC executors) spends its modeled time: low-load NIC time within 10%, high-load throughput within 15% of the modeled rate, requests queued"
exit 0
