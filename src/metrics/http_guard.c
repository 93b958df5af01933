/*
 * The connection guard of the /metrics endpoint: however many clients hold
 * connections without finishing a request, a scrape still gets in and is
 * answered.
 *
 * libmicrohttpd's own timeout counts inactivity, so a client that sends a
 * byte now and then keeps its connection for ever; and once the daemon is
 * at its connection limit, new clients queue in the backlog behind the
 * idle ones. Its per-address limit does not help where it matters most:
 * a scraper on loopback shares its address with every local client, and a
 * limit that refuses newcomers would refuse the scraper too. So the guard
 * adds two rules of its own, both about connections waiting for a request
 * (since they were accepted, or since their last response when kept
 * alive):
 *   - a deadline: a connection that has waited request_timeout_ms is
 *     closed, however steadily it trickles bytes;
 *   - room for newcomers: a new connection beyond the per-address limit
 *     closes the stalest waiting connection of its address, and one beyond
 *     the overall limit the stalest waiting connection of all. A scraper
 *     sends its request at once, so it is never the stalest for long.
 * A connection answering a request is never closed by the guard; a
 * response that stalls is the daemon's inactivity timeout's business.
 *
 * Closing is shutdown(2) on the connection's socket: the daemon sees the
 * hang-up and closes the connection on its own thread, as for a client
 * that left. The lock makes this safe from the deadline thread: the daemon
 * closes a socket only after the connection-closed notice, which takes the
 * connection off the list under the lock, so a socket the guard shuts
 * down under the lock still belongs to its connection.
 *
 * The open connections are on one list in the order they began to wait: a
 * connection moves to the tail when it starts waiting for a request, and
 * answering ones keep their place and are skipped. The head's side thus
 * holds the stalest, and the deadline thread sleeps until the deadline of
 * the first waiting one.
 *
 * The lock is a leaf: nothing else is locked, and libmicrohttpd is not
 * called, while it is held.
 */
#include <errno.h>
#include <netinet/in.h>
#include <pthread.h>
#include <stdbool.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <time.h>

#include "actorc/log.h"
#include "actorc/metrics.h"
#include "actorc/status.h"
#include "actorc/system.h"

#include "core/sync.h"
#include "metrics/http_guard.h"

/* A client address, compared whole: the port is left out. */
typedef struct peer_addr {
    int family;
    unsigned char bytes[16];
} peer_addr;

typedef struct guarded_conn {
    struct guarded_conn *prev, *next; /* on the guard's list unless closing */
    uint64_t waiting_since_ns;
    MHD_socket fd;
    bool answering;
    bool closing; /* shut down by the guard; the daemon's notice frees it */
    peer_addr peer;
} guarded_conn;

struct ac__http_guard {
    ac__http_limits limits;
    pthread_t thread;
    pthread_mutex_t lock;
    pthread_cond_t wake;
    /* Under `lock`: written by the daemon's thread (connections come,
     * answer, go) and the deadline thread (it closes them). */
    guarded_conn list; /* sentinel */
    size_t open;       /* on the list */
    bool stop;
    bool idle; /* the thread waits with no deadline: a newly waiting
                * connection must wake it */
};

/* The clock of the deadlines, and of the condition variable that waits
 * for them. */
static uint64_t now_ns(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (uint64_t)ts.tv_sec * 1000000000ull + (uint64_t)ts.tv_nsec;
}

/* ---- the list; call with the lock held -------------------------------- */

static void link_tail(ac__http_guard *g, guarded_conn *c)
{
    c->prev = g->list.prev;
    c->next = &g->list;
    g->list.prev->next = c;
    g->list.prev = c;
    g->open++;
}

static void unlink_conn(ac__http_guard *g, guarded_conn *c)
{
    c->prev->next = c->next;
    c->next->prev = c->prev;
    c->prev = c->next = NULL;
    g->open--;
}

/* Hang up on `c`; the daemon closes it and then sends its notice. */
static void close_conn(ac__http_guard *g, guarded_conn *c)
{
    (void)shutdown(c->fd, SHUT_RDWR);
    unlink_conn(g, c);
    c->closing = true;
}

/* (Re)start `c`'s wait for a request, at the tail. */
static void start_waiting(ac__http_guard *g, guarded_conn *c)
{
    c->answering = false;
    c->waiting_since_ns = now_ns();
    link_tail(g, c);
    if (g->idle)
        pthread_cond_signal(&g->wake);
}

/* ---- room for newcomers; call with the lock held ---------------------- */

