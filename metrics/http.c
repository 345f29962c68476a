// SPDX-License-Identifier: MIT
/* The metrics endpoint's HTTP responder (metrics/metrics.h): one thread, one connection at a
 * time, every answer closing it. */
#include <errno.h>
#include <fcntl.h>
#include <netdb.h>
#include <poll.h>
#include <pthread.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <sys/uio.h>
#include <time.h>
#include <unistd.h>

#include <netinet/in.h>

#include "metrics/metrics.h"

struct metrics_http {
	struct metrics_src src;
	int fd;
	int stop[2]; /* a pipe: a byte on it ends the thread */
	unsigned port;
	pthread_t thr;
	bool running;
	struct metrics_buf head, body;
};

static void buf_reset(struct metrics_buf *b)
{
	b->len = 0;
	b->full = false;
	if (b->p)
		b->p[0] = 0;
}

static int status_of(struct metrics_buf *head, int code, const char *ctype, size_t len)
{
	static const struct {
		int code;
		const char *text;
	} st[] = {{200, "OK"},
		  {400, "Bad Request"},
		  {404, "Not Found"},
		  {405, "Method Not Allowed"},
		  {500, "Internal Server Error"},
		  {503, "Service Unavailable"}};
	const char *text = "Error";

	for (size_t i = 0; i < sizeof(st) / sizeof(st[0]); i++)
		if (st[i].code == code)
			text = st[i].text;
	metrics_printf(head,
		       "HTTP/1.1 %d %s\r\nContent-Type: %s\r\nContent-Length: %zu\r\n"
		       "Connection: close\r\n%s\r\n",
		       code, text, ctype, len, code == 405 ? "Allow: GET, HEAD, POST\r\n" : "");
	return code;
}

static int plain(struct metrics_buf *head, struct metrics_buf *body, int code, const char *text)
{
	metrics_printf(body, "%s\n", text);
	return status_of(head, code, "text/plain; charset=utf-8", body->len);
}

int metrics_http_answer(const struct metrics_src *src, const char *req, size_t len,
			struct metrics_buf *head, struct metrics_buf *body, bool *head_only)
{
	const char *sp1, *sp2, *end = memchr(req, '\n', len);
	char path[256];
	size_t plen;

	buf_reset(head);
	buf_reset(body);
	*head_only = false;
	sp1 = memchr(req, ' ', end ? (size_t)(end - req) : len);
	sp2 = sp1 ? memchr(sp1 + 1, ' ', (size_t)((end ? end : req + len) - sp1 - 1)) : NULL;
	if (!end || !sp1 || !sp2 || strncmp(sp2 + 1, "HTTP/1.", 7))
		return plain(head, body, 400, "bad request: GET PATH HTTP/1.x expected");
	plen = (size_t)(sp2 - sp1 - 1);
	if (plen >= sizeof(path))
		return plain(head, body, 404, "not found");
	memcpy(path, sp1 + 1, plen);
	path[plen] = 0;
	path[strcspn(path, "?")] = 0;
	if (sp1 - req == 4 && !memcmp(req, "POST", 4) && !strcmp(path, "/-/reload")) {
		char msg[256];
		int rc;

		if (!src->reload)
			return plain(head, body, 404, "this server reloads no models");
		rc = src->reload(src->arg, msg, sizeof(msg));
		return plain(head, body, rc ? 500 : 200, msg);
	}
	if ((sp1 - req == 4 && !memcmp(req, "HEAD", 4)))
		*head_only = true;
	else if (sp1 - req != 3 || memcmp(req, "GET", 3))
		return plain(head, body, 405, "only GET and HEAD (POST /-/reload)");
	if (!strcmp(path, "/metrics")) {
		src->write(src->arg, body);
		if (body->full) {
			buf_reset(body);
			return plain(head, body, 500, "the exposition is too large");
		}
		return status_of(head, 200, "text/plain; version=0.0.4; charset=utf-8", body->len);
	}
	if (!strcmp(path, "/-/live") || !strcmp(path, "/livez"))
		return plain(head, body, 200, "live");
	if (!strcmp(path, "/-/ready") || !strcmp(path, "/readyz")) {
		const char *why = src->not_ready ? src->not_ready(src->arg) : NULL;

		return why ? plain(head, body, 503, why) : plain(head, body, 200, "ready");
	}
	if (!strcmp(path, "/"))
		return plain(head, body, 200, "/metrics /-/live /-/ready /livez /readyz");
	return plain(head, body, 404, "not found: /metrics /-/live /-/ready");
}

static uint64_t mono_ms(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (uint64_t)ts.tv_sec * 1000 + (uint64_t)ts.tv_nsec / 1000000;
}

/* Wait for fd (events) until the deadline: > 0 ready, 0 time out or stop. */
static int wait_fd(struct metrics_http *h, int fd, short events, uint64_t deadline)
{
	for (;;) {
		struct pollfd p[2] = {{fd, events, 0}, {h->stop[0], POLLIN, 0}};
		uint64_t now = mono_ms();
		int n;

		if (now >= deadline)
			return 0;
		n = poll(p, 2, (int)(deadline - now));
		if (n < 0 && errno == EINTR)
			continue;
		if (n <= 0 || p[1].revents)
			return 0;
		return 1;
	}
}

static void send_all(struct metrics_http *h, int c, const char *p, size_t len, uint64_t deadline)
{
	while (len && wait_fd(h, c, POLLOUT, deadline) > 0) {
		ssize_t n = send(c, p, len, MSG_NOSIGNAL);

		if (n < 0 && (errno == EINTR || errno == EAGAIN))
			continue;
		if (n <= 0)
			return;
		p += n;
		len -= (size_t)n;
	}
}

