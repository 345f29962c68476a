// SPDX-License-Identifier: MIT
/* Option tables -> getopt_long, defaults, values and --help (see conf/opts.h). */
#include <assert.h>
#include <errno.h>
#include <getopt.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "conf/opts.h"

/* getopt's value of row i (its short_name when it has one) */
#define ROW_VAL(i) (256 + (int)(i))

int conf_text(const char *who, const struct conf_opt *opt, const char *s, size_t max,
	      const char **out)
{
	if (*s && strlen(s) <= max) {
		*out = s;
		return 0;
	}
	fprintf(stderr, "%s: --%s: 1 to %zu characters, got '%s'\n", who, opt->name, max, s);
	return -1;
}

int conf_long(const char *s, long *out, long min, long max, const char *what)
{
	char *end;
	long v;

	errno = 0;
	v = strtol(s, &end, 10);
	if (errno || end == s || *end || v < min || v > max) {
		fprintf(stderr, "%s: '%s' is not an integer in %ld..%ld\n", what, s, min, max);
		return -1;
	}
	*out = v;
	return 0;
}

/* Is arg one of the '|'-separated words of choices? */
static bool is_choice(const char *choices, const char *arg)
{
	size_t n = strlen(arg);

	for (const char *w = choices; w; w = strchr(w, '|'), w = w ? w + 1 : NULL)
		if (!strncmp(w, arg, n) && (w[n] == '|' || !w[n]))
			return true;
	return false;
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

static int set_value(const struct conf_cmd *c, const struct conf_opt *r, const char *arg, void *o)
{
	char *dst = (char *)o + r->off;
	char what[96];
	long v;

	switch (r->type) {
	case CONF_FLAG:
		*(bool *)dst = true;
		return 0;
	case CONF_STR:
		*(const char **)dst = arg;
		return 0;
	case CONF_LONG:
		snprintf(what, sizeof(what), "%s: --%s", c->prog, r->name);
		if (conf_long(arg, &v, r->lo, r->hi, what))
			return -1;
		*(long *)dst = v;
		return 0;
	case CONF_CHOICE:
		if (!is_choice(r->arg, arg)) {
			fprintf(stderr, "%s: --%s: ", c->prog, r->name);
			choice_list(stderr, r->arg);
			fprintf(stderr, ", got '%s'\n", arg);
			return -1;
		}
		*(const char **)dst = arg;
		return 0;
	default:
		return c->on_opt(o, r, arg);
	}
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
