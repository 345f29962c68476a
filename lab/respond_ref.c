// SPDX-License-Identifier: MIT
/*
 * splitnic respond-ref: a small reference responder for testing front-ends (the real servers
 * are the NIC firmware and the host). Answers REQUESTs over UDP with deterministic RESPONSEs
 * and ERRORs, so a client's accounting can be checked exactly.
 *
 * For the c-th complete request (c = 1, 2, ...):
 *   c % drop_every == 0    no answer (the client times out);
 *   c % error_every == 0   ERROR busy, reason "reference error";
 *   otherwise              RESPONSE: the class is the request tensor's label when --images
 *                          and --labels are given and its bytes are one of the images, else
 *                          FNV-1a(bytes) % classes; when c % wrong_every == 0 the class is
 *                          moved to (class + 1) % classes. score[k] = 1.0 for the class and
 *                          -k / classes otherwise; executors = CPU; timing: total, rx, tx.
 * Datagrams the parser rejects are answered with ERROR bad_request (detail = the verdict) when
 * their common header is readable; other message types with ERROR unsupported.
 */
#include <errno.h>
#include <netdb.h>
#include <signal.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <time.h>
#include <unistd.h>

#include "conf/args.h"
#include "lab/respond_ref.h"
#include "model/idx.h"
#include "protocol/net_util.h"
#include "protocol/reasm.h"
#include "split/stats.h"

struct ref_opts {
	const char *bind;
	const char *port;
	const char *images, *labels, *ready_file;
	long classes, wrong_every, error_every, drop_every, delay_us, count, payload, slots;
};

struct ref_label {
	uint64_t hash;
	int32_t label; /* -1: empty */
};

static volatile sig_atomic_t ref_stop;

static void on_signal(int sig)
{
	ref_stop = 1;
}

static uint64_t fnv64(const uint8_t *p, size_t n)
{
	uint64_t h = 14695981039346656037ull;

	for (size_t i = 0; i < n; i++)
		h = (h ^ p[i]) * 1099511628211ull;
	return h;
}

#define REF_OPT(f) offsetof(struct ref_opts, f)

static const struct conf_opt ref_opts[] = {
    CONF_STR_ROW("bind", "ADDR", REF_OPT(bind), "127.0.0.1", "the address to listen on"),
    CONF_PORT_ROW("port", "P", REF_OPT(port), "21326", "its UDP port"),
    CONF_LONG_ROW("classes", "N", REF_OPT(classes), 1, 65535, "10", "classes per RESPONSE"),
    CONF_STR_ROW("images", "IDX", REF_OPT(images), NULL, "with --labels: answer an image's label"),
    CONF_STR_ROW("labels", "IDX", REF_OPT(labels), NULL, "the images' labels"),
    CONF_LONG_ROW("wrong-every", "K", REF_OPT(wrong_every), 0, 1L << 31, NULL,
		  "every K-th RESPONSE gives the next class"),
    CONF_LONG_ROW("error-every", "K", REF_OPT(error_every), 0, 1L << 31, NULL,
		  "every K-th request is answered ERROR busy"),
    CONF_LONG_ROW("drop-every", "K", REF_OPT(drop_every), 0, 1L << 31, NULL,
		  "every K-th request is not answered"),
    CONF_LONG_ROW("delay-us", "D", REF_OPT(delay_us), 0, 10000000, NULL,
		  "wait D us before each answer"),
    CONF_LONG_ROW("count", "N", REF_OPT(count), 0, 1L << 40, NULL,
		  "stop after N requests (0: never)"),
    CONF_LONG_ROW("payload", "B", REF_OPT(payload), 256, 65507, "1400", "UDP payload per datagram"),
    CONF_LONG_ROW("slots", "S", REF_OPT(slots), 1, 65536, "64", "reassembly slots"),
    CONF_STR_ROW("ready-file", "F", REF_OPT(ready_file), NULL, "created once the socket is bound"),
};

const struct conf_cmd cmd_respond_ref_spec = {
    CONF_CMD("splitnic respond-ref",
	     "[--port P] [--classes N] [--images IDX --labels IDX] [--wrong-every K] "
	     "[--error-every K] [--drop-every K] [OPTIONS]",
	     "the reference responder the client is tested against", ref_opts, 0, 0, NULL)};

static int ref_parse(int argc, char **argv, struct ref_opts *o)
{
	memset(o, 0, sizeof(*o));
	return conf_parse(&cmd_respond_ref_spec, argc, argv, o) < 0 ? -EINVAL : 0;
}

