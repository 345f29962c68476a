#!/usr/bin/env bash
# splitnic serve (a kernel-socket UDP server on the CPU kernels) against splitnic client on the
# loopback, no root needed:
#   1. fmnist-bmlp, 2,000 test images, 4 outstanding: every request answered (executors cpu),
#      the classes of `splitnic run`, the RESPONSE timing fields filled (total >= host);
#   2. fmnist-bcnn by its model id with a 300-byte payload: every REQUEST in 4 fragments,
#      reassembled, the classes of `splitnic run`;
#   3. errors as the DPDK servers send them: a wrong shape gets ERROR bad_shape, an unknown model
#      ERROR unknown_model, a truncated REQUEST ERROR bad_request (detail: the verdict) with its
#      model and request ids echoed; a RESPONSE, junk and a wrong version get no answer;
#   4. SIGTERM: exit 0 with the counters (--stats-file JSON) equal to what was sent.
# Exit 0 pass, 1 fail.
set -u
cd "$(dirname "$0")/../.."
S=${SPLITNIC:-build/splitnic}
B=$(dirname "$S")
D=/usr/share/datasets/fashion-mnist
IMG=$D/t10k-images-idx3-ubyte.gz
LAB=$D/t10k-labels-idx1-ubyte.gz
MLP=$B/models/fmnist-bmlp.snm
CNN=$B/models/fmnist-bcnn.snm
PY=/usr/bin/python3
. tests/integration/netns.sh
netns_need_files FAIL: "make all" "$S" "$MLP" "$CNN" "$IMG" "$LAB"
tmp=$(mktemp -d)
pid=
trap 'netns_kill "$pid"; rm -rf "$tmp"' EXIT
fail() {
	echo "FAIL: $*"
	[ -f "$tmp/serve.log" ] && tail -5 "$tmp/serve.log"
	exit 1
}

# a free port: the server reports a bind failure and exits, then the next one is tried
for try in 1 2 3 4 5; do
	port=$((20000 + (RANDOM + $$ * try) % 40000))
	"$S" serve --model "$MLP" --model "$CNN" --bind 127.0.0.1 --port "$port" \
		--stats-file "$tmp/stats.json" --ready-file "$tmp/ready" >"$tmp/serve.log" 2>&1 &
	pid=$!
	netns_wait_log "$tmp/serve.log" "^serve: listening" "$pid" "splitnic serve" && break
	pid=
done
[ -n "$pid" ] || fail "splitnic serve did not start: $NETNS_WHY"
[ -e "$tmp/ready" ] || fail "no --ready-file"

# classes of splitnic run, for N images of a model
classes() {
	"$S" run "$1" --images "$IMG" --count "$2" --scores "$tmp/s.csv" >/dev/null || fail "run $1"
	$PY -c '
import sys
for line in open(sys.argv[1]):
    v = [float(x) for x in line.split(",")]
    print(max(range(len(v)), key=lambda k: (v[k], -k)))' "$tmp/s.csv"
}
check() { # NAME OUT.json CLASSES-FILE WANT-FILE N
	$PY - "$@" <<'EOF' || fail "$1"
import json, sys
name, out, got, want, n = sys.argv[1], json.load(open(sys.argv[2])), sys.argv[3], sys.argv[4], int(sys.argv[5])
got, want = open(got).read().split(), open(want).read().split()
diff = sum(a != b for a, b in zip(got, want))
t = out["server_mean_ns"]
print(f"{name}: {out['responses']}/{out['requests']} responses, executors {out['executors']}, "
      f"classes differing from splitnic run: {diff}, p50 {out['latency_us']['p50']:.0f} us, "
      f"server mean ns total {t['total']:.0f} queue {t['queue']:.0f} host {t['host']:.0f} tx {t['tx']:.0f}")
ok = (out["responses"] == n and len(got) == n and not diff and out["executors"]["cpu"] == n
      and out["errors"]["total"] == 0 and not out["timeouts"] and t["host"] > 0 and t["total"] >= t["host"])
sys.exit(0 if ok else 1)
EOF
}

# --- 1. the MLP -----------------------------------------------------------------------------
classes "$MLP" 2000 >"$tmp/mlp.want"
"$S" client "127.0.0.1:$port" --images "$IMG" --labels "$LAB" --count 2000 --outstanding 4 \
	--model-id fmnist-bmlp --json --classes "$tmp/mlp.got" >"$tmp/mlp.json" || fail "client (mlp) exited $?"
check "fmnist-bmlp" "$tmp/mlp.json" "$tmp/mlp.got" "$tmp/mlp.want" 2000

