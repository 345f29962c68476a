// SPDX-License-Identifier: MIT
/*
 * libFuzzer target: the converter's arch.json parser. The input up to its first NUL byte is
 * arch.json (jansson rejects NUL inside JSON anyway); the bytes after it choose the values of
 * weights synthesized with the shapes the spec gives each layer. An accepted architecture is
 * compiled with them; whatever the compiler accepts must serialize into a model file that the
 * loader accepts and the CPU kernels run. The shape-only pass (no weights) must accept whatever
 * the compiler accepts, with the same source shapes and a NIC part (kexec_nic_first) that starts
 * no later: weights can only keep a fold from happening.
 */
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "exec/kexec.h"
#include "tests/fuzz/fuzz_kern.h"

/* The arch layer the NIC's part of m starts at (m->n_src: none). */
static uint32_t nic_src(const struct model *m)
{
	uint32_t k = kexec_nic_first(m);

	return k < m->n_layers ? m->layers[k].src_first : m->n_src;
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	struct model_ic_model ic = {.arch_path = "arch.json", .weights_path = "weights.npz"};
	const uint8_t *nul = memchr(data, 0, size);
	size_t jlen = nul ? (size_t)(nul - data) : size;
	const uint8_t *vals = nul ? nul + 1 : NULL;
	size_t nvals = nul ? size - jlen - 1 : 0;
	struct model m, s;
	char err[512] = "";
	int ret, sret;

	ret = model_ic_parse_arch(&ic, data, jlen, err, sizeof(err));
	if (ret) {
		CHECK(ret == -EINVAL && !strncmp(err, "arch.json: ", 11));
		goto out_free;
	}
	CHECK(ic.n_layers >= 1 && ic.n_layers <= MODEL_FILE_MAX_SRC);
	sret = model_compile_shapes(&ic, &s, err, sizeof(err));
	CHECK(!sret || (sret == -EINVAL && err[0]));
	if (!fuzz_synth_weights(&ic, vals, nvals))
		goto out_shapes;
	ret = model_compile(&ic, &m, err, sizeof(err));
	if (ret) {
		CHECK(ret == -EINVAL && err[0]);
		goto out_shapes;
	}
	CHECK(!sret && s.n_src == m.n_src && !memcmp(s.src, m.src, m.n_src * sizeof(*m.src)));
	CHECK(nic_src(&s) <= nic_src(&m));
	CHECK(model_ic_check_used(&ic, err, sizeof(err)) == 0);
	fuzz_check_compiled(&m, vals, nvals);
	model_compiled_free(&m);

out_shapes:
	if (!sret)
		model_compiled_free(&s);

out_free:
	model_ic_free(&ic);
	return 0;
}