static bool same_peer(const peer_addr *a, const peer_addr *b)
{
    return a->family == b->family && memcmp(a->bytes, b->bytes, sizeof a->bytes) == 0;
}

static size_t count_peer(const ac__http_guard *g, const peer_addr *peer)
{
    size_t n = 0;
    for (const guarded_conn *c = g->list.next; c != &g->list; c = c->next)
        n += same_peer(&c->peer, peer);
    return n;
}

/* Close the stalest waiting connection other than `newcomer`, of `peer`
 * only unless it is NULL. False when there is none. */
static bool close_stalest(ac__http_guard *g, const guarded_conn *newcomer, const peer_addr *peer)
{
    for (guarded_conn *c = g->list.next; c != &g->list; c = c->next) {
        if (c == newcomer || c->answering || (peer && !same_peer(&c->peer, peer)))
            continue;
        close_conn(g, c);
        return true;
    }
    return false;
}

static void make_room(ac__http_guard *g, const guarded_conn *newcomer)
{
    if (count_peer(g, &newcomer->peer) > g->limits.max_per_address &&
        close_stalest(g, newcomer, &newcomer->peer))
        return;
    if (g->open > g->limits.max_connections)
        (void)close_stalest(g, newcomer, NULL);
}

/* ---- the deadline thread ---------------------------------------------- */

/* Close the waiting connections past their deadline. The next deadline,
 * or UINT64_MAX when nothing waits. Call with the lock held. */
static uint64_t close_overdue(ac__http_guard *g, uint64_t now)
{
    uint64_t timeout_ns = g->limits.request_timeout_ms * 1000000ull;
    for (guarded_conn *c = g->list.next, *next; c != &g->list; c = next) {
        next = c->next;
        if (c->answering)
            continue;
        if (c->waiting_since_ns + timeout_ns > now)
            return c->waiting_since_ns + timeout_ns; /* the rest waited less */
        close_conn(g, c);
    }
    return UINT64_MAX;
}

static void wait_until(ac__http_guard *g, uint64_t ns)
{
    struct timespec ts = {.tv_sec = (time_t)(ns / 1000000000ull),
                          .tv_nsec = (long)(ns % 1000000000ull)};
    pthread_cond_timedwait(&g->wake, &g->lock, &ts);
}

static void *deadline_main(void *arg)
{
    ac__http_guard *g = arg;
    ac__thread_name("ac-http-guard");
    pthread_mutex_lock(&g->lock);
    while (!g->stop) {
        uint64_t next = close_overdue(g, now_ns());
        g->idle = next == UINT64_MAX;
        if (g->idle)
            pthread_cond_wait(&g->wake, &g->lock);
        else
            wait_until(g, next);
    }
    pthread_mutex_unlock(&g->lock);
    return NULL;
}

/* ---- life ------------------------------------------------------------- */

/* A pthread init's result as a status, recorded: the guard's constructor
 * unwinds what it made instead of locking an uninitialised mutex. */
static ac_status init_status(int rc, const char *what)
{
    if (rc == 0)
        return AC_OK;
    if (rc == ENOMEM)
        return ac_set_error(AC_ENOMEM, "ac_metrics_serve: out of memory for %s", what);
    return ac_set_error(AC_ESYS, "ac_metrics_serve: cannot initialise %s: %s", what,
                        strerror(rc));
}

/* On CLOCK_MONOTONIC, the clock of now_ns. */
static int cond_init_monotonic(pthread_cond_t *c)
{
    pthread_condattr_t attr;
    int rc = pthread_condattr_init(&attr);
    if (rc != 0)
        return rc;
    pthread_condattr_setclock(&attr, CLOCK_MONOTONIC);
    rc = pthread_cond_init(c, &attr);
    pthread_condattr_destroy(&attr);
    return rc;
}

ac_status ac__http_guard_create(const ac__http_limits *limits, ac__http_guard **out)
{
    *out = NULL;
    ac_status st;
    ac__http_guard *g = calloc(1, sizeof *g);
    if (!g)
        return ac_set_error(AC_ENOMEM, "ac_metrics_serve: out of memory");
    g->limits = *limits;
    g->list.prev = g->list.next = &g->list;
    if ((st = init_status(pthread_mutex_init(&g->lock, NULL), "the HTTP guard's lock")) != AC_OK)
        goto fail_lock;
    if ((st = init_status(cond_init_monotonic(&g->wake), "the HTTP guard's condition")) != AC_OK)
        goto fail_cond;
    int rc = pthread_create(&g->thread, NULL, deadline_main, g);
    if (rc == 0) {
        *out = g;
        return AC_OK;
    }
    st = ac_set_error(AC_ESYS, "ac_metrics_serve: cannot start a thread: %s", strerror(rc));
    pthread_cond_destroy(&g->wake);
fail_cond:
    pthread_mutex_destroy(&g->lock);
fail_lock:
    free(g);
    return st;
}

