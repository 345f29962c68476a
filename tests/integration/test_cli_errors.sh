#!/usr/bin/env bash
# Bad CLI input gets a clear error naming what is wrong, never a crash, and the documented exit
# status (docs/operator-guide.md): 2 for bad arguments, 1 for a failure; messages start with the
# program and its command ("splitnic run: ..."). Also: `splitnic help VERB`, `--version`'s
# features, the man page's list of commands and exit statuses, inspect and analyze agreeing on
# the same layers, run --classes, and the progress line (on a terminal only, not with --quiet).
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
	# the prefix rule: the first line names the program and its command (or is the usage);
	# serve's, the client's and respond-ref's own messages start with their name alone
	if ! head -1 "$tmp/err" |
		grep -qE "^((usage: )?splitnic( [a-z-]+( [a-z]+)?)?[: ]|(serve|client|respond-ref): )"; then
		echo "FAIL: '$*': the first line does not start with 'splitnic COMMAND:':"
		sed 's/^/    /' "$tmp/err"
		fail=1
	fi
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
# a label file of another length than the images (train labels: 60,000 for 10,000 images)
expect "1" "60000 labels .* for 10000 inputs" -- "$S" run "$B/models/fmnist-bmlp.snm" --images $D/t10k-images-idx3-ubyte.gz --labels $D/train-labels-idx1-ubyte.gz
expect "1" "60000 labels .* for 10000 inputs" -- "$S" emu "$B/models/fmnist-bmlp.snm" --images $D/t10k-images-idx3-ubyte.gz --labels $D/train-labels-idx1-ubyte.gz --count 1
# planning under load, the packet sweep and serve: bad values named
expect "2" "--load: requests/s" -- "$S" plan "$B/models/fmnist-bcnn.snm" --load -5
expect "2" "--objective: latency, p99 or throughput, got 'fastest'" -- "$S" plan "$B/models/fmnist-bcnn.snm" --objective fastest
expect "2" "--load: up to 8 requests/s" -- "$S" sweep "$B/models/fmnist-bcnn.snm" --packet --load 100,,2x
expect "2" "--link-gbps: up to 8 positive numbers or none" -- "$S" sweep "$B/models/fmnist-bcnn.snm" --packet --link-gbps 1,
expect "2" "--duration: seconds" -- "$S" sweep "$B/models/fmnist-bcnn.snm" --packet --duration 0
expect "2" "--load, --servers, --split\(s\), --replay need --packet" -- "$S" sweep "$B/models/fmnist-bcnn.snm" --load 100
expect "2" "--servers goes with --packet and --split" -- "$S" sweep "$B/models/fmnist-bcnn.snm" --packet --servers 10.0.0.1
expect "2" "--splits/--split: ops where the packet path can hand over .* got '8,host'" -- "$S" sweep "$B/models/fmnist-bcnn.snm" --packet --splits 8,host
# sweep --replay: a recorded packet sweep's file, checked before anything is predicted
F=$B/models/fmnist-bcnn.snm
pt='"k":13,"split":"all-host","measured":{"p50_us":150,"p99_us":900,"mean_us":200,"throughput_rps":199,"requests":400,"responses":398,"errors":2,"busy":2,"timeouts":0,"answered_by_nic":0,"host_fallback":0}'
printf '{"model":"fmnist-bcnn","mode":"packet","platform":"emu","rates":[{"link_gbps":null,"loads":[{"offered_rps":200,"splits":[{%s}]}]}]}' "$pt" >"$tmp/r-ok.json"
printf '{"model":"fmnist-bmlp","mode":"packet","rates":[]}' >"$tmp/r-model.json"
printf '{"model":"fmnist-bcnn","mode":"in-process","rates":[]}' >"$tmp/r-mode.json"
sed 's/"k":13/"k":3/' "$tmp/r-ok.json" >"$tmp/r-k.json"
sed 's/"responses":398/"responses":401/' "$tmp/r-ok.json" >"$tmp/r-count.json"
expect "2" "--load, --servers, --split\(s\), --replay need --packet" -- "$S" sweep "$F" --replay "$tmp/r-ok.json"
expect "2" "--replay takes the link rates, loads and splits from its file" -- "$S" sweep "$F" --packet --replay "$tmp/r-ok.json" --load 100
expect "1" "--replay .*bad.json: line 1" -- "$S" sweep "$F" --packet --replay "$tmp/bad.json"
expect "1" "--replay .*: a sweep of model 'fmnist-bmlp', not of fmnist-bcnn" -- "$S" sweep "$F" --packet --replay "$tmp/r-model.json"
expect "1" "--replay .*: not the --json of a packet sweep" -- "$S" sweep "$F" --packet --replay "$tmp/r-mode.json"
expect "1" "--replay .*: a point whose split \(\"k\"\) is not one of fmnist-bcnn's" -- "$S" sweep "$F" --packet --replay "$tmp/r-k.json"
expect "1" "--replay .*: rate 1, load 1, point 1: its \"measured\" counts are missing or do not add up" -- "$S" sweep "$F" --packet --replay "$tmp/r-count.json"
# and a well-formed one is replayed without root or a lab: its point, MODELED beside it
if "$S" sweep "$F" --packet --replay "$tmp/r-ok.json" --json "$tmp/r-out.json" >"$tmp/r.txt" 2>"$tmp/r.err" &&
	grep -q '^SWEEP mode=packet model=fmnist-bcnn gbps=0 load=200.0 planner=.* measured_p50_us=150.0 ' "$tmp/r.txt" &&
	grep -q 'its CPU time measured in process now (the file records none)' "$tmp/r.txt" &&
	/usr/bin/python3 -c 'import json,sys; j=json.load(open(sys.argv[1])); p=j["rates"][0]["loads"][0]["splits"][0]; sys.exit(not (p["measured"]["responses"] == 398 and p["predicted"]["label"] == "MODELED" and p["predicted"]["p50_us"] > 0 and len(j["cpu_op_us"]) == 13))' "$tmp/r-out.json"; then
	echo "ok: sweep --replay of a hand-written sweep file: its point as written, MODELED beside it"
