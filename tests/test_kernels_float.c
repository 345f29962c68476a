// SPDX-License-Identifier: MIT
/*
 * Float layer kernels: the double kernels match plain loops within REL_TOL (relative, double);
 * the float32 conv of the mixed-precision layers stays within its bound; decide_pack and the dot
 * products of struct kern_dot give the same bits from every table (ref, avx2, avx512), the
 * float ones within the bound their fixed order allows of the exact sum. Shapes are drawn from
 * fixed seeds.
 */
#include <math.h>
#include <stdarg.h>
#include <stddef.h>
#include <setjmp.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <cmocka.h>

#include "kernels/kern.h"
#include "kernels/kern_ops.h"
#include "tests/support/isa_table.h"
#include "tests/support/rng.h"

#define REL_TOL 1e-12

static void *xalloc(size_t bytes)
{
	void *p = aligned_alloc(64, (bytes + 63) / 64 * 64 + 64);

	assert_non_null(p);
	memset(p, 0xa5, (bytes + 63) / 64 * 64 + 64);
	return p;
}

static void check_words(const uint64_t *got, const uint64_t *want, size_t count, const char *what,
			const char *isa)
{
	for (size_t i = 0; i < count; i++)
		if (got[i] != want[i]) {
			print_error("%s %s: word %zu = %016llx, want %016llx\n", isa, what, i,
				    (unsigned long long)got[i], (unsigned long long)want[i]);
			fail();
		}
}

/* --- float kernels ------------------------------------------------------------------------- */

static double rand_real(void)
{
	return (double)(int64_t)(test_mix() >> 11) / (double)(1ull << 52) - 1.0;
}

static void check_close(const double *got, const double *want, size_t n, const char *what)
{
	for (size_t i = 0; i < n; i++)
		if (!(fabs(got[i] - want[i]) <= REL_TOL * fmax(1.0, fabs(want[i])))) {
			print_error("%s: element %zu = %.17g, want %.17g\n", what, i, got[i],
				    want[i]);
			fail();
		}
}

/* Plain cross-correlation of one output element, zero padding. */
static double plain_conv_f64(const double *x, const double *wo, const struct kern_conv_geom *g,
			     uint32_t oy, uint32_t ox)
{
	double s = 0.0;

	for (uint32_t c = 0; c < g->c; c++)
		for (uint32_t ky = 0; ky < g->k; ky++)
			for (uint32_t kx = 0; kx < g->k; kx++) {
				int64_t iy = (int64_t)oy * g->stride + ky - g->pad;
				int64_t ix = (int64_t)ox * g->stride + kx - g->pad;

				if (iy < 0 || iy >= g->h || ix < 0 || ix >= g->w)
					continue;
				s += x[((size_t)c * g->h + iy) * g->w + ix] *
				     wo[((size_t)c * g->k + ky) * g->k + kx];
			}
	return s;
}

static void test_conv_f64_shapes(void **state)
{
	(void)state;
	test_mix_seed(9);
	for (int r = 0; r < 24; r++) {
		struct kern_conv_geom g = {.c = 1 + test_mix_below(5), .o = 1 + test_mix_below(7)};
		uint32_t batch = 1 + test_mix_below(3);
		bool bias = test_mix_below(2);

		g.k = 1 + 2 * test_mix_below(3);
		g.stride = 1 + test_mix_below(2);
		g.pad = test_mix_below(3);
		g.h = g.k + test_mix_below(6);
		g.w = g.k + test_mix_below(6);
		g.oh = (g.h + 2 * g.pad - g.k) / g.stride + 1;
		g.ow = (g.w + 2 * g.pad - g.k) / g.stride + 1;

		size_t in = (size_t)g.c * g.h * g.w, ohw = (size_t)g.oh * g.ow;
		size_t nw = (size_t)g.o * g.c * g.k * g.k, ny = batch * g.o * ohw;
		double *x = xalloc(batch * in * 8), *w = xalloc(nw * 8), *b = xalloc(g.o * 8);
		double *col = xalloc(kern_conv_scratch(&g) * 8), *y = xalloc(ny * 8);
		double *want = xalloc(ny * 8);

		for (size_t i = 0; i < batch * in; i++)
			x[i] = rand_real();
		for (size_t i = 0; i < nw; i++)
			w[i] = rand_real();
		for (size_t i = 0; i < g.o; i++)
			b[i] = rand_real();
		for (uint32_t n = 0; n < batch; n++)
			for (uint32_t o = 0; o < g.o; o++)
				for (uint32_t p = 0; p < ohw; p++)
					want[((size_t)n * g.o + o) * ohw + p] =
					    (bias ? b[o] : 0.0) +
					    plain_conv_f64(
						x + n * in, w + (size_t)o * g.c * g.k * g.k, &g,
						(uint32_t)(p / g.ow), (uint32_t)(p % g.ow));
		kern_conv_f64(x, batch, &g, w, bias ? b : NULL, col, y);
		check_close(y, want, ny, "conv_f64");
		free(x), free(w), free(b), free(col), free(y), free(want);
	}
}

