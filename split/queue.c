// SPDX-License-Identifier: MIT
/*
 * Under load: a plan as a tandem of servers (links and in-process stages as M/G/1 queues, the
 * packet path's host and NIC by the profile's measured curves), and the best plan for an offered
 * load by enumeration (the objective is not a sum of per-stage costs once the waits depend on the
 * load, so the dynamic program does not apply).
 */
#include <errno.h>
#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "dpdk/idle_policy.h"
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

/* Delay through a QUEUE server v at rate rps, quantile q (q < 0: the mean). */
static double term(const struct split_server *v, double rps, double q)
{
	const double w = q < 0 ? split_wait_mean(v, rps) : split_wait_quantile(v, rps, q);

	return fmax(0, v->s + w - v->head);
}

static void predict_in_process(const struct split_pipeline *pl, double rps,
			       struct split_load_pred *out)
{
	double smax = 0;

	for (uint32_t k = 0; k < pl->n; k++) {
		if (pl->srv[k].s > smax) {
			smax = pl->srv[k].s;
			out->bottleneck = k;
		}
		out->rho[k] = rps * pl->srv[k].s;
		out->rho_max = fmax(out->rho_max, rps * pl->srv[k].s);
	}
	out->throughput = smax > 0 ? 1 / smax : INFINITY;
	out->answered = rps * smax > 1 ? 1 / (rps * smax) : 1;
	out->mean = out->p50 = out->p99 = pl->fixed;
	for (uint32_t k = 0; k < pl->n; k++) {
		out->mean += term(&pl->srv[k], rps, -1);
		out->p50 += term(&pl->srv[k], rps, 0.5);
		out->p99 += term(&pl->srv[k], rps, 0.99);
	}
	if (rps > 0 && rps < out->throughput)
		out->throughput = rps;
}

/* ---- the packet path: the measured curves ------------------------------------------------- */

/* Where the packet path's load lands: utilisations, shares, the rates at each server. */
struct pk_state {
	/* u_nic: the NIC's, of what reaches it (before its window turns away) */
	double u_sys, u_host, u_nic;
	double s_host;	     /* the host's service with the fallback's share mixed in */
	double lam, lam_out; /* requests/s past the sys server, and past the host */
	double pb;	     /* the share the NIC turns away: fallback (or refused alone) */
	int host, nic;	     /* server indices, -1 if none */
};

static bool is_link(const struct split_server *v, const char *name)
{
	return v->kind == SPLIT_SRV_LINK && !strcmp(v->name, name);
}

/* Server k as the requests of share pb that the host finishes itself make it: a link's
 * service with their RESPONSEs down instead of ACTIVATIONs, and no notices up for them. */
static struct split_server pk_server(const struct split_pipeline *pl, uint32_t k, double pb)
{
	struct split_server v = pl->srv[k];

	if (!pl->fb.on)
		return v;
	if (is_link(&v, "link-up"))
		v.s = fmax(v.s - pb * pl->fb.up_notice, 1e-12);
	else if (is_link(&v, "link-down"))
		v.s = fmax(v.s + pb * (pl->fb.down_resp - pl->fb.down_act), 1e-12);
	return v;
}

/* The NIC path's mean round trip outside the NIC, from the ACTIVATION sent to its notice read:
 * the ACTIVATION's wire time (the link's queue down is the window's own ACTIVATIONs, its
 * saturation the pass share's), the notice up behind the REQUESTs waiting at the link (they
 * come from the front-end, no window holds them), then the host's batch in progress before its
 * next turn reads it. */
static double pk_nic_ext(const struct split_pipeline *pl, const struct pk_state *st)
{
	double t = st->s_host * fmin(st->u_host, 1) / 2;

	for (uint32_t k = 0; k < pl->n; k++) {
		const struct split_server v = pk_server(pl, k, st->pb);

		if (is_link(&v, "link-down"))
			t += pl->fb.down_act;
		else if (is_link(&v, "link-up"))
			t += pl->fb.up_notice + split_wait_mean(&v, st->lam);
	}
	return t;
}

/* Little's law on the host's window: the most the NIC answers, X <= lam, with X x its round
 * trip at X (ext outside the NIC, the NIC's own queue and stage at X) at most win. */
