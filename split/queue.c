// SPDX-License-Identifier: MIT
/*
 * Under load: every stage a FIFO single server (M/G/1 with a bounded queue), a plan as a tandem
 * of them, and the best plan for an offered load by enumeration (the objective is not a sum of
 * per-stage costs once the waits depend on the load, so the dynamic program does not apply).
 */
#include <errno.h>
#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "protocol/proto.h"
#include "split/split.h"

static double cap_wait(const struct split_server *v, double w)
{
	return v->cap && w > (v->cap - 1) * v->s ? (v->cap - 1) * v->s : w;
}

double split_wait_mean(const struct split_server *v, double rps)
{
	const double rho = rps * v->s;

	if (rps <= 0 || v->s <= 0)
		return 0;
	if (rho >= 1)
		return v->cap ? (v->cap - 1) * v->s : INFINITY;
	return cap_wait(v, rho * v->s * (1 + v->cs2) / (2 * (1 - rho)));
}

double split_wait_quantile(const struct split_server *v, double rps, double q)
{
	const double rho = rps * v->s;
	double w;

	if (rps <= 0 || v->s <= 0)
		return 0;
	if (rho >= 1)
		return v->cap ? (v->cap - 1) * v->s : INFINITY;
	if (rho <= 1 - q)
		return 0;
	w = split_wait_mean(v, rps);
	return cap_wait(v, w / rho * log(rho / (1 - q)));
}

/* Delay through server v at rate rps, quantile q (q < 0: the mean). */
static double term(const struct split_server *v, double rps, double q)
{
	const double w = q < 0 ? split_wait_mean(v, rps) : split_wait_quantile(v, rps, q);

	return fmax(0, v->s + w - v->head);
}

/* M/M/1/K blocking at utilisation rho: 1 - 1/rho past saturation. */
static double blocking(double rho, uint32_t k)
{
	if (rho <= 0)
		return 0;
	if (fabs(rho - 1) < 1e-9)
		return 1.0 / (k + 1);
	if (rho > 1)
		return fmax(1 - 1 / rho, (1 - rho) * pow(rho, k) / (1 - pow(rho, k + 1)));
	return (1 - rho) * pow(rho, k) / (1 - pow(rho, k + 1));
}

struct fb_state {
	double pb;	       /* blocked share */
	struct split_server h; /* the host with the fallback's work mixed in */
	double rps_nic;	       /* what the NIC sees */
};

/* Path nic (!back) or fallback (back) at quantile q (< 0: mean), fallback on. */
static double path_q(const struct split_pipeline *pl, const struct fb_state *f, double rps,
		     bool back, double q)
{
	double t = pl->fixed;

	for (uint32_t k = 0; k < pl->n; k++) {
		if (k == pl->fb.host)
			t += term(&f->h, rps, q) - f->h.s + pl->srv[k].s +
			     (back ? pl->fb.s_back : 0);
		else if (k == pl->fb.nic)
			t += back ? 0 : term(&pl->srv[k], f->rps_nic, q);
		else
			t += term(&pl->srv[k], rps, q);
	}
	return t;
}

/* The share of path `back` at or below x (its quantile function inverted by bisection). */
static double path_cdf(const struct split_pipeline *pl, const struct fb_state *f, double rps,
		       bool back, double x)
{
	double lo = 1e-6, hi = 1 - 1e-6;

	if (path_q(pl, f, rps, back, lo) > x)
		return 0;
	if (path_q(pl, f, rps, back, hi) <= x)
		return 1;
	for (int i = 0; i < 60; i++) {
		const double mid = (lo + hi) / 2;

		if (path_q(pl, f, rps, back, mid) <= x)
			lo = mid;
		else
			hi = mid;
	}
	return lo;
}

/* Quantile q of the mixture (1 - pb) nic path + pb fallback path. */
static double mix_q(const struct split_pipeline *pl, const struct fb_state *f, double rps, double q)
{
	double lo = fmin(path_q(pl, f, rps, false, 1e-6), path_q(pl, f, rps, true, 1e-6));
	double hi = fmax(path_q(pl, f, rps, false, 1 - 1e-6), path_q(pl, f, rps, true, 1 - 1e-6));

	for (int i = 0; i < 60 && hi - lo > 1e-9 * hi; i++) {
		const double mid = (lo + hi) / 2;
		const double c = (1 - f->pb) * path_cdf(pl, f, rps, false, mid) +
				 f->pb * path_cdf(pl, f, rps, true, mid);

		if (c < q)
			lo = mid;
		else
			hi = mid;
	}
	return hi;
}

void split_pipeline_predict(const struct split_pipeline *pl, double rps,
			    struct split_load_pred *out)
{
	double smax = 0;

