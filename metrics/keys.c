// SPDX-License-Identifier: MIT
/* A server's counter keys as metrics, by one rule (metrics/metrics.h, metrics_keys). */
#include <ctype.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "metrics/metrics.h"

struct metrics_row {
	char family[96];
	char labels[160];
	const char *type; /* "counter", "gauge" */
	char help[128];
	uint64_t v;
	bool seconds; /* v in ns, exposed in seconds */
	unsigned order;
};

static bool is_gauge(const struct metrics_keys *k, const char *key)
{
	for (const char *const *g = k->gauges; g && *g; g++)
		if (!strcmp(*g, key))
			return true;
	return false;
}

static struct metrics_row *row_add(struct metrics_keys *k)
{
	if (k->n == k->cap) {
		unsigned cap = k->cap ? 2 * k->cap : 256;
		struct metrics_row *r = realloc(k->rows, cap * sizeof(*r));

		if (!r) {
			k->full = true;
			return NULL;
		}
		k->rows = r;
		k->cap = cap;
	}
	memset(&k->rows[k->n], 0, sizeof(k->rows[0]));
	k->rows[k->n].order = k->n;
	return &k->rows[k->n++];
}

static const char *prefixed(const char *key, const char *prefix)
{
	size_t n = strlen(prefix);

	return !strncmp(key, prefix, n) && key[n] ? key + n : NULL;
}

/* <word><n>_<rest>: the word's length and *num, *rest; 0 if key is not of that form. */
static size_t numbered(const char *key, unsigned *num, const char **rest)
{
	size_t w = 0, d;

	while (islower((unsigned char)key[w]))
		w++;
	for (d = w; isdigit((unsigned char)key[d]); d++)
		;
	if (!w || d == w || key[d] != '_' || !key[d + 1])
		return 0;
	*num = (unsigned)strtoul(key + w, NULL, 10);
	*rest = key + d + 1;
	return w;
}

/* A family of labelled counters from keys PREFIX<value>. */
static const struct {
	const char *prefix, *family, *label, *help;
} grouped[] = {
    {"error_", "errors_total", "reason",
     "requests answered with an ERROR, by reason (rate-limited ones included)"},
    {"fallback_", "fallbacks_total", "reason",
     "requests whose NIC stage the host ran itself, by reason"},
    {"verdict_", "parser_verdicts_total", "verdict",
     "datagrams of the protocol, by the parser's verdict"},
    {"reasm_", "reassembly_total", "verdict", "fragments, by the reassembly table's verdict"},
};

/* Keys of those prefixes that are not a reason: counters of their own. */
static const char *const not_grouped[] = {"error_rate_limited", "error_notices"};

