// SPDX-License-Identifier: MIT
/*
 * libFuzzer target: the ONNX importer. Any input is an ONNX file: it is parsed and translated,
 * and what imports is compiled, serialized and loaded back through the model-file validator.
 * A refusal must come with a message; an accepted model must compile or be refused with one.
 */
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "model/model_file.h"
#include "model/onnx/onnx_import.h"

#define CHECK(c)                                                                                   \
	do {                                                                                       \
		if (!(c))                                                                          \
			__builtin_trap();                                                          \
	} while (0)

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	struct onnx_import imp;
	struct model m, *back;
	char err[1024] = "";
	void *buf;
	size_t len;

	if (onnx_import_buffer(data, size, "fuzz.onnx", 0, &imp, err, sizeof(err))) {
		CHECK(err[0]);
		return 0;
	}
	err[0] = 0;
	if (onnx_import_compile(&imp, &m, NULL, err, sizeof(err))) {
		CHECK(err[0]);
		onnx_import_free(&imp);
		return 0;
	}
	if (!model_serialize(&m, &buf, &len)) {
		void *al = aligned_alloc(64, (len + 63) / 64 * 64);

		CHECK(al != NULL);
		memcpy(al, buf, len);
		back = model_from_buffer(al, len, "fuzz.snm", err, sizeof(err));
		CHECK(back != NULL);
		model_free(back);
		free(al);
		free(buf);
	}
	model_compiled_free(&m);
	onnx_import_free(&imp);
	return 0;
}