static double pk_window_rate(const struct split_server *nic, double ext, double win, double lam)
{
	double lo = 0, hi = lam;

	if (lam * (ext + nic->s + split_wait_mean(nic, lam)) <= win)
		return lam;
	for (int i = 0; i < 60; i++) {
		const double x = (lo + hi) / 2;

		if (x * (ext + nic->s + split_wait_mean(nic, x)) <= win)
			lo = x;
		else
			hi = x;
	}
	return lo;
}

double split_host_excess(const struct split_profile *pr, bool p99, double s, double u, uint32_t cap)
{
	const unsigned c = p99 ? SPLIT_CV_HOST_P99 : SPLIT_CV_HOST_P50;
	const double ref = pr->v[SPLIT_P_HOST_CURVE], q = p99 ? 0.99 : 0.5;
	const struct split_server a = {.s = s, .cap = cap}, b = {.s = ref, .cap = cap};

	if (!(ref > 0) || s <= ref)
		return s * split_curve_at(pr, c, u);
	return ref * split_curve_at(pr, c, u) +
	       fmax(0, split_wait_quantile(&a, u / s, q) - split_wait_quantile(&b, u / ref, q));
}

void split_sys_service(const struct split_profile *pr, double frames, double *work, double *wait)
{
	const double s = pr->v[SPLIT_P_SYS_S], per = pr->v[SPLIT_P_SYS_FRAME];

	if (!(frames > 0)) { /* in process: no path */
		*work = *wait = 0;
		return;
	}
	*work = fmax(0, per < 0 ? s * frames / 4 : s + per * (frames - 4));
	/* the wait a request's frames meet: a request of 18 frames and no compute (10,000 u8
	 * inputs) waited less at a utilisation of 0.25-0.85 than the 4-frame calibration one
	 * (179-513 us against 215-831, 2026-11-29), where sys.s x 18 / 4 put it at 532-37,414:
	 * what the path waits for comes per request (wake-ups, the cores changing hands), not per
	 * frame. calibrate --packet measures the exponent (split/calib.h). */
	*wait = s * pow(frames / 4, pr->v[SPLIT_P_SYS_FRAMES]);
}

static void pk_load(const struct split_pipeline *pl, double rps, struct pk_state *st)
{
	const struct split_profile *pr = pl->pr;
	double a_host = 1, pass, lam_sys;

	memset(st, 0, sizeof(*st));
	st->host = st->nic = -1;
	for (uint32_t k = 0; k < pl->n; k++) {
		if (pl->srv[k].kind == SPLIT_SRV_HOST)
			st->host = (int)k;
		else if (pl->srv[k].kind == SPLIT_SRV_NIC)
			st->nic = (int)k;
	}
	st->u_sys = rps * pl->sys_s;
	lam_sys = rps * split_curve_at(pr, SPLIT_CV_SYS_ANS, st->u_sys);
	/* the fallback's work loads the host that decides it, and its share changes what the
	 * links carry: a fixed point, damped */
	for (int it = 0; it < 60; it++) {
		double pb = 0;

		/* a link past its rate drops the excess (its queue is bounded): the fluid share */
		st->lam = lam_sys;
		for (uint32_t k = 0; k < pl->n; k++) {
			const struct split_server v = pk_server(pl, k, st->pb);

			if (is_link(&v, "link-up") && st->lam * v.s > 1)
				st->lam = 1 / v.s;
		}
		if (st->host >= 0) {
			st->s_host = pl->srv[st->host].s + (pl->fb.on ? st->pb * pl->fb.s_back : 0);
			st->u_host = st->lam * st->s_host;
			a_host = split_curve_at(pr, SPLIT_CV_HOST_ANS, st->u_host);
		}
		st->lam_out = st->lam * a_host;
		pass = 1;
		/* past its rate the link down to the NIC drops the excess; with the fallback the
		 * host's window fills (or its timer fires) and the host answers the excess */
		for (uint32_t k = 0; k < pl->n; k++) {
			const struct split_server v = pk_server(pl, k, st->pb);

			if (is_link(&v, "link-down") && st->lam_out * v.s > 1) {
				if (pl->fb.on)
					pass = 1 / (st->lam_out * v.s);
				else
					st->lam_out = 1 / v.s;
			}
		}
		if (st->nic >= 0) {
			const double lam_nic = st->lam_out * pass, win = pl->srv[st->nic].cap;

			st->u_nic = lam_nic * pl->srv[st->nic].s;
			pb = split_curve_at(pr, SPLIT_CV_NIC_FB, st->u_nic);
			if (pl->fb.on && win > 0 && lam_nic > 0) {
				const double ext = pk_nic_ext(pl, st);

				pb = fmax(pb,
					  1 - pk_window_rate(&pl->srv[st->nic], ext, win, lam_nic) /
						  lam_nic);
			}
			pb += (1 - pass) * (1 - pb);
		}
		if (fabs(pb - st->pb) < 1e-9)
			break;
		st->pb = it ? (st->pb + pb) / 2 : pb;
	}
}

