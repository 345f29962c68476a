// SPDX-License-Identifier: MIT
/*
 * The XDP executor's loader: budget check, skeleton open -> configure .rodata -> load ->
 * model upload, attach/detach, counters, BPF_PROG_TEST_RUN and test frames.
 */
#include <errno.h>
#include <float.h>
#include <math.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include <bpf/bpf.h>
#include <bpf/libbpf.h>
#include <linux/if_ether.h>
#include <linux/if_link.h>
#include <linux/ip.h>
#include <linux/udp.h>

#include "kernels/kern.h"
#include "kernels/kern_ops.h"
#include "nicfw/xdp/xdp_infer.h"
#include "protocol/proto.h"
#include "xdp_infer.skel.h"
#include "xdp_pass.skel.h"

#define L2L3L4 (sizeof(struct ethhdr) + sizeof(struct iphdr) + sizeof(struct udphdr))

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
    [XDP_INFER_ST_NOT_ALLOWED] = "drop_not_allowed",
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

/* --- budget check ----------------------------------------------------------------------- */

static bool trailing_op_ok(uint32_t op)
{
	switch (op) {
	case MODEL_OP_BIAS:
	case MODEL_OP_BATCHNORM:
	case MODEL_OP_RELU:
	case MODEL_OP_SIGN:
	case MODEL_OP_THRESHOLD:
	case MODEL_OP_UNPACK:
	case MODEL_OP_FLATTEN:
		return true;
	}
	return false;
}

static bool is_flat(const struct model_shape *s)
{
	return s->h == 1 && s->w == 1;
}

#define REFUSE(code, ...)                                                                          \
	do {                                                                                       \
		snprintf(err, errlen, __VA_ARGS__);                                                \
		return -(code);                                                                    \
	} while (0)

/*
 * f32 input: the ops before the first binary dense must binarize each input feature on its own:
 * CAST [FLATTEN] [BIAS|BATCHNORM]* SIGN|THRESHOLD [FLATTEN]. f32 requests are served when the
 * input fits one packet as f32; bits requests when the prefix is a plain sign (the front end's
 * bits are then exactly sign(x)). *next is the op after the prefix.
 */
static int plan_f32_prefix(const struct model *m, struct xdp_infer_plan *p, uint32_t *next,
			   char *err, size_t errlen)
{
	struct xdp_infer_cfg *c = &p->cfg;
	uint64_t in_n = model_shape_elems(&m->input);
	bool plain = true;
	uint32_t i = 0;

	if (m->n_layers == 0 || m->layers[0].op != MODEL_OP_CAST)
		REFUSE(EOPNOTSUPP, "model %s: f32 input: op 0 (%s) is not a cast", m->name,
		       m->n_layers ? model_op_name(m->layers[0].op) : "none");
	for (i = 1; i < m->n_layers; i++) {
		uint32_t op = m->layers[i].op;

		if (op == MODEL_OP_FLATTEN)
			continue;
		if (op != MODEL_OP_BIAS && op != MODEL_OP_BATCHNORM)
			break;
		plain = false;
	}
	if (i >= m->n_layers ||
	    (m->layers[i].op != MODEL_OP_SIGN && m->layers[i].op != MODEL_OP_THRESHOLD))
		REFUSE(EOPNOTSUPP,
		       "model %s: f32 input: op %u (%s): the XDP executor serves f32 models only "
		       "when the input is binarized first (cast [flatten] [bias|batchnorm]* "
		       "sign|threshold, then binary dense layers)",
		       m->name, i, i < m->n_layers ? model_op_name(m->layers[i].op) : "none");
	if (m->layers[i].op == MODEL_OP_THRESHOLD)
		plain = false;
	p->sign_op = i++;
	if (i < m->n_layers && m->layers[i].op == MODEL_OP_FLATTEN)
		i++;
	if (i < m->n_layers && !is_flat(&m->layers[i].in))
		REFUSE(EOPNOTSUPP, "model %s: f32 input: op %u (%s) does not take a flat vector",
		       m->name, i, model_op_name(m->layers[i].op));
	c->in_kind = XDP_INFER_IN_F32;
	c->in_f32 = in_n <= XDP_INFER_MAX_F32_INPUT;
	c->in_bits = plain && in_n <= XDP_INFER_MAX_BITS_INPUT;
	if (!c->in_f32 && !c->in_bits) {
		if (plain || in_n > XDP_INFER_MAX_BITS_INPUT)
			REFUSE(E2BIG,
			       "model %s: input of %lu features exceeds one packet's input as f32 "
			       "(XDP_INFER_MAX_F32_INPUT = %u) and as bits "
			       "(XDP_INFER_MAX_BITS_INPUT = %u)",
			       m->name, (unsigned long)in_n, XDP_INFER_MAX_F32_INPUT,
			       XDP_INFER_MAX_BITS_INPUT);
		REFUSE(E2BIG,
		       "model %s: input of %lu f32 features exceeds one packet's input "
		       "(XDP_INFER_MAX_F32_INPUT = %u; bits requests, up to "
		       "XDP_INFER_MAX_BITS_INPUT = %u, need a plain sign on the input)",
		       m->name, (unsigned long)in_n, XDP_INFER_MAX_F32_INPUT,
		       XDP_INFER_MAX_BITS_INPUT);
	}
	*next = i;
	return 0;
}

