// SPDX-License-Identifier: MIT
/*
 * splitnic xdp: the XDP executor (nicfw/xdp/). Verbs from one table:
 *   attach IFACE MODEL [--mode native|generic] [--port P] [--model-id ID]
 *   pass IFACE [--mode native|generic]     the dummy XDP_PASS program (for a veth peer)
 *   detach IFACE
 *   stats IFACE
 *   test MODEL [--images IDX] [--count N] [--repeat R] [--scores FILE.csv] [--quiet]
 * `test` runs the program through BPF_PROG_TEST_RUN on crafted frames (R runs per frame), prints
 * each class (and whether the CPU kernels agree: class and every score bit), optionally the
 * scores as CSV (the format of `splitnic run --scores`), and the kernel-measured time per
 * inference.
 */
#include <errno.h>
#include <linux/bpf.h>
#include <net/if.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "cli/cmds.h"
#include "cli/dataset.h"
#include "conf/args.h"
#include "kernels/kern.h"
#include "nicfw/xdp/xdp_infer.h"
#include "protocol/proto.h"
#include "protocol/trust.h"
#include "split/stats.h"

struct xdp_opts {
	enum xdp_infer_mode mode;
	long port, count, repeat;
	uint32_t model_id;
	const char *images, *scores, *mode_name;
	bool quiet, bits;
	struct proto_trust_cfg trust; /* --allow; the rate below at load */
	uint32_t err_rate, err_burst;
};

static int xdp_model_id(void *p, const struct conf_opt *opt, const char *arg)
{
	((struct xdp_opts *)p)->model_id = conf_model_id(arg);
	return 0;
}

#define XDP_OPT(f) offsetof(struct xdp_opts, f)

static const struct conf_opt xdp_opts[] = {
    CONF_CHOICE_ROW("mode", "native|generic", XDP_OPT(mode_name), "native", "the XDP attach mode"),
    CONF_LONG_ROW("port", "P", XDP_OPT(port), 1, 65535, NULL,
		  "the UDP port it answers (default 21326)"),
    CONF_CALL_ROW("model-id", "ID", 0, NULL, "the model id it answers (default: its name's)"),
    CONF_TRUST_ROWS(struct xdp_opts, trust, err_rate, err_burst, "1000", "100", "front-end"),
    CONF_STR_ROW("images", "IDX[.gz]", XDP_OPT(images), NULL, "test: the inputs (default: random)"),
    CONF_STR_ROW("npy", "FILE.npy", XDP_OPT(images), NULL, "test: f32 inputs"),
    CONF_LONG_ROW("count", "N", XDP_OPT(count), 1, 1L << 30, NULL,
		  "test: N inputs (default: all, or 10 random)"),
    CONF_LONG_ROW("repeat", "R", XDP_OPT(repeat), 1, 1L << 24, "1",
		  "test: runs per frame, for the time"),
    CONF_STR_ROW("scores", "FILE.csv", XDP_OPT(scores), NULL,
		 "test: the scores, as splitnic run --scores writes them"),
    CONF_FLAG_ROW("quiet", XDP_OPT(quiet), "test: no line per input"),
    CONF_FLAG_ROW("bits", XDP_OPT(bits), "test: f32 inputs sent as sign(x) packed"),
};

const struct conf_cmd cmd_xdp_spec = {CONF_CMD(
    "splitnic xdp",
    "attach IFACE MODEL [--mode native|generic] [--port P] [--model-id ID] [--allow CIDR ...]\n"
    "       [--error-rate N] [--error-burst N]\n"
    "pass IFACE [--mode native|generic]   (the XDP_PASS program, for a veth peer)\n"
    "detach IFACE\n"
    "stats IFACE\n"
    "test MODEL [--images IDX[.gz] | --npy FILE.npy [--bits]] [--count N] [--repeat R] "
    "[--scores FILE.csv] [--quiet]",
    "the binary MLP answered in the kernel's XDP hook", xdp_opts, 1, 2, xdp_model_id)};

static int iface_index(const char *name)
{
	int ifindex = (int)if_nametoindex(name);

	if (!ifindex)
		fprintf(stderr, "splitnic xdp: interface '%s': %s\n", name, strerror(errno));
	return ifindex;
}

