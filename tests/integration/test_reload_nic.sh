#!/usr/bin/env bash
# Models replaced, loaded and unloaded on a running splitnic-nic (--config FILE), under load:
#
#   cli (10.88.7.2, vc) ==veth== nic ns: [vw] splitnic-nic [net_null: no host]
#
# splitnic-nic serves fmnist-bmlp stand-alone from its configuration file, on a worker lcore
# (RELOAD_LCORES=0: none, every chain inline on the main lcore). Every model a reload loads runs
# its chain where the model loaded at start runs its own (/splitnic/nic/models: m<i>_lcores the
# same, the worker lcores unless RELOAD_LCORES=0), and m<i>_handlers, the handlers run there for
# it, rise with the requests it answers.
# A second file of the same model (same name, same id) has its last layer's classes rotated:
# its class is splitnic run's plus one (mod 10), so each answer says which version gave it.
#   1. a client sends RELOAD_COUNT test images open loop (RELOAD_RATE a second) while the model
#      file is replaced by the other version (a new file under the same path) three times, by
#      SIGHUP, the telemetry command /splitnic/nic/reload and POST /-/reload in turn: every
#      request gets a RESPONSE (none lost, no timeout; no ERROR but busy, counted), each class
#      that of one of the two versions, both versions answer, and in the order the requests
#      were sent the version changes exactly three times (in-flight requests end on the old
#      version, later ones go to the new one); the metrics count every reload;
#   2. a second model (the rotated file as id 7) loaded: answered with its classes; fmnist-bmlp's
#      section removed: unloaded (ERROR unknown_model), id 7 still answered; fmnist-bmlp loaded
#      again: answered;
#   3. a model file that is not one: the reload fails naming the file and the cause, the models
#      stay and answer, the metrics count the failure;
#   4. SIGTERM: exit 0.
# Exit 0 pass, 1 fail, 77 skip (only when not root, and never under CI=true).
set -u
cd "$(dirname "$0")/../.."
. tests/integration/paths.sh
. lab/netns.sh
MLP=$(realpath "$B/models/fmnist-bmlp.snm")
RATE=${RELOAD_RATE:-1000}
COUNT=${RELOAD_COUNT:-6000}
LCORES=${RELOAD_LCORES:-0-1} # 0: no worker lcore, every chain inline

netns_need_root af_packet
netns_need_files FAIL: "make all" "$S" "$NIC" "$MLP" "$IMG"