int xdp_infer_plan(const struct model *m, struct xdp_infer_plan *p, char *err, size_t errlen)
{
	struct xdp_infer_cfg *c = &p->cfg;
	uint64_t words = 0, thr_words = 0, feat_words, in_n;
	uint32_t i = 0, nb = 0;
	bool closed = false, f32;
	int ret;

	memset(p, 0, sizeof(*p));
	in_n = model_shape_elems(&m->input);
	if (m->input.fmt == MODEL_FMT_F32) {
		ret = plan_f32_prefix(m, p, &i, err, errlen);
		if (ret)
			return ret;
	} else if (m->input.fmt != MODEL_FMT_U8) {
		REFUSE(EOPNOTSUPP, "model %s: input %s: the XDP executor serves u8 and f32 models",
		       m->name, model_fmt_name(m->input.fmt));
	} else {
		if (in_n > XDP_INFER_MAX_INPUT)
			REFUSE(E2BIG,
			       "model %s: input of %lu u8 elements exceeds one packet's input "
			       "(XDP_INFER_MAX_INPUT = %u bytes: MTU %u - IPv4 - UDP - REQUEST "
			       "header)",
			       m->name, (unsigned long)in_n, XDP_INFER_MAX_INPUT, XDP_INFER_MTU);
		if (i < m->n_layers && m->layers[i].op == MODEL_OP_FLATTEN &&
		    m->layers[i].in.fmt == MODEL_FMT_U8)
			i++;
	}
	f32 = c->in_kind == XDP_INFER_IN_F32;
	for (; i < m->n_layers; i++) {
		const struct model_layer *l = &m->layers[i];
		struct xdp_infer_layer *xl;
		uint64_t n = model_shape_elems(&l->in), out = model_shape_elems(&l->out);
		bool thr = l->flags & MODEL_LF_THRESH;

		if (l->op == MODEL_OP_FLATTEN && is_flat(&l->in) && !closed)
			continue;
		if (l->op != MODEL_OP_BDENSE_U8 && l->op != MODEL_OP_BDENSE)
			break;
		if (closed)
			REFUSE(
			    EOPNOTSUPP,
			    "model %s: op %u (%s) follows a binary dense without thresholds: "
			    "the XDP executor needs thresholds on every binary layer but the last",
			    m->name, i, model_op_name(l->op));
		if (!f32 && (nb == 0) != (l->op == MODEL_OP_BDENSE_U8))
			REFUSE(EOPNOTSUPP,
			       "model %s: op %u (%s): the XDP executor runs bdense_u8 first, then "
			       "bdense layers only",
			       m->name, i, model_op_name(l->op));
		if (f32 && l->op != MODEL_OP_BDENSE)
			REFUSE(EOPNOTSUPP,
			       "model %s: op %u (%s): on binarized f32 input the XDP executor runs "
			       "bdense layers only",
			       m->name, i, model_op_name(l->op));
		if (f32 && nb == 0 && (n != in_n || l->in.fmt != MODEL_FMT_BITS))
			REFUSE(EOPNOTSUPP,
			       "model %s: op %u (%s): takes %lu inputs, not the %lu binarized "
			       "input features",
			       m->name, i, model_op_name(l->op), (unsigned long)n,
			       (unsigned long)in_n);
		if (nb >= XDP_INFER_MAX_LAYERS)
			REFUSE(E2BIG, "model %s: more than XDP_INFER_MAX_LAYERS = %u binary layers",
			       m->name, XDP_INFER_MAX_LAYERS);
		if (l->op == MODEL_OP_BDENSE && !(f32 && nb == 0) && n > XDP_INFER_MAX_WIDTH)
			REFUSE(E2BIG, "model %s: op %u: %lu inputs exceed XDP_INFER_MAX_WIDTH = %u",
			       m->name, i, (unsigned long)n, XDP_INFER_MAX_WIDTH);
		if (thr && out > XDP_INFER_MAX_WIDTH)
			REFUSE(E2BIG,
			       "model %s: op %u: %lu neurons exceed XDP_INFER_MAX_WIDTH = %u",
			       m->name, i, (unsigned long)out, XDP_INFER_MAX_WIDTH);
		xl = &c->l[nb];
		xl->kind = l->op == MODEL_OP_BDENSE_U8 ? XDP_INFER_L_U8
			   : f32 && nb == 0	       ? XDP_INFER_L_IN
						       : XDP_INFER_L_BITS;
		xl->n = (uint32_t)n;
		xl->nw = model_words(n);
		xl->out = (uint32_t)out;
		xl->w_off = (uint32_t)words;
		xl->t_off = thr ? 0 : XDP_INFER_NO_THRESH;
		words += out * xl->nw;
		thr_words += thr ? out : 0;
		if (nb == 0)
			p->first_bin = i;
		p->last_bin = i;
		closed = !thr;
		nb++;
	}
	if (nb == 0)
		REFUSE(EOPNOTSUPP, "model %s: no %s layer on the %s input (op %u is %s)", m->name,
		       f32 ? "bdense" : "bdense_u8", f32 ? "binarized f32" : "u8", i,
		       i < m->n_layers ? model_op_name(m->layers[i].op) : "none");
	c->classes = (uint32_t)model_shape_elems(&m->layers[p->last_bin].out);
	for (; i < m->n_layers; i++) {
		const struct model_layer *l = &m->layers[i];

		if (!trailing_op_ok(l->op) || model_shape_elems(&l->in) != c->classes ||
		    model_shape_elems(&l->out) != c->classes)
			REFUSE(
			    EOPNOTSUPP,
			    "model %s: op %u (%s) after the last binary dense is not an "
			    "element-wise op on the %u class scores (bias, batchnorm, relu, sign, "
			    "threshold, unpack)",
			    m->name, i, model_op_name(l->op), c->classes);
	}
	if (c->classes > XDP_INFER_MAX_CLASSES)
		REFUSE(E2BIG, "model %s: %u classes exceed XDP_INFER_MAX_CLASSES = %u", m->name,
		       c->classes, XDP_INFER_MAX_CLASSES);
	if (closed) {
		const struct xdp_infer_layer *xl = &c->l[nb - 1];

		c->range = xl->kind == XDP_INFER_L_U8 ? 255u * xl->n : xl->n;
		c->span = 2 * c->range + 1;
	} else {
		c->range = 0;
		c->span = 2;
	}
	p->table_entries = (uint64_t)c->classes * c->span;
	if (p->table_entries > XDP_INFER_MAX_TABLE)
		REFUSE(E2BIG,
		       "model %s: score table of %u classes x %u values = %lu entries exceeds "
		       "XDP_INFER_MAX_TABLE = %u (the final dot's range is too wide)",
		       m->name, c->classes, c->span, (unsigned long)p->table_entries,
		       XDP_INFER_MAX_TABLE);
	for (uint32_t k = 0, t = (uint32_t)words; k < nb; k++) {
		if (c->l[k].t_off != XDP_INFER_NO_THRESH) {
			c->l[k].t_off = t;
			t += c->l[k].out;
		}
	}
	feat_words = f32 && c->in_f32 ? in_n : 0;
	c->f_off = (uint32_t)(words + thr_words);
	c->tab_off = (uint32_t)(words + thr_words + feat_words);
	words += thr_words + feat_words + p->table_entries + XDP_INFER_PAD_WORDS;
	p->model_bytes = words * 8;
	if (p->model_bytes > XDP_INFER_MAX_MODEL)
		REFUSE(E2BIG,
		       "model %s: %lu bytes of weights, thresholds and score table exceed the "
		       "map value limit XDP_INFER_MAX_MODEL = %u bytes",
		       m->name, (unsigned long)p->model_bytes, XDP_INFER_MAX_MODEL);
	c->n_layers = nb;
	c->in_c = m->input.c;
	c->in_h = m->input.h;
	c->in_w = m->input.w;
	c->in_n = (uint32_t)in_n;
	c->in_words = model_words(in_n);
	c->model_words = (uint32_t)words;
	c->in_tail = (uint32_t)(in_n % 64);
	c->row_limit = (uint32_t)(words - XDP_INFER_PAD_WORDS);
	/* rough count of BPF instructions run per inference (for the offload discussion) */
	p->ops_estimate = 200 + 60 * c->classes +
			  (f32 ? (c->in_f32 ? 45 * in_n : (uint64_t)c->in_words * 2)
			       : (uint64_t)c->in_words * 420);
	for (uint32_t k = 0; k < nb; k++)
		p->ops_estimate +=
		    (uint64_t)c->l[k].out *
		    (40 + (uint64_t)c->l[k].nw * (c->l[k].kind == XDP_INFER_L_U8 ? 105 : 18));
	return 0;
}

