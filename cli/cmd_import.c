// SPDX-License-Identifier: MIT
/* splitnic import: an ONNX / QONNX model to a model file, or to the interchange pair. */
#include <errno.h>
#include <jansson.h>
#include <stddef.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <zip.h>

#include "cli/cmds.h"
#include "model/model_file.h"
#include "model/npy.h"
#include "model/onnx/onnx_import.h"

static json_t *layer_json(const struct model_ic_layer *L)
{
	json_t *j = json_pack("{s:s}", "type", model_src_type_name(L->type));

	switch (L->type) {
	case MODEL_SRC_CONV:
		json_object_set_new(j, "kernel", json_integer(L->kernel));
		json_object_set_new(j, "stride", json_integer(L->stride));
		json_object_set_new(j, "pad", json_integer(L->pad));
		/* fall through */
	case MODEL_SRC_DENSE:
		json_object_set_new(j, "out", json_integer(L->out));
		json_object_set_new(j, "bias", json_boolean(L->bias));
		json_object_set_new(j, "binary_weights", json_boolean(L->binw));
		break;
	case MODEL_SRC_BATCHNORM:
		json_object_set_new(j, "eps", json_real(L->eps));
		break;
	case MODEL_SRC_MAXPOOL:
		json_object_set_new(j, "kernel", json_integer(L->kernel));
		json_object_set_new(j, "stride", json_integer(L->stride));
		break;
	case MODEL_SRC_LRN:
		json_object_set_new(j, "size", json_integer(L->lrn_size));
		json_object_set_new(j, "alpha", json_real(L->lrn_alpha));
		json_object_set_new(j, "beta", json_real(L->lrn_beta));
		json_object_set_new(j, "k", json_real(L->lrn_k));
		break;
	}
	return j;
}

static int write_arch(const struct model_ic_model *ic, const char *path)
{
	const struct model_shape *s = &ic->input;
	json_t *layers = json_array(), *arch;
	int ret;

	for (uint32_t i = 0; i < ic->n_layers; i++)
		json_array_append_new(layers, layer_json(&ic->layers[i]));
	arch =
	    json_pack("{s:s, s:{s:[i,i,i], s:s}, s:o}", "name", ic->name, "input", "shape", s->c,
		      s->h, s->w, "dtype", s->fmt == MODEL_FMT_U8 ? "u8" : "f32", "layers", layers);
	if (!arch)
		return -ENOMEM;
	ret = json_dump_file(arch, path, JSON_INDENT(2) | JSON_REAL_PRECISION(17)) ? -EIO : 0;
	json_decref(arch);
	return ret;
}

/* One float64 .npy (version 1.0) of the array, malloc'd. */
static void *npy_f64(const struct model_ic_array *a, size_t *len)
{
	void *data, *buf = model_npy_alloc("<f8", a->shape, a->ndim, &data, len);

	if (buf)
		memcpy(data, a->data, a->count * sizeof(double));
	return buf;
}

static int write_npz(const struct model_ic_model *ic, const char *path)
{
	int zerr;
	zip_t *za = zip_open(path, ZIP_CREATE | ZIP_TRUNCATE, &zerr);

	if (!za)
		return -EIO;
	for (uint32_t i = 0; i < ic->n_arrays; i++) {
		char key[64];
		size_t len;
		void *buf = npy_f64(&ic->arrays[i], &len);
		zip_source_t *src = buf ? zip_source_buffer(za, buf, len, 1) : NULL;

		snprintf(key, sizeof(key), "%s.npy", ic->arrays[i].key);
		if (!src || zip_file_add(za, key, src, ZIP_FL_OVERWRITE) < 0) {
			if (src)
				zip_source_free(src);
			else
				free(buf);
			zip_discard(za);
			return -EIO;
		}
	}
	return zip_close(za) ? -EIO : 0;
}

static int write_interchange(const struct onnx_import *imp, const char *dir)
{
	char arch[4096], npz[4096];

	if (imp->extended) {
		fprintf(
		    stderr,
		    "splitnic import: %s uses what the interchange format cannot express "
		    "(asymmetric or max-pool padding, ceil-mode pooling, or ONNX's three-valued "
		    "Sign); import it with -o instead\n",
		    imp->ic.arch_path);
		return 1;
	}
	if (mkdir(dir, 0755) && errno != EEXIST) {
		fprintf(stderr, "splitnic import: %s: %s\n", dir, strerror(errno));
		return 1;
	}
	snprintf(arch, sizeof(arch), "%s/arch.json", dir);
	snprintf(npz, sizeof(npz), "%s/weights.npz", dir);
	if (write_arch(&imp->ic, arch)) {
		fprintf(stderr, "splitnic import: cannot write %s\n", arch);
		return 1;
	}
	if (write_npz(&imp->ic, npz)) {
		fprintf(stderr, "splitnic import: cannot write %s\n", npz);
		return 1;
	}
	return 0;
}

struct import_opts {
	const char *out, *dir;
};

static const struct conf_opt import_opts[] = {
    CONF_OUTPUT_ROW("MODEL.snm", offsetof(struct import_opts, out), "the model file to write"),
    CONF_STR_ROW("interchange", "DIR", offsetof(struct import_opts, dir), NULL,
		 "write DIR/arch.json and DIR/weights.npz"),
};

const struct conf_cmd cmd_import_spec = {
    CONF_CMD("splitnic import", "MODEL.onnx (-o MODEL.snm | --interchange DIR)",
	     "import an ONNX or QONNX model (docs/onnx-import.md) into a model file", import_opts,
	     1, 1, NULL)};

int cmd_import(int argc, char **argv)
{
	struct import_opts o = {0};
	struct onnx_import imp;
	struct model m;
	char err[1024];
	int arg = conf_parse(&cmd_import_spec, argc, argv, &o), rc = 0;

	if (arg < 0)
		return 2;
	if (!o.out && !o.dir)
		return conf_usage_error(&cmd_import_spec);
	if (onnx_import_file(argv[arg], &imp, err, sizeof(err))) {
		fprintf(stderr, "splitnic import: %s\n", err);
		return 1;
	}
	if (o.dir)
		rc = write_interchange(&imp, o.dir);
	if (!rc && o.out) {
		int ret = onnx_import_compile(&imp, &m, stderr, err, sizeof(err));

		if (!ret) {
			ret = model_write(&m, o.out, err, sizeof(err));
			model_compiled_free(&m);
		}
		if (ret) {
			fprintf(stderr, "splitnic import: %s\n", err);
			rc = 1;
		}
	}
	onnx_import_free(&imp);
	return rc;
}
