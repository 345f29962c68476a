#!/usr/bin/env bash
# make install / uninstall, and the three ways in from an installed tree:
#
#   1. `make install PREFIX=/usr/local DESTDIR=$tmp/dest`; examples/predict.c built with only
#      `pkg-config --cflags --libs splitnic` (PKG_CONFIG_PATH and PKG_CONFIG_SYSROOT_DIR into
#      the DESTDIR, LD_LIBRARY_PATH to run it) gives, on every bundled model, the classes of
#      `splitnic run`; the installed man pages render; README.md and every docs/*.md are
#      installed; the installed `splitnic run --exec gpu` finds the installed GPU executor (where
#      nvcc built one) and runs on the GPU or falls back with the GPU's own reason; `make
#      uninstall` removes every file and directory install wrote, and nothing else;
#   2. (root: namespaces) `make install PREFIX=$tmp/prefix`: the systemd units pass
#      `systemd-analyze verify`; the installed configuration files, with the lines marked EDIT
#      set for this test (interface, address, allowed network) and the memif socket and DPDK
#      file prefixes moved out of the way of other runs, start splitnic-nic and splitnic-host
#      by their units' ExecStart lines run directly; the C front-end (examples/client.c, built
#      with `pkg-config splitnic-client`) and the Python one (examples/client.py with the
#      installed splitnic_client.py) get the classes of `splitnic run` from the NIC
#      (fmnist-bmlp, stand-alone) and from host + NIC (fmnist-bcnn, co-processor); the installed
#      `splitnic sweep --packet` runs the installed lab (share/splitnic/lab/sweep_lab.sh).
# Exit 0 pass, 1 fail, 77 skip (part 2 needs root; never skipped under CI=true).
# INSTALL_COUNT=N: images per model (default 2000).
set -u
cd "$(dirname "$0")/../.."
ROOT=$PWD
. tests/integration/paths.sh
N=${INSTALL_COUNT:-2000}
. lab/netns.sh

netns_need_files FAIL: "make all" "$S" "$B/splitnic-nic" "$B/splitnic-host" "$IMG" "$LAB" \
	"$B/lib/libsplitnic.so" "$B/lib/libsplitnic-client.so"
for m in bmlp bcnn fmlp fcnn; do netns_need_files FAIL: "make all" "$B/models/fmnist-$m.snm"; done

tag=$$
tmp=$(mktemp -d)
nic_pid=
host_pid=
cleanup() {
	netns_kill "$host_pid" "$nic_pid"
	[ "$(id -u)" = 0 ] && bash lab/sweep_lab.sh down "i$tag" 2>/dev/null # the sweep's, if left
	netns_cleanup "/var/run/dpdk/sninsn$tag" "/var/run/dpdk/sninsh$tag" "$tmp"
}
trap cleanup EXIT
fail() {
	echo "FAIL: $*"
	for l in nic host; do [ -f "$tmp/$l.log" ] && { echo "--- $l.log"; grep -v '^EAL\|^TELEMETRY' "$tmp/$l.log" | tail -15; }; done
	exit 1
}
mk() { make -s --no-print-directory -C "$ROOT" B="$(realpath --relative-to="$ROOT" "$B")" "$@"; }

# the classes of `splitnic run` on the first N test images
gzip -dc "$IMG" | tail -c +17 | head -c $((N * 784)) >"$tmp/images.raw"
for m in bmlp bcnn fmlp fcnn; do
	"$S" run "$B/models/fmnist-$m.snm" --images "$IMG" --count "$N" --scores "$tmp/$m.csv" \
		>/dev/null || fail "splitnic run fmnist-$m"
	$PY - "$tmp/$m.csv" >"$tmp/$m.want" <<'EOF'
import sys
for line in open(sys.argv[1]):
    v = [float(x) for x in line.split(",")]
    print(max(range(len(v)), key=lambda k: (v[k], -k)))
EOF
done

