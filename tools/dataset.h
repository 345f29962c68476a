/* SPDX-License-Identifier: MIT */
/*
 * tools/dataset.h — a model's input data set in memory: IDX images for u8 models, a .npy array
 * (N, C, H, W) of float32/float64 for f32 models (converted to float32, the model's input
 * type), optional IDX labels.
 */
#ifndef TOOLS_DATASET_H
#define TOOLS_DATASET_H

#include <stddef.h>
#include <stdint.h>

#include "kernels/kern.h"
#include "tools/idx.h"

struct dataset {
	uint32_t count;
	size_t item_bytes;     /* one input in the model's input format */
	const uint8_t *data;   /* count * item_bytes */
	const uint8_t *labels; /* count labels, or NULL */
	struct idx_data images, lab;
	void *owned; /* converted npy data */
};

/* Returns 0 or -errno / -EINVAL with a message naming the file and what does not match. */
int dataset_open(struct dataset *ds, const struct kern_model *m, const char *inputs,
		 const char *labels, char *err, size_t errlen);
void dataset_close(struct dataset *ds);

static inline const void *dataset_item(const struct dataset *ds, uint32_t i)
{
	return ds->data + (size_t)i * ds->item_bytes;
}

#endif /* TOOLS_DATASET_H */
