/* SPDX-License-Identifier: MIT */
#include <errno.h>
#include <fcntl.h>
#include <jansson.h>
#include <math.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <unistd.h>
#include <zip.h>

#include "model/compile.h"
#include "model/model.h"
#include "model/model_file.h"
#include "model/npy.h"

#define CONV_MAX_WINDOW	 65536u /* kernel, stride, pad, lrn size */
#define CONV_MAX_MEMBER	 (8 * MODEL_NPY_MAX_ELEMS + 65536)
#define CONV_MAX_DEFLATE 1032 /* deflate's largest expansion: 258 bytes from 2 bits */

struct conv {
	const char *arch, *npz;
	char *err;
	size_t errlen;
	uint64_t npz_len;   /* bytes of the archive */
	unsigned int flags; /* MODEL_IC_ARCH_* */
};

__attribute__((format(printf, 3, 4))) static int conv_fail(struct conv *cv, const char *file,
							   const char *fmt, ...)
{
	char msg[320];
	va_list ap;

	va_start(ap, fmt);
	vsnprintf(msg, sizeof(msg), fmt, ap);
	va_end(ap);
	snprintf(cv->err, cv->errlen, "%s: %s", file, msg);
	return -EINVAL;
}

/* Layer fields by type (besides "type"); "kernel" is required where listed first. */
static const struct {
	const char *name;
	uint32_t type;
	const char *fields[7];
} layer_kinds[] = {
    {"dense", MODEL_SRC_DENSE, {"out", "bias", "binary_weights"}},
    {"conv", MODEL_SRC_CONV, {"out", "kernel", "stride", "pad", "bias", "binary_weights"}},
    {"batchnorm", MODEL_SRC_BATCHNORM, {"eps"}},
    {"sign", MODEL_SRC_SIGN, {NULL}},
    {"relu", MODEL_SRC_RELU, {NULL}},
    {"maxpool", MODEL_SRC_MAXPOOL, {"kernel", "stride"}},
    {"flatten", MODEL_SRC_FLATTEN, {NULL}},
    {"lrn", MODEL_SRC_LRN, {"size", "alpha", "beta", "k"}},
};

struct field_ctx {
	struct conv *cv;
	json_t *obj;
	char where[64];
};

/* An integer field in [min, max]; absent: def, or an error if required. */
static int field_uint(struct field_ctx *f, const char *key, bool required, uint32_t def,
		      uint32_t min, uint32_t max, uint32_t *out)
{
	json_t *v = json_object_get(f->obj, key);
	json_int_t x;

	if (!v) {
		if (required)
			return conv_fail(f->cv, f->cv->arch, "%s: missing field \"%s\"", f->where,
					 key);
		*out = def;
		return 0;
	}
	x = json_is_integer(v) ? json_integer_value(v) : -1;
	if (!json_is_integer(v) || x < min || x > max)
		return conv_fail(f->cv, f->cv->arch,
				 "%s: field \"%s\" must be an integer in %u..%u", f->where, key,
				 min, max);
	*out = (uint32_t)x;
	return 0;
}

static int field_bool(struct field_ctx *f, const char *key, bool *out)
{
	json_t *v = json_object_get(f->obj, key);

	*out = false;
	if (!v)
		return 0;
	if (!json_is_boolean(v))
		return conv_fail(f->cv, f->cv->arch, "%s: field \"%s\" must be true or false",
				 f->where, key);
	*out = json_is_true(v);
	return 0;
}

static int field_real(struct field_ctx *f, const char *key, double def, double *out)
{
	json_t *v = json_object_get(f->obj, key);

	*out = def;
	if (!v)
		return 0;
	if (!json_is_number(v) || !isfinite(json_number_value(v)))
		return conv_fail(f->cv, f->cv->arch, "%s: field \"%s\" must be a finite number",
				 f->where, key);
	*out = json_number_value(v);
	return 0;
}

static int check_keys(struct field_ctx *f, const char *const *allowed, size_t n)
{
	const char *key;
	json_t *v;

	json_object_foreach(f->obj, key, v)
	{
		bool ok = false;

		for (size_t i = 0; i < n && allowed[i]; i++)
			ok = ok || !strcmp(key, allowed[i]);
		if (!ok)
			return conv_fail(f->cv, f->cv->arch, "%s: unknown field \"%s\"", f->where,
					 key);
	}
	return 0;
}

