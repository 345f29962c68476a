#!/usr/bin/env bash
# Models replaced, loaded and unloaded on a running `splitnic serve` (--config FILE), under load:
#
#   1. serve starts with model id 77 = fmnist-bmlp (--config, [model m]); a client sends the
#      whole Fashion-MNIST test set open loop (RELOAD_RATE a second) for model 77 while the file
#      is switched between fmnist-bmlp and fmnist-fmlp (the same input, other weights) and
#      serve told to reload, RELOAD_SWAPS times, by SIGHUP and by POST /-/reload on the metrics
#      port in turn: every request gets a RESPONSE (none lost, no ERROR, no timeout), each
#      class is the one fmnist-bmlp or fmnist-fmlp gives that image (`splitnic run`), and
#      answers of both came where the two differ; the metrics say every reload happened
#      (splitnic_serve_reloads_total, splitnic_serve_models_version), and the latency
#      histograms (per model name, kept across versions) count every answer;
#   2. a second model (id 5) loaded: answered; the first unloaded: ERROR unknown_model, the
#      second still answered;
#   3. a configuration with an error: POST /-/reload says 500 and why, the running models stay;
#   4. SIGTERM: exit 0.
# Exit 0 pass, 1 fail.
set -u
cd "$(dirname "$0")/../.."
. tests/integration/paths.sh
. lab/netns.sh
MLP=$(realpath "$B/models/fmnist-bmlp.snm")
FMLP=$(realpath "$B/models/fmnist-fmlp.snm")
RATE=${RELOAD_RATE:-2000}
SWAPS=${RELOAD_SWAPS:-10}
netns_need_files FAIL: "make all" "$S" "$MLP" "$FMLP" "$IMG"
command -v curl >/dev/null && command -v jq >/dev/null || { echo "FAIL: curl or jq missing"; exit 1; }

tmp=$(mktemp -d)
pid=
cleanup() {
	netns_kill "$pid"
	rm -rf "$tmp"
}
trap cleanup EXIT
fail() {
	echo "FAIL: $*"
	netns_logs "$tmp" serve
	exit 1
}
port=$((21400 + $$ % 500))
mport=$((port + 500))
conf() { # conf [ID=FILE...]: the configuration file, one [model] section each
	{
		printf '[server]\nbind = 127.0.0.1\nport = %s\nmetrics-port = %s\nmetrics-addr = 127.0.0.1\n' \
			"$port" "$mport"
		local i=0 m
		for m; do
			printf '[model m%d]\nid = %s\nfile = %s\n' "$i" "${m%%=*}" "${m#*=}"
			i=$((i + 1))
		done
	} >"$tmp/serve.conf.new"
	mv "$tmp/serve.conf.new" "$tmp/serve.conf"
}
metric() { curl -s --max-time 5 "http://127.0.0.1:$mport/metrics" | awk -v m="$1" '$1 == m {print $2}'; }
reload() { curl -s --max-time 70 -o "$tmp/reload.out" -w '%{http_code}' -X POST "http://127.0.0.1:$mport/-/reload"; }

"$S" run "$MLP" --images "$IMG" --scores "$tmp/bmlp.csv" >/dev/null || fail "splitnic run bmlp"
"$S" run "$FMLP" --images "$IMG" --scores "$tmp/fmlp.csv" >/dev/null || fail "splitnic run fmlp"
classes_of_scores "$tmp/bmlp.csv" >"$tmp/bmlp.classes"
classes_of_scores "$tmp/fmlp.csv" >"$tmp/fmlp.classes"

conf "77=$MLP"
"$S" serve --config "$tmp/serve.conf" >"$tmp/serve.log" 2>&1 &
pid=$!
netns_wait_log "$tmp/serve.log" "^serve: listening" "$pid" "splitnic serve" || fail "$NETNS_WHY"

# --- 1. replaced under load ---------------------------------------------------------------------
"$S" client "127.0.0.1:$port" --images "$IMG" --model-id 77 --rate "$RATE" --timeout-ms 3000 \
	--json --classes "$tmp/client.classes" >"$tmp/client.json" 2>"$tmp/client.err" &
