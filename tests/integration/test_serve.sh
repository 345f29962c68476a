#!/usr/bin/env bash
# splitnic serve (a kernel-socket UDP server on the CPU kernels) against splitnic client on the
# loopback, no root needed:
#   1. fmnist-bmlp, 2,000 test images, 4 outstanding: every request answered (executors cpu),
#      the classes of `splitnic run`, the RESPONSE timing fields filled (total >= host);
#   2. fmnist-bcnn by its model id with a 300-byte payload: every REQUEST in 4 fragments,
#      reassembled, the classes of `splitnic run`;
#   3. errors as the DPDK servers send them: a wrong shape gets ERROR bad_shape (its reason the
#      expected input, "serve: bad_shape: expects u8 1x28x28", as the client prints it), an
#      unknown model ERROR unknown_model, a truncated REQUEST ERROR bad_request (detail: the
#      verdict) with its model and request ids echoed; a RESPONSE, junk and a wrong version get
#      no answer;
#   4. HEALTH (`splitnic client --health`): serve's role, its --name, its models whole from op 0,
#      in_flight 0, exit 0; a probe for another role or shorter than 80 bytes gets nothing; a
#      128-byte probe a report of one model, truncated, no longer than the probe;
#   5. no amplification (no --allow): a REQUEST of 4 inputs for a 64-class model (68 bytes in, a
#      592-byte RESPONSE) gets ERROR too_large (detail 592) no larger than the REQUEST; a
#      44-byte malformed REQUEST an ERROR of 44 bytes, its reason cut; a 36-byte one nothing;
#   6. SIGTERM: exit 0 with the counters (--stats-file JSON) equal to what was sent;
#   7. a second server with --allow 127.0.0.1 --allow 127.0.0.2 --error-rate 20 --error-burst 20:
#      from 127.0.0.3 nothing at all (not_allowed), to 127.0.0.2 the 592-byte RESPONSE; 300
#      unknown-model REQUESTs in a burst get at most 20 + 20 a second ERRORs, the rest counted
#      (errors_rate_limited);
#   8. draining: three of a fragmented REQUEST's four fragments, then SIGTERM: HEALTH says
#      draining with 1 in flight (`splitnic client --health` exits 1), a new REQUEST and a
#      fragment of a new one get ERROR busy (detail 1), the last fragment completes the one held
#      (the class of `splitnic run`), then serve exits 0 with it finished.
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
. lab/netns.sh
netns_need_files FAIL: "make all" "$S" "$MLP" "$CNN" "$IMG" "$LAB"
tmp=$(mktemp -d)
pid=
log=$tmp/serve.log
trap 'netns_kill "$pid"; rm -rf "$tmp"' EXIT
fail() {
	echo "FAIL: $*"
	[ -f "$log" ] && tail -5 "$log"
	exit 1
}

# start_serve LOG STATS ARGS...: splitnic serve on 127.0.0.1 at a free port (a bind failure makes
# it exit, then the next port is tried); sets pid, port and log
start_serve() {
	local out=$1 stats=$2 try
	shift 2
	log=$out
	for try in 1 2 3 4 5; do
		port=$((20000 + (RANDOM + $$ * try) % 40000))
		rm -f "$tmp/ready"
		"$S" serve --bind 127.0.0.1 --port "$port" --stats-file "$stats" \
			--ready-file "$tmp/ready" "$@" >"$out" 2>&1 &
		pid=$!
		netns_wait_log "$out" "^serve: listening" "$pid" "splitnic serve" && break
		pid=
	done
	[ -n "$pid" ] || fail "splitnic serve did not start: $NETNS_WHY"
	[ -e "$tmp/ready" ] || fail "no --ready-file"
}

# a model whose RESPONSE (64 classes, 592 bytes) is larger than its REQUEST (4 u8, 68 bytes)
printf '%s\n' '{"name": "wide", "input": {"shape": [1, 1, 4], "dtype": "u8"},' \
	' "layers": [{"type": "flatten"}, {"type": "dense", "out": 64, "bias": true}]}' \
	>"$tmp/wide.json"
{ "$S" gen "$tmp/wide.json" -o "$tmp/wide.npz" && "$S" convert "$tmp/wide.json" "$tmp/wide.npz" \
	-o "$tmp/wide.snm"; } >/dev/null || fail "the wide model"