/*
 * ---- adaptive polling: a request that finds an lcore asleep ----------------------------------
 *
 * A loop idle since its last work busy-polls for DPDK_IDLE_SPIN_NS, then wakes at t_1 < t_2 <
 * ...: each sleep 1/DPDK_IDLE_FRACTION of the time idle so far (at least DPDK_IDLE_MIN_US, at
 * most sleep_max), each wake `late` after the sleep asked for (the machine's timer lateness,
 * poll.wake_s). A frame that arrives g after the last work waits t_next(g) - g.
 */

/* Over the wakes [a, b) of the schedule: the mean of (b - g) for g = min(d, X), X ~ Exp(r),
 * the part of it with g in [a, b). */
static double wake_seg(double a, double b, double r, double d)
{
	const double hi = fmin(b, d), dl = hi - a, ea = exp(-r * a);
	double w;

	if (d <= a)
		return 0;
	w = ea * ((b - a) - (b - hi) * exp(-r * dl) + expm1(-r * dl) / r);
	if (d < b)
		w += (b - d) * exp(-r * d);
	return w;
}

/*
 * The mean wait for a loop whose longest sleep is sleep_max (0: it busy-polls) of a frame whose
 * gap since the loop's last work is min(d, X), X ~ Exp(rate): the other requests' work at
 * `rate` a second, or this request's own previous visit d before (INFINITY: none). rate 0 and
 * no d: 0 (no load: nothing is timed from an idle gap).
 */
double split_poll_wait(double sleep_max, double late, double rate, double d)
{
	const double spin = DPDK_IDLE_SPIN_NS * 1e-9, lo = DPDK_IDLE_MIN_US * 1e-6;
	double a = spin, w = 0;

	if (!(sleep_max > 0) || (!(rate > 0) && !isfinite(d)))
		return 0;
	rate = fmax(rate, 1e-9);
	for (int i = 0; i < 10000 && a < d; i++) {
		const double s = fmin(fmax(a / DPDK_IDLE_FRACTION, lo), sleep_max),
			     b = a + s + late;

		if (exp(-rate * a) < 1e-12)
			break;
		if (s >= sleep_max) { /* from here every interval is L long: a geometric sum */
			const double L = b - a, c = L + expm1(-rate * L) / rate;
			const double m = isfinite(d) ? floor((d - a) / L) : INFINITY;
			const double q = -expm1(-rate * L);

			w += exp(-rate * a) * c * (isfinite(m) ? -expm1(-rate * L * m) : 1) / q;
			if (!isfinite(m))
				break;
			a += m * L;
			w += wake_seg(a, a + L, rate, d);
			break;
		}
		w += wake_seg(a, b, rate, d);
		a = b;
	}
	return w;
}

/* What a request of the path (the NIC's, !back; the fallback's, back) waits for sleeping lcores:
 * splitnic-nic at the REQUEST, splitnic-host at the REQUEST, splitnic-nic again at what the host
 * sends on (the RESPONSE to pass out, or the ACTIVATION), the host's part of the path after the
 * NIC's previous work. A stand-alone NIC answers alone. */