cpid=$!
sleep 0.5
for i in $(seq "$SWAPS"); do
	if [ $((i % 2)) = 1 ]; then conf "77=$FMLP"; else conf "77=$MLP"; fi
	if [ $((i % 4)) -lt 2 ]; then
		kill -HUP "$pid"
		for _ in $(seq 100); do
			[ "$(metric splitnic_serve_models_version)" = $((i + 1)) ] && break
			sleep 0.05
		done
	else
		[ "$(reload)" = 200 ] || fail "POST /-/reload: $(cat "$tmp/reload.out")"
	fi
	[ "$(metric splitnic_serve_models_version)" = $((i + 1)) ] || fail "reload $i did not happen"
	sleep 0.3
done
wait "$cpid"
crc=$?
"$PY" - "$tmp/client.json" "$tmp/client.classes" "$tmp/bmlp.classes" "$tmp/fmlp.classes" <<'EOF' || fail "answers across the reloads"
import json, sys
c = json.load(open(sys.argv[1]))
got = [int(l) for l in open(sys.argv[2])]
a = [int(l) for l in open(sys.argv[3])]
b = [int(l) for l in open(sys.argv[4])]
n = len(a)
old = sum(1 for g, x, y in zip(got, a, b) if x != y and g == x)
new = sum(1 for g, x, y in zip(got, a, b) if x != y and g == y)
neither = sum(1 for g, x, y in zip(got, a, b) if g != x and g != y)
print(f"client: {c['responses']}/{c['requests']} answered, {c['errors']['total']} errors, "
      f"{c['timeouts']} timeouts; where the versions differ: {old} answers of fmnist-bmlp, "
      f"{new} of fmnist-fmlp; {neither} of neither")
ok = (c["requests"] == n and c["responses"] == n and not c["errors"]["total"] and
      not c["timeouts"] and len(got) == n and neither == 0 and old > 0 and new > 0)
sys.exit(0 if ok else 1)
EOF
[ "$crc" = 0 ] || fail "client exited $crc"
[ "$(metric splitnic_serve_reloads_total)" = "$SWAPS" ] || fail "reloads_total $(metric splitnic_serve_reloads_total), expected $SWAPS"
count=$(curl -s "http://127.0.0.1:$mport/metrics" |
	awk '$1 ~ /^splitnic_serve_latency_seconds_count\{model="fmnist-[bf]mlp",stage="total"\}$/ {s += $2} END {print s + 0}')
[ "$count" = 10000 ] || fail "the latency histograms count $count answers, not 10000"
echo "replaced $SWAPS times under $RATE requests/s: 10000 of 10000 answered, none lost; histograms kept"

# --- 2. load and unload ---------------------------------------------------------------------------
conf "77=$MLP" "5=$FMLP"
[ "$(reload)" = 200 ] || fail "load: $(cat "$tmp/reload.out")"
"$S" client "127.0.0.1:$port" --images "$IMG" --model-id 5 --count 100 >/dev/null ||
	fail "model 5 loaded but not answered"
conf "5=$FMLP"
[ "$(reload)" = 200 ] || fail "unload: $(cat "$tmp/reload.out")"
"$S" client "127.0.0.1:$port" --images "$IMG" --model-id 77 --count 10 --json >"$tmp/gone.json" 2>/dev/null
[ "$(jq '.errors.unknown_model' "$tmp/gone.json")" = 10 ] || fail "unloaded model 77: $(cat "$tmp/gone.json")"
"$S" client "127.0.0.1:$port" --images "$IMG" --model-id 5 --count 100 >/dev/null ||
	fail "model 5 not answered after 77's unload"
[ "$(metric splitnic_serve_models)" = 1 ] || fail "models gauge $(metric splitnic_serve_models)"
echo "loaded model 5 (answered), unloaded 77 (ERROR unknown_model), 5 still answered"

# --- 3. a bad configuration keeps the running models ----------------------------------------
echo "this is not ini" >>"$tmp/serve.conf"
[ "$(reload)" = 500 ] || fail "a bad configuration did not fail the reload"
grep -q "still serving" "$tmp/reload.out" || fail "the failed reload says: $(cat "$tmp/reload.out")"
grep -q "serve.conf:.*not 'key = value'" "$tmp/serve.log" || fail "no message naming the line"
"$S" client "127.0.0.1:$port" --images "$IMG" --model-id 5 --count 100 >/dev/null ||
	fail "model 5 not answered after a failed reload"
echo "a bad configuration: 500 '$(cat "$tmp/reload.out")', the models kept"

netns_term "$pid" "splitnic serve" || fail "$NETNS_WHY"
pid=
echo "pass: splitnic serve replaced a model $SWAPS times under load with none of 10000 requests lost, loaded and unloaded models, and kept its models through a bad configuration"
