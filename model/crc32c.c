/* SPDX-License-Identifier: MIT */
#include <pthread.h>
#include <string.h>

#include "model/crc32c.h"

_Static_assert(__BYTE_ORDER__ == __ORDER_LITTLE_ENDIAN__, "slicing-by-8 reads words little-endian");

#define CRC32C_POLY 0x82F63B78u

/* Slicing-by-8: table[k][b] is the CRC of byte b followed by k zero bytes. */
static uint32_t crc32c_table[8][256];
static pthread_once_t crc32c_once = PTHREAD_ONCE_INIT;

static void crc32c_init(void)
{
	for (uint32_t b = 0; b < 256; b++) {
		uint32_t c = b;

		for (int i = 0; i < 8; i++)
			c = (c >> 1) ^ (CRC32C_POLY & (0u - (c & 1)));
		crc32c_table[0][b] = c;
	}
	for (uint32_t b = 0; b < 256; b++)
		for (int k = 1; k < 8; k++)
			crc32c_table[k][b] = (crc32c_table[k - 1][b] >> 8) ^
					     crc32c_table[0][crc32c_table[k - 1][b] & 0xff];
}

uint32_t model_crc32c(uint32_t crc, const void *buf, size_t len)
{
	const uint8_t *p = buf;
	uint32_t c = ~crc;

	pthread_once(&crc32c_once, crc32c_init);
	while (len >= 8) {
		uint32_t lo, hi;

		memcpy(&lo, p, 4);
		memcpy(&hi, p + 4, 4);
		lo ^= c;
		c = crc32c_table[7][lo & 0xff] ^ crc32c_table[6][(lo >> 8) & 0xff] ^
		    crc32c_table[5][(lo >> 16) & 0xff] ^ crc32c_table[4][lo >> 24] ^
		    crc32c_table[3][hi & 0xff] ^ crc32c_table[2][(hi >> 8) & 0xff] ^
		    crc32c_table[1][(hi >> 16) & 0xff] ^ crc32c_table[0][hi >> 24];
		p += 8;
		len -= 8;
	}
	while (len--)
		c = (c >> 8) ^ crc32c_table[0][(c ^ *p++) & 0xff];
	return ~c;
}