/* One connection: its request read (to the end of its headers, or METRICS_REQ_MAX bytes),
 * answered, closed; all within METRICS_IO_MS. */
static void serve_conn(struct metrics_http *h, int c)
{
	const uint64_t deadline = mono_ms() + METRICS_IO_MS;
	char req[METRICS_REQ_MAX + 1];
	size_t len = 0;
	bool head_only;

	while (len < METRICS_REQ_MAX && wait_fd(h, c, POLLIN, deadline) > 0) {
		ssize_t n = recv(c, req + len, METRICS_REQ_MAX - len, 0);

		if (n < 0 && (errno == EINTR || errno == EAGAIN))
			continue;
		if (n <= 0)
			break;
		len += (size_t)n;
		req[len] = 0;
		if (strstr(req, "\r\n\r\n") || strstr(req, "\n\n"))
			break;
	}
	if (!len)
		return;
	metrics_http_answer(&h->src, req, len, &h->head, &h->body, &head_only);
	send_all(h, c, h->head.p, h->head.len, deadline);
	if (!head_only)
		send_all(h, c, h->body.p, h->body.len, deadline);
}

static void *http_main(void *arg)
{
	struct metrics_http *h = arg;

	for (;;) {
		struct pollfd p[2] = {{h->fd, POLLIN, 0}, {h->stop[0], POLLIN, 0}};
		int c;

		if (poll(p, 2, -1) < 0 && errno != EINTR)
			break;
		if (p[1].revents)
			break;
		if (!(p[0].revents & POLLIN))
			continue;
		c = accept4(h->fd, NULL, NULL, SOCK_CLOEXEC | SOCK_NONBLOCK);
		if (c < 0)
			continue;
		serve_conn(h, c);
		close(c);
	}
	return NULL;
}

static int listen_on(struct metrics_http *h, const char *addr, const char *port, char *err,
		     size_t errlen)
{
	struct addrinfo hints = {.ai_socktype = SOCK_STREAM, .ai_flags = AI_PASSIVE}, *ai;
	struct sockaddr_storage ss;
	socklen_t sl = sizeof(ss);
	int one = 1, rc = getaddrinfo(addr, port, &hints, &ai);

	if (rc) {
		snprintf(err, errlen, "metrics: %s:%s: %s", addr ? addr : "*", port,
			 gai_strerror(rc));
		return -EINVAL;
	}
	h->fd =
	    socket(ai->ai_family, ai->ai_socktype | SOCK_CLOEXEC | SOCK_NONBLOCK, ai->ai_protocol);
	if (h->fd < 0 || setsockopt(h->fd, SOL_SOCKET, SO_REUSEADDR, &one, sizeof(one)) ||
	    bind(h->fd, ai->ai_addr, ai->ai_addrlen) || listen(h->fd, 16)) {
		rc = -errno;
		snprintf(err, errlen, "metrics: listen on %s:%s (TCP): %s", addr ? addr : "*", port,
			 strerror(errno));
		freeaddrinfo(ai);
		return rc;
	}
	freeaddrinfo(ai);
	if (!getsockname(h->fd, (struct sockaddr *)&ss, &sl))
		h->port = ntohs(ss.ss_family == AF_INET6 ? ((struct sockaddr_in6 *)&ss)->sin6_port
							 : ((struct sockaddr_in *)&ss)->sin_port);
	return 0;
}

static int spawn_plain(pthread_t *t, void *(*fn)(void *), void *arg)
{
	return pthread_create(t, NULL, fn, arg);
}

struct metrics_http *metrics_http_start(const char *addr, const char *port,
					const struct metrics_src *src, metrics_spawn_fn spawn,
					char *err, size_t errlen)
{
	struct metrics_http *h = calloc(1, sizeof(*h));
	sigset_t all, old;
	int rc;

	if (!h) {
		snprintf(err, errlen, "metrics: out of memory");
		return NULL;
	}
	h->src = *src;
	h->fd = h->stop[0] = h->stop[1] = -1;
	if (listen_on(h, addr, port, err, errlen))
		goto err_free;
	if (pipe2(h->stop, O_CLOEXEC)) {
		snprintf(err, errlen, "metrics: pipe: %s", strerror(errno));
		goto err_free;
	}
	/* signals stay with the server's own threads: the responder's blocks them all */
	sigfillset(&all);
	pthread_sigmask(SIG_SETMASK, &all, &old);
	rc = (spawn ? spawn : spawn_plain)(&h->thr, http_main, h);
	pthread_sigmask(SIG_SETMASK, &old, NULL);
	if (rc) {
		snprintf(err, errlen, "metrics: thread: %s", strerror(rc));
		goto err_free;
	}
	h->running = true;
	return h;
err_free:
	metrics_http_stop(h);
	return NULL;
}

void metrics_http_stop(struct metrics_http *h)
{
	if (!h)
		return;
	/* the pipe is empty and ours: the byte always fits */
	if (h->running && write(h->stop[1], "x", 1) == 1)
		pthread_join(h->thr, NULL);
	for (int i = 0; i < 2; i++)
		if (h->stop[i] >= 0)
			close(h->stop[i]);
	if (h->fd >= 0)
		close(h->fd);
	free(h->head.p);
	free(h->body.p);
	free(h);
}

unsigned metrics_http_port(const struct metrics_http *h)
{
	return h->port;
}
