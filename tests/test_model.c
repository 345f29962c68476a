/* SPDX-License-Identifier: MIT */
/*
 * Model file tests: a hand-built model written and reloaded field by field; then the loader
 * rejects every truncation, each corrupted header and op field (CRC fixed up so the deeper
 * check is reached), bad blobs, chaining and values, with a message naming the field; and
 * survives a flip of every byte.
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
#include <unistd.h>

#include <cmocka.h>

#include "kernels/kern.h"
#include "model/crc32c.h"
#include "model/model_file.h"
#include "tests/support/npz_write.h"

#define NA(a) (sizeof(a) / sizeof((a)[0]))

struct fx {
	char dir[256];
	char path[320];
	char err[512];
	struct model m;
	uint64_t w1[70], w2[10];
	int32_t thr[70];
	uint8_t flip[70];
	double bn[20];
	uint8_t *buf; /* the serialized model, 64-byte aligned */
	size_t size;
	struct model_file_header h;
};

static const struct model_src_layer src[] = {
    {MODEL_SRC_FLATTEN, 0, 16, 1, 1, 0, 0, 0},
    {MODEL_SRC_DENSE, MODEL_SF_BIAS | MODEL_SF_BINW, 70, 1, 1, 0, 0, 0},
    {MODEL_SRC_BATCHNORM, 0, 70, 1, 1, 0, 0, 0},
    {MODEL_SRC_SIGN, 0, 70, 1, 1, 0, 0, 0},
    {MODEL_SRC_DENSE, MODEL_SF_BINW, 5, 1, 1, 0, 0, 0},
    {MODEL_SRC_LRN, 0, 5, 1, 1, 3, 0, 0},
};

/* u8 (1,4,4) -> flatten -> bdense_u8 + thresholds (70) -> bdense (5) -> batchnorm -> lrn. */
static void fx_model(struct fx *f)
{
	static struct model_layer layers[5];
	struct model *m = &f->m;

	for (int i = 0; i < 70; i++) {
		f->w1[i] = (0x9e3779b97f4a7c15ull * (uint64_t)(i + 1)) & 0xffff;
		f->thr[i] = i * 37 - 1000;
		f->flip[i] = i % 3 == 0;
	}
	for (int i = 0; i < 10; i++)
		f->w2[i] = (0xd1b54a32d192ed03ull * (uint64_t)(i + 1)) & (i % 2 ? 0x3f : ~0ull);
	for (int i = 0; i < 5; i++) {
		f->bn[i] = i - 2.5;
		f->bn[5 + i] = 0.5 + i;
		f->bn[10 + i] = i % 2 ? -1.25 : 0;
		f->bn[15 + i] = 1e-3 * i;
	}
	layers[0] = (struct model_layer){.op = MODEL_OP_FLATTEN,
					 .src_count = 1,
					 .in = {MODEL_FMT_U8, 1, 4, 4},
					 .out = {MODEL_FMT_U8, 16, 1, 1}};
	layers[1] =
	    (struct model_layer){.op = MODEL_OP_BDENSE_U8,
				 .flags = MODEL_LF_THRESH,
				 .src_first = 1,
				 .src_count = 3,
				 .in = {MODEL_FMT_U8, 16, 1, 1},
				 .out = {MODEL_FMT_BITS, 70, 1, 1},
				 .blob = {f->w1, f->thr, f->flip},
				 .blob_size = {sizeof(f->w1), sizeof(f->thr), sizeof(f->flip)}};
	layers[2] = (struct model_layer){.op = MODEL_OP_BDENSE,
					 .src_first = 4,
					 .src_count = 1,
					 .in = {MODEL_FMT_BITS, 70, 1, 1},
					 .out = {MODEL_FMT_F64, 5, 1, 1},
					 .blob = {f->w2},
					 .blob_size = {sizeof(f->w2)}};
	layers[3] = (struct model_layer){.op = MODEL_OP_BATCHNORM,
					 .src_first = 4,
					 .src_count = 1,
					 .in = {MODEL_FMT_F64, 5, 1, 1},
					 .out = {MODEL_FMT_F64, 5, 1, 1},
					 .blob = {f->bn},
					 .blob_size = {sizeof(f->bn)}};
	layers[4] = (struct model_layer){.op = MODEL_OP_LRN,
					 .src_first = 5,
					 .src_count = 1,
					 .in = {MODEL_FMT_F64, 5, 1, 1},
					 .out = {MODEL_FMT_F64, 5, 1, 1},
					 .lrn_size = 3,
					 .lrn_alpha = 0.5,
					 .lrn_beta = 0.75,
					 .lrn_k = 2};
	*m = (struct model){.name = "hand-built",
			    .input = {MODEL_FMT_U8, 1, 4, 4},
			    .n_src = NA(src),
			    .n_layers = NA(layers),
			    .src = (struct model_src_layer *)src,
			    .layers = layers};
}

