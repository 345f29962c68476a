// SPDX-License-Identifier: MIT
/*
 * splitnic calibrate: measure this machine's executors into a profile (split/split.h keys).
 * CPU float and binary kernels over a grid of shapes (medians), the GPU when kcuda_open finds
 * one, the NIC emulator's modeled time for binary dense layers (a least-squares fit of
 * layer + per neuron-word costs), and the real protocol code for serialize / deserialize.
 */
#include <errno.h>
#include <math.h>
#include <stddef.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "cli/cmds.h"
#include "cli/progress.h"
#include "conf/args.h"
#include "exec/kexec.h"
#include "kernels/cuda/kcuda.h"
#include "kernels/kern.h"
#include "kernels/kern_ops.h"
#include "cli/calibrate_packet.h"
#include "split/calib.h"
#include "nicfw/emu/emu.h"
#include "protocol/proto.h"
#include "split/stats.h"
#include "split/verbs.h"

#define CAL_REPS 15

/* Median seconds of `reps` runs of the block in the caller's loop. */
#define CAL_TIME(out, reps, body)                                                                  \
	do {                                                                                       \
		uint64_t ns_[CAL_REPS];                                                            \
		struct lat_summary l_;                                                             \
		for (int r_ = 0; r_ < (reps); r_++) {                                              \
			uint64_t t0_ = lat_now_ns();                                               \
			body;                                                                      \
			ns_[r_] = lat_now_ns() - t0_;                                              \
		}                                                                                  \
		lat_summarize(ns_, (reps), &l_);                                                   \
		(out) = l_.p50 * 1e-9;                                                             \
	} while (0)

static void *cal_alloc(size_t bytes)
{
	void *p = aligned_alloc(64, (bytes + 63) / 64 * 64);

	if (p)
		memset(p, 0x5a, (bytes + 63) / 64 * 64);
	return p;
}

static double median3(double a, double b, double c)
{
	return a > b ? (b > c ? b : (a > c ? c : a)) : (a > c ? a : (b > c ? c : b));
}

static int cal_cpu_float(struct split_profile *pr, bool quick, int reps)
{
	struct kern_conv_geom g1 = {64, 28, 28, 64, 28, 28, 3, 1, 1};
	struct kern_conv_geom g2 = {96, 27, 27, 128, 27, 27, 5, 1, 2};
	const uint32_t big = quick ? 2048 : 4096, small = 256;
	double *x = cal_alloc(8 * 200000), *y = cal_alloc(8 * 200000);
	double *w = cal_alloc(8 * (size_t)big * big), *col = NULL;
	double t1, t2, t3, t4;
	int ret = -ENOMEM;

	if (!x || !y || !w)
		goto out;
	col = cal_alloc(8 * (kern_conv_scratch(&g2) > kern_conv_scratch(&g1)
				 ? kern_conv_scratch(&g2)
				 : kern_conv_scratch(&g1)));
	if (!col)
		goto out;
	for (size_t i = 0; i < 200000; i++)
		x[i] = (double)(i % 7) - 3;
	for (size_t i = 0; i < (size_t)big * big; i++)
		w[i] = (double)(i % 5) - 2;
	CAL_TIME(t1, reps, kern_conv_f64(x, 1, &g1, w, NULL, col, y));
	CAL_TIME(t2, reps, kern_conv_f64(x, 1, &g2, w, NULL, col, y));
	pr->v[SPLIT_P_CPU_F64_MACS] =
	    ((double)64 * 28 * 28 * 64 * 9 / t1 + (double)128 * 27 * 27 * 96 * 25 / t2) / 2;
	CAL_TIME(t3, reps, kern_dense_f64(x, 1, small * 4, w, small, NULL, y));
	pr->v[SPLIT_P_CPU_BW_CACHE] = 8.0 * small * 4 * small / t3;
	CAL_TIME(t4, reps > 5 ? 5 : reps, kern_dense_f64(x, 1, big, w, big, NULL, y));
	pr->v[SPLIT_P_CPU_BW_DRAM] = 8.0 * big * big / t4;
	printf("cpu f64: conv %.2f GMAC/s; dense weights from cache %.1f GB/s, from DRAM %.1f GB/s "
	       "(%ux%u)\n",
	       pr->v[SPLIT_P_CPU_F64_MACS] / 1e9, pr->v[SPLIT_P_CPU_BW_CACHE] / 1e9,
	       pr->v[SPLIT_P_CPU_BW_DRAM] / 1e9, big, big);
	ret = 0;
out:
	free(x);
	free(y);
	free(w);
	free(col);
	return ret;
}