static int ref_socket(const struct ref_opts *o)
{
	struct addrinfo hints = {.ai_socktype = SOCK_DGRAM, .ai_flags = AI_PASSIVE}, *ai;
	int fd, err;

	err = getaddrinfo(o->bind, o->port, &hints, &ai);
	if (err) {
		fprintf(stderr, "respond-ref: %s:%s: %s\n", o->bind, o->port, gai_strerror(err));
		return -EINVAL;
	}
	fd = socket(ai->ai_family, ai->ai_socktype, ai->ai_protocol);
	if (fd < 0 || bind(fd, ai->ai_addr, ai->ai_addrlen)) {
		fprintf(stderr, "respond-ref: bind %s:%s: %s\n", o->bind, o->port, strerror(errno));
		if (fd >= 0)
			close(fd);
		fd = -1;
	}
	freeaddrinfo(ai);
	if (fd >= 0)
		net_grow_buffers(fd, 4 << 20);
	return fd;
}

/* Open-addressing table image hash -> label, 2x the images, allocated once. */
static struct ref_label *ref_labels(const struct ref_opts *o, uint32_t *mask)
{
	struct idx_data img = {0}, lab = {0};
	struct ref_label *t = NULL;
	char err[256];
	uint32_t n = 1;

	if (idx_load(o->images, &img, err, sizeof(err)) ||
	    idx_load_labels(o->labels, img.count, &lab, err, sizeof(err))) {
		fprintf(stderr, "respond-ref: %s\n", err);
		goto out;
	}
	while (n < 2 * img.count)
		n <<= 1;
	t = malloc(n * sizeof(*t));
	if (!t)
		goto out;
	for (uint32_t i = 0; i < n; i++)
		t[i].label = -1;
	for (uint32_t i = 0; i < img.count; i++) {
		uint64_t h = fnv64(img.data + (size_t)i * img.item_bytes, img.item_bytes);
		uint32_t j = (uint32_t)h & (n - 1);

		while (t[j].label >= 0 && t[j].hash != h)
			j = (j + 1) & (n - 1);
		if (t[j].label < 0) {
			t[j].hash = h;
			t[j].label = lab.data[i];
		}
	}
	*mask = n - 1;
out:
	idx_free(&img);
	idx_free(&lab);
	return t;
}

static void ref_send(int fd, const struct sockaddr_storage *to, socklen_t tolen, const void *p,
		     int n)
{
	if (n > 0)
		sendto(fd, p, (size_t)n, 0, (const struct sockaddr *)to, tolen);
}