static int fx_setup(void **state)
{
	struct fx *f = calloc(1, sizeof(*f));
	void *buf;

	if (!f || test_tmpdir(f->dir, sizeof(f->dir)))
		return -1;
	snprintf(f->path, sizeof(f->path), "%s/m.snm", f->dir);
	fx_model(f);
	if (model_serialize(&f->m, &buf, &f->size))
		return -1;
	f->buf = aligned_alloc(64, (f->size + 63) / 64 * 64);
	if (!f->buf)
		return -1;
	memcpy(f->buf, buf, f->size);
	free(buf);
	memcpy(&f->h, f->buf, sizeof(f->h));
	*state = f;
	return 0;
}

static int fx_teardown(void **state)
{
	struct fx *f = *state;

	test_rmdir(f->dir);
	free(f->buf);
	free(f);
	return 0;
}

static void fix_crc(uint8_t *b, size_t size)
{
	uint32_t crc;

	memset(b + 24, 0, 4);
	crc = model_crc32c(0, b, size);
	memcpy(b + 24, &crc, 4);
}

static void write_file(const char *path, const void *b, size_t size)
{
	FILE *fp = fopen(path, "wb");

	assert_non_null(fp);
	assert_int_equal(fwrite(b, 1, size, fp), size);
	assert_int_equal(fclose(fp), 0);
}

static void test_model_round_trip(void **state)
{
	struct fx *f = *state;
	const struct model *w = &f->m;
	struct model *m;

	assert_int_equal(model_write(w, f->path, f->err, sizeof(f->err)), 0);
	m = model_load(f->path, f->err, sizeof(f->err));
	if (!m)
		fail_msg("%s", f->err);
	assert_string_equal(m->name, "hand-built");
	assert_memory_equal(&m->input, &w->input, sizeof(m->input));
	assert_int_equal(m->n_src, NA(src));
	assert_memory_equal(m->src, src, sizeof(src));
	assert_int_equal(m->n_layers, w->n_layers);
	assert_int_equal(m->map_size, f->size);
	for (uint32_t i = 0; i < m->n_layers; i++) {
		const struct model_layer *a = &m->layers[i], *b = &w->layers[i];

		assert_int_equal(a->op, b->op);
		assert_int_equal(a->flags, b->flags);
		assert_int_equal(a->src_first, b->src_first);
		assert_int_equal(a->src_count, b->src_count);
		assert_memory_equal(&a->in, &b->in, sizeof(a->in));
		assert_memory_equal(&a->out, &b->out, sizeof(a->out));
		assert_int_equal(a->kernel, b->kernel);
		assert_int_equal(a->stride, b->stride);
		assert_int_equal(a->pad, b->pad);
		assert_int_equal(a->lrn_size, b->lrn_size);
		assert_true(a->lrn_alpha == b->lrn_alpha && a->lrn_beta == b->lrn_beta &&
			    a->lrn_k == b->lrn_k);
		assert_null(a->wexp);
		for (int k = 0; k < MODEL_NBLOB; k++) {
			assert_int_equal(a->blob_size[k], b->blob_size[k]);
			if (!b->blob_size[k]) {
				assert_null(a->blob[k]);
				continue;
			}
			assert_int_equal((uintptr_t)a->blob[k] % 64, 0);
			assert_memory_equal(a->blob[k], b->blob[k], b->blob_size[k]);
			assert_int_equal(model_layer_blob_size(a, k), b->blob_size[k]);
		}
	}
	assert_int_equal(model_classes(m), 5);
	model_free(m);
	assert_int_equal(memcmp(f->buf, "SNICMDL", 8), 0);
	assert_int_equal(f->h.op_offset % 64, 0);
	assert_int_equal(f->h.file_size, f->size);
}