static int cal_cpu_binary(struct split_profile *pr, int reps)
{
	const struct kern_bin_ops *ops = kern_ops_get();
	struct kern_conv_geom g = {128, 16, 16, 128, 16, 16, 3, 1, 1};
	const uint32_t n = 4096, out = 4096;
	uint64_t *x = cal_alloc(8 * 65536), *w = cal_alloc((size_t)out * n / 8),
		 *y = cal_alloc(8 * 65536);
	int32_t *thr = cal_alloc(4 * 65536);
	uint8_t *flip = cal_alloc(65536), *xu8 = cal_alloc(1024);
	void *scratch = cal_alloc(kern_bdense_u8_scratch(784, 1));
	double t1, t2, t3, t4, t5, r1, r2, r3;
	struct kern_thresh th;
	int ret = -ENOMEM;

	if (!x || !w || !y || !thr || !flip || !xu8 || !scratch)
		goto out;
	memset(flip, 0, 65536);
	th = (struct kern_thresh){thr, flip};
	CAL_TIME(t1, reps, ops->bdense_thr(x, 1, w, 1024, 1024, &th, y));
	CAL_TIME(t2, reps, ops->bdense_thr(x, 1, w, out, n, &th, y));
	CAL_TIME(t3, reps, ops->bconv_thr(x, 1, &g, w, &th, y));
	r1 = 1024.0 * 1024 / t1;
	r2 = (double)out * n / t2;
	r3 = 128.0 * 16 * 16 * 9 * 128 / t3;
	pr->v[SPLIT_P_CPU_BIN_OPS] = median3(r1, r2, r3);
	CAL_TIME(t4, reps, ops->bdense_u8_thr(xu8, 1, w, 4096, 784, &th, y, scratch));
	pr->v[SPLIT_P_CPU_U8_OPS] = 4096.0 * 784 / t4;
	{
		double *xd = cal_alloc(8 * 65536), *yd = cal_alloc(8 * 65536);
		double t6;

		if (!xd || !yd) {
			free(xd);
			free(yd);
			goto out;
		}
		for (int i = 0; i < 65536; i++)
			xd[i] = i % 3 - 1;
		CAL_TIME(t5, reps, ops->sign_pack(xd, 1, 64, 32, 32, y));
		CAL_TIME(t6, reps, kern_relu_f64(xd, 65536, yd));
		pr->v[SPLIT_P_CPU_ELEM] = 65536 / ((t5 + t6) / 2);
		CAL_TIME(t6, reps, kern_relu_f64(xd, 1, yd));
		pr->v[SPLIT_P_CPU_OP] = t6 + 2e-7;
		free(xd);
		free(yd);
	}
	CAL_TIME(t5, reps, kern_flatten_bits(x, 1, 256, 6, 6, y));
	pr->v[SPLIT_P_PACK_ELEM] = t5 / (256 * 36);
	printf("cpu binary (%s): %.1f / %.1f / %.1f Gbit-op/s (dense 1024^2, dense 4096^2, conv "
	       "128x16x16 k3), u8 dense %.2f GMAC/s; element-wise %.0f Melem/s\n",
	       ops->name, r1 / 1e9, r2 / 1e9, r3 / 1e9, pr->v[SPLIT_P_CPU_U8_OPS] / 1e9,
	       pr->v[SPLIT_P_CPU_ELEM] / 1e6);
	ret = 0;
out:
	free(x);
	free(w);
	free(y);
	free(thr);
	free(flip);
	free(xu8);
	free(scratch);
	return ret;
}

