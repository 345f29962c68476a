/* SPDX-License-Identifier: MIT */
/*
 * kernels/bin_tmpl.h — private to the binary kernels of the tables (bin_*.c, bconv*_avx512.c):
 * functions written once as macros that each file expands, so that each compiles them under its
 * own instruction-set flags with its own SIMD helpers inlined.
 */
#ifndef KERN_BIN_TMPL_H
#define KERN_BIN_TMPL_H

#include <string.h>

#include "kernels/bin_impl.h"

/*
 * Defines static void name(w, o, cnt, taps, tile): the weights of output channels o .. o+cnt-1
 * transposed into tile[tap word][blk] of `type` (zero past cnt), so that one broadcast input
 * word meets blk channels' weight words in consecutive lanes.
 */
#define KERN_BCONV_TILE_LOAD(name, type, blk)                                                      \
	static void name(const uint64_t *w, uint32_t o, uint32_t cnt, uint32_t taps, type *tile)   \
	{                                                                                          \
		for (uint32_t t = 0; t < taps; t++)                                                \
			for (uint32_t i = 0; i < (blk); i++)                                       \
				tile[t * (blk) + i] =                                              \
				    i < cnt ? (type)w[(size_t)(o + i) * taps + t] : 0;             \
	}

/*
 * Declares, in a binary convolution's pixel function, the window of output pixel (oy, ox) of a
 * k x k kernel: its corner (iy, ix) in the input (negative in the padding) and the kernel rows
 * [ky0, ky1) and columns [kx0, kx1) whose taps fall inside the input.
 */
#define KERN_BCONV_WINDOW(g, k, oy, ox)                                                            \
	int64_t iy = (int64_t)(oy) * (g)->stride - (g)->pad,                                       \
		ix = (int64_t)(ox) * (g)->stride - (g)->pad;                                       \
	uint32_t ky0, ky1, kx0, kx1;                                                               \
                                                                                                   \
	kern_tap_range(iy, k, (g)->h, &ky0, &ky1);                                                 \
	kern_tap_range(ix, k, (g)->w, &kx0, &kx1)

/* After KERN_BCONV_WINDOW: the input bits its taps meet at c channels, the n of n - 2 popcount. */
#define KERN_BCONV_WINDOW_BITS(c) ((ky1 - ky0) * (kx1 - kx0) * (c))

/*
 * After KERN_BCONV_WINDOW, kernel row ky of the window: its first input word (pixel-major, wpp
 * words a pixel) and its first tap word in a tile of blk lanes a tap word.
 */
#define KERN_BCONV_ROW_X(x, g, wpp, ky)                                                            \
	((x) + ((size_t)(iy + (ky)) * (g)->w + (size_t)(ix + kx0)) * (wpp))
#define KERN_BCONV_ROW_TAPS(tile, g, wpp, blk, ky)                                                 \
	((tile) + ((size_t)(ky) * (g)->k + kx0) * (wpp) * (blk))

/*
 * Defines static void name(x, batch, w, out, n, y, scratch) and name##_thr(x, batch, w, out, n,
 * t, y, scratch), the U8 dense layer of kern_bin_ops through bit planes: planes(x, n, p, &sumx)
 * writes one image's 8 planes into the scratch p and its byte sum into sumx, dot(p, w_o,
 * words(n), sumx) is the dot of output o.
 */
