// SPDX-License-Identifier: MIT
/* The cost model: per-op times per executor, cut costs, and the chain problem of a model. */
#include <errno.h>
#include <math.h>
#include <string.h>

#include "exec/kexec.h"
#include "protocol/proto.h"
#include "split/split.h"

static const char *const fmt_names[] = {
    [SPLIT_FMT_U8] = "u8",     [SPLIT_FMT_F32] = "f32",	  [SPLIT_FMT_FP16] = "fp16",
    [SPLIT_FMT_INT8] = "int8", [SPLIT_FMT_BITS] = "bits", [SPLIT_FMT_F64] = "f64",
};

static const char *const obj_names[] = {
    [SPLIT_OBJ_LATENCY] = "latency",
    [SPLIT_OBJ_THROUGHPUT] = "throughput",
    [SPLIT_OBJ_P99] = "p99",
};

const char *split_objective_name(unsigned obj)
{
	return obj <= SPLIT_OBJ_P99 ? obj_names[obj] : "-";
}

int split_objective_from_name(const char *name)
{
	for (unsigned k = 0; k <= SPLIT_OBJ_P99; k++)
		if (!strcmp(name, obj_names[k]))
			return (int)k;
	return -1;
}

const char *split_fmt_name(unsigned fmt)
{
	return fmt >= SPLIT_FMT_U8 && fmt <= SPLIT_FMT_F64 ? fmt_names[fmt] : "-";
}

int split_fmt_from_name(const char *name)
{
	for (unsigned f = SPLIT_FMT_U8; f <= SPLIT_FMT_F64; f++)
		if (!strcmp(name, fmt_names[f]))
			return (int)f;
	return -1;
}

uint64_t split_fmt_bytes(unsigned fmt, uint64_t n)
{
	switch (fmt) {
	case SPLIT_FMT_U8:
	case SPLIT_FMT_INT8:
		return n;
	case SPLIT_FMT_FP16:
		return 2 * n;
	case SPLIT_FMT_F32:
		return 4 * n;
	case SPLIT_FMT_BITS:
		return split_bytes_bits(n);
	default:
		return 8 * n;
	}
}

bool split_fmt_exact(uint32_t kfmt, unsigned fmt)
{
	switch (kfmt) {
	case MODEL_FMT_BITS:
		return fmt == SPLIT_FMT_BITS;
	case MODEL_FMT_U8:
		return fmt == SPLIT_FMT_U8;
	case MODEL_FMT_F32:
		return fmt == SPLIT_FMT_F32 || fmt == SPLIT_FMT_F64;
	default:
		return fmt == SPLIT_FMT_F64;
	}
}

static double weight_time(double bytes, double bw)
{
	return bw > 0 ? bytes / bw : 0;
}

static double rate_time(double ops, double rate)
{
	return rate > 0 ? ops / rate : INFINITY;
}

static double max2(double a, double b)
{
	return a > b ? a : b;
}

/* Work of op l: ops for its rate, weight bytes it streams, and which rate applies. */
enum work_kind { WK_F64, WK_BIN, WK_U8, WK_ELEM };

static enum work_kind op_work(const struct model_layer *l, double *ops, double *wbytes)
{
	const uint64_t in = model_shape_elems(&l->in), out = model_shape_elems(&l->out);
	const uint64_t taps = (uint64_t)l->kernel * l->kernel;

	*wbytes = 0;
	switch (l->op) {
	case MODEL_OP_DENSE:
		*ops = (double)in * out;
		*wbytes = *ops * 8;
		return WK_F64;
	case MODEL_OP_CONV:
		*ops = (double)out * l->in.c * taps;
		*wbytes = (double)l->out.c * l->in.c * taps * 8;
		return WK_F64;
	case MODEL_OP_BDENSE:
		*ops = (double)out * model_words(in) * 64;
		*wbytes = (double)out * model_words(in) * 8;
		return WK_BIN;
	case MODEL_OP_BDENSE_U8:
		*ops = (double)out * in;
		*wbytes = (double)out * model_words(in) * 8;
		return WK_U8;
	case MODEL_OP_BCONV:
		*ops = (double)out * taps * model_words(l->in.c) * 64;
		*wbytes = (double)l->out.c * taps * model_words(l->in.c) * 8;
		return WK_BIN;
	case MODEL_OP_MAXPOOL:
	case MODEL_OP_MAXPOOL_BITS:
		*ops = (double)out * taps;
		return WK_ELEM;
	case MODEL_OP_LRN:
		*ops = (double)in * (l->lrn_size ? l->lrn_size : 1);
		return WK_ELEM;
	default:
		*ops = (double)(in > out ? in : out);
		return WK_ELEM;
	}
}

