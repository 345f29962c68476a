# shellcheck shell=bash
# lab/netns.sh — network-namespace and DPDK-process plumbing shared by the lab (sweep_lab.sh,
# demo_packet.sh; installed beside them), the integration tests that build their own namespaces
# and the benchmarks. Sourced, never run.
#
#   netns_need_root WHAT          exit 77 (skip) unless root; 1 instead under CI=true
#   netns_need_files PFX HINT F.. exit 1 with "PFX F missing (HINT)" for the first F missing
#   netns_add NS...               create namespaces (loopback up), deleted by netns_cleanup
#   netns_kmods MOD...            make sure the kernel has each module MOD: loaded already
#                                 (/sys/module/MOD), or loaded now by modprobe from the module
#                                 directory (the host's, or SPLITNIC_MODROOT's: User-Mode
#                                 Linux's own); where there is no module directory (or it holds
#                                 no modules.dep) the kernel must have it built in, and the
#                                 feature's first use says so (NETNS_KMOD_NOTE).
#                                 1 with NETNS_WHY naming the module, the directory and modprobe's
#                                 words when it will not load
#   netns_veth NS_A IF_A NS_B IF_B   a veth pair IF_A (in NS_A) <-> IF_B (in NS_B), still down
#                                 (1 with NETNS_WHY: ip's words and what became of module veth)
#   netns_no_ipv6 NS...           IPv6 off in those namespaces (nothing but our IPv4 on the wire;
#                                 nothing to do where the kernel has no IPv6)
#   netns_link NS IF [CIDR]       the address (if given), then the link up
#   netns_tx_csum_off NS IF       complete UDP checksums on IF (no offload af_packet would finish)
#   netns_wire NS_C NS_N CIDR     the lab's wire: namespaces NS_C (a front-end, vc at CIDR) and
#                                 NS_N (a DPDK wire port vw) joined by a veth, IPv6 off,
#                                 checksums complete on vc
#   netns_split S MODEL           the op after MODEL's flatten: where its NIC part starts by
#                                 default (`S inspect MODEL --ops`)
#   netns_direct NS_C IF_C CIDR NS_S IF_S SRV_IP
#                                 a front-end namespace facing a DPDK port directly: a veth IF_C
#                                 (NS_C, address CIDR) <-> IF_S (NS_S, no address), IPv6 off,
#                                 checksums complete, and a static neighbour SRV_IP -> IF_S's MAC
#                                 (a DPDK port answers no ARP)
#   netns_fail MSG LOG...         print "FAIL: MSG" and the last lines of each LOG that exists
#                                 (EAL and telemetry lines left out), then exit 1
#   netns_logs DIR NAME...        the last lines of DIR/NAME.log each, EAL's chatter left out
#   classes_of_scores CSV         one class a line: the arg-max of each line of scores (the lowest
#                                 index on ties), as `splitnic run --scores` writes them
#   netns_run_classes MODEL PFX ARG...  `$S run MODEL ARG...` (the reference): its scores in
#                                 PFX.csv, its --json report in PFX.json, classes in PFX.classes
#   netns_term PID WHAT           SIGTERM PID and reap it: 0 when it exited 0, else 1 with
#                                 NETNS_WHY set
#   netns_wait_log FILE RE PID WHAT  up to 10 s for a line matching RE in FILE while PID runs
#                                 (no PID: no check); 1 with NETNS_WHY set when it never comes
#   netns_kill PID...             SIGTERM and reap each non-empty PID, in order
#   netns_cleanup PATH...         delete the namespaces of netns_add, then rm -rf each PATH
#   dpdk_telemetry PREFIX EP      a telemetry endpoint of the DPDK process --file-prefix PREFIX,
#                                 as JSON on stdout

NETNS_LIST=()
NETNS_WHY=

netns_need_root() {
	[ "$(id -u)" = 0 ] && return 0
	if [ "${CI:-}" = true ]; then
		echo "FAIL: needs root (network namespaces, $1) and CI=true forbids skipping"
		exit 1
	fi
	echo "skip: not root (needs network namespaces and $1)"
	exit 77
}

netns_need_files() {
	local pfx=$1 hint=$2 f
	shift 2
	for f; do
		[ -e "$f" ] || { echo "$pfx $f missing ($hint)"; exit 1; }
	done
}

netns_add() {
	local n
	for n; do
		ip netns add "$n" || { NETNS_WHY="ip netns add $n failed"; return 1; }
		NETNS_LIST+=("$n")
		ip -n "$n" link set lo up
	done
}

NETNS_KMOD_NOTE=

netns_kmods() {
	local m dir out
	dir=${SPLITNIC_MODROOT:-}/lib/modules/$(uname -r)
	for m; do
		[ -d "/sys/module/$m" ] && continue
		if [ ! -f "$dir/modules.dep" ]; then
			NETNS_KMOD_NOTE="no modules in $dir: the kernel must have $m built in"
			continue
		fi
		if ! command -v modprobe >/dev/null; then
			NETNS_WHY="kernel module $m: modprobe is missing (Debian's kmod: make deps)"
			return 1
		fi
		if ! out=$(modprobe ${SPLITNIC_MODROOT:+-d "$SPLITNIC_MODROOT"} "$m" 2>&1); then
			NETNS_WHY="kernel module $m would not load from $dir: ${out:-modprobe failed}"
			return 1
		fi
	done
}