else
	echo "FAIL: sweep --replay of a well-formed file:"; sed 's/^/    /' "$tmp/r.err" "$tmp/r.txt" | head -20
	fail=1
fi
expect "2" "--platform: emu or lcore, got 'nfp'" -- "$S" calibrate --packet --platform nfp
expect "2" "no --model" -- "$S" serve
expect "1" "serve: .*missing.snm" -- "$S" serve --model "$tmp/missing.snm"
expect "2" "--port" -- "$S" serve --model "$B/models/fmnist-bmlp.snm" --port 70000
# a profile that is a directory (or unreadable) is refused, never replaced by the defaults
expect "1" "$tmp: not a regular file" -- "$S" plan "$B/models/fmnist-bcnn.snm" --profile "$tmp"
expect "1" "$tmp: not a regular file" -- "$S" sweep "$B/models/fmnist-bcnn.snm" --profile "$tmp"
expect "1" "nope.profile: No such file" -- "$S" plan "$B/models/fmnist-bcnn.snm" --profile "$tmp/nope.profile"
# ports: 1..65535 wherever one is parsed
for bad in 0 65536 70000 -1 12x; do
	expect "2" "port.*1..65535.*'$bad'" -- "$S" client "127.0.0.1:$bad" --shape 1,1,1 --count 1
	expect "2" "port.*1..65535.*'$bad'" -- "$S" client 127.0.0.1 --port "$bad" --shape 1,1,1 --count 1
	expect "2" "port.*1..65535.*'$bad'" -- "$S" respond-ref --port "$bad"
	expect "2" "port" -- "$S" xdp test "$B/models/fmnist-bmlp.snm" --port "$bad"