# datagrams built by hand (docs/wire-protocol.md), for parts 4 to 8
cat >"$tmp/dg.py" <<'EOF'
import socket, struct
COMMON = struct.Struct(">HBBHHIHHQII")
TENSOR = struct.Struct(">BBHIIIIIiI")
WIDE = 0xF723CDEA  # FNV-1a of "wide"
def request(rid, model, c, h, w, data, off=0, frag=None):
    frag = data if frag is None else frag
    return (COMMON.pack(0x534E, 1, 1, 64, len(frag), model, 0, 0, rid, len(data), off)
            + TENSOR.pack(1, 0, 0, c, h, w, c * h * w, 0, 0, 0) + frag)
def fragments(rid, model, c, h, w, data, step):
    return [request(rid, model, c, h, w, data, o, data[o:o + step])
            for o in range(0, len(data), step)]
def probe(rid, size, role=0):
    return (COMMON.pack(0x534E, 1, 5, 48, size - 48, 0, 0, 0, rid, size - 48, 0)
            + struct.pack(">BBBBHHII", 0, 0, role, 0, 0, 0, 0, 0) + bytes(size - 48))
def report(d):
    """state, role, flags, n_models, in_flight, ident, [(name, mode, first_op, c, h, w)]"""
    assert d[3] == 5 and d[32] == 1, f"not a HEALTH report: type {d[3]}"
    state, role, flags, n, _, inf, _ = struct.unpack(">BBBHHII", d[33:48])
    ms = []
    for i in range(n):
        e = d[80 + 48 * i:128 + 48 * i]
        ms.append((e[24:48].rstrip(b"\0").decode(), e[6], struct.unpack(">H", e[4:6])[0],
                   *struct.unpack(">III", e[8:20])))
    return state, role, flags, n, inf, d[48:80].rstrip(b"\0").decode(), ms
def error(d):
    """code, detail, reason of an ERROR"""
    assert d[3] == 4, f"not an ERROR: type {d[3]}"
    return struct.unpack(">H", d[32:34])[0], struct.unpack(">I", d[36:40])[0], d[40:]
def sock(port, src="127.0.0.1", timeout=1.0):
    s = socket.socket(socket.AF_INET, socket.SOCK_DGRAM)
    s.bind((src, 0))
    s.connect(("127.0.0.1", port))
    s.settimeout(timeout)
    return s
def silent(s):
    """True when nothing comes back within the socket's timeout"""
    try:
        s.recv(4096)
        return False
    except socket.timeout:
        return True
def image(path, i):
    import gzip
    return gzip.open(path).read()[16 + 784 * i:16 + 784 * (i + 1)]
EOF
export PYTHONPATH=$tmp

start_serve "$tmp/serve.log" "$tmp/stats.json" --model "$MLP" --model "$CNN" \
	--model "$tmp/wide.snm" --name edge-serve-1

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
"$S" client "127.0.0.1:$port" --shape 1,10,10 --count 1 --model-id fmnist-bcnn >"$tmp/shape.txt"
grep -q 'error bad_shape: the server said "serve: bad_shape: expects u8 1x28x28"' "$tmp/shape.txt" ||
	fail "the bad_shape reason does not name the expected input: $(cat "$tmp/shape.txt")"
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

# --- 4. HEALTH -----------------------------------------------------------------------------------
"$S" client "127.0.0.1:$port" --health --json >"$tmp/health.json" || fail "client --health exited $?"
cat "$tmp/health.json"
$PY - "$tmp/health.json" <<'EOF' || fail "the HEALTH report"
import json, sys
h = json.load(open(sys.argv[1]))
names = [m["name"] for m in h["models"]]
sys.exit(0 if h["ident"] == "edge-serve-1" and h["role"] == "serve" and h["state"] == "serving"
         and h["in_flight"] == 0 and names == ["fmnist-bmlp", "fmnist-bcnn", "wide"]
         and all(m["mode"] == "whole" and m["first_op"] == 0 for m in h["models"])
         and h["models"][1]["input"] == "u8 1x28x28" and h["models"][2]["classes"] == 64 else 1)
EOF
"$S" client "127.0.0.1:$port" --health --role host --timeout-ms 300 >/dev/null 2>&1 &&
	fail "a probe for splitnic-host answered by serve"
