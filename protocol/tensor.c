// SPDX-License-Identifier: MIT
#include "protocol/proto.h"

#include <string.h>

uint32_t proto_f32_bits(float f)
{
	uint32_t u;

	memcpy(&u, &f, sizeof(u));
	return u;
}

float proto_f32_from_bits(uint32_t bits)
{
	float f;

	memcpy(&f, &bits, sizeof(f));
	return f;
}

uint16_t proto_f32_to_fp16(float f)
{
	uint32_t x = proto_f32_bits(f);
	uint16_t sign = (uint16_t)((x >> 16) & 0x8000u);
	uint32_t mant = x & 0x7fffffu;
	int32_t exp = (int32_t)((x >> 23) & 0xffu);
	uint32_t shift, half, rest, out;

	if (exp == 0xff)
		return (uint16_t)(sign | 0x7c00u | (mant ? 0x200u | (mant >> 13) : 0));
	exp = exp - 127 + 15;
	if (exp >= 0x1f)
		return (uint16_t)(sign | 0x7c00u);
	if (exp <= 0) {
		if (exp < -10)
			return sign;
		mant |= 0x800000u;
		shift = (uint32_t)(14 - exp);
		out = mant >> shift;
		rest = mant & ((1u << shift) - 1);
		half = 1u << (shift - 1);
		if (rest > half || (rest == half && (out & 1)))
			out++;
		return (uint16_t)(sign | out);
	}
	out = (uint32_t)exp << 10 | mant >> 13;
	rest = mant & 0x1fffu;
	if (rest > 0x1000u || (rest == 0x1000u && (out & 1)))
		out++; /* may carry into the exponent, up to infinity: still correct */
	return (uint16_t)(sign | out);
}

float proto_fp16_to_f32(uint16_t h)
{
	uint32_t sign = (uint32_t)(h & 0x8000u) << 16;
	uint32_t exp = (h >> 10) & 0x1fu;
	uint32_t mant = h & 0x3ffu;

	if (exp == 0x1f)
		return proto_f32_from_bits(sign | 0x7f800000u | mant << 13);
	if (exp == 0) {
		if (mant == 0)
			return proto_f32_from_bits(sign);
		exp = 127 - 15 + 1;
		while (!(mant & 0x400u)) {
			mant <<= 1;
			exp--;
		}
		return proto_f32_from_bits(sign | exp << 23 | (mant & 0x3ffu) << 13);
	}
	return proto_f32_from_bits(sign | (exp + 127 - 15) << 23 | mant << 13);
}

static void le_put64(uint8_t *p, uint64_t v)
{
	for (int i = 0; i < 8; i++)
		p[i] = (uint8_t)(v >> (8 * i));
}

static uint64_t le_get64(const uint8_t *p)
{
	uint64_t v = 0;

	for (int i = 7; i >= 0; i--)
		v = v << 8 | p[i];
	return v;
}

void proto_bits_pack(const double *x, size_t n, uint8_t *out)
{
	for (size_t j = 0; j < (n + 63) / 64; j++) {
		uint64_t w = 0;

		for (size_t i = 0; i < 64 && 64 * j + i < n; i++)
			if (x[64 * j + i] >= 0)
				w |= 1ull << i;
		le_put64(out + 8 * j, w);
	}
}

int proto_bits_get(const uint8_t *words, size_t i)
{
	return (words[i / 8] >> (i % 8)) & 1 ? 1 : -1;
}

void proto_le_put_f32(uint8_t *p, float v)
{
	uint32_t u = proto_f32_bits(v);

	for (int i = 0; i < 4; i++)
		p[i] = (uint8_t)(u >> (8 * i));
}

float proto_le_get_f32(const uint8_t *p)
{
	return proto_f32_from_bits((uint32_t)p[0] | (uint32_t)p[1] << 8 | (uint32_t)p[2] << 16 |
				   (uint32_t)p[3] << 24);
}

void proto_le_put_f64(uint8_t *p, double v)
{
	uint64_t u;

	memcpy(&u, &v, sizeof(u));
	le_put64(p, u);
}

double proto_le_get_f64(const uint8_t *p)
{
	uint64_t u = le_get64(p);
	double v;

	memcpy(&v, &u, sizeof(v));
	return v;
}