static void cal_gpu(struct split_profile *pr, int reps)
{
	char msg[512];
	double *x, *y, *w, t;
	const uint32_t n = 4096;
	const struct kcuda_ops *cu = kcuda_open(msg, sizeof(msg));

	pr->v[SPLIT_P_GPU_PRESENT] = 0;
	if (!cu) {
		printf("gpu: skipped: %s\n", msg);
		return;
	}
	x = cal_alloc(8 * n);
	y = cal_alloc(8 * n);
	w = cal_alloc(8 * (size_t)n * n);
	if (x && y && w && !cu->dense_f64(x, 1, n, w, n, NULL, y)) {
		CAL_TIME(t, reps, cu->dense_f64(x, 1, n, w, n, NULL, y));
		/* includes the weight upload: a lower bound on PCIe bandwidth */
		pr->v[SPLIT_P_PCIE_BW] = 8.0 * n * n / t;
		pr->v[SPLIT_P_GPU_PRESENT] = 1;
		printf("gpu: %s; dense 4096^2 f64 with upload %.1f us (PCIe >= %.1f GB/s); other "
		       "GPU rates keep their defaults\n",
		       msg, t * 1e6, pr->v[SPLIT_P_PCIE_BW] / 1e9);
	} else {
		printf("gpu: %s, but a test dense failed: %s\n", msg, cu->last_error());
	}
	free(x);
	free(y);
	free(w);
}

/* A binary dense n -> out (measured) and out -> 16 (the classes) through the converter. */
static struct model *cal_nic_model(uint32_t n, uint32_t out, const char *dir, char *err,
				   size_t errlen)
{
	char arch[256], npz[256], snm[256];
	struct model *m = NULL;
	FILE *f;

	snprintf(arch, sizeof(arch), "%s/cal.json", dir);
	snprintf(npz, sizeof(npz), "%s/cal.npz", dir);
	snprintf(snm, sizeof(snm), "%s/cal.snm", dir);
	f = fopen(arch, "w");
	if (!f) {
		snprintf(err, errlen, "%s: %s", arch, strerror(errno));
		return NULL;
	}
	fprintf(f,
		"{\"name\":\"cal\",\"input\":{\"shape\":[%u,1,1],\"dtype\":\"f32\"},\"layers\":["
		"{\"type\":\"sign\"},{\"type\":\"dense\",\"out\":%u,\"binary_weights\":true},"
		"{\"type\":\"batchnorm\"},{\"type\":\"sign\"},{\"type\":\"dense\",\"out\":16,"
		"\"binary_weights\":true},{\"type\":\"batchnorm\"}]}\n",
		n, out);
	fclose(f);
	if (!split_tools_gen(arch, npz, 1, err, errlen) &&
	    !model_convert(arch, npz, snm, err, errlen))
		m = model_load(snm, err, errlen);
	unlink(arch);
	unlink(npz);
	unlink(snm);
	return m;
}

static int cal_nic(struct split_profile *pr, bool quick)
{
	static const uint32_t grid[][2] = {{1024, 1024}, {4096, 2048}, {4096, 4096}, {2048, 8192}};
	const unsigned npts = quick ? 2 : 4;
	double sx = 0, sy = 0, sxx = 0, sxy = 0, stage = 0;
	char dir[] = "/tmp/splitnic-cal-XXXXXX", err[512];
	struct nicfw_emu_params ep;

	nicfw_emu_params_default(&ep);
	if (!mkdtemp(dir))
		return -errno;
	for (unsigned g = 0; g < npts; g++) {
		struct model *m = cal_nic_model(grid[g][0], grid[g][1], dir, err, sizeof(err));
		struct nicfw_emu *e = NULL;
		struct nicfw_emu_report rep;
		double xs, yl;
		float *in;
		double *scores;

		if (!m) {
			fprintf(stderr, "splitnic calibrate: nic model: %s\n", err);
			rmdir(dir);
			return -EINVAL;
		}
		e = nicfw_emu_create(m, kexec_nic_first(m), (uint32_t)pr->v[SPLIT_P_NIC_EXECS], &ep,
				     err, sizeof(err));
		in = calloc(grid[g][0], 8);
		scores = calloc(grid[g][1], sizeof(double));
		if (!e || !in || !scores || nicfw_emu_infer(e, in, scores, &rep) ||
		    nicfw_emu_infer(e, in, scores, &rep)) {
			fprintf(stderr, "splitnic calibrate: emulator: %s\n",
				e ? "infer failed" : err);
			nicfw_emu_free(e);
			model_free(m);
			free(in);
			free(scores);
			rmdir(dir);
			return -EINVAL;
		}
		xs = (double)grid[g][1] * model_words(grid[g][0]);
		yl = rep.layer_us[0] * 1e-6;
		stage += (rep.latency_us - rep.layer_us[0] - rep.layer_us[1]) * 1e-6 / npts;
		sx += xs;
		sy += yl;
		sxx += xs * xs;
		sxy += xs * yl;
		printf(
		    "nic (emulated, %.0f executors): binary dense %u -> %u: layer %.1f us, request "
		    "%.1f us (modeled)\n",
		    pr->v[SPLIT_P_NIC_EXECS], grid[g][0], grid[g][1], rep.layer_us[0],
		    rep.latency_us);
		nicfw_emu_free(e);
		model_free(m);
		free(in);
		free(scores);
	}
	rmdir(dir);
	pr->v[SPLIT_P_NIC_NWORD] = (npts * sxy - sx * sy) / (npts * sxx - sx * sx);
	pr->v[SPLIT_P_NIC_LAYER] = (sy - pr->v[SPLIT_P_NIC_NWORD] * sx) / npts;
	if (pr->v[SPLIT_P_NIC_LAYER] < 0)
		pr->v[SPLIT_P_NIC_LAYER] = 0;
	pr->v[SPLIT_P_NIC_NEURON] = 0;
	pr->v[SPLIT_P_NIC_STAGE] = stage;
	printf("nic fit: %.2f us per layer + %.3f ns per neuron-word; %.1f us per request\n",
	       pr->v[SPLIT_P_NIC_LAYER] * 1e6, pr->v[SPLIT_P_NIC_NWORD] * 1e9, stage * 1e6);
	return 0;
}

