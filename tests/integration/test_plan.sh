#!/usr/bin/env bash
# A plan with CPU, GPU and NIC stages, run as a plan: the binary CNN as
#   cpu ops [0, 4) -> gpu ops [4, 9) -> nic ops [9, 13)     (activation: 3136 bits at op 9)
#   1. in process: `splitnic run --plan` (executors through exec/kexec.h, the NIC stage on the
#      emulator) gives the classes and the scores of `splitnic run`, bit for bit;
#   2. over packets: splitnic-host serving the plan (its cpu and gpu stages on the host, its nic
#      stage in-process behind the ACTIVATION path, --nic inproc, front-end over a veth): every
#      request answered by the NIC stage with the classes of `splitnic run`; a Python front-end
#      checks the RESPONSE scores (f64) of the first images against `splitnic run --scores`.
# The NIC's deadline is 2 s: on a loaded 2-core box its lcore can be starved past the default
# 200 ms, and a missed deadline sends requests to the fallback, which this test counts as a miss.
# Without a usable GPU the gpu stage runs on the CPU kernels: both programs say so once
# ("gpu: no usable GPU (...)") and count it (run: "N requests of GPU stages ran on the CPU";
# host: gpu_fallback_requests = N). With a GPU the message and the counter must be absent.
# Exit 0 pass, 1 fail, 77 skip (only when not root, and never under CI=true).
# PLAN_COUNT=N: fewer images (default 2000).
set -u
cd "$(dirname "$0")/../.."
. tests/integration/paths.sh
CNN=${HOST_MODEL:-$B/models/fmnist-bcnn.snm} N=${PLAN_COUNT:-2000} NS=200 # NS: images whose scores are checked over packets
. lab/netns.sh
netns_need_root af_packet
netns_need_files FAIL: "make all" "$S" "$HOST" "$CNN" "$IMG" "$LAB"

tag=$$ tmp=$(mktemp -d) host_pid=
ns_c=snpl-cli-$tag ns_s=snpl-srv-$tag
trap 'netns_kill "$host_pid"; netns_cleanup "/var/run/dpdk/snpl$tag" "$tmp"' EXIT
fail() { netns_fail "$*" "$tmp/host.log"; }

# --- the plan file: the planner's header (model hash), stages by hand ---------------------------
"$S" plan "$CNN" -o "$tmp/cnn.plan" >/dev/null 2>&1 || fail "splitnic plan"
sed -i '/^stage /d' "$tmp/cnn.plan"
printf 'stage cpu 0 4 -\nstage gpu 4 9 bits\nstage nic 9 13 bits\n' >>"$tmp/cnn.plan"
if "$S" run "$CNN" --count 1 --images "$IMG" --exec gpu 2>&1 | grep -q "falling back"; then
	gpu=0
else
	gpu=1
fi

# --- 1. in process ---------------------------------------------------------------------------------
netns_run_classes "$CNN" "$tmp/cpu" --images "$IMG" --labels "$LAB" --count "$N" --batch 8 ||
	fail "splitnic run"
"$S" run "$CNN" --images "$IMG" --labels "$LAB" --count "$N" --batch 8 --plan "$tmp/cnn.plan" \
	--scores "$tmp/plan.csv" >"$tmp/plan.txt" 2>"$tmp/plan.err" || fail "splitnic run --plan: $(cat "$tmp/plan.err")"
cat "$tmp/plan.txt" "$tmp/plan.err"
cmp -s "$tmp/cpu.csv" "$tmp/plan.csv" || fail "run --plan: scores differ from splitnic run"
grep -q "plan $tmp/cnn.plan: cpu \[0, 4) -> gpu \[4, 9) -> nic \[9, 13)" "$tmp/plan.txt" ||
	fail "run --plan: the stages are not reported"
if [ "$gpu" = 0 ]; then
	[ "$(grep -c 'gpu: no usable GPU (' "$tmp/plan.err")" = 1 ] || fail "run --plan: no (or more than one) GPU fallback message"
	grep -q "; $N requests of GPU stages ran on the CPU" "$tmp/plan.txt" || fail "run --plan: fallback counter is not $N"
else
	grep -q "no usable GPU" "$tmp/plan.err" && fail "run --plan: a GPU is present but the stage fell back"
	grep -q "; 0 requests of GPU stages ran on the CPU" "$tmp/plan.txt" || fail "run --plan: GPU stage ran on the CPU"
fi

# --- 2. splitnic-host over packets -------------------------------------------------------------------
{ netns_add "$ns_c" "$ns_s" && netns_direct "$ns_c" vc 10.88.3.2/24 "$ns_s" vw 10.88.3.1; } ||
	fail "namespaces, veth, addresses: ${NETNS_WHY:-see above}"

: >"$tmp/host.log"
ip netns exec "$ns_s" "$HOST" -l 0-1 --no-huge -m 512 --file-prefix "snpl$tag" --no-pci \
	--vdev net_af_packet0,iface=vw -- --model "$CNN:coproc:$tmp/cnn.plan" --ip 10.88.3.1 \
	--allow 10.88.3.0/24 --nic inproc --nic-timeout-us 2000000 >>"$tmp/host.log" 2>&1 &
