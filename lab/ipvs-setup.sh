#!/usr/bin/env bash
# lab/ipvs-setup.sh — a Linux IPVS virtual UDP service in front of several splitnic servers,
# health-checked by keepalived with `splitnic client --health` (docs/scale-out.md).
#
#   lab/ipvs-setup.sh --vip A.B.C.D[:PORT] [--scheduler sh|mh] [--method nat|dr|tun]
#       [--delay-loop S] [--check-timeout-ms MS] [--misc-timeout S] [--splitnic PATH]
#       [--keepalived FILE] [--ipvsadm FILE] [--apply] SERVER[:PORT][=WEIGHT] ...
#
# SERVER: a server's address (splitnic-nic's --ip, or splitnic-host's where no NIC is in front).
# Writes (default: to stdout, keepalived.conf first):
#   --keepalived FILE  a keepalived.conf: the virtual server (protocol UDP, the scheduler hashing
#                      on the source address and port: `sh` with sh-port or `mh` with mh-port, so
#                      that all fragments of a request reach one server) and one real_server per
#                      SERVER, each with a MISC_CHECK running `splitnic client --health` every
#                      --delay-loop seconds (default 1); a server is removed at its first failed
#                      check (no answer within --check-timeout-ms, default 500, draining,
#                      degraded) and added back at its first good one. --misc-timeout (default
#                      3 s): how long keepalived lets the check program run before counting it
#                      failed; a dead server fails after --check-timeout-ms, so this only needs
#                      to cover a slow start of the program on a loaded machine.
#   --ipvsadm FILE     the same service as ipvsadm-restore input, for a set-up without keepalived.
#   --apply            load the --ipvsadm rules now (ipvsadm-restore; root).
# --method: nat (default: the director rewrites the destination, so the servers' replies must
# come back through it: make the director the servers' gateway), dr (direct routing: the
# servers answer the front-ends themselves; they must accept the VIP as their address, which
# splitnic-nic does when given --ip VIP on a network where the director owns the VIP's ARP), tun
# (IP-in-IP to the servers).
set -euo pipefail

usage() {
	sed -n '2,/^set -euo/p' "$0" | sed '$d; s/^# \{0,1\}//'
	exit "${1:-0}"
}
die() { echo "ipvs-setup: $*" >&2; exit 2; }

vip= vport=21326 sched=sh method=nat delay=1 tmo=500 ktmo=3 splitnic=splitnic ka= ipv= apply=0
servers=()
while [ $# -gt 0 ]; do
	case $1 in
	--vip) vip=${2%%:*}; [[ $2 == *:* ]] && vport=${2##*:}; shift 2 ;;
	--scheduler) sched=$2; shift 2 ;;
	--method) method=$2; shift 2 ;;
	--delay-loop) delay=$2; shift 2 ;;
	--check-timeout-ms) tmo=$2; shift 2 ;;
	--misc-timeout) ktmo=$2; shift 2 ;;
	--splitnic) splitnic=$2; shift 2 ;;
	--keepalived) ka=$2; shift 2 ;;
	--ipvsadm) ipv=$2; shift 2 ;;
	--apply) apply=1; shift ;;
	-h | --help) usage 0 ;;
	-*) die "unknown option '$1' (--help)" ;;
	*) servers+=("$1"); shift ;;
	esac
done
ipv4() { [[ $1 =~ ^([0-9]{1,3})\.([0-9]{1,3})\.([0-9]{1,3})\.([0-9]{1,3})$ ]] &&
	for o in "${BASH_REMATCH[@]:1}"; do [ "$o" -le 255 ] || return 1; done; }
port() { [[ $1 =~ ^[0-9]+$ ]] && [ "$1" -ge 1 ] && [ "$1" -le 65535 ]; }
[ -n "$vip" ] || die "give --vip A.B.C.D[:PORT]"
ipv4 "$vip" || die "--vip: an IPv4 address, got '$vip'"
port "$vport" || die "--vip: port 1 to 65535, got '$vport'"
case $sched in sh) flag=sh-port ;; mh) flag=mh-port ;; *) die "--scheduler: sh or mh, got '$sched'" ;; esac
case $method in nat) m=-m kam=NAT ;; dr) m=-g kam=DR ;; tun) m=-i kam=TUN ;;
*) die "--method: nat, dr or tun, got '$method'" ;; esac
[[ $delay =~ ^[0-9]+$ ]] && [ "$delay" -ge 1 ] || die "--delay-loop: whole seconds >= 1, got '$delay'"
[[ $tmo =~ ^[0-9]+$ ]] && [ "$tmo" -ge 1 ] || die "--check-timeout-ms: ms >= 1, got '$tmo'"
[[ $ktmo =~ ^[0-9]+$ ]] && [ "$ktmo" -ge 1 ] && [ $((ktmo * 1000)) -gt "$tmo" ] ||
	die "--misc-timeout: whole seconds, more than --check-timeout-ms, got '$ktmo'"
[ ${#servers[@]} -ge 1 ] || die "give at least one SERVER[:PORT][=WEIGHT]"

rs_addr=() rs_port=() rs_w=()
for s in "${servers[@]}"; do
	w=1
	[[ $s == *=* ]] && { w=${s##*=}; s=${s%=*}; }
	a=${s%%:*} p=$vport
	[[ $s == *:* ]] && p=${s##*:}
	ipv4 "$a" || die "server '$s': an IPv4 address"
	port "$p" || die "server '$s': port 1 to 65535"
	[[ $w =~ ^[0-9]+$ ]] && [ "$w" -le 65535 ] || die "server '$s': weight 0 to 65535"
	rs_addr+=("$a") rs_port+=("$p") rs_w+=("$w")
done

keepalived_conf() {
	cat <<KA
# keepalived.conf for the splitnic service $vip:$vport (UDP), written by lab/ipvs-setup.sh
global_defs {
	script_user root
}

virtual_server $vip $vport {
	protocol UDP
	lvs_sched $sched
	$flag
	lvs_method $kam
	delay_loop $delay
KA
	for i in "${!rs_addr[@]}"; do
		cat <<KA

	real_server ${rs_addr[$i]} ${rs_port[$i]} {
		weight ${rs_w[$i]}
		MISC_CHECK {
			misc_path "$splitnic client --health ${rs_addr[$i]}:${rs_port[$i]} --timeout-ms $tmo"
			misc_timeout $ktmo
			retry 0
		}
	}
KA
	done
	echo "}"
}

ipvsadm_rules() {
	echo "-A -u $vip:$vport -s $sched -b $flag"
	for i in "${!rs_addr[@]}"; do
		echo "-a -u $vip:$vport -r ${rs_addr[$i]}:${rs_port[$i]} $m -w ${rs_w[$i]}"
	done
}

if [ -n "$ka" ]; then keepalived_conf >"$ka"; fi
if [ -n "$ipv" ]; then ipvsadm_rules >"$ipv"; fi
if [ -z "$ka" ] && [ -z "$ipv" ]; then
	keepalived_conf
	echo
	ipvsadm_rules | sed 's/^/# ipvsadm /'
fi
if [ "$apply" = 1 ]; then
	command -v ipvsadm >/dev/null || die "ipvsadm not installed (apt-get install ipvsadm)"
	ipvsadm_rules | ipvsadm-restore
	ipvsadm -Ln -u "$vip:$vport"
fi
