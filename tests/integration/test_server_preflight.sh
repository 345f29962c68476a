#!/usr/bin/env bash
# The DPDK servers' start-up mistakes (dpdk/preflight.h, docs/operator-guide.md "Start-up
# mistakes"): each one stops splitnic-nic or splitnic-host with one line naming the cause, its
# documented exit status (1 the environment, 2 bad arguments), before EAL where EAL would fail
# on it, and leaves no runtime folder (/var/run/dpdk/PREFIX) behind:
#   a server option before "--", no "--" at all, a --vdev without its interface (2); not root,
#   no hugepages without --no-huge, a missing interface, a missing PCI address, a PCI device
#   bound to a kernel driver (where this machine has one), a memif socket in a missing folder,
#   a --vdev EAL makes no port of, a --file-prefix another live process holds, too few ports
#   (1); splitnic-nic without --ip (2); a pcap file that cannot be read, a --vdev with no such
#   driver, a model file that cannot be read (1); a bad option value, a --config that cannot be
#   read or with a key that is not an option (2). A good start prints the ports found, as
#   testpmd does.
# Exit 0 pass, 1 fail, 77 skip (only when not root, and never under CI=true).
set -u
cd "$(dirname "$0")/../.."
. tests/integration/paths.sh
. lab/netns.sh
MLP=$B/models/fmnist-bmlp.snm
CNN=$B/models/fmnist-bcnn.snm

netns_need_root "DPDK's ports"
netns_need_files FAIL: "make all" "$NIC" "$HOST" "$MLP" "$CNN"

tag=$$
pfx=snpf$tag
tmp=$(mktemp -d)
chmod 755 "$tmp"
holder=
cleanup() {
	netns_kill "$holder"
	rm -rf "$tmp" "/var/run/dpdk/$pfx" "/var/run/dpdk/${pfx}h"
}
trap cleanup EXIT
fails=0
EAL=(-l 0 --no-huge -m 128 --file-prefix "$pfx")

# expect WHO CODE PATTERN -- CMD...: exits CODE, its last line on stderr (EAL's left out)
# matches PATTERN, and no runtime folder is left behind
expect() {
	local who=$1 code=$2 pat=$3 line rc
	shift 4
	timeout 30 "$@" >"$tmp/out" 2>"$tmp/err"
	rc=$?
	line=$(grep -v '^EAL\|^TELEMETRY\|^vdev_probe\|^$' "$tmp/err" | tail -1)
	if [ "$rc" != "$code" ] || ! grep -qE -- "$pat" <<<"$line" ||
		[ -e "/var/run/dpdk/$pfx" ]; then
		echo "FAIL: $who: exit $rc (want $code), last line: $line (want /$pat/)$([ -e "/var/run/dpdk/$pfx" ] && echo "; /var/run/dpdk/$pfx left behind")"
		sed 's/^/    /' "$tmp/err" | tail -5
		fails=$((fails + 1))
		rm -rf "/var/run/dpdk/$pfx"
	else
		echo "ok: $who: exit $rc: $line"
	fi
}

