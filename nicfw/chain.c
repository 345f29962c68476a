// SPDX-License-Identifier: MIT
/*
 * The dispatcher and the executor chain. Everything after nicfw_chain_load() is data path:
 * local arrays stand for transfer registers, every memory access goes through the HAL, and no
 * libc is called.
 */
#include <errno.h>
#include <stdio.h>
#include <string.h>

#include "exec/kexec.h"
#include "nicfw/chain.h"

#define SIG_W  0u /* memory signal of the weight read */
#define SIG_X  1u /* memory signal of the input read */
#define MASK_W (1u << SIG_W)
#define MASK_X (1u << SIG_X)

union nicfw_f64 {
	double d;
	uint64_t u;
};

static uint64_t max_u64(uint64_t a, uint64_t b)
{
	return a > b ? a : b;
}

/* Up to a whole 64-byte line, so DIRECT matrices and scratch start on one. */
static uint64_t line_up(uint64_t words)
{
	return (words + 7) & ~7ull;
}

static struct nicfw_stage *chain_add(struct nicfw_chain *ch, uint32_t kind, uint32_t op, char *err,
				     size_t errlen)
{
	struct nicfw_stage *s;

	if (ch->n_stages == NICFW_MAX_STAGES) {
		snprintf(err, errlen, "op %u: more than %u NIC stages", op, NICFW_MAX_STAGES);
		return NULL;
	}
	s = &ch->stage[ch->n_stages++];
	s->kind = kind;
	s->op = op;
	return s;
}

int nicfw_chain_init(struct nicfw_chain *ch, const struct model *m, uint32_t first, uint32_t n_exec,
		     enum nicfw_layout layout, char *err, size_t errlen)
{
	const bool direct = layout == NICFW_LAYOUT_DIRECT;
	uint64_t emem = 0, act = 1, out = 1, in_bytes, planes = 0, slice = 1;
	const struct model_layer *l;
	struct nicfw_stage *s;

