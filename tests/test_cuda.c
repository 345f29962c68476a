// SPDX-License-Identifier: MIT
/*
 * The CUDA executor (kernels/cuda/): every GPU kernel equals the CPU reference (kern_ops_ref and
 * the float kernels) bit for bit on random shapes, odd widths included; convolution, dense and
 * LRN within REL_TOL (cuBLAS sums in another order; CUDA's pow); random models and the bundled
 * ones give the same classes and scores within REL_TOL as kern_forward.
 *
 * The table is the one kcuda_load finds beside the test (build/libsncuda.so) when built with
 * nvcc. Without a usable GPU the GPU cases are skipped (cmocka skip) with the probe's message,
 * and the no-GPU contract is checked instead: -ENODEV with the CUDA error and its number, upload
 * refused with a message. SPLITNIC_REQUIRE_GPU=1 (make test-gpu) turns the skips into failures.
 * SPLITNIC_MODEL_DIR (default build/models) is where the bundled models are looked for.
 */
#include <errno.h>
#include <math.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <cmocka.h>

#include "kernels/cuda/kcuda.h"
#include "kernels/kern.h"
#include "kernels/kern_ops.h"
#include "tests/support/model_fixture.h"
#include "tests/support/npz_write.h"
#include "tests/support/rng.h"

#define REL_TOL 1e-12

static const struct kcuda_ops *cu; /* NULL: built without CUDA, or the table did not load */
static char probe_msg[640];	   /* the loader's message, else the probe's */
static int probe_ret;

static void *xalloc(size_t bytes)
{
	void *p = malloc(bytes ? bytes : 1);

	assert_non_null(p);
	memset(p, 0x5a, bytes ? bytes : 1);
	return p;
}

/* Skip (or, under SPLITNIC_REQUIRE_GPU=1, fail) a GPU case on a machine without a GPU. */
static void need_gpu(void)
{
	const char *req = getenv("SPLITNIC_REQUIRE_GPU");

	if (!probe_ret)
		return;
	if (req && !strcmp(req, "1"))
		fail_msg("no usable GPU and SPLITNIC_REQUIRE_GPU=1: %s", probe_msg);
	print_message("kcuda: skipped: %s\n", probe_msg);
	skip();
}

/* Random +-1 vectors packed as model/model.h says: rows of words(bits), tail bits 0. */
static uint64_t *rand_bits(size_t rows, uint64_t bits)
{
	size_t nw = model_words(bits);
	uint64_t *x = xalloc(rows * nw * 8);

	for (size_t r = 0; r < rows; r++)
		for (size_t j = 0; j < nw; j++) {
			uint64_t v = test_mix();

			if (j == nw - 1 && bits % 64)
				v &= (1ull << (bits % 64)) - 1;
			x[r * nw + j] = v;
		}
	return x;
}

/* Channel-packed BITS (c,h,w) images: tail bits of each pixel's last word 0. */
static uint64_t *rand_pixels(uint32_t batch, uint32_t c, uint32_t h, uint32_t w)
{
	return rand_bits((size_t)batch * h * w, c);
}

/* Thresholds around the dots' range, with every flip and the always-on/off encodings. */
static void rand_thresh(int32_t *thr, uint8_t *flip, uint32_t n, int32_t range)
{
	for (uint32_t i = 0; i < n; i++) {
		uint32_t kind = test_mix_below(10);

		thr[i] = kind == 0 ? INT32_MIN
				   : (int32_t)test_mix_below(2 * (uint32_t)range + 3) - range - 1;
		flip[i] = (uint8_t)test_mix_below(2);
	}
}

static void check_equal(const void *got, const void *want, size_t bytes, const char *what)
{
	if (memcmp(got, want, bytes)) {
		const uint8_t *g = got, *w = want;
		size_t i = 0;

		while (g[i] == w[i])
			i++;
		fail_msg("%s: GPU differs from the CPU at byte %zu of %zu", what, i, bytes);
	}
}

static void check_close(const double *got, const double *want, size_t n, double tol,
			const char *what)
{
	for (size_t i = 0; i < n; i++) {
		double d = fabs(got[i] - want[i]), m = fabs(want[i]) > 1.0 ? fabs(want[i]) : 1.0;

		if (!(d <= tol * m))
			fail_msg("%s: element %zu: GPU %.17g, CPU %.17g", what, i, got[i], want[i]);
	}
}

/* ---- without a GPU ------------------------------------------------------------------- */

static int has_number_in_parens(const char *s)
{
	const char *p = strrchr(s, '(');

	if (!p || p[1] < '0' || p[1] > '9')
		return 0;
	for (p++; *p >= '0' && *p <= '9'; p++)
		;
	return *p == ')';
}