static void test_dense_f64_batches(void **state)
{
	static const uint32_t batches[] = {1, 2, 7};

	(void)state;
	test_mix_seed(10);
	for (size_t j = 0; j < sizeof(batches) / sizeof(*batches); j++)
		for (int r = 0; r < 4; r++) {
			uint32_t batch = batches[j], n = 1 + test_mix_below(300),
				 out = 1 + test_mix_below(70);
			double *x = xalloc((size_t)batch * n * 8), *w = xalloc((size_t)out * n * 8);
			double *b = xalloc(out * 8), *y = xalloc((size_t)batch * out * 8);
			double *want = xalloc((size_t)batch * out * 8);
			bool bias = r % 2;

			for (size_t i = 0; i < (size_t)batch * n; i++)
				x[i] = rand_real();
			for (size_t i = 0; i < (size_t)out * n; i++)
				w[i] = rand_real();
			for (uint32_t o = 0; o < out; o++)
				b[o] = rand_real();
			for (uint32_t i = 0; i < batch; i++)
				for (uint32_t o = 0; o < out; o++) {
					double s = 0.0;

					for (uint32_t k = 0; k < n; k++)
						s += w[(size_t)o * n + k] * x[(size_t)i * n + k];
					want[(size_t)i * out + o] = s + (bias ? b[o] : 0.0);
				}
			kern_dense_f64(x, batch, n, w, out, bias ? b : NULL, y);
			check_close(y, want, (size_t)batch * out, "dense_f64");
			free(x), free(w), free(b), free(y), free(want);
		}
}

static void test_elementwise_f64_exact(void **state)
{
	uint32_t batch = 2, c = 5, hw = 7;
	size_t n = (size_t)batch * c * hw;
	double x[70], y[70], z[70], mean[5], sd[5], gamma[5], beta[5];

	(void)state;
	test_mix_seed(11);
	for (size_t i = 0; i < n; i++)
		x[i] = rand_real() * 10;
	x[3] = 0.0;
	x[4] = -0.0;
	for (uint32_t ch = 0; ch < c; ch++) {
		mean[ch] = rand_real();
		sd[ch] = 0.5 + fabs(rand_real());
		gamma[ch] = ch == 0 ? 0.0 : ch == 1 ? -rand_real() - 1.0 : rand_real();
		beta[ch] = rand_real();
	}
	kern_batchnorm_f64(x, batch, c, hw, mean, sd, gamma, beta, y);
	for (size_t i = 0; i < n; i++) {
		uint32_t ch = (uint32_t)(i / hw % c);

		assert_true(y[i] == (x[i] - mean[ch]) / sd[ch] * gamma[ch] + beta[ch]);
	}
	memcpy(z, x, sizeof(x));
	kern_bias_f64(z, batch, c, hw, beta);
	for (size_t i = 0; i < n; i++)
		assert_true(z[i] == x[i] + beta[i / hw % c]);
	kern_relu_f64(x, n, y);
	for (size_t i = 0; i < n; i++)
		assert_true(y[i] == (x[i] > 0 ? x[i] : 0.0));
}

