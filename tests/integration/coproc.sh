# shellcheck shell=bash
# The co-processor pair's plumbing shared by test_shutdown_stress.sh and test_trust_nic.sh
# (sourced after netns.sh, never run):
#
#   coproc_net NS_C NS_N CIDR   namespaces NS_C (front-end, vc at CIDR) and NS_N (splitnic-nic's
#                               wire port vw, and splitnic-host) joined by a veth
#   coproc_split S MODEL        the op after the flatten: where the NIC's part of the CNN starts
#                               (host/model.c's default split)
#   coproc_logs DIR NAME...     the last lines of DIR/NAME.log, EAL's chatter left out

coproc_net() {
	netns_add "$1" "$2" || return 1
	netns_veth "$1" vc "$2" vw || return 1
	netns_no_ipv6 "$2" "$1"
	netns_link "$1" vc "$3"
	netns_link "$2" vw
	netns_tx_csum_off "$1" vc
}

coproc_split() {
	"${PY:-/usr/bin/python3}" - "$1" "$2" <<'PYEOF'
import subprocess, sys
out = subprocess.run([sys.argv[1], "inspect", sys.argv[2], "--ops"], capture_output=True, text=True).stdout
ops = [l.split() for l in out.split("compiled ops:")[1].splitlines()[2:] if l.strip()]
print(next(int(o[0]) for o in ops if o[1] == "flatten") + 1)
PYEOF
}

coproc_logs() {
	local dir=$1 l
	shift
	for l; do
		[ -f "$dir/$l.log" ] && { echo "--- $l.log"; grep -v '^EAL\|^TELEMETRY' "$dir/$l.log" | tail -15; }
	done
	return 0
}
