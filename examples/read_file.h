/* SPDX-License-Identifier: MIT */
/* examples/read_file.h — what the C examples share: a whole file in memory. */
#ifndef EXAMPLES_READ_FILE_H
#define EXAMPLES_READ_FILE_H

#include <stdio.h>
#include <stdlib.h>

/* The file at path, malloc'd, its length in *size; NULL when it cannot be read. */
static void *read_file(const char *path, size_t *size)
{
	FILE *f = fopen(path, "rb");
	char *buf = NULL;
	long n;

	if (!f)
		return NULL;
	if (!fseek(f, 0, SEEK_END) && (n = ftell(f)) >= 0 && !fseek(f, 0, SEEK_SET)) {
		buf = malloc(n ? (size_t)n : 1);
		if (buf && fread(buf, 1, (size_t)n, f) != (size_t)n) {
			free(buf);
			buf = NULL;
		}
		*size = (size_t)n;
	}
	fclose(f);
	return buf;
}

#endif /* EXAMPLES_READ_FILE_H */
