/* SPDX-License-Identifier: MIT */
/* What the dot-product files (dot_avx2.c, dot_avx512.c) share: scalar only. */
#ifndef KERNELS_DOT_IMPL_H
#define KERNELS_DOT_IMPL_H

#include "kernels/bin_impl.h"

/* Element offset of row j of b (struct kern_dot: boff[j], else j * ldb). */
static inline __attribute__((always_inline)) size_t kern_dot_boff(const struct kern_dot *d,
								  uint32_t j)
{
	return d->boff ? d->boff[j] : (size_t)j * d->ldb;
}

#endif
