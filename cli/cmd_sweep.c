// SPDX-License-Identifier: MIT
/*
 * splitnic sweep (in process): every single split point of a model (host CPU runs ops [0,k), the
 * NIC emulator the rest), and the planner's choice, through the in-process pipeline: host
 * compute (kern_forward_range), pack + serialize into ACTIVATION datagrams, the copy to the
 * receive side, parse + reassemble + unpack (MEASURED, real protocol code); beside them the wire
 * at the link rate and the NIC stage (the emulator's time), both MODELED (host and NIC share
 * this process) and never added to the measured parts. The cost model's prediction of the
 * measured parts is checked against them. Medians over --count inputs, candidates interleaved
 * per input. `--packet` measures everything over the packet path instead (lab/sweep_packet.c).
 */
#include <errno.h>
#include <jansson.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "cli/cmds.h"
#include "cli/dataset.h"
#include "cli/progress.h"
#include "conf/args.h"
#include "exec/kexec.h"
#include "kernels/kern.h"
#include "lab/sweep.h"
#include "nicfw/emu/emu.h"
#include "protocol/proto.h"
#include "split/stats.h"
#include "split/verbs.h"

enum sweep_part { SP_HOST, SP_SER, SP_COPY, SP_DESER, SP_NIC, SP__COUNT };

struct sweep_cand {
	uint32_t k; /* NIC from op k; k == n: all on the CPU */
	struct nicfw_emu *emu;
	uint64_t *ns[SP__COUNT]; /* per input */
	double med[SP__COUNT];	 /* seconds */
	uint32_t pkts;
	uint64_t wire_bytes;	   /* datagram bytes */
	double inproc;		   /* MEASURED: host + serialize + copy + deserialize */
	double pred_inproc;	   /* MODELED: the same parts by the cost model */
	double pred[SWEEP_MAX_BW]; /* MODELED: the whole plan (the wire and the NIC included) */
	double wire[SWEEP_MAX_BW]; /* MODELED: bytes on the wire at the link rate */
	uint32_t mismatches;
};

struct sweep {
	const struct model *m;
	struct kern_ctx *ctx;
	struct split_wire *wire;
	struct split_profile pr;
	uint32_t n_cand, count, n_bw;
	double bw[SWEEP_MAX_BW];
	struct sweep_cand *cand;
	void *act, *nic_in;
	void *opbuf[2];	     /* op-by-op pass: ping-pong activations */
	uint64_t *prefix_ns; /* [k] = host time of ops [0, k) on the current input */
	double *ref, *scores;
	uint32_t plan_k[SWEEP_MAX_BW];
	double plan_pred[SWEEP_MAX_BW];
};

static int run_one(struct sweep *s, struct sweep_cand *c, const void *in, uint32_t i)
{
	const struct model *m = s->m;
	uint64_t t1, t2, t3, t4;
	struct nicfw_emu_report rep;
	int ret;

	/* the activation at the cut (its host time comes from time_prefixes) */
	ret = c->k ? kern_forward_range(s->ctx, 0, c->k, in, 1,
					c->k == m->n_layers ? (void *)s->scores : s->act)
		   : 0;
	t1 = lat_now_ns();
	c->ns[SP_HOST][i] = s->prefix_ns[c->k];
	if (ret)
		return ret;
	if (c->k == m->n_layers) {
		c->mismatches += !!memcmp(s->scores, s->ref, model_classes(m) * sizeof(double));
		return 0;
	}
	ret = split_wire_send(s->wire, &m->layers[c->k].in, c->k ? s->act : in, c->k);
	t2 = lat_now_ns();
	if (ret < 0)
		return ret;
	split_wire_copy(s->wire);
	t3 = lat_now_ns();
	ret = split_wire_recv(s->wire, &m->layers[c->k].in, s->nic_in);
	t4 = lat_now_ns();
	if (ret)
		return ret;
	c->ns[SP_SER][i] = t2 - t1;
	c->ns[SP_COPY][i] = t3 - t2;
	c->ns[SP_DESER][i] = t4 - t3;
	c->pkts = split_wire_sent_packets(s->wire);
	c->wire_bytes = split_wire_sent_bytes(s->wire);
	ret = nicfw_emu_infer(c->emu, s->nic_in, s->scores, &rep);
	if (ret)
		return ret;
	c->ns[SP_NIC][i] = (uint64_t)(rep.latency_us * 1e3 + 0.5);
	c->mismatches += !!memcmp(s->scores, s->ref, model_classes(m) * sizeof(double));
	return 0;
}

