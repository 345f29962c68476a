/* SPDX-License-Identifier: MIT */
/*
 * kernels/bconv_tile.h — private to the binary convolutions (bin_avx2.c, bconv*_avx512.c):
 * macros expanded in each file, so that each compiles them under its own instruction-set
 * flags.
 */
#ifndef KERN_BCONV_TILE_H
#define KERN_BCONV_TILE_H

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

#endif
