// SPDX-License-Identifier: MIT
/*
 * The float32 conv of the float layers against the reference table, on odd shapes (odd channel
 * counts and widths, padding, stride 2, 1x1 to 5x5 kernels, more taps than one chunk, filters
 * not a multiple of a block): sconv and sconv_packed of every table. With small integer inputs
 * and weights every partial sum is exact in float32, so each table must give the reference's
 * bits; with real weights each output lies within 2 gamma_n sum |w x| of the reference's. The
 * element-wise pool_transpose of every float table gives the bits of transpose then maxpool,
 * NaN, infinities and signed zeros included.
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

#include "kernels/felem.h"
#include "kernels/kern.h"
#include "kernels/kern_ops.h"
#include "tests/support/isa_table.h"
#include "tests/support/rng.h"

#define GUARD 64 /* floats past the output that no kernel may write */

struct shape {
	uint32_t c, h, w, o, k, stride, pad;
};

static const struct shape shapes[] = {
    {1, 28, 28, 32, 3, 1, 1},  {3, 9, 31, 47, 5, 2, 2},	  {7, 13, 29, 33, 1, 1, 0},
    {5, 17, 37, 65, 3, 2, 1},  {29, 10, 10, 96, 3, 1, 1}, {37, 6, 45, 17, 5, 1, 2},
    {2, 5, 5, 1, 5, 1, 0},     {64, 8, 8, 100, 3, 1, 1},  {3, 11, 15, 16, 5, 2, 0},
    {13, 16, 16, 40, 3, 1, 1}, {9, 7, 57, 31, 1, 2, 0},	  {1, 3, 3, 7, 3, 1, 1},
};

static float *falloc(size_t n)
{
	float *p = aligned_alloc(64, ((n + GUARD) * sizeof(float) + 63) / 64 * 64);

	assert_non_null(p);
	memset(p, 0xa5, (n + GUARD) * sizeof(float));
	return p;
}

static void conv_case(const struct shape *s, bool integer)
{
	const struct kern_bin_ops *ops = NULL;
	struct kern_conv_geom g = {s->c, s->h, s->w, s->o, 0, 0, s->k, s->stride, s->pad};
	const uint32_t n = s->c * s->k * s->k;
	const double gam = n * 0x1p-24 / (1.0 - n * 0x1p-24);
	const size_t hp = s->h + 2 * s->pad, wp = s->w + 2 * s->pad;
	size_t np;
	float *xp, *wt, *wb, *want, *y;

	g.oh = (s->h + 2 * s->pad - s->k) / s->stride + 1;
	g.ow = (s->w + 2 * s->pad - s->k) / s->stride + 1;
	np = (size_t)g.oh * g.ow;
	xp = falloc(s->c * hp * wp);
	wt = falloc((size_t)n * s->o);
	wb = falloc(kern_sconv_packed_elems(n, s->o));
	want = falloc(np * s->o);
	y = falloc(np * s->o);
	for (size_t i = 0; i < s->c * hp * wp; i++) {
		size_t x = i % wp, yy = i / wp % hp;
		bool border =
		    x < s->pad || x >= s->pad + s->w || yy < s->pad || yy >= s->pad + s->h;

		xp[i] = border ? 0.0f : (float)test_mix_below(256);
	}
	for (size_t i = 0; i < (size_t)n * s->o; i++)
		wt[i] = integer ? (float)test_mix_below(17) - 8.0f
				: (float)((double)(int64_t)(test_mix() >> 11) * 0x1p-52 - 1.0);
	kern_sconv_pack(wt, n, s->o, wb);
	kern_ops_ref.sconv(xp, &g, wt, want);
	for (size_t t = 0; t < sizeof(isa_names) / sizeof(*isa_names); t++)
		if (isa_ops(isa_names[t]))
			ops = isa_ops(isa_names[t]);
	if (!ops)
		goto out;
	for (int packed = 0; packed < 2; packed++) {
		memset(y, 0xa5, (np * s->o + GUARD) * sizeof(float));
		if (packed)
			ops->sconv_packed(xp, &g, wb, y);
		else
			ops->sconv(xp, &g, wt, y);
		for (size_t i = np * s->o; i < np * s->o + GUARD; i++)
			if (memcmp(&y[i], &want[np * s->o], sizeof(float))) {
				print_error("%s sconv%s c%u %ux%u o%u k%u s%u p%u: wrote past the "
					    "output at %zu\n",
					    ops->name, packed ? "_packed" : "", s->c, s->h, s->w,
					    s->o, s->k, s->stride, s->pad, i);
				fail();
			}
		for (size_t p = 0; p < np; p++)
			for (uint32_t oc = 0; oc < s->o; oc++) {
				size_t oy = p / g.ow, ox = p % g.ow, q = 0;
				double abs = 0.0, got = y[p * s->o + oc], ref = want[p * s->o + oc];

				for (uint32_t ci = 0; ci < s->c; ci++)
					for (uint32_t ky = 0; ky < s->k; ky++)
						for (uint32_t kx = 0; kx < s->k; kx++, q++)
							abs += fabs(
							    (double)wt[q * s->o + oc] *
							    xp[(ci * hp + oy * s->stride + ky) *
								   wp +
							       ox * s->stride + kx]);
				if (integer ? memcmp(&y[p * s->o + oc], &want[p * s->o + oc],
						     sizeof(float)) != 0
					    : !(fabs(got - ref) <= 2.0 * gam * abs)) {
					print_error("%s sconv%s c%u %ux%u o%u k%u s%u p%u (%s): "
						    "y[%zu][%u] = %.9g, reference %.9g\n",
						    ops->name, packed ? "_packed" : "", s->c, s->h,
						    s->w, s->o, s->k, s->stride, s->pad,
						    integer ? "integers" : "reals", p, oc, got,
						    ref);
					fail();
				}
			}
	}
out:
	free(xp), free(wt), free(wb), free(want), free(y);
}