/*
 * Host compute of every prefix [0, k), measured once per input op by op through the executor,
 * so that candidates differ only by the ops they run, not by when they were timed.
 */
static int time_prefixes(struct sweep *s, const void *in)
{
	const void *cur = in;

	s->prefix_ns[0] = 0;
	for (uint32_t j = 0; j < s->m->n_layers; j++) {
		uint64_t t0 = lat_now_ns();
		int ret = kern_forward_range(s->ctx, j, j + 1, cur, 1, s->opbuf[j & 1]);

		s->prefix_ns[j + 1] = s->prefix_ns[j] + (lat_now_ns() - t0);
		if (ret)
			return ret;
		cur = s->opbuf[j & 1];
	}
	return 0;
}

static double median_s(uint64_t *ns, uint32_t n)
{
	struct lat_summary l;

	lat_summarize(ns, n, &l);
	return l.p50 * 1e-9;
}

static int sweep_measure(struct sweep *s, const struct dataset *ds, const uint8_t *rnd,
			 size_t in_bytes, bool quiet)
{
	struct cli_progress progress;
	int ret = 0;

	cli_progress_start(&progress, "splitnic sweep", "inputs", s->count + 1, quiet);
	for (uint32_t i = 0; i <= s->count && !ret; i++) {
		const void *in =
		    ds ? dataset_item(ds, i % ds->count) : rnd + (size_t)(i % 4) * in_bytes;
		/* input 0 warms every path up and is not counted */
		const uint32_t slot = i ? i - 1 : 0;

		ret = kern_forward(s->ctx, in, 1, s->ref);
		if (!ret)
			ret = time_prefixes(s, in);
		for (uint32_t j = 0; j < s->n_cand && !ret; j++)
			ret = run_one(s, &s->cand[(j + i) % s->n_cand], in, slot);
		cli_progress_add(&progress, 1);
	}
	cli_progress_end(&progress);
	if (ret)
		return ret;
	for (uint32_t j = 0; j < s->n_cand; j++)
		for (int p = 0; p < SP__COUNT; p++)
			s->cand[j].med[p] = median_s(s->cand[j].ns[p], s->count);
	return 0;
}

static int sweep_predict(struct sweep *s)
{
	const struct model *m = s->m;
	char err[256];

	for (uint32_t j = 0; j < s->n_cand; j++) {
		struct sweep_cand *c = &s->cand[j];

		c->inproc = c->med[SP_HOST] + c->med[SP_SER] + c->med[SP_COPY] + c->med[SP_DESER];
	}
	/* one cost model: the NIC's part is the emulator's time MEASURED here for each candidate
	 * (the figure's NIC bar), never the profile's per-op model beside it, so that a MODELED
	 * total is never below its MODELED NIC part */
	double *nic_s = malloc((m->n_layers + 1) * sizeof(double));
	struct split_profile pr = s->pr;

	if (!nic_s)
		return -ENOMEM;
	for (uint32_t k = 0; k < m->n_layers; k++)
		nic_s[k] = NAN;
	nic_s[m->n_layers] = 0;
	for (uint32_t j = 0; j < s->n_cand; j++)
		if (s->cand[j].k < m->n_layers)
			nic_s[s->cand[j].k] = s->cand[j].med[SP_NIC];
	pr.v[SPLIT_P_NIC_SCALE] = 1; /* in process the NIC's time is the chain's own */
	pr.v[SPLIT_P_NIC_STAGE] = 0;
	pr.v[SPLIT_P_CAL_TIME] = 1;
	for (uint32_t b = 0; b < s->n_bw; b++) {
		struct split_opts o = {
		    .link_gbps = s->bw[b], .objective = SPLIT_OBJ_LATENCY, .nic_suffix_s = nic_s};
		struct split_problem p;
		struct split_plan plan;
		int ret = split_tools_plan(m, &pr, &o, false, &p, &plan, NULL, err, sizeof(err));

		if (ret) {
			fprintf(stderr, "splitnic sweep: %s\n", err);
			free(nic_s);
			return ret;
		}
		s->plan_k[b] = plan.n_stages == 1 && plan.stage[0].exec == SPLIT_EX_CPU
				   ? m->n_layers
				   : plan.stage[plan.n_stages - 1].first;
		s->plan_pred[b] = plan.latency;
		for (uint32_t j = 0; j < s->n_cand; j++) {
			struct sweep_cand *c = &s->cand[j];
			struct split_plan cp = {0};
			struct split_xfer x = {0};

			if (c->k)
				cp.stage[cp.n_stages++] = (struct split_stage){
				    .exec = SPLIT_EX_CPU, .first = 0, .last = c->k};
			if (c->k < m->n_layers) {
				const struct model_shape *in = &m->layers[c->k].in;

				cp.stage[cp.n_stages++] = (struct split_stage){
				    .exec = SPLIT_EX_NIC, .first = c->k, .last = m->n_layers};
				split_link_parts(&s->pr, s->bw[b],
						 in->fmt == MODEL_FMT_BITS ? SPLIT_FMT_BITS
									   : SPLIT_FMT_U8,
						 model_shape_elems(in),
						 in->fmt == MODEL_FMT_BITS && in->h * in->w > 1,
						 PROTO_ACT_HDR_LEN, &x);
			}
			split_plan_eval(&p, &cp);
			c->pred[b] = cp.latency;
			c->pred_inproc = (c->k ? cp.stage[0].compute : 0) + x.send + x.recv +
					 x.pkts * s->pr.v[SPLIT_P_LINK_PKT];
			c->wire[b] = (double)x.wire_bytes * 8 / (s->bw[b] * 1e9);
		}
		split_problem_free(&p);
	}
	free(nic_s);
	return 0;
}

