/* SPDX-License-Identifier: MIT */
/*
 * splitnic/status.h — status codes and the error record shared by libsplitnic
 * (splitnic/splitnic.h) and libsplitnic-client (splitnic/client.h).
 *
 * Every function of both libraries that can fail returns an int: SPLITNIC_OK (0) or one of the
 * positive codes below, and fills the caller's struct splitnic_error (when the pointer is not
 * NULL) with the same code and a message naming what is wrong (the file, argument, size or
 * value at fault). Messages are NUL-terminated and truncated to fit. The libraries keep no
 * error state of their own: no errno-like global, nothing thread-local.
 */
#ifndef SPLITNIC_STATUS_H
#define SPLITNIC_STATUS_H

#ifdef __cplusplus
extern "C" {
#endif

enum splitnic_status {
	SPLITNIC_OK = 0,
	SPLITNIC_E_INVALID = 1,	    /* a NULL pointer, a zero count, a value out of range */
	SPLITNIC_E_IO = 2,	    /* a file or socket cannot be opened, read or written */
	SPLITNIC_E_BAD_MODEL = 3,   /* the model file fails validation */
	SPLITNIC_E_NOMEM = 4,	    /* out of memory */
	SPLITNIC_E_BAD_INPUT = 5,   /* input size or format does not match the model */
	SPLITNIC_E_BAD_HANDLE = 6,  /* not a live object: freed already, or never created */
	SPLITNIC_E_BUSY = 7,	    /* the object is still in use (a model with live contexts) */
	SPLITNIC_E_AGAIN = 8,	    /* nothing to return yet (non-blocking receive) */
	SPLITNIC_E_TIMEOUT = 9,	    /* no answer within the time given */
	SPLITNIC_E_SERVER = 10,	    /* the server answered with an ERROR message */
	SPLITNIC_E_UNSUPPORTED = 11 /* a format or feature this build lacks */
};
#define SPLITNIC_STATUS_COUNT 12

#define SPLITNIC_ERROR_MAX 256

struct splitnic_error {
	int code;		      /* enum splitnic_status */
	char msg[SPLITNIC_ERROR_MAX]; /* "" when code is SPLITNIC_OK */
};

/* A status code's name ("invalid argument", ...); "unknown status" outside the enum. */
static inline const char *splitnic_status_name(int code)
{
	static const char *const names[SPLITNIC_STATUS_COUNT] = {
	    "ok",	    "invalid argument", "i/o error", "bad model file", "out of memory",
	    "bad input",    "bad handle",	"busy",	     "try again",      "timed out",
	    "server error", "unsupported",
	};

	return code >= 0 && code < SPLITNIC_STATUS_COUNT ? names[code] : "unknown status";
}

#ifdef __cplusplus
}
#endif

#endif /* SPLITNIC_STATUS_H */
