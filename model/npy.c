/* SPDX-License-Identifier: MIT */
#include <errno.h>
#include <stdarg.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "model/npy.h"

_Static_assert(__BYTE_ORDER__ == __ORDER_LITTLE_ENDIAN__, "npy data is read as little-endian");

struct npy_cursor {
	const char *p, *end;
	char *err;
	size_t errlen;
};

static int npy_fail(struct npy_cursor *c, const char *fmt, ...)
{
	va_list ap;

	va_start(ap, fmt);
	vsnprintf(c->err, c->errlen, fmt, ap);
	va_end(ap);
	return -EINVAL;
}

static void npy_skip_space(struct npy_cursor *c)
{
	while (c->p < c->end && *c->p == ' ')
		c->p++;
}

static bool npy_accept(struct npy_cursor *c, char ch)
{
	npy_skip_space(c);
	if (c->p < c->end && *c->p == ch) {
		c->p++;
		return true;
	}
	return false;
}

/* A quoted string without escapes, copied NUL-terminated into out. */
static int npy_string(struct npy_cursor *c, char *out, size_t outlen, const char *what)
{
	char q;
	size_t n = 0;

	npy_skip_space(c);
	if (c->p >= c->end || (*c->p != '\'' && *c->p != '"'))
		return npy_fail(c, "npy header: expected a quoted %s", what);
	q = *c->p++;
	while (c->p < c->end && *c->p != q) {
		if (*c->p == '\\' || n + 1 >= outlen)
			return npy_fail(c, "npy header: unsupported %s", what);
		out[n++] = *c->p++;
	}
	if (c->p >= c->end)
		return npy_fail(c, "npy header: unterminated %s", what);
	c->p++;
	out[n] = '\0';
	return 0;
}

static int npy_word(struct npy_cursor *c, const char *word)
{
	size_t n = strlen(word);

	npy_skip_space(c);
	if ((size_t)(c->end - c->p) < n || memcmp(c->p, word, n) != 0)
		return -EINVAL;
	c->p += n;
	return 0;
}

static int npy_shape(struct npy_cursor *c, struct model_npy *a)
{
	bool comma = false;

	a->ndim = 0;
	a->count = 1;
	if (!npy_accept(c, '('))
		return npy_fail(c, "npy header: 'shape' is not a tuple");
	while (!npy_accept(c, ')')) {
		uint64_t d = 0;
		const char *start;

		npy_skip_space(c);
		start = c->p;
		while (c->p < c->end && *c->p >= '0' && *c->p <= '9') {
			d = d * 10 + (uint64_t)(*c->p - '0');
			if (d > MODEL_NPY_MAX_ELEMS)
				return npy_fail(c, "npy header: shape dimension too large");
			c->p++;
		}
		if (c->p == start)
			return npy_fail(c, "npy header: bad 'shape' entry");
		if (a->ndim == MODEL_NPY_MAXDIM)
			return npy_fail(c, "npy header: more than %d dimensions", MODEL_NPY_MAXDIM);
		a->shape[a->ndim++] = d;
		a->count *= d;
		if (a->count > MODEL_NPY_MAX_ELEMS)
			return npy_fail(c, "npy header: more than %llu elements",
					(unsigned long long)MODEL_NPY_MAX_ELEMS);
		comma = npy_accept(c, ',');
		if (!comma) {
			if (!npy_accept(c, ')'))
				return npy_fail(c, "npy header: bad 'shape' tuple");
			break;
		}
	}
	/* "(5)" is a parenthesised int in Python, not a tuple: one element needs its comma. */
	if (a->ndim == 1 && !comma)
		return npy_fail(c, "npy header: 'shape' (n) is not a tuple");
	return 0;
}