	memset(ch, 0, sizeof(*ch));
	if (n_exec < 1 || n_exec > NICFW_MAX_EXEC) {
		snprintf(err, errlen, "%u executors: the chain takes 1 to %u", n_exec,
			 NICFW_MAX_EXEC);
		return -EINVAL;
	}
	if (!kexec_can_run(KEXEC_KIND_NIC, m, first, m->n_layers)) {
		snprintf(err, errlen,
			 "model %s: op %u (%s) cannot start the NIC part (it can start "
			 "at op %u of %u)",
			 m->name, first,
			 first < m->n_layers ? model_op_name(m->layers[first].op) : "none",
			 kexec_nic_first(m), m->n_layers);
		return -EINVAL;
	}
	l = &m->layers[first];
	in_bytes = model_shape_bytes(&l->in);
	if (in_bytes > UINT32_MAX) {
		snprintf(err, errlen, "op %u: input of %llu bytes is too large", first,
			 (unsigned long long)in_bytes);
		return -EINVAL;
	}
	ch->first = first;
	ch->n_exec = n_exec;
	ch->layout = layout;
	for (uint32_t e = 0; e < n_exec; e++)
		ch->grp_first[e] = ch->grp_last[e] = (uint16_t)e;
	ch->ops = direct ? kern_ops_get() : NULL;
	ch->in_fmt = l->in.fmt;
	ch->in_bytes = (uint32_t)in_bytes;
	ch->classes = model_classes(m);
	for (uint32_t i = first; i < m->n_layers; i++) {
		l = &m->layers[i];
		switch (l->op) {
		case MODEL_OP_FLATTEN:
			if (l->in.fmt == MODEL_FMT_U8 || l->in.h * l->in.w == 1)
				break;
			s = chain_add(ch, NICFW_STAGE_FLATTEN_BITS, i, err, errlen);
			if (!s)
				return -EINVAL;
			s->c = l->in.c;
			s->h = l->in.h;
			s->w = l->in.w;
			act = max_u64(act, (uint64_t)l->in.h * l->in.w * model_words(l->in.c));
			act = max_u64(act, model_words(model_shape_elems(&l->in)));
			break;
		case MODEL_OP_BDENSE:
		case MODEL_OP_BDENSE_U8:
			s = chain_add(ch,
				      l->op == MODEL_OP_BDENSE ? NICFW_STAGE_BDENSE
							       : NICFW_STAGE_BDENSE_U8,
				      i, err, errlen);
			if (!s)
				return -EINVAL;
			s->n = (uint32_t)model_shape_elems(&l->in);
			s->out = (uint32_t)model_shape_elems(&l->out);
			s->nw = model_words(s->n);
			s->thresh = l->flags & MODEL_LF_THRESH;
			s->stride = s->nw + (s->thresh && !direct ? 1 : 0);
			s->emem_off = emem;
			emem += (uint64_t)s->out * s->stride;
			if (direct && s->thresh) {
				s->thr_off = emem;
				emem += ((uint64_t)s->out * 4 + 7) / 8;
				s->flip_off = emem;
				emem += ((uint64_t)s->out + 7) / 8;
			}
			if (direct) {
				emem = line_up(emem);
				if (l->op == MODEL_OP_BDENSE_U8)
					planes =
					    max_u64(planes, kern_bdense_u8_scratch(s->n, 1) / 8);
				slice = max_u64(slice, s->thresh ? model_words(s->out)
								 : ((uint64_t)s->out + 1) / 2);
			}
			act = max_u64(act, (uint64_t)s->nw *
					       (l->op == MODEL_OP_BDENSE_U8 && !direct ? 8 : 1));
			out = max_u64(out, s->thresh ? model_words(s->out) : s->out);
			break;
		case MODEL_OP_BIAS:
		case MODEL_OP_BATCHNORM:
			s = chain_add(
			    ch, l->op == MODEL_OP_BIAS ? NICFW_STAGE_BIAS : NICFW_STAGE_BATCHNORM,
			    i, err, errlen);
			if (!s)
				return -EINVAL;
			s->out = (uint32_t)model_shape_elems(&l->in);
			s->emem_off = emem;
			emem += (uint64_t)s->out * (l->op == MODEL_OP_BIAS ? 1 : 4);
			break;
		}
	}
	ch->ctm_pkt = 0;
	ch->ctm_act[0] = (ch->in_bytes + 7) / 8;
	ch->ctm_act[1] = ch->ctm_act[0] + act;
	ch->need[NICFW_MEM_CTM] = ch->ctm_act[1] + act;
	if (direct) {
		ch->plane_words = (uint32_t)line_up(planes);
		ch->scratch_words = (uint32_t)(ch->plane_words + line_up(slice));
		ch->ctm_scratch = line_up(ch->need[NICFW_MEM_CTM]);
		ch->need[NICFW_MEM_CTM] = ch->ctm_scratch + (uint64_t)n_exec * ch->scratch_words;
	}
	ch->imem_out = 0;
	ch->imem_resp = out;
	ch->need[NICFW_MEM_IMEM] = out + ch->classes;
	ch->need[NICFW_MEM_EMEM] = emem ? emem : 1;
	return 0;
}

