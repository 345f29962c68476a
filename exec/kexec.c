// SPDX-License-Identifier: MIT
/* The executor interface: the calls every caller makes, the completion FIFO, capabilities. */
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "exec/kexec.h"

_Static_assert((KEXEC_FIFO & (KEXEC_FIFO - 1)) == 0, "KEXEC_FIFO must be a power of two");

static const char *const kind_names[KEXEC_KIND__COUNT] = {"cpu", "gpu", "nic"};

const char *kexec_kind_name(unsigned kind)
{
	return kind < KEXEC_KIND__COUNT ? kind_names[kind] : "?";
}

int kexec_kind_from_name(const char *name)
{
	for (unsigned k = 0; k < KEXEC_KIND__COUNT; k++)
		if (!strcmp(name, kind_names[k]))
			return (int)k;
	return -1;
}

static bool nic_float_op(const struct model_layer *l)
{
	return (l->op == MODEL_OP_BIAS || l->op == MODEL_OP_BATCHNORM) &&
	       l->in.fmt == MODEL_FMT_F64;
}

static bool nic_binary_op(const struct model_layer *l)
{
	return (l->op == MODEL_OP_BDENSE && l->in.fmt == MODEL_FMT_BITS) ||
	       (l->op == MODEL_OP_BDENSE_U8 && l->in.fmt == MODEL_FMT_U8);
}

static bool nic_flatten_op(const struct model_layer *l)
{
	return l->op == MODEL_OP_FLATTEN &&
	       (l->in.fmt == MODEL_FMT_U8 || l->in.fmt == MODEL_FMT_BITS);
}

bool kexec_nic_op(const struct model_layer *l)
{
	return nic_float_op(l) || nic_binary_op(l) || nic_flatten_op(l);
}

bool kexec_nic_entry(const struct model_layer *l)
{
	return nic_flatten_op(l) || nic_binary_op(l);
}

const struct kexec_nic_rule kexec_nic_chain = {.f32_prefix = false, .any_tail = false};

static bool nic_tail_op(const struct model_layer *l, const struct kexec_nic_rule *r)
{
	if (nic_float_op(l))
		return true;
	if (!r->any_tail || model_shape_elems(&l->in) != model_shape_elems(&l->out))
		return false;
	switch (l->op) {
	case MODEL_OP_BIAS:
	case MODEL_OP_BATCHNORM:
	case MODEL_OP_RELU:
	case MODEL_OP_SIGN:
	case MODEL_OP_THRESHOLD:
	case MODEL_OP_UNPACK:
	case MODEL_OP_FLATTEN:
		return true;
	}
	return false;
}

/* The first of ops [0, j) of an f32 model that is no part of a prefix binarizing its input
 * feature by feature (cast [flatten|bias|batchnorm]* sign|threshold); j where they are one. */
static uint32_t nic_f32_prefix_stop(const struct model *m, uint32_t j)
{
	const struct model_layer *l = m->layers;
	uint32_t i = 1;

	if (l[0].op != MODEL_OP_CAST)
		return 0;
	while (i < j && (l[i].op == MODEL_OP_FLATTEN || l[i].op == MODEL_OP_BIAS ||
			 l[i].op == MODEL_OP_BATCHNORM))
		i++;
	if (i == j)
		return j - 1;
	if (l[i].op != MODEL_OP_SIGN && l[i].op != MODEL_OP_THRESHOLD)
		return i;
	return i + 1;
}

void kexec_nic_find(const struct model *m, const struct kexec_nic_rule *r,
		    struct kexec_nic_run *run)
{
	uint32_t n = m->n_layers, j = n;
	const struct model_layer *l;

	*run =
	    (struct kexec_nic_run){.first = n, .sign = n, .bin_first = n, .bin_last = n, .stop = n};
	while (j && nic_tail_op(&m->layers[j - 1], r))
		j--;
	if (!j)
		return;
	l = &m->layers[j - 1];
	if (!nic_binary_op(l) || (!r->any_tail && j < n && (l->flags & MODEL_LF_THRESH))) {
		run->stop = j - 1;
		return;
	}
	run->bin_first = run->bin_last = --j;
	while (j) {
		l = &m->layers[j - 1];
		if (nic_binary_op(l) && (l->flags & MODEL_LF_THRESH))
			run->bin_first = j - 1;
		else if (!nic_flatten_op(l))
			break;
		j--;
	}
	run->first = j;
	run->stop = j ? j - 1 : n;
	if (j && r->f32_prefix && m->input.fmt == MODEL_FMT_F32) {
		run->stop = nic_f32_prefix_stop(m, j);
		if (run->stop == j) {
			run->sign = j - 1;
			run->first = 0;
			run->stop = n;
		}
	}
}