$PY - "$port" <<'EOF' || fail "HEALTH and the probe's size"
import sys
from dg import probe, report, silent, sock
s = sock(int(sys.argv[1]), timeout=0.5)
s.send(probe(1, 79))
assert silent(s), "a report to a 79-byte probe"
s.send(probe(2, 128))
d = s.recv(4096)
state, role, flags, n, inf, ident, ms = report(d)
print(f"a 128-byte probe: a {len(d)}-byte report, {n} model(s) {ms}, truncated {flags}; "
      "a 79-byte probe and one for splitnic-host: nothing")
assert len(d) <= 128 and n == 1 and flags == 1 and role == 3 and ident == "edge-serve-1", d
assert ms[0] == ("fmnist-bmlp", 1, 0, 1, 28, 28), ms
EOF

# --- 5. no reply larger than its request without an allow-list ------------------------------------
$PY - "$port" <<'EOF' || fail "no amplification"
import sys
from dg import WIDE, error, request, silent, sock
s = sock(int(sys.argv[1]))
for i in range(10):
    req = request(100 + i, WIDE, 1, 1, 4, bytes([i, 2, 3, 4]))
    s.send(req)
    d = s.recv(4096)
    code, detail, why = error(d)
    assert len(d) <= len(req) and code == 6 and detail == 592, (len(d), code, detail)
print(f"{len(req)}-byte REQUESTs for a 64-class model: ERROR too_large ({len(d)} bytes, detail "
      f"{detail}, {why.decode()!r})")
s.send(request(200, 0, 1, 28, 28, bytes(784))[:44])  # a malformed REQUEST of 44 bytes
d = s.recv(4096)
code, detail, why = error(d)
assert len(d) == 44 and code == 1 and why == b"serv", (len(d), code, why)
s.settimeout(0.5)
s.send(request(201, 0, 1, 28, 28, bytes(784))[:36])
assert silent(s), "an ERROR to a 36-byte datagram"
print(f"a malformed 44-byte REQUEST: a 44-byte ERROR ({why.decode()!r}); a 36-byte one: nothing")
EOF

# --- 6. SIGTERM and the counters --------------------------------------------------------------------
kill -TERM "$pid"
wait "$pid" || fail "splitnic serve exited $? on SIGTERM"
pid=
grep "^serve: datagrams" "$tmp/serve.log"
grep "^serve: stopped: 0 of 0 held" "$tmp/serve.log" || fail "no drain line"
$PY - "$tmp/stats.json" <<'EOF' || fail "counters"
import json, sys
c = json.load(open(sys.argv[1]))
want = {"answered": 2300, "requests": 2316, "error_bad_shape": 4, "error_unknown_model": 2,
        "error_bad_request": 3, "error_reply_larger": 10, "errors_sent": 18, "other_type": 1,
        "fragments": 1200, "send_fail": 0, "not_allowed": 0, "errors_rate_limited": 0,
        "rejected": 5, "verdict_truncated": 1, "verdict_version": 1, "verdict_short_ext": 2}
bad = {k: (c[k], v) for k, v in want.items() if c[k] != v}
print(f"counters: {want if not bad else bad}; health answered {c['health_answered']}, "
      f"dropped {c['health_dropped']}")
sys.exit(1 if bad or c["health_answered"] < 2 or c["health_dropped"] < 2 else 0)
EOF

# --- 7. an allow-list and the ERROR rate ---------------------------------------------------------------
start_serve "$tmp/serve-b.log" "$tmp/stats-b.json" --model "$CNN" --model "$tmp/wide.snm" \
	--allow 127.0.0.1 --allow 127.0.0.2 --error-rate 20 --error-burst 20 --name serve-b
$PY - "$port" >"$tmp/p7.count" <<'EOF' || fail "allow-list"
import sys, time
from dg import WIDE, probe, request, silent, sock
port = int(sys.argv[1])
out = sock(port, "127.0.0.3", 0.5)  # not listed: nothing at all
for d in (request(1, WIDE, 1, 1, 4, b"abcd"), probe(2, 1400), request(3, 0, 1, 28, 28, b"x")):
    out.send(d)
assert silent(out), "an answer to a source outside the allow-list"
s = sock(port, "127.0.0.2")
req = request(4, WIDE, 1, 1, 4, b"abcd")
s.send(req)
d = s.recv(4096)
assert d[3] == 3 and len(d) == 592, (d[3], len(d))
print(f"allow-list: nothing to 127.0.0.3; to 127.0.0.2 a {len(d)}-byte RESPONSE for a "
      f"{len(req)}-byte REQUEST", file=sys.stderr)