void nicfw_chain_load(const struct nicfw_chain *ch, const struct model *m, uint64_t *emem)
{
	for (uint32_t i = 0; i < ch->n_stages; i++) {
		const struct nicfw_stage *s = &ch->stage[i];
		const struct model_layer *l = &m->layers[s->op];
		uint64_t *dst = emem + s->emem_off;

		switch (s->kind) {
		case NICFW_STAGE_BDENSE:
		case NICFW_STAGE_BDENSE_U8:
			if (ch->layout == NICFW_LAYOUT_DIRECT) {
				memcpy(dst, l->blob[0], (size_t)s->out * s->nw * sizeof(uint64_t));
				if (s->thresh) {
					memcpy(emem + s->thr_off, l->blob[1],
					       s->out * sizeof(int32_t));
					memcpy(emem + s->flip_off, l->blob[2], s->out);
				}
				break;
			}
			for (uint32_t o = 0; o < s->out; o++) {
				const uint64_t *w =
				    (const uint64_t *)l->blob[0] + (size_t)o * s->nw;
				uint64_t *rec = dst + (size_t)o * s->stride;

				memcpy(rec, w, s->nw * sizeof(*w));
				if (s->thresh)
					rec[s->nw] =
					    (uint32_t)((const int32_t *)l->blob[1])[o] |
					    (uint64_t)(((const uint8_t *)l->blob[2])[o] != 0) << 32;
			}
			break;
		case NICFW_STAGE_BIAS:
			memcpy(dst, l->blob[0], s->out * sizeof(double));
			break;
		case NICFW_STAGE_BATCHNORM:
			memcpy(dst, l->blob[0], 4ull * s->out * sizeof(double));
			break;
		}
	}
}

/* --- dispatcher ------------------------------------------------------------------------- */

static uint32_t min_u32(uint32_t a, uint32_t b)
{
	return a < b ? a : b;
}

/* Split the U8 payload into 8 bit-planes of s->nw words each, and sum it. */
static void disp_planes(struct nicfw_thread *th, struct nicfw_chain *ch,
			const struct nicfw_stage *s)
{
	const uint64_t dst = ch->ctm_act[ch->act], in_words = (s->n + 7) / 8;
	uint64_t buf[NICFW_CHUNK_WORDS];
	int32_t sum = 0;

	for (uint32_t j = 0; j < s->nw; j++) {
		uint32_t cnt = min_u32(64, s->n - j * 64);
		uint64_t pl[8] = {0};

		nicfw_read(
		    th, NICFW_MEM_CTM, ch->in_off + (uint64_t)j * 8, buf,
		    (uint32_t)(in_words - (uint64_t)j * 8 < 8 ? in_words - (uint64_t)j * 8 : 8),
		    SIG_X);
		nicfw_wait(th, MASK_X);
		for (uint32_t i = 0; i < cnt; i++) {
			uint32_t x = (uint32_t)(buf[i / 8] >> (8 * (i % 8))) & 0xff;

			sum += (int32_t)x;
			for (uint32_t b = 0; b < 8; b++)
				pl[b] |= (uint64_t)((x >> b) & 1) << i;
		}
		nicfw_work(th, NICFW_WORK_PLANE_BYTE, cnt);
		for (uint32_t b = 0; b < 8; b++)
			nicfw_write(th, NICFW_MEM_CTM, dst + (uint64_t)b * s->nw + j, &pl[b], 1);
	}
	ch->sumx = sum;
	ch->in_off = dst;
	ch->act ^= 1;
}

/* Pixel-major channel-packed BITS (c,h,w) -> flat C-major bits. */
static void disp_flatten(struct nicfw_thread *th, struct nicfw_chain *ch,
			 const struct nicfw_stage *s)
{
	const uint64_t dst = ch->ctm_act[ch->act], hw = (uint64_t)s->h * s->w;
	const uint64_t total = hw * s->c, wpp = model_words(s->c);
	uint64_t cached = UINT64_MAX, word = 0, *ctm;

	if (ch->layout == NICFW_LAYOUT_DIRECT) {
		ctm = nicfw_map(th, NICFW_MEM_CTM);
		kern_flatten_bits(ctm + ch->in_off, 1, s->c, s->h, s->w, ctm + dst);
		nicfw_work(th, NICFW_WORK_FLATTEN_BIT, total);
		ch->in_off = dst;
		ch->act ^= 1;
		return;
	}
	for (uint64_t jo = 0; jo * 64 < total; jo++) {
		uint64_t acc = 0;
		uint32_t i;

		for (i = 0; i < 64 && jo * 64 + i < total; i++) {
			uint64_t idx = jo * 64 + i, c = idx / hw, src = (idx % hw) * wpp + c / 64;

			if (src != cached) {
				nicfw_read(th, NICFW_MEM_CTM, ch->in_off + src, &word, 1, SIG_X);
				nicfw_wait(th, MASK_X);
				cached = src;
			}
			acc |= ((word >> (c % 64)) & 1) << i;
		}
		nicfw_work(th, NICFW_WORK_FLATTEN_BIT, i);
		nicfw_write(th, NICFW_MEM_CTM, dst + jo, &acc, 1);
	}
	ch->in_off = dst;
	ch->act ^= 1;
}

