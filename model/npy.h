/* SPDX-License-Identifier: MIT */
/*
 * model/npy.h — strict parser of NumPy .npy arrays (format versions 1.0, 2.0 and 3.0), and
 * the writer of format 1.0 files.
 *
 * Accepted: magic "\x93NUMPY", major 1|2|3, minor 0, a header length (u16 for 1.x, u32
 * otherwise) inside the buffer, and a header that is exactly a Python dict literal with the
 * three keys 'descr', 'fortran_order' and 'shape' (each once, any order, optional trailing
 * comma), followed only by spaces and a final newline. 'descr' must be '<f4' or '<f8' ('|' and
 * '=' leave the byte order unstated for a multi-byte type, so they are rejected, as are
 * big-endian and every other dtype); 'fortran_order' must be False; 'shape' a tuple of at most
 * MODEL_NPY_MAXDIM non-negative integers with at most MODEL_NPY_MAX_ELEMS elements in all. The
 * data after the header must be exactly elements * itemsize bytes.
 */
#ifndef MODEL_NPY_H
#define MODEL_NPY_H

#include <stddef.h>
#include <stdint.h>

#define MODEL_NPY_MAXDIM    8
#define MODEL_NPY_MAX_ELEMS (1ull << 28)

struct model_npy {
	uint32_t itemsize; /* 4 (float32) or 8 (float64) */
	uint32_t ndim;
	uint64_t shape[MODEL_NPY_MAXDIM];
	uint64_t count;	  /* product of shape (1 for a 0-d array) */
	const void *data; /* into the parsed buffer, little-endian, possibly unaligned */
};

/* Parse buf[0..len). Returns 0, or -EINVAL with a message (no file or key prefix) in err. */
int model_npy_parse(const void *buf, size_t len, struct model_npy *a, char *err, size_t errlen);

/* Convert the parsed elements to double (exact for both dtypes); out holds a->count. */
void model_npy_to_f64(const struct model_npy *a, double *out);

/*
 * A .npy file (format 1.0) in memory whose header is the dict text dict (padded with spaces to
 * a multiple of 64 bytes, as numpy does) followed by room for data_len bytes of data: malloc'd,
 * its length in *len, or NULL when out of memory. The data section is the last data_len bytes.
 */
void *model_npy_alloc_raw(const char *dict, size_t data_len, size_t *len);

/*
 * A .npy file of a C-order array of descr ("<f4" or "<f8"; any "?f8" has 8-byte items, other
 * descrs 4) and shape[0..ndim) (ndim at most MODEL_NPY_MAXDIM): as model_npy_alloc_raw, with *data
 * set to its data section.
 */
void *model_npy_alloc(const char *descr, const uint64_t *shape, uint32_t ndim, void **data,
		      size_t *len);

#endif /* MODEL_NPY_H */
