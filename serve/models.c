// SPDX-License-Identifier: MIT
/* splitnic serve's models: the table, its options and configuration file, the reloader
 * (serve/models.h). */
#include <errno.h>
#include <pthread.h>
#include <signal.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include "conf/args.h"
#include "kernels/kern.h"
#include "protocol/frame.h"
#include "serve/models.h"
#include "serve/serve.h"

/* A [model NAME] section's file, id and batching -> --model [ID=]FILE[,BATCHING]. */
static int serve_model_spec(const char *const *v, char *out, size_t outlen)
{
	int n = snprintf(out, outlen, "%s%s%s", v[1] ? v[1] : "", v[1] ? "=" : "", v[0]);

	return n < 0 || (size_t)n >= outlen ? -ENAMETOOLONG
					    : conf_batch_spec(v[2], v[3], out, outlen);
}

static const struct conf_model_key serve_model_keys[] = {
    {"file", true}, {"id", false}, {"max-batch", false}, {"max-queue-delay-us", false}};

static const struct conf_server serve_conf = {&cmd_serve_spec, serve_model_keys, 4,
					      serve_model_spec};

int serve_opts_read(int argc, char **argv, struct serve_opts *o, struct conf_args *hold)
{
	char **v = calloc((size_t)argc + 2, sizeof(*v));
	char err[512];
	int n = 0, dd;

	memset(hold, 0, sizeof(*hold));
	if (!v)
		return -ENOMEM;
	/* conf_argv's layout: PROG [eal] -- [server] [models] the command line's options */
	v[n++] = argv[0];
	for (int i = 1; i < argc; i++)
		if (!strcmp(argv[i], "--config") || !strncmp(argv[i], "--config=", 9)) {
			v[n++] = argv[i];
			if (!argv[i][8] && i + 1 < argc)
				v[n++] = argv[++i];
		}
	v[n++] = "--";
	for (int i = 1; i < argc; i++) {
		if (!strcmp(argv[i], "--config") || !strncmp(argv[i], "--config=", 9)) {
			i += !argv[i][8];
			continue;
		}
		v[n++] = argv[i];
	}
	if (conf_argv(&serve_conf, n, v, hold, err, sizeof(err))) {
		fprintf(stderr, "serve: --config: %s\n", err);
		free(v);
		return -EINVAL;
	}
	free(v);
	for (dd = 1; dd < hold->argc && strcmp(hold->argv[dd], "--"); dd++)
		;
	if (dd != 1) {
		fprintf(stderr, "serve: --config: [eal] is not a section of splitnic serve\n");
		conf_args_free(hold);
		return -EINVAL;
	}
	/* the verb's name, then the options after "--": a vector of their own (conf_parse
	 * rewrites its first entry and permutes them; hold owns the strings) */
	v = calloc((size_t)(hold->argc - dd) + 1, sizeof(*v));
	if (!v) {
		conf_args_free(hold);
		return -ENOMEM;
	}
	v[0] = hold->argv[0];
	memcpy(v + 1, hold->argv + dd + 1, (size_t)(hold->argc - dd - 1) * sizeof(*v));
	n = conf_parse(&cmd_serve_spec, hold->argc - dd, v, o);
	free(v);
	if (n < 0) {
		conf_args_free(hold);
		return -EINVAL;
	}
	return 0;
}

/* [ID=]FILE[,BATCHING] into t->sm[t->n_models]: the model, its executor (ops [0, n) on the
 * CPU), its batch (conf/batch.h; batch the default) and its buffers. */