static void disp_start_layer(struct nicfw_thread *th, struct nicfw_chain *ch,
			     const struct nicfw_stage *s)
{
	static const uint64_t zero[NICFW_CHUNK_WORDS];

	if (s->thresh)
		for (uint32_t j = 0; j < model_words(s->out); j += NICFW_CHUNK_WORDS)
			nicfw_write(th, NICFW_MEM_IMEM, ch->imem_out + j, zero,
				    min_u32(NICFW_CHUNK_WORDS, model_words(s->out) - j));
	nicfw_work(th, NICFW_WORK_LAYER, 1);
	nicfw_sig_send(th, 1, NICFW_SIG_START);
}

static double disp_read_f64(struct nicfw_thread *th, uint64_t off)
{
	union nicfw_f64 v;

	nicfw_read(th, NICFW_MEM_EMEM, off, &v.u, 1, SIG_W);
	nicfw_wait(th, MASK_W);
	return v.d;
}

/* Scores of the last binary stage b -> doubles, the float stages after it, the response. */
static void disp_finish(struct nicfw_thread *th, struct nicfw_chain *ch, uint32_t b)
{
	const struct nicfw_stage *sb = &ch->stage[b];
	uint64_t word = 0;

	for (uint32_t k = 0; k < ch->classes; k++) {
		union nicfw_f64 x;

		if (!sb->thresh || k % 64 == 0) {
			nicfw_read(th, NICFW_MEM_IMEM, ch->imem_out + (sb->thresh ? k / 64 : k),
				   &word, 1, SIG_X);
			nicfw_wait(th, MASK_X);
		}
		if (sb->thresh)
			x.d = (word >> (k % 64)) & 1 ? 1.0 : -1.0;
		else
			x.d = (double)(int32_t)(uint32_t)word;
		for (uint32_t i = b + 1; i < ch->n_stages; i++) {
			const struct nicfw_stage *s = &ch->stage[i];
			const uint64_t p = s->emem_off + k;

			if (s->kind == NICFW_STAGE_BIAS) {
				x.d = x.d + disp_read_f64(th, p);
				nicfw_work(th, NICFW_WORK_FLOAT_OP, 1);
			} else {
				double mean = disp_read_f64(th, p);
				double sd = disp_read_f64(th, p + s->out);
				double gamma = disp_read_f64(th, p + 2ull * s->out);
				double beta = disp_read_f64(th, p + 3ull * s->out);

				x.d = (x.d - mean) / sd * gamma + beta;
				nicfw_work(th, NICFW_WORK_FLOAT_OP, 4);
			}
		}
		nicfw_write(th, NICFW_MEM_IMEM, ch->imem_resp + k, &x.u, 1);
	}
	nicfw_pkt_tx(th, ch->imem_resp, ch->classes);
	ch->busy = false;
}

/* Run dispatcher stages from ch->cur until a binary layer is started or the response sent. */
static void disp_run(struct nicfw_thread *th, struct nicfw_chain *ch)
{
	for (;;) {
		const struct nicfw_stage *s = &ch->stage[ch->cur];

		switch (s->kind) {
		case NICFW_STAGE_FLATTEN_BITS:
			disp_flatten(th, ch, s);
			ch->cur++;
			break;
		case NICFW_STAGE_BDENSE_U8:
			if (ch->layout == NICFW_LAYOUT_RECORDS)
				disp_planes(th, ch, s);
			disp_start_layer(th, ch, s);
			return;
		case NICFW_STAGE_BDENSE:
			disp_start_layer(th, ch, s);
			return;
		}
	}
}

