/* SPDX-License-Identifier: MIT */
/*
 * A float convolution feeding only a sign or a threshold, in float32 with float64 decisions.
 *
 * Why the bits equal those of the float64 ops (CONV as im2col + dgemm, then BIAS / BATCHNORM in
 * double, then SIGN or THRESHOLD). Take one output, S = sum_i w_i x_i over its n = c*k*k taps
 * (exact, in the reals), A = sum_i |w_i x_i|, u = 2^-24, v = 2^-53, g(n, u) = n u / (1 - n u).
 *  - The CONV op's dgemm value D: any order of the n products and sums, with or without FMA,
 *    gives |D - S| <= g(n, v) A (Higham, Accuracy and Stability, 3.1); nothing underflows in
 *    double at the magnitudes allowed below.
 *  - The float32 value F = sum fl32(w) fl32(x) in any order (the table's sconv):
 *    fl32(w) = w (1 + a), fl32(x) = x (1 + b), |a|, |b| <= u where normal, so
 *    |F - S| <= g(n + 2, u) A. Where x, a product or a partial sum falls below float32's
 *    normal range the error is at most 2^-150 per operation (|w| 2^-150 for x), covered by
 *    ea0 = n 2^-147 (max|w| + 1). prepare refuses weights with 0 < |w| < 2^-100 or > 2^100.
 *  - A <= max_o|w| * S1 with S1 = sum |x| over the window <= n * xmax, xmax the largest |x|
 *    of the image (255 for u8 inputs). So |F - D| <= e0 n xmax + ea0 with
 *    e0 = (g(n + 2, u) + g(n, v)) max_o|w|. (A window-by-window S1 would decide more outputs
 *    in float32, but refine() below decides the few extra ones for about n multiply-adds.)
 *  - decide_pack tests |fl32(F - thr32)| > E in float32, thr32 = fl32(thr), with
 *    E = (e0 n xmax + ea0 + 2^-23 |thr|)(1 + 2^-20) rounded up to float32: the roundings of the
 *    test (|fl32(F - thr32)| <= (1 + u)|F - thr32|, |thr - thr32| <= u |thr|) and of computing E
 *    are covered, so a passing test proves |F - thr| > |F - D| in the reals: D lies on F's side
 *    of thr, and its bit is (F - thr32 >= 0) ^ flip.
 *  - What follows D (the conv's bias, BIAS and BATCHNORM ops, each ((y - mean) / sd) * gamma +
 *    beta in double with no contraction) is a composition of float64 operations by constants,
 *    each monotone in its input under round-to-nearest; with sd > 0 and every value finite it
 *    is monotone, so the sign (or the integer threshold) of its result flips at most once along
 *    the ordered doubles. Bisection over the doubles in [-2^120, 2^120] finds that point thr:
 *    the bit is (D >= thr) ^ flip for every D in that range. An image whose window sums could
 *    reach 2^100 / max|w| (or are not finite) runs wholly in float64.
 *  - An output that fails the test is unsure. Its sum is taken again in double (refine(): within
 *    g(n, v) A of S, as D is), which decides it unless D may lie on either side of thr (a tie,
 *    in practice). Then its image runs the CONV op's own function on the same input
 *    (kern_conv_f64, the same dgemm call), and the output's bit is computed from that D by the
 *    same double operations as the ops one by one: equal by construction.
 * With integer inputs (a CAST from U8) and +-1 weights whose sums stay within 2^24, F = D
 * exactly: thr becomes the integer ceil(thr), E = 0, and no output is unsure.
 */
#include <errno.h>
#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "kernels/bin_impl.h"
#include "kernels/fconv.h"

#define FC_BIG	  0x1p120
#define FC_GUARD  0x1p100
#define FC_WMIN	  0x1p-100
#define FC_MAXTAP (1u << 20)

static double gam(double n, double u)
{
	return n * u / (1.0 - n * u);
}

static const double *conv_weights(const struct model_layer *l)
{
	return (l->flags & MODEL_LF_BINW) ? l->wexp : l->blob[0];
}

static const double *conv_bias(const struct model_layer *l)
{
	return (l->flags & MODEL_LF_BIAS) ? l->blob[1] : NULL;
}

/*
 * Ops conv+1 .. last-1 on channel c from the conv op's output value v (bias included); a
 * max-pool among them is left out: the bits are pooled afterwards (see run_image()).
 */
