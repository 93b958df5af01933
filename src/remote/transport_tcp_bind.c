/*
 * The direct TCP transport's addresses, options and listening socket
 * (transport_tcp.h): the bind URL checked, the socket bound, the state
 * made and freed.
 *
 * URLs mirror the ZeroMQ transport's: tcp+direct://<host>:<port>, the
 * host an IPv4 address, a name, [v6] or * (every interface, which needs
 * options.advertise), the port a number or * (0 and * let the kernel
 * choose). The node's address is <host>:<port> as every address rule of
 * the remote and cluster layers expects: the bound one (numeric), or
 * options.advertise. There is no encryption: a non-loopback bind needs
 * options.insecure, and options.curve is refused.
 */
#include <arpa/inet.h>
#include <errno.h>
#include <netdb.h>
#include <netinet/in.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/epoll.h>
#include <sys/eventfd.h>
#include <sys/socket.h>
#include <time.h>
#include <unistd.h>

#include "core/alloc.h"
#include "remote/transport_tcp.h"
#include "remote/wire.h"

#define SCHEME "tcp+direct://"
#define SCHEME_LEN (sizeof SCHEME - 1)

int64_t ac__tt_now_ns(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (int64_t)ts.tv_sec * 1000000000ll + ts.tv_nsec;
}

bool ac__tt_buf_reserve(ac__tt_buf *b, size_t more)
{
    if (b->cap - b->len >= more)
        return true;
    if (b->off) { /* what was sent moved out first */
        memmove(b->data, b->data + b->off, b->len - b->off);
        b->len -= b->off;
        b->off = 0;
        if (b->cap - b->len >= more)
            return true;
    }
    size_t cap = b->cap ? b->cap : 4096;
    while (cap - b->len < more)
        cap *= 2;
    uint8_t *d = realloc(b->data, cap);
    if (!d)
        return false;
    b->data = d;
    b->cap = cap;
    return true;
}

/* ---- addresses, options ------------------------------------------------------ */

/* Split "host:port" (host may be [v6]): host into host (cap bytes, the
 * brackets dropped), port text. */
bool ac__tt_split_host_port(const char *s, char *host, size_t cap, const char **port)
{
    const char *colon = strrchr(s, ':');
    if (!colon || colon == s || !colon[1])
        return false;
    const char *h = s;
    size_t n = (size_t)(colon - s);
    if (h[0] == '[') {
        if (n < 3 || h[n - 1] != ']')
            return false;
        h++, n -= 2;
    }
    if (n >= cap)
        return false;
    memcpy(host, h, n);
    host[n] = '\0';
    *port = colon + 1;
    return true;
}

bool ac__tt_port_ok(const char *port, bool wild)
{
    if (wild && strcmp(port, "*") == 0)
        return true;
    char *end;
    errno = 0;
    long p = strtol(port, &end, 10);
    return !errno && !*end && *port >= '0' && *port <= '9' && p >= 0 && p <= 65535;
}

static bool loopback(const char *host)
{
    return strncmp(host, "127.", 4) == 0 || strcmp(host, "localhost") == 0 ||
           strcmp(host, "::1") == 0;
}

/* The socket address of host:port (numeric, else looked up: at bind, or
 * a dial of a name); false when there is none. */
bool ac__tt_resolve(const char *host, const char *port, bool passive, struct sockaddr_storage *sa,
                    socklen_t *len)
{
    /* IPv4 but for a v6 literal, as ZeroMQ without ZMQ_IPV6. */
    struct addrinfo hints = {.ai_family = strchr(host, ':') ? AF_INET6 : AF_INET, .ai_socktype = SOCK_STREAM,
                             .ai_flags = AI_NUMERICSERV | (passive ? AI_PASSIVE : 0)};
    struct addrinfo *res = NULL;
    if (strcmp(host, "*") == 0)
        host = "0.0.0.0";
    if (getaddrinfo(host, strcmp(port, "*") == 0 ? "0" : port, &hints, &res) != 0 || !res)
        return false;
    memcpy(sa, res->ai_addr, res->ai_addrlen);
    *len = res->ai_addrlen;
    freeaddrinfo(res);
    return true;
}