static void test_cuda_load(void **state)
{
	char msg[640];
	int ret;

	(void)state;
	if (!kcuda_built) {
		assert_null(cu);
		assert_non_null(strstr(probe_msg, "built without CUDA"));
		assert_null(kcuda_open(msg, sizeof(msg)));
		assert_string_equal(msg, probe_msg);
		return;
	}
	if (!cu)
		fail_msg("built with CUDA, but its table did not load: %s", probe_msg);
	assert_int_equal(cu->abi, KCUDA_ABI);
	assert_int_equal(cu->size, sizeof(struct kcuda_ops));
	/* every member after abi and size is a function: none left out of the table */
	for (size_t off = offsetof(struct kcuda_ops, probe); off < sizeof(*cu);
	     off += sizeof(void (*)(void))) {
		void (*fn)(void);

		memcpy(&fn, (const char *)cu + off, sizeof(fn));
		if (!fn)
			fail_msg("the table's member at offset %zu is NULL", off);
	}
	assert_ptr_equal(kcuda_load(msg, sizeof(msg)), cu);
	ret = cu->probe(msg, sizeof(msg));
	print_message("kcuda: probe: %s\n", msg);
	assert_int_equal(ret, probe_ret);
	assert_ptr_equal(kcuda_open(msg, sizeof(msg)), ret ? NULL : cu);
	assert_string_equal(msg, probe_msg);
	if (!ret) {
		assert_true(strlen(msg) > 0);
		return;
	}
	assert_int_equal(ret, -ENODEV);
	/* e.g. "no CUDA GPU found: cudaGetDeviceCount: CUDA driver version is ... (35)" */
	assert_non_null(strstr(msg, "CUDA GPU"));
	if (strstr(msg, "cudaGetDeviceCount:") && !strstr(msg, "0 devices"))
		assert_true(has_number_in_parens(msg));
}

static const char *mlp_arch =
    "{\"name\":\"cuda-mlp\",\"input\":{\"shape\":[1,9,7],\"dtype\":\"u8\"},\"layers\":["
    "{\"type\":\"flatten\"},"
    "{\"type\":\"dense\",\"out\":65,\"bias\":true,\"binary_weights\":true},"
    "{\"type\":\"batchnorm\"},{\"type\":\"sign\"},"
    "{\"type\":\"dense\",\"out\":10,\"bias\":true,\"binary_weights\":true},"
    "{\"type\":\"batchnorm\"}]}";

static void add_bn(struct test_array *a, size_t *n, int layer, uint64_t c)
{
	static const char *names[4] = {"gamma", "beta", "mean", "var"};
	static char keys[64][24];
	static unsigned int next;

	for (int k = 0; k < 4; k++) {
		double *v = xalloc(c * sizeof(double));
		char *key = keys[next++ % 64];

		for (uint64_t i = 0; i < c; i++)
			v[i] = k == 3	? test_mix_real(0.5, 4.0)
			       : k == 2 ? test_mix_real(-20.0, 20.0)
					: test_mix_real(-1.0, 1.0);
		snprintf(key, sizeof(keys[0]), "%d.%s", layer, names[k]);
		a[(*n)++] = (struct test_array){key, NULL, 1, {c}, v};
	}
}

static double *rand_array(size_t n, double lo, double hi)
{
	double *v = xalloc(n * sizeof(double));

	for (size_t i = 0; i < n; i++)
		v[i] = test_mix_real(lo, hi);
	return v;
}

static struct model *mlp_model(char *dir, size_t len)
{
	struct test_array a[12];
	size_t n = 0;

	assert_int_equal(test_tmpdir(dir, len), 0);
	a[n++] = (struct test_array){"1.weight", NULL, 2, {65, 63}, rand_array(65 * 63, -1, 1)};
	a[n++] = (struct test_array){"1.bias", NULL, 1, {65}, rand_array(65, -3, 3)};
	add_bn(a, &n, 2, 65);
	a[n++] = (struct test_array){"4.weight", NULL, 2, {10, 65}, rand_array(650, -1, 1)};
	a[n++] = (struct test_array){"4.bias", NULL, 1, {10}, rand_array(10, -2, 2)};
	add_bn(a, &n, 5, 10);
	return test_model_in(dir, "m", mlp_arch, a, n);
}

/* Without a GPU: upload is refused with the reason, kernels say -ENODEV; with one, it works. */
static void test_cuda_no_gpu_contract(void **state)
{
	char dir[128], err[1024];
	struct model *m;
	struct kcuda_model *g;
	double x = 1.0;
	uint64_t y = 0;

	(void)state;
	if (!cu) {
		print_message("kcuda: skipped: no table to call: %s\n", probe_msg);
		skip();
	}
	test_mix_seed(99);
	m = mlp_model(dir, sizeof(dir));
	g = cu->model_upload(m, 4, err, sizeof(err));
	if (!probe_ret) {
		if (!g)
			fail_msg("upload failed on a GPU: %s", err);
		cu->model_free(g);
	} else {
		assert_null(g);
		print_message("kcuda: upload without a GPU: %s\n", err);
		assert_non_null(strstr(err, "cannot run on the GPU"));
		assert_non_null(strstr(err, probe_msg));
		assert_int_equal(cu->sign_pack(&x, 1, 1, 1, 1, &y), -ENODEV);
		assert_non_null(strstr(cu->last_error(), probe_msg));
		assert_int_equal(cu->forward(NULL, &x, 1, &x), -EINVAL);
	}
	model_free(m);
	test_rmdir(dir);
}

