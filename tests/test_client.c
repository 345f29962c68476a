// SPDX-License-Identifier: MIT
/*
 * libsplitnic-client (include/splitnic/client.h) against a server made in the test from the
 * protocol library on a loopback socket: fragmented requests and responses, f64 and f32
 * scores, ERRORs, dropped datagrams, non-blocking and blocking receive, retransmission with
 * the same request id, and misuse.
 */
#include <arpa/inet.h>
#include <errno.h>
#include <netinet/in.h>
#include <pthread.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <unistd.h>

#include <cmocka.h>

#include "protocol/reasm.h"
#include "splitnic/client.h"

struct server {
	int fd;
	char port[16];
	struct sockaddr_in peer;
	struct proto_reasm *ra;
	uint8_t dgram[PROTO_MAX_PAYLOAD];
	struct proto_reasm_msg msg; /* the last request */
	uint8_t body[65536];	    /* its data */
};

static int server_setup(void **state)
{
	struct proto_reasm_config rc = {4, 1 << 20, 1000000000ull};
	struct sockaddr_in a = {.sin_family = AF_INET, .sin_addr.s_addr = htonl(INADDR_LOOPBACK)};
	socklen_t len = sizeof(a);
	struct server *s = calloc(1, sizeof(*s));

	if (!s)
		return -1;
	s->fd = socket(AF_INET, SOCK_DGRAM, 0);
	if (s->fd < 0 || bind(s->fd, (struct sockaddr *)&a, sizeof(a)) ||
	    getsockname(s->fd, (struct sockaddr *)&a, &len))
		return -1;
	snprintf(s->port, sizeof(s->port), "%u", ntohs(a.sin_port));
	s->ra = proto_reasm_create(&rc);
	*state = s;
	return s->ra ? 0 : -1;
}

static int server_teardown(void **state)
{
	struct server *s = *state;

	close(s->fd);
	proto_reasm_destroy(s->ra);
	free(s);
	return 0;
}

/* Receive datagrams until one request is complete (copied to s->body); returns datagrams. */
static int server_recv(struct server *s)
{
	socklen_t len = sizeof(s->peer);
	struct proto_msg m;
	int n = 0;

	for (;;) {
		ssize_t got = recvfrom(s->fd, s->dgram, sizeof(s->dgram), 0,
				       (struct sockaddr *)&s->peer, &len);

		assert_true(got > 0);
		n++;
		assert_int_equal(proto_parse(s->dgram, (size_t)got, &m), PROTO_OK);
		assert_int_equal(m.type, PROTO_REQUEST);
		if (proto_reasm_push(s->ra, 0, &m, 0, &s->msg) == PROTO_RA_COMPLETE) {
			memcpy(s->body, s->msg.data, s->msg.len);
			proto_reasm_release(s->ra, &s->msg);
			return n;
		}
	}
}

/* Send a message (fragmented at `payload`) to the last peer. */
static void server_send(struct server *s, const struct proto_msg *m, const void *body, size_t len,
			size_t payload)
{
	struct proto_frag f;
	int n;

	assert_int_equal(proto_frag_init(&f, m, body, len, payload), 0);
	while ((n = proto_frag_next(&f, s->dgram, sizeof(s->dgram))) > 0)
		assert_int_equal(sendto(s->fd, s->dgram, (size_t)n, 0, (struct sockaddr *)&s->peer,
					sizeof(s->peer)),
				 n);
}

static void server_respond(struct server *s, uint64_t rid, uint32_t cls, uint32_t classes,
			   unsigned fmt)
{
	static uint8_t scores[65535 * 8];
	struct proto_msg m;

	proto_msg_init(&m, PROTO_RESPONSE, 77, rid);
	m.resp.cls = cls;
	m.resp.num_classes = (uint16_t)classes;
	m.resp.score_fmt = (uint8_t)fmt;
	m.resp.executors = PROTO_EX_CPU | PROTO_EX_NIC;
	m.resp.t_ns[PROTO_T_TOTAL] = 1234;
	for (uint32_t k = 0; k < classes; k++) {
		if (fmt == PROTO_FMT_F64)
			proto_le_put_f64(scores + k * 8, k * 0.5);
		else
			proto_le_put_f32(scores + k * 4, (float)k * 0.25f);
	}
	server_send(s, &m, scores, classes * (fmt == PROTO_FMT_F64 ? 8 : 4), 300);
}

