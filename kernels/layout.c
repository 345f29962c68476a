/* SPDX-License-Identifier: MIT */
/* Layout changes of packed bits: unpack to +-1.0, flatten to C-major bit order. */
#include <string.h>

#include "kernels/kern.h"
#include "kernels/kern_ops.h"

void kern_unpack_bits(const uint64_t *x, uint32_t batch, uint32_t c, uint32_t h, uint32_t w,
		      double *y)
{
	size_t hw = (size_t)h * w;
	uint32_t wpp = kern_words(c);

	for (uint32_t b = 0; b < batch; b++, x += hw * wpp, y += c * hw)
		for (uint32_t ch = 0; ch < c; ch++)
			for (size_t p = 0; p < hw; p++)
				y[ch * hw + p] =
				    (x[p * wpp + ch / 64] >> (ch % 64)) & 1 ? 1.0 : -1.0;
}

void kern_flatten_bits(const uint64_t *x, uint32_t batch, uint32_t c, uint32_t h, uint32_t w,
		       uint64_t *y)
{
	size_t hw = (size_t)h * w, nw = kern_words((uint64_t)c * hw);
	uint32_t wpp = kern_words(c);

	memset(y, 0, batch * nw * sizeof(*y));
	for (uint32_t b = 0; b < batch; b++, x += hw * wpp, y += nw)
		for (uint32_t ch = 0; ch < c; ch++)
			for (size_t p = 0; p < hw; p++) {
				size_t i = ch * hw + p;

				y[i / 64] |= ((x[p * wpp + ch / 64] >> (ch % 64)) & 1) << (i % 64);
			}
}
