/* SPDX-License-Identifier: MIT */
/*
 * tests/support/isa_table.h — one test per kernel table: ISA_TESTS(test_x) makes test_x/ref,
 * test_x/avx2 and test_x/avx512, and isa_ops(name) hands test_x the table it checks (NULL for
 * the others); a table this CPU cannot run is a skipped test with its reason, never a passed
 * one, and a test that never asked for its table fails. Include after cmocka.h.
 */
#ifndef TEST_ISA_TABLE_H
#define TEST_ISA_TABLE_H

#include <stdbool.h>
#include <string.h>

#include "kernels/kern_ops.h"

static const char *const isa_names[] __attribute__((unused)) = {"ref", "avx2", "avx512"};

static const char *only_isa;
static bool isa_ran; /* this test's table was handed out at least once, or is missing */

static __attribute__((unused)) int isa_ref(void **state)
{
	(void)state;
	only_isa = "ref", isa_ran = false;
	return 0;
}

static __attribute__((unused)) int isa_avx2(void **state)
{
	(void)state;
	only_isa = "avx2", isa_ran = false;
	return 0;
}

static __attribute__((unused)) int isa_avx512(void **state)
{
	(void)state;
	only_isa = "avx512", isa_ran = false;
	return 0;
}

/* A test of one table that never ran it checked nothing: that is a failure. */
static __attribute__((unused)) int isa_done(void **state)
{
	(void)state;
	if (!isa_ran)
		print_error("the %s table was never run by this test\n", only_isa);
	only_isa = NULL;
	return isa_ran ? 0 : -1;
}

#define ISA_TESTS(f)                                                                               \
	{#f "/ref", f, isa_ref, isa_done, NULL}, {#f "/avx2", f, isa_avx2, isa_done, NULL},        \
	{                                                                                          \
#f "/avx512", f, isa_avx512, isa_done, NULL                                        \
	}

/* The table `name` if it is this test's, else NULL; this test's table missing: skip. */
static __attribute__((unused)) const struct kern_bin_ops *isa_ops(const char *name)
{
	const struct kern_bin_ops *ops;

	if (!only_isa || strcmp(name, only_isa))
		return NULL;
	ops = kern_ops_by_name(name);
	if (!ops) {
		print_message("skip: the %s kernels were not run: this CPU lacks %s\n", name,
			      kern_ops_missing(name));
		isa_ran = true;
		skip();
	}
	isa_ran = true;
	return ops;
}

#endif /* TEST_ISA_TABLE_H */
