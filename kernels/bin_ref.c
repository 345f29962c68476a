/* SPDX-License-Identifier: MIT */
/* Reference binary kernels: plain C, the definition every SIMD table is tested against. */
#include <math.h>
#include <string.h>

#include "kernels/bin_impl.h"
#include "kernels/bin_tmpl.h"
#include "kernels/kern.h"
#include "kernels/u8_dot.h"

static uint32_t popc_xor(const uint64_t *a, const uint64_t *b, uint32_t nw)
{
	uint32_t cnt = 0;

	for (uint32_t j = 0; j < nw; j++)
		cnt += (uint32_t)__builtin_popcountll(a[j] ^ b[j]);
	return cnt;
}

static void ref_bdense(const uint64_t *x, uint32_t batch, const uint64_t *w, uint32_t out,
		       uint32_t n, int32_t *y)
{
	uint32_t nw = model_words(n);

	for (uint32_t b = 0; b < batch; b++)
		for (uint32_t o = 0; o < out; o++)
			y[(size_t)b * out + o] =
			    (int32_t)n -
			    2 * (int32_t)popc_xor(x + (size_t)b * nw, w + (size_t)o * nw, nw);
}

static void ref_bdense_thr(const uint64_t *x, uint32_t batch, const uint64_t *w, uint32_t out,
			   uint32_t n, const struct kern_thresh *t, uint64_t *y)
{
	uint32_t nw = model_words(n), ow = model_words(out);

	memset(y, 0, (size_t)batch * ow * sizeof(*y));
	for (uint32_t b = 0; b < batch; b++)
		for (uint32_t o = 0; o < out; o++) {
			int32_t dot = (int32_t)n - 2 * (int32_t)popc_xor(x + (size_t)b * nw,
									 w + (size_t)o * nw, nw);

			y[(size_t)b * ow + o / 64] |= (uint64_t)kern_thr_bit(dot, t, o) << (o % 64);
		}
}

/*
 * dot = sum_i w_i x_i = sum_b 2^b (popc(P_b & W) - popc(P_b & ~W)) = 2 sum_b 2^b popc(P_b & W)
 * - sum_i x_i, with P_b the plane of bit b of the inputs.
 */
static int32_t ref_u8_sum(const uint8_t *x, uint32_t n)
{
	int32_t s = 0;

	for (uint32_t i = 0; i < n; i++)
		s += x[i];
	return s;
}

static void ref_u8_planes(const uint8_t *x, uint32_t n, uint64_t *p, int32_t *sumx)
{
	uint32_t nw = model_words(n);

	*sumx = ref_u8_sum(x, n);
	memset(p, 0, kern_u8_plane_words(n) * sizeof(*p));
	for (uint32_t i = 0; i < n; i++)
		for (uint32_t b = 0; b < 8; b++)
			p[b * nw + i / 64] |= (uint64_t)((x[i] >> b) & 1) << (i % 64);
}

KERN_BDENSE_U8_PLANES(ref_bdense_u8, ref_u8_planes, kern_u8_planes_dot)

size_t kern_bdense_u8_scratch(uint32_t n, uint32_t batch)
{
	(void)batch;
	return kern_u8_plane_words(n) * sizeof(uint64_t);
}

static int32_t ref_bconv_dot(const uint64_t *x, const struct kern_conv_geom *g, const uint64_t *wo,
			     uint32_t oy, uint32_t ox)
{
	uint32_t wpp = model_words(g->c);
	int32_t cnt = 0;
	KERN_BCONV_WINDOW(g, g->k, oy, ox);

	for (uint32_t ky = ky0; ky < ky1; ky++)
		for (uint32_t kx = kx0; kx < kx1; kx++)
			cnt += (int32_t)popc_xor(
			    x + ((size_t)(iy + ky) * g->w + (size_t)(ix + kx)) * wpp,
			    wo + ((size_t)ky * g->k + kx) * wpp, wpp);
	return (int32_t)KERN_BCONV_WINDOW_BITS(g->c) - 2 * cnt;
}

void kern_ref_bconv(const uint64_t *x, uint32_t batch, const struct kern_conv_geom *g,
		    const uint64_t *w, int32_t *y)
{
	size_t in_words = (size_t)g->h * g->w * model_words(g->c);
	size_t wsz = (size_t)g->k * g->k * model_words(g->c);

	for (uint32_t b = 0; b < batch; b++) {
		const uint64_t *xb = x + b * in_words;

		for (uint32_t o = 0; o < g->o; o++)
			for (uint32_t oy = 0; oy < g->oh; oy++)
				for (uint32_t ox = 0; ox < g->ow; ox++)
					*y++ = ref_bconv_dot(xb, g, w + o * wsz, oy, ox);
	}
}

void kern_ref_bconv_thr(const uint64_t *x, uint32_t batch, const struct kern_conv_geom *g,
			const uint64_t *w, const struct kern_thresh *t, uint64_t *y)
{
	size_t in_words = (size_t)g->h * g->w * model_words(g->c);
	size_t wsz = (size_t)g->k * g->k * model_words(g->c);
	uint32_t ow = model_words(g->o);

	memset(y, 0, (size_t)batch * g->oh * g->ow * ow * sizeof(*y));
	for (uint32_t b = 0; b < batch; b++) {
		const uint64_t *xb = x + b * in_words;

		for (uint32_t oy = 0; oy < g->oh; oy++)
			for (uint32_t ox = 0; ox < g->ow; ox++, y += ow)
				for (uint32_t o = 0; o < g->o; o++) {
					int32_t dot = ref_bconv_dot(xb, g, w + o * wsz, oy, ox);

					y[o / 64] |= (uint64_t)kern_thr_bit(dot, t, o) << (o % 64);
				}
	}
}

