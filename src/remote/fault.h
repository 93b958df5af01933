/*
 * The fault layer (remote.h, "faults on links"): a transport that wraps
 * the one the bind URL chose and makes chosen links bad on purpose.
 *
 * Shape. transport_fault.c is a decorator: its ops call the inner
 * transport's, and its connections wrap the inner ones. What a node
 * sends passes through its `send`; what arrives is offered to it by the
 * node (ac__fault_in, from ac__node_frames_in) before dispatch. Frames
 * held by a delay or a rate wait in a per-link FIFO queue that the node's
 * loop releases (the layer's `drain`, its `wait` woken in time), so that
 * nothing blocks the loop and a link never reorders. fault_spec.c reads
 * rules written as text (options.faults, ACTORC_FAULTS).
 *
 * Threads. Rules change from any thread under the layer's lock, which
 * bumps a generation (release); the transport thread reads the
 * generation (acquire) and copies a link's rule when it moved. Queues,
 * connections and the random generator are the transport thread's.
 */
#ifndef AC_REMOTE_FAULT_H
#define AC_REMOTE_FAULT_H

#include "actorc/remote.h"
#include "remote/transport.h"

#define AC__FAULT_MAX_RULES 256

/* A rule: what the link to `peer` does each way (index 0 out, 1 in). */
typedef struct ac__fault_rule {
    char peer[256];
    unsigned dir; /* ac_link_direction: which of `f` it sets */
    ac_link_fault f;
} ac__fault_rule;

typedef struct ac__fault ac__fault;

extern const ac__transport_ops ac__transport_fault;

/* ---- fault_spec.c ---------------------------------------------------------- */

/* Rules written as text into a new array (the caller frees it). AC_OK, or
 * AC_EINVAL recorded naming `who`, the rule and the item. */
ac_status ac__fault_spec_parse(const char *who, const char *spec, ac__fault_rule **rules,
                               size_t *count);
/* Is f's every value in range? AC_EINVAL recorded naming `who`. */
ac_status ac__fault_check(const char *who, const ac_link_fault *f);
/* Is "<host>:<port>" what `peer` reads? */
bool ac__fault_peer_ok(const char *peer);
bool ac__fault_is_pass(const ac_link_fault *f);

/* ---- transport_fault.c ------------------------------------------------------ */

/* Set the rule of the link to `peer` (transport thread or not). */
ac_status ac__fault_set(ac__fault *f, const char *peer, unsigned dir, const ac_link_fault *lf);
/* A message arrived from the peer at `from` (NULL: one not known yet):
 * true when the layer took it (dropped, swallowed or held; a held one is
 * handed to ac__node_frames_deliver later). Transport thread. */
bool ac__fault_in(ac__fault *f, const char *from, const void *id, size_t id_len,
                  const uint8_t *buf, size_t len);

/* The node's dispatch of a message, past the fault layer (inbound.c). */
void ac__node_frames_deliver(ac_node *node, const void *id, size_t id_len, const uint8_t *buf,
                             size_t len);

#endif
