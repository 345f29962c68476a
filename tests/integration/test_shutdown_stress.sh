#!/usr/bin/env bash
# splitnic-nic and splitnic-host over memif, stopped together after (and during) heavy traffic,
# STRESS_N times (default 8, one round per way of stopping below; `make stress` runs 50):
#
#   cli (10.88.7.2, vc) ==veth== nic ns: [vw] splitnic-nic [memif server] <-> [memif client]
#                                                                      splitnic-host
#
# Each round starts both (co-processor CNN, --notify-host), drives them with an open-loop
# client well above capacity for a moment (at least 100 ACTIVATIONs through the NIC, read from
# its telemetry), and while that traffic is still flowing stops both in one of these ways, in
# turn:
#   term-host-nic   SIGTERM to the host, then at once to the NIC
#   term-nic-host   SIGTERM to the NIC, then at once to the host
#   term-both       SIGTERM to both in one kill(1)
#   kill-host       SIGKILL to the host, SIGTERM to the NIC
#   kill-nic        SIGKILL to the NIC, SIGTERM to the host
#   kill-host-late  SIGKILL to the host; the NIC goes on under the traffic (its memif link
#                   gone) for a moment, then SIGTERM
#   term-host-late  SIGTERM to the host; once it has exited, the NIC goes on for a moment, then
#                   SIGTERM
#   restart-host    the host SIGKILLed and started again three times under the traffic (the NIC
#                   must go on and serve the new host: ACTIVATIONs through it again), then
#                   SIGTERM to both
# A process stopped with SIGTERM must exit 0 within 15 s with its graceful message; a crash is
# a surviving process killed by a signal (segfault, abort), a non-zero exit, a hang, or a
# sanitizer/PANIC line in its log. A SIGKILLed process is expected to die of SIGKILL. A server
# that exits removes its DPDK runtime folder (/var/run/dpdk/PREFIX) itself; after each round
# those of the killed ones are removed, and at the end none of this test's may be left.
# Exit 0 pass, 1 fail, 77 skip (only when not root, and never under CI=true).
set -u
cd "$(dirname "$0")/../.."
. tests/integration/paths.sh
CNN=${STRESS_MODEL:-$B/models/fmnist-bcnn.snm}
N=${STRESS_N:-8}
. lab/netns.sh

netns_need_root "af_packet and memif"
netns_need_files FAIL: "make all" "$S" "$NIC" "$HOST" "$CNN" "$IMG" "$LAB"

tag=$$
ns_c=snst-cli-$tag
ns_n=snst-nic-$tag
tmp=$(mktemp -d)
nic_pid=
host_pid=
cli_pid=
cleanup() {
	for p in $cli_pid $host_pid $nic_pid; do kill -KILL "$p" 2>/dev/null && wait "$p" 2>/dev/null; done
	netns_cleanup "/var/run/dpdk/snstn$tag" "/var/run/dpdk/snsth$tag" "$tmp"
}
trap cleanup EXIT
fail() {
	echo "FAIL: round $round ($how): $*"
	netns_logs "$tmp" nic host
	exit 1
}

netns_wire "$ns_c" "$ns_n" 10.88.7.2/24 || fail "namespaces and veth: $NETNS_WHY"

K=$(netns_split "$S" "$CNN") || fail "split point"

start_pair() {
	rm -f "$tmp/memif.sock"
	: >"$tmp/nic.log"
	ip netns exec "$ns_n" "$NIC" -l 0 --no-huge -m 512 --file-prefix "snstn$tag" --no-pci \
		--vdev net_af_packet0,iface=vw \
		--vdev "net_memif0,role=server,socket=$tmp/memif.sock,socket-abstract=no" -- \
		--model "$CNN@$K" --ip 10.88.7.1 --notify-host --executors 16 >"$tmp/nic.log" 2>&1 &
	nic_pid=$!
	netns_wait_log "$tmp/nic.log" "^nic: forwarding" "$nic_pid" splitnic-nic || fail "$NETNS_WHY"
	start_host
}

start_host() {
	: >"$tmp/host.log"
	ip netns exec "$ns_n" "$HOST" -l 1 --no-huge -m 512 --file-prefix "snsth$tag" --no-pci \
		--vdev "net_memif0,role=client,socket=$tmp/memif.sock,socket-abstract=no" -- \
		--model "$CNN:coproc:$K" --ip 10.88.7.1 --allow 10.88.7.0/24 --drain-ms 2000 \
		--nic-timeout-us 100000 >"$tmp/host.log" 2>&1 &
	host_pid=$!
	netns_wait_log "$tmp/host.log" "^host: serving" "$host_pid" splitnic-host || fail "$NETNS_WHY"
	for _ in $(seq 100); do # the memif link, seen from the host
		dpdk_telemetry "snsth$tag" /splitnic/host/stats 2>/dev/null | grep -q '"link_up": 1' && return 0
		sleep 0.1
	done
	fail "memif link did not come up"
}

nic_stat() { dpdk_telemetry "snstn$tag" /splitnic/nic/stats | $PY -c "import json,sys; print(json.load(sys.stdin)['$1'])"; }

