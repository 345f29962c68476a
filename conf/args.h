/* SPDX-License-Identifier: MIT */
/* conf/args.h — argument checks shared by the splitnic verbs (cli/, serve/, lab/). */
#ifndef CONF_ARGS_H
#define CONF_ARGS_H

#include <stdint.h>

/*
 * A UDP port given on the command line outside an option row (ADDR:PORT): 1..65535 (0 is never
 * valid: the verbs bind or send to a definite port), read by conf_int. Returns 0 with *port set,
 * or -EINVAL after a message on stderr that names the verb, opt, the range and the value.
 */
int conf_port(const char *verb, const char *opt, const char *s, uint16_t *port);

/*
 * An output file named by opt (e.g. "--plot", "-o"), checked before the work that fills it:
 * path is not a directory and is writable if it exists, else its directory exists and is
 * writable. The file is neither created nor truncated. Returns 0, or -errno after a message on
 * stderr naming the verb, the option, the path and the reason.
 */
int conf_output_ok(const char *verb, const char *opt, const char *path);

#endif /* CONF_ARGS_H */