s.settimeout(0.5)
t0, got = time.monotonic(), 0
for i in range(300):
    s.send(request(1000 + i, 0x5555, 1, 1, 4, b"abcd"))
while not silent(s):
    got += 1
print(got, time.monotonic() - t0)
EOF
read -r got secs <"$tmp/p7.count"
echo "300 unknown-model REQUESTs from one source: $got ERRORs back in $secs s"

# --- 8. draining -----------------------------------------------------------------------------------
$PY - "$port" "$pid" "$S" "$IMG" "$(head -2 "$tmp/cnn.want" | tr '\n' ' ')" <<'EOF' || fail "draining"
import json, os, signal, struct, subprocess, sys, time
from dg import error, fragments, image, probe, report, request, sock
port, pid, S, img, want = int(sys.argv[1]), int(sys.argv[2]), sys.argv[3], sys.argv[4], sys.argv[5]
want = [int(w) for w in want.split()]
s = sock(port)
held = fragments(7000, 0, 1, 28, 28, image(img, 0), 232)
assert len(held) == 4
for d in held[:3]:
    s.send(d)
s.send(probe(1, 1400))
assert report(s.recv(4096))[4] == 1, "the three fragments not held"
os.kill(pid, signal.SIGTERM)
for i in range(200):
    s.send(probe(2 + i, 1400))
    state, role, flags, n, inf, ident, ms = report(s.recv(4096))
    if state == 1:
        break
    time.sleep(0.005)
assert state == 1 and inf == 1, f"HEALTH state {state}, in flight {inf}"
c = subprocess.run([S, "client", f"127.0.0.1:{port}", "--health", "--json"], capture_output=True,
                   text=True, timeout=10)
h = json.loads(c.stdout)
assert c.returncode == 1 and h["state"] == "draining" and h["in_flight"] == 1, (c.returncode, h)
s.send(request(7001, 0, 1, 28, 28, image(img, 1)))  # new work: refused
busy = [error(s.recv(4096))[:2]]
s.send(fragments(7002, 0, 1, 28, 28, image(img, 1), 232)[1])
busy.append(error(s.recv(4096))[:2])
assert busy == [(4, 1), (4, 1)], busy
s.send(held[3])  # what it holds: finished
d = s.recv(4096)
assert d[3] == 3 and struct.unpack(">Q", d[16:24])[0] == 7000, f"type {d[3]}"
cls = struct.unpack(">I", d[32:36])[0]
assert cls == want[0], (cls, want[0])
print(f"draining: HEALTH {h['state']} with {h['in_flight']} in flight (client --health exit "
      f"{c.returncode}); a new REQUEST and a new fragment: ERROR busy detail 1; the request "
      f"held finished with class {cls} (splitnic run: {want[0]})")
EOF
wait "$pid" || fail "splitnic serve exited $? after draining"
pid=
grep "draining 1 request" "$tmp/serve-b.log" || fail "no draining line"
grep "^serve: stopped: 1 of 1 held request(s) finished, 0 expired" "$tmp/serve-b.log" ||
	fail "the request held was not finished"
$PY - "$tmp/stats-b.json" "$got" <<'EOF' || fail "counters (allow-list, rate, drain)"
import json, sys
c, got = json.load(open(sys.argv[1])), int(sys.argv[2])
want = {"not_allowed": 3, "answered": 2, "error_unknown_model": 300, "error_draining": 2,
        "errors_rate_limited": 300 - got, "errors_sent": got + 2, "send_fail": 0}
bad = {k: (c[k], v) for k, v in want.items() if c[k] != v}
print(f"counters: {want if not bad else bad}")
sys.exit(1 if bad else 0)
EOF
[ "$got" -ge 20 ] && $PY -c "import sys; sys.exit(not $got <= 20 + 20 * $secs + 1)" ||
	fail "$got ERRORs in $secs s: not 20 at once and 20 a second"
echo "pass: splitnic serve answers fmnist-bmlp and fmnist-bcnn (fragmented) with the classes of splitnic run, errors by code, no answer to replies or junk, HEALTH (never longer than the probe), no reply larger than its request without --allow, nothing outside the allow-list, ERRORs rate-limited per source, draining on SIGTERM with the request held finished, counters"
exit 0
