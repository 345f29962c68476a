// SPDX-License-Identifier: MIT
/*
 * The XDP executor's loader: skeleton open -> configure .rodata -> load -> model upload (the
 * plan and the map's value are xdp_plan.c's), attach/detach, counters, BPF_PROG_TEST_RUN and
 * test frames (protocol/frame.h's framing).
 */
#include <errno.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include <bpf/bpf.h>
#include <bpf/libbpf.h>
#include <linux/if_link.h>

#include "kernels/kern.h"
#include "nicfw/xdp/xdp_infer.h"
#include "nicfw/xdp/xdp_plan.h"
#include "protocol/frame.h"
#include "protocol/proto.h"
#include "xdp_infer.skel.h"
#include "xdp_pass.skel.h"

struct xdp_infer {
	struct xdp_infer_bpf *skel;
	struct xdp_infer_plan plan;
};

static const char *const stat_names[XDP_INFER_ST__COUNT] = {
    [XDP_INFER_ST_ANSWERED] = "answered",
    [XDP_INFER_ST_OTHER] = "pass_other_traffic",
    [XDP_INFER_ST_IP_OPTS] = "pass_ip_options_or_fragment",
    [XDP_INFER_ST_NOT_REQUEST] = "pass_not_request",
    [XDP_INFER_ST_OTHER_MODEL] = "pass_other_model",
    [XDP_INFER_ST_FRAGMENT] = "pass_fragmented_message",
    [XDP_INFER_ST_BAD_SHAPE] = "error_bad_shape",
    [XDP_INFER_ST_TX_FAIL] = "pass_tx_resize_failed",
    [XDP_INFER_ST_INTERNAL] = "pass_internal_error",
    [XDP_INFER_ST_UNSERVED] = "pass_unserved_format",
    [XDP_INFER_ST_ERR_LIMITED] = "drop_error_rate_limited",
    [XDP_INFER_ST_LARGER] = "pass_reply_larger_than_request",
    [XDP_INFER_ST_HEALTH] = "health_answered",
    [XDP_INFER_ST_HEALTH_PASS] = "pass_health_not_mine",
    [XDP_INFER_ST_HEALTH_SHORT] = "drop_health_probe_short",
};

const char *xdp_infer_stat_name(unsigned st)
{
	static char buf[PROTO_VERDICT__COUNT][40];

	if (st >= XDP_INFER_ST__COUNT)
		return "?";
	if (st >= XDP_INFER_ST_MALFORMED) {
		unsigned v = st - XDP_INFER_ST_MALFORMED;

		if (!buf[v][0])
			snprintf(buf[v], sizeof(buf[v]), "drop_malformed_%s",
				 v ? proto_verdict_name(v) : "unknown");
		return buf[v];
	}
	return stat_names[st];
}

/* --- load ------------------------------------------------------------------------------- */

static int upload_model(struct xdp_infer *x, const struct model *m, char *err, size_t errlen)
{
	const struct xdp_infer_plan *p = &x->plan;
	uint64_t *val = calloc(p->cfg.model_words, sizeof(uint64_t));
	uint32_t key = 0;
	int ret;

	if (!val) {
		snprintf(err, errlen, "model %s: out of memory (%lu bytes)", m->name,
			 (unsigned long)p->model_bytes);
		return -ENOMEM;
	}
	ret = xdp_plan_fill(m, p, val, err, errlen);
	if (!ret) {
		ret = bpf_map_update_elem(bpf_map__fd(x->skel->maps.xdp_model), &key, val, 0);
		if (ret) {
			ret = -errno;
			snprintf(err, errlen, "model %s: uploading %lu bytes to xdp_model: %s",
				 m->name, (unsigned long)p->model_bytes, strerror(errno));
		}
	}
	free(val);
	return ret;
}

/* The tail of libbpf's messages (the verifier log on a failed load). */
static char libbpf_log[4096];

