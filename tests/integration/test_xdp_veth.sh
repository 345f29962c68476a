#!/usr/bin/env bash
# XDP executor on a real veth pair: two network namespaces, the bundled MLP attached natively on
# the server end (the client end carries the dummy XDP_PASS program so native XDP_TX reaches
# it), `splitnic client` sends the Fashion-MNIST test set from the other namespace. Every
# request must be answered by XDP (executors bit xdp), with no error or timeout, and the number
# of correct classes must equal `splitnic run` of the same model; the program's counters must
# show every request answered. Then `splitnic xdp test` must give the same scores, bit for bit,
# as `splitnic run --scores` on all 10,000 images.
# Exit 0 pass, 1 fail, 77 skip (only when not root, and never under CI=true).
set -u
cd "$(dirname "$0")/../.."
. tests/integration/paths.sh
MODEL=${XDP_MODEL:-$B/models/fmnist-bmlp.snm}
. lab/netns.sh

netns_need_root XDP
netns_need_files FAIL: "make all; make models" "$S" "$MODEL" "$IMG" "$LAB"

ns_s=snxdp-srv-$$
ns_c=snxdp-cli-$$
tmp=$(mktemp -d)
cleanup() { netns_cleanup "$tmp"; }
trap cleanup EXIT
fail() {
	echo "FAIL: $*"
	exit 1
}

netns_add "$ns_s" "$ns_c" || fail "ip netns add"
netns_veth "$ns_s" vxs "$ns_c" vxc || fail "veth pair: $NETNS_WHY"
netns_link "$ns_s" vxs 10.77.0.1/24
netns_link "$ns_c" vxc 10.77.0.2/24
netns_tx_csum_off "$ns_c" vxc || fail "ethtool -K vxc tx off"
netns_tx_csum_off "$ns_s" vxs || fail "ethtool -K vxs tx off"

ip netns exec "$ns_s" "$S" xdp attach vxs "$MODEL" --mode native || fail "xdp attach (native)"
ip netns exec "$ns_c" "$S" xdp pass vxc --mode native || fail "xdp pass on the peer"

"$S" run "$MODEL" --images "$IMG" --labels "$LAB" --json >"$tmp/run.json" || fail "splitnic run"
ip netns exec "$ns_c" "$S" client 10.77.0.1 --images "$IMG" --labels "$LAB" --outstanding 4 \
	--timeout-ms 3000 --json >"$tmp/client.json" || fail "splitnic client"
ip netns exec "$ns_s" "$S" xdp stats vxs >"$tmp/stats.txt" || fail "xdp stats"
cat "$tmp/stats.txt"

$PY - "$tmp/run.json" "$tmp/client.json" "$tmp/stats.txt" <<'EOF' || exit 1
import json, sys
run = json.load(open(sys.argv[1]))
cli = json.load(open(sys.argv[2]))
stats = dict(l.split() for l in open(sys.argv[3]) if l.strip())
n = run["images"]
print(f"client: {cli['responses']}/{cli['requests']} responses, {cli['errors']['total']} errors, "
      f"{cli['timeouts']} timeouts, executors {cli['executors']}, accuracy {cli['accuracy']:.4f} "
      f"({cli['correct']} correct); splitnic run: {run['correct']} correct; "
      f"latency p50 {cli['latency_us']['p50']:.1f} us p99 {cli['latency_us']['p99']:.1f} us")
bad = []
if cli["requests"] != n or cli["responses"] != n:
    bad.append(f"{cli['responses']} responses to {cli['requests']} requests for {n} images")
if cli["errors"]["total"] or cli["timeouts"] or cli["late"] or cli["duplicates"] or cli["stray"]:
    bad.append("errors, timeouts, late, duplicate or stray responses")
if sum(cli["rejected"].values()):
    bad.append(f"responses rejected by the client's parser: {cli['rejected']}")
if cli["executors"]["xdp"] != n:
    bad.append(f"only {cli['executors']['xdp']} responses came from XDP")
if cli["correct"] != run["correct"]:
    bad.append(f"{cli['correct']} correct over XDP, {run['correct']} with splitnic run")
if int(stats.get("answered", 0)) < n:
    bad.append(f"xdp stats: answered {stats.get('answered')}")
if bad:
    print("FAIL: " + "; ".join(bad))
    sys.exit(1)
EOF

# a REQUEST with the element count right but the shape (1,784,1): ERROR bad_shape from XDP, as
# splitnic-nic and splitnic-host answer it, no longer than the request
ip netns exec "$ns_c" $PY - <<'EOF' || fail "bad shape over the veth"
import socket, struct
s = socket.socket(socket.AF_INET, socket.SOCK_DGRAM)
s.settimeout(3)
req = (struct.pack(">HBBHHIHHQII", 0x534E, 1, 1, 64, 784, 0, 0, 0, 77, 784, 0)
       + struct.pack(">BBHIIIIIiI", 1, 0, 0, 1, 784, 1, 784, 0, 0, 0) + bytes(784))
