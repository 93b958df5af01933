/*
 * Remoting: actor systems in different processes, on different hosts,
 * talk over ZeroMQ with CBOR frames. In the optional library actorc_remote
 * (CMake: find_package(actorc COMPONENTS remote), actorc::actorc_remote;
 * pkg-config: actorc-remote).
 *
 * A system joins the network by starting a node on it:
 *
 *     ac_node_options o = {.bind = "tcp://127.0.0.1:7001"};
 *     ac_node *node = ac_node_start(system, &o);
 *     ac_ref *r = ac_node_resolve(node, "actorc://replicas@127.0.0.1:7002/user/replica");
 *     ac_ask_wait(r, ac_msg_str_new("hello"), 1000, &answer);
 *
 * A node is (system name, address, incarnation): the incarnation is a
 * random 64-bit number chosen at start, so a process restarted on the same
 * port is a different node, and refs to the old one never reach the new
 * one. Remote actors' paths read actorc://<system>@<host>:<port>/user/...;
 * local paths keep their form, actorc://<system>/user/....
 *
 * A remote ref behaves like any ref: ac_tell, ac_forward, ac_ask_wait,
 * ac_ask, ac_ask_in, ac_watch, ac_reply to it, routers hold it as a
 * routee. Senders travel: the receiving actor sees a sender it can reply
 * to, forward with or keep, and an ask's reply comes from the replying
 * actor's own remote ref. What crosses the wire is what has a codec: the
 * built-in String, Bytes, Int64 and Error messages, and a type whose
 * descriptor has encode and decode hooks (msg.h); types are matched by
 * name, so the receiving node registers them (ac_node_register_type). A
 * send of a type without a codec to a remote ref fails (AC_ECODEC) and the
 * message becomes a dead letter.
 *
 * Failure: when the connection to a node's incarnation is lost (it
 * dropped: the process died; its heartbeats stopped: it hangs; or a new
 * incarnation of it said hello), every ask still waiting for that node
 * fails at once with a NodeDownError, every watch of its actors delivers
 * Terminated flagged node-lost (ac_terminated_node_lost), and its refs
 * become dead: what is sent to them is a dead letter. A later
 * ac_node_resolve of the same address connects afresh.
 *
 * Security: with CURVE keys (ac_node_options.curve) traffic is encrypted
 * and only the listed public keys are let in. Binding an address other
 * than loopback without keys is refused unless `insecure` says so.
 *
 * Threads: one transport thread per node owns its ZeroMQ sockets; sends
 * never block on the network (a peer that falls behind gets at most
 * `max_queue` frames queued, then sends to it are dead letters). All
 * functions may be called from any thread.
 */
#ifndef ACTORC_REMOTE_H
#define ACTORC_REMOTE_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "actorc/actor.h"
#include "actorc/export.h"
#include "actorc/msg.h"
#include "actorc/status.h"

