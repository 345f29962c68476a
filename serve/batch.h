/* SPDX-License-Identifier: MIT */
/*
 * serve/batch.h — `splitnic serve`'s dynamic batching (conf/batch.h): a model's admitted
 * REQUESTs wait here, their inputs side by side, until the batch is full, or the oldest has
 * waited max_delay_ns, or (max_delay_ns 0) the burst of datagrams that brought them is handled;
 * then the batch runs through the model's executor as one call (kern_forward with n > 1) and
 * each request is answered from its row of scores. All memory is allocated at load.
 */
#ifndef SERVE_BATCH_H
#define SERVE_BATCH_H

#include <stdbool.h>
#include <stdint.h>
#include <sys/socket.h>

#include "conf/batch.h"
#include "exec/kexec.h"

/* Who to answer, and about what. */
struct serve_req {
	struct sockaddr_storage to;
	socklen_t tolen;
	uint32_t model_id;
	uint32_t in_bytes; /* the UDP payload that brought it (the trust policy's measure) */
	uint64_t request_id;
	uint64_t t_in; /* ns: its burst's receive */
};

struct serve_batch {
	struct conf_batch cfg;
	uint32_t n;	       /* requests waiting */
	uint32_t in_bytes;     /* one input */
	uint32_t classes;      /* one row of scores */
	uint8_t *in;	       /* cfg.max_batch inputs, 64-byte aligned */
	double *scores;	       /* cfg.max_batch rows */
	struct serve_req *req; /* cfg.max_batch */
};

/* 0 or -ENOMEM. */
int serve_batch_init(struct serve_batch *b, const struct conf_batch *cfg, uint32_t in_bytes,
		     uint32_t classes);
void serve_batch_fini(struct serve_batch *b);

/* The next request's slot (the batch is not full): its input at *in (in_bytes to fill). The
 * caller fills both, then serve_batch_add(). */
static inline struct serve_req *serve_batch_slot(struct serve_batch *b, void **in)
{
	*in = b->in + (size_t)b->n * b->in_bytes;
	return &b->req[b->n];
}

/* The slot filled: true when the batch is full (it must run before the next slot). */
static inline bool serve_batch_add(struct serve_batch *b)
{
	return ++b->n == b->cfg.max_batch;
}

/* ns until the batch must run (0: now), UINT64_MAX when it holds nothing. */
uint64_t serve_batch_wait_ns(const struct serve_batch *b, uint64_t now);

/* Run the n waiting requests through x as one batch: 0 or the executor's error. The caller
 * answers req[i] from scores + i * classes, then sets n to 0. */
int serve_batch_run(struct serve_batch *b, struct kexec *x);

#endif /* SERVE_BATCH_H */