static const char *cand_name(const struct sweep *s, const struct sweep_cand *c, char *buf,
			     size_t len)
{
	if (c->k == s->m->n_layers)
		snprintf(buf, len, "all-cpu");
	else
		snprintf(buf, len, "nic@%u:%s", c->k, model_op_name(s->m->layers[c->k].op));
	return buf;
}

static double rel_err(double pred, double meas)
{
	return meas > 0 ? (pred - meas) / meas : NAN;
}

/* Prints the tables; returns the median |prediction error| of the measured parts. */
static double sweep_report(const struct sweep *s)
{
	double errs[4096];
	uint32_t ne = 0;
	char name[48];

	printf(
	    "model %s: %u ops, NIC-runnable from op %u; IN PROCESS, %u inputs per candidate "
	    "(medians)\nMEASURED in this process: host compute, serialize, copy, deserialize "
	    "(inproc_us is their sum); MODELED (*): the wire at the link rate (bytes on the wire "
	    "x 8 / Gbit/s) and the NIC stage (the NFP emulator's time), since host and NIC share "
	    "this process, and the cost model's predictions; a MODELED time is never added to a "
	    "MEASURED one (splitnic sweep --packet measures the whole path)\n",
	    s->m->name, s->m->n_layers, kexec_nic_first(s->m), s->count);
	printf("\n%-22s %6s %9s %9s %9s %9s %10s %11s %7s\n", "split", "pkts", "host_us", "ser_us",
	       "copy_us", "deser_us", "inproc_us", "pred_inproc*", "err");
	for (uint32_t j = 0; j < s->n_cand; j++) {
		const struct sweep_cand *c = &s->cand[j];
		const double e = rel_err(c->pred_inproc, c->inproc);

		if (isfinite(e) && ne < sizeof(errs) / sizeof(errs[0]))
			errs[ne++] = fabs(e);
		printf("%-22s %6u %9.1f %9.1f %9.1f %9.1f %10.1f %11.1f %6.1f%%\n",
		       cand_name(s, c, name, sizeof(name)), c->pkts, c->med[SP_HOST] * 1e6,
		       c->med[SP_SER] * 1e6, c->med[SP_COPY] * 1e6, c->med[SP_DESER] * 1e6,
		       c->inproc * 1e6, c->pred_inproc * 1e6, 100 * e);
	}
	for (uint32_t b = 0; b < s->n_bw; b++) {
		uint32_t pj = 0;

		printf("\nlink %g Gbit/s (MODELED parts)\n%-22s %9s %9s %12s %s\n", s->bw[b],
		       "split", "wire_us*", "nic_us*", "pred_total*", "");
		for (uint32_t j = 0; j < s->n_cand; j++) {
			const struct sweep_cand *c = &s->cand[j];

			if (c->k == s->plan_k[b])
				pj = j;
			printf("%-22s %9.1f %9.1f %12.1f %s\n", cand_name(s, c, name, sizeof(name)),
			       c->wire[b] * 1e6, c->med[SP_NIC] * 1e6, c->pred[b] * 1e6,
			       c->k == s->plan_k[b] ? "planner" : "");
		}
		printf("SWEEP mode=in-process model=%s gbps=%g planner=%s predicted_total_us=%.1f "
		       "measured_inproc_us=%.1f predicted_inproc_us=%.1f pred_err=%.1f%%\n",
		       s->m->name, s->bw[b], cand_name(s, &s->cand[pj], name, sizeof(name)),
		       s->plan_pred[b] * 1e6, s->cand[pj].inproc * 1e6,
		       s->cand[pj].pred_inproc * 1e6,
		       100 * rel_err(s->cand[pj].pred_inproc, s->cand[pj].inproc));
	}
	return stats_median(errs, ne);
}