static int parse_layer(struct conv *cv, uint32_t i, json_t *jl, struct model_ic_layer *L)
{
	struct field_ctx f = {.cv = cv, .obj = jl};
	const char *type;
	unsigned int k;
	int ret;

	snprintf(f.where, sizeof(f.where), "layer %u", i);
	if (!json_is_object(jl))
		return conv_fail(cv, cv->arch, "%s: not an object", f.where);
	type = json_string_value(json_object_get(jl, "type"));
	if (!type)
		return conv_fail(cv, cv->arch, "%s: field \"type\" missing or not a string",
				 f.where);
	for (k = 0; k < sizeof(layer_kinds) / sizeof(layer_kinds[0]); k++)
		if (!strcmp(type, layer_kinds[k].name))
			break;
	if (k == sizeof(layer_kinds) / sizeof(layer_kinds[0]))
		return conv_fail(cv, cv->arch, "%s: unknown type \"%.32s\"", f.where, type);
	snprintf(f.where, sizeof(f.where), "layer %u (%s)", i, layer_kinds[k].name);
	*L = (struct model_ic_layer){.type = layer_kinds[k].type};
	{
		const char *allowed[9] = {"type"};
		size_t n = 1;

		memcpy(allowed + 1, layer_kinds[k].fields, sizeof(layer_kinds[k].fields));
		while (allowed[n])
			n++;
		if (L->type == MODEL_SRC_CONV && (cv->flags & MODEL_IC_ARCH_GROUPS))
			allowed[n] = "groups";
		ret = check_keys(&f, allowed, 9);
		if (ret)
			return ret;
	}
	switch (L->type) {
	case MODEL_SRC_DENSE:
	case MODEL_SRC_CONV:
		ret = field_uint(&f, "out", true, 0, 1, MODEL_FILE_MAX_ELEMS, &L->out);
		if (!ret)
			ret = field_bool(&f, "bias", &L->bias);
		if (!ret)
			ret = field_bool(&f, "binary_weights", &L->binw);
		if (ret || L->type == MODEL_SRC_DENSE)
			return ret;
		ret = field_uint(&f, "kernel", true, 0, 1, CONV_MAX_WINDOW, &L->kernel);
		if (!ret)
			ret = field_uint(&f, "stride", false, 1, 1, CONV_MAX_WINDOW, &L->stride);
		if (!ret)
			ret = field_uint(&f, "pad", false, 0, 0, CONV_MAX_WINDOW, &L->pad);
		if (!ret && (cv->flags & MODEL_IC_ARCH_GROUPS))
			ret =
			    field_uint(&f, "groups", false, 1, 1, MODEL_FILE_MAX_ELEMS, &L->groups);
		return ret;
	case MODEL_SRC_MAXPOOL:
		ret = field_uint(&f, "kernel", true, 0, 1, CONV_MAX_WINDOW, &L->kernel);
		if (!ret)
			ret = field_uint(&f, "stride", false, L->kernel, 1, CONV_MAX_WINDOW,
					 &L->stride);
		return ret;
	case MODEL_SRC_BATCHNORM:
		return field_real(&f, "eps", 1e-5, &L->eps);
	case MODEL_SRC_LRN:
		ret = field_uint(&f, "size", false, 5, 1, CONV_MAX_WINDOW, &L->lrn_size);
		if (!ret && !(L->lrn_size & 1))
			ret = conv_fail(cv, cv->arch, "%s: field \"size\" %u must be odd", f.where,
					L->lrn_size);
		if (!ret)
			ret = field_real(&f, "alpha", 1e-4, &L->lrn_alpha);
		if (!ret)
			ret = field_real(&f, "beta", 0.75, &L->lrn_beta);
		if (!ret)
			ret = field_real(&f, "k", 1.0, &L->lrn_k);
		return ret;
	}
	return 0;
}

static int parse_input(struct conv *cv, json_t *in, struct model_shape *s)
{
	static const char *const allowed[] = {"shape", "dtype"};
	struct field_ctx f = {.cv = cv, .obj = in, .where = "input"};
	json_t *shape = json_object_get(in, "shape");
	const char *dtype = json_string_value(json_object_get(in, "dtype"));
	uint32_t d[3];
	int ret;

	if (!json_is_object(in))
		return conv_fail(cv, cv->arch, "\"input\" missing or not an object");
	ret = check_keys(&f, allowed, 2);
	if (ret)
		return ret;
	if (!json_is_array(shape) || json_array_size(shape) != 3)
		return conv_fail(cv, cv->arch, "input: \"shape\" must be [C, H, W]");
	for (unsigned int k = 0; k < 3; k++) {
		json_t *v = json_array_get(shape, k);

		if (!json_is_integer(v) || json_integer_value(v) < 1 ||
		    json_integer_value(v) > (json_int_t)MODEL_FILE_MAX_ELEMS)
			return conv_fail(cv, cv->arch,
					 "input: \"shape\"[%u] must be a positive integer", k);
		d[k] = (uint32_t)json_integer_value(v);
	}
	if (!dtype || (strcmp(dtype, "u8") && strcmp(dtype, "f32")))
		return conv_fail(cv, cv->arch, "input: \"dtype\" must be \"u8\" or \"f32\"");
	*s = (struct model_shape){strcmp(dtype, "u8") ? MODEL_FMT_F32 : MODEL_FMT_U8, d[0], d[1],
				  d[2]};
	if (model_shape_elems(s) > MODEL_FILE_MAX_ELEMS)
		return conv_fail(cv, cv->arch, "input: shape [%u, %u, %u] over %llu elements", d[0],
				 d[1], d[2], (unsigned long long)MODEL_FILE_MAX_ELEMS);
	return 0;
}

