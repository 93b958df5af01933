/*
 * What the direct TCP transport's two files share (transport_tcp.c:
 * options, binding, the dialled connections, the wait; transport_tcp_in.c:
 * the listening side, accepted connections, their preface and framing).
 * Everything here is the transport thread's, but for the wake-up
 * descriptor.
 *
 * The wire (docs/remoting.md, "The direct TCP transport"). A dialler
 * opens with a preface of AC__TT_PREFACE bytes:
 *
 *     "ACTD"  version (1 byte)  0 0 0  ttl_ms (4, big-endian)  routing id (8)
 *
 * then sends records: a 4-byte big-endian length and that many bytes, one
 * message (the frames of one send, concatenated). A length of 0 is a
 * heartbeat: the listener answers it with 4 zero bytes on the same
 * connection, the only bytes that ever flow back. A listener that has
 * read nothing for twice ttl_ms (the dialler's heartbeat timeout) closes
 * the connection.
 */
#ifndef AC_REMOTE_TRANSPORT_TCP_H
#define AC_REMOTE_TRANSPORT_TCP_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <sys/socket.h>

#include "core/base.h"
#include "remote/transport.h"

#define AC__TT_MAGIC "ACTD"
#define AC__TT_VERSION 1
#define AC__TT_PREFACE 20
#define AC__TT_HEADER 4
/* Connections accepted that have not sent their preface, at once: beyond
 * it the oldest is closed. */
#define AC__TT_MAX_UNIDENTIFIED 64
/* Bytes a dialled connection holds that the kernel did not take: beyond
 * it (or max_queue messages) a send would block. */
#define AC__TT_MAX_OUT_BYTES (16u << 20)
/* A read buffer kept between messages (a bigger one, grown for one large
 * message, is given back once it is empty). */
#define AC__TT_READ_BUF 65536u

/* A byte buffer: data[off, len) still to use. */
typedef struct ac__tt_buf {
    uint8_t *data;
    size_t off, len, cap;
} ac__tt_buf;

/* A connection this node dialled (the node holds it in the peer). */
struct ac__conn {
    int fd;
    ac__peer *peer; /* the node's; alive while the connection is open */
    size_t index;   /* in tt->conns while open */
    bool connected; /* the kernel said so, and the node was told */
    bool blocked;   /* a send found it full: the node waits for room */
    bool want_out;  /* EPOLLOUT armed */
    bool closed;    /* closed during a wait: freed after it */
    bool refused_now; /* connect said ECONNREFUSED at once */
    size_t queued;  /* messages in `out` since it was last empty */
    ac__tt_buf out;
    int64_t last_rx_ns, last_ping_ns;
    struct ac__conn *dead_next;
};

/* A connection accepted on the listening socket. */
typedef struct ac__tt_in {
    int fd;
    bool identified; /* its preface came */
    bool ready;      /* in tt->ready: bytes to read or messages to hand on */
    bool closed;
    uint8_t id[8];   /* the dialler's routing id */
    int64_t accepted_ns, last_rx_ns, ttl_ns;
    ac__tt_buf in;
    size_t index; /* in tt->ins */
    struct ac__tt_in *dead_next;
} ac__tt_in;

typedef struct ac__tt {
    ac_node *node;
    const ac_node_options *o; /* the node's, defaults applied */
    uint64_t incarnation;
    int ep;     /* the wait: wake_fd, ep_in, dialled connections */
    int ep_in;  /* the listening socket and accepted connections */
    int wake_fd;
    int listen_fd;
    size_t max_msg; /* largest message taken or sent */
    /* Dialled connections. */
    ac__conn **conns;
    size_t conn_count, conn_cap;
    ac__conn *dead;
    int64_t next_timer_ns; /* the earliest heartbeat or deadline */
    /* Accepted connections; those with something to hand on. */
    ac__tt_in **ins;
    size_t in_count, in_cap, unidentified;
    ac__tt_in **ready;
    size_t ready_count, ready_cap;
    bool draining;               /* in ac__tt_in_drain */
    int64_t accept_paused_until; /* out of descriptors: not accepting till then */
    ac__tt_in *dead_in;
} ac__tt;

/* transport_tcp_in.c */
/* Take the listening socket's new connections and what arrived, handing
 * at most `budget` messages to the node; returns how many. */
size_t ac__tt_in_drain(ac__tt *t, size_t budget);
/* Is there something to hand on, or news on the listening side? */
bool ac__tt_in_readable(ac__tt *t);
/* Close accepted connections past their preface deadline or their
 * dialler's time to live; returns the next such deadline. */
int64_t ac__tt_in_timers(ac__tt *t, int64_t now);
/* Free what was closed since the last call. */
void ac__tt_in_free_dead(ac__tt *t);
/* Close every accepted connection (stop, free). */
void ac__tt_in_close_all(ac__tt *t);

/* transport_tcp_bind.c */
int64_t ac__tt_now_ns(void);
/* Make room for `more` bytes after len; false when out of memory. */
bool ac__tt_buf_reserve(ac__tt_buf *b, size_t more);
/* Split "host:port" (host may be [v6]): host into host (cap bytes, the
 * brackets dropped), the port's text. */
bool ac__tt_split_host_port(const char *s, char *host, size_t cap, const char **port);
/* A port number (or * when `wild`). */
bool ac__tt_port_ok(const char *port, bool wild);
/* The socket address of host:port; false when there is none. */
bool ac__tt_resolve(const char *host, const char *port, bool passive, struct sockaddr_storage *sa,
                    socklen_t *len);
/* The ops of transport.h that are not about connections. */
ac_status ac__tt_check(const ac_node_options *o);
ac_status ac__tt_start(const ac__transport_start *s, void **state, char **endpoint,
                       char **address);
void ac__tt_stop(void *state);
void ac__tt_free(void *state);
void ac__tt_wake(void *state);
/* Free the dialled connections closed since the last call. */
void ac__tt_free_dead(ac__tt *t);

static inline void ac__tt_put_be32(uint8_t *p, uint32_t v)
{
    p[0] = (uint8_t)(v >> 24), p[1] = (uint8_t)(v >> 16), p[2] = (uint8_t)(v >> 8), p[3] = (uint8_t)v;
}

#endif