/* ---- binary kernels ------------------------------------------------------------------ */

static const uint32_t widths[] = {1, 63, 65, 130, 1000, 4096};
static const uint32_t batches[] = {1, 3, 64};

static void bdense_case(uint32_t n, uint32_t batch, uint32_t out)
{
	const struct kern_bin_ops *ref = &kern_ops_ref;
	static const enum kcuda_bgemm algos[] = {KCUDA_BGEMM_AUTO, KCUDA_BGEMM_GEMV,
						 KCUDA_BGEMM_POPC, KCUDA_BGEMM_MMA};
	static const char *names[] = {"auto", "gemv", "popc", "mma"};
	uint64_t *x = rand_bits(batch, n), *w = rand_bits(out, n);
	size_t ny = (size_t)batch * out, nb = (size_t)batch * model_words(out);
	int32_t *want = xalloc(ny * 4), *got = xalloc(ny * 4), *thr = xalloc(out * 4);
	uint64_t *wbits = xalloc(nb * 8), *gbits = xalloc(nb * 8);
	uint8_t *flip = xalloc(out);
	struct kern_thresh t = {thr, flip};
	char what[96];

	rand_thresh(thr, flip, out, (int32_t)n);
	ref->bdense(x, batch, w, out, n, want);
	ref->bdense_thr(x, batch, w, out, n, &t, wbits);
	for (size_t a = 0; a < 4; a++) {
		snprintf(what, sizeof(what), "bdense/%s n=%u batch=%u out=%u", names[a], n, batch,
			 out);
		if (cu->bdense(x, batch, w, out, n, got, algos[a]))
			fail_msg("%s: %s", what, cu->last_error());
		check_equal(got, want, ny * 4, what);
		snprintf(what, sizeof(what), "bdense_thr/%s n=%u batch=%u out=%u", names[a], n,
			 batch, out);
		if (cu->bdense_thr(x, batch, w, out, n, &t, gbits, algos[a]))
			fail_msg("%s: %s", what, cu->last_error());
		check_equal(gbits, wbits, nb * 8, what);
	}
	free(x), free(w), free(want), free(got), free(thr), free(wbits), free(gbits), free(flip);
}

static void test_cuda_bdense(void **state)
{
	static const uint32_t outs[] = {1, 63, 65, 130, 257};

	(void)state;
	need_gpu();
	test_mix_seed(1);
	for (size_t i = 0; i < sizeof(widths) / sizeof(*widths); i++)
		for (size_t j = 0; j < sizeof(batches) / sizeof(*batches); j++)
			bdense_case(widths[i], batches[j], outs[test_mix_below(5)]);
	bdense_case(8192, 200, 300);
}

static void bdense_u8_case(uint32_t n, uint32_t batch, uint32_t out)
{
	const struct kern_bin_ops *ref = &kern_ops_ref;
	uint8_t *x = xalloc((size_t)batch * n), *flip = xalloc(out);
	uint64_t *w = rand_bits(out, n);
	size_t ny = (size_t)batch * out, nb = (size_t)batch * model_words(out);
	int32_t *want = xalloc(ny * 4), *got = xalloc(ny * 4), *thr = xalloc(out * 4);
	uint64_t *wbits = xalloc(nb * 8), *gbits = xalloc(nb * 8);
	void *scratch = xalloc(kern_bdense_u8_scratch(n, batch));
	struct kern_thresh t = {thr, flip};
	char what[96];

	for (size_t i = 0; i < (size_t)batch * n; i++) {
		uint32_t kind = test_mix_below(4);

		x[i] = kind == 0 ? 0 : kind == 1 ? 255 : (uint8_t)test_mix();
	}
	rand_thresh(thr, flip, out, (int32_t)(255 * n));
	ref->bdense_u8(x, batch, w, out, n, want, scratch);
	ref->bdense_u8_thr(x, batch, w, out, n, &t, wbits, scratch);
	snprintf(what, sizeof(what), "bdense_u8 n=%u batch=%u out=%u", n, batch, out);
	if (cu->bdense_u8(x, batch, w, out, n, got))
		fail_msg("%s: %s", what, cu->last_error());
	check_equal(got, want, ny * 4, what);
	if (cu->bdense_u8_thr(x, batch, w, out, n, &t, gbits))
		fail_msg("%s (thr): %s", what, cu->last_error());
	check_equal(gbits, wbits, nb * 8, what);
	free(x), free(flip), free(w), free(want), free(got), free(thr), free(wbits), free(gbits);
	free(scratch);
}