static int table_add(struct serve_table *t, const char *given, const struct conf_batch *batch,
		     uint32_t payload)
{
	struct serve_model *s = &t->sm[t->n_models];
	struct conf_batch b = *batch;
	const char *eq, *path;
	char spec[4096], err[512];

	if (t->n_models == SERVE_MAX_MODELS) {
		fprintf(stderr, "serve: at most %d models\n", SERVE_MAX_MODELS);
		return -EINVAL;
	}
	snprintf(spec, sizeof(spec), "%s", given);
	if (conf_batch_suffix(spec, SERVE_MAX_BATCH, &b, err, sizeof(err))) {
		fprintf(stderr, "serve: %s\n", err);
		return -EINVAL;
	}
	eq = strchr(spec, '=');
	path = eq ? eq + 1 : spec;
	s->m = model_load(path, err, sizeof(err));
	if (!s->m) {
		fprintf(stderr, "serve: %s\n", err);
		return -EINVAL;
	}
	t->n_models++; /* from here on serve_table_free() undoes it */
	s->id = proto_model_id(s->m->name);
	if (eq) {
		char id[24];
		int64_t v;

		snprintf(id, sizeof(id), "%.*s", (int)(eq - spec), spec);
		if ((size_t)(eq - spec) >= sizeof(id) ||
		    conf_int(NULL, NULL, id, 0, UINT32_MAX, &v)) {
			fprintf(stderr, "serve: --model %s: the id before '=' is not a number\n",
				spec);
			return -EINVAL;
		}
		s->id = (uint32_t)v;
	}
	for (uint32_t k = 0; k + 1 < t->n_models; k++)
		if (t->sm[k].id == s->id) {
			fprintf(stderr, "serve: --model %s: model id 0x%08x given twice\n", spec,
				s->id);
			return -EINVAL;
		}
	if (s->m->input.fmt != MODEL_FMT_U8 && s->m->input.fmt != MODEL_FMT_F32) {
		fprintf(stderr, "serve: %s: input format %s has no wire format\n", path,
			model_fmt_name(s->m->input.fmt));
		return -EINVAL;
	}
	s->in_fmt = s->m->input.fmt == MODEL_FMT_U8 ? PROTO_FMT_U8 : PROTO_FMT_F32;
	s->in_count = (uint32_t)model_shape_elems(&s->m->input);
	snprintf(s->shape_reason, sizeof(s->shape_reason), "bad_shape: expects %s %ux%ux%u",
		 proto_fmt_name(s->in_fmt), s->m->input.c, s->m->input.h, s->m->input.w);
	s->in_bytes = (uint32_t)model_shape_bytes(&s->m->input);
	s->classes = model_classes(s->m);
	s->resp_bytes = proto_wire_bytes(PROTO_RESP_HDR_LEN, (size_t)s->classes * 8, payload);
	t->health[t->n_models - 1] = (struct proto_health_model){
	    .model_id = s->id,
	    .mode = PROTO_MODE_WHOLE,
	    .in_fmt = (uint8_t)s->in_fmt,
	    .c = s->m->input.c,
	    .h = s->m->input.h,
	    .w = s->m->input.w,
	    .classes = (uint16_t)s->classes,
	};
	snprintf(t->health[t->n_models - 1].name, sizeof(t->health[0].name), "%.*s",
		 (int)PROTO_HEALTH_NAME_LEN, s->m->name);
	if (kexec_open(&s->x, &kexec_cpu_ops, NULL, err, sizeof(err)) ||
	    kexec_load(&s->x, s->m, 0, s->m->n_layers, b.max_batch, err, sizeof(err))) {
		fprintf(stderr, "serve: %s\n", err);
		return -EINVAL;
	}
	s->body = malloc((size_t)s->classes * 8);
	if (serve_batch_init(&s->b, &b, s->in_bytes, s->classes) || !s->body) {
		fprintf(stderr, "serve: out of memory\n");
		return -ENOMEM;
	}
	printf("serve: model %s id 0x%08x: %s %ux%ux%u -> %u classes, %u ops on the CPU, batches "
	       "of %u at most (wait %lu us)\n",
	       s->m->name, s->id, proto_fmt_name(s->in_fmt), s->m->input.c, s->m->input.h,
	       s->m->input.w, s->classes, s->m->n_layers, b.max_batch,
	       (unsigned long)(b.max_delay_ns / 1000));
	return 0;
}

struct serve_table *serve_table_load(const struct serve_opts *o, uint32_t payload, uint64_t version)
{
	struct serve_table *t = calloc(1, sizeof(*t));

	if (!t) {
		fprintf(stderr, "serve: out of memory\n");
		return NULL;
	}
	t->version = version;
	for (uint32_t k = 0; k < o->n_models; k++)
		if (table_add(t, o->models[k], &o->batch, payload)) {
			serve_table_free(t);
			return NULL;
		}
	fflush(stdout);
	return t;
}

void serve_table_free(struct serve_table *t)
{
	if (!t)
		return;
	for (uint32_t k = 0; k < t->n_models; k++) {
		kexec_close(&t->sm[k].x);
		model_free(t->sm[k].m);
		serve_batch_fini(&t->sm[k].b);
		free(t->sm[k].body);
	}
	free(t);
}

struct serve_model *serve_table_find(struct serve_table *t, uint32_t id)
{
	for (uint32_t k = 0; k < t->n_models; k++)
		if (t->sm[k].id == id)
			return &t->sm[k];
	return id == 0 && t->n_models ? &t->sm[0] : NULL;
}

/* --- the reloader ---------------------------------------------------------------------------- */

#define RELOAD_POLL_NS 10000000L /* the reloader looks for work this often */

