// SPDX-License-Identifier: MIT
/*
 * protocol/reasm: fragmentation + reassembly from 1 byte to 4 MiB in order, reversed, shuffled
 * and duplicated; loss and timeouts; overlaps; inconsistent fragments; a full table; limits.
 */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include <cmocka.h>

#include "protocol/reasm.h"

#define MAX_MSG	  (4u << 20)
#define PAYLOAD	  1400u
#define MAX_FRAGS (MAX_MSG / 1336 + 2)

static uint8_t *body;
static uint8_t *dgrams; /* MAX_FRAGS datagrams of PAYLOAD bytes */
static int *dlen;
static uint32_t *order;

static uint32_t rng = 12345;

static uint32_t rnd(void)
{
	rng = rng * 1103515245u + 12345u;
	return rng >> 8;
}

static int setup(void **state)
{
	body = malloc(MAX_MSG);
	dgrams = malloc((size_t)MAX_FRAGS * PAYLOAD);
	dlen = malloc(MAX_FRAGS * sizeof(*dlen));
	order = malloc(2 * MAX_FRAGS * sizeof(*order));
	return body && dgrams && dlen && order ? 0 : -1;
}

static int teardown(void **state)
{
	free(body);
	free(dgrams);
	free(dlen);
	free(order);
	return 0;
}

/* Fragment a u8 tensor of n bytes (n,1,1) with request id rid; returns the fragment count. */
static uint32_t make_frags(uint32_t n, uint64_t rid, uint32_t model)
{
	struct proto_msg m;
	struct proto_frag f;
	uint32_t k = 0;
	int len;

	for (uint32_t i = 0; i < n; i++)
		body[i] = (uint8_t)(rnd() ^ i);
	proto_msg_init(&m, PROTO_REQUEST, model, rid);
	proto_msg_set_tensor(&m, PROTO_FMT_U8, n, 1, 1, 0, 0);
	assert_int_equal(proto_frag_init(&f, &m, body, n, PAYLOAD), 0);
	while ((len = proto_frag_next(&f, dgrams + (size_t)k * PAYLOAD, PAYLOAD)) > 0)
		dlen[k++] = len;
	assert_int_equal(len, 0);
	assert_int_equal(k, proto_frag_count(PROTO_REQUEST_HDR_LEN, n, PAYLOAD));
	return k;
}

static enum proto_ra_verdict push(struct proto_reasm *ra, uint64_t src, uint32_t k, uint64_t now,
				  struct proto_reasm_msg *out)
{
	struct proto_msg m;

	assert_int_equal(proto_parse(dgrams + (size_t)k * PAYLOAD, (size_t)dlen[k], &m), PROTO_OK);
	return proto_reasm_push(ra, src, &m, now, out);
}

enum { IN_ORDER, REVERSED, SHUFFLED, DUPLICATED };

static void shuffle(uint32_t *a, uint32_t n)
{
	for (uint32_t i = n; i > 1; i--) {
		uint32_t j = rnd() % i, t = a[i - 1];

		a[i - 1] = a[j];
		a[j] = t;
	}
}

static void reassemble(struct proto_reasm *ra, uint32_t n, int how)
{
	struct proto_reasm_msg out;
	struct proto_reasm_stats st;
	uint32_t nf = make_frags(n, 1000 + n, 7), no = nf, done = 0;
	enum proto_ra_verdict v;

	for (uint32_t i = 0; i < nf; i++)
		order[i] = how == REVERSED ? nf - 1 - i : i;
	if (how == DUPLICATED) {
		for (uint32_t i = 0; i < nf; i++)
			order[nf + i] = i;
		no = 2 * nf;
	}
	if (how == SHUFFLED || how == DUPLICATED)
		shuffle(order, no);
	for (uint32_t i = 0; i < no; i++) {
		v = push(ra, 1, order[i], 1, &out);
		if (v == PROTO_RA_COMPLETE) {
			assert_int_equal(done, 0);
			assert_int_equal(out.len, n);
			assert_int_equal(out.hdr.total_len, n);
			assert_int_equal(out.hdr.tensor.c, n);
			assert_true(out.hdr.request_id == 1000 + n);
			assert_memory_equal(out.data, body, n);
			done = 1;
			/* later duplicates of a held message are recognised as such */
			if (nf > 1)
				assert_int_equal(push(ra, 1, 0, 1, &out), PROTO_RA_DUPLICATE);
			proto_reasm_release(ra, &out);
			if (how == DUPLICATED)
				break;
		} else if (done || how != DUPLICATED) {
			assert_int_equal(v, PROTO_RA_PARTIAL);
		} else {
			assert_true(v == PROTO_RA_PARTIAL || v == PROTO_RA_DUPLICATE);
		}
	}
	assert_int_equal(done, 1);
	proto_reasm_stats(ra, &st);
	assert_int_equal(st.in_use, 0);
}

