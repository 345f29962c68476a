// SPDX-License-Identifier: MIT
/*
 * splitnic gen: random weights.npz for any arch.json (docs/model-format.md), so that
 * `splitnic convert` makes a model of it. float32 arrays, npy format 1.0, stored in a zip.
 * Binary layers get +-1 weights, float layers uniform in +-1/sqrt(fan-in), batch-norm a
 * positive variance around the fan-in (so signs split the dots of +-1 inputs evenly).
 */
#include <errno.h>
#include <math.h>
#include <stddef.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <zip.h>

#include "cli/cmds.h"
#include "conf/args.h"
#include "model/npy.h"
#include "split/split.h"
#include "split/verbs.h"

struct gen_rng {
	uint64_t s;
};

static double gen_uniform(struct gen_rng *r)
{
	uint64_t z = (r->s += 0x9e3779b97f4a7c15ull);

	z = (z ^ (z >> 30)) * 0xbf58476d1ce4e5b9ull;
	z = (z ^ (z >> 27)) * 0x94d049bb133111ebull;
	z ^= z >> 31;
	return (double)(z >> 11) * 0x1.0p-53;
}

enum gen_kind { GEN_WEIGHT, GEN_BIAS, GEN_GAMMA, GEN_BETA, GEN_MEAN, GEN_VAR };

static int gen_array(zip_t *za, uint32_t i, const char *name, const uint64_t *shape, uint32_t ndim,
		     enum gen_kind kind, bool binary, double fan, struct gen_rng *r)
{
	uint64_t count = 1;
	char key[64];
	size_t len;
	float *d;
	void *buf;
	zip_source_t *src;
	zip_int64_t idx;

	for (uint32_t k = 0; k < ndim; k++)
		count *= shape[k];
	buf = model_npy_alloc("<f4", shape, ndim, (void **)&d, &len);
	if (!buf)
		return -ENOMEM;
	for (uint64_t k = 0; k < count; k++) {
		double u = 2 * gen_uniform(r) - 1, v;

		switch (kind) {
		case GEN_WEIGHT:
			v = binary ? (u >= 0 ? 1.0 : -1.0) : u / sqrt(fan);
			break;
		case GEN_BIAS:
			v = binary ? floor(u * 4) : 0.1 * u;
			break;
		case GEN_GAMMA:
			v = 0.5 + gen_uniform(r);
			break;
		case GEN_BETA:
			v = 0.1 * u;
			break;
		case GEN_MEAN:
			v = 0.1 * u * sqrt(fan);
			break;
		default:
			v = fan * (0.5 + gen_uniform(r));
			break;
		}
		d[k] = (float)v;
	}
	snprintf(key, sizeof(key), "%u.%s.npy", i, name);
	src = zip_source_buffer(za, buf, len, 1);
	if (!src) {
		free(buf);
		return -ENOMEM;
	}
	idx = zip_file_add(za, key, src, ZIP_FL_OVERWRITE);
	if (idx < 0) {
		zip_source_free(src);
		return -EIO;
	}
	return zip_set_file_compression(za, (zip_uint64_t)idx, ZIP_CM_STORE, 0) ? -EIO : 0;
}