int cmd_respond_ref(int argc, char **argv)
{
	struct ref_opts o;
	struct ref_label *labels = NULL;
	uint32_t mask = 0;
	struct proto_reasm *ra = NULL;
	struct proto_reasm_config rc;
	struct proto_reasm_msg msg;
	struct proto_msg m, resp;
	struct proto_frag f;
	struct sockaddr_storage from;
	socklen_t fromlen;
	uint8_t *in = NULL, *out = NULL, *scores = NULL;
	uint64_t served = 0, t_in, t0;
	uint64_t rejected[PROTO_VERDICT__COUNT] = {0};
	struct sigaction sa = {.sa_handler = on_signal};
	int fd, n, ret = 1;

	if (ref_parse(argc, argv, &o))
		return 2;
	if (o.images && o.labels) {
		labels = ref_labels(&o, &mask);
		if (!labels)
			return 1;
	}
	fd = ref_socket(&o);
	if (fd < 0)
		goto out_free_labels;
	rc.slots = (uint32_t)o.slots;
	rc.max_msg = 8u << 20;
	rc.timeout_ns = 2000000000ull;
	ra = proto_reasm_create(&rc);
	in = malloc(PROTO_MAX_PAYLOAD + 1);
	out = malloc(PROTO_MAX_PAYLOAD + 1);
	scores = malloc((size_t)o.classes * 8);
	if (!ra || !in || !out || !scores)
		goto out_free;
	/* no SA_RESTART: a signal must interrupt recvfrom so the loop sees ref_stop */
	sigaction(SIGINT, &sa, NULL);
	sigaction(SIGTERM, &sa, NULL);
	if (o.ready_file) {
		FILE *rf = fopen(o.ready_file, "w");

		if (rf)
			fclose(rf);
	}
	while (!ref_stop && (!o.count || served < (uint64_t)o.count)) {
		enum proto_verdict v;
		enum proto_ra_verdict rv;
		uint32_t cls;

		fromlen = sizeof(from);
		n = (int)recvfrom(fd, in, PROTO_MAX_PAYLOAD + 1, 0, (struct sockaddr *)&from,
				  &fromlen);
		if (n < 0) {
			if (errno == EINTR)
				continue;
			perror("respond-ref: recvfrom");
			goto out_free;
		}
		t_in = lat_now_ns();
		v = proto_parse(in, (size_t)n, &m);
		if (v != PROTO_OK) {
			rejected[v]++;
			if (v > PROTO_BAD_TYPE)
				ref_send(
				    fd, &from, fromlen, out,
				    proto_build_error(out, PROTO_MAX_PAYLOAD, proto_get32(in + 8),
						      proto_get64(in + 16), PROTO_ERR_BAD_REQUEST,
						      v, "rejected: %s", proto_verdict_name(v)));
			continue;
		}
		if (m.type != PROTO_REQUEST) {
			ref_send(fd, &from, fromlen, out,
				 proto_build_error(out, PROTO_MAX_PAYLOAD, m.model_id, m.request_id,
						   PROTO_ERR_UNSUPPORTED, m.type, "not a request"));
			continue;
		}
		rv = proto_reasm_push(ra, fnv64((const uint8_t *)&from, fromlen), &m, t_in, &msg);
		if (rv == PROTO_RA_TABLE_FULL || rv == PROTO_RA_TOO_LARGE) {
			ref_send(fd, &from, fromlen, out,
				 proto_build_error(out, PROTO_MAX_PAYLOAD, m.model_id, m.request_id,
						   rv == PROTO_RA_TABLE_FULL ? PROTO_ERR_BUSY
									     : PROTO_ERR_TOO_LARGE,
						   rc.max_msg, "%s", proto_ra_verdict_name(rv)));
			continue;
		}
		if (rv != PROTO_RA_COMPLETE)
			continue;
		served++;
		t0 = lat_now_ns();
		if (o.delay_us) {
			struct timespec d = {.tv_sec = o.delay_us / 1000000,
					     .tv_nsec = o.delay_us % 1000000 * 1000};

			nanosleep(&d, NULL);
		}
		if (o.drop_every && served % (uint64_t)o.drop_every == 0) {
			proto_reasm_release(ra, &msg);
			continue;
		}
		if (o.error_every && served % (uint64_t)o.error_every == 0) {
			ref_send(fd, &from, fromlen, out,
				 proto_build_error(out, PROTO_MAX_PAYLOAD, m.model_id, m.request_id,
						   PROTO_ERR_BUSY, 0, "reference error"));
			proto_reasm_release(ra, &msg);
			continue;
		}
		cls = (uint32_t)(fnv64(msg.data, msg.len) % (uint64_t)o.classes);
		if (labels) {
			uint64_t h = fnv64(msg.data, msg.len);
			uint32_t j = (uint32_t)h & mask;

			while (labels[j].label >= 0 && labels[j].hash != h)
				j = (j + 1) & mask;
			if (labels[j].label >= 0)
				cls = (uint32_t)labels[j].label % (uint32_t)o.classes;
		}
		if (o.wrong_every && served % (uint64_t)o.wrong_every == 0)
			cls = (cls + 1) % (uint32_t)o.classes;
		proto_msg_init(&resp, PROTO_RESPONSE, msg.hdr.model_id, msg.hdr.request_id);
		resp.resp.cls = cls;
		resp.resp.num_classes = (uint16_t)o.classes;
		resp.resp.score_fmt = PROTO_FMT_F64;
		resp.resp.executors = PROTO_EX_CPU;
		for (uint32_t k = 0; k < (uint32_t)o.classes; k++)
			proto_le_put_f64(scores + 8 * k, k == cls ? 1.0 : -(double)k / o.classes);
		proto_reasm_release(ra, &msg);
		resp.resp.t_ns[PROTO_T_RX] = (uint32_t)(t0 - t_in);
		resp.resp.t_ns[PROTO_T_TOTAL] = (uint32_t)(lat_now_ns() - t_in);
		if (proto_frag_init(&f, &resp, scores, (size_t)o.classes * 8, (size_t)o.payload))
			continue;
		while ((n = proto_frag_next(&f, out, PROTO_MAX_PAYLOAD)) > 0)
			ref_send(fd, &from, fromlen, out, n);
	}
	ret = 0;
	fprintf(stderr, "respond-ref: served %lu requests", (unsigned long)served);
	for (unsigned v = 1; v < PROTO_VERDICT__COUNT; v++)
		if (rejected[v])
			fprintf(stderr, ", rejected %s %lu", proto_verdict_name(v),
				(unsigned long)rejected[v]);
	fprintf(stderr, "\n");
out_free:
	free(scores);
	free(out);
	free(in);
	proto_reasm_destroy(ra);
	close(fd);
out_free_labels:
	free(labels);
	return ret;
}