/* DENSE with MODEL_LF_BINW: packed signs expanded to +-1.0 at load. */
static void test_model_binw_expand(void **state)
{
	struct fx *f = *state;
	uint64_t w[2] = {0x5, 0x2};
	struct model_layer l = {.op = MODEL_OP_DENSE,
				.flags = MODEL_LF_BINW,
				.in = {MODEL_FMT_F64, 3, 1, 1},
				.out = {MODEL_FMT_F64, 2, 1, 1},
				.blob = {w},
				.blob_size = {sizeof(w)}};
	struct model_layer c = {
	    .op = MODEL_OP_CAST, .in = {MODEL_FMT_F32, 3, 1, 1}, .out = {MODEL_FMT_F64, 3, 1, 1}};
	struct model_layer ls[2] = {c, l};
	struct model_src_layer s = {MODEL_SRC_DENSE, MODEL_SF_BINW, 2, 1, 1, 0, 0, 0};
	struct model mm = {
	    .input = {MODEL_FMT_F32, 3, 1, 1}, .n_src = 1, .n_layers = 2, .src = &s, .layers = ls};
	struct model *m;
	static const double want[6] = {1, -1, 1, -1, 1, -1};

	assert_int_equal(model_write(&mm, f->path, f->err, sizeof(f->err)), 0);
	m = model_load(f->path, f->err, sizeof(f->err));
	if (!m)
		fail_msg("%s", f->err);
	assert_non_null(m->layers[1].wexp);
	assert_memory_equal(m->layers[1].wexp, want, sizeof(want));
	model_free(m);
}

/* Every truncation fails cleanly, with the header as written and with it patched to match. */
static void test_model_truncation(void **state)
{
	struct fx *f = *state;
	uint8_t *b = aligned_alloc(64, (f->size + 63) / 64 * 64);
	struct model *m;

	assert_non_null(b);
	for (size_t len = 0; len < f->size; len++) {
		write_file(f->path, f->buf, len);
		m = model_load(f->path, f->err, sizeof(f->err));
		if (m)
			fail_msg("truncated at %zu: loaded", len);
		assert_non_null(strstr(f->err, f->path));
		assert_true(strstr(f->err, "file_size") || strstr(f->err, "header"));
		if (len < MODEL_FILE_HEADER_SIZE)
			continue;
		memcpy(b, f->buf, len);
		memcpy(b + 16, &(uint64_t){len}, 8);
		fix_crc(b, len);
		m = model_from_buffer(b, len, "mem", f->err, sizeof(f->err));
		if (m)
			fail_msg("truncated at %zu (header patched): loaded", len);
	}
	free(b);
}

/* Every byte flipped: the loader never crashes (CRC fixed so the checks behind it run). */
static void test_model_byte_flips(void **state)
{
	struct fx *f = *state;
	uint8_t *b = aligned_alloc(64, (f->size + 63) / 64 * 64);
	unsigned int rejected = 0;

	assert_non_null(b);
	for (size_t i = 0; i < f->size; i++) {
		for (unsigned int x = 0; x < 2; x++) {
			struct model *m;

			memcpy(b, f->buf, f->size);
			b[i] ^= x ? 0xff : 0x01;
			if (i < 24 || i >= 28)
				fix_crc(b, f->size);
			m = model_from_buffer(b, f->size, "mem", f->err, sizeof(f->err));
			rejected += !m;
			model_free(m);
		}
	}
	assert_true(rejected > f->size / 2);
	free(b);
}

