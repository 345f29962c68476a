# shellcheck shell=bash
# Run an integration test under a kernel that has what it needs. Sourced, never run.
#
#   uml_need_ipvs SCRIPT [ARGS...]
#       when this kernel has IPVS (ipvsadm works in a new namespace, after modprobe ip_vs):
#       runs SCRIPT in the guest below first (exit with its status if it fails), then returns so
#       that the test runs here too (UML_ONLY_HOST=1: here only); otherwise runs SCRIPT inside
#       User-Mode Linux (Debian's user-mode-linux:
#       a Linux 6.1 kernel built with IPVS as modules, running as a process) with this machine's
#       root file system through hostfs (read-write: the build tree, the packages), tmpfs on
#       /tmp (unless the tree lies under /tmp), /run and /dev/shm, its own kernel modules
#       (uml-init.sh; the host's module directory hidden) and exits with SCRIPT's status. Needs
#       root, linux.uml and kmod; a kernel without IPVS and no linux.uml: exit 77 (skip), 1
#       under CI=true.
# UML_MEM (default 3G): the guest's memory. Inside the guest UML_GUEST=1.
#
# Why: IPVS is a kernel feature. A machine whose kernel is built without it (CONFIG_IP_VS unset
# and no modules, as on this project's CI machines) cannot load it, and KVM guests are not
# available there either; User-Mode Linux runs the same kernel code as a process.

uml_have_ipvs() {
	local ns=snipvsprobe$$ ok=1
	# loaded, built in, or a module this kernel can load (no kmod or no module directory: the
	# probe below decides)
	command -v modprobe >/dev/null && [ -d "/lib/modules/$(uname -r)" ] && modprobe -q ip_vs
	ip netns add "$ns" || return 1
	ip netns exec "$ns" ipvsadm -Ln >/dev/null 2>&1 && ok=0
	ip netns del "$ns"
	return $ok
}

uml_need_ipvs() {
	local script=$1 uml
	shift
	[ "${UML_GUEST:-}" = 1 ] && return 0
	uml=$(command -v linux.uml || true)
	if uml_have_ipvs; then
		# The test runs here, and first in the guest as on a machine without IPVS (the host's
		# modules hidden from it), so that such a machine cannot fail where this one passes.
		# UML_ONLY_HOST=1: here only.
		[ "${UML_ONLY_HOST:-}" = 1 ] && return 0
		if [ -z "$uml" ]; then
			[ "${CI:-}" = true ] && {
				echo "FAIL: linux.uml is missing (make deps: user-mode-linux)"
				exit 1
			}
			echo "note: linux.uml missing (make deps): the guest's run is left out"
			return 0
		fi
		echo "this kernel ($(uname -r)) has IPVS: running $script in User-Mode Linux first"
		uml_run "$uml" "$script" "$@" || exit $?
		echo "the guest's run passed; now on this kernel"
		return 0
	fi
	if [ -z "$uml" ]; then
		if [ "${CI:-}" = true ]; then
			echo "FAIL: this kernel has no IPVS and linux.uml is missing (make deps:" \
				"user-mode-linux); CI=true forbids skipping"
			exit 1
		fi
		echo "skip: this kernel has no IPVS and linux.uml is missing (make deps)"
		exit 77
	fi
	echo "this kernel ($(uname -r)) has no IPVS: running $script in User-Mode Linux"
	uml_run "$uml" "$script" "$@"
	exit $?
}

# uml_run LINUX.UML SCRIPT [ARGS...]: SCRIPT in the guest; its status
uml_run() {
	local uml=$1 script=$2 dir rc mods
	shift 2
	dir=$(realpath "${UML_DIR:-build/test-logs}")/uml.$$
	mkdir -p "$dir"
	{
		echo "cd $(printf %q "$PWD")"
		for v in CI SPLITNIC SPLITNIC_NIC SPLITNIC_HOST PY $(compgen -e | grep '^IPVS_'); do
			[ -n "${!v+x}" ] && echo "export $v=$(printf %q "${!v}")"
		done
		printf 'exec bash %q' "$script"
		printf ' %q' "$@"
		echo
	} >"$dir/run.sh"
	echo "guest: $("$uml" --version 2>/dev/null | head -1 || echo linux.uml)"
	# The guest runs on this machine's / but not on its kernel: the host's module directory (if
	# any) is hidden from it, in a mount namespace of its own, so that it uses only its own
	# (uml-init.sh) on every machine, with /lib/modules or without.
	mods=$(realpath -e /lib/modules 2>&1) || mods=
	unshare --mount --propagation private bash -c \
		'[ -z "$1" ] || mount -t tmpfs -o ro,size=4k snuml-no-host-modules "$1" || exit 90
		shift; exec "$@"' uml-hide "$mods" \
		timeout -k 10 "${UML_TIMEOUT:-900}" "$uml" mem="${UML_MEM:-3G}" rootfstype=hostfs \
		rootflags=/ rw init="$(realpath tests/integration/uml-init.sh)" snuml="$dir" \
		con=null con0=null,fd:1 </dev/null >"$dir/console.log" 2>&1
	rc=$?
	if [ "$rc" = 90 ]; then
		echo "FAIL: could not hide $mods from the guest (mount namespace): $(cat "$dir/console.log")"
		rm -rf "$dir"
		return 1
	fi
	cat "$dir/out" 2>/dev/null
	if [ -s "$dir/rc" ]; then
		rc=$(cat "$dir/rc")
	else
		echo "FAIL: User-Mode Linux ended without the test's status (exit $rc); console:"
		tail -20 "$dir/console.log"
		rc=1
	fi
	rm -rf "$dir"
	return "$rc"
}
