/*
 * Metrics: a per-system registry of counters, gauges and histograms, the
 * Prometheus text exposition, and an embedded HTTP endpoint (in the
 * optional actorc_http library; see its section below).
 *
 * The registry is off by default. Turn it on with
 * ac_system_options.metrics or ac_metrics_enable; once on it stays on until
 * the system is terminated. While it is off, the runtime's own
 * instrumentation costs one load and one predictable branch per event.
 *
 * A family has a name, a kind, a help text and label names; its series are
 * told apart by their label values. Look a series up once and keep the
 * handle: updates are lock-free atomics, safe from any thread. Looking up
 * an existing series takes no lock either; only creating one does. Every
 * update function accepts NULL and does nothing, so that code instrumented
 * against a family that could not be created (metrics off) or a series that
 * was dropped (cardinality cap) costs a branch and needs no checks.
 *
 * Cardinality: a family holds at most max_series series (default 1,000).
 * Beyond that, a new series is dropped: the lookup returns NULL and the
 * system logs one warning per family.
 *
 * Handles (families and series) belong to the system: they are valid until
 * ac_system_terminate and must not be freed. Code without the handles
 * (the runtime's own families have none) reads a series by family name
 * and label values with ac_metrics_read.
 *
 * The runtime's own families, present as soon as metrics are on:
 *   actorc_actors_started_total          counter
 *   actorc_actors_stopped_total          counter
 *   actorc_messages_processed_total      counter
 *   actorc_dead_letters_total            counter
 *   actorc_ask_timeouts_total            counter
 *   actorc_restarts_total                counter
 *   router_scatter_gather_resolved_total counter, label outcome: first,
 *                                        timeout, all-failed, stopped,
 *                                        no-reply-target
 *   router_scatter_gather_latency_seconds histogram (default buckets): from
 *                                        scattering to answering the caller
 * and, with a hedged router or the options of hedge.h, the families listed
 * there (router_hedged_*, router_hedges_*, router_routee_outcomes_total,
 * ...).
 *
 * All functions may be called from any thread, inside actors or not,
 * except where a comment says otherwise.
 */
#ifndef ACTORC_METRICS_H
#define ACTORC_METRICS_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "actorc/export.h"
#include "actorc/status.h"
#include "actorc/system.h"

