// SPDX-License-Identifier: MIT
/* splitnic-host's option table (host/opts.h). */
#include <errno.h>
#include <stddef.h>
#include <stdio.h>
#include <string.h>

#include "host/opts.h"
#include "metrics/metrics.h"
#include "nicfw/chain.h"

#define HOST_PROG "splitnic-host"

static const struct conf_opt host_rows[] = {
    CONF_LIST_ROW("model", "FILE[:MODE[:SPLIT]]", struct host_opts, model_spec, n_models,
		  "a model (up to 8); MODE coproc|host-only|fallback, SPLIT an op or a plan file; "
		  "its own batching after it: ,max-batch=N,max-queue-delay-us=US"),
    CONF_IPV4_ROW("ip", "A.B.C.D", struct host_opts, ip, NULL,
		  "the address the front-ends send to (splitnic-nic's --ip; required)"),
    CONF_INT_ROW("port", "UDP", struct host_opts, udp_port, 1, 65535, "21326",
		 "the inference traffic's UDP port"),
    CONF_IPV4_ROW("nic-ip", "A.B.C.D", struct host_opts, nic_ip, NULL,
		  "the NIC's address (default --ip)"),
    CONF_SCALED_ROW("nic-timeout-us", "US", struct host_opts, nic_timeout_ns, 1, 60000000, 1000,
		    "200000", "a NIC that has not answered by then is late: the request runs here"),
    CONF_INT_ROW("nic-window", "N", struct host_opts, window, 1, KEXEC_FIFO, "32",
		 "ACTIVATIONs in flight to the NIC per worker and model"),
    CONF_INT_ROW("queue", "N", struct host_opts, queue, 1, 65536, "64",
		 "requests waiting per worker and model (full: ERROR busy)"),
    CONF_BATCH_ROWS(struct host_opts, batch, HOST_MAX_BATCH),
    CONF_INT_ROW("batch", "N", struct host_opts, batch.max_batch, 1, HOST_MAX_BATCH, NULL,
		 "the same as --max-batch"),
    CONF_SCALED_ROW("batch-wait-us", "US", struct host_opts, batch.max_delay_ns, 0,
		    CONF_BATCH_MAX_DELAY_US, 1000, NULL, "the same as --max-queue-delay-us"),
    CONF_TRUST_ROWS(struct host_opts, trust, error_rate, error_burst, "10000", NULL,
		    "front-end and worker"),
    CONF_INT_ROW("payload", "BYTES", struct host_opts, payload, PROTO_MIN_PAYLOAD, 1472, "1400",
		 "UDP payload per datagram"),
    CONF_SCALED_ROW("drain-ms", "MS", struct host_opts, run.drain_ns, 0, 600000, 1000000, "5000",
		    "at SIGINT/SIGTERM, at most MS to finish the requests in hand"),
    CONF_SCALED_ROW("drain-hold-ms", "MS", struct host_opts, run.drain_hold_ns, 0, 600000, 1000000,
		    "0",
		    "and at least MS answering HEALTH as draining (a balancer's check sees it)"),
    CONF_ENUM_ROW(
	"poll", "adaptive|busy", struct host_opts, run.poll, "adaptive",
	"idle lcores: busy-poll a while, then sleep (docs/operator-guide.md), or always poll"),
    CONF_INT_ROW("idle-sleep-us", "US", struct host_opts, run.idle_sleep_us, 0, 1000000, "10000",
		 "--poll adaptive: the longest sleep of an idle lcore (0: never sleeps)"),
    CONF_INT_ROW("queues", "N", struct host_opts, queues, 1, HOST_MAX_WORKERS, NULL,
		 "RX/TX queue pairs asked for (default: one per worker lcore)"),
    CONF_STR_ROW("stats-file", "FILE", offsetof(struct host_opts, run.stats_file), NULL,
		 "every counter, at exit"),
    METRICS_OPT_ROWS(struct host_opts, run.metrics_port, run.metrics_addr),
    CONF_ENUM_ROW("nic", "port|inproc", struct host_opts, inproc, "port",
		  "the NIC behind the port, or its stage in this process on its own lcore"),
    CONF_INT_ROW("nic-executors", "E", struct host_opts, nic_executors, 1, NICFW_MAX_EXEC, "16",
		 "--nic inproc: executors in a chain"),
    CONF_TEXT_ROW("name", "NAME", offsetof(struct host_opts, name), PROTO_HEALTH_IDENT_LEN, NULL,
		  "its identity in HEALTH reports (default splitnic-host@IP)"),
    CONF_CHOICE_ROW("precision", "certified|exact|float32", offsetof(struct host_opts, precision),
		    "certified",
		    "float layers: float32 + float64 rechecks, float64, plain float32"),
};

static const struct conf_cmd host_cmd = {
    CONF_CMD(HOST_PROG,
	     "EAL-ARGS -- --model FILE[:MODE[:SPLIT]] [--model ...] --ip A.B.C.D [OPTIONS]",
	     "the host: runs the models' host parts and hands the activations to the NIC",
	     host_rows, 0, 0, NULL),
    .notes = CONF_SERVER_NOTES(HOST_PROG)};

/* A [model NAME] section's file, mode, split, batching -> --model FILE[:MODE[:SPLIT]][,...]. */
static int host_model_spec(const char *const *v, char *out, size_t outlen)
{
	int n = snprintf(out, outlen, "%s%s%s%s%s", v[0], v[1] || v[2] ? ":" : "", v[1] ? v[1] : "",
			 v[2] ? ":" : "", v[2] ? v[2] : "");

	return n < 0 || (size_t)n >= outlen ? -ENAMETOOLONG
					    : conf_batch_spec(v[3], v[4], out, outlen);
}

static const struct conf_model_key host_model_keys[] = {{"file", true},
							{"mode", false},
							{"split", false},
							{"max-batch", false},
							{"max-queue-delay-us", false}};

const struct conf_server host_conf = {&host_cmd, host_model_keys, 5, host_model_spec};

int host_opts_parse(struct host_opts *o, int argc, char **argv)
{
	memset(o, 0, sizeof(*o));
	if (conf_parse(&host_cmd, argc, argv, o) < 0)
		return -EINVAL;
	if (!o->n_models || !o->ip) {
		fprintf(stderr, HOST_PROG ": %s\n",
			!o->n_models ? "give at least one --model"
				     : "give --ip (the server address, splitnic-nic's --ip)");
		conf_usage(stderr, &host_cmd);
		return -EINVAL;
	}
	if (!o->nic_ip)
		o->nic_ip = o->ip;
	return 0;
}