static void test_reasm_sizes_and_orders(void **state)
{
	static const uint32_t sizes[] = {
	    1,	    2,	  7,	8,    9,     100,    783,      1335,
	    1336,   1337, 2672, 2673, 65536, 100003, 1u << 20, (3u << 20) + 5,
	    MAX_MSG};
	struct proto_reasm_config cfg = {.slots = 2, .max_msg = MAX_MSG, .timeout_ns = 1000000000};
	struct proto_reasm *ra = proto_reasm_create(&cfg);

	assert_non_null(ra);
	for (size_t s = 0; s < sizeof(sizes) / sizeof(sizes[0]); s++)
		for (int how = IN_ORDER; how <= DUPLICATED; how++)
			reassemble(ra, sizes[s], how);
	proto_reasm_destroy(ra);
}

static void test_reasm_single_datagram_takes_no_slot(void **state)
{
	struct proto_reasm_config cfg = {.slots = 1, .max_msg = 4096, .timeout_ns = 1000};
	struct proto_reasm *ra = proto_reasm_create(&cfg);
	struct proto_reasm_msg out;
	struct proto_reasm_stats st;

	make_frags(784, 1, 1);
	assert_int_equal(push(ra, 1, 0, 0, &out), PROTO_RA_COMPLETE);
	assert_int_equal(out.slot, -1);
	assert_ptr_equal(out.data, dgrams + PROTO_REQUEST_HDR_LEN);
	proto_reasm_stats(ra, &st);
	assert_int_equal(st.in_use, 0);
	proto_reasm_destroy(ra);
}

static void test_reasm_loss_timeout_frees_slot(void **state)
{
	struct proto_reasm_config cfg = {.slots = 1, .max_msg = 8192, .timeout_ns = 1000};
	struct proto_reasm *ra = proto_reasm_create(&cfg);
	struct proto_reasm_msg out;
	struct proto_reasm_stats st;
	uint32_t nf = make_frags(5000, 9, 1);
	struct proto_msg m;

	assert_int_equal(nf, 4);
	assert_int_equal(proto_parse(dgrams, (size_t)dlen[0], &m), PROTO_OK);
	assert_false(proto_reasm_holds(ra, 1, &m));
	for (uint32_t i = 0; i < nf - 1; i++) /* the last fragment is lost */
		assert_int_equal(push(ra, 1, i, 100, &out), PROTO_RA_PARTIAL);
	proto_reasm_stats(ra, &st);
	assert_int_equal(st.in_use, 1);
	assert_true(proto_reasm_holds(ra, 1, &m)); /* by (source, type, request id) */
	assert_false(proto_reasm_holds(ra, 2, &m));
	/* the only slot is busy: another request cannot start */
	make_frags(5000, 10, 1);
	assert_int_equal(push(ra, 1, 0, 500, &out), PROTO_RA_TABLE_FULL);
	assert_int_equal(proto_parse(dgrams, (size_t)dlen[0], &m), PROTO_OK);
	assert_false(proto_reasm_holds(ra, 1, &m));
	assert_int_equal(proto_reasm_expire(ra, 1099), 0);
	assert_int_equal(proto_reasm_expire(ra, 1100), 1);
	proto_reasm_stats(ra, &st);
	assert_int_equal(st.in_use, 0);
	assert_int_equal(st.expired, 1);
	/* the slot is reusable: the other request now completes */
	for (uint32_t i = 0; i < nf; i++)
		assert_int_equal(push(ra, 1, i, 1200, &out),
				 i + 1 < nf ? PROTO_RA_PARTIAL : PROTO_RA_COMPLETE);
	assert_memory_equal(out.data, body, 5000);
	proto_reasm_release(ra, &out);
	/* push expires by itself too: a stale partial does not block a new request */
	assert_int_equal(push(ra, 1, 0, 2000, &out), PROTO_RA_PARTIAL);
	make_frags(5000, 11, 1);
	assert_int_equal(push(ra, 1, 0, 3000, &out), PROTO_RA_PARTIAL);
	proto_reasm_stats(ra, &st);
	assert_int_equal(st.expired, 2);
	proto_reasm_destroy(ra);
}