done
# what is missing or does not go together is named before the usage (exit 2, nothing done)
M=$B/models/fmnist-bmlp.snm
expect "2" "splitnic run: give one of --images IDX and --npy FILE" -- "$S" run "$M"
expect "2" "splitnic emu: give one of --images IDX and --npy FILE" -- "$S" emu "$M"
expect "2" "splitnic emu: no MODEL" -- "$S" emu --images $D/t10k-images-idx3-ubyte.gz
expect "2" "splitnic import: give -o MODEL.snm, --interchange DIR or both" -- "$S" import x.onnx
expect "2" "splitnic convert: no -o MODEL" -- "$S" convert a.json w.npz
expect "2" "splitnic gen: no -o WEIGHTS.npz" -- "$S" gen split/arch/alexnet.json
expect "2" "splitnic analyze: --csv and --json exclude each other" -- "$S" analyze "$M" --csv --json
expect "2" "splitnic calibrate: --profile, --lab and --tag go with --packet" -- "$S" calibrate --tag x
expect "2" "splitnic run: unrecognized option '--bogus'" -- "$S" run "$M" --bogus
expect "2" "splitnic run: --exec: cpu or gpu, got 'tpu'" -- "$S" run "$M" --images $D/t10k-images-idx3-ubyte.gz --exec tpu
expect "2" "splitnic emu: --param: no parameter named 'nope'" -- "$S" emu "$M" --images $D/t10k-images-idx3-ubyte.gz --param nope=1
expect "2" "splitnic xdp: unknown verb 'frob'" -- "$S" xdp frob
expect "2" "splitnic serve: unrecognized option '--bogus'" -- "$S" serve --model "$M" --bogus
expect "2" "splitnic client: --shape: C,H,W" -- "$S" client 127.0.0.1 --shape 1,x,1
expect "1" "splitnic import: .*nope.onnx: No such file" -- "$S" import "$tmp/nope.onnx" -o "$tmp/x.snm"
expect "1" "splitnic import: -o $tmp/no/x.snm: its directory" -- "$S" import "$tmp/nope.onnx" -o "$tmp/no/x.snm"
# splitnic help VERB: that verb's help, exit 0 (below); an unknown verb: exit 2
expect "2" "splitnic help: unknown command 'frobnicate'" -- "$S" help frobnicate
# outputs are checked before the work: nothing is computed (empty stdout) when they cannot be
# written
outputs_first() {
	expect "1" "$2" -- "${@:3}"
	if [ -s "$tmp/out" ]; then
		echo "FAIL: '${*:3}' did work before refusing its output:"; head -3 "$tmp/out"; fail=1
	fi
}
outputs_first x "--plot $tmp: Is a directory" "$S" analyze split/arch/alexnet.json --plot "$tmp"
outputs_first x "--plot $tmp/no/a.png: its directory" "$S" analyze split/arch/alexnet.json --plot "$tmp/no/a.png"
outputs_first x "--plot $tmp/no/s.png: its directory" "$S" sweep "$B/models/fmnist-bmlp.snm" --plot "$tmp/no/s.png"
outputs_first x "-o $tmp/no/p.plan: its directory" "$S" plan "$B/models/fmnist-bcnn.snm" -o "$tmp/no/p.plan"
outputs_first x "-o $tmp/no/c.profile: its directory" "$S" calibrate --quick -o "$tmp/no/c.profile"
outputs_first x "-o $tmp: Is a directory" "$S" convert models/fmnist-bmlp/arch.json models/fmnist-bmlp/weights.npz -o "$tmp"
outputs_first x "-o $tmp/no/w.npz: its directory" "$S" gen split/arch/alexnet.json -o "$tmp/no/w.npz"
outputs_first x "--scores $tmp/no/s.csv: its directory" "$S" run "$B/models/fmnist-bmlp.snm" --images $D/t10k-images-idx3-ubyte.gz --scores "$tmp/no/s.csv"
outputs_first x "--classes $tmp/no/c.txt: its directory" "$S" client 127.0.0.1 --shape 1,1,1 --count 1 --classes "$tmp/no/c.txt"
# --help and --version on every command, from the one command table
for c in $("$S" --help | awk '/^commands:/ {on=1; next} on && NF {print $1} on && !NF {exit}'); do
	h=$("$S" "$c" --help) && [[ "$h" == "usage: splitnic $c"* ]] ||
		{ echo "FAIL: splitnic $c --help: $h"; fail=1; }
	v=$("$S" "$c" --version) && [[ "$v" == "splitnic $c "[0-9]* ]] ||
		{ echo "FAIL: splitnic $c --version: $v"; fail=1; }
	hv=$("$S" help "$c") && [ "$hv" = "$h" ] ||
		{ echo "FAIL: splitnic help $c is not splitnic $c --help"; fail=1; }
	# man splitnic describes every command
	grep '^\.It Cm ' man/splitnic.1 | grep -oE 'Cm [a-z-]+' | grep -qx "Cm $c" ||
		{ echo "FAIL: man/splitnic.1 does not describe $c"; fail=1; }
