/*
 * The transport seam: how a node's frames reach other nodes. A transport
 * is an ops table chosen by the bind URL's scheme ("tcp://" is ZeroMQ,
 * transport_zmq.c; "tcp+direct://" is the node's own TCP sockets,
 * transport_tcp.c; "inproc://" is nodes of one process,
 * transport_inproc.c); the node above it (peers, the outgoing queue, the
 * handshake, dispatch, refs) never sees a socket.
 *
 * What a transport carries: messages of one or more encoded frames
 * (wire.h), each from a connection that names its dialler by a routing id
 * (the dialling node's incarnation, 8 bytes). A node dials one connection
 * per peer it sends to and sends only on it; it receives everything on
 * its bound endpoint. Liveness is watched on the dialled connections: a
 * transport reports one made, refused before it was made (nothing listens
 * there), or lost (dropped, silent, its handshake failed); the node
 * decides what that means for the peer.
 *
 * Threads. Every op but `check`, `start`, `wake` and `free` runs on the
 * node's transport thread, and so does every callback (`ac__node_*`
 * below): a callback may close connections, this one included, and lose
 * peers; a transport that walks its connections while it calls back
 * looks again afterwards. `wake` is called from any thread. `start` runs
 * on the caller of ac_node_start before the thread exists, `free` after
 * it has been joined (or when start failed midway).
 */
#ifndef AC_REMOTE_TRANSPORT_H
#define AC_REMOTE_TRANSPORT_H

#include <stdatomic.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "actorc/remote.h"

typedef struct ac__peer ac__peer;

/* A frame on its way out: queued by any thread, sent by the transport
 * thread in runs linked through `next`. */
typedef struct ac__out {
    _Atomic(struct ac__out *) next;
    ac__peer *peer; /* retained (the node's) */
    size_t len;
    size_t size; /* of the block (ac__alloc_small), this header included */
    uint8_t *buf; /* len bytes, behind the header */
} ac__out;

/* A transport's connection to one peer (its own struct; the node holds
 * the pointer in the peer while it is open). */
typedef struct ac__conn ac__conn;

/* What a transport is given at start. */
typedef struct ac__transport_start {
    ac_node *node;
    ac_system *system;
    const ac_node_options *given;   /* as the caller gave them (bind, advertise, curve) */
    const ac_node_options *options; /* the node's copy, defaults applied */
    uint64_t incarnation;           /* the routing id of what this node dials */
    /* The transport a wrapping one (the fault layer, fault.h) starts
     * beneath itself; NULL for others. */
    const struct ac__transport_ops *inner;
} ac__transport_start;

typedef enum ac__send_result {
    AC__SEND_OK,      /* taken */
    AC__SEND_FULL,    /* would block: the same frames again once writable */
    AC__SEND_DROPPED  /* refused for good (not counted as sent) */
} ac__send_result;

typedef struct ac__transport_ops {
    /* The scheme of the bind URLs it serves, without "://". */
    const char *scheme;
    /* Check the bind URL and the options only this transport reads:
     * AC_OK, or a failure recorded naming ac_node_start and the option. */
    ac_status (*check)(const ac_node_options *o);
    /* Bind. Its state in *state; the bound endpoint and the address
     * other nodes reach this one at (both allocated, the node's to free).
     * On failure the node calls `free` with what *state holds. */
    ac_status (*start)(const ac__transport_start *s, void **state, char **endpoint,
                       char **address);
    /* Open a connection to `address` for peer p (the callbacks name p).
     * NULL, or why it cannot be done (nothing opened). */
    const char *(*dial)(void *t, ac__peer *p, const char *address, ac__conn **conn);
    /* Send n frames (first and its n - 1 followers through `next`,
     * `bytes` in all) as one message. */
    ac__send_result (*send)(void *t, ac__conn *c, const ac__out *first, size_t n, size_t bytes);
    /* Send one frame that should leave even as the connection closes
     * right after (a LEAVE at stop). */
    void (*send_last)(void *t, ac__conn *c, const uint8_t *buf, size_t len);
    /* Close a connection (no callback follows). */
    void (*close)(void *t, ac__conn *c);
    /* Hand what arrived to ac__node_frames_in, at most `budget`
     * messages; returns how many. */
    size_t (*drain)(void *t, size_t budget);
    /* Does a message wait to be drained? (Cheap: called while spinning.) */
    bool (*readable)(void *t);
    /* Sleep until a message arrives, `wake` is called, a connection has
     * news or is writable again, or timeout_ms pass (0: look only); the
     * news goes to the callbacks before it returns. */
    void (*wait)(void *t, long timeout_ms);
    /* The news of one connection, handled now (before its peer is judged
     * late): as `wait` would. */
    void (*poll_conn)(void *t, ac__conn *c);
    /* The node's thread is ending, its LEAVEs sent and its connections
     * closed: take no more (optional). */
    void (*stop)(void *t);
    /* End a `wait`, or the next one. Any thread. */
    void (*wake)(void *t);
    /* Free the state (after the thread has ended; every connection is
     * closed). */
    void (*free)(void *t);
} ac__transport_ops;

/* The transport a bind URL names, or NULL (the failure recorded). */
const ac__transport_ops *ac__transport_for(const char *bind);

extern const ac__transport_ops ac__transport_zmq;
extern const ac__transport_ops ac__transport_inproc;
extern const ac__transport_ops ac__transport_tcp;

/* ---- callbacks up to the node (transport thread) ------------------------ */

/* A message of one or more frames from the connection whose routing id
 * is `id` (the dialler's incarnation; anything else is a stranger's). */
void ac__node_frames_in(ac_node *node, const void *id, size_t id_len, const uint8_t *buf,
                        size_t len);
/* p's connection was made. */
void ac__node_conn_made(ac_node *node, ac__peer *p);
/* p's connection was refused before it was made (nothing listens there
 * yet): the node closes it. */
void ac__node_conn_refused(ac_node *node, ac__peer *p);
/* p's connection was lost: why. The peer is lost with it. */
void ac__node_conn_lost(ac_node *node, ac__peer *p, const char *why);
/* p's connection takes frames again after AC__SEND_FULL. */
void ac__node_conn_writable(ac_node *node, ac__peer *p);
/* Input that is not a node's (counted as a decode error, logged at most
 * once a second). */
void ac__node_bad_input(ac_node *node, const char *what);
/* A peer whose address must not be dialled (a refused key ...): logged. */
void ac__node_warn(ac_node *node, const char *what);

#endif