uint32_t kexec_nic_first(const struct model *m)
{
	struct kexec_nic_run run;

	kexec_nic_find(m, &kexec_nic_chain, &run);
	return run.first;
}

bool kexec_can_run(unsigned kind, const struct model *m, uint32_t first, uint32_t last)
{
	if (first >= last || last > m->n_layers)
		return false;
	switch (kind) {
	case KEXEC_KIND_CPU:
	case KEXEC_KIND_GPU:
		return true;
	case KEXEC_KIND_NIC:
		return last == m->n_layers && first >= kexec_nic_first(m) &&
		       kexec_nic_entry(&m->layers[first]);
	}
	return false;
}

bool kexec_nic_handoff_ok(const struct model *m, uint32_t k)
{
	const struct model_shape *in;

	if (!kexec_can_run(KEXEC_KIND_NIC, m, k, m->n_layers))
		return false;
	in = &m->layers[k].in;
	return k == 0 || (in->fmt == MODEL_FMT_BITS && in->h == 1 && in->w == 1);
}

uint32_t kexec_nic_split(const struct model *m)
{
	uint32_t k = kexec_nic_first(m);

	if (k + 1 < m->n_layers && m->layers[k].op == MODEL_OP_FLATTEN &&
	    !kexec_nic_handoff_ok(m, k) && kexec_nic_handoff_ok(m, k + 1))
		k++;
	return k;
}

const char *kexec_nic_starts(const struct model *m, bool handoff, char *buf, size_t len)
{
	uint32_t k, n = 0, last = UINT32_MAX;
	size_t off = 0;

	if (!len)
		return buf;
	buf[0] = 0;
	for (k = handoff ? 1 : 0; k < m->n_layers; k++) {
		bool ok = handoff ? kexec_nic_handoff_ok(m, k)
				  : kexec_can_run(KEXEC_KIND_NIC, m, k, m->n_layers);

		if (!ok)
			continue;
		if (last != UINT32_MAX && off < len)
			off +=
			    (size_t)snprintf(buf + off, len - off, "%s%u", n > 1 ? ", " : "", last);
		last = k;
		n++;
	}
	if (!n)
		snprintf(buf, len, "none");
	else if (off < len)
		snprintf(buf + off, len - off, "%s%u", n > 1 ? " or " : "", last);
	return buf;
}

int kexec_open(struct kexec *x, const struct kexec_ops *ops, const void *conf, char *err,
	       size_t errlen)
{
	int ret;

	memset(x, 0, sizeof(*x));
	x->ops = ops;
	ret = ops->init ? ops->init(x, conf, err, errlen) : 0;
	if (ret)
		kexec_close(x);
	return ret;
}

int kexec_load(struct kexec *x, const struct model *m, uint32_t first, uint32_t last,
	       uint32_t max_batch, char *err, size_t errlen)
{
	struct kexec_caps c;
	uint64_t ib, ob;
	int ret;

	if (!max_batch) {
		snprintf(err, errlen, "%s executor: batch of 0", x->ops->name);
		return -EINVAL;
	}
	x->m = m;
	kexec_get_caps(x, &c);
	if (!kexec_can_run(c.kind, m, first, last)) {
		snprintf(err, errlen, "model %s: the %s executor cannot run ops [%u, %u) of %u",
			 m->name, x->ops->name, first, last, m->n_layers);
		x->m = NULL;
		return -EINVAL;
	}
	ib = first ? model_shape_bytes(&m->layers[first].in) : model_shape_bytes(&m->input);
	ob = model_shape_bytes(&m->layers[last - 1].out);
	if (last == m->n_layers)
		ob = (uint64_t)model_classes(m) * sizeof(double);
	if (ib > UINT32_MAX || ob > UINT32_MAX) {
		snprintf(err, errlen, "model %s: ops [%u, %u): tensors too large", m->name, first,
			 last);
		x->m = NULL;
		return -EINVAL;
	}
	x->first = first;
	x->last = last;
	x->max_batch = max_batch;
	x->in_bytes = (uint32_t)ib;
	x->out_bytes = (uint32_t)ob;
	ret = x->ops->load(x, m, first, last, max_batch, err, errlen);
	if (ret)
		x->m = NULL;
	return ret;
}

