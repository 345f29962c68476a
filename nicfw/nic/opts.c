// SPDX-License-Identifier: MIT
/* splitnic-nic's option table (nicfw/nic/opts.h). */
#include <errno.h>
#include <math.h>
#include <stddef.h>
#include <stdio.h>
#include <string.h>

#include <rte_config.h>

#include "metrics/metrics.h"
#include "nicfw/chain.h"
#include "nicfw/nic/opts.h"
#include "protocol/proto.h"

#define NIC_PROG "splitnic-nic"

static const struct conf_opt nic_rows[] = {
    CONF_LIST_ROW("model", "[ID=]FILE[@K]", struct nic_opts, model_spec, n_models,
		  "a model (up to 16): its id ID or its name's, its NIC part from op K"),
    CONF_INT_ROW("executors", "E", struct nic_opts, executors, 1, NICFW_MAX_EXEC, "16",
		 "executors in a chain (1..256)"),
    CONF_ENUM_ROW("platform", "lcore|emu", struct nic_opts, emu, "lcore",
		  "the chain on DPDK lcores, or on the NFP emulator spending its modeled time"),
    CONF_INT_ROW("port", "UDP", struct nic_opts, udp_port, 1, 65535, "21326",
		 "the inference traffic's UDP port"),
    CONF_IPV4_ROW("ip", "A.B.C.D", struct nic_opts, ip, NULL,
		  "its address on the wire (required; answers ARP)"),
    CONF_INT_ROW("wire-port", "N", struct nic_opts, wire, 0, RTE_MAX_ETHPORTS - 1, "0",
		 "the front-ends' port (index)"),
    CONF_INT_ROW("host-port", "N", struct nic_opts, host, 0, RTE_MAX_ETHPORTS - 1, "1",
		 "the host's port (index)"),
    CONF_INT_ROW("payload", "BYTES", struct nic_opts, payload, PROTO_MIN_PAYLOAD, 1472, "1400",
		 "UDP payload per datagram"),
    CONF_POSITIVE_ROW("duration", "S", offsetof(struct nic_opts, run.duration_s), INFINITY,
		      "seconds", NULL, "stop after S seconds"),
    CONF_STR_ROW("stats-file", "FILE", offsetof(struct nic_opts, run.stats_file), NULL,
		 "every counter, at exit"),
    METRICS_OPT_ROWS(struct nic_opts, run.metrics_port, run.metrics_addr),
    CONF_FLAG_ROW("notify-host", offsetof(struct nic_opts, notify_host),
		  "copy each RESPONSE to an ACTIVATION to the host (co-processor mode)"),
    CONF_TEXT_ROW("name", "NAME", offsetof(struct nic_opts, name), PROTO_HEALTH_IDENT_LEN, NULL,
		  "its identity in HEALTH reports (default splitnic-nic@IP)"),
    CONF_ENUM_ROW("poll", "adaptive|busy", struct nic_opts, run.poll, "adaptive",
		  "an idle packet loop: busy-poll a while, then sleep (docs/operator-guide.md), or "
		  "always poll"),
    CONF_INT_ROW("idle-sleep-us", "US", struct nic_opts, run.idle_sleep_us, 0, 1000000, "10000",
		 "--poll adaptive: the longest sleep of an idle packet loop (0: never sleeps)"),
    CONF_SCALED_ROW("drain-ms", "MS", struct nic_opts, run.drain_ns, 0, 600000, 1000000, "1000",
		    "at SIGINT/SIGTERM, at most MS to finish the requests in hand"),
    CONF_SCALED_ROW("host-probe-ms", "MS", struct nic_opts, host_probe_ns, 0, 10000, 1000000, "200",
		    "HEALTH-probe the host this often; gone after " NIC_HOST_MISSES_S
		    " without a frame from it (0: off)"),
    CONF_TRUST_ROWS(struct nic_opts, trust, err_rate, err_burst, "1000", "100", "front-end"),
};

static const struct conf_cmd nic_cmd = {
    CONF_CMD(NIC_PROG, "EAL-ARGS -- --model [ID=]FILE[@K] [--model ...] [OPTIONS]",
	     "the NIC: forwards the wire port <-> the host port, answers ARP, runs the binary "
	     "layers",
	     nic_rows, 0, 0, NULL),
    .notes = CONF_SERVER_NOTES(NIC_PROG)};

/* A [model NAME] section's file, id, first-op -> --model [ID=]FILE[@K]. */
static int nic_model_spec(const char *const *v, char *out, size_t outlen)
{
	int n = snprintf(out, outlen, "%s%s%s%s%s", v[1] ? v[1] : "", v[1] ? "=" : "", v[0],
			 v[2] ? "@" : "", v[2] ? v[2] : "");

	return n < 0 || (size_t)n >= outlen ? -ENAMETOOLONG : 0;
}

static const struct conf_model_key nic_model_keys[] = {
    {"file", true}, {"id", false}, {"first-op", false}};

const struct conf_server nic_conf = {&nic_cmd, nic_model_keys, 3, nic_model_spec};

/* Model i's spec [ID=]FILE[@K] (split in place) into its path, id and first op. */
static int model_resolve(struct nic_opts *o, uint32_t i)
{
	char *spec = (char *)o->model_spec[i], *at = strrchr(spec, '@'), *eq;
	int64_t k;

	o->first[i] = UINT32_MAX;
	if (at) {
		if (conf_int(NIC_PROG, "--model @K", at + 1, 0, UINT16_MAX, &k))
			return -EINVAL;
		o->first[i] = (uint32_t)k;
		*at = 0;
	}
	eq = strchr(spec, '=');
	o->model_path[i] = eq ? eq + 1 : spec;
	if (eq) {
		*eq = 0;
		o->model_id[i] = conf_model_id(spec);
		o->id_given[i] = true;
	}
	return 0;
}

int nic_opts_parse(struct nic_opts *o, int argc, char **argv)
{
	memset(o, 0, sizeof(*o));
	if (conf_parse(&nic_cmd, argc, argv, o) < 0)
		return -EINVAL;
	for (uint32_t i = 0; i < o->n_models; i++)
		if (model_resolve(o, i))
			return -EINVAL;
	if (!o->n_models || o->wire == o->host) {
		fprintf(stderr, NIC_PROG ": %s\n",
			!o->n_models ? "give at least one --model"
				     : "--wire-port and --host-port must differ");
		conf_usage(stderr, &nic_cmd);
		return -EINVAL;
	}
	if (!o->ip) {
		fprintf(stderr, NIC_PROG ": give --ip A.B.C.D, its address on the wire: it answers "
					 "ARP for it and sends its replies from it\n");
		return -EINVAL;
	}
	return 0;
}
