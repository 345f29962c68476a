// SPDX-License-Identifier: MIT
/*
 * The NIC reached over packets as an executor (host/host.h, exec/kexec.h): the in-flight
 * window of ACTIVATIONs, notices matched by host_ref and cookie, deadlines and the fallback
 * decisions they lead to.
 */
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "host/host.h"

_Static_assert(2 * KEXEC_FIFO <= (1u << HOST_REF_ENTRY_BITS), "window entries fit a host_ref");

struct remote_entry {
	uint64_t tag, cookie, request_id, t_sent;
	void *out;
	uint32_t model_id;
	uint8_t gen;
	bool live;
};

/* The window is a ring of cap entries, oldest first (deadlines are monotonic, so expiry pops
 * from the head); an entry completed out of order stays as a hole until the head passes it. */
struct remote {
	struct host_remote_conf c;
	struct host_cookie cookie;
	bool link_up;
	uint64_t suspect_until; /* ns: no ACTIVATION before (after a missed deadline) */
	uint32_t head, count, live, cap;
	uint32_t act_count;
	struct remote_entry *ent;
};

static int remote_init(struct kexec *x, const void *conf, char *err, size_t errlen)
{
	const struct host_remote_conf *c = conf;
	struct remote *r;
	int ret;

	if (!c || !c->window || c->window > KEXEC_FIFO || !c->describe || !c->send || !c->now ||
	    (c->ref_base & ((1u << HOST_REF_ENTRY_BITS) - 1)) || c->ref_base >> 24) {
		snprintf(err, errlen,
			 "remote NIC executor: window 1..%u, describe, send, now and a "
			 "ref_base of worker bits are required",
			 KEXEC_FIFO);
		return -EINVAL;
	}
	r = calloc(1, sizeof(*r));
	if (!r) {
		snprintf(err, errlen, "remote NIC executor: out of memory");
		return -ENOMEM;
	}
	x->priv = r;
	r->c = *c;
	r->cap = 1;
	while (r->cap < 2 * c->window)
		r->cap <<= 1;
	r->ent = calloc(r->cap, sizeof(*r->ent));
	if (!r->ent) {
		snprintf(err, errlen, "remote NIC executor: out of memory");
		return -ENOMEM;
	}
	ret = host_cookie_init(&r->cookie);
	if (ret)
		snprintf(err, errlen, "remote NIC executor: getrandom: %s", strerror(-ret));
	return ret;
}

static int remote_load(struct kexec *x, const struct model *m, uint32_t first, uint32_t last,
		       uint32_t max_batch, char *err, size_t errlen)
{
	const struct model_shape *in = &m->layers[first].in;
	struct remote *r = x->priv;

	if (max_batch != 1 || in->fmt != MODEL_FMT_BITS || in->h != 1 || in->w != 1) {
		snprintf(err, errlen,
			 "model %s: the NIC over packets takes one flat bit vector per ACTIVATION "
			 "(op %u's input is %s %ux%ux%u, batch %u)",
			 m->name, first, model_fmt_name(in->fmt), in->c, in->h, in->w, max_batch);
		return -EINVAL;
	}
	r->act_count = in->c;
	return 0;
}

static void remote_remove(struct remote *r, struct remote_entry *e)
{
	e->live = false;
	r->live--;
	while (r->count && !r->ent[r->head].live) {
		r->head = (r->head + 1) & (r->cap - 1);
		r->count--;
	}
}