static int capture_print(enum libbpf_print_level level, const char *fmt, va_list ap)
{
	size_t have = strlen(libbpf_log), n, keep;
	char *line = NULL;
	const char *tail;
	va_list aq;
	int len;

	if (level == LIBBPF_DEBUG)
		return 0;
	va_copy(aq, ap);
	len = vsnprintf(NULL, 0, fmt, aq);
	va_end(aq);
	if (len < 0 || !(line = malloc((size_t)len + 1)))
		return 0;
	vsnprintf(line, (size_t)len + 1, fmt, ap);
	n = (size_t)len;
	tail = n >= sizeof(libbpf_log) ? line + n - (sizeof(libbpf_log) - 1) : line;
	n = strlen(tail);
	keep = sizeof(libbpf_log) - 1 - n < have ? sizeof(libbpf_log) - 1 - n : have;
	memmove(libbpf_log, libbpf_log + have - keep, keep);
	memcpy(libbpf_log + keep, tail, n + 1);
	free(line);
	return 0;
}

static void log_tail(char *err, size_t errlen, const char *what, int ret)
{
	const char *t = libbpf_log;
	size_t n = strlen(t);

	if (n > 1500)
		t += n - 1500;
	snprintf(err, errlen, "%s: %s%s%s", what, strerror(-ret), *t ? "; libbpf/verifier: " : "",
		 t);
}

struct xdp_infer *xdp_infer_load(const struct model *m, uint32_t port, uint32_t model_id, char *err,
				 size_t errlen)
{
	return xdp_infer_load_limited(m, port, model_id, 0, 0, err, errlen);
}

struct xdp_infer *xdp_infer_load_limited(const struct model *m, uint32_t port, uint32_t model_id,
					 uint32_t err_rate, uint32_t err_burst, char *err,
					 size_t errlen)
{
	struct xdp_infer *x = calloc(1, sizeof(*x));
	char ident[PROTO_HEALTH_IDENT_LEN + 1] = "";
	libbpf_print_fn_t old;
	int ret;

	if (!x) {
		snprintf(err, errlen, "out of memory");
		return NULL;
	}
	ret = xdp_infer_plan(m, &x->plan, err, errlen);
	if (ret)
		goto err_free;
	x->plan.cfg.port = port ? port : PROTO_DEFAULT_PORT;
	x->plan.cfg.model_id = model_id ? model_id : proto_model_id(m->name);
	x->plan.cfg.err_interval_ns = 1000000000u / (err_rate ? err_rate : PROTO_RL_RATE);
	x->plan.cfg.err_burst = err_burst ? err_burst : PROTO_RL_BURST;
	snprintf(ident, sizeof(ident), "splitnic-xdp %.*s", PROTO_HEALTH_IDENT_LEN - 13, m->name);
	memcpy(x->plan.cfg.ident, ident, sizeof(x->plan.cfg.ident));
	memcpy(x->plan.cfg.name, m->name, strnlen(m->name, sizeof(x->plan.cfg.name)));

	libbpf_log[0] = '\0';
	old = libbpf_set_print(capture_print);
	x->skel = xdp_infer_bpf__open();
	if (!x->skel) {
		ret = -errno;
		log_tail(err, errlen, "xdp: opening the BPF skeleton", ret);
		goto err_print;
	}
	memcpy((void *)&x->skel->rodata->cfg, &x->plan.cfg, sizeof(x->plan.cfg));
	ret = bpf_map__set_value_size(x->skel->maps.xdp_model, (uint32_t)x->plan.model_bytes);
	if (ret) {
		log_tail(err, errlen, "xdp: sizing xdp_model", ret);
		goto err_destroy;
	}
	ret = xdp_infer_bpf__load(x->skel);
	if (ret) {
		log_tail(err, errlen,
			 "xdp: loading the program (verifier limits: 1M processed instructions, "
			 "512-byte stack, 8 call frames)",
			 ret);
		goto err_destroy;
	}
	libbpf_set_print(old);
	ret = upload_model(x, m, err, errlen);
	if (ret)
		goto err_destroy_quiet;
	return x;

err_destroy:
	libbpf_set_print(old);
err_destroy_quiet:
	xdp_infer_bpf__destroy(x->skel);
	free(x);
	return NULL;
err_print:
	libbpf_set_print(old);
err_free:
	free(x);
	return NULL;
}

void xdp_infer_free(struct xdp_infer *x)
{
	if (!x)
		return;
	xdp_infer_bpf__destroy(x->skel);
	free(x);
}

const struct xdp_infer_plan *xdp_infer_get_plan(const struct xdp_infer *x)
{
	return &x->plan;
}

