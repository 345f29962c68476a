#!/usr/bin/env bash
# The packet-path demo (proposed `make demo`): a front-end namespace on a veth, splitnic-nic
# (wire port net_af_packet, host port net_memif server) holding the binary MLP stand-alone and
# the binary CNN's dense part, splitnic-host (net_memif client) running the CNN's conv part
# (co-processor mode). `splitnic client` sends the Fashion-MNIST test set to each model and
# prints accuracy, latency percentiles and the per-stage breakdown from the RESPONSE timing
# fields (host compute, pack, NIC compute, ...). Cleans up on exit. Without root it says so and
# runs the in-process variant (CPU kernels and the NIC emulator, no packets).
#
# Why not splitnic-host --nic inproc (its NIC stage in-process over rte_rings, see
# tests/integration/test_host_inproc.sh) without root: the front-end's UDP still has to reach
# the host's DPDK port, and every PMD that carries a kernel socket's datagrams needs privileges
# (net_af_packet: CAP_NET_RAW; net_tap, net_af_xdp, veth and namespaces: CAP_NET_ADMIN), while
# the ones that do not (net_null, net_ring, net_pcap on files) cannot reach `splitnic client`.
# So the non-root demo stays the in-process compute path, and the in-process NIC stage is
# shown under root by the integration test.
#   DEMO_COUNT=N: fewer images (default: all 10,000).
set -u
cd "$(dirname "$0")/.."
B=${B:-build}
MODELS=${MODELS:-$B/models}
# installed (this script in PREFIX/share/splitnic/lab/): the programs in PREFIX/bin, the models
# in PREFIX/share/splitnic/models
if [ ! -x "$B/splitnic" ] && [ -x ../../bin/splitnic ]; then B=../../bin MODELS=models; fi
S=$(realpath "$B/splitnic")
NIC=$B/splitnic-nic
HOST=$B/splitnic-host
CNN=$MODELS/fmnist-bcnn.snm
MLP=$MODELS/fmnist-bmlp.snm
D=/usr/share/datasets/fashion-mnist
IMG=$D/t10k-images-idx3-ubyte.gz
LAB=$D/t10k-labels-idx1-ubyte.gz
count=${DEMO_COUNT:+--count $DEMO_COUNT}
. lab/netns.sh

if [ "$(id -u)" != 0 ]; then
	echo "demo: not root: no network namespaces or af_packet, so no packet path."
	echo "demo: running the in-process variant instead (CPU kernels; NIC emulator for the MLP)"
	"$S" run "$CNN" --images "$IMG" --labels "$LAB" $count
	"$S" emu "$MLP" --images "$IMG" --labels "$LAB" ${DEMO_COUNT:+--count $DEMO_COUNT}
	exit $?
fi
netns_need_files demo: "make all" "$S" "$NIC" "$HOST" "$CNN" "$MLP" "$IMG" "$LAB"

tag=$$
ns_c=sndemo-cli-$tag
ns_n=sndemo-nic-$tag
tmp=$(mktemp -d)
nic_pid=
host_pid=
cleanup() {
	netns_kill "$host_pid" "$nic_pid"
	netns_cleanup "/var/run/dpdk/sndn$tag" "/var/run/dpdk/sndh$tag" "$tmp"
}
trap cleanup EXIT
die() {
	echo "demo: $*"
	tail -5 "$tmp/nic.log" "$tmp/host.log" 2>/dev/null
	exit 1
}

netns_wire "$ns_c" "$ns_n" 10.88.2.2/24 || die "namespaces and veth: $NETNS_WHY"
# the split: after the flatten that opens the CNN's NIC part (splitnic-host's default)
K=$(netns_split "$S" "$CNN") || die "no flatten in $CNN"

ip netns exec "$ns_n" "$NIC" -l 0 --no-huge -m 512 --file-prefix "sndn$tag" --no-pci \
	--vdev net_af_packet0,iface=vw \
	--vdev "net_memif0,role=server,socket=$tmp/memif.sock,socket-abstract=no" -- \
	--model "$MLP" --model "$CNN@$K" --ip 10.88.2.1 --notify-host >"$tmp/nic.log" 2>&1 &
nic_pid=$!
netns_wait_log "$tmp/nic.log" "^nic: forwarding" "" splitnic-nic || die "$NETNS_WHY"
ip netns exec "$ns_n" "$HOST" -l 1 --no-huge -m 512 --file-prefix "sndh$tag" --no-pci \
	--vdev "net_memif0,role=client,socket=$tmp/memif.sock,socket-abstract=no" -- \
	--model "$CNN:coproc:$K" --ip 10.88.2.1 --allow 10.88.2.0/24 >"$tmp/host.log" 2>&1 &
host_pid=$!
netns_wait_log "$tmp/host.log" "^host: serving" "" splitnic-host || die "$NETNS_WHY"
sleep 1 # the memif link
grep -h "^nic: model\|^host: model\|^host:  " "$tmp/nic.log" "$tmp/host.log"

run() { # NAME MODEL-ID
	echo
	echo "== $1 =="
	ip netns exec "$ns_c" "$S" client 10.88.2.1 --model-id "$2" --images "$IMG" --labels "$LAB" \
		--outstanding 4 --timeout-ms 3000 $count >"$tmp/client.txt" || die "client ($1)"
	cat "$tmp/client.txt"
	cp "$tmp/client.txt" "$tmp/$2.txt"
}
run "binary MLP, stand-alone on the NIC (the host never sees a request)" fmnist-bmlp
run "binary CNN, co-processor: conv on the host, binary dense on the NIC" fmnist-bcnn
echo
echo "(server ns are per-stage means from the RESPONSE timing fields: host = host compute,"
echo " pack = hand-off + serialize at the split, nic = NIC executor chain; total is the server's,"
echo " request in to response out, the host-to-NIC hop excepted; latency percentiles are the"
echo " front-end's round trips)"
# the MLP's server breakdown: the chain's own time and the time spent queued behind others
read -r mlp_nic mlp_queue < <(awk '/server +mean ns:/ {for (i = 1; i < NF; i++) {
	if ($i == "nic") n = $(i + 1); if ($i == "queue") q = $(i + 1)}; printf "%.0f %.0f\n", n / 1e3, q / 1e3}' \
	"$tmp/fmnist-bmlp.txt")
cat <<EOF

Where the stand-alone MLP's round trip goes, beside about 15 us in process:
  - Measured above: the NIC's executor chain took ${mlp_nic} us per request (server field
    nic) and a request waited ${mlp_queue} us (queue) behind the others: the client keeps 4
    requests outstanding and the chain serves one at a time.
  - On splitnic-nic (platform lcore) the layers run as the NIC firmware runs them: the
    dispatcher sends a start notification down a chain of 16 executors, each computes its
    slice of neurons with the CPU's binary kernels, and an end notification travels back,
    layer by layer; the executors that share a core run as one group, so the chain costs
    about what the kernels cost (make bench: lcore_vs_kern_forward_*).
  - The rest is the packet path on this 2-core machine: the chain runs inline on the one
    lcore that also runs the forwarding loop, splitnic-host polls the other core (busy while
    requests come), and the client and the kernel's veth/af_packet path have no core of their
    own.
  - So these figures describe this 2-core set-up, not a NIC; \`splitnic emu\` gives the modeled
    time of an NFP4000-class NIC for the same layers, and \`splitnic-nic --platform emu\`
    spends it for real.
EOF
kill -TERM "$host_pid" && wait "$host_pid"
host_pid=
kill -TERM "$nic_pid" && wait "$nic_pid"
nic_pid=