void ac__http_guard_destroy(ac__http_guard *g)
{
    pthread_mutex_lock(&g->lock);
    g->stop = true;
    pthread_cond_signal(&g->wake);
    pthread_mutex_unlock(&g->lock);
    pthread_join(g->thread, NULL);
    pthread_cond_destroy(&g->wake);
    pthread_mutex_destroy(&g->lock);
    free(g);
}

/* ---- the daemon's callbacks ------------------------------------------- */

static void read_peer(struct MHD_Connection *conn, peer_addr *out)
{
    memset(out, 0, sizeof *out);
    const union MHD_ConnectionInfo *info =
        MHD_get_connection_info(conn, MHD_CONNECTION_INFO_CLIENT_ADDRESS);
    const struct sockaddr *sa = info ? info->client_addr : NULL;
    if (!sa)
        return;
    out->family = sa->sa_family;
    if (sa->sa_family == AF_INET)
        memcpy(out->bytes, &((const struct sockaddr_in *)(const void *)sa)->sin_addr, 4);
    else if (sa->sa_family == AF_INET6)
        memcpy(out->bytes, &((const struct sockaddr_in6 *)(const void *)sa)->sin6_addr, 16);
}

static MHD_socket socket_of(struct MHD_Connection *conn)
{
    const union MHD_ConnectionInfo *info =
        MHD_get_connection_info(conn, MHD_CONNECTION_INFO_CONNECTION_FD);
    return info ? info->connect_fd : MHD_INVALID_SOCKET;
}

static void on_started(ac__http_guard *g, struct MHD_Connection *conn, void **socket_context)
{
    MHD_socket fd = socket_of(conn);
    guarded_conn *c = calloc(1, sizeof *c);
    if (!c) {
        /* Unguarded, it could outstay every deadline: turn it away. */
        if (fd != MHD_INVALID_SOCKET)
            (void)shutdown(fd, SHUT_RDWR);
        return;
    }
    c->fd = fd;
    read_peer(conn, &c->peer);
    *socket_context = c;
    pthread_mutex_lock(&g->lock);
    start_waiting(g, c);
    make_room(g, c);
    pthread_mutex_unlock(&g->lock);
}

static void on_closed(ac__http_guard *g, void **socket_context)
{
    guarded_conn *c = *socket_context;
    if (!c)
        return;
    pthread_mutex_lock(&g->lock);
    if (!c->closing)
        unlink_conn(g, c);
    pthread_mutex_unlock(&g->lock);
    *socket_context = NULL;
    free(c);
}

void ac__http_guard_on_connection(void *cls, struct MHD_Connection *conn,
                                  void **socket_context,
                                  enum MHD_ConnectionNotificationCode code)
{
    if (code == MHD_CONNECTION_NOTIFY_STARTED)
        on_started(cls, conn, socket_context);
    else if (code == MHD_CONNECTION_NOTIFY_CLOSED)
        on_closed(cls, socket_context);
}

static guarded_conn *guarded(struct MHD_Connection *conn)
{
    const union MHD_ConnectionInfo *info =
        MHD_get_connection_info(conn, MHD_CONNECTION_INFO_SOCKET_CONTEXT);
    return info ? info->socket_context : NULL;
}

void ac__http_guard_on_request(ac__http_guard *g, struct MHD_Connection *conn)
{
    guarded_conn *c = guarded(conn);
    if (!c)
        return;
    pthread_mutex_lock(&g->lock);
    c->answering = true;
    pthread_mutex_unlock(&g->lock);
}

void ac__http_guard_on_completed(void *cls, struct MHD_Connection *conn, void **request_context,
                                 enum MHD_RequestTerminationCode toe)
{
    ac__http_guard *g = cls;
    (void)request_context;
    (void)toe;
    guarded_conn *c = guarded(conn);
    if (!c)
        return;
    pthread_mutex_lock(&g->lock);
    if (!c->closing) { /* kept alive: the wait for the next request begins */
        unlink_conn(g, c);
        start_waiting(g, c);
    }
    pthread_mutex_unlock(&g->lock);
}