done
echo "ok: splitnic help VERB and VERB --help agree; man splitnic describes every command"
# the exit statuses, documented once: the man page and the operator's guide list 0 to 3
for n in 0 1 2 3; do
	sed -n '/^\.Sh EXIT STATUS/,/^\.Sh EXAMPLES/p' man/splitnic.1 | grep -q "^\.It $n$" ||
		{ echo "FAIL: man/splitnic.1 EXIT STATUS lacks $n"; fail=1; }
	grep -q "^| $n | " docs/operator-guide.md || { echo "FAIL: operator-guide.md lacks exit $n"; fail=1; }
done
# --version: the build's features
v=$("$S" --version)
for want in "^splitnic [0-9]" "binary kernels: tables ref, avx2, avx512 compiled in; this CPU runs ref" \
	"in use: (ref|avx2|avx512)" "CUDA: (not compiled|compiled)" "DPDK: [0-9]+\.[0-9]+" "libbpf: v?[0-9]"; do
	grep -qE "$want" <<<"$v" || { echo "FAIL: splitnic --version lacks '$want':"; echo "$v"; fail=1; }
done
echo "ok: splitnic --version: $(tr '\n' ' ' <<<"$v")"

# inspect and analyze agree on the same layers (elements, bytes at 1 bit, parameters, weight
# bytes); what the model file holds is inspect's own column, file_bytes
for m in "$B"/models/fmnist-*.snm; do
	"$S" inspect "$m" --json >"$tmp/in.json" && "$S" analyze "$m" --json >"$tmp/an.json" ||
		{ echo "FAIL: inspect/analyze $m"; fail=1; continue; }
	/usr/bin/python3 - "$tmp/in.json" "$tmp/an.json" "$m" <<'EOF' || fail=1
import json, sys
i = json.load(open(sys.argv[1]))["layers"]
a = json.load(open(sys.argv[2]))["layers"]
bad = [(x["index"], k, x[k], v) for x, y in zip(i, a)
       for k, v in (("elements", y["elements"]), ("bytes_1bit", y["bytes"]["1bit"]),
                    ("params", y["params"]), ("weight_bytes", y["weight_bytes"])) if x[k] != v]
if len(i) != len(a) or bad or not all("file_bytes" in x for x in i):
    print(f"FAIL: {sys.argv[3]}: inspect and analyze differ (layer, key, inspect, analyze): {bad}")
    sys.exit(1)
print(f"ok: {sys.argv[3]}: inspect and analyze agree on {len(i)} layers")
EOF
done

