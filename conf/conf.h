/* SPDX-License-Identifier: MIT */
/*
 * conf/conf.h — the servers' configuration files (splitnic-nic.conf, splitnic-host.conf), read
 * with inih (Debian's libinih) and turned into the command line the server already parses.
 *
 * A server started with `--config FILE` (anywhere on its command line) runs as if it had been
 * given:
 *
 *     PROG  [eal] arguments  EAL arguments of the command line  --
 *           [server] options  one --model per [model NAME] section  server options of the
 *           command line
 *
 * Later options win in the servers' getopt parsing, so the command line overrides the file;
 * repeatable options (--allow, --vdev) add up; if the command line gives any --model, the
 * file's model sections are left out. The file:
 *
 *     [eal]                 DPDK's EAL arguments
 *     args = -l 0-1 -m 512  whitespace-separated arguments, as they are (repeatable)
 *     KEY = VALUE           --KEY=VALUE (repeatable: vdev = ..., file-prefix = ...);
 *                           VALUE true: --KEY alone; false: nothing
 *     [server]
 *     KEY = VALUE           --KEY=VALUE for each of the server's options but --model (its
 *                           option table, conf/servers.c: `PROG --help` lists them); flags
 *                           (notify-host) take true or false
 *     [model NAME]          one model and its mode, NAME only names the section
 *     file = PATH           the model file (required)
 *     splitnic-nic:  id = NUMBER|NAME (default: the model's name), first-op = K (the NIC part
 *                    starts at op K; default: the whole model) -> --model [ID=]PATH[@K]
 *     splitnic-host: mode = coproc|host-only|fallback, split = K|PLAN-FILE
 *                    -> --model PATH[:MODE[:SPLIT]]
 *
 * Comments start with ';' or '#'; lines are at most 199 characters; values cannot contain
 * spaces where they are split (args). Errors name the file, the line, the section and the key.
 */
#ifndef CONF_H
#define CONF_H

#include <stdbool.h>
#include <stddef.h>

#include "conf/opts.h"

struct conf_model_key {
	const char *name;
	bool required;
};

struct conf_server {
	const struct conf_cmd *cmd; /* the server's options (conf/opts.h), its --help */
	const struct conf_model_key *model_keys;
	size_t n_model_keys;
	/* a model section's values (indexed like model_keys, NULL if absent) -> --model's value */
	int (*model_spec)(const char *const *values, char *out, size_t outlen);
};

extern const struct conf_server conf_nic, conf_host;

/* What splitnic-nic's option callback switches on: the keys of conf_nic's rows. */
enum conf_nic_key {
	CONF_NIC_MODEL = 1,
	CONF_NIC_EXECUTORS,
	CONF_NIC_PLATFORM,
	CONF_NIC_PORT,
	CONF_NIC_IP,
	CONF_NIC_WIRE_PORT,
	CONF_NIC_HOST_PORT,
	CONF_NIC_PAYLOAD,
	CONF_NIC_DURATION,
	CONF_NIC_STATS_FILE,
	CONF_NIC_NOTIFY_HOST,
	CONF_NIC_NAME,
	CONF_NIC_IDLE_SLEEP_US,
	CONF_NIC_DRAIN_MS,
	CONF_NIC_ALLOW,
	CONF_NIC_ERROR_RATE,
	CONF_NIC_ERROR_BURST,
};

/* What splitnic-host's option callback switches on: the keys of conf_host's rows. */
enum conf_host_key {
	CONF_HOST_MODEL = 1,
	CONF_HOST_IP,
	CONF_HOST_NIC_IP,
	CONF_HOST_ALLOW,
	CONF_HOST_STATS_FILE,
	CONF_HOST_NIC,
	CONF_HOST_NAME,
	CONF_HOST_PRECISION,
	CONF_HOST_NUMBER, /* a whole number of the host's table of ranges, by the row's name */
};

/*
 * conf_parse (conf/opts.h) of a server's own arguments (after EAL's) into o, with its option
 * callback: the index of the first positional argument, or -1 after a message and the usage.
 */
int conf_server_parse(const struct conf_server *srv, int argc, char **argv, void *o,
		      int (*on_opt)(void *o, const struct conf_opt *opt, const char *arg));

/* A built argument vector: argv[argc] is NULL; every string owned. */
struct conf_args {
	int argc;
	char **argv;
};

/*
 * If argv (argc entries) holds --config FILE or --config=FILE, read FILE for server srv and set
 * *out to the combined vector above; else *out is a copy of argv. --eal-help anywhere makes *out
 * PROG --help (what EAL answers with its own options). Returns 0, or -EINVAL / -errno with a
 * message naming the file, line, section and key in err.
 */
int conf_argv(const struct conf_server *srv, int argc, char **argv, struct conf_args *out,
	      char *err, size_t errlen);
void conf_args_free(struct conf_args *a);

/*
 * The hook in a server's main(), before rte_eal_init: --help (or -h) and --version anywhere on
 * the command line, before or after "--", are answered here (the server's own options from its
 * table; returns 1: exit 0); else argc/argv are replaced by conf_argv's vector (which lives
 * until the process exits). Returns 0, 1, or -1 after printing the error on stderr.
 */
int conf_apply(const struct conf_server *srv, int *argc, char ***argv);

#endif /* CONF_H */