static double chain(const struct kern_fconv *f, uint32_t c, double v)
{
	const struct model_layer *L = f->m->layers;

	for (uint32_t i = f->conv + 1; i < f->last; i++) {
		const double *p = L[i].blob[0];
		const uint32_t n = L[i].in.c;

		if (L[i].op == MODEL_OP_BIAS)
			v = v + p[c];
		else if (L[i].op == MODEL_OP_BATCHNORM)
			v = (v - p[c]) / p[n + c] * p[2 * n + c] + p[3 * n + c];
	}
	return v;
}

/* The bit of channel c for the conv op's output value v, as the ops one by one give it. */
static bool chain_bit(const struct kern_fconv *f, uint32_t c, double v)
{
	const struct model_layer *last = &f->m->layers[f->last];

	v = chain(f, c, v);
	if (last->op == MODEL_OP_SIGN)
		return v >= 0.0;
	return (v >= (double)((const int32_t *)last->blob[0])[c]) ^
	       (((const uint8_t *)last->blob[1])[c] != 0);
}

/* The chain's value for a dgemm value d (before the bias), to check finiteness. */
static double chain_value(const struct kern_fconv *f, uint32_t c, double d)
{
	const double *b = conv_bias(&f->m->layers[f->conv]);

	return chain(f, c, b ? d + b[c] : d);
}

static bool dec(const struct kern_fconv *f, uint32_t c, double d)
{
	const double *b = conv_bias(&f->m->layers[f->conv]);

	return chain_bit(f, c, b ? d + b[c] : d);
}

/* Doubles in order as integers (+0 and -0 share 0; both decide alike: they compare equal). */
static int64_t dkey(double x)
{
	int64_t i;

	memcpy(&i, &x, sizeof(i));
	return i >= 0 ? i : -(i & INT64_MAX);
}

static double dval(int64_t k)
{
	uint64_t i = k >= 0 ? (uint64_t)k : ((uint64_t)-k | (1ull << 63));
	double x;

	memcpy(&x, &i, sizeof(x));
	return x;
}

/* thr[c], flip[c] with dec(D) == (D >= thr) ^ flip on [-FC_BIG, FC_BIG]; false if unsure. */
static bool fold_channel(const struct kern_fconv *f, uint32_t c, double *thr, uint8_t *flip)
{
	int64_t a = dkey(-FC_BIG), b = dkey(FC_BIG);
	bool dlo = dec(f, c, -FC_BIG), dhi = dec(f, c, FC_BIG);

	if (!isfinite(chain_value(f, c, -FC_BIG)) || !isfinite(chain_value(f, c, FC_BIG)))
		return false;
	if (dlo == dhi) {
		*thr = -INFINITY;
		*flip = !dlo;
		return true;
	}
	while ((uint64_t)b - (uint64_t)a > 1) { /* dec(a) == dlo, dec(b) == dhi */
		int64_t mid = (int64_t)((uint64_t)a + ((uint64_t)b - (uint64_t)a) / 2);

		if (dec(f, c, dval(mid)) == dlo)
			a = mid;
		else
			b = mid;
	}
	*thr = dval(b);
	*flip = dlo;
	return true;
}

/* The run's ops: [CAST U8] CONV [MAXPOOL] (BIAS|BATCHNORM)* (SIGN|THRESHOLD), sd > 0. */
static uint32_t match(const struct model *m, uint32_t first, uint32_t *conv, uint32_t *pool)
{
	const struct model_layer *L = m->layers;
	uint32_t i = first, j;

	if (L[i].op == MODEL_OP_CAST) {
		if (L[i].in.fmt != MODEL_FMT_U8)
			return 0;
		i++;
	}
	if (i >= m->n_layers || L[i].op != MODEL_OP_CONV || L[i].in.fmt != MODEL_FMT_F64)
		return 0;
	*conv = i;
	*pool = 0;
	if (i + 1 < m->n_layers && L[i + 1].op == MODEL_OP_MAXPOOL)
		*pool = ++i;
	for (j = i + 1; j < m->n_layers; j++) {
		if (L[j].op == MODEL_OP_BATCHNORM) {
			const double *sd = (const double *)L[j].blob[0] + L[j].in.c;

			for (uint32_t c = 0; c < L[j].in.c; c++)
				if (!(sd[c] > 0.0))
					return 0;
		} else if (L[j].op != MODEL_OP_BIAS) {
			break;
		}
	}
	if (j >= m->n_layers || (L[j].op != MODEL_OP_SIGN && L[j].op != MODEL_OP_THRESHOLD))
		return 0;
	return j;
}

