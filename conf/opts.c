// SPDX-License-Identifier: MIT
/* Option tables -> getopt_long, defaults, typed values and --help (see conf/opts.h). */
#include <arpa/inet.h>
#include <assert.h>
#include <ctype.h>
#include <errno.h>
#include <getopt.h>
#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "conf/opts.h"
#include "protocol/frame.h"
#include "protocol/trust.h"
#include "protocol/proto.h"

/* getopt's value of row i (its short_name when it has one) */
#define ROW_VAL(i) (256 + (int)(i))

int conf_int(const char *who, const char *what, const char *s, int64_t lo, int64_t hi, int64_t *out)
{
	const char *p = s + (*s == '-');
	const bool hex = p[0] == '0' && (p[1] == 'x' || p[1] == 'X');
	const bool digit = hex ? isxdigit((unsigned char)p[2]) : isdigit((unsigned char)p[0]);
	char *end = NULL;
	long long v = 0;

	errno = 0;
	if (digit)
		v = strtoll(s, &end, hex ? 16 : 10);
	if (!digit || errno || *end || v < lo || v > hi) {
		if (what)
			fprintf(stderr, "%s: %s: an integer in %lld..%lld, got '%s'\n", who, what,
				(long long)lo, (long long)hi, s);
		return -EINVAL;
	}
	*out = v;
	return 0;
}

int conf_double(const char *who, const char *what, const char *s, double lo, double hi, bool above,
		const char *unit, double *out)
{
	char *end;
	double v;

	errno = 0;
	v = strtod(s, &end);
	if (end != s && !*end && !errno && isfinite(v) && (above ? v > lo : v >= lo) && v <= hi &&
	    !isspace((unsigned char)*s)) {
		*out = v;
		return 0;
	}
	if (!what)
		return -EINVAL;
	fprintf(stderr, "%s: %s: %s ", who, what, unit ? unit : "a number");
	if (!above)
		fprintf(stderr, "in %g..%g", lo, hi);
	else if (isinf(hi))
		fprintf(stderr, "> %g", lo);
	else
		fprintf(stderr, "> %g and at most %g", lo, hi);
	fprintf(stderr, ", got '%s'\n", s);
	return -EINVAL;
}

uint32_t conf_model_id(const char *s)
{
	int64_t v;

	return conf_int(NULL, NULL, s, 0, UINT32_MAX, &v) ? proto_model_id(s) : (uint32_t)v;
}

/* The index of arg among the '|'-separated words of choices, or -1. */
static int choice_index(const char *choices, const char *arg)
{
	size_t n = strlen(arg);
	int k = 0;

	for (const char *w = choices; w; w = strchr(w, '|'), w = w ? w + 1 : NULL, k++)
		if (!strncmp(w, arg, n) && (w[n] == '|' || !w[n]))
			return k;
	return -1;
}

/* "a|b|c" as "a, b or c" */
static void choice_list(FILE *f, const char *choices)
{
	const char *last = strrchr(choices, '|');

	for (const char *w = choices; *w; w++)
		if (*w != '|')
			fputc(*w, f);
		else
			fputs(w == last ? " or " : ", ", f);
}

/* v into the integer field of size bytes at dst (the row was checked to hold its range) */
static void store_int(void *dst, size_t size, int64_t v)
{
	switch (size) {
	case 1:
		*(uint8_t *)dst = (uint8_t)v;
		break;
	case 2:
		*(uint16_t *)dst = (uint16_t)v;
		break;
	case 4:
		*(uint32_t *)dst = (uint32_t)v;
		break;
	default:
		*(uint64_t *)dst = (uint64_t)v;
		break;
	}
}

static int bad_value(const struct conf_cmd *c, const struct conf_opt *r, const char *takes,
		     const char *arg)
{
	fprintf(stderr, "%s: --%s: %s, got '%s'\n", c->prog, r->name, takes, arg);
	return -1;
}

