// SPDX-License-Identifier: MIT
/*
 * The executor (kernels/forward.c): a forward pass allocates nothing, op ranges compose into
 * the whole model (what split execution relies on), a batch equals its images run one by one,
 * and bad arguments are refused.
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

#include "kernels/kern.h"
#include "tests/support/model_fixture.h"
#include "tests/support/npz_write.h"
#include "tests/support/rng.h"

/* Allocation counting: the test binary is linked with -Wl,--wrap for these. */
static unsigned long n_alloc;
void *__real_malloc(size_t n);
void *__real_calloc(size_t n, size_t s);
void *__real_realloc(void *p, size_t n);
void *__real_aligned_alloc(size_t a, size_t n);
int __real_posix_memalign(void **p, size_t a, size_t n);

void *__wrap_malloc(size_t n)
{
	n_alloc++;
	return __real_malloc(n);
}

void *__wrap_calloc(size_t n, size_t s)
{
	n_alloc++;
	return __real_calloc(n, s);
}

void *__wrap_realloc(void *p, size_t n)
{
	n_alloc++;
	return __real_realloc(p, n);
}

void *__wrap_aligned_alloc(size_t a, size_t n)
{
	n_alloc++;
	return __real_aligned_alloc(a, n);
}

int __wrap_posix_memalign(void **p, size_t a, size_t n)
{
	n_alloc++;
	return __real_posix_memalign(p, a, n);
}

#define IN_C	 2
#define IN_H	 9
#define IN_W	 9
#define IN_ELEMS (IN_C * IN_H * IN_W)
#define NCLASS	 10
#define MAXB	 7

static const char *arch =
    "{\"name\":\"fwd\",\"input\":{\"shape\":[2,9,9],\"dtype\":\"u8\"},\"layers\":["
    "{\"type\":\"conv\",\"out\":8,\"kernel\":3,\"pad\":1,\"bias\":true},"
    "{\"type\":\"batchnorm\"},{\"type\":\"sign\"},"
    "{\"type\":\"conv\",\"out\":70,\"kernel\":3,\"pad\":1,\"binary_weights\":true},"
    "{\"type\":\"maxpool\",\"kernel\":2},{\"type\":\"batchnorm\"},{\"type\":\"sign\"},"
    "{\"type\":\"flatten\"},"
    "{\"type\":\"dense\",\"out\":33,\"bias\":true,\"binary_weights\":true},"
    "{\"type\":\"batchnorm\"},{\"type\":\"sign\"},"
    "{\"type\":\"dense\",\"out\":10,\"binary_weights\":true},{\"type\":\"batchnorm\"}]}";

static uint64_t rng = 0x9e3779b97f4a7c15ull;

static double rnd(void)
{
	return (double)(test_xorshift(&rng) >> 11) / (double)(1ull << 53) * 2.0 - 1.0;
}

static double *rand_array(size_t n, double lo, double hi)
{
	double *v = malloc(n * sizeof(*v));

	for (size_t i = 0; i < n; i++)
		v[i] = lo + (hi - lo) * (rnd() + 1.0) / 2.0;
	return v;
}

struct fx {
	char dir[128];
	struct model *m;
	uint8_t in[MAXB * IN_ELEMS];
};

static void add_bn(struct test_array *a, size_t *n, const char *idx[4], uint64_t c)
{
	for (int k = 0; k < 4; k++) {
		a[*n] = (struct test_array){idx[k], NULL, 1, {c}, NULL};
		a[*n].v = k == 3 ? rand_array(c, 0.5, 4.0)
				 : rand_array(c, k == 2 ? -20.0 : -1.0, k == 2 ? 20.0 : 1.0);
		(*n)++;
	}
}