# --- 2. the CNN, fragmented requests ------------------------------------------------------------
classes "$CNN" 300 >"$tmp/cnn.want"
"$S" client "127.0.0.1:$port" --images "$IMG" --count 300 --model-id fmnist-bcnn --payload 300 \
	--json --classes "$tmp/cnn.got" >"$tmp/cnn.json" || fail "client (cnn) exited $?"
check "fmnist-bcnn, 4 fragments per request" "$tmp/cnn.json" "$tmp/cnn.got" "$tmp/cnn.want" 300

# --- 3. errors ------------------------------------------------------------------------------------
"$S" client "127.0.0.1:$port" --shape 1,2,3 --count 3 --model-id fmnist-bcnn --json \
	>"$tmp/shape.json"
[ $? -eq 3 ] || fail "client (bad shape) did not exit 3"
"$S" client "127.0.0.1:$port" --shape 1,28,28 --count 2 --model-id 0x1234 --json >"$tmp/unk.json"
[ $? -eq 3 ] || fail "client (unknown model) did not exit 3"
$PY - "$tmp/shape.json" "$tmp/unk.json" <<'EOF' || fail "errors by code"
import json, sys
s, u = json.load(open(sys.argv[1])), json.load(open(sys.argv[2]))
print(f"bad shape: {s['errors']}; unknown model: {u['errors']}")
sys.exit(0 if s["errors"]["bad_shape"] == 3 and u["errors"]["unknown_model"] == 2 else 1)
EOF
$PY - "$port" <<'EOF' || fail "bad datagrams"
import socket, struct, sys
s = socket.socket(socket.AF_INET, socket.SOCK_DGRAM)
s.connect(("127.0.0.1", int(sys.argv[1])))
s.settimeout(0.5)
hdr = lambda typ, total, frag: struct.pack(">HBBHHIHHQII", 0x534E, 1, typ, 64, frag, 0xbfa537c4, 0, 0, 77, total, 0)
tensor = struct.pack(">BBHIIIIIiI", 1, 0, 0, 1, 28, 28, 784, 0, 0, 0)
# a REQUEST whose data stops short of frag_len: ERROR bad_request, ids echoed
s.send(hdr(1, 784, 784) + tensor + bytes(100))
d = s.recv(2048)
code, detail = struct.unpack(">HHI", d[32:40])[0], struct.unpack(">I", d[36:40])[0]
assert d[3] == 4 and code == 1, f"type {d[3]} code {code}"
assert struct.unpack(">I", d[8:12])[0] == 0xbfa537c4 and struct.unpack(">Q", d[16:24])[0] == 77
print(f"truncated REQUEST: ERROR bad_request, detail {detail}, reason {d[40:].decode()!r}")
# no answer: a RESPONSE, junk, a wrong version
resp = (struct.pack(">HBBHHIHHQII", 0x534E, 1, 3, 80, 8, 1, 0, 0, 5, 8, 0)
        + struct.pack(">IHBB", 0, 1, 6, 1) + bytes(40) + bytes(8))
for junk in (resp, b"hello", b"SN\x02\x01" + bytes(60)):
    s.send(junk)
try:
    d = s.recv(2048)
    print(f"FAIL: an answer to a reply or junk: type {d[3]}")
    sys.exit(1)
except socket.timeout:
    print("a RESPONSE, junk and a version-2 datagram: no answer")
EOF

# --- 4. SIGTERM and the counters --------------------------------------------------------------------
kill -TERM "$pid"
wait "$pid" || fail "splitnic serve exited $? on SIGTERM"
pid=
grep "^serve: datagrams" "$tmp/serve.log"
$PY - "$tmp/stats.json" <<'EOF' || fail "counters"
import json, sys
c = json.load(open(sys.argv[1]))
want = {"answered": 2300, "requests": 2305, "error_bad_shape": 3, "error_unknown_model": 2,
        "error_bad_request": 1, "other_type": 1, "fragments": 1200, "send_fail": 0}
bad = {k: (c[k], v) for k, v in want.items() if c[k] != v}
rej = c["rejected"]
print(f"counters: {want if not bad else bad}; rejected {rej} (truncated, short, version)")
sys.exit(1 if bad or rej != 3 or c["verdict_truncated"] != 1 or c["verdict_version"] != 1 else 0)
EOF
echo "pass: splitnic serve answers fmnist-bmlp and fmnist-bcnn (fragmented) with the classes of splitnic run, errors by code, no answer to replies or junk, counters on SIGTERM"
exit 0
