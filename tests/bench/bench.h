/* SPDX-License-Identifier: MIT */
/*
 * tests/bench/bench.h — how benchmarks report: bench_record() prints one line (name, value,
 * unit, method) and appends {"name","value","unit","method"} as one JSON line to the file named
 * by BENCH_JSONL (default build/bench.jsonl). Each bench binary is one .c file; this header is
 * its whole support library.
 */
#ifndef BENCH_H
#define BENCH_H

#include <stdio.h>
#include <stdlib.h>

static inline void bench_json_string(FILE *f, const char *s)
{
	fputc('"', f);
	for (; *s; s++) {
		if (*s == '"' || *s == '\\')
			fprintf(f, "\\%c", *s);
		else if ((unsigned char)*s < 0x20)
			fprintf(f, "\\u%04x", (unsigned char)*s);
		else
			fputc(*s, f);
	}
	fputc('"', f);
}

static inline void bench_record(const char *name, double value, const char *unit,
				const char *method)
{
	const char *path = getenv("BENCH_JSONL");
	FILE *f;

	printf("%-44s %12.3f %-10s %s\n", name, value, unit, method);
	fflush(stdout);
	f = fopen(path && *path ? path : "build/bench.jsonl", "a");
	if (!f) {
		perror("bench: BENCH_JSONL");
		return;
	}
	fputs("{\"name\":", f);
	bench_json_string(f, name);
	fprintf(f, ",\"value\":%.6g,\"unit\":", value);
	bench_json_string(f, unit);
	fputs(",\"method\":", f);
	bench_json_string(f, method);
	fputs("}\n", f);
	fclose(f);
}

#endif /* BENCH_H */
