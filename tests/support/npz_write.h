/* SPDX-License-Identifier: MIT */
/*
 * tests/support/npz_write.h — fixtures for converter tests: .npy encoding, .npz archives
 * written with libzip, text files and a per-test temporary directory.
 */
#ifndef TEST_NPZ_WRITE_H
#define TEST_NPZ_WRITE_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

/* One array: key "i.name", dtype '<f4' (float32) or '<f8', shape, values as doubles. */
struct test_array {
	const char *key;
	const char *descr; /* NULL: "<f4" */
	uint32_t ndim;
	uint64_t shape[4];
	const double *v;
};

/* A .npy v1.0 file with the given header dict text and raw data; malloc'd, length in *len. */
uint8_t *test_npy_raw(const char *dict, const void *data, size_t data_len, size_t *len);

/* A .npy v1.0 file of an array (values converted to the dtype). */
uint8_t *test_npy_encode(const struct test_array *a, size_t *len);

/* An .npz holding members name[i] (already encoded); deflated or stored. Returns 0 or -1. */
int test_npz_write_members(const char *path, const char *const *names, uint8_t *const *bufs,
			   const size_t *lens, size_t n, bool deflate);

/* An .npz of arrays (member "key.npy" each). Returns 0 or -1. */
int test_npz_write(const char *path, const struct test_array *a, size_t n, bool deflate);

/* Write text to path. Returns 0 or -1. */
int test_write_text(const char *path, const char *text);

/* A fresh directory under $TMPDIR (or /tmp); path written to dir (at least 64 bytes). */
int test_tmpdir(char *dir, size_t len);

/* Remove a directory made by test_tmpdir and the files in it. */
void test_rmdir(const char *dir);

#endif /* TEST_NPZ_WRITE_H */
