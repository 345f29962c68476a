#!/usr/bin/env bash
# Runs every test: the cmocka binaries (build/tests/test_*), the Python checks (tests/py/*.py)
# and the integration scripts (tests/integration/*.sh: exit 0 pass, 77 skip, else fail).
# Under CI=true a skip counts as a failure (CI has root, namespaces and BPF), except what the
# machine lacks: a GPU, or the CPU features of a kernel table (the skip says which).
# Ends with one line: "N passed, N failed, N skipped" (test cases, not files).
set -u
cd "$(dirname "$0")/.."
# As root, the suite runs in a mount namespace of its own with a fresh tmpfs on /run/dpdk, where
# DPDK keeps its runtime folders (/var/run/dpdk/PREFIX): other runs on the machine neither see
# nor add to this suite's, and check_dpdk_runtime.sh (last) finds exactly what the suite left.
if [ "$(id -u)" = 0 ] && [ -z "${SPLITNIC_SUITE_NS:-}" ] && command -v unshare >/dev/null; then
	export SPLITNIC_SUITE_NS=1
	exec unshare --mount --propagation private bash -c \
		'mkdir -p /run/dpdk && mount -t tmpfs -o mode=0700 splitnic-dpdk /run/dpdk && exec "$0" "$@"' \
		"$PWD/tests/run-tests.sh" "$@"
fi
B=${B:-build}
PY=/usr/bin/python3
export SPLITNIC="$PWD/$B/splitnic"
log_dir="$B/test-logs"
mkdir -p "$log_dir"
passed=0 failed=0 skipped=0
failures=()

run_cmocka() {
	local bin=$1 name log p f k
	name=$(basename "$bin")
	log="$log_dir/$name.log"
	"$bin" >"$log" 2>&1
	local rc=$?
	p=$(sed -n 's/^\[  PASSED  \] \([0-9]*\) test.*/\1/p' "$log" | awk '{s+=$1} END {print s+0}')
	f=$(sed -n 's/^\[  FAILED  \] \([0-9]*\) test.*/\1/p' "$log" | awk '{s+=$1} END {print s+0}')
	k=$(sed -n 's/^\[  SKIPPED \] \([0-9][0-9]*\) test.*/\1/p' "$log" | awk '{s+=$1} END {print s+0}')
	if [ "$rc" -ne 0 ] && [ "$f" -eq 0 ]; then f=1; fi
	# What this machine lacks is a skip with its reason everywhere, CI included (CI runs on
	# whatever machine submits): GPU tests without a GPU, a kernel table without its CPU
	# features ("... not run: this CPU lacks ..."). Any other skip under CI=true is a failure.
	local hw
	hw=$(grep -c '^skip: .* not run: this CPU lacks' "$log")
	[ "$name" = test_cuda ] && hw=$k
	if [ "$k" -gt "$hw" ] && [ "${CI:-}" = true ]; then
		echo "$name: $((k - hw)) test(s) skipped under CI=true, which counts as a failure"
		f=$((f + k - hw)); k=$hw
	fi
	passed=$((passed + p)); failed=$((failed + f)); skipped=$((skipped + k))
	printf '%-34s %4d passed %4d failed %4d skipped\n' "$name" "$p" "$f" "$k"
	[ "$k" -ne 0 ] && grep -iE 'skip' "$log" | grep -v '^\[' | sed "s/^/    /" | head -5
	if [ "$f" -ne 0 ]; then failures+=("$name"); tail -30 "$log"; fi
}

run_script() {
	local kind=$1 script=$2 name log rc
	name=$(basename "$script")
	log="$log_dir/$name.log"
	if [ "$kind" = py ]; then "$PY" "$script" >"$log" 2>&1; else bash "$script" >"$log" 2>&1; fi
	rc=$?
	if [ "$rc" -eq 0 ]; then
		passed=$((passed + 1)); printf '%-34s pass\n' "$name"
	elif [ "$rc" -eq 77 ] && [ "${CI:-}" != true ]; then
		skipped=$((skipped + 1))
		printf '%-34s skip: %s\n' "$name" "$(grep -m1 -i 'skip' "$log" || tail -1 "$log")"
	else
		failed=$((failed + 1)); failures+=("$name")
		[ "$rc" -eq 77 ] && echo "$name: skipped under CI=true, which counts as a failure"
		printf '%-34s FAIL (exit %d)\n' "$name" "$rc"; tail -30 "$log"
	fi
}

ls -1 /var/run/dpdk >"$log_dir/dpdk-runtime.before" 2>/dev/null # for check_dpdk_runtime.sh
for t in "$B"/tests/test_*; do
	case "$t" in *.o | *.d) continue ;; esac
	[ -x "$t" ] && run_cmocka "$t"
done
for t in tests/py/test_*.py; do [ -e "$t" ] && run_script py "$t"; done
for t in tests/integration/test_*.sh; do [ -e "$t" ] && run_script sh "$t"; done
B=$B run_script sh tests/integration/check_dpdk_runtime.sh # after every DPDK test

echo
# the failures' last lines again, next to the summary: a CI log that keeps only its tail still
# says why
for name in "${failures[@]}"; do
	echo "--- $name (last lines of $log_dir/$name.log)"
	grep -v '^EAL\|^TELEMETRY' "$log_dir/$name.log" | tail -12
done
[ ${#failures[@]} -ne 0 ] && echo "failed: ${failures[*]} (logs in $log_dir/)"
echo "$passed passed, $failed failed, $skipped skipped"
[ "$failed" -eq 0 ]
