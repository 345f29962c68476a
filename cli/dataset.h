/* SPDX-License-Identifier: MIT */
/*
 * cli/dataset.h — a model's input data set in memory: IDX images for u8 models, a .npy array
 * (N, C, H, W) of float32/float64 for f32 models (converted to float32, the model's input
 * type), optional IDX labels.
 */
#ifndef CLI_DATASET_H
#define CLI_DATASET_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "conf/opts.h"
#include "kernels/kern.h"
#include "model/idx.h"

struct dataset {
	uint32_t count;
	size_t item_bytes;     /* one input in the model's input format */
	const uint8_t *data;   /* count * item_bytes */
	const uint8_t *labels; /* count labels, or NULL */
	struct idx_data images, lab;
	void *owned; /* converted npy data */
};

/* Returns 0 or -errno / -EINVAL with a message naming the file and what does not match. */
int dataset_open(struct dataset *ds, const struct model *m, const char *inputs, const char *labels,
		 char *err, size_t errlen);
void dataset_close(struct dataset *ds);

/* The data set options of the verbs that run a model over inputs (run, emu). */
struct dataset_opts {
	const char *images, *npy, *labels;
	long count; /* -1: the whole data set */
};

/*
 * The rows of an option table (conf/opts.h) for the data set options --images, --npy, --labels
 * and --count (1 .. 2^30), into the struct dataset_opts member F of the options struct S.
 */
#define DATASET_OPT_ROWS(S, F)                                                                     \
	CONF_STR_ROW("images", "IDX[.gz]", offsetof(S, F.images), NULL,                            \
		     "the inputs: IDX images (u8 models)"),                                        \
	    CONF_STR_ROW("npy", "FILE.npy", offsetof(S, F.npy), NULL,                              \
			 "the inputs: an (N, C, H, W) float array (f32 models)"),                  \
	    CONF_STR_ROW("labels", "IDX[.gz]", offsetof(S, F.labels), NULL,                        \
			 "one label per input: the accuracy"),                                     \
	    CONF_LONG_ROW("count", "N", offsetof(S, F.count), 1, 1L << 30, NULL,                   \
			  "the first N inputs only (default: all)")

/* Exactly one of --images and --npy given? */
bool dataset_opts_valid(const struct dataset_opts *o);

/* dataset_open of o's inputs and labels for m; then o->count is at most the data set's size. */
int dataset_open_opts(struct dataset *ds, const struct model *m, struct dataset_opts *o, char *err,
		      size_t errlen);

static inline const void *dataset_item(const struct dataset *ds, uint32_t i)
{
	return ds->data + (size_t)i * ds->item_bytes;
}

#endif /* CLI_DATASET_H */