static void test_maxpool_f64_overlap(void **state)
{
	(void)state;
	test_mix_seed(12);
	for (int r = 0; r < 12; r++) {
		uint32_t c = 1 + test_mix_below(4), k = 1 + test_mix_below(3),
			 stride = 1 + test_mix_below(3);
		uint32_t h = k + test_mix_below(6), w = k + test_mix_below(6), batch = 2;
		uint32_t oh = (h - k) / stride + 1, ow = (w - k) / stride + 1;
		double *x = xalloc((size_t)batch * c * h * w * 8),
		       *y = xalloc((size_t)batch * c * oh * ow * 8);

		for (size_t i = 0; i < (size_t)batch * c * h * w; i++)
			x[i] = rand_real();
		kern_maxpool_f64(x, batch, c, h, w, k, stride, y);
		for (uint32_t p = 0; p < batch * c; p++)
			for (uint32_t oy = 0; oy < oh; oy++)
				for (uint32_t ox = 0; ox < ow; ox++) {
					double m = -INFINITY;

					for (uint32_t ky = 0; ky < k; ky++)
						for (uint32_t kx = 0; kx < k; kx++)
							m = fmax(
							    m,
							    x[((size_t)p * h + oy * stride + ky) *
								  w +
							      ox * stride + kx]);
					assert_true(y[((size_t)p * oh + oy) * ow + ox] == m);
				}
		free(x), free(y);
	}
}

static void test_lrn_f64_edges(void **state)
{
	static const uint32_t sizes[] = {1, 3, 5, 7};

	(void)state;
	test_mix_seed(13);
	for (size_t s = 0; s < sizeof(sizes) / sizeof(*sizes); s++) {
		uint32_t c = 1 + test_mix_below(9), hw = 1 + test_mix_below(10), batch = 2,
			 size = sizes[s];
		size_t n = (size_t)batch * c * hw;
		double *x = xalloc(n * 8), *y = xalloc(n * 8), *want = xalloc(n * 8);
		double alpha = 1e-2, beta = 0.75, k = 2.0;

		for (size_t i = 0; i < n; i++)
			x[i] = rand_real() * 5;
		for (uint32_t b = 0; b < batch; b++)
			for (uint32_t ch = 0; ch < c; ch++)
				for (uint32_t p = 0; p < hw; p++) {
					double sum = 0.0;

					for (int64_t j = (int64_t)ch - size / 2;
					     j <= (int64_t)ch + size / 2; j++)
						if (j >= 0 && j < c) {
							double v = x[((size_t)b * c + j) * hw + p];

							sum += v * v;
						}
					want[((size_t)b * c + ch) * hw + p] =
					    x[((size_t)b * c + ch) * hw + p] /
					    pow(k + alpha / size * sum, beta);
				}
		kern_lrn_f64(x, batch, c, hw, size, alpha, beta, k, y);
		check_close(y, want, n, "lrn_f64");
		free(x), free(y), free(want);
	}
}

/* --- float32 kernels of the mixed-precision float layers ------------------------------------ */