/*
 * The model at path and its XDP program for o's port, model id and trust policy (--allow,
 * --error-rate, --error-burst): the program, or NULL after a message naming the verb (*m is then
 * NULL).
 */
static struct xdp_infer *load_prog(const char *verb, const char *path, const struct xdp_opts *o,
				   struct model **m)
{
	struct proto_trust_cfg trust = o->trust;
	char err[1024];
	struct xdp_infer *x;

	proto_trust_set_rate(&trust, o->err_rate, o->err_burst);
	*m = model_load(path, err, sizeof(err));
	x = *m ? xdp_infer_load_trust(*m, (uint32_t)o->port, o->model_id, &trust, err, sizeof(err))
	       : NULL;
	if (!x) {
		fprintf(stderr, "splitnic xdp %s: %s\n", verb, err);
		model_free(*m);
		*m = NULL;
	}
	return x;
}

static void print_plan(const struct xdp_infer *x)
{
	const struct xdp_infer_plan *p = xdp_infer_get_plan(x);
	const struct xdp_infer_cfg *c = &p->cfg;
	uint32_t verified, insns, jited;

	printf("xdp: %u binary layers, input u8 %ux%ux%u, %u classes; map xdp_model %lu bytes "
	       "(score table %lu entries); ~%lu BPF instructions per inference\n",
	       c->n_layers, c->in_c, c->in_h, c->in_w, c->classes, (unsigned long)p->model_bytes,
	       (unsigned long)p->table_entries, (unsigned long)p->ops_estimate);
	if (!xdp_infer_prog_size(x, &verified, &insns, &jited))
		printf("xdp: program %u BPF instructions (%u bytes JIT-compiled), %u instructions "
		       "processed by the verifier\n",
		       insns, jited, verified);
}

static int verb_attach(const struct xdp_opts *o, char **pos)
{
	struct model *m;
	struct xdp_infer *x;
	int ifindex, ret;

	ifindex = iface_index(pos[0]);
	if (!ifindex)
		return 1;
	x = load_prog("attach", pos[1], o, &m);
	if (!x)
		return 1;
	ret = xdp_infer_attach(x, ifindex, o->mode);
	if (ret)
		fprintf(stderr, "splitnic xdp attach: %s (%s mode): %s\n", pos[0],
			o->mode == XDP_INFER_GENERIC ? "generic" : "native", strerror(-ret));
	else {
		print_plan(x);
		printf("xdp: %s attached to %s (%s mode), UDP port %u, model id 0x%08x\n", m->name,
		       pos[0], o->mode == XDP_INFER_GENERIC ? "generic" : "native",
		       xdp_infer_get_plan(x)->cfg.port, xdp_infer_get_plan(x)->cfg.model_id);
	}
	xdp_infer_free(x);
	model_free(m);
	return ret ? 1 : 0;
}

static int verb_pass(const struct xdp_opts *o, char **pos)
{
	int ifindex, ret;

	ifindex = iface_index(pos[0]);
	if (!ifindex)
		return 1;
	ret = xdp_infer_attach_pass(ifindex, o->mode);
	if (ret) {
		fprintf(stderr, "splitnic xdp pass: %s: %s\n", pos[0], strerror(-ret));
		return 1;
	}
	printf("xdp: XDP_PASS program attached to %s\n", pos[0]);
	return 0;
}

static int verb_detach(const struct xdp_opts *o, char **pos)
{
	int ifindex, ret;

	ifindex = iface_index(pos[0]);
	if (!ifindex)
		return 1;
	ret = xdp_infer_detach(ifindex);
	if (ret) {
		fprintf(stderr, "splitnic xdp detach: %s: %s\n", pos[0],
			ret == -ENOENT ? "no XDP program attached" : strerror(-ret));
		return 1;
	}
	printf("xdp: detached from %s\n", pos[0]);
	return 0;
}