/* --- score table ------------------------------------------------------------------------ */

/* Scores of every class for every final value v, by the CPU kernels' trailing ops. */
static int build_table(const struct model *m, const struct xdp_infer_plan *p, uint64_t *tab,
		       char *err, size_t errlen)
{
	const struct xdp_infer_cfg *c = &p->cfg;
	const uint32_t first = p->last_bin + 1, last = m->n_layers, batch = 256;
	const bool bits = c->range == 0;
	const uint32_t nwc = model_words(c->classes);
	struct kern_ctx *ctx = NULL;
	const struct model_shape *os = NULL;
	size_t in_bytes, out_bytes;
	void *in = NULL, *out = NULL;
	double *sc = NULL;
	int ret = -ENOMEM;

	if (first < last) {
		ctx = kern_ctx_create(m, batch);
		os = &m->layers[last - 1].out;
	}
	in_bytes = (size_t)batch * (bits ? nwc * 8u : c->classes * 8u);
	out_bytes = (size_t)batch * (c->classes * 8u + nwc * 8u);
	in = calloc(1, in_bytes);
	out = calloc(1, out_bytes);
	sc = calloc((size_t)batch * c->classes, sizeof(double));
	if ((first < last && !ctx) || !in || !out || !sc) {
		snprintf(err, errlen, "model %s: out of memory for the score table", m->name);
		goto out_free;
	}
	for (uint64_t v0 = 0; v0 < c->span; v0 += batch) {
		uint32_t nb = (uint32_t)(c->span - v0 < batch ? c->span - v0 : batch);

		for (uint32_t b = 0; b < nb; b++) {
			int64_t v = (int64_t)(v0 + b) - c->range;

			for (uint32_t k = 0; k < c->classes; k++) {
				if (bits) {
					uint64_t *w = (uint64_t *)in + (size_t)b * nwc;

					if (k % 64 == 0)
						w[k / 64] = 0;
					w[k / 64] |= (uint64_t)v << (k % 64);
				} else {
					((double *)in)[(size_t)b * c->classes + k] = (double)v;
				}
			}
		}
		if (ctx) {
			ret = kern_forward_range(ctx, first, last, in, nb, out);
			if (ret) {
				snprintf(err, errlen, "model %s: trailing ops failed (%d)", m->name,
					 ret);
				goto out_free;
			}
			if (os->fmt == MODEL_FMT_BITS)
				kern_unpack_bits(out, nb, os->c, os->h, os->w, sc);
			else
				memcpy(sc, out, (size_t)nb * c->classes * sizeof(double));
		} else if (bits) {
			kern_unpack_bits(in, nb, c->classes, 1, 1, sc);
		} else {
			memcpy(sc, in, (size_t)nb * c->classes * sizeof(double));
		}
		for (uint32_t b = 0; b < nb; b++) {
			for (uint32_t k = 0; k < c->classes; k++) {
				double d = sc[(size_t)b * c->classes + k];

				if (isnan(d)) {
					snprintf(err, errlen,
						 "model %s: class %u score is NaN for final value "
						 "%ld: arg-max by integer keys would differ",
						 m->name, k, (long)(v0 + b) - (long)c->range);
					ret = -EDOM;
					goto out_free;
				}
				memcpy(&tab[(size_t)k * c->span + v0 + b], &d, 8);
			}
		}
	}
	ret = 0;
out_free:
	free(sc);
	free(out);
	free(in);
	kern_ctx_free(ctx);
	return ret;
}

