/*
 * The /metrics endpoint: libmicrohttpd with one internal polling thread.
 *
 * The listening socket is opened here rather than by libmicrohttpd, so
 * that a failure says exactly what went wrong (the port already in use,
 * an address not on this host) and the bound port of an ephemeral request
 * can be read back with getsockname. The daemon takes the socket over and
 * closes it when stopped.
 *
 * Slow and idle clients must not keep a scrape out. The connection guard
 * (http_guard.c) closes a connection that has not sent its whole request
 * within the request timeout, and makes room for a newcomer beyond the
 * limits by closing the stalest connection still waiting; libmicrohttpd's
 * own inactivity timeout, set to the same time, bounds a response that
 * stalls. The listen backlog is deep, so that a burst of connections
 * waits for accept() rather than having its SYNs dropped: a dropped SYN
 * costs the client a one-second retransmission, half a scrape's budget.
 *
 * This file and the guard are the actorc_http library, apart from
 * libactorc so that only programs that serve metrics link libmicrohttpd.
 * They use the public API alone: a scrape renders with ac_metrics_format,
 * and the endpoint hangs off the system in the registry's endpoint slot
 * (ac_metrics_endpoint_attach), from which ac_system_terminate stops it.
 * Stopping takes the endpoint off the slot first and joins the daemon's
 * thread after: a scrape in progress takes the registry lock to render, so
 * the slot's lock is not held while joining.
 */
#include <arpa/inet.h>
#include <errno.h>
#include <microhttpd.h>
#include <netinet/in.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <unistd.h>

#include "actorc/log.h"
#include "actorc/metrics.h"
#include "actorc/observe.h"
#include "actorc/status.h"
#include "actorc/system.h"

#include "metrics/http_guard.h"

#define CONTENT_TYPE "text/plain; version=0.0.4; charset=utf-8"
#define JSON_TYPE "application/json"
#define HTML_TYPE "text/html; charset=utf-8"
#define DEFAULT_ADDRESS "127.0.0.1"
#define LISTEN_BACKLOG 1024 /* the kernel caps it at net.core.somaxconn */

typedef struct ac__http {
    struct MHD_Daemon *daemon;
    ac__http_guard *guard;
    ac_system *system;
    int port;
} ac__http;

/* ---- requests --------------------------------------------------------- */

/* Queue `r` (NULL: out of memory) with its type and no caching: every
 * response is of the system now. */
static enum MHD_Result queue(struct MHD_Connection *conn, unsigned status,
                             struct MHD_Response *r, const char *type, const char *allow)
{
    if (!r)
        return MHD_NO;
    MHD_add_response_header(r, MHD_HTTP_HEADER_CONTENT_TYPE, type);
    MHD_add_response_header(r, MHD_HTTP_HEADER_CACHE_CONTROL, "no-store");
    if (allow)
        MHD_add_response_header(r, MHD_HTTP_HEADER_ALLOW, allow);
    enum MHD_Result ret = MHD_queue_response(conn, status, r);
    MHD_destroy_response(r);
    return ret;
}

/* `body` (freed here) as `type`. */
static enum MHD_Result respond_as(struct MHD_Connection *conn, unsigned status, char *body,
                                  const char *type, const char *allow)
{
    struct MHD_Response *r =
        MHD_create_response_from_buffer(strlen(body), body, MHD_RESPMEM_MUST_FREE);
    if (!r)
        free(body);
    return queue(conn, status, r, type, allow);
}

static enum MHD_Result respond(struct MHD_Connection *conn, unsigned status, char *body,
                               const char *allow)
{
    return respond_as(conn, status, body,
                      status == MHD_HTTP_OK ? CONTENT_TYPE : "text/plain; charset=utf-8", allow);
}

static enum MHD_Result respond_text(struct MHD_Connection *conn, unsigned status,
                                    const char *msg, const char *allow)
{
    char *body = strdup(msg);
    return body ? respond(conn, status, body, allow) : MHD_NO;
}

/* ---- the view and the observer page ------------------------------------ */

/* The observer page (observer.html), embedded at build time. */
extern const unsigned char ac__observer_page[];
extern const size_t ac__observer_page_size;

/* A query argument as a count: absent (true, *out untouched), decimal
 * digits up to 10^18, or false. */
static bool query_count(struct MHD_Connection *conn, const char *name, uint64_t *out)
{
    const char *v = MHD_lookup_connection_value(conn, MHD_GET_ARGUMENT_KIND, name);
    if (!v)
        return true;
    size_t n = strlen(v);
    if (n == 0 || n > 18 || strspn(v, "0123456789") != n)
        return false;
    *out = strtoull(v, NULL, 10);
    return true;
}

