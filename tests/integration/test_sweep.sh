#!/usr/bin/env bash
# splitnic sweep in process on the bundled models and the three architectures of split/arch/
# (random weights from `splitnic gen`), at 0.1, 1 and 10 Gbit/s: every sweep runs, every split's
# result equals the whole model on the CPU (sweep exits non-zero otherwise), a SWEEP line is
# printed for every model and link rate, the JSON keeps MEASURED and MODELED parts apart, and the
# plots are PNG / SVG with the modeled parts labelled. How close the planner comes to the
# measured best over the packet path is a timing figure: `make bench-split` reports it
# (tests/bench/bench_split.sh), this test does not assert on it. Exit 0 pass, 1 fail.
set -u
cd "$(dirname "$0")/../.."
B=${B:-build}
SN=${SPLITNIC:-$B/splitnic}
PY=/usr/bin/python3
[ -x "$SN" ] || { echo "FAIL: $SN not built"; exit 1; }
command -v gnuplot >/dev/null || { echo "FAIL: gnuplot not installed (make deps)"; exit 1; }
W=${SWEEP_DIR:-$B/split-test}
COUNT=${SWEEP_COUNT:-3}
mkdir -p "$W"
fail=0

"$SN" calibrate --quick -o "$W/profile" >"$W/calibrate.log" 2>&1 || { cat "$W/calibrate.log"; exit 1; }

models=()
for m in "$B"/models/fmnist-bmlp.snm "$B"/models/fmnist-bcnn.snm; do
	if [ -f "$m" ]; then models+=("$m"); else echo "note: $m not built (make models); left out"; fi
done
for a in bmlp bcnn-cifar alexnet-bin; do
	# rebuilt when splitnic is newer: the model file format follows the compiler
	if [ ! -f "$W/$a.snm" ] || [ "$SN" -nt "$W/$a.snm" ]; then
		"$SN" gen "split/arch/$a.json" -o "$W/$a.npz" --seed 7 &&
			"$SN" convert "split/arch/$a.json" "$W/$a.npz" -o "$W/$a.snm" ||
			{ echo "FAIL: gen/convert $a"; exit 1; }
		rm -f "$W/$a.npz"
	fi
	models+=("$W/$a.snm")
done

: >"$W/sweep.txt"
i=0
for m in "${models[@]}"; do
	ext=png norm=; [ $((i % 2)) -eq 1 ] && ext=svg norm=--normalize
	name=$(basename "$m" .snm)
	if ! "$SN" sweep "$m" --profile "$W/profile" --link-gbps 0.1,1,10 --count "$COUNT" \
		--plot "$W/sweep-$name.$ext" $norm --json "$W/sweep-$name.json" >"$W/sweep-$name.txt" \
		2>"$W/sweep-$name.err"; then
		echo "FAIL: sweep $name"; tail -5 "$W/sweep-$name.err"; fail=1
	fi
	cat "$W/sweep-$name.txt" >>"$W/sweep.txt"
	i=$((i + 1))
done
"$SN" analyze split/arch/alexnet.json --plot "$W/analyze-alexnet.png" >/dev/null || fail=1
"$SN" analyze split/arch/bcnn-cifar.json --plot "$W/analyze-bcnn.svg" >/dev/null || fail=1

# one numbering of split points everywhere: analyze's compiled_ops column agrees with inspect's
# op table (op k implements source layers a-b) for every bundled model
for m in "$B"/models/fmnist-*.snm; do
	"$SN" analyze "$m" --csv >"$W/an.csv" && "$SN" inspect "$m" --ops >"$W/ops.txt" ||
		{ echo "FAIL: analyze/inspect $m"; fail=1; continue; }
	"$PY" - "$W/an.csv" "$W/ops.txt" "$m" <<'EOF' || fail=1
import csv, re, sys
rows = list(csv.DictReader(open(sys.argv[1])))
want = {}
on = False
for line in open(sys.argv[2]):
    if line.startswith("compiled ops:"):
        on = True
        continue
    f = line.split()
    if on and len(f) >= 3 and f[0].isdigit() and re.fullmatch(r"\d+-\d+", f[2]):
        a, b = map(int, f[2].split("-"))
        for i in range(a, b + 1):
            want.setdefault(i, []).append(int(f[0]))
bad = []
for r in rows:
    ops = want.get(int(r["index"]), [])
    got = "-" if not ops else str(ops[0]) if len(ops) == 1 else f"{min(ops)}-{max(ops)}"
    if r["compiled_ops"] != got:
        bad.append(f"layer {r['index']} ({r['name']}): analyze says op {r['compiled_ops']}, inspect {got}")
print(f"{sys.argv[3]}: {len(rows)} source layers, compiled-op numbers "
      + ("agree" if not bad else "DIFFER: " + "; ".join(bad)))
sys.exit(1 if bad else 0)
EOF
done

grep '^SWEEP' "$W/sweep.txt"
total=$(grep -c '^SWEEP mode=in-process' "$W/sweep.txt")
if [ "$total" -ne $((3 * ${#models[@]})) ]; then
	echo "FAIL: $total SWEEP lines, expected $((3 * ${#models[@]}))"; fail=1
fi
"$PY" - "$W"/sweep-*.json <<'EOF' || fail=1
import json, sys
for path in sys.argv[1:]:
    j = json.load(open(path))
    bad = [s["split"] for s in j["splits"] if s["modeled"]["label"] != "MODELED"
           or abs(sum(s["measured"][k] for k in ("host_us", "serialize_us", "copy_us", "deserialize_us"))
                  - s["measured"]["inproc_us"]) > 1e-6 * (1 + s["measured"]["inproc_us"])]
    if j["mode"] != "in-process" or bad:
        print(f"FAIL: {path}: mode {j['mode']}, splits {bad}")
        sys.exit(1)
print(f"{len(sys.argv) - 1} sweep JSON files: in-process, MEASURED parts apart from MODELED ones")
EOF
[ ${#models[@]} -eq 5 ] || { echo "FAIL: only ${#models[@]} of 5 models swept"; fail=1; }

for f in "$W"/*.png; do
	[ "$(head -c 8 "$f" | od -An -tx1 | tr -d ' \n')" = 89504e470d0a1a0a ] ||
		{ echo "FAIL: $f is not a PNG"; fail=1; }
done
for f in "$W"/*.svg; do
	grep -q '<svg' "$f" || { echo "FAIL: $f is not an SVG"; fail=1; }
done
# the figures' elements, read back from the SVG text: Figure 5 normalised, with its overhead
# panel and modeled parts labelled; Figure 2 with the input first and parameters on their axis
for pat in 'normalised to the unsplit' 'x unsplit' 'split overhead' 'transfer (MODELED)' \
	'NIC compute (MODELED)' 'IN PROCESS'; do
	cat "$W"/sweep-*.svg | grep -qF "$pat" || { echo "FAIL: sweep SVG lacks '$pat'"; fail=1; }
done
for pat in '>input<' '>conv1' '>pool' '>fc' 'parameters (log)' 'output size (bytes, log)'; do
	grep -qF "$pat" "$W/analyze-bcnn.svg" || { echo "FAIL: analyze SVG lacks '$pat'"; fail=1; }
done
[ "$fail" -eq 0 ] && echo "test_sweep: pass"
exit "$fail"
