// SPDX-License-Identifier: MIT
/* metrics/: the exposition, the naming rule of the counters' keys, the HTTP answers, and the
 * responder over a real socket. */
#include <errno.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <unistd.h>

#include <arpa/inet.h>
#include <cmocka.h>

#include "metrics/metrics.h"

static bool has_line(const struct metrics_buf *b, const char *line)
{
	const char *p = b->p;
	size_t n = strlen(line);

	while (p && (p = strstr(p, line)) != NULL) {
		if ((p == b->p || p[-1] == '\n') && p[n] == '\n')
			return true;
		p += n;
	}
	return false;
}

static void test_metrics_histogram_cumulative(void **state)
{
	struct metrics_log2 h = {0};
	struct metrics_buf b = {0};

	(void)state;
	metrics_log2_add(&h, 500);   /* below 1 us: bucket 0 */
	metrics_log2_add(&h, 1500);  /* 1 us: [1, 2) us, bucket 1 */
	metrics_log2_add(&h, 3000);  /* 3 us: bucket 2 */
	metrics_log2_add(&h, 4000);  /* 4 us: [4, 8) us, bucket 3 */
	metrics_log2_add(&h, 100e9); /* 100 s: the last bucket */
	assert_int_equal(metrics_log2_bucket(999), 0);
	assert_int_equal(metrics_log2_bucket(1000), 1);
	assert_int_equal(metrics_log2_bucket(7999), 3);
	assert_int_equal(metrics_log2_bucket(8000), 4);
	metrics_histogram(&b, "x_seconds", "model=\"m\"", h.b, METRICS_LOG2_BUCKETS, h.sum_ns);
	assert_false(b.full);
	assert_true(has_line(&b, "x_seconds_bucket{model=\"m\",le=\"1e-06\"} 1"));
	assert_true(has_line(&b, "x_seconds_bucket{model=\"m\",le=\"2e-06\"} 2"));
	assert_true(has_line(&b, "x_seconds_bucket{model=\"m\",le=\"4e-06\"} 3"));
	assert_true(has_line(&b, "x_seconds_bucket{model=\"m\",le=\"8e-06\"} 4"));
	assert_true(has_line(&b, "x_seconds_bucket{model=\"m\",le=\"4.194304\"} 4"));
	assert_true(has_line(&b, "x_seconds_bucket{model=\"m\",le=\"+Inf\"} 5"));
	assert_true(has_line(&b, "x_seconds_count{model=\"m\"} 5"));
	assert_true(has_line(&b, "x_seconds_sum{model=\"m\"} 100.000009000"));
	free(b.p);
}

static void test_metrics_label_escaped(void **state)
{
	char out[32];

	(void)state;
	metrics_label(out, sizeof(out), "model", "a\"b\\c\nd");
	assert_string_equal(out, "model=\"a\\\"b\\\\c\\nd\"");
	/* cut to fit, still closed */
	metrics_label(out, 12, "model", "abcdefghijkl");
	assert_int_equal(strlen(out), 11);
	assert_int_equal(out[10], '"');
}

static const char *model_of(void *arg, unsigned i)
{
	(void)arg;
	return i == 0 ? "fmnist-bmlp" : NULL;
}