host_pid=$!
netns_wait_log "$tmp/host.log" "^host: serving" "$host_pid" splitnic-host || fail "$NETNS_WHY"
grep "^host:" "$tmp/host.log"
grep -q "^host:   stage 1: gpu ops 4..8" "$tmp/host.log" || fail "host: the plan's gpu stage is not loaded"
if [ "$gpu" = 0 ]; then
	[ "$(grep -c 'gpu: no usable GPU (' "$tmp/host.log")" = 1 ] || fail "host: no (or more than one) GPU fallback message"
fi
ip netns exec "$ns_c" "$S" client 10.88.3.1 --images "$IMG" --labels "$LAB" --count "$N" \
	--timeout-ms 3000 --json --classes "$tmp/host.classes" --outstanding 4 >"$tmp/client.json" ||
	fail "client exited $?"
# the scores of the first NS images, straight from the RESPONSEs
ip netns exec "$ns_c" $PY - "$IMG" "$NS" "$tmp/host.scores" <<'PYEOF' || fail "score front-end"
import gzip, socket, struct, sys, time
raw = gzip.open(sys.argv[1]).read()[16:]
n, out = int(sys.argv[2]), sys.argv[3]
mid = 0
s = socket.socket(socket.AF_INET, socket.SOCK_DGRAM)
s.connect(("10.88.3.1", 21326))
s.settimeout(0.2)
got = {}
t_end = time.monotonic() + 60
while len(got) < n and time.monotonic() < t_end:
    i = next(k for k in range(n) if k not in got)
    hdr = struct.pack(">HBBHHIHHQII", 0x534E, 1, 1, 64, 784, mid, 0, 0, i, 784, 0)
    s.send(hdr + struct.pack(">BBHIIIIIiI", 1, 0, 0, 1, 28, 28, 784, 0, 0, 0) + raw[i * 784:(i + 1) * 784])
    try:
        while True:
            d = s.recv(2048)
            hl, rid = struct.unpack(">H", d[4:6])[0], struct.unpack(">Q", d[16:24])[0]
            if d[3] == 3 and rid not in got:
                nc = struct.unpack(">H", d[36:38])[0]
                got[rid] = struct.unpack("<%dd" % nc, d[hl:hl + 8 * nc])
            if rid == i:
                break
    except socket.timeout:
        pass
with open(out, "w") as f:
    for k in range(n):
        f.write(",".join("%.17g" % v for v in got.get(k, ())) + "\n")
PYEOF
dpdk_telemetry "snpl$tag" /splitnic/host/stats >"$tmp/host.stats"
$PY - "$tmp/client.json" "$tmp/host.classes" "$tmp/cpu.classes" "$tmp/host.stats" "$N" "$gpu" \
	"$tmp/host.scores" "$tmp/cpu.csv" "$NS" <<'PYEOF' || fail "host over packets"
import json, sys
cli, got, want, s = json.load(open(sys.argv[1])), sys.argv[2], sys.argv[3], json.load(open(sys.argv[4]))
n, gpu, ns = int(sys.argv[5]), sys.argv[6] == "1", int(sys.argv[9])
got = [int(l) for l in open(got)]
want = [int(l) for l in open(want)]
diff = sum(1 for a, b in zip(got, want) if a != b)
sc = [l.strip() for l in open(sys.argv[7])]
cpu = [",".join("%.17g" % float(x) for x in l.split(",")) for l in open(sys.argv[8])][:ns]
sdiff = sum(1 for a, b in zip(sc, cpu) if a != b)
print(f"host: {cli['responses']}/{cli['requests']} responses, executors {cli['executors']}, "
      f"classes differing from splitnic run: {diff}; scores differing (first {ns}): {sdiff}; "
      f"answered_nic {s['answered_nic']}, gpu_fallback_requests {s['gpu_fallback_requests']}")
checks = [
    (cli["responses"] == n and len(got) == n and not cli["errors"]["total"] and not cli["timeouts"],
     "not every request answered"),
    (not diff, f"{diff} classes differ from splitnic run"),
    (not sdiff and len(sc) == ns, f"{sdiff} of the first {ns} images' scores differ from splitnic run"),
    (cli["executors"]["nic"] == n and s["answered_nic"] >= n + ns, "not every request answered by the NIC stage"),
    (s["gpu_fallback_requests"] == 0 if gpu else s["gpu_fallback_requests"] >= n,
     f"gpu_fallback_requests {s['gpu_fallback_requests']}, expected {'0' if gpu else '>= %d' % n}"),
]
bad = [why for ok, why in checks if not ok]
if bad:
    sys.exit("FAIL: " + "; ".join(bad))
PYEOF
kill -TERM "$host_pid"
wait "$host_pid" || fail "splitnic-host exited $? on SIGTERM"
host_pid=
echo "pass: a cpu -> gpu -> nic plan of the binary CNN: splitnic run --plan and splitnic-host over packets give the classes and scores of splitnic run ($N images; GPU present: $gpu)"
exit 0