/* --- per-feature thresholds (f32 input) --------------------------------------------------- */

static uint32_t f32_key(uint32_t b)
{
	return b ^ (b >> 31 ? 0xffffffffu : 0x80000000u);
}

static uint32_t f32_from_key(uint32_t k)
{
	return k >> 31 ? k ^ 0x80000000u : ~k;
}

enum { FP_LO, FP_HI, FP_NAN_P, FP_NAN_N, FP_INF_P, FP_INF_N, FP__COUNT };

/*
 * The word of every input feature (xdp_infer.h): the CPU kernels' own prefix (ops
 * [0, first_bin): cast, the bias/batch-norm chain, sign or threshold, flatten) run on float32
 * values. Every op of the chain rounds monotonically and a sign or threshold is monotone, so on
 * finite x the bit changes at most once, at a key found by bisection over float32 bit patterns,
 * all features at once (one image per step, feature i at its own midpoint). That holds unless an
 * overflow to infinity meets a zero gamma (inf * 0 = NaN for large finite x), which shows as a
 * NaN before the sign at +-FLT_MAX: refused. NaN (either sign) and +-inf take the bits the
 * kernels give them.
 */
static int build_features(const struct model *m, const struct xdp_infer_plan *p, uint64_t *fw,
			  char *err, size_t errlen)
{
	const struct xdp_infer_cfg *c = &p->cfg;
	const uint32_t n = c->in_n, nw = c->in_words;
	static const uint32_t special[FP__COUNT] = {0xff7fffffu, 0x7f7fffffu, 0x7fc00000u,
						    0xffc00000u, 0x7f800000u, 0xff800000u};
	struct kern_ctx *ctx = kern_ctx_create(m, FP__COUNT);
	uint32_t *img = calloc((size_t)FP__COUNT * n, 4), *lo = calloc(n, 4), *hi = calloc(n, 4);
	uint64_t *bits = calloc((size_t)FP__COUNT * nw, 8);
	uint8_t *glo = calloc(n, 1);
	double *val = calloc((size_t)FP__COUNT * n, sizeof(double));
	int ret = -ENOMEM;
	bool more;

	if (!ctx || !img || !lo || !hi || !bits || !glo || !val) {
		snprintf(err, errlen, "model %s: out of memory for the feature thresholds",
			 m->name);
		goto out;
	}
	for (uint32_t k = 0; k < FP__COUNT; k++)
		for (uint32_t i = 0; i < n; i++)
			img[(size_t)k * n + i] = special[k];
	ret = kern_forward_range(ctx, 0, p->sign_op, img, FP__COUNT, val);
	if (!ret)
		ret = kern_forward_range(ctx, 0, p->first_bin, img, FP__COUNT, bits);
	if (ret) {
		snprintf(err, errlen, "model %s: input prefix failed (%d)", m->name, ret);
		goto out;
	}
	for (uint32_t i = 0; i < n; i++) {
		if (isnan(val[i]) || isnan(val[n + i])) {
			snprintf(err, errlen,
				 "model %s: input feature %u: the chain before the sign is NaN at "
				 "%sFLT_MAX (an overflow to infinity times a zero gamma): the "
				 "decision is not one threshold on the input",
				 m->name, i, isnan(val[i]) ? "-" : "+");
			ret = -EDOM;
			goto out;
		}
	}
#define BIT(k, i) ((uint32_t)(bits[(size_t)(k)*nw + (i) / 64] >> ((i) % 64)) & 1u)
	for (uint32_t i = 0; i < n; i++) {
		fw[i] = (uint64_t)BIT(FP_NAN_P, i) << XDP_INFER_FW_NAN_P |
			(uint64_t)BIT(FP_NAN_N, i) << XDP_INFER_FW_NAN_N |
			(uint64_t)BIT(FP_INF_P, i) << XDP_INFER_FW_INF_P |
			(uint64_t)BIT(FP_INF_N, i) << XDP_INFER_FW_INF_N;
		glo[i] = (uint8_t)BIT(FP_LO, i);
		if (BIT(FP_LO, i) == BIT(FP_HI, i)) { /* constant: key >= 0 always holds */
			fw[i] |= (uint64_t)!glo[i] << XDP_INFER_FW_FLIP;
			lo[i] = hi[i] = 0;
		} else {
			lo[i] = f32_key(special[FP_LO]);
			hi[i] = f32_key(special[FP_HI]);
		}
	}
	/* Bisect keeping bit(lo) == bit(-FLT_MAX) and bit(hi) == bit(+FLT_MAX) != bit(lo). */
	do {
		more = false;
		for (uint32_t i = 0; i < n; i++)
			img[i] = f32_from_key(lo[i] + (hi[i] - lo[i]) / 2);
		ret = kern_forward_range(ctx, 0, p->first_bin, img, 1, bits);
		if (ret) {
			snprintf(err, errlen, "model %s: input prefix failed (%d)", m->name, ret);
			goto out;
		}
		for (uint32_t i = 0; i < n; i++) {
			uint32_t mid = lo[i] + (hi[i] - lo[i]) / 2;

			if (hi[i] - lo[i] <= 1)
				continue;
			if (BIT(0, i) == glo[i])
				lo[i] = mid;
			else
				hi[i] = mid;
			more |= hi[i] - lo[i] > 1;
		}
	} while (more);
	for (uint32_t i = 0; i < n; i++)
		if (hi[i] != lo[i]) /* first key with bit !glo: bit = (key >= hi) ^ glo */
			fw[i] |= hi[i] | (uint64_t)glo[i] << XDP_INFER_FW_FLIP;
#undef BIT
	ret = 0;
out:
	free(val);
	free(glo);
	free(bits);
	free(hi);
	free(lo);
	free(img);
	kern_ctx_free(ctx);
	return ret;
}