#ifdef __cplusplus
extern "C" {
#endif

typedef struct ac_node ac_node;

/* CURVE keys, in ZeroMQ's Z85 form (40 characters for a 32-byte key).
 * Every node of a cluster serves with one shared server key pair and
 * connects with a key pair of its own; a node lets in only the client
 * public keys it lists (and its own), so a peer with an unknown key gets
 * nothing through. Make pairs with ac_node_curve_keypair (or the
 * `actorc-keygen` tool); keep secret keys in files only their owner can
 * read (ac_node_curve_read_key). */
typedef struct ac_node_curve {
    const char *server_public_key;
    const char *server_secret_key;
    const char *public_key; /* this node's own pair */
    const char *secret_key;
    /* Public keys of the nodes let in (besides this one). */
    const char *const *allowed;
    size_t allowed_count;
} ac_node_curve;

#define AC_NODE_DEFAULT_HEARTBEAT_IVL_MS 200
#define AC_NODE_DEFAULT_HEARTBEAT_TIMEOUT_MS 1000
#define AC_NODE_DEFAULT_CONNECT_TIMEOUT_MS 2000
#define AC_NODE_DEFAULT_MAX_FRAME (1u << 20)
#define AC_NODE_DEFAULT_MAX_QUEUE 100000
#define AC_NODE_DEFAULT_BACKLOG 1024
#define AC_NODE_DEFAULT_MAX_PEERS 4096
#define AC_NODE_DEFAULT_MAX_CONNECTIONS 512
#define AC_NODE_DEFAULT_NAMED_DIALS_PER_S 200
#define AC_NODE_MIN_IDLE_TIMEOUT_MS 100
#define AC_NODE_MAX_PEERS_LIMIT 1000000u
#define AC_NODE_MAX_CONNECTIONS_LIMIT 100000u

typedef struct ac_node_options {
    /* Where to bind; the scheme chooses the transport. "tcp://<ipv4>:<port>"
     * (ZeroMQ): port 0 (or "*") lets the OS choose (ac_node_address tells
     * which). "tcp+direct://<ipv4>:<port>": the same on the node's own TCP
     * sockets, without ZeroMQ and without encryption (no curve; a
     * non-loopback bind needs insecure); docs/remoting.md.
     * "inproc://<name>:<port>": nodes of this process only, at the
     * address "<name>:<port>"; port 0 takes a free number. Required. */
    const char *bind;
    /* "<host>:<port>" other nodes reach this one at; NULL: the bound
     * address. */
    const char *advertise;
    /* NULL: no encryption (loopback only, unless insecure). */
    const ac_node_curve *curve;
    /* Allow binding a non-loopback address without CURVE keys. */
    bool insecure;
    /* Heartbeats on every connection: a peer silent for timeout_ms is
     * lost. 0: the defaults (200 ms, 1,000 ms); negative refused. */
    int heartbeat_ivl_ms;
    int heartbeat_timeout_ms;
    /* A peer that has not said hello within connect_timeout_ms of the
     * first send to it is lost. 0: the default (2,000 ms). */
    int connect_timeout_ms;
    /* Largest frame sent or accepted, bytes; 0: the default (1 MiB). */
    size_t max_frame;
    /* Frames queued per peer before sends to it are dead letters; 0: the
     * default (100,000). */
    size_t max_queue;
    /* Connections waiting to be accepted (the listen queue, ZMQ_BACKLOG):
     * room for a cluster's burst of joins. 0: the default (1,024; the
     * kernel caps it at net.core.somaxconn); negative refused. */
    int backlog;
    /* Peers known at once: nodes this one talks to, and addresses named in
     * frames it received (a sender's). An entry that nothing refers to and
     * that has no connection is forgotten within 100 ms. At the cap, the
     * oldest such entry makes room; failing that, the oldest peer that never
     * said hello is lost (NodeDownError for what waited on it); when every
     * peer has said hello, a new address is refused (its sender is dropped,
     * a resolve fails). 0: the default (4,096). */
    size_t max_peers;
    /* Connections this node opens at once (one per peer it sends to; each
     * costs a TCP connection, two ZeroMQ sockets and three descriptors).
     * At the cap, the oldest connection still waiting for its peer's hello
     * is closed (that peer is lost) to make room; when every connection
     * has said hello, the new one is refused and its peer lost. 0: the
     * default, 512 or what the process's descriptor limit leaves room for
     * (a quarter of RLIMIT_NOFILE less 64), whichever is smaller, at
     * least 16. */
    size_t max_connections;
    /* Connections a second this node opens to addresses it knows only
     * because another node's frame named them (a sender on a third node,
     * to be answered) and that have not said hello. Beyond it such a peer
     * is lost at once (NodeDownError, what was sent a dead letter), so
     * that a stranger naming thousands of addresses cannot make this node
     * dial them all; and at most max_connections / 8 (8 at least) such
     * dials at once. Nodes this node resolves or that said hello are not
     * counted. 0: the default (200); negative refused. */
    int named_dials_per_s;
    /* Faults on this node's links, for trying a program on a bad network
     * (ac_node_link_fault): NULL, the layer is off (unless the process's
     * ACTORC_FAULTS environment variable holds a spec, read at start);
     * "", on with every link passing; else a spec of rules applied at
     * start (ac_node_faults_apply). A bad spec fails the start naming the
     * rule. Off costs nothing; on, a clean link costs a lookup a send. */
    const char *faults;
    /* Close a connection nothing has crossed, either way, for this long
     * (and that no ask waits on and no watch needs), so that a node of a
     * large cluster keeps open only the connections it uses: the peer
     * stays up, its next send opens a connection again (HELLO first,
     * frames in order after it), and heartbeats run only on open
     * connections. A peer that died meanwhile is lost at that send, when
     * its address refuses the connection or it does not answer within
     * connect_timeout_ms. 0: never (the default: a small cluster's full
     * mesh, as before); at least AC_NODE_MIN_IDLE_TIMEOUT_MS (100),
     * and well above the time a peer takes to read what it was sent;
     * negative refused. docs/scaling.md. */
    int idle_timeout_ms;
} ac_node_options;

/* Start a node on `system` (one per system). NULL with the last error on
 * bad options (naming the option), an endpoint that cannot be bound, a
 * non-loopback bind without keys or `insecure`, a system that has one, or
 * a terminating system. The node lives until ac_node_stop or the system's
 * termination. */
AC_API ac_node *ac_node_start(ac_system *system, const ac_node_options *options);
/* Stop the node: peers are told it leaves, its refs become dead, asks
 * waiting on other nodes fail with NodeDownError. The handle stays valid
 * (and stopped) until the system is terminated. */
AC_API ac_status ac_node_stop(ac_node *node);
/* The system's node, or NULL. */
AC_API ac_node *ac_system_node(ac_system *system);

/* "<host>:<port>" (the advertised address), its incarnation, and the
 * ZeroMQ endpoint actually bound. */
AC_API const char *ac_node_address(const ac_node *node);
AC_API uint64_t ac_node_incarnation(const ac_node *node);
AC_API const char *ac_node_endpoint(const ac_node *node);

/* A ref (the caller's reference) to the actor at `path`:
 * actorc://<system>@<host>:<port>/user/... for a remote actor (a path of
 * this node's own address resolves to the local actor), or a local path.
 * Resolving does not wait for the network: a remote ref is made at once,
 * and what is sent to it goes out when the peer answers (or fails with
 * NodeDownError when it does not). NULL with AC_EINVAL for a malformed
 * path, AC_ENOTFOUND for a local path with no actor. */
AC_API ac_ref *ac_node_resolve(ac_node *node, const char *path);

/* Let messages of `type` arrive (matched by type->name). The built-in
 * String, Bytes, Int64 and Error types are registered. AC_ECODEC for a
 * type without encode and decode hooks; AC_EEXIST for another type of
 * the same name. */
AC_API ac_status ac_node_register_type(ac_node *node, const ac_msg_type *type);

/* Is `ref` a remote ref? (User code never needs to ask; tests and tools
 * may.) */
AC_API bool ac_ref_is_remote(const ac_ref *ref);

/* A new CURVE key pair in Z85 (each buffer at least 41 bytes). AC_ESYS
 * when ZeroMQ has no CURVE. */
AC_API ac_status ac_node_curve_keypair(char public_key[41], char secret_key[41]);
/* Read a key (40 Z85 characters, then optional white space) from a file
 * into out (41 bytes, NUL-terminated). AC_ENOTFOUND for a file that cannot
 * be read, AC_EINVAL for one that holds no valid key. */
AC_API ac_status ac_node_curve_read_key(const char *file, char out[41]);

/* `count` ports on 127.0.0.1 that are free now, all different (each is
 * held bound until all are picked): for a seed list of local processes,
 * as in tests and demos. Another process may still take one before it is
 * bound. AC_EINVAL for NULL or count outside 1..AC_NODE_FREE_PORTS_MAX;
 * AC_ESYS when the OS has none to give. */
#define AC_NODE_FREE_PORTS_MAX 64
AC_API ac_status ac_node_free_ports(int *ports, size_t count);

/* What a node counts (also exported as metrics when they are on). */
typedef struct ac_node_stats {
    uint64_t frames_out, frames_in, bytes_out, bytes_in;
    uint64_t decode_errors;  /* malformed frames and bodies dropped */
    uint64_t nodes_down;     /* peers lost */
    uint64_t asks_failed_by_node_loss;
    uint64_t dropped_backpressure; /* sends refused: a peer fell behind */
    uint64_t dropped_stale;  /* frames from unknown or earlier incarnations */
    uint64_t pending_asks;   /* correlation entries now */
    uint64_t peers;          /* peers not lost, now */
    uint64_t connections;    /* connections this node has open, now */
    uint64_t peers_forgotten;      /* entries of addresses nothing referred to */
    uint64_t peers_evicted;        /* lost to make room in a full table, before a hello */
    uint64_t dials_refused;        /* named addresses not dialled: named_dials_per_s */
    uint64_t connections_evicted;  /* closed at max_connections, before a hello */
    uint64_t connections_refused;  /* not opened: max_connections said hello */
    /* The fault layer's (ac_node_link_fault), in both directions: frames
     * held by a delay or a rate, dropped (their share, or a full queue),
     * swallowed by a blackhole. */
    uint64_t fault_delayed, fault_dropped, fault_blackholed;
    uint64_t connections_idled;    /* closed after idle_timeout_ms with nothing crossing */
    /* Times the node's transport thread slept and woke again (for work, or
     * for a deadline: a connection late, idle or due for a look). An idle
     * node with nothing under way wakes about once a second. */
    uint64_t transport_wakeups;
} ac_node_stats;
AC_API ac_status ac_node_stats_get(ac_node *node, ac_node_stats *out);

/* ---- faults on links -------------------------------------------------------
 * A layer over the node's transport (on with ac_node_options.faults or the
 * ACTORC_FAULTS environment variable) that makes the link to a peer bad on
 * purpose, per direction: frames delayed (with jitter, never reordered: a
 * link keeps its order as TCP does), a share of them dropped, all of them
 * swallowed (a blackhole: no reset, as a dead switch; the peer is lost
 * once a heartbeat timeout has passed without anything crossing), or
 * throttled to a byte rate. Frames the layer drops are frames the protocol
 * survives: an ask whose request or reply was dropped fails at its
 * deadline, a peer behind a blackhole is lost and what waits on it fails
 * with NodeDownError; nothing hangs and nothing is answered twice. A
 * delayed or throttled link holds at most `max_queue_bytes`; what comes
 * beyond is dropped and counted. A peer is named by its address,
 * "<host>:<port>" as ac_node_address says it. */
typedef enum ac_link_direction {
    AC_LINK_OUT = 1,  /* frames this node sends to the peer */
    AC_LINK_IN = 2,   /* frames that arrive from the peer */
    AC_LINK_BOTH = 3
} ac_link_direction;

#define AC_LINK_DEFAULT_MAX_QUEUE_BYTES (16u << 20)

/* What a link does to frames; all zero: it passes them. */
typedef struct ac_link_fault {
    int64_t delay_us;  /* each frame held this long ... */
    int64_t jitter_us; /* ... give or take up to this (uniform), never reordered */
    double drop;       /* the share of frames dropped, 0 to 1 (arriving: of
                        * messages, each a batch of frames as the peer sent it) */
    bool blackhole;    /* every frame swallowed; the peer lost after a heartbeat timeout */
    uint64_t rate;     /* bytes a second at most (0: no limit) */
    size_t max_queue_bytes; /* held at most (0: AC_LINK_DEFAULT_MAX_QUEUE_BYTES) */
} ac_link_fault;

/* Set what the link to `peer` does in `direction` (NULL fault, or all
 * zero: pass, which heals it; frames held already still leave in order).
 * AC_EINVAL for NULL node or peer, an address not "<host>:<port>", a
 * direction or value out of range (negative times, drop outside 0..1),
 * or the node's own address; AC_ENOTFOUND for an address the node knows
 * no peer at (resolve a path there first; rules for peers not met yet
 * are given at start, in options.faults or ACTORC_FAULTS; a pass is
 * always taken); AC_ESTOPPED when the node runs without the fault layer
 * (options.faults NULL and no ACTORC_FAULTS). At most 256 links have
 * rules. Any thread. */
AC_API ac_status ac_node_link_fault(ac_node *node, const char *peer, ac_link_direction direction,
                                    const ac_link_fault *fault);
/* Apply rules written as text, as options.faults and ACTORC_FAULTS are:
 * rules separated by ';', each items separated by ',':
 *   peer=<host>:<port>        required
 *   dir=out|in|both           default both
 *   delay=20ms  jitter=5ms    (us, ms or s; a bare number is ms), or
 *   delay=20ms±5ms            (also written 20ms+-5ms)
 *   drop=1%  (or 0.01)   blackhole   pass   rate=1MB/s (B, kB, MB, GB a
 *   second; a bare number is bytes)   queue=16MB (max_queue_bytes)
 * e.g. "peer=127.0.0.1:5001,delay=20ms,jitter=5ms;peer=127.0.0.1:5002,drop=1%".
 * All rules are checked before any is applied: AC_EINVAL naming the rule
 * and item that is wrong. Otherwise as ac_node_link_fault. Any thread. */
AC_API ac_status ac_node_faults_apply(ac_node *node, const char *spec);
/* Read one link's items ("delay=20ms±5ms,drop=1%", or the shorthand
 * "20ms±5ms" or "1%" alone) into *out, without a peer: for programs that
 * take a fault from their own options. AC_EINVAL naming what is wrong.
 * Any thread. */
AC_API ac_status ac_node_link_fault_parse(const char *text, ac_link_fault *out);

#ifdef __cplusplus
}
#endif
#endif
