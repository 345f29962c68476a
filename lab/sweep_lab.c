// SPDX-License-Identifier: MIT
/*
 * The C side of lab/sweep_lab.sh (the namespaces, the shaped link, the servers): run its verbs
 * and `splitnic client` against the lab's address (or running servers), read the client's JSON.
 */
#include <dirent.h>
#include <errno.h>
#include <jansson.h>
#include <math.h>
#include <stdbool.h>
#include <spawn.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/wait.h>
#include <unistd.h>

#include "dpdk/idle_policy.h"
#include "lab/sweep.h"
#include "protocol/proto.h"

extern char **environ;

/* argv run to its end; its stdout into out (NUL-terminated, up to cap - 1 bytes) when out. */
static int run_cmd(char *const argv[], char *out, size_t cap)
{
	posix_spawn_file_actions_t fa;
	int pipefd[2] = {-1, -1}, status = 0, ret;
	size_t len = 0;
	pid_t pid;

	if (out && pipe(pipefd))
		return -errno;
	posix_spawn_file_actions_init(&fa);
	if (out) {
		posix_spawn_file_actions_adddup2(&fa, pipefd[1], STDOUT_FILENO);
		posix_spawn_file_actions_addclose(&fa, pipefd[0]);
	}
	ret = posix_spawnp(&pid, argv[0], &fa, NULL, argv, environ);
	posix_spawn_file_actions_destroy(&fa);
	if (out)
		close(pipefd[1]);
	if (ret) {
		if (out)
			close(pipefd[0]);
		return -ret;
	}
	while (out) {
		ssize_t n = read(pipefd[0], out + len, cap - 1 - len);

		if (n < 0 && errno == EINTR)
			continue;
		if (n <= 0 || (len += (size_t)n) == cap - 1)
			break;
	}
	if (out) {
		out[len] = 0;
		close(pipefd[0]);
	}
	while (waitpid(pid, &status, 0) < 0)
		if (errno != EINTR)
			return -errno;
	return WIFEXITED(status) ? WEXITSTATUS(status) : 128 + WTERMSIG(status);
}

/*
 * The lab script of this executable (/proc/self/exe, an absolute path): the tree's
 * BUILD/../lab/sweep_lab.sh, else the installed PREFIX/bin/../share/splitnic/lab/sweep_lab.sh.
 * Into l->script; the tree's path when neither is there (for the message).
 */
static void lab_script_default(struct sweep_lab *l)
{
	static const char *const rel[] = {"lab/sweep_lab.sh", "share/splitnic/lab/sweep_lab.sh"};
	char top[sizeof(l->exe)], *slash;

	snprintf(top, sizeof(top), "%s", l->exe);
	for (int up = 0; up < 2; up++) /* BUILD or PREFIX/bin, then the tree or PREFIX */
		if ((slash = strrchr(top, '/')))
			*slash = 0;
	for (size_t i = 0; i < sizeof(rel) / sizeof(rel[0]); i++) {
		int len = snprintf(l->script, sizeof(l->script), "%s/%s", top, rel[i]);

		if (len < (int)sizeof(l->script) && !access(l->script, R_OK))
			return;
	}
	if (snprintf(l->script, sizeof(l->script), "%s/%s", top, rel[0]) >= (int)sizeof(l->script))
		l->script[0] = 0;
}

int sweep_lab_init(struct sweep_lab *l, const char *script, const char *tag, const char *servers,
		   const char *netns)
{
	ssize_t n = readlink("/proc/self/exe", l->exe, sizeof(l->exe) - 1);

	memset(l->script, 0, sizeof(l->script));
	l->up = false;
	l->servers = servers;
	l->netns = netns;
	l->stop = NULL;
	if (n <= 0)
		return -errno;
	l->exe[n] = 0;
	snprintf(l->tag, sizeof(l->tag), "%s", tag ? tag : "");
	if (!tag)
		snprintf(l->tag, sizeof(l->tag), "%x", (unsigned)getpid() & 0xfffffff);
	snprintf(l->dir, sizeof(l->dir), "/tmp/splitnic-lab-%s", l->tag);
	setenv("SPLITNIC", l->exe, 1);
	if (servers)
		return 0;
	if (script)
		snprintf(l->script, sizeof(l->script), "%s", script);
	else
		lab_script_default(l);
	if (access(l->script, R_OK)) {
		fprintf(stderr,
			"splitnic: %s: %s (the packet path's lab is lab/sweep_lab.sh, installed in "
			"PREFIX/share/splitnic/lab/: --lab PATH)\n",
			l->script, strerror(errno));
		return -ENOENT;
	}
	return 0;
}