static int npy_dict(struct npy_cursor *c, struct model_npy *a)
{
	bool seen_descr = false, seen_order = false, seen_shape = false;
	char key[32], descr[16];
	int ret;

	if (!npy_accept(c, '{'))
		return npy_fail(c, "npy header: not a dict");
	while (!npy_accept(c, '}')) {
		ret = npy_string(c, key, sizeof(key), "key");
		if (ret)
			return ret;
		if (!npy_accept(c, ':'))
			return npy_fail(c, "npy header: expected ':' after '%s'", key);
		if (!strcmp(key, "descr") && !seen_descr) {
			seen_descr = true;
			ret = npy_string(c, descr, sizeof(descr), "'descr'");
			if (ret)
				return ret;
			if (!strcmp(descr, "<f4"))
				a->itemsize = 4;
			else if (!strcmp(descr, "<f8"))
				a->itemsize = 8;
			else
				return npy_fail(
				    c, "dtype '%s' (need '<f4' float32 or '<f8' float64)", descr);
		} else if (!strcmp(key, "fortran_order") && !seen_order) {
			seen_order = true;
			if (!npy_word(c, "True"))
				return npy_fail(c, "fortran_order True (need C order)");
			if (npy_word(c, "False"))
				return npy_fail(c, "npy header: bad 'fortran_order'");
		} else if (!strcmp(key, "shape") && !seen_shape) {
			seen_shape = true;
			ret = npy_shape(c, a);
			if (ret)
				return ret;
		} else {
			return npy_fail(c, "npy header: unexpected or repeated key '%s'", key);
		}
		if (!npy_accept(c, ',')) {
			if (!npy_accept(c, '}'))
				return npy_fail(c, "npy header: expected ',' or '}'");
			break;
		}
	}
	if (!seen_descr || !seen_order || !seen_shape)
		return npy_fail(c, "npy header: missing '%s'",
				!seen_descr   ? "descr"
				: !seen_order ? "fortran_order"
					      : "shape");
	npy_skip_space(c);
	if (c->p + 1 != c->end || *c->p != '\n')
		return npy_fail(c, "npy header: junk after the dict");
	return 0;
}

int model_npy_parse(const void *buf, size_t len, struct model_npy *a, char *err, size_t errlen)
{
	static const char magic[6] = "\x93NUMPY";
	const uint8_t *b = buf;
	struct npy_cursor c = {.err = err, .errlen = errlen};
	size_t pre, hlen;
	int ret;

	memset(a, 0, sizeof(*a));
	if (len < 10 || memcmp(b, magic, sizeof(magic)) != 0)
		return npy_fail(&c, "not a .npy array (bad magic)");
	if (b[6] < 1 || b[6] > 3 || b[7] != 0)
		return npy_fail(&c, "npy version %u.%u unsupported", b[6], b[7]);
	if (b[6] == 1) {
		pre = 10;
		hlen = (size_t)b[8] | (size_t)b[9] << 8;
	} else {
		if (len < 12)
			return npy_fail(&c, "npy file truncated in the header length");
		pre = 12;
		hlen = (size_t)b[8] | (size_t)b[9] << 8 | (size_t)b[10] << 16 | (size_t)b[11] << 24;
	}
	if (hlen > len - pre)
		return npy_fail(&c, "npy header length %zu beyond the %zu-byte member", hlen, len);
	c.p = (const char *)b + pre;
	c.end = c.p + hlen;
	ret = npy_dict(&c, a);
	if (ret)
		return ret;
	if (len - pre - hlen != a->count * a->itemsize)
		return npy_fail(&c, "npy data %zu bytes, expected %llu", len - pre - hlen,
				(unsigned long long)(a->count * a->itemsize));
	a->data = b + pre + hlen;
	return 0;
}

void model_npy_to_f64(const struct model_npy *a, double *out)
{
	const uint8_t *p = a->data;

	for (uint64_t i = 0; i < a->count; i++) {
		if (a->itemsize == 4) {
			float f;

			memcpy(&f, p + 4 * i, 4);
			out[i] = f;
		} else {
			memcpy(&out[i], p + 8 * i, 8);
		}
	}
}

void *model_npy_alloc_raw(const char *dict, size_t data_len, size_t *len)
{
	const size_t dl = strlen(dict), hl = (10 + dl + 1 + 63) / 64 * 64 - 10;
	uint8_t *b = malloc(10 + hl + data_len);

	if (!b)
		return NULL;
	memcpy(b, "\x93NUMPY\x01\x00", 8);
	b[8] = (uint8_t)hl;
	b[9] = (uint8_t)(hl >> 8);
	memset(b + 10, ' ', hl);
	memcpy(b + 10, dict, dl);
	b[10 + hl - 1] = '\n';
	*len = 10 + hl + data_len;
	return b;
}

void *model_npy_alloc(const char *descr, const uint64_t *shape, uint32_t ndim, void **data,
		      size_t *len)
{
	const size_t isz = strlen(descr) == 3 && !strcmp(descr + 1, "f8") ? 8 : 4;
	char dict[80 + 24 * MODEL_NPY_MAXDIM];
	uint64_t count = 1;
	size_t n;
	uint8_t *b;

	n = (size_t)snprintf(dict, sizeof(dict),
			     "{'descr': '%s', 'fortran_order': False, 'shape': (", descr);
	for (uint32_t d = 0; d < ndim; d++) {
		n += (size_t)snprintf(dict + n, sizeof(dict) - n, "%s%llu", d ? ", " : "",
				      (unsigned long long)shape[d]);
		count *= shape[d];
	}
	snprintf(dict + n, sizeof(dict) - n, "%s), }", ndim == 1 ? "," : "");
	b = model_npy_alloc_raw(dict, count * isz, len);
	if (b)
		*data = b + *len - count * isz;
	return b;
}
