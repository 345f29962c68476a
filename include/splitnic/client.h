/* SPDX-License-Identifier: MIT */
/*
 * splitnic/client.h — libsplitnic-client: a front-end's side of the splitnic wire protocol
 * (REQUEST out, RESPONSE or ERROR back, over UDP; the format is documented in the source tree's
 * protocol/proto.h). Build with `pkg-config --cflags --libs splitnic-client`.
 *
 *     struct splitnic_client *cl;
 *     struct splitnic_response r;
 *     struct splitnic_tensor t = {SPLITNIC_TENSOR_U8, 1, 28, 28, image, 784, 0, 0};
 *
 *     splitnic_client_open("10.88.0.1", NULL, 0, &cl, &e);
 *     splitnic_client_request(cl, 0, 42, &t, 1000, 3, &r, &e);  // blocking, 3 retransmissions
 *     printf("class %u\n", r.cls);
 *
 * Asynchronous use: splitnic_client_send any number of requests (distinct request ids), then
 * splitnic_client_poll (non-blocking) or splitnic_client_wait (blocking, with a timeout) for the
 * answers, in whatever order they come; splitnic_client_fd gives the socket for poll(2)/epoll.
 * A request not answered in time is retransmitted by sending it again with the same request id
 * (the protocol's rule: servers keep no session, so a retransmission is simply answered).
 * One answer per request: once a RESPONSE or ERROR for a request id has been returned, further
 * answers to that id (a retransmission answered too, by the same server or, behind a load
 * balancer, by another) are dropped and counted (stats.duplicates) until the id is sent again;
 * the client remembers the last 65,536 ids answered (4-way sets, 16,384 sets).
 *
 * Health: splitnic_client_health sends a HEALTH probe and returns the server's report
 * (identity, role, state, models); see the protocol's HEALTH message.
 *
 * Fragmentation: a tensor larger than one datagram is sent as fragments of at most `payload`
 * bytes; fragmented responses (up to 65535 classes) are reassembled in a fixed table of 8
 * messages in progress (about 4.5 MiB), allocated when the first fragmented response arrives
 * (single-datagram responses take none: a front-end with thousands of clients of small answers
 * holds about 1.2 MiB each, allocated by splitnic_client_open). Out of memory then: the
 * fragment is dropped and counted as PROTO_RA_TABLE_FULL (splitnic_client_stats).
 *
 * Errors: see splitnic/status.h (0 or a status code, and a message in *err, which may be NULL).
 * Thread safety: a client belongs to one thread at a time; use one client per thread. Nothing
 * is global.
 */
#ifndef SPLITNIC_CLIENT_H
#define SPLITNIC_CLIENT_H

#include <stddef.h>
#include <stdint.h>

#include "splitnic/status.h"

