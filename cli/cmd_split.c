// SPDX-License-Identifier: MIT
/* splitnic analyze: static analysis of a model (the plan verb is cli/cmd_plan.c). */
#include <errno.h>
#include <inttypes.h>
#include <jansson.h>
#include <math.h>
#include <stddef.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "cli/cmds.h"
#include "conf/args.h"
#include "exec/kexec.h"
#include "kernels/kern.h"
#include "nicfw/chain.h"
#include "split/split.h"
#include "split/verbs.h"

static void exec_str(uint32_t mask, char *buf, size_t len)
{
	snprintf(buf, len, "%s%s%s", (mask & SPLIT_EXM(SPLIT_EX_CPU)) ? "cpu" : "",
		 (mask & SPLIT_EXM(SPLIT_EX_GPU)) ? ",gpu" : "",
		 (mask & SPLIT_EXM(SPLIT_EX_NIC)) ? ",nic" : "");
}

/*
 * Caffe-style layer names, as the seed's figures label them: a stage number that grows at each
 * conv and dense layer (conv1 .. conv5, fc6 .. fc8), the layers after one taking its number
 * (relu1, norm1, pool1, bn1, sign1).
 */
static void layer_name(const struct split_arch *a, uint32_t i, char *buf, size_t len)
{
	uint32_t stage = 0;
	const char *base;

	for (uint32_t k = 0; k <= i; k++)
		stage += a->l[k].type == MODEL_SRC_CONV || a->l[k].type == MODEL_SRC_DENSE;
	switch (a->l[i].type) {
	case MODEL_SRC_CONV:
		base = "conv";
		break;
	case MODEL_SRC_DENSE:
		base = "fc";
		break;
	case MODEL_SRC_MAXPOOL:
		base = "pool";
		break;
	case MODEL_SRC_LRN:
		base = "norm";
		break;
	case MODEL_SRC_BATCHNORM:
		base = "bn";
		break;
	case MODEL_SRC_FLATTEN:
		snprintf(buf, len, "flatten");
		return;
	default:
		base = model_src_type_name(a->l[i].type);
		break;
	}
	snprintf(buf, len, "%s%u", base, stage);
}

/*
 * The compiled ops that implement source layer i of model m, "first-last" (or "-" without a
 * model): the numbering plan, sweep, MODEL@K and MODEL:coproc:K use.
 */
static void op_range(const struct model *m, uint32_t i, char *buf, size_t len)
{
	uint32_t first = UINT32_MAX, last = 0;

	for (uint32_t k = 0; m && k < m->n_layers; k++) {
		const struct model_layer *L = &m->layers[k];

		if (i >= L->src_first && i < L->src_first + L->src_count) {
			first = first < k ? first : k;
			last = k;
		}
	}
	if (first == UINT32_MAX)
		snprintf(buf, len, "-");
	else if (first == last)
		snprintf(buf, len, "%u", first);
	else
		snprintf(buf, len, "%u-%u", first, last);
}

