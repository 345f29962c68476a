-- SPDX-License-Identifier: MIT
-- splitnic wire protocol dissector for Wireshark / tshark (layout: protocol/proto.h).
--
--   tshark -X lua_script:contrib/wireshark/splitnic.lua -r capture.pcap
--   tshark -X lua_script:contrib/wireshark/splitnic.lua -r capture.pcap -Y splitnic.type==3 -V
--
-- Registered on UDP port 21326 (change it in Preferences > Protocols > SPLITNIC, or
-- "-o splitnic.port:N"), and as a heuristic on any UDP port (magic "SN", version 1).
-- Each datagram is shown on its own; fragments carry their offset within the message.

local p = Proto("splitnic", "splitnic inference protocol")

local types = { [1] = "REQUEST", [2] = "ACTIVATION", [3] = "RESPONSE", [4] = "ERROR", [5] = "HEALTH" }
local fmts = { [1] = "u8", [2] = "f32", [3] = "fp16", [4] = "int8", [5] = "bits", [6] = "f64" }
local fmt_size = { [1] = 1, [2] = 4, [3] = 2, [4] = 1, [6] = 8 }
local errors = {
	[1] = "bad_request", [2] = "unknown_model", [3] = "bad_shape", [4] = "busy",
	[5] = "timeout", [6] = "too_large", [7] = "internal", [8] = "unsupported", [9] = "unavailable",
}
local min_hdr = { [1] = 64, [2] = 112, [3] = 80, [4] = 40, [5] = 48 }
local health_kinds = { [0] = "probe", [1] = "report" }
local health_states = { [0] = "serving", [1] = "draining", [2] = "degraded" }
local roles = { [1] = "splitnic-nic", [2] = "splitnic-host", [3] = "serve", [4] = "xdp" }
local modes = { [1] = "whole", [2] = "coproc", [3] = "nic-part", [4] = "host-only", [5] = "fallback" }
local timing = { "total", "rx", "queue", "host", "pack", "xfer", "nic", "tx" }

local f = p.fields
f.magic = ProtoField.uint16("splitnic.magic", "Magic", base.HEX)
f.version = ProtoField.uint8("splitnic.version", "Version")
f.type = ProtoField.uint8("splitnic.type", "Type", base.DEC, types)
f.hdr_len = ProtoField.uint16("splitnic.hdr_len", "Header length")
f.frag_len = ProtoField.uint16("splitnic.frag_len", "Fragment length")
f.model_id = ProtoField.uint32("splitnic.model_id", "Model id", base.HEX)
f.flags = ProtoField.uint16("splitnic.flags", "Flags", base.HEX)
f.request_id = ProtoField.uint64("splitnic.request_id", "Request id", base.HEX)
f.total_len = ProtoField.uint32("splitnic.total_len", "Total length")
f.frag_off = ProtoField.uint32("splitnic.frag_off", "Fragment offset")
f.fragmented = ProtoField.bool("splitnic.fragmented", "Fragmented")
f.fmt = ProtoField.uint8("splitnic.tensor.fmt", "Format", base.DEC, fmts)
f.layer = ProtoField.uint16("splitnic.tensor.layer", "Layer")
f.c = ProtoField.uint32("splitnic.tensor.c", "C")
f.h = ProtoField.uint32("splitnic.tensor.h", "H")
f.w = ProtoField.uint32("splitnic.tensor.w", "W")
f.count = ProtoField.uint32("splitnic.tensor.count", "Elements")
f.scale = ProtoField.float("splitnic.tensor.scale", "Scale")
f.zero_point = ProtoField.int32("splitnic.tensor.zero_point", "Zero point")
f.reply_addr = ProtoField.ipv6("splitnic.act.reply_addr", "Reply address")
f.reply_port = ProtoField.uint16("splitnic.act.reply_port", "Reply port")
f.executors = ProtoField.uint8("splitnic.executors", "Executors", base.HEX)
f.ex_cpu = ProtoField.bool("splitnic.executors.cpu", "CPU", 8, nil, 0x01)
f.ex_gpu = ProtoField.bool("splitnic.executors.gpu", "GPU", 8, nil, 0x02)
f.ex_nic = ProtoField.bool("splitnic.executors.nic", "NIC", 8, nil, 0x04)
f.ex_xdp = ProtoField.bool("splitnic.executors.xdp", "XDP", 8, nil, 0x08)
f.ex_fb = ProtoField.bool("splitnic.executors.host_fallback", "Host fallback", 8, nil, 0x10)
f.t_ns = ProtoField.uint32("splitnic.t_ns", "Time (ns)")
for _, n in ipairs(timing) do
	f["t_" .. n] = ProtoField.uint32("splitnic.t." .. n, n .. " (ns)")
