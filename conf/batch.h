/* SPDX-License-Identifier: MIT */
/*
 * conf/batch.h — a served model's dynamic batching, as splitnic-host and `splitnic serve` take
 * it: the server-wide options --max-batch N and --max-queue-delay-us US, and per model a suffix
 * of its --model value (or the keys max-batch and max-queue-delay-us of a [model NAME] section
 * of splitnic-host.conf, which become that suffix):
 *
 *     --model SPEC[,max-batch=N][,max-queue-delay-us=US]
 *
 * Requests of one model that are waiting together run as one batch of at most N through the
 * batched kernels; the oldest waits at most US microseconds for others to join it (0: a batch is
 * whatever has arrived when the server turns to the model, so a lone request never waits).
 */
#ifndef CONF_BATCH_H
#define CONF_BATCH_H

#include <stddef.h>
#include <stdint.h>

#include "conf/opts.h"

#define CONF_BATCH_MAX_DELAY_US 1000000

struct conf_batch {
	uint32_t max_batch;    /* 1: no batching */
	uint64_t max_delay_ns; /* how long the oldest request waits for a batch to fill */
};

/*
 * The server-wide batching options, the same rows in splitnic-host and serve: --max-batch N
 * (1..HI) and --max-queue-delay-us US into member B (struct conf_batch) of S.
 */
#define CONF_BATCH_ROWS(S, B, HI)                                                                  \
	CONF_INT_ROW("max-batch", "N", S, B.max_batch, 1, HI, "1",                                 \
		     "requests of a model run as one batch, at most"),                             \
	    CONF_SCALED_ROW("max-queue-delay-us", "US", S, B.max_delay_ns, 0,                      \
			    CONF_BATCH_MAX_DELAY_US, 1000, "0",                                    \
			    "how long a request waits for a batch to fill (0: never)")

/* Where the batching suffix of spec (a --model value) starts: strlen(spec) if it has none. */
size_t conf_batch_at(const char *spec);

/*
 * Cut the batching suffix off spec (a --model value) and parse it into *b (fields the suffix
 * does not name are left as they are): N in 1..max_batch_hi, US in 0..CONF_BATCH_MAX_DELAY_US.
 * The suffix starts at the first ",max-batch=" or ",max-queue-delay-us="; what follows must be
 * such keys only. Returns 0, or -EINVAL with "--model SPEC: ..." in err.
 */
int conf_batch_suffix(char *spec, uint32_t max_batch_hi, struct conf_batch *b, char *err,
		      size_t errlen);

/*
 * Append a [model NAME] section's max-batch and max-queue-delay-us values (either NULL when
 * absent) to the --model value in out (a string of outlen bytes). 0, or -ENAMETOOLONG.
 */
int conf_batch_spec(const char *max_batch, const char *max_delay_us, char *out, size_t outlen);

#endif /* CONF_BATCH_H */
