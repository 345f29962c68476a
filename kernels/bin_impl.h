/* SPDX-License-Identifier: MIT */
/*
 * kernels/bin_impl.h — private to the kernels of the tables (bin_*.c, bconv*.c, fconv*.c,
 * layout.c, ops_select.c): the reference entry points the SIMD tables fall back to, and scalar
 * helpers shared by every instruction set.
 */
#ifndef KERN_BIN_IMPL_H
#define KERN_BIN_IMPL_H

#include <stdbool.h>

#include "kernels/kern_ops.h"

void kern_ref_bconv(const uint64_t *x, uint32_t batch, const struct kern_conv_geom *g,
		    const uint64_t *w, int32_t *y);
void kern_ref_bconv_thr(const uint64_t *x, uint32_t batch, const struct kern_conv_geom *g,
			const uint64_t *w, const struct kern_thresh *t, uint64_t *y);
void kern_ref_sign_pack(const double *x, uint32_t batch, uint32_t c, uint32_t h, uint32_t w,
			uint64_t *y);
void kern_ref_threshold_pack(const double *x, uint32_t batch, uint32_t c, uint32_t h, uint32_t w,
			     const struct kern_thresh *t, uint64_t *y);
void kern_ref_maxpool_bits(const uint64_t *x, uint32_t batch, uint32_t c, uint32_t h, uint32_t w,
			   uint32_t k, uint32_t stride, uint64_t *y);
void kern_ref_maxpool_bits_and(const uint64_t *x, uint32_t batch, uint32_t c, uint32_t h,
			       uint32_t w, uint32_t k, uint32_t stride, const uint64_t *and_mask,
			       uint64_t *y);
void kern_ref_sconv(const float *xp, const struct kern_conv_geom *g, const float *wt, float *y);
void kern_ref_sconv_packed(const float *xp, const struct kern_conv_geom *g, const float *wb,
			   float *y);
uint32_t kern_ref_decide_pack(const float *y, uint32_t o, uint32_t np, const struct kern_decide *d,
			      uint64_t *bits, uint32_t *unsure);

void kern_ref_dot_f32(const struct kern_dot *d);
void kern_ref_dot_f64(const struct kern_dot *d);
void kern_ref_dot_u8(const struct kern_dot *d);

/* SIMD entry points shared between files of one instruction set. */
void kern_avx512_dot_f32(const struct kern_dot *d);
void kern_avx512_dot_f64(const struct kern_dot *d);
void kern_avx512_dot_u8(const struct kern_dot *d);
void kern_avx2_dot_f32(const struct kern_dot *d);
void kern_avx2_dot_f64(const struct kern_dot *d);
void kern_avx2_dot_u8(const struct kern_dot *d);
void kern_avx512_bconv(const uint64_t *x, uint32_t batch, const struct kern_conv_geom *g,
		       const uint64_t *w, int32_t *y);
void kern_avx512_bconv_thr(const uint64_t *x, uint32_t batch, const struct kern_conv_geom *g,
			   const uint64_t *w, const struct kern_thresh *t, uint64_t *y);
/* Inputs of at most 32 channels whose block tile fits: 32-bit lanes (bconv32_avx512.c). */
bool kern_avx512_bconv32_fits(const struct kern_conv_geom *g);
void kern_avx512_bconv32(const uint64_t *x, uint32_t batch, const struct kern_conv_geom *g,
			 const uint64_t *w, int32_t *y);
void kern_avx512_bconv32_thr(const uint64_t *x, uint32_t batch, const struct kern_conv_geom *g,
			     const uint64_t *w, const struct kern_thresh *t, uint64_t *y);
/* Thresholds, 64 output channels per block, inputs of more than 32 channels (bconv64_avx512.c). */
bool kern_avx512_bconv64_fits(const struct kern_conv_geom *g);
void kern_avx512_bconv64_thr(const uint64_t *x, uint32_t batch, const struct kern_conv_geom *g,
			     const uint64_t *w, const struct kern_thresh *t, uint64_t *y);
/*
 * Binary GEMM with one image per lane (bin_gemm_avx512.c): the first batch / 8 * 8 images, dots
 * y[b * ldy + o] or threshold bits y[b][words(out)]; returns how many images it did (0 when
 * a group of 8 images of n bits does not fit its packing buffer).
 */
