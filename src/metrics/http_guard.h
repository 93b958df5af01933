/*
 * The connection guard of the /metrics endpoint: a deadline for each
 * request and room for new clients, so that slow or idle clients cannot
 * keep a scrape out. See http_guard.c for how. Nothing here is public.
 *
 * The guard watches one libmicrohttpd daemon through three callbacks, all
 * called on the daemon's thread; its own thread enforces the deadline.
 */
#ifndef AC_METRICS_HTTP_GUARD_H
#define AC_METRICS_HTTP_GUARD_H

#include <microhttpd.h>
#include <stddef.h>
#include <stdint.h>

#include <actorc/status.h>

typedef struct ac__http_guard ac__http_guard;

typedef struct ac__http_limits {
    uint64_t request_timeout_ms; /* >= 1 */
    size_t max_connections;      /* >= 1 */
    size_t max_per_address;      /* >= 1 */
} ac__http_limits;

/* A guard with its deadline thread running in *out; or the status of the
 * failure (AC_ENOMEM, AC_ESYS), recorded, and *out NULL. Any thread. */
ac_status ac__http_guard_create(const ac__http_limits *limits, ac__http_guard **out);

/* Stop the deadline thread and free the guard. Call once the daemon it
 * watched has stopped, so that every connection it saw has closed. */
void ac__http_guard_destroy(ac__http_guard *guard);

/* The daemon's MHD_OPTION_NOTIFY_CONNECTION callback; cls is the guard. */
void ac__http_guard_on_connection(void *cls, struct MHD_Connection *conn,
                                  void **socket_context,
                                  enum MHD_ConnectionNotificationCode code);

/* Call from the access handler: `conn` has its request and is answering. */
void ac__http_guard_on_request(ac__http_guard *guard, struct MHD_Connection *conn);

/* The daemon's MHD_OPTION_NOTIFY_COMPLETED callback; cls is the guard. */
void ac__http_guard_on_completed(void *cls, struct MHD_Connection *conn, void **request_context,
                                 enum MHD_RequestTerminationCode toe);

#endif
