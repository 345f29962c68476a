// SPDX-License-Identifier: MIT
/* libsplitnic: models (load, shapes, labels) and the handle checks. */
#include <errno.h>
#include <fcntl.h>
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "lib/snlib_obj.h"

#define LABEL_MAX 64

const char *splitnic_version(void)
{
	return SNLIB_STR(SPLITNIC_VERSION_MAJOR) "." SNLIB_STR(
	    SPLITNIC_VERSION_MINOR) "." SNLIB_STR(SPLITNIC_VERSION_PATCH);
}

int snlib_model_check(const struct splitnic_model *m, struct splitnic_error *err)
{
	static const struct snlib_handle_kind kind = {
	    SNLIB_MODEL_MAGIC, SNLIB_DEAD_MODEL,      "model",
	    "model",	       "splitnic_model_load", "splitnic_model_free"};

	return snlib_handle_check(m ? &m->magic : NULL, &kind, err);
}

const struct model *snlib_model_kern(const struct splitnic_model *m)
{
	return snlib_model_check(m, NULL) ? NULL : m->km;
}

static int set_numbers(struct splitnic_model *m)
{
	m->labels = calloc(m->classes, LABEL_MAX);
	if (!m->labels)
		return -ENOMEM;
	for (uint32_t c = 0; c < m->classes; c++)
		snprintf(m->labels + (size_t)c * LABEL_MAX, LABEL_MAX, "%u", c);
	return 0;
}

int splitnic_model_load(const char *path, struct splitnic_model **model, struct splitnic_error *err)
{
	struct splitnic_model *m;
	char msg[SPLITNIC_ERROR_MAX];
	int fd;

	if (!model)
		return snlib_fail(err, SPLITNIC_E_INVALID, "model (the result pointer) is NULL");
	*model = NULL;
	if (!path)
		return snlib_fail(err, SPLITNIC_E_INVALID, "path is NULL");
	fd = open(path, O_RDONLY | O_CLOEXEC);
	if (fd < 0)
		return snlib_fail(err, SPLITNIC_E_IO, "%s: %s", path, strerror(errno));
	close(fd);
	m = calloc(1, sizeof(*m));
	if (!m)
		return snlib_fail(err, SPLITNIC_E_NOMEM, "%s: out of memory", path);
	m->km = model_load(path, msg, sizeof(msg));
	if (!m->km) {
		free(m);
		return snlib_fail(err, SPLITNIC_E_BAD_MODEL, "%s", msg);
	}
	m->input.dtype = m->km->input.fmt == MODEL_FMT_U8 ? SPLITNIC_DTYPE_U8 : SPLITNIC_DTYPE_F32;
	m->input.c = m->km->input.c;
	m->input.h = m->km->input.h;
	m->input.w = m->km->input.w;
	m->input.item_bytes = model_shape_bytes(&m->km->input);
	m->classes = model_classes(m->km);
	if (set_numbers(m)) {
		model_free(m->km);
		free(m);
		return snlib_fail(err, SPLITNIC_E_NOMEM, "%s: out of memory", path);
	}
	atomic_init(&m->n_ctx, 0);
	m->magic = SNLIB_MODEL_MAGIC;
	*model = m;
	return snlib_ok(err);
}

int splitnic_model_free(struct splitnic_model *m, struct splitnic_error *err)
{
	int ret;
	uint32_t live;

	if (!m)
		return snlib_ok(err);
	ret = snlib_model_check(m, err);
	if (ret)
		return ret;
	live = atomic_load(&m->n_ctx);
	if (live)
		return snlib_fail(err, SPLITNIC_E_BUSY,
				  "model %s still has %u live context(s): free them first",
				  m->km->name, live);
	model_free(m->km);
	free(m->labels);
	m->km = NULL;
	m->labels = NULL;
	m->magic = SNLIB_DEAD_MODEL;
	snlib_release(m);
	return snlib_ok(err);
}

/* snlib_model_check, then the pointer argument `name` given. */
static int model_arg_check(const struct splitnic_model *m, const void *arg, const char *name,
			   struct splitnic_error *err)
{
	int ret = snlib_model_check(m, err);

	if (!ret && !arg)
		ret = snlib_fail(err, SPLITNIC_E_INVALID, "%s is NULL", name);
	return ret;
}

const char *splitnic_model_name(const struct splitnic_model *m)
{
	return snlib_model_check(m, NULL) ? NULL : m->km->name;
}

int splitnic_model_input(const struct splitnic_model *m, struct splitnic_shape *shape,
			 struct splitnic_error *err)
{
	int ret = model_arg_check(m, shape, "shape", err);

	if (ret)
		return ret;
	*shape = m->input;
	return snlib_ok(err);
}

int splitnic_model_classes(const struct splitnic_model *m, uint32_t *classes,
			   struct splitnic_error *err)
{
	int ret = model_arg_check(m, classes, "classes", err);

	if (ret)
		return ret;
	*classes = m->classes;
	return snlib_ok(err);
}

int splitnic_model_load_labels(struct splitnic_model *m, const char *path,
			       struct splitnic_error *err)
{
	char line[LABEL_MAX + 2], *labels;
	uint32_t n = 0;
	size_t len;
	FILE *f;
	int ret = model_arg_check(m, path, "path", err);

	if (ret)
		return ret;
	f = fopen(path, "r");
	if (!f)
		return snlib_fail(err, SPLITNIC_E_IO, "%s: %s", path, strerror(errno));
	labels = calloc(m->classes, LABEL_MAX);
	if (!labels) {
		fclose(f);
		return snlib_fail(err, SPLITNIC_E_NOMEM, "%s: out of memory", path);
	}
	while (fgets(line, sizeof(line), f)) {
		len = strcspn(line, "\r\n");
		if (!line[len] && !feof(f)) {
			ret =
			    snlib_fail(err, SPLITNIC_E_INVALID, "%s:%u: label longer than %u bytes",
				       path, n + 1, LABEL_MAX - 1);
			goto out_free;
		}
		line[len] = 0;
		if (!len) {
			ret =
			    snlib_fail(err, SPLITNIC_E_INVALID, "%s:%u: empty label", path, n + 1);
			goto out_free;
		}
		if (n == m->classes) {
			ret = snlib_fail(err, SPLITNIC_E_INVALID,
					 "%s: more than the model's %u classes", path, m->classes);
			goto out_free;
		}
		memcpy(labels + (size_t)n++ * LABEL_MAX, line, len + 1);
	}
	if (ferror(f)) {
		ret = snlib_fail(err, SPLITNIC_E_IO, "%s: read error", path);
		goto out_free;
	}
	if (n != m->classes) {
		ret = snlib_fail(err, SPLITNIC_E_INVALID,
				 "%s: %u labels for the model's %u classes", path, n, m->classes);
		goto out_free;
	}
	fclose(f);
	free(m->labels);
	m->labels = labels;
	return snlib_ok(err);
out_free:
	free(labels);
	fclose(f);
	return ret;
}

int splitnic_model_label(const struct splitnic_model *m, uint32_t cls, const char **label,
			 struct splitnic_error *err)
{
	int ret = model_arg_check(m, label, "label", err);

	if (ret)
		return ret;
	if (cls >= m->classes)
		return snlib_fail(err, SPLITNIC_E_INVALID, "class %u: the model has %u classes",
				  cls, m->classes);
	*label = m->labels + (size_t)cls * LABEL_MAX;
	return snlib_ok(err);
}