static int verb_stats(const struct xdp_opts *o, char **pos)
{
	uint64_t st[XDP_INFER_ST__COUNT];
	char err[256];
	int ifindex;

	ifindex = iface_index(pos[0]);
	if (!ifindex)
		return 1;
	if (xdp_infer_read_iface_stats(ifindex, st, err, sizeof(err))) {
		fprintf(stderr, "splitnic xdp stats: %s: %s\n", pos[0], err);
		return 1;
	}
	for (unsigned k = 0; k < XDP_INFER_ST__COUNT; k++)
		if (st[k] || k < XDP_INFER_ST_MALFORMED)
			printf("%-40s %lu\n", xdp_infer_stat_name(k), (unsigned long)st[k]);
	return 0;
}

/* Inputs for `test`: the IDX images, or `count` random tensors of the model's input shape. */
static uint8_t *test_inputs(const struct model *m, const struct xdp_opts *o, struct dataset *ds,
			    uint32_t *n)
{
	size_t in_bytes = model_shape_bytes(&m->input);
	uint32_t rng = 12345;
	char err[512];
	uint8_t *x;

	if (o->images) {
		if (dataset_open(ds, m, o->images, NULL, err, sizeof(err))) {
			fprintf(stderr, "splitnic xdp test: %s\n", err);
			return NULL;
		}
		*n = o->count > 0 && o->count < ds->count ? (uint32_t)o->count : ds->count;
		return (uint8_t *)ds->data;
	}
	*n = o->count > 0 ? (uint32_t)o->count : 10;
	x = malloc(*n * in_bytes);
	if (!x)
		return NULL;
	for (size_t i = 0; i < *n * in_bytes; i++) {
		rng = rng * 1103515245u + 12345u;
		x[i] = (uint8_t)(rng >> 16);
	}
	return x;
}