static void analyze_table(const struct split_arch *a, const struct model *m, bool csv)
{
	uint64_t tp = 0, tw = 0, to = 0;
	char shape[48], ex[16], ops[24], name[32];

	if (csv)
		printf("index,name,compiled_ops,type,binary,c,h,w,elements,bytes_f32,bytes_fp16,"
		       "bytes_int8,bytes_1bit,params,weight_bytes,ops,ops_kind,executors\n");
	else
		printf(
		    "model %s: input %s %ux%ux%u, %u layers\n"
		    "  #: source layer (arch.json order); op: the compiled ops that implement it,\n"
		    "  numbered as plan, sweep, MODEL@K and MODEL:coproc:K number them%s\n"
		    "%3s  %-8s %-5s %-9s %-3s %-12s %10s %11s %11s %10s %9s %11s %11s %14s %-8s "
		    "%s\n",
		    a->name, model_fmt_name(a->input.fmt), a->input.c, a->input.h, a->input.w, a->n,
		    m ? "" : " (an ARCH.json has none: `splitnic convert` it first)", "#", "name",
		    "op", "layer", "bin", "output", "elements", "bytes(f32)", "bytes(fp16)",
		    "bytes(i8)", "bytes(1b)", "params", "weight B", "ops", "kind", "executors");
	for (uint32_t i = 0; i < a->n; i++) {
		const struct split_layer *L = &a->l[i];
		const bool bin = L->flags & MODEL_SF_BINW;
		const char *kind = (L->type == MODEL_SRC_DENSE || L->type == MODEL_SRC_CONV)
				       ? (bin ? "bit-ops" : "MACs")
				       : "elem-ops";

		exec_str(L->exec_mask, ex, sizeof(ex));
		op_range(m, i, ops, sizeof(ops));
		layer_name(a, i, name, sizeof(name));
		if (csv) {
			printf("%u,%s,%s,%s,%d,%u,%u,%u,%" PRIu64 ",%" PRIu64 ",%" PRIu64
			       ",%" PRIu64 ",%" PRIu64 ",%" PRIu64 ",%" PRIu64 ",%" PRIu64
			       ",%s,\"%s\"\n",
			       i, name, ops, model_src_type_name(L->type), bin, L->c, L->h, L->w,
			       L->elems, split_bytes_f32(L->elems), split_bytes_fp16(L->elems),
			       split_bytes_int8(L->elems), split_bytes_bits(L->elems), L->params,
			       L->weight_bytes, L->ops, kind, ex);
			continue;
		}
		if (L->h == 1 && L->w == 1)
			snprintf(shape, sizeof(shape), "%u", L->c);
		else
			snprintf(shape, sizeof(shape), "%ux%ux%u", L->c, L->h, L->w);
		printf("%3u  %-8s %-5s %-9s %-3s %-12s %10" PRIu64 " %11" PRIu64 " %11" PRIu64
		       " %10" PRIu64 " %9" PRIu64 " %11" PRIu64 " %11" PRIu64 " %14" PRIu64
		       " %-8s %s\n",
		       i, name, ops, model_src_type_name(L->type), bin ? "yes" : "", shape,
		       L->elems, split_bytes_f32(L->elems), split_bytes_fp16(L->elems),
		       split_bytes_int8(L->elems), split_bytes_bits(L->elems), L->params,
		       L->weight_bytes, L->ops, kind, ex);
		tp += L->params;
		tw += L->weight_bytes;
		to += L->ops;
	}
	if (!csv)
		printf("%3s  %-8s %-5s %-9s %-3s %-12s %10s %11s %11s %10s %9s %11" PRIu64
		       " %11" PRIu64 " %14" PRIu64 "\n",
		       "", "total", "", "", "", "", "", "", "", "", "", tp, tw, to);
}

static int analyze_json(const struct split_arch *a, const struct model *m)
{
	json_t *root = json_object(), *layers = json_array();
	char ex[16], ops[24], name[32];
	int ret = 0;

	json_object_set_new(root, "name", json_string(a->name));
	json_object_set_new(root, "input",
			    json_pack("{s:s,s:[i,i,i]}", "dtype", model_fmt_name(a->input.fmt),
				      "shape", a->input.c, a->input.h, a->input.w));
	for (uint32_t i = 0; i < a->n; i++) {
		const struct split_layer *L = &a->l[i];

		exec_str(L->exec_mask, ex, sizeof(ex));
		op_range(m, i, ops, sizeof(ops));
		layer_name(a, i, name, sizeof(name));
		json_array_append_new(
		    layers,
		    json_pack(
			"{s:i,s:s,s:s,s:s,s:b,s:[i,i,i],s:I,s:{s:I,s:I,s:I,s:I},s:I,s:I,s:I,s:s}",
			"index", i, "name", name, "compiled_ops", ops, "type",
			model_src_type_name(L->type), "binary_weights",
			!!(L->flags & MODEL_SF_BINW), "output_shape", L->c, L->h, L->w, "elements",
			(json_int_t)L->elems, "bytes", "f32", (json_int_t)split_bytes_f32(L->elems),
			"fp16", (json_int_t)split_bytes_fp16(L->elems), "int8",
			(json_int_t)split_bytes_int8(L->elems), "1bit",
			(json_int_t)split_bytes_bits(L->elems), "params", (json_int_t)L->params,
			"weight_bytes", (json_int_t)L->weight_bytes, "ops", (json_int_t)L->ops,
			"executors", ex));
	}
	json_object_set_new(root, "layers", layers);
	if (json_dumpf(root, stdout, JSON_INDENT(2)) || fputc('\n', stdout) == EOF)
		ret = 1;
	json_decref(root);
	return ret;
}