static const char sweep_method[] =
    "MEASURED in process (medians, us): host, serialize, copy, deserialize; MODELED: wire at "
    "each link rate, the NIC stage (NFP emulator), the cost model's predictions";

/* --json: every split's MEASURED parts and MODELED parts, apart. */
static int sweep_json(const struct sweep *s, const char *path)
{
	json_t *cands = json_array(), *root;
	char name[48];

	root = sweep_json_root(s->m->name, "in-process", sweep_method);
	for (uint32_t j = 0; j < s->n_cand; j++) {
		const struct sweep_cand *c = &s->cand[j];
		json_t *o = json_object(), *meas = json_object(), *mod = json_object(),
		       *rates = json_array();

		json_object_set_new(o, "split", json_string(cand_name(s, c, name, sizeof(name))));
		json_object_set_new(o, "k", json_integer(c->k));
		json_object_set_new(meas, "host_us", json_real(c->med[SP_HOST] * 1e6));
		json_object_set_new(meas, "serialize_us", json_real(c->med[SP_SER] * 1e6));
		json_object_set_new(meas, "copy_us", json_real(c->med[SP_COPY] * 1e6));
		json_object_set_new(meas, "deserialize_us", json_real(c->med[SP_DESER] * 1e6));
		json_object_set_new(meas, "inproc_us", json_real(c->inproc * 1e6));
		json_object_set_new(mod, "label", json_string("MODELED"));
		json_object_set_new(mod, "nic_us", json_real(c->med[SP_NIC] * 1e6));
		json_object_set_new(mod, "inproc_us", json_real(c->pred_inproc * 1e6));
		for (uint32_t b = 0; b < s->n_bw; b++)
			json_array_append_new(
			    rates, json_pack("{s:f,s:f,s:f}", "link_gbps", s->bw[b], "wire_us",
					     c->wire[b] * 1e6, "total_us", c->pred[b] * 1e6));
		json_object_set_new(mod, "per_link_rate", rates);
		json_object_set_new(o, "measured", meas);
		json_object_set_new(o, "modeled", mod);
		json_array_append_new(cands, o);
	}
	json_object_set_new(root, "splits", cands);
	return sweep_json_write(root, path);
}

/*
 * The seed's Figure 5, one column per link rate, IN PROCESS. Top: per split the MEASURED parts
 * (host compute, serialize, copy, deserialize) stacked in solid colours, the MODELED parts
 * (transfer at the link rate, NIC compute on the emulator) stacked above them hatched and
 * labelled MODELED, the MODELED total as a point; with normalize, every bar over the all-CPU
 * (unsplit) measured latency. Bottom: the split overhead alone on a log axis, so that it stays
 * visible when compute dominates.
 */
