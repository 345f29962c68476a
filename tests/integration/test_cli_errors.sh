#!/usr/bin/env bash
# Bad CLI input gets a clear error naming what is wrong, a non-zero exit (1 or 2), never a crash.
set -uo pipefail
cd "$(dirname "$0")/../.."
B=${B:-build}
S=${SPLITNIC:-$B/splitnic}
D=/usr/share/datasets/fashion-mnist
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT
fail=0

# expect EXIT_CODES PATTERN -- CMD...: the command exits with one of the codes and its stderr
# matches the pattern.
expect() {
	local codes=$1 pat=$2
	shift 3
	"$@" >"$tmp/out" 2>"$tmp/err"
	local rc=$?
	if [[ " $codes " != *" $rc "* ]] || ! grep -qE -- "$pat" "$tmp/err"; then
		echo "FAIL: '$*' exited $rc (want $codes), stderr:"; sed 's/^/    /' "$tmp/err"
		fail=1
	else
		echo "ok: $* -> $(head -1 "$tmp/err")"
	fi
}

printf '{"name":"x","input":{"shape":[4,1,1],"dtype":"u8"},"layers":[{"type":"dense","out":2}]}' >"$tmp/a.json"
printf 'not json' >"$tmp/bad.json"
printf 'PK\003\004garbage' >"$tmp/bad.npz"
head -c 300 "$B/models/fmnist-bmlp.snm" >"$tmp/trunc.snm"

expect "2" "usage" -- "$S"
expect "2" "unknown command 'frobnicate'" -- "$S" frobnicate
expect "2" "usage" -- "$S" convert "$tmp/a.json"
expect "1" "nope.json" -- "$S" convert "$tmp/nope.json" "$tmp/bad.npz" -o "$tmp/m.snm"
expect "1" "bad.json" -- "$S" convert "$tmp/bad.json" "$tmp/bad.npz" -o "$tmp/m.snm"
expect "1" "bad.npz" -- "$S" convert "$tmp/a.json" "$tmp/bad.npz" -o "$tmp/m.snm"
expect "1" "trunc.snm" -- "$S" inspect "$tmp/trunc.snm"
expect "1" "missing.snm" -- "$S" run "$tmp/missing.snm" --images $D/t10k-images-idx3-ubyte.gz
expect "2" "--count" -- "$S" run "$B/models/fmnist-bmlp.snm" --images $D/t10k-images-idx3-ubyte.gz --count 12abc
expect "2" "--batch" -- "$S" run "$B/models/fmnist-bmlp.snm" --images $D/t10k-images-idx3-ubyte.gz --batch 0
expect "1" "t10k-labels.*do not match|images of" -- "$S" run "$B/models/fmnist-bmlp.snm" --images $D/t10k-labels-idx1-ubyte.gz
expect "1" "label" -- "$S" run "$B/models/fmnist-bmlp.snm" --images $D/t10k-images-idx3-ubyte.gz --labels $D/t10k-images-idx3-ubyte.gz
exit $fail
