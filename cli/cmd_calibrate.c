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
#include "lab/sweep.h"
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
		e = nicfw_emu_create(m, kexec_nic_first(m), NICFW_MAX_EXEC, &ep, err, sizeof(err));
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
		    "nic (emulated, 256 executors): binary dense %u -> %u: layer %.1f us, request "
		    "%.1f us (modeled)\n",
		    grid[g][0], grid[g][1], rep.layer_us[0], rep.latency_us);
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

/* ---- the packet path (root: lab/sweep_lab.sh) -----------------------------------------------
 */

/* NIC calibration models, stand-alone (u8 input, all binary): hidden widths, 0-terminated. */
static const uint32_t cal_pk_nic[][4] = {
    {0},
    {1024, 0},
    {4096, 0},
    {8192, 0},
    {256, 256, 256},
    {1024, 1024, 0},
    {2048, 2048, 0},
    {4096, 4096, 0},
    {256, 4096, 0},
    {4096, 256, 0},
    {2048, 4096, 2048},
    {4096, 4096, 4096},
};
#define CAL_PK_NIC    (sizeof(cal_pk_nic) / sizeof(cal_pk_nic[0]))
#define CAL_PK_IN     64 /* u8 inputs of the NIC models */
#define CAL_PK_CLASS  16
#define CAL_PK_ROUNDS 5 /* of the host's latency and capacity runs */

/*
 * An all-binary MLP with u8 input [in] and the given hidden widths, `out` classes, named name,
 * written to dir/name.snm (path in out_path). Returns 0 or -EINVAL with a message in err.
 */
static int cal_mlp(const char *dir, const char *name, uint32_t in, const uint32_t *hidden,
		   uint32_t n_hidden, uint32_t out, char *out_path, size_t len, char *err,
		   size_t errlen)
{
	char arch[256], npz[256];
	FILE *f;
	int ret;

	snprintf(arch, sizeof(arch), "%s/%s.json", dir, name);
	snprintf(npz, sizeof(npz), "%s/%s.npz", dir, name);
	snprintf(out_path, len, "%s/%s.snm", dir, name);
	f = fopen(arch, "w");
	if (!f) {
		snprintf(err, errlen, "%s: %s", arch, strerror(errno));
		return -EINVAL;
	}
	fprintf(f, "{\"name\":\"%s\",\"input\":{\"shape\":[%u,1,1],\"dtype\":\"u8\"},\"layers\":[",
		name, in);
	for (uint32_t i = 0; i < n_hidden; i++)
		fprintf(f,
			"{\"type\":\"dense\",\"out\":%u,\"bias\":true,\"binary_weights\":true},"
			"{\"type\":\"batchnorm\"},{\"type\":\"sign\"},",
			hidden[i]);
	fprintf(f,
		"{\"type\":\"dense\",\"out\":%u,\"bias\":true,\"binary_weights\":true},"
		"{\"type\":\"batchnorm\"}]}\n",
		out);
	fclose(f);
	ret = split_tools_gen(arch, npz, 1, err, errlen);
	if (!ret)
		ret = model_convert(arch, npz, out_path, err, errlen);
	unlink(arch);
	unlink(npz);
	return ret ? -EINVAL : 0;
}

#define FIT_K 4 /* features: 1, layers, neuron-words, neurons */

/*
 * Least squares y ~ x beta over n points and FIT_K features, every coefficient >= 0: solve
 * the normal equations (Gaussian elimination) over the active features, drop the most
 * negative coefficient, repeat.
 */
