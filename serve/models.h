/* SPDX-License-Identifier: MIT */
/*
 * serve/models.h — the models `splitnic serve` answers with, and their replacement while it runs
 * (private to serve/).
 *
 * The models are one table (struct serve_table), built whole from the options (--model, or the
 * [model NAME] sections of --config FILE) and never changed once built. A reload (SIGHUP, or
 * POST /-/reload on the metrics port) builds a new table on the reloader's thread, from the
 * command line and the configuration file read again; the packet loop takes it between two
 * bursts (serve_reloader_take: one atomic exchange) and hands the old one back
 * (serve_reloader_retire). A request runs wholly on the table of its burst: in-flight requests
 * finish on the old version, the next burst's go to the new one, and nothing is dropped or
 * waits for a lock (datagrams wait in the socket's buffer only while a burst runs). The
 * reloader frees an old table once the metrics thread, the only other reader, is not inside a
 * read that may have started before the exchange (its generation counter: odd while reading,
 * an RCU grace period). Latency histograms are kept per model name for the life of the
 * process (struct serve_hist): a replacement with the same name goes on counting (cumulative, as
 * Prometheus expects); an id that is gone is unloaded (ERROR unknown_model from then on). A reload
 * that fails (a model file, the configuration) keeps the running table and says why.
 */
#ifndef SERVE_MODELS_H
#define SERVE_MODELS_H

#include <stdbool.h>
#include <stdint.h>

#include "conf/batch.h"
#include "conf/conf.h"
#include "conf/reload.h"
#include "exec/kexec.h"
#include "metrics/metrics.h"
#include "protocol/proto.h"
#include "protocol/trust.h"
#include "serve/batch.h"

#define SERVE_MAX_MODELS 8
#define SERVE_MAX_BATCH	 64

/* The latency histograms of a model: the stages of a request in serve. */
enum serve_stage { SERVE_H_TOTAL = 0, SERVE_H_QUEUE, SERVE_H_COMPUTE, SERVE_H__COUNT };

struct serve_model {
	struct model *m;
	struct kexec x;
	uint32_t id, in_fmt, in_bytes, in_count, classes;
	uint32_t resp_bytes;	/* the RESPONSE's UDP payload bytes, all datagrams */
	char shape_reason[48];	/* ERROR bad_shape's: "bad_shape: expects u8 1x28x28" */
	struct serve_batch b;	/* its requests waiting for the executor (serve/batch.h) */
	uint8_t *body;		/* classes * 8: the RESPONSE's data section */
	struct metrics_log2 *h; /* SERVE_H__COUNT histograms: its name's (serve_hist) */
};

/* The latency histograms of a model name, kept for the life of the process: cumulative across
 * reloads (a model's replacement goes on counting; an unloaded one's stay as they were). */
#define SERVE_MAX_HISTS 32
struct serve_hist {
	char name[64];
	struct metrics_log2 h[SERVE_H__COUNT];
};

struct serve_table {
	uint64_t version; /* 1 at start, then one more per reload */
	uint32_t n_models;
	struct serve_model sm[SERVE_MAX_MODELS];
	struct proto_health_model health[SERVE_MAX_MODELS];
};

/* The options of splitnic serve (serve/serve.c's table). */
struct serve_opts {
	const char *models[SERVE_MAX_MODELS];
	uint32_t n_models;
	const char *bind, *port, *stats, *ready, *name;
	const char *metrics_port, *metrics_addr;
	const char *precision; /* of the float layers */
	struct proto_trust_cfg trust;
	long payload, err_rate, err_burst;
	struct conf_batch batch; /* every model's, unless its --model value says otherwise */
};

/*
 * argv (from the verb's name) into o, --config FILE read (its [server] keys and [model NAME]
 * sections, keys file, id, max-batch and max-queue-delay-us; the command line wins, and its --model
 * leaves the file's models out). The strings o points to live in *hold until conf_args_free(hold).
 * 0, or -EINVAL after a message on stderr.
 */
int serve_opts_read(int argc, char **argv, struct serve_opts *o, struct conf_args *hold);

/* The table of o's models, version `version`, RESPONSEs cut at payload bytes a datagram: NULL
 * after a message on stderr (a model file, an id twice, memory). Says what it loaded. */
struct serve_table *serve_table_load(const struct serve_opts *o, uint32_t payload,
				     uint64_t version);
void serve_table_free(struct serve_table *t);
/* The model with id `id` (0: the first one), or NULL. */
struct serve_model *serve_table_find(struct serve_table *t, uint32_t id);

struct serve_reloader {
	int argc;
	char **argv; /* the command line, read again at each reload */
	uint32_t payload;
	const uint64_t *rgen;	     /* the metrics thread's read generation (odd: inside a read) */
	uint64_t version;	     /* of the table running */
	struct conf_reload t;	     /* the reloads asked for, begun, done, the last outcome */
	struct serve_table *ready;   /* atomic: loaded, for the packet loop */
	struct serve_table *retired; /* atomic: given back by the packet loop */
	bool quit;		     /* atomic */
	bool running;
	pthread_t thr;
};

/* The reloader's thread started (argv kept: it must live as long). 0 or -errno. */
int serve_reloader_start(struct serve_reloader *r, int argc, char **argv, uint32_t payload,
			 const uint64_t *rgen, uint64_t version);
/* A reload asked for (atomics only: the packet loop and signal-driven callers): its number. */
int serve_reloader_ask(struct serve_reloader *r);
/* The packet loop, between bursts: a new table to serve from now on, or NULL. */
struct serve_table *serve_reloader_take(struct serve_reloader *r);
/* ... and the one it replaced, to be freed after the grace period. */
void serve_reloader_retire(struct serve_reloader *r, struct serve_table *old);
/* Off the packet path: wait (at most ms) until reload number n is done: its status, its words
 * in msg. */
int serve_reloader_wait(struct serve_reloader *r, int n, unsigned ms, char *msg, size_t len);
/* The thread ended; a table still pending freed. */
void serve_reloader_stop(struct serve_reloader *r);

#endif /* SERVE_MODELS_H */
