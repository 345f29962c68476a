#!/usr/bin/env bash
# `splitnic client` against the reference responder (`splitnic respond-ref`) over loopback UDP:
# exact accounting of answers, wrong answers, errors and drops (timeouts); open and closed loop;
# fragmented requests and responses; no server at all; bad arguments.
# Exit 0 pass, 1 fail, 77 skip (no Fashion-MNIST: `make deps` installs dataset-fashion-mnist).
set -u
cd "$(dirname "$0")/../.."
S=${SPLITNIC:-build/splitnic}
PY=/usr/bin/python3
D=/usr/share/datasets/fashion-mnist
IMG=$D/t10k-images-idx3-ubyte.gz
LAB=$D/t10k-labels-idx1-ubyte.gz
[ -x "$S" ] || { echo "FAIL: $S not built"; exit 1; }
[ -r "$IMG" ] && [ -r "$LAB" ] || { echo "skip: $D missing (make deps)"; exit 77; }
work=$(mktemp -d)
ref_pid=
cleanup() {
	[ -n "$ref_pid" ] && kill "$ref_pid" 2>/dev/null && wait "$ref_pid" 2>/dev/null
	rm -rf "$work"
}
trap cleanup EXIT
fail=0

# Start a responder on a free port; sets $port and $ref_pid.
start_ref() {
	local try
	stop_ref
	for try in 1 2 3 4 5 6 7 8; do
		port=$((20000 + (RANDOM % 30000)))
		rm -f "$work/ready"
		"$S" respond-ref --port "$port" --ready-file "$work/ready" "$@" 2>"$work/ref.log" &
		ref_pid=$!
		for _ in $(seq 50); do
			[ -e "$work/ready" ] && return 0
			kill -0 "$ref_pid" 2>/dev/null || break
			sleep 0.1
		done
		wait "$ref_pid" 2>/dev/null
		ref_pid=
	done
	echo "FAIL: respond-ref did not start"; cat "$work/ref.log"; exit 1
}

stop_ref() {
	if [ -n "$ref_pid" ]; then
		kill "$ref_pid" 2>/dev/null
		wait "$ref_pid" 2>/dev/null
		ref_pid=
	fi
}

# check NAME JSON PYTHON-EXPRESSION-over-j
check() {
	if "$PY" -c "import json,sys; j=json.loads(sys.argv[1]); sys.exit(0 if ($3) else 1)" "$2"; then
		echo "pass: $1"
	else
		echo "FAIL: $1: $3"; echo "$2"; fail=1
	fi
}

# 1. closed loop, 8 outstanding, 1000 images. Of the c-th request: c%100 dropped (10),
#    c%50 else busy (10), c%10 else wrong (80): 980 answers, 900 right, 10 timeouts.
start_ref --images "$IMG" --labels "$LAB" --wrong-every 10 --error-every 50 --drop-every 100
out=$("$S" client "127.0.0.1:$port" --images "$IMG" --labels "$LAB" --count 1000 \
	--outstanding 8 --timeout-ms 300 --json)
rc=$?
[ "$rc" -eq 3 ] || { echo "FAIL: client exited $rc with 20 requests unanswered (want 3)"; fail=1; }
check "closed loop accounting" "$out" \
	"j['sent']==1000 and j['responses']==980 and j['errors']['busy']==10 and
	 j['errors']['total']==10 and j['timeouts']==10 and j['correct']==900 and
	 j['labelled']==980 and abs(j['accuracy']-900/980)<1e-6 and j['late']==0 and
	 j['stray']==0 and j['executors']['cpu']==980 and
	 0<j['latency_us']['p50']<=j['latency_us']['p90']<=j['latency_us']['p99']<=j['latency_us']['p99.9']<=j['latency_us']['max'] and
	 j['throughput_rps']>0 and j['server_mean_ns']['total']>0"

# 2. open loop at 2000 requests/s, every answer right; the text report
start_ref --images "$IMG" --labels "$LAB"
out=$("$S" client "127.0.0.1:$port" --images "$IMG" --labels "$LAB" --count 400 \
	--rate 2000 --json)
check "open loop, all correct" "$out" \
	"j['mode']=='open' and j['responses']==400 and j['correct']==400 and j['timeouts']==0 and
	 j['duration_s']>0.15"
