/* SPDX-License-Identifier: MIT */
/*
 * tests/support/model_fixture.h — random interchange models for the executor tests: a
 * xorshift64 generator, arrays for weights.npz built layer by layer, arch.json + weights.npz
 * converted and loaded in a per-test temporary directory, random inputs in a model's format.
 * Failures go through cmocka (assert_*, fail_msg), so these run only inside a test.
 */
#ifndef TEST_MODEL_FIXTURE_H
#define TEST_MODEL_FIXTURE_H

#include <stddef.h>
#include <stdint.h>

#include "kernels/kern.h"
#include "tests/support/npz_write.h"

/* xorshift64 (13, 7, 17); the state is 0 until seeded, and shared by the whole test binary. */
void test_rng_seed(uint64_t seed);
uint64_t test_rng(void);

/* Uniform in [lo, hi), from the top 53 bits of test_rng(). */
double test_urand(double lo, double hi);

#define TEST_GEN_MAX_ARRAYS 96

/* An interchange model under construction: arrays for weights.npz, keys and values owned. */
struct test_gen {
	struct test_array a[TEST_GEN_MAX_ARRAYS];
	char keys[TEST_GEN_MAX_ARRAYS][32];
	size_t n;
};

/* A zeroed array "layer.name" of the given shape, dtype descr (NULL: "<f4"); its values. */
double *test_gen_array(struct test_gen *g, uint32_t layer, const char *name, const char *descr,
		       uint32_t ndim, const uint64_t *shape);

/* Dense weight (out, in) uniform in +-1 and bias uniform in +-2. */
void test_gen_dense(struct test_gen *g, uint32_t layer, uint32_t out, uint32_t in);

/* Conv weight (out, in, k, k) uniform in +-1, no bias. */
void test_gen_conv(struct test_gen *g, uint32_t layer, uint32_t out, uint32_t in, uint32_t k);

/* Batch-norm over n features whose inputs spread about +-scale; some gammas <= 0. */
void test_gen_bn(struct test_gen *g, uint32_t layer, uint32_t n, double scale);

/* Frees the values; g is empty again. */
void test_gen_free(struct test_gen *g);

/* A temporary directory and the paths the converter reads and writes in it. */
struct test_fx {
	char dir[256];
	char arch[320], npz[320], out[320];
	char err[512];
};

/* cmocka setup / teardown: *state is a struct test_fx with a fresh directory. */
int test_fx_setup(void **state);
int test_fx_teardown(void **state);

/* Write json and the n arrays, convert to f->out: model_convert's result, message in f->err. */
int test_fx_convert(struct test_fx *f, const char *json, const struct test_array *a, size_t n);

/* test_fx_convert, then load the model; fails the test on either error. */
struct model *test_fx_build(struct test_fx *f, const char *json, const struct test_array *a,
			    size_t n);

/* test_fx_build of g's arrays, which are freed. */
struct model *test_fx_build_gen(struct test_fx *f, const char *json, struct test_gen *g);

/* test_fx_build_gen in a temporary directory of its own, removed before returning. */
struct model *test_model_build(const char *json, struct test_gen *g);

/*
 * json and the n arrays (deflated) as dir/TAG.json and dir/TAG.npz, the arrays' values freed,
 * converted to dir/TAG.snm and loaded; fails the test on any error.
 */
struct model *test_model_in(const char *dir, const char *tag, const char *json,
			    struct test_array *a, size_t n);

/*
 * The NIC tests' u8 MLP: u8 (1,5,13) flatten, binary dense 63, 130, 1000, 1 with bias and
 * batch-norm, signs between; weights from seed 0x1234567.
 */
struct model *test_model_u8_mlp(struct test_fx *f);

/*
 * The NIC tests' float-input MLP: f32 (130,1,1), sign, binary dense 65 and 63 with bias,
 * batch-norm and sign each (the last layer thresholded); weights from seed 0xabcdef.
 */
struct model *test_model_bits_in(struct test_fx *f);

/*
 * The NIC tests' flatten of spatial bits: f32 (3,6,6), sign, binary conv 5 (3x3, pad 1) with
 * batch-norm and sign on the host, then flatten (5,6,6) bits and binary dense 65 and 10 with
 * batch-norm on the NIC; weights from seed 0x5eed.
 */
struct model *test_model_conv_flat(struct test_fx *f);

/*
 * A NIC platform under test: open its chain of execs executors for the NIC part of m (ops from
 * first on; fails the test on error), infer one input through it (0, or an error), close it.
 */
struct test_nic_platform {
	const char *name; /* in failure messages */
	void *(*open)(void *arg, const struct model *m, uint32_t first, uint32_t execs);
	int (*infer)(void *h, const void *in, double *scores);
	void (*close)(void *h);
	void *arg;
};

/*
 * The platform against kern_forward on count inputs of m, for every E of execs[0..n_execs): the
 * host part (ops before kexec_nic_first) on the CPU, the NIC part on the platform; every score
 * equal bit for bit, else the test fails naming the model, E, the input and the class.
 */
void test_nic_expect_exact(const struct test_nic_platform *p, const struct model *m,
			   const void *inputs, uint32_t count, const uint32_t *execs,
			   size_t n_execs);

/*
 * The bundled binary MLP: $NIC_MODEL, else models/fmnist-bmlp.snm of the build that holds
 * $SPLITNIC (BUILD/splitnic), else build/models/fmnist-bmlp.snm; the test is skipped when it is
 * absent, fails when it does not load.
 */
struct model *test_bundled_mlp(void);

/*
 * The first count Fashion-MNIST test images in m's input format (fewer when the set is
 * smaller: *count says how many), or count random inputs (said) when the data set is absent;
 * malloc'd.
 */
void *test_fmnist_inputs(const struct model *m, uint32_t *count);

/* count random inputs in m's input format: u8 bytes, or floats in [-1, 1]; malloc'd. */
void *test_random_inputs(const struct model *m, uint32_t count);

#endif /* TEST_MODEL_FIXTURE_H */
