/* SPDX-License-Identifier: MIT */
/*
 * metrics/metrics.h — the servers' metrics endpoint (splitnic-nic, splitnic-host, splitnic
 * serve): the Prometheus text exposition format (version 0.0.4, what Prometheus scrapes and
 * `promtool check metrics` reads) written from counters the servers already keep, and a small
 * HTTP/1.0-1.1 responder on a thread of its own that answers:
 *
 *   GET /metrics              200, the exposition (Content-Type text/plain; version=0.0.4)
 *   GET /-/live, /livez       200 "live": the process answers
 *   GET /-/ready, /readyz     200 "ready" while the server takes requests; 503 with the reason
 *                             ("draining", as HEALTH says it) otherwise
 *   POST /-/reload            reloads the server's models (where it can): 200 with what
 *                             happened, or 500 with why not
 *   HEAD of the same          the same status and headers, no body
 *   anything else             404 (another path), 405 (another method), 400 (no request line)
 *
 * Bounded: one connection at a time, a request of at most METRICS_REQ_MAX bytes read within
 * METRICS_IO_MS, every answer closes the connection; the exposition grows to at most
 * METRICS_BUF_MAX bytes (then the scrape is answered 500). The responder reads the servers'
 * counters with relaxed atomic loads and never takes a lock the packet path takes: the packet
 * path neither knows nor waits for it.
 *
 * Names (docs/operator-guide.md lists them): counters end in _total, durations are in seconds,
 * latency histograms are cumulative (_bucket{le=...}, _count, _sum) with labels model and
 * stage, never a label per request.
 */
#ifndef METRICS_H
#define METRICS_H

#include <pthread.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#define METRICS_LOG2_BUCKETS 24 /* bucket b counts [2^(b-1), 2^b) us; the last, the rest */
#define METRICS_BUF_MAX	     (4u << 20)
#define METRICS_REQ_MAX	     4096
#define METRICS_IO_MS	     1000

/* A latency histogram on the packet path: one writer, any number of relaxed readers. */
struct metrics_log2 {
	uint64_t b[METRICS_LOG2_BUCKETS];
	uint64_t sum_ns;
};

/* The bucket of a duration of ns: b counts [2^(b-1), 2^b) us, 0 counts below 1 us. */
static inline unsigned metrics_log2_bucket(uint64_t ns)
{
	uint64_t us = ns / 1000;
	unsigned b = us ? 64 - (unsigned)__builtin_clzll(us) : 0;

	return b < METRICS_LOG2_BUCKETS ? b : METRICS_LOG2_BUCKETS - 1;
}

/* Single writer: plain stores the readers load relaxed; allocates nothing. */
static inline void metrics_log2_add(struct metrics_log2 *h, uint64_t ns)
{
	unsigned b = metrics_log2_bucket(ns);

	__atomic_store_n(&h->b[b], h->b[b] + 1, __ATOMIC_RELAXED);
	__atomic_store_n(&h->sum_ns, h->sum_ns + ns, __ATOMIC_RELAXED);
}

/* The exposition being written: text grows to METRICS_BUF_MAX, then `full` is set. */
struct metrics_buf {
	char *p;
	size_t len, cap;
	bool full;
};

void metrics_printf(struct metrics_buf *b, const char *fmt, ...)
    __attribute__((format(printf, 2, 3)));
/* A family's # HELP and # TYPE lines (type: counter, gauge, histogram). */
void metrics_family(struct metrics_buf *b, const char *name, const char *type, const char *help);
/* One sample: name{labels} v; labels "" or `k="v",...` (values escaped by metrics_label). */
void metrics_sample(struct metrics_buf *b, const char *name, const char *labels, uint64_t v);
/*
 * A log2 histogram (n buckets as struct metrics_log2's, counts loaded relaxed; the last bucket
 * holds everything above) as a cumulative Prometheus histogram in seconds: name_bucket{le=...}
 * for each bound 2^b us (b < n - 1) and +Inf, name_count (the +Inf bucket) and name_sum.
 */
void metrics_histogram(struct metrics_buf *b, const char *name, const char *labels,
		       const uint64_t *buckets, unsigned n, uint64_t sum_ns);
/* `key="value"` with value escaped (\\, \", \n) into out: the bytes written, cut to fit. */
size_t metrics_label(char *out, size_t outlen, const char *key, const char *value);

