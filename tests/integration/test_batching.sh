#!/usr/bin/env bash
# Dynamic batching answers every request with the class it gets unbatched (that of `splitnic run`,
# batch 1), on both servers that batch, with 32 requests outstanding so that they arrive
# together:
#   1. splitnic serve on the loopback, fmnist-bmlp (1,000 images) and fmnist-bcnn (300): first
#      unbatched (--max-batch 1: one batch per request), then batched, the CNN by its --model
#      suffix (,max-batch=16,max-queue-delay-us=300) and the MLP by --max-batch 8: every request
#      answered with the same classes, fewer batches than requests; a bad suffix is refused with
#      a message naming it; serve's configuration file takes max-batch and max-queue-delay-us in
#      a [model NAME] section;
#   2. splitnic-host host-only on net_af_packet (root), the same two models from a configuration
#      file whose [model NAME] sections give max-batch and max-queue-delay-us: the same classes,
#      fewer batches than requests (worker_batches < worker_requests).
# Exit 0 pass, 1 fail, 77 skip of part 2 only when not root (never under CI=true).
set -u
cd "$(dirname "$0")/../.."
. tests/integration/paths.sh
MLP=$B/models/fmnist-bmlp.snm CNN=$B/models/fmnist-bcnn.snm
. lab/netns.sh
netns_need_files FAIL: "make all" "$S" "$HOST" "$MLP" "$CNN" "$IMG"
tag=$$ tmp=$(mktemp -d) pid=
ns_c=snbt-cli-$tag ns_s=snbt-srv-$tag
trap 'netns_kill "$pid"; netns_cleanup "/var/run/dpdk/snbt$tag" "$tmp"' EXIT
fail() { netns_fail "$*" "$tmp/server.log"; }

netns_run_classes "$MLP" "$tmp/mlp" --images "$IMG" --count 1000 || fail "splitnic run (MLP)"
netns_run_classes "$CNN" "$tmp/cnn" --images "$IMG" --count 300 || fail "splitnic run (CNN)"

# clients ADDR TAG: both models, 32 outstanding; the classes of each against splitnic run's
clients() {
	local m n f
	for m in mlp cnn; do
		n=1000 f=$MLP
		[ $m = cnn ] && n=300 f=$CNN
		$NS "$S" client "$1" --model "$f" --images "$IMG" --count $n --outstanding 32 \
			--timeout-ms 5000 --classes "$tmp/$2.$m.classes" >/dev/null ||
			fail "client ($2, $m) exited $?"
		cmp -s "$tmp/$m.classes" "$tmp/$2.$m.classes" ||
			fail "$2: $m classes differ from splitnic run's"
	done
	echo "$2: 1000 + 300 requests answered with the classes of splitnic run"
}

# --- 1. splitnic serve ------------------------------------------------------------------------
NS=
port=$((20000 + (RANDOM + $$) % 40000))
"$S" serve --model "$MLP,max-batch=0" --bind 127.0.0.1 --port "$port" >"$tmp/bad.log" 2>&1 &&
	fail "serve took ,max-batch=0"
grep -q "max-batch: an integer in 1..64, got '0'" "$tmp/bad.log" ||
	fail "bad suffix: $(cat "$tmp/bad.log")"
for cfg in unbatched batched; do
	port=$((20000 + (RANDOM + $$) % 40000))
	if [ $cfg = unbatched ]; then
		set -- --model "$MLP" --model "$CNN" --max-batch 1
	else
		set -- --model "$MLP" --model "$CNN,max-batch=16,max-queue-delay-us=300" --max-batch 8
	fi
	"$S" serve "$@" --bind 127.0.0.1 --port "$port" --stats-file "$tmp/serve.$cfg.json" \
		>"$tmp/server.log" 2>&1 &
	pid=$!
	netns_wait_log "$tmp/server.log" "^serve: listening" "$pid" "splitnic serve" ||
		fail "$NETNS_WHY"
	clients "127.0.0.1:$port" "serve $cfg"
	netns_term "$pid" "splitnic serve" || fail "$NETNS_WHY"
	pid=
	$PY - "$tmp/serve.$cfg.json" $cfg <<'EOF' || fail "serve $cfg: batches"
import json, sys
s, cfg = json.load(open(sys.argv[1])), sys.argv[2]
print(f"serve {cfg}: {s['answered']} answered in {s['batches']} batches")
sys.exit(not (s["answered"] == 1300 and (s["batches"] == 1300) == (cfg == "unbatched")))
EOF
done

# serve's configuration file takes the same [model NAME] keys
port=$((20000 + (RANDOM + $$) % 40000))
printf '[server]\nbind = 127.0.0.1\nport = %s\n[model cnn]\nfile = %s\nmax-batch = 16\nmax-queue-delay-us = 300\n' \
	"$port" "$CNN" >"$tmp/serve.conf"
"$S" serve --config "$tmp/serve.conf" >"$tmp/server.log" 2>&1 &
pid=$!
netns_wait_log "$tmp/server.log" "^serve: listening" "$pid" "splitnic serve" || fail "$NETNS_WHY"
grep -q "fmnist-bcnn.*batches of 16 at most (wait 300 us)" "$tmp/server.log" ||
	fail "serve: the [model] keys not taken"
netns_term "$pid" "splitnic serve" || fail "$NETNS_WHY"
pid=
echo "serve --config: [model cnn] max-batch = 16, max-queue-delay-us = 300 taken"

# --- 2. splitnic-host host-only, batching from the configuration file ---------------------------
if [ "$(id -u)" != 0 ]; then
	[ "${CI:-}" = true ] && fail "not root under CI=true"
	echo "skip: part 2 needs root (namespaces, af_packet)"
	exit 77
fi
{ netns_add "$ns_c" "$ns_s" && netns_direct "$ns_c" vc 10.88.9.2/24 "$ns_s" vw 10.88.9.1; } ||
	fail "namespaces, veth: ${NETNS_WHY:-see above}"
cat >"$tmp/host.conf" <<EOF
[eal]
args = -l 1 --no-huge -m 512 --no-pci
file-prefix = snbt$tag
vdev = net_af_packet0,iface=vw
[server]
ip = 10.88.9.1
[model mlp]
file = $MLP
mode = host-only
max-batch = 8
[model cnn]
file = $CNN
mode = host-only
max-batch = 16
max-queue-delay-us = 300
EOF
ip netns exec "$ns_s" "$HOST" --config "$tmp/host.conf" >"$tmp/server.log" 2>&1 &
pid=$!
netns_wait_log "$tmp/server.log" "^host: serving" "$pid" splitnic-host || fail "$NETNS_WHY"
grep "batches of" "$tmp/server.log"
grep -q "fmnist-bcnn.*batches of 16 at most (wait 300 us)" "$tmp/server.log" ||
	fail "the CNN's [model] keys not taken"
NS="ip netns exec $ns_c"
clients 10.88.9.1 "host batched"
dpdk_telemetry "snbt$tag" /splitnic/host/stats >"$tmp/host.stats" || fail "telemetry"
netns_term "$pid" splitnic-host || fail "$NETNS_WHY"
pid=
$PY - "$tmp/host.stats" <<'EOF' || fail "host: no batch above 1"
import json, sys
s = json.load(open(sys.argv[1]))
print(f"host batched: {s['worker_requests']} requests in {s['worker_batches']} batches")
sys.exit(not (s["worker_requests"] == 1300 and s["worker_batches"] < 1300))
EOF
echo "PASS"