static int parse_arch(struct conv *cv, struct model_ic_model *ic, const void *json, size_t len)
{
	static const char *const allowed[] = {"name", "input", "layers"};
	struct field_ctx f = {.cv = cv, .where = "top level"};
	json_error_t jerr;
	json_t *root, *layers, *name;
	int ret;

	root = json_loadb(json, len, JSON_REJECT_DUPLICATES, &jerr);
	if (!root)
		return conv_fail(cv, cv->arch, "line %d column %d: %s", jerr.line, jerr.column,
				 jerr.text);
	f.obj = root;
	ret = -EINVAL;
	if (!json_is_object(root)) {
		conv_fail(cv, cv->arch, "not a JSON object");
		goto out_put;
	}
	if (check_keys(&f, allowed, 3))
		goto out_put;
	name = json_object_get(root, "name");
	if (name && (!json_is_string(name) || json_string_length(name) >= MODEL_NAME_MAX ||
		     strlen(json_string_value(name)) != json_string_length(name))) {
		conv_fail(cv, cv->arch, "\"name\" must be a string of at most %d bytes",
			  MODEL_NAME_MAX - 1);
		goto out_put;
	}
	if (name)
		strcpy(ic->name, json_string_value(name));
	if (parse_input(cv, json_object_get(root, "input"), &ic->input))
		goto out_put;
	layers = json_object_get(root, "layers");
	if (!json_is_array(layers) || !json_array_size(layers) ||
	    json_array_size(layers) > MODEL_FILE_MAX_SRC) {
		conv_fail(cv, cv->arch, "\"layers\" must be an array of 1..%d layers",
			  MODEL_FILE_MAX_SRC);
		goto out_put;
	}
	ic->n_layers = (uint32_t)json_array_size(layers);
	ic->layers = calloc(ic->n_layers, sizeof(*ic->layers));
	if (!ic->layers) {
		ret = -ENOMEM;
		conv_fail(cv, cv->arch, "out of memory");
		goto out_put;
	}
	for (uint32_t i = 0; i < ic->n_layers; i++)
		if (parse_layer(cv, i, json_array_get(layers, i), &ic->layers[i]))
			goto out_put;
	ret = 0;

out_put:
	json_decref(root);
	return ret;
}

/* Read one archive member whole into a malloc'd buffer. */
static int read_member(struct conv *cv, zip_t *za, zip_uint64_t idx, const char *name,
		       uint8_t **buf, size_t *len)
{
	zip_stat_t st;
	zip_file_t *zf;
	zip_int64_t n;
	uint8_t extra;
	int ret = -EINVAL;

	if (zip_stat_index(za, idx, 0, &st) < 0 || !(st.valid & ZIP_STAT_SIZE) ||
	    !(st.valid & ZIP_STAT_COMP_SIZE) || !(st.valid & ZIP_STAT_COMP_METHOD))
		return conv_fail(cv, cv->npz, "member %s: %s", name, zip_strerror(za));
	if (st.comp_method != ZIP_CM_STORE && st.comp_method != ZIP_CM_DEFLATE)
		return conv_fail(cv, cv->npz,
				 "member %s: compression method %d (need stored or "
				 "deflated)",
				 name, st.comp_method);
	if (st.size > CONV_MAX_MEMBER)
		return conv_fail(cv, cv->npz, "member %s: %llu bytes, too large", name,
				 (unsigned long long)st.size);
	/* The directory's sizes are claims: bound them by the archive before allocating. */
	if (st.comp_size > cv->npz_len ||
	    (st.comp_method == ZIP_CM_STORE ? st.size != st.comp_size
					    : st.size / CONV_MAX_DEFLATE > st.comp_size))
		return conv_fail(cv, cv->npz,
				 "member %s: %llu bytes from %llu %s bytes in a %llu-byte archive: "
				 "sizes inconsistent",
				 name, (unsigned long long)st.size,
				 (unsigned long long)st.comp_size,
				 st.comp_method == ZIP_CM_STORE ? "stored" : "deflated",
				 (unsigned long long)cv->npz_len);
	*len = (size_t)st.size;
	*buf = malloc(*len ? *len : 1);
	if (!*buf)
		return conv_fail(cv, cv->npz, "member %s: out of memory", name);
	zf = zip_fopen_index(za, idx, 0);
	if (!zf) {
		conv_fail(cv, cv->npz, "member %s: %s", name, zip_strerror(za));
		goto err_free;
	}
	n = zip_fread(zf, *buf, *len);
	if (n != (zip_int64_t)*len || zip_fread(zf, &extra, 1) != 0) {
		conv_fail(cv, cv->npz, "member %s: %s", name,
			  n < 0 ? zip_file_strerror(zf) : "size differs from the directory");
		goto err_close;
	}
	zip_fclose(zf);
	return 0;

err_close:
	zip_fclose(zf);
err_free:
	free(*buf);
	*buf = NULL;
	return ret;
}