	memset(out, 0, sizeof(*out));
	out->rps = rps;
	for (uint32_t k = 0; k < pl->n; k++) {
		const double r = rps * pl->srv[k].s;

		if (pl->srv[k].s > smax) {
			smax = pl->srv[k].s;
			out->bottleneck = k;
		}
		if (r > out->rho_max)
			out->rho_max = r;
	}
	out->throughput = smax > 0 ? 1 / smax : INFINITY;
	if (pl->fb.on && rps > 0) {
		const struct split_server *h = &pl->srv[pl->fb.host], *n = &pl->srv[pl->fb.nic];
		struct fb_state f = {.pb = blocking(rps * n->s, n->cap), .h = *h};
		const double m1 = h->s + f.pb * pl->fb.s_back;
		const double var = f.pb * (1 - f.pb) * pl->fb.s_back * pl->fb.s_back;

		f.h.s = m1;
		f.h.cs2 = m1 > 0 ? (h->cs2 * h->s * h->s + var) / (m1 * m1) : 0;
		f.rps_nic = rps * (1 - f.pb);
		out->fallback = f.pb;
		out->mean = (1 - f.pb) * path_q(pl, &f, rps, false, -1) +
			    f.pb * path_q(pl, &f, rps, true, -1);
		out->p50 = f.pb > 1e-9 ? mix_q(pl, &f, rps, 0.5) : path_q(pl, &f, rps, false, 0.5);
		out->p99 =
		    f.pb > 1e-9 ? mix_q(pl, &f, rps, 0.99) : path_q(pl, &f, rps, false, 0.99);
		out->rho_max = fmax(rps * m1, f.rps_nic * n->s);
		for (uint32_t k = 0; k < pl->n; k++)
			if (k != pl->fb.host && k != pl->fb.nic)
				out->rho_max = fmax(out->rho_max, rps * pl->srv[k].s);
		out->throughput = fmin(rps, 1 / fmax(m1, 1e-12));
		return;
	}
	out->mean = out->p50 = out->p99 = pl->fixed;
	for (uint32_t k = 0; k < pl->n; k++) {
		out->mean += term(&pl->srv[k], rps, -1);
		out->p50 += term(&pl->srv[k], rps, 0.5);
		out->p99 += term(&pl->srv[k], rps, 0.99);
	}
	if (rps > 0 && rps < out->throughput)
		out->throughput = rps;
}

/* ---- the servers of a plan ---------------------------------------------------------------- */

static struct split_server *server(struct split_pipeline *pl, const char *name, uint32_t cap)
{
	for (uint32_t k = 0; k < pl->n; k++)
		if (!strcmp(pl->srv[k].name, name))
			return &pl->srv[k];
	pl->srv[pl->n] = (struct split_server){.name = name, .cap = cap};
	return &pl->srv[pl->n++];
}

static uint32_t proto_fmt_of(uint32_t kfmt)
{
	return kfmt == MODEL_FMT_U8 ? SPLIT_FMT_U8 : kfmt == MODEL_FMT_F32 ? SPLIT_FMT_F32 : 0;
}

/* Requests of `bytes` each that fit a queue of `limit` bytes (at least one). */
static uint32_t cap_of(double limit, uint64_t bytes)
{
	double c = bytes ? floor(limit / (double)bytes) : limit;

	return c < 1 ? 1 : c > 1e6 ? 1000000u : (uint32_t)c;
}

static const char *const stage_srv[SPLIT_EX__COUNT] = {"host", "gpu", "nic"};

