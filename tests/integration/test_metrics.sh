#!/usr/bin/env bash
# The metrics endpoints (--metrics-port) of the three servers, scraped by a real Prometheus
# (Debian's prometheus, with promtool):
#
#   cli (10.88.5.2, vc) ==veth== nic ns: [vw] splitnic-nic [memif] <-> [memif] splitnic-host
#                                        splitnic serve on 127.0.0.1, Prometheus on 127.0.0.1
#
# splitnic-nic and splitnic-host serve the binary CNN in co-processor mode, splitnic serve the
# binary MLP; each has --metrics-port on 127.0.0.1 of the nic namespace, where Prometheus scrapes
# all three every second.
#   1. /-/live and /-/ready answer 200 on each; bad requests get 400, 404, 405;
#   2. load: N images through the NIC and its host from cli, N through serve, and 20 requests
#      for a model none of them holds to each (ERROR unknown_model);
#   3. Prometheus's HTTP API: every target up; answers, errors by reason and the latency
#      histograms' counts equal what the clients saw; histogram_quantile gives a latency;
#   4. `promtool check metrics` passes on each endpoint's exposition;
#   5. deploy/grafana-splitnic.json: jq-valid, every metric it names is in a scrape, and each of
#      its queries returns data from Prometheus;
#   6. SIGTERM to splitnic-host (--drain-hold-ms): /-/ready says 503 draining (and the gauge 0)
#      while /-/live still says 200; then every server exits 0.
# Exit 0 pass, 1 fail, 77 skip (only when not root, and never under CI=true).
set -u
cd "$(dirname "$0")/../.."
. tests/integration/paths.sh
. lab/netns.sh
CNN=$B/models/fmnist-bcnn.snm
MLP=$B/models/fmnist-bmlp.snm
N=${METRICS_N:-1000}
DASH=deploy/grafana-splitnic.json

netns_need_root af_packet
netns_need_files FAIL: "make all" "$S" "$NIC" "$HOST" "$CNN" "$MLP" "$IMG"
command -v prometheus >/dev/null && command -v promtool >/dev/null && command -v jq >/dev/null ||
	{ echo "FAIL: prometheus, promtool or jq missing (make deps)"; exit 1; }

tag=$$
ns_c=snmet-cli-$tag
ns_n=snmet-nic-$tag
tmp=$(mktemp -d)
nic_pid=
host_pid=
serve_pid=
prom_pid=
cleanup() {
	netns_kill "$prom_pid" "$serve_pid" "$host_pid" "$nic_pid"
	netns_cleanup "/var/run/dpdk/snmn$tag" "/var/run/dpdk/snmh$tag" "$tmp"
}
trap cleanup EXIT
fail() {
	echo "FAIL: $*"
	netns_logs "$tmp" nic host serve prometheus
	exit 1
}
in_n() { ip netns exec "$ns_n" "$@"; } # not for servers: $! must be their pid
get() { in_n curl -s --max-time 5 "http://127.0.0.1:$1"; } # get PORT/PATH
status() { in_n curl -s -o /dev/null -w '%{http_code}' --max-time 5 "$@"; }

netns_wire "$ns_c" "$ns_n" 10.88.5.2/24 || fail "namespaces and veth: $NETNS_WHY"
K=$(netns_split "$S" "$CNN") || fail "split point"

ip netns exec "$ns_n" "$NIC" -l 0 --no-huge -m 512 --file-prefix "snmn$tag" --no-pci \
	--vdev net_af_packet0,iface=vw \
	--vdev "net_memif0,role=server,socket=$tmp/memif.sock,socket-abstract=no" -- \
	--model "$CNN@$K" --ip 10.88.5.1 --notify-host --executors 16 --idle-sleep-us 50 \
	--metrics-port 9101 --metrics-addr 127.0.0.1 >"$tmp/nic.log" 2>&1 &
nic_pid=$!
netns_wait_log "$tmp/nic.log" "^nic: forwarding" "$nic_pid" splitnic-nic || fail "$NETNS_WHY"
ip netns exec "$ns_n" "$HOST" -l 1 --no-huge -m 512 --file-prefix "snmh$tag" --no-pci \
	--vdev "net_memif0,role=client,socket=$tmp/memif.sock,socket-abstract=no" -- \
	--model "$CNN:coproc:$K" --ip 10.88.5.1 --idle-sleep-us 50 --drain-hold-ms 3000 \
	--metrics-port 9102 --metrics-addr 127.0.0.1 >"$tmp/host.log" 2>&1 &
host_pid=$!
netns_wait_log "$tmp/host.log" "^host: serving" "$host_pid" splitnic-host || fail "$NETNS_WHY"
ip netns exec "$ns_n" "$S" serve --model "$MLP" --bind 127.0.0.1 --port 21399 --metrics-port 9103 \
	--metrics-addr 127.0.0.1 >"$tmp/serve.log" 2>&1 &