/* END from executor 0: the current binary stage is done; its output is in IMEM. */
static void disp_layer_done(struct nicfw_thread *th, struct nicfw_chain *ch)
{
	const uint32_t b = ch->cur;
	const struct nicfw_stage *s = &ch->stage[b];
	const uint32_t words = model_words(s->out);
	const uint64_t dst = ch->ctm_act[ch->act];
	uint64_t buf[NICFW_CHUNK_WORDS];

	if (b + 1 == ch->n_stages || ch->stage[b + 1].kind >= NICFW_STAGE_BIAS) {
		disp_finish(th, ch, b);
		return;
	}
	for (uint32_t j = 0; j < words; j += NICFW_CHUNK_WORDS) {
		uint32_t m = min_u32(NICFW_CHUNK_WORDS, words - j);

		nicfw_read(th, NICFW_MEM_IMEM, ch->imem_out + j, buf, m, SIG_X);
		nicfw_wait(th, MASK_X);
		nicfw_work(th, NICFW_WORK_COPY_WORD, m);
		nicfw_write(th, NICFW_MEM_CTM, dst + j, buf, m);
	}
	ch->in_off = dst;
	ch->act ^= 1;
	ch->cur = b + 1;
	disp_run(th, ch);
}

int nicfw_chain_request(struct nicfw_thread *th, struct nicfw_chain *ch)
{
	if (ch->busy)
		return -EBUSY;
	ch->busy = true;
	ch->cur = 0;
	ch->act = 0;
	ch->in_off = ch->ctm_pkt;
	nicfw_work(th, NICFW_WORK_REQUEST, 1);
	disp_run(th, ch);
	return 0;
}

/* --- executors -------------------------------------------------------------------------- */

/*
 * One neuron: its record streamed from EMEM chunk by chunk, the input read from CTM beside it.
 * *param receives the record's last word (the threshold word when the stage has one).
 */
static int32_t exec_neuron_bits(struct nicfw_thread *th, const struct nicfw_chain *ch,
				const struct nicfw_stage *s, uint64_t rec, uint64_t *param)
{
	uint64_t w[NICFW_CHUNK_WORDS], x[NICFW_CHUNK_WORDS];
	uint32_t cnt = 0;

	for (uint32_t k = 0; k < s->stride; k += NICFW_CHUNK_WORDS) {
		uint32_t m = min_u32(NICFW_CHUNK_WORDS, s->stride - k);
		uint32_t mi = k < s->nw ? min_u32(m, s->nw - k) : 0;

		nicfw_read(th, NICFW_MEM_EMEM, rec + k, w, m, SIG_W);
		if (mi)
			nicfw_read(th, NICFW_MEM_CTM, ch->in_off + k, x, mi, SIG_X);
		nicfw_wait(th, mi ? MASK_W | MASK_X : MASK_W);
		for (uint32_t j = 0; j < mi; j++)
			cnt += (uint32_t)__builtin_popcountll(w[j] ^ x[j]);
		nicfw_work(th, NICFW_WORK_XORPOP, mi);
		if (k + m == s->stride)
			*param = w[m - 1];
	}
	return (int32_t)s->n - 2 * (int32_t)cnt;
}