# run --classes: one class per input, the argmax of --scores
"$S" run "$M" --images $D/t10k-images-idx3-ubyte.gz --count 300 --scores "$tmp/s.csv" \
	--classes "$tmp/c.txt" >/dev/null 2>"$tmp/run.err" || { echo "FAIL: run --classes"; fail=1; }
/usr/bin/python3 - "$tmp/s.csv" "$tmp/c.txt" <<'EOF' || fail=1
import sys
want = []
for line in open(sys.argv[1]):
    v = [float(x) for x in line.split(",")]
    want.append(max(range(len(v)), key=lambda k: (v[k], -k)))
got = [int(x) for x in open(sys.argv[2])]
if got != want or len(got) != 300:
    print(f"FAIL: run --classes: {len(got)} lines, {sum(a != b for a, b in zip(got, want))} differ")
    sys.exit(1)
print("ok: run --classes: 300 classes, the argmax of --scores")
EOF
# the progress line: none when stderr is not a terminal (run's stderr above is empty); on a
# terminal (script(1) gives one) a line with the rate and the ETA; none there with --quiet
[ -s "$tmp/run.err" ] && { echo "FAIL: run wrote to a stderr that is no terminal:"; cat "$tmp/run.err"; fail=1; }
emu_cmd="$S emu $M --images $D/t10k-images-idx3-ubyte.gz --count 400"
script -qec "$emu_cmd >/dev/null" /dev/null >"$tmp/tty.out" 2>&1 </dev/null
if ! grep -qaE "splitnic emu: [0-9]+/400 inputs, [0-9.]+ inputs/s, ETA [0-9:]+( s)?" "$tmp/tty.out"; then
	echo "FAIL: emu on a terminal drew no progress line:"; od -c "$tmp/tty.out" | head -5; fail=1
else
	echo "ok: emu on a terminal: $(tr '\r' '\n' <"$tmp/tty.out" | grep -a ETA | tail -1 | sed 's/\x1b\[K//g')"
fi
script -qec "$emu_cmd --quiet >/dev/null" /dev/null >"$tmp/tty.out" 2>&1 </dev/null
grep -qa "ETA" "$tmp/tty.out" && { echo "FAIL: emu --quiet drew a progress line"; fail=1; }
[ "$("$S" --help | awk '/^commands:/ {on=1; next} on && NF {n++} on && !NF {exit} END {print n+0}')" -ge 12 ] ||
	{ echo "FAIL: splitnic --help lists fewer than 12 commands"; fail=1; }