static enum MHD_Result respond_json_error(struct MHD_Connection *conn, unsigned status,
                                          const char *msg)
{
    /* The message is ours or ac_last_error's: printable ASCII without quotes
     * or backslashes in every case we make; escaped anyway. */
    size_t n = strlen(msg);
    char *body = malloc(n * 6 + 16);
    if (!body)
        return MHD_NO;
    char *p = body;
    p += sprintf(p, "{\"error\":\"");
    for (const unsigned char *s = (const unsigned char *)msg; *s; s++) {
        if (*s == '"' || *s == '\\')
            p += sprintf(p, "\\%c", *s);
        else if (*s < 0x20 || *s >= 0x7f)
            p += sprintf(p, "\\u%04x", *s);
        else
            *p++ = (char)*s;
    }
    strcpy(p, "\"}\n");
    return respond_as(conn, status, body, JSON_TYPE, NULL);
}

static enum MHD_Result serve_view(ac__http *http, struct MHD_Connection *conn, bool whole)
{
    ac_observe_query q = {0};
    if (!query_count(conn, "offset", &q.offset) || !query_count(conn, "limit", &q.limit))
        return respond_json_error(conn, MHD_HTTP_BAD_REQUEST,
                                  "offset and limit are decimal counts");
    if (q.limit > AC_OBSERVE_MAX_PAGE) {
        char msg[96];
        snprintf(msg, sizeof msg, "limit = %llu; use 1..%d, or 0 for the default (%d)",
                 (unsigned long long)q.limit, AC_OBSERVE_MAX_PAGE, AC_OBSERVE_DEFAULT_PAGE);
        return respond_json_error(conn, MHD_HTTP_BAD_REQUEST, msg);
    }
    char *body = whole ? ac_observe_json(http->system, &q) : ac_observe_actors_json(http->system, &q);
    if (!body)
        return respond_json_error(conn, MHD_HTTP_INTERNAL_SERVER_ERROR, ac_last_error());
    return respond_as(conn, MHD_HTTP_OK, body, JSON_TYPE, NULL);
}

static enum MHD_Result serve_page(struct MHD_Connection *conn)
{
    struct MHD_Response *r = MHD_create_response_from_buffer(
        ac__observer_page_size, (void *)ac__observer_page, MHD_RESPMEM_PERSISTENT);
    return queue(conn, MHD_HTTP_OK, r, HTML_TYPE, NULL);
}

static enum MHD_Result handle_request(void *cls, struct MHD_Connection *conn, const char *url,
                                      const char *method, const char *version,
                                      const char *upload_data, size_t *upload_data_size,
                                      void **con_cls)
{
    ac__http *http = cls;
    (void)version;
    (void)upload_data;
    (void)upload_data_size;
    (void)con_cls;
    ac__http_guard_on_request(http->guard, conn);
    if (strcmp(method, MHD_HTTP_METHOD_GET) != 0 && strcmp(method, MHD_HTTP_METHOD_HEAD) != 0)
        return respond_text(conn, MHD_HTTP_METHOD_NOT_ALLOWED, "only GET and HEAD\n",
                            "GET, HEAD");
    if (strcmp(url, "/") == 0)
        return serve_page(conn);
    if (strcmp(url, "/view") == 0)
        return serve_view(http, conn, true);
    if (strcmp(url, "/view/actors") == 0)
        return serve_view(http, conn, false);
    if (strcmp(url, "/metrics") != 0)
        return respond_text(conn, MHD_HTTP_NOT_FOUND,
                            "not found; try /metrics, /view or / (the observer)\n", NULL);
    char *body = ac_metrics_format(http->system);
    if (!body)
        return respond_text(conn, MHD_HTTP_INTERNAL_SERVER_ERROR, "out of memory\n", NULL);
    return respond(conn, MHD_HTTP_OK, body, NULL);
}

/* libmicrohttpd's own complaints go to the system's log. */
static void mhd_log(void *cls, const char *fmt, va_list ap)
{
    ac_system *system = cls;
    char line[512];
    vsnprintf(line, sizeof line, fmt, ap);
    size_t n = strlen(line);
    while (n > 0 && (line[n - 1] == '\n' || line[n - 1] == '\r'))
        line[--n] = '\0';
    ac_system_log(system, AC_LOG_WARN, "metrics endpoint: %s", line);
}

/* ---- the listening socket --------------------------------------------- */

typedef struct listen_addr {
    struct sockaddr_storage ss;
    socklen_t len;
    bool v6;
} listen_addr;