static int load_member(struct conv *cv, zip_t *za, zip_uint64_t idx, struct model_ic_array *a)
{
	const char *name = zip_get_name(za, idx, ZIP_FL_ENC_RAW);
	size_t nl, len = 0;
	uint8_t *buf = NULL;
	struct model_npy npy;
	char msg[160];
	int ret;

	if (!name)
		return conv_fail(cv, cv->npz, "member %llu: %s", (unsigned long long)idx,
				 zip_strerror(za));
	nl = strlen(name);
	if (nl <= 4 || strcmp(name + nl - 4, ".npy"))
		return conv_fail(cv, cv->npz, "member \"%.64s\" is not an i.name.npy array", name);
	a->key = strndup(name, nl - 4);
	if (!a->key)
		return conv_fail(cv, cv->npz, "out of memory");
	ret = read_member(cv, za, idx, name, &buf, &len);
	if (ret)
		return ret;
	ret = model_npy_parse(buf, len, &npy, msg, sizeof(msg));
	if (ret) {
		conv_fail(cv, cv->npz, "%s: %s", a->key, msg);
		goto out_free;
	}
	a->ndim = npy.ndim;
	memcpy(a->shape, npy.shape, sizeof(a->shape));
	a->count = npy.count;
	a->data = malloc(npy.count ? npy.count * sizeof(double) : 1);
	if (!a->data) {
		ret = conv_fail(cv, cv->npz, "%s: out of memory", a->key);
		goto out_free;
	}
	model_npy_to_f64(&npy, a->data);

out_free:
	free(buf);
	return ret;
}

static int load_npz(struct conv *cv, struct model_ic_model *ic, const void *npz, size_t len)
{
	zip_source_t *src;
	zip_error_t ze;
	zip_t *za;
	zip_int64_t n;
	int ret = 0;

	zip_error_init(&ze);
	src = zip_source_buffer_create(npz, len, 0, &ze);
	za = src ? zip_open_from_source(src, ZIP_RDONLY, &ze) : NULL;
	if (!za) {
		ret = zip_error_code_zip(&ze) == ZIP_ER_MEMORY ? -ENOMEM : -EINVAL;
		conv_fail(cv, cv->npz, "%s", zip_error_strerror(&ze));
		zip_error_fini(&ze);
		zip_source_free(src);
		return ret;
	}
	zip_error_fini(&ze);
	n = zip_get_num_entries(za, 0);
	if (n < 0 || n > 4 * MODEL_FILE_MAX_SRC) {
		ret = conv_fail(cv, cv->npz, "%lld members, too many", (long long)n);
		goto out_close;
	}
	ic->arrays = calloc(n ? (size_t)n : 1, sizeof(*ic->arrays));
	if (!ic->arrays) {
		ret = conv_fail(cv, cv->npz, "out of memory");
		goto out_close;
	}
	for (zip_int64_t i = 0; i < n; i++) {
		ic->n_arrays = (uint32_t)i + 1;
		ret = load_member(cv, za, (zip_uint64_t)i, &ic->arrays[i]);
		if (ret)
			goto out_close;
		for (zip_int64_t j = 0; j < i; j++)
			if (!strcmp(ic->arrays[j].key, ic->arrays[i].key)) {
				ret = conv_fail(cv, cv->npz, "array %s appears twice",
						ic->arrays[i].key);
				goto out_close;
			}
	}

out_close:
	zip_discard(za);
	return ret;
}

