/* SPDX-License-Identifier: MIT */
/*
 * host/opts.h — splitnic-host's options: one table (host/opts.c) from which its parser, its
 * --help, its defaults and the [server] keys of splitnic-host.conf come (conf/opts.h,
 * conf/conf.h). Builds without DPDK (in libsnhost).
 */
#ifndef HOST_OPTS_H
#define HOST_OPTS_H

#include <stdbool.h>
#include <stdint.h>

#include "conf/batch.h"
#include "conf/conf.h"
#include "dpdk/server.h"
#include "host/host.h"
#include "protocol/trust.h"

struct host_opts {
	const char *model_spec[HOST_MAX_MODELS]; /* FILE[:MODE[:SPLIT]], as given */
	uint32_t n_models;
	uint16_t udp_port;
	uint32_t ip, nic_ip;
	uint64_t nic_timeout_ns;
	uint32_t window;
	uint32_t queue;
	struct conf_batch batch;      /* every model's, unless its --model value says otherwise */
	struct proto_trust_cfg trust; /* --allow; the rate from error_rate at set-up */
	uint32_t payload;
	struct dpdk_run run;  /* drain, idle policy, stats file, metrics endpoint: the skeleton's */
	uint32_t error_rate;  /* ERRORs per second per source and worker; 0: no limit */
	uint32_t error_burst; /* ... and at once; 0 (not given): error_rate */
	uint32_t queues;      /* RX/TX queue pairs asked for; 0: as many as fit */
	const char *name;     /* --name: the HEALTH identity */
	const char *precision;	/* --precision: of the float layers */
	bool inproc;		/* --nic inproc */
	uint32_t nic_executors; /* its executor chains */
};

/* splitnic-host's options and configuration file. */
extern const struct conf_server host_conf;

/*
 * The options after EAL's (argv[0] the program) into o, zeroed first; --nic-ip defaults to
 * --ip: 0, or -EINVAL after a message and the usage on stderr.
 */
int host_opts_parse(struct host_opts *o, int argc, char **argv);

#endif /* HOST_OPTS_H */