static double pk_wake(const struct split_pipeline *pl, const struct pk_state *st, bool back)
{
	const struct split_profile *pr = pl->pr;
	const double late = pr->v[SPLIT_P_POLL_WAKE], nic_max = pr->v[SPLIT_P_POLL_NIC];
	const double nic_rate = st->lam * (st->host >= 0 ? 2 : 1);
	double w = split_poll_wait(nic_max, late, nic_rate, INFINITY), d = 0;

	if (st->host < 0)
		return w;
	w += split_poll_wait(pr->v[SPLIT_P_POLL_HOST], late,
			     st->lam * (st->nic >= 0 && !pl->standalone ? 2 : 1), INFINITY);
	for (uint32_t k = 0; k < pl->n; k++) {
		const struct split_server *v = &pl->srv[k];

		if (v->kind == SPLIT_SRV_HOST)
			d += v->s + (back ? pl->fb.s_back : 0);
		else if (v->kind != SPLIT_SRV_NIC)
			d += pk_server(pl, k, st->pb).s;
	}
	return w + split_poll_wait(nic_max, late, nic_rate, d);
}

/* The path of a request answered by the NIC (!back) or by the fallback (back) at quantile
 * q: 0.5 or 0.99. */
static double pk_path(const struct split_pipeline *pl, const struct pk_state *st, bool back,
		      double q)
{
	const struct split_profile *pr = pl->pr;
	const bool p99 = q > 0.5;
	double t =
	    pl->fixed + pk_wake(pl, st, back) +
	    pl->sys_w * split_curve_at(pr, p99 ? SPLIT_CV_SYS_P99 : SPLIT_CV_SYS_P50, st->u_sys);

	for (uint32_t k = 0; k < pl->n; k++) {
		const struct split_server *v = &pl->srv[k];

		switch (v->kind) {
		case SPLIT_SRV_HOST:
			t += v->own + (back ? pl->fb.own_back : 0) +
			     split_host_excess(pr, p99, st->s_host, st->u_host,
					       pl->srv[st->host].cap);
			break;
		case SPLIT_SRV_NIC:
			if (!back)
				t += v->own + v->s * split_curve_at(pr,
								    p99 ? SPLIT_CV_NIC_P99
									: SPLIT_CV_NIC_P50,
								    st->u_nic);
			break;
		default: {
			const struct split_server l = pk_server(pl, k, st->pb);

			t += term(&l, (int)k > st->host ? st->lam_out : st->lam, q);
			break;
		}
		}
	}
	return fmax(t, 1e-9); /* a latency, positive even from a profile fitted on noise */
}

/* A path's latency as a log-normal through its p50 m and p99 h: its distribution function. */
static double lognorm_cdf(double x, double m, double h)
{
	const double sg = h > m * 1.0001 ? log(h / m) / 2.3263478740408408 : 1e-4;

	return x > 0 ? 0.5 * erfc(-(log(x) - log(m)) / (sg * M_SQRT2)) : 0;
}

static double lognorm_mean(double m, double h)
{
	const double sg = h > m ? log(h / m) / 2.3263478740408408 : 0;

	return m * exp(sg * sg / 2);
}

/* Quantile q of the mixture (1 - w) path a + w path b, each (p50, p99). */
static double mix_q(const double a[2], const double b[2], double w, double q)
{
	double lo = log(fmin(a[0], b[0]) / 100), hi = log(fmax(a[1], b[1]) * 100);

	for (int i = 0; i < 80; i++) {
		const double mid = (lo + hi) / 2, x = exp(mid);
		const double c =
		    (1 - w) * lognorm_cdf(x, a[0], a[1]) + w * lognorm_cdf(x, b[0], b[1]);

		if (c < q)
			lo = mid;
		else
			hi = mid;
	}
	return exp(hi);
}

