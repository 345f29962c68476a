// SPDX-License-Identifier: MIT
/*
 * The XDP loader's planner: which models the program serves (the NIC capability rule of
 * exec/kexec.h with the options the program has, then its own limits), and the xdp_model map's
 * value (weights, thresholds, per-feature thresholds, score table) for a plan.
 */
#include <errno.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "exec/kexec.h"
#include "kernels/kern.h"
#include "kernels/kern_ops.h"
#include "nicfw/xdp/xdp_plan.h"

/* --- budget check ----------------------------------------------------------------------- */

#define REFUSE(code, ...)                                                                          \
	do {                                                                                       \
		snprintf(err, errlen, __VA_ARGS__);                                                \
		return -(code);                                                                    \
	} while (0)

/*
 * What the program computes beyond the executor chain, tabulated at load: a threshold per input
 * feature (an f32 input binarized feature by feature) and the class scores of every final value
 * (any element-wise tail).
 */
static const struct kexec_nic_rule xdp_rule = {.f32_prefix = true, .any_tail = true};

#define XDP_SERVED                                                                                 \
	"whole models [cast [flatten] [bias|batchnorm]* sign|threshold] [flatten] "                \
	"bdense_u8|bdense bdense* [element-wise ops on the class scores], every binary dense but " \
	"the last thresholded (exec/kexec.h's NIC rule with an f32 prefix and any element-wise "   \
	"tail)"

/* The rule's run is not the whole model: name the op it cannot take. */
static int refuse_ops(const struct model *m, const struct kexec_nic_run *run, char *err,
		      size_t errlen)
{
	const uint32_t k = run->stop, n = m->n_layers;
	const char *op = k < n ? model_op_name(m->layers[k].op) : "none";

	if (run->first < n)
		REFUSE(EOPNOTSUPP,
		       "model %s: op %u (%s) comes before the binary dense layers the XDP executor "
		       "can run (ops %u..%u) and is not one it runs: it serves " XDP_SERVED,
		       m->name, k, op, run->first, n - 1);
	REFUSE(EOPNOTSUPP,
	       "model %s: op %u (%s): the XDP executor needs a binary dense layer there, then only "
	       "element-wise ops on the class scores: it serves " XDP_SERVED,
	       m->name, k, op);
}

/*
 * f32 input, binarized by the prefix: f32 requests are served when the input fits one packet as
 * f32; bits requests when the prefix is a plain sign (the front end's bits are then exactly
 * sign(x)).
 */
static int plan_f32_input(const struct model *m, struct xdp_infer_plan *p, uint64_t in_n, char *err,
			  size_t errlen)
{
	struct xdp_infer_cfg *c = &p->cfg;
	bool plain = m->layers[p->sign_op].op == MODEL_OP_SIGN;

	for (uint32_t i = 1; i < p->sign_op; i++)
		plain = plain && m->layers[i].op == MODEL_OP_FLATTEN;
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
	return 0;
}

int xdp_infer_plan(const struct model *m, struct xdp_infer_plan *p, char *err, size_t errlen)
{
	struct xdp_infer_cfg *c = &p->cfg;
	const uint64_t in_n = model_shape_elems(&m->input);
	const bool f32 = m->input.fmt == MODEL_FMT_F32;
	uint64_t words = 0, thr_words = 0, feat_words;
	struct kexec_nic_run run;
	uint32_t nb = 0;
	bool closed;
	int ret;

	memset(p, 0, sizeof(*p));
	kexec_nic_find(m, &xdp_rule, &run);
	if (run.first != 0 || run.bin_last == m->n_layers)
		return refuse_ops(m, &run, err, errlen);
	if (f32) {
		p->sign_op = run.sign;
		ret = plan_f32_input(m, p, in_n, err, errlen);
		if (ret)
			return ret;
	} else if (in_n > XDP_INFER_MAX_INPUT) {
		REFUSE(E2BIG,
		       "model %s: input of %lu u8 elements exceeds one packet's input "
		       "(XDP_INFER_MAX_INPUT = %u bytes: MTU %u - IPv4 - UDP - REQUEST header)",
		       m->name, (unsigned long)in_n, XDP_INFER_MAX_INPUT, XDP_INFER_MTU);
	}
	p->first_bin = run.bin_first;
	p->last_bin = run.bin_last;
	for (uint32_t i = run.bin_first; i <= run.bin_last; i++) {
		const struct model_layer *l = &m->layers[i];
		struct xdp_infer_layer *xl;
		uint64_t n = model_shape_elems(&l->in), out = model_shape_elems(&l->out);
		bool thr = l->flags & MODEL_LF_THRESH;

		if (l->op == MODEL_OP_FLATTEN)
			continue;
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
		nb++;
	}
	closed = !(m->layers[run.bin_last].flags & MODEL_LF_THRESH);
	c->classes = (uint32_t)model_shape_elems(&m->layers[run.bin_last].out);
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

/* --- the xdp_model value ------------------------------------------------------------------ */

int xdp_plan_fill(const struct model *m, const struct xdp_infer_plan *p, uint64_t *val, char *err,
		  size_t errlen)
{
	const struct xdp_infer_cfg *c = &p->cfg;
	uint32_t k = 0;
	int ret;

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
	return ret ? ret : build_table(m, p, val + c->tab_off, err, errlen);
}
