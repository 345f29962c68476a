// SPDX-License-Identifier: MIT
/*
 * libFuzzer target: the model file loader. Any input is a model file's bytes, validated from a
 * 64-byte aligned copy by model_from_buffer (the code model_load runs on the mapped
 * file). The input is tried as is, then with its header's file_size and crc32c made right so
 * that mutations reach the tables and blobs behind them. A model that loads must run on the
 * CPU kernels (within a size budget); a model that does not must say why, naming the input.
 */
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "model/crc32c.h"
#include "tests/fuzz/fuzz_kern.h"

#define LABEL "(fuzz)"

static void try_load(const uint8_t *bytes, size_t size)
{
	char err[512] = "";
	struct model *m = model_from_buffer(bytes, size, LABEL, err, sizeof(err));

	if (!m) {
		CHECK(!strncmp(err, LABEL ": ", sizeof(LABEL) + 1) && err[sizeof(LABEL) + 1]);
		return;
	}
	CHECK(m->n_layers >= 1 && model_classes(m) >= 1);
	fuzz_run(m, bytes, size);
	model_free(m);
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	static const uint8_t zero[4];
	size_t cap = (size + MODEL_FILE_ALIGN) & ~(size_t)(MODEL_FILE_ALIGN - 1);
	uint8_t *copy = aligned_alloc(MODEL_FILE_ALIGN, cap);
	uint64_t file_size = size;
	uint32_t crc;

	CHECK(copy);
	memcpy(copy, data, size);
	try_load(copy, size);
	if (size >= MODEL_FILE_HEADER_SIZE) {
		memcpy(copy + 16, &file_size, 8);
		crc = model_crc32c(0, copy, 24);
		crc = model_crc32c(crc, zero, sizeof(zero));
		crc = model_crc32c(crc, copy + 28, size - 28);
		memcpy(copy + 24, &crc, 4);
		try_load(copy, size);
	}
	free(copy);
	return 0;
}
