#!/usr/bin/env bash
# Models replaced, loaded and unloaded on a running splitnic-host (--config FILE), under load:
#
#   cli (10.88.6.2, vc) ==veth== nic ns: [vw] splitnic-nic [memif] <-> [memif] splitnic-host
#
# splitnic-nic holds fmnist-bcnn from its split and fmnist-bmlp from op 1 (requests for either
# pass up); splitnic-host serves fmnist-bcnn in co-processor mode from its configuration file.
#   1. a client sends the whole test set to fmnist-bcnn open loop (RELOAD_RATE a second) while
#      its model file is replaced (a new file with the same weights under the same path: the
#      NIC's part stays right) and splitnic-host reloads, RELOAD_SWAPS times, by SIGHUP, the
#      telemetry command /splitnic/host/reload and POST /-/reload in turn: every reload loads
#      the new file into a free slot and drains the old one; every request gets a RESPONSE
#      (none lost, no timeout; no ERROR but busy, which only a shared machine that stops the
#      worker for longer than its queue of 1,024 lasts causes, and which the server counts),
#      with the class of `splitnic run`, answered by the NIC (the NIC's notices of requests in
#      flight on an old version find that version: no late notice, no fallback but for a NIC
#      answer late or a window full while the shared machine stalls a server); the metrics
#      count every reload;
#   2. fmnist-bmlp added to the file: loaded (answered); fmnist-bcnn's section removed: unloaded
#      (ERROR unknown_model), fmnist-bmlp still answered;
#   3. a configuration with an error: the reload says why (status non-zero), the models stay;
#   4. SIGTERM: exit 0.
# Exit 0 pass, 1 fail, 77 skip (only when not root, and never under CI=true).
set -u
cd "$(dirname "$0")/../.."
. tests/integration/paths.sh
. lab/netns.sh
CNN=$(realpath "$B/models/fmnist-bcnn.snm")
MLP=$(realpath "$B/models/fmnist-bmlp.snm")
RATE=${RELOAD_RATE:-1000}
SWAPS=${RELOAD_SWAPS:-9}

netns_need_root af_packet
netns_need_files FAIL: "make all" "$S" "$NIC" "$HOST" "$CNN" "$MLP" "$IMG"