# --- 1. DESTDIR install, the library from pkg-config, uninstall -------------------------------
dest=$tmp/dest
mk install PREFIX=/usr/local DESTDIR="$dest" >"$tmp/install.log" 2>&1 ||
	{ cat "$tmp/install.log"; fail "make install DESTDIR"; }
(cd "$dest" && find . -mindepth 1 | sort) >"$tmp/installed.list"
export PKG_CONFIG_PATH=$dest/usr/local/lib/pkgconfig PKG_CONFIG_SYSROOT_DIR=$dest
flags=$(pkg-config --cflags --libs splitnic) || fail "pkg-config splitnic"
cc -Wall -Wextra -Werror -o "$tmp/predict" "$ROOT/examples/predict.c" $flags ||
	fail "examples/predict.c with: $flags"
cflags=$(pkg-config --cflags --libs splitnic-client) || fail "pkg-config splitnic-client"
cc -Wall -Wextra -Werror -o "$tmp/client" "$ROOT/examples/client.c" $cflags ||
	fail "examples/client.c with: $cflags"
unset PKG_CONFIG_PATH PKG_CONFIG_SYSROOT_DIR
[ "$(readelf -d "$tmp/predict" | sed -n 's/.*NEEDED.*\[\(libsplitnic[^]]*\)\]/\1/p')" = libsplitnic.so.1 ] ||
	fail "predict does not need libsplitnic.so.1"
share=$dest/usr/local/share/splitnic/models
for m in bmlp bcnn fmlp fcnn; do
	LD_LIBRARY_PATH=$dest/usr/local/lib "$tmp/predict" "$share/fmnist-$m.snm" "$tmp/images.raw" \
		"$share/fmnist-$m.labels" 64 2 >"$tmp/$m.predict" || fail "predict fmnist-$m"
	cut -d' ' -f1 "$tmp/$m.predict" | cmp -s - "$tmp/$m.want" ||
		fail "predict fmnist-$m: classes differ from splitnic run"
	[ "$(wc -l <"$tmp/$m.predict")" = "$N" ] || fail "predict fmnist-$m: not $N lines"
done
grep -q "^9 Ankle boot$" "$tmp/bmlp.predict" || fail "labels not printed"
echo "pass: predict.c from the DESTDIR install: classes of splitnic run on 4 models x $N images"
for p in man1/splitnic.1 man8/splitnic-nic.8 man8/splitnic-host.8; do
	out=$(LC_ALL=C.UTF-8 groff -mandoc -Tutf8 -ww "$dest/usr/local/share/man/$p" 2>&1 >/dev/null)
	[ -z "$out" ] || fail "$p: $out"
