/* SPDX-License-Identifier: MIT */
/*
 * kernels/npy.h — strict parser of NumPy .npy arrays (format versions 1.0, 2.0 and 3.0).
 *
 * Accepted: magic "\x93NUMPY", major 1|2|3, minor 0, a header length (u16 for 1.x, u32
 * otherwise) inside the buffer, and a header that is exactly a Python dict literal with the
 * three keys 'descr', 'fortran_order' and 'shape' (each once, any order, optional trailing
 * comma), followed only by spaces and a final newline. 'descr' must be '<f4' or '<f8' ('|' and
 * '=' leave the byte order unstated for a multi-byte type, so they are rejected, as are
 * big-endian and every other dtype); 'fortran_order' must be False; 'shape' a tuple of at most
 * KERN_NPY_MAXDIM non-negative integers with at most KERN_NPY_MAX_ELEMS elements in all. The
 * data after the header must be exactly elements * itemsize bytes.
 */
#ifndef KERN_NPY_H
#define KERN_NPY_H

#include <stddef.h>
#include <stdint.h>

#define KERN_NPY_MAXDIM	   8
#define KERN_NPY_MAX_ELEMS (1ull << 28)

struct kern_npy {
	uint32_t itemsize; /* 4 (float32) or 8 (float64) */
	uint32_t ndim;
	uint64_t shape[KERN_NPY_MAXDIM];
	uint64_t count;	  /* product of shape (1 for a 0-d array) */
	const void *data; /* into the parsed buffer, little-endian, possibly unaligned */
};

/* Parse buf[0..len). Returns 0, or -EINVAL with a message (no file or key prefix) in err. */
int kern_npy_parse(const void *buf, size_t len, struct kern_npy *a, char *err, size_t errlen);

/* Convert the parsed elements to double (exact for both dtypes); out holds a->count. */
void kern_npy_to_f64(const struct kern_npy *a, double *out);

#endif /* KERN_NPY_H */