static void test_cuda_bdense_u8(void **state)
{
	static const uint32_t outs[] = {1, 10, 65, 130};

	(void)state;
	need_gpu();
	test_mix_seed(2);
	for (size_t i = 0; i < sizeof(widths) / sizeof(*widths); i++)
		for (size_t j = 0; j < sizeof(batches) / sizeof(*batches); j++)
			bdense_u8_case(widths[i], batches[j], outs[test_mix_below(4)]);
	bdense_u8_case(784, 64, 1024);
}

static void rand_geom(struct kern_conv_geom *g, uint32_t c)
{
	g->c = c;
	g->k = 1 + test_mix_below(5);
	g->pad = test_mix_below(g->k);
	g->stride = 1 + test_mix_below(2);
	g->h = g->k > 2 * g->pad ? g->k - 2 * g->pad + test_mix_below(8) : 1 + test_mix_below(8);
	g->w = g->k > 2 * g->pad ? g->k - 2 * g->pad + test_mix_below(8) : 1 + test_mix_below(8);
	g->oh = (g->h + 2 * g->pad - g->k) / g->stride + 1;
	g->ow = (g->w + 2 * g->pad - g->k) / g->stride + 1;
	g->o = (uint32_t[]){1, 7, 64, 65}[test_mix_below(4)];
}

static void bconv_case(uint32_t c, uint32_t batch)
{
	const struct kern_bin_ops *ref = &kern_ops_ref;
	struct kern_conv_geom g;
	uint64_t *x, *w, *wbits, *gbits;
	int32_t *want, *got, *thr;
	uint8_t *flip;
	size_t ny, nb;
	char what[128];

	rand_geom(&g, c);
	x = rand_pixels(batch, c, g.h, g.w);
	w = rand_bits((size_t)g.o * g.k * g.k, c);
	ny = (size_t)batch * g.o * g.oh * g.ow;
	nb = (size_t)batch * g.oh * g.ow * model_words(g.o);
	want = xalloc(ny * 4), got = xalloc(ny * 4), thr = xalloc(g.o * 4), flip = xalloc(g.o);
	wbits = xalloc(nb * 8), gbits = xalloc(nb * 8);
	rand_thresh(thr, flip, g.o, (int32_t)(c * g.k * g.k));
	ref->bconv(x, batch, &g, w, want);
	ref->bconv_thr(x, batch, &g, w, &(struct kern_thresh){thr, flip}, wbits);
	snprintf(what, sizeof(what), "bconv c=%u %ux%u k=%u s=%u p=%u o=%u batch=%u", c, g.h, g.w,
		 g.k, g.stride, g.pad, g.o, batch);
	if (cu->bconv(x, batch, &g, w, got))
		fail_msg("%s: %s", what, cu->last_error());
	check_equal(got, want, ny * 4, what);
	if (cu->bconv_thr(x, batch, &g, w, &(struct kern_thresh){thr, flip}, gbits))
		fail_msg("%s (thr): %s", what, cu->last_error());
	check_equal(gbits, wbits, nb * 8, what);
	free(x), free(w), free(want), free(got), free(thr), free(flip), free(wbits), free(gbits);
}

static void test_cuda_bconv(void **state)
{
	static const uint32_t cs[] = {1, 3, 65, 130};

	(void)state;
	need_gpu();
	test_mix_seed(3);
	for (size_t i = 0; i < sizeof(cs) / sizeof(*cs); i++)
		for (size_t j = 0; j < sizeof(batches) / sizeof(*batches); j++)
			for (int r = 0; r < 3; r++)
				bconv_case(cs[i], batches[j]);
}

/* Values with exact zeros, -0.0 and integers on the thresholds. */
static double *rand_values(size_t n, int integers)
{
	double *x = xalloc(n * sizeof(double));

	for (size_t i = 0; i < n; i++) {
		uint32_t kind = test_mix_below(8);

		x[i] = kind == 0   ? 0.0
		       : kind == 1 ? -0.0
		       : integers  ? (double)((int32_t)test_mix_below(41) - 20)
				   : test_mix_real(-5.0, 5.0);
	}
	return x;
}

