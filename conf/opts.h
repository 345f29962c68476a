/* SPDX-License-Identifier: MIT */
/*
 * conf/opts.h — option tables. Each program and each `splitnic` sub-command names its options
 * once, in one table (spelling, argument, default, one line of help, where the value goes), and
 * its getopt_long options, its --help text, its defaults and, for the servers, the [server] keys
 * of their configuration files (conf/conf.h) all come from that table.
 *
 * --help and --version are not rows: a program looks for them first (conf_help_arg) and answers
 * before doing anything else.
 */
#ifndef CONF_OPTS_H
#define CONF_OPTS_H

#include <stdbool.h>
#include <stddef.h>
#include <stdio.h>

/* The version every splitnic program reports with --version. */
#define CONF_VERSION "0.1.0"

/* The most rows one table may hold. */
#define CONF_MAX_OPTS 48

enum conf_type {
	CONF_CALL,   /* the command's on_opt callback takes the value */
	CONF_FLAG,   /* no argument: bool at off becomes true */
	CONF_STR,    /* const char * at off: the argument as given */
	CONF_LONG,   /* long at off: a whole decimal number in [lo, hi] */
	CONF_CHOICE, /* const char * at off: one of the '|'-separated words of arg */
};

struct conf_opt {
	const char *name; /* the long option, without "--" */
	const char *arg;  /* the argument in --help ("N", "FILE", "a|b"); NULL: a flag */
	const char *help; /* one line */
	const char *def;  /* the default, as on the command line: applied before it; or NULL */
	enum conf_type type;
	int key;	 /* what on_opt switches on */
	char short_name; /* -LETTER too, or 0 */
	size_t off;	 /* where the value goes in the caller's options struct */
	long lo, hi;	 /* CONF_LONG's range */
};

/* The rows, by kind: the value at offset OFF of the caller's options struct, or on_opt's KEY. */
#define CONF_FLAG_ROW(NAME, OFF, HELP)                                                             \
	{                                                                                          \
		.name = (NAME), .help = (HELP), .type = CONF_FLAG, .off = (OFF)                    \
	}
#define CONF_STR_ROW(NAME, ARG, OFF, DEF, HELP)                                                    \
	{                                                                                          \
		.name = (NAME), .arg = (ARG), .help = (HELP), .def = (DEF), .type = CONF_STR,      \
		.off = (OFF)                                                                       \
	}
#define CONF_CHOICE_ROW(NAME, ARG, OFF, DEF, HELP)                                                 \
	{                                                                                          \
		.name = (NAME), .arg = (ARG), .help = (HELP), .def = (DEF), .type = CONF_CHOICE,   \
		.off = (OFF)                                                                       \
	}
#define CONF_LONG_ROW(NAME, ARG, OFF, LO, HI, DEF, HELP)                                           \
	{                                                                                          \
		.name = (NAME), .arg = (ARG), .help = (HELP), .def = (DEF), .type = CONF_LONG,     \
		.off = (OFF), .lo = (LO), .hi = (HI)                                               \
	}
#define CONF_CALL_ROW(NAME, ARG, KEY, DEF, HELP)                                                   \
	{                                                                                          \
		.name = (NAME), .arg = (ARG), .help = (HELP), .def = (DEF), .type = CONF_CALL,     \
		.key = (KEY)                                                                       \
	}
/* -o FILE, --output FILE */
#define CONF_OUTPUT_ROW(ARG, OFF, HELP)                                                            \
	{                                                                                          \
		.name = "output", .arg = (ARG), .help = (HELP), .type = CONF_STR,                  \
		.short_name = 'o', .off = (OFF)                                                    \
	}

struct conf_cmd {
	const char *prog;     /* "splitnic run", "splitnic-nic": in usage lines and messages */
	const char *synopsis; /* what follows prog on the usage line; '\n' separates forms */
	const char *purpose;  /* one line: what it does */
	const struct conf_opt *opts;
	unsigned n_opts;
	unsigned min_args, max_args; /* positional arguments */
	const char *notes;	     /* lines after the options (each ends in '\n'), or NULL */
	/* A CONF_CALL option's value (or default) into o: 0, or -1 after a message on stderr. */
	int (*on_opt)(void *o, const struct conf_opt *opt, const char *arg);
};

/*
 * The first fields of a struct conf_cmd: OPTS is the table (an array), MIN_ARGS..MAX_ARGS the
 * positional arguments, ON_OPT the callback of its CONF_CALL rows (or NULL).
 */
#define CONF_CMD(PROG, SYNOPSIS, PURPOSE, OPTS, MIN_ARGS, MAX_ARGS, ON_OPT)                        \
	.prog = (PROG), .synopsis = (SYNOPSIS), .purpose = (PURPOSE), .opts = (OPTS),              \
	.n_opts = (unsigned)(sizeof(OPTS) / sizeof((OPTS)[0])), .min_args = (MIN_ARGS),            \
	.max_args = (MAX_ARGS), .on_opt = (ON_OPT)

/*
 * Parse argv (argv[0] the command's name; set to c->prog for getopt's messages) into o: first
 * every row's default, then the options of the command line in order (a later one wins). Returns
 * the index of the first positional argument (they are argv[ret..argc), getopt having moved
 * them behind the options), or -1 after a message and the usage on stderr (exit status 2): an
 * unknown option, a bad value, or a count of positional arguments outside [min_args, max_args].
 */
int conf_parse(const struct conf_cmd *c, int argc, char **argv, void *o);

/* "usage: PROG SYNOPSIS" (every form) and where the options are listed. */
void conf_usage(FILE *f, const struct conf_cmd *c);

/* conf_usage on stderr; returns 2, the exit status of bad arguments. */
int conf_usage_error(const struct conf_cmd *c);

/* The usage, the purpose, every option with its argument, default and help, then the notes. */
void conf_help(FILE *f, const struct conf_cmd *c);

/*
 * "--help", "-h" or "--version" among argv[1..argc) (only before a "--" when before_dd), or
 * NULL: what a program answers before it does anything else.
 */
const char *conf_help_arg(int argc, char **argv, bool before_dd);

/*
 * A whole decimal number in [min, max] into *out: 0, or -1 after "WHAT: 'S' is not an integer
 * in MIN..MAX" on stderr.
 */
int conf_long(const char *s, long *out, long min, long max, const char *what);

/*
 * A text of 1 to max characters (a server's --name) into *out: 0, or -1 after
 * "WHO: --NAME: 1 to MAX characters, got 'S'" on stderr.
 */
int conf_text(const char *who, const struct conf_opt *opt, const char *s, size_t max,
	      const char **out);

#endif /* CONF_OPTS_H */