text=$("$S" client "127.0.0.1:$port" --images "$IMG" --labels "$LAB" --count 100 --outstanding 4)
rc=$?
[ "$rc" -eq 0 ] || { echo "FAIL: client exited $rc with every request answered"; fail=1; }
echo "$text"
for pat in 'accuracy   1.0000 (100/100)' 'latency    p50 ' 'p99.9 ' 'throughput ' \
	'timeouts 0' 'errors 0'; do
	echo "$text" | grep -qF "$pat" || { echo "FAIL: text report lacks '$pat'"; fail=1; }
done

# 3. fragmented requests (f32 3x64x64 = 49152 bytes, 37 datagrams) and fragmented responses
#    (300 classes = 2400 bytes of scores, 2 datagrams), small payload too
start_ref --classes 300
out=$("$S" client "127.0.0.1:$port" --shape 3,64,64 --dtype f32 --count 30 --outstanding 2 --json)
check "fragmented requests and responses" "$out" \
	"j['responses']==30 and j['timeouts']==0 and j['errors']['total']==0 and j['accuracy'] is None"
out=$("$S" client "127.0.0.1:$port" --shape 1,28,28 --count 20 --payload 300 --json)
check "payload 300" "$out" "j['responses']==20 and j['timeouts']==0"
# random tensors of a model's input shape (an f32 model of the spec's hard cases)
"$PY" models/scripts/genmodel.py --out "$work/gm" --seed 2 --kind hard >/dev/null
"$S" convert "$work/gm/arch.json" "$work/gm/weights.npz" -o "$work/gm/m.snm"
out=$("$S" client "127.0.0.1:$port" --model "$work/gm/m.snm" --count 12 --payload 300 --json)
check "random inputs of --model's shape" "$out" "j['responses']==12 and j['timeouts']==0"
if "$S" client "127.0.0.1:$port" --model "$work/nope.snm" --count 1 2>"$work/err"; then
	echo "FAIL: --model of a missing file accepted"; fail=1
elif ! grep -q "nope.snm" "$work/err"; then
	echo "FAIL: --model error does not name the file"; cat "$work/err"; fail=1
else
	echo "pass: --model of a missing file refused: $(cat "$work/err")"
fi

# 4. a request the server rejects comes back as an ERROR: too large for its table
stop_ref
start_ref --classes 10
out=$("$S" client "127.0.0.1:$port" --shape 9,512,512 --dtype f32 --count 2 --timeout-ms 2000 \
	--json)
check "too large -> error" "$out" "j['errors']['too_large']==2 and j['responses']==0"

# 5. nobody listening: every request times out
stop_ref
out=$("$S" client "127.0.0.1:$port" --shape 1,28,28 --count 5 --outstanding 5 --timeout-ms 100 \
	--json)
check "no server -> timeouts" "$out" "j['timeouts']==5 and j['responses']==0 and
	 j['latency_us'] is None and j['accuracy'] is None"
# ... and the client says so: exit status 3, "no answers" instead of figures that look measured
text=$("$S" client "127.0.0.1:$port" --images "$IMG" --labels "$LAB" --count 3 --timeout-ms 100 \
	2>"$work/err")
rc=$?
echo "$text"
if [ "$rc" -ne 3 ]; then
	echo "FAIL: client exited $rc when no request was answered (want 3)"; fail=1
elif ! grep -q "3 of 3 requests got no RESPONSE" "$work/err"; then
	echo "FAIL: client's stderr does not count the lost requests"; cat "$work/err"; fail=1
fi
for pat in 'accuracy   no answers' 'latency    no answers'; do
	echo "$text" | grep -qF "$pat" || { echo "FAIL: text report lacks '$pat'"; fail=1; }
done
if echo "$text" | grep -qE '0\.0000 \(0/0\)|p50 0\.0 us'; then
	echo "FAIL: text report prints figures for no answers"; fail=1
fi

# 6. bad arguments are refused
for args in "" "127.0.0.1" "127.0.0.1 --shape 1,2" "127.0.0.1 --shape 1,1,1 --rate 5 --outstanding 2" \
	"127.0.0.1 --images /nonexistent"; do
	# shellcheck disable=SC2086
	if "$S" client $args >/dev/null 2>&1; then
		echo "FAIL: client accepted '$args'"; fail=1
	fi
done
[ $fail = 0 ] && echo "pass: client"
exit $fail