# the servers answer --help and --version before DPDK starts (no EAL line, exit 0), anywhere on
# the command line, with their own options from their table; --eal-help is EAL's own help
for srv in "$B/splitnic-nic" "$B/splitnic-host"; do
	name=${srv##*/}
	for args in "--help" "-l 0 --no-huge -- --model x --help" "--version" "-- --version"; do
		# shellcheck disable=SC2086
		out=$("$srv" $args 2>&1)
		rc=$?
		want="^usage: $name EAL-ARGS --"
		[[ "$args" == *--version ]] && want="^$name [0-9]"
		if [ $rc -ne 0 ] || ! [[ "$out" =~ $want ]] || grep -q "^EAL:" <<<"$out"; then
			echo "FAIL: $name $args (exit $rc):"; head -3 <<<"$out"; fail=1
		else
			echo "ok: $name $args -> $(head -1 <<<"$out")"
		fi
	done
	[[ "$("$srv" --help)" == *"--stats-file FILE"* ]] || { echo "FAIL: $name --help lacks --stats-file"; fail=1; }
	[[ "$("$srv" --eal-help 2>&1)" == *"EAL common options"* ]] ||
		{ echo "FAIL: $name --eal-help does not show EAL's options"; fail=1; }
	# the man page's synopsis names every option of the server's table
	for o in $("$srv" --help | sed -n 's/^  --\([a-z-]*\).*/\1/p'); do
		[ "$o" = help ] && continue
		sed -n '/^\.Sh SYNOPSIS/,/^\.Sh DESCRIPTION/p' "man/$name.8" | grep -q -- "Fl -$o\( \|$\)" ||
			{ echo "FAIL: man/$name.8's SYNOPSIS lacks --$o"; fail=1; }
	done
	# bad arguments, before and (as root: EAL's memory) after EAL starts: exit 2, the value named
	eal_args=()
	[ "$(id -u)" = 0 ] && eal_args=("-l 0 --no-huge -m 512 --no-pci --file-prefix sncli$$ -- --model x --payload 9")
	for args in "--config /nonexistent/x.conf" "${eal_args[@]}"; do
		# shellcheck disable=SC2086
		out=$("$srv" $args 2>&1)
		rc=$?
		if [ $rc -ne 2 ] || ! grep -qE "(/nonexistent/x.conf|--payload: an integer in 256..1472, got '9')" <<<"$out"; then
			echo "FAIL: $name $args (exit $rc, want 2):"; grep -vE '^(EAL|TELEMETRY):' <<<"$out" | head -3; fail=1
		else
			echo "ok: $name $args -> exit 2, $(grep -m1 "^$name:" <<<"$out")"
		fi
	done
	[ ! -e "/var/run/dpdk/sncli$$" ] || { echo "FAIL: $name left /var/run/dpdk/sncli$$"; fail=1; }
done

# A start that fails leaves no EAL runtime folder (/var/run/dpdk/PREFIX) behind: in the set-up
# (no ports, a model that is not there), in rte_eal_init itself (a secondary process without a primary),
# but not one that another process holds (a primary with the same prefix: why EAL refused).
if [ "$(id -u)" = 0 ]; then
	run=/var/run/dpdk/sncli$$
	eal="-l 0 --no-huge -m 512 --file-prefix sncli$$ --no-pci"
	for srv in "$B/splitnic-nic" "$B/splitnic-host"; do
		name=${srv##*/}
		for how in "setup|-- --model $tmp/none.snm --ip 10.99.0.1|(none.snm|no port 0)" \
			"eal|--proc-type=secondary -- --model x --ip 10.99.0.1|rte_eal_init"; do
			IFS='|' read -r what args pat <<<"$how"
			# shellcheck disable=SC2086
			out=$("$srv" $eal $args 2>&1)
			rc=$?
			if [ $rc -ne 1 ] || ! grep -qE -- "$pat" <<<"$out"; then
				echo "FAIL: $name, failed $what (exit $rc, want 1 naming $pat):"
				grep -vE '^(EAL|TELEMETRY):' <<<"$out" | head -3; fail=1
			elif [ -e "$run" ]; then
				echo "FAIL: $name left $run behind after a failed $what"; fail=1
			else
				echo "ok: $name, failed $what -> exit 1, $run removed"
			fi
		done
		# another process holds the prefix's config lock, as a running primary does
		mkdir -p "$run"
		/usr/bin/python3 -c 'import fcntl, sys, time
f = open(sys.argv[1] + "/config", "w"); fcntl.lockf(f, fcntl.LOCK_EX); print("held", flush=True); time.sleep(60)' \
			"$run" >"$tmp/held" &
		holder=$!
		for _ in $(seq 50); do [ -s "$tmp/held" ] && break; sleep 0.1; done
		# shellcheck disable=SC2086
		out=$("$srv" $eal -- --model x --ip 10.99.0.1 2>&1)
		rc=$?
		if [ $rc -ne 1 ] || [ ! -e "$run/config" ]; then
			echo "FAIL: $name with its prefix held by another process: exit $rc (want 1), $run $([ -e "$run/config" ] && echo kept || echo removed)"
			fail=1
		else
			echo "ok: $name with its prefix held by another process -> exit 1, $run kept"
		fi
		kill "$holder"
		wait "$holder" 2>/dev/null
		rm -rf "$run"
		: >"$tmp/held"
	done
fi
exit $fail