typedef void (*mutate_fn)(struct fx *f, uint8_t *b);

struct reject_case {
	const char *name;
	uint32_t field_off; /* set u32/u64 at this offset ... */
	int width;	    /* 4 or 8; 0: call fn */
	uint64_t value;
	mutate_fn fn;
	bool keep_crc;
	const char *want[2];
};

#define OP(i, field) ((uint32_t)(i)*MODEL_FILE_OP_SIZE + offsetof(struct model_file_op, field))
#define OPBASE	     0x80000000u /* field_off relative to the op table */
#define BLOB0	     offsetof(struct model_file_blob, offset)

static uint8_t *op_rec(struct fx *f, uint8_t *b, unsigned int i)
{
	return b + f->h.op_offset + (size_t)i * MODEL_FILE_OP_SIZE;
}

static struct model_file_blob *op_blob(struct fx *f, uint8_t *b, unsigned int i, unsigned int k)
{
	return (struct model_file_blob *)(op_rec(f, b, i) + offsetof(struct model_file_op, blob) +
					  k * sizeof(struct model_file_blob));
}

static void *blob_data(struct fx *f, uint8_t *b, unsigned int i, unsigned int k)
{
	return b + op_blob(f, b, i, k)->offset;
}

static void mut_magic(struct fx *f, uint8_t *b)
{
	b[3] = 'x';
}

static void mut_crc(struct fx *f, uint8_t *b)
{
	b[f->size - 1] ^= 0x40;
}

static void mut_name(struct fx *f, uint8_t *b)
{
	memset(b + offsetof(struct model_file_header, name), 'a', MODEL_NAME_MAX);
}

static void mut_src_type(struct fx *f, uint8_t *b)
{
	b[f->h.src_offset + 2 * MODEL_FILE_SRC_SIZE] = MODEL_SRC_SIGN3 + 1;
}

static void mut_src_flags(struct fx *f, uint8_t *b)
{
	b[f->h.src_offset + 3 * MODEL_FILE_SRC_SIZE + 4] = MODEL_SF_BIAS;
}

static void mut_flip(struct fx *f, uint8_t *b)
{
	((uint8_t *)blob_data(f, b, 1, 2))[3] = 2;
}

static void mut_sd_zero(struct fx *f, uint8_t *b)
{
	((double *)blob_data(f, b, 3, 0))[5 + 2] = 0;
}

static void mut_sd_nan(struct fx *f, uint8_t *b)
{
	((double *)blob_data(f, b, 3, 0))[5] = NAN;
}

static void mut_beta_inf(struct fx *f, uint8_t *b)
{
	((double *)blob_data(f, b, 3, 0))[19] = INFINITY;
}

static void mut_tail_bits(struct fx *f, uint8_t *b)
{
	((uint64_t *)blob_data(f, b, 2, 0))[3] |= 1ull << 10;
}

static void mut_tail_bits_u8(struct fx *f, uint8_t *b)
{
	((uint64_t *)blob_data(f, b, 1, 0))[69] |= 1ull << 16;
}

static void mut_blob_misaligned(struct fx *f, uint8_t *b)
{
	op_blob(f, b, 2, 0)->offset += 8;
}

static void mut_blob_beyond(struct fx *f, uint8_t *b)
{
	op_blob(f, b, 2, 0)->offset = (uint64_t)1 << 40;
}

static void mut_blob_overflow(struct fx *f, uint8_t *b)
{
	op_blob(f, b, 2, 0)->offset = UINT64_MAX - 63;
}

static void mut_blob_in_tables(struct fx *f, uint8_t *b)
{
	op_blob(f, b, 2, 0)->offset = f->h.op_offset;
}