static void lsq_nonneg(const double (*x)[FIT_K], const double *y, uint32_t n, double *beta)
{
	bool act[FIT_K] = {true, true, true, true};

	for (;;) {
		double a[FIT_K][FIT_K + 1] = {{0}};
		int idx[FIT_K], k = 0, worst = -1;

		for (int j = 0; j < FIT_K; j++)
			if (act[j])
				idx[k++] = j;
		for (uint32_t i = 0; i < n; i++)
			for (int r = 0; r < k; r++) {
				for (int c = 0; c < k; c++)
					a[r][c] += x[i][idx[r]] * x[i][idx[c]];
				a[r][k] += x[i][idx[r]] * y[i];
			}
		for (int c = 0; c < k; c++) {
			int piv = c;

			for (int r = c + 1; r < k; r++)
				if (fabs(a[r][c]) > fabs(a[piv][c]))
					piv = r;
			for (int q = 0; q <= k; q++) {
				double t = a[c][q];

				a[c][q] = a[piv][q];
				a[piv][q] = t;
			}
			for (int r = 0; r < k; r++) {
				const double f = a[c][c] != 0 ? a[r][c] / a[c][c] : 0;

				for (int q = c; r != c && q <= k; q++)
					a[r][q] -= f * a[c][q];
			}
		}
		for (int j = 0; j < FIT_K; j++)
			beta[j] = 0;
		for (int r = 0; r < k; r++) {
			beta[idx[r]] = a[r][r] != 0 ? a[r][k] / a[r][r] : 0;
			if (beta[idx[r]] < 0 && (worst < 0 || beta[idx[r]] < beta[worst]))
				worst = idx[r];
		}
		if (worst < 0)
			return;
		act[worst] = false;
	}
}

/*
 * The NIC's per-request time MEASURED through the packet path: the calibration MLPs stand-alone
 * on splitnic-nic (its platform's own time: lcore wall time, emu the time it enforces), each
 * request's nic timing field (the chain's run, submit to completion) averaged, then fitted to
 * nic.stage_s + layers x nic.layer_s + neuron-words x nic.nword_s (u8 layers count 8 words per
 * input word, as the planner does). path.nic_s: the end-to-end p50 beyond it.
 */
