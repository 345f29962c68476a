// SPDX-License-Identifier: MIT
/* conf/: configuration files -> the servers' command lines; errors name file, line and key. */
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

#include "conf/batch.h"
#include "conf/conf.h"
#include "conf/opts.h"
#include "conf/reload.h"
#include "host/opts.h"
#include "nicfw/nic/opts.h"
#include "protocol/frame.h"
#include "protocol/proto.h"

static char path[64];

static int setup(void **state)
{
	int fd;

	snprintf(path, sizeof(path), "/tmp/test_conf.XXXXXX");
	fd = mkstemp(path);
	if (fd < 0)
		return -1;
	close(fd);
	return 0;
}

static int teardown(void **state)
{
	unlink(path);
	return 0;
}

static void write_conf(const char *text)
{
	FILE *f = fopen(path, "w");

	assert_non_null(f);
	fputs(text, f);
	fclose(f);
}

/* conf_argv of the words of cmd (split on spaces), joined back with spaces into out */
static int run(const struct conf_server *srv, const char *cmd, char *out, size_t outlen, char *err,
	       size_t errlen)
{
	char buf[1024], *argv[64], *save, *tok;
	struct conf_args a;
	int argc = 0, ret;

	snprintf(buf, sizeof(buf), cmd, path);
	for (tok = strtok_r(buf, " ", &save); tok; tok = strtok_r(NULL, " ", &save))
		argv[argc++] = tok;
	argv[argc] = NULL;
	ret = conf_argv(srv, argc, argv, &a, err, errlen);
	if (ret)
		return ret;
	out[0] = 0;
	for (int i = 0; i < a.argc; i++) {
		strncat(out, a.argv[i], outlen - strlen(out) - 1);
		if (i + 1 < a.argc)
			strncat(out, " ", outlen - strlen(out) - 1);
	}
	assert_null(a.argv[a.argc]);
	conf_args_free(&a);
	return 0;
}

static void test_conf_nic_file(void **state)
{
	char out[1024], err[256];

	write_conf("[eal]\nargs = -l 0-1 -m 512\nno-huge = true\nin-memory = false\n"
		   "file-prefix = nic\nvdev = net_af_packet0,iface=vw\nvdev = net_null0\n"
		   "[server]\nip = 10.88.0.1\nexecutors = 16\nnotify-host = true\n"
		   "[model mlp]\nfile = /m/bmlp.snm ; the MLP\n[model cnn]\nfile = /m/bcnn.snm\n"
		   "first-op = 11\nid = 7\n");
	assert_int_equal(
	    run(&nic_conf, "splitnic-nic --config %s", out, sizeof(out), err, sizeof(err)), 0);
	assert_string_equal(out,
			    "splitnic-nic -l 0-1 -m 512 --no-huge --file-prefix=nic "
			    "--vdev=net_af_packet0,iface=vw --vdev=net_null0 -- --ip=10.88.0.1 "
			    "--executors=16 --notify-host --model=/m/bmlp.snm "
			    "--model=7=/m/bcnn.snm@11");
}

static void test_conf_command_line_overrides(void **state)
{
	char out[1024], err[256];

	write_conf("[eal]\nargs = -l 0\n[server]\nip = 10.88.0.1\nqueue = 8\n"
		   "[model cnn]\nfile = /m/bcnn.snm\nmode = host-only\n"
		   "[model mlp]\nfile = /m/bmlp.snm\nsplit = 3\n");
	/* the file's options first, the command line's after them (getopt: the last one wins) */
	assert_int_equal(run(&host_conf, "splitnic-host --no-pci --config %s -- --queue 16", out,
			     sizeof(out), err, sizeof(err)),
			 0);
	assert_string_equal(out, "splitnic-host -l 0 --no-pci -- --ip=10.88.0.1 --queue=8 "
				 "--model=/m/bcnn.snm:host-only --model=/m/bmlp.snm::3 --queue 16");
	/* a --model on the command line replaces the file's models */
	assert_int_equal(run(&host_conf, "splitnic-host -- --config=%s --model x.snm", out,
			     sizeof(out), err, sizeof(err)),
			 0);
	assert_string_equal(out, "splitnic-host -l 0 -- --ip=10.88.0.1 --queue=8 --model x.snm");
	/* no --config: the command line as it is */
	assert_int_equal(
	    run(&host_conf, "splitnic-host -l 1 -- --queue 2", out, sizeof(out), err, sizeof(err)),
	    0);
	assert_string_equal(out, "splitnic-host -l 1 -- --queue 2");
}

