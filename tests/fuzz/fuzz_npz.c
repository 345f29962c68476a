// SPDX-License-Identifier: MIT
/*
 * libFuzzer target: the converter's weights.npz parser (libzip archive, strict .npy members).
 * Any input is weights.npz for one fixed architecture (fuzz_arch_json, which takes every kind of
 * array), tried as is and then with the CRC-32 of its stored members made right. An archive
 * that parses is compiled, and whatever the compiler accepts must serialize into a model file
 * that the loader accepts and the CPU kernels run.
 */
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include <zlib.h>

#include "tests/fuzz/fuzz_kern.h"

static uint32_t le32(const uint8_t *p)
{
	return (uint32_t)p[0] | (uint32_t)p[1] << 8 | (uint32_t)p[2] << 16 | (uint32_t)p[3] << 24;
}

static uint16_t le16(const uint8_t *p)
{
	return (uint16_t)(p[0] | p[1] << 8);
}

/*
 * Make the CRC-32 of every stored member right, in its central and local headers, so that
 * mutated array bytes reach the .npy parser and the compiler instead of libzip's CRC check.
 * Returns whether anything changed.
 */
static int fix_stored_crcs(uint8_t *z, size_t size)
{
	int changed = 0;

	for (size_t i = 0; i + 46 <= size; i++) {
		uint32_t csize, loc, crc;
		size_t data;

		if (le32(z + i) != 0x02014b50 || le16(z + i + 10) != 0)
			continue;
		csize = le32(z + i + 20);
		loc = le32(z + i + 42);
		if (loc > size - 30 || le32(z + loc) != 0x04034b50)
			continue;
		data = (size_t)loc + 30 + le16(z + loc + 26) + le16(z + loc + 28);
		if (data > size || csize > size - data)
			continue;
		crc = (uint32_t)crc32(0, z + data, csize);
		changed |= le32(z + i + 16) != crc || le32(z + loc + 14) != crc;
		memcpy(z + i + 16, &crc, 4);
		memcpy(z + loc + 14, &crc, 4);
	}
	return changed;
}

static void try_npz(const uint8_t *data, size_t size)
{
	struct model_ic_model ic = {.arch_path = "arch.json", .weights_path = "weights.npz"};
	struct model m;
	char err[512] = "";
	int ret;

	CHECK(model_ic_parse_arch(&ic, fuzz_arch_json, sizeof(fuzz_arch_json) - 1, err,
				  sizeof(err)) == 0);
	ret = model_ic_parse_npz(&ic, data, size, err, sizeof(err));
	if (ret) {
		CHECK((ret == -EINVAL || ret == -ENOMEM) && !strncmp(err, "weights.npz: ", 13));
		goto out_free;
	}
	ret = model_compile(&ic, &m, err, sizeof(err));
	if (ret) {
		CHECK(ret == -EINVAL && err[0]);
		goto out_free;
	}
	if (model_ic_check_used(&ic, err, sizeof(err)) == 0)
		fuzz_check_compiled(&m, data, size);
	model_compiled_free(&m);

out_free:
	model_ic_free(&ic);
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	uint8_t *copy = malloc(size ? size : 1);

	CHECK(copy);
	memcpy(copy, data, size);
	try_npz(copy, size);
	if (fix_stored_crcs(copy, size))
		try_npz(copy, size);
	free(copy);
	return 0;
}
