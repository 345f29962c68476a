/* SPDX-License-Identifier: MIT */
/*
 * dpdk/server.h — the skeleton both DPDK servers (splitnic-nic, splitnic-host) run: the life of
 * a DPDK server process, in one function, dpdk_server_main(), with the server's own parts as the
 * operations of its struct dpdk_server. In this order:
 *
 *   1. OpenBLAS on the calling thread only (kern_blas_one_thread: the lcores are the threads)
 *   2. --help, --version, --eal-help and --config FILE, answered or read (conf/conf.h)
 *   3. the preflight (dpdk/preflight.h: what EAL would fail on, named), then rte_eal_init with
 *      the EAL arguments; the EAL's runtime folder noted (primary process)
 *   4. the server's own options after "--" (options: its table, conf/opts.h), and from them
 *      what the skeleton runs by (struct dpdk_run); the ports found listed (dpdk/preflight.h)
 *   5. SIGINT and SIGTERM caught: the first one starts the drain
 *   6. setup: models, pools, ports, the workers' state; then its telemetry commands registered
 *      (PREFIX/stats from counters, and its own struct dpdk_tel_cmd table)
 *   7. start: the worker lcores launched, the "serving" line
 *   8. the main lcore's loop: step, once per turn; the idle policy (dpdk/idle.h) after turns
 *      without work; from the first signal the drain: drain once, then turns until in_use is 0
 *      (after drain_hold_ns at least) or drain_ns have passed; or duration_s's end
 *   9. stop (the worker lcores stopped, the last line), then the counters (report) to the stats
 *      file or standard output
 *  10. teardown; rte_eal_cleanup unless teardown says it must be left out; the EAL's runtime
 *      folder (/var/run/dpdk/PREFIX: config, sockets, locks) removed
 *
 * The runtime folder is removed on every way out after step 3, and after a failed rte_eal_init
 * too, unless another process holds it (a primary process with the same prefix: the reason
 * EAL refused). Not when the process is killed.
 *
 * Exit status: 0 after a clean stop; 2 on bad arguments (options, configuration file, a server
 * option before "--"); 1 when the preflight, EAL or the set-up fails (privileges, hugepages, a
 * model, a port, memory; the message says which).
 *
 * Where further parts of a server's life go, each one place for both servers:
 *   - power-aware polling (DPDK's l3fwd-power: pause, then sleep, then RX interrupts): the idle
 *     policy of dpdk/idle.h, which every poll loop already reports its work to, turn by turn;
 *   - the metrics endpoint (dpdk/metrics.h, --metrics-port): another reader of counters, as
 *     telemetry is, started after step 6, ready from step 7, not ready from the drain on;
 *   - reloading models without a restart: SIGHUP makes the main lcore's loop ask the server's
 *     reloader between turns (it only asks: the reloader's thread, dpdk/reloader.h, does the
 *     work off the lcores); the telemetry command reload_path and POST /-/reload on the metrics
 *     port ask and wait.
 */
#ifndef DPDK_SERVER_H
#define DPDK_SERVER_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "conf/conf.h"

struct rte_tel_data;
struct dpdk_reloader;
struct dpdk_metrics_ops;

/* What the skeleton runs by, from the server's options. */
struct dpdk_run {
	uint64_t drain_ns;	  /* the drain lasts at most this long ... */
	uint64_t drain_hold_ns;	  /* ... and at least this long (HEALTH says draining) */
	double duration_s;	  /* > 0: stop after this long */
	uint32_t poll;		  /* the idle policy (dpdk/idle.h): enum dpdk_poll */
	uint32_t idle_sleep_us;	  /* its longest sleep (0: busy-poll) */
	const char *stats_file;	  /* the counters at exit (NULL: standard output) */
	const char *metrics_port; /* the metrics endpoint's TCP port (NULL: none; dpdk/metrics.h) */
	const char *metrics_addr; /* ... and address (NULL: every address) */
};