end
f.host_ref = ProtoField.uint32("splitnic.host_ref", "Host reference", base.HEX)
f.cookie = ProtoField.uint64("splitnic.cookie", "Cookie", base.HEX)
f.h_kind = ProtoField.uint8("splitnic.health.kind", "Kind", base.DEC, health_kinds)
f.h_state = ProtoField.uint8("splitnic.health.state", "State", base.DEC, health_states)
f.h_role = ProtoField.uint8("splitnic.health.role", "Role", base.DEC, roles)
f.h_trunc = ProtoField.bool("splitnic.health.truncated", "Truncated", 8, nil, 0x01)
f.h_n = ProtoField.uint16("splitnic.health.n_models", "Models")
f.h_in_flight = ProtoField.uint32("splitnic.health.in_flight", "In flight")
f.h_ident = ProtoField.stringz("splitnic.health.identity", "Identity")
f.h_model = ProtoField.uint32("splitnic.health.model_id", "Model id", base.HEX)
f.h_first = ProtoField.uint16("splitnic.health.first_op", "First op")
f.h_mode = ProtoField.uint8("splitnic.health.mode", "Mode", base.DEC, modes)
f.h_name = ProtoField.stringz("splitnic.health.name", "Name")
f.class = ProtoField.uint32("splitnic.resp.class", "Class")
f.num_classes = ProtoField.uint16("splitnic.resp.num_classes", "Classes")
f.score_fmt = ProtoField.uint8("splitnic.resp.score_fmt", "Score format", base.DEC, fmts)
f.score = ProtoField.double("splitnic.resp.score", "Score")
f.err_code = ProtoField.uint16("splitnic.error.code", "Error code", base.DEC, errors)
f.err_detail = ProtoField.uint32("splitnic.error.detail", "Detail", base.HEX)
f.err_reason = ProtoField.string("splitnic.error.reason", "Reason")
f.data = ProtoField.bytes("splitnic.data", "Data")

local e_malformed = ProtoExpert.new("splitnic.malformed", "Malformed splitnic datagram",
	expert.group.MALFORMED, expert.severity.ERROR)
p.experts = { e_malformed }

p.prefs.port = Pref.uint("UDP port", 21326, "UDP port of the splitnic protocol")

local function executors(tree, tvb)
	local t = tree:add(f.executors, tvb)
	t:add(f.ex_cpu, tvb)
	t:add(f.ex_gpu, tvb)
	t:add(f.ex_nic, tvb)
	t:add(f.ex_xdp, tvb)
	t:add(f.ex_fb, tvb)
end

local function tensor(tree, tvb, t, is_act)
	local st = tree:add(p, tvb(t, 32), "Tensor")
	st:set_text("Tensor")
	st:add(f.fmt, tvb(t, 1))
	if is_act then
		st:add(f.layer, tvb(t + 2, 2))
	end
	st:add(f.c, tvb(t + 4, 4))
	st:add(f.h, tvb(t + 8, 4))
	st:add(f.w, tvb(t + 12, 4))
	st:add(f.count, tvb(t + 16, 4))
	local fmt = tvb(t, 1):uint()
	if fmt == 4 then
		st:add(f.scale, tvb(t + 20, 4))
		st:add(f.zero_point, tvb(t + 24, 4))
	end
	return string.format("%s %dx%dx%d", fmts[fmt] or "?", tvb(t + 4, 4):uint(),
		tvb(t + 8, 4):uint(), tvb(t + 12, 4):uint())
