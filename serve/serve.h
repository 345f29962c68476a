/* SPDX-License-Identifier: MIT */
/*
 * serve/serve.h — `splitnic serve`, the inference server on a kernel UDP socket (serve/serve.c
 * says what it answers). The splitnic program's verb table (cli/splitnic.c) calls it.
 */
#ifndef SERVE_SERVE_H
#define SERVE_SERVE_H

#include "conf/opts.h"

/* argv from the verb's name on; returns the exit status. */
int cmd_serve(int argc, char **argv);

/* Its options, synopsis and purpose (conf/opts.h). */
extern const struct conf_cmd cmd_serve_spec;

#endif /* SERVE_SERVE_H */
