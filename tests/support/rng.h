/* SPDX-License-Identifier: MIT */
/*
 * tests/support/rng.h — the pseudo-random streams of the tests and benchmarks, header-only (the
 * benchmarks link no test support): the xorshift64 (13, 7, 17) step, and a splitmix64 stream
 * (one per translation unit, 0 until seeded) for the kernel tests' random shapes and values.
 */
#ifndef TEST_RNG_H
#define TEST_RNG_H

#include <stdint.h>

/* xorshift64 (13, 7, 17): advances *s (never 0) and returns it. */
static inline uint64_t test_xorshift(uint64_t *s)
{
	*s ^= *s << 13;
	*s ^= *s >> 7;
	*s ^= *s << 17;
	return *s;
}

static inline uint64_t *test_mix_state(void)
{
	static uint64_t s;

	return &s;
}

static inline void test_mix_seed(uint64_t seed)
{
	*test_mix_state() = seed * 0x9e3779b97f4a7c15ull + 1;
}

/* splitmix64 */
static inline uint64_t test_mix(void)
{
	uint64_t z = (*test_mix_state() += 0x9e3779b97f4a7c15ull);

	z = (z ^ (z >> 30)) * 0xbf58476d1ce4e5b9ull;
	z = (z ^ (z >> 27)) * 0x94d049bb133111ebull;
	return z ^ (z >> 31);
}

/* Uniform in [0, n) (modulo bias: n is small). */
static inline uint32_t test_mix_below(uint32_t n)
{
	return (uint32_t)(test_mix() % n);
}

/* Uniform in [lo, hi), from the top 53 bits. */
static inline double test_mix_real(double lo, double hi)
{
	return lo + (hi - lo) * (double)(test_mix() >> 11) / (double)(1ull << 53);
}

#endif /* TEST_RNG_H */
