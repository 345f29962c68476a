// SPDX-License-Identifier: MIT
/* Configuration files -> the servers' command lines (see conf/conf.h). */
#include <errno.h>
#include <ini.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "conf/conf.h"

#define CONF_MAX_MODELS 64
#define CONF_MAX_KEYS	8

struct conf_model {
	char *name;
	char *values[CONF_MAX_KEYS];
};

struct conf_parse {
	const struct conf_server *srv;
	const char *path;
	struct conf_args eal, server;
	struct conf_model models[CONF_MAX_MODELS];
	size_t n_models;
	char msg[256]; /* the first error; inih gives its line */
	int err;
};

static int args_push(struct conf_args *a, const char *s)
{
	char **v = realloc(a->argv, (size_t)(a->argc + 2) * sizeof(*v));

	if (!v)
		return -ENOMEM;
	a->argv = v;
	v[a->argc] = strdup(s);
	if (!v[a->argc])
		return -ENOMEM;
	v[++a->argc] = NULL;
	return 0;
}

static int args_push_opt(struct conf_args *a, const char *key, const char *value)
{
	char *s;
	int ret;

	if (asprintf(&s, "--%s%s%s", key, value ? "=" : "", value ? value : "") < 0)
		return -ENOMEM;
	ret = args_push(a, s);
	free(s);
	return ret;
}

void conf_args_free(struct conf_args *a)
{
	for (int i = 0; i < a->argc; i++)
		free(a->argv[i]);
	free(a->argv);
	a->argv = NULL;
	a->argc = 0;
}

static int fail(struct conf_parse *p, int err, const char *fmt, ...)
    __attribute__((format(printf, 3, 4)));
static int fail(struct conf_parse *p, int err, const char *fmt, ...)
{
	va_list ap;

	if (!p->err) {
		va_start(ap, fmt);
		vsnprintf(p->msg, sizeof(p->msg), fmt, ap);
		va_end(ap);
		p->err = err;
	}
	return 0; /* inih: an error on this line */
}

/* true, false, or -1 */
static int parse_bool(const char *v)
{
	if (!strcmp(v, "true") || !strcmp(v, "yes") || !strcmp(v, "1"))
		return 1;
	if (!strcmp(v, "false") || !strcmp(v, "no") || !strcmp(v, "0"))
		return 0;
	return -1;
}

static int on_eal(struct conf_parse *p, const char *key, const char *value)
{
	char *copy, *tok, *save;
	int b, ret = 0;

	if (!strcmp(key, "args")) {
		copy = strdup(value);
		if (!copy)
			return fail(p, -ENOMEM, "out of memory");
		for (tok = strtok_r(copy, " \t", &save); tok && !ret;
		     tok = strtok_r(NULL, " \t", &save))
			ret = args_push(&p->eal, tok);
		free(copy);
	} else {
		b = parse_bool(value);
		ret = b == 0 ? 0 : args_push_opt(&p->eal, key, b == 1 ? NULL : value);
	}
	return ret ? fail(p, ret, "out of memory") : 1;
}

static int on_server(struct conf_parse *p, const char *key, const char *value)
{
	const struct conf_cmd *cmd = p->srv->cmd;
	int b;

	for (size_t i = 0; i < cmd->n_opts; i++) {
		const struct conf_opt *r = &cmd->opts[i];

		if (strcmp(key, r->name) || !strcmp(key, "model"))
			continue;
		if (r->arg)
			return args_push_opt(&p->server, key, value)
				   ? fail(p, -ENOMEM, "out of memory")
				   : 1;
		b = parse_bool(value);
		if (b < 0)
			return fail(p, -EINVAL, "[server] %s: true or false, got '%s'", key, value);
		return b && args_push_opt(&p->server, key, NULL) ? fail(p, -ENOMEM, "out of memory")
								 : 1;
	}
	return fail(p, -EINVAL, "[server] '%s' is not an option of %s", key, cmd->prog);
}

static int on_model(struct conf_parse *p, const char *name, const char *key, const char *value)
{
	const struct conf_server *srv = p->srv;
	struct conf_model *m = NULL;
	size_t k;

	if (!*name)
		return fail(p, -EINVAL, "[model]: give the section a name: [model NAME]");
	for (size_t i = 0; i < p->n_models; i++)
		if (!strcmp(p->models[i].name, name))
			m = &p->models[i];
	if (!m) {
		if (p->n_models == CONF_MAX_MODELS)
			return fail(p, -EINVAL, "more than %u model sections", CONF_MAX_MODELS);
		m = &p->models[p->n_models++];
		m->name = strdup(name);
		if (!m->name)
			return fail(p, -ENOMEM, "out of memory");
	}
	for (k = 0; k < srv->n_model_keys; k++)
		if (!strcmp(key, srv->model_keys[k].name))
			break;
	if (k == srv->n_model_keys)
		return fail(p, -EINVAL, "[model %s] '%s' is not a model key of %s", name, key,
			    srv->cmd->prog);
	if (m->values[k])
		return fail(p, -EINVAL, "[model %s] '%s' given twice", name, key);
	if (!*value || strpbrk(value, ":@="))
		return fail(p, -EINVAL, "[model %s] %s: '%s' is empty or holds ':', '@' or '='",
			    name, key, value);
	m->values[k] = strdup(value);
	return m->values[k] ? 1 : fail(p, -ENOMEM, "out of memory");
}

static int on_value(void *user, const char *section, const char *key, const char *value)
{
	struct conf_parse *p = user;

	if (!strcmp(section, "eal"))
		return on_eal(p, key, value);
	if (!strcmp(section, "server"))
		return on_server(p, key, value);
	if (!strncmp(section, "model", 5) && (!section[5] || section[5] == ' '))
		return on_model(p, section[5] ? section + 6 : "", key, value);
	return fail(p, -EINVAL, "[%s]: not a section of %s (eal, server, model NAME)", section,
		    p->srv->cmd->prog);
}

