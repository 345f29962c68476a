#!/usr/bin/env bash
# After the suite's DPDK tests (tests/run-tests.sh runs this last): no DPDK runtime folder
# (/var/run/dpdk/PREFIX: config, locks, sockets) may be left behind by the suite. The runner
# lists the folders present before the suite (B/test-logs/dpdk-runtime.before); a folder that
# is new and that no running process holds (open file or mapping in it) was left behind.
# Folders held by a running process (another run on a shared machine) are not counted.
# Exit 0 pass, 1 fail, 77 skip (run alone, without the runner's list; never under CI=true).
set -u
cd "$(dirname "$0")/../.."
B=${B:-build}
before=${DPDK_RUNTIME_BEFORE:-$B/test-logs/dpdk-runtime.before}
root=/var/run/dpdk
if [ ! -f "$before" ]; then
	[ "${CI:-}" = true ] && { echo "FAIL: $before missing: run through tests/run-tests.sh"; exit 1; }
	echo "skip: $before missing (this check runs from tests/run-tests.sh, after the suite)"
	exit 77
fi
[ -d "$root" ] || { echo "pass: no $root at all"; exit 0; }
real=$(realpath "$root") # /run/dpdk: what /proc shows
held=$(for p in /proc/[0-9]*; do
	ls -l "$p/fd" 2>/dev/null | grep -oE "($root|$real)/[^/ ]*"
	grep -oE "($root|$real)/[^/ ]*" "$p/maps" 2>/dev/null
done | sed 's|.*/||' | sort -u)
new=0
left=()
for d in "$root"/*/; do
	[ -d "$d" ] || continue
	name=$(basename "$d")
	grep -qxF "$name" "$before" && continue
	new=$((new + 1))
	grep -qxF "$name" <<<"$held" && continue
	left+=("$name")
done
if [ ${#left[@]} -ne 0 ]; then
	echo "FAIL: DPDK runtime folders left behind in $root by the suite: ${left[*]}"
	exit 1
fi
echo "pass: no DPDK runtime folder left behind ($(wc -l <"$before") present before the suite, $new new ones all held by running processes)"
exit 0