static void test_cuda_pack_pool_layout(void **state)
{
	static const uint32_t cs[] = {1, 3, 63, 64, 65, 130};
	const struct kern_bin_ops *ref = &kern_ops_ref;

	(void)state;
	need_gpu();
	test_mix_seed(4);
	for (size_t i = 0; i < sizeof(cs) / sizeof(*cs); i++)
		for (size_t j = 0; j < sizeof(batches) / sizeof(*batches); j++) {
			const uint32_t c = cs[i], batch = batches[j], h = 1 + test_mix_below(9),
				       w = 1 + test_mix_below(9),
				       k = 1 + test_mix_below(h < w ? h : w),
				       stride = 1 + test_mix_below(k), oh = (h - k) / stride + 1,
				       ow = (w - k) / stride + 1, wpp = model_words(c);
			const size_t n = (size_t)batch * c * h * w,
				     nb = (size_t)batch * h * w * wpp;
			const size_t nflat = (size_t)batch * model_words((uint64_t)c * h * w);
			const size_t npool = (size_t)batch * oh * ow * wpp;
			double *x = rand_values(n, 1), *du = xalloc(n * 8), *gu = xalloc(n * 8);
			uint64_t *want = xalloc(nb * 8), *got = xalloc(nb * 8);
			uint64_t *wf = xalloc(nflat * 8), *gf = xalloc(nflat * 8);
			uint64_t *wp = xalloc(npool * 8), *gp = xalloc(npool * 8);
			int32_t *thr = xalloc(c * 4);
			uint8_t *flip = xalloc(c);
			struct kern_thresh t = {thr, flip};

			rand_thresh(thr, flip, c, 20);
			ref->sign_pack(x, batch, c, h, w, want);
			assert_int_equal(cu->sign_pack(x, batch, c, h, w, got), 0);
			check_equal(got, want, nb * 8, "sign_pack");
			ref->threshold_pack(x, batch, c, h, w, &t, want);
			assert_int_equal(cu->threshold_pack(x, batch, c, h, w, &t, got), 0);
			check_equal(got, want, nb * 8, "threshold_pack");
			kern_unpack_bits(want, batch, c, h, w, du);
			assert_int_equal(cu->unpack_bits(want, batch, c, h, w, gu), 0);
			check_equal(gu, du, n * 8, "unpack_bits");
			kern_flatten_bits(want, batch, c, h, w, wf);
			assert_int_equal(cu->flatten_bits(want, batch, c, h, w, gf), 0);
			check_equal(gf, wf, nflat * 8, "flatten_bits");
			ref->maxpool_bits(want, batch, c, h, w, k, stride, wp);
			assert_int_equal(cu->maxpool_bits(want, batch, c, h, w, k, stride, gp), 0);
			check_equal(gp, wp, npool * 8, "maxpool_bits");
			free(x), free(du), free(gu), free(want), free(got), free(wf), free(gf);
			free(wp), free(gp), free(thr), free(flip);
		}
}

/* ---- float kernels ------------------------------------------------------------------- */

static void test_cuda_float_elementwise(void **state)
{
	(void)state;
	need_gpu();
	test_mix_seed(5);
	for (int r = 0; r < 12; r++) {
		const uint32_t batch = batches[r % 3], c = 1 + test_mix_below(70),
			       h = 1 + test_mix_below(9), w = 1 + test_mix_below(9), hw = h * w,
			       k = 1 + test_mix_below(h < w ? h : w),
			       stride = 1 + test_mix_below(k), oh = (h - k) / stride + 1,
			       ow = (w - k) / stride + 1, size = 1 + 2 * test_mix_below(4);
		const size_t n = (size_t)batch * c * hw, np = (size_t)batch * c * oh * ow;
		double *x = rand_values(n, 0), *want = xalloc(n * 8), *got = xalloc(n * 8);
		double *b = rand_array(c, -2, 2), *p = rand_array(4 * (size_t)c, -3, 3);
		uint8_t *u8 = xalloc(n);
		float *f32 = xalloc(n * 4);

		for (uint32_t i = 0; i < c; i++)
			p[c + i] = test_mix_real(0.1, 3.0);
		for (size_t i = 0; i < n; i++) {
			u8[i] = (uint8_t)test_mix();
			f32[i] = (float)x[i];
		}
		for (size_t i = 0; i < n; i++)
			want[i] = u8[i];
		assert_int_equal(cu->cast_f64(u8, MODEL_FMT_U8, n, got), 0);
		check_equal(got, want, n * 8, "cast u8");
		for (size_t i = 0; i < n; i++)
			want[i] = f32[i];
		assert_int_equal(cu->cast_f64(f32, MODEL_FMT_F32, n, got), 0);
		check_equal(got, want, n * 8, "cast f32");
		memcpy(want, x, n * 8);
		kern_bias_f64(want, batch, c, hw, b);
		assert_int_equal(cu->bias_f64(x, batch, c, hw, b, got), 0);
		check_equal(got, want, n * 8, "bias");
		kern_batchnorm_f64(x, batch, c, hw, p, p + c, p + 2 * c, p + 3 * c, want);
		assert_int_equal(
		    cu->batchnorm_f64(x, batch, c, hw, p, p + c, p + 2 * c, p + 3 * c, got), 0);
		check_equal(got, want, n * 8, "batchnorm");
		kern_relu_f64(x, n, want);
		assert_int_equal(cu->relu_f64(x, n, got), 0);
		check_equal(got, want, n * 8, "relu");
		kern_maxpool_f64(x, batch, c, h, w, k, stride, want);
		assert_int_equal(cu->maxpool_f64(x, batch, c, h, w, k, stride, got), 0);
		check_equal(got, want, np * 8, "maxpool");
		kern_lrn_f64(x, batch, c, hw, size, 1e-2, 0.75, 1.0, want);
		assert_int_equal(cu->lrn_f64(x, batch, c, hw, size, 1e-2, 0.75, 1.0, got), 0);
		check_close(got, want, n, REL_TOL, "lrn");
		free(x), free(want), free(got), free(b), free(p), free(u8), free(f32);
	}
}