static void test_client_fragments_both_ways(void **state)
{
	struct server *s = *state;
	struct splitnic_client *cl;
	struct splitnic_response r;
	struct splitnic_error e;
	static uint8_t img[3 * 20 * 30];
	struct splitnic_tensor t = {SPLITNIC_TENSOR_U8, 3, 20, 30, img, sizeof(img), 0, 0};
	uint64_t sent;

	for (size_t i = 0; i < sizeof(img); i++)
		img[i] = (uint8_t)(i * 7);
	assert_int_equal(splitnic_client_open("127.0.0.1", s->port, 256, &cl, &e), 0);
	assert_true(splitnic_client_fd(cl) >= 0);
	assert_int_equal(splitnic_client_poll(cl, &r, &e), SPLITNIC_E_AGAIN);
	assert_int_equal(splitnic_client_send(cl, splitnic_client_model_id("m"), 99, &t, &sent, &e),
			 0);
	assert_true(sent > 0);
	/* 1800 bytes at (256 - 64) / 8 * 8 = 192 bytes per datagram: 10 datagrams */
	assert_int_equal(server_recv(s), 10);
	assert_int_equal(s->msg.hdr.request_id, 99);
	assert_int_equal(s->msg.hdr.model_id, splitnic_client_model_id("m"));
	assert_int_equal(s->msg.hdr.tensor.c * 10000 + s->msg.hdr.tensor.h * 100 +
			     s->msg.hdr.tensor.w,
			 3 * 10000 + 20 * 100 + 30);
	assert_memory_equal(s->body, img, sizeof(img));
	/* an answer in one datagram first (no reassembly table yet), then one in fragments (the
	 * table made by its first) */
	server_respond(s, 4, 1, 3, PROTO_FMT_F32);
	assert_int_equal(splitnic_client_wait(cl, &r, 2000, &e), 0);
	assert_int_equal(r.request_id, 4);
	assert_int_equal(r.num_classes, 3);
	/* 1000 f64 scores: 8000 bytes in 300-byte datagrams */
	server_respond(s, 99, 7, 1000, PROTO_FMT_F64);
	assert_int_equal(splitnic_client_wait(cl, &r, 2000, &e), 0);
	assert_int_equal(r.request_id, 99);
	assert_int_equal(r.model_id, 77);
	assert_int_equal(r.error, 0);
	assert_int_equal(r.cls, 7);
	assert_int_equal(r.num_classes, 1000);
	assert_true(r.scores[999] == 499.5 && r.scores[1] == 0.5);
	assert_int_equal(r.executors, PROTO_EX_CPU | PROTO_EX_NIC);
	assert_int_equal(r.t_ns[0], 1234);
	assert_true(r.recv_ns >= sent);
	server_respond(s, 5, 2, 3, PROTO_FMT_F32);
	assert_int_equal(splitnic_client_wait(cl, &r, 2000, &e), 0);
	assert_int_equal(r.num_classes, 3);
	assert_true(r.scores[2] == 0.5);
	assert_int_equal(splitnic_client_wait(cl, &r, 20, &e), SPLITNIC_E_TIMEOUT);
	assert_string_equal(e.msg, "no response within 20 ms");
	splitnic_client_close(cl);
}

static void test_client_errors_and_drops(void **state)
{
	struct server *s = *state;
	struct splitnic_client *cl;
	struct splitnic_client_stats st;
	struct splitnic_response r;
	struct splitnic_error e;
	uint8_t buf[256];
	float x[4] = {1, 2, 3, 4};
	struct splitnic_tensor t = {SPLITNIC_TENSOR_F32, 4, 1, 1, x, sizeof(x), 0, 0};
	int n;

	assert_int_equal(splitnic_client_open("localhost", s->port, 0, &cl, &e), 0);
	assert_int_equal(splitnic_client_send(cl, 0, 1, &t, NULL, &e), 0);
	assert_int_equal(server_recv(s), 1);
	/* garbage, then a RESPONSE-less REQUEST echo, then an ERROR */
	sendto(s->fd, "garbage!", 8, 0, (struct sockaddr *)&s->peer, sizeof(s->peer));
	server_send(s, &s->msg.hdr, s->body, s->msg.len, 1400);
	n = proto_build_error(buf, sizeof(buf), 0, 1, PROTO_ERR_BUSY, 64, "queue full");
	assert_true(n > 0);
	sendto(s->fd, buf, (size_t)n, 0, (struct sockaddr *)&s->peer, sizeof(s->peer));
	assert_int_equal(splitnic_client_wait(cl, &r, 2000, &e), 0);
	assert_int_equal(r.error, PROTO_ERR_BUSY);
	assert_int_equal(r.err_detail, 64);
	assert_string_equal(r.reason, "queue full");
	splitnic_client_stats(cl, &st);
	assert_int_equal(st.rejected[PROTO_BAD_SHORT], 1);
	assert_int_equal(st.wrong_type, 1);
	splitnic_client_close(cl);
}