/*
 * The seed's Figure 2: per layer, the input first, output size (f32 and 1-bit) on one axis and
 * parameters on their own axis below it, log scale, Caffe-style layer names.
 */
static int analyze_plot(const struct split_arch *a, const char *out)
{
	const uint64_t in_elems = (uint64_t)a->input.c * a->input.h * a->input.w;
	char script[64], name[32];
	FILE *f = split_tools_plot_open("analyze", out, script, sizeof(script));

	if (!f)
		return -EINVAL;
	fprintf(f, "$d << EOD\ninput %" PRIu64 " %" PRIu64 " ?\n", split_bytes_f32(in_elems),
		split_bytes_bits(in_elems));
	for (uint32_t i = 0; i < a->n; i++) {
		const struct split_layer *L = &a->l[i];

		layer_name(a, i, name, sizeof(name));
		fprintf(f, "%s%s %" PRIu64 " %" PRIu64 " ", name,
			(L->flags & MODEL_SF_BINW) ? "*" : "", split_bytes_f32(L->elems),
			split_bytes_bits(L->elems));
		if (L->params)
			fprintf(f, "%" PRIu64 "\n", L->params);
		else
			fprintf(f, "?\n");
	}
	fprintf(f,
		"EOD\nset datafile missing '?'\nset multiplot layout 2,1 title "
		"'splitnic analyze: %s, output size and parameters per layer (* binary "
		"weights)'\nset style data histogram\nset style histogram cluster gap 1\n"
		"set style fill solid 0.8 border -1\nset boxwidth 0.9\nset logscale y\n"
		"set grid ytics\nset key top right\nset lmargin 12\nset xtics rotate by -60 "
		"font ',8'\nset ylabel 'output size (bytes, log)'\nset format y '%%.0s%%c'\n"
		"plot $d using 2:xtic(1) title 'f32' lc rgb '#4472c4', '' using 3 title '1-bit' "
		"lc rgb '#ed7d31'\nset ylabel 'parameters (log)'\n"
		"plot $d using 4:xtic(1) title 'parameters' lc rgb '#70ad47'\nunset multiplot\n",
		a->name);
	return split_tools_plot_run("analyze", f, script);
}

struct analyze_opts {
	bool csv, json;
	const char *plot;
};

static const struct conf_opt analyze_opts[] = {
    CONF_FLAG_ROW("csv", offsetof(struct analyze_opts, csv), "CSV instead of a table"),
    CONF_FLAG_ROW("json", offsetof(struct analyze_opts, json), "JSON instead of a table"),
    CONF_STR_ROW("plot", "FILE.png|FILE.svg", offsetof(struct analyze_opts, plot), NULL,
		 "the seed's Figure 2: output size and parameters per layer"),
};

const struct conf_cmd cmd_analyze_spec = {
    CONF_CMD("splitnic analyze", "MODEL|ARCH.json [--csv|--json] [--plot FILE.png|FILE.svg]",
	     "per layer: output size at f32/fp16/int8/1-bit, parameters, ops, executors",
	     analyze_opts, 1, 1, NULL)};

int cmd_analyze(int argc, char **argv)
{
	struct analyze_opts o = {0};
	struct model *m = NULL;
	struct split_arch a;
	char err[512];
	int arg = conf_parse(&cmd_analyze_spec, argc, argv, &o), ret;

	if (arg < 0)
		return 2;
	if (o.csv && o.json)
		return cli_usage_error(&cmd_analyze_spec, "--csv and --json exclude each other");
	if (o.plot && conf_output_ok("analyze", "--plot", o.plot))
		return 1;
	if (split_tools_is_json(argv[arg])) {
		ret = split_arch_load(argv[arg], &a, err, sizeof(err));
	} else {
		m = model_load(argv[arg], err, sizeof(err));
		ret = m ? split_arch_from_model(m, kexec_nic_first(m), &a, err, sizeof(err))
			: -EINVAL;
	}
	if (ret) {
		fprintf(stderr, "splitnic analyze: %s\n", err);
		model_free(m);
		return 1;
	}
	if (o.json)
		ret = analyze_json(&a, m);
	else
		analyze_table(&a, m, o.csv);
	if (!ret && o.plot)
		ret = analyze_plot(&a, o.plot) ? 1 : 0;
	split_arch_free(&a);
	model_free(m);
	return ret;
}