/* Every table's sconv is within gamma_n * sum |w x| of the exact sum (computed in double). */
static void sconv_case(uint32_t c, uint32_t k, uint32_t stride, uint32_t pad, uint32_t o)
{
	struct kern_conv_geom g = {.c = c, .k = k, .stride = stride, .pad = pad, .o = o};
	const uint32_t n = c * k * k;
	const double gam = n * 0x1p-24 / (1.0 - n * 0x1p-24);
	size_t hp, wp, np;
	float *xp, *wt, *y;

	g.h = k + test_mix_below(12);
	g.w = k + test_mix_below(40);
	g.oh = (g.h + 2 * pad - k) / stride + 1;
	g.ow = (g.w + 2 * pad - k) / stride + 1;
	hp = g.h + 2 * pad;
	wp = g.w + 2 * pad;
	np = (size_t)g.oh * g.ow;
	xp = xalloc(c * hp * wp * 4);
	wt = xalloc((size_t)n * o * 4);
	y = xalloc(np * o * 4);
	for (size_t i = 0; i < c * hp * wp; i++) {
		size_t x = i % wp, yy = i / wp % hp;
		bool border = x < pad || x >= pad + g.w || yy < pad || yy >= pad + g.h;

		xp[i] = border || !test_mix_below(4) ? 0.0f : (float)test_mix_below(256);
	}
	for (size_t i = 0; i < (size_t)n * o; i++)
		wt[i] = (float)rand_real();
	for (size_t t = 0; t < sizeof(isa_names) / sizeof(*isa_names); t++) {
		const struct kern_bin_ops *ops = isa_ops(isa_names[t]);

		if (!ops)
			continue;
		memset(y, 0xa5, np * o * 4);
		ops->sconv(xp, &g, wt, y);
		for (size_t p = 0; p < np; p++)
			for (uint32_t oc = 0; oc < o; oc++) {
				size_t oy = p / g.ow, ox = p % g.ow, q = 0;
				double sum = 0.0, abs = 0.0;

				for (uint32_t ci = 0; ci < c; ci++)
					for (uint32_t ky = 0; ky < k; ky++)
						for (uint32_t kx = 0; kx < k; kx++, q++) {
							double v =
							    (double)wt[q * o + oc] *
							    xp[(ci * hp + oy * stride + ky) * wp +
							       ox * stride + kx];

							sum += v;
							abs += fabs(v);
						}
				if (!(fabs(y[p * o + oc] - sum) <= gam * abs)) {
					print_error(
					    "%s sconv c%u k%u s%u p%u o%u: y[%zu][%u] = %.9g, "
					    "want %.9g within %.3g\n",
					    ops->name, c, k, stride, pad, o, p, oc, y[p * o + oc],
					    sum, gam * abs);
					fail();
				}
			}
	}
	free(xp), free(wt), free(y);
}

static void test_sconv_bound(void **state)
{
	static const uint32_t cs[] = {1, 3, 5};
	static const uint32_t ks[] = {1, 3, 5, 11};
	static const uint32_t os[] = {1, 16, 17, 32, 40, 96};

	(void)state;
	test_mix_seed(11);
	for (size_t i = 0; i < sizeof(cs) / sizeof(*cs); i++)
		for (size_t j = 0; j < sizeof(ks) / sizeof(*ks); j++)
			sconv_case(cs[i], ks[j], 1 + test_mix_below(4),
				   test_mix_below(ks[j] < 3 ? 1 : 3), os[test_mix_below(6)]);
	sconv_case(1, 3, 1, 1, 32);
}

/* decide_pack: every table equals the reference bit for bit, unsure sets included. */
static int cmp_u32(const void *a, const void *b)
{
	uint32_t x = *(const uint32_t *)a, y = *(const uint32_t *)b;

	return (x > y) - (x < y);
}