#define KERN_BDENSE_U8_PLANES(name, planes, dot)                                                   \
	static void name(const uint8_t *x, uint32_t batch, const uint64_t *w, uint32_t out,        \
			 uint32_t n, int32_t *y, void *scratch)                                    \
	{                                                                                          \
		uint32_t nw = model_words(n);                                                      \
		uint64_t *p = scratch;                                                             \
		int32_t sumx;                                                                      \
                                                                                                   \
		for (uint32_t b = 0; b < batch; b++) {                                             \
			planes(x + (size_t)b * n, n, p, &sumx);                                    \
			for (uint32_t o = 0; o < out; o++)                                         \
				y[(size_t)b * out + o] = dot(p, w + (size_t)o * nw, nw, sumx);     \
		}                                                                                  \
	}                                                                                          \
                                                                                                   \
	static void name##_thr(const uint8_t *x, uint32_t batch, const uint64_t *w, uint32_t out,  \
			       uint32_t n, const struct kern_thresh *t, uint64_t *y,               \
			       void *scratch)                                                      \
	{                                                                                          \
		uint32_t nw = model_words(n), ow = model_words(out);                               \
		uint64_t *p = scratch;                                                             \
		int32_t sumx;                                                                      \
                                                                                                   \
		memset(y, 0, (size_t)batch *ow * sizeof(*y));                                      \
		for (uint32_t b = 0; b < batch; b++) {                                             \
			planes(x + (size_t)b * n, n, p, &sumx);                                    \
			for (uint32_t o = 0; o < out; o++) {                                       \
				int32_t dot_o = dot(p, w + (size_t)o * nw, nw, sumx);              \
                                                                                                   \
				y[(size_t)b * ow + o / 64] |= (uint64_t)kern_thr_bit(dot_o, t, o)  \
							      << (o % 64);                         \
			}                                                                          \
		}                                                                                  \
	}

/*
 * Defines a table's two packing entry points over its pack(x, batch, c, h, w, t, y): sign_name
 * packs signs (t NULL: x >= 0 is 1), thr_name packs per-channel thresholds.
 */
#define KERN_PACK_ENTRIES(sign_name, thr_name, pack)                                               \
	void sign_name(const double *x, uint32_t batch, uint32_t c, uint32_t h, uint32_t w,        \
		       uint64_t *y)                                                                \
	{                                                                                          \
		pack(x, batch, c, h, w, NULL, y);                                                  \
	}                                                                                          \
                                                                                                   \
	void thr_name(const double *x, uint32_t batch, uint32_t c, uint32_t h, uint32_t w,         \
		      const struct kern_thresh *t, uint64_t *y)                                    \
	{                                                                                          \
		pack(x, batch, c, h, w, t, y);                                                     \
	}

/* Images per block of dots on the way to threshold bits. */
#define KERN_THR_BATCH 16

/*
 * Defines static void name(x, batch, w, out, n, t, y): threshold bits y[b][words(out)] of batch
 * images of `xtype` (xstride elements apart) from blocks of dots, at most KERN_THR_BATCH images x
 * 64 outputs: gemm(x, images, w, rows, n, dot, 64) writes dot[image][row], word(dot, t, o, cnt)
 * folds one image's cnt dots from output o into its word.
 */
#define KERN_BDENSE_THR_BLOCKS(name, xtype, xstride, gemm, word)                                   \
	static void name(const xtype *x, uint32_t batch, const uint64_t *w, uint32_t out,          \
			 uint32_t n, const struct kern_thresh *t, uint64_t *y)                     \
	{                                                                                          \
		uint32_t nw = model_words(n), ow = model_words(out);                               \
		int32_t dot[KERN_THR_BATCH][64] __attribute__((aligned(64)));                      \
                                                                                                   \
		for (uint32_t o = 0; o < out; o += 64) {                                           \
			uint32_t cnt = out - o < 64 ? out - o : 64;                                \
                                                                                                   \
			for (uint32_t b = 0; b < batch; b += KERN_THR_BATCH) {                     \
				uint32_t nb =                                                      \
				    batch - b < KERN_THR_BATCH ? batch - b : KERN_THR_BATCH;       \
                                                                                                   \
				gemm(x + (size_t)b * (xstride), nb, w + (size_t)o * nw, cnt, n,    \
				     &dot[0][0], 64);                                              \
				for (uint32_t i = 0; i < nb; i++)                                  \
					y[(size_t)(b + i) * ow + o / 64] =                         \
					    word(dot[i], t, o, cnt);                               \
			}                                                                          \
		}                                                                                  \
	}

#endif