static double nic_op_cost(const struct model_layer *l, const struct split_profile *pr)
{
	const uint64_t in = model_shape_elems(&l->in), out = model_shape_elems(&l->out);

	switch (l->op) {
	case MODEL_OP_BDENSE:
		return pr->v[SPLIT_P_NIC_LAYER] +
		       pr->v[SPLIT_P_NIC_NWORD] * (double)out * model_words(in) +
		       pr->v[SPLIT_P_NIC_NEURON] * (double)out;
	case MODEL_OP_BDENSE_U8:
		return pr->v[SPLIT_P_NIC_LAYER] +
		       pr->v[SPLIT_P_NIC_NWORD] * (double)out * model_words(in) * 8 +
		       pr->v[SPLIT_P_NIC_NEURON] * (double)out;
	case MODEL_OP_FLATTEN:
		return l->in.fmt == MODEL_FMT_BITS && l->in.h * l->in.w > 1
			   ? pr->v[SPLIT_P_PACK_ELEM] * (double)in
			   : 0;
	default:
		return 0;
	}
}

double split_op_cost(const struct model *m, uint32_t i, unsigned e, const struct split_profile *pr,
		     uint32_t nic_first)
{
	const struct model_layer *l = &m->layers[i];
	double ops, wb, bw, rate;
	enum work_kind wk = op_work(l, &ops, &wb);

	switch (e) {
	case SPLIT_EX_CPU:
		bw = wb <= pr->v[SPLIT_P_CPU_CACHE] ? pr->v[SPLIT_P_CPU_BW_CACHE]
						    : pr->v[SPLIT_P_CPU_BW_DRAM];
		rate = wk == WK_F64   ? pr->v[SPLIT_P_CPU_F64_MACS]
		       : wk == WK_BIN ? pr->v[SPLIT_P_CPU_BIN_OPS]
		       : wk == WK_U8  ? pr->v[SPLIT_P_CPU_U8_OPS]
				      : pr->v[SPLIT_P_CPU_ELEM];
		return pr->v[SPLIT_P_CPU_OP] + max2(rate_time(ops, rate), weight_time(wb, bw));
	case SPLIT_EX_GPU:
		if (!pr->v[SPLIT_P_GPU_PRESENT])
			return INFINITY;
		rate = wk == WK_F64		     ? pr->v[SPLIT_P_GPU_F64_MACS]
		       : wk == WK_BIN || wk == WK_U8 ? pr->v[SPLIT_P_GPU_BIN_OPS]
						     : pr->v[SPLIT_P_GPU_ELEM];
		return pr->v[SPLIT_P_GPU_OP] +
		       max2(rate_time(ops, rate), weight_time(wb, pr->v[SPLIT_P_GPU_BW]));
	case SPLIT_EX_NIC:
		return i >= nic_first ? nic_op_cost(l, pr) : INFINITY;
	}
	return INFINITY;
}

uint32_t split_link_packets(const struct split_profile *pr, uint64_t bytes)
{
	return proto_frag_count(PROTO_ACT_HDR_LEN, bytes, (size_t)pr->v[SPLIT_P_PAYLOAD]);
}

void split_link_parts(const struct split_profile *pr, double link_gbps, unsigned fmt,
		      uint64_t elems, bool repack, uint32_t hdr, struct split_xfer *x)
{
	const uint64_t bytes = split_fmt_bytes(fmt, elems);
	const uint32_t pkts = proto_frag_count(hdr, bytes, (size_t)pr->v[SPLIT_P_PAYLOAD]);
	const double pack = repack ? pr->v[SPLIT_P_PACK_ELEM] * (double)elems : 0;

	x->pkts = pkts;
	x->wire_bytes = bytes + (uint64_t)pkts * (hdr + (uint64_t)pr->v[SPLIT_P_LINK_OVERHEAD]);
	x->send = pkts * pr->v[SPLIT_P_SER_PKT] + (double)bytes * pr->v[SPLIT_P_SER_BYTE] + pack;
	x->wire = pkts * pr->v[SPLIT_P_LINK_PKT] + (double)x->wire_bytes * 8 / (link_gbps * 1e9);
	x->recv =
	    pkts * pr->v[SPLIT_P_DESER_PKT] + (double)bytes * pr->v[SPLIT_P_DESER_BYTE] + pack;
}

double split_link_cost(const struct split_profile *pr, double link_gbps, unsigned fmt,
		       uint64_t elems, bool repack)
{
	struct split_xfer x;

	split_link_parts(pr, link_gbps, fmt, elems, repack, PROTO_ACT_HDR_LEN, &x);
	return x.send + x.wire + x.recv;
}