static int sweep_plot(const struct sweep *s, const char *out, bool normalize)
{
	char script[64], name[48];
	FILE *f = split_tools_plot_open("sweep", out, script, sizeof(script));
	const char *unit = normalize ? "x unsplit" : "us";

	if (!f)
		return -EINVAL;
	for (uint32_t b = 0; b < s->n_bw; b++) {
		double scale = 1e6;

		for (uint32_t j = 0; normalize && j < s->n_cand; j++)
			if (s->cand[j].k == s->m->n_layers && s->cand[j].inproc > 0)
				scale = 1 / s->cand[j].inproc;
		fprintf(f, "$d%u << EOD\n", b);
		for (uint32_t j = 0; j < s->n_cand; j++) {
			const struct sweep_cand *c = &s->cand[j];

			fprintf(f, "%s %.6g %.6g %.6g %.6g %.6g %.6g %.6g\n",
				cand_name(s, c, name, sizeof(name)), c->med[SP_HOST] * scale,
				c->med[SP_SER] * scale, c->med[SP_COPY] * scale,
				c->med[SP_DESER] * scale, c->wire[b] * scale,
				c->med[SP_NIC] * scale, c->pred[b] * scale);
		}
		fprintf(f, "EOD\n");
	}
	fprintf(f,
		"set datafile missing '?'\nset multiplot layout 2,%u title \"splitnic sweep IN "
		"PROCESS: %s%s\\nsolid: MEASURED in process; hatched: MODELED transfer and NIC "
		"compute; points: MODELED total\" font ',10'\nset style fill solid 0.8 "
		"border -1\nset boxwidth 0.8\nset xtics rotate by -60 font ',8'\nset grid ytics\n"
		"set key top right font ',8' samplen 1 spacing 0.9\nset lmargin 12\n",
		s->n_bw, s->m->name,
		normalize ? ", normalised to the unsplit (all-cpu) latency" : "");
	for (uint32_t b = 0; b < s->n_bw; b++)
		fprintf(f,
			"set title 'link %g Gbit/s'\nset ylabel 'latency (%s)'\nunset logscale y\n"
			"set yrange [0:*]\nset style data histogram\nset style histogram "
			"rowstacked\nplot $d%u using 2:xtic(1) title 'host compute', '' using 3 "
			"title 'serialize', '' using 4 title 'copy', '' using 5 title "
			"'deserialize', '' using 6 fs pattern 4 title 'transfer (MODELED)', '' "
			"using 7 fs pattern 5 title 'NIC compute (MODELED)', '' using 0:8 with "
			"points pt 7 lc rgb 'black' title 'total (MODELED)'\n",
			s->bw[b], unit, b);
	for (uint32_t b = 0; b < s->n_bw; b++)
		fprintf(f,
			"set title 'split overhead, link %g Gbit/s'\nset ylabel 'overhead (%s, "
			"log)'\nset logscale y\nset yrange [*:*]\nset style histogram cluster gap "
			"1\nplot $d%u using ($3>0?$3:1/0):xtic(1) title 'serialize' lc 2, '' using "
			"($4>0?$4:1/0) title 'copy' lc 3, '' using ($6>0?$6:1/0) fs pattern 4 "
			"title 'transfer (MODELED)' lc 5, '' using ($5>0?$5:1/0) title "
			"'deserialize' lc 4\n",
			s->bw[b], unit, b);
	fprintf(f, "unset multiplot\n");
	return split_tools_plot_run("sweep", f, script);
}

static int sweep_setup(struct sweep *s)
{
	const struct model *m = s->m;
	struct nicfw_emu_params ep;
	uint64_t max_act = 8, max_op = 8;
	char err[512];

	nicfw_emu_params_default(&ep);
	s->cand = calloc(m->n_layers + 1, sizeof(*s->cand));
	if (!s->cand)
		return -ENOMEM;
	for (uint32_t k = kexec_nic_first(m); k <= m->n_layers; k++) {
		struct sweep_cand *c = &s->cand[s->n_cand];

		if (k < m->n_layers && !kexec_can_run(KEXEC_KIND_NIC, m, k, m->n_layers))
			continue;
		c->k = k;
		if (k < m->n_layers) {
			c->emu = nicfw_emu_create(m, k, NICFW_MAX_EXEC, &ep, err, sizeof(err));
			if (!c->emu) {
				fprintf(stderr, "splitnic sweep: %s\n", err);
				return -EINVAL;
			}
			if (model_shape_bytes(&m->layers[k].in) > max_act)
				max_act = model_shape_bytes(&m->layers[k].in);
		}
		for (int p = 0; p < SP__COUNT; p++)
			if (!(c->ns[p] = calloc(s->count, sizeof(uint64_t))))
				return -ENOMEM;
		s->n_cand++;
	}
	s->ctx = kern_ctx_create(m, 1);
	s->wire = split_wire_create(max_act, (uint32_t)s->pr.v[SPLIT_P_PAYLOAD]);
	s->act = aligned_alloc(64, (max_act + 63) / 64 * 64);
	s->nic_in = aligned_alloc(64, (max_act + 63) / 64 * 64);
	for (uint32_t j = 0; j < m->n_layers; j++)
		if (model_shape_bytes(&m->layers[j].out) > max_op)
			max_op = model_shape_bytes(&m->layers[j].out);
	s->opbuf[0] = aligned_alloc(64, (max_op + 63) / 64 * 64);
	s->opbuf[1] = aligned_alloc(64, (max_op + 63) / 64 * 64);
	s->prefix_ns = calloc(m->n_layers + 1, sizeof(uint64_t));
	s->ref = calloc(model_classes(m), sizeof(double));
	s->scores = calloc(model_classes(m), sizeof(double));
	return s->ctx && s->wire && s->act && s->nic_in && s->opbuf[0] && s->opbuf[1] &&
		       s->prefix_ns && s->ref && s->scores
		   ? 0
		   : -ENOMEM;
}