ac_status ac__tt_check(const ac_node_options *o)
{
    char host[256];
    const char *port;
    if (strncmp(o->bind, SCHEME, SCHEME_LEN) != 0 ||
        !ac__tt_split_host_port(o->bind + SCHEME_LEN, host, sizeof host, &port))
        return ac__fail(AC_EINVAL, "ac_node_start: options.bind \"%.200s\" is not "
                                   "tcp+direct://<host>:<port>", o->bind);
    if (!ac__tt_port_ok(port, true))
        return ac__fail(AC_EINVAL, "ac_node_start: options.bind \"%.200s\" has a bad port", o->bind);
    if (o->curve)
        return ac__fail(AC_EINVAL, "ac_node_start: options.curve is for tcp:// (ZeroMQ) nodes: "
                                   "the tcp+direct:// transport does not encrypt");
    bool wild = strcmp(host, "*") == 0 || strcmp(host, "0.0.0.0") == 0 || strcmp(host, "::") == 0;
    if (wild && !o->advertise)
        return ac__fail(AC_EINVAL, "ac_node_start: options.bind \"%.200s\" binds every "
                                   "interface: say which address others reach this node "
                                   "at in options.advertise", o->bind);
    if (!loopback(host) && !o->insecure)
        return ac__fail(AC_ESECURITY,
                        "ac_node_start: options.bind \"%.200s\" is not a loopback address and "
                        "the tcp+direct:// transport does not encrypt: traffic would be open to "
                        "the network. Set options.insecure to accept that, or use tcp:// with "
                        "CURVE keys", o->bind);
    char ah[256];
    const char *ap;
    if (o->advertise && (strlen(o->advertise) > 255 || strchr(o->advertise, '/') ||
                         strchr(o->advertise, '@') ||
                         !ac__tt_split_host_port(o->advertise, ah, sizeof ah, &ap) || !ac__tt_port_ok(ap, false)))
        return ac__fail(AC_EINVAL, "ac_node_start: options.advertise \"%.200s\" is not <host>:<port>",
                        o->advertise);
    return AC_OK;
}

/* ---- start, free ------------------------------------------------------------- */

static ac_status bind_listener(ac__tt *t, const ac_node_options *given, char **endpoint,
                               char **address)
{
    char host[256], text[INET6_ADDRSTRLEN], buf[320];
    const char *port;
    struct sockaddr_storage sa;
    socklen_t len = sizeof sa;
    ac__tt_split_host_port(given->bind + SCHEME_LEN, host, sizeof host, &port);
    if (!ac__tt_resolve(host, port, true, &sa, &len))
        return ac__fail(AC_ESYS, "ac_node_start: cannot bind %.200s: no such host", given->bind);
    t->listen_fd = socket(sa.ss_family, SOCK_STREAM | SOCK_NONBLOCK | SOCK_CLOEXEC, 0);
    int one = 1;
    if (t->listen_fd < 0 ||
        setsockopt(t->listen_fd, SOL_SOCKET, SO_REUSEADDR, &one, sizeof one) != 0 ||
        bind(t->listen_fd, (struct sockaddr *)&sa, len) != 0 ||
        listen(t->listen_fd, t->o->backlog) != 0 ||
        getsockname(t->listen_fd, (struct sockaddr *)&sa, &len) != 0)
        return ac__fail(AC_ESYS, "ac_node_start: cannot bind %.200s: %s", given->bind,
                        strerror(errno));
    bool v6 = sa.ss_family == AF_INET6;
    const void *in = v6 ? (const void *)&((struct sockaddr_in6 *)&sa)->sin6_addr
                        : (const void *)&((struct sockaddr_in *)&sa)->sin_addr;
    unsigned p = ntohs(v6 ? ((struct sockaddr_in6 *)&sa)->sin6_port
                          : ((struct sockaddr_in *)&sa)->sin_port);
    inet_ntop(sa.ss_family, in, text, sizeof text);
    snprintf(buf, sizeof buf, v6 ? SCHEME "[%s]:%u" : SCHEME "%s:%u", text, p);
    *endpoint = ac__strdup(buf);
    *address = ac__strdup(given->advertise ? given->advertise : buf + SCHEME_LEN);
    struct epoll_event ev = {.events = EPOLLIN, .data.ptr = NULL};
    if (epoll_ctl(t->ep_in, EPOLL_CTL_ADD, t->listen_fd, &ev) != 0)
        return ac__fail(AC_ESYS, "ac_node_start: %s", strerror(errno));
    if (!*endpoint || !*address)
        return ac__fail(AC_ENOMEM, "ac_node_start: out of memory");
    return AC_OK;
}

