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
#include "cli/progress.h"
#include "conf/args.h"
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
	bool keep_softmax, quiet;
};

static const struct conf_opt import_opts[] = {
    CONF_OUTPUT_ROW("MODEL.snm", offsetof(struct import_opts, out), "the model file to write"),
    CONF_STR_ROW("interchange", "DIR", offsetof(struct import_opts, dir), NULL,
		 "write DIR/arch.json and DIR/weights.npz"),
    CONF_FLAG_ROW("keep-softmax", offsetof(struct import_opts, keep_softmax),
		  "refuse a trailing Softmax/LogSoftmax/ArgMax instead of dropping it"),
    CONF_FLAG_ROW("quiet", offsetof(struct import_opts, quiet),
		  "no progress line (drawn only on a terminal)"),
};

const struct conf_cmd cmd_import_spec = {
    CONF_CMD("splitnic import", "MODEL.onnx (-o MODEL.snm | --interchange DIR) [--keep-softmax]",
	     "import an ONNX or QONNX model (docs/onnx-import.md) into a model file", import_opts,
	     1, 1, NULL),
    .notes = "A trailing Softmax, LogSoftmax or ArgMax is dropped, with a note: the classes are\n"
	     "the same, the scores are the logits (--keep-softmax refuses it instead).\n"};

int cmd_import(int argc, char **argv)
{
	struct import_opts o = {0};
	struct cli_progress progress;
	struct onnx_import imp;
	struct model m;
	bool compiled = false;
	char err[1024];
	int arg = conf_parse(&cmd_import_spec, argc, argv, &o), rc = 1, ret;

	if (arg < 0)
		return 2;
	if (!o.out && !o.dir)
		return cli_usage_error(&cmd_import_spec,
				       "give -o MODEL.snm, --interchange DIR or both");
	if (o.out && conf_output_ok("import", "-o", o.out))
		return 1;
	cli_progress_start(&progress, "splitnic import", "steps", 4, o.quiet);
	ret = onnx_import_file(argv[arg], o.keep_softmax ? ONNX_IMPORT_KEEP_SOFTMAX : 0, &imp, err,
			       sizeof(err));
	cli_progress_set(&progress, 1);
	if (ret)
		goto out;
	if (imp.dropped[0]) {
		cli_progress_end(&progress);
		fprintf(stderr,
			"splitnic import: note: dropped the trailing %s: the classes are the same, "
			"the scores are the logits (--keep-softmax refuses it instead)\n",
			imp.dropped);
	}
	if (o.out || imp.extended) {
		ret = onnx_import_compile(&imp, &m, o.out ? stderr : NULL, err, sizeof(err));
		compiled = !ret;
	}
	cli_progress_set(&progress, 2);
	if (!ret && o.dir && imp.extended)
		ret = onnx_import_to_interchange(&imp, &m, err, sizeof(err));
	if (ret)
		goto out;
	if (o.dir && write_interchange(&imp, o.dir))
		goto out_quiet;
	cli_progress_set(&progress, 3);
	if (o.out) {
		ret = model_write(&m, o.out, err, sizeof(err));
		if (ret)
			goto out;
	}
	rc = 0;
	goto out_quiet;
out:
	cli_progress_end(&progress);
	fprintf(stderr, "splitnic import: %s\n", err);
out_quiet:
	cli_progress_end(&progress);
	if (compiled)
		model_compiled_free(&m);
	onnx_import_free(&imp);
	return rc;
}
