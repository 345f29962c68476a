#!/usr/bin/env bash
# lab/sweep_lab.sh VERB TAG ...: the packet path that `splitnic sweep --packet` and
# `splitnic calibrate --packet` measure, in three network namespaces of their own (root). The
# namespace plumbing is lab/netns.sh's.
#
#   snsw-TAG-c  front-end   vc 10.89.0.2/24 ==veth== vw  snsw-TAG-n: splitnic-nic, wire port vw,
#                                                    vn  host port vn (net_af_packet both)
#   snsw-TAG-h  splitnic-host  vl (net_af_packet) ==veth== '
#
# The host <-> NIC link is a veth pair rather than memif so that it can be given a rate: `shape`
# puts a tc tbf qdisc on both of its ends (vl: host -> NIC, ACTIVATIONs and the host's
# RESPONSEs; vn: NIC -> host, the REQUESTs passed up and the completion notices) and the DPDK
# ports on them send through the qdisc (net_af_packet qdisc_bypass=0), so a frame waits for its
# tokens: transfer time is spent, not added. tbf counts a frame's bytes from the Ethernet header
# (14 + 20 + 8 bytes of Ethernet, IPv4 and UDP headers before the payload) and lets up to
# BURST bytes through at once when its bucket is full. `splitnic sweep --packet` gives one full
# frame and 100 us of the rate (the timer that releases a held frame fires late, and a bucket of
# one frame loses the tokens of that lateness at every frame; see docs/split-planning.md);
# without BURST (or 0), $LAB_BURST (default 1,600: one full frame).
#
#   up TAG                   the namespaces and veths (idempotent); the addresses; IPv6 off
#   shape TAG GBPS|none [BURST]
#                            tbf at GBPS Gbit/s, a bucket of BURST bytes, on both ends of the
#                            link (none: no qdisc)
#   start TAG DIR NIC-ARGS -- [HOST-ARGS]
#                            splitnic-nic (EAL: $LAB_NIC_EAL, default -l 0) with NIC-ARGS
#                            after its "--", then, when HOST-ARGS are given, splitnic-host
#                            (EAL: $LAB_HOST_EAL, default -l 1) with them; both with the
#                            front-end's network allowed (replies larger than requests: a
#                            stand-alone model's scores outweigh a small input); both answer for
#                            10.89.0.1. Waits (up to a minute each) until both serve and the
#                            host's link is up. Logs, pid files and --stats-file outputs in DIR.
#   stop TAG DIR             SIGTERM to both (SIGKILL after 5 s), their DPDK runtime folders
#                            removed
#   client TAG ARGS...       `splitnic client 10.89.0.1 ARGS...` in the front-end namespace, on
#                            the NIC's core (LAB_CLIENT_CPUS, default the cores of LAB_NIC_EAL's
#                            -l; none: wherever the scheduler puts it): the load and the emulated
#                            NIC, both standing for what is outside the host, on one core,
#                            splitnic-host on its own, so that a measurement does not depend on
#                            which core the scheduler gave the client that round
#   tc TAG                   tc -s qdisc of both link ends (bytes and frames sent, drops)
#   down TAG                 stops whatever still runs in the namespaces, removes them and the
#                            DPDK runtime folders (snswn-TAG, snswh-TAG)
#
# Binaries: $SPLITNIC (default: the tree's build/splitnic, else the installed one, this script
# being in PREFIX/share/splitnic/lab/) and splitnic-nic / splitnic-host beside it.
set -u
cd "$(dirname "$0")/.."
. lab/netns.sh
S=${SPLITNIC:-build/splitnic}
[ -n "${SPLITNIC:-}" ] || [ -x "$S" ] || [ ! -x ../../bin/splitnic ] || S=../../bin/splitnic
S=$(realpath "$S")
B=$(dirname "$S")
LAB_BURST=${LAB_BURST:-1600}
ADDR=10.89.0.1

die() {
	echo "sweep_lab: $*" >&2
	exit 1
}