/* A telemetry command of the server: fn fills d (a dictionary already started) from srv. */
struct dpdk_tel_cmd {
	const char *path; /* "/splitnic/nic/models" */
	const char *help; /* at most RTE_TEL_MAX_STRING_LEN - 1 characters, else no command */
	int (*fn)(void *srv, const char *params, struct rte_tel_data *d);
};

struct dpdk_server {
	const char *who;		/* the prefix of its messages: "nic", "host" */
	const struct conf_server *conf; /* its options, --help, configuration file */
	const char *stats_path;		/* its counters' telemetry command: "/splitnic/nic/stats" */
	const char *stats_help;
	const struct dpdk_tel_cmd *tel; /* its other telemetry commands */
	unsigned n_tel;
	const struct dpdk_metrics_ops *metrics; /* its histograms and gauges (NULL: none) */

	/* Its options (argv[0] its name, after EAL's) into srv, and what the skeleton runs by
	 * into run: 0, or -EINVAL after a message (exit 2). */
	int (*options)(void *srv, int argc, char **argv, struct dpdk_run *run);
	/* Everything allocated and started but the worker lcores: 0, or -errno with err. */
	int (*setup)(void *srv, char *err, size_t errlen);
	/* The worker lcores launched; says that it serves. */
	void (*start)(void *srv);
	/* One turn of the main lcore: the work it did (0: an idle turn). */
	uint32_t (*step)(void *srv);
	/* The drain begins (once, at the first SIGINT/SIGTERM): new requests are refused. */
	void (*drain)(void *srv);
	/* Requests held now: the drain ends when none is left. */
	uint32_t (*in_use)(void *srv);
	/* The loop is over (sig: the signal that started the drain, 0 when duration_s ended):
	 * the worker lcores stopped, the last line said. */
	void (*stop)(void *srv, int sig);
	/* Every counter as key, value: what its stats telemetry command (and any other reader of
	 * its counters) gets; report: what the stats file gets (NULL: the same). */
	void (*counters)(void *srv, void (*put)(void *arg, const char *key, uint64_t v), void *arg);
	void (*report)(void *srv, void (*put)(void *arg, const char *key, uint64_t v), void *arg);
	/* Everything setup did, undone (also after a failed setup); false: rte_eal_cleanup must be
	 * left out (a thread of EAL's is parked in the server's code until the process ends). */
	bool (*teardown)(void *srv);
	/* Models without a restart (NULL: the server has none): its reloader (dpdk/reloader.h),
	 * NULL where this run has none (no_reload: why, what a reload answers then); reload_path:
	 * its telemetry command ("/splitnic/host/reload"). */
	struct dpdk_reloader *(*reloader)(void *srv);
	const char *no_reload;
	const char *reload_path;
};

/* The command line the process was started with (before --config was read): what a reload
 * reads again. */
void dpdk_server_argv(int *argc, char ***argv);

/*
 * The options again, as at start, for a reload: that command line and its configuration file
 * read by cmd into v (conf_args_free(v) after use), the server's options (after "--") parsed
 * into o by parse. 0, or -errno with err ("the options (above)" when parse said why).
 */
int dpdk_server_reread(const struct conf_server *cmd, int (*parse)(void *o, int argc, char **argv),
		       void *o, struct conf_args *v, char *err, size_t errlen);

/* Runs server s with its state srv (zeroed, static) from argv: the exit status. */
int dpdk_server_main(const struct dpdk_server *s, void *srv, int argc, char **argv);

/* "SIGINT", "SIGTERM", or "signal N" */
const char *dpdk_signal_name(int sig);

/* telemetry.c: s's commands registered (once per process), answering from srv; srv NULL: they
 * answer an empty dictionary from now on (before srv goes away). */
void dpdk_telemetry_register(const struct dpdk_server *s, void *srv);

#endif /* DPDK_SERVER_H */