netns_veth() {
	local out why
	out=$(ip link add "$2" netns "$1" type veth peer name "$4" netns "$3" 2>&1) && return 0
	why="veth pair $2 ($1) <-> $4 ($3): ip said: $out"
	if [ ! -d /sys/module/veth ]; then
		NETNS_KMOD_NOTE=
		if ! netns_kmods veth; then
			NETNS_WHY="$why; $NETNS_WHY"
			return 1
		fi
		out=$(ip link add "$2" netns "$1" type veth peer name "$4" netns "$3" 2>&1) && return 0
		why="veth pair $2 ($1) <-> $4 ($3): ip said: $out${NETNS_KMOD_NOTE:+ ($NETNS_KMOD_NOTE)}"
	fi
	NETNS_WHY=$why
	return 1
}

netns_no_ipv6() {
	local n
	[ -d /proc/sys/net/ipv6 ] || return 0
	for n; do ip netns exec "$n" sysctl -qw net.ipv6.conf.all.disable_ipv6=1; done
}

netns_link() {
	[ -n "${3:-}" ] && ip -n "$1" addr add "$3" dev "$2"
	ip -n "$1" link set "$2" up
}

netns_tx_csum_off() {
	ip netns exec "$1" ethtool -K "$2" tx off >/dev/null
}

netns_wire() {
	netns_add "$1" "$2" || return 1
	netns_veth "$1" vc "$2" vw || return 1
	netns_no_ipv6 "$2" "$1"
	netns_link "$1" vc "$3"
	netns_link "$2" vw
	netns_tx_csum_off "$1" vc
}

netns_split() {
	"$1" inspect "$2" --ops |
		awk '/compiled ops:/ {on = 1} on && $2 == "flatten" {k = $1 + 1; exit} END {if (!k) exit 1; print k}'
}

netns_direct() {
	netns_veth "$1" "$2" "$4" "$5" || return 1
	netns_no_ipv6 "$1" "$4"
	netns_link "$1" "$2" "$3" && netns_link "$4" "$5" && netns_tx_csum_off "$1" "$2" &&
		ip -n "$1" neigh replace "$6" dev "$2" nud permanent \
			lladdr "$(ip netns exec "$4" cat "/sys/class/net/$5/address")"
}

netns_fail() {
	local l
	echo "FAIL: $1"
	shift
	for l; do
		[ -f "$l" ] && grep -v '^EAL\|^TELEMETRY' "$l" | tail -15
	done
	exit 1
}

netns_logs() {
	local dir=$1 l
	shift
	for l; do
		[ -f "$dir/$l.log" ] && { echo "--- $l.log"; grep -v '^EAL\|^TELEMETRY' "$dir/$l.log" | tail -15; }
	done
	return 0
}

classes_of_scores() {
	"${PY:-/usr/bin/python3}" -c '
import sys
for line in open(sys.argv[1]):
    v = [float(x) for x in line.split(",")]
    print(max(range(len(v)), key=lambda k: (v[k], -k)))' "$1"
}

netns_run_classes() {
	local model=$1 pfx=$2
	shift 2
	"$S" run "$model" "$@" --scores "$pfx.csv" --json >"$pfx.json" &&
		classes_of_scores "$pfx.csv" >"$pfx.classes"
}

# shellcheck disable=SC2034 # NETNS_WHY is the callers'
netns_term() {
	local rc
	kill -TERM "$1"
	wait "$1"
	rc=$?
	[ "$rc" -eq 0 ] && return 0
	NETNS_WHY="$2 exited $rc on SIGTERM"
	return 1
}

# shellcheck disable=SC2034 # NETNS_WHY is the callers'
netns_wait_log() {
	local file=$1 re=$2 pid=$3 what=$4
	for _ in $(seq 100); do
		grep -qs "$re" "$file" && return 0
		if [ -n "$pid" ] && ! kill -0 "$pid" 2>/dev/null; then
			NETNS_WHY="$what exited at start"
			return 1
		fi
		sleep 0.1
	done
	grep -qs "$re" "$file" && return 0
	NETNS_WHY="$what did not start"
	return 1
}

netns_kill() {
	local p
	for p; do
		[ -n "$p" ] && kill "$p" 2>/dev/null && wait "$p" 2>/dev/null
	done
	return 0
}

netns_cleanup() {
	local n
	for n in ${NETNS_LIST[@]+"${NETNS_LIST[@]}"}; do ip netns del "$n" 2>/dev/null; done
	rm -rf "$@"
}

dpdk_telemetry() {
	"${PY:-/usr/bin/python3}" - "/var/run/dpdk/$1/dpdk_telemetry.v2" "$2" <<'PYEOF'
import json, socket, sys
s = socket.socket(socket.AF_UNIX, socket.SOCK_SEQPACKET)
s.connect(sys.argv[1])
json.loads(s.recv(16384))
s.send(sys.argv[2].encode())
print(json.dumps(json.loads(s.recv(65536))[sys.argv[2]]))
PYEOF
}