static int fx_setup(void **state)
{
	static const char *bn1[4] = {"1.gamma", "1.beta", "1.mean", "1.var"};
	static const char *bn5[4] = {"5.gamma", "5.beta", "5.mean", "5.var"};
	static const char *bn9[4] = {"9.gamma", "9.beta", "9.mean", "9.var"};
	static const char *bn12[4] = {"12.gamma", "12.beta", "12.mean", "12.var"};
	struct fx *f = calloc(1, sizeof(*f));
	struct test_array a[24];
	size_t n = 0;

	assert_int_equal(test_tmpdir(f->dir, sizeof(f->dir)), 0);
	a[n++] = (struct test_array){"0.weight", NULL, 4, {8, 2, 3, 3}, rand_array(144, -0.1, 0.1)};
	a[n++] = (struct test_array){"0.bias", NULL, 1, {8}, rand_array(8, -1, 1)};
	add_bn(a, &n, bn1, 8);
	a[n++] = (struct test_array){"3.weight", NULL, 4, {70, 8, 3, 3}, rand_array(5040, -1, 1)};
	add_bn(a, &n, bn5, 70);
	a[n++] = (struct test_array){"8.weight", NULL, 2, {33, 1120}, rand_array(36960, -1, 1)};
	a[n++] = (struct test_array){"8.bias", NULL, 1, {33}, rand_array(33, -3, 3)};
	add_bn(a, &n, bn9, 33);
	a[n++] = (struct test_array){"11.weight", NULL, 2, {10, 33}, rand_array(330, -1, 1)};
	add_bn(a, &n, bn12, 10);
	f->m = test_model_in(f->dir, "m", arch, a, n);
	for (size_t i = 0; i < sizeof(f->in); i++)
		f->in[i] = (uint8_t)(rnd() * 127.5 + 127.5);
	*state = f;
	return 0;
}

static int fx_teardown(void **state)
{
	struct fx *f = *state;

	model_free(f->m);
	test_rmdir(f->dir);
	free(f);
	return 0;
}

static void test_forward_no_alloc(void **state)
{
	struct fx *f = *state;
	unsigned long before = n_alloc;
	struct kern_ctx *ctx = kern_ctx_create(f->m, MAXB);
	double scores[MAXB * NCLASS];

	assert_non_null(ctx);
	assert_true(n_alloc > before); /* the wrap sees the context's allocations */
	assert_int_equal(model_classes(f->m), NCLASS);
	before = n_alloc;
	for (uint32_t b = 1; b <= MAXB; b++)
		assert_int_equal(kern_forward(ctx, f->in, b, scores), 0);
	assert_int_equal(n_alloc - before, 0);
	kern_ctx_free(ctx);
}

/* Every split point: ops [0,k) then [k,n) give the same output as [0,n), bit for bit. */
static void test_forward_range_composes(void **state)
{
	struct fx *f = *state;
	const uint32_t n = f->m->n_layers;
	const struct model_shape *last = &f->m->layers[n - 1].out;
	struct kern_ctx *ctx = kern_ctx_create(f->m, MAXB);
	uint8_t *whole, *split, *mid;
	size_t mid_max = 0;

	assert_non_null(ctx);
	for (uint32_t i = 0; i < n; i++)
		if (model_shape_bytes(&f->m->layers[i].out) > mid_max)
			mid_max = model_shape_bytes(&f->m->layers[i].out);
	whole = calloc(MAXB, model_shape_bytes(last));
	split = calloc(MAXB, model_shape_bytes(last));
	mid = calloc(MAXB, mid_max);
	assert_int_equal(kern_forward_range(ctx, 0, n, f->in, MAXB, whole), 0);
	for (uint32_t k = 1; k < n; k++) {
		memset(split, 0xa5, MAXB * model_shape_bytes(last));
		assert_int_equal(kern_forward_range(ctx, 0, k, f->in, MAXB, mid), 0);
		assert_int_equal(kern_forward_range(ctx, k, n, mid, MAXB, split), 0);
		assert_memory_equal(whole, split, MAXB * model_shape_bytes(last));
	}
	free(whole);
	free(split);
	free(mid);
	kern_ctx_free(ctx);
}