static int gen_layers(zip_t *za, const struct split_arch *a, struct gen_rng *r)
{
	uint32_t c = a->input.c, h = a->input.h, w = a->input.w;
	double fan = 1;
	int ret = 0;

	for (uint32_t i = 0; i < a->n && !ret; i++) {
		const struct split_layer *L = &a->l[i];
		const bool bin = L->flags & MODEL_SF_BINW;
		uint64_t sh[4], bn = c;

		switch (L->type) {
		case MODEL_SRC_DENSE:
			sh[0] = L->c;
			sh[1] = (uint64_t)c * h * w;
			fan = (double)sh[1];
			ret = gen_array(za, i, "weight", sh, 2, GEN_WEIGHT, bin, fan, r);
			if (!ret && (L->flags & MODEL_SF_BIAS))
				ret = gen_array(za, i, "bias", sh, 1, GEN_BIAS, bin, fan, r);
			break;
		case MODEL_SRC_CONV:
			sh[0] = L->c;
			sh[1] = c / L->groups;
			sh[2] = sh[3] = L->kernel;
			fan = (double)(sh[1] * sh[2] * sh[3]);
			ret = gen_array(za, i, "weight", sh, 4, GEN_WEIGHT, bin, fan, r);
			if (!ret && (L->flags & MODEL_SF_BIAS))
				ret = gen_array(za, i, "bias", sh, 1, GEN_BIAS, bin, fan, r);
			break;
		case MODEL_SRC_BATCHNORM:
			if (h == 1 && w == 1)
				bn = c;
			/* after a binary layer the dots spread over about sqrt(fan) */
			ret = gen_array(za, i, "gamma", &bn, 1, GEN_GAMMA, false, fan, r);
			if (!ret)
				ret = gen_array(za, i, "beta", &bn, 1, GEN_BETA, false, fan, r);
			if (!ret)
				ret = gen_array(za, i, "mean", &bn, 1, GEN_MEAN, false,
						i && (a->l[i - 1].flags & MODEL_SF_BINW) ? fan : 1,
						r);
			if (!ret)
				ret = gen_array(za, i, "var", &bn, 1, GEN_VAR, false,
						i && (a->l[i - 1].flags & MODEL_SF_BINW) ? fan : 1,
						r);
			break;
		default:
			break;
		}
		c = L->c;
		h = L->h;
		w = L->w;
	}
	return ret;
}

int split_tools_gen(const char *arch_path, const char *npz_path, uint64_t seed, char *err,
		    size_t errlen)
{
	struct gen_rng r = {.s = seed};
	struct split_arch a;
	zip_t *za;
	int zerr, ret;

	ret = split_arch_load(arch_path, &a, err, errlen);
	if (ret)
		return ret;
	za = zip_open(npz_path, ZIP_CREATE | ZIP_TRUNCATE, &zerr);
	if (!za) {
		snprintf(err, errlen, "%s: cannot create (libzip error %d)", npz_path, zerr);
		split_arch_free(&a);
		return -EIO;
	}
	ret = gen_layers(za, &a, &r);
	if (ret) {
		snprintf(err, errlen, "%s: %s", npz_path, strerror(-ret));
		zip_discard(za);
	} else if (zip_close(za)) {
		snprintf(err, errlen, "%s: %s", npz_path, zip_strerror(za));
		zip_discard(za);
		ret = -EIO;
	}
	split_arch_free(&a);
	return ret;
}

struct gen_opts {
	const char *out;
	uint64_t seed;
};

static const struct conf_opt gen_opts[] = {
    CONF_OUTPUT_ROW("WEIGHTS.npz", offsetof(struct gen_opts, out), "the weights to write"),
    CONF_INT_ROW("seed", "S", struct gen_opts, seed, 0, INT64_MAX, "1", "picks the draw"),
};

const struct conf_cmd cmd_gen_spec = {
    CONF_CMD("splitnic gen", "ARCH.json -o WEIGHTS.npz [--seed S]",
	     "random weights for any interchange architecture", gen_opts, 1, 1, NULL)};

int cmd_gen(int argc, char **argv)
{
	struct gen_opts o = {0};
	char err[512];
	int arg = conf_parse(&cmd_gen_spec, argc, argv, &o);

	if (arg < 0)
		return 2;
	if (!o.out)
		return cli_usage_error(&cmd_gen_spec, "no -o WEIGHTS.npz");
	if (conf_output_ok("gen", "-o", o.out))
		return 1;
	if (split_tools_gen(argv[arg], o.out, o.seed, err, sizeof(err))) {
		fprintf(stderr, "splitnic gen: %s\n", err);
		return 1;
	}
	return 0;
}