static int verb_test(const struct xdp_opts *o, char **pos)
{
	uint8_t frame[2048], out[4096];
	uint64_t st[XDP_INFER_ST__COUNT], total_ns = 0;
	struct dataset ds = {0};
	char err[1024];
	struct model *m;
	struct kern_ctx *ctx = NULL;
	struct xdp_infer *x = NULL;
	double *cpu = NULL, *xs = NULL;
	uint8_t *inputs = NULL, *body = NULL;
	double *dx = NULL;
	uint32_t n = 0, classes, agree = 0, verdict, ns, cls, olen, fmt;
	FILE *sf = NULL;
	int len, ret = 1;

	if (o->scores && conf_output_ok("xdp test", "--scores", o->scores))
		return 1;
	x = load_prog("test", pos[0], o, &m);
	if (!x)
		return 1;
	print_plan(x);
	classes = model_classes(m);
	inputs = test_inputs(m, o, &ds, &n);
	ctx = kern_ctx_create(m, 1);
	cpu = calloc(classes, sizeof(double));
	xs = calloc(classes, sizeof(double));
	body = calloc(model_shape_elems(&m->input) + 8, 4);
	dx = calloc(model_shape_elems(&m->input), sizeof(double));
	if (!inputs || !ctx || !cpu || !xs || !body || !dx)
		goto out_free;
	if (o->scores) {
		sf = fopen(o->scores, "w");
		if (!sf) {
			fprintf(stderr, "splitnic xdp test: %s: %s\n", o->scores, strerror(errno));
			goto out_free;
		}
	}
	for (uint32_t i = 0; i < n; i++) {
		const uint8_t *img = inputs + (size_t)i * model_shape_bytes(&m->input);
		const struct xdp_infer_cfg *c = &xdp_infer_get_plan(x)->cfg;

		if (m->input.fmt != MODEL_FMT_F32) {
			len = xdp_infer_build_request_hdr(
			    frame, sizeof(frame), c->port, c->model_id, i + 1, PROTO_FMT_U8,
			    m->input.c, m->input.h, m->input.w, img,
			    xdp_infer_request_hdr_len(x, PROTO_FMT_U8));
		} else {
			uint64_t ne = model_shape_elems(&m->input);

			for (uint64_t k = 0; k < ne; k++) {
				float f;

				memcpy(&f, img + 4 * k, 4);
				if (o->bits)
					dx[k] = f;
				else
					proto_le_put_f32(body + 4 * k, f);
			}
			if (o->bits)
				proto_bits_pack(dx, ne, body);
			fmt = o->bits ? PROTO_FMT_BITS : PROTO_FMT_F32;
			len = xdp_infer_build_request_hdr(
			    frame, sizeof(frame), c->port, c->model_id, i + 1, fmt, m->input.c,
			    m->input.h, m->input.w, body, xdp_infer_request_hdr_len(x, fmt));
		}
		/* repeat 1 each time: a repeated run would see its own rewritten response */
		for (long r = 0; r < o->repeat; r++) {
			olen = sizeof(out);
			if (len < 0 || xdp_infer_test_run(x, frame, (uint32_t)len, out, &olen, 1,
							  &verdict, &ns)) {
				fprintf(stderr, "splitnic xdp test: image %u: test run failed\n",
					i);
				goto out_free;
			}
			total_ns += ns;
		}
		if (verdict != XDP_TX || xdp_infer_parse_response(out, olen, i + 1, &cls, xs,
								  classes, err, sizeof(err)) < 0) {
			fprintf(stderr, "splitnic xdp test: image %u: verdict %u: %s\n", i, verdict,
				verdict == XDP_TX ? err : "not answered");
			goto out_free;
		}
		kern_forward(ctx, img, 1, cpu);
		agree += cls == kern_argmax(cpu, classes) && !memcmp(cpu, xs, classes * 8);
		if (!o->quiet)
			printf("%u %u%s\n", i, cls,
			       cls == kern_argmax(cpu, classes) && !memcmp(cpu, xs, classes * 8)
				   ? ""
				   : "  MISMATCH with the CPU kernels");
		for (uint32_t k = 0; sf && k < classes; k++)
			fprintf(sf, "%.17g%c", xs[k], k + 1 == classes ? '\n' : ',');
	}
	printf("xdp test: %u/%u inferences equal the CPU kernels (class and every score bit)\n",
	       agree, n);
	printf("xdp test: %.0f ns per inference (BPF_PROG_TEST_RUN, kernel-measured, mean of %lu "
	       "runs)\n",
	       n ? (double)total_ns / ((double)n * (double)o->repeat) : 0.0,
	       (unsigned long)n * (unsigned long)o->repeat);
	if (!xdp_infer_read_stats(x, st))
		for (unsigned k = 0; k < XDP_INFER_ST__COUNT; k++)
			if (st[k])
				printf("  %-40s %lu\n", xdp_infer_stat_name(k),
				       (unsigned long)st[k]);
	ret = agree == n ? 0 : 1;
out_free:
	if (sf && fclose(sf))
		ret = 1;
	free(dx);
	free(body);
	free(xs);
	free(cpu);
	kern_ctx_free(ctx);
	if (o->images)
		dataset_close(&ds);
	else
		free(inputs);
	xdp_infer_free(x);
	model_free(m);
	return ret;
}

/* A verb and its positional arguments after it. */
static const struct xdp_verb {
	const char *name;
	int (*fn)(const struct xdp_opts *o, char **pos);
	int args;
} verbs[] = {
    {"attach", verb_attach, 2}, {"pass", verb_pass, 1}, {"detach", verb_detach, 1},
    {"stats", verb_stats, 1},	{"test", verb_test, 1},
};

int cmd_xdp(int argc, char **argv)
{
	struct xdp_opts o = {.count = -1};
	int arg;

	for (size_t k = 0; argc > 1 && k < sizeof(verbs) / sizeof(verbs[0]); k++) {
		if (strcmp(argv[1], verbs[k].name))
			continue;
		arg = conf_parse(&cmd_xdp_spec, argc - 1, argv + 1, &o);
		if (arg < 0)
			return 2;
		if (argc - 1 - arg != verbs[k].args)
			return cli_usage_error(&cmd_xdp_spec, "%s takes %d argument%s, got %d",
					       verbs[k].name, verbs[k].args,
					       verbs[k].args == 1 ? "" : "s", argc - 1 - arg);
		o.mode = strcmp(o.mode_name, "generic") ? XDP_INFER_NATIVE : XDP_INFER_GENERIC;
		return verbs[k].fn(&o, argv + 1 + arg);
	}
	if (argc > 1)
		fprintf(stderr, "splitnic xdp: unknown verb '%s'\n", argv[1]);
	return conf_usage_error(&cmd_xdp_spec);
}