static void test_metrics_keys_rule(void **state)
{
	static const char *const gauges[] = {"queued", "in_use", NULL};
	struct metrics_keys k = {"host", model_of, gauges, NULL, NULL, 0, 0, false};
	struct metrics_buf b = {0};
	const char *p, *q;

	(void)state;
	metrics_keys_put(&k, "error_busy", 3);
	metrics_keys_put(&k, "requests", 10);
	metrics_keys_put(&k, "error_unknown_model", 2); /* the same family, not next to it */
	metrics_keys_put(&k, "error_rate_limited", 1);
	metrics_keys_put(&k, "fallback_timeout", 4);
	metrics_keys_put(&k, "verdict_ok", 9);
	metrics_keys_put(&k, "reasm_complete", 8);
	metrics_keys_put(&k, "m0_queued", 5);
	metrics_keys_put(&k, "m1_queued", 6);
	metrics_keys_put(&k, "worker1_requests", 7);
	metrics_keys_put(&k, "in_use", 11);
	metrics_keys_put(&k, "worker_compute_ns", 2500000000ull);
	metrics_keys_write(&k, &b);
	assert_true(has_line(&b, "# TYPE splitnic_host_errors_total counter"));
	assert_true(has_line(&b, "splitnic_host_errors_total{reason=\"busy\"} 3"));
	assert_true(has_line(&b, "splitnic_host_errors_total{reason=\"unknown_model\"} 2"));
	assert_true(has_line(&b, "splitnic_host_error_rate_limited_total 1"));
	assert_true(has_line(&b, "splitnic_host_requests_total 10"));
	assert_true(has_line(&b, "splitnic_host_fallbacks_total{reason=\"timeout\"} 4"));
	assert_true(has_line(&b, "splitnic_host_parser_verdicts_total{verdict=\"ok\"} 9"));
	assert_true(has_line(&b, "splitnic_host_reassembly_total{verdict=\"complete\"} 8"));
	assert_true(has_line(&b, "# TYPE splitnic_host_queued gauge"));
	assert_true(has_line(&b, "splitnic_host_queued{model=\"fmnist-bmlp\"} 5"));
	assert_true(has_line(&b, "splitnic_host_queued{model=\"?\"} 6"));
	assert_true(has_line(&b, "splitnic_host_requests_by_worker_total{worker=\"1\"} 7"));
	assert_true(has_line(&b, "# TYPE splitnic_host_in_use gauge"));
	assert_true(has_line(&b, "splitnic_host_worker_compute_seconds_total 2.500000000"));
	/* one HELP and TYPE per family, its samples together */
	p = strstr(b.p, "# TYPE splitnic_host_errors_total");
	assert_non_null(p);
	assert_null(strstr(p + 1, "# TYPE splitnic_host_errors_total"));
	q = strstr(b.p, "reason=\"unknown_model\"");
	assert_true(q > p);
	p = strstr(p + 1, "# TYPE");
	assert_true(!p || p > q);
	assert_int_equal(k.n, 0); /* forgotten after the write */
	metrics_keys_free(&k);
	free(b.p);
}

static void write_one(void *arg, struct metrics_buf *b)
{
	metrics_family(b, "a_total", "counter", "a");
	metrics_sample(b, "a_total", "", *(uint64_t *)arg);
}

static const char *draining(void *arg)
{
	(void)arg;
	return "draining";
}

static int reload_ok(void *arg, char *msg, size_t len)
{
	(void)arg;
	snprintf(msg, len, "version 2");
	return 0;
}

static int reload_bad(void *arg, char *msg, size_t len)
{
	(void)arg;
	snprintf(msg, len, "failed: x.snm");
	return -EINVAL;
}

static int answer(const struct metrics_src *src, const char *req, struct metrics_buf *head,
		  struct metrics_buf *body, bool *head_only)
{
	return metrics_http_answer(src, req, strlen(req), head, body, head_only);
}

