/* SPDX-License-Identifier: MIT */
/* lib/snlib_obj.h — libsplitnic's objects and their magic numbers (library-private). */
#ifndef SNLIB_OBJ_H
#define SNLIB_OBJ_H

#include <stdatomic.h>
#include <stdlib.h>

#include "lib/snlib.h"

#define SNLIB_STR_(x) #x
#define SNLIB_STR(x)  SNLIB_STR_(x)

#define SNLIB_MODEL_MAGIC 0x534e4d4cu /* "SNML" */
#define SNLIB_CTX_MAGIC	  0x534e4358u /* "SNCX" */
#define SNLIB_DEAD_MODEL  0xdead4d4cu
#define SNLIB_DEAD_CTX	  0xdead4358u

struct splitnic_model {
	uint32_t magic;
	atomic_uint n_ctx; /* live contexts */
	struct model *km;
	struct splitnic_shape input;
	uint32_t classes;
	char *labels; /* classes x 64 bytes, NUL-terminated each */
};

struct snlib_job;

struct splitnic_ctx {
	uint32_t magic;
	uint32_t max_batch, threads, per_thread;
	struct splitnic_model *m;
	double *scores; /* max_batch x classes, when the caller passes none */
	struct snlib_job *jobs;
};

/* A kind of handle: its magic (live, dead) and the words of its messages. */
struct snlib_handle_kind {
	uint32_t magic, dead;
	const char *arg;		/* the parameter: "model", "ctx" */
	const char *noun;		/* "model", "context" */
	const char *made_by, *freed_by; /* the functions that make and free it */
};

/*
 * SPLITNIC_OK for a live handle of kind k (magic: where its magic is, NULL for a NULL handle);
 * else SPLITNIC_E_INVALID (NULL) or SPLITNIC_E_BAD_HANDLE (freed, or not one) with a message.
 */
int snlib_handle_check(const uint32_t *magic, const struct snlib_handle_kind *k,
		       struct splitnic_error *err);
int snlib_model_check(const struct splitnic_model *m, struct splitnic_error *err);

/*
 * Free an object whose magic was just set to its dead value. Debug builds keep the object (its
 * dead magic is what detects a later use); release builds (NDEBUG) free it.
 */
#ifdef NDEBUG
static inline void snlib_release(void *obj)
{
	free(obj);
}
#else
static inline void snlib_release(void *obj)
{
	(void)obj;
}
#endif

#endif /* SNLIB_OBJ_H */