static void decide_case(uint32_t o, uint32_t np)
{
	float *y = xalloc((size_t)o * np * 4), *thr = xalloc(o * 4), *e = xalloc(o * 4);
	uint8_t *flip = xalloc(o);
	uint64_t *want = xalloc((size_t)np * model_words(o) * 8);
	uint64_t *got = xalloc((size_t)np * model_words(o) * 8);
	uint32_t *uw = xalloc((size_t)o * np * 4), *ug = xalloc((size_t)o * np * 4), nw, ng;
	struct kern_decide d = {thr, e, flip};

	for (uint32_t c = 0; c < o; c++) {
		uint32_t kind = test_mix_below(5);

		thr[c] = kind == 0 ? -INFINITY : (float)rand_real() * 4.0f;
		e[c] = kind == 1 ? 0.0f : (float)fabs(rand_real()) * 0.3f;
		flip[c] = test_mix_below(2);
	}
	for (size_t i = 0; i < (size_t)o * np; i++) {
		uint32_t c = (uint32_t)(i % o), kind = test_mix_below(4);
		float t = isfinite(thr[c]) ? thr[c] : 0.0f;

		y[i] = kind == 0   ? t
		       : kind == 1 ? t + (float)rand_real() * 0.5f
				   : (float)rand_real() * 8.0f;
	}
	nw = kern_ops_ref.decide_pack(y, o, np, &d, want, uw);
	qsort(uw, nw, 4, cmp_u32);
	for (uint32_t i = 0; i < nw; i++)
		assert_true(e[uw[i] % o] > 0.0f);
	for (size_t t = 0; t < sizeof(isa_names) / sizeof(*isa_names); t++) {
		const struct kern_bin_ops *ops = isa_ops(isa_names[t]);

		if (!ops)
			continue;
		memset(got, 0xa5, (size_t)np * model_words(o) * 8);
		ng = ops->decide_pack(y, o, np, &d, got, ug);
		qsort(ug, ng, 4, cmp_u32);
		assert_int_equal(ng, nw);
		assert_memory_equal(ug, uw, (size_t)nw * 4);
		check_words(got, want, (size_t)np * model_words(o), "decide_pack", ops->name);
	}
	free(y), free(thr), free(e), free(flip), free(want), free(got), free(uw), free(ug);
}

static void test_decide_pack_shapes(void **state)
{
	static const uint32_t os[] = {1, 7, 8, 9, 32, 64, 65, 130};

	(void)state;
	test_mix_seed(12);
	for (size_t i = 0; i < sizeof(os) / sizeof(*os); i++)
		for (int r = 0; r < 3; r++)
			decide_case(os[i], 1 + test_mix_below(100));
	decide_case(32, 784);
}

/* --- dot products (struct kern_dot) ------------------------------------------------------ */

/*
 * One shape: m rows of a against n rows of b, nseg segments of seg elements, b's rows at offsets
 * (boff) or ldb apart with segments bstride apart, outputs strided. Every table equals the
 * reference bit for bit (float, double; exact integers for u8), and the float sums are within
 * the bound of their order of the exact sum (long double): gamma(K/16 + nseg + 5) sum |a b|.
 */