tag=$$
ns_c=snrn-cli-$tag
ns_n=snrn-nic-$tag
prefix=snrn$tag
tmp=$(mktemp -d)
nic_pid=
cleanup() {
	netns_kill "$nic_pid"
	netns_cleanup "/var/run/dpdk/$prefix" "$tmp"
}
trap cleanup EXIT
fail() {
	echo "FAIL: $*"
	netns_logs "$tmp" nic
	[ -n "$nic_pid" ] && dpdk_telemetry "$prefix" /splitnic/nic/stats |
		jq -c 'with_entries(select(.value != 0))'
	exit 1
}
get() { ip netns exec "$ns_n" curl -s --max-time 70 "$@"; }
metric() { get http://127.0.0.1:9113/metrics | awk -v m="$1" '$1 == m {print $2}'; }
post() { get -o "$tmp/post.out" -w '%{http_code}' -X POST http://127.0.0.1:9113/-/reload; }
conf() { # conf NAME[:ID]...: the NIC's configuration file, a [model NAME] section each
	: >"$tmp/nic.conf.new"
	local m
	for m; do
		printf '[model %s]\nfile = %s\n' "${m%%:*}" "$tmp/${m%%:*}.snm" >>"$tmp/nic.conf.new"
		[ "${m#*:}" != "$m" ] && printf 'id = %s\n' "${m#*:}" >>"$tmp/nic.conf.new"
	done
	mv "$tmp/nic.conf.new" "$tmp/nic.conf"
}
replace() { cp "$1" "$tmp/new.snm" && mv "$tmp/new.snm" "$2"; } # a new file, the same path
version() { metric splitnic_nic_models_version; }
wait_version() {
	for _ in $(seq 200); do
		[ "$(version)" = "$1" ] && return 0
		sleep 0.05
	done
	return 1
}
client() { ip netns exec "$ns_c" "$S" client 10.88.7.1 --images "$IMG" "$@"; }
chain_of() { # chain_of ID: "LCORES HANDLERS" of the chain serving model id ID
	dpdk_telemetry "$prefix" /splitnic/nic/models | jq -r --argjson id "$1" '. as $d |
		[to_entries[] | select((.key | test("^m[0-9]+_id$")) and .value == $id) |
		 .key | sub("_id$"; "")][0] as $m | "\($d[$m + "_lcores"]) \($d[$m + "_handlers"])"'
}
# check_chain ID COUNT WHAT: model id ID's chain runs where the one loaded at start did, and
# its handlers rise while it answers COUNT requests
check_chain() {
	local on0 h0 on h
	read -r on0 h0 < <(chain_of "$1")
	[ "$on0" = "$start_on" ] || fail "$3: its chain runs on lcore(s) '$on0', the model loaded at start on '$start_on'"
	client --model-id "$1" --count "$2" >/dev/null || fail "$3: not answered"
	read -r on h < <(chain_of "$1")
	[ "$h" -gt "$((h0 + $2))" ] 2>/dev/null ||
		fail "$3: its chain ran $h0 -> $h handlers on lcore(s) $on for $2 requests"
	echo "$3: chain on lcore(s) $on (as at start), $((h - h0)) handlers run there for $2 requests"
}

netns_wire "$ns_c" "$ns_n" 10.88.7.2/24 || fail "namespaces and veth: $NETNS_WHY"
# the other version: the last layer's rows rotated, class c of the original is class c + 1
"$PY" - "models/fmnist-bmlp/weights.npz" "$tmp/rot.npz" <<'EOF' || fail "rotated weights"
import sys
import numpy as np
z = dict(np.load(sys.argv[1]))
rot = [(c - 1) % 10 for c in range(10)]
for k in ("7.weight", "7.bias", "8.gamma", "8.beta", "8.mean", "8.var"):
    z[k] = z[k][rot]
np.savez(sys.argv[2], **z)
EOF
"$S" convert models/fmnist-bmlp/arch.json "$tmp/rot.npz" -o "$tmp/rot.snm" >/dev/null ||
	fail "splitnic convert"
"$S" run "$MLP" --images "$IMG" --count "$COUNT" --classes "$tmp/ref.classes" >/dev/null ||
	fail "splitnic run"
cp "$MLP" "$tmp/bmlp.snm"
cp "$tmp/rot.snm" "$tmp/other.snm"
conf bmlp

ip netns exec "$ns_n" "$NIC" -l "$LCORES" --no-huge -m 512 --file-prefix "$prefix" --no-pci \
	--vdev net_af_packet0,iface=vw --vdev net_null0,no-rx=1 -- \
	--config "$tmp/nic.conf" --ip 10.88.7.1 --executors 4 --idle-sleep-us 50 \
	--metrics-port 9113 --metrics-addr 127.0.0.1 --stats-file "$tmp/final.txt" >"$tmp/nic.log" 2>&1 &
nic_pid=$!
netns_wait_log "$tmp/nic.log" "^nic: forwarding" "$nic_pid" splitnic-nic || fail "$NETNS_WHY"
[ "$(version)" = 1 ] || fail "models_version $(version) at start"
id0=$(dpdk_telemetry "$prefix" /splitnic/nic/models | jq '.m0_id')
read -r start_on _ < <(chain_of "$id0")
case "$LCORES" in
0) [ "$start_on" = main ] ;;
*) [ -n "$start_on" ] && [ "$start_on" != null ] && [[ ,$start_on, != *,main,* ]] ;;
esac || fail "at start (-l $LCORES) the chain runs on '$start_on'"

# --- 1. replaced under load ---------------------------------------------------------------------
client --model-id fmnist-bmlp --count "$COUNT" --rate "$RATE" --timeout-ms 3000 --json \
	--classes "$tmp/client.classes" >"$tmp/client.json" 2>"$tmp/client.err" &
cpid=$!
sleep 0.7
for i in 1 2 3; do
	replace "$([ $((i % 2)) = 1 ] && echo "$tmp/rot.snm" || echo "$MLP")" "$tmp/bmlp.snm"
	case $i in
	1) kill -HUP "$nic_pid" ;;
	2) dpdk_telemetry "$prefix" /splitnic/nic/reload >"$tmp/tel.json" ||
		fail "telemetry /splitnic/nic/reload"
	   jq -e '.status == 0' "$tmp/tel.json" >/dev/null ||
		fail "telemetry reload: $(cat "$tmp/tel.json")" ;;
	3) [ "$(post)" = 200 ] || fail "POST /-/reload: $(cat "$tmp/post.out")" ;;
	esac
	wait_version $((i + 1)) || fail "reload $i did not happen (models_version $(version))"
	sleep 0.7
done
wait "$cpid"
crc=$?
"$PY" - "$tmp/client.json" "$tmp/client.classes" "$tmp/ref.classes" "$tmp/busy" <<'EOF' || fail "answers across the reloads"
import json, sys
c = json.load(open(sys.argv[1]))
got = [int(l) for l in open(sys.argv[2])]
ref = [int(l) for l in open(sys.argv[3])]
busy = c["errors"]["busy"]
ver = [0 if g == r else 1 if g == (r + 1) % 10 else -1 for g, r in zip(got, ref) if g >= 0]
other = sum(1 for v in ver if v < 0)
changes = sum(1 for a, b in zip(ver, ver[1:]) if a != b)
print(f"client: {c['responses']}/{c['requests']} answered, errors {c['errors']}, "
      f"{c['timeouts']} timeouts; {ver.count(0)} by the original, {ver.count(1)} by the "
      f"rotated version, {other} by neither; the version changes {changes} times in send order")
