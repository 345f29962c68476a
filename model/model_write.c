/* SPDX-License-Identifier: MIT */
#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "model/crc32c.h"
#include "model/model_file.h"

static uint64_t align_up(uint64_t x)
{
	return (x + MODEL_FILE_ALIGN - 1) & ~(uint64_t)(MODEL_FILE_ALIGN - 1);
}

int model_serialize(const struct model *m, void **buf, size_t *size)
{
	struct model_file_header h = {.magic = MODEL_FILE_MAGIC,
				      .version = MODEL_FILE_VERSION,
				      .header_size = MODEL_FILE_HEADER_SIZE};
	uint64_t end;
	uint8_t *out;

	if (m->n_src > UINT16_MAX || m->n_layers > UINT32_MAX / MODEL_FILE_OP_SIZE)
		return -EINVAL;
	h.n_src = m->n_src;
	h.n_ops = m->n_layers;
	h.src_offset = MODEL_FILE_HEADER_SIZE;
	h.op_offset = align_up(h.src_offset + (uint64_t)m->n_src * MODEL_FILE_SRC_SIZE);
	h.in_fmt = m->input.fmt;
	h.in_c = m->input.c;
	h.in_h = m->input.h;
	h.in_w = m->input.w;
	memcpy(h.name, m->name, sizeof(h.name));
	h.name[sizeof(h.name) - 1] = '\0';
	end = h.op_offset + (uint64_t)m->n_layers * MODEL_FILE_OP_SIZE;
	for (uint32_t i = 0; i < m->n_layers; i++) {
		const struct model_layer *l = &m->layers[i];

		if (l->src_first > UINT16_MAX || l->src_count > UINT16_MAX || l->op > UINT16_MAX ||
		    l->flags > UINT16_MAX)
			return -EINVAL;
		for (unsigned int b = 0; b < MODEL_NBLOB; b++) {
			if (l->blob_size[b] && !l->blob[b])
				return -EINVAL;
			if (l->blob_size[b])
				end = align_up(end) + l->blob_size[b];
		}
	}
	if (end > SIZE_MAX)
		return -EINVAL;
	out = calloc(1, (size_t)end);
	if (!out)
		return -ENOMEM;
	h.file_size = end;
	memcpy(out + h.src_offset, m->src, (size_t)m->n_src * MODEL_FILE_SRC_SIZE);
	end = h.op_offset + (uint64_t)m->n_layers * MODEL_FILE_OP_SIZE;
	for (uint32_t i = 0; i < m->n_layers; i++) {
		const struct model_layer *l = &m->layers[i];
		struct model_file_op r = {
		    .op = (uint16_t)l->op,
		    .flags = (uint16_t)l->flags,
		    .src_first = (uint16_t)l->src_first,
		    .src_count = (uint16_t)l->src_count,
		    .in_fmt = l->in.fmt,
		    .in_c = l->in.c,
		    .in_h = l->in.h,
		    .in_w = l->in.w,
		    .out_fmt = l->out.fmt,
		    .out_c = l->out.c,
		    .out_h = l->out.h,
		    .out_w = l->out.w,
		    .kernel = l->kernel,
		    .stride = l->stride,
		    .pad = l->pad,
		    .lrn_size = l->lrn_size,
		    .lrn_alpha = l->lrn_alpha,
		    .lrn_beta = l->lrn_beta,
		    .lrn_k = l->lrn_k,
		};

		for (unsigned int b = 0; b < MODEL_NBLOB; b++) {
			if (!l->blob_size[b])
				continue;
			end = align_up(end);
			r.blob[b] = (struct model_file_blob){end, l->blob_size[b]};
			memcpy(out + end, l->blob[b], (size_t)l->blob_size[b]);
			end += l->blob_size[b];
		}
		memcpy(out + h.op_offset + (uint64_t)i * MODEL_FILE_OP_SIZE, &r, sizeof(r));
	}
	memcpy(out, &h, sizeof(h));
	h.crc32c = model_crc32c(0, out, (size_t)h.file_size);
	memcpy(out + offsetof(struct model_file_header, crc32c), &h.crc32c, sizeof(h.crc32c));
	*buf = out;
	*size = (size_t)h.file_size;
	return 0;
}

int model_write(const struct model *m, const char *path, char *err, size_t errlen)
{
	size_t size, done = 0;
	void *buf;
	int fd, ret;

	ret = model_serialize(m, &buf, &size);
	if (ret) {
		snprintf(err, errlen, "%s: %s", path,
			 ret == -ENOMEM ? "out of memory" : "model does not fit the file format");
		return ret;
	}
	fd = open(path, O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0644);
	if (fd < 0) {
		ret = -errno;
		snprintf(err, errlen, "%s: open: %s", path, strerror(errno));
		goto out_free;
	}
	while (done < size) {
		ssize_t n = write(fd, (const uint8_t *)buf + done, size - done);

		if (n < 0 && errno == EINTR)
			continue;
		if (n <= 0) {
			ret = n < 0 ? -errno : -EIO;
			snprintf(err, errlen, "%s: write: %s", path, strerror(-ret));
			goto out_close;
		}
		done += (size_t)n;
	}
	ret = 0;
	if (close(fd) < 0) {
		ret = -errno;
		snprintf(err, errlen, "%s: close: %s", path, strerror(errno));
	}
	free(buf);
	return ret;

out_close:
	close(fd);
out_free:
	free(buf);
	return ret;
}