static void test_metrics_http_answers(void **state)
{
	uint64_t v = 42;
	struct metrics_src src = {.arg = &v, .write = write_one};
	struct metrics_buf head = {0}, body = {0};
	bool ho;

	(void)state;
	assert_int_equal(
	    answer(&src, "GET /metrics HTTP/1.1\r\nHost: x\r\n\r\n", &head, &body, &ho), 200);
	assert_false(ho);
	assert_non_null(strstr(head.p, "Content-Type: text/plain; version=0.0.4"));
	assert_non_null(strstr(head.p, "Content-Length: 51\r\n"));
	assert_int_equal(body.len, 51);
	assert_true(has_line(&body, "a_total 42"));
	assert_int_equal(answer(&src, "HEAD /metrics?x=1 HTTP/1.0\r\n\r\n", &head, &body, &ho),
			 200);
	assert_true(ho);
	assert_int_equal(answer(&src, "GET /-/live HTTP/1.1\r\n\r\n", &head, &body, &ho), 200);
	assert_int_equal(answer(&src, "GET /readyz HTTP/1.1\r\n\r\n", &head, &body, &ho), 200);
	assert_string_equal(body.p, "ready\n");
	src.not_ready = draining;
	assert_int_equal(answer(&src, "GET /-/ready HTTP/1.1\r\n\r\n", &head, &body, &ho), 503);
	assert_string_equal(body.p, "draining\n");
	assert_int_equal(answer(&src, "GET /livez HTTP/1.1\r\n\r\n", &head, &body, &ho), 200);
	assert_int_equal(answer(&src, "POST /metrics HTTP/1.1\r\n\r\n", &head, &body, &ho), 405);
	assert_non_null(strstr(head.p, "Allow: GET, HEAD"));
	assert_int_equal(answer(&src, "GET /other HTTP/1.1\r\n\r\n", &head, &body, &ho), 404);
	/* POST /-/reload: 404 where the server reloads nothing, else its outcome */
	assert_int_equal(answer(&src, "POST /-/reload HTTP/1.1\r\n\r\n", &head, &body, &ho), 404);
	src.reload = reload_ok;
	assert_int_equal(answer(&src, "POST /-/reload HTTP/1.1\r\n\r\n", &head, &body, &ho), 200);
	assert_string_equal(body.p, "version 2\n");
	src.reload = reload_bad;
	assert_int_equal(answer(&src, "POST /-/reload HTTP/1.1\r\n\r\n", &head, &body, &ho), 500);
	assert_string_equal(body.p, "failed: x.snm\n");
	assert_int_equal(answer(&src, "POST /metrics HTTP/1.1\r\n\r\n", &head, &body, &ho), 405);
	assert_int_equal(answer(&src, "GET /metrics\r\n\r\n", &head, &body, &ho), 400);
	assert_int_equal(answer(&src, "junk", &head, &body, &ho), 400);
	free(head.p);
	free(body.p);
}

/* The responder over TCP on 127.0.0.1 (an ephemeral port): a scrape, then a client that sends
 * nothing does not keep the next one out for longer than METRICS_IO_MS. */
static void test_metrics_http_socket(void **state)
{
	uint64_t v = 7;
	const struct metrics_src src = {.arg = &v, .write = write_one};
	struct sockaddr_in sa = {.sin_family = AF_INET, .sin_addr.s_addr = htonl(INADDR_LOOPBACK)};
	char err[256], buf[1024];
	struct metrics_http *h;
	int idle, c;
	ssize_t n, got = 0;

	(void)state;
	h = metrics_http_start("127.0.0.1", "0", &src, NULL, err, sizeof(err));
	assert_non_null(h);
	sa.sin_port = htons((uint16_t)metrics_http_port(h));
	idle = socket(AF_INET, SOCK_STREAM, 0);
	assert_int_equal(connect(idle, (struct sockaddr *)&sa, sizeof(sa)), 0);
	c = socket(AF_INET, SOCK_STREAM, 0);
	assert_int_equal(connect(c, (struct sockaddr *)&sa, sizeof(sa)), 0);
	assert_int_equal(send(c, "GET /metrics HTTP/1.1\r\n\r\n", 25, 0), 25);
	while ((n = recv(c, buf + got, sizeof(buf) - 1 - (size_t)got, 0)) > 0)
		got += n;
	buf[got] = 0;
	assert_non_null(strstr(buf, "HTTP/1.1 200 OK"));
	assert_non_null(strstr(buf, "\na_total 7\n"));
	close(c);
	close(idle);
	metrics_http_stop(h);
	/* the port taken: a message naming it */
	h = metrics_http_start("127.0.0.1", "0", &src, NULL, err, sizeof(err));
	assert_non_null(h);
	snprintf(buf, sizeof(buf), "%u", metrics_http_port(h));
	assert_null(metrics_http_start("127.0.0.1", buf, &src, NULL, err, sizeof(err)));
	assert_non_null(strstr(err, buf));
	metrics_http_stop(h);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
	    cmocka_unit_test(test_metrics_histogram_cumulative),
	    cmocka_unit_test(test_metrics_label_escaped),
	    cmocka_unit_test(test_metrics_keys_rule),
	    cmocka_unit_test(test_metrics_http_answers),
	    cmocka_unit_test(test_metrics_http_socket),
	};

	return cmocka_run_group_tests(tests, NULL, NULL);
}
