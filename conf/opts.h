/* SPDX-License-Identifier: MIT */
/*
 * conf/opts.h — option tables. Each program and each `splitnic` sub-command names its options
 * once, in one table of typed rows (spelling, argument, default, one line of help, the type of
 * the value and where it goes), and its getopt_long options, its --help text, its defaults,
 * its values with their checks and, for the servers, the [server] keys of their configuration
 * files (conf/conf.h) all come from that table.
 *
 * The rows, by type (the value at offset `off` of the caller's options struct):
 *
 *   flag     no argument: a bool becomes true
 *   string   the argument as given (a path, a name); optionally 1 to `hi` characters
 *   integer  a whole number in [lo, hi] (conf_int), stored times `scale` (its unit to the
 *            field's: ms -> ns) in an integer field of `size` bytes; size 0 keeps the argument
 *            (a UDP port for getaddrinfo, checked and kept as text)
 *   double   a finite number in [lo, hi] (above lo, excluded, with `above`), in `unit`
 *   choice   one of the '|'-separated words of `arg`: the word (size 0), or its index in an
 *            integer field of `size` bytes
 *   IPv4     A.B.C.D into a uint32_t, host order
 *   CIDR     A.B.C.D[/N] into a struct proto_cidr (protocol/trust.h)
 *   callback the command's on_opt: only where a value is more than one of the above
 *
 * Any row but a flag or a callback may be repeated (`max` > 0): each value is appended to the
 * array at `off` (elements of `size` bytes), the count in the uint32_t at `count_off`.
 *
 * Messages name the program, the option, what it takes and the value given, e.g.
 * "splitnic run: --batch: an integer in 1..4096, got '0'"; a program exits 2 after one.
 *
 * --help and --version are not rows: a program looks for them first (conf_help_arg) and answers
 * before doing anything else.
 */
#ifndef CONF_OPTS_H
#define CONF_OPTS_H

#include <stdarg.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>

/* The version every splitnic program reports with --version. */
#define CONF_VERSION "0.1.0"

/* The most rows one table may hold. */
#define CONF_MAX_OPTS 48

enum conf_type {
	CONF_FLAG,
	CONF_STR,
	CONF_INT,
	CONF_DOUBLE,
	CONF_CHOICE,
	CONF_IPV4,
	CONF_CIDR,
	CONF_CALL,
};

struct conf_opt {
	const char *name; /* the long option, without "--" */
	const char *arg;  /* the argument in --help ("N", "FILE", "a|b"); NULL: a flag */
	const char *help; /* one line */
	const char *def;  /* the default, as on the command line: applied before it; or NULL */
	enum conf_type type;
	char short_name;  /* -LETTER too, or 0 */
	int key;	  /* CONF_CALL: what on_opt switches on */
	size_t off;	  /* where the value goes in the caller's options struct */
	size_t size;	  /* CONF_INT, CONF_CHOICE: bytes of the integer field (0: the text) */
	int64_t lo, hi;	  /* CONF_INT: the range; CONF_STR: hi > 0, at most hi characters */
	int64_t scale;	  /* CONF_INT: the field holds the value times scale (0 taken as 1) */
	double dlo, dhi;  /* CONF_DOUBLE: the range */
	bool above;	  /* CONF_DOUBLE: lo itself excluded */
	const char *unit; /* CONF_DOUBLE: what the number counts, in messages ("seconds") */
	uint32_t max;	  /* repeated: at most max values (0: not repeated) */
	size_t count_off; /* repeated: the uint32_t count */
};

/* sizeof of member F of struct type S */
#define CONF_SIZEOF(S, F) sizeof(((S *)0)->F)

/* -- the rows, by type ------------------------------------------------------------------------ */

#define CONF_FLAG_ROW(NAME, OFF, HELP)                                                             \
	{                                                                                          \
		.name = (NAME), .help = (HELP), .type = CONF_FLAG, .off = (OFF)                    \
	}
#define CONF_STR_ROW(NAME, ARG, OFF, DEF, HELP)                                                    \
	{                                                                                          \
		.name = (NAME), .arg = (ARG), .help = (HELP), .def = (DEF), .type = CONF_STR,      \
		.off = (OFF)                                                                       \
	}
/* a string of 1 to MAX characters */
#define CONF_TEXT_ROW(NAME, ARG, OFF, MAX, DEF, HELP)                                              \
	{                                                                                          \
		.name = (NAME), .arg = (ARG), .help = (HELP), .def = (DEF), .type = CONF_STR,      \
		.off = (OFF), .hi = (MAX)                                                          \
	}
