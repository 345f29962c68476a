// SPDX-License-Identifier: MIT
/*
 * Binary layer kernels: every kernel of every table (ref, avx2, avx512; a table this CPU cannot
 * run is skipped with a message) equals a plain loop over unpacked +-1 values bit for bit, with
 * output tail bits zero (the float kernels: tests/test_kernels_float.c). Shapes are drawn from
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
#include "tests/support/rng.h"

#define GARBAGE 0xa5a5a5a5a5a5a5a5ull

#include "tests/support/isa_table.h"

static void *xalloc(size_t bytes)
{
	void *p = aligned_alloc(64, (bytes + 63) / 64 * 64 + 64);

	assert_non_null(p);
	memset(p, 0xa5, (bytes + 63) / 64 * 64 + 64);
	return p;
}

static const struct kern_bin_ops *table(const char *name)
{
	const struct kern_bin_ops *ops = kern_ops_by_name(name);

	if (!ops)
		print_message("skipped: this CPU cannot run the %s kernels\n", name);
	return ops;
}

/* Random +-1 values and their packing: count vectors of n values, each ceil(n/64) words. */
static void rand_signs(int8_t *v, uint64_t *packed, uint32_t n, uint32_t count)
{
	uint32_t nw = model_words(n);

	memset(packed, 0, (size_t)count * nw * 8);
	for (uint32_t k = 0; k < count; k++)
		for (uint32_t i = 0; i < n; i++) {
			int bit = test_mix() & 1;

			v[(size_t)k * n + i] = bit ? 1 : -1;
			packed[(size_t)k * nw + i / 64] |= (uint64_t)bit << (i % 64);
		}
}

static int plain_bit(int64_t dot, int32_t thr, uint8_t flip)
{
	return (dot >= thr) ^ (flip != 0);
}

/* Thresholds around the dots, some exactly on a dot, some INT32_MIN, some flipped. */
static void rand_thresh(int32_t *thr, uint8_t *flip, uint32_t out, uint32_t span,
			const int64_t *dots)
{
	for (uint32_t o = 0; o < out; o++) {
		uint32_t kind = test_mix_below(5);

		thr[o] = kind == 0   ? INT32_MIN
			 : kind == 1 ? (int32_t)dots[o]
				     : (int32_t)test_mix_below(2 * span + 3) - (int32_t)span - 1;
		flip[o] = test_mix_below(2) ? 1 : 0;
	}
}

/* Expected bits [count][words(out)] from dots [count][out]. */
static void plain_pack(const int64_t *dots, uint32_t count, uint32_t out, const int32_t *thr,
		       const uint8_t *flip, uint64_t *bits)
{
	uint32_t ow = model_words(out);

	memset(bits, 0, (size_t)count * ow * 8);
	for (uint32_t k = 0; k < count; k++)
		for (uint32_t o = 0; o < out; o++)
			bits[(size_t)k * ow + o / 64] |=
			    (uint64_t)plain_bit(dots[(size_t)k * out + o], thr[o], flip[o])
			    << (o % 64);
}