struct retx {
	struct server *s;
	int copies;
};

/* Answers request 42's second copy only, and an unrelated id before it. */
static void *retx_server(void *arg)
{
	struct retx *x = arg;

	for (x->copies = 0; x->copies < 2;) {
		server_recv(x->s);
		if (x->s->msg.hdr.request_id == 42)
			x->copies++;
	}
	server_respond(x->s, 41, 1, 2, PROTO_FMT_F64);
	server_respond(x->s, 42, 6, 10, PROTO_FMT_F64);
	return NULL;
}

static void test_client_request_retransmits(void **state)
{
	struct server *s = *state;
	struct retx x = {s, 0};
	struct splitnic_client *cl;
	struct splitnic_response r;
	struct splitnic_error e;
	uint8_t img[784] = {1};
	struct splitnic_tensor t = {SPLITNIC_TENSOR_U8, 1, 28, 28, img, sizeof(img), 0, 0};
	pthread_t tid;

	assert_int_equal(splitnic_client_open("127.0.0.1", s->port, 0, &cl, &e), 0);
	assert_int_equal(pthread_create(&tid, NULL, retx_server, &x), 0);
	assert_int_equal(splitnic_client_request(cl, 0, 42, &t, 100, 3, &r, &e), 0);
	pthread_join(tid, NULL);
	assert_int_equal(x.copies, 2);
	assert_int_equal(r.request_id, 42);
	assert_int_equal(r.cls, 6);
	splitnic_client_close(cl);
}

/* One answer per request id: a second answer is dropped and counted until the id is sent again. */
static void test_client_duplicates_dropped(void **state)
{
	struct server *s = *state;
	struct splitnic_client *cl;
	struct splitnic_client_stats st;
	struct splitnic_response r;
	struct splitnic_error e;
	uint8_t img[16] = {3};
	struct splitnic_tensor t = {SPLITNIC_TENSOR_U8, 1, 4, 4, img, sizeof(img), 0, 0};

	assert_int_equal(splitnic_client_open("127.0.0.1", s->port, 0, &cl, &e), 0);
	assert_int_equal(splitnic_client_send(cl, 0, 7, &t, NULL, &e), 0);
	assert_int_equal(server_recv(s), 1);
	server_respond(s, 7, 1, 2, PROTO_FMT_F64);
	server_respond(s, 7, 1, 2, PROTO_FMT_F64); /* e.g. a retransmission answered by another */
	assert_int_equal(splitnic_client_wait(cl, &r, 2000, &e), 0);
	assert_int_equal(r.request_id, 7);
	assert_int_equal(splitnic_client_wait(cl, &r, 50, &e), SPLITNIC_E_TIMEOUT);
	splitnic_client_stats(cl, &st);
	assert_int_equal(st.duplicates, 1);
	/* the same id sent again is a new request: its answer is delivered */
	assert_int_equal(splitnic_client_send(cl, 0, 7, &t, NULL, &e), 0);
	assert_int_equal(server_recv(s), 1);
	server_respond(s, 7, 0, 2, PROTO_FMT_F64);
	assert_int_equal(splitnic_client_wait(cl, &r, 2000, &e), 0);
	assert_int_equal(r.cls, 0);
	splitnic_client_close(cl);
}

