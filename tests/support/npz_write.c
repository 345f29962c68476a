/* SPDX-License-Identifier: MIT */
#include <dirent.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>
#include <zip.h>

#include "model/npy.h"
#include "tests/support/npz_write.h"

uint8_t *test_npy_raw(const char *dict, const void *data, size_t data_len, size_t *len)
{
	uint8_t *b = model_npy_alloc_raw(dict, data_len, len);

	if (b && data_len)
		memcpy(b + *len - data_len, data, data_len);
	return b;
}

uint8_t *test_npy_encode(const struct test_array *a, size_t *len)
{
	const char *descr = a->descr ? a->descr : "<f4";
	uint8_t *data, *out = model_npy_alloc(descr, a->shape, a->ndim, (void **)&data, len);
	size_t n = 1;

	for (uint32_t d = 0; out && d < a->ndim; d++)
		n *= a->shape[d];
	for (size_t i = 0; out && i < n; i++) {
		if (strcmp(descr + 1, "f8")) {
			float f = (float)a->v[i];

			memcpy(data + 4 * i, &f, 4);
		} else {
			memcpy(data + 8 * i, &a->v[i], 8);
		}
	}
	return out;
}

int test_npz_write_members(const char *path, const char *const *names, uint8_t *const *bufs,
			   const size_t *lens, size_t n, bool deflate)
{
	zip_t *za;
	int zerr;

	unlink(path);
	if (!n) { /* libzip writes no file for an empty archive; numpy writes this */
		static const uint8_t eocd[22] = {'P', 'K', 5, 6};
		FILE *f = fopen(path, "wb");

		if (!f)
			return -1;
		n = fwrite(eocd, sizeof(eocd), 1, f);
		return fclose(f) || n != 1 ? -1 : 0;
	}
	za = zip_open(path, ZIP_CREATE | ZIP_TRUNCATE, &zerr);
	if (!za)
		return -1;
	for (size_t i = 0; i < n; i++) {
		zip_source_t *src = zip_source_buffer(za, bufs[i], lens[i], 0);
		zip_int64_t idx;

		if (!src)
			goto err_discard;
		idx = zip_file_add(za, names[i], src, ZIP_FL_ENC_UTF_8);
		if (idx < 0) {
			zip_source_free(src);
			goto err_discard;
		}
		if (zip_set_file_compression(za, (zip_uint64_t)idx,
					     deflate ? ZIP_CM_DEFLATE : ZIP_CM_STORE, 0) < 0)
			goto err_discard;
	}
	return zip_close(za) < 0 ? -1 : 0;

err_discard:
	zip_discard(za);
	return -1;
}

int test_npz_write(const char *path, const struct test_array *a, size_t n, bool deflate)
{
	char **names = calloc(n + 1, sizeof(*names));
	uint8_t **bufs = calloc(n + 1, sizeof(*bufs));
	size_t *lens = calloc(n + 1, sizeof(*lens));
	int ret = -1;

	if (!names || !bufs || !lens)
		goto out_free;
	for (size_t i = 0; i < n; i++) {
		names[i] = malloc(strlen(a[i].key) + 5);
		bufs[i] = test_npy_encode(&a[i], &lens[i]);
		if (!names[i] || !bufs[i])
			goto out_free;
		sprintf(names[i], "%s.npy", a[i].key);
	}
	ret = test_npz_write_members(path, (const char *const *)names, bufs, lens, n, deflate);

out_free:
	for (size_t i = 0; names && bufs && i < n; i++) {
		free(names[i]);
		free(bufs[i]);
	}
	free(names);
	free(bufs);
	free(lens);
	return ret;
}

int test_write_text(const char *path, const char *text)
{
	FILE *f = fopen(path, "w");
	int ret;

	if (!f)
		return -1;
	ret = fputs(text, f) < 0 ? -1 : 0;
	if (fclose(f))
		ret = -1;
	return ret;
}

int test_tmpdir(char *dir, size_t len)
{
	const char *t = getenv("TMPDIR");

	snprintf(dir, len, "%s/splitnic-test.XXXXXX", t && *t ? t : "/tmp");
	return mkdtemp(dir) ? 0 : -1;
}

void test_rmdir(const char *dir)
{
	DIR *d = opendir(dir);
	struct dirent *e;
	char path[4096];

	if (!d)
		return;
	while ((e = readdir(d))) {
		if (!strcmp(e->d_name, ".") || !strcmp(e->d_name, ".."))
			continue;
		snprintf(path, sizeof(path), "%s/%s", dir, e->d_name);
		unlink(path);
	}
	closedir(d);
	rmdir(dir);
}