static void test_forward_batch_equals_singles(void **state)
{
	struct fx *f = *state;
	struct kern_ctx *ctx = kern_ctx_create(f->m, MAXB);
	double batch[MAXB * NCLASS], one[NCLASS];

	assert_int_equal(kern_forward(ctx, f->in, MAXB, batch), 0);
	for (uint32_t i = 0; i < MAXB; i++) {
		assert_int_equal(kern_forward(ctx, f->in + i * IN_ELEMS, 1, one), 0);
		assert_memory_equal(one, batch + i * NCLASS, sizeof(one));
	}
	kern_ctx_free(ctx);
}

/*
 * Float32 runs (kernels/fconv.c): a float conv -> batch-norm -> sign with channels that decide
 * exactly at the conv output of an all-zero window (ties, which only the float64 conv decides),
 * the same with a max-pool after the conv (bits pooled by OR, AND where a gamma is negative), and
 * a +-1 conv straight on the u8 input (exact in float32). The whole model equals its ops run one at
 * a time (no float32 run: every op alone is float64), bit for bit.
 */
static const char *arch_ties =
    "{\"name\":\"ties\",\"input\":{\"shape\":[2,8,8],\"dtype\":\"u8\"},\"layers\":["
    "{\"type\":\"conv\",\"out\":6,\"kernel\":3,\"pad\":1,\"bias\":true},"
    "{\"type\":\"batchnorm\"},{\"type\":\"sign\"},{\"type\":\"flatten\"},"
    "{\"type\":\"dense\",\"out\":10,\"binary_weights\":true},{\"type\":\"batchnorm\"}]}";
static const char *arch_pool =
    "{\"name\":\"pool\",\"input\":{\"shape\":[2,8,8],\"dtype\":\"u8\"},\"layers\":["
    "{\"type\":\"conv\",\"out\":6,\"kernel\":3,\"pad\":1,\"bias\":true},"
    "{\"type\":\"maxpool\",\"kernel\":2},{\"type\":\"batchnorm\"},{\"type\":\"sign\"},"
    "{\"type\":\"flatten\"},{\"type\":\"dense\",\"out\":10,\"binary_weights\":true},"
    "{\"type\":\"batchnorm\"}]}";
static const char *arch_u8bin =
    "{\"name\":\"u8bin\",\"input\":{\"shape\":[2,8,8],\"dtype\":\"u8\"},\"layers\":["
    "{\"type\":\"conv\",\"out\":70,\"kernel\":3,\"pad\":1,\"binary_weights\":true},"
    "{\"type\":\"batchnorm\"},{\"type\":\"sign\"},{\"type\":\"flatten\"},"
    "{\"type\":\"dense\",\"out\":10,\"binary_weights\":true},{\"type\":\"batchnorm\"}]}";

/* Layers: conv [maxpool 2] batchnorm sign flatten dense batchnorm (keys by layer index). */
static struct model *build(const char *dir, const char *arch_text, uint32_t conv_out, bool ties,
			   bool pool)
{
	static const char *bns[2][2][4] = {
	    {{"1.gamma", "1.beta", "1.mean", "1.var"}, {"5.gamma", "5.beta", "5.mean", "5.var"}},
	    {{"2.gamma", "2.beta", "2.mean", "2.var"}, {"6.gamma", "6.beta", "6.mean", "6.var"}}};
	const uint64_t flat = conv_out * (pool ? 16 : 64);
	const char *tag = pool ? "p" : ties ? "t" : "u";
	struct test_array a[12];
	size_t n = 0;

	a[n++] = (struct test_array){
	    "0.weight", "<f8", 4, {conv_out, 2, 3, 3}, rand_array(conv_out * 18, -0.1, 0.1)};
	if (ties)
		a[n++] = (struct test_array){
		    "0.bias", "<f8", 1, {conv_out}, rand_array(conv_out, -1, 1)};
	add_bn(a, &n, bns[pool][0], conv_out);
	if (ties) /* channels with a zero bias, mean and beta decide exactly at a zero sum */
		for (uint32_t c = 0; c < conv_out; c += 2) {
			((double *)a[1].v)[c] = 0.0;
			((double *)a[n - 2].v)[c] = 0.0;
			((double *)a[n - 3].v)[c] = 0.0;
		}
	if (pool) /* a negative gamma: the pool over those channels' bits is an AND */
		for (uint32_t c = 1; c < conv_out; c += 3)
			((double *)a[n - 4].v)[c] = -fabs(a[n - 4].v[c]);
	a[n++] = (struct test_array){
	    pool ? "5.weight" : "4.weight", NULL, 2, {10, flat}, rand_array(10 * flat, -1, 1)};
	add_bn(a, &n, bns[pool][1], 10);
	return test_model_in(dir, tag, arch_text, a, n);
}