int sweep_lab_verb(struct sweep_lab *l, const char *verb, char *const args[])
{
	char *argv[96] = {"bash", l->script, (char *)verb, l->tag};
	size_t n = 4;

	if (l->servers)
		return 0;
	for (size_t i = 0; args && args[i] && n < 95; i++)
		argv[n++] = args[i];
	argv[n] = NULL;
	return run_cmd(argv, NULL, 0);
}

size_t sweep_lab_host_args(char **args, size_t n, size_t max, const struct split_profile *pr,
			   const char *host_opt, struct sweep_host_args *buf)
{
	snprintf(buf->queue, sizeof(buf->queue), "%.0f", pr->v[SPLIT_P_HOST_QUEUE]);
	snprintf(buf->window, sizeof(buf->window), "%.0f", pr->v[SPLIT_P_NIC_WINDOW]);
	args[n++] = "--queue";
	args[n++] = buf->queue;
	args[n++] = "--nic-window";
	args[n++] = buf->window;
	return sweep_lab_words(args, n, max, host_opt, buf->opt);
}

size_t sweep_lab_words(char **args, size_t n, size_t max, const char *opts, char buf[SWEEP_OPT_LEN])
{
	snprintf(buf, SWEEP_OPT_LEN, "%s", opts ? opts : "");
	for (char *save = NULL, *t = strtok_r(buf, " ", &save); t && n < max;
	     t = strtok_r(NULL, " ", &save))
		args[n++] = t;
	return n;
}

/* A server's longest idle sleep in seconds from its extra options (sweep_lab_poll). */
static double poll_sleep_of(const char *opts)
{
	char buf[SWEEP_OPT_LEN], *save = NULL;
	double us = DPDK_IDLE_DEFAULT_US;
	bool busy = false;

	snprintf(buf, sizeof(buf), "%s", opts ? opts : "");
	for (char *t = strtok_r(buf, " ", &save); t; t = strtok_r(NULL, " ", &save)) {
		const char *v = NULL;

		if (!strncmp(t, "--idle-sleep-us=", 16))
			v = t + 16;
		else if (!strcmp(t, "--idle-sleep-us"))
			v = strtok_r(NULL, " ", &save);
		else if (!strncmp(t, "--poll=", 7))
			busy = !strcmp(t + 7, "busy");
		else if (!strcmp(t, "--poll")) {
			const char *m = strtok_r(NULL, " ", &save);

			busy = m && !strcmp(m, "busy");
		}
		if (v)
			us = strtod(v, NULL);
	}
	return busy ? 0 : us * 1e-6;
}

void sweep_lab_poll(struct split_profile *pr, const char *host_opt, const char *nic_opt)
{
	pr->v[SPLIT_P_POLL_HOST] = poll_sleep_of(host_opt);
	pr->v[SPLIT_P_POLL_NIC] = poll_sleep_of(nic_opt);
}

int sweep_lab_up(struct sweep_lab *l)
{
	if (l->servers)
		return 0;
	if (sweep_lab_verb(l, "up", NULL)) {
		fprintf(stderr, "splitnic: the lab (lab/sweep_lab.sh up) did not come up\n");
		return -EIO;
	}
	l->up = true;
	return 0;
}

int sweep_lab_shape(struct sweep_lab *l, double gbps, double burst)
{
	char rate[32], bytes[32];
	char *args[] = {rate, bytes, NULL};

	if (gbps > 0)
		snprintf(rate, sizeof(rate), "%g", gbps);
	else
		snprintf(rate, sizeof(rate), "none");
	snprintf(bytes, sizeof(bytes), "%.0f", burst);
	return sweep_lab_verb(l, "shape", args) ? -EIO : 0;
}