void model_ic_free(struct model_ic_model *ic)
{
	for (uint32_t i = 0; i < ic->n_arrays; i++) {
		free(ic->arrays[i].key);
		free(ic->arrays[i].data);
	}
	free(ic->arrays);
	free(ic->layers);
	ic->arrays = NULL;
	ic->layers = NULL;
	ic->n_arrays = ic->n_layers = 0;
}

int model_ic_parse_arch(struct model_ic_model *ic, const void *json, size_t len, char *err,
			size_t errlen)
{
	struct conv cv = {
	    .arch = ic->arch_path, .npz = ic->weights_path, .err = err, .errlen = errlen};

	return parse_arch(&cv, ic, json, len);
}

int model_ic_parse_npz(struct model_ic_model *ic, const void *npz, size_t len, char *err,
		       size_t errlen)
{
	struct conv cv = {
	    .arch = ic->arch_path, .npz = ic->weights_path, .err = err, .errlen = errlen};

	cv.npz_len = len;
	return load_npz(&cv, ic, npz, len);
}

int model_ic_check_used(const struct model_ic_model *ic, char *err, size_t errlen)
{
	struct conv cv = {
	    .arch = ic->arch_path, .npz = ic->weights_path, .err = err, .errlen = errlen};

	for (uint32_t i = 0; i < ic->n_arrays; i++)
		if (!ic->arrays[i].used)
			return conv_fail(&cv, cv.npz, "array %s is not used by any layer",
					 ic->arrays[i].key);
	return 0;
}

/* A whole input file, mapped read-only (an empty file is a zero-length buffer). */
struct conv_file {
	void *map;
	size_t len;
};

static int conv_map(const char *path, struct conv_file *f, char *err, size_t errlen)
{
	struct stat st;
	int fd, ret;

	*f = (struct conv_file){NULL, 0};
	fd = open(path, O_RDONLY | O_CLOEXEC);
	if (fd < 0) {
		ret = -errno;
		snprintf(err, errlen, "%s: %s", path, strerror(errno));
		return ret;
	}
	if (fstat(fd, &st) < 0) {
		ret = -errno;
		snprintf(err, errlen, "%s: stat: %s", path, strerror(errno));
		goto out_close;
	}
	ret = -EINVAL;
	if (!S_ISREG(st.st_mode)) {
		snprintf(err, errlen, "%s: not a regular file", path);
		goto out_close;
	}
	ret = 0;
	if (st.st_size) {
		f->map = mmap(NULL, (size_t)st.st_size, PROT_READ, MAP_PRIVATE, fd, 0);
		if (f->map == MAP_FAILED) {
			ret = -errno;
			f->map = NULL;
			snprintf(err, errlen, "%s: mmap: %s", path, strerror(errno));
			goto out_close;
		}
		f->len = (size_t)st.st_size;
	}

out_close:
	close(fd);
	return ret;
}

static void conv_unmap(struct conv_file *f)
{
	if (f->map)
		munmap(f->map, f->len);
}

int model_ic_load_arch(struct model_ic_model *ic, unsigned int flags, char *err, size_t errlen)
{
	struct conv cv = {.arch = ic->arch_path,
			  .npz = ic->weights_path,
			  .err = err,
			  .errlen = errlen,
			  .flags = flags};
	struct conv_file arch;
	int ret;

	ret = conv_map(ic->arch_path, &arch, err, errlen);
	if (ret)
		return ret;
	ret = parse_arch(&cv, ic, arch.map, arch.len);
	conv_unmap(&arch);
	return ret;
}

int model_convert(const char *arch_json, const char *weights_npz, const char *out_path, char *err,
		  size_t errlen)
{
	struct model_ic_model ic = {.arch_path = arch_json, .weights_path = weights_npz};
	struct conv_file npz = {NULL, 0};
	struct model m;
	int ret;

	ret = model_ic_load_arch(&ic, 0, err, errlen);
	if (!ret)
		ret = conv_map(weights_npz, &npz, err, errlen);
	if (!ret)
		ret = model_ic_parse_npz(&ic, npz.map, npz.len, err, errlen);
	if (ret)
		goto out_free_ic;
	ret = model_compile(&ic, &m, err, errlen);
	if (ret)
		goto out_free_ic;
	ret = model_ic_check_used(&ic, err, errlen);
	if (!ret)
		ret = model_write(&m, out_path, err, errlen);
	model_compiled_free(&m);

out_free_ic:
	model_ic_free(&ic);
	conv_unmap(&npz);
	return ret;
}