/* Plan stages already filled (compute, cut_in, fmt_in): the servers. */
static void build_pipeline(const struct split_problem *p, const struct model *m,
			   const struct split_profile *pr, const struct split_opts *o,
			   const struct split_plan *plan, struct split_pipeline *pl)
{
	const double gbps = o->link_gbps > 0 ? o->link_gbps : pr->v[SPLIT_P_LINK_GBPS];
	const uint32_t hq = (uint32_t)pr->v[SPLIT_P_HOST_QUEUE];
	const uint32_t cap[SPLIT_EX__COUNT] = {o->packet ? hq : 0, o->packet ? hq : 0,
					       o->packet ? (uint32_t)pr->v[SPLIT_P_NIC_WINDOW] : 0};
	const struct split_stage *last = &plan->stage[plan->n_stages - 1];
	const bool nic_last = last->exec == SPLIT_EX_NIC;
	const bool standalone = plan->stage[0].exec == SPLIT_EX_NIC;
	struct split_xfer req = {0}, resp = {0};
	uint64_t up_bytes = 0, down_bytes = 0;
	double up = 0, down = 0, head;

	memset(pl, 0, sizeof(*pl));
	if (o->packet) {
		split_link_parts(pr, gbps, proto_fmt_of(m->input.fmt), model_shape_elems(&m->input),
				 false, PROTO_REQUEST_HDR_LEN, &req);
		split_link_parts(pr, gbps, SPLIT_FMT_F64, model_classes(m), false,
				 PROTO_RESP_HDR_LEN, &resp);
		pl->fixed = pr->v[standalone ? SPLIT_P_PATH_NIC : SPLIT_P_PATH_FIXED];
		if (!standalone) {
			/* up to the host: the REQUEST, then the NIC's completion notice */
			up = req.wire + (nic_last ? resp.wire : 0);
			up_bytes = req.wire_bytes + (nic_last ? resp.wire_bytes : 0);
			struct split_server *h = server(pl, "host", hq);

			h->s = pr->v[SPLIT_P_HOST_REQ] + req.recv;
			h->head = pr->v[SPLIT_P_HOST_OVERLAP];
		}
	}
	for (uint32_t s = 0; s < plan->n_stages; s++) {
		const struct split_stage *st = &plan->stage[s];
		struct split_server *v = server(pl, stage_srv[st->exec], cap[st->exec]);

		v->s += st->compute;
		if (!st->fmt_in)
			continue;
		if (st->exec == SPLIT_EX_NIC) { /* the NIC is last: never a cut out of it */
			const struct model_shape *in = &m->layers[st->first].in;
			struct split_xfer x;

			split_link_parts(pr, gbps, st->fmt_in, model_shape_elems(in),
					 st->fmt_in == SPLIT_FMT_BITS && in->h * in->w > 1,
					 PROTO_ACT_HDR_LEN, &x);
			v->s += x.recv;
			if (s)
				server(pl, stage_srv[plan->stage[s - 1].exec],
				       cap[plan->stage[s - 1].exec])
				    ->s += x.send;
			if (!o->packet) {
				server(pl, "link", 0)->s += x.wire;
			} else if (s) {
				down += x.wire;
				down_bytes += x.wire_bytes;
			}
		} else {
			v->s += st->cut_in; /* host <-> GPU over PCIe: the GPU stage waits for it */
		}
	}
	if (o->packet && !nic_last) {
		down += resp.wire;
		down_bytes += resp.wire_bytes;
		server(pl, stage_srv[last->exec], cap[last->exec])->s += resp.send;
	}
	if (o->packet && nic_last && !standalone) {
		pl->fb.on = true;
		pl->fb.host = (uint32_t)(server(pl, "host", hq) - pl->srv);
		pl->fb.nic = (uint32_t)(server(pl, "nic", cap[SPLIT_EX_NIC]) - pl->srv);
		pl->fb.s_back = resp.send;
		for (uint32_t i = last->first; i < p->n; i++)
			pl->fb.s_back += p->op[i][SPLIT_EX_CPU];
	}
	head = pr->v[SPLIT_P_LINK_BURST] * 8 / (gbps * 1e9);
	if (up > 0)
		*server(pl, "link-up", cap_of(pr->v[SPLIT_P_LINK_LIMIT], up_bytes)) =
		    (struct split_server){"link-up", up, 0, head,
					  cap_of(pr->v[SPLIT_P_LINK_LIMIT], up_bytes)};
	if (down > 0)
		*server(pl, "link-down", cap_of(pr->v[SPLIT_P_LINK_LIMIT], down_bytes)) =
		    (struct split_server){"link-down", down, 0, head,
					  cap_of(pr->v[SPLIT_P_LINK_LIMIT], down_bytes)};
}

int split_plan_pipeline(const struct split_problem *p, const struct model *m,
			const struct split_profile *pr, const struct split_opts *o,
			const struct split_plan *plan, struct split_pipeline *pl)
{
	struct split_plan cp = *plan;

	if (p->n != m->n_layers || isinf(split_plan_eval(p, &cp)))
		return -EINVAL;
	build_pipeline(p, m, pr, o, &cp, pl);
	return 0;
}

/* ---- the best plan under load ------------------------------------------------------------ */

struct enum_ctx {
	const struct split_problem *p;
	const struct model *m;
	const struct split_profile *pr;
	const struct split_opts *o;
	double *pre[SPLIT_EX__COUNT];	 /* [e][i]: sum of finite op costs of ops [0, i) */
	uint32_t *ninf[SPLIT_EX__COUNT]; /* [e][i]: ops of [0, i) that e cannot run */
	uint64_t *wpre[SPLIT_EX__COUNT]; /* [e][i]: weight bytes of ops [0, i) */
	struct split_plan cur, best;
	struct split_load_pred best_pred;
	double best_key[2];
	bool found;
};

