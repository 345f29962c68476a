// SPDX-License-Identifier: MIT
/* splitnic convert / inspect. */
#include <errno.h>
#include <inttypes.h>
#include <stddef.h>
#include <jansson.h>
#include <stdio.h>
#include <string.h>

#include "cli/cmds.h"
#include "conf/args.h"
#include "exec/kexec.h"
#include "kernels/kern.h"
#include "split/split.h"

struct convert_opts {
	const char *out;
};

static const struct conf_opt convert_opts[] = {
    CONF_OUTPUT_ROW("MODEL", offsetof(struct convert_opts, out), "the model file to write"),
};

const struct conf_cmd cmd_convert_spec = {
    CONF_CMD("splitnic convert", "ARCH.json WEIGHTS.npz -o MODEL",
	     "compile an interchange model (docs/model-format.md) into a model file", convert_opts,
	     2, 2, NULL)};

int cmd_convert(int argc, char **argv)
{
	struct convert_opts o = {0};
	char err[512];
	int arg = conf_parse(&cmd_convert_spec, argc, argv, &o);

	if (arg < 0)
		return 2;
	if (!o.out)
		return cli_usage_error(&cmd_convert_spec, "no -o MODEL");
	if (conf_output_ok("convert", "-o", o.out))
		return 1;
	if (model_convert(argv[arg], argv[arg + 1], o.out, err, sizeof(err))) {
		fprintf(stderr, "splitnic convert: %s\n", err);
		return 1;
	}
	return 0;
}

/*
 * Per source layer: the figures `splitnic analyze` gives (split/split.h: output elements, bytes
 * packed in whole 64-bit words at 1 bit, parameters, weight bytes as the layer defines them),
 * and what the model file holds for the compiled ops that begin at the layer (file_bytes: rows
 * padded to 64-bit words, a batch-norm folded into the thresholds of the op before it, bias and
 * threshold arrays).
 */
struct layer_stats {
	struct model_shape out;
	uint64_t elems, params, weight_bytes, file_bytes, macs;
};

static void src_stats(const struct model *m, const struct split_arch *a, uint32_t i,
		      struct layer_stats *st)
{
	const struct split_layer *L = &a->l[i];

	memset(st, 0, sizeof(*st));
	st->out = (struct model_shape){MODEL_FMT_F64, L->c, L->h, L->w};
	st->elems = L->elems;
	st->params = L->params;
	st->weight_bytes = L->weight_bytes;
	if (L->type == MODEL_SRC_DENSE || L->type == MODEL_SRC_CONV)
		st->macs = L->ops;
	for (uint32_t j = 0; j < m->n_layers; j++)
		if (m->layers[j].src_first == i)
			for (int b = 0; b < MODEL_NBLOB; b++)
				st->file_bytes += m->layers[j].blob_size[b];
}

static void shape_str(const struct model_shape *s, char *buf, size_t len)
{
	if (s->h == 1 && s->w == 1)
		snprintf(buf, len, "%u", s->c);
	else
		snprintf(buf, len, "%ux%ux%u", s->c, s->h, s->w);
}

static int inspect_json(const struct model *m, const struct split_arch *a, bool with_ops)
{
	json_t *root = json_object(), *layers = json_array(), *ops = json_array();
	int ret = 0;

	json_object_set_new(root, "name", json_string(m->name));
	json_object_set_new(root, "input",
			    json_pack("{s:s,s:[i,i,i]}", "dtype", model_fmt_name(m->input.fmt),
				      "shape", m->input.c, m->input.h, m->input.w));
	json_object_set_new(root, "classes", json_integer(model_classes(m)));
	for (uint32_t i = 0; i < m->n_src; i++) {
		const struct model_src_layer *s = &m->src[i];
		struct layer_stats st;

		src_stats(m, a, i, &st);
		json_array_append_new(
		    layers,
		    json_pack("{s:i,s:s,s:b,s:[i,i,i],s:I,s:I,s:I,s:I,s:I,s:I,s:I}", "index", i,
			      "type", model_src_type_name(s->type), "binary_weights",
			      !!(s->flags & MODEL_SF_BINW), "output_shape", st.out.c, st.out.h,
			      st.out.w, "elements", (json_int_t)st.elems, "bytes_f32",
			      (json_int_t)split_bytes_f32(st.elems), "bytes_1bit",
			      (json_int_t)split_bytes_bits(st.elems), "params",
			      (json_int_t)st.params, "weight_bytes", (json_int_t)st.weight_bytes,
			      "file_bytes", (json_int_t)st.file_bytes, "macs",
			      (json_int_t)st.macs));
	}
	json_object_set_new(root, "layers", layers);
	if (with_ops) {
		for (uint32_t i = 0; i < m->n_layers; i++) {
			const struct model_layer *l = &m->layers[i];

			json_array_append_new(
			    ops, json_pack("{s:i,s:s,s:i,s:i,s:s,s:[i,i,i],s:s,s:[i,i,i]}", "index",
					   i, "op", model_op_name(l->op), "src_first", l->src_first,
					   "src_count", l->src_count, "in_fmt",
					   model_fmt_name(l->in.fmt), "in_shape", l->in.c, l->in.h,
					   l->in.w, "out_fmt", model_fmt_name(l->out.fmt),
					   "out_shape", l->out.c, l->out.h, l->out.w));
		}
		json_object_set_new(root, "ops", ops);
	} else {
		json_decref(ops);
	}
	if (json_dumpf(root, stdout, JSON_INDENT(2)) || fputc('\n', stdout) == EOF)
		ret = 1;
	json_decref(root);
	return ret;
}