tag=$$
ns_c=snrl-cli-$tag
ns_n=snrl-nic-$tag
tmp=$(mktemp -d)
nic_pid=
host_pid=
cleanup() {
	netns_kill "$host_pid" "$nic_pid"
	netns_cleanup "/var/run/dpdk/snrn$tag" "/var/run/dpdk/snrh$tag" "$tmp"
}
trap cleanup EXIT
fail() {
	echo "FAIL: $*"
	netns_logs "$tmp" nic host
	exit 1
}
get() { ip netns exec "$ns_n" curl -s --max-time 70 "$@"; }
metric() { get http://127.0.0.1:9112/metrics | awk -v m="$1" '$1 == m {print $2}'; }
conf() { # conf NAME:MODE...: the host's configuration file, a [model NAME] section each
	printf '[server]\nidle-sleep-us = 50\nqueue = 1024\n' >"$tmp/host.conf.new"
	local m
	for m; do
		printf '[model %s]\nfile = %s\nmode = %s\n' "${m%%:*}" "$tmp/${m%%:*}.snm" "${m#*:}" \
			>>"$tmp/host.conf.new"
	done
	mv "$tmp/host.conf.new" "$tmp/host.conf"
}
replace() { cp "$1" "$tmp/new.snm" && mv "$tmp/new.snm" "$2"; } # a new file, the same path

netns_wire "$ns_c" "$ns_n" 10.88.6.2/24 || fail "namespaces and veth: $NETNS_WHY"
K=$(netns_split "$S" "$CNN") || fail "split point"
"$S" run "$CNN" --images "$IMG" --scores "$tmp/cnn.csv" >/dev/null || fail "splitnic run"
classes_of_scores "$tmp/cnn.csv" >"$tmp/cnn.classes"
cp "$CNN" "$tmp/bcnn.snm"
cp "$MLP" "$tmp/bmlp.snm"
conf bcnn:coproc

ip netns exec "$ns_n" "$NIC" -l 0 --no-huge -m 512 --file-prefix "snrn$tag" --no-pci \
	--vdev net_af_packet0,iface=vw \
	--vdev "net_memif0,role=server,socket=$tmp/memif.sock,socket-abstract=no" -- \
	--model "$CNN@$K" --model "$MLP@1" --ip 10.88.6.1 --notify-host --executors 4 \
	--idle-sleep-us 50 >"$tmp/nic.log" 2>&1 &
nic_pid=$!
netns_wait_log "$tmp/nic.log" "^nic: forwarding" "$nic_pid" splitnic-nic || fail "$NETNS_WHY"
ip netns exec "$ns_n" "$HOST" -l 1 --no-huge -m 512 --file-prefix "snrh$tag" --no-pci \
	--vdev "net_memif0,role=client,socket=$tmp/memif.sock,socket-abstract=no" -- \
	--config "$tmp/host.conf" --ip 10.88.6.1 --metrics-port 9112 --metrics-addr 127.0.0.1 \
	>"$tmp/host.log" 2>&1 &
host_pid=$!
netns_wait_log "$tmp/host.log" "^host: serving" "$host_pid" splitnic-host || fail "$NETNS_WHY"
for _ in $(seq 100); do # the memif link
	[ "$(metric splitnic_host_link_up)" = 1 ] && break
	sleep 0.1
done

# --- 1. replaced under load ---------------------------------------------------------------------
ip netns exec "$ns_c" "$S" client 10.88.6.1 --images "$IMG" --model-id fmnist-bcnn \
	--rate "$RATE" --timeout-ms 3000 --json --classes "$tmp/client.classes" \
	>"$tmp/client.json" 2>"$tmp/client.err" &
cpid=$!
sleep 0.5
for i in $(seq "$SWAPS"); do
	replace "$CNN" "$tmp/bcnn.snm"
	case $((i % 3)) in
	1) kill -HUP "$host_pid" ;;
	2) dpdk_telemetry "snrh$tag" /splitnic/host/reload >"$tmp/tel.json" ||
		fail "telemetry /splitnic/host/reload" ;;
	0) [ "$(get -o "$tmp/post.out" -w '%{http_code}' -X POST http://127.0.0.1:9112/-/reload)" = 200 ] ||
		fail "POST /-/reload: $(cat "$tmp/post.out")" ;;
	esac
	for _ in $(seq 100); do
		[ "$(metric splitnic_host_models_version)" = $((i + 1)) ] && break
		sleep 0.05
	done
	[ "$(metric splitnic_host_models_version)" = $((i + 1)) ] || fail "reload $i did not happen"
	sleep 0.5
done
wait "$cpid"
crc=$?
"$PY" - "$tmp/client.json" "$tmp/client.classes" "$tmp/cnn.classes" "$tmp/busy" <<'EOF' || fail "answers across the reloads"
import json, sys
c = json.load(open(sys.argv[1]))
got = [int(l) for l in open(sys.argv[2])]
ref = [int(l) for l in open(sys.argv[3])]
diff = sum(1 for g, r in zip(got, ref) if g >= 0 and g != r)
busy = c["errors"]["busy"]
print(f"client: {c['responses']}/{c['requests']} answered, errors {c['errors']}, "
      f"{c['timeouts']} timeouts, {diff} classes differing from splitnic run")
ok = (c["requests"] == len(ref) and c["responses"] + busy == len(ref) and
      c["errors"]["total"] == busy and not c["timeouts"] and len(got) == len(ref) and diff == 0)
open(sys.argv[4], "w").write(f"{busy} {c['responses']}\n")
sys.exit(0 if ok else 1)
EOF
[ "$crc" = 0 ] || fail "client exited $crc"
grep -q "host: reload: version $((SWAPS + 1)): 1 model(s): 1 loaded, 1 unloaded, 0 kept" "$tmp/host.log" ||
	fail "the last reload did not replace the model"
[ "$(metric splitnic_host_reloads_total)" = "$SWAPS" ] || fail "reloads_total $(metric splitnic_host_reloads_total)"
read -r busy answered <"$tmp/busy"
counted=$(get http://127.0.0.1:9112/metrics |
	awk '$1 ~ /^splitnic_host_errors_total\{reason="busy_(queue|table)"\}$/ {s += $2} END {print s + 0}')