static void predict_packet(const struct split_pipeline *pl, double rps, struct split_load_pred *out)
{
	struct pk_state st;
	double a[2], b[2], a_nic = 1;

	pk_load(pl, rps, &st);
	if (pl->standalone)
		a_nic = 1 - st.pb;
	out->answered = (rps > 0 ? st.lam_out / rps : 1) * a_nic;
	if (rps <= 0)
		out->answered = 1;
	out->shed = 1 - out->answered;
	out->by_nic = st.nic >= 0 ? out->answered * (pl->standalone ? 1 : 1 - st.pb) : 0;
	out->fallback = pl->fb.on ? out->answered * st.pb : 0;
	out->throughput = rps > 0 ? rps * out->answered : 0;
	out->rho_max = st.u_sys;
	out->bottleneck = pl->n;
	for (uint32_t k = 0; k < pl->n; k++) {
		const double u = (int)k == st.host  ? st.u_host
				 : (int)k == st.nic ? st.u_nic
						    : rps * pk_server(pl, k, st.pb).s;

		out->rho[k] = u;
		if (u > out->rho_max) {
			out->rho_max = u;
			out->bottleneck = k;
		}
	}
	out->rho[pl->n] = st.u_sys;
	a[0] = pk_path(pl, &st, false, 0.5);
	a[1] = pk_path(pl, &st, false, 0.99);
	if (!pl->fb.on || st.pb <= 1e-9) {
		out->p50 = a[0];
		out->p99 = a[1];
		out->mean = lognorm_mean(a[0], a[1]);
		return;
	}
	b[0] = pk_path(pl, &st, true, 0.5);
	b[1] = pk_path(pl, &st, true, 0.99);
	out->p50 = mix_q(a, b, st.pb, 0.5);
	out->p99 = mix_q(a, b, st.pb, 0.99);
	out->mean = (1 - st.pb) * lognorm_mean(a[0], a[1]) + st.pb * lognorm_mean(b[0], b[1]);
}

double split_pipeline_capacity(const struct split_pipeline *pl, double min_answered)
{
	struct split_load_pred p;
	double lo = 0, hi = 1e3, smax = 0;

	if (!pl->pr) {
		for (uint32_t k = 0; k < pl->n; k++)
			smax = fmax(smax, pl->srv[k].s);
		return smax > 0 ? 1 / smax : INFINITY;
	}
	for (;;) {
		memset(&p, 0, sizeof(p));
		predict_packet(pl, hi, &p);
		if (p.answered < min_answered || hi >= 1e9)
			break;
		lo = hi;
		hi *= 4;
	}
	for (int i = 0; i < 50 && hi - lo > 1e-4 * hi; i++) {
		const double mid = (lo + hi) / 2;

		memset(&p, 0, sizeof(p));
		predict_packet(pl, mid, &p);
		if (p.answered < min_answered)
			hi = mid;
		else
			lo = mid;
	}
	return lo;
}