static void sweep_free(struct sweep *s)
{
	for (uint32_t j = 0; s->cand && j <= s->m->n_layers; j++) {
		nicfw_emu_free(s->cand[j].emu);
		for (int p = 0; p < SP__COUNT; p++)
			free(s->cand[j].ns[p]);
	}
	free(s->cand);
	kern_ctx_free(s->ctx);
	split_wire_free(s->wire);
	free(s->act);
	free(s->opbuf[0]);
	free(s->opbuf[1]);
	free(s->prefix_ns);
	free(s->nic_in);
	free(s->ref);
	free(s->scores);
}

/* --splits K,K,...|host (host: all-host, m->n_layers); -EINVAL on anything else. */
static int parse_splits(const char *arg, const struct model *m, struct sweep_pk_opts *po)
{
	char *dup = strdup(arg), *tok, *save = NULL;
	int ret = dup ? 0 : -ENOMEM;

	for (tok = dup ? strtok_r(dup, ",", &save) : NULL; tok && !ret;
	     tok = strtok_r(NULL, ",", &save)) {
		int64_t k = m->n_layers;

		if (strcmp(tok, "host") &&
		    (conf_int(NULL, NULL, tok, 0, m->n_layers, &k) ||
		     (k < m->n_layers && !kexec_nic_handoff_ok(m, (uint32_t)k))))
			ret = -EINVAL;
		if (!ret && po->n_splits == sizeof(po->splits) / sizeof(po->splits[0]))
			ret = -EINVAL;
		if (!ret)
			po->splits[po->n_splits++] = (uint32_t)k;
	}
	free(dup);
	if (ret || !po->n_splits)
		fprintf(stderr,
			"splitnic sweep: --splits/--split: ops where the packet path can hand over "
			"to the NIC "
			"(0 when the NIC can run the whole model, else a binary op on flat bits "
			"from op %u) or 'host', got '%s'\n",
			kexec_nic_first(m), arg);
	return ret || !po->n_splits ? -EINVAL : 0;
}

struct sweep_cli {
	struct sweep_pk_opts po;
	const char *profile, *link, *splits, *objective;
	long count, rounds, executors;
	bool packet, quiet;
};

enum { SW_LOAD = 'L', SW_SPLIT = 's', SW_SPLITS = 'X' };

static int sweep_opt(void *p, const struct conf_opt *opt, const char *arg)
{
	struct sweep_cli *o = p;
	struct sweep_pk_opts *po = &o->po;

	if (opt->key == SW_LOAD) {
		if (!sweep_parse_list(arg, po->load, po->load_rel, &po->n_load, SWEEP_MAX_LOAD,
				      false))
			return 0;
		fprintf(stderr,
			"splitnic sweep: --load: up to %d requests/s (or Fx: F times the all-host "
			"capacity), "
			"comma-separated, got '%s'\n",
			SWEEP_MAX_LOAD, arg);
		return -1;
	}
	/* --split K|host: one point against running servers; --splits: the points */
	o->splits = arg;
	if (opt->key == SW_SPLIT)
		po->split = 0;
	return 0;
}

#define SWEEP_OPT(f) offsetof(struct sweep_cli, f)

