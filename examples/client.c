// SPDX-License-Identifier: MIT
/*
 * examples/client.c — a front-end with libsplitnic-client: keeps up to WINDOW requests in
 * flight, retransmits (same request id) what is not answered within 500 ms, up to 5 times.
 *
 *   cc client.c $(pkg-config --cflags --libs splitnic-client) -o client
 *   ./client HOST PORT u8|f32 C,H,W INPUTS [WINDOW [MODEL]]
 *
 * INPUTS holds raw tensors back to back (for the bundled models: 784-byte u8 images). Prints
 * one line per input, in input order: the class, or "error CODE REASON" / "timeout". MODEL is
 * the model's name or number (default 0: the server's first model).
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include <splitnic/client.h>

#include "read_file.h"

#define TIMEOUT_NS 500000000ull
#define TRIES	   6

struct slot {
	uint64_t sent_ns;
	int tries;
	int done;
	long result; /* class, or -code for an ERROR */
	char reason[65];
};

static uint64_t now_ns(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (uint64_t)ts.tv_sec * 1000000000ull + (uint64_t)ts.tv_nsec;
}

int main(int argc, char **argv)
{
	struct splitnic_client *cl = NULL;
	struct splitnic_response r;
	struct splitnic_error e;
	struct splitnic_tensor t = {0};
	struct slot *s = NULL;
	size_t size, count, item, next = 0, head = 0, outstanding = 0;
	size_t window = argc > 6 ? (size_t)atol(argv[6]) : 16;
	uint32_t model = 0;
	uint8_t *data;
	char *end;
	int ret = 1;

	if (argc < 6 || argc > 8 || sscanf(argv[4], "%u,%u,%u", &t.c, &t.h, &t.w) != 3 ||
	    (strcmp(argv[3], "u8") && strcmp(argv[3], "f32")) || !window) {
		fprintf(stderr, "usage: %s HOST PORT u8|f32 C,H,W INPUTS [WINDOW [MODEL]]\n",
			argv[0]);
		return 2;
	}
	if (argc > 7) {
		model = (uint32_t)strtoul(argv[7], &end, 0);
		if (*end)
			model = splitnic_client_model_id(argv[7]);
	}
	t.fmt = strcmp(argv[3], "u8") ? SPLITNIC_TENSOR_F32 : SPLITNIC_TENSOR_U8;
	item = (size_t)t.c * t.h * t.w * (t.fmt == SPLITNIC_TENSOR_U8 ? 1 : 4);
	data = read_file(argv[5], &size);
	if (!data || !item || size % item) {
		fprintf(stderr, "client: %s: not a whole number of %zu-byte tensors\n", argv[5],
			item);
		free(data);
		return 1;
	}
	count = size / item;
	t.bytes = item;
	s = calloc(count ? count : 1, sizeof(*s));
	if (!s || splitnic_client_open(argv[1], argv[2], 0, &cl, &e)) {
		fprintf(stderr, "client: %s\n", s ? e.msg : "out of memory");
		goto out;
	}
	while (head < count) {
		while (next < count && outstanding < window) {
			t.data = data + next * item;
			if (splitnic_client_send(cl, model, next, &t, &s[next].sent_ns, &e)) {
				fprintf(stderr, "client: %s\n", e.msg);
				goto out;
			}
			s[next++].tries = 1;
			outstanding++;
		}
		switch (splitnic_client_wait(cl, &r, 50, &e)) {
		case SPLITNIC_OK:
			if (r.request_id < next && !s[r.request_id].done) {
				s[r.request_id].done = 1;
				s[r.request_id].result = r.error ? -r.error : (long)r.cls;
				snprintf(s[r.request_id].reason, sizeof(s->reason), "%s", r.reason);
				outstanding--;
			}
			break;
		case SPLITNIC_E_TIMEOUT:
			break;
		default:
			fprintf(stderr, "client: %s\n", e.msg);
			goto out;
		}
		for (size_t i = head, t_now = 0; i < next; i++) { /* retransmit the late ones */
			if (!t_now)
				t_now = now_ns();
			if (s[i].done || t_now - s[i].sent_ns < TIMEOUT_NS)
				continue;
			if (s[i].tries == TRIES) {
				s[i].done = 2;
				outstanding--;
				continue;
			}
			t.data = data + i * item;
			if (splitnic_client_send(cl, model, i, &t, &s[i].sent_ns, &e)) {
				fprintf(stderr, "client: %s\n", e.msg);
				goto out;
			}
			s[i].tries++;
		}
		while (head < count && s[head].done)
			head++;
	}
	for (size_t i = 0; i < count; i++) {
		if (s[i].done == 2)
			printf("timeout\n");
		else if (s[i].result < 0)
			printf("error %ld %s\n", -s[i].result, s[i].reason);
		else
			printf("%ld\n", s[i].result);
	}
	ret = 0;
out:
	splitnic_client_close(cl);
	free(s);
	free(data);
	return ret;
}