static int remote_submit(struct kexec *x, const void *in, uint32_t n, void *out, uint64_t tag)
{
	struct remote *r = x->priv;
	const uint32_t pos = (r->head + r->count) & (r->cap - 1);
	struct remote_entry *e = &r->ent[pos];
	struct proto_msg m;
	uint64_t now;
	int ret;

	(void)n; /* max_batch 1 */
	if (!r->link_up)
		return -ENOLINK;
	if (r->live >= r->c.window || r->count >= r->cap)
		return -EBUSY;
	now = r->c.now(r->c.arg);
	if (now < r->suspect_until)
		return -EAGAIN;
	proto_msg_init(&m, PROTO_ACTIVATION, 0, 0);
	r->c.describe(r->c.arg, tag, &m);
	proto_msg_set_tensor(&m, PROTO_FMT_BITS, r->act_count, 1, 1, 0, 0);
	m.tensor.layer = (uint16_t)x->first;
	e->gen = (uint8_t)(e->gen == 255 ? 1 : e->gen + 1);
	e->cookie = host_cookie_next(&r->cookie);
	m.act.host_ref = (uint32_t)e->gen << 24 | r->c.ref_base | pos;
	m.act.cookie = e->cookie;
	ret = r->c.send(r->c.arg, tag, &m, in, x->in_bytes);
	if (ret)
		return ret;
	e->tag = tag;
	e->out = out;
	e->request_id = m.request_id;
	e->model_id = m.model_id;
	e->t_sent = now;
	e->live = true;
	r->count++;
	r->live++;
	return 0;
}

enum host_notice_verdict host_remote_notice(struct kexec *x, const struct proto_msg *m)
{
	struct remote *r = x->priv;
	const bool resp = m->type == PROTO_RESPONSE;
	const uint32_t ref = resp ? m->resp.host_ref : m->err.host_ref;
	const uint32_t pos = ref & ((1u << HOST_REF_ENTRY_BITS) - 1);
	struct remote_entry *e;

	if (!ref || (ref & (0xfu << HOST_REF_ENTRY_BITS)) != r->c.ref_base || pos >= r->cap)
		return HOST_NOTICE_STALE;
	e = &r->ent[pos];
	if (!e->live || e->gen != ref >> 24)
		return HOST_NOTICE_STALE;
	if (e->model_id != m->model_id || e->request_id != m->request_id)
		return HOST_NOTICE_MISMATCH;
	if ((resp ? m->resp.cookie : m->err.cookie) != e->cookie)
		return HOST_NOTICE_BAD_COOKIE;
	if (resp && !m->frag_off)
		memcpy(e->out, m->data, m->frag_len < x->out_bytes ? m->frag_len : x->out_bytes);
	kexec_complete(x, e->tag, resp ? 0 : -EIO);
	r->suspect_until = 0;
	remote_remove(r, e);
	return HOST_NOTICE_OK;
}

/* Deadlines, and the link: what the NIC will not answer completes with an error. */
static void remote_progress(struct kexec *x)
{
	struct remote *r = x->priv;
	struct remote_entry *e;
	uint64_t now;

	if (!r->count)
		return;
	now = r->c.now(r->c.arg);
	while (r->count) {
		e = &r->ent[r->head];
		if (r->link_up && now < e->t_sent + r->c.timeout_ns)
			return;
		if (r->link_up)
			r->suspect_until = now + 10 * r->c.timeout_ns;
		kexec_complete(x, e->tag, r->link_up ? -ETIMEDOUT : -ENOLINK);
		remote_remove(r, e);
	}
}

void host_remote_set_link(struct kexec *x, bool up)
{
	struct remote *r = x->priv;

	r->link_up = up;
}

uint32_t host_remote_in_flight(const struct kexec *x)
{
	const struct remote *r = x->priv;

	return r ? r->live : 0;
}

static void remote_caps(const struct kexec *x, struct kexec_caps *c)
{
	(void)x;
	c->kind = KEXEC_KIND_NIC;
	c->tail_only = true;
	c->max_batch = 1;
}

static void remote_close(struct kexec *x)
{
	struct remote *r = x->priv;

	if (r)
		free(r->ent);
	free(r);
}

const struct kexec_ops host_exec_remote_ops =
    KEXEC_OPS("nic-remote", remote_init, remote_load, remote_submit, remote_progress, remote_caps,
	      remote_close);