static int cal_pk_nic_fit(struct sweep_lab *lab, const char *dir, const char *platform,
			  const char *execs, struct split_profile *pr)
{
	char paths[CAL_PK_NIC][300], names[CAL_PK_NIC][32], err[512], cnt[] = "300";
	double x[CAL_PK_NIC][FIT_K], y[CAL_PK_NIC], rest[CAL_PK_NIC], e2e[CAL_PK_NIC], beta[FIT_K];
	bool field = true;
	char *args[4 + 2 * CAL_PK_NIC + 8];
	size_t n = 0;

	args[n++] = lab->dir;
	for (uint32_t g = 0; g < CAL_PK_NIC; g++) {
		uint32_t nh = 0, prev = CAL_PK_IN;

		snprintf(names[g], sizeof(names[g]), "cal-nic-%u", g);
		x[g][0] = 1;
		x[g][1] = 1;
		x[g][2] = 0;
		x[g][3] = CAL_PK_CLASS;
		for (; nh < 4 && cal_pk_nic[g][nh]; nh++) {
			x[g][1] += 1;
			x[g][2] += (double)cal_pk_nic[g][nh] * model_words(prev) * (nh ? 1 : 8);
			x[g][3] += cal_pk_nic[g][nh];
			prev = cal_pk_nic[g][nh];
		}
		x[g][2] += (double)CAL_PK_CLASS * model_words(prev) * (nh ? 1 : 8);
		if (cal_mlp(dir, names[g], CAL_PK_IN, cal_pk_nic[g], nh, CAL_PK_CLASS, paths[g],
			    sizeof(paths[g]), err, sizeof(err))) {
			fprintf(stderr, "splitnic calibrate: %s\n", err);
			return -EINVAL;
		}
		args[n++] = "--model";
		args[n++] = paths[g];
	}
	args[n++] = "--executors";
	args[n++] = (char *)execs;
	args[n++] = "--platform";
	args[n++] = (char *)platform;
	args[n++] = "--";
	args[n] = NULL;
	if (sweep_lab_verb(lab, "start", args)) {
		fprintf(stderr, "splitnic calibrate: splitnic-nic did not start\n");
		return -EIO;
	}
	for (uint32_t g = 0; g < CAL_PK_NIC; g++) {
		/* open loop at a low rate, as the sweeps load it (see cal_pk_host) */
		char *cargs[] = {"--model", paths[g],	 "--count",	 cnt,	 "--rate",
				 "300",	    "--poisson", "--timeout-ms", "5000", NULL};
		struct sweep_point pt;

		if (sweep_lab_client(lab, cargs, &pt) || pt.responses < pt.requests * 0.95) {
			fprintf(stderr,
				"splitnic calibrate: %s: fewer than 95%% of the requests "
				"answered\n",
				names[g]);
			return -EIO;
		}
		y[g] = pt.srv_p50[PROTO_T_NIC] * 1e-9;
		e2e[g] = pt.p50 * 1e-6;
		field &= y[g] > 0;
		printf("nic (%s, packet path, MEASURED): %.0f layers, %.0f neuron-words, %.0f "
		       "neurons: nic field p50 %.1f us, end to end p50 %.1f us\n",
		       platform, x[g][1], x[g][2], x[g][3], y[g] * 1e6, pt.p50);
	}
	/* A platform that fills no nic field: the end-to-end p50, whose intercept is the path. */
	lsq_nonneg((const double(*)[FIT_K])x, field ? y : e2e, CAL_PK_NIC, beta);
	pr->v[SPLIT_P_NIC_STAGE] = beta[0];
	pr->v[SPLIT_P_NIC_LAYER] = beta[1];
	pr->v[SPLIT_P_NIC_NWORD] = beta[2];
	pr->v[SPLIT_P_NIC_NEURON] = beta[3];
	for (uint32_t g = 0; g < CAL_PK_NIC; g++) {
		double fit = 0;

		for (int j = 0; j < FIT_K; j++)
			fit += beta[j] * x[g][j];
		rest[g] = e2e[g] - fit;
		printf("  fit %u: %.1f us MEASURED, %.1f us fitted\n", g,
		       (field ? y : e2e)[g] * 1e6, fit * 1e6);
	}
	if (field) {
		pr->v[SPLIT_P_PATH_NIC] = fmax(0, stats_median(rest, CAL_PK_NIC));
	} else {
		pr->v[SPLIT_P_PATH_NIC] = pr->v[SPLIT_P_NIC_STAGE];
		pr->v[SPLIT_P_NIC_STAGE] = 0;
	}
	printf("nic fit (%s, MEASURED, from the %s): %.2f us per request + %.2f us per layer + "
	       "%.4f ns per neuron-word + %.2f ns per neuron; the path around a stand-alone NIC "
	       "%.1f us (p50)\n",
	       platform,
	       field ? "RESPONSE nic field (medians)"
		     : "end-to-end p50: the platform fills no nic field, its per-request part is "
		       "in the path",
	       pr->v[SPLIT_P_NIC_STAGE] * 1e6, pr->v[SPLIT_P_NIC_LAYER] * 1e6,
	       pr->v[SPLIT_P_NIC_NWORD] * 1e9, pr->v[SPLIT_P_NIC_NEURON] * 1e9,
	       pr->v[SPLIT_P_PATH_NIC] * 1e6);
	return 0;
}

/*
 * The host's packet path with a model whose compute is negligible (the 256-32-16-2 traffic MLP,
 * host-only): host.req_s from its capacity (closed loop, 16 outstanding: 1 / throughput less the
 * compute the host reports), path.fixed_s from the end-to-end p50 at 500 requests/s open loop
 * (Poisson, as the sweeps offer their loads) less the host's service time. Link not shaped.
 */
