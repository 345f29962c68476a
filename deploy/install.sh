#!/usr/bin/env bash
# make install / make uninstall (see the Makefile's mk/install.mk for the variables).
#
#   install.sh install     copy everything under $DESTDIR$PREFIX (and $SYSCONFDIR, $UNITDIR,
#                          $PYTHONDIR), recording every file and every directory it created in
#                          $DATADIR/install-manifest
#   install.sh uninstall   remove exactly what the manifest lists (directories only if empty)
#
# A configuration file already present is kept (an operator's edits survive a reinstall) and
# is not recorded, so uninstall leaves it too.
set -eu
: "${PREFIX:?}" "${B:?}" "${VERSION:?}" "${SOVERSION:?}"
DESTDIR=${DESTDIR:-}
BINDIR=${BINDIR:-$PREFIX/bin}
LIBDIR=${LIBDIR:-$PREFIX/lib}
INCLUDEDIR=${INCLUDEDIR:-$PREFIX/include}
DATADIR=${DATADIR:-$PREFIX/share/splitnic}
MANDIR=${MANDIR:-$PREFIX/share/man}
DOCDIR=${DOCDIR:-$PREFIX/share/doc/splitnic}
SYSCONFDIR=${SYSCONFDIR:-$PREFIX/etc}
UNITDIR=${UNITDIR:-$PREFIX/lib/systemd/system}
PYTHONDIR=${PYTHONDIR:?}
D=$DESTDIR
manifest=$D$DATADIR/install-manifest

subst() { # subst TEMPLATE: the template with the install paths filled in
	sed -e "s|@PREFIX@|$PREFIX|g; s|@BINDIR@|$BINDIR|g; s|@LIBDIR@|$LIBDIR|g" \
		-e "s|@INCLUDEDIR@|$INCLUDEDIR|g; s|@DATADIR@|$DATADIR|g; s|@SYSCONFDIR@|$SYSCONFDIR|g" \
		-e "s|@VERSION@|$VERSION|g" "$1"
}

mkdirs() { # every missing directory of $1 (a path under $D), recorded
	local d=$1 missing=()
	while [ ! -d "$d" ]; do
		missing=("$d" ${missing[@]+"${missing[@]}"})
		d=$(dirname "$d")
	done
	for d in ${missing[@]+"${missing[@]}"}; do
		mkdir "$d"
		echo "d ${d#"$D"}" >>"$tmp_manifest"
	done
}

put() { # put MODE SRC DEST (DEST a path without $D)
	mkdirs "$(dirname "$D$3")"
	install -m "$1" "$2" "$D$3"
	echo "f $3" >>"$tmp_manifest"
}

put_text() { # put_text MODE TEMPLATE DEST: the template with the paths filled in
	local t
	t=$(mktemp)
	subst "$2" >"$t"
	put "$1" "$t" "$3"
	rm -f "$t"
}

link() { # link TARGET DEST
	mkdirs "$(dirname "$D$2")"
	ln -sfn "$1" "$D$2"
	echo "f $2" >>"$tmp_manifest"
}

do_install() {
	local m n
	[ -e "$manifest" ] && { echo "install: $manifest exists: make uninstall first" >&2; exit 1; }
	tmp_manifest=$(mktemp)
	trap 'rm -f "$tmp_manifest"' EXIT
	for n in splitnic splitnic-nic splitnic-host; do put 755 "$B/$n" "$BINDIR/$n"; done
	for n in splitnic splitnic-client; do
		put 755 "$B/lib/lib$n.so.$VERSION" "$LIBDIR/lib$n.so.$VERSION"
		link "lib$n.so.$VERSION" "$LIBDIR/lib$n.so.$SOVERSION"
		link "lib$n.so.$SOVERSION" "$LIBDIR/lib$n.so"
		put 644 "$B/lib/lib$n.a" "$LIBDIR/lib$n.a"
		put_text 644 "deploy/$n.pc.in" "$LIBDIR/pkgconfig/$n.pc"
	done
	# the GPU executor (built only where nvcc is): dlopen'ed from BINDIR/../lib/splitnic
	if [ -f "$B/libsncuda.so" ]; then
		put 755 "$B/libsncuda.so" "$PREFIX/lib/splitnic/libsncuda.so"
	fi
	for n in include/splitnic/*.h; do put 644 "$n" "$INCLUDEDIR/splitnic/$(basename "$n")"; done
	put 644 client/python/splitnic_client.py "$PYTHONDIR/splitnic_client.py"
	put 644 man/splitnic.1 "$MANDIR/man1/splitnic.1"
	put 644 man/splitnic-nic.8 "$MANDIR/man8/splitnic-nic.8"
	put 644 man/splitnic-host.8 "$MANDIR/man8/splitnic-host.8"
	# the documentation, laid out as in the tree so that README.md's links to docs/ hold
	put 644 README.md "$DOCDIR/README.md"
	for n in docs/*.md; do put 644 "$n" "$DOCDIR/$n"; done
	for m in "$B"/models/*.snm; do
		n=$(basename "$m" .snm)
		put 644 "$m" "$DATADIR/models/$n.snm"
		put 644 models/fashion-mnist.labels "$DATADIR/models/$n.labels"
	done
	for n in predict.c client.c read_file.h client.py; do
		put 644 "examples/$n" "$DATADIR/examples/$n"
	done
	# the lab: `splitnic sweep --packet` and `calibrate --packet` find sweep_lab.sh here
	for n in lab/*.sh; do
		case $n in */netns.sh) m=644 ;; *) m=755 ;; esac # netns.sh is sourced, never run
		put $m "$n" "$DATADIR/lab/$(basename "$n")"
	done
	put 644 contrib/wireshark/splitnic.lua "$DATADIR/wireshark/splitnic.lua"
	for n in splitnic-nic splitnic-host; do
		put_text 644 "deploy/$n.service.in" "$UNITDIR/$n.service"
		if [ -e "$D$SYSCONFDIR/splitnic/$n.conf" ]; then
			echo "install: keeping $D$SYSCONFDIR/splitnic/$n.conf (new one not written)"
		else
			put_text 644 "deploy/$n.conf.in" "$SYSCONFDIR/splitnic/$n.conf"
		fi
	done
	mkdirs "$(dirname "$manifest")"
	echo "f ${manifest#"$D"}" >>"$tmp_manifest"
	install -m 644 "$tmp_manifest" "$manifest"
	echo "install: $(grep -c '^f' "$manifest") files under ${D:-/} (list: $manifest)"
}

do_uninstall() {
	local kind path i n=0 nd=0 dirs=()
	[ -f "$manifest" ] || { echo "uninstall: $manifest missing: nothing installed here" >&2; exit 1; }
	while read -r kind path; do
		case $kind in
		f) rm -f "$D$path" && n=$((n + 1)) ;;
		d) dirs+=("$D$path") ;;
		esac
	done <"$manifest"
	for ((i = ${#dirs[@]} - 1; i >= 0; i--)); do # deepest first; kept if not empty
		if rmdir "${dirs[$i]}" 2>/dev/null; then nd=$((nd + 1)); else
			echo "uninstall: ${dirs[$i]} kept: not empty"; fi
	done
	echo "uninstall: removed $n files and $nd directories that install had written"
}

case "${1:-}" in
install) do_install ;;
uninstall) do_uninstall ;;
*) echo "usage: $0 install|uninstall" >&2; exit 2 ;;
esac