static void check_dots(const int32_t *got, const int64_t *want, size_t count, const char *what,
		       const char *isa)
{
	for (size_t i = 0; i < count; i++)
		if (got[i] != want[i]) {
			print_error("%s %s: element %zu = %d, want %lld\n", isa, what, i, got[i],
				    (long long)want[i]);
			fail();
		}
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

/* --- binary dense ------------------------------------------------------------------------- */

static void bdense_case(uint32_t n, uint32_t batch, uint32_t out)
{
	uint32_t nw = model_words(n), ow = model_words(out);
	int8_t *xv = xalloc((size_t)batch * n), *wv = xalloc((size_t)out * n);
	uint64_t *x = xalloc((size_t)batch * nw * 8), *w = xalloc((size_t)out * nw * 8);
	int64_t *dots = xalloc((size_t)batch * out * 8);
	int32_t *y = xalloc((size_t)batch * out * 4), *thr = xalloc(out * 4);
	uint8_t *flip = xalloc(out);
	uint64_t *bits = xalloc((size_t)batch * ow * 8), *want = xalloc((size_t)batch * ow * 8);
	struct kern_thresh t = {thr, flip};

	rand_signs(xv, x, n, batch);
	rand_signs(wv, w, n, out);
	for (uint32_t b = 0; b < batch; b++)
		for (uint32_t o = 0; o < out; o++) {
			int64_t s = 0;

			for (uint32_t i = 0; i < n; i++)
				s += xv[(size_t)b * n + i] * wv[(size_t)o * n + i];
			dots[(size_t)b * out + o] = s;
		}
	rand_thresh(thr, flip, out, n, dots);
	plain_pack(dots, batch, out, thr, flip, want);

	for (size_t i = 0; i < sizeof(isa_names) / sizeof(*isa_names); i++) {
		const struct kern_bin_ops *ops = isa_ops(isa_names[i]);

		if (!ops)
			continue;
		memset(y, 0xa5, (size_t)batch * out * 4);
		ops->bdense(x, batch, w, out, n, y);
		check_dots(y, dots, (size_t)batch * out, "bdense", ops->name);
		memset(bits, 0xa5, (size_t)batch * ow * 8);
		ops->bdense_thr(x, batch, w, out, n, &t, bits);
		check_words(bits, want, (size_t)batch * ow, "bdense_thr", ops->name);
	}
	free(xv), free(wv), free(x), free(w), free(dots), free(y), free(thr), free(flip);
	free(bits), free(want);
}

static void announce_tables(void)
{
	for (size_t i = 0; i < sizeof(isa_names) / sizeof(*isa_names); i++)
		table(isa_names[i]);
}

static void test_bdense_shapes(void **state)
{
	static const uint32_t ns[] = {1, 63, 64, 65, 127, 130, 1000, 4096};
	static const uint32_t batches[] = {1, 2, 3, 7, 64};
	static const uint32_t outs[] = {1, 5, 67, 130};

	(void)state;
	announce_tables();
	test_mix_seed(1);
	for (size_t i = 0; i < sizeof(ns) / sizeof(*ns); i++)
		for (size_t j = 0; j < sizeof(batches) / sizeof(*batches); j++)
			bdense_case(ns[i], batches[j], outs[test_mix_below(4)]);
}

static void test_bdense_random(void **state)
{
	(void)state;
	test_mix_seed(2);
	for (int i = 0; i < 40; i++)
		bdense_case(1 + test_mix_below(700), 1 + test_mix_below(20),
			    1 + test_mix_below(200));
}

/*
 * Batches around the groups of 8 images the SIMD GEMM packs one per lane (8, 9, 15, 16, 17, 63,
 * 64, 65), odd widths and row counts, and widths past its packing buffer (which fall back).
 */
static void test_bdense_batches(void **state)
{
	static const uint32_t ns[] = {1, 63, 65, 511, 513, 4159, 33000};
	static const uint32_t batches[] = {8, 9, 15, 16, 17, 24, 63, 64, 65};
	static const uint32_t outs[] = {1, 7, 9, 63, 67};

	(void)state;
	test_mix_seed(6);
	for (size_t i = 0; i < sizeof(ns) / sizeof(*ns); i++)
		for (size_t j = 0; j < sizeof(batches) / sizeof(*batches); j++)
			if (ns[i] < 8192 || j % 4 == 0)
				bdense_case(ns[i], batches[j], outs[test_mix_below(5)]);
}

static void bdense_u8_case(uint32_t n, uint32_t batch, uint32_t out)
{
	uint32_t nw = model_words(n), ow = model_words(out);
	uint8_t *x = xalloc((size_t)batch * n), *flip = xalloc(out);
	int8_t *wv = xalloc((size_t)out * n);
	uint64_t *w = xalloc((size_t)out * nw * 8);
	int64_t *dots = xalloc((size_t)batch * out * 8);
	int32_t *y = xalloc((size_t)batch * out * 4), *thr = xalloc(out * 4);
	uint64_t *bits = xalloc((size_t)batch * ow * 8), *want = xalloc((size_t)batch * ow * 8);
	void *scratch = xalloc(kern_bdense_u8_scratch(n, batch));
	struct kern_thresh t = {thr, flip};

	for (size_t i = 0; i < (size_t)batch * n; i++) {
		uint32_t kind = test_mix_below(4);

		x[i] = kind == 0 ? 0 : kind == 1 ? 255 : (uint8_t)test_mix();
	}
	rand_signs(wv, w, n, out);
	for (uint32_t b = 0; b < batch; b++)
		for (uint32_t o = 0; o < out; o++) {
			int64_t s = 0;

			for (uint32_t i = 0; i < n; i++)
				s += x[(size_t)b * n + i] * wv[(size_t)o * n + i];
			dots[(size_t)b * out + o] = s;
		}
	rand_thresh(thr, flip, out, 255 * n, dots);
	plain_pack(dots, batch, out, thr, flip, want);

	for (size_t i = 0; i < sizeof(isa_names) / sizeof(*isa_names); i++) {
		const struct kern_bin_ops *ops = isa_ops(isa_names[i]);

		if (!ops)
			continue;
		memset(y, 0xa5, (size_t)batch * out * 4);
		ops->bdense_u8(x, batch, w, out, n, y, scratch);
		check_dots(y, dots, (size_t)batch * out, "bdense_u8", ops->name);
		memset(bits, 0xa5, (size_t)batch * ow * 8);
		ops->bdense_u8_thr(x, batch, w, out, n, &t, bits, scratch);
		check_words(bits, want, (size_t)batch * ow, "bdense_u8_thr", ops->name);
	}
	free(x), free(flip), free(wv), free(w), free(dots), free(y), free(thr), free(bits);
	free(want), free(scratch);
}

static void test_bdense_u8_shapes(void **state)
{
	static const uint32_t ns[] = {1, 63, 64, 65, 127, 130, 784, 1000, 4096};
	static const uint32_t batches[] = {1, 2, 3, 7};
	static const uint32_t outs[] = {1, 3, 67, 130};

	(void)state;
	test_mix_seed(3);
	for (size_t i = 0; i < sizeof(ns) / sizeof(*ns); i++)
		for (size_t j = 0; j < sizeof(batches) / sizeof(*batches); j++)
			bdense_u8_case(ns[i], batches[j], outs[test_mix_below(4)]);
}

/* Batches that take the int8 (VNNI) path of the AVX-512 table: 4 images and up. */
static void test_bdense_u8_batches(void **state)
{
	static const uint32_t ns[] = {1, 64, 100, 784, 4096, 4100};
	static const uint32_t batches[] = {4, 17, 64};
	static const uint32_t outs[] = {4, 16, 17, 64, 130};

	(void)state;
	test_mix_seed(14);
	for (size_t i = 0; i < sizeof(ns) / sizeof(*ns); i++)
		for (size_t j = 0; j < sizeof(batches) / sizeof(*batches); j++)
			bdense_u8_case(ns[i], batches[j], outs[test_mix_below(5)]);
}

/* --- binary conv -------------------------------------------------------------------------- */

/* Plain dot of one output pixel: img C-major +-1, wo [c][k][k] +-1, padding contributes 0. */
static int64_t plain_conv_dot(const int8_t *img, const int8_t *wo, const struct kern_conv_geom *g,
			      uint32_t oy, uint32_t ox)
{
	int64_t s = 0;

	for (uint32_t ch = 0; ch < g->c; ch++)
		for (uint32_t ky = 0; ky < g->k; ky++)
			for (uint32_t kx = 0; kx < g->k; kx++) {
				int64_t y = (int64_t)oy * g->stride + ky - g->pad;
				int64_t x = (int64_t)ox * g->stride + kx - g->pad;

				if (y < 0 || y >= g->h || x < 0 || x >= g->w)
					continue;
				s += img[((size_t)ch * g->h + y) * g->w + x] *
				     wo[((size_t)ch * g->k + ky) * g->k + kx];
			}
	return s;
}

/* An input of h x w pixels (0: small random sizes). */
static void bconv_case_hw(uint32_t c, uint32_t k, uint32_t stride, uint32_t pad, uint32_t o,
			  uint32_t batch, uint32_t in_h, uint32_t in_w)
{
	struct kern_conv_geom g = {.c = c, .k = k, .stride = stride, .pad = pad, .o = o};
	uint32_t wpp = model_words(c), ow;
	int8_t *xv, *wv;
	uint64_t *x, *w, *bits, *want;
	int64_t *dots;
	int32_t *y, *thr;
	uint8_t *flip;
	size_t ohw, in_words;

	g.h = k - 2 * pad + test_mix_below(7) + (k > 2 * pad ? 0 : 2 * pad);
	g.w = k - 2 * pad + test_mix_below(7) + (k > 2 * pad ? 0 : 2 * pad);
	g.h = in_h ? in_h : g.h < 1 ? 1 : g.h;
	g.w = in_w ? in_w : g.w < 1 ? 1 : g.w;
	g.oh = (g.h + 2 * pad - k) / stride + 1;
	g.ow = (g.w + 2 * pad - k) / stride + 1;
	ohw = (size_t)g.oh * g.ow;
	in_words = (size_t)g.h * g.w * wpp;
	ow = model_words(o);

	xv = xalloc((size_t)batch * c * g.h * g.w);
	wv = xalloc((size_t)o * c * k * k);
	x = xalloc(batch * in_words * 8);
	w = xalloc((size_t)o * k * k * wpp * 8);
	dots = xalloc((size_t)batch * o * ohw * 8);
	y = xalloc((size_t)batch * o * ohw * 4);
	thr = xalloc(o * 4);
	flip = xalloc(o);
	bits = xalloc((size_t)batch * ohw * ow * 8);
	want = xalloc((size_t)batch * ohw * ow * 8);

	/* Unpacked C-major values, packed channel-major per pixel / per tap. */
	memset(x, 0, batch * in_words * 8);
	for (uint32_t b = 0; b < batch; b++)
		for (uint32_t ch = 0; ch < c; ch++)
			for (uint32_t p = 0; p < g.h * g.w; p++) {
				int bit = test_mix() & 1;

				xv[((size_t)b * c + ch) * g.h * g.w + p] = bit ? 1 : -1;
				x[b * in_words + (size_t)p * wpp + ch / 64] |= (uint64_t)bit
									       << (ch % 64);
			}
	memset(w, 0, (size_t)o * k * k * wpp * 8);
	for (uint32_t oc = 0; oc < o; oc++)
		for (uint32_t ch = 0; ch < c; ch++)
			for (uint32_t t = 0; t < k * k; t++) {
				int bit = test_mix() & 1;

				wv[((size_t)oc * c + ch) * k * k + t] = bit ? 1 : -1;
				w[((size_t)oc * k * k + t) * wpp + ch / 64] |= (uint64_t)bit
									       << (ch % 64);
			}
	for (uint32_t b = 0; b < batch; b++)
		for (uint32_t oc = 0; oc < o; oc++)
			for (uint32_t oy = 0; oy < g.oh; oy++)
				for (uint32_t ox = 0; ox < g.ow; ox++)
					dots[((size_t)b * o + oc) * ohw + oy * g.ow + ox] =
					    plain_conv_dot(xv + (size_t)b * c * g.h * g.w,
							   wv + (size_t)oc * c * k * k, &g, oy, ox);
	{
		int64_t first[512];

		for (uint32_t oc = 0; oc < o && oc < 512; oc++)
			first[oc] = dots[(size_t)oc * ohw + test_mix_below((uint32_t)ohw)];
		rand_thresh(thr, flip, o, c * k * k, first);
	}
	/* Expected thresholded bits, pixel-major [b][pixel][words(o)]. */
	memset(want, 0, (size_t)batch * ohw * ow * 8);
	for (uint32_t b = 0; b < batch; b++)
		for (uint32_t oc = 0; oc < o; oc++)
			for (size_t p = 0; p < ohw; p++)
				want[((size_t)b * ohw + p) * ow + oc / 64] |=
				    (uint64_t)plain_bit(dots[((size_t)b * o + oc) * ohw + p],
							thr[oc], flip[oc])
				    << (oc % 64);

	for (size_t i = 0; i < sizeof(isa_names) / sizeof(*isa_names); i++) {
		const struct kern_bin_ops *ops = isa_ops(isa_names[i]);
		struct kern_thresh t = {thr, flip};

		if (!ops)
			continue;
		memset(y, 0xa5, (size_t)batch * o * ohw * 4);
		ops->bconv(x, batch, &g, w, y);
		check_dots(y, dots, (size_t)batch * o * ohw, "bconv", ops->name);
		memset(bits, 0xa5, (size_t)batch * ohw * ow * 8);
		ops->bconv_thr(x, batch, &g, w, &t, bits);
		check_words(bits, want, (size_t)batch * ohw * ow, "bconv_thr", ops->name);
	}
	free(xv), free(wv), free(x), free(w), free(dots), free(y), free(thr), free(flip);
	free(bits), free(want);
}

static void bconv_case(uint32_t c, uint32_t k, uint32_t stride, uint32_t pad, uint32_t o,
		       uint32_t batch)
{
	bconv_case_hw(c, k, stride, pad, o, batch, 0, 0);
}

/*
 * Inputs large enough for long runs of pixels whose 3x3 window lies inside (the shapes of the
 * bundled binary CNN among them), odd sizes, partial channel blocks, strides 1 and 2.
 */
static void test_bconv_large(void **state)
{
	static const uint32_t cs[] = {32, 31, 64, 57};
	static const uint32_t os[] = {64, 65, 23};
	static const uint32_t hs[] = {28, 14, 13};

	(void)state;
	test_mix_seed(14);
	for (size_t i = 0; i < sizeof(cs) / sizeof(*cs); i++)
		for (size_t j = 0; j < sizeof(os) / sizeof(*os); j++)
			bconv_case_hw(cs[i], 3, j == 2 ? 1 + (uint32_t)i % 2 : 1, 1, os[j],
				      1 + (uint32_t)j, hs[(i + j) % 3], hs[(i + 2 * j) % 3]);
}

static void test_bconv_shapes(void **state)
{
	static const uint32_t cs[] = {1, 3, 32, 64, 65, 130};
	static const uint32_t ks[] = {1, 3, 5};
	static const uint32_t os[] = {1, 8, 9, 70};

	(void)state;
	test_mix_seed(4);
	for (size_t i = 0; i < sizeof(cs) / sizeof(*cs); i++)
		for (size_t j = 0; j < sizeof(ks) / sizeof(*ks); j++)
			for (uint32_t stride = 1; stride <= 2; stride++)
				for (uint32_t pad = 0; pad <= 2; pad++)
					bconv_case(cs[i], ks[j], stride, pad, os[test_mix_below(4)],
						   1 + test_mix_below(2));
}

/* --- packing and bit pooling -------------------------------------------------------------- */

static void pack_case(uint32_t c, uint32_t h, uint32_t w, uint32_t batch, bool thresh)
{
	size_t hw = (size_t)h * w, n = (size_t)batch * c * hw;
	uint32_t wpp = model_words(c);
	double *x = xalloc(n * 8);
	int32_t *thr = xalloc(c * 4);
	uint8_t *flip = xalloc(c);
	uint64_t *y = xalloc((size_t)batch * hw * wpp * 8),
		 *want = xalloc((size_t)batch * hw * wpp * 8);
	struct kern_thresh t = {thr, flip};

	for (size_t i = 0; i < n; i++) {
		uint32_t kind = test_mix_below(6);

		if (thresh)
			x[i] = (double)((int32_t)test_mix_below(41) - 20);
		else
			x[i] = kind == 0   ? 0.0
			       : kind == 1 ? -0.0
					   : (double)(int64_t)test_mix() / 1e18;
	}
	for (uint32_t ch = 0; ch < c; ch++) {
		uint32_t kind = test_mix_below(4);

		thr[ch] = kind == 0 ? INT32_MIN : (int32_t)test_mix_below(41) - 20;
		flip[ch] = test_mix_below(2);
	}
	memset(want, 0, (size_t)batch * hw * wpp * 8);
	for (uint32_t b = 0; b < batch; b++)
		for (uint32_t ch = 0; ch < c; ch++)
			for (size_t p = 0; p < hw; p++) {
				double v = x[((size_t)b * c + ch) * hw + p];
				int bit =
				    thresh ? (v >= thr[ch]) ^ flip[ch] : !signbit(v) || v == 0;

				want[((size_t)b * hw + p) * wpp + ch / 64] |= (uint64_t)bit
									      << (ch % 64);
			}
	for (size_t i = 0; i < sizeof(isa_names) / sizeof(*isa_names); i++) {
		const struct kern_bin_ops *ops = isa_ops(isa_names[i]);

		if (!ops)
			continue;
		memset(y, 0xa5, (size_t)batch * hw * wpp * 8);
		if (thresh)
			ops->threshold_pack(x, batch, c, h, w, &t, y);
		else
			ops->sign_pack(x, batch, c, h, w, y);
		check_words(y, want, (size_t)batch * hw * wpp,
			    thresh ? "threshold_pack" : "sign_pack", ops->name);
	}
	free(x), free(thr), free(flip), free(y), free(want);
}

static void test_sign_pack_shapes(void **state)
{
	static const uint32_t cs[] = {1, 3, 8, 63, 64, 65, 130, 200};

	(void)state;
	test_mix_seed(5);
	for (size_t i = 0; i < sizeof(cs) / sizeof(*cs); i++)
		for (int r = 0; r < 3; r++)
			pack_case(cs[i], 1 + test_mix_below(9), 1 + test_mix_below(9),
				  1 + test_mix_below(3), false);
	pack_case(4096, 1, 1, 2, false);
	pack_case(1000, 1, 1, 3, false);
}

static void test_threshold_pack_shapes(void **state)
{
	static const uint32_t cs[] = {1, 3, 8, 63, 64, 65, 130, 200};

	(void)state;
	test_mix_seed(6);
	for (size_t i = 0; i < sizeof(cs) / sizeof(*cs); i++)
		for (int r = 0; r < 3; r++)
			pack_case(cs[i], 1 + test_mix_below(9), 1 + test_mix_below(9),
				  1 + test_mix_below(3), true);
}

/* Plain max of +-1 over the window at (oy, ox) of channel ch; xv is pixel-major [pixel][c]. */
static int plain_pool_max(const int8_t *xv, uint32_t c, uint32_t w, uint32_t k, uint32_t stride,
			  uint32_t oy, uint32_t ox, uint32_t ch)
{
	int m = -1;

	for (uint32_t ky = 0; ky < k; ky++)
		for (uint32_t kx = 0; kx < k; kx++) {
			int v = xv[((size_t)(oy * stride + ky) * w + ox * stride + kx) * c + ch];

			m = v > m ? v : m;
		}
	return m;
}

static void maxpool_bits_case(uint32_t c, uint32_t k, uint32_t stride)
{
	uint32_t h = k + test_mix_below(8), w = k + test_mix_below(8);
	uint32_t wpp = model_words(c), batch = 1 + test_mix_below(2);
	uint32_t oh = (h - k) / stride + 1, ow = (w - k) / stride + 1;
	size_t in_pix = (size_t)h * w, out_words = (size_t)batch * oh * ow * wpp;
	int8_t *xv = xalloc(batch * in_pix * c);
	uint64_t *x = xalloc(batch * in_pix * wpp * 8);
	uint64_t *y = xalloc(out_words * 8), *want = xalloc(out_words * 8);

	/* Vector p of c signs is pixel p: exactly the pixel-major layout. */
	rand_signs(xv, x, c, batch * (uint32_t)in_pix);
	memset(want, 0, out_words * 8);
	for (uint32_t b = 0; b < batch; b++)
		for (uint32_t oy = 0; oy < oh; oy++)
			for (uint32_t ox = 0; ox < ow; ox++)
				for (uint32_t ch = 0; ch < c; ch++) {
					int m = plain_pool_max(xv + b * in_pix * c, c, w, k, stride,
							       oy, ox, ch);

					want[(((size_t)b * oh + oy) * ow + ox) * wpp + ch / 64] |=
					    (uint64_t)(m > 0) << (ch % 64);
				}
	for (size_t t = 0; t < sizeof(isa_names) / sizeof(*isa_names); t++) {
		const struct kern_bin_ops *ops = isa_ops(isa_names[t]);

		if (!ops)
			continue;
		memset(y, 0xa5, out_words * 8);
		ops->maxpool_bits(x, batch, c, h, w, k, stride, y);
		check_words(y, want, out_words, "maxpool_bits", ops->name);
	}
	free(xv), free(x), free(y), free(want);
}

static void test_maxpool_bits_shapes(void **state)
{
	static const uint32_t cs[] = {1, 3, 64, 65, 130};

	(void)state;
	test_mix_seed(7);
	for (size_t i = 0; i < sizeof(cs) / sizeof(*cs); i++)
		for (uint32_t k = 1; k <= 3; k++)
			for (uint32_t stride = 1; stride <= 3; stride++)
				maxpool_bits_case(cs[i], k, stride);
}

/* Per-channel OR/AND pool: against the plain max (OR) and min (AND) of +-1 over the window. */
static void maxpool_bits_and_case(uint32_t c, uint32_t k, uint32_t stride)
{
	uint32_t h = k + test_mix_below(8), w = k + test_mix_below(8);
	uint32_t wpp = model_words(c), batch = 1 + test_mix_below(3);
	uint32_t oh = (h - k) / stride + 1, ow = (w - k) / stride + 1;
	size_t in_pix = (size_t)h * w, out_words = (size_t)batch * oh * ow * wpp;
	int8_t *xv = xalloc(batch * in_pix * c), *neg = xalloc(batch * in_pix * c);
	uint64_t *x = xalloc(batch * in_pix * wpp * 8), *mask = xalloc(wpp * 8);
	uint64_t *y = xalloc(out_words * 8), *want = xalloc(out_words * 8);

	/* Mostly +1 so that AND and OR differ often. */
	rand_signs(xv, x, c, batch * (uint32_t)in_pix);
	for (size_t i = 0; i < batch * in_pix * c; i++)
		if (test_mix_below(3) && xv[i] < 0) {
			xv[i] = 1;
			x[(i / c) * wpp + (i % c) / 64] |= 1ull << (i % c % 64);
		}
	for (size_t i = 0; i < batch * in_pix * c; i++)
		neg[i] = (int8_t)-xv[i];
	memset(mask, 0, wpp * 8);
	for (uint32_t ch = 0; ch < c; ch++)
		mask[ch / 64] |= (uint64_t)(test_mix_below(2) == 0) << (ch % 64);
	memset(want, 0, out_words * 8);
	for (uint32_t b = 0; b < batch; b++)
		for (uint32_t oy = 0; oy < oh; oy++)
			for (uint32_t ox = 0; ox < ow; ox++)
				for (uint32_t ch = 0; ch < c; ch++) {
					bool use_and = mask[ch / 64] >> (ch % 64) & 1;
					int m = use_and ? -plain_pool_max(neg + b * in_pix * c, c,
									  w, k, stride, oy, ox, ch)
							: plain_pool_max(xv + b * in_pix * c, c, w,
									 k, stride, oy, ox, ch);

					want[(((size_t)b * oh + oy) * ow + ox) * wpp + ch / 64] |=
					    (uint64_t)(m > 0) << (ch % 64);
				}
	for (size_t t = 0; t < sizeof(isa_names) / sizeof(*isa_names); t++) {
		const struct kern_bin_ops *ops = isa_ops(isa_names[t]);

		if (!ops)
			continue;
		memset(y, 0xa5, out_words * 8);
		ops->maxpool_bits_and(x, batch, c, h, w, k, stride, mask, y);
		check_words(y, want, out_words, "maxpool_bits_and", ops->name);
	}
	free(xv), free(neg), free(x), free(mask), free(y), free(want);
}

static void test_maxpool_bits_and_shapes(void **state)
{
	static const uint32_t cs[] = {1, 3, 64, 65, 130};

	(void)state;
	test_mix_seed(11);
	for (size_t i = 0; i < sizeof(cs) / sizeof(*cs); i++)
		for (uint32_t k = 1; k <= 3; k++)
			for (uint32_t stride = 1; stride <= 3; stride++)
				maxpool_bits_and_case(cs[i], k, stride);
}

/* --- layout -------------------------------------------------------------------------------- */

static void test_layout_unpack_flatten(void **state)
{
	static const uint32_t cs[] = {1, 3, 64, 65, 130};

	(void)state;
	test_mix_seed(8);
	for (size_t i = 0; i < sizeof(cs) / sizeof(*cs); i++) {
		uint32_t c = cs[i], h = 1 + test_mix_below(6), w = 1 + test_mix_below(6), batch = 2;
		size_t hw = (size_t)h * w, n = (size_t)c * hw, fw = model_words(n);
		uint32_t wpp = model_words(c);
		int8_t *xv = xalloc(batch * hw * c);
		uint64_t *x = xalloc(batch * hw * wpp * 8), *flat = xalloc(batch * fw * 8);
		uint64_t *want = xalloc(batch * fw * 8);
		double *y = xalloc(batch * n * 8);

		rand_signs(xv, x, c, batch * (uint32_t)hw);
		kern_unpack_bits(x, batch, c, h, w, y);
		memset(want, 0, batch * fw * 8);
		for (uint32_t b = 0; b < batch; b++)
			for (uint32_t ch = 0; ch < c; ch++)
				for (size_t p = 0; p < hw; p++) {
					int v = xv[((size_t)b * hw + p) * c + ch];
					size_t e = ch * hw + p;

					assert_true(y[b * n + e] == (double)v);
					want[b * fw + e / 64] |= (uint64_t)(v > 0) << (e % 64);
				}
		memset(flat, 0xa5, batch * fw * 8);
		kern_flatten_bits(x, batch, c, h, w, flat);
		check_words(flat, want, batch * fw, "flatten_bits", "ref");
		free(xv), free(x), free(flat), free(want), free(y);
	}
}

/* Flatten of inputs of more than 64 pixels (several blocks of 64, partial last ones). */
static void test_layout_flatten_large(void **state)
{
	static const uint32_t cs[] = {1, 63, 64, 65, 130};
	static const uint32_t hws[][2] = {{7, 7}, {8, 8}, {9, 9}, {13, 11}, {16, 16}, {1, 200}};

	(void)state;
	test_mix_seed(15);
	for (size_t i = 0; i < sizeof(cs) / sizeof(*cs); i++)
		for (size_t k = 0; k < sizeof(hws) / sizeof(*hws); k++) {
			uint32_t c = cs[i], h = hws[k][0], w = hws[k][1], batch = 3;
			size_t hw = (size_t)h * w, n = (size_t)c * hw, fw = model_words(n);
			int8_t *xv = xalloc(batch * hw * c);
			uint64_t *x = xalloc(batch * hw * model_words(c) * 8);
			uint64_t *flat = xalloc(batch * fw * 8), *want = xalloc(batch * fw * 8);

			rand_signs(xv, x, c, batch * (uint32_t)hw);
			memset(want, 0, batch * fw * 8);
			for (uint32_t b = 0; b < batch; b++)
				for (uint32_t ch = 0; ch < c; ch++)
					for (size_t p = 0; p < hw; p++) {
						size_t e = ch * hw + p;

						want[b * fw + e / 64] |=
						    (uint64_t)(xv[((size_t)b * hw + p) * c + ch] >
							       0)
						    << (e % 64);
					}
			memset(flat, 0xa5, batch * fw * 8);
			kern_flatten_bits(x, batch, c, h, w, flat);
			check_words(flat, want, batch * fw, "flatten_bits", "ref");
			free(xv), free(x), free(flat), free(want);
		}
}

/*
 * Many output channels: the 32-bit lane blocks (inputs of at most 32 channels) and the blocks of
 * 64 output channels (wider inputs), partial last blocks included.
 */
static void test_bconv_blocks(void **state)
{
	static const uint32_t cs[] = {1, 17, 32, 33, 64, 100, 130};
	static const uint32_t os[] = {63, 64, 65, 130, 200};

	(void)state;
	test_mix_seed(13);
	for (size_t i = 0; i < sizeof(cs) / sizeof(*cs); i++)
		for (size_t j = 0; j < sizeof(os) / sizeof(*os); j++)
			bconv_case(cs[i], 1 + 2 * test_mix_below(3), 1 + test_mix_below(2),
				   test_mix_below(2), os[j], 1 + test_mix_below(3));
}

static void test_ops_select_names(void **state)
{
	(void)state;
	assert_non_null(kern_ops_get());
	assert_ptr_equal(kern_ops_by_name("ref"), &kern_ops_ref);
	assert_null(kern_ops_by_name("sse9"));
	for (size_t i = 0; i < sizeof(isa_names) / sizeof(*isa_names); i++) {
		const struct kern_bin_ops *ops = kern_ops_by_name(isa_names[i]);

		if (ops)
			assert_string_equal(ops->name, isa_names[i]);
	}
}

int main(void)
{
	const struct CMUnitTest tests[] = {
	    cmocka_unit_test(test_ops_select_names),
	    ISA_TESTS(test_bdense_shapes),
	    ISA_TESTS(test_bdense_random),
	    ISA_TESTS(test_bdense_batches),
	    ISA_TESTS(test_bdense_u8_shapes),
	    ISA_TESTS(test_bdense_u8_batches),
	    ISA_TESTS(test_bconv_shapes),
	    ISA_TESTS(test_sign_pack_shapes),
	    ISA_TESTS(test_threshold_pack_shapes),
	    ISA_TESTS(test_maxpool_bits_shapes),
	    ISA_TESTS(test_maxpool_bits_and_shapes),
	    cmocka_unit_test(test_layout_unpack_flatten),
	    cmocka_unit_test(test_layout_flatten_large),
	    ISA_TESTS(test_bconv_blocks),
	    ISA_TESTS(test_bconv_large),
	};

	return cmocka_run_group_tests(tests, NULL, NULL);
}