end

local function dissect(tvb, pinfo, tree)
	local len = tvb:len()
	if len < 32 or tvb(0, 2):uint() ~= 0x534e then
		return 0
	end
	pinfo.cols.protocol = "SPLITNIC"
	local root = tree:add(p, tvb(), "splitnic")
	root:add(f.magic, tvb(0, 2))
	root:add(f.version, tvb(2, 1))
	local version, typ, hdr_len = tvb(2, 1):uint(), tvb(3, 1):uint(), tvb(4, 2):uint()
	root:add(f.type, tvb(3, 1))
	root:add(f.hdr_len, tvb(4, 2))
	root:add(f.frag_len, tvb(6, 2))
	root:add(f.model_id, tvb(8, 4))
	root:add(f.flags, tvb(12, 2))
	root:add(f.request_id, tvb(16, 8))
	root:add(f.total_len, tvb(24, 4))
	root:add(f.frag_off, tvb(28, 4))
	local frag_len, total, off = tvb(6, 2):uint(), tvb(24, 4):uint(), tvb(28, 4):uint()
	local rid = tvb(16, 8):uint64()
	local name = types[typ] or ("type " .. typ)
	local bad
	if version ~= 1 then
		bad = "unknown version " .. version
	elseif not min_hdr[typ] then
		bad = "unknown type " .. typ
	elseif hdr_len < min_hdr[typ] or hdr_len % 4 ~= 0 then
		bad = "bad header length " .. hdr_len
	elseif len < hdr_len then
		bad = "truncated header"
	elseif len ~= hdr_len + frag_len then
		bad = string.format("datagram %d bytes, header says %d", len, hdr_len + frag_len)
	elseif off + frag_len > total then
		bad = "fragment beyond total length"
	end
	local frag = frag_len ~= total
	root:add(f.fragmented, frag):set_generated()
	local info = string.format("%s id=0x%s model=0x%08x", name, rid:tohex(),
		tvb(8, 4):uint())
	if frag then
		info = info .. string.format(" frag %d+%d/%d", off, frag_len, total)
	end
	if bad then
		root:add_proto_expert_info(e_malformed, bad)
		pinfo.cols.info = info .. " [malformed: " .. bad .. "]"
		root:append_text(": " .. name .. " (malformed)")
		return len
	end
	local t = 32
	if typ == 1 or typ == 2 then
		local desc = tensor(root, tvb, t, typ == 2)
		info = info .. " " .. desc
		if typ == 2 then
			root:add(f.reply_addr, tvb(t + 32, 16))
			root:add(f.reply_port, tvb(t + 48, 2))
			executors(root, tvb(t + 50, 1))
			for i, n in ipairs({ "rx", "queue", "host", "pack" }) do
				root:add(f["t_" .. n], tvb(t + 48 + 4 * i, 4))
			end
			root:add(f.host_ref, tvb(t + 68, 4))
			root:add(f.cookie, tvb(t + 72, 8))
			info = info .. " layer=" .. tvb(t + 2, 2):uint()
		end
	elseif typ == 3 then
		local cls, n = tvb(t, 4):uint(), tvb(t + 4, 2):uint()
		root:add(f.class, tvb(t, 4))
		root:add(f.num_classes, tvb(t + 4, 2))
		root:add(f.score_fmt, tvb(t + 6, 1))
		executors(root, tvb(t + 7, 1))
		local tt = root:add(p, tvb(t + 8, 32), "Timing")
		tt:set_text("Timing (ns)")
		for i, nm in ipairs(timing) do
			tt:add(f["t_" .. nm], tvb(t + 4 + 4 * i, 4))
		end
		root:add(f.host_ref, tvb(t + 40, 4))
		if hdr_len >= 88 then
			root:add(f.cookie, tvb(t + 48, 8))
			info = info .. " notice"
		end
		info = info .. string.format(" class=%d/%d", cls, n)
		local sfmt = tvb(t + 6, 1):uint()
		if not frag and (sfmt == 6 or sfmt == 2) then
			local sz = fmt_size[sfmt]
			local sc = root:add(p, tvb(hdr_len, frag_len), "Scores")
			sc:set_text(string.format("Scores (%d)", n))
			for i = 0, n - 1 do
				local r = tvb(hdr_len + sz * i, sz)
				sc:add_le(f.score, r, r:le_float())
					:prepend_text("[" .. i .. "] ")
			end
		end
	elseif typ == 4 then
		local code = tvb(t, 2):uint()
		root:add(f.err_code, tvb(t, 2))
		root:add(f.err_detail, tvb(t + 4, 4))
		if hdr_len >= 56 then
			root:add(f.host_ref, tvb(t + 8, 4))
			root:add(f.cookie, tvb(t + 16, 8))
		end
		if frag_len > 0 then
			root:add(f.err_reason, tvb(hdr_len, frag_len))
		end
		info = info .. string.format(" %s: %s", errors[code] or ("code " .. code),
			frag_len > 0 and tvb(hdr_len, frag_len):string() or "")
	elseif typ == 5 then
		local kind = tvb(t, 1):uint()
		root:add(f.h_kind, tvb(t, 1))
		info = info .. " " .. (health_kinds[kind] or ("kind " .. kind))
		if kind == 1 then
			local n = tvb(t + 4, 2):uint()
			root:add(f.h_state, tvb(t + 1, 1))
			root:add(f.h_role, tvb(t + 2, 1))
			root:add(f.h_trunc, tvb(t + 3, 1))
			root:add(f.h_n, tvb(t + 4, 2))
			root:add(f.h_in_flight, tvb(t + 8, 4))
			if frag_len >= 32 + 48 * n then
				root:add(f.h_ident, tvb(hdr_len, 32))
				for i = 0, n - 1 do
					local e = hdr_len + 32 + 48 * i
					local mt = root:add(p, tvb(e, 48), "Model")
					mt:set_text("Model " .. i)
					mt:add(f.h_model, tvb(e, 4))
					mt:add(f.h_first, tvb(e + 4, 2))
					mt:add(f.h_mode, tvb(e + 6, 1))
					mt:add(f.fmt, tvb(e + 7, 1))
					mt:add(f.c, tvb(e + 8, 4))
					mt:add(f.h, tvb(e + 12, 4))
					mt:add(f.w, tvb(e + 16, 4))
					mt:add(f.num_classes, tvb(e + 20, 2))
					mt:add(f.h_name, tvb(e + 24, 24))
				end
			end
			info = info .. string.format(" %s %s models=%d",
				roles[tvb(t + 2, 1):uint()] or "?",
				health_states[tvb(t + 1, 1):uint()] or "?", n)
		end
	end
	if frag_len > 0 and typ ~= 4 and typ ~= 5 and not (typ == 3 and not frag) then
		root:add(f.data, tvb(hdr_len, frag_len))
	end
	pinfo.cols.info = info
	root:append_text(": " .. name)
	return len
end

function p.dissector(tvb, pinfo, tree)
	return dissect(tvb, pinfo, tree)
end

local function heuristic(tvb, pinfo, tree)
	if tvb:len() < 32 or tvb(0, 2):uint() ~= 0x534e or tvb(2, 1):uint() ~= 1 then
		return false
	end
	dissect(tvb, pinfo, tree)
	return true
end

local registered_port = 0
function p.init()
	local udp = DissectorTable.get("udp.port")
	if registered_port ~= 0 then
		udp:remove(registered_port, p)
	end
	registered_port = p.prefs.port
	udp:add(registered_port, p)
end

DissectorTable.get("udp.port"):add(21326, p)
registered_port = 21326
p:register_heuristic("udp", heuristic)
