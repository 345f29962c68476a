// SPDX-License-Identifier: MIT
#include "cli/dataset.h"

#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "model/npy.h"

static int open_idx(struct dataset *ds, const struct model *m, const char *path, char *err,
		    size_t errlen)
{
	const struct model_shape *s = &m->input;
	const struct idx_data *d = &ds->images;
	bool ok;
	int ret;

	ret = idx_load(path, &ds->images, err, errlen);
	if (ret)
		return ret;
	/* (N, H, W) for one channel, or (N, C, H, W) */
	if (d->ndims == 3)
		ok = s->c == 1 && d->dims[1] == s->h && d->dims[2] == s->w;
	else if (d->ndims == 4)
		ok = d->dims[1] == s->c && d->dims[2] == s->h && d->dims[3] == s->w;
	else
		ok = false;
	if (!ok) {
		snprintf(err, errlen,
			 "%s: images of %u dims (%u x %u x ...) do not match the model "
			 "input %ux%ux%u",
			 path, d->ndims, d->dims[0], d->ndims > 1 ? d->dims[1] : 0, s->c, s->h,
			 s->w);
		return -EINVAL;
	}
	ds->count = d->count;
	ds->item_bytes = d->item_bytes;
	ds->data = d->data;
	return 0;
}

static int read_file(const char *path, void **buf, size_t *len, char *err, size_t errlen)
{
	FILE *f = fopen(path, "rb");
	long size;
	int ret = -EINVAL;

	if (!f) {
		ret = -errno;
		snprintf(err, errlen, "%s: cannot open: %s", path, strerror(errno));
		return ret;
	}
	if (fseek(f, 0, SEEK_END) || (size = ftell(f)) < 0 || fseek(f, 0, SEEK_SET)) {
		snprintf(err, errlen, "%s: cannot size the file", path);
		goto out_close;
	}
	*buf = malloc(size ? (size_t)size : 1);
	if (!*buf) {
		ret = -ENOMEM;
		snprintf(err, errlen, "%s: out of memory for %ld bytes", path, size);
		goto out_close;
	}
	if (fread(*buf, 1, (size_t)size, f) != (size_t)size) {
		snprintf(err, errlen, "%s: short read", path);
		free(*buf);
		goto out_close;
	}
	*len = (size_t)size;
	ret = 0;
out_close:
	fclose(f);
	return ret;
}

static int open_npy(struct dataset *ds, const struct model *m, const char *path, char *err,
		    size_t errlen)
{
	const struct model_shape *s = &m->input;
	char msg[256];
	struct model_npy a;
	double *vals = NULL;
	float *data = NULL;
	size_t len = 0;
	void *buf = NULL;
	int ret;

	ret = read_file(path, &buf, &len, err, errlen);
	if (ret)
		return ret;
	ret = model_npy_parse(buf, len, &a, msg, sizeof(msg));
	if (ret) {
		snprintf(err, errlen, "%s: %s", path, msg);
		goto out_free;
	}
	ret = -EINVAL;
	if (a.ndim != 4 || a.shape[1] != s->c || a.shape[2] != s->h || a.shape[3] != s->w ||
	    !a.shape[0] || a.shape[0] > UINT32_MAX) {
		snprintf(err, errlen, "%s: array shape must be (N, %u, %u, %u) for this model",
			 path, s->c, s->h, s->w);
		goto out_free;
	}
	vals = malloc(a.count * sizeof(double));
	data = malloc(a.count * sizeof(float));
	if (!vals || !data) {
		ret = -ENOMEM;
		snprintf(err, errlen, "%s: out of memory", path);
		goto out_free;
	}
	model_npy_to_f64(&a, vals);
	for (size_t i = 0; i < a.count; i++)
		data[i] = (float)vals[i];
	ds->count = (uint32_t)a.shape[0];
	ds->item_bytes = model_shape_elems(s) * sizeof(float);
	ds->data = (const uint8_t *)data;
	ds->owned = data;
	data = NULL;
	ret = 0;
out_free:
	free(data);
	free(vals);
	free(buf);
	return ret;
}

int dataset_open(struct dataset *ds, const struct model *m, const char *inputs, const char *labels,
		 char *err, size_t errlen)
{
	int ret;

	memset(ds, 0, sizeof(*ds));
	if (m->input.fmt == MODEL_FMT_U8)
		ret = open_idx(ds, m, inputs, err, errlen);
	else
		ret = open_npy(ds, m, inputs, err, errlen);
	if (ret)
		goto out_close;
	if (labels) {
		ret = idx_load_labels(labels, ds->count, &ds->lab, err, errlen);
		if (ret)
			goto out_close;
		ds->labels = ds->lab.data;
	}
	return 0;

out_close:
	dataset_close(ds);
	return ret;
}

void dataset_close(struct dataset *ds)
{
	idx_free(&ds->images);
	idx_free(&ds->lab);
	free(ds->owned);
	memset(ds, 0, sizeof(*ds));
}

bool dataset_opts_valid(const struct dataset_opts *o)
{
	return !o->images != !o->npy;
}

int dataset_open_opts(struct dataset *ds, const struct model *m, struct dataset_opts *o, char *err,
		      size_t errlen)
{
	int ret = dataset_open(ds, m, o->images ? o->images : o->npy, o->labels, err, errlen);

	if (!ret && (o->count < 0 || (uint64_t)o->count > ds->count))
		o->count = ds->count;
	return ret;
}