/* E per channel for images whose largest |x| is xmax (see the comment at the top). */
static void set_bound(struct kern_fconv *f, double xmax)
{
	for (uint32_t o = 0; o < f->g.o; o++) {
		double e = (f->e0[o] * f->taps * xmax + f->ea0[o]) * (1.0 + 0x1p-20);

		f->e[o] = f->exact ? 0.0f : (float)fmax(e * (1.0 + 0x1p-22), 0x1p-120);
	}
}

int kern_fconv_prepare(const struct model *m, uint32_t first, struct kern_fconv *f)
{
	const struct model_layer *l;
	const double *w;
	double wall = 0.0, coef;
	uint32_t conv, pool, last = match(m, first, &conv, &pool);

	memset(f, 0, sizeof(*f));
	if (!last)
		return 0;
	l = &m->layers[conv];
	w = conv_weights(l);
	*f = (struct kern_fconv){.m = m, .first = first, .conv = conv, .pool = pool, .last = last};
	f->g = (struct kern_conv_geom){l->in.c,	 l->in.h,   l->in.w,   l->out.c, l->out.h,
				       l->out.w, l->kernel, l->stride, l->pad};
	f->taps = l->in.c * l->kernel * l->kernel;
	if (f->taps > FC_MAXTAP)
		return 0;
	f->exact = first != conv && (l->flags & MODEL_LF_BINW) && f->taps * 255.0 <= 0x1p24;
	f->w32 = malloc((size_t)f->g.o * f->taps * sizeof(*f->w32));
	f->thr = malloc(f->g.o * sizeof(*f->thr));
	f->thr64 = malloc(f->g.o * sizeof(*f->thr64));
	f->flip = malloc(f->g.o);
	f->e0 = malloc(f->g.o * sizeof(*f->e0));
	f->ea0 = malloc(f->g.o * sizeof(*f->ea0));
	f->e = malloc(f->g.o * sizeof(*f->e));
	f->and_mask = calloc(model_words(f->g.o), sizeof(*f->and_mask));
	if (!f->w32 || !f->thr || !f->thr64 || !f->flip || !f->e0 || !f->ea0 || !f->e ||
	    !f->and_mask) {
		kern_fconv_free(f);
		return -ENOMEM;
	}
	coef = gam(f->taps + 2.0, 0x1p-24) + gam(f->taps, 0x1p-53);
	for (uint32_t o = 0; o < f->g.o; o++) {
		double wmax = 0.0, thr;

		for (uint32_t t = 0; t < f->taps; t++) {
			double a = fabs(w[(size_t)o * f->taps + t]);

			if (a != 0.0 && (a < FC_WMIN || a > 1.0 / FC_WMIN))
				goto out_unfit;
			wmax = a > wmax ? a : wmax;
			f->w32[(size_t)t * f->g.o + o] = (float)w[(size_t)o * f->taps + t];
		}
		if (!fold_channel(f, o, &thr, &f->flip[o]))
			goto out_unfit;
		f->thr64[o] = thr;
		f->and_mask[o / 64] |= (uint64_t)f->flip[o] << (o % 64);
		f->thr[o] =
		    f->exact ? (float)fmax(fmin(ceil(thr), 0x1p24 + 1), -0x1p24 - 1) : (float)thr;
		f->e0[o] = f->exact ? 0.0 : coef * wmax;
		f->ea0[o] = f->exact ? 0.0
				     : f->taps * 0x1p-147 * (wmax + 1.0) +
					   (isfinite(thr) ? 0x1p-23 * fabs(thr) : 0.0);
		wall = wmax > wall ? wmax : wall;
	}
	f->guard = wall > 1.0 ? FC_GUARD / wall : FC_GUARD;
	if (first != conv)
		set_bound(f, 255.0);
	return (int)last;

out_unfit:
	kern_fconv_free(f);
	return 0;
}

void kern_fconv_free(struct kern_fconv *f)
{
	free(f->w32);
	free(f->thr);
	free(f->thr64);
	free(f->flip);
	free(f->e0);
	free(f->ea0);
	free(f->e);
	free(f->and_mask);
	memset(f, 0, sizeof(*f));
}

static size_t al64(size_t n)
{
	return (n + 63) & ~(size_t)63;
}

struct fc_scratch {
	float *xp, *y;
	double *x64, *col64, *y64;
	uint32_t *unsure;
	uint64_t *bits; /* before the max-pool */
};

