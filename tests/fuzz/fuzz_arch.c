// SPDX-License-Identifier: MIT
/*
 * libFuzzer target: the converter's arch.json parser. The input up to its first NUL byte is
 * arch.json (jansson rejects NUL inside JSON anyway); the bytes after it choose the values of
 * weights synthesized with the shapes the spec gives each layer. An accepted architecture is
 * compiled with them; whatever the compiler accepts must serialize into a model file that the
 * loader accepts and the CPU kernels run.
 */
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "tests/fuzz/fuzz_kern.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	struct model_ic_model ic = {.arch_path = "arch.json", .weights_path = "weights.npz"};
	const uint8_t *nul = memchr(data, 0, size);
	size_t jlen = nul ? (size_t)(nul - data) : size;
	const uint8_t *vals = nul ? nul + 1 : NULL;
	size_t nvals = nul ? size - jlen - 1 : 0;
	struct model m;
	char err[512] = "";
	int ret;

	ret = model_ic_parse_arch(&ic, data, jlen, err, sizeof(err));
	if (ret) {
		CHECK(ret == -EINVAL && !strncmp(err, "arch.json: ", 11));
		goto out_free;
	}
	CHECK(ic.n_layers >= 1 && ic.n_layers <= MODEL_FILE_MAX_SRC);
	if (!fuzz_synth_weights(&ic, vals, nvals))
		goto out_free;
	ret = model_compile(&ic, &m, err, sizeof(err));
	if (ret) {
		CHECK(ret == -EINVAL && err[0]);
		goto out_free;
	}
	CHECK(model_ic_check_used(&ic, err, sizeof(err)) == 0);
	fuzz_check_compiled(&m, vals, nvals);
	model_compiled_free(&m);

out_free:
	model_ic_free(&ic);
	return 0;
}