/* Answers one HEALTH probe asking for the host's role with a two-model report. */
static void *health_server(void *arg)
{
	static const struct proto_health_model models[2] = {{.model_id = 11,
							     .mode = PROTO_MODE_COPROC,
							     .in_fmt = PROTO_FMT_U8,
							     .c = 1,
							     .h = 28,
							     .w = 28,
							     .classes = 10,
							     .name = "cnn"},
							    {.model_id = 12,
							     .first_op = 4,
							     .mode = PROTO_MODE_HOST_ONLY,
							     .in_fmt = PROTO_FMT_F32,
							     .c = 3,
							     .h = 2,
							     .w = 1,
							     .classes = 5,
							     .name = "mlp"}};
	struct server *s = arg;
	socklen_t len = sizeof(s->peer);
	uint8_t out[1500];
	struct proto_msg m;
	ssize_t got;
	int n;

	got = recvfrom(s->fd, s->dgram, sizeof(s->dgram), 0, (struct sockaddr *)&s->peer, &len);
	if (got != 1400 || proto_parse(s->dgram, (size_t)got, &m) != PROTO_OK ||
	    m.type != PROTO_HEALTH || m.health.kind != PROTO_HEALTH_PROBE ||
	    m.health.role != PROTO_ROLE_HOST)
		return NULL; /* the client times out: the test fails */
	n = proto_build_health_report(out, sizeof(out), (size_t)got, m.request_id, PROTO_ROLE_HOST,
				      PROTO_HEALTH_DRAINING, 3, "srv-a", models, 2);
	sendto(s->fd, out, (size_t)n, 0, (struct sockaddr *)&s->peer, sizeof(s->peer));
	return NULL;
}

static void test_client_health(void **state)
{
	struct server *s = *state;
	struct splitnic_client *cl;
	struct splitnic_health h;
	struct splitnic_error e;
	pthread_t tid;

	assert_int_equal(splitnic_client_open("127.0.0.1", s->port, 0, &cl, &e), 0);
	assert_int_equal(pthread_create(&tid, NULL, health_server, s), 0);
	assert_int_equal(splitnic_client_health(cl, SPLITNIC_ROLE_HOST, 2000, &h, &e), 0);
	pthread_join(tid, NULL);
	assert_string_equal(h.ident, "srv-a");
	assert_int_equal(h.role, SPLITNIC_ROLE_HOST);
	assert_int_equal(h.state, SPLITNIC_DRAINING);
	assert_int_equal(h.in_flight, 3);
	assert_int_equal(h.n_models, 2);
	assert_string_equal(h.model[1].name, "mlp");
	assert_int_equal(h.model[1].first_op, 4);
	assert_int_equal(h.model[1].c * 100 + h.model[1].h * 10 + h.model[1].w, 321);
	assert_string_equal(splitnic_health_mode_name(h.model[0].mode), "coproc");
	assert_string_equal(splitnic_health_state_name(h.state), "draining");
	assert_string_equal(splitnic_role_name(h.role), "splitnic-host");
	/* nobody answers: a timeout, and bad arguments are refused */
	assert_int_equal(splitnic_client_health(cl, SPLITNIC_ROLE_NIC, 60, &h, &e),
			 SPLITNIC_E_TIMEOUT);
	assert_int_equal(splitnic_client_health(cl, 9, 60, &h, &e), SPLITNIC_E_INVALID);
	assert_int_equal(splitnic_client_health(cl, 0, 60, NULL, &e), SPLITNIC_E_INVALID);
	/* drain the unanswered probes from the server's socket */
	for (int i = 0; i < 3; i++)
		recv(s->fd, s->dgram, sizeof(s->dgram), MSG_DONTWAIT);
	splitnic_client_close(cl);
}

static void test_client_request_timeout_and_server_error(void **state)
{
	struct server *s = *state;
	struct splitnic_client *cl;
	struct splitnic_response r;
	struct splitnic_error e;
	uint8_t img[16] = {0}, buf[256];
	struct splitnic_tensor t = {SPLITNIC_TENSOR_U8, 1, 4, 4, img, sizeof(img), 0, 0};
	int n;

	assert_int_equal(splitnic_client_open("127.0.0.1", s->port, 0, &cl, &e), 0);
	assert_int_equal(splitnic_client_request(cl, 0, 8, &t, 30, 1, &r, &e), SPLITNIC_E_TIMEOUT);
	assert_string_equal(e.msg, "request 8: no answer in 2 tries of 30 ms");
	assert_int_equal(server_recv(s), 1);
	assert_int_equal(server_recv(s), 1);
	n = proto_build_error(buf, sizeof(buf), 0, 9, PROTO_ERR_UNKNOWN_MODEL, 5, "no model 5");
	assert_true(n > 0);
	assert_int_equal(splitnic_client_send(cl, 5, 9, &t, NULL, &e), 0);
	assert_int_equal(server_recv(s), 1);
	sendto(s->fd, buf, (size_t)n, 0, (struct sockaddr *)&s->peer, sizeof(s->peer));
	assert_int_equal(splitnic_client_request(cl, 5, 9, &t, 1000, 0, &r, &e), SPLITNIC_E_SERVER);
	assert_int_equal(r.error, PROTO_ERR_UNKNOWN_MODEL);
	assert_non_null(strstr(e.msg, "request 9: server error 2"));
	assert_non_null(strstr(e.msg, "no model 5"));
	splitnic_client_close(cl);
}