int kexec_submit(struct kexec *x, const void *in, uint32_t n, void *out, uint64_t tag)
{
	int ret;

	if (!x->m || !n || n > x->max_batch)
		return -EINVAL;
	if (x->pending == KEXEC_FIFO)
		return -EBUSY;
	ret = x->ops->submit(x, in, n, out, tag);
	if (ret)
		return ret;
	x->pending++;
	x->submitted++;
	return 0;
}

void kexec_complete(struct kexec *x, uint64_t tag, int status)
{
	struct kexec_done *d = &x->fifo[x->tail++ & (KEXEC_FIFO - 1)];

	d->tag = tag;
	d->status = status;
	x->completed++;
	if (status)
		x->errors++;
}

uint32_t kexec_poll(struct kexec *x, struct kexec_done *done, uint32_t max)
{
	uint32_t n = 0;

	if (x->ops->progress && x->head == x->tail)
		x->ops->progress(x);
	while (n < max && x->head != x->tail)
		done[n++] = x->fifo[x->head++ & (KEXEC_FIFO - 1)];
	x->pending -= n;
	return n;
}

int kexec_run(struct kexec *x, const void *in, uint32_t n, void *out)
{
	struct kexec_done d;
	int ret = kexec_submit(x, in, n, out, 0);

	if (ret)
		return ret;
	while (!kexec_poll(x, &d, 1))
		;
	return d.status;
}

void kexec_get_caps(const struct kexec *x, struct kexec_caps *c)
{
	memset(c, 0, sizeof(*c));
	x->ops->caps(x, c);
}

void kexec_close(struct kexec *x)
{
	if (x->ops && x->ops->close)
		x->ops->close(x);
	x->priv = NULL;
	x->m = NULL;
}

void kexec_pipe_init(struct kexec_pipe *p)
{
	memset(p, 0, sizeof(*p));
}

int kexec_pipe_add(struct kexec_pipe *p, const struct kexec_ops *ops, const void *conf,
		   const struct model *m, uint32_t first, uint32_t last, uint32_t max_batch,
		   char *err, size_t errlen)
{
	const uint32_t want = p->n ? p->x[p->n - 1].last : 0;
	struct kexec *x = &p->x[p->n];
	size_t cut;
	int ret;

	if (p->n == KEXEC_PIPE_MAX || first != want) {
		snprintf(err, errlen, "model %s: stage %u at ops [%u, %u): %s", m->name, p->n,
			 first, last,
			 p->n == KEXEC_PIPE_MAX ? "too many stages"
						: "does not start where the "
						  "previous stage ended");
		return -EINVAL;
	}
	if (p->n && p->x[0].max_batch != max_batch) {
		snprintf(err, errlen, "model %s: stage %u: batch %u, the pipeline's is %u", m->name,
			 p->n, max_batch, p->x[0].max_batch);
		return -EINVAL;
	}
	ret = kexec_open(x, ops, conf, err, errlen);
	if (ret)
		return ret;
	ret = kexec_load(x, m, first, last, max_batch, err, errlen);
	if (ret) {
		kexec_close(x);
		return ret;
	}
	cut = first ? (size_t)max_batch * x->in_bytes : 0;
	if (cut > p->buf_bytes) {
		for (int i = 0; i < 2; i++) {
			free(p->buf[i]);
			p->buf[i] = aligned_alloc(64, (cut + 63) / 64 * 64);
		}
		p->buf_bytes = p->buf[0] && p->buf[1] ? cut : 0;
		if (!p->buf_bytes) {
			snprintf(err, errlen, "model %s: no memory for the cut at op %u", m->name,
				 first);
			kexec_close(x);
			return -ENOMEM;
		}
	}
	p->n++;
	return 0;
}

int kexec_pipe_run(struct kexec_pipe *p, const void *in, uint32_t n, void *out)
{
	const void *src = in;
	int ret;

	if (!p->n)
		return -EINVAL;
	for (uint32_t i = 0; i < p->n; i++) {
		void *dst = i + 1 == p->n ? out : p->buf[i & 1];

		ret = kexec_run(&p->x[i], src, n, dst);
		if (ret)
			return ret;
		src = dst;
	}
	return 0;
}

void kexec_pipe_fini(struct kexec_pipe *p)
{
	for (uint32_t i = 0; i < p->n; i++)
		kexec_close(&p->x[i]);
	free(p->buf[0]);
	free(p->buf[1]);
	memset(p, 0, sizeof(*p));
}
