/* SPDX-License-Identifier: MIT */
/*
 * lab/respond_ref.h — `splitnic respond-ref`, the reference responder that front-ends are tested
 * against (lab/respond_ref.c says what it answers). The splitnic program's verb table
 * (cli/splitnic.c) calls it.
 */
#ifndef LAB_RESPOND_REF_H
#define LAB_RESPOND_REF_H

#include "conf/opts.h"

/* argv from the verb's name on; returns the exit status. */
int cmd_respond_ref(int argc, char **argv);

/* Its options, synopsis and purpose (conf/opts.h). */
extern const struct conf_cmd cmd_respond_ref_spec;

#endif /* LAB_RESPOND_REF_H */