static void expect_error(const struct conf_server *srv, const char *text, const char *needle)
{
	char out[1024], err[256];

	write_conf(text);
	assert_int_not_equal(run(srv, "prog --config %s", out, sizeof(out), err, sizeof(err)), 0);
	if (!strstr(err, needle))
		fail_msg("error '%s' does not say '%s'", err, needle);
	if (!strstr(err, path))
		fail_msg("error '%s' does not name the file", err);
}

static void test_conf_errors(void **state)
{
	static const struct {
		const struct conf_server *srv;
		const char *text, *needle;
	} bad[] = {
	    {&nic_conf, "[server]\nip = 1.2.3.4\nqueue = 3\n",
	     ":3: [server] 'queue' is not an option of splitnic-nic"},
	    {&nic_conf, "[server]\nnotify-host = maybe\n",
	     ":2: [server] notify-host: true or false, got 'maybe'"},
	    {&nic_conf, "[server]\nmodel = x.snm\n",
	     ":2: [server] 'model' is not an option of splitnic-nic"},
	    {&host_conf, "[servers]\nip = 1.2.3.4\n", ":2: [servers]: not a section"},
	    {&host_conf, "[model a]\nmode = coproc\n", "[model a]: 'file' is missing"},
	    {&host_conf, "[model a]\nfile = x\nfile = y\n", ":3: [model a] 'file' given twice"},
	    {&nic_conf, "[model a]\nfile = x\nmode = coproc\n",
	     ":3: [model a] 'mode' is not a model key of splitnic-nic"},
	    {&host_conf, "[model]\nfile = x\n", ":2: [model]: give the section a name"},
	    {&host_conf, "[model a]\nfile = x:y\n", "holds ':'"},
	    {&host_conf, "[server]\nip 1.2.3.4\n", ":2: not 'key = value'"},
	};
	char out[1024], err[256];

	for (size_t i = 0; i < sizeof(bad) / sizeof(bad[0]); i++)
		expect_error(bad[i].srv, bad[i].text, bad[i].needle);
	assert_int_equal(run(&host_conf, "prog --config /nonexistent/x.conf", out, sizeof(out), err,
			     sizeof(err)),
			 -2);
	assert_string_equal(err, "/nonexistent/x.conf: No such file or directory");
	assert_int_not_equal(
	    run(&host_conf, "prog --config %1$s --config %1$s", out, sizeof(out), err, sizeof(err)),
	    0);
	assert_string_equal(err, "--config given twice");
	assert_int_not_equal(run(&host_conf, "prog --config", out, sizeof(out), err, sizeof(err)),
			     0);
	assert_string_equal(err, "--config: give a file");
}

/* Every option of a server's table but --model is a [server] key (none is left out). */
static void expect_all_keys(const struct conf_server *srv)
{
	const struct conf_cmd *c = srv->cmd;
	char text[2048] = "[server]\n", want[2048] = "prog --", out[2048], err[256];
	size_t n = strlen(text), w = strlen(want);

	for (unsigned i = 0; i < c->n_opts; i++) {
		const struct conf_opt *r = &c->opts[i];

		if (!strcmp(r->name, "model"))
			continue;
		n += (size_t)snprintf(text + n, sizeof(text) - n, "%s = %s\n", r->name,
				      r->arg ? "v" : "true");
		w += (size_t)snprintf(want + w, sizeof(want) - w, " --%s%s", r->name,
				      r->arg ? "=v" : "");
	}
	write_conf(text);
	assert_int_equal(run(srv, "prog --config %s", out, sizeof(out), err, sizeof(err)), 0);
	assert_string_equal(out, want);
}