#ifdef __cplusplus
extern "C" {
#endif

#define SPLITNIC_CLIENT_DEFAULT_PORT 21326
#define SPLITNIC_CLIENT_MAX_CLASSES  65535 /* the protocol's num_classes limit */

/* Tensor formats on the wire (the protocol's numbering). */
enum splitnic_tensor_fmt {
	SPLITNIC_TENSOR_U8 = 1,
	SPLITNIC_TENSOR_F32 = 2, /* little-endian binary32 */
	SPLITNIC_TENSOR_FP16 = 3,
	SPLITNIC_TENSOR_INT8 = 4,
	SPLITNIC_TENSOR_BITS = 5, /* +1/-1 packed in 64-bit little-endian words, bit 1 = +1 */
	SPLITNIC_TENSOR_F64 = 6,
};

/* One input tensor, shape (C,H,W), C-major; bytes must be exactly what fmt and shape need. */
struct splitnic_tensor {
	uint32_t fmt; /* enum splitnic_tensor_fmt */
	uint32_t c, h, w;
	const void *data;
	size_t bytes;
	float scale;	    /* int8 only: real = scale * (q - zero_point), scale > 0 */
	int32_t zero_point; /* int8 only */
};

/* A RESPONSE or an ERROR. */
struct splitnic_response {
	uint64_t request_id;
	uint32_t model_id;
	int error;	      /* 0: a RESPONSE; else the ERROR's code (the protocol's 1..8) */
	uint32_t cls;	      /* RESPONSE: predicted class */
	uint32_t num_classes; /* RESPONSE: scores[0 .. num_classes) */
	const double *scores; /* owned by the client: valid until its next poll/wait/request */
	uint8_t executors;    /* RESPONSE: 1 cpu, 2 gpu, 4 nic, 8 xdp, 16 host fallback */
	uint32_t t_ns[8];     /* RESPONSE: server timing, ns: total, rx, queue, host, pack, xfer,
				 nic, tx (0 = not measured) */
	uint32_t err_detail;  /* ERROR: code-specific detail */
	char reason[65];      /* ERROR: the server's reason, NUL-terminated */
	uint64_t recv_ns;     /* CLOCK_MONOTONIC when the message was complete */
};

/* What the client dropped, by reason (indices are the protocol's verdict numbers). */
struct splitnic_client_stats {
	uint64_t rejected[16];	   /* datagrams the parser rejected, by proto_verdict */
	uint64_t wrong_type;	   /* well-formed but not a RESPONSE or ERROR */
	uint64_t reasm_dropped[8]; /* fragments the reassembler dropped, by proto_ra_verdict */
	uint64_t send_errors;	   /* datagrams the socket refused */
	uint64_t duplicates;	   /* answers to a request id already answered (dropped) */
};

/* Roles and states of a HEALTH report (the protocol's numbering). */
enum splitnic_role {
	SPLITNIC_ROLE_ANY = 0, /* in a probe: whoever answers first */
	SPLITNIC_ROLE_NIC = 1,
	SPLITNIC_ROLE_HOST = 2,
	SPLITNIC_ROLE_SERVE = 3,
	SPLITNIC_ROLE_XDP = 4,
};
enum splitnic_health_state {
	SPLITNIC_SERVING = 0,
	SPLITNIC_DRAINING = 1, /* finishing what it holds, taking nothing new */
	SPLITNIC_DEGRADED = 2, /* serving, but a part it needs is away */
};

#define SPLITNIC_HEALTH_MAX_MODELS 27 /* what a 1400-byte probe can list */

/* One model of a HEALTH report. */
struct splitnic_health_model {
	uint32_t model_id;
	uint32_t first_op; /* the first compiled op the server runs (0: from the input) */
	uint32_t mode; /* 1 whole, 2 co-processor host part, 3 NIC part, 4 host-only, 5 fallback */
	uint32_t in_fmt; /* enum splitnic_tensor_fmt it takes at first_op */
	uint32_t c, h, w;
	uint32_t classes;
	char name[25];
};

/* A server's HEALTH report. */
struct splitnic_health {
	char ident[33]; /* the server's name */
	uint32_t role;	/* enum splitnic_role */
	uint32_t state; /* enum splitnic_health_state */
	uint32_t in_flight;
	uint32_t truncated; /* 1: the server holds more models than listed */
	uint32_t n_models;
	struct splitnic_health_model model[SPLITNIC_HEALTH_MAX_MODELS];
	uint64_t rtt_ns; /* probe sent to report received */
};

struct splitnic_client;

/*
 * Resolve host and port (NULL: 21326) and connect a UDP socket to the first address that
 * accepts it. payload is the largest UDP payload per datagram (0: 1400; 256 .. 65507).
 * Errors: SPLITNIC_E_INVALID (NULL host/client, payload out of range, an unresolvable name:
 * the message has the resolver's reason), SPLITNIC_E_IO (no address connects), NOMEM.
 */
int splitnic_client_open(const char *host, const char *port, uint32_t payload,
			 struct splitnic_client **client, struct splitnic_error *err);

/* Close the socket and free everything. NULL is a no-op. */
void splitnic_client_close(struct splitnic_client *client);

/* The connected UDP socket (readable when a datagram is waiting), or -1 for NULL. */
int splitnic_client_fd(const struct splitnic_client *client);

/*
 * Send one REQUEST (all its fragments) for model_id (0: the server's default model; else the
 * number the server gives it, or splitnic_client_model_id(name)). Sending again with the same
 * request_id is a retransmission. If send_ns is not NULL it receives the CLOCK_MONOTONIC time
 * just before the first datagram went out.
 * Errors: SPLITNIC_E_INVALID (NULL, a zero dimension, bytes not matching fmt and shape, more
 * than 64 MiB), SPLITNIC_E_IO (the socket refused a datagram: the message has errno's reason).
 */
int splitnic_client_send(struct splitnic_client *client, uint32_t model_id, uint64_t request_id,
			 const struct splitnic_tensor *t, uint64_t *send_ns,
			 struct splitnic_error *err);

/*
 * Without blocking, read waiting datagrams until one completes a RESPONSE or ERROR, and return
 * it in *resp. SPLITNIC_E_AGAIN when nothing (more) is complete. Datagrams that fail to parse or
 * reassemble are dropped and counted (splitnic_client_stats).
 */
int splitnic_client_poll(struct splitnic_client *client, struct splitnic_response *resp,
			 struct splitnic_error *err);

/* As poll, but wait up to timeout_ms (-1: forever) for one; SPLITNIC_E_TIMEOUT after that. */
int splitnic_client_wait(struct splitnic_client *client, struct splitnic_response *resp,
			 int timeout_ms, struct splitnic_error *err);

/*
 * Blocking request: send, then wait up to timeout_ms for the answer to request_id (answers to
 * other ids are discarded), sending the same request again up to `retries` times. Returns 0
 * with a RESPONSE, SPLITNIC_E_SERVER with an ERROR (in *resp too, message with the code and
 * reason), SPLITNIC_E_TIMEOUT when no answer came after the last try.
 */
int splitnic_client_request(struct splitnic_client *client, uint32_t model_id, uint64_t request_id,
			    const struct splitnic_tensor *t, int timeout_ms, unsigned retries,
			    struct splitnic_response *resp, struct splitnic_error *err);

/*
 * Blocking HEALTH probe: send a probe asking `role` (SPLITNIC_ROLE_ANY: whoever answers, e.g.
 * the NIC of a co-processor server; SPLITNIC_ROLE_HOST: splitnic-nic passes it up to its host),
 * padded to min(payload, 1400) bytes, and wait up to timeout_ms for the report, sending the
 * probe again at each third of it. RESPONSEs and ERRORs that arrive meanwhile are dropped: probe
 * with a client of its own while requests are in flight. 0 with *health filled;
 * SPLITNIC_E_TIMEOUT when no report came; SPLITNIC_E_INVALID for bad arguments.
 */
int splitnic_client_health(struct splitnic_client *client, uint32_t role, int timeout_ms,
			   struct splitnic_health *health, struct splitnic_error *err);

/* Names of a role, a state and a model entry's mode ("nic", "serving", "nic-part"; "?"). */
const char *splitnic_role_name(uint32_t role);
const char *splitnic_health_state_name(uint32_t state);
const char *splitnic_health_mode_name(uint32_t mode);

/* Datagrams dropped so far, by reason. */
void splitnic_client_stats(const struct splitnic_client *client,
			   struct splitnic_client_stats *stats);

/* The protocol's model id of a model name (FNV-1a, 32 bits), what servers answer to by default. */
uint32_t splitnic_client_model_id(const char *name);

#ifdef __cplusplus
}
#endif

#endif /* SPLITNIC_CLIENT_H */