static void inspect_table(const struct model *m, const struct split_arch *a, bool with_ops)
{
	uint64_t tot_params = 0, tot_wbytes = 0, tot_fbytes = 0, tot_macs = 0;
	char shape[64];

	printf("model %s: input %s %ux%ux%u, %u classes, %u layers compiled to %u ops\n\n", m->name,
	       model_fmt_name(m->input.fmt), m->input.c, m->input.h, m->input.w, model_classes(m),
	       m->n_src, m->n_layers);
	printf("%3s  %-10s %-3s %-12s %10s %12s %10s %12s %12s %12s %14s\n", "#", "layer", "bin",
	       "output", "elements", "bytes(f32)", "bytes(1b)", "params", "weight B", "file B",
	       "MACs");
	for (uint32_t i = 0; i < m->n_src; i++) {
		struct layer_stats st;

		src_stats(m, a, i, &st);
		shape_str(&st.out, shape, sizeof(shape));
		printf("%3u  %-10s %-3s %-12s %10" PRIu64 " %12" PRIu64 " %10" PRIu64 " %12" PRIu64
		       " %12" PRIu64 " %12" PRIu64 " %14" PRIu64 "\n",
		       i, model_src_type_name(m->src[i].type),
		       (m->src[i].flags & MODEL_SF_BINW) ? "yes" : "", shape, st.elems,
		       split_bytes_f32(st.elems), split_bytes_bits(st.elems), st.params,
		       st.weight_bytes, st.file_bytes, st.macs);
		tot_params += st.params;
		tot_wbytes += st.weight_bytes;
		tot_fbytes += st.file_bytes;
		tot_macs += st.macs;
	}
	printf("%3s  %-10s %-3s %-12s %10s %12s %10s %12" PRIu64 " %12" PRIu64 " %12" PRIu64
	       " %14" PRIu64 "\n",
	       "", "total", "", "", "", "", "", tot_params, tot_wbytes, tot_fbytes, tot_macs);
	printf("\nbytes(1b): packed in whole 64-bit words, as a split sends them; weight B: the "
	       "weights as the\nlayer defines them (1 bit each when binary, else 4 bytes; bias "
	       "and batch-norm 4 bytes), as\n`splitnic analyze` counts them; file B: what the "
	       "model file holds for the compiled ops that\nbegin at the layer (float weights "
	       "at 8 bytes, binary rows padded to 64-bit words, a batch-norm\nfolded into the "
	       "thresholds of the op before it)\n");
	if (!with_ops)
		return;
	printf("\ncompiled ops:\n%3s  %-13s %-7s %-6s %-12s %-6s %-12s %s\n", "#", "op", "layers",
	       "in", "", "out", "", "flags");
	for (uint32_t i = 0; i < m->n_layers; i++) {
		const struct model_layer *l = &m->layers[i];
		char ishape[64], range[32];

		shape_str(&l->in, ishape, sizeof(ishape));
		shape_str(&l->out, shape, sizeof(shape));
		if (l->src_count)
			snprintf(range, sizeof(range), "%u-%u", l->src_first,
				 l->src_first + l->src_count - 1);
		else
			snprintf(range, sizeof(range), "input");
		printf("%3u  %-13s %-7s %-6s %-12s %-6s %-12s %s%s%s\n", i, model_op_name(l->op),
		       range, model_fmt_name(l->in.fmt), ishape, model_fmt_name(l->out.fmt), shape,
		       (l->flags & MODEL_LF_BIAS) ? "bias " : "",
		       (l->flags & MODEL_LF_BINW) ? "binary-weights " : "",
		       (l->flags & MODEL_LF_THRESH) ? "thresholds" : "");
	}
}

struct inspect_opts {
	bool json, ops;
};

static const struct conf_opt inspect_opts[] = {
    CONF_FLAG_ROW("json", offsetof(struct inspect_opts, json), "JSON instead of a table"),
    CONF_FLAG_ROW("ops", offsetof(struct inspect_opts, ops), "the compiled ops too"),
};

const struct conf_cmd cmd_inspect_spec = {CONF_CMD(
    "splitnic inspect", "MODEL [--json] [--ops]",
    "a model file's source layers (and compiled ops with --ops)", inspect_opts, 1, 1, NULL)};

int cmd_inspect(int argc, char **argv)
{
	struct inspect_opts o = {0};
	struct split_arch a;
	struct model *m;
	char err[512];
	int arg = conf_parse(&cmd_inspect_spec, argc, argv, &o), ret = 0;

	if (arg < 0)
		return 2;
	m = model_load(argv[arg], err, sizeof(err));
	if (!m) {
		fprintf(stderr, "splitnic inspect: %s\n", err);
		return 1;
	}
	if (split_arch_from_model(m, kexec_nic_first(m), &a, err, sizeof(err))) {
		fprintf(stderr, "splitnic inspect: %s\n", err);
		model_free(m);
		return 1;
	}
	if (o.json)
		ret = inspect_json(m, &a, o.ops);
	else
		inspect_table(m, &a, o.ops);
	split_arch_free(&a);
	model_free(m);
	return ret;
}