/* -o FILE, --output FILE */
#define CONF_OUTPUT_ROW(ARG, OFF, HELP)                                                            \
	{                                                                                          \
		.name = "output", .arg = (ARG), .help = (HELP), .type = CONF_STR,                  \
		.short_name = 'o', .off = (OFF)                                                    \
	}
/* an integer into member F (any integer type) of struct S, stored times SCALE */
#define CONF_SCALED_ROW(NAME, ARG, S, F, LO, HI, SCALE, DEF, HELP)                                 \
	{                                                                                          \
		.name = (NAME), .arg = (ARG), .help = (HELP), .def = (DEF), .type = CONF_INT,      \
		.off = offsetof(S, F), .size = CONF_SIZEOF(S, F), .lo = (LO), .hi = (HI),          \
		.scale = (SCALE)                                                                   \
	}
#define CONF_INT_ROW(NAME, ARG, S, F, LO, HI, DEF, HELP)                                           \
	CONF_SCALED_ROW(NAME, ARG, S, F, LO, HI, 1, DEF, HELP)
/* an integer into the long at OFF */
#define CONF_LONG_ROW(NAME, ARG, OFF, LO, HI, DEF, HELP)                                           \
	{                                                                                          \
		.name = (NAME), .arg = (ARG), .help = (HELP), .def = (DEF), .type = CONF_INT,      \
		.off = (OFF), .size = sizeof(long), .lo = (LO), .hi = (HI), .scale = 1             \
	}
/* a UDP port 1..65535, kept as text (const char * at OFF) */
#define CONF_PORT_ROW(NAME, ARG, OFF, DEF, HELP)                                                   \
	{                                                                                          \
		.name = (NAME), .arg = (ARG), .help = (HELP), .def = (DEF), .type = CONF_INT,      \
		.off = (OFF), .lo = 1, .hi = 65535, .scale = 1                                     \
	}
/* a double in [LO, HI] */
#define CONF_DOUBLE_ROW(NAME, ARG, OFF, LO, HI, UNIT, DEF, HELP)                                   \
	{                                                                                          \
		.name = (NAME), .arg = (ARG), .help = (HELP), .def = (DEF), .type = CONF_DOUBLE,   \
		.off = (OFF), .dlo = (LO), .dhi = (HI), .unit = (UNIT)                             \
	}
/* a double in (0, HI] */
#define CONF_POSITIVE_ROW(NAME, ARG, OFF, HI, UNIT, DEF, HELP)                                     \
	{                                                                                          \
		.name = (NAME), .arg = (ARG), .help = (HELP), .def = (DEF), .type = CONF_DOUBLE,   \
		.off = (OFF), .dlo = 0, .dhi = (HI), .above = true, .unit = (UNIT)                 \
	}
/* one of the words of ARG ("a|b|c"): the word, a const char * at OFF */
#define CONF_CHOICE_ROW(NAME, ARG, OFF, DEF, HELP)                                                 \
	{                                                                                          \
		.name = (NAME), .arg = (ARG), .help = (HELP), .def = (DEF), .type = CONF_CHOICE,   \
		.off = (OFF)                                                                       \
	}
/* one of the words of ARG: its index (0, 1, ...) into member F (any integer type, bool) of S */
#define CONF_ENUM_ROW(NAME, ARG, S, F, DEF, HELP)                                                  \
	{                                                                                          \
		.name = (NAME), .arg = (ARG), .help = (HELP), .def = (DEF), .type = CONF_CHOICE,   \
		.off = offsetof(S, F), .size = CONF_SIZEOF(S, F)                                   \
	}
/* an IPv4 address into member F (uint32_t, host order) of S */
#define CONF_IPV4_ROW(NAME, ARG, S, F, DEF, HELP)                                                  \
	{                                                                                          \
		.name = (NAME), .arg = (ARG), .help = (HELP), .def = (DEF), .type = CONF_IPV4,     \
		.off = offsetof(S, F), .size = sizeof(uint32_t)                                    \
	}
/* repeated strings: appended to the array member A of S (const char *[]), the count in N */
#define CONF_LIST_ROW(NAME, ARG, S, A, N, HELP)                                                    \
	{                                                                                          \
		.name = (NAME), .arg = (ARG), .help = (HELP), .type = CONF_STR,                    \
		.off = offsetof(S, A), .size = sizeof(const char *),                               \
		.max = (uint32_t)(CONF_SIZEOF(S, A) / sizeof(const char *)),                       \
		.count_off = offsetof(S, N)                                                        \
	}