static void test_sconv_odd_shapes(void **state)
{
	(void)state;
	test_mix_seed(23);
	for (size_t i = 0; i < sizeof(shapes) / sizeof(*shapes); i++) {
		conv_case(&shapes[i], true);
		conv_case(&shapes[i], false);
	}
}

static float special(void)
{
	static const float v[] = {0.0f, -0.0f, INFINITY, -INFINITY, NAN, 1.0f, -1.0f};
	uint64_t r = test_mix_below(16);

	return r < 7 ? v[r] : (float)test_mix_below(9) - 4.0f;
}

static void test_pool_transpose_bits(void **state)
{
	static const uint32_t cs[] = {1, 17, 64, 70, 130};
	const struct kern_felem *ref = kern_felem_for("ref");

	(void)state;
	test_mix_seed(5);
	for (size_t t = 0; t < sizeof(isa_names) / sizeof(*isa_names); t++) {
		const struct kern_felem *fe;

		if (!isa_ops(isa_names[t]))
			continue;
		fe = kern_felem_for(isa_names[t]);
		for (size_t ci = 0; ci < sizeof(cs) / sizeof(*cs); ci++)
			for (uint32_t k = 2; k <= 3; k++)
				for (uint32_t st = 1; st <= 2; st++) {
					const uint32_t C = cs[ci], h = k + test_mix_below(9);
					const uint32_t w = k + test_mix_below(9);
					const uint32_t oh = (h - k) / st + 1, ow = (w - k) / st + 1;
					const size_t np = (size_t)h * w, on = (size_t)C * oh * ow;
					float *x = falloc(np * C), *b = falloc(C),
					      *mid = falloc(np * C);
					float *want = falloc(on), *y = falloc(on);
					const bool bias = test_mix_below(2);

					for (size_t i = 0; i < np * C; i++)
						x[i] = special();
					for (uint32_t c = 0; c < C; c++)
						b[c] = test_mix_below(3)
							   ? (float)test_mix_below(5) - 2.0f
							   : -0.0f;
					ref->transpose(x, (uint32_t)np, C, bias ? b : NULL, mid);
					ref->maxpool(mid, C, h, w, k, st, want);
					fe->pool_transpose(x, h, w, C, k, st, bias ? b : NULL, y);
					if (memcmp(y, want, (on + GUARD) * sizeof(float))) {
						print_error(
						    "%s pool_transpose C%u %ux%u k%u s%u bias %d: "
						    "bits differ from transpose + maxpool\n",
						    isa_names[t], C, h, w, k, st, bias);
						fail();
					}
					free(x), free(b), free(mid), free(want), free(y);
				}
	}
}

int main(void)
{
	const struct CMUnitTest tests[] = {
	    ISA_TESTS(test_sconv_odd_shapes),
	    ISA_TESTS(test_pool_transpose_bits),
	};

	return cmocka_run_group_tests(tests, NULL, NULL);
}
