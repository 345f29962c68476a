// SPDX-License-Identifier: MIT
/* conf/: configuration files -> the servers' command lines; errors name file, line and key. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include <cmocka.h>

#include "conf/conf.h"

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
	    run(&conf_nic, "splitnic-nic --config %s", out, sizeof(out), err, sizeof(err)), 0);
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
	assert_int_equal(run(&conf_host, "splitnic-host --no-pci --config %s -- --queue 16", out,
			     sizeof(out), err, sizeof(err)),
			 0);
	assert_string_equal(out, "splitnic-host -l 0 --no-pci -- --ip=10.88.0.1 --queue=8 "
				 "--model=/m/bcnn.snm:host-only --model=/m/bmlp.snm::3 --queue 16");
	/* a --model on the command line replaces the file's models */
	assert_int_equal(run(&conf_host, "splitnic-host -- --config=%s --model x.snm", out,
			     sizeof(out), err, sizeof(err)),
			 0);
	assert_string_equal(out, "splitnic-host -l 0 -- --ip=10.88.0.1 --queue=8 --model x.snm");
	/* no --config: the command line as it is */
	assert_int_equal(
	    run(&conf_host, "splitnic-host -l 1 -- --queue 2", out, sizeof(out), err, sizeof(err)),
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
	char out[1024], err[256];

	expect_error(&conf_nic, "[server]\nip = 1.2.3.4\nqueue = 3\n",
		     ":3: [server] 'queue' is not an option of splitnic-nic");
	expect_error(&conf_nic, "[server]\nnotify-host = maybe\n",
		     ":2: [server] notify-host: true or false, got 'maybe'");
	expect_error(&conf_host, "[servers]\nip = 1.2.3.4\n", ":2: [servers]: not a section");
	expect_error(&conf_host, "[model a]\nmode = coproc\n", "[model a]: 'file' is missing");
	expect_error(&conf_host, "[model a]\nfile = x\nfile = y\n",
		     ":3: [model a] 'file' given twice");
	expect_error(&conf_nic, "[model a]\nfile = x\nmode = coproc\n",
		     ":3: [model a] 'mode' is not a model key of splitnic-nic");
	expect_error(&conf_host, "[model]\nfile = x\n", ":2: [model]: give the section a name");
	expect_error(&conf_host, "[model a]\nfile = x:y\n", "holds ':'");
	expect_error(&conf_host, "[server]\nip 1.2.3.4\n", ":2: not 'key = value'");
	assert_int_equal(run(&conf_host, "prog --config /nonexistent/x.conf", out, sizeof(out), err,
			     sizeof(err)),
			 -2);
	assert_string_equal(err, "/nonexistent/x.conf: No such file or directory");
	assert_int_not_equal(
	    run(&conf_host, "prog --config %1$s --config %1$s", out, sizeof(out), err, sizeof(err)),
	    0);
	assert_string_equal(err, "--config given twice");
	assert_int_not_equal(run(&conf_host, "prog --config", out, sizeof(out), err, sizeof(err)),
			     0);
	assert_string_equal(err, "--config: give a file");
}

int main(void)
{
	const struct CMUnitTest tests[] = {
	    cmocka_unit_test_setup_teardown(test_conf_nic_file, setup, teardown),
	    cmocka_unit_test_setup_teardown(test_conf_command_line_overrides, setup, teardown),
	    cmocka_unit_test_setup_teardown(test_conf_errors, setup, teardown),
	};

	return cmocka_run_group_tests(tests, NULL, NULL);
}
