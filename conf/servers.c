// SPDX-License-Identifier: MIT
/*
 * The servers' option tables: their getopt options, their defaults, their --help and the
 * [server] keys of their configuration files (conf/conf.h) all come from these rows; their
 * values are parsed by each server's option callback (nicfw/nic/main.c, host/main.c).
 */
#include <errno.h>
#include <limits.h>
#include <stdio.h>

#include "conf/conf.h"

#define SERVER_NOTES(PROG)                                                                         \
	"EAL-ARGS are DPDK's EAL options (cores, memory, devices, --file-prefix): `" PROG          \
	" --eal-help`\n"                                                                           \
	"lists them. --config FILE (anywhere on the command line) reads the options from a\n"      \
	"configuration file, the command line winning (docs/operator-guide.md); its [server]\n"    \
	"keys are the options above but --model.\n"

static const struct conf_opt nic_rows[] = {
    CONF_CALL_ROW("model", "[ID=]FILE[@K]", CONF_NIC_MODEL, NULL,
		  "a model (up to 16): its id ID or its name's, its NIC part from op K"),
    CONF_CALL_ROW("executors", "E", CONF_NIC_EXECUTORS, "16", "executors in a chain (1..256)"),
    CONF_CALL_ROW("platform", "lcore|emu", CONF_NIC_PLATFORM, "lcore",
		  "the chain on DPDK lcores, or on the NFP emulator spending its modeled time"),
    CONF_CALL_ROW("port", "UDP", CONF_NIC_PORT, "21326", "the inference traffic's UDP port"),
    CONF_CALL_ROW("ip", "A.B.C.D", CONF_NIC_IP, NULL, "its address on the wire (answers ARP)"),
    CONF_CALL_ROW("wire-port", "N", CONF_NIC_WIRE_PORT, "0", "the front-ends' port (index)"),
    CONF_CALL_ROW("host-port", "N", CONF_NIC_HOST_PORT, "1", "the host's port (index)"),
    CONF_CALL_ROW("payload", "BYTES", CONF_NIC_PAYLOAD, "1400", "UDP payload per datagram"),
    CONF_CALL_ROW("duration", "S", CONF_NIC_DURATION, NULL, "stop after S seconds"),
    CONF_CALL_ROW("stats-file", "FILE", CONF_NIC_STATS_FILE, NULL, "every counter, at exit"),
    CONF_CALL_ROW("notify-host", NULL, CONF_NIC_NOTIFY_HOST, NULL,
		  "copy each RESPONSE to an ACTIVATION to the host (co-processor mode)"),
    CONF_CALL_ROW("name", "NAME", CONF_NIC_NAME, NULL,
		  "its identity in HEALTH reports (default splitnic-nic@IP)"),
    CONF_CALL_ROW("idle-sleep-us", "US", CONF_NIC_IDLE_SLEEP_US, "0",
		  "an idle packet loop sleeps (a shared core)"),
    CONF_CALL_ROW("drain-ms", "MS", CONF_NIC_DRAIN_MS, "1000",
		  "at SIGINT/SIGTERM, at most MS to finish the requests in hand"),
    CONF_CALL_ROW(
	"allow", "CIDR", CONF_NIC_ALLOW, NULL,
	"front-ends answered (repeatable; default: all, no reply larger than its request)"),
    CONF_CALL_ROW("error-rate", "N", CONF_NIC_ERROR_RATE, "1000",
		  "ERRORs per second per front-end, at most"),
    CONF_CALL_ROW("error-burst", "N", CONF_NIC_ERROR_BURST, "100",
		  "ERRORs at once per front-end, at most"),
};

static const struct conf_cmd nic_cmd = {
    CONF_CMD("splitnic-nic", "EAL-ARGS -- --model [ID=]FILE[@K] [--model ...] [OPTIONS]",
	     "the NIC: forwards the wire port <-> the host port, answers ARP, runs the binary "
	     "layers",
	     nic_rows, 0, UINT_MAX, NULL),
    .notes = SERVER_NOTES("splitnic-nic")};