for srv in nic host; do
	if [ $srv = nic ]; then
		P=$NIC
		ARGS=(--model "$MLP" --ip 10.88.40.1)
		PORTS=(--vdev net_null0 --vdev net_null1)
	else
		P=$HOST
		ARGS=(--model "$CNN:host-only" --ip 10.88.40.1)
		PORTS=(--vdev net_null0)
	fi
	expect "$srv: an option before --" 2 "^$srv: --model is splitnic-$srv's option, not EAL's: put it after --" -- \
		"$P" "${EAL[@]}" --no-pci "${PORTS[@]}" --model "$MLP" -- --ip 10.88.40.1
	expect "$srv: no -- at all" 2 "^$srv: --model is .*put it after --" -- \
		"$P" "${EAL[@]}" --no-pci "${PORTS[@]}" "${ARGS[@]}"
	expect "$srv: --vdev without its interface" 2 "^$srv: --vdev net_af_packet0: give its interface" -- \
		"$P" "${EAL[@]}" --no-pci --vdev net_af_packet0 -- "${ARGS[@]}"
	expect "$srv: not root" 1 "^$srv: not root: net_af_packet0 needs root" -- \
		setpriv --reuid=65534 --regid=65534 --clear-groups \
		"$P" "${EAL[@]}" --no-pci --vdev net_af_packet0,iface=lo -- "${ARGS[@]}"
	free=0
	for f in /sys/kernel/mm/hugepages/hugepages-*/free_hugepages; do
		[ -r "$f" ] && free=$((free + $(cat "$f")))
	done
	if grep -q " hugetlbfs " /proc/mounts && [ "$free" -gt 0 ]; then
		echo "note: $free free hugepages here: the start without them is not provoked"
	else
		expect "$srv: no hugepages, no --no-huge" 1 "^$srv: no (hugetlbfs mounted|free hugepages).*--no-huge" -- \
			"$P" -l 0 --file-prefix "$pfx" --no-pci "${PORTS[@]}" -- "${ARGS[@]}"
	fi
	expect "$srv: a missing interface" 1 "^$srv: --vdev net_af_packet0: no interface snpf-none in this network namespace" -- \
		"$P" "${EAL[@]}" --no-pci --vdev net_af_packet0,iface=snpf-none -- "${ARGS[@]}"
	expect "$srv: a missing PCI device" 1 "^$srv: PCI device 0000:7f:1f.7 not found" -- \
		"$P" "${EAL[@]}" -a 7f:1f.7 -- "${ARGS[@]}"
	kdev=
	for d in /sys/bus/pci/devices/*; do
		[ -e "$d/driver" ] || continue
		case $(basename "$(readlink "$d/driver")") in
		vfio-pci | uio_pci_generic | igb_uio | mlx5_core | mlx4_core) ;;
		*) kdev=$(basename "$d") && break ;;
		esac
	done
	if [ -n "$kdev" ]; then
		expect "$srv: a PCI device bound to a kernel driver" 1 "^$srv: PCI device $kdev is bound to .*vfio-pci" -- \
			"$P" "${EAL[@]}" -a "$kdev" -- "${ARGS[@]}"
	fi
	expect "$srv: a memif socket in a missing folder" 1 "^$srv: --vdev net_memif0: the folder $tmp/none of its socket" -- \
		"$P" "${EAL[@]}" --no-pci \
		--vdev "net_memif0,role=server,socket=$tmp/none/m.sock,socket-abstract=no" -- "${ARGS[@]}"
	expect "$srv: a --vdev EAL makes no port of" 1 "^$srv: --vdev net_memif0: EAL made no port of it" -- \
		"$P" "${EAL[@]}" --no-pci --vdev net_memif0,role=nonsense "${PORTS[@]:2}" -- "${ARGS[@]}"
done

expect "nic: without --ip" 2 "^splitnic-nic: give --ip A.B.C.D" -- \
	"$NIC" "${EAL[@]}" --no-pci --vdev net_null0 --vdev net_null1 -- --model "$MLP"
expect "nic: one port" 1 "^nic: no port 1 \(--host-port\): 1 port\(s\) found" -- \
	"$NIC" "${EAL[@]}" --no-pci --vdev net_null0 -- --model "$MLP" --ip 10.88.40.1
expect "host: no port" 1 "^host: no port" -- \
	"$HOST" "${EAL[@]}" --no-pci -- --model "$CNN:host-only" --ip 10.88.40.1
NULLS=(--no-pci --vdev net_null0 --vdev net_null1)
expect "nic: a pcap file that cannot be read" 1 "^nic: --vdev net_pcap0: rx_pcap $tmp/none.pcap: No such file or directory" -- \
	"$NIC" "${EAL[@]}" --no-pci --vdev "net_pcap0,rx_pcap=$tmp/none.pcap,tx_pcap=$tmp/tx.pcap" \
	--vdev net_null1 -- --model "$MLP" --ip 10.88.40.1
expect "nic: a --vdev with no such driver" 1 "^nic: rte_eal_init: No such device" -- \
	"$NIC" "${EAL[@]}" --no-pci --vdev net_nosuch0 --vdev net_null1 -- --model "$MLP" --ip 10.88.40.1
expect "nic: a bad option value" 2 "^splitnic-nic: --executors: an integer in 1\.\.256, got '0'" -- \
	"$NIC" "${EAL[@]}" "${NULLS[@]}" -- --model "$MLP" --ip 10.88.40.1 --executors 0
printf '[server]\nbogus = 1\n' >"$tmp/bad.conf"
expect "nic: a key that is not an option in --config" 2 "^splitnic-nic: --config: $tmp/bad.conf:2: \[server\] 'bogus' is not an option of splitnic-nic" -- \
	"$NIC" "${EAL[@]}" "${NULLS[@]}" -- --config "$tmp/bad.conf" --model "$MLP" --ip 10.88.40.1
expect "nic: a --config that cannot be read" 2 "^splitnic-nic: --config: $tmp/none.conf: No such file or directory" -- \
	"$NIC" "${EAL[@]}" "${NULLS[@]}" -- --config "$tmp/none.conf" --model "$MLP" --ip 10.88.40.1
expect "nic: a model file that cannot be read" 1 "^nic: $tmp/none.snm: open: No such file or directory" -- \
	"$NIC" "${EAL[@]}" "${NULLS[@]}" -- --model "$tmp/none.snm" --ip 10.88.40.1
expect "host: a model file that cannot be read" 1 "^host: .*$tmp/none.snm.*No such file or directory" -- \
	"$HOST" "${EAL[@]}" --no-pci --vdev net_null0 -- --model "$tmp/none.snm:host-only" --ip 10.88.40.1

# a good start prints its ports; a second process on its prefix is refused, naming it
"$NIC" -l 0 --no-huge -m 128 --file-prefix "${pfx}h" --no-pci --vdev net_null0,no-rx=1 \
	--vdev net_null1,no-rx=1 -- --model "$MLP" --ip 10.88.40.1 --idle-sleep-us 1000 \
	>"$tmp/holder.log" 2>&1 &
holder=$!
netns_wait_log "$tmp/holder.log" "^nic: forwarding" "$holder" splitnic-nic ||
	{ echo "FAIL: $NETNS_WHY"; exit 1; }
if [ "$(grep -cE '^nic: Port [01]: ([0-9A-F]{2}:){5}[0-9A-F]{2} \(net_null[01], driver net_null, socket' "$tmp/holder.log")" != 2 ]; then
	echo "FAIL: the ports found are not printed as testpmd does:"
	grep "^nic:" "$tmp/holder.log"
	fails=$((fails + 1))
else
	grep "^nic: Port" "$tmp/holder.log" | sed 's/^/ok: a good start: /'
fi
pfx_held=${pfx}h
expect "nic: a --file-prefix held by another process" 1 "^nic: --file-prefix $pfx_held: another DPDK process \(pid $holder\) holds /var/run/dpdk/$pfx_held" -- \
	"$NIC" -l 0 --no-huge -m 128 --file-prefix "$pfx_held" --no-pci --vdev net_null0 \
	--vdev net_null1 -- --model "$MLP" --ip 10.88.40.1
expect "host: a --file-prefix held by another process" 1 "^host: --file-prefix $pfx_held: another DPDK process \(pid $holder\)" -- \
	"$HOST" -l 0 --no-huge -m 128 --file-prefix "$pfx_held" --no-pci --vdev net_null0 \
	-- --model "$CNN:host-only" --ip 10.88.40.1
[ -e "/var/run/dpdk/$pfx_held/config" ] || {
	echo "FAIL: the refused start removed the holder's runtime folder"
	fails=$((fails + 1))
}
netns_term "$holder" splitnic-nic || { echo "FAIL: $NETNS_WHY"; fails=$((fails + 1)); }
holder=

[ "$fails" -eq 0 ] || { echo "FAIL: $fails start-up mistake(s) not named as documented"; exit 1; }
echo "pass: every start-up mistake stops splitnic-nic and splitnic-host with one line naming its cause and the documented exit status, no runtime folder left; a good start lists its ports"