int xdp_infer_prog_fd(const struct xdp_infer *x)
{
	return bpf_program__fd(x->skel->progs.xdp_infer);
}

int xdp_infer_prog_size(const struct xdp_infer *x, uint32_t *verified, uint32_t *insns,
			uint32_t *jited_bytes)
{
	struct bpf_prog_info pi = {0};
	uint32_t len = sizeof(pi);

	if (bpf_obj_get_info_by_fd(xdp_infer_prog_fd(x), &pi, &len))
		return -errno;
	*verified = pi.verified_insns;
	*insns = pi.xlated_prog_len / 8;
	*jited_bytes = pi.jited_prog_len;
	return 0;
}

/* --- attach, detach --------------------------------------------------------------------- */

static uint32_t mode_flags(enum xdp_infer_mode mode)
{
	return mode == XDP_INFER_GENERIC ? XDP_FLAGS_SKB_MODE : XDP_FLAGS_DRV_MODE;
}

int xdp_infer_attach(struct xdp_infer *x, int ifindex, enum xdp_infer_mode mode)
{
	return bpf_xdp_attach(ifindex, xdp_infer_prog_fd(x), mode_flags(mode), NULL);
}

int xdp_infer_attach_pass(int ifindex, enum xdp_infer_mode mode)
{
	struct xdp_pass_bpf *skel = xdp_pass_bpf__open_and_load();
	int ret;

	if (!skel)
		return -errno;
	ret =
	    bpf_xdp_attach(ifindex, bpf_program__fd(skel->progs.xdp_pass), mode_flags(mode), NULL);
	xdp_pass_bpf__destroy(skel);
	return ret;
}

int xdp_infer_detach(int ifindex)
{
	LIBBPF_OPTS(bpf_xdp_query_opts, q);
	int ret = bpf_xdp_query(ifindex, 0, &q), r2 = 0;

	if (ret)
		return ret;
	if (q.drv_prog_id)
		ret = bpf_xdp_detach(ifindex, XDP_FLAGS_DRV_MODE, NULL);
	if (q.skb_prog_id)
		r2 = bpf_xdp_detach(ifindex, XDP_FLAGS_SKB_MODE, NULL);
	if (!q.drv_prog_id && !q.skb_prog_id && !q.hw_prog_id)
		return -ENOENT;
	return ret ? ret : r2;
}

/* --- counters --------------------------------------------------------------------------- */

static int sum_stats(int fd, uint64_t st[XDP_INFER_ST__COUNT])
{
	int ncpu = libbpf_num_possible_cpus();
	uint64_t *v;

	if (ncpu <= 0)
		return ncpu ? ncpu : -EINVAL;
	v = calloc((size_t)ncpu, sizeof(*v));
	if (!v)
		return -ENOMEM;
	for (uint32_t k = 0; k < XDP_INFER_ST__COUNT; k++) {
		st[k] = 0;
		if (bpf_map_lookup_elem(fd, &k, v)) {
			int ret = -errno;

			free(v);
			return ret;
		}
		for (int c = 0; c < ncpu; c++)
			st[k] += v[c];
	}
	free(v);
	return 0;
}

int xdp_infer_read_stats(const struct xdp_infer *x, uint64_t st[XDP_INFER_ST__COUNT])
{
	return sum_stats(bpf_map__fd(x->skel->maps.xdp_stats), st);
}

