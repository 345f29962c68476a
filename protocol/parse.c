// SPDX-License-Identifier: MIT
#include "protocol/proto.h"

#include <string.h>

enum proto_verdict proto_parse(const void *buf, size_t len, struct proto_msg *m)
{
	if (len > PROTO_MAX_PAYLOAD)
		return PROTO_BAD_TRAILING;
	return proto_hdr_parse(buf, (const uint8_t *)buf + len, (uint32_t)len, m);
}

static const char *const verdict_names[PROTO_VERDICT__COUNT] = {
    [PROTO_OK] = "ok",
    [PROTO_BAD_SHORT] = "short",
    [PROTO_BAD_MAGIC] = "magic",
    [PROTO_BAD_VERSION] = "version",
    [PROTO_BAD_TYPE] = "type",
    [PROTO_BAD_HDR_LEN] = "hdr_len",
    [PROTO_BAD_SHORT_EXT] = "short_ext",
    [PROTO_BAD_TRUNCATED] = "truncated",
    [PROTO_BAD_TRAILING] = "trailing",
    [PROTO_BAD_TOTAL_LEN] = "total_len",
    [PROTO_BAD_FRAG] = "frag",
    [PROTO_BAD_FORMAT] = "format",
    [PROTO_BAD_SHAPE] = "shape",
    [PROTO_BAD_FIELD] = "field",
};

static const char *const type_names[] = {
    [PROTO_REQUEST] = "request", [PROTO_ACTIVATION] = "activation", [PROTO_RESPONSE] = "response",
    [PROTO_ERROR] = "error",	 [PROTO_HEALTH] = "health",
};

static const char *const health_state_names[] = {
    [PROTO_HEALTH_SERVING] = "serving",
    [PROTO_HEALTH_DRAINING] = "draining",
    [PROTO_HEALTH_DEGRADED] = "degraded",
};

static const char *const role_names[] = {
    [PROTO_ROLE_NIC] = "splitnic-nic",
    [PROTO_ROLE_HOST] = "splitnic-host",
    [PROTO_ROLE_SERVE] = "serve",
    [PROTO_ROLE_XDP] = "xdp",
};

static const char *const mode_names[] = {
    [PROTO_MODE_WHOLE] = "whole",	[PROTO_MODE_COPROC] = "coproc",
    [PROTO_MODE_NIC_PART] = "nic-part", [PROTO_MODE_HOST_ONLY] = "host-only",
    [PROTO_MODE_FALLBACK] = "fallback",
};

static const char *const fmt_names[] = {
    [PROTO_FMT_U8] = "u8",     [PROTO_FMT_F32] = "f32",	  [PROTO_FMT_FP16] = "fp16",
    [PROTO_FMT_INT8] = "int8", [PROTO_FMT_BITS] = "bits", [PROTO_FMT_F64] = "f64",
};

static const char *const error_names[PROTO_ERR__COUNT] = {
    [PROTO_ERR_BAD_REQUEST] = "bad_request", [PROTO_ERR_UNKNOWN_MODEL] = "unknown_model",
    [PROTO_ERR_BAD_SHAPE] = "bad_shape",     [PROTO_ERR_BUSY] = "busy",
    [PROTO_ERR_TIMEOUT] = "timeout",	     [PROTO_ERR_TOO_LARGE] = "too_large",
    [PROTO_ERR_INTERNAL] = "internal",	     [PROTO_ERR_UNSUPPORTED] = "unsupported",
    [PROTO_ERR_UNAVAILABLE] = "unavailable",
};

#define NAME_OF(tab, i) ((i) < sizeof(tab) / sizeof(tab[0]) && (tab)[i] ? (tab)[i] : "?")

const char *proto_verdict_name(unsigned v)
{
	return NAME_OF(verdict_names, v);
}

const char *proto_type_name(unsigned type)
{
	return NAME_OF(type_names, type);
}

const char *proto_health_state_name(unsigned state)
{
	return NAME_OF(health_state_names, state);
}

const char *proto_health_role_name(unsigned role)
{
	return NAME_OF(role_names, role);
}

const char *proto_health_mode_name(unsigned mode)
{
	return NAME_OF(mode_names, mode);
}

const char *proto_fmt_name(unsigned fmt)
{
	return NAME_OF(fmt_names, fmt);
}

const char *proto_error_name(unsigned code)
{
	return NAME_OF(error_names, code);
}

unsigned proto_fmt_from_name(const char *name)
{
	for (unsigned i = 0; i < sizeof(fmt_names) / sizeof(fmt_names[0]); i++)
		if (fmt_names[i] && !strcmp(fmt_names[i], name))
			return i;
	return 0;
}