/* repeated prefixes: appended to the array member A of S (struct proto_cidr []), count in N */
#define CONF_CIDR_LIST_ROW(NAME, ARG, S, A, N, HELP)                                               \
	{                                                                                          \
		.name = (NAME), .arg = (ARG), .help = (HELP), .type = CONF_CIDR,                   \
		.off = offsetof(S, A), .size = CONF_SIZEOF(S, A[0]),                               \
		.max = (uint32_t)(CONF_SIZEOF(S, A) / CONF_SIZEOF(S, A[0])),                       \
		.count_off = offsetof(S, N)                                                        \
	}
/*
 * The trust policy's options (protocol/trust.h), the same rows in every server: --allow CIDR
 * (repeatable) into member T (struct proto_trust_cfg) of S, --error-rate N and --error-burst N
 * into its integer members RATE and BURST (proto_trust_set_rate() takes them at set-up); PER:
 * what one bucket counts ("front-end", "front-end and worker").
 */
#define CONF_TRUST_ROWS(S, T, RATE, BURST, RATE_DEF, BURST_DEF, PER)                               \
	CONF_CIDR_LIST_ROW(                                                                        \
	    "allow", "CIDR", S, T.allow, T.n_allow,                                                \
	    "front-ends answered (repeatable; default: all, no reply larger than its request)"),   \
	    CONF_INT_ROW("error-rate", "N", S, RATE, 0, 10000000, RATE_DEF,                        \
			 "ERRORs per second per " PER ", at most (0: no limit)"),                  \
	    CONF_INT_ROW("error-burst", "N", S, BURST, 1, 10000000, BURST_DEF,                     \
			 "ERRORs at once per " PER ", at most")
/* the command's on_opt, with KEY */
#define CONF_CALL_ROW(NAME, ARG, KEY, DEF, HELP)                                                   \
	{                                                                                          \
		.name = (NAME), .arg = (ARG), .help = (HELP), .def = (DEF), .type = CONF_CALL,     \
		.key = (KEY)                                                                       \
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
 * every row's default, then the options of the command line in order (a later one wins, a
 * repeated row's values add up). Returns the index of the first positional argument (they are
 * argv[ret..argc), getopt having moved them behind the options), or -1 after a message and the
 * usage on stderr (exit status 2): an unknown option, a bad value, or a count of positional
 * arguments outside [min_args, max_args]. A row that cannot hold its range asserts.
 */
int conf_parse(const struct conf_cmd *c, int argc, char **argv, void *o);

/* "usage: PROG SYNOPSIS" (every form) and where the options are listed. */
void conf_usage(FILE *f, const struct conf_cmd *c);

/* conf_usage on stderr; returns 2, the exit status of bad arguments. */
int conf_usage_error(const struct conf_cmd *c);

/* One line "WHO: ..." on stderr, the rest from fmt and ap. */
void conf_vsay(const char *who, const char *fmt, va_list ap);

/* The usage, the purpose, every option with its argument, default and help, then the notes. */
void conf_help(FILE *f, const struct conf_cmd *c);

/*
 * "--help", "-h" or "--version" among argv[1..argc) (only before a "--" when before_dd), or
 * NULL: what a program answers before it does anything else.
 */
const char *conf_help_arg(int argc, char **argv, bool before_dd);

/*
 * The one integer parser: s, a whole number (decimal, or hexadecimal after 0x; an optional
 * '-'), in [lo, hi] into *out. Returns 0, or -EINVAL after "WHO: WHAT: an integer in LO..HI,
 * got 'S'" on stderr; silent when what is NULL (the caller says what it takes in its own words,
 * or takes s as something else).
 */
int conf_int(const char *who, const char *what, const char *s, int64_t lo, int64_t hi,
	     int64_t *out);

/*
 * The one parser of real numbers: s, a finite number in [lo, hi] (lo excluded when above) into
 * *out. Returns 0, or -EINVAL after "WHO: WHAT: UNIT in LO..HI, got 'S'" (or "UNIT > LO ...") on
 * stderr; silent when what is NULL.
 */
int conf_double(const char *who, const char *what, const char *s, double lo, double hi, bool above,
		const char *unit, double *out);

/*
 * A model id as the protocol carries it, given as a number (0..2^32-1, conf_int) or a name
 * (then its FNV-1a hash, proto_model_id).
 */
uint32_t conf_model_id(const char *s);

#endif /* CONF_OPTS_H */
