#!/usr/bin/env bash
# The Lua dissector (contrib/wireshark/splitnic.lua) decodes a capture written by the protocol test suite
# (build/tests/test_protocol, test_proto_pcap): every message type, a fragmented request, an
# int8 request on a non-default port (heuristic) and a malformed datagram.
# Exit 0 pass, 1 fail, 77 skip (no tshark: `make deps` installs it).
set -u
cd "$(dirname "$0")/../.."
B=$(dirname "${SPLITNIC:-build/splitnic}")
T="$B/tests/test_protocol"
command -v tshark >/dev/null || { echo "skip: tshark not installed (make deps)"; exit 77; }
[ -x "$T" ] || { echo "FAIL: $T not built"; exit 1; }
work=$(mktemp -d)
trap 'rm -rf "$work"' EXIT
PROTO_PCAP_OUT="$work/proto.pcap" "$T" >"$work/test.log" 2>&1 ||
	{ echo "FAIL: $T"; cat "$work/test.log"; exit 1; }

fields() {
	tshark -X lua_script:contrib/wireshark/splitnic.lua -r "$work/proto.pcap" -T fields -E 'separator=|' "$@" \
		2>"$work/tshark.err"
}

got=$(fields -e splitnic.type -e splitnic.request_id -e splitnic.frag_off -e splitnic.frag_len \
	-e splitnic.total_len -e splitnic.tensor.fmt -e splitnic.tensor.c -e splitnic.tensor.h \
	-e splitnic.tensor.w -e splitnic.tensor.layer -e splitnic.resp.class \
	-e splitnic.resp.num_classes -e splitnic.act.reply_addr -e splitnic.act.reply_port \
	-e splitnic.error.code -e splitnic.error.reason -e splitnic.tensor.scale \
	-e splitnic.tensor.zero_point)
want='1|0x0000000000000001|0|784|784|1|1|28|28|||||||||
3|0x0000000000000001|0|80|80||||||7|10||||||
1|0x0000000000000002|0|1336|3136|2|1|28|28|||||||||
1|0x0000000000000002|1336|1336|3136|2|1|28|28|||||||||
1|0x0000000000000002|2672|464|3136|2|1|28|28|||||||||
2|0x0000000000000003|0|512|512|5|4096|1|1|3|||::ffff:127.0.0.1|40000||||
4|0x0000000000000004|0|13|13||||||||||2|no such model||
4|0x0000000000000004|0|13|13|||||||||||||
1|0x0000000000000005|0|8|8|4|2|2|2||||||||0.5|-4
3|0x0000000000000003|0|16|16||||||1|2||||||
5|0x0000000000000006|0|152|152|||||||||||||
5|0x0000000000000006|0|80|80|5|3136|1|1|||10||||||'
fail=0
if [ "$got" != "$want" ]; then
	echo "FAIL: decoded fields differ"
	diff <(echo "$want") <(echo "$got")
	cat "$work/tshark.err"
	fail=1
fi

# scores of the single-datagram RESPONSE, executors, timing
scores=$(fields -Y 'splitnic.type == 3 && splitnic.request_id == 1' -e splitnic.resp.score -e splitnic.executors.nic \
	-e splitnic.t.total -e splitnic.t.nic)
want_scores='0,0.1,0.2,0.3,0.4,0.5,0.6,0.7,0.8,0.9|1|1050000|400000'
[ "$scores" = "$want_scores" ] || { echo "FAIL: scores '$scores' != '$want_scores'"; fail=1; }

# the malformed datagram is flagged, and the summary lines read well
summary=$(tshark -X lua_script:contrib/wireshark/splitnic.lua -r "$work/proto.pcap" 2>/dev/null)
echo "$summary"
echo "$summary" | grep -q 'malformed: unknown version 9' || { echo "FAIL: no malformed"; fail=1; }
echo "$summary" | grep -q 'REQUEST id=0x0000000000000002 .*frag 1336+1336/3136 f32 1x28x28' ||
	{ echo "FAIL: fragment summary"; fail=1; }
echo "$summary" | grep -q 'ERROR .*unknown_model: no such model' || { echo "FAIL: error"; fail=1; }
echo "$summary" | grep -q 'RESPONSE .*notice class=1/2' || { echo "FAIL: notice"; fail=1; }
echo "$summary" | grep -q 'HEALTH id=0x0000000000000006 .*report splitnic-nic draining models=1' ||
	{ echo "FAIL: health report"; fail=1; }
health=$(fields -Y 'splitnic.health.kind == 1' -e splitnic.health.identity -e splitnic.health.name \
	-e splitnic.health.first_op -e splitnic.health.mode -e splitnic.health.in_flight)
[ "$health" = 'edge-1|fmnist-bcnn|9|3|3' ] || { echo "FAIL: health fields '$health'"; fail=1; }
cookie=$(fields -Y 'splitnic.type == 3 && splitnic.cookie' -e splitnic.cookie -e splitnic.host_ref)
[ "$cookie" = '0x0123456789abcdef|0x0000002a' ] || { echo "FAIL: cookie '$cookie'"; fail=1; }
[ "$(echo "$summary" | grep -c SPLITNIC)" = 12 ] || { echo "FAIL: not 12 SPLITNIC frames"; fail=1; }
[ $fail = 0 ] && echo "pass: dissector decoded 12 datagrams"
exit $fail