static ac_status parse_address(const char *address, int port, listen_addr *out)
{
    memset(out, 0, sizeof *out);
    struct sockaddr_in *v4 = (struct sockaddr_in *)(void *)&out->ss;
    struct sockaddr_in6 *v6 = (struct sockaddr_in6 *)(void *)&out->ss;
    if (inet_pton(AF_INET, address, &v4->sin_addr) == 1) {
        v4->sin_family = AF_INET;
        v4->sin_port = htons((uint16_t)port);
        out->len = sizeof *v4;
        return AC_OK;
    }
    if (inet_pton(AF_INET6, address, &v6->sin6_addr) == 1) {
        v6->sin6_family = AF_INET6;
        v6->sin6_port = htons((uint16_t)port);
        out->len = sizeof *v6;
        out->v6 = true;
        return AC_OK;
    }
    return ac_set_error(AC_EINVAL,
                        "ac_metrics_serve: address \"%s\" is not an IPv4 or IPv6 address literal",
                        address);
}

static int bound_port(int fd)
{
    struct sockaddr_storage ss;
    socklen_t len = sizeof ss;
    if (getsockname(fd, (struct sockaddr *)&ss, &len) != 0)
        return -1;
    if (ss.ss_family == AF_INET6)
        return ntohs(((struct sockaddr_in6 *)(void *)&ss)->sin6_port);
    return ntohs(((struct sockaddr_in *)(void *)&ss)->sin_port);
}

/* A listening socket, or -1 with the error naming address and port. */
static int open_listener(const listen_addr *a, const char *address, int port)
{
    int fd = socket(a->ss.ss_family, SOCK_STREAM | SOCK_CLOEXEC, 0);
    if (fd < 0) {
        ac_set_error(AC_ESYS, "ac_metrics_serve: socket: %s", strerror(errno));
        return -1;
    }
    int one = 1;
    (void)setsockopt(fd, SOL_SOCKET, SO_REUSEADDR, &one, sizeof one);
    if (a->v6)
        (void)setsockopt(fd, IPPROTO_IPV6, IPV6_V6ONLY, &one, sizeof one);
    const char *step = NULL;
    if (bind(fd, (const struct sockaddr *)&a->ss, a->len) != 0)
        step = "bind";
    else if (listen(fd, LISTEN_BACKLOG) != 0)
        step = "listen";
    if (!step)
        return fd;
    int err = errno;
    close(fd);
    if (err == EADDRINUSE)
        ac_set_error(AC_ESYS, "ac_metrics_serve: port %d on %s is already in use", port, address);
    else
        ac_set_error(AC_ESYS, "ac_metrics_serve: cannot %s %s port %d: %s", step, address, port,
                     strerror(err));
    return -1;
}

/* ---- the daemon ------------------------------------------------------- */

static struct MHD_Daemon *start_daemon(ac__http *http, int fd, bool v6,
                                       const ac__http_limits *limits)
{
    unsigned flags = MHD_USE_INTERNAL_POLLING_THREAD | MHD_USE_AUTO | MHD_USE_ERROR_LOG;
    if (v6)
        flags |= MHD_USE_IPv6;
    unsigned stall_s = (unsigned)((limits->request_timeout_ms + 999) / 1000);
    return MHD_start_daemon(flags, 0, NULL, NULL, handle_request, http,
                            /* the logger first, so that it sees what the
                             * other options have to say */
                            MHD_OPTION_EXTERNAL_LOGGER, mhd_log, (void *)http->system,
                            MHD_OPTION_LISTEN_SOCKET, (MHD_socket)fd,
                            MHD_OPTION_CONNECTION_TIMEOUT, stall_s,
                            /* one slot to spare: the newcomer that makes room */
                            MHD_OPTION_CONNECTION_LIMIT, (unsigned)limits->max_connections + 1,
                            MHD_OPTION_NOTIFY_CONNECTION, ac__http_guard_on_connection,
                            (void *)http->guard,
                            MHD_OPTION_NOTIFY_COMPLETED, ac__http_guard_on_completed,
                            (void *)http->guard,
                            MHD_OPTION_END);
}

/* The endpoint on the listening socket `fd`, which it takes over (closing
 * it on failure), in *out; or the status of the failure, recorded. */
static ac_status start_http(ac_system *system, int fd, bool v6, const ac__http_limits *limits,
                            const char *address, int port, ac__http **out)
{
    ac_status st;
    ac__http *http = calloc(1, sizeof *http);
    if (!http) {
        st = ac_set_error(AC_ENOMEM, "ac_metrics_serve: out of memory");
        goto fail_socket;
    }
    http->system = system;
    http->port = bound_port(fd);
    st = ac__http_guard_create(limits, &http->guard);
    if (st != AC_OK)
        goto fail_http;
    http->daemon = start_daemon(http, fd, v6, limits);
    if (http->daemon) {
        *out = http;
        return AC_OK;
    }
    st = ac_set_error(AC_ESYS, "ac_metrics_serve: cannot start the HTTP server on %s port %d",
                      address, port);
    ac__http_guard_destroy(http->guard);
fail_http:
    free(http);
fail_socket:
    close(fd);
    return st;
}

/* ---- options ---------------------------------------------------------- */