void sweep_remove_dir(const char *dir)
{
	DIR *d = opendir(dir);
	struct dirent *e;
	char path[512];

	while (d && (e = readdir(d)))
		if (strcmp(e->d_name, ".") && strcmp(e->d_name, "..")) {
			snprintf(path, sizeof(path), "%s/%s", dir, e->d_name);
			unlink(path);
		}
	if (d)
		closedir(d);
	rmdir(dir);
}

void sweep_lab_down(struct sweep_lab *l)
{
	char *stop[] = {l->dir, NULL};

	if (!l->up)
		return;
	sweep_lab_verb(l, "stop", stop);
	sweep_lab_verb(l, "down", NULL);
	sweep_remove_dir(l->dir);
	l->up = false;
}

static double jnum(json_t *o, const char *key)
{
	json_t *v = json_object_get(o, key);

	return json_is_number(v) ? json_number_value(v) : NAN;
}

int sweep_lab_client(struct sweep_lab *l, char *const args[], struct sweep_point *pt)
{
	static const char *const t_names[PROTO_T_COUNT] = {"total", "rx",   "queue", "host",
							   "pack",  "xfer", "nic",   "tx"};
	static char out[1 << 16];
	char *argv[64];
	json_t *j, *lat, *srv, *srv50, *err, *ex;
	json_error_t je;
	size_t n = 0;
	int rc;

	if (l->stop && *l->stop)
		return -EINTR; /* interrupted: the owner takes the lab down */
	if (l->servers && l->netns) {
		argv[n++] = "ip";
		argv[n++] = "netns";
		argv[n++] = "exec";
		argv[n++] = (char *)l->netns;
	}
	if (l->servers) {
		argv[n++] = l->exe;
		argv[n++] = "client";
		argv[n++] = (char *)l->servers;
	} else {
		argv[n++] = "bash";
		argv[n++] = l->script;
		argv[n++] = "client";
		argv[n++] = l->tag;
	}
	for (size_t i = 0; args[i] && n < 60; i++)
		argv[n++] = args[i];
	argv[n++] = "--json";
	argv[n] = NULL;
	rc = run_cmd(argv, out, sizeof(out));
	if (rc != 0 && rc != 3) { /* 3: some requests got no RESPONSE (overload: ERROR busy) */
		fprintf(stderr, "splitnic: the client exited %d\n", rc);
		return -EIO;
	}
	j = json_loads(out, 0, &je);
	if (!j) {
		fprintf(stderr, "splitnic: the client's JSON: %s\n", je.text);
		return -EIO;
	}
	memset(pt, 0, sizeof(*pt));
	lat = json_object_get(j, "latency_us");
	srv = json_object_get(j, "server_mean_ns");
	srv50 = json_object_get(j, "server_p50_ns");
	err = json_object_get(j, "errors");
	ex = json_object_get(j, "executors");
	pt->load = jnum(j, "rate");
	pt->p50 = json_is_object(lat) ? jnum(lat, "p50") : NAN;
	pt->p99 = json_is_object(lat) ? jnum(lat, "p99") : NAN;
	pt->mean = json_is_object(lat) ? jnum(lat, "mean") : NAN;
	pt->thr = jnum(j, "throughput_rps");
	pt->requests = (uint64_t)jnum(j, "requests");
	pt->responses = (uint64_t)jnum(j, "responses");
	pt->timeouts = (uint64_t)jnum(j, "timeouts");
	pt->errors = (uint64_t)jnum(err, "total");
	pt->busy = (uint64_t)jnum(err, "busy");
	pt->ex_nic = (uint64_t)jnum(ex, "nic");
	pt->ex_fallback = (uint64_t)jnum(ex, "host_fallback");
	for (unsigned k = 0; k < PROTO_T_COUNT; k++) {
		pt->srv[k] = jnum(srv, t_names[k]);
		pt->srv_p50[k] = jnum(srv50, t_names[k]);
	}
	pt->done = true;
	json_decref(j);
	return 0;
}

json_t *sweep_json_root(const char *model, const char *mode, const char *method)
{
	return json_pack("{s:s,s:s,s:s}", "model", model, "mode", mode, "method", method);
}