#ifdef __cplusplus
extern "C" {
#endif

#define AC_METRICS_DEFAULT_MAX_SERIES 1000
/* Most label names a family may have; most finite bucket bounds a histogram
 * may have (its +Inf bucket is implicit). */
#define AC_METRICS_MAX_LABELS 16
#define AC_METRICS_MAX_BUCKETS 256

typedef struct ac_metric_family ac_metric_family;
typedef struct ac_counter ac_counter;
typedef struct ac_gauge ac_gauge;
typedef struct ac_histogram ac_histogram;

/* ---- the registry ----------------------------------------------------- */

/* Turn metrics on for `system` (no-op when already on). AC_EINVAL for NULL,
 * AC_ENOMEM. */
AC_API ac_status ac_metrics_enable(ac_system *system);
AC_API bool ac_metrics_enabled(const ac_system *system);

/* ---- families --------------------------------------------------------- */

/* Everything but the name is optional: NULL options, or `{0}`, give a
 * family without help text or labels, capped at 1,000 series, with the
 * default buckets for a histogram. */
typedef struct ac_metric_options {
    /* HELP text (copied). Prometheus tooling expects one. */
    const char *help;
    /* Label names (copied): [A-Za-z_][A-Za-z0-9_]*, not starting with
     * "__", all different; "le" is reserved for histograms. */
    const char *const *label_names;
    size_t label_count; /* 0..AC_METRICS_MAX_LABELS */
    /* Cardinality cap; 0: AC_METRICS_DEFAULT_MAX_SERIES. */
    size_t max_series;
    /* Histograms only: strictly increasing finite upper bounds (copied);
     * the +Inf bucket is implicit (a trailing +Inf is accepted and
     * ignored). NULL: .005 .01 .025 .05 .1 .25 .5 1 2.5 5 10. */
    const double *buckets;
    /* The number of bounds in `buckets`: 1..AC_METRICS_MAX_BUCKETS finite
     * ones, plus the optional trailing +Inf; 0 when buckets is NULL. A
     * larger count is refused (AC_EINVAL) before the array is read. */
    size_t bucket_count;
} ac_metric_options;

/* Register a family, or return the one already registered under `name`
 * when it has the same kind, label names and buckets (the help text and
 * cap of the first registration stay). `name` matches
 * [A-Za-z_:][A-Za-z0-9_:]*. Returns NULL with ac_last_error: AC_EINVAL
 * when metrics are off or for a bad name, label or bucket; AC_EEXIST when
 * the name (or, for histograms, a _bucket/_sum/_count sample name) is taken
 * by a different family. A family without labels gets its one series at
 * once, so it is exposed (as 0) before the first update. */
AC_API ac_metric_family *ac_metrics_counter(ac_system *system, const char *name,
                                            const ac_metric_options *options);
AC_API ac_metric_family *ac_metrics_gauge(ac_system *system, const char *name,
                                          const ac_metric_options *options);
AC_API ac_metric_family *ac_metrics_histogram(ac_system *system, const char *name,
                                              const ac_metric_options *options);

/* ---- series ----------------------------------------------------------- */

/* The series of `family` with these label values (one per label name, in
 * order; any UTF-8 text, copied; NULL when the family has no labels),
 * created on first use. NULL with ac_last_error: AC_EINVAL for a NULL
 * family or value, AC_ETYPE when the family is of another kind, AC_ENOMEM,
 * or AC_EINVAL when the family is at its cap (the series is dropped; the
 * first drop per family logs a warning). */
AC_API ac_counter *ac_counter_series(ac_metric_family *family, const char *const *label_values);
AC_API ac_gauge *ac_gauge_series(ac_metric_family *family, const char *const *label_values);
AC_API ac_histogram *ac_histogram_series(ac_metric_family *family,
                                         const char *const *label_values);

/* ---- updates: lock-free, any thread; NULL is ignored ------------------ */

AC_API void ac_counter_add(ac_counter *counter, uint64_t n);
AC_API void ac_counter_inc(ac_counter *counter);
AC_API void ac_gauge_set(ac_gauge *gauge, double value);
AC_API void ac_gauge_add(ac_gauge *gauge, double delta);
AC_API void ac_gauge_sub(ac_gauge *gauge, double delta);
/* Count `value` in the first bucket whose bound is >= value (+Inf for
 * anything larger, and for NaN) and add it to the sum. */
AC_API void ac_histogram_observe(ac_histogram *histogram, double value);

/* Current values (0 for NULL). A read concurrent with updates sees each
 * update either whole or not at all. */
AC_API uint64_t ac_counter_value(const ac_counter *counter);
AC_API double ac_gauge_value(const ac_gauge *gauge);
AC_API uint64_t ac_histogram_count(const ac_histogram *histogram);
AC_API double ac_histogram_sum(const ac_histogram *histogram);

/* ---- reading by name -------------------------------------------------- */

typedef enum ac_metric_kind {
    AC_METRIC_COUNTER = 1,
    AC_METRIC_GAUGE,
    AC_METRIC_HISTOGRAM
} ac_metric_kind;

/* One series' current value, as ac_metrics_read fills it. */
typedef struct ac_metric_value {
    ac_metric_kind kind;
    /* A counter's total (as a double) or a gauge's value; 0 for a
     * histogram. */
    double value;
    /* A counter's total (exact) or a histogram's number of observations
     * (its _count); 0 for a gauge. */
    uint64_t count;
    /* A histogram's sum of observations (its _sum); 0 otherwise. */
    double sum;
} ac_metric_value;

/* Read the series of the family called `name` whose label values are
 * `label_values` (n of them, one per label name in order; NULL when n is
 * 0), without the handles: the runtime's own families (listed above)
 * included. What it reads is what ac_metrics_format would print for that
 * series at the same moment: a sharded counter summed over its shards, a
 * histogram's _count as the sum of its buckets. Never creates a series.
 * Borrows every argument; fills *out. Errors, with *out zeroed (when out
 * is not NULL) and ac_last_error saying which:
 *   AC_EINVAL     NULL system, name or out; NULL label_values with n > 0,
 *                 or a NULL value among them; metrics are off; n is not
 *                 the family's number of labels (the message names them)
 *   AC_ENOTFOUND  no family is called `name` (a histogram is read by its
 *                 family name, not by a _sum/_count/_bucket sample name),
 *                 or it has no series with these label values yet
 * Any thread. */
AC_API ac_status ac_metrics_read(ac_system *system, const char *name,
                                 const char *const *label_values, size_t n,
                                 ac_metric_value *out);

/* ---- exposition ------------------------------------------------------- */

/* The registry in the Prometheus text format 0.0.4: per family, in order of
 * registration, "# HELP" (when it has help) and "# TYPE", then its series
 * in order of creation; histograms as _bucket{le="…"} (cumulative, ending
 * with +Inf), _sum and _count. Families without series are left out.
 * Label values escape backslash, double quote and newline. A new string
 * for the caller to free(), or NULL with ac_last_error (AC_EINVAL when
 * metrics are off, AC_ENOMEM). */
AC_API char *ac_metrics_format(ac_system *system);

/* ---- the endpoint slot ------------------------------------------------ */

/* Where a server of the exposition (the HTTP endpoint below, or one of
 * your own) hangs off a system, so that ac_system_terminate stops it
 * before the registry goes away. A system has at most one endpoint.
 * Applications that only call ac_metrics_serve never need these. */

/* Stops `endpoint` and frees it; called at most once, without any lock of
 * actorc held. After it returns, `endpoint` must not touch the system. */
typedef void ac_metrics_endpoint_stop_fn(void *endpoint);

/* Attach `endpoint`, which listens on `port` (reported by
 * ac_metrics_endpoint_port). ac_system_terminate calls `stop` unless it is
 * detached first. AC_EINVAL for a NULL argument or when metrics are off,
 * AC_EEXIST when an endpoint is attached already (the message names its
 * port); on failure `stop` is not called. */
AC_API ac_status ac_metrics_endpoint_attach(ac_system *system, void *endpoint, int port,
                                            ac_metrics_endpoint_stop_fn *stop);
/* Detach the endpoint that was attached with `stop` and return it for the
 * caller to stop; NULL when no such endpoint is attached. */
AC_API void *ac_metrics_endpoint_detach(ac_system *system, ac_metrics_endpoint_stop_fn *stop);
/* The port of the attached endpoint, or 0 when none is attached. */
AC_API int ac_metrics_endpoint_port(const ac_system *system);

/* ---- the HTTP endpoint ------------------------------------------------ */

/* The functions of this section are not in libactorc but in the optional
 * actorc_http library, which embeds libmicrohttpd: link it with
 * `actorc::actorc_http` (CMake: find_package(actorc COMPONENTS http)) or
 * `pkg-config --libs actorc-http`. The rest of this header needs only
 * libactorc. */

/* Defaults of the endpoint's limits (see ac_metrics_http_options). */
#define AC_METRICS_HTTP_DEFAULT_REQUEST_TIMEOUT_MS 5000
#define AC_METRICS_HTTP_DEFAULT_MAX_CONNECTIONS 256
#define AC_METRICS_HTTP_DEFAULT_MAX_CONNECTIONS_PER_ADDRESS 32
/* The largest request_timeout_ms and max_connections accepted. */
#define AC_METRICS_HTTP_MAX_REQUEST_TIMEOUT_MS 3600000
#define AC_METRICS_HTTP_MAX_CONNECTIONS 65536

/* Where ac_metrics_serve listens, and how it keeps answering scrapes while
 * other clients hold connections without finishing a request. NULL
 * options, or `{0}`: 127.0.0.1, an ephemeral port, the default limits.
 *
 * A connection waiting for a request (since it was accepted, or since its
 * last response when kept alive) is closed once request_timeout_ms have
 * passed, however steadily it trickles bytes. A new connection beyond
 * max_connections_per_address closes the stalest connection of its
 * address still waiting for a request; beyond max_connections, the
 * stalest waiting connection of all. New clients are never turned away
 * while some connection merely waits, and a scraper sends its request at
 * once, so it is answered even when it shares its address (say, loopback)
 * with hundreds of idle clients. */
typedef struct ac_metrics_http_options {
    /* An IPv4 or IPv6 address literal; NULL: "127.0.0.1". */
    const char *address;
    /* 1..65535, or 0 for a port the kernel picks (see ac_metrics_http_port). */
    int port;
    /* The time a client has to send a whole request, in ms, 1..1 hour; also
     * the longest a response may stall without progress (rounded up to
     * whole seconds). 0: AC_METRICS_HTTP_DEFAULT_REQUEST_TIMEOUT_MS, 5 s:
     * ample for a scraper, which sends its request in one packet; a
     * kept-alive connection idle longer is closed and the scraper simply
     * reconnects. */
    int64_t request_timeout_ms;
    /* Most connections kept open, 1..AC_METRICS_HTTP_MAX_CONNECTIONS (one
     * more is accepted, to make room). 0:
     * AC_METRICS_HTTP_DEFAULT_MAX_CONNECTIONS, 256: far more than the few
     * scrapers an endpoint has, yet a bounded share of the process's
     * descriptors. */
    int max_connections;
    /* Most connections from one client address, in the same range as
     * max_connections (no effect above it). 0:
     * AC_METRICS_HTTP_DEFAULT_MAX_CONNECTIONS_PER_ADDRESS, 32: a crowd at
     * one address makes room among itself instead of pushing out the
     * connections of other addresses. */
    int max_connections_per_address;
} ac_metrics_http_options;

/* Serve GET /metrics (the exposition; HEAD too) over HTTP on threads of
 * its own, turning metrics on if they are off. Other paths answer 404,
 * other methods 405. Stopped by ac_metrics_serve_stop or at terminate.
 * AC_EINVAL for a bad address, port or limit, AC_EEXIST when already serving,
 * AC_ESYS when the socket cannot be opened (ac_last_error names the
 * address, the port and the reason, e.g. the port already in use). */
AC_API ac_status ac_metrics_serve(ac_system *system, const ac_metrics_http_options *options);
/* The port the endpoint listens on, or 0 when it is not serving. */
AC_API int ac_metrics_http_port(const ac_system *system);
/* Stop serving and wait for a scrape in progress to finish. AC_ENOTFOUND
 * when not serving. */
AC_API ac_status ac_metrics_serve_stop(ac_system *system);

#ifdef __cplusplus
}
#endif
#endif