static bool is_model_opt(const char *s)
{
	return !strcmp(s, "--model") || !strncmp(s, "--model=", 8);
}

static void parse_free(struct conf_parse *p)
{
	conf_args_free(&p->eal);
	conf_args_free(&p->server);
	for (size_t i = 0; i < p->n_models; i++) {
		free(p->models[i].name);
		for (size_t k = 0; k < CONF_MAX_KEYS; k++)
			free(p->models[i].values[k]);
	}
}

/* The file's models as --model options, checked for their required keys. */
static int push_models(struct conf_parse *p, struct conf_args *out, char *err, size_t errlen)
{
	const struct conf_server *srv = p->srv;
	char spec[4096];

	for (size_t i = 0; i < p->n_models; i++) {
		const struct conf_model *m = &p->models[i];

		for (size_t k = 0; k < srv->n_model_keys; k++)
			if (srv->model_keys[k].required && !m->values[k]) {
				snprintf(err, errlen, "%s: [model %s]: '%s' is missing", p->path,
					 m->name, srv->model_keys[k].name);
				return -EINVAL;
			}
		if (srv->model_spec((const char *const *)m->values, spec, sizeof(spec))) {
			snprintf(err, errlen, "%s: [model %s]: values too long", p->path, m->name);
			return -EINVAL;
		}
		if (args_push_opt(out, "model", spec))
			return -ENOMEM;
	}
	return 0;
}

int conf_argv(const struct conf_server *srv, int argc, char **argv, struct conf_args *out,
	      char *err, size_t errlen)
{
	struct conf_parse p = {.srv = srv};
	int dd = argc, cfg = -1, line, ret = -ENOMEM;
	bool cmd_models = false;

	memset(out, 0, sizeof(*out));
	if (errlen)
		err[0] = 0;
	for (int i = 1; i < argc; i++) {
		if (strcmp(argv[i], "--eal-help"))
			continue;
		if (!args_push(out, argv[0]) && !args_push(out, "--help"))
			return 0;
		conf_args_free(out);
		snprintf(err, errlen, "out of memory");
		return -ENOMEM;
	}
	for (int i = 1; i < argc; i++) {
		if (!strcmp(argv[i], "--") && dd == argc)
			dd = i;
		else if (dd < argc && is_model_opt(argv[i]))
			cmd_models = true;
		if (!strcmp(argv[i], "--config") || !strncmp(argv[i], "--config=", 9)) {
			if (cfg >= 0) {
				snprintf(err, errlen, "--config given twice");
				return -EINVAL;
			}
			cfg = i;
			if (argv[i][8] == '=')
				p.path = argv[i] + 9;
			else if (i + 1 < argc)
				p.path = argv[++i];
			if (!p.path || !*p.path) {
				snprintf(err, errlen, "--config: give a file");
				return -EINVAL;
			}
		}
	}
	if (cfg >= 0) {
		line = ini_parse(p.path, on_value, &p);
		if (line < 0 || line > 0 || p.err) {
			if (line == -1)
				snprintf(err, errlen, "%s: %s", p.path, strerror(errno));
			else if (line == -2)
				snprintf(err, errlen, "%s: out of memory", p.path);
			else if (p.err)
				snprintf(err, errlen, "%s:%d: %s", p.path, line, p.msg);
			else
				snprintf(err, errlen,
					 "%s:%d: not 'key = value', '[section]' or a comment",
					 p.path, line);
			ret = line == -1 ? -errno : p.err ? p.err : -EINVAL;
			goto out;
		}
	}
	/* argv[0], the file's EAL arguments, the command line's, "--" */
	if (args_push(out, argv[0]))
		goto out;
	for (int i = 0; i < p.eal.argc; i++)
		if (args_push(out, p.eal.argv[i]))
			goto out;
	for (int i = 1; i < dd; i++)
		if ((cfg < 0 || (i != cfg && !(i == cfg + 1 && argv[cfg][8] != '='))) &&
		    args_push(out, argv[i]))
			goto out;
	if (cfg >= 0 || dd < argc) {
		if (args_push(out, "--"))
			goto out;
	}
	/* the file's server options and models, then the command line's options */
	for (int i = 0; i < p.server.argc; i++)
		if (args_push(out, p.server.argv[i]))
			goto out;
	if (!cmd_models) {
		ret = push_models(&p, out, err, errlen);
		if (ret)
			goto out;
		ret = -ENOMEM;
	}
	for (int i = dd + 1; i < argc; i++)
		if ((cfg < 0 || (i != cfg && !(i == cfg + 1 && argv[cfg][8] != '='))) &&
		    args_push(out, argv[i]))
			goto out;
	ret = 0;
out:
	if (ret == -ENOMEM && !err[0])
		snprintf(err, errlen, "out of memory");
	if (ret)
		conf_args_free(out);
	parse_free(&p);
	return ret;
}

int conf_apply(const struct conf_server *srv, int *argc, char ***argv)
{
	const char *h = conf_help_arg(*argc, *argv, false);
	struct conf_args a;
	char err[512] = "";

	if (h && !strcmp(h, "--version")) {
		printf("%s %s\n", srv->cmd->prog, CONF_VERSION);
		return 1;
	}
	if (h) {
		conf_help(stdout, srv->cmd);
		return 1;
	}
	if (conf_argv(srv, *argc, *argv, &a, err, sizeof(err))) {
		fprintf(stderr, "%s: --config: %s\n", srv->cmd->prog, err);
		return -1;
	}
	*argc = a.argc;
	*argv = a.argv;
	return 0;
}