/* Ops [0, n) at once against one op at a time, on inputs with all-zero regions. */
static void check_against_single_ops(struct model *m, const uint8_t *in, uint32_t batch,
				     bool want_recomputed)
{
	struct kern_ctx *ctx = kern_ctx_create(m, batch);
	size_t max = 0;
	uint8_t *buf[2], *whole;
	const uint8_t *cur = in;

	assert_non_null(ctx);
	for (uint32_t i = 0; i < m->n_layers; i++)
		if (model_shape_bytes(&m->layers[i].out) > max)
			max = model_shape_bytes(&m->layers[i].out);
	buf[0] = calloc(batch, max);
	buf[1] = calloc(batch, max);
	whole = calloc(batch, max);
	assert_int_equal(kern_forward_range(ctx, 0, m->n_layers, in, batch, whole), 0);
	assert_int_equal(kern_ctx_recomputed(ctx) > 0, want_recomputed);
	for (uint32_t i = 0; i < m->n_layers; i++) {
		assert_int_equal(kern_forward_range(ctx, i, i + 1, cur, batch, buf[i & 1]), 0);
		cur = buf[i & 1];
	}
	assert_memory_equal(whole, cur, batch * model_shape_bytes(&m->layers[m->n_layers - 1].out));
	free(buf[0]);
	free(buf[1]);
	free(whole);
	kern_ctx_free(ctx);
}

static void test_forward_float32_runs(void **state)
{
	struct fx *f = *state;
	struct model *ties = build(f->dir, arch_ties, 6, true, false);
	struct model *pool = build(f->dir, arch_pool, 6, true, true);
	struct model *u8bin = build(f->dir, arch_u8bin, 70, false, false);
	uint8_t in[MAXB * IN_ELEMS];

	for (size_t i = 0; i < sizeof(in); i++)
		in[i] = (i / 16) % 3 ? 0 : (uint8_t)(rnd() * 127.5 + 127.5);
	check_against_single_ops(ties, in, MAXB, true);
	check_against_single_ops(ties, in + IN_ELEMS, 1, true);
	check_against_single_ops(pool, in, MAXB, true);
	check_against_single_ops(pool, f->in, MAXB, false);
	check_against_single_ops(u8bin, in, MAXB, false);
	check_against_single_ops(u8bin, f->in, MAXB, false);
	model_free(ties);
	model_free(pool);
	model_free(u8bin);
}

static void test_forward_bad_args(void **state)
{
	struct fx *f = *state;
	struct kern_ctx *ctx = kern_ctx_create(f->m, 2);
	double scores[3 * NCLASS];

	assert_null(kern_ctx_create(f->m, 0));
	assert_int_equal(kern_forward(ctx, f->in, 3, scores), -EINVAL);
	assert_int_equal(kern_forward(ctx, f->in, 0, scores), -EINVAL);
	assert_int_equal(kern_forward_range(ctx, 2, 2, f->in, 1, scores), -EINVAL);
	assert_int_equal(kern_forward_range(ctx, 0, f->m->n_layers + 1, f->in, 1, scores), -EINVAL);
	assert_int_equal(kern_forward(NULL, f->in, 1, scores), -EINVAL);
	kern_ctx_free(ctx);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
	    cmocka_unit_test(test_forward_no_alloc),
	    cmocka_unit_test(test_forward_range_composes),
	    cmocka_unit_test(test_forward_batch_equals_singles),
	    cmocka_unit_test(test_forward_float32_runs),
	    cmocka_unit_test(test_forward_bad_args),
	};

	return cmocka_run_group_tests(tests, fx_setup, fx_teardown);
}