static int set_value(const struct conf_cmd *c, const struct conf_opt *r, const char *arg, void *o)
{
	char *dst = (char *)o + r->off, what[64], takes[48];
	uint32_t *count = r->max ? (uint32_t *)(void *)((char *)o + r->count_off) : NULL;
	const int64_t scale = r->scale ? r->scale : 1;
	struct in_addr a;
	int64_t v;
	int k;

	if (count) {
		if (*count == r->max) {
			snprintf(takes, sizeof(takes), "given more than %u times", r->max);
			return bad_value(c, r, takes, arg);
		}
		dst += (size_t)*count * r->size;
	}
	snprintf(what, sizeof(what), "--%s", r->name);
	switch (r->type) {
	case CONF_FLAG:
		*(bool *)dst = true;
		return 0;
	case CONF_STR:
		if (r->hi > 0 && (!*arg || strlen(arg) > (size_t)r->hi)) {
			snprintf(takes, sizeof(takes), "1 to %lld characters", (long long)r->hi);
			return bad_value(c, r, takes, arg);
		}
		*(const char **)dst = arg;
		break;
	case CONF_INT:
		if (conf_int(c->prog, what, arg, r->lo, r->hi, &v))
			return -1;
		if (r->size)
			store_int(dst, r->size, v * scale);
		else
			*(const char **)dst = arg;
		break;
	case CONF_DOUBLE:
		if (conf_double(c->prog, what, arg, r->dlo, r->dhi, r->above, r->unit,
				(double *)(void *)dst))
			return -1;
		break;
	case CONF_CHOICE:
		k = choice_index(r->arg, arg);
		if (k < 0) {
			fprintf(stderr, "%s: --%s: ", c->prog, r->name);
			choice_list(stderr, r->arg);
			fprintf(stderr, ", got '%s'\n", arg);
			return -1;
		}
		if (r->size)
			store_int(dst, r->size, k);
		else
			*(const char **)dst = arg;
		break;
	case CONF_IPV4:
		if (inet_pton(AF_INET, arg, &a) != 1)
			return bad_value(c, r, "an IPv4 address", arg);
		*(uint32_t *)(void *)dst = ntohl(a.s_addr);
		break;
	case CONF_CIDR:
		if (proto_cidr_parse(arg, (struct proto_cidr *)(void *)dst))
			return bad_value(c, r, "A.B.C.D[/N]", arg);
		break;
	default:
		return c->on_opt(o, r, arg);
	}
	if (count)
		(*count)++;
	return 0;
}

/* A programmer's error in a row: a field that cannot hold the row's values. */
static void check_row(const struct conf_opt *r)
{
	const int64_t scale = r->scale ? r->scale : 1;
	int64_t hi = r->hi;

	assert(r->max == 0 || (r->type != CONF_CALL && r->type != CONF_FLAG && r->size));
	assert(r->type != CONF_FLAG || !r->arg);
	if (r->type == CONF_CHOICE)
		for (const char *w = strchr(r->arg, '|'); w; w = strchr(w + 1, '|'))
			hi++;
	if (r->type != CONF_INT && r->type != CONF_CHOICE)
		return;
	assert(r->size == 0 || r->size == 1 || r->size == 2 || r->size == 4 || r->size == 8);
	assert(r->size || scale == 1);
	assert(r->lo >= INT64_MIN / scale && hi <= INT64_MAX / scale);
	if (r->size && r->size < 8)
		assert(hi * scale < (int64_t)1 << (8 * r->size) &&
		       r->lo * scale >= -((int64_t)1 << (8 * r->size - 1)));
}

static const struct conf_opt *find_row(const struct conf_cmd *c, int val)
{
	if (val >= ROW_VAL(0) && val < ROW_VAL(c->n_opts))
		return &c->opts[val - ROW_VAL(0)];
	for (unsigned i = 0; i < c->n_opts; i++)
		if (c->opts[i].short_name && c->opts[i].short_name == val)
			return &c->opts[i];
	return NULL;
}