serve_pid=$!
netns_wait_log "$tmp/serve.log" "^serve: metrics on" "$serve_pid" "splitnic serve" || fail "$NETNS_WHY"
grep -h "metrics on" "$tmp/nic.log" "$tmp/host.log" "$tmp/serve.log"
for _ in $(seq 100); do # the memif link
	get 9102/metrics | grep -q '^splitnic_host_link_up 1' && break
	sleep 0.1
done
get 9102/metrics | grep -q '^splitnic_host_link_up 1' || fail "memif link did not come up"

# --- 1. live, ready, bad requests ---------------------------------------------------------------
for p in 9101 9102 9103; do
	for path in /-/live /livez /-/ready /readyz; do
		[ "$(status "http://127.0.0.1:$p$path")" = 200 ] || fail "$p$path is not 200"
	done
	[ "$(status "http://127.0.0.1:$p/nothing")" = 404 ] || fail "$p/nothing is not 404"
	[ "$(status -X POST "http://127.0.0.1:$p/metrics")" = 405 ] || fail "POST $p is not 405"
	reply=$(printf 'junk\r\n\r\n' | in_n timeout 5 "$PY" -c '
import socket, sys
s = socket.create_connection(("127.0.0.1", int(sys.argv[1])))
s.sendall(sys.stdin.buffer.read())
print(s.recv(100).split(b"\r\n")[0].decode())' "$p")
	[ "$reply" = "HTTP/1.1 400 Bad Request" ] || fail "junk to $p: '$reply'"
done

# q EXPR: the instant query's values, one a line (sorted by labels)
q() {
	in_n curl -s --max-time 5 --get http://127.0.0.1:9190/api/v1/query --data-urlencode "query=$1" |
		jq -r 'if .status != "success" then "query-error: \(.error)" else
			(.data.result | sort_by(.metric | tostring) | .[].value[1]) end'
}
want() { # want EXPR VALUE: Prometheus's value of EXPR (one series), now or within 10 s
	local got
	for _ in $(seq 20); do
		got=$(q "$1")
		[ "$got" = "$2" ] && return 0
		sleep 0.5
	done
	fail "Prometheus: $1 = '${got:-nothing}', expected $2"
}

# --- 2. Prometheus, then load -------------------------------------------------------------------
cat >"$tmp/prometheus.yml" <<EOF
global:
  scrape_interval: 1s
  evaluation_interval: 1s
scrape_configs:
  - job_name: nic
    static_configs: [{targets: ["127.0.0.1:9101"]}]
  - job_name: host
    static_configs: [{targets: ["127.0.0.1:9102"]}]
  - job_name: serve
    static_configs: [{targets: ["127.0.0.1:9103"]}]
EOF
promtool check config "$tmp/prometheus.yml" >/dev/null || fail "promtool check config"
ip netns exec "$ns_n" prometheus --config.file="$tmp/prometheus.yml" --storage.tsdb.path="$tmp/tsdb" \
	--web.listen-address=127.0.0.1:9190 --log.level=warn >"$tmp/prometheus.log" 2>&1 &
prom_pid=$!
for _ in $(seq 150); do
	[ "$(status http://127.0.0.1:9190/-/ready)" = 200 ] && break
	kill -0 "$prom_pid" 2>/dev/null || fail "prometheus exited"
	sleep 0.2
done
[ "$(status http://127.0.0.1:9190/-/ready)" = 200 ] || fail "prometheus not ready"
want 'count(up == 1)' 3 # a first scrape of each, before the load

ip netns exec "$ns_c" "$S" client 10.88.5.1 --images "$IMG" --count "$N" --outstanding 4 \
	--timeout-ms 3000 --json >"$tmp/coproc.json" || fail "client through the NIC and its host"
in_n "$S" client 127.0.0.1 --port 21399 --images "$IMG" --count "$N" --outstanding 4 \
	--timeout-ms 3000 --json >"$tmp/serve.json" || fail "client of serve"
ip netns exec "$ns_c" "$S" client 10.88.5.1 --shape 1,28,28 --model-id 4242 --count 20 \
	--json >"$tmp/unknown_nic.json" 2>/dev/null
in_n "$S" client 127.0.0.1 --port 21399 --shape 1,28,28 --model-id 4242 --count 20 \
	--json >"$tmp/unknown_serve.json" 2>/dev/null

# --- 3. what Prometheus holds ---------------------------------------------------------------------
resp_coproc=$(jq .responses "$tmp/coproc.json")
resp_serve=$(jq .responses "$tmp/serve.json")
err_nic=$(jq '.errors.total' "$tmp/unknown_nic.json")
err_serve=$(jq '.errors.total' "$tmp/unknown_serve.json")
[ "$resp_coproc" = "$N" ] && [ "$resp_serve" = "$N" ] || fail "responses: $resp_coproc and $resp_serve of $N"
[ "$err_nic" = 20 ] && [ "$err_serve" = 20 ] || fail "ERRORs for model 4242: $err_nic, $err_serve of 20"
want 'splitnic_nic_answered_total' "$N"
want 'splitnic_host_answered_nic_total' "$N"
want 'splitnic_serve_answered_total' "$N"
want 'sum(splitnic_nic_errors_total{reason="unknown_model"}) + sum(splitnic_host_errors_total{reason="unknown_model"})' 20
want 'splitnic_serve_errors_total{reason="unknown_model"}' 20
want 'sum(splitnic_host_fallbacks_total)' 0
want 'splitnic_nic_latency_seconds_count{stage="nic"}' "$N"
want 'splitnic_host_latency_seconds_count{stage="total"}' "$N"
want 'splitnic_host_latency_seconds_count{stage="queue"}' "$N"
want 'splitnic_serve_latency_seconds_count{stage="total"}' "$N"
want 'splitnic_host_queued' 0
want 'sum(splitnic_nic_ready) + sum(splitnic_host_ready) + sum(splitnic_serve_ready)' 3
p50=$(q 'histogram_quantile(0.5, sum by (le) (increase(splitnic_serve_latency_seconds_bucket{stage="total"}[1m])))')
"$PY" -c 'import sys; v = float(sys.argv[1]); sys.exit(not (0 < v < 1))' "$p50" ||
	fail "serve's p50 from its histogram: '$p50'"
echo "prometheus: 3 targets up; $N answers through the NIC and its host, $N from serve, 20 ERROR unknown_model each; serve's p50 ${p50} s"

# --- 4. promtool on each exposition --------------------------------------------------------------
for p in 9101 9102 9103; do
	get "$p/metrics" >"$tmp/scrape.$p" || fail "scrape $p"
	promtool check metrics <"$tmp/scrape.$p" >"$tmp/promtool.$p" 2>&1 ||
		fail "promtool check metrics on $p: $(head -5 "$tmp/promtool.$p")"
done
echo "promtool check metrics: the three expositions pass ($(cat "$tmp"/scrape.* | grep -vc '^#') samples)"

# --- 5. the dashboard ----------------------------------------------------------------------------
jq -e '.panels | length > 0' "$DASH" >/dev/null || fail "$DASH: not JSON with panels"
grep -h '^# TYPE' "$tmp"/scrape.* | awk '{print $3}' | sort -u >"$tmp/families"
jq -r '.panels[].targets[].expr' "$DASH" >"$tmp/exprs"
grep -o 'splitnic_[a-z0-9_]*' "$tmp/exprs" | sort -u | while read -r m; do
	base=$(echo "$m" | sed -E 's/_(bucket|count|sum)$//')
	grep -qx "$m" "$tmp/families" || grep -qx "$base" "$tmp/families" || echo "$m"
done >"$tmp/unknown"
[ -s "$tmp/unknown" ] && fail "$DASH names metrics no server exposes: $(tr '\n' ' ' <"$tmp/unknown")"
n=0
while read -r e; do
	r=$(in_n curl -s --max-time 5 --get http://127.0.0.1:9190/api/v1/query \
		--data-urlencode "query=${e//\$__rate_interval/30s}" | jq -r '.status + " " + (.data.result | length | tostring)')
	[ "${r%% *}" = success ] && [ "${r#* }" != 0 ] || fail "dashboard query returns nothing ($r): $e"
	n=$((n + 1))
done <"$tmp/exprs"
echo "dashboard: $n queries, each returns data; every metric it names is exposed"

# --- 6. the drain: not ready, still live -------------------------------------------------------
kill -TERM "$host_pid"
for _ in $(seq 20); do
	[ "$(status http://127.0.0.1:9102/-/ready)" = 503 ] && break
	sleep 0.1
done
[ "$(get 9102/-/ready)" = draining ] || fail "draining host: /-/ready says '$(get 9102/-/ready)'"
[ "$(status http://127.0.0.1:9102/-/ready)" = 503 ] || fail "draining host: /-/ready is not 503"
[ "$(status http://127.0.0.1:9102/-/live)" = 200 ] || fail "draining host: /-/live is not 200"
get 9102/metrics | grep -q '^splitnic_host_ready 0' || fail "draining host: splitnic_host_ready is not 0"
wait "$host_pid" || fail "splitnic-host exited $? on SIGTERM"
host_pid=
netns_term "$serve_pid" "splitnic serve" || fail "$NETNS_WHY"
serve_pid=
netns_term "$nic_pid" splitnic-nic || fail "$NETNS_WHY"
nic_pid=
echo "pass: Prometheus scraped splitnic-nic, splitnic-host and splitnic serve under load; counters, errors by reason and latency histograms match the clients; promtool passes; the dashboard's queries return data; a draining server is live but not ready"