static const struct conf_opt sweep_opts[] = {
    CONF_STR_ROW("profile", "P", SWEEP_OPT(profile), NULL,
		 "the calibration profile (default: the built-in one)"),
    CONF_STR_ROW("link-gbps", "X,Y,Z", SWEEP_OPT(link), NULL,
		 "rates of the host <-> NIC link (default 0.1,1,10; packet: 'none' unshaped)"),
    CONF_STR_ROW("plot", "FILE.png|FILE.svg", SWEEP_OPT(po.plot), NULL,
		 "the seed's Figure 5: latency per split and its parts"),
    CONF_FLAG_ROW("normalize", SWEEP_OPT(po.normalize),
		  "--plot: bars over the unsplit (all-host) latency"),
    CONF_STR_ROW("json", "FILE", SWEEP_OPT(po.json), NULL, "every point as JSON"),
    CONF_STR_ROW(
	"replay", "FILE.json", SWEEP_OPT(po.replay), NULL,
	"--packet: a recorded sweep's --json, its MEASURED points predicted again (no lab)"),
    CONF_STR_ROW("images", "IDX", SWEEP_OPT(po.images), NULL, "the inputs (default: random)"),
    CONF_STR_ROW("npy", "FILE", SWEEP_OPT(po.images), NULL, "f32 inputs"),
    CONF_LONG_ROW("count", "N", SWEEP_OPT(count), 1, 100000, "5", "in process: inputs"),
    CONF_FLAG_ROW("quiet", SWEEP_OPT(quiet),
		  "in process: no progress line (drawn only on a terminal)"),
    CONF_FLAG_ROW("packet", SWEEP_OPT(packet),
		  "over the packet path: splitnic-nic and splitnic-host in a lab (root)"),
    CONF_CALL_ROW("load", "R,...|Fx,...", SW_LOAD, NULL,
		  "offered requests/s, or F times the all-host capacity (default "
		  "0.25x,0.7x,1.25x)"),
    CONF_DOUBLE_ROW("duration", "S", SWEEP_OPT(po.duration), 0.1, 600, "seconds", "3",
		    "seconds of load per point and round"),
    CONF_LONG_ROW("rounds", "N", SWEEP_OPT(rounds), 1, SWEEP_MAX_ROUNDS, "1",
		  "interleaved rounds (medians)"),
    CONF_CHOICE_ROW("objective", "latency|p99", SWEEP_OPT(objective), "latency", "the planner's"),
    CONF_CHOICE_ROW("platform", "emu|lcore", SWEEP_OPT(po.platform), "emu",
		    "splitnic-nic's platform"),
    CONF_LONG_ROW("executors", "E", SWEEP_OPT(executors), 1, 256, "16", "splitnic-nic's executors"),
    CONF_CALL_ROW("splits", "K,...,host", SW_SPLITS, NULL,
		  "the splits to measure (default: every one)"),
    CONF_STR_ROW("host-opt", "'OPTS'", SWEEP_OPT(po.host_opt), "--idle-sleep-us 20",
		 "more splitnic-host options"),
    CONF_STR_ROW("nic-opt", "'OPTS'", SWEEP_OPT(po.nic_opt), "--idle-sleep-us 20",
		 "more splitnic-nic options"),
    CONF_STR_ROW("lab", "SCRIPT", SWEEP_OPT(po.lab), NULL, "the lab (lab/sweep_lab.sh)"),
    CONF_STR_ROW("tag", "T", SWEEP_OPT(po.tag), NULL, "the lab's namespaces' tag"),
    CONF_STR_ROW("servers", "ADDR", SWEEP_OPT(po.servers), NULL,
		 "running servers at ADDR instead of a lab"),
    CONF_STR_ROW("netns", "NS", SWEEP_OPT(po.netns), NULL, "--servers: the front-end's namespace"),
    CONF_CALL_ROW("split", "K|host", SW_SPLIT, NULL, "--servers: the split they run"),
};

const struct conf_cmd cmd_sweep_spec = {
    CONF_CMD("splitnic sweep",
	     "MODEL [--profile P] [--link-gbps X,Y,Z] [--plot FILE.png|FILE.svg] "
	     "[--normalize] [--json FILE] [--images IDX | --npy FILE] [--count N]\n"
	     "MODEL --packet [--load R,...|Fx,...] [--duration S] [--rounds N] "
	     "[--splits K,...,host] [--platform emu|lcore] [OPTIONS]\n"
	     "MODEL --packet --servers ADDR [--netns NS] --split K|host [OPTIONS]\n"
	     "MODEL --packet --replay FILE.json [--profile P] [--json FILE] [--plot FILE]",
	     "every single split and the planner's choice, in process or over the packet path",
	     sweep_opts, 1, 1, sweep_opt),
    .notes = "--link-gbps: rates of the host <-> NIC link (packet: tc tbf, 'none' for unshaped);\n"
	     "--load: offered requests/s (open loop, Poisson), or Fx: F times the all-host\n"
	     "capacity measured first at each rate.\n"
	     "--replay: the MEASURED points of an earlier `sweep --packet --json` with the\n"
	     "MODELED figures of this build and --profile (another calibration, a changed\n"
	     "model), scored the same way; no lab, no root.\n"};