void metrics_keys_put(void *arg, const char *key, uint64_t v)
{
	struct metrics_keys *k = arg;
	struct metrics_row *r = row_add(k);
	const char *rest, *name = key, *hkey = key;
	char mkey[64];
	bool group = true;
	size_t len, w;
	unsigned num;

	if (!r)
		return;
	r->v = v;
	r->type = "counter";
	for (size_t i = 0; i < sizeof(not_grouped) / sizeof(not_grouped[0]); i++)
		group &= strcmp(key, not_grouped[i]) != 0;
	for (size_t i = 0; group && i < sizeof(grouped) / sizeof(grouped[0]); i++)
		if ((rest = prefixed(key, grouped[i].prefix))) {
			snprintf(r->family, sizeof(r->family), "splitnic_%s_%s", k->who,
				 grouped[i].family);
			metrics_label(r->labels, sizeof(r->labels), grouped[i].label, rest);
			snprintf(r->help, sizeof(r->help), "%s", grouped[i].help);
			return;
		}
	w = numbered(key, &num, &rest);
	if (w == 1 && key[0] == 'm') {
		const char *mn = k->model_name ? k->model_name(k->arg, num) : NULL;

		metrics_label(r->labels, sizeof(r->labels), "model", mn ? mn : "?");
		name = rest;
		snprintf(mkey, sizeof(mkey), "m<i>_%s", rest);
		hkey = mkey;
	} else if (w) {
		char word[16], val[12];

		snprintf(word, sizeof(word), "%.*s", (int)w, key);
		snprintf(val, sizeof(val), "%u", num);
		metrics_label(r->labels, sizeof(r->labels), word, val);
		snprintf(r->family, sizeof(r->family), "splitnic_%s_%s_by_%s_total", k->who, rest,
			 word);
		snprintf(r->help, sizeof(r->help), "stats key %s, per %s", key, word);
		return;
	}
	if (is_gauge(k, name)) {
		snprintf(r->family, sizeof(r->family), "splitnic_%s_%s", k->who, name);
		r->type = "gauge";
		snprintf(r->help, sizeof(r->help), "stats key %s, now", hkey);
		return;
	}
	len = strlen(name);
	if (len > 3 && !strcmp(name + len - 3, "_ns")) {
		snprintf(r->family, sizeof(r->family), "splitnic_%s_%.*s_seconds_total", k->who,
			 (int)(len - 3), name);
		r->seconds = true;
		snprintf(r->help, sizeof(r->help), "stats key %s, in seconds", hkey);
		return;
	}
	snprintf(r->family, sizeof(r->family), "splitnic_%s_%s_total", k->who, name);
	snprintf(r->help, sizeof(r->help), "stats key %s", hkey);
}

static int row_cmp(const void *a, const void *b)
{
	const struct metrics_row *x = a, *y = b;
	int c = strcmp(x->family, y->family);

	return c ? c : (x->order > y->order) - (x->order < y->order);
}

void metrics_keys_write(struct metrics_keys *k, struct metrics_buf *b)
{
	if (k->full)
		b->full = true;
	qsort(k->rows, k->n, sizeof(k->rows[0]), row_cmp);
	for (unsigned i = 0; i < k->n && !b->full; i++) {
		const struct metrics_row *r = &k->rows[i];

		if (!i || strcmp(r->family, k->rows[i - 1].family))
			metrics_family(b, r->family, r->type, r->help);
		if (r->seconds)
			metrics_printf(b, "%s %.9f\n", r->family, (double)r->v * 1e-9);
		else
			metrics_sample(b, r->family, r->labels, r->v);
	}
	k->n = 0;
	k->full = false;
}

void metrics_keys_free(struct metrics_keys *k)
{
	free(k->rows);
	k->rows = NULL;
	k->n = k->cap = 0;
}

struct hist_arg {
	struct metrics_buf *b;
	const char *name;
};

static void put_hist(void *arg, const char *model, const char *stage, const uint64_t *buckets,
		     unsigned n, uint64_t sum_ns)
{
	struct hist_arg *h = arg;
	char labels[200];
	size_t k = metrics_label(labels, sizeof(labels) - 1, "model", model);

	labels[k++] = ',';
	metrics_label(labels + k, sizeof(labels) - k, "stage", stage);
	metrics_histogram(h->b, h->name, labels, buckets, n, sum_ns);
}

void metrics_latency(struct metrics_buf *b, const char *who,
		     void (*each)(void *srv, metrics_hist_put put, void *arg), void *srv)
{
	char name[96];
	struct hist_arg h = {b, name};

	snprintf(name, sizeof(name), "splitnic_%s_latency_seconds", who);
	metrics_family(b, name, "histogram",
		       "server-side latency of the requests, by model and stage");
	each(srv, put_hist, &h);
}

void metrics_ready(struct metrics_buf *b, const char *who, bool ready)
{
	char name[96];

	snprintf(name, sizeof(name), "splitnic_%s_ready", who);
	metrics_family(b, name, "gauge", "1 while the server takes requests (/-/ready says 200)");
	metrics_sample(b, name, "", ready);
}