static void enum_eval(struct enum_ctx *c)
{
	struct split_pipeline pl;
	struct split_load_pred pr;
	double key[2];

	build_pipeline(c->p, c->m, c->pr, c->o, &c->cur, &pl);
	split_pipeline_predict(&pl, c->o->load_rps, &pr);
	switch (c->o->objective) {
	case SPLIT_OBJ_THROUGHPUT:
		key[0] = pl.srv[pr.bottleneck].s;
		key[1] = pr.p50;
		break;
	case SPLIT_OBJ_P99:
		key[0] = pr.p99;
		key[1] = pl.srv[pr.bottleneck].s;
		break;
	default:
		key[0] = pr.p50;
		key[1] = pl.srv[pr.bottleneck].s;
		break;
	}
	if (!c->found || key[0] < c->best_key[0] ||
	    (key[0] == c->best_key[0] && key[1] < c->best_key[1])) {
		c->best = c->cur;
		c->best.cost = key[0];
		c->best.latency = pr.p50;
		c->best_pred = pr;
		c->best_key[0] = key[0];
		c->best_key[1] = key[1];
		c->found = true;
	}
}

static void enum_stages(struct enum_ctx *c, uint32_t s, uint32_t i, uint32_t used)
{
	const struct split_problem *p = c->p;

	for (uint32_t e = 0; e < p->n_exec; e++) {
		const uint32_t prev = s ? c->cur.stage[s - 1].exec : p->origin;
		double cut;

		if ((used & SPLIT_EXM(e)) || !(p->start_ok[i] & SPLIT_EXM(e)))
			continue;
		cut = (s || e != p->origin) ? p->cut[i][prev][e] : 0;
		if (isinf(cut))
			continue;
		for (uint32_t j = i + 1; j <= p->n; j++) {
			struct split_stage *st = &c->cur.stage[s];

			if (c->ninf[e][j] != c->ninf[e][i] ||
			    c->wpre[e][j] - c->wpre[e][i] > p->mem[e])
				break;
			if (p->terminal[e] && j != p->n)
				continue;
			*st = (struct split_stage){
			    .exec = e,
			    .first = i,
			    .last = j,
			    .fmt_in = (s || e != p->origin) ? p->fmt[i][prev][e] : 0,
			    .compute = p->stage_cost[e] + c->pre[e][j] - c->pre[e][i],
			    .cut_in = cut,
			};
			c->cur.n_stages = s + 1;
			if (j == p->n)
				enum_eval(c);
			else if (s + 1 < p->n_exec && !p->terminal[e])
				enum_stages(c, s + 1, j, used | SPLIT_EXM(e));
		}
	}
}

/* Plans to enumerate: sum over stage counts k of E!/(E-k)! x C(n-1, k-1), an upper bound. */
static double plan_count(uint32_t n, uint32_t E)
{
	double total = 0, perm = 1, comb = 1;

	for (uint32_t k = 1; k <= E && k <= n; k++) {
		perm *= E - k + 1;
		if (k > 1)
			comb = comb * (n - k + 1) / (k - 1);
		total += perm * comb;
	}
	return total;
}

int split_plan_solve_load(const struct split_problem *p, const struct model *m,
			  const struct split_profile *pr, const struct split_opts *o,
			  struct split_plan *out, struct split_load_pred *pred)
{
	struct enum_ctx c = {.p = p, .m = m, .pr = pr, .o = o};
	int ret = -ENOMEM;

	if (p->n != m->n_layers)
		return -EINVAL;
	if (plan_count(p->n, p->n_exec) > SPLIT_ENUM_MAX)
		return -E2BIG;
	for (uint32_t e = 0; e < p->n_exec; e++) {
		c.pre[e] = calloc(p->n + 1, sizeof(double));
		c.ninf[e] = calloc(p->n + 1, sizeof(uint32_t));
		c.wpre[e] = calloc(p->n + 1, sizeof(uint64_t));
		if (!c.pre[e] || !c.ninf[e] || !c.wpre[e])
			goto out;
		for (uint32_t i = 0; i < p->n; i++) {
			const double t = p->op[i][e];

			c.pre[e][i + 1] = c.pre[e][i] + (isinf(t) ? 0 : t);
			c.ninf[e][i + 1] = c.ninf[e][i] + !!isinf(t);
			c.wpre[e][i + 1] = c.wpre[e][i] + p->wbytes[i][e];
		}
	}
	enum_stages(&c, 0, 0, 0);
	ret = c.found ? 0 : -ENOENT;
	if (c.found) {
		*out = c.best;
		if (pred)
			*pred = c.best_pred;
	}
out:
	for (uint32_t e = 0; e < p->n_exec; e++) {
		free(c.pre[e]);
		free(c.ninf[e]);
		free(c.wpre[e]);
	}
	return ret;
}