/* Build one fragment [off, off+len) of a 100-byte request, content from `src`. */
static void frag_of(struct proto_msg *m, uint8_t *dg, const uint8_t *src, uint32_t off,
		    uint32_t len)
{
	proto_msg_init(m, PROTO_REQUEST, 3, 77);
	proto_msg_set_tensor(m, PROTO_FMT_U8, 1, 10, 10, 0, 0);
	m->total_len = 100;
	m->frag_off = off;
	m->frag_len = (uint16_t)len;
	assert_int_equal(proto_hdr_write(m, dg, dg + 256), 64);
	memcpy(dg + 64, src + off, len);
	assert_int_equal(proto_parse(dg, 64 + len, m), PROTO_OK);
}

static void test_reasm_overlaps(void **state)
{
	struct proto_reasm_config cfg = {.slots = 2, .max_msg = 4096, .timeout_ns = 1000};
	struct proto_reasm *ra = proto_reasm_create(&cfg);
	struct proto_reasm_msg out;
	uint8_t good[100], bad[100], dg[256];
	struct proto_msg m;

	for (int i = 0; i < 100; i++)
		good[i] = bad[i] = (uint8_t)i;
	bad[44] ^= 1;
	frag_of(&m, dg, good, 0, 48);
	assert_int_equal(proto_reasm_push(ra, 1, &m, 0, &out), PROTO_RA_PARTIAL);
	/* overlapping [32, 80) with equal bytes adds [48, 80) */
	frag_of(&m, dg, good, 32, 48);
	assert_int_equal(proto_reasm_push(ra, 1, &m, 0, &out), PROTO_RA_PARTIAL);
	/* overlapping with different bytes in the held part is rejected, nothing is written */
	frag_of(&m, dg, bad, 40, 60);
	assert_int_equal(proto_reasm_push(ra, 1, &m, 0, &out), PROTO_RA_OVERLAP);
	/* contained in what is held: a duplicate, or an overlap if it differs */
	frag_of(&m, dg, good, 8, 16);
	assert_int_equal(proto_reasm_push(ra, 1, &m, 0, &out), PROTO_RA_DUPLICATE);
	frag_of(&m, dg, bad, 40, 8);
	assert_int_equal(proto_reasm_push(ra, 1, &m, 0, &out), PROTO_RA_OVERLAP);
	frag_of(&m, dg, good, 72, 28);
	assert_int_equal(proto_reasm_push(ra, 1, &m, 0, &out), PROTO_RA_COMPLETE);
	assert_memory_equal(out.data, good, 100);
	proto_reasm_release(ra, &out);
	proto_reasm_destroy(ra);
}

static void test_reasm_inconsistent(void **state)
{
	struct proto_reasm_config cfg = {.slots = 4, .max_msg = 4096, .timeout_ns = 1000};
	struct proto_reasm *ra = proto_reasm_create(&cfg);
	struct proto_reasm_msg out;
	struct proto_reasm_stats st;
	uint8_t data[200] = {0}, dg[512];
	struct proto_msg m, bad;

	frag_of(&m, dg, data, 0, 48);
	assert_int_equal(proto_reasm_push(ra, 1, &m, 0, &out), PROTO_RA_PARTIAL);
	/* same key, another model / total length / shape / format */
	frag_of(&bad, dg, data, 48, 48);
	bad.model_id = 4;
	assert_int_equal(proto_reasm_push(ra, 1, &bad, 0, &out), PROTO_RA_INCONSISTENT);
	frag_of(&bad, dg, data, 48, 48);
	bad.tensor.c = 2, bad.tensor.w = 5;
	assert_int_equal(proto_reasm_push(ra, 1, &bad, 0, &out), PROTO_RA_INCONSISTENT);
	frag_of(&bad, dg, data, 48, 48);
	bad.total_len = 200, bad.tensor.c = 2;
	assert_int_equal(proto_reasm_push(ra, 1, &bad, 0, &out), PROTO_RA_INCONSISTENT);
	frag_of(&bad, dg, data, 48, 48);
	bad.tensor.fmt = PROTO_FMT_INT8, bad.tensor.scale_bits = proto_f32_bits(1.0f);
	assert_int_equal(proto_reasm_push(ra, 1, &bad, 0, &out), PROTO_RA_INCONSISTENT);
	/* another sender or another type with the same request id is another message */
	frag_of(&bad, dg, data, 48, 48);
	assert_int_equal(proto_reasm_push(ra, 2, &bad, 0, &out), PROTO_RA_PARTIAL);
	frag_of(&m, dg, data, 48, 52);
	assert_int_equal(proto_reasm_push(ra, 1, &m, 0, &out), PROTO_RA_COMPLETE);
	proto_reasm_release(ra, &out);
	proto_reasm_stats(ra, &st);
	assert_int_equal(st.verdicts[PROTO_RA_INCONSISTENT], 4);
	assert_int_equal(st.in_use, 1);
	proto_reasm_destroy(ra);
}