/* Cheapest allowed format and its cost for the activation `s` between executors a and b. */
static double cut_best(const struct model_shape *s, unsigned a, unsigned b,
		       const struct split_profile *pr, const struct split_opts *o, double link_gbps,
		       uint8_t *fmt_out)
{
	static const unsigned cands[] = {SPLIT_FMT_BITS, SPLIT_FMT_U8,	 SPLIT_FMT_F64,
					 SPLIT_FMT_F32,	 SPLIT_FMT_FP16, SPLIT_FMT_INT8};
	const uint64_t n = model_shape_elems(s);
	double best = INFINITY;

	*fmt_out = 0;
	for (unsigned k = 0; k < sizeof(cands) / sizeof(cands[0]); k++) {
		const unsigned f = cands[k];
		const bool exact = split_fmt_exact(s->fmt, f);
		double c;

		if (!exact && (!o->allow_approx || s->fmt != MODEL_FMT_F64 || f == SPLIT_FMT_F64 ||
			       f == SPLIT_FMT_BITS || f == SPLIT_FMT_U8))
			continue;
		if (b == SPLIT_EX_NIC && f != SPLIT_FMT_BITS && f != SPLIT_FMT_U8)
			continue;
		c = exact ? 0 : 2 * pr->v[SPLIT_P_QUANT_ELEM] * (double)n;
		if (a == SPLIT_EX_NIC || b == SPLIT_EX_NIC)
			c += split_link_cost(pr, link_gbps, f, n,
					     f == SPLIT_FMT_BITS && s->h * s->w > 1);
		else
			c += pr->v[SPLIT_P_PCIE_LAT] +
			     (double)split_fmt_bytes(f, n) / pr->v[SPLIT_P_PCIE_BW];
		if (c < best) {
			best = c;
			*fmt_out = (uint8_t)f;
		}
	}
	return best;
}

/*
 * Op i's NIC cost from the measured suffixes: the time of the suffix that starts at i less that
 * of the next op where the NIC can start (the ops between cost nothing on their own: a NIC
 * stage always starts at a startable op), times nic.scale. INFINITY before nic_first; NAN
 * without suffixes (the caller then uses split_op_cost).
 */
static double nic_suffix_op(const struct model *m, uint32_t i, const struct split_profile *pr,
			    const struct split_opts *o)
{
	const double *t = o->nic_suffix_s;
	uint32_t j = i + 1;

	if (!t)
		return NAN;
	if (i < o->nic_first || isnan(t[i]))
		return i < o->nic_first ? INFINITY : 0;
	while (j < m->n_layers && isnan(t[j]))
		j++;
	return pr->v[SPLIT_P_NIC_SCALE] * fmax(0, t[i] - t[j]);
}

int split_problem_from_model(struct split_problem *p, const struct model *m,
			     const struct split_profile *pr, const struct split_opts *o)
{
	const double gbps = o->link_gbps > 0 ? o->link_gbps : pr->v[SPLIT_P_LINK_GBPS];
	int ret = split_problem_alloc(p, m->n_layers, SPLIT_EX__COUNT);

	if (ret)
		return ret;
	p->origin = SPLIT_EX_CPU;
	p->objective = o->objective;
	p->terminal[SPLIT_EX_NIC] = true;
	p->mem[SPLIT_EX_GPU] = (uint64_t)pr->v[SPLIT_P_GPU_MEM];
	p->mem[SPLIT_EX_NIC] = (uint64_t)pr->v[SPLIT_P_NIC_MEM];
	p->stage_cost[SPLIT_EX_GPU] = pr->v[SPLIT_P_GPU_STAGE];
	/* with the NIC's measured suffixes, nic.stage_s is what the NIC adds beyond its chain's
	 * own time (calibrate --packet fits it); before a packet calibration it is the chain's
	 * own per-request part (calibrate in process), which the suffixes already hold */
	p->stage_cost[SPLIT_EX_NIC] =
	    o->nic_suffix_s && !(pr->v[SPLIT_P_CAL_TIME] > 0) ? 0 : pr->v[SPLIT_P_NIC_STAGE];
	for (uint32_t i = 0; i < m->n_layers; i++) {
		const struct model_layer *l = &m->layers[i];

		p->start_ok[i] = SPLIT_EXM(SPLIT_EX_CPU) | SPLIT_EXM(SPLIT_EX_GPU);
		p->op[i][SPLIT_EX_NIC] = nic_suffix_op(m, i, pr, o);
		if (o->packet ? kexec_nic_handoff_ok(m, i)
			      : kexec_can_run(KEXEC_KIND_NIC, m, i, m->n_layers))
			p->start_ok[i] |= SPLIT_EXM(SPLIT_EX_NIC);
		for (unsigned e = 0; e < SPLIT_EX__COUNT; e++) {
			double ops, wb;

			if (e == SPLIT_EX_CPU && o->cpu_op_s)
				p->op[i][e] = o->cpu_op_s[i];
			else if (e == SPLIT_EX_NIC && o->nic_suffix_s)
				p->op[i][e] =
				    (o->exec_mask & SPLIT_EXM(e)) ? p->op[i][e] : INFINITY;
			else
				p->op[i][e] = (o->exec_mask & SPLIT_EXM(e)) || e == SPLIT_EX_CPU
						  ? split_op_cost(m, i, e, pr, o->nic_first)
						  : INFINITY;
			op_work(l, &ops, &wb);
			p->wbytes[i][e] = e == SPLIT_EX_CPU ? 0 : (uint64_t)wb;
			if (e == SPLIT_EX_NIC && (l->flags & MODEL_LF_THRESH))
				p->wbytes[i][e] += 8 * (uint64_t)model_shape_elems(&l->out);
			for (unsigned a = 0; a < SPLIT_EX__COUNT; a++)
				if (a != e)
					p->cut[i][a][e] =
					    cut_best(&l->in, a, e, pr, o, gbps, &p->fmt[i][a][e]);
		}
	}
	return 0;
}