/* dot = sum_i w_i x_i = 2 sum_b 2^b popcount(P_b & W) - sum_i x_i (see kernels/bin_ref.c). */
static int32_t exec_neuron_u8(struct nicfw_thread *th, const struct nicfw_chain *ch,
			      const struct nicfw_stage *s, uint64_t rec, uint64_t *param)
{
	uint64_t w[NICFW_CHUNK_WORDS], x[NICFW_CHUNK_WORDS];
	int32_t acc = 0;

	for (uint32_t k = 0; k < s->stride; k += NICFW_CHUNK_WORDS) {
		uint32_t m = min_u32(NICFW_CHUNK_WORDS, s->stride - k);
		uint32_t mi = k < s->nw ? min_u32(m, s->nw - k) : 0;

		nicfw_read(th, NICFW_MEM_EMEM, rec + k, w, m, SIG_W);
		if (!mi)
			nicfw_wait(th, MASK_W);
		for (uint32_t b = 0; mi && b < 8; b++) {
			int32_t cnt = 0;

			nicfw_read(th, NICFW_MEM_CTM, ch->in_off + (uint64_t)b * s->nw + k, x, mi,
				   SIG_X);
			nicfw_wait(th, b ? MASK_X : MASK_W | MASK_X);
			for (uint32_t j = 0; j < mi; j++)
				cnt += __builtin_popcountll(w[j] & x[j]);
			acc += cnt << b;
			nicfw_work(th, NICFW_WORK_ANDPOP, mi);
		}
		if (k + m == s->stride)
			*param = w[m - 1];
	}
	return 2 * acc - ch->sumx;
}

static void exec_slice(struct nicfw_thread *th, const struct nicfw_chain *ch,
		       const struct nicfw_stage *s, uint32_t lo, uint32_t hi)
{
	uint64_t bits = 0, param = 0;

	for (uint32_t o = lo; o < hi; o++) {
		const uint64_t rec = s->emem_off + (uint64_t)o * s->stride;
		int32_t dot = s->kind == NICFW_STAGE_BDENSE_U8
				  ? exec_neuron_u8(th, ch, s, rec, &param)
				  : exec_neuron_bits(th, ch, s, rec, &param);

		nicfw_work(th, NICFW_WORK_NEURON, 1);
		if (!s->thresh) {
			uint64_t v = (uint32_t)dot;

			nicfw_write(th, NICFW_MEM_IMEM, ch->imem_out + o, &v, 1);
			continue;
		}
		bits |= (uint64_t)((dot >= (int32_t)(uint32_t)param) ^ ((param >> 32) & 1))
			<< (o % 64);
		if (o % 64 == 63 || o + 1 == hi) {
			nicfw_atomic_or(th, NICFW_MEM_IMEM, ch->imem_out + o / 64, bits);
			bits = 0;
		}
	}
}

/*
 * DIRECT: the slice [lo, hi) in one call of the CPU's kernels, into executor e's scratch; then
 * its output bits ORed into IMEM (shifted into place: a slice need not start on a word, and the
 * words at its ends are shared with the neighbours) or its integer scores written there.
 */
static void exec_slice_direct(struct nicfw_thread *th, const struct nicfw_chain *ch,
			      const struct nicfw_stage *s, uint32_t e, uint32_t lo, uint32_t hi)
{
	const uint64_t *emem = nicfw_map(th, NICFW_MEM_EMEM);
	uint64_t *ctm = nicfw_map(th, NICFW_MEM_CTM);
	uint64_t *scr = ctm + ch->ctm_scratch + (uint64_t)e * ch->scratch_words;
	uint64_t *y = scr + ch->plane_words;
	const uint64_t *w = emem + s->emem_off + (uint64_t)lo * s->nw;
	const bool u8 = s->kind == NICFW_STAGE_BDENSE_U8;
	const uint32_t cnt = hi - lo, sh = lo % 64;
	const void *x = ctm + ch->in_off;

	if (!cnt)
		return;
	if (s->thresh) {
		const struct kern_thresh t = {(const int32_t *)(emem + s->thr_off) + lo,
					      (const uint8_t *)(emem + s->flip_off) + lo};
		const uint64_t at = ch->imem_out + lo / 64;

		if (u8)
			ch->ops->bdense_u8_thr(x, 1, w, cnt, s->n, &t, y, scr);
		else
			ch->ops->bdense_thr(x, 1, w, cnt, s->n, &t, y);
		for (uint32_t j = 0; j < model_words(cnt); j++) {
			nicfw_atomic_or(th, NICFW_MEM_IMEM, at + j, y[j] << sh);
			if (sh && y[j] >> (64 - sh))
				nicfw_atomic_or(th, NICFW_MEM_IMEM, at + j + 1, y[j] >> (64 - sh));
		}
	} else {
		int32_t *dot = (int32_t *)y;
		uint64_t *res = nicfw_map(th, NICFW_MEM_IMEM) + ch->imem_out + lo;

		if (u8)
			ch->ops->bdense_u8(x, 1, w, cnt, s->n, dot, scr);
		else
			ch->ops->bdense(x, 1, w, cnt, s->n, dot);
		for (uint32_t o = 0; o < cnt; o++)
			res[o] = (uint32_t)dot[o];
	}
	nicfw_work(th, u8 ? NICFW_WORK_ANDPOP : NICFW_WORK_XORPOP,
		   (uint64_t)cnt * s->nw * (u8 ? 8 : 1));
	nicfw_work(th, NICFW_WORK_NEURON, cnt);
}