# wait_exit PID WHAT WANT: WANT "term" (exit 0) or "kill" (died of SIGKILL); within 15 s
wait_exit() {
	local pid=$1 what=$2 want=$3 rc
	for _ in $(seq 150); do kill -0 "$pid" 2>/dev/null || break; sleep 0.1; done
	if kill -0 "$pid" 2>/dev/null; then
		kill -ABRT "$pid" 2>/dev/null
		wait "$pid" 2>/dev/null
		fail "$what did not exit within 15 s"
	fi
	{ wait "$pid"; } 2>/dev/null # no "Killed" line from the shell
	rc=$?
	if [ "$want" = kill ]; then
		[ "$rc" -eq 137 ] || fail "$what: SIGKILLed, but exited $rc"
		return 0
	fi
	[ "$rc" -lt 128 ] || fail "$what crashed: killed by signal $((rc - 128)) ($(kill -l $((rc - 128)) 2>/dev/null))"
	[ "$rc" -eq 0 ] || fail "$what exited $rc"
}

check_logs() {
	local l
	for l in nic host; do
		if grep -qiE 'segmentation|sanitizer|PANIC|core dumped|Aborted|double free|corrupted' "$tmp/$l.log"; then
			fail "$l.log: $(grep -iE 'segmentation|sanitizer|PANIC|core dumped|Aborted|double free|corrupted' "$tmp/$l.log" | head -3)"
		fi
	done
	grep -q "^nic: SIGTERM" "$tmp/nic.log" || [ "$1" = kill-nic ] || fail "splitnic-nic: no graceful-shutdown line"
	grep -q "SIGTERM: draining" "$tmp/host.log" || [ "${1%-late}" = kill-host ] || fail "splitnic-host: no graceful-shutdown line"
}

modes=(${STRESS_MODES:-term-host-nic term-nic-host term-both kill-host kill-nic kill-host-late term-host-late restart-host})
declare -A done_by
round=0
how=setup
for round in $(seq "$N"); do
	how=${modes[$(((round - 1) % ${#modes[@]}))]}
	start_pair
	ip netns exec "$ns_c" "$S" client 10.88.7.1 --images "$IMG" --labels "$LAB" \
		--count 200000 --rate 5000 --timeout-ms 300 --json >"$tmp/client.json" 2>&1 &
	cli_pid=$!
	sleep "${STRESS_TRAFFIC_S:-1.5}"
	act=$(nic_stat activations) || fail "telemetry /splitnic/nic/stats"
	[ "$act" -ge 100 ] || fail "only $act ACTIVATIONs through the NIC before the stop: no heavy traffic"
	{ # the shell's own "Killed" notices go to shell.err
	case $how in
	term-host-nic) kill -TERM "$host_pid"; kill -TERM "$nic_pid" ;;
	term-nic-host) kill -TERM "$nic_pid"; kill -TERM "$host_pid" ;;
	term-both) kill -TERM "$host_pid" "$nic_pid" ;;
	kill-host) kill -KILL "$host_pid"; kill -TERM "$nic_pid" ;;
	kill-nic) kill -KILL "$nic_pid"; kill -TERM "$host_pid" ;;
	kill-host-late) kill -KILL "$host_pid"; sleep 0.3; kill -TERM "$nic_pid" ;;
	restart-host)
		for _ in 1 2 3; do
			kill -KILL "$host_pid"
			wait "$host_pid"
			rm -rf "/var/run/dpdk/snsth$tag"
			kill -0 "$nic_pid" 2>/dev/null || fail "splitnic-nic died when the host was killed"
			start_host
			sleep 1
		done
		n2=$(nic_stat activations)
		[ "$n2" -ge $((act + 100)) ] || fail "the restarted hosts got only $((n2 - act)) ACTIVATIONs through"
		kill -TERM "$host_pid" "$nic_pid"
		;;
	term-host-late)
		kill -TERM "$host_pid"
		for _ in $(seq 150); do kill -0 "$host_pid" 2>/dev/null || break; sleep 0.1; done
		sleep 0.3
		kill -TERM "$nic_pid"
		;;
	esac
	wait_exit "$nic_pid" splitnic-nic "$([ "$how" = kill-nic ] && echo kill || echo term)"
	nic_pid=
	wait_exit "$host_pid" splitnic-host "$([ "${how%-late}" = kill-host ] && echo kill || echo term)"
	host_pid=
	kill -KILL "$cli_pid" 2>/dev/null
	wait "$cli_pid" 2>/dev/null
	cli_pid=
	} 2>>"$tmp/shell.err"
	check_logs "$how"
	# a server that exited (not SIGKILLed) removed its EAL runtime folder itself
	[ "$how" = kill-nic ] || [ ! -e "/var/run/dpdk/snstn$tag" ] ||
		fail "splitnic-nic left /var/run/dpdk/snstn$tag behind"
	[ "${how%-late}" = kill-host ] || [ ! -e "/var/run/dpdk/snsth$tag" ] ||
		fail "splitnic-host left /var/run/dpdk/snsth$tag behind"
	rm -rf "/var/run/dpdk/snstn$tag" "/var/run/dpdk/snsth$tag"
	done_by[$how]=$((${done_by[$how]:-0} + 1))
	echo "round $round: $how: clean after $act ACTIVATIONs ($(grep -o '^nic: SIGTERM after [0-9]* loop turns' "$tmp/nic.log" || echo 'nic SIGKILLed'))"
done
left=$(ls -d /var/run/dpdk/snst*"$tag" 2>/dev/null)
[ -z "$left" ] || fail "DPDK runtime folders left: $left"
summary=$(for m in "${modes[@]}"; do printf '%s %s, ' "$m" "${done_by[$m]:-0}"; done)
echo "pass: $N of $N rounds stopped cleanly after traffic (${summary%, }); no DPDK runtime folder left"
exit 0
