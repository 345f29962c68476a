// SPDX-License-Identifier: MIT
/* The DPDK servers' life cycle (dpdk/server.h). */
#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <signal.h>
#include <stdio.h>
#include <string.h>
#include <unistd.h>

#include <rte_branch_prediction.h>
#include <rte_common.h>
#include <rte_cycles.h>
#include <rte_eal.h>
#include <rte_errno.h>

#include "dpdk/idle.h"
#include "dpdk/metrics.h"
#include "dpdk/preflight.h"
#include "dpdk/reloader.h"
#include "dpdk/server.h"
#include "kernels/kern_ops.h"

static volatile sig_atomic_t quit_sig, hup_sig;
static int cmd_argc;
static char **cmd_argv;

static void on_signal(int sig)
{
	if (!quit_sig)
		quit_sig = sig;
}

static void on_hup(int sig)
{
	hup_sig = sig;
}

void dpdk_server_argv(int *argc, char ***argv)
{
	*argc = cmd_argc;
	*argv = cmd_argv;
}

int dpdk_server_reread(const struct conf_server *cmd, int (*parse)(void *o, int argc, char **argv),
		       void *o, struct conf_args *v, char *err, size_t errlen)
{
	char **pv;
	int dd, ret;

	ret = conf_argv(cmd, cmd_argc, cmd_argv, v, err, errlen);
	if (ret)
		return ret;
	for (dd = 1; dd < v->argc && strcmp(v->argv[dd], "--"); dd++)
		;
	pv = calloc((size_t)(v->argc - dd + 1) + 1, sizeof(*pv));
	if (!pv) {
		conf_args_free(v);
		return -ENOMEM;
	}
	pv[0] = v->argv[0];
	for (int i = dd + 1; i < v->argc; i++)
		pv[i - dd] = v->argv[i];
	ret = parse(o, dd < v->argc ? v->argc - dd : 1, pv);
	free(pv);
	if (ret) {
		snprintf(err, errlen, "the options (above)");
		conf_args_free(v);
	}
	return ret;
}

const char *dpdk_signal_name(int sig)
{
	static char buf[24];

	if (sig == SIGINT || sig == SIGTERM)
		return sig == SIGINT ? "SIGINT" : "SIGTERM";
	snprintf(buf, sizeof(buf), "signal %d", sig);
	return buf;
}

/* The EAL's runtime folder (/var/run/dpdk/PREFIX): its files, then the folder, once the EAL is
 * done with them; nothing else of this process reads them. */
static void remove_runtime_dir(const char *dir)
{
	char path[PATH_MAX];
	struct dirent *e;
	DIR *d = opendir(dir);

	if (!d)
		return;
	while ((e = readdir(d)) != NULL)
		if (strcmp(e->d_name, ".") && strcmp(e->d_name, "..") &&
		    snprintf(path, sizeof(path), "%s/%s", dir, e->d_name) < (int)sizeof(path))
			unlink(path);
	closedir(d);
	rmdir(dir);
}

/* After a failed rte_eal_init: whether the runtime folder dir is this process's to remove, i.e.
 * no other process holds a lock on its config file (a primary process with the same prefix holds
 * one for its life; our own locks are not reported). */
static bool runtime_dir_unheld(const char *dir)
{
	struct flock l = {.l_type = F_WRLCK, .l_whence = SEEK_SET};
	char path[PATH_MAX];
	bool unheld;
	int fd;

	if (!dir[0] || snprintf(path, sizeof(path), "%s/config", dir) >= (int)sizeof(path))
		return false;
	fd = open(path, O_RDONLY | O_CLOEXEC);
	if (fd < 0)
		return errno == ENOENT;
	unheld = !fcntl(fd, F_GETLK, &l) && l.l_type == F_UNLCK;
	close(fd);
	return unheld;
}

/* The main lcore's turns until the drain is over or the duration has passed: the signal that
 * started the drain, or 0. */