static ac_status check_count(const char *name, int value)
{
    if (value >= 0 && value <= AC_METRICS_HTTP_MAX_CONNECTIONS)
        return AC_OK;
    return ac_set_error(AC_EINVAL, "ac_metrics_serve: %s = %d; use 1..%d, or 0 for the default",
                        name, value, AC_METRICS_HTTP_MAX_CONNECTIONS);
}

static size_t count_or_default(int value, int fallback)
{
    return (size_t)(value ? value : fallback);
}

/* The limits `o` asks for, zeros replaced by the defaults. */
static ac_status read_limits(const ac_metrics_http_options *o, ac__http_limits *out)
{
    int64_t timeout = o->request_timeout_ms;
    if (timeout < 0 || timeout > AC_METRICS_HTTP_MAX_REQUEST_TIMEOUT_MS)
        return ac_set_error(AC_EINVAL,
                            "ac_metrics_serve: request_timeout_ms = %lld; use 1..%d, or 0 for the "
                            "default",
                            (long long)timeout, AC_METRICS_HTTP_MAX_REQUEST_TIMEOUT_MS);
    if (check_count("max_connections", o->max_connections) != AC_OK ||
        check_count("max_connections_per_address", o->max_connections_per_address) != AC_OK)
        return AC_EINVAL;
    out->request_timeout_ms =
        (uint64_t)(timeout ? timeout : AC_METRICS_HTTP_DEFAULT_REQUEST_TIMEOUT_MS);
    out->max_connections =
        count_or_default(o->max_connections, AC_METRICS_HTTP_DEFAULT_MAX_CONNECTIONS);
    out->max_per_address = count_or_default(o->max_connections_per_address,
                                            AC_METRICS_HTTP_DEFAULT_MAX_CONNECTIONS_PER_ADDRESS);
    return AC_OK;
}

/* ---- serving ---------------------------------------------------------- */

/* Joins the daemon's thread (a scrape in progress finishes first) and
 * closes the socket, then the guard's thread. The endpoint is off the
 * system's slot already. */
static void stop_http(ac__http *http)
{
    MHD_stop_daemon(http->daemon);
    ac__http_guard_destroy(http->guard);
    free(http);
}

/* The slot's stop function: ac_system_terminate calls it. */
static void stop_endpoint(void *endpoint)
{
    stop_http(endpoint);
}

/* Hang `http` off the system, unless another endpoint got there first. */
static ac_status install(ac_system *system, ac__http *http)
{
    ac_status status = ac_metrics_endpoint_attach(system, http, http->port, stop_endpoint);
    if (status == AC_OK)
        return AC_OK;
    stop_http(http);
    int busy_port = ac_metrics_endpoint_port(system);
    if (status == AC_EEXIST && busy_port)
        return ac_set_error(AC_EEXIST, "ac_metrics_serve: already serving on port %d", busy_port);
    return status;
}

ac_status ac_metrics_serve(ac_system *system, const ac_metrics_http_options *options)
{
    if (!system)
        return ac_set_error(AC_EINVAL, "ac_metrics_serve: system is NULL");
    ac_metrics_http_options defaults = {0};
    const ac_metrics_http_options *o = options ? options : &defaults;
    const char *address = o->address ? o->address : DEFAULT_ADDRESS;
    if (o->port < 0 || o->port > 65535)
        return ac_set_error(AC_EINVAL, "ac_metrics_serve: port = %d; use 1..65535, or 0 for any",
                            o->port);
    listen_addr a;
    ac__http_limits limits;
    ac_status st = parse_address(address, o->port, &a);
    if (st == AC_OK)
        st = read_limits(o, &limits);
    if (st == AC_OK)
        st = ac_metrics_enable(system);
    if (st != AC_OK)
        return st;
    int serving = ac_metrics_endpoint_port(system); /* a clear answer; install() decides */
    if (serving)
        return ac_set_error(AC_EEXIST, "ac_metrics_serve: already serving on port %d", serving);
    int fd = open_listener(&a, address, o->port);
    if (fd < 0)
        return AC_ESYS;
    ac__http *http = NULL;
    st = start_http(system, fd, a.v6, &limits, address, o->port, &http);
    return st == AC_OK ? install(system, http) : st;
}

int ac_metrics_http_port(const ac_system *system)
{
    return ac_metrics_endpoint_port(system);
}

ac_status ac_metrics_serve_stop(ac_system *system)
{
    if (!system)
        return ac_set_error(AC_EINVAL, "ac_metrics_serve_stop: system is NULL");
    ac__http *http = ac_metrics_endpoint_detach(system, stop_endpoint);
    if (!http)
        return ac_set_error(AC_ENOTFOUND, "ac_metrics_serve_stop: system \"%s\" is not serving",
                            ac_system_name(system));
    stop_http(http);
    return AC_OK;
}
