/*
 * What the ZeroMQ transport's two files share (transport_zmq.c: sockets,
 * connections, the poll; transport_zmq_curve.c: CURVE keys and their
 * admission through ZAP). Everything here is the transport thread's,
 * but for the wake-up descriptor.
 */
#ifndef AC_REMOTE_TRANSPORT_ZMQ_H
#define AC_REMOTE_TRANSPORT_ZMQ_H

#include <zmq.h>

#include "core/base.h"
#include "remote/transport.h"

/* One DEALER to a peer's ROUTER and the PAIR reading its monitor. */
struct ac__conn {
    void *dealer, *monitor;
    ac__peer *peer; /* the node's; alive while the connection is open */
    size_t index;   /* in zt->conns while open */
    bool connected; /* its monitor said so */
    bool blocked;   /* a send found it full: polled for room */
    bool closed;    /* closed during a poll: freed after it */
    struct ac__conn *dead_next;
};

typedef struct ac__zt {
    ac_node *node;
    ac_system *system;
    const ac_node_options *o; /* the node's, defaults applied */
    uint64_t incarnation;
    void *zctx, *router, *zap;
    int wake_fd;
    /* CURVE (transport_zmq_curve.c). */
    bool curve;
    char curve_public[41], curve_secret[41], curve_server_public[41], curve_server_secret[41];
    char **allowed;
    size_t allowed_count;
    /* Open connections, and the poll set made of them. */
    ac__conn **conns;
    size_t conn_count;
    zmq_pollitem_t *items;
    ac__conn **owners;
    ac__conn *dead;     /* closed, to be freed once no poll refers to them */
    uint64_t dials;     /* a name of its own for each DEALER's monitor */
} ac__zt;

static inline void ac__zt_set_int(void *s, int opt, int v) { zmq_setsockopt(s, opt, &v, sizeof v); }

/* transport_zmq_curve.c */
/* The CURVE options checked (AC_OK or the failure recorded). */
ac_status ac__zt_check_curve(const ac_node_options *o);
/* The keys copied from the caller's options (AC_ENOMEM recorded). */
ac_status ac__zt_copy_curve(ac__zt *t, const ac_node_curve *c);
/* The ROUTER made a CURVE server, the ZAP handler bound. */
ac_status ac__zt_start_curve(ac__zt *t);
/* A DEALER made a CURVE client. */
void ac__zt_dealer_curve(ac__zt *t, void *dealer);
/* Answer what waits on the ZAP socket. */
void ac__zt_drain_zap(ac__zt *t);
void ac__zt_free_curve(ac__zt *t);

#endif