static int run_loop(const struct dpdk_server *s, void *srv, const struct dpdk_run *run)
{
	const uint64_t t0 = rte_get_tsc_cycles();
	const double ns_per_cyc = 1e9 / (double)rte_get_tsc_hz();
	const uint64_t t_end = run->duration_s > 0 ? (uint64_t)(run->duration_s * 1e9) : UINT64_MAX;
	struct dpdk_idle idle;
	uint64_t now, hold_end = 0, drain_end = 0;
	int sig = 0;

	dpdk_idle_init(&idle, run->poll, run->idle_sleep_us);
	for (;;) {
		now = (uint64_t)((double)(rte_get_tsc_cycles() - t0) * ns_per_cyc);
		if (unlikely(now >= t_end))
			break;
		if (unlikely(quit_sig && !sig)) {
			sig = quit_sig;
			s->drain(srv);
			dpdk_metrics_draining();
			hold_end = now + run->drain_hold_ns;
			drain_end = now + RTE_MAX(run->drain_ns, run->drain_hold_ns);
			printf("%s: %s: draining %u request(s)\n", s->who, dpdk_signal_name(sig),
			       s->in_use(srv));
			fflush(stdout);
		}
		if (unlikely(sig) && ((now >= hold_end && !s->in_use(srv)) || now >= drain_end))
			break;
		if (unlikely(hup_sig)) {
			hup_sig = 0;
			if (s->reloader)
				dpdk_reload_ask(s, srv);
			else
				printf("%s: SIGHUP: its models change only with a restart\n",
				       s->who);
		}
		dpdk_idle_after(&idle, s->step(srv));
	}
	return sig;
}

static void file_put(void *arg, const char *key, uint64_t v)
{
	fprintf(arg, "%s %lu\n", key, (unsigned long)v);
}

/* The counters at exit: to the stats file, or standard output. */
static void write_report(const struct dpdk_server *s, void *srv, const char *path)
{
	FILE *f = path ? fopen(path, "w") : NULL;

	if (path && !f)
		fprintf(stderr, "%s: %s: %s\n", s->who, path, strerror(errno));
	(s->report ? s->report : s->counters)(srv, file_put, f ? f : stdout);
	if (f)
		fclose(f);
	fflush(stdout);
}

int dpdk_server_main(const struct dpdk_server *s, void *srv, int argc, char **argv)
{
	char run_dir[PATH_MAX] = "", err[512];
	struct dpdk_run run = {0};
	bool eal_cleanup = true;
	int ret, status = 1;

	cmd_argc = argc;
	cmd_argv = argv;
	ret = kern_blas_one_thread(argv);
	if (ret)
		fprintf(stderr, "%s: cannot restart with one OpenBLAS thread: %s\n", s->who,
			strerror(-ret));
	ret = conf_apply(s->conf, &argc, &argv);
	if (ret)
		return ret < 0 ? 2 : 0;
	ret = dpdk_preflight_eal(s, argc, argv);
	if (ret)
		return ret;
	ret = rte_eal_init(argc, argv);
	if (ret < 0) {
		fprintf(stderr, "%s: rte_eal_init: %s\n", s->who,
			rte_errno ? rte_strerror(rte_errno) : "failed (EAL's lines above say why)");
		if (runtime_dir_unheld(rte_eal_get_runtime_dir()))
			remove_runtime_dir(rte_eal_get_runtime_dir());
		return 1;
	}
	if (rte_eal_process_type() == RTE_PROC_PRIMARY)
		snprintf(run_dir, sizeof(run_dir), "%s", rte_eal_get_runtime_dir());
	argc -= ret;
	argv += ret;
	argv[0] = (char *)s->conf->cmd->prog;
	if (s->options(srv, argc, argv, &run)) {
		status = 2;
		goto out_eal;
	}
	status = dpdk_preflight_ports(s);
	if (status)
		goto out_eal;
	status = 1;
	signal(SIGINT, on_signal);
	signal(SIGTERM, on_signal);
	signal(SIGHUP, on_hup);
	ret = s->setup(srv, err, sizeof(err));
	if (ret) {
		fprintf(stderr, "%s: %s\n", s->who, err);
		goto out_teardown;
	}
	dpdk_telemetry_register(s, srv);
	ret = dpdk_metrics_start(s, srv, &run, err, sizeof(err));
	if (ret) {
		fprintf(stderr, "%s: %s\n", s->who, err);
		goto out_teardown;
	}
	s->start(srv);
	dpdk_metrics_ready();
	fflush(stdout);
	s->stop(srv, run_loop(s, srv, &run));
	write_report(s, srv, run.stats_file);
	status = 0;
out_teardown:
	dpdk_metrics_stop();
	dpdk_telemetry_register(s, NULL);
	eal_cleanup = s->teardown(srv);
out_eal:
	if (eal_cleanup)
		rte_eal_cleanup();
	if (run_dir[0])
		remove_runtime_dir(run_dir);
	return status;
}