static void test_conf_server_keys(void **state)
{
	static const char *const nic_keys[] = {"name",	"idle-sleep-us", "drain-ms",
					       "allow", "error-rate",	 "error-burst"};
	char out[256], err[256];

	expect_all_keys(&nic_conf);
	expect_all_keys(&host_conf);
	/* the keys the file once lacked */
	for (size_t i = 0; i < sizeof(nic_keys) / sizeof(nic_keys[0]); i++) {
		snprintf(out, sizeof(out), "[server]\n%s = 1\n", nic_keys[i]);
		write_conf(out);
		assert_int_equal(
		    run(&nic_conf, "prog --config %s", out, sizeof(out), err, sizeof(err)), 0);
	}
	write_conf("[server]\nname = h1\n");
	assert_int_equal(run(&host_conf, "prog --config %s", out, sizeof(out), err, sizeof(err)),
			 0);
	assert_string_equal(out, "prog -- --name=h1");
}

/* --eal-help anywhere: EAL's own --help, nothing else (the file is not read). */
static void test_conf_eal_help(void **state)
{
	char out[256], err[256];

	assert_int_equal(run(&nic_conf, "splitnic-nic -l 0 -- --model x --eal-help --config /no",
			     out, sizeof(out), err, sizeof(err)),
			 0);
	assert_string_equal(out, "splitnic-nic --help");
}

/* ---- option tables (conf/opts.h) ------------------------------------------------------- */

struct t_opts {
	bool flag;
	const char *str, *out, *choice, *text, *port;
	long num;
	uint16_t u16;
	uint64_t ns;
	double rate, secs;
	bool second;
	uint32_t ip;
	const char *list[2];
	uint32_t n_list;
	struct proto_cidr cidr[2];
	uint32_t n_cidr;
	int calls;
	const char *last;
};

static int t_call(void *p, const struct conf_opt *opt, const char *arg)
{
	struct t_opts *o = p;

	o->calls++;
	o->last = arg;
	return strcmp(arg, "bad") ? 0 : -1;
}

#define T_OPT(f) offsetof(struct t_opts, f)

static const struct conf_opt t_rows[] = {
    CONF_FLAG_ROW("flag", T_OPT(flag), "a flag"),
    CONF_STR_ROW("str", "S", T_OPT(str), "dflt", "a string"),
    CONF_LONG_ROW("num", "N", T_OPT(num), 2, 9, "3", "a number"),
    CONF_CHOICE_ROW("choice", "a|bb|c", T_OPT(choice), NULL, "one of three"),
    CONF_CALL_ROW("call", "X", 7, "first", "the callback's"),
    CONF_OUTPUT_ROW("FILE", T_OPT(out), "an output"),
    CONF_INT_ROW("u16", "N", struct t_opts, u16, 1, 65535, NULL, "a 16-bit field"),
    CONF_SCALED_ROW("ms", "MS", struct t_opts, ns, 0, 600000, 1000000, "5", "ms into ns"),
    CONF_DOUBLE_ROW("rate", "R", T_OPT(rate), 0, 1e9, "requests/s", NULL, "a rate"),
    CONF_POSITIVE_ROW("secs", "S", T_OPT(secs), 600, "seconds", NULL, "above 0"),
    CONF_ENUM_ROW("which", "first|second", struct t_opts, second, "first", "an index"),
    CONF_IPV4_ROW("ip", "A.B.C.D", struct t_opts, ip, NULL, "an address"),
    CONF_LIST_ROW("item", "I", struct t_opts, list, n_list, "repeatable (2)"),
    CONF_CIDR_LIST_ROW("allow", "CIDR", struct t_opts, cidr, n_cidr, "prefixes (2)"),
    CONF_TEXT_ROW("name", "NAME", T_OPT(text), 4, NULL, "1 to 4 characters"),
    CONF_PORT_ROW("port", "P", T_OPT(port), "21326", "a port, kept as text"),
};

static const struct conf_cmd t_cmd = {
    CONF_CMD("prog sub", "ARG [OPTIONS]\nARG ARG", "what it does", t_rows, 1, 2, t_call),
    .notes = "a note\n"};