int xdp_infer_read_iface_stats(int ifindex, uint64_t st[XDP_INFER_ST__COUNT], char *err,
			       size_t errlen)
{
	LIBBPF_OPTS(bpf_xdp_query_opts, q);
	struct bpf_prog_info pi = {0};
	uint32_t ids[16], len = sizeof(pi), id;
	int ret, pfd, mfd = -1;

	ret = bpf_xdp_query(ifindex, 0, &q);
	if (ret) {
		snprintf(err, errlen, "querying XDP on ifindex %d: %s", ifindex, strerror(-ret));
		return ret;
	}
	id = q.drv_prog_id ? q.drv_prog_id : q.skb_prog_id;
	if (!id) {
		snprintf(err, errlen, "no XDP program attached");
		return -ENOENT;
	}
	pfd = bpf_prog_get_fd_by_id(id);
	if (pfd < 0) {
		snprintf(err, errlen, "program id %u: %s", id, strerror(errno));
		return -errno;
	}
	pi.nr_map_ids = 16;
	pi.map_ids = (uint64_t)(uintptr_t)ids;
	ret = bpf_obj_get_info_by_fd(pfd, &pi, &len);
	close(pfd);
	if (ret) {
		snprintf(err, errlen, "program id %u: info: %s", id, strerror(errno));
		return -errno;
	}
	for (uint32_t i = 0; i < pi.nr_map_ids && i < 16 && mfd < 0; i++) {
		struct bpf_map_info mi = {0};
		uint32_t mlen = sizeof(mi);
		int fd = bpf_map_get_fd_by_id(ids[i]);

		if (fd < 0)
			continue;
		if (!bpf_obj_get_info_by_fd(fd, &mi, &mlen) && !strcmp(mi.name, "xdp_stats") &&
		    mi.value_size == 8 && mi.max_entries == XDP_INFER_ST__COUNT)
			mfd = fd;
		else
			close(fd);
	}
	if (mfd < 0) {
		snprintf(err, errlen, "the XDP program (id %u) is not splitnic's xdp_infer", id);
		return -ENOENT;
	}
	ret = sum_stats(mfd, st);
	close(mfd);
	if (ret)
		snprintf(err, errlen, "reading xdp_stats: %s", strerror(-ret));
	return ret;
}

/* --- test runs and frames --------------------------------------------------------------- */

int xdp_infer_test_run(const struct xdp_infer *x, const void *frame, uint32_t len, void *out,
		       uint32_t *out_len, uint32_t repeat, uint32_t *verdict, uint32_t *ns_per_run)
{
	LIBBPF_OPTS(bpf_test_run_opts, o, .data_in = frame, .data_size_in = len, .data_out = out,
		    .data_size_out = *out_len, .repeat = repeat);
	int ret = bpf_prog_test_run_opts(xdp_infer_prog_fd(x), &o);

	if (ret)
		return -errno;
	*out_len = o.data_size_out;
	*verdict = o.retval;
	if (ns_per_run)
		*ns_per_run = o.duration;
	return 0;
}

/* The test frames' addresses: client 10.0.0.1:40000 (02:00:00:00:00:01) to the server
 * 10.0.0.2 (02:00:00:00:00:02) at the port asked. */
static const struct proto_addr test_addr = {
    .smac = {0x02, 0, 0, 0, 0, 0x01},
    .dmac = {0x02, 0, 0, 0, 0, 0x02},
    .sip = 0x0a000001u,
    .dip = 0x0a000002u,
    .sport = 40000u,
};

int xdp_infer_build_request(void *buf, size_t cap, uint32_t port, uint32_t model_id,
			    uint64_t request_id, uint32_t c, uint32_t h, uint32_t w,
			    const uint8_t *x)
{
	return xdp_infer_build_request_fmt(buf, cap, port, model_id, request_id, PROTO_FMT_U8, c, h,
					   w, x);
}

int xdp_infer_build_request_fmt(void *buf, size_t cap, uint32_t port, uint32_t model_id,
				uint64_t request_id, uint32_t fmt, uint32_t c, uint32_t h,
				uint32_t w, const void *x)
{
	return xdp_infer_build_request_hdr(buf, cap, port, model_id, request_id, fmt, c, h, w, x,
					   PROTO_REQUEST_HDR_LEN);
}

uint32_t xdp_infer_request_hdr_len(const struct xdp_infer *x, uint32_t fmt)
{
	const struct xdp_infer_cfg *c = &x->plan.cfg;
	uint64_t data = proto_fmt_bytes(fmt, c->in_n);
	uint64_t resp = XDP_INFER_RESP_HDR + 8ull * c->classes;
	uint64_t hl = resp > data ? (resp - data + 3) & ~3ull : 0;

	return hl < PROTO_REQUEST_HDR_LEN ? PROTO_REQUEST_HDR_LEN
	       : hl > PROTO_MAX_HDR_LEN	  ? PROTO_MAX_HDR_LEN
					  : (uint32_t)hl;
}