static void test_cuda_conv_dense(void **state)
{
	static const uint32_t cs[] = {1, 3, 65};

	(void)state;
	need_gpu();
	test_mix_seed(6);
	for (size_t i = 0; i < sizeof(cs) / sizeof(*cs); i++)
		for (size_t j = 0; j < sizeof(batches) / sizeof(*batches); j++) {
			struct kern_conv_geom g;
			const uint32_t batch = batches[j];
			size_t nx, nw, ny;
			double *x, *w, *b, *want, *got, *col;
			float *xf, *wf, *bf, *yf;

			rand_geom(&g, cs[i]);
			nx = (size_t)batch * g.c * g.h * g.w;
			nw = (size_t)g.o * g.c * g.k * g.k;
			ny = (size_t)batch * g.o * g.oh * g.ow;
			x = rand_array(nx, -1, 1), w = rand_array(nw, -1, 1),
			b = rand_array(g.o, -1, 1);
			want = xalloc(ny * 8), got = xalloc(ny * 8);
			col = xalloc(kern_conv_scratch(&g) * 8);
			xf = xalloc(nx * 4), wf = xalloc(nw * 4), bf = xalloc(g.o * 4);
			yf = xalloc(ny * 4);
			kern_conv_f64(x, batch, &g, w, b, col, want);
			assert_int_equal(cu->conv_f64(x, batch, &g, w, b, got), 0);
			check_close(got, want, ny, REL_TOL, "conv_f64");
			for (size_t e = 0; e < nx; e++)
				xf[e] = (float)x[e];
			for (size_t e = 0; e < nw; e++)
				wf[e] = (float)w[e];
			for (uint32_t e = 0; e < g.o; e++)
				bf[e] = (float)b[e];
			assert_int_equal(cu->conv_f32(xf, batch, &g, wf, bf, yf), 0);
			for (size_t e = 0; e < ny; e++)
				got[e] = yf[e];
			check_close(got, want, ny, 1e-4, "conv_f32");
			free(x), free(w), free(b), free(want), free(got), free(col), free(xf);
			free(wf), free(bf), free(yf);
		}
	for (size_t i = 0; i < sizeof(widths) / sizeof(*widths); i++)
		for (size_t j = 0; j < sizeof(batches) / sizeof(*batches); j++) {
			const uint32_t n = widths[i], batch = batches[j],
				       out = 1 + test_mix_below(130);
			double *x = rand_array((size_t)batch * n, -1, 1);
			double *w = rand_array((size_t)out * n, -1, 1), *b = rand_array(out, -1, 1);
			double *want = xalloc((size_t)batch * out * 8);
			double *got = xalloc((size_t)batch * out * 8);

			kern_dense_f64(x, batch, n, w, out, b, want);
			assert_int_equal(cu->dense_f64(x, batch, n, w, out, b, got), 0);
			check_close(got, want, (size_t)batch * out, REL_TOL, "dense_f64");
			kern_dense_f64(x, batch, n, w, out, NULL, want);
			assert_int_equal(cu->dense_f64(x, batch, n, w, out, NULL, got), 0);
			check_close(got, want, (size_t)batch * out, REL_TOL, "dense_f64 no bias");
			free(x), free(w), free(b), free(want), free(got);
		}
}

/* ---- models ---------------------------------------------------------------------------- */