/* conf_parse of the words of line (split on spaces) into o: its result. */
static int t_parse(const char *line, struct t_opts *o, char ***argv_out)
{
	static char buf[256], *argv[40];
	char *save, *tok;
	int argc = 0;

	snprintf(buf, sizeof(buf), "%s", line);
	for (tok = strtok_r(buf, " ", &save); tok; tok = strtok_r(NULL, " ", &save))
		argv[argc++] = tok;
	argv[argc] = NULL;
	memset(o, 0, sizeof(*o));
	*argv_out = argv;
	return conf_parse(&t_cmd, argc, argv, o);
}

/* t_parse's stderr: the message of a refused line */
static void t_refused(const char *line, const char *msg)
{
	char *text = NULL, **argv;
	size_t len = 0;
	struct t_opts o;
	FILE *f = open_memstream(&text, &len), *saved = stderr;
	int ret;

	assert_non_null(f);
	stderr = f;
	ret = t_parse(line, &o, &argv);
	stderr = saved;
	fclose(f);
	if (ret != -1 || strncmp(text, msg, strlen(msg)))
		fail_msg("'%s': %d, '%s', want -1, '%s'", line, ret, text, msg);
	free(text);
}

static void test_conf_opts_parse(void **state)
{
	struct t_opts o;
	char **argv;
	int arg;

	/* the defaults, applied through the same paths */
	arg = t_parse("sub pos", &o, &argv);
	assert_int_equal(arg, 1);
	assert_string_equal(argv[arg], "pos");
	assert_false(o.flag);
	assert_string_equal(o.str, "dflt");
	assert_int_equal(o.num, 3);
	assert_null(o.choice);
	assert_int_equal(o.calls, 1);
	assert_string_equal(o.last, "first");
	assert_int_equal(o.ns, 5000000);
	assert_false(o.second);
	assert_string_equal(o.port, "21326");
	/* every kind, -o, permuted positionals, the last value winning */
	arg = t_parse("sub p1 --flag --str=x --num 9 --choice bb --call y -o f p2 --num 2", &o,
		      &argv);
	assert_int_equal(arg, 13);
	assert_string_equal(argv[arg], "p1");
	assert_string_equal(argv[arg + 1], "p2");
	assert_true(o.flag);
	assert_string_equal(o.str, "x");
	assert_int_equal(o.num, 2);
	assert_string_equal(o.choice, "bb");
	assert_int_equal(o.calls, 2);
	assert_string_equal(o.last, "y");
	assert_string_equal(o.out, "f");
	assert_string_equal(argv[0], "prog sub");
	/* typed fields: sized, scaled, double, index, address, repeated, text, port */
	arg = t_parse("sub p --u16 0xffff --ms 1500 --rate 2.5e3 --secs 0.5 --which second "
		      "--ip 10.1.2.3 --item a --item b --allow 10.0.0.0/8 --allow 192.168.1.1 "
		      "--name abcd --port 9",
		      &o, &argv);
	assert_int_equal(arg, 25);
	assert_int_equal(o.u16, 65535);
	assert_int_equal(o.ns, 1500000000ull);
	assert_true(o.rate == 2500.0 && o.secs == 0.5);
	assert_true(o.second);
	assert_int_equal(o.ip, 0x0a010203);
	assert_int_equal(o.n_list, 2);
	assert_string_equal(o.list[1], "b");
	assert_int_equal(o.n_cidr, 2);
	assert_int_equal(o.cidr[0].net, 0x0a000000);
	assert_int_equal(o.cidr[1].mask, 0xffffffff);
	assert_string_equal(o.text, "abcd");
	assert_string_equal(o.port, "9");
	/* refused, each with a message naming the program, the option, the range and the value */
	t_refused("sub p --num 10", "prog sub: --num: an integer in 2..9, got '10'\n");
	t_refused("sub p --num 3x", "prog sub: --num: an integer in 2..9, got '3x'\n");
	t_refused("sub p --num +3", "prog sub: --num: an integer in 2..9, got '+3'\n");
	t_refused("sub p --num 0x", "prog sub: --num: an integer in 2..9, got '0x'\n");
	t_refused("sub p --u16 65536", "prog sub: --u16: an integer in 1..65535, got '65536'\n");
	t_refused("sub p --u16 99999999999999999999",
		  "prog sub: --u16: an integer in 1..65535, got '99999999999999999999'\n");
	t_refused("sub p --ms -1", "prog sub: --ms: an integer in 0..600000, got '-1'\n");
	t_refused("sub p --rate -5", "prog sub: --rate: requests/s in 0..1e+09, got '-5'\n");
	t_refused("sub p --rate nan", "prog sub: --rate: requests/s in 0..1e+09, got 'nan'\n");
	t_refused("sub p --secs 0", "prog sub: --secs: seconds > 0 and at most 600, got '0'\n");
	t_refused("sub p --choice b", "prog sub: --choice: a, bb or c, got 'b'\n");
	t_refused("sub p --which third", "prog sub: --which: first or second, got 'third'\n");
	t_refused("sub p --ip 10.1.2", "prog sub: --ip: an IPv4 address, got '10.1.2'\n");
	t_refused("sub p --item a --item b --item c",
		  "prog sub: --item: given more than 2 times, got 'c'\n");
	t_refused("sub p --allow 10.0.0.0/33",
		  "prog sub: --allow: A.B.C.D[/N], got '10.0.0.0/33'\n");
	t_refused("sub p --name abcde", "prog sub: --name: 1 to 4 characters, got 'abcde'\n");
	t_refused("sub p --port 0", "prog sub: --port: an integer in 1..65535, got '0'\n");
	assert_int_equal(t_parse("sub p --call bad", &o, &argv), -1);
	assert_int_equal(t_parse("sub p --nope", &o, &argv), -1);
	assert_int_equal(t_parse("sub p --flag=1", &o, &argv), -1);
	assert_int_equal(t_parse("sub", &o, &argv), -1);
	assert_int_equal(t_parse("sub a b c", &o, &argv), -1);
}

