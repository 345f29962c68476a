// SPDX-License-Identifier: MIT
#include "model/idx.h"

#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <zlib.h>

#define IDX_MAX_BYTES (1ull << 31)

static int read_exact(gzFile f, void *buf, size_t len)
{
	uint8_t *p = buf;

	while (len) {
		unsigned chunk = len > (1u << 30) ? (1u << 30) : (unsigned)len;
		int n = gzread(f, p, chunk);

		if (n <= 0)
			return -1;
		p += n;
		len -= (size_t)n;
	}
	return 0;
}

int idx_load(const char *path, struct idx_data *out, char *err, size_t errlen)
{
	uint8_t hdr[4], be[4], extra;
	uint64_t total = 1;
	gzFile f;
	int ret = -EINVAL;

	memset(out, 0, sizeof(*out));
	f = gzopen(path, "rb");
	if (!f) {
		ret = errno ? -errno : -ENOMEM;
		snprintf(err, errlen, "%s: cannot open: %s", path, strerror(-ret));
		return ret;
	}
	if (read_exact(f, hdr, 4)) {
		snprintf(err, errlen, "%s: truncated IDX header", path);
		goto out_close;
	}
	if (hdr[0] || hdr[1] || hdr[2] != 0x08) {
		snprintf(err, errlen, "%s: not an unsigned-byte IDX file (magic %02x%02x%02x%02x)",
			 path, hdr[0], hdr[1], hdr[2], hdr[3]);
		goto out_close;
	}
	if (hdr[3] < 1 || hdr[3] > 4) {
		snprintf(err, errlen, "%s: IDX ndims %u not in 1..4", path, hdr[3]);
		goto out_close;
	}
	out->ndims = hdr[3];
	for (uint32_t i = 0; i < out->ndims; i++) {
		if (read_exact(f, be, 4)) {
			snprintf(err, errlen, "%s: truncated IDX header (dim %u)", path, i);
			goto out_close;
		}
		out->dims[i] =
		    (uint32_t)be[0] << 24 | (uint32_t)be[1] << 16 | (uint32_t)be[2] << 8 | be[3];
		if (!out->dims[i]) {
			snprintf(err, errlen, "%s: IDX dim %u is 0", path, i);
			goto out_close;
		}
		total *= out->dims[i];
		if (total > IDX_MAX_BYTES) {
			snprintf(err, errlen, "%s: IDX data larger than %llu bytes", path,
				 IDX_MAX_BYTES);
			goto out_close;
		}
	}
	out->count = out->dims[0];
	out->item_bytes = (size_t)(total / out->count);
	out->data = malloc(total);
	if (!out->data) {
		ret = -ENOMEM;
		snprintf(err, errlen, "%s: out of memory for %llu bytes", path,
			 (unsigned long long)total);
		goto out_close;
	}
	if (read_exact(f, out->data, total)) {
		snprintf(err, errlen, "%s: truncated IDX data (expected %llu bytes)", path,
			 (unsigned long long)total);
		goto out_free;
	}
	if (gzread(f, &extra, 1) != 0) {
		snprintf(err, errlen, "%s: trailing bytes after IDX data", path);
		goto out_free;
	}
	gzclose(f);
	return 0;

out_free:
	free(out->data);
	out->data = NULL;
out_close:
	gzclose(f);
	return ret;
}

int idx_load_labels(const char *path, uint32_t count, struct idx_data *out, char *err,
		    size_t errlen)
{
	int ret = idx_load(path, out, err, errlen);

	if (ret)
		return ret;
	if (out->ndims == 1 && out->item_bytes == 1 && out->count == count)
		return 0;
	snprintf(err, errlen,
		 "%s: %u labels (%u-dimensional) for %u inputs: expected a 1-dimensional label "
		 "file of one byte per input, as many as the inputs",
		 path, out->count, out->ndims, count);
	idx_free(out);
	return -EINVAL;
}

void idx_free(struct idx_data *d)
{
	free(d->data);
	d->data = NULL;
}
