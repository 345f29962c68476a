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

/* Bits [0, n) of v at bit position `at` of y (n <= 64, bits of v above n zero). */
static inline void put_bits(uint64_t *y, size_t at, uint64_t v, uint32_t n)
{
	uint32_t sh = at % 64;

	y[at / 64] |= v << sh;
	if (sh + n > 64)
		y[at / 64 + 1] |= v >> (64 - sh);
}

/* a[r] bit k -> a[k] bit r: six rounds of block swaps. */
static void transpose64(uint64_t a[64])
{
	uint64_t m = 0x00000000ffffffffull;

	for (uint32_t j = 32; j; j >>= 1, m ^= m << j)
		for (uint32_t k = 0; k < 64; k = ((k | j) + 1) & ~j) {
			uint64_t t = ((a[k] >> j) ^ a[k | j]) & m;

			a[k | j] ^= t;
			a[k] ^= t << j;
		}
}

/* 64 pixels x 64 channels per step: one 64x64 bit transpose turns pixel words into channel runs. */
void kern_flatten_bits(const uint64_t *x, uint32_t batch, uint32_t c, uint32_t h, uint32_t w,
		       uint64_t *y)
{
	size_t hw = (size_t)h * w, nw = model_words((uint64_t)c * hw);
	uint32_t wpp = model_words(c);
	uint64_t a[64];

	memset(y, 0, batch * nw * sizeof(*y));
	for (uint32_t b = 0; b < batch; b++, x += hw * wpp, y += nw)
		for (size_t p0 = 0; p0 < hw; p0 += 64) {
			uint32_t np = hw - p0 < 64 ? (uint32_t)(hw - p0) : 64;

			for (uint32_t j = 0; j < wpp; j++) {
				uint32_t nc = c - 64 * j < 64 ? c - 64 * j : 64;

				for (uint32_t r = 0; r < 64; r++)
					a[r] = r < np ? x[(p0 + r) * wpp + j] : 0;
				transpose64(a);
				for (uint32_t k = 0; k < nc; k++)
					put_bits(y, (size_t)(64 * j + k) * hw + p0, a[k], np);
			}
		}
}