static int upload_model(struct xdp_infer *x, const struct model *m, char *err, size_t errlen)
{
	const struct xdp_infer_plan *p = &x->plan;
	const struct xdp_infer_cfg *c = &p->cfg;
	uint64_t *val = calloc(c->model_words, sizeof(uint64_t));
	uint32_t key = 0, k = 0;
	int ret;

	if (!val) {
		snprintf(err, errlen, "model %s: out of memory (%lu bytes)", m->name,
			 (unsigned long)p->model_bytes);
		return -ENOMEM;
	}
	for (uint32_t i = p->first_bin; i <= p->last_bin; i++) {
		const struct model_layer *l = &m->layers[i];
		const struct xdp_infer_layer *xl = &c->l[k];

		if (l->op != MODEL_OP_BDENSE && l->op != MODEL_OP_BDENSE_U8)
			continue;
		memcpy(val + xl->w_off, l->blob[0], (size_t)xl->out * xl->nw * 8);
		if (xl->t_off != XDP_INFER_NO_THRESH) {
			const int32_t *thr = l->blob[1];
			const uint8_t *flip = l->blob[2];

			for (uint32_t o = 0; o < xl->out; o++)
				val[xl->t_off + o] =
				    (uint64_t)(uint32_t)thr[o] | (uint64_t)(flip[o] & 1) << 32;
		}
		k++;
	}
	ret = c->in_f32 ? build_features(m, p, val + c->f_off, err, errlen) : 0;
	if (!ret)
		ret = build_table(m, p, val + c->tab_off, err, errlen);
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

/* --- load ------------------------------------------------------------------------------- */

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
	struct proto_trust_cfg trust = {0};

	proto_trust_set_rate(&trust, PROTO_TRUST_RATE, PROTO_TRUST_BURST);
	return xdp_infer_load_trust(m, port, model_id, &trust, err, errlen);
}