static void test_client_misuse(void **state)
{
	struct server *s = *state;
	struct splitnic_client *cl;
	struct splitnic_response r;
	struct splitnic_error e;
	uint8_t img[16] = {0};
	struct splitnic_tensor t = {SPLITNIC_TENSOR_U8, 1, 4, 4, img, 15, 0, 0};

	assert_int_equal(splitnic_client_open(NULL, NULL, 0, &cl, &e), SPLITNIC_E_INVALID);
	assert_null(cl);
	assert_int_equal(splitnic_client_open("127.0.0.1", NULL, 0, NULL, &e), SPLITNIC_E_INVALID);
	assert_int_equal(splitnic_client_open("127.0.0.1", NULL, 100, &cl, &e), SPLITNIC_E_INVALID);
	assert_string_equal(e.msg, "payload 100: 256 to 65507 bytes");
	/* a service name that is in no /etc/services: the resolver says so, without DNS */
	assert_int_equal(splitnic_client_open("127.0.0.1", "no-such-service", 0, &cl, &e),
			 SPLITNIC_E_INVALID);
	assert_non_null(strstr(e.msg, "127.0.0.1:no-such-service: "));
	assert_int_equal(splitnic_client_open("127.0.0.1", s->port, 0, &cl, &e), 0);
	assert_int_equal(splitnic_client_send(cl, 0, 1, &t, NULL, &e), SPLITNIC_E_INVALID);
	assert_string_equal(e.msg, "tensor is 15 bytes; (1,4,4) of u8 needs 16");
	t.bytes = 16;
	t.h = 0;
	assert_int_equal(splitnic_client_send(cl, 0, 1, &t, NULL, &e), SPLITNIC_E_INVALID);
	t.h = 4;
	t.fmt = 9;
	assert_int_equal(splitnic_client_send(cl, 0, 1, &t, NULL, &e), SPLITNIC_E_INVALID);
	assert_non_null(strstr(e.msg, "unknown format"));
	t.fmt = SPLITNIC_TENSOR_INT8; /* needs a positive scale */
	assert_int_equal(splitnic_client_send(cl, 0, 1, &t, NULL, &e), SPLITNIC_E_INVALID);
	assert_int_equal(splitnic_client_send(cl, 0, 1, NULL, NULL, &e), SPLITNIC_E_INVALID);
	assert_string_equal(e.msg, "tensor is NULL");
	assert_int_equal(splitnic_client_send(NULL, 0, 1, &t, NULL, NULL), SPLITNIC_E_INVALID);
	assert_int_equal(splitnic_client_poll(NULL, &r, &e), SPLITNIC_E_INVALID);
	assert_int_equal(splitnic_client_poll(cl, NULL, &e), SPLITNIC_E_INVALID);
	assert_int_equal(splitnic_client_request(cl, 0, 1, &t, 0, 0, &r, &e), SPLITNIC_E_INVALID);
	assert_int_equal(splitnic_client_fd(NULL), -1);
	splitnic_client_close(cl);
	splitnic_client_close(NULL);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
	    cmocka_unit_test_setup_teardown(test_client_fragments_both_ways, server_setup,
					    server_teardown),
	    cmocka_unit_test_setup_teardown(test_client_errors_and_drops, server_setup,
					    server_teardown),
	    cmocka_unit_test_setup_teardown(test_client_request_retransmits, server_setup,
					    server_teardown),
	    cmocka_unit_test_setup_teardown(test_client_duplicates_dropped, server_setup,
					    server_teardown),
	    cmocka_unit_test_setup_teardown(test_client_health, server_setup, server_teardown),
	    cmocka_unit_test_setup_teardown(test_client_request_timeout_and_server_error,
					    server_setup, server_teardown),
	    cmocka_unit_test_setup_teardown(test_client_misuse, server_setup, server_teardown),
	};

	return cmocka_run_group_tests(tests, NULL, NULL);
}