/* Serialize and deserialize through the real protocol code at two sizes: per-datagram and
 * per-byte costs from the two points. */
static int cal_wire(struct split_profile *pr, int reps)
{
	const struct model_shape small = {MODEL_FMT_BITS, 4096, 1, 1},
				 large = {MODEL_FMT_F64, 65536, 1, 1};
	struct split_wire *w = split_wire_create(8 * 65536, (uint32_t)pr->v[SPLIT_P_PAYLOAD]);
	uint64_t *buf = cal_alloc(8 * 65536), *out = cal_alloc(8 * 65536);
	double ts[2], td[2], tc, tq;
	uint32_t pk[2];
	uint64_t by[2];
	int ret = -ENOMEM;

	if (!w || !buf || !out)
		goto out;
	for (int s = 0; s < 2; s++) {
		const struct model_shape *sh = s ? &large : &small;

		CAL_TIME(ts[s], reps, split_wire_send(w, sh, buf, 1));
		pk[s] = split_wire_sent_packets(w);
		by[s] = model_shape_bytes(sh);
		split_wire_copy(w);
		CAL_TIME(td[s], reps, split_wire_recv(w, sh, out));
	}
	CAL_TIME(tc, reps, split_wire_copy(w));
	pr->v[SPLIT_P_SER_BYTE] = (ts[1] - ts[0]) / (double)(by[1] - by[0]);
	pr->v[SPLIT_P_SER_PKT] = (ts[0] - pr->v[SPLIT_P_SER_BYTE] * by[0]) / pk[0];
	pr->v[SPLIT_P_DESER_BYTE] = (td[1] - td[0]) / (double)(by[1] - by[0]);
	pr->v[SPLIT_P_DESER_PKT] = (td[0] - pr->v[SPLIT_P_DESER_BYTE] * by[0]) / pk[0];
	for (int k = SPLIT_P_SER_PKT; k <= SPLIT_P_DESER_BYTE; k++)
		if (pr->v[k] < 0)
			pr->v[k] = 0;
	/* the in-process copy stands for the link's per-datagram cost */
	pr->v[SPLIT_P_LINK_PKT] = tc / pk[1];
	CAL_TIME(tq, reps,
		 for (int i = 0; i < 65536; i++)((uint16_t *)out)[i] =
		     proto_f32_to_fp16((float)((double *)buf)[i]));
	pr->v[SPLIT_P_QUANT_ELEM] = tq / 65536;
	printf("wire: serialize %.0f ns/datagram + %.3f ns/byte; deserialize %.0f ns/datagram + "
	       "%.3f ns/byte; copy %.0f ns/datagram; fp16 quantize %.2f ns/elem\n",
	       pr->v[SPLIT_P_SER_PKT] * 1e9, pr->v[SPLIT_P_SER_BYTE] * 1e9,
	       pr->v[SPLIT_P_DESER_PKT] * 1e9, pr->v[SPLIT_P_DESER_BYTE] * 1e9,
	       pr->v[SPLIT_P_LINK_PKT] * 1e9, pr->v[SPLIT_P_QUANT_ELEM] * 1e9);
	ret = 0;
out:
	split_wire_free(w);
	free(buf);
	free(out);
	return ret;
}