static void dot_case(uint32_t m, uint32_t n, uint32_t nseg, uint32_t seg, bool offsets, bool bias)
{
	const size_t k = (size_t)nseg * seg, bstride = seg + test_mix_below(3);
	const size_t brow = offsets ? (size_t)nseg * bstride + 5 : (size_t)nseg * bstride;
	float *a = xalloc(m * k * 4), *b = xalloc(n * brow * 4 + 64), *bi = xalloc(m * 4);
	double *ad = xalloc(m * k * 8), *bd = xalloc(n * brow * 8 + 64), *bid = xalloc(m * 8);
	int8_t *a8 = xalloc(m * k);
	uint8_t *b8 = xalloc(n * brow + 64);
	uint32_t *off = xalloc(n * 4);
	float *c[2] = {xalloc((size_t)m * n * 4), xalloc((size_t)m * n * 4)};
	double *cd[2] = {xalloc((size_t)m * n * 8), xalloc((size_t)m * n * 8)};
	int32_t *c8[2] = {xalloc((size_t)m * n * 4), xalloc((size_t)m * n * 4)};
	const uint32_t chain = (uint32_t)(k / 16 + nseg + 5);
	const double gam = chain * 0x1p-24 / (1 - chain * 0x1p-24);

	for (size_t i = 0; i < m * k; i++) {
		ad[i] = a[i] = (float)rand_real() * (test_mix_below(8) ? 1.0f : 1e-3f);
		a8[i] = (int8_t)test_mix_below(128);
	}
	for (size_t i = 0; i < n * brow + 16; i++) {
		bd[i] = b[i] = (float)rand_real();
		b8[i] = (uint8_t)test_mix_below(256);
	}
	for (uint32_t i = 0; i < m; i++)
		bid[i] = bi[i] = (float)rand_real();
	for (uint32_t j = 0; j < n; j++)
		off[j] = (uint32_t)(offsets ? (size_t)(n - 1 - j) * brow + test_mix_below(5) : 0);
	for (int t = 0; t < 2; t++) {
		const struct kern_bin_ops *ops = t ? NULL : &kern_ops_ref;
		struct kern_dot d = {.lda = k,
				     .boff = offsets ? off : NULL,
				     .ldb = brow,
				     .bstride = bstride,
				     .m = m,
				     .n = n,
				     .nseg = nseg,
				     .seg = seg,
				     .ldci = n,
				     .ldcj = 1};

		for (size_t i = 0; i < sizeof(isa_names) / sizeof(*isa_names) && !ops; i++)
			ops = isa_ops(isa_names[i]);
		if (!ops)
			return;
		d.a = a, d.b = b, d.c = c[t], d.bias = bias ? bi : NULL;
		ops->dot_f32(&d);
		d.a = ad, d.b = bd, d.c = cd[t], d.bias = bias ? bid : NULL;
		ops->dot_f64(&d);
		d.a = a8, d.b = b8, d.c = c8[t], d.bias = NULL;
		ops->dot_u8(&d);
		if (!t)
			continue;
		assert_memory_equal(c[0], c[1], (size_t)m * n * 4);
		assert_memory_equal(cd[0], cd[1], (size_t)m * n * 8);
	}
	for (uint32_t i = 0; i < m; i++)
		for (uint32_t j = 0; j < n; j++) {
			const size_t bo = offsets ? off[j] : (size_t)j * brow;
			long double sum = 0, abs = 0;
			int64_t isum = 0;

			for (uint32_t s = 0; s < nseg; s++)
				for (uint32_t e = 0; e < seg; e++) {
					long double v = (long double)a[i * k + s * seg + e] *
							b[bo + s * bstride + e];

					sum += v, abs += fabsl(v);
					isum += (int64_t)a8[i * k + s * seg + e] *
						b8[bo + s * bstride + e];
				}
			if (bias)
				sum += bi[i], abs += fabsl((long double)bi[i]);
			assert_true(fabsl(c[1][i * n + j] - sum) <= gam * abs + 0x1p-140L);
			assert_true(fabsl(cd[1][i * n + j] - sum) <= 1e-13L * abs);
			assert_int_equal(c8[1][i * n + j], isum);
			assert_int_equal(c8[0][i * n + j], isum);
		}
	free(a), free(b), free(bi), free(ad), free(bd), free(bid), free(a8), free(b8), free(off);
	free(c[0]), free(c[1]), free(cd[0]), free(cd[1]), free(c8[0]), free(c8[1]);
}

static void test_dot_tables(void **state)
{
	static const uint32_t segs[] = {1, 7, 8, 15, 16, 17, 33, 64, 100, 288};

	(void)state;
	test_mix_seed(21);
	for (size_t i = 0; i < sizeof(segs) / sizeof(*segs); i++)
		dot_case(1 + test_mix_below(9), 1 + test_mix_below(9), 1 + test_mix_below(3),
			 segs[i], test_mix_below(2), test_mix_below(2));
	dot_case(64, 1, 1, 3136, false, true);	/* a matrix-vector product */
	dot_case(9, 70, 1, 5000, false, false); /* K in ranges, lanes carried between them */
	dot_case(12, 300, 3, 96, true, true);	/* a conv's k segments, many pixels */
}

int main(void)
{
	const struct CMUnitTest tests[] = {
	    cmocka_unit_test(test_conv_f64_shapes),
	    cmocka_unit_test(test_dense_f64_batches),
	    cmocka_unit_test(test_elementwise_f64_exact),
	    cmocka_unit_test(test_maxpool_f64_overlap),
	    cmocka_unit_test(test_lrn_f64_edges),
	    ISA_TESTS(test_sconv_bound),
	    ISA_TESTS(test_decide_pack_shapes),
	    ISA_TESTS(test_dot_tables),
	};

	return cmocka_run_group_tests(tests, NULL, NULL);
}
