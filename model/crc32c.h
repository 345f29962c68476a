/* SPDX-License-Identifier: MIT */
/*
 * model/crc32c.h — CRC32C (Castagnoli, reflected polynomial 0x82F63B78), software tables.
 *
 * model_crc32c(0, buf, len) is the standard CRC32C of buf (check value of "123456789" is
 * 0xE3069283); feeding a previous result as `crc` continues the computation over more bytes.
 */
#ifndef MODEL_CRC32C_H
#define MODEL_CRC32C_H

#include <stddef.h>
#include <stdint.h>

uint32_t model_crc32c(uint32_t crc, const void *buf, size_t len);

#endif /* MODEL_CRC32C_H */
