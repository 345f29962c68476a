/* SPDX-License-Identifier: MIT */
/*
 * model/idx.h — IDX files (the MNIST/Fashion-MNIST format), plain or gzip-compressed.
 *
 * Layout: u16 0, u8 type (0x08 = unsigned byte; the only type accepted), u8 ndims, then ndims
 * big-endian u32 sizes, then the data. Images are (N, rows, cols), labels (N).
 */
#ifndef MODEL_IDX_H
#define MODEL_IDX_H

#include <stddef.h>
#include <stdint.h>

struct idx_data {
	uint32_t ndims;
	uint32_t dims[4];
	uint32_t count;	   /* dims[0] */
	size_t item_bytes; /* product of dims[1..] (1 for labels) */
	uint8_t *data;	   /* count * item_bytes */
};

/* Read a whole IDX file. Returns 0 or -errno / -EINVAL with a message naming the file in err. */
int idx_load(const char *path, struct idx_data *out, char *err, size_t errlen);
/*
 * idx_load of the labels of `count` inputs: a 1-dimensional file of one byte per input, as many
 * as the inputs; else -EINVAL (nothing kept) with a message naming the file and both counts.
 */
int idx_load_labels(const char *path, uint32_t count, struct idx_data *out, char *err,
		    size_t errlen);
void idx_free(struct idx_data *d);

#endif /* MODEL_IDX_H */