s.sendto(req, ("10.77.0.1", 21326))
d = s.recv(2048)
typ, rid, code = d[3], struct.unpack(">Q", d[16:24])[0], struct.unpack(">H", d[32:34])[0]
print(f"bad shape: type {typ}, request {rid}, code {code}, {len(d)} bytes for {len(req)}")
assert typ == 4 and rid == 77 and code == 3 and len(d) <= len(req), "not ERROR bad_shape"
EOF
ip netns exec "$ns_s" "$S" xdp stats vxs | grep -q "^error_bad_shape *1$" ||
	fail "xdp stats: error_bad_shape is not 1"

"$S" run "$MODEL" --images "$IMG" --scores "$tmp/cpu.csv" >/dev/null || fail "splitnic run --scores"
"$S" xdp test "$MODEL" --images "$IMG" --scores "$tmp/xdp.csv" --quiet | tail -3 ||
	fail "splitnic xdp test"
cmp -s "$tmp/cpu.csv" "$tmp/xdp.csv" || fail "xdp test scores differ from splitnic run --scores"
ip netns exec "$ns_s" "$S" xdp detach vxs >/dev/null || fail "xdp detach"

# generic (skb) mode: the same program on the same veth, a shorter run
ip netns exec "$ns_s" "$S" xdp attach vxs "$MODEL" --mode generic >/dev/null ||
	fail "xdp attach (generic)"
ip netns exec "$ns_c" "$S" client 10.77.0.1 --images "$IMG" --labels "$LAB" --count 1000 \
	--outstanding 4 --timeout-ms 3000 --json >"$tmp/generic.json" || fail "client (generic)"
"$S" run "$MODEL" --images "$IMG" --labels "$LAB" --count 1000 --json >"$tmp/run1k.json" ||
	fail "splitnic run --count 1000"
$PY - "$tmp/run1k.json" "$tmp/generic.json" <<'EOF' || exit 1
import json, sys
run, cli = json.load(open(sys.argv[1])), json.load(open(sys.argv[2]))
print(f"generic mode: {cli['responses']}/1000 responses, xdp {cli['executors']['xdp']}, "
      f"{cli['correct']} correct (splitnic run: {run['correct']})")
if cli["responses"] != 1000 or cli["executors"]["xdp"] != 1000 or cli["correct"] != run["correct"]:
    print("FAIL: generic mode")
    sys.exit(1)
EOF
ip netns exec "$ns_s" "$S" xdp detach vxs >/dev/null || fail "xdp detach (generic)"

# the trust policy's allow-list: a front-end outside it gets nothing (dropped, counted); one on
# it is answered
ip netns exec "$ns_s" "$S" xdp attach vxs "$MODEL" --mode generic --allow 10.99.0.0/16 \
	>/dev/null || fail "xdp attach --allow"
ip netns exec "$ns_c" "$S" client 10.77.0.1 --images "$IMG" --count 5 --retries 0 \
	--timeout-ms 300 --json >"$tmp/refused.json" 2>/dev/null
ip netns exec "$ns_s" "$S" xdp stats vxs | grep -q "^drop_not_allowed *5$" ||
	fail "xdp --allow: 5 requests from outside the list are not counted drop_not_allowed"
grep -q '"responses": 0' "$tmp/refused.json" || fail "xdp --allow: a front-end outside the list was answered"
ip netns exec "$ns_s" "$S" xdp detach vxs >/dev/null || fail "xdp detach (--allow)"
ip netns exec "$ns_s" "$S" xdp attach vxs "$MODEL" --mode generic --allow 10.77.0.2 >/dev/null ||
	fail "xdp attach --allow (listed)"
ip netns exec "$ns_c" "$S" client 10.77.0.1 --images "$IMG" --count 5 --timeout-ms 3000 \
	--json >"$tmp/listed.json" || fail "xdp --allow: a listed front-end was not answered"
grep -q '"responses": 5' "$tmp/listed.json" || fail "xdp --allow: 5 requests from a listed front-end, not 5 responses"
ip netns exec "$ns_s" "$S" xdp detach vxs >/dev/null || fail "xdp detach (--allow, listed)"
echo "pass: 10000 Fashion-MNIST requests answered in XDP over veth (native), 1000 more in generic mode; classes and scores equal the CPU kernels; a bad shape answered ERROR bad_shape; --allow drops and counts the unlisted, answers the listed"
exit 0