struct cal_opts {
	const char *out, *in, *platform, *lab, *tag, *host_opt, *nic_opt, *compare;
	long executors, rounds, attempts;
	double duration, max_spread;
	bool quick, keys, packet, quiet;
};

#define CAL_OPT(f) offsetof(struct cal_opts, f)

static const struct conf_opt cal_opts[] = {
    CONF_OUTPUT_ROW("PROFILE", CAL_OPT(out), "write the profile"),
    CONF_FLAG_ROW("quick", CAL_OPT(quick), "fewer repetitions and shapes"),
    CONF_FLAG_ROW("keys", CAL_OPT(keys), "list the profile's keys and exit"),
    CONF_FLAG_ROW("packet", CAL_OPT(packet),
		  "then measure the NIC and the path through the packet path (root)"),
    CONF_STR_ROW("profile", "IN", CAL_OPT(in), NULL,
		 "--packet: start from this profile; --compare: the other profile"),
    CONF_CHOICE_ROW("platform", "emu|lcore", CAL_OPT(platform), "emu",
		    "--packet: splitnic-nic's platform"),
    CONF_LONG_ROW("executors", "E", CAL_OPT(executors), 1, 256, "16",
		  "splitnic-nic's executors (the NIC's chain)"),
    CONF_STR_ROW("host-opt", "'OPTS'", CAL_OPT(host_opt), "--idle-sleep-us 20",
		 "--packet: more splitnic-host options (as the sweeps')"),
    CONF_STR_ROW("nic-opt", "'OPTS'", CAL_OPT(nic_opt), "--idle-sleep-us 20",
		 "--packet: more splitnic-nic options (as the sweeps')"),
    CONF_LONG_ROW("rounds", "N", CAL_OPT(rounds), 1, 9, "3",
		  "--packet: interleaved rounds of every measurement (medians)"),
    CONF_LONG_ROW("attempts", "N", CAL_OPT(attempts), 1, 9, "3",
		  "--packet: attempts at most while the rounds disagree (all kept)"),
    CONF_DOUBLE_ROW("duration", "S", CAL_OPT(duration), 0.1, 60, "seconds", "1",
		    "--packet: seconds of load per point"),
    CONF_POSITIVE_ROW("max-spread", "F", CAL_OPT(max_spread), 10, "relative range", "0.1",
		      "rounds (--compare: two profiles) agreeing within F: quiet"),
    CONF_STR_ROW("lab", "SCRIPT", CAL_OPT(lab), NULL, "--packet: the lab (lab/sweep_lab.sh)"),
    CONF_STR_ROW("tag", "T", CAL_OPT(tag), NULL, "--packet: the lab's namespaces' tag"),
    CONF_FLAG_ROW("quiet", CAL_OPT(quiet), "no progress line (drawn only on a terminal)"),
    CONF_STR_ROW("compare", "A", CAL_OPT(compare), NULL,
		 "compare profile A with --profile B (the figures the planner rests on)"),
};

const struct conf_cmd cmd_calibrate_spec = {
    CONF_CMD("splitnic calibrate",
	     "[-o PROFILE] [--quick] [--keys] [--executors E] [--packet [--profile IN] "
	     "[--platform emu|lcore] [--rounds N] [--attempts N] [--duration S] [--max-spread F] "
	     "[--host-opt 'OPTS'] [--nic-opt 'OPTS'] [--lab SCRIPT] [--tag T]]\n"
	     "--compare A --profile B [--max-spread F]",
	     "measure this machine's executors and transfer costs (and the packet path) into "
	     "a profile",
	     cal_opts, 0, 0, NULL),
    .notes =
	"In process: this machine's kernels, the emulator's NIC, the protocol code.\n"
	"--packet (root): then, with no server running meanwhile for the in-process part (or\n"
	"from --profile IN), the NIC's per-request time, the path's and the host's costs and\n"
	"how each waits and sheds under load, MEASURED through splitnic-nic and splitnic-host\n"
	"in the namespaces of lab/sweep_lab.sh; every figure in --rounds interleaved rounds,\n"
	"measured again (up to --attempts) while they spread more than --max-spread; the fit\n"
	"takes the medians of every attempt's rounds.\n"
	"--compare: the figures of two profiles side by side; exit status 1 when they differ\n"
	"by more than --max-spread.\n"};