ok = (c["requests"] == len(ref) and c["responses"] + busy == len(ref) and
      c["errors"]["total"] == busy and not c["timeouts"] and len(got) == len(ref) and
      not other and ver.count(0) and ver.count(1) and changes == 3)
open(sys.argv[4], "w").write(f"{busy} {c['responses']}\n")
sys.exit(0 if ok else 1)
EOF
read -r busy answered <"$tmp/busy"
# exit 3: some requests answered ERROR (busy: the NIC's queue full, counted below)
[ "$crc" = 0 ] || { [ "$crc" = 3 ] && [ "$busy" -gt 0 ]; } || fail "client exited $crc"
grep -q "nic: reload: version 4: 1 model(s): 1 loaded, 1 unloaded, 0 kept" "$tmp/nic.log" ||
	fail "the last reload did not replace the model"
[ "$(metric splitnic_nic_reloads_total)" = 3 ] || fail "reloads_total $(metric splitnic_nic_reloads_total)"
[ "$(metric splitnic_nic_errors_sent_total)" = "$busy" ] ||
	fail "the client got $busy ERROR busy, the NIC sent $(metric splitnic_nic_errors_sent_total) ERRORs"
echo "replaced 3 times under $RATE requests/s: $answered of $COUNT answered by the old or the new version, $busy ERROR busy (counted), none lost"
check_chain "$id0" 100 "fmnist-bmlp replaced 3 times"

# --- 2. load, unload, load again ----------------------------------------------------------------
conf bmlp other:7
[ "$(post)" = 200 ] || fail "load: $(cat "$tmp/post.out")"
grep -q "1 loaded, 0 unloaded, 1 kept" "$tmp/post.out" || fail "load: $(cat "$tmp/post.out")"
client --model-id 7 --count 200 --classes "$tmp/seven.classes" >/dev/null ||
	fail "model id 7 loaded but not answered"
"$PY" -c 'import sys; g = open(sys.argv[1]).read().split(); r = open(sys.argv[2]).read().split()
sys.exit(any(int(a) != (int(b) + 1) % 10 for a, b in zip(g, r)))' "$tmp/seven.classes" "$tmp/ref.classes" ||
	fail "model id 7 answered with classes not its own"
check_chain 7 100 "model id 7 loaded"
conf other:7
[ "$(post)" = 200 ] || fail "unload: $(cat "$tmp/post.out")"
grep -q "0 loaded, 1 unloaded, 1 kept" "$tmp/post.out" || fail "unload: $(cat "$tmp/post.out")"
client --model-id fmnist-bmlp --count 10 --json >"$tmp/gone.json" 2>/dev/null
[ "$(jq '.errors.unknown_model' "$tmp/gone.json")" = 10 ] || fail "unloaded fmnist-bmlp: $(cat "$tmp/gone.json")"
client --model-id 7 --count 200 >/dev/null || fail "model id 7 not answered after fmnist-bmlp's unload"
conf bmlp other:7
[ "$(post)" = 200 ] || fail "load again: $(cat "$tmp/post.out")"
client --model-id fmnist-bmlp --count 200 >/dev/null || fail "fmnist-bmlp loaded again but not answered"
[ "$(metric splitnic_nic_models)" = 2 ] || fail "models gauge $(metric splitnic_nic_models)"
echo "loaded id 7 (its classes), unloaded fmnist-bmlp (ERROR unknown_model), loaded it again (answered)"

# --- 3. a bad model file keeps the models ---------------------------------------------------------
echo "this is not a model" >"$tmp/junk.snm"
printf '[model junk]\nfile = %s\n' "$tmp/junk.snm" >>"$tmp/nic.conf"
[ "$(post)" = 500 ] || fail "a bad model file did not fail the reload: $(cat "$tmp/post.out")"
grep -q "junk.snm" "$tmp/post.out" && grep -q "still serving version" "$tmp/post.out" ||
	fail "the failed reload says: $(cat "$tmp/post.out")"
client --model-id fmnist-bmlp --count 200 >/dev/null || fail "fmnist-bmlp not answered after a failed reload"
client --model-id 7 --count 200 >/dev/null || fail "model id 7 not answered after a failed reload"
[ "$(metric splitnic_nic_reload_failures_total)" = 1 ] ||
	fail "reload_failures_total $(metric splitnic_nic_reload_failures_total)"
echo "a bad model file: '$(cat "$tmp/post.out")', the models kept"

netns_term "$nic_pid" splitnic-nic || fail "$NETNS_WHY"
nic_pid=
echo "pass: splitnic-nic replaced a model 3 times under load (SIGHUP, telemetry, POST) with none of $COUNT requests lost, loaded, unloaded and loaded models again, and kept its models through a bad model file"