static void mut_blob_size(struct fx *f, uint8_t *b)
{
	op_blob(f, b, 2, 0)->size = 72;
}

static void mut_blob_unused_size(struct fx *f, uint8_t *b)
{
	*op_blob(f, b, 3, 1) = (struct model_file_blob){op_blob(f, b, 3, 0)->offset, 8};
}

static void mut_blob_unused_off(struct fx *f, uint8_t *b)
{
	op_blob(f, b, 3, 2)->offset = 64;
}

static void mut_last_blob_short(struct fx *f, uint8_t *b)
{
	op_blob(f, b, 3, 0)->offset = (f->size - 64) & ~(uint64_t)63;
}

static const struct reject_case reject_cases[] = {
    {"magic", 0, 0, 0, mut_magic, false, {"magic", NULL}},
    {"version", 8, 4, 3, NULL, false, {"version 3", NULL}},
    {"header_size", 12, 4, 64, NULL, false, {"header_size 64", NULL}},
    {"file_size", 16, 8, 1u << 20, NULL, false, {"file_size 1048576", NULL}},
    {"crc", 0, 0, 0, mut_crc, true, {"crc32c", NULL}},
    {"flags", 28, 4, 1, NULL, false, {"flags 0x1", NULL}},
    {"n_src 0", 32, 4, 0, NULL, false, {"n_src 0", NULL}},
    {"n_src big", 32, 4, 5000, NULL, false, {"n_src 5000", NULL}},
    {"n_src beyond", 32, 4, 4000, NULL, false, {"src_offset", NULL}},
    {"n_ops 0", 36, 4, 0, NULL, false, {"n_ops 0", NULL}},
    {"n_ops beyond", 36, 4, 100, NULL, false, {"op_offset", NULL}},
    {"src_offset", 40, 8, 130, NULL, false, {"src_offset 130", NULL}},
    {"src_offset in header", 40, 8, 64, NULL, false, {"src_offset 64", NULL}},
    {"op_offset misaligned", 48, 8, 320 + 8, NULL, false, {"op_offset 328", NULL}},
    {"op_offset overlaps", 48, 8, 256, NULL, false, {"op_offset 256", NULL}},
    {"in_fmt", 56, 4, MODEL_FMT_F64, NULL, false, {"in_fmt 2", NULL}},
    {"in_c 0", 60, 4, 0, NULL, false, {"input shape (0,4,4)", NULL}},
    {"in_c", 60, 4, 2, NULL, false, {"op 0 (flatten)", "does not chain"}},
    {"in_h huge", 64, 4, 1u << 30, NULL, false, {"input shape", "elements"}},
    {"name", 0, 0, 0, mut_name, false, {"name not NUL-terminated", NULL}},
    {"src type", 0, 0, 0, mut_src_type, false, {"source layer 2: type 11", NULL}},
    {"src flags", 0, 0, 0, mut_src_flags, false, {"source layer 3: flags 0x1", NULL}},
    {"op code", OPBASE + OP(1, op), 2, 99, NULL, false, {"op 1 (unknown): op code 99", NULL}},
    {"op code 0", OPBASE + OP(0, op), 2, 0, NULL, false, {"op 0 (unknown): op code 0", NULL}},
    {"op flags",
     OPBASE + OP(2, flags),
     2,
     MODEL_LF_BIAS,
     NULL,
     false,
     {"op 2 (bdense): flags 0x1", NULL}},
    {"src range",
     OPBASE + OP(4, src_count),
     2,
     2,
     NULL,
     false,
     {"op 4 (lrn): src_first 5 + src_count 2", NULL}},
    {"chain",
     OPBASE + OP(2, in_c),
     4,
     71,
     NULL,
     false,
     {"op 2 (bdense): in bits (71,1,1) does not chain", NULL}},
    {"in fmt",
     OPBASE + OP(0, in_fmt),
     4,
     MODEL_FMT_F64,
     NULL,
     false,
     {"op 0 (flatten)", "does not chain"}},
    {"fmt for op",
     OPBASE + OP(3, in_fmt),
     4,
     MODEL_FMT_BITS,
     NULL,
     false,
     {"op 3 (batchnorm): in fmt bits invalid", NULL}},
    {"out shape",
     OPBASE + OP(3, out_c),
     4,
     6,
     NULL,
     false,
     {"op 3 (batchnorm): out f64 (6,1,1), expected f64 (5,1,1)", NULL}},
    {"out fmt",
     OPBASE + OP(1, out_fmt),
     4,
     MODEL_FMT_F64,
     NULL,
     false,
     {"op 1 (bdense_u8): out f64 (70,1,1), expected bits", NULL}},
    {"flatten out",
     OPBASE + OP(0, out_c),
     4,
     15,
     NULL,
     false,
     {"op 0 (flatten): out u8 (15,1,1), expected u8 (16,1,1)", NULL}},
    {"dense out h", OPBASE + OP(2, out_h), 4, 2, NULL, false, {"op 2 (bdense): out", NULL}},
    {"zero dim",
     OPBASE + OP(4, out_w),
     4,
     0,
     NULL,
     false,
     {"op 4 (lrn): out shape (5,1,0) has a zero dimension", NULL}},
    {"kernel unused",
     OPBASE + OP(2, kernel),
     4,
     3,
     NULL,
     false,
     {"op 2 (bdense): kernel 3 stride 0 pad 0 must be 0", NULL}},
    {"lrn even",
     OPBASE + OP(4, lrn_size),
     4,
     4,
     NULL,
     false,
     {"op 4 (lrn): lrn_size 4 must be odd", NULL}},
    {"lrn unused",
     OPBASE + OP(3, lrn_size),
     4,
     3,
     NULL,
     false,
     {"op 3 (batchnorm): lrn_size", NULL}},
    {"lrn alpha",
     OPBASE + OP(4, lrn_alpha),
     8,
     0x7ff8000000000000ull,
     NULL,
     false,
     {"op 4 (lrn): lrn alpha nan", NULL}},
    {"blob size",
     0,
     0,
     0,
     mut_blob_size,
     false,
     {"op 2 (bdense): blob0 size 72, expected 80", NULL}},
    {"blob misaligned",
     0,
     0,
     0,
     mut_blob_misaligned,
     false,
     {"op 2 (bdense): blob0 offset", "not 64-aligned"}},
    {"blob beyond",
     0,
     0,
     0,
     mut_blob_beyond,
     false,
     {"op 2 (bdense): blob0 [1099511627776", "outside"}},
    {"blob overflow", 0, 0, 0, mut_blob_overflow, false, {"op 2 (bdense): blob0", "outside"}},
    {"blob in tables", 0, 0, 0, mut_blob_in_tables, false, {"op 2 (bdense): blob0", "outside"}},
    {"blob past end", 0, 0, 0, mut_last_blob_short, false, {"op 3 (batchnorm): blob0", "outside"}},
    {"unused blob size",
     0,
     0,
     0,
     mut_blob_unused_size,
     false,
     {"op 3 (batchnorm): blob1 size 8, expected 0", NULL}},
    {"unused blob offset",
     0,
     0,
     0,
     mut_blob_unused_off,
     false,
     {"op 3 (batchnorm): blob2 offset 64 for an unused blob", NULL}},
    {"flip", 0, 0, 0, mut_flip, false, {"op 1 (bdense_u8): blob2 flip[3] = 2", NULL}},
    {"sd zero", 0, 0, 0, mut_sd_zero, false, {"op 3 (batchnorm): blob0[7] = 0", "> 0"}},
    {"sd nan", 0, 0, 0, mut_sd_nan, false, {"op 3 (batchnorm): blob0[5] = nan", NULL}},
    {"beta inf", 0, 0, 0, mut_beta_inf, false, {"op 3 (batchnorm): blob0[19] = inf", NULL}},
    {"tail bits",
     0,
     0,
     0,
     mut_tail_bits,
     false,
     {"op 2 (bdense): blob0 row 1 has tail bits", NULL}},
    {"tail bits u8",
     0,
     0,
     0,
     mut_tail_bits_u8,
     false,
     {"op 1 (bdense_u8): blob0 row 69 has tail bits", NULL}},
};