[ "$counted" = "$busy" ] || fail "the client got $busy ERROR busy, the server counted $counted"
# every answer by the NIC but those the host finished itself because the NIC's answer was late
# (timeout) or its window full: load on a shared machine, not the reload; a notice for a version
# that is gone would be a late notice or a fallback for another reason
fallbacks() { # fallbacks REGEX: the host's fallbacks whose reason matches REGEX
	get http://127.0.0.1:9112/metrics | awk -v r="reason=\"($1)\"" \
		'$1 ~ /^splitnic_host_fallbacks_total\{/ && $1 ~ r {s += $2} END {print s + 0}'
}
[ "$(fallbacks ".*")" = "$(fallbacks "timeout|window_full")" ] ||
	fail "fallbacks for a reason other than a late or full NIC: $(get http://127.0.0.1:9112/metrics | grep fallbacks_total)"
late_load=$(fallbacks "timeout|window_full")
by_host=$(metric splitnic_host_answered_host_total)
[ "$(metric splitnic_host_answered_nic_total)" = $((answered - by_host)) ] ||
	fail "answered_nic_total $(metric splitnic_host_answered_nic_total) + answered_host_total $by_host != $answered"
[ "$by_host" = "$late_load" ] ||
	fail "$by_host answered by the host, $late_load of them for a late or full NIC (timeout, window_full)"
[ "$(metric splitnic_host_late_notices_total)" = 0 ] ||
	fail "late_notices_total $(metric splitnic_host_late_notices_total), expected 0"
echo "replaced $SWAPS times under $RATE requests/s: $answered of 10000 answered ($((answered - by_host)) by the NIC, $by_host by the host for a NIC answer late under load) with splitnic run's classes, $busy ERROR busy (counted), none lost, no late notice"

# --- 2. load and unload ---------------------------------------------------------------------------
conf bcnn:coproc bmlp:host-only
[ "$(get -o "$tmp/post.out" -w '%{http_code}' -X POST http://127.0.0.1:9112/-/reload)" = 200 ] ||
	fail "load: $(cat "$tmp/post.out")"
grep -q "1 loaded, 0 unloaded, 1 kept" "$tmp/post.out" || fail "load: $(cat "$tmp/post.out")"
ip netns exec "$ns_c" "$S" client 10.88.6.1 --images "$IMG" --model-id fmnist-bmlp --count 200 \
	>/dev/null || fail "fmnist-bmlp loaded but not answered"
conf bmlp:host-only
[ "$(get -o "$tmp/post.out" -w '%{http_code}' -X POST http://127.0.0.1:9112/-/reload)" = 200 ] ||
	fail "unload: $(cat "$tmp/post.out")"
ip netns exec "$ns_c" "$S" client 10.88.6.1 --images "$IMG" --model-id fmnist-bcnn --count 10 \
	--json >"$tmp/gone.json" 2>/dev/null
[ "$(jq '.errors.unknown_model' "$tmp/gone.json")" = 10 ] || fail "unloaded fmnist-bcnn: $(cat "$tmp/gone.json")"
ip netns exec "$ns_c" "$S" client 10.88.6.1 --images "$IMG" --model-id fmnist-bmlp --count 200 \
	>/dev/null || fail "fmnist-bmlp not answered after fmnist-bcnn's unload"
[ "$(metric splitnic_host_models)" = 1 ] || fail "models gauge $(metric splitnic_host_models)"
echo "loaded fmnist-bmlp (answered), unloaded fmnist-bcnn (ERROR unknown_model), fmnist-bmlp still answered"

# --- 3. a bad configuration keeps the models ------------------------------------------------
echo "this is not ini" >>"$tmp/host.conf"
[ "$(get -o "$tmp/post.out" -w '%{http_code}' -X POST http://127.0.0.1:9112/-/reload)" = 500 ] ||
	fail "a bad configuration did not fail the reload: $(cat "$tmp/post.out")"
grep -q "still serving" "$tmp/post.out" || fail "the failed reload says: $(cat "$tmp/post.out")"
ip netns exec "$ns_c" "$S" client 10.88.6.1 --images "$IMG" --model-id fmnist-bmlp --count 200 \
	>/dev/null || fail "fmnist-bmlp not answered after a failed reload"
echo "a bad configuration: '$(cat "$tmp/post.out")', the models kept"

netns_term "$host_pid" splitnic-host || fail "$NETNS_WHY"
host_pid=
netns_term "$nic_pid" splitnic-nic || fail "$NETNS_WHY"
nic_pid=
echo "pass: splitnic-host replaced a model $SWAPS times under load (SIGHUP, telemetry, POST) with none of 10000 requests lost, loaded and unloaded models, and kept its models through a bad configuration"
