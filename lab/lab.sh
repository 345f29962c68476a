#!/usr/bin/env bash
# lab/lab.sh up|down|status|wait-log FILE REGEX|wait-link PREFIX: the lab network that docs/getting-started.md's packet-path examples use, on one
# machine (root: network namespaces, veths, XDP). Both verbs are idempotent.
#
#   snlab-cli  (front-end)  vc  10.88.0.2/24, 10.88.1.2/24 ==veth== vw  snlab-nic  (splitnic-nic
#                                                                    vh   wire port vw, host
#   snlab-host (a plain host) hh 10.88.0.3/24            ==veth== ----'    port vh or memif)
#   snlab-cli                vxc 10.77.0.2/24 (XDP_PASS) ==veth== veth0 10.77.0.1/24 snlab-xdp
#
# splitnic-nic and splitnic-host run inside snlab-nic (`ip netns exec snlab-nic ...`), the
# client inside snlab-cli. The front-end's veth ends have TX checksum offload off (else af_packet
# sees partial UDP checksums), IPv6 is off where DPDK owns the link (nothing but our IPv4 on the
# wire), and vxc carries the dummy XDP_PASS program without which native XDP_TX on veth0 never
# reaches it. `down` deletes the namespaces (and with them the veths and XDP programs), the lab's
# memif socket and the DPDK runtime directories of those examples' --file-prefix names.
#
#   wait-log FILE REGEX   up to 20 s for a line matching REGEX in FILE (a DPDK program's log)
#   wait-link PREFIX      up to 20 s for link_up in /splitnic/host/stats of the splitnic-host
#                         started with --file-prefix PREFIX (read with dpdk-telemetry.py)
set -u
cd "$(dirname "$0")/.."
# splitnic: $SPLITNIC, else the tree's build/splitnic, else the installed one (this script in
# PREFIX/share/splitnic/lab/)
S=${SPLITNIC:-build/splitnic}
[ -n "${SPLITNIC:-}" ] || [ -x "$S" ] || [ ! -x ../../bin/splitnic ] || S=../../bin/splitnic
NS_CLI=snlab-cli NS_NIC=snlab-nic NS_HOST=snlab-host NS_XDP=snlab-xdp
MEMIF=/tmp/snlab-memif.sock
PREFIXES="snlab-nic snlab-host"

die() {
	echo "lab: $*" >&2
	exit 1
}

has_ns() { ip netns list | grep -qw "^$1"; }
has_link() { ip -n "$1" link show "$2" >/dev/null 2>&1; }

ns() {
	has_ns "$1" || ip netns add "$1" || die "ip netns add $1 failed"
	ip -n "$1" link set lo up
}

# veth NS_A IF_A NS_B IF_B: the pair, unless IF_A already exists in NS_A
veth() {
	has_link "$1" "$2" && return 0
	ip link add "$2" netns "$1" type veth peer name "$4" netns "$3" ||
		die "ip link add $2 ($1) <-> $4 ($3) failed"
}

# addr NS IF CIDR...: the addresses, the link up, complete TX checksums
addrs() {
	local n=$1 i=$2 a
	shift 2
	for a; do ip -n "$n" addr replace "$a" dev "$i" || die "address $a on $i ($n)"; done
	ip -n "$n" link set "$i" up
}

no_ipv6() { [ ! -d /proc/sys/net/ipv6 ] || ip netns exec "$1" sysctl -qw net.ipv6.conf.all.disable_ipv6=1; }
tx_off() { ip netns exec "$1" ethtool -K "$2" tx off >/dev/null || die "ethtool -K $2 tx off ($1)"; }

up() {
	[ -x "$S" ] || die "$S not built (make)"
	command -v ethtool >/dev/null || die "ethtool missing (make deps)"
	ns "$NS_CLI"
	ns "$NS_NIC"
	ns "$NS_HOST"
	ns "$NS_XDP"
	veth "$NS_CLI" vc "$NS_NIC" vw
	veth "$NS_HOST" hh "$NS_NIC" vh
	veth "$NS_XDP" veth0 "$NS_CLI" vxc
	no_ipv6 "$NS_NIC"
	addrs "$NS_CLI" vc 10.88.0.2/24 10.88.1.2/24
	addrs "$NS_HOST" hh 10.88.0.3/24
	addrs "$NS_NIC" vw
	addrs "$NS_NIC" vh
	addrs "$NS_XDP" veth0 10.77.0.1/24
	addrs "$NS_CLI" vxc 10.77.0.2/24
	tx_off "$NS_CLI" vc
	tx_off "$NS_HOST" hh
	tx_off "$NS_CLI" vxc
	tx_off "$NS_XDP" veth0
	if ! ip -n "$NS_CLI" link show vxc | grep -q ' xdp'; then
		ip netns exec "$NS_CLI" "$S" xdp pass vxc --mode native >/dev/null ||
			die "XDP_PASS on vxc ($NS_CLI) failed"
	fi
	echo "lab: up: $NS_CLI (vc 10.88.0.2 10.88.1.2, vxc 10.77.0.2), $NS_NIC (vw, vh)," \
		"$NS_HOST (hh 10.88.0.3), $NS_XDP (veth0 10.77.0.1)"
}

down() {
	local n p
	for n in "$NS_CLI" "$NS_NIC" "$NS_HOST" "$NS_XDP"; do
		if has_ns "$n"; then
			[ -n "$(ip netns pids "$n")" ] &&
				echo "lab: processes still run in $n: $(ip netns pids "$n" | tr '\n' ' ')" >&2
			ip netns del "$n" || die "ip netns del $n failed"
		fi
	done
	rm -f "$MEMIF"
	for p in $PREFIXES; do rm -rf "/var/run/dpdk/$p"; done
	echo "lab: down"
}

status() {
	local n
	for n in "$NS_CLI" "$NS_NIC" "$NS_HOST" "$NS_XDP"; do
		if has_ns "$n"; then
			echo "$n:"
			ip -n "$n" -br addr show | grep -v '^lo ' | sed 's/^/  /'
		else
			echo "$n: absent"
		fi
	done
}

wait_log() {
	[ $# -eq 2 ] || die "usage: lab/lab.sh wait-log FILE REGEX"
	for _ in $(seq 100); do
		grep -qs -- "$2" "$1" && return 0
		sleep 0.2
	done
	tail -5 "$1" >&2 2>/dev/null
	die "$1: no line matching '$2' after 20 s"
}

wait_link() {
	[ $# -eq 1 ] || die "usage: lab/lab.sh wait-link PREFIX"
	command -v dpdk-telemetry.py >/dev/null || die "dpdk-telemetry.py missing (make deps)"
	for _ in $(seq 100); do
		echo /splitnic/host/stats | dpdk-telemetry.py -f "$1" 2>/dev/null |
			grep -q '"link_up": 1' && return 0
		sleep 0.2
	done
	die "splitnic-host --file-prefix $1: its link is not up after 20 s"
}

case "${1:-}" in
wait-log)
	shift
	wait_log "$@"
	exit
	;;
wait-link)
	shift
	wait_link "$@"
	exit
	;;
esac
[ "$(id -u)" = 0 ] || die "needs root (network namespaces, veths, XDP)"
case "${1:-}" in
up) up ;;
down) down ;;
status) status ;;
*)
	echo "usage: lab/lab.sh up|down|status|wait-log FILE REGEX|wait-link PREFIX" >&2
	exit 2
	;;
esac