static void test_model_rejects(void **state)
{
	struct fx *f = *state;
	uint8_t *b = malloc(f->size);

	assert_non_null(b);
	for (size_t i = 0; i < NA(reject_cases); i++) {
		const struct reject_case *c = &reject_cases[i];
		struct model *m;

		memcpy(b, f->buf, f->size);
		if (c->fn) {
			c->fn(f, b);
		} else {
			uint64_t off = c->field_off & OPBASE
					   ? f->h.op_offset + (c->field_off & ~OPBASE)
					   : c->field_off;

			memcpy(b + off, &c->value, (size_t)c->width);
		}
		if (!c->keep_crc)
			fix_crc(b, f->size);
		write_file(f->path, b, f->size);
		m = model_load(f->path, f->err, sizeof(f->err));
		if (m) {
			model_free(m);
			fail_msg("case %s: loaded", c->name);
		}
		if (strncmp(f->err, f->path, strlen(f->path)))
			fail_msg("case %s: message \"%s\" does not start with the file", c->name,
				 f->err);
		for (size_t k = 0; k < NA(c->want); k++)
			if (c->want[k] && !strstr(f->err, c->want[k]))
				fail_msg("case %s: message \"%s\" lacks \"%s\"", c->name, f->err,
					 c->want[k]);
	}
	free(b);
}