int sweep_json_write(json_t *root, const char *path)
{
	int ret = json_dump_file(root, path, JSON_INDENT(1)) ? -EIO : 0;

	json_decref(root);
	if (ret)
		fprintf(stderr, "splitnic sweep: --json %s: cannot write\n", path);
	return ret;
}

/* The client on model_path: open loop (Poisson) at rps, or closed loop, 16 outstanding (0). */
static int capacity_point(struct sweep_lab *l, const char *model_path, const char *images,
			  double rps, double seconds, struct sweep_point *pt)
{
	const double want = rps > 0 ? rps * seconds : 1000;
	char cnt[32], rate[32];
	char *args[16] = {"--model", (char *)model_path, "--count", cnt, "--timeout-ms", "5000"};
	size_t n = 6;

	snprintf(cnt, sizeof(cnt), "%.0f", want < 150 ? 150 : want > 100000 ? 100000 : want);
	snprintf(rate, sizeof(rate), "%.3f", rps);
	if (images) {
		args[n++] = "--images";
		args[n++] = (char *)images;
	}
	args[n++] = rps > 0 ? "--rate" : "--outstanding";
	args[n++] = rps > 0 ? rate : "16";
	if (rps > 0)
		args[n++] = "--poisson";
	args[n] = NULL;
	return sweep_lab_client(l, args, pt);
}

/* A load that holds: answered at least `answered` of it, the p50 under 30 times the base. */
static bool capacity_holds(const struct sweep_point *pt, double answered, double base)
{
	return (double)pt->responses >= answered * (double)pt->requests && pt->p50 < 30 * base;
}

/* Whether load rps holds; a load that does not is tried once more after a pause (1) before it
 * counts as past the capacity (0): on cores shared with the front-end and the kernel a server
 * descheduled for a few milliseconds loses a burst now and then, and one such burst in a short
 * probe would end the ramp early (capacities twice apart between runs, the 1.3x loads of a
 * sweep then below the capacity). -EIO when the client fails. */
static int capacity_probe(struct sweep_lab *l, const char *model_path, const char *images,
			  double rps, double seconds, double answered, double base,
			  struct sweep_point *pt)
{
	for (int t = 0; t < 2; t++) {
		if (t)
			usleep(300000);
		if (capacity_point(l, model_path, images, rps, seconds, pt))
			return -EIO;
		if (capacity_holds(pt, answered, base))
			return 1;
	}
	return 0;
}

int sweep_lab_capacity(struct sweep_lab *l, const char *model_path, const char *images,
		       double start, double seconds, double answered, double *cap)
{
	struct sweep_point pt;
	double rps = start, base;
	int step;

	*cap = 0;
	if (!(rps > 0)) { /* a closed-loop probe for where to start */
		if (capacity_point(l, model_path, images, 0, seconds, &pt) || !(pt.thr > 0))
			return -EIO;
		rps = pt.thr / 4;
	}
	for (step = 0; step < 8; step++, rps /= 2) {
		if (capacity_point(l, model_path, images, rps, seconds, &pt))
			return -EIO;
		usleep(200000);
		if ((double)pt.responses >= answered * (double)pt.requests)
			break;
	}
	if (step == 8) {
		fprintf(stderr, "sweep: %s: less than %.0f%% answered even at %.0f requests/s\n",
			model_path, 100 * answered, rps * 2);
		return -EIO;
	}
	base = pt.p50;
	*cap = rps;
	for (step = 0; step < 24; step++) {
		int held;

		rps *= 1.25;
		held = capacity_probe(l, model_path, images, rps, seconds, answered, base, &pt);
		if (held < 0)
			return -EIO;
		usleep(100000);
		if (!held)
			break;
		*cap = rps;
	}
	/* between the last load that held and the first that did not: halve the step three
	 * times (to 1.25^(1/8), 2.8%), so that a capacity does not move by whole steps of 25% */
	for (int i = 0; step < 24 && i < 3; i++) {
		const double mid = sqrt(*cap * rps);
		int held;

		usleep(300000);
		held = capacity_probe(l, model_path, images, mid, seconds, answered, base, &pt);
		if (held < 0)
			return -EIO;
		if (held)
			*cap = mid;
		else
			rps = mid;
	}
	usleep(300000); /* let the last, full queue drain */
	return 0;
}
