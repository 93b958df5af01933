/*
 * Helpers for the metrics tests: a tiny HTTP/1.0 GET client over a socket
 * (no curl needed) and lookups into exposition text.
 */
#ifndef ACTORC_METRICS_TEST_UTIL_H
#define ACTORC_METRICS_TEST_UTIL_H

#include <stdbool.h>
#include <stddef.h>

typedef struct mt_response {
    int status;         /* HTTP status, or -1 when the request failed */
    char *content_type; /* the Content-Type header, or NULL */
    char *body;         /* NUL-terminated, or NULL */
    size_t body_len;
} mt_response;

/* Send `method path` to 127.0.0.1:port and read the whole response
 * (bounded by a 10 s socket timeout). */
mt_response mt_http(int port, const char *method, const char *path);
/* The same, with each step (connecting, each send, each read) bounded by
 * timeout_ms instead. */
mt_response mt_http_within(int port, const char *method, const char *path, int timeout_ms);
void mt_response_free(mt_response *r);

/* The value of the sample whose line starts with `series` followed by a
 * space (e.g. "actorc_restarts_total" or "x{outcome=\"first\"}"); -1 when
 * there is no such line. */
double mt_sample(const char *text, const char *series);

/* Does `text` hold a line equal to `line`? */
bool mt_has_line(const char *text, const char *line);

#endif