uint32_t kern_avx512_gemm8(const uint64_t *x, uint32_t batch, const uint64_t *w, uint32_t out,
			   uint32_t n, int32_t *y, size_t ldy);
uint32_t kern_avx512_gemm8_thr(const uint64_t *x, uint32_t batch, const uint64_t *w, uint32_t out,
			       uint32_t n, const struct kern_thresh *t, uint64_t *y);
void kern_avx512_sign_pack(const double *x, uint32_t batch, uint32_t c, uint32_t h, uint32_t w,
			   uint64_t *y);
void kern_avx512_threshold_pack(const double *x, uint32_t batch, uint32_t c, uint32_t h, uint32_t w,
				const struct kern_thresh *t, uint64_t *y);
void kern_avx512_sconv(const float *xp, const struct kern_conv_geom *g, const float *wt, float *y);
void kern_avx512_sconv_packed(const float *xp, const struct kern_conv_geom *g, const float *wb,
			      float *y);
void kern_avx2_sconv(const float *xp, const struct kern_conv_geom *g, const float *wt, float *y);
void kern_avx2_sconv_packed(const float *xp, const struct kern_conv_geom *g, const float *wb,
			    float *y);
uint32_t kern_avx512_decide_pack(const float *y, uint32_t o, uint32_t np,
				 const struct kern_decide *d, uint64_t *bits, uint32_t *unsure);
void kern_avx2_bconv(const uint64_t *x, uint32_t batch, const struct kern_conv_geom *g,
		     const uint64_t *w, int32_t *y);
void kern_avx2_bconv_thr(const uint64_t *x, uint32_t batch, const struct kern_conv_geom *g,
			 const uint64_t *w, const struct kern_thresh *t, uint64_t *y);

/* Weight tiles of the SIMD convolutions: taps x words-per-pixel at most this (else reference). */
#define KERN_BCONV_TILE_TAPS 512

/* Bit-plane scratch: 8 planes of words(n) words per image. */
static inline size_t kern_u8_plane_words(uint32_t n)
{
	return 8 * (size_t)((n + 63) / 64);
}

static inline bool kern_thr_bit(int32_t dot, const struct kern_thresh *t, uint32_t o)
{
	return (dot >= t->thr[o]) ^ (t->flip[o] != 0);
}

/* Bits of cnt (<= 64) consecutive outputs starting at o. */
static inline uint64_t kern_thr_word(const int32_t *dot, const struct kern_thresh *t, uint32_t o,
				     uint32_t cnt)
{
	uint64_t m = 0;

	for (uint32_t i = 0; i < cnt; i++)
		m |= (uint64_t)kern_thr_bit(dot[i], t, o + i) << i;
	return m;
}

/* Output rows (or columns) [lo, hi) whose 3x3 taps all fall inside an input of `size`. */
static inline void kern_k3_interior(uint32_t size, uint32_t out, const struct kern_conv_geom *g,
				    uint32_t *lo, uint32_t *hi)
{
	*lo = (g->pad + g->stride - 1) / g->stride;
	*hi = size + g->pad >= 3 ? (size + g->pad - 3) / g->stride + 1 : 0;
	*hi = *hi < out ? *hi : out;
	*lo = *lo < *hi ? *lo : *hi;
}

/* Valid tap range [lo, hi) of a kernel of size k placed at input coordinate at (may be < 0). */
static inline void kern_tap_range(int64_t at, uint32_t k, uint32_t size, uint32_t *lo, uint32_t *hi)
{
	int64_t l = at < 0 ? -at : 0, h = (int64_t)size - at;

	l = l < k ? l : k;
	h = h < k ? h : k;
	*lo = (uint32_t)l;
	*hi = (uint32_t)(h > l ? h : l);
}

/* 8x8 bit transpose: bit 8r+c moves to 8c+r. */
static inline uint64_t kern_transpose8(uint64_t m)
{
	uint64_t t;

	t = (m ^ (m >> 7)) & 0x00aa00aa00aa00aaull;
	m ^= t ^ (t << 7);
	t = (m ^ (m >> 14)) & 0x0000cccc0000ccccull;
	m ^= t ^ (t << 14);
	t = (m ^ (m >> 28)) & 0x00000000f0f0f0f0ull;
	m ^= t ^ (t << 28);
	return m;
}

#endif /* KERN_BIN_IMPL_H */