struct xdp_infer *xdp_infer_load_trust(const struct model *m, uint32_t port, uint32_t model_id,
				       const struct proto_trust_cfg *trust, char *err,
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
	x->plan.cfg.trust = *trust;
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

static uint16_t csum16(const uint8_t *p, size_t n, uint32_t sum)
{
	for (size_t i = 0; i + 1 < n; i += 2)
		sum += (uint32_t)p[i] << 8 | p[i + 1];
	if (n & 1)
		sum += (uint32_t)p[n - 1] << 8;
	while (sum >> 16)
		sum = (sum & 0xffff) + (sum >> 16);
	return (uint16_t)~sum;
}

static const uint8_t mac_client[ETH_ALEN] = {0x02, 0, 0, 0, 0, 0x01};
static const uint8_t mac_server[ETH_ALEN] = {0x02, 0, 0, 0, 0, 0x02};
#define IP_CLIENT   0x0a000001u /* 10.0.0.1 */
#define IP_SERVER   0x0a000002u /* 10.0.0.2 */
#define PORT_CLIENT 40000u

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
	uint8_t *f = buf, *ip = f + 14, *udp = ip + 20;
	struct proto_msg m;
	int n;

	if (cap < L2L3L4)
		return -ENOSPC;
	proto_msg_init(&m, PROTO_REQUEST, model_id, request_id);
	proto_msg_set_tensor(&m, (enum proto_fmt)fmt, c, h, w, 0, 0);
	m.hdr_len = (uint16_t)hdr_len;
	n = proto_build(&m, x, (size_t)proto_fmt_bytes(fmt, (uint64_t)c * h * w), udp + 8,
			cap - L2L3L4);
	if (n < 0)
		return n;
	memcpy(f, mac_server, ETH_ALEN);
	memcpy(f + 6, mac_client, ETH_ALEN);
	proto_put16(f + 12, ETH_P_IP);
	memset(ip, 0, 20);
	ip[0] = 0x45;
	proto_put16(ip + 2, (uint16_t)(20 + 8 + n));
	proto_put16(ip + 4, 0x1234);
	ip[8] = 64;
	ip[9] = 17;
	proto_put32(ip + 12, IP_CLIENT);
	proto_put32(ip + 16, IP_SERVER);
	proto_put16(ip + 10, csum16(ip, 20, 0));
	proto_put16(udp, PORT_CLIENT);
	proto_put16(udp + 2, (uint16_t)port);
	proto_put16(udp + 4, (uint16_t)(8 + n));
	proto_put16(udp + 6, 0);
	return (int)L2L3L4 + n;
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
	const uint8_t *f = frame, *ip = f + 14, *udp = ip + 20;
	uint32_t ulen, sum;
	enum proto_verdict v;

	if (len < L2L3L4)
		BAD("response frame of %u bytes is shorter than its headers", len);
	if (memcmp(f, mac_client, ETH_ALEN) || memcmp(f + 6, mac_server, ETH_ALEN))
		BAD("MAC addresses not swapped");
	if (proto_get16(f + 12) != ETH_P_IP || ip[0] != 0x45 || ip[9] != 17)
		BAD("not IPv4/UDP");
	if (proto_get32(ip + 12) != IP_SERVER || proto_get32(ip + 16) != IP_CLIENT)
		BAD("IP addresses not swapped");
	if (csum16(ip, 20, 0) != 0)
		BAD("bad IPv4 header checksum");
	if (proto_get16(ip + 2) != len - 14)
		BAD("IPv4 total length %u for a frame of %u bytes", proto_get16(ip + 2), len);
	ulen = proto_get16(udp + 4);
	if (ulen != len - 34 || proto_get16(udp) == 0 || proto_get16(udp + 2) != PORT_CLIENT)
		BAD("UDP length or ports wrong");
	if (proto_get16(udp + 6) != 0) {
		sum = (IP_SERVER >> 16) + (IP_SERVER & 0xffff) + (IP_CLIENT >> 16) +
		      (IP_CLIENT & 0xffff) + 17 + ulen;
		if (csum16(udp, ulen, sum) != 0)
			BAD("bad UDP checksum");
	}
	v = proto_parse(udp + 8, ulen - 8, m);
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