/* The one integer parser: decimal or 0x hexadecimal, a sign only '-', nothing around it. */
static void test_conf_int(void **state)
{
	int64_t v;

	assert_int_equal(conf_int(NULL, NULL, "42", 0, 100, &v), 0);
	assert_int_equal(v, 42);
	assert_int_equal(conf_int(NULL, NULL, "-0x10", -16, 0, &v), 0);
	assert_int_equal(v, -16);
	assert_int_equal(conf_int(NULL, NULL, "010", 0, 100, &v), 0); /* decimal, not octal */
	assert_int_equal(v, 10);
	assert_int_equal(conf_int(NULL, NULL, "9223372036854775807", 0, INT64_MAX, &v), 0);
	assert_int_equal(v, INT64_MAX);
	assert_int_equal(conf_int(NULL, NULL, "9223372036854775808", 0, INT64_MAX, &v), -EINVAL);
	assert_int_equal(conf_int(NULL, NULL, "", 0, 1, &v), -EINVAL);
	assert_int_equal(conf_int(NULL, NULL, " 1", 0, 1, &v), -EINVAL);
	assert_int_equal(conf_int(NULL, NULL, "1 ", 0, 1, &v), -EINVAL);
	assert_int_equal(conf_int(NULL, NULL, "-", 0, 1, &v), -EINVAL);
	assert_int_equal(conf_int(NULL, NULL, "0x1g", 0, 100, &v), -EINVAL);
	assert_int_equal(conf_int(NULL, NULL, "1.0", 0, 100, &v), -EINVAL);
	/* model ids: a number, else the name's hash */
	assert_int_equal(conf_model_id("0x10"), 16);
	assert_int_equal(conf_model_id("4294967295"), 0xffffffffu);
	assert_int_equal(conf_model_id("4294967296"), proto_model_id("4294967296"));
	assert_int_equal(conf_model_id("fmnist-bmlp"), proto_model_id("fmnist-bmlp"));
}