/* GPU vs kern_forward on `count` inputs at batch sizes 1, 3 and 64; every op range too. */
static void compare_model(const struct model *m, const void *inputs, uint32_t count,
			  const char *label)
{
	static const uint32_t bs[] = {1, 3, 64};
	const uint32_t classes = model_classes(m);
	const size_t in_bytes = model_shape_bytes(&m->input);
	struct kern_ctx *ctx = kern_ctx_create(m, 64);
	double *want = xalloc((size_t)64 * classes * 8), *got = xalloc((size_t)64 * classes * 8);
	char err[1024];
	struct kcuda_model *g = cu->model_upload(m, 64, err, sizeof(err));

	if (!g)
		fail_msg("%s: %s", label, err);
	assert_non_null(ctx);
	for (size_t bi = 0; bi < 3; bi++)
		for (uint32_t first = 0; first + bs[bi] <= count; first += bs[bi]) {
			const uint8_t *in = (const uint8_t *)inputs + (size_t)first * in_bytes;

			assert_int_equal(kern_forward(ctx, in, bs[bi], want), 0);
			if (cu->forward(g, in, bs[bi], got))
				fail_msg("%s: forward: %s", label, cu->last_error());
			for (uint32_t i = 0; i < bs[bi]; i++)
				if (kern_argmax(got + (size_t)i * classes, classes) !=
				    kern_argmax(want + (size_t)i * classes, classes))
					fail_msg("%s: image %u: GPU class differs", label,
						 first + i);
			check_close(got, want, (size_t)bs[bi] * classes, REL_TOL, label);
			if (bs[bi] != 3)
				break;
		}
	/* ranges: [0,k) then [k,n) on the GPU equal [0,n) on the CPU */
	for (uint32_t k = 1; k < m->n_layers; k++) {
		const struct model_layer *mid = &m->layers[k - 1],
					 *last = &m->layers[m->n_layers - 1];
		void *a = xalloc(model_shape_bytes(&mid->out) * 3);
		void *wb = xalloc(model_shape_bytes(&last->out) * 3);
		void *gb = xalloc(model_shape_bytes(&last->out) * 3);

		assert_int_equal(kern_forward_range(ctx, 0, m->n_layers, inputs, 3, wb), 0);
		if (cu->forward_range(g, 0, k, inputs, 3, a) ||
		    cu->forward_range(g, k, m->n_layers, a, 3, gb))
			fail_msg("%s: range split at %u: %s", label, k, cu->last_error());
		if (last->out.fmt == MODEL_FMT_F64)
			check_close(gb, wb, model_shape_elems(&last->out) * 3, REL_TOL, label);
		else
			check_equal(gb, wb, model_shape_bytes(&last->out) * 3, label);
		free(a), free(wb), free(gb);
	}
	assert_int_equal(cu->forward(g, inputs, 65, got), -EINVAL);
	cu->model_free(g);
	kern_ctx_free(ctx);
	free(want), free(got);
}

static void *rand_inputs(const struct model *m, uint32_t count)
{
	const size_t n = model_shape_elems(&m->input) * count;
	void *x = xalloc(model_shape_bytes(&m->input) * count);

	for (size_t i = 0; i < n; i++)
		if (m->input.fmt == MODEL_FMT_U8)
			((uint8_t *)x)[i] = (uint8_t)test_mix();
		else
			((float *)x)[i] = (float)test_mix_real(0.0, 1.0);
	return x;
}

/* u8 input: float conv, batch-norm, sign, binary convs (padded, thresholds or not), pools. */
static const char *bcnn_arch =
    "{\"name\":\"cuda-bcnn\",\"input\":{\"shape\":[3,11,9],\"dtype\":\"u8\"},\"layers\":["
    "{\"type\":\"conv\",\"out\":65,\"kernel\":3,\"pad\":1,\"bias\":true},"
    "{\"type\":\"batchnorm\"},{\"type\":\"sign\"},"
    "{\"type\":\"conv\",\"out\":70,\"kernel\":3,\"pad\":1,\"binary_weights\":true},"
    "{\"type\":\"maxpool\",\"kernel\":2},{\"type\":\"batchnorm\"},{\"type\":\"sign\"},"
    "{\"type\":\"conv\",\"out\":33,\"kernel\":2,\"pad\":1,\"binary_weights\":true},"
    "{\"type\":\"batchnorm\"},{\"type\":\"sign\"},{\"type\":\"maxpool\",\"kernel\":2,\"stride\":1},"
    "{\"type\":\"flatten\"},"
    "{\"type\":\"dense\",\"out\":130,\"bias\":true,\"binary_weights\":true},"
    "{\"type\":\"batchnorm\"},{\"type\":\"sign\"},"
    "{\"type\":\"dense\",\"out\":10,\"binary_weights\":true},{\"type\":\"batchnorm\"}]}";

/* f32 input: float conv, relu, pool, LRN, float dense, unpack, binary-weight float dense. */
static const char *float_arch =
    "{\"name\":\"cuda-float\",\"input\":{\"shape\":[2,10,10],\"dtype\":\"f32\"},\"layers\":["
    "{\"type\":\"conv\",\"out\":6,\"kernel\":3,\"stride\":1,\"bias\":true},{\"type\":\"relu\"},"
    "{\"type\":\"maxpool\",\"kernel\":3,\"stride\":2},{\"type\":\"lrn\",\"size\":3},"
    "{\"type\":\"flatten\"},{\"type\":\"dense\",\"out\":40,\"bias\":true},"
    "{\"type\":\"sign\"},{\"type\":\"dense\",\"out\":20,\"bias\":true},{\"type\":\"relu\"},"
    "{\"type\":\"dense\",\"out\":10,\"binary_weights\":true}]}";