void split_pipeline_predict(const struct split_pipeline *pl, double rps,
			    struct split_load_pred *out)
{
	memset(out, 0, sizeof(*out));
	out->rps = rps;
	if (pl->pr) {
		predict_packet(pl, rps, out);
		if (!(rps > 0))
			out->throughput = split_pipeline_capacity(pl, SPLIT_CAPACITY_ANSWERED);
	} else {
		predict_in_process(pl, rps, out);
	}
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

/* One direction of the host <-> NIC link as a server, s seconds a request (none where 0). */
static void link_server(struct split_pipeline *pl, const char *name, double s, double head,
			uint32_t cap)
{
	if (s > 0)
		*server(pl, name, 0) = (struct split_server){.name = name,
							     .kind = SPLIT_SRV_LINK,
							     .s = s,
							     .own = s,
							     .head = head,
							     .cap = cap};
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
	double up = 0, down = 0, head, frames = 0;
	double host_msgs = 0; /* messages the host receives and sends */
	double act_msgs = 0;  /* of which the ACTIVATION */

	memset(pl, 0, sizeof(*pl));
	if (o->packet) {
		split_link_parts(pr, gbps, proto_fmt_of(m->input.fmt), model_shape_elems(&m->input),
				 false, PROTO_REQUEST_HDR_LEN, &req);
		split_link_parts(pr, gbps, SPLIT_FMT_F64, model_classes(m), false,
				 PROTO_RESP_HDR_LEN, &resp);
		pl->pr = pr;
		pl->standalone = standalone;
		pl->fixed = standalone ? pr->v[SPLIT_P_PATH_NIC]
				       : pr->v[SPLIT_P_PATH_FIXED] +
					     (nic_last ? pr->v[SPLIT_P_PATH_COPROC] : 0);
		/* front-end -> NIC -> front-end; through the host: up and back down as well */
		frames = req.pkts + resp.pkts;
		if (!standalone) {
			frames *= 2;
			/* up to the host: the REQUEST, then the NIC's completion notice */
			up = req.wire + (nic_last ? resp.wire : 0);
			up_bytes = req.wire_bytes + (nic_last ? resp.wire_bytes : 0);
			struct split_server *h = server(pl, "host", hq);

			h->kind = SPLIT_SRV_HOST;
			h->own = req.recv;
			host_msgs = 2; /* the REQUEST; the RESPONSE, or the NIC's notice */
		}
	}
	for (uint32_t s = 0; s < plan->n_stages; s++) {
		const struct split_stage *st = &plan->stage[s];
		struct split_server *v = server(pl, stage_srv[st->exec], cap[st->exec]);

		if (o->packet && st->exec != SPLIT_EX_GPU)
			v->kind = st->exec == SPLIT_EX_CPU ? SPLIT_SRV_HOST : SPLIT_SRV_NIC;
		v->own += st->compute;
		if (!st->fmt_in)
			continue;
		if (st->exec == SPLIT_EX_NIC) { /* the NIC is last: never a cut out of it */
			const struct model_shape *in = &m->layers[st->first].in;
			struct split_xfer x;

			split_link_parts(pr, gbps, st->fmt_in, model_shape_elems(in),
					 st->fmt_in == SPLIT_FMT_BITS && in->h * in->w > 1,
					 PROTO_ACT_HDR_LEN, &x);
			v->own += x.recv;
			if (s)
				server(pl, stage_srv[plan->stage[s - 1].exec],
				       cap[plan->stage[s - 1].exec])
				    ->own += x.send;
			if (!o->packet) {
				server(pl, "link", 0)->own += x.wire;
			} else if (s) {
				pl->fb.down_act = x.wire;
				down += x.wire;
				down_bytes += x.wire_bytes;
				frames += x.pkts - resp.pkts;
				host_msgs += 1;
				act_msgs = 1;
			}
		} else {
			v->own +=
			    st->cut_in; /* host <-> GPU over PCIe: the GPU stage waits for it */
		}
	}
	if (o->packet && !nic_last) {
		down += resp.wire;
		down_bytes += resp.wire_bytes;
		server(pl, stage_srv[last->exec], cap[last->exec])->own += resp.send;
	}
	if (o->packet && nic_last && !standalone) {
		frames += resp.pkts; /* the completion notice */
		pl->fb.on = true;
		pl->fb.host = (uint32_t)(server(pl, "host", hq) - pl->srv);
		pl->fb.nic = (uint32_t)(server(pl, "nic", cap[SPLIT_EX_NIC]) - pl->srv);
		pl->fb.own_back = resp.send;
		pl->fb.up_notice = resp.wire;
		pl->fb.down_resp = resp.wire;
		for (uint32_t i = last->first; i < p->n; i++)
			pl->fb.own_back += p->op[i][SPLIT_EX_CPU];
		/* a request the host finishes makes no ACTIVATION and gets no notice: the
		 * RESPONSE it sends stands for the notice, the ACTIVATION it saves */
		pl->fb.s_back = pr->v[SPLIT_P_HOST_SCALE] * pl->fb.own_back -
				pr->v[SPLIT_P_HOST_REQ] * act_msgs / 2;
	}
	for (uint32_t k = 0; k < pl->n; k++) {
		struct split_server *v = &pl->srv[k];

		/* host.req_s: a request of one message each way (as calibrated), half of it per
		 * message; a message's further datagrams are in own (their reassembly or
		 * serialization, the deser and ser keys) */
		v->s = v->kind == SPLIT_SRV_HOST ? pr->v[SPLIT_P_HOST_REQ] * host_msgs / 2 +
						       pr->v[SPLIT_P_HOST_SCALE] * v->own
						 : v->own;
	}
	pl->frames = frames;
	split_sys_service(pr, frames, &pl->sys_s, &pl->sys_w);
	head = pr->v[SPLIT_P_LINK_BURST] * 8 / (gbps * 1e9);
	link_server(pl, "link-up", up, head, cap_of(pr->v[SPLIT_P_LINK_LIMIT], up_bytes));
	link_server(pl, "link-down", down, head, cap_of(pr->v[SPLIT_P_LINK_LIMIT], down_bytes));
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

double split_pipeline_smax(const struct split_pipeline *pl)
{
	double smax = 0;

	for (uint32_t k = 0; k < pl->n; k++)
		smax = fmax(smax, pl->srv[k].s);
	return smax;
}

void split_rank_key(const struct split_opts *o, const struct split_load_pred *pr, double smax,
		    uint32_t stages, struct split_rank_key *k)
{
	k->shortfall = pr->answered >= o->min_answered - 1e-9 ? 0 : 1 - pr->answered;
	k->saturated = pr->rho_max >= 1;
	k->value = o->objective == SPLIT_OBJ_THROUGHPUT ? smax
		   : o->objective == SPLIT_OBJ_P99	? pr->p99
							: pr->p50;
	k->next = o->objective == SPLIT_OBJ_THROUGHPUT ? pr->p50 : smax;
	k->rho = pr->rho_max;
	k->stages = stages;
}

bool split_rank_before(const struct split_rank_key *a, const struct split_rank_key *b)
{
	if (a->shortfall != b->shortfall)
		return a->shortfall < b->shortfall;
	if (a->saturated != b->saturated)
		return !a->saturated;
	if (a->value != b->value)
		return a->value < b->value;
	return a->next < b->next;
}

bool split_rank_tied(const struct split_rank_key *a, const struct split_rank_key *best)
{
	if (best->shortfall > 0)
		return a->shortfall > 0 && a->shortfall <= best->shortfall + SPLIT_TIE_SHARE;
	return a->shortfall == 0 && a->saturated == best->saturated &&
	       a->value <= best->value * (1 + SPLIT_TIE_REL);
}

bool split_rank_simpler(const struct split_rank_key *a, const struct split_rank_key *b)
{
	if (a->stages != b->stages)
		return a->stages < b->stages;
	return a->rho < b->rho;
}

void split_rank_order(const struct split_rank_key *k, uint32_t n, uint32_t *order)
{
	uint32_t w = 0;

	for (uint32_t i = 0; i < n; i++)
		order[i] = i;
	for (uint32_t a = 1; a < n; a++) /* insertion sort: stable, a few dozen at most */
		for (uint32_t c = a; c > 0 && split_rank_before(&k[order[c]], &k[order[c - 1]]);
		     c--) {
			const uint32_t t = order[c];

			order[c] = order[c - 1];
			order[c - 1] = t;
		}
	for (uint32_t i = 1; i < n && split_rank_tied(&k[order[i]], &k[order[0]]); i++)
		if (split_rank_simpler(&k[order[i]], &k[order[w]]))
			w = i;
	if (w) { /* the tie's winner first */
		const uint32_t t = order[w];

		memmove(&order[1], &order[0], w * sizeof(*order));
		order[0] = t;
	}
}

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
	struct split_rank_key first; /* pass 2: the strictly best plan's key */
	struct split_rank_key best_key;
	bool found, tie_pass;
};

/* Pass 1: the strictly best plan; pass 2: among the plans tied with it, the simplest. */
static void enum_eval(struct enum_ctx *c)
{
	struct split_pipeline pl;
	struct split_load_pred pr;
	struct split_rank_key key;
	bool take;

	build_pipeline(c->p, c->m, c->pr, c->o, &c->cur, &pl);
	split_pipeline_predict(&pl, c->o->load_rps, &pr);
	split_rank_key(c->o, &pr, split_pipeline_smax(&pl), c->cur.n_stages, &key);
	if (!c->tie_pass)
		take = !c->found || split_rank_before(&key, &c->best_key);
	else
		take =
		    split_rank_tied(&key, &c->first) && (split_rank_simpler(&key, &c->best_key) ||
							 (!split_rank_simpler(&c->best_key, &key) &&
							  split_rank_before(&key, &c->best_key)));
	if (take) {
		c->best = c->cur;
		c->best.cost = key.value;
		c->best.latency = pr.p50;
		c->best_pred = pr;
		c->best_key = key;
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
	if (c.found) {
		c.first = c.best_key;
		c.tie_pass = true;
		enum_stages(&c, 0, 0, 0);
	}
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