int xdp_infer_build_request_hdr(void *buf, size_t cap, uint32_t port, uint32_t model_id,
				uint64_t request_id, uint32_t fmt, uint32_t c, uint32_t h,
				uint32_t w, const void *x, uint32_t hdr_len)
{
	struct proto_addr a = test_addr;
	uint8_t *f = buf;
	struct proto_msg m;
	int n;

	if (cap < PROTO_FRAME_HDRS)
		return -ENOSPC;
	proto_msg_init(&m, PROTO_REQUEST, model_id, request_id);
	proto_msg_set_tensor(&m, (enum proto_fmt)fmt, c, h, w, 0, 0);
	m.hdr_len = (uint16_t)hdr_len;
	n = proto_build(&m, x, (size_t)proto_fmt_bytes(fmt, (uint64_t)c * h * w),
			f + PROTO_FRAME_HDRS, cap - PROTO_FRAME_HDRS);
	if (n < 0)
		return n;
	a.dport = (uint16_t)port;
	return (int)proto_frame_udp(f, &a, (uint32_t)n, false);
}

#define BAD(...)                                                                                   \
	do {                                                                                       \
		snprintf(err, errlen, __VA_ARGS__);                                                \
		return -EBADMSG;                                                                   \
	} while (0)

/* The checks every reply to a test frame passes; the splitnic message parsed into m. */
static int parse_reply(const void *frame, uint32_t len, uint64_t request_id, struct proto_msg *m,
		       char *err, size_t errlen)
{
	const uint8_t *p;
	struct proto_addr a;
	uint32_t plen, ihl;
	enum proto_verdict v;

	if (proto_frame_parse(frame, len, &a, &p, &plen, &ihl) != PROTO_FRAME_UDP)
		BAD("response frame of %u bytes is not a consistent IPv4/UDP frame", len);
	if (memcmp(a.dmac, test_addr.smac, 6) || memcmp(a.smac, test_addr.dmac, 6))
		BAD("MAC addresses not swapped");
	if (a.sip != test_addr.dip || a.dip != test_addr.sip)
		BAD("IP addresses not swapped");
	if (ihl != PROTO_IP_HLEN || PROTO_FRAME_HDRS + plen != len)
		BAD("IPv4 header or UDP length wrong for a frame of %u bytes", len);
	if (!a.sport || a.dport != test_addr.sport)
		BAD("UDP ports wrong");
	if (!proto_frame_csum_ok(frame, ihl))
		BAD("bad IPv4 header or UDP checksum");
	v = proto_parse(p, plen, m);
	if (v != PROTO_OK)
		BAD("reply rejected by the parser: %s", proto_verdict_name(v));
	if (m->request_id != request_id)
		BAD("request id %llx (expected %llx)", (unsigned long long)m->request_id,
		    (unsigned long long)request_id);
	return 0;
}

int xdp_infer_parse_error(const void *frame, uint32_t len, uint64_t request_id, uint32_t *code,
			  char *err, size_t errlen)
{
	struct proto_msg m;
	int ret = parse_reply(frame, len, request_id, &m, err, errlen);

	if (ret)
		return ret;
	if (m.type != PROTO_ERROR)
		BAD("type %u (expected an ERROR)", m.type);
	*code = m.err.code;
	return 0;
}

int xdp_infer_parse_response(const void *frame, uint32_t len, uint64_t request_id, uint32_t *cls,
			     double *scores, uint32_t max_classes, char *err, size_t errlen)
{
	struct proto_msg m;
	int ret = parse_reply(frame, len, request_id, &m, err, errlen);

	if (ret)
		return ret;
	if (m.type != PROTO_RESPONSE)
		BAD("type %u (expected a RESPONSE)", m.type);
	if (m.resp.score_fmt != PROTO_FMT_F64 || !(m.resp.executors & PROTO_EX_XDP))
		BAD("score_fmt %u executors 0x%x", m.resp.score_fmt, m.resp.executors);
	if (m.resp.num_classes > max_classes || m.frag_len != m.total_len)
		BAD("%u classes", m.resp.num_classes);
	*cls = m.resp.cls;
	for (uint32_t k = 0; k < m.resp.num_classes; k++)
		scores[k] = proto_le_get_f64(m.data + 8 * k);
	return (int)m.resp.num_classes;
}