static void test_cuda_model_random(void **state)
{
	char dir[128];
	struct test_array a[32];
	struct model *m;
	void *in;
	size_t n = 0;

	(void)state;
	need_gpu();
	test_mix_seed(7);
	m = mlp_model(dir, sizeof(dir));
	in = rand_inputs(m, 70);
	compare_model(m, in, 70, "random mlp");
	free(in), model_free(m), test_rmdir(dir);

	assert_int_equal(test_tmpdir(dir, sizeof(dir)), 0);
	a[n++] = (struct test_array){"0.weight", NULL, 4, {65, 3, 3, 3}, rand_array(1755, -.1, .1)};
	a[n++] = (struct test_array){"0.bias", NULL, 1, {65}, rand_array(65, -1, 1)};
	add_bn(a, &n, 1, 65);
	a[n++] = (struct test_array){"3.weight", NULL, 4, {70, 65, 3, 3}, rand_array(40950, -1, 1)};
	add_bn(a, &n, 5, 70);
	a[n++] = (struct test_array){"7.weight", NULL, 4, {33, 70, 2, 2}, rand_array(9240, -1, 1)};
	add_bn(a, &n, 8, 33);
	a[n++] = (struct test_array){"12.weight", NULL, 2, {130, 660}, rand_array(85800, -1, 1)};
	a[n++] = (struct test_array){"12.bias", NULL, 1, {130}, rand_array(130, -3, 3)};
	add_bn(a, &n, 13, 130);
	a[n++] = (struct test_array){"15.weight", NULL, 2, {10, 130}, rand_array(1300, -1, 1)};
	add_bn(a, &n, 16, 10);
	m = test_model_in(dir, "m", bcnn_arch, a, n);
	in = rand_inputs(m, 70);
	compare_model(m, in, 70, "random bcnn");
	free(in), model_free(m), test_rmdir(dir);

	n = 0;
	assert_int_equal(test_tmpdir(dir, sizeof(dir)), 0);
	a[n++] = (struct test_array){"0.weight", NULL, 4, {6, 2, 3, 3}, rand_array(108, -1, 1)};
	a[n++] = (struct test_array){"0.bias", NULL, 1, {6}, rand_array(6, -1, 1)};
	a[n++] = (struct test_array){"5.weight", NULL, 2, {40, 54}, rand_array(2160, -1, 1)};
	a[n++] = (struct test_array){"5.bias", NULL, 1, {40}, rand_array(40, -1, 1)};
	a[n++] = (struct test_array){"7.weight", NULL, 2, {20, 40}, rand_array(800, -1, 1)};
	a[n++] = (struct test_array){"7.bias", NULL, 1, {20}, rand_array(20, -1, 1)};
	a[n++] = (struct test_array){"9.weight", NULL, 2, {10, 20}, rand_array(200, -1, 1)};
	m = test_model_in(dir, "m", float_arch, a, n);
	in = rand_inputs(m, 70);
	compare_model(m, in, 70, "random float");
	free(in), model_free(m), test_rmdir(dir);
}

static void test_cuda_model_bundled(void **state)
{
	static const char *names[] = {"fmnist-bmlp", "fmnist-bcnn"};
	const char *dir = getenv("SPLITNIC_MODEL_DIR");
	unsigned int found = 0;

	(void)state;
	need_gpu();
	test_mix_seed(8);
	for (size_t i = 0; i < 2; i++) {
		char path[512], err[512];
		struct model *m;
		void *in;

		snprintf(path, sizeof(path), "%s/%s.snm", dir && *dir ? dir : "build/models",
			 names[i]);
		m = model_load(path, err, sizeof(err));
		if (!m) {
			print_message("kcuda: %s not checked: %s\n", names[i], err);
			continue;
		}
		found++;
		in = rand_inputs(m, 130);
		compare_model(m, in, 130, names[i]);
		free(in);
		model_free(m);
	}
	print_message("kcuda: %u bundled model(s) compared\n", found);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
	    cmocka_unit_test(test_cuda_load),
	    cmocka_unit_test(test_cuda_no_gpu_contract),
	    cmocka_unit_test(test_cuda_bdense),
	    cmocka_unit_test(test_cuda_bdense_u8),
	    cmocka_unit_test(test_cuda_bconv),
	    cmocka_unit_test(test_cuda_pack_pool_layout),
	    cmocka_unit_test(test_cuda_float_elementwise),
	    cmocka_unit_test(test_cuda_conv_dense),
	    cmocka_unit_test(test_cuda_model_random),
	    cmocka_unit_test(test_cuda_model_bundled),
	};

	cu = kcuda_load(probe_msg, sizeof(probe_msg));
	probe_ret = cu ? cu->probe(probe_msg, sizeof(probe_msg)) : -ENODEV;
	return cmocka_run_group_tests(tests, NULL, NULL);
}