/* Executor e's slice of `out` neurons: [slice(e), slice(e + 1)). */
static uint32_t exec_slice_lo(uint32_t out, uint32_t e, uint32_t n_exec)
{
	return (uint32_t)((uint64_t)out * e / n_exec);
}

/* The thread END goes to from executor e: the first executor of the group before, or the
 * dispatcher. */
static uint32_t exec_end_to(const struct nicfw_chain *ch, uint32_t e)
{
	return e ? ch->grp_first[e - 1] + 1u : 0;
}

/* START at executor e, the first of its group [e, last]: the group's slices, in one call when
 * DIRECT (groups are one executor each in RECORDS). */
static void exec_start(struct nicfw_thread *th, struct nicfw_chain *ch, uint32_t e)
{
	const struct nicfw_stage *s = &ch->stage[ch->cur];
	const uint32_t last = ch->grp_last[e];
	uint32_t lo = exec_slice_lo(s->out, e, ch->n_exec);
	uint32_t hi = exec_slice_lo(s->out, last + 1, ch->n_exec);

	if (last + 1 < ch->n_exec)
		nicfw_sig_send(th, last + 2, NICFW_SIG_START);
	if (ch->layout == NICFW_LAYOUT_DIRECT)
		exec_slice_direct(th, ch, s, e, lo, hi);
	else
		exec_slice(th, ch, s, lo, hi);
	if (last + 1 == ch->n_exec)
		nicfw_sig_send(th, exec_end_to(ch, e), NICFW_SIG_END);
}

void nicfw_chain_signal(struct nicfw_thread *th, struct nicfw_chain *ch, enum nicfw_sig sig)
{
	if (th->id == 0) {
		if (sig == NICFW_SIG_END)
			disp_layer_done(th, ch);
		return;
	}
	if (sig == NICFW_SIG_START)
		exec_start(th, ch, th->id - 1);
	else
		nicfw_sig_send(th, exec_end_to(ch, th->id - 1), NICFW_SIG_END);
}

int nicfw_chain_group(struct nicfw_chain *ch, const uint32_t *group)
{
	uint32_t first = 0;

	if (ch->layout != NICFW_LAYOUT_DIRECT)
		return -EINVAL;
	for (uint32_t e = 1; e < ch->n_exec; e++)
		if (group[e] < group[e - 1])
			return -EINVAL;
	for (uint32_t e = 0; e < ch->n_exec; e++) {
		if (e && group[e] != group[e - 1])
			first = e;
		ch->grp_first[e] = (uint16_t)first;
	}
	for (uint32_t e = ch->n_exec; e-- > 0;)
		ch->grp_last[e] =
		    e + 1 < ch->n_exec && group[e + 1] == group[e] ? ch->grp_last[e + 1] : e;
	return 0;
}