static void fc_sizes(const struct kern_fconv *f, size_t sz[7])
{
	const struct kern_conv_geom *g = &f->g;
	size_t np = (size_t)g->oh * g->ow, out = (size_t)g->o * np;

	sz[0] = (size_t)g->c * (g->h + 2 * g->pad) * (g->w + 2 * g->pad) * sizeof(float);
	sz[1] = out * sizeof(float);
	sz[2] = (size_t)g->c * g->h * g->w * sizeof(double);
	sz[3] = kern_conv_scratch(g) * sizeof(double);
	sz[4] = out * sizeof(double);
	sz[5] = out * sizeof(uint32_t);
	sz[6] = np * model_words(g->o) * sizeof(uint64_t);
}

/* The next n bytes of the scratch at *p; *p moves on to a 64-byte boundary. */
static void *fc_take(char **p, size_t n)
{
	void *r = *p;

	*p += al64(n);
	return r;
}

static void fc_carve(const struct kern_fconv *f, void *scratch, struct fc_scratch *s)
{
	size_t sz[7];
	char *p = scratch;

	fc_sizes(f, sz);
	s->xp = fc_take(&p, sz[0]);
	s->y = fc_take(&p, sz[1]);
	s->x64 = fc_take(&p, sz[2]);
	s->col64 = fc_take(&p, sz[3]);
	s->y64 = fc_take(&p, sz[4]);
	s->unsure = fc_take(&p, sz[5]);
	s->bits = fc_take(&p, sz[6]);
}

size_t kern_fconv_scratch(const struct kern_fconv *f)
{
	size_t sz[7], n = 0;

	fc_sizes(f, sz);
	for (int i = 0; i < 7; i++)
		n += al64(sz[i]);
	return n;
}

/*
 * xp = fl32(x) zero-padded to (C, H + 2 pad, W + 2 pad); x is U8 or F64 (C, H, W). Returns the
 * largest |x| of an F64 image (NaN if any x is), 255 for U8.
 */
static double pad32(const struct kern_fconv *f, const uint8_t *xu, const double *xd, float *xp)
{
	const struct kern_conv_geom *g = &f->g;
	const size_t wp = (size_t)g->w + 2 * g->pad, hp = (size_t)g->h + 2 * g->pad;
	double xmax = 0.0;

	memset(xp, 0, (size_t)g->c * hp * wp * sizeof(*xp));
	for (uint32_t c = 0; c < g->c; c++)
		for (uint32_t iy = 0; iy < g->h; iy++) {
			float *row = xp + ((size_t)c * hp + iy + g->pad) * wp + g->pad;
			size_t at = ((size_t)c * g->h + iy) * g->w;

			if (xu) {
				for (uint32_t ix = 0; ix < g->w; ix++)
					row[ix] = (float)xu[at + ix];
				continue;
			}
			for (uint32_t ix = 0; ix < g->w; ix++) {
				double a = fabs(xd[at + ix]);

				xmax = a > xmax || a != a ? a : xmax;
				row[ix] = (float)xd[at + ix];
			}
		}
	return xu ? 255.0 : xmax;
}

/*
 * The second look at unsure outputs: the sum in double, S' = sum w x in any order, is within
 * g(n, v) A of S, as D is, so |S' - thr| > 2 g(n, v) A (with slack for computing A and the
 * difference, and 2^-1060 per tap for underflow) puts D on the side of S'. Decides those
 * outputs' bits and keeps the rest (ties, in practice) in `unsure`; returns how many.
 */