static void ref_pack(const double *x, uint32_t batch, uint32_t c, uint32_t h, uint32_t w,
		     const struct kern_thresh *t, uint64_t *y)
{
	size_t hw = (size_t)h * w;
	uint32_t wpp = model_words(c);

	memset(y, 0, (size_t)batch * hw * wpp * sizeof(*y));
	for (uint32_t b = 0; b < batch; b++, x += c * hw, y += hw * wpp)
		for (uint32_t ch = 0; ch < c; ch++)
			for (size_t p = 0; p < hw; p++) {
				double v = x[ch * hw + p];
				bool bit =
				    t ? (v >= (double)t->thr[ch]) ^ (t->flip[ch] != 0) : v >= 0.0;

				y[p * wpp + ch / 64] |= (uint64_t)bit << (ch % 64);
			}
}

KERN_PACK_ENTRIES(kern_ref_sign_pack, kern_ref_threshold_pack, ref_pack)

void kern_ref_maxpool_bits(const uint64_t *x, uint32_t batch, uint32_t c, uint32_t h, uint32_t w,
			   uint32_t k, uint32_t stride, uint64_t *y)
{
	uint32_t wpp = model_words(c), oh = (h - k) / stride + 1, ow = (w - k) / stride + 1;

	for (uint32_t b = 0; b < batch; b++, x += (size_t)h * w * wpp)
		for (uint32_t oy = 0; oy < oh; oy++)
			for (uint32_t ox = 0; ox < ow; ox++, y += wpp)
				for (uint32_t j = 0; j < wpp; j++) {
					uint64_t m = 0;

					for (uint32_t ky = 0; ky < k; ky++)
						for (uint32_t kx = 0; kx < k; kx++)
							m |= x[((size_t)(oy * stride + ky) * w +
								ox * stride + kx) *
								   wpp +
							       j];
					y[j] = m;
				}
}

void kern_ref_maxpool_bits_and(const uint64_t *x, uint32_t batch, uint32_t c, uint32_t h,
			       uint32_t w, uint32_t k, uint32_t stride, const uint64_t *and_mask,
			       uint64_t *y)
{
	uint32_t wpp = model_words(c), oh = (h - k) / stride + 1, ow = (w - k) / stride + 1;

	for (uint32_t b = 0; b < batch; b++, x += (size_t)h * w * wpp)
		for (uint32_t oy = 0; oy < oh; oy++)
			for (uint32_t ox = 0; ox < ow; ox++, y += wpp)
				for (uint32_t j = 0; j < wpp; j++) {
					const uint64_t *p =
					    x +
					    ((size_t)oy * stride * w + (size_t)ox * stride) * wpp +
					    j;
					uint64_t any = 0, all = ~0ull;

					for (uint32_t ky = 0; ky < k; ky++)
						for (uint32_t kx = 0; kx < k; kx++) {
							uint64_t v = p[((size_t)ky * w + kx) * wpp];

							any |= v;
							all &= v;
						}
					y[j] = (any & ~and_mask[j]) | (all & and_mask[j]);
				}
}

void kern_ref_sconv(const float *xp, const struct kern_conv_geom *g, const float *wt, float *y)
{
	const size_t hp = (size_t)g->h + 2 * g->pad, wp = (size_t)g->w + 2 * g->pad;

	for (uint32_t oy = 0; oy < g->oh; oy++)
		for (uint32_t ox = 0; ox < g->ow; ox++, y += g->o)
			for (uint32_t c = 0; c < g->o; c++) {
				const float *w = wt + c;
				float acc = 0.0f;

				for (uint32_t ci = 0; ci < g->c; ci++)
					for (uint32_t ky = 0; ky < g->k; ky++)
						for (uint32_t kx = 0; kx < g->k; kx++, w += g->o)
							acc += *w *
							       xp[(ci * hp + oy * g->stride + ky) *
								      wp +
								  (size_t)ox * g->stride + kx];
				y[c] = acc;
			}
}

uint32_t kern_ref_decide_pack(const float *y, uint32_t o, uint32_t np, const struct kern_decide *d,
			      uint64_t *bits, uint32_t *unsure)
{
	uint32_t wpp = model_words(o), n = 0;

	memset(bits, 0, (size_t)np * wpp * sizeof(*bits));
	for (uint32_t p = 0; p < np; p++)
		for (uint32_t c = 0; c < o; c++) {
			float v = y[(size_t)p * o + c] - d->thr[c], e = d->e[c];

			if (fabsf(v) <= e && e > 0.0f)
				unsure[n++] = p * o + c;
			else
				bits[(size_t)p * wpp + c / 64] |=
				    (uint64_t)((v >= 0.0f) ^ d->flip[c]) << (c % 64);
		}
	return n;
}

const struct kern_bin_ops kern_ops_ref = {
    .name = "ref",
    .bdense = ref_bdense,
    .bdense_thr = ref_bdense_thr,
    .bdense_u8 = ref_bdense_u8,
    .bdense_u8_thr = ref_bdense_u8_thr,
    .bconv = kern_ref_bconv,
    .bconv_thr = kern_ref_bconv_thr,
    .sign_pack = kern_ref_sign_pack,
    .threshold_pack = kern_ref_threshold_pack,
    .maxpool_bits = kern_ref_maxpool_bits,
    .maxpool_bits_and = kern_ref_maxpool_bits_and,
    .sconv = kern_ref_sconv,
    .sconv_packed = kern_ref_sconv_packed,
    .decide_pack = kern_ref_decide_pack,
    .dot_f32 = kern_ref_dot_f32,
    .dot_f64 = kern_ref_dot_f64,
    .dot_u8 = kern_ref_dot_u8,
};
