// SPDX-License-Identifier: MIT
/*
 * examples/predict.c — in-process inference with libsplitnic.
 *
 *   cc predict.c $(pkg-config --cflags --libs splitnic) -o predict
 *   ./predict MODEL.snm INPUTS [LABELS] [BATCH] [THREADS]
 *
 * INPUTS holds raw inputs back to back in the model's input format (for the bundled
 * Fashion-MNIST models: 784 bytes per image, e.g. an IDX image file without its 16-byte
 * header); LABELS is a class-name file (share/splitnic/models/NAME.labels). Prints one line per
 * input: the class and its label.
 */
#include <stdio.h>
#include <stdlib.h>

#include <splitnic/splitnic.h>

#include "read_file.h"

int main(int argc, char **argv)
{
	struct splitnic_model *m = NULL;
	struct splitnic_ctx *ctx = NULL;
	struct splitnic_shape in;
	struct splitnic_error e;
	uint32_t batch = argc > 4 ? (uint32_t)atoi(argv[4]) : 64;
	uint32_t threads = argc > 5 ? (uint32_t)atoi(argv[5]) : 1;
	uint32_t *cls = NULL;
	const char *label;
	uint8_t *data;
	size_t size, count;
	int ret = 1;

	if (argc < 3 || argc > 6) {
		fprintf(stderr, "usage: %s MODEL.snm INPUTS [LABELS] [BATCH] [THREADS]\n", argv[0]);
		return 2;
	}
	if (splitnic_model_load(argv[1], &m, &e) || splitnic_model_input(m, &in, &e) ||
	    (argc > 3 && splitnic_model_load_labels(m, argv[3], &e)) ||
	    splitnic_ctx_create(m, batch, threads, &ctx, &e)) {
		fprintf(stderr, "predict: %s (%s)\n", e.msg, splitnic_status_name(e.code));
		goto out;
	}
	data = read_file(argv[2], &size);
	if (!data) {
		perror(argv[2]);
		goto out;
	}
	if (size % in.item_bytes) {
		fprintf(stderr, "predict: %s: %zu bytes is not a whole number of %zu-byte inputs\n",
			argv[2], size, in.item_bytes);
		goto out_data;
	}
	count = size / in.item_bytes;
	cls = malloc(batch * sizeof(*cls));
	if (!cls)
		goto out_data;
	for (size_t first = 0; first < count; first += batch) {
		uint32_t n = count - first < batch ? (uint32_t)(count - first) : batch;

		if (splitnic_predict(ctx, data + first * in.item_bytes, n * in.item_bytes, n, NULL,
				     0, cls, &e)) {
			fprintf(stderr, "predict: %s\n", e.msg);
			goto out_data;
		}
		for (uint32_t i = 0; i < n; i++) {
			splitnic_model_label(m, cls[i], &label, NULL);
			printf("%u %s\n", cls[i], label);
		}
	}
	ret = 0;
out_data:
	free(cls);
	free(data);
out:
	splitnic_ctx_free(ctx, NULL);
	splitnic_model_free(m, NULL);
	return ret;
}