done
echo "pass: man pages render without warnings"
docdir=$dest/usr/local/share/doc/splitnic
for f in README.md docs/*.md; do
	cmp -s "$f" "$docdir/$f" || fail "documentation: $f not installed as $docdir/$f"
done
echo "pass: README.md and $(ls docs/*.md | wc -l) docs installed in share/doc/splitnic"
lab=$dest/usr/local/share/splitnic/lab
for f in lab/*.sh; do
	cmp -s "$f" "$lab/${f#lab/}" || fail "the lab: $f not installed as $lab/${f#lab/}"
done
[ -x "$lab/sweep_lab.sh" ] || fail "the lab: sweep_lab.sh not executable"
cmp -s contrib/wireshark/splitnic.lua "$dest/usr/local/share/splitnic/wireshark/splitnic.lua" ||
	fail "the Wireshark dissector not installed in share/splitnic/wireshark"
# the installed man page describes every command of the installed splitnic and its exit status 3
man1=$dest/usr/local/share/man/man1/splitnic.1
for c in $("$dest/usr/local/bin/splitnic" --help | awk '/^commands:/ {on=1; next} on && NF {print $1} on && !NF {exit}'); do
	grep '^\.It Cm ' "$man1" | grep -oE 'Cm [a-z-]+' | grep -qx "Cm $c" || fail "man splitnic lacks $c"
done
sed -n '/^\.Sh EXIT STATUS/,/^\.Sh EXAMPLES/p' "$man1" | grep -q '^\.It 3$' || fail "man splitnic lacks exit status 3"
echo "pass: $(ls lab/*.sh | wc -l) lab scripts and the Wireshark dissector installed; man splitnic describes every command and exit status 3"
if [ -f "$B/libsncuda.so" ]; then
	"$dest/usr/local/bin/splitnic" run "$share/fmnist-bmlp.snm" --images "$IMG" --count 64 \
		--exec gpu --json >"$tmp/gpu.json" 2>"$tmp/gpu.err" ||
		fail "installed splitnic run --exec gpu: $(cat "$tmp/gpu.err")"
	if grep -q 'no usable CUDA GPU: \(GPU executor\|cannot load\)' "$tmp/gpu.err"; then
		fail "installed splitnic did not load the installed GPU executor: $(cat "$tmp/gpu.err")"
	fi
	grep -q '"exec":"gpu"' "$tmp/gpu.json" || grep -q 'falling back to the CPU kernels' "$tmp/gpu.err" ||
		fail "installed splitnic run --exec gpu: neither ran on the GPU nor said why not"
	echo "pass: installed splitnic loads lib/splitnic/libsncuda.so: $(cat "$tmp/gpu.err" || true)$(grep -o '"exec":"gpu"' "$tmp/gpu.json" || true)"
fi
touch "$dest/usr/local/lib/not-ours"
mk uninstall PREFIX=/usr/local DESTDIR="$dest" >"$tmp/uninstall.log" 2>&1 || fail "make uninstall"
left=$(cd "$dest" && find . -mindepth 1 | sort | tr '\n' ' ')
[ "$left" = "./usr ./usr/local ./usr/local/lib ./usr/local/lib/not-ours " ] ||
	fail "after uninstall, left: $left"
echo "pass: uninstall removed the $(wc -l <"$tmp/installed.list") paths install wrote, kept the one it did not"

# --- 2. the servers from their installed configuration files -------------------------------
netns_need_root "network namespaces, DPDK af_packet"
prefix=$tmp/prefix
mk install PREFIX="$prefix" >"$tmp/install2.log" 2>&1 || { cat "$tmp/install2.log"; fail "make install PREFIX"; }
units=$prefix/lib/systemd/system
command -v systemd-analyze >/dev/null || fail "systemd-analyze missing (Debian's systemd: make deps)"
systemd-analyze verify --man=no "$units/splitnic-nic.service" "$units/splitnic-host.service" \
	>"$tmp/verify.log" 2>&1 || { cat "$tmp/verify.log"; fail "systemd-analyze verify"; }
[ -s "$tmp/verify.log" ] && { cat "$tmp/verify.log"; fail "systemd-analyze verify warns"; }
echo "pass: systemd-analyze verify of both units"
etc=$prefix/etc/splitnic
grep -q "^file = $prefix/share/splitnic/models/fmnist-bmlp.snm$" "$etc/splitnic-nic.conf" ||
	fail "splitnic-nic.conf does not name the installed model"
sed -i -e 's/iface=eth1/iface=vw/; s/^ip = 192.0.2.1/ip = 10.88.5.1/' \
	-e "s|/run/splitnic/memif.sock|$tmp/memif.sock|; s/^file-prefix = splitnic-nic/file-prefix = sninsn$tag/" \
	"$etc/splitnic-nic.conf"
sed -i -e 's/^ip = 192.0.2.1/ip = 10.88.5.1/; s|^allow = 192.0.2.0/24|allow = 10.88.5.0/24|' \
	-e "s|/run/splitnic/memif.sock|$tmp/memif.sock|; s/^file-prefix = splitnic-host/file-prefix = sninsh$tag/" \
	"$etc/splitnic-host.conf"

ns_c=sninst-cli-$tag
ns_n=sninst-nic-$tag
netns_wire "$ns_c" "$ns_n" 10.88.5.2/24 || fail "namespaces and veth: $NETNS_WHY"

exec_start() { sed -n 's/^ExecStart=//p' "$units/$1.service"; }
# shellcheck disable=SC2046 # the ExecStart line's words
ip netns exec "$ns_n" $(exec_start splitnic-nic) >"$tmp/nic.log" 2>&1 &
nic_pid=$!
netns_wait_log "$tmp/nic.log" "^nic: forwarding" "$nic_pid" splitnic-nic || fail "$NETNS_WHY"
# shellcheck disable=SC2046
ip netns exec "$ns_n" $(exec_start splitnic-host) >"$tmp/host.log" 2>&1 &
host_pid=$!
netns_wait_log "$tmp/host.log" "^host: serving" "$host_pid" splitnic-host || fail "$NETNS_WHY"
for _ in $(seq 100); do
	dpdk_telemetry "sninsh$tag" /splitnic/host/stats 2>/dev/null | grep -q '"link_up": 1' && break
	sleep 0.1
done
dpdk_telemetry "sninsh$tag" /splitnic/host/stats | grep -q '"link_up": 1' || fail "memif link did not come up"
echo "pass: splitnic-nic and splitnic-host started by their units' ExecStart lines"

pyc=$prefix/lib/python$($PY -c 'import sys; print("%d.%d" % sys.version_info[:2])')/dist-packages
[ -f "$pyc/splitnic_client.py" ] || fail "splitnic_client.py not installed in $pyc"
front() { # front c|py MODEL: classes of the first N images from the server
	if [ "$1" = c ]; then
		ip netns exec "$ns_c" env LD_LIBRARY_PATH="$prefix/lib" "$tmp/client" 10.88.5.1 21326 \
			u8 1,28,28 "$tmp/images.raw" 16 "$2"
	else
		ip netns exec "$ns_c" env PYTHONPATH="$pyc" $PY "$prefix/share/splitnic/examples/client.py" \
			10.88.5.1 21326 u8 1,28,28 "$tmp/images.raw" 16 "$2"
	fi
}
for m in bmlp bcnn; do
	for kind in c py; do
		front $kind "fmnist-$m" >"$tmp/$m.$kind" 2>"$tmp/$m.$kind.err" ||
			{ cat "$tmp/$m.$kind.err"; fail "$kind front-end, fmnist-$m"; }
		cmp -s "$tmp/$m.$kind" "$tmp/$m.want" || {
			diff "$tmp/$m.$kind" "$tmp/$m.want" | head -5
			fail "$kind front-end, fmnist-$m: classes differ from splitnic run"
		}
		echo "pass: $kind front-end, fmnist-$m: $N classes of splitnic run"
	done
done
kill -TERM "$host_pid" && wait "$host_pid" || fail "splitnic-host exit status on SIGTERM"
host_pid=
kill -TERM "$nic_pid" && wait "$nic_pid"
nic_pid=
# the installed lab: `splitnic sweep --packet` runs PREFIX/share/splitnic/lab/sweep_lab.sh and the
# servers beside the installed splitnic
"$prefix/bin/splitnic" sweep "$prefix/share/splitnic/models/fmnist-bmlp.snm" --packet --splits host \
	--load 100 --duration 0.3 --rounds 1 --tag "i$tag" >"$tmp/sweep.txt" 2>"$tmp/sweep.err" ||
	{ tail -5 "$tmp/sweep.err"; fail "the installed splitnic sweep --packet"; }
grep -q '^SWEEP mode=packet' "$tmp/sweep.txt" || fail "the installed sweep --packet: no SWEEP line"
echo "pass: the installed splitnic sweep --packet ran the installed lab"
mk uninstall PREFIX="$prefix" >/dev/null 2>&1 || fail "make uninstall PREFIX"
[ -z "$(find "$prefix" -type f 2>/dev/null)" ] || fail "files left under $prefix"
echo "pass: install"