[ $# -ge 2 ] || die "usage: lab/sweep_lab.sh up|shape|start|stop|client|tc|down TAG ..."
verb=$1 tag=$2
shift 2
[[ $tag =~ ^[a-z0-9]{1,8}$ ]] || die "TAG: 1 to 8 lower-case letters or digits, got '$tag'"
ns_c=snsw-$tag-c ns_n=snsw-$tag-n ns_h=snsw-$tag-h
pfx_n=snswn-$tag pfx_h=snswh-$tag

has_ns() { ip netns list | grep -q "^$1\b"; }

up() {
	has_ns "$ns_n" && return 0
	netns_add "$ns_c" "$ns_n" "$ns_h" || die "ip netns add"
	netns_veth "$ns_c" vc "$ns_n" vw || die "veth vc-vw: $NETNS_WHY"
	netns_veth "$ns_h" vl "$ns_n" vn || die "veth vl-vn: $NETNS_WHY"
	netns_no_ipv6 "$ns_c" "$ns_n" "$ns_h"
	netns_link "$ns_c" vc 10.89.0.2/24
	netns_link "$ns_n" vw
	netns_link "$ns_n" vn
	netns_link "$ns_h" vl
	netns_tx_csum_off "$ns_c" vc || die "ethtool -K vc tx off"
}

shape() {
	local rate=$1 burst=${2:-0} dev ns out
	[ "$burst" != 0 ] || burst=$LAB_BURST
	for dev in "$ns_h vl" "$ns_n vn"; do
		ns=${dev% *} dev=${dev#* }
		ip netns exec "$ns" tc qdisc del dev "$dev" root 2>/dev/null
		[ "$rate" = none ] && continue
		# limit: 1,000 full frames of backlog before the link drops
		netns_kmods sch_tbf || die "$NETNS_WHY"
		out=$(ip netns exec "$ns" tc qdisc add dev "$dev" root tbf rate "$(awk -v g="$rate" \
			'BEGIN {printf "%.0fkbit", g * 1e6}')" burst "$burst" limit 1514000 2>&1) ||
			die "tc qdisc add dev $dev tbf rate $rate Gbit/s: ${out}${NETNS_KMOD_NOTE:+ ($NETNS_KMOD_NOTE)}"
	done
}

# wait_exit PID: up to 5 s for PID (not our child) to exit, then SIGKILL
wait_exit() {
	for _ in $(seq 50); do
		kill -0 "$1" 2>/dev/null || return 0
		sleep 0.1
	done
	kill -KILL "$1" 2>/dev/null
	sleep 0.2
}

stop() {
	local dir=$1 f pid
	for f in host nic; do
		[ -f "$dir/$f.pid" ] || continue
		pid=$(cat "$dir/$f.pid")
		kill -TERM "$pid" 2>/dev/null && wait_exit "$pid"
		rm -f "$dir/$f.pid"
	done
	rm -rf "/var/run/dpdk/$pfx_n" "/var/run/dpdk/$pfx_h"
}

# wait_ready LOG RE PID WHAT: up to 60 s (netns_wait_log's 10 s, six times) while PID runs: the
# emu platform warms each model's chain up on the emulator before it serves
wait_ready() {
	for _ in 1 2 3 4 5 6; do
		netns_wait_log "$@" && return 0
		kill -0 "$3" 2>/dev/null || return 1
	done
	return 1
}

host_link_up() {
	dpdk_telemetry "$pfx_h" /splitnic/host/stats 2>/dev/null | grep -q '"link_up": 1'
}

start() {
	local dir=$1 nic_args=() host_args=() pid
	shift
	while [ $# -gt 0 ] && [ "$1" != -- ]; do nic_args+=("$1"); shift; done
	[ $# -gt 0 ] && shift
	host_args=("$@")
	mkdir -p "$dir" || die "mkdir $dir"
	stop "$dir"
	: >"$dir/nic.log"
	# shellcheck disable=SC2086 # the EAL lcore options are words
	ip netns exec "$ns_n" "$B/splitnic-nic" ${LAB_NIC_EAL:--l 0} --no-huge -m 512 \
		--file-prefix "$pfx_n" --no-pci --vdev net_af_packet0,iface=vw \
		--vdev net_af_packet1,iface=vn,qdisc_bypass=0 -- "${nic_args[@]}" --ip "$ADDR" \
		--allow 10.89.0.0/24 --stats-file "$dir/nic.stats" >>"$dir/nic.log" 2>&1 &
	pid=$!
	echo "$pid" >"$dir/nic.pid"
	wait_ready "$dir/nic.log" "^nic: forwarding" "$pid" splitnic-nic ||
		{ tail -5 "$dir/nic.log" >&2; die "$NETNS_WHY"; }
	[ ${#host_args[@]} -eq 0 ] && return 0
	: >"$dir/host.log"
	# shellcheck disable=SC2086
	ip netns exec "$ns_h" "$B/splitnic-host" ${LAB_HOST_EAL:--l 1} --no-huge -m 512 \
		--file-prefix "$pfx_h" --no-pci --vdev net_af_packet0,iface=vl,qdisc_bypass=0 -- \
		"${host_args[@]}" --ip "$ADDR" --allow 10.89.0.0/24 --stats-file "$dir/host.stats" \
		>>"$dir/host.log" 2>&1 &
	pid=$!
	echo "$pid" >"$dir/host.pid"
	wait_ready "$dir/host.log" "^host: serving" "$pid" splitnic-host ||
		{ tail -5 "$dir/host.log" >&2; die "$NETNS_WHY"; }
	for _ in $(seq 100); do
		host_link_up && return 0
		sleep 0.1
	done
	die "splitnic-host: its link did not come up"
}

down() {
	local n pid
	for n in "$ns_c" "$ns_n" "$ns_h"; do
		has_ns "$n" || continue
		# whatever still runs inside (servers whose owner was killed before its stop):
		# deleting the namespace would leave them polling the cores, unseen
		for pid in $(ip netns pids "$n" 2>/dev/null); do
			kill -TERM "$pid" 2>/dev/null && wait_exit "$pid"
		done
		ip netns del "$n" || die "ip netns del $n"
	done
	rm -rf "/var/run/dpdk/$pfx_n" "/var/run/dpdk/$pfx_h"
}

[ "$(id -u)" = 0 ] || die "needs root (network namespaces, veths, tc)"
case "$verb" in
up) up ;;
shape)
	[ $# -eq 1 ] || [ $# -eq 2 ] || die "usage: shape TAG GBPS|none [BURST]"
	[[ $1 == none || $1 =~ ^[0-9]*\.?[0-9]+([eE][-+]?[0-9]+)?$ ]] || die "rate '$1': Gbit/s or none"
	[ $# -eq 1 ] || [ "$2" = 0 ] || [[ $2 =~ ^[1-9][0-9]{2,8}$ ]] || die "burst '$2': bytes, 100 or more"
	shape "$@"
	;;
start)
	[ $# -ge 2 ] || die "usage: start TAG DIR NIC-ARGS -- [HOST-ARGS]"
	start "$@"
	;;
stop)
	[ $# -eq 1 ] || die "usage: stop TAG DIR"
	stop "$1"
	;;
client)
	cpus=${LAB_CLIENT_CPUS:-$(sed -n 's/.*-l *\([0-9][0-9,-]*\).*/\1/p' <<<"${LAB_NIC_EAL:--l 0}")}
	if [ -n "$cpus" ] && [ "$cpus" != none ]; then
		exec ip netns exec "$ns_c" taskset -c "$cpus" "$S" client "$ADDR" "$@"
	fi
	exec ip netns exec "$ns_c" "$S" client "$ADDR" "$@"
	;;
tc)
	ip netns exec "$ns_h" tc -s qdisc show dev vl
	ip netns exec "$ns_n" tc -s qdisc show dev vn
	;;
down) down ;;
*) die "unknown verb '$verb'" ;;
esac