static void test_model_not_a_file(void **state)
{
	struct fx *f = *state;

	assert_null(model_load(f->dir, f->err, sizeof(f->err)));
	assert_non_null(strstr(f->err, "not a regular file"));
	snprintf(f->path, sizeof(f->path), "%s/missing.snm", f->dir);
	assert_null(model_load(f->path, f->err, sizeof(f->err)));
	assert_non_null(strstr(f->err, "missing.snm: open"));
}

static void test_model_names(void **state)
{
	struct model_shape s = {MODEL_FMT_BITS, 70, 3, 2};

	assert_string_equal(model_op_name(MODEL_OP_BDENSE_U8), "bdense_u8");
	assert_string_equal(model_op_name(MODEL_OP__COUNT), "unknown");
	assert_string_equal(model_op_name(0), "unknown");
	assert_string_equal(model_fmt_name(MODEL_FMT_F64), "f64");
	assert_string_equal(model_fmt_name(7), "unknown");
	assert_string_equal(model_src_type_name(MODEL_SRC_LRN), "lrn");
	assert_string_equal(model_src_type_name(MODEL_SRC_SIGN3 + 1), "unknown");
	assert_int_equal(model_shape_elems(&s), 420);
	assert_int_equal(model_shape_bytes(&s), 6 * 2 * 8);
	s.fmt = MODEL_FMT_F32;
	assert_int_equal(model_shape_bytes(&s), 420 * 4);
	assert_int_equal(model_crc32c(0, "123456789", 9), 0xE3069283u);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
	    cmocka_unit_test_setup_teardown(test_model_round_trip, fx_setup, fx_teardown),
	    cmocka_unit_test_setup_teardown(test_model_binw_expand, fx_setup, fx_teardown),
	    cmocka_unit_test_setup_teardown(test_model_truncation, fx_setup, fx_teardown),
	    cmocka_unit_test_setup_teardown(test_model_byte_flips, fx_setup, fx_teardown),
	    cmocka_unit_test_setup_teardown(test_model_rejects, fx_setup, fx_teardown),
	    cmocka_unit_test_setup_teardown(test_model_not_a_file, fx_setup, fx_teardown),
	    cmocka_unit_test(test_model_names),
	};

	return cmocka_run_group_tests(tests, NULL, NULL);
}