static void test_reasm_full_table_and_limits(void **state)
{
	struct proto_reasm_config cfg = {.slots = 4, .max_msg = 3000, .timeout_ns = 50};
	struct proto_reasm *ra = proto_reasm_create(&cfg);
	struct proto_reasm_msg out, held[4];
	struct proto_reasm_stats st;
	uint32_t nf;

	for (uint64_t r = 0; r < 4; r++) {
		make_frags(2000, r, 1);
		assert_int_equal(push(ra, 5, 0, 10, &out), PROTO_RA_PARTIAL);
	}
	make_frags(2000, 4, 1);
	assert_int_equal(push(ra, 5, 0, 10, &out), PROTO_RA_TABLE_FULL);
	/* completing one frees nothing until it is released, and completed slots never expire */
	make_frags(2000, 0, 1);
	assert_int_equal(push(ra, 5, 1, 20, &held[0]), PROTO_RA_COMPLETE);
	make_frags(2000, 4, 1);
	assert_int_equal(push(ra, 5, 0, 20, &out), PROTO_RA_TABLE_FULL);
	assert_int_equal(proto_reasm_expire(ra, 1000), 3);
	proto_reasm_stats(ra, &st);
	assert_int_equal(st.in_use, 1);
	proto_reasm_release(ra, &held[0]);
	proto_reasm_release(ra, &held[0]); /* a second release is harmless */
	proto_reasm_stats(ra, &st);
	assert_int_equal(st.in_use, 0);
	/* a message over max_msg is refused before it takes a slot */
	nf = make_frags(3001, 6, 1);
	assert_int_equal(nf, 3);
	assert_int_equal(push(ra, 5, 0, 2000, &out), PROTO_RA_TOO_LARGE);
	proto_reasm_stats(ra, &st);
	assert_int_equal(st.in_use, 0);
	assert_int_equal(st.verdicts[PROTO_RA_TABLE_FULL], 2);
	assert_int_equal(st.verdicts[PROTO_RA_TOO_LARGE], 1);
	assert_string_equal(proto_ra_verdict_name(PROTO_RA_TABLE_FULL), "table_full");
	proto_reasm_destroy(ra);

	cfg.slots = 0;
	assert_null(proto_reasm_create(&cfg));
	cfg.slots = 1, cfg.max_msg = PROTO_MAX_TOTAL + 1;
	assert_null(proto_reasm_create(&cfg));
}

static void test_reasm_response_fragmented(void **state)
{
	struct proto_reasm_config cfg = {.slots = 1, .max_msg = 16384, .timeout_ns = 1000};
	struct proto_reasm *ra = proto_reasm_create(&cfg);
	struct proto_reasm_msg out;
	struct proto_msg m, p;
	struct proto_frag f;
	uint8_t dg[PAYLOAD];
	int n, k = 0;

	proto_msg_init(&m, PROTO_RESPONSE, 1, 42);
	m.resp.num_classes = 1000, m.resp.cls = 999, m.resp.score_fmt = PROTO_FMT_F64;
	for (int i = 0; i < 1000; i++)
		proto_le_put_f64(body + 8 * i, i * 0.001);
	assert_int_equal(proto_frag_init(&f, &m, body, 8000, PAYLOAD), 0);
	while ((n = proto_frag_next(&f, dg, sizeof(dg))) > 0) {
		assert_true(n <= (int)PAYLOAD);
		assert_int_equal(proto_parse(dg, (size_t)n, &p), PROTO_OK);
		k++;
		if (proto_reasm_push(ra, 0, &p, 0, &out) == PROTO_RA_COMPLETE)
			break;
	}
	assert_int_equal(k, 7); /* (1400 - 80) & ~7 = 1320 per fragment */
	assert_int_equal(out.hdr.resp.cls, 999);
	assert_int_equal(out.len, 8000);
	for (int i = 0; i < 1000; i++)
		assert_true(proto_le_get_f64(out.data + 8 * i) == i * 0.001);
	proto_reasm_release(ra, &out);
	proto_reasm_destroy(ra);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
	    cmocka_unit_test(test_reasm_sizes_and_orders),
	    cmocka_unit_test(test_reasm_single_datagram_takes_no_slot),
	    cmocka_unit_test(test_reasm_loss_timeout_frees_slot),
	    cmocka_unit_test(test_reasm_overlaps),
	    cmocka_unit_test(test_reasm_inconsistent),
	    cmocka_unit_test(test_reasm_full_table_and_limits),
	    cmocka_unit_test(test_reasm_response_fragmented),
	};

	return cmocka_run_group_tests(tests, setup, teardown);
}