static void nap(void)
{
	nanosleep(&(struct timespec){0, RELOAD_POLL_NS}, NULL);
}

static void finish(struct serve_reloader *r, int status, const char *fmt, ...)
    __attribute__((format(printf, 3, 4)));
static void finish(struct serve_reloader *r, int status, const char *fmt, ...)
{
	va_list ap;

	va_start(ap, fmt);
	conf_reload_finish(&r->t, "serve", status, fmt, ap);
	va_end(ap);
}

/* One reload: the table built, handed to the packet loop, the old one back and freed after the
 * metrics thread's grace period. */
static void reload_once(void *arg)
{
	struct serve_reloader *r = arg;
	struct serve_opts o = {0};
	struct conf_args hold;
	struct serve_table *t, *old;
	uint64_t g;

	if (serve_opts_read(r->argc, r->argv, &o, &hold)) {
		finish(r, -EINVAL,
		       "failed: the options or the configuration (above); "
		       "still serving version %lu",
		       (unsigned long)r->version);
		return;
	}
	t = serve_table_load(&o, r->payload, r->version + 1);
	conf_args_free(&hold);
	if (!t) {
		finish(r, -EINVAL, "failed: a model (above); still serving version %lu",
		       (unsigned long)r->version);
		return;
	}
	__atomic_store_n(&r->ready, t, __ATOMIC_SEQ_CST);
	while (!(old = __atomic_exchange_n(&r->retired, NULL, __ATOMIC_SEQ_CST))) {
		if (__atomic_load_n(&r->quit, __ATOMIC_ACQUIRE))
			return; /* serve_reloader_stop frees what is left */
		nap();
	}
	g = __atomic_load_n(r->rgen, __ATOMIC_SEQ_CST);
	while ((g & 1) && __atomic_load_n(r->rgen, __ATOMIC_SEQ_CST) == g)
		nap();
	serve_table_free(old);
	r->version = t->version;
	finish(r, 0, "version %lu: %u model(s)", (unsigned long)t->version, t->n_models);
}

static bool quitting(void *arg)
{
	const struct serve_reloader *r = arg;

	return __atomic_load_n(&r->quit, __ATOMIC_ACQUIRE);
}

static void *reloader_main(void *arg)
{
	conf_reload_run(&((struct serve_reloader *)arg)->t, quitting, reload_once, arg,
			RELOAD_POLL_NS / 1000);
	return NULL;
}

int serve_reloader_start(struct serve_reloader *r, int argc, char **argv, uint32_t payload,
			 const uint64_t *rgen, uint64_t version)
{
	sigset_t all, old;
	int rc;

	memset(r, 0, sizeof(*r));
	r->argc = argc;
	r->argv = argv;
	r->payload = payload;
	r->rgen = rgen;
	r->version = version;
	sigfillset(&all);
	pthread_sigmask(SIG_SETMASK, &all, &old);
	rc = pthread_create(&r->thr, NULL, reloader_main, r);
	pthread_sigmask(SIG_SETMASK, &old, NULL);
	r->running = !rc;
	return -rc;
}

int serve_reloader_ask(struct serve_reloader *r)
{
	return conf_reload_ask(&r->t);
}

struct serve_table *serve_reloader_take(struct serve_reloader *r)
{
	if (!__atomic_load_n(&r->ready, __ATOMIC_RELAXED))
		return NULL;
	return __atomic_exchange_n(&r->ready, NULL, __ATOMIC_SEQ_CST);
}

void serve_reloader_retire(struct serve_reloader *r, struct serve_table *old)
{
	__atomic_store_n(&r->retired, old, __ATOMIC_SEQ_CST);
}

int serve_reloader_wait(struct serve_reloader *r, int n, unsigned ms, char *msg, size_t len)
{
	for (unsigned t = 0; !conf_reload_is_done(&r->t, n); t += 10) {
		if (t >= ms) {
			snprintf(msg, len, "reload %d not done after %u ms", n, ms);
			return -ETIMEDOUT;
		}
		nap();
	}
	return conf_reload_outcome(&r->t, msg, len);
}

void serve_reloader_stop(struct serve_reloader *r)
{
	if (!r->running)
		return;
	__atomic_store_n(&r->quit, true, __ATOMIC_RELEASE);
	pthread_join(r->thr, NULL);
	serve_table_free(__atomic_exchange_n(&r->ready, NULL, __ATOMIC_SEQ_CST));
	serve_table_free(__atomic_exchange_n(&r->retired, NULL, __ATOMIC_SEQ_CST));
	r->running = false;
}
