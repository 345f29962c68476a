/* SPDX-License-Identifier: MIT */
/* Layout changes of packed bits: unpack to +-1.0, flatten to C-major bit order. */
#include <string.h>

#include "kernels/bin_impl.h"
#include "kernels/kern.h"
#include "kernels/kern_ops.h"

void kern_unpack_bits(const uint64_t *x, uint32_t batch, uint32_t c, uint32_t h, uint32_t w,
		      double *y)
{
	size_t hw = (size_t)h * w;
	uint32_t wpp = model_words(c);

	for (uint32_t b = 0; b < batch; b++, x += hw * wpp, y += c * hw)
		for (uint32_t ch = 0; ch < c; ch++)
			for (size_t p = 0; p < hw; p++)
				y[ch * hw + p] =
				    (x[p * wpp + ch / 64] >> (ch % 64)) & 1 ? 1.0 : -1.0;
}

/* Bits [0, n) of v at bit position `at` of y (n <= 8). */
static inline void put_bits(uint64_t *y, size_t at, uint64_t v, uint32_t n)
{
	uint32_t sh = at % 64;

	y[at / 64] |= v << sh;
	if (sh + n > 64)
		y[at / 64 + 1] |= v >> (64 - sh);
}

/* 8 pixels x 8 channels per step: one 8x8 bit transpose turns pixel bytes into channel bytes. */
void kern_flatten_bits(const uint64_t *x, uint32_t batch, uint32_t c, uint32_t h, uint32_t w,
		       uint64_t *y)
{
	size_t hw = (size_t)h * w, nw = model_words((uint64_t)c * hw);
	uint32_t wpp = model_words(c);

	memset(y, 0, batch * nw * sizeof(*y));
	for (uint32_t b = 0; b < batch; b++, x += hw * wpp, y += nw)
		for (size_t p0 = 0; p0 < hw; p0 += 8) {
			uint32_t np = hw - p0 < 8 ? (uint32_t)(hw - p0) : 8;

			for (uint32_t c0 = 0; c0 < c; c0 += 8) {
				uint32_t nc = c - c0 < 8 ? c - c0 : 8;
				uint64_t m = 0;

				for (uint32_t r = 0; r < np; r++)
					m |= ((x[(p0 + r) * wpp + c0 / 64] >> (c0 % 64)) & 0xff)
					     << (8 * r);
				m = kern_transpose8(m);
				for (uint32_t k = 0; k < nc; k++)
					put_bits(y, (size_t)(c0 + k) * hw + p0,
						 (m >> (8 * k)) & ((1u << np) - 1), np);
			}
		}
}