int conf_parse(const struct conf_cmd *c, int argc, char **argv, void *o)
{
	struct option lo[CONF_MAX_OPTS + 1];
	char so[2 * CONF_MAX_OPTS + 2] = "";
	const struct conf_opt *r;
	size_t ns = 0;
	unsigned npos;
	int val;

	assert(c->n_opts <= CONF_MAX_OPTS);
	for (unsigned i = 0; i < c->n_opts; i++) {
		r = &c->opts[i];
		check_row(r);
		lo[i] = (struct option){r->name, r->arg ? required_argument : no_argument, NULL,
					ROW_VAL(i)};
		if (r->short_name) {
			lo[i].val = r->short_name;
			so[ns++] = r->short_name;
			if (r->arg)
				so[ns++] = ':';
		}
		if (r->def && set_value(c, r, r->def, o))
			return -1;
	}
	so[ns] = 0;
	lo[c->n_opts] = (struct option){0};
	argv[0] = (char *)c->prog;
	optind = 0;
	while ((val = getopt_long(argc, argv, so, lo, NULL)) != -1) {
		r = find_row(c, val);
		if (!r) {
			conf_usage(stderr, c);
			return -1;
		}
		if (set_value(c, r, optarg, o))
			return -1;
	}
	npos = (unsigned)(argc - optind);
	if (npos < c->min_args || npos > c->max_args) {
		fprintf(stderr, "%s: %s\n", c->prog,
			npos < c->min_args ? "too few arguments" : "too many arguments");
		conf_usage(stderr, c);
		return -1;
	}
	return optind;
}

static void usage_lines(FILE *f, const struct conf_cmd *c)
{
	const char *s = c->synopsis;

	for (int k = 0; *s; k++) {
		const char *nl = strchr(s, '\n');
		int n = nl ? (int)(nl - s) : (int)strlen(s);

		fprintf(f, "%s %s %.*s\n", k ? "      " : "usage:", c->prog, n, s);
		s += n + (nl != NULL);
	}
}

void conf_usage(FILE *f, const struct conf_cmd *c)
{
	usage_lines(f, c);
	fprintf(f, "(%s --help lists the options)\n", c->prog);
}

int conf_usage_error(const struct conf_cmd *c)
{
	conf_usage(stderr, c);
	return 2;
}

void conf_vsay(const char *who, const char *fmt, va_list ap)
{
	fprintf(stderr, "%s: ", who);
	vfprintf(stderr, fmt, ap);
	fputc('\n', stderr);
}

/* "-o, --output FILE" or "--count N" into buf; its length */
static int opt_label(const struct conf_opt *r, char *buf, size_t len)
{
	char sh[8] = "";

	if (r->short_name)
		snprintf(sh, sizeof(sh), "-%c, ", r->short_name);
	return snprintf(buf, len, "%s--%s%s%s", sh, r->name, r->arg ? " " : "",
			r->arg ? r->arg : "");
}

void conf_help(FILE *f, const struct conf_cmd *c)
{
	const int col = 24;
	char label[96];

	usage_lines(f, c);
	fprintf(f, "\n%s\n\noptions:\n", c->purpose);
	for (unsigned i = 0; i < c->n_opts; i++) {
		const struct conf_opt *r = &c->opts[i];
		int n = opt_label(r, label, sizeof(label));

		if (n + 2 > col)
			fprintf(f, "  %s\n  %*s%s", label, col, "", r->help);
		else
			fprintf(f, "  %-*s%s", col, label, r->help);
		if (r->def)
			fprintf(f, " (default %s)", r->def);
		fputc('\n', f);
	}
	fprintf(f, "  %-*s%s\n", col, "--help, --version", "this help; the version");
	if (c->notes)
		fprintf(f, "\n%s", c->notes);
}

const char *conf_help_arg(int argc, char **argv, bool before_dd)
{
	for (int i = 1; i < argc; i++) {
		if (before_dd && !strcmp(argv[i], "--"))
			break;
		if (!strcmp(argv[i], "--help") || !strcmp(argv[i], "-h") ||
		    !strcmp(argv[i], "--version"))
			return argv[i];
	}
	return NULL;
}