/* The one parser of real numbers: finite, in range (the low end excluded when asked), nothing
 * around it. */
static void test_conf_double(void **state)
{
	double v;

	assert_int_equal(conf_double(NULL, NULL, "2.5", 0, 10, false, NULL, &v), 0);
	assert_true(v == 2.5);
	assert_int_equal(conf_double(NULL, NULL, "1e3", 0, 1e3, false, NULL, &v), 0);
	assert_true(v == 1000);
	assert_int_equal(conf_double(NULL, NULL, "0", 0, 1, false, NULL, &v), 0);
	assert_int_equal(conf_double(NULL, NULL, "0", 0, 1, true, NULL, &v), -EINVAL);
	assert_int_equal(conf_double(NULL, NULL, "1.0001", 0, 1, false, NULL, &v), -EINVAL);
	assert_int_equal(conf_double(NULL, NULL, "inf", 0, INFINITY, false, NULL, &v), -EINVAL);
	assert_int_equal(conf_double(NULL, NULL, "nan", 0, 1, false, NULL, &v), -EINVAL);
	assert_int_equal(conf_double(NULL, NULL, "", 0, 1, false, NULL, &v), -EINVAL);
	assert_int_equal(conf_double(NULL, NULL, " 1", 0, 1, false, NULL, &v), -EINVAL);
	assert_int_equal(conf_double(NULL, NULL, "1x", 0, 1, false, NULL, &v), -EINVAL);
}

static void test_conf_opts_help(void **state)
{
	char *text = NULL;
	size_t len = 0;
	FILE *f = open_memstream(&text, &len);

	assert_non_null(f);
	conf_help(f, &t_cmd);
	fclose(f);
	assert_non_null(strstr(text, "usage: prog sub ARG [OPTIONS]\n       prog sub ARG ARG\n"));
	assert_non_null(strstr(text, "\nwhat it does\n"));
	for (unsigned i = 0; i < t_cmd.n_opts; i++) {
		char want[64];

		snprintf(want, sizeof(want), "--%s%s%s", t_rows[i].name, t_rows[i].arg ? " " : "",
			 t_rows[i].arg ? t_rows[i].arg : "");
		if (!strstr(text, want))
			fail_msg("help lacks '%s':\n%s", want, text);
	}
	assert_non_null(strstr(text, "-o, --output FILE"));
	assert_non_null(strstr(text, "a number (default 3)"));
	assert_non_null(strstr(text, "--help, --version"));
	assert_non_null(strstr(text, "\na note\n"));
	free(text);
}

static void test_conf_opts_help_arg(void **state)
{
	char *a[] = {"p", "x", "--", "--help", NULL}, *b[] = {"p", "-h", NULL},
	     *c[] = {"p", "--model", "--versions", NULL}, *d[] = {"p", "--", "--version", NULL};

	assert_null(conf_help_arg(4, a, true));
	assert_string_equal(conf_help_arg(4, a, false), "--help");
	assert_string_equal(conf_help_arg(2, b, true), "-h");
	assert_null(conf_help_arg(3, c, false));
	assert_string_equal(conf_help_arg(3, d, false), "--version");
}