ac_status ac__tt_start(const ac__transport_start *s, void **state, char **endpoint,
                          char **address)
{
    ac__tt *t = ac__calloc(1, sizeof *t);
    if (!t)
        return ac__fail(AC_ENOMEM, "ac_node_start: out of memory");
    *state = t;
    t->node = s->node;
    t->o = s->options;
    t->incarnation = s->incarnation;
    t->ep = t->ep_in = t->wake_fd = t->listen_fd = -1;
    t->next_timer_ns = INT64_MAX;
    /* A message of several frames may be bigger than one frame may. */
    t->max_msg = t->o->max_frame > AC__WIRE_BATCH_MAX ? t->o->max_frame : AC__WIRE_BATCH_MAX;
    t->in_cap = t->o->max_peers + AC__TT_MAX_UNIDENTIFIED;
    t->ready_cap = t->in_cap;
    t->ins = ac__calloc(t->in_cap, sizeof *t->ins);
    t->ready = ac__calloc(t->ready_cap, sizeof *t->ready);
    if (!t->ins || !t->ready)
        return ac__fail(AC_ENOMEM, "ac_node_start: out of memory");
    t->wake_fd = eventfd(0, EFD_NONBLOCK | EFD_CLOEXEC);
    t->ep = epoll_create1(EPOLL_CLOEXEC);
    t->ep_in = epoll_create1(EPOLL_CLOEXEC);
    struct epoll_event wake = {.events = EPOLLIN, .data.ptr = &t->wake_fd};
    struct epoll_event in = {.events = EPOLLIN, .data.ptr = &t->ep_in};
    if (t->wake_fd < 0 || t->ep < 0 || t->ep_in < 0 ||
        epoll_ctl(t->ep, EPOLL_CTL_ADD, t->wake_fd, &wake) != 0 ||
        epoll_ctl(t->ep, EPOLL_CTL_ADD, t->ep_in, &in) != 0)
        return ac__fail(AC_ESYS, "ac_node_start: %s", strerror(errno));
    return bind_listener(t, s->given, endpoint, address);
}

void ac__tt_free_dead(ac__tt *t)
{
    while (t->dead) {
        ac__conn *c = t->dead;
        t->dead = c->dead_next;
        free(c->out.data);
        free(c);
    }
}

static void close_fd(int fd)
{
    if (fd >= 0)
        close(fd);
}

void ac__tt_stop(void *state)
{
    ac__tt *t = state;
    ac__tt_in_close_all(t);
    if (t->listen_fd >= 0) {
        epoll_ctl(t->ep_in, EPOLL_CTL_DEL, t->listen_fd, NULL);
        close(t->listen_fd);
        t->listen_fd = -1;
    }
}

void ac__tt_free(void *state)
{
    ac__tt *t = state;
    ac__tt_free_dead(t);
    ac__tt_stop(t);
    close_fd(t->ep);
    close_fd(t->ep_in);
    close_fd(t->wake_fd);
    free(t->conns);
    free(t->ins);
    free(t->ready);
    free(t);
}

void ac__tt_wake(void *state)
{
    ac__tt *t = state;
    uint64_t one = 1;
    ssize_t n = write(t->wake_fd, &one, sizeof one);
    (void)n; /* EAGAIN: the counter is full, so a wake is pending */
}
