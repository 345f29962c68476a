/* SPDX-License-Identifier: MIT */
/*
 * nicfw/nic/opts.h — splitnic-nic's options: one table (nicfw/nic/opts.c) from which its
 * parser, its --help, its defaults and the [server] keys of splitnic-nic.conf come (conf/opts.h,
 * conf/conf.h). The header builds without DPDK (tests/test_conf.c reads the table).
 */
#ifndef NICFW_NIC_OPTS_H
#define NICFW_NIC_OPTS_H

#include <stdbool.h>
#include <stdint.h>

#include "conf/conf.h"
#include "dpdk/server.h"
#include "nicfw/dispatch.h"
#include "protocol/trust.h"

/* The host is gone after this many --host-probe-ms periods without a frame from it (and as a
 * string). */
#define NIC_HOST_MISSES	  5
#define NIC_HOST_MISSES_S "5"

struct nic_opts {
	/* --model [ID=]FILE[@K], as given, and resolved by nic_opts_parse() */
	const char *model_spec[NICFW_DISP_MAX_MODELS];
	uint32_t n_models;
	const char *model_path[NICFW_DISP_MAX_MODELS];
	uint32_t model_id[NICFW_DISP_MAX_MODELS];
	uint32_t first[NICFW_DISP_MAX_MODELS]; /* @K; UINT32_MAX: kexec_nic_split */
	bool id_given[NICFW_DISP_MAX_MODELS];
	bool notify_host;
	struct proto_trust_cfg trust; /* --allow, then the rate below */
	uint32_t err_rate, err_burst;
	uint32_t executors;
	bool emu; /* --platform emu */
	uint16_t udp_port;
	uint32_t ip;
	uint16_t wire, host;
	uint32_t payload;
	struct dpdk_run run; /* duration, drain, idle policy, stats file, metrics: the skeleton's */
	const char *name;
	uint64_t host_probe_ns; /* 0: no probes, every REQUEST not the NIC's passes up */
};

/* splitnic-nic's options and configuration file. */
extern const struct conf_server nic_conf;

/*
 * The options after EAL's (argv[0] the program) into o, zeroed first, each --model resolved:
 * 0, or -EINVAL after a message and the usage on stderr.
 */
int nic_opts_parse(struct nic_opts *o, int argc, char **argv);

#endif /* NICFW_NIC_OPTS_H */