/*
 * A server's counters, given as (key, value) by its counters() callback (the ones its telemetry
 * and stats file get), as metrics of prefix splitnic_<who>_ by one rule (docs/operator-guide.md
 * lists the names):
 *
 *   error_<reason>          splitnic_<who>_errors_total{reason="<reason>"} (ERRORs decided)
 *   fallback_<reason>       splitnic_<who>_fallbacks_total{reason="<reason>"}
 *   verdict_<v>             splitnic_<who>_parser_verdicts_total{verdict="<v>"}
 *   reasm_<v>               splitnic_<who>_reassembly_total{verdict="<v>"}
 *   m<i>_<key>              splitnic_<who>_<key>{model="<model i's name>"}
 *   <word><n>_<key>         splitnic_<who>_<key>_by_<word>_total{<word>="<n>"} (worker0_requests)
 *   a key of gauges         splitnic_<who>_<key>, a gauge (a value now: queue depth, in use)
 *   <key>_ns                splitnic_<who>_<key>_seconds_total
 *   any other key           splitnic_<who>_<key>_total
 *
 * error_rate_limited and error_notices are counters of their own (ERRORs not sent, ERRORs sent
 * to the host), not reasons. metrics_keys_put() takes one key (put's signature, arg the struct
 * metrics_keys); metrics_keys_write() writes them grouped by family and forgets them.
 */
struct metrics_row;
struct metrics_keys {
	const char *who;				  /* "nic", "host", "serve" */
	const char *(*model_name)(void *arg, unsigned i); /* m<i>'s name; NULL: "?" */
	const char *const *gauges;			  /* keys that are gauges, NULL-ended */
	void *arg;
	struct metrics_row *rows; /* the keys put since the last write */
	unsigned n, cap;
	bool full;
};

void metrics_keys_put(void *keys, const char *key, uint64_t v);
void metrics_keys_write(struct metrics_keys *k, struct metrics_buf *b);
void metrics_keys_free(struct metrics_keys *k);

/* A histogram of model `model` (its name) and stage `stage`: n log2 buckets as struct
 * metrics_log2's, loaded relaxed, and the durations' sum. */
typedef void (*metrics_hist_put)(void *arg, const char *model, const char *stage,
				 const uint64_t *buckets, unsigned n, uint64_t sum_ns);
/* splitnic_<who>_latency_seconds{model,stage}: every histogram each() gives, cumulative. */
void metrics_latency(struct metrics_buf *b, const char *who,
		     void (*each)(void *srv, metrics_hist_put put, void *arg), void *srv);
/* splitnic_<who>_ready: 1 while the server takes requests. */
void metrics_ready(struct metrics_buf *b, const char *who, bool ready);

/* The options of every server that has the endpoint (conf/opts.h rows; S its options struct,
 * PORT and ADDR its const char * members): off unless --metrics-port is given. */
#define METRICS_OPT_ROWS(S, PORT, ADDR)                                                            \
	CONF_PORT_ROW("metrics-port", "TCP", offsetof(S, PORT), NULL,                              \
		      "Prometheus metrics, /-/live and /-/ready over HTTP on this port (off)"),    \
	    CONF_STR_ROW("metrics-addr", "ADDR", offsetof(S, ADDR), NULL,                          \
			 "the metrics endpoint's address (default: every address)")

/* What the responder answers from: the server's state, read from the responder's thread. */
struct metrics_src {
	void *arg;
	/* the exposition of every metric */
	void (*write)(void *arg, struct metrics_buf *b);
	/* NULL: ready; else why not ("draining", "starting") */
	const char *(*not_ready)(void *arg);
	/* POST /-/reload: reload the models (waits for the outcome): 0 or -errno, and what
	 * happened in msg; NULL: 404 */
	int (*reload)(void *arg, char *msg, size_t len);
};

struct metrics_http;

/* Starts the responder's thread: 0 or an errno (pthread_create's contract). */
typedef int (*metrics_spawn_fn)(pthread_t *t, void *(*fn)(void *), void *arg);

/*
 * Listen on addr:port (TCP; addr NULL: every address) and answer from src on a thread of its
 * own, started by spawn (NULL: pthread_create; a DPDK server passes one that keeps it off the
 * lcores' cores), until metrics_http_stop(). NULL with a message in err (the address, port and
 * cause).
 */
struct metrics_http *metrics_http_start(const char *addr, const char *port,
					const struct metrics_src *src, metrics_spawn_fn spawn,
					char *err, size_t errlen);
/* The thread ended, the socket closed, everything freed; NULL is fine. */
void metrics_http_stop(struct metrics_http *h);
/* The port it listens on (the one bound when port was "0"). */
unsigned metrics_http_port(const struct metrics_http *h);

/*
 * The answer to one request of len bytes (its request line is enough): the status line and
 * headers into head, the body into body (both emptied first; growing): the HTTP status. The
 * responder's thread sends head, then body (unless the method was HEAD).
 */
int metrics_http_answer(const struct metrics_src *src, const char *req, size_t len,
			struct metrics_buf *head, struct metrics_buf *body, bool *head_only);

#endif /* METRICS_H */