/* A model's batching: the --model suffix, a [model NAME] section's keys, the host's options. */
static void test_conf_batch(void **state)
{
	struct conf_batch b = {4, 7000};
	char spec[128], out[1024], err[256];
	struct host_opts o;
	char *argv[] = {
	    "splitnic-host",	    "--model", "m.snm", "--ip", "10.0.0.1", "--batch", "3",
	    "--max-queue-delay-us", "50",      NULL};

	snprintf(spec, sizeof(spec), "/m/a,b.snm:host-only:3");
	assert_int_equal(conf_batch_suffix(spec, 64, &b, err, sizeof(err)), 0);
	assert_string_equal(spec, "/m/a,b.snm:host-only:3");
	assert_int_equal(b.max_batch, 4);
	assert_int_equal(b.max_delay_ns, 7000);
	snprintf(spec, sizeof(spec), "7=m.snm,max-queue-delay-us=200,max-batch=16");
	assert_int_equal(conf_batch_suffix(spec, 64, &b, err, sizeof(err)), 0);
	assert_string_equal(spec, "7=m.snm");
	assert_int_equal(b.max_batch, 16);
	assert_int_equal(b.max_delay_ns, 200000);
	snprintf(spec, sizeof(spec), "m.snm,max-batch=65");
	assert_int_equal(conf_batch_suffix(spec, 64, &b, err, sizeof(err)), -EINVAL);
	assert_string_equal(err,
			    "--model m.snm,max-batch=65: max-batch: an integer in 1..64, got '65'");
	assert_int_equal(b.max_batch, 16);
	snprintf(spec, sizeof(spec), "m.snm,max-batch=2,fast");
	assert_int_equal(conf_batch_suffix(spec, 64, &b, err, sizeof(err)), -EINVAL);
	assert_non_null(strstr(err, "',fast': after the model only"));

	write_conf("[model cnn]\nfile = /m/bcnn.snm\nmode = host-only\nmax-batch = 8\n"
		   "max-queue-delay-us = 100\n");
	assert_int_equal(
	    run(&host_conf, "splitnic-host --config %s", out, sizeof(out), err, sizeof(err)), 0);
	assert_string_equal(out,
			    "splitnic-host -- "
			    "--model=/m/bcnn.snm:host-only,max-batch=8,max-queue-delay-us=100");
	assert_int_equal(host_opts_parse(&o, 9, argv), 0);
	assert_int_equal(o.batch.max_batch, 3);
	assert_int_equal(o.batch.max_delay_ns, 50000);
}

/* A reload's checks: the ids it would serve, a model file kept while unchanged. */
static void test_conf_reload_checks(void **state)
{
	const uint32_t ok[] = {1, 2, 7}, twice[] = {5, 7, 9, 7, 5};
	struct stat was, now, none;
	char err[64] = "";

	(void)state;
	assert_int_equal(conf_reload_ids_unique(ok, 3, err, sizeof(err)), 0);
	assert_string_equal(err, "");
	assert_int_equal(conf_reload_ids_unique(twice, 4, err, sizeof(err)), -EINVAL);
	assert_string_equal(err, "model id 0x7 given twice");
	assert_int_equal(conf_reload_ids_unique(twice, 5, err, sizeof(err)), -EINVAL);
	assert_string_equal(err, "model id 0x5 given twice");

	write_conf("a\n");
	conf_reload_stat(path, &was);
	conf_reload_stat(path, &now);
	assert_true(conf_reload_same_file(&was, &now));
	write_conf("ab\n"); /* a new size */
	conf_reload_stat(path, &now);
	assert_false(conf_reload_same_file(&was, &now));
	memset(&none, 0xff, sizeof(none));
	conf_reload_stat(NULL, &none); /* zeroed: never the same file as one that exists */
	assert_int_equal(none.st_ino, 0);
	assert_false(conf_reload_same_file(&none, &now));
	conf_reload_stat("/nonexistent/model.snm", &none);
	assert_int_equal(none.st_ino, 0);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
	    cmocka_unit_test_setup_teardown(test_conf_nic_file, setup, teardown),
	    cmocka_unit_test_setup_teardown(test_conf_command_line_overrides, setup, teardown),
	    cmocka_unit_test_setup_teardown(test_conf_errors, setup, teardown),
	    cmocka_unit_test_setup_teardown(test_conf_server_keys, setup, teardown),
	    cmocka_unit_test_setup_teardown(test_conf_eal_help, setup, teardown),
	    cmocka_unit_test(test_conf_opts_parse),
	    cmocka_unit_test(test_conf_int),
	    cmocka_unit_test(test_conf_double),
	    cmocka_unit_test(test_conf_opts_help),
	    cmocka_unit_test(test_conf_opts_help_arg),
	    cmocka_unit_test_setup_teardown(test_conf_batch, setup, teardown),
	    cmocka_unit_test_setup_teardown(test_conf_reload_checks, setup, teardown),
	};

	return cmocka_run_group_tests(tests, NULL, NULL);
}
