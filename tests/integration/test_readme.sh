#!/usr/bin/env bash
# The command blocks of README.md and of every docs/*.md, run verbatim in a fresh clone: fails
# when the documentation drifts from the programs. The conventions a block must follow
# (docs/testing.md repeats them):
#
#   - Every block fenced ```sh is run; other fences (```json, ```text, plain ```) are not.
#   - A block runs alone, from the clone's root, as root, under `bash -e -o pipefail`, within
#     README_BLOCK_TIMEOUT seconds (default 120): it defines every variable it uses, and a
#     command that fails fails the test. Blocks run in file order, README.md first, then
#     docs/*.md by name, so a block may use what an earlier one of its file left (the lab
#     network of `lab/lab.sh up`, a file it wrote); a file that brings the lab up takes it down.
#   - A line `# expect: REGEX` (an extended regex, grep -E) must match a line of the block's
#     output (stdout and stderr together). Show counts small enough for the test's time budget
#     (`--count 1000`, not the whole test set over the packet path).
#   - A block that starts background programs (`... &`) stops them before it ends
#     (`kill %1; wait`); whatever is left in the block's process group is killed afterwards.
#   - `make` lines are not run, with one exception: the test runs inside `make test`, after
#     `make deps` and the build, so `make test` would recurse and builds are make's own test;
#     `make demo` is run as what `make demo-run` runs, `lab/demo.sh`, with
#     DEMO_COUNT=README_DEMO_COUNT (default 200) images.
#
# The clone is `git clone` of this repository plus the working tree's uncommitted changes
# (tracked diff and untracked files), with build outputs (the programs and the converted models)
# hard-linked from $B: nothing is rebuilt. `lab/lab.sh down` runs at the end.
# Exit 0 pass, 1 fail, 77 skip (only when not root, and never under CI=true).
set -u
cd "$(dirname "$0")/../.."
root=$PWD
B=${B:-build}
PY=/usr/bin/python3
TIMEOUT=${README_BLOCK_TIMEOUT:-120}
DEMO_COUNT=${README_DEMO_COUNT:-200}
. lab/netns.sh

netns_need_root "the README's packet-path blocks"
netns_need_files FAIL: "make all" "$B/splitnic" "$B/splitnic-nic" "$B/splitnic-host" \
	"$B/models/fmnist-bmlp.snm" "$B/models/fmnist-bcnn.snm" README.md
command -v git >/dev/null || { echo "FAIL: git missing"; exit 1; }

tmp=$(mktemp -d "$root/$B/readme-test.XXXXXX")
clone=$tmp/clone
cleanup() {
	[ -x "$clone/lab/lab.sh" ] && (cd "$clone" && lab/lab.sh down >/dev/null 2>&1)
	rm -rf "$tmp"
}
trap cleanup EXIT
fail() {
	echo "FAIL: $*"
	exit 1
}

# --- the fresh clone -----------------------------------------------------------------------------
git clone -q "$root" "$clone" || fail "git clone"
git diff --binary HEAD >"$tmp/wt.diff" || fail "git diff"
if [ -s "$tmp/wt.diff" ]; then
	git -C "$clone" apply --whitespace=nowarn "$tmp/wt.diff" || fail "applying the working tree"
fi
git ls-files -z --others --exclude-standard | (cd "$root" && xargs -0r cp --parents -t "$clone") ||
	fail "copying untracked files"
mkdir -p "$clone/build"
for f in splitnic splitnic-nic splitnic-host models; do
	cp -al "$B/$f" "$clone/build/" 2>/dev/null || cp -a "$B/$f" "$clone/build/" ||
		fail "copying $B/$f"
done

# --- the blocks ----------------------------------------------------------------------------------
docs=(README.md docs/*.md)
"$PY" - "$tmp" "${docs[@]}" <<'EOF' || fail "cannot split the documentation's sh blocks"
import sys, re
n = 0
for path in sys.argv[2:]:
    cur, k = None, 0
    for i, line in enumerate(open(path).read().split("\n"), 1):
        if cur is None:
            if re.fullmatch(r"```sh\s*", line):
                cur, start = [], i
            continue
        if line.strip() == "```":
            n, k = n + 1, k + 1
            open(f"{sys.argv[1]}/block{n:03d}.sh", "w").write("\n".join(cur) + "\n")
            open(f"{sys.argv[1]}/block{n:03d}.where", "w").write(f"{path}:{start}\n")
            cur = None
        else:
            cur.append(line)
    if cur is not None:
        sys.exit(f"{path}: an unterminated ```sh block")
    print(f"{path}: {k} sh blocks")
EOF
blocks=("$tmp"/block*.sh)
[ -e "${blocks[0]}" ] || fail "no sh block in ${docs[*]}"
grep -q '^README.md:' "$tmp/block001.where" || fail "README.md has no sh block"

bad=0
for blk in "${blocks[@]}"; do
	id=$(basename "$blk" .sh)
	name="$id ($(cat "${blk%.sh}.where"))"
	# make lines: `make demo` runs as lab/demo.sh; any other make line is left out
	sed -E -e "s|^make demo\\b.*|B=build DEMO_COUNT=$DEMO_COUNT lab/demo.sh|" \
		-e 's|^make\b.*|: "(make line not run by test_readme.sh)"|' "$blk" >"$blk.run"
	echo "--- $name"
	sed 's/^/    /' "$blk"
	start=$(date +%s)
	(cd "$clone" && exec setsid timeout "$TIMEOUT" bash -e -o pipefail "$blk.run") \
		>"$tmp/$id.out" 2>&1 &
	pid=$!
	wait "$pid"
	rc=$?
	# what the block left running in its session (setsid: session and group id = its pid)
	pkill -TERM -s "$pid" 2>/dev/null && sleep 1 && pkill -KILL -s "$pid" 2>/dev/null
	echo "    exit $rc in $(($(date +%s) - start)) s"
	if [ "$rc" -ne 0 ]; then
		echo "FAIL: $name exited $rc (timeout $TIMEOUT s gives 124); its output:"
		tail -30 "$tmp/$id.out" | sed 's/^/  | /'
		bad=1
		continue
	fi
	while IFS= read -r re; do
		if grep -qE -- "$re" "$tmp/$id.out"; then
			echo "    ok: $re"
		else
			echo "FAIL: $name: no output line matches '$re'; its output:"
			tail -30 "$tmp/$id.out" | sed 's/^/  | /'
			bad=1
		fi
	done < <(sed -n 's/^[[:space:]]*# expect: //p' "$blk")
done
[ "$bad" -eq 0 ] || exit 1
echo "pass: all ${#blocks[@]} sh blocks of README.md and docs/*.md ran and matched their expect lines"