int cmd_sweep(int argc, char **argv)
{
	struct sweep_cli o = {.po.split = -1};
	struct sweep_pk_opts *po = &o.po;
	struct sweep s = {.count = 5};
	struct dataset ds = {0};
	struct model *m = NULL;
	uint8_t *rnd = NULL;
	const char *inputs;
	char err[512];
	int arg = conf_parse(&cmd_sweep_spec, argc, argv, &o), ret = 1;
	double med;

	if (arg < 0)
		return 2;
	po->objective = (uint32_t)split_objective_from_name(o.objective);
	inputs = po->images;
	po->rounds = (uint32_t)o.rounds;
	po->executors = (uint32_t)o.executors;
	if (po->servers && !(o.packet && po->split >= 0)) {
		fprintf(stderr,
			"splitnic sweep: --servers goes with --packet and --split K|host\n");
		return 2;
	}
	if (!o.packet && (po->n_load || po->servers || o.splits || po->replay)) {
		fprintf(stderr,
			"splitnic sweep: --load, --servers, --split(s), --replay need --packet\n");
		return 2;
	}
	if (po->replay && (po->n_load || po->servers || o.splits || o.link)) {
		fprintf(stderr,
			"splitnic sweep: --replay takes the link rates, loads and splits "
			"from its file: not with --link-gbps, --load, --split(s), --servers\n");
		return 2;
	}
	if ((po->plot && conf_output_ok("sweep", "--plot", po->plot)) ||
	    (po->json && conf_output_ok("sweep", "--json", po->json)))
		return 1;
	if (o.link && sweep_parse_list(o.link, o.packet ? po->rate : s.bw, NULL,
				       o.packet ? &po->n_rate : &s.n_bw, SWEEP_MAX_BW, o.packet)) {
		fprintf(
		    stderr,
		    "splitnic sweep: --link-gbps: up to %d positive numbers%s, comma-separated, "
		    "got '%s'\n",
		    SWEEP_MAX_BW, o.packet ? " or none" : "", o.link);
		return 2;
	}
	s.count = (uint32_t)o.count;
	if (!s.n_bw)
		sweep_parse_list("0.1,1,10", s.bw, NULL, &s.n_bw, SWEEP_MAX_BW, false);
	if (!po->n_rate)
		sweep_parse_list(po->servers ? "none" : "0.1,1,10", po->rate, NULL, &po->n_rate,
				 SWEEP_MAX_BW, true);
	if (!po->n_load)
		sweep_parse_list("0.25x,0.7x,1.25x", po->load, po->load_rel, &po->n_load,
				 SWEEP_MAX_LOAD, false);
	if (split_tools_load_profile("sweep", o.profile, &s.pr))
		return 1;
	m = model_load(argv[arg], err, sizeof(err));
	if (!m) {
		fprintf(stderr, "splitnic sweep: %s\n", err);
		return 1;
	}
	s.m = m;
	if (o.packet) {
		po->model_path = argv[arg];
		ret = o.splits && parse_splits(o.splits, m, po) ? 2 : 0;
		if (!ret && po->split >= 0)
			po->split = po->splits[0];
		if (!ret)
			ret = sweep_packet_run(m, &s.pr, po);
		goto out_model;
	}
	if (inputs && dataset_open(&ds, m, inputs, NULL, err, sizeof(err))) {
		fprintf(stderr, "splitnic sweep: %s\n", err);
		goto out_model;
	}
	if (!inputs) {
		const size_t in_bytes = model_shape_bytes(&m->input);

		rnd = malloc(4 * in_bytes);
		if (!rnd)
			goto out_data;
		srand(1);
		for (size_t k = 0; k < 4 * in_bytes; k++)
			rnd[k] = (uint8_t)rand();
		if (m->input.fmt == MODEL_FMT_F32)
			for (size_t k = 0; k < 4 * in_bytes / 4; k++)
				((float *)rnd)[k] = (float)rand() / RAND_MAX * 2 - 1;
		fprintf(stderr, "splitnic sweep: no --images/--npy: %s random inputs\n",
			model_fmt_name(m->input.fmt));
	}
	ret = sweep_setup(&s);
	if (!ret)
		ret = sweep_measure(&s, inputs ? &ds : NULL, rnd, model_shape_bytes(&m->input),
				    o.quiet);
	if (!ret)
		ret = sweep_predict(&s);
	if (ret) {
		fprintf(stderr, "splitnic sweep: %s\n", strerror(-ret));
		ret = 1;
		goto out_sweep;
	}
	med = sweep_report(&s);
	for (uint32_t j = 0; j < s.n_cand; j++)
		if (s.cand[j].mismatches) {
			fprintf(stderr,
				"splitnic sweep: split at op %u: %u results differ from "
				"kern_forward\n",
				s.cand[j].k, s.cand[j].mismatches);
			ret = 1;
		}
	printf("\nSWEEPSUM mode=in-process model=%s median_abs_pred_err=%.1f%% (the MEASURED "
	       "parts against the cost model)\n",
	       m->name, 100 * med);
	if (po->json && sweep_json(&s, po->json))
		ret = 1;
	if (po->plot && sweep_plot(&s, po->plot, po->normalize))
		ret = 1;
out_sweep:
	sweep_free(&s);
	free(rnd);
out_data:
	if (inputs)
		dataset_close(&ds);
out_model:
	model_free(m);
	return ret;
}