/* --compare A --profile B: 0 when they agree within max_spread, else 1. */
static int cal_compare(const struct cal_opts *o)
{
	struct split_profile a, b;
	double d;

	if (!o->in || split_tools_load_profile("calibrate", o->compare, &a) ||
	    split_tools_load_profile("calibrate", o->in, &b))
		return o->in ? 1 : conf_usage_error(&cmd_calibrate_spec);
	printf("calibrate --compare: %s against %s\n", o->compare, o->in);
	d = split_cal_compare(&a, &b, stdout);
	printf("CALCOMPARE largest_difference=%.1f%% agree=%s (within %.0f%%)\n", 100 * d,
	       d <= o->max_spread ? "yes" : "no", 100 * o->max_spread);
	return d <= o->max_spread ? 0 : 1;
}

int cmd_calibrate(int argc, char **argv)
{
	struct cal_opts o = {0};
	struct split_profile pr;
	struct cli_progress progress;
	long cache;
	int reps, ret;

	if (conf_parse(&cmd_calibrate_spec, argc, argv, &o) < 0)
		return 2;
	if (o.keys) {
		for (unsigned k = 0; k < SPLIT_P__COUNT; k++)
			printf("%-20s %-9s %s\n", split_pkey_info(k)->key, split_pkey_info(k)->unit,
			       split_pkey_info(k)->what);
		for (unsigned c = 0; c < SPLIT_CV__COUNT; c++)
			printf("%-20s %-9s %s (a list: one value per curve.u point)\n",
			       split_curve_info(c)->key, split_curve_info(c)->unit,
			       split_curve_info(c)->what);
		return 0;
	}
	if (o.compare)
		return cal_compare(&o);
	if (!o.packet && (o.in || o.lab || o.tag))
		return cli_usage_error(&cmd_calibrate_spec,
				       "--profile, --lab and --tag go with --packet");
	if (o.out && conf_output_ok("calibrate", "-o", o.out))
		return 1;
	split_profile_default(&pr);
	pr.v[SPLIT_P_NIC_EXECS] = (double)o.executors;
	ret = 0;
	cli_progress_start(&progress, "splitnic calibrate", "steps", o.packet ? 6 : 5, o.quiet);
	if (o.in) {
		if (split_tools_load_profile("calibrate", o.in, &pr))
			return 1;
	} else {
		reps = o.quick ? 5 : CAL_REPS;
		cache = sysconf(_SC_LEVEL2_CACHE_SIZE);
		if (cache > 0)
			pr.v[SPLIT_P_CPU_CACHE] = (double)cache;
		ret = cal_cpu_float(&pr, o.quick, reps);
		cli_progress_set(&progress, 1);
		if (!ret)
			ret = cal_cpu_binary(&pr, reps);
		cli_progress_set(&progress, 2);
		if (!ret)
			cal_gpu(&pr, reps);
		cli_progress_set(&progress, 3);
		if (!ret)
			ret = cal_nic(&pr, o.quick);
		cli_progress_set(&progress, 4);
		if (!ret)
			ret = cal_wire(&pr, reps);
	}
	cli_progress_set(&progress, 5);
	if (!ret && o.packet) {
		const struct cal_pk_opts po = {.lab = o.lab,
					       .tag = o.tag,
					       .platform = o.platform,
					       .host_opt = o.host_opt,
					       .nic_opt = o.nic_opt,
					       .executors = (uint32_t)o.executors,
					       .rounds = (uint32_t)o.rounds,
					       .attempts = (uint32_t)o.attempts,
					       .duration = o.duration,
					       .max_spread = o.max_spread};

		ret = cal_packet_run(&pr, &po);
	}
	cli_progress_end(&progress);
	if (ret) {
		if (ret != -EINTR) /* interrupted: said so, with the lab taken down */
			fprintf(stderr, "splitnic calibrate: %s\n", strerror(-ret));
		return 1;
	}
	if (o.out) {
		ret = split_profile_save(o.out, &pr,
					 o.packet ? "measured by splitnic calibrate --packet (NIC, "
						    "path and load keys through the packet path)"
					 : o.quick ? "measured by splitnic calibrate --quick"
						   : "measured by splitnic calibrate");
		if (ret) {
			fprintf(stderr, "splitnic calibrate: %s: %s\n", o.out, strerror(-ret));
			return 1;
		}
		printf("profile written to %s\n", o.out);
	}
	return 0;
}
