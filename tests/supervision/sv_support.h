/*
 * Shared actors for the supervision tests.
 *
 * A test describes a tree of nodes (name, actor definition, optional
 * supervisor strategy, children) in an sv_world and spawns its top. Every
 * node runs the same handlers, which write their lifecycle to the world's
 * recorder as "<name> <event>" lines:
 *
 *   "<name> init zeroed"              init found the state all zero ("dirty" if not)
 *   "<name> pre_start"                (pre_start also spawns the node's children)
 *   "<name> post_stop"
 *   "<name> pre_restart <cause> [<failed message or none>]"
 *   "<name> post_restart <cause>"     (also spawns the node's children)
 *   "<name> recv <n>"                 for "inc": the n-th since the state was initialised
 *   "<name> saw fail <Error>"         before failing on "fail <Error>" or "block_fail <Error>"
 *
 * Commands are string messages:
 *   "inc"                  count in the state
 *   "fail <Error>"         ac_fail with an error named <Error>, message "<name> failed on purpose"
 *   "block_fail <Error>"   wait on the world's gate, then fail as above
 *   "seq <i>"              append i (and the node's incarnation) to the world's sequence log
 *   "probe_children"       record "<name> child <c> new|first|missing|..." per child node
 *   "children"             record "<name> children <count>"
 *   "bad_fail"             call ac_fail with NULL arguments, record the statuses
 *   "fail_twice <A> <B>"   ac_fail twice in one handler
 *   "watch"                (watcher def) watch the world's watch_target
 *
 * Watchers (sv_watcher_def) record "<name> terminated <target name>",
 * "<name> note <text>" for a string "note <text>" and, when subscribed to
 * dead letters, "<name> dead letter <recipient> [<msg>]".
 *
 * Refs the parents get when spawning are kept (retained) per node, every
 * incarnation in order, so that the test can tell children directly and
 * compare old and new refs; sv_world_release_refs drops them before the
 * system is terminated.
 */
#ifndef ACTORC_SV_SUPPORT_H
#define ACTORC_SV_SUPPORT_H

#include "ts_test.h"

#define SV_MAX_NODES 16
#define SV_MAX_KIDS 4
#define SV_MAX_REFS 32
#define SV_SEQ_MAX 8192
#define SV_MAX_EVENTS 256

typedef struct sv_world sv_world;

typedef struct sv_node {
    sv_world *w;
    const char *name;
    const ac_actor_def *def;
    bool has_strategy;
    ac_supervisor_strategy strategy;
    struct sv_node *kids[SV_MAX_KIDS];
    int nkids;
    /* Every ref spawned under this node's name, oldest first. */
    ac_ref *refs[SV_MAX_REFS];
    atomic_int nrefs;
    atomic_llong inits;       /* incarnations so far */
    atomic_llong dl_at_post_stop; /* dead letters counted when post_stop last ran */
} sv_node;

struct sv_world {
    ac_system *sys;
    ts_recorder *rec;
    ts_log_capture *log;
    sv_node nodes[SV_MAX_NODES];
    int nnodes;
    ts_gate gate;      /* "block_fail" waits on it */
    ts_gate hook_gate; /* hooks marked below wait on it */
    atomic_int block_pre_restart;  /* > 0: the next pre_restart blocks (once) */
    atomic_int block_post_restart; /* > 0: the next post_restart blocks (once) */
    atomic_int block_post_stop;    /* > 0: the next post_stop of ... blocks (once) */
    const char *block_post_stop_name; /* ... the node of this name */
    /* The post_stop of the node named note_post_stop_name tells note_to
     * "note post_stop <name>" (a watcher records it): in the watcher's
     * mailbox it lands before or after the Terminated, as it was sent. */
    const char *note_post_stop_name;
    ac_ref *note_to;
    const char *pre_start_fail_name; /* the node whose pre_start fails ... */
    atomic_int pre_start_failures;   /* ... this many more times (-1: always) */
    ac_ref *watch_target;            /* for the watcher's "watch" */
    /* "seq" log: written by one actor, published through nseq. */
    int64_t seq[SV_SEQ_MAX];
    int64_t seq_gen[SV_SEQ_MAX];
    atomic_llong nseq;
};

/* Definitions differing only in which restart hooks they give. */
extern const ac_actor_def sv_plain_def;    /* init, pre_start, receive, post_stop */
extern const ac_actor_def sv_full_def;     /* + pre_restart + post_restart */
extern const ac_actor_def sv_pre_only_def; /* + pre_restart */
extern const ac_actor_def sv_post_only_def; /* + post_restart */
extern const ac_actor_def sv_watcher_def;

/* Decider: "ResumeError" resume, "StopError" stop, "EscalateError"
 * escalate, anything else restart; records "<parent> decide <child>
 * <Error>: <message>". Its user is the supervising node. */
ac_directive sv_decide_by_name(const ac_error *cause, ac_ref *child, void *user);

/* A world owned by the fixture, with its system (manual clock optional). */
sv_world *sv_world_new(ts_fixture *fx, const char *sys_name, bool manual_clock);
/* Add a node; `strategy` NULL sets none; `parent` NULL makes it top level.
 * A strategy with sv_decide_by_name and no decider_user gets the node. */
sv_node *sv_node_add(sv_world *w, const char *name, const ac_actor_def *def,
                     const ac_supervisor_strategy *strategy, sv_node *parent);
/* Spawn a top-level node; the ref (borrowed) is also kept in node->refs. */
ac_ref *sv_spawn(sv_node *node);
/* The newest ref of a node (borrowed), NULL before its first spawn. */
ac_ref *sv_ref(sv_node *node);
/* The i-th ref of a node (borrowed). */
ac_ref *sv_ref_at(sv_node *node, int i);
/* Wait until the node was spawned at least n times; its newest ref. */
ac_ref *sv_wait_spawned(sv_node *node, int n);
void sv_world_release_refs(sv_world *w);

/* Send a string command (asserting AC_OK). */
void sv_tell(ac_ref *to, const char *fmt, ...) AC_PRINTF(2, 3);

/* Wait until `label` was recorded at least n times (fails the test when not). */
void sv_wait_event(sv_world *w, const char *label, size_t n);
/* Index of the n-th (1-based) occurrence of label, or -1. */
long sv_index_nth(sv_world *w, const char *label, size_t n);
/* The node's events (labels starting with "<name> ", prefix removed), in
 * order, must equal `expected` (NULL-terminated). */
void sv_assert_events(sv_world *w, const char *name, const char *const *expected);
/* Ask `node` for its child count ("children") until it answers n. */
void sv_wait_children(sv_world *w, sv_node *node, int n);
/* Count of lines "<name> <event>". */
size_t sv_count(sv_world *w, const char *name, const char *event);

#endif