static int cal_pk_host(struct sweep_lab *lab, const char *dir, struct split_profile *pr)
{
	static const uint32_t hidden[] = {32, 16};
	char path[300], model_nic[310], model_host[320], err[512], cnt1[] = "500", cnt16[] = "3000";
	char *args[] = {lab->dir,   "--model",	       model_nic, "--", "--model",
			model_host, "--idle-sleep-us", "20",	  NULL};
	/* the path as the sweeps load it: open loop, Poisson, at a rate far below capacity (idle
	 * servers between requests, as at low load), not back to back */
	char *lat[] = {"--model", path,	       "--count",      cnt1,   "--rate",
		       "500",	  "--poisson", "--timeout-ms", "5000", NULL};
	char *cap[] = {"--model", path,		  "--count", cnt16, "--outstanding",
		       "16",	  "--timeout-ms", "5000",    NULL};
	double lat50[CAL_PK_ROUNDS], thr[CAL_PK_ROUNDS], comp[CAL_PK_ROUNDS], tot[CAL_PK_ROUNDS];
	double compute, service, p50, capacity;

	if (cal_mlp(dir, "traffic-256-32-16-2", 256, hidden, 2, 2, path, sizeof(path), err,
		    sizeof(err))) {
		fprintf(stderr, "splitnic calibrate: %s\n", err);
		return -EINVAL;
	}
	snprintf(model_nic, sizeof(model_nic), "%s@1", path);
	snprintf(model_host, sizeof(model_host), "%s:host-only", path);
	if (sweep_lab_verb(lab, "start", args)) {
		fprintf(stderr, "splitnic calibrate: the servers did not start\n");
		return -EIO;
	}
	/* interleaved rounds, medians: one run of each is at the mercy of a busy machine */
	for (uint32_t r = 0; r < CAL_PK_ROUNDS; r++) {
		struct sweep_point p1, p16;

		if (sweep_lab_client(lab, lat, &p1) || sweep_lab_client(lab, cap, &p16) ||
		    p1.responses < p1.requests * 0.95 || !(p16.thr > 0)) {
			fprintf(stderr, "splitnic calibrate: traffic MLP: fewer than 95%% of the "
					"requests answered\n");
			return -EIO;
		}
		lat50[r] = p1.p50 * 1e-6;
		thr[r] = p16.thr;
		comp[r] = p1.srv_p50[PROTO_T_HOST] * 1e-9;
		tot[r] = p1.srv_p50[PROTO_T_TOTAL] * 1e-9;
	}
	compute = stats_median(comp, CAL_PK_ROUNDS);
	p50 = stats_median(lat50, CAL_PK_ROUNDS);
	capacity = stats_median(thr, CAL_PK_ROUNDS);
	service = fmax(1 / capacity, stats_median(tot, CAL_PK_ROUNDS));
	pr->v[SPLIT_P_HOST_REQ] = fmax(0, service - compute);
	pr->v[SPLIT_P_PATH_FIXED] = fmax(0, p50 - service);
	pr->v[SPLIT_P_HOST_OVERLAP] = fmax(0, service - p50);
	printf(
	    "host (packet path, MEASURED): traffic MLP host-only, medians of %d rounds: end to "
	    "end p50 %.1f us at 500 requests/s, Poisson (compute %.1f us); %.0f responses/s at 16 "
	    "outstanding\n",
	    CAL_PK_ROUNDS, p50 * 1e6, compute * 1e6, capacity);
	printf(
	    "host fit: %.1f us per request on the host core (%.1f us of it off the request's own "
	    "path); the path around it %.1f us (p50)\n",
	    pr->v[SPLIT_P_HOST_REQ] * 1e6, pr->v[SPLIT_P_HOST_OVERLAP] * 1e6,
	    pr->v[SPLIT_P_PATH_FIXED] * 1e6);
	return 0;
}