static uint32_t refine(const struct kern_fconv *f, const double *x, uint64_t *y, uint32_t *unsure,
		       uint32_t n)
{
	const struct kern_conv_geom *g = &f->g;
	const double *w = conv_weights(&f->m->layers[f->conv]);
	const uint32_t wpp = model_words(g->o);
	const double coef = 2.0 * gam(f->taps, 0x1p-53) * (1.0 + 0x1p-19);
	uint32_t left = 0;

	for (uint32_t i = 0; i < n; i++) {
		uint32_t c = unsure[i] % g->o, p = unsure[i] / g->o, ky0, ky1, kx0, kx1;
		int64_t iy = (int64_t)(p / g->ow) * g->stride - g->pad;
		int64_t ix = (int64_t)(p % g->ow) * g->stride - g->pad;
		double sum = 0.0, a = 0.0, diff;

		kern_tap_range(iy, g->k, g->h, &ky0, &ky1);
		kern_tap_range(ix, g->k, g->w, &kx0, &kx1);
		for (uint32_t ci = 0; ci < g->c; ci++)
			for (uint32_t ky = ky0; ky < ky1; ky++)
				for (uint32_t kx = kx0; kx < kx1; kx++) {
					double t =
					    w[(((size_t)c * g->c + ci) * g->k + ky) * g->k + kx] *
					    x[((size_t)ci * g->h + (size_t)(iy + ky)) * g->w +
					      (size_t)(ix + kx)];

					sum = sum + t;
					a = a + fabs(t);
				}
		diff = sum - f->thr64[c];
		if (fabs(diff) > coef * a + f->taps * 0x1p-1060)
			y[(size_t)p * wpp + c / 64] |= (uint64_t)((diff >= 0.0) ^ f->flip[c])
						       << (c % 64);
		else
			unsure[left++] = unsure[i];
	}
	return left;
}

/* The conv's bits of one image, before any max-pool. */
static void decide_image(struct kern_fconv *f, const struct kern_bin_ops *ops, const uint8_t *xu,
			 const double *xd, uint64_t *y, const struct fc_scratch *s)
{
	const struct kern_conv_geom *g = &f->g;
	const struct model_layer *l = &f->m->layers[f->conv];
	const uint32_t np = g->oh * g->ow, wpp = model_words(g->o);
	const struct kern_decide d = {f->thr, f->e, f->flip};
	double xmax = pad32(f, xu, xd, s->xp);
	bool huge = !(xmax * f->taps <= f->guard); /* also NaN: every output from float64 */
	uint32_t n;

	if (huge) {
		memset(y, 0, (size_t)np * wpp * sizeof(*y));
		n = g->o * np;
		for (uint32_t i = 0; i < n; i++)
			s->unsure[i] = i;
	} else {
		if (!xu)
			set_bound(f, xmax);
		ops->sconv(s->xp, g, f->w32, s->y);
		n = ops->decide_pack(s->y, g->o, np, &d, y, s->unsure);
	}
	if (!n)
		return;
	if (xu) {
		for (size_t i = 0; i < (size_t)g->c * g->h * g->w; i++)
			s->x64[i] = xu[i];
		xd = s->x64;
	}
	if (!huge)
		n = refine(f, xd, y, s->unsure, n);
	if (!n)
		return;
	kern_conv_f64(xd, 1, g, conv_weights(l), conv_bias(l), s->col64, s->y64);
	for (uint32_t i = 0; i < n; i++) {
		uint32_t c = s->unsure[i] % g->o, p = s->unsure[i] / g->o;

		y[(size_t)p * wpp + c / 64] |= (uint64_t)chain_bit(f, c, s->y64[(size_t)c * np + p])
					       << (c % 64);
	}
	f->recomputed += n;
}

/*
 * A max-pool between the conv and the rest takes the bits: each op after the conv is monotone,
 * so the decision on max(window) is the OR of the decisions on the window's values where they
 * increase (flip 0) and the AND where they decrease (flip 1), exactly.
 */
static void run_image(struct kern_fconv *f, const struct kern_bin_ops *ops, const uint8_t *xu,
		      const double *xd, uint64_t *y, const struct fc_scratch *s)
{
	const struct model_layer *p = &f->m->layers[f->pool];

	if (!f->pool) {
		decide_image(f, ops, xu, xd, y, s);
		return;
	}
	decide_image(f, ops, xu, xd, s->bits, s);
	ops->maxpool_bits_and(s->bits, 1, f->g.o, f->g.oh, f->g.ow, p->kernel, p->stride,
			      f->and_mask, y);
}

void kern_fconv_run(struct kern_fconv *f, const struct kern_bin_ops *ops, const void *x,
		    uint32_t batch, uint64_t *y, void *scratch)
{
	const size_t in = (size_t)f->g.c * f->g.h * f->g.w;
	const size_t out = model_shape_bytes(&f->m->layers[f->last].out) / sizeof(*y);
	struct fc_scratch s;

	fc_carve(f, scratch, &s);
	for (uint32_t b = 0; b < batch; b++, y += out) {
		if (f->first != f->conv)
			run_image(f, ops, (const uint8_t *)x + b * in, NULL, y, &s);
		else
			run_image(f, ops, NULL, (const double *)x + b * in, y, &s);
	}
}