static const struct conf_opt host_rows[] = {
    CONF_CALL_ROW("model", "FILE[:MODE[:SPLIT]]", CONF_HOST_MODEL, NULL,
		  "a model (up to 8); MODE coproc|host-only|fallback, SPLIT an op or a plan file"),
    CONF_CALL_ROW("ip", "A.B.C.D", CONF_HOST_IP, NULL,
		  "the address the front-ends send to (splitnic-nic's --ip; required)"),
    CONF_CALL_ROW("port", "UDP", CONF_HOST_NUMBER, "21326", "the inference traffic's UDP port"),
    CONF_CALL_ROW("nic-ip", "A.B.C.D", CONF_HOST_NIC_IP, NULL, "the NIC's address (default --ip)"),
    CONF_CALL_ROW("nic-timeout-us", "US", CONF_HOST_NUMBER, "200000",
		  "a NIC that has not answered by then is late: the request runs here"),
    CONF_CALL_ROW("nic-window", "N", CONF_HOST_NUMBER, "32",
		  "ACTIVATIONs in flight to the NIC per worker and model"),
    CONF_CALL_ROW("queue", "N", CONF_HOST_NUMBER, "64",
		  "requests waiting per worker and model (full: ERROR busy)"),
    CONF_CALL_ROW("batch", "MAX", CONF_HOST_NUMBER, "1", "requests per batch of the host stages"),
    CONF_CALL_ROW("batch-wait-us", "US", CONF_HOST_NUMBER, "0", "how long a batch waits to fill"),
    CONF_CALL_ROW(
	"allow", "CIDR", CONF_HOST_ALLOW, NULL,
	"front-ends answered (repeatable; default: all, no reply larger than its request)"),
    CONF_CALL_ROW("payload", "BYTES", CONF_HOST_NUMBER, "1400", "UDP payload per datagram"),
    CONF_CALL_ROW("drain-ms", "MS", CONF_HOST_NUMBER, "5000",
		  "at SIGINT/SIGTERM, at most MS to finish the requests in hand"),
    CONF_CALL_ROW("drain-hold-ms", "MS", CONF_HOST_NUMBER, "0",
		  "and at least MS answering HEALTH as draining (a balancer's check sees it)"),
    CONF_CALL_ROW("idle-sleep-us", "US", CONF_HOST_NUMBER, "0",
		  "an idle worker sleeps (a shared core)"),
    CONF_CALL_ROW("error-rate", "N", CONF_HOST_NUMBER, "10000",
		  "ERRORs per second per front-end and worker, at most (0: no limit)"),
    CONF_CALL_ROW("queues", "N", CONF_HOST_NUMBER, NULL,
		  "RX/TX queue pairs asked for (default: one per worker lcore)"),
    CONF_CALL_ROW("stats-file", "FILE", CONF_HOST_STATS_FILE, NULL, "every counter, at exit"),
    CONF_CALL_ROW("nic", "port|inproc", CONF_HOST_NIC, "port",
		  "the NIC behind the port, or its stage in this process on its own lcore"),
    CONF_CALL_ROW("nic-executors", "E", CONF_HOST_NUMBER, "16",
		  "--nic inproc: executors in a chain"),
    CONF_CALL_ROW("name", "NAME", CONF_HOST_NAME, NULL,
		  "its identity in HEALTH reports (default splitnic-host@IP)"),
    CONF_CALL_ROW("precision", "certified|exact|float32", CONF_HOST_PRECISION, "certified",
		  "float layers: float32 + float64 rechecks, float64, plain float32"),
};

static const struct conf_cmd host_cmd = {
    CONF_CMD("splitnic-host",
	     "EAL-ARGS -- --model FILE[:MODE[:SPLIT]] [--model ...] --ip A.B.C.D [OPTIONS]",
	     "the host: runs the models' host parts and hands the activations to the NIC",
	     host_rows, 0, UINT_MAX, NULL),
    .notes = SERVER_NOTES("splitnic-host")};

static const struct conf_model_key nic_model_keys[] = {
    {"file", true}, {"id", false}, {"first-op", false}};
static const struct conf_model_key host_model_keys[] = {
    {"file", true}, {"mode", false}, {"split", false}};

static int nic_model_spec(const char *const *v, char *out, size_t outlen)
{
	int n = snprintf(out, outlen, "%s%s%s%s%s", v[1] ? v[1] : "", v[1] ? "=" : "", v[0],
			 v[2] ? "@" : "", v[2] ? v[2] : "");

	return n < 0 || (size_t)n >= outlen ? -ENAMETOOLONG : 0;
}

static int host_model_spec(const char *const *v, char *out, size_t outlen)
{
	int n = snprintf(out, outlen, "%s%s%s%s%s", v[0], v[1] || v[2] ? ":" : "", v[1] ? v[1] : "",
			 v[2] ? ":" : "", v[2] ? v[2] : "");

	return n < 0 || (size_t)n >= outlen ? -ENAMETOOLONG : 0;
}

const struct conf_server conf_nic = {&nic_cmd, nic_model_keys, 3, nic_model_spec};
const struct conf_server conf_host = {&host_cmd, host_model_keys, 3, host_model_spec};