static int cal_packet(struct split_profile *pr, const char *lab_script, const char *tag,
		      const char *platform, const char *execs)
{
	char dir[] = "/tmp/splitnic-calpk-XXXXXX";
	struct sweep_lab lab;
	int ret;

	ret = sweep_lab_init(&lab, lab_script, tag, NULL, NULL);
	if (ret)
		return ret;
	if (!mkdtemp(dir))
		return -errno;
	ret = sweep_lab_up(&lab);
	if (!ret)
		ret = sweep_lab_shape(&lab, 0);
	if (!ret)
		ret = cal_pk_nic_fit(&lab, dir, platform, execs, pr);
	if (!ret)
		ret = cal_pk_host(&lab, dir, pr);
	sweep_lab_down(&lab);
	sweep_remove_dir(dir);
	return ret;
}

struct cal_opts {
	const char *out, *in, *platform, *lab, *tag;
	long executors;
	bool quick, keys, packet, quiet;
};

#define CAL_OPT(f) offsetof(struct cal_opts, f)

static const struct conf_opt cal_opts[] = {
    CONF_OUTPUT_ROW("PROFILE", CAL_OPT(out), "write the profile"),
    CONF_FLAG_ROW("quick", CAL_OPT(quick), "fewer repetitions and shapes"),
    CONF_FLAG_ROW("keys", CAL_OPT(keys), "list the profile's keys and exit"),
    CONF_FLAG_ROW("packet", CAL_OPT(packet),
		  "then measure the NIC and the path through the packet path (root)"),
    CONF_STR_ROW("profile", "IN", CAL_OPT(in), NULL, "--packet: start from this profile"),
    CONF_CHOICE_ROW("platform", "emu|lcore", CAL_OPT(platform), "emu",
		    "--packet: splitnic-nic's platform"),
    CONF_LONG_ROW("executors", "E", CAL_OPT(executors), 1, 256, "16",
		  "--packet: splitnic-nic's executors"),
    CONF_STR_ROW("lab", "SCRIPT", CAL_OPT(lab), NULL, "--packet: the lab (lab/sweep_lab.sh)"),
    CONF_STR_ROW("tag", "T", CAL_OPT(tag), NULL, "--packet: the lab's namespaces' tag"),
    CONF_FLAG_ROW("quiet", CAL_OPT(quiet), "no progress line (drawn only on a terminal)"),
};

const struct conf_cmd cmd_calibrate_spec = {
    CONF_CMD("splitnic calibrate",
	     "[-o PROFILE] [--quick] [--keys] [--packet [--profile IN] "
	     "[--platform emu|lcore] [--executors E] [--lab SCRIPT] [--tag T]]",
	     "measure this machine's executors and transfer costs (and the packet path) into "
	     "a profile",
	     cal_opts, 0, 0, NULL),
    .notes = "In process: this machine's kernels, the emulator's NIC, the protocol code.\n"
	     "--packet (root): then, with no server running meanwhile for the in-process part (or\n"
	     "from --profile IN), the NIC's per-request time and the path's costs MEASURED\n"
	     "through splitnic-nic and splitnic-host in the namespaces of lab/sweep_lab.sh.\n"};

int cmd_calibrate(int argc, char **argv)
{
	struct cal_opts o = {0};
	char execs[16];
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
		return 0;
	}
	if (!o.packet && (o.in || o.lab || o.tag))
		return cli_usage_error(&cmd_calibrate_spec,
				       "--profile, --lab and --tag go with --packet");
	snprintf(execs, sizeof(execs), "%ld", o.executors);
	if (o.out && conf_output_ok("calibrate", "-o", o.out))
		return 1;
	split_profile_default(&pr);
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
	if (!ret && o.packet)
		ret = cal_packet(&pr, o.lab, o.tag, o.platform, execs);
	cli_progress_end(&progress);
	if (ret) {
		fprintf(stderr, "splitnic calibrate: %s\n", strerror(-ret));
		return 1;
	}
	if (o.out) {
		ret = split_profile_save(o.out, &pr,
					 o.packet  ? "measured by splitnic calibrate --packet (NIC "
						     "and path keys through the packet path)"
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
