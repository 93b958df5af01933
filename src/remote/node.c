/*
 * A node: the API (remote.h). Start checks the options, chooses the
 * transport by the bind URL's scheme (transport.h), binds and starts the
 * transport thread (node_loop.c); stop ends it, whoever comes first of
 * ac_node_stop and the system's terminate. Also here: the types a node
 * decodes, a sender as the wire names it, resolving a path, the stats.
 * The other parts of a node are listed in node_internal.h.
 */
#include <errno.h>
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/random.h>
#include <sys/resource.h>

#include "remote/fault.h"
#include "remote/node_internal.h"

#define PART_KEY "actorc.remote.node"

/* ---- types -------------------------------------------------------------- */

const ac_msg_type *ac__node_type_named(ac_node *node, const uint8_t *name, size_t len)
{
    const ac_msg_type *t = NULL;
    pthread_mutex_lock(&node->lock);
    for (size_t i = 0; i < node->type_count; i++)
        if (strlen(node->types[i]->name) == len && memcmp(node->types[i]->name, name, len) == 0) {
            t = node->types[i];
            break;
        }
    pthread_mutex_unlock(&node->lock);
    return t;
}

static ac_status add_type(ac_node *node, const ac_msg_type *type)
{
    ac_status st = AC_OK;
    pthread_mutex_lock(&node->lock);
    for (size_t i = 0; i < node->type_count; i++)
        if (strcmp(node->types[i]->name, type->name) == 0) {
            st = node->types[i] == type
                     ? AC_OK
                     : ac__fail(AC_EEXIST, "ac_node_register_type: another type is named \"%s\"",
                                type->name);
            pthread_mutex_unlock(&node->lock);
            return st;
        }
    if (node->type_count == node->type_cap) {
        size_t cap = node->type_cap ? node->type_cap * 2 : 16;
        const ac_msg_type **t = ac__realloc(node->types, cap * sizeof *t);
        if (!t) {
            pthread_mutex_unlock(&node->lock);
            return ac__fail(AC_ENOMEM, "ac_node_register_type: out of memory");
        }
        node->types = t;
        node->type_cap = cap;
    }
    node->types[node->type_count++] = type;
    pthread_mutex_unlock(&node->lock);
    return st;
}

ac_status ac_node_register_type(ac_node *node, const ac_msg_type *type)
{
    if (!node || !type || !type->name)
        return ac__fail(AC_EINVAL, "ac_node_register_type: %s is NULL",
                        !node ? "node" : !type ? "type" : "type->name");
    if (!ac__wire_has_codec(type))
        return ac__fail(AC_ECODEC,
                        "ac_node_register_type: %s has no wire codec (give it encode and decode "
                        "hooks)",
                        type->name);
    return add_type(node, type);
}

/* ---- a sender as the wire names it -------------------------------------- */

void ac__node_encode_sender(ac_node *node, ac_ref *sender, ac__wire_env *env)
{
    ac__peer *rp;
    uint64_t rc;
    env->sender = (ac__wire_sender){.kind = AC__WIRE_SENDER_NONE};
    if (!sender)
        return;
    if (sender->ops->kind == AC__REF_ACTOR) {
        env->sender.kind = AC__WIRE_SENDER_LOCAL;
        env->sender.path = ac__text_span(ac__local_part(ac_ref_path(sender)));
        return;
    }
    if (sender->ops == &ac__rref_ops) {
        const ac__rref *r = (const ac__rref *)sender;
        if (r->peer == node->self) {
            env->sender.kind = AC__WIRE_SENDER_LOCAL;
            env->sender.path = ac__text_span(r->path);
            return;
        }
        /* An actor of another node (perhaps the receiver's own). Its
         * system (set once, never freed before the peer) and incarnation
         * are the hello's, under the lock. */
        env->sender.kind = AC__WIRE_SENDER_ACTOR;
        pthread_mutex_lock(&node->lock);
        env->sender.system = ac__text_span(r->peer->system);
        env->sender.incarnation = r->peer->incarnation;
        pthread_mutex_unlock(&node->lock);
        env->sender.address = ac__text_span(r->peer->address);
        env->sender.path = ac__text_span(r->path);
        return;
    }
    if (ac__rreply_parts(sender, &rp, &rc)) {
        env->sender.kind = AC__WIRE_SENDER_REPLY;
        pthread_mutex_lock(&node->lock);
        env->sender.system = ac__text_span(rp->system);
        env->sender.incarnation = rp->incarnation;
        pthread_mutex_unlock(&node->lock);
        env->sender.address = ac__text_span(rp->address);
        env->sender.corr = rc;
        return;
    }
    /* A local one-shot reply target sent as the sender of a plain tell
     * (not an ask: that is encoded as ASK) has no name on the wire. */
}

/* ---- the API ------------------------------------------------------------ */

/* 512, or a quarter of what the descriptor limit leaves after 64 (a
 * connection takes three: its TCP socket and two ZeroMQ mailboxes). */
static size_t default_max_connections(void)
{
    struct rlimit r;
    size_t cap = AC_NODE_DEFAULT_MAX_CONNECTIONS;
    if (getrlimit(RLIMIT_NOFILE, &r) == 0 && r.rlim_cur != RLIM_INFINITY) {
        size_t room = r.rlim_cur > 128 ? (size_t)(r.rlim_cur - 64) / 4 : 16;
        if (room < cap)
            cap = room < 16 ? 16 : room;
    }
    return cap;
}

/* The options every transport reads; the bind URL's scheme chooses the
 * transport, which checks the rest. */
static ac_status check_options(const ac_node_options *o, const ac__transport_ops **tp)
{
    if (!o->bind)
        return ac__fail(AC_EINVAL, "ac_node_start: options.bind is NULL (e.g. \"tcp://127.0.0.1:0\")");
    if (!(*tp = ac__transport_for(o->bind)) || (*tp)->check(o) != AC_OK)
        return ac_last_status();
    if (o->heartbeat_ivl_ms < 0 || o->heartbeat_timeout_ms < 0 || o->connect_timeout_ms < 0 ||
        o->backlog < 0 || o->named_dials_per_s < 0 || o->idle_timeout_ms < 0)
        return ac__fail(AC_EINVAL, "ac_node_start: options.%s is negative",
                        o->heartbeat_ivl_ms < 0       ? "heartbeat_ivl_ms"
                        : o->heartbeat_timeout_ms < 0 ? "heartbeat_timeout_ms"
                        : o->connect_timeout_ms < 0   ? "connect_timeout_ms"
                        : o->backlog < 0              ? "backlog"
                        : o->idle_timeout_ms < 0      ? "idle_timeout_ms"
                                                      : "named_dials_per_s");
    if (o->idle_timeout_ms > 0 && o->idle_timeout_ms < AC_NODE_MIN_IDLE_TIMEOUT_MS)
        return ac__fail(AC_EINVAL,
                        "ac_node_start: options.idle_timeout_ms %d is under %d: a connection "
                        "closed sooner may still carry frames its peer has not read (0: never "
                        "close idle connections)",
                        o->idle_timeout_ms, AC_NODE_MIN_IDLE_TIMEOUT_MS);
    if (o->max_peers > AC_NODE_MAX_PEERS_LIMIT || o->max_connections > AC_NODE_MAX_CONNECTIONS_LIMIT)
        return ac__fail(AC_EINVAL, "ac_node_start: options.%s %zu is over %u",
                        o->max_peers > AC_NODE_MAX_PEERS_LIMIT ? "max_peers" : "max_connections",
                        o->max_peers > AC_NODE_MAX_PEERS_LIMIT ? o->max_peers : o->max_connections,
                        o->max_peers > AC_NODE_MAX_PEERS_LIMIT ? AC_NODE_MAX_PEERS_LIMIT
                                                               : AC_NODE_MAX_CONNECTIONS_LIMIT);
    if (o->max_frame > (size_t)INT32_MAX)
        return ac__fail(AC_EINVAL, "ac_node_start: options.max_frame %zu is over 2 GiB", o->max_frame);
    return AC_OK;
}

static void node_stop_part(void *ctx);
static void node_free_part(void *ctx);

static void node_free(ac_node *node)
{
    ac_observe_remove(node->observed);
    ac__outq_drop(node, true); /* the transport is gone */
    if (node->tstate)
        node->tp->free(node->tstate);
    /* What is left: the self peer, entries of asks nobody settled. */
    ac__corr_free_all(node);
    free(node->rrefs);
    for (ac__peer *p = atomic_load(&node->evicted), *next; p; p = next) {
        next = p->evict_next; /* evicted as the transport thread ended */
        ac__peer_release(p);
    }
    while (node->peers.newest) {
        ac__peer *p = node->peers.newest;
        ac__ptab_remove(&node->peers, p);
        ac__peer_release(p);
    }
    ac__ptab_free(&node->peers);
    free(node->conns);
    free(node->types);
    free(node->system_name);
    free(node->address);
    free(node->endpoint);
    pthread_mutex_destroy(&node->stop_lock);
    pthread_mutex_destroy(&node->lock);
    free(node);
}

ac_node *ac_node_start(ac_system *system, const ac_node_options *options)
{
    ac_clear_error();
    if (!system || !options)
        return ac__fail_null(AC_EINVAL, "ac_node_start: %s is NULL", system ? "options" : "system");
    const ac__transport_ops *tp = NULL;
    if (check_options(options, &tp) != AC_OK)
        return NULL;
    /* The fault layer: the option, else the process's environment. */
    const char *faults = options->faults ? options->faults : getenv("ACTORC_FAULTS");
    ac__fault_rule *rules = NULL;
    size_t rule_count = 0;
    if (faults && ac__fault_spec_parse(options->faults ? "ac_node_start: options.faults"
                                                       : "ac_node_start: ACTORC_FAULTS",
                                       faults, &rules, &rule_count) != AC_OK)
        return NULL;
    ac_node *node = ac__calloc(1, sizeof *node);
    if (!node) {
        free(rules);
        return ac__fail_null(AC_ENOMEM, "ac_node_start: out of memory");
    }
    node->tp = faults ? &ac__transport_fault : tp;
    pthread_mutex_init(&node->lock, NULL);
    pthread_mutex_init(&node->stop_lock, NULL);
    node->system = system;
    node->options = *options;
    ac_node_options *o = &node->options;
    o->bind = o->advertise = o->faults = NULL; /* not kept */
    o->curve = NULL;
    if (!o->heartbeat_ivl_ms)
        o->heartbeat_ivl_ms = AC_NODE_DEFAULT_HEARTBEAT_IVL_MS;
    if (!o->heartbeat_timeout_ms)
        o->heartbeat_timeout_ms = AC_NODE_DEFAULT_HEARTBEAT_TIMEOUT_MS;
    if (!o->connect_timeout_ms)
        o->connect_timeout_ms = AC_NODE_DEFAULT_CONNECT_TIMEOUT_MS;
    if (!o->max_frame)
        o->max_frame = AC_NODE_DEFAULT_MAX_FRAME;
    if (!o->max_queue)
        o->max_queue = AC_NODE_DEFAULT_MAX_QUEUE;
    if (!o->backlog)
        o->backlog = AC_NODE_DEFAULT_BACKLOG;
    if (!o->max_peers)
        o->max_peers = AC_NODE_DEFAULT_MAX_PEERS;
    if (!o->max_connections)
        o->max_connections = default_max_connections();
    if (!o->named_dials_per_s)
        o->named_dials_per_s = AC_NODE_DEFAULT_NAMED_DIALS_PER_S;
    node->dial_tokens = (double)o->named_dials_per_s;
    node->dial_refill_ns = ac__node_now_ns();
    node->conns = ac__calloc(o->max_connections, sizeof *node->conns);
    if (!node->conns)
        goto oom;
    node->limits = ac__wire_default_limits;
    node->limits.max_frame = o->max_frame;
    node->limits.max_body = o->max_frame;
    node->limits.max_payload = o->max_frame;
    atomic_init(&node->next_corr, 1);
    atomic_init(&node->out_head, &node->out_stub);
    node->out_tail = &node->out_stub;
    do {
        if (getrandom(&node->incarnation, sizeof node->incarnation, 0) != sizeof node->incarnation) {
            ac__fail(AC_ESYS, "ac_node_start: no random incarnation: %s", strerror(errno));
            goto fail;
        }
    } while (node->incarnation == 0);
    node->system_name = ac__strdup(ac_system_name(system));
    if (!node->system_name)
        goto oom;
    {
        ac__transport_start ts = {.node = node, .system = system, .given = options,
                                  .options = &node->options, .incarnation = node->incarnation,
                                  .inner = tp};
        if (node->tp->start(&ts, &node->tstate, &node->endpoint, &node->address) != AC_OK)
            goto fail;
    }
    if (faults) {
        node->fault = node->tstate;
        for (size_t i = 0; i < rule_count; i++)
            ac__fault_set(node->fault, rules[i].peer, rules[i].dir, &rules[i].f);
    }
    free(rules);
    rules = NULL;
    pthread_mutex_lock(&node->lock);
    node->self = ac__peer_new(node, node->address, strlen(node->address), node->system_name,
                              strlen(node->system_name), AC__PEER_UP);
    if (node->self)
        node->self->incarnation = node->incarnation;
    pthread_mutex_unlock(&node->lock);
    if (!node->self)
        goto oom;
    ac__node_metrics_register(node);
    static const ac_msg_type *const builtin[] = {&ac_msg_type_str, &ac_msg_type_bytes,
                                                 &ac_msg_type_int64, &ac_msg_type_error};
    for (size_t i = 0; i < sizeof builtin / sizeof builtin[0]; i++)
        if (add_type(node, builtin[i]) != AC_OK)
            goto fail;
    node->part = (ac__ext_part){.key = PART_KEY, .stop = node_stop_part, .free = node_free_part, .ctx = node};
    if (ac__ext_attach(system, &node->part) != AC_OK) {
        if (ac_last_status() == AC_EEXIST)
            ac__fail(AC_EEXIST, "ac_node_start: system %s already has a node", ac_system_name(system));
        goto fail;
    }
    int rc = pthread_create(&node->thread, NULL, ac__node_loop, node);
    if (rc != 0) {
        ac__ext_detach(system, &node->part);
        ac__fail(AC_ESYS, "ac_node_start: cannot start the transport thread: %s", strerror(rc));
        goto fail;
    }
    node->thread_started = true;
    ac__node_observe_start(node);
    ac_system_log(system, AC_LOG_INFO, "node %s up: actorc://%s@%s, incarnation %016" PRIx64,
                  node->endpoint, node->system_name, node->address, node->incarnation);
    return node;
oom:
    ac__fail(AC_ENOMEM, "ac_node_start: out of memory");
fail: {
    ac_status st = ac_last_status();
    char msg[512];
    snprintf(msg, sizeof msg, "%s", ac_last_error());
    free(rules);
    node_free(node);
    ac_set_error(st, "%s", msg);
    return NULL;
}
}

static void node_stop_part(void *ctx)
{
    ac_node *node = ctx;
    pthread_mutex_lock(&node->stop_lock);
    if (node->stopped) {
        pthread_mutex_unlock(&node->stop_lock);
        return;
    }
    atomic_store_explicit(&node->stopping, true, memory_order_release);
    node->tp->wake(node->tstate);
    if (node->thread_started)
        pthread_join(node->thread, NULL);
    node->stopped = true;
    pthread_mutex_unlock(&node->stop_lock);
    /* Frames queued after the transport's last look, and asks still open
     * (to itself, or queued too late): nothing will answer them now. */
    ac__outq_drop(node, true);
    ac_error *err = ac__node_down_error(node->self, "this node stopped");
    ac__corr_fail_peer(node, NULL, err);
    ac_error_release(err);
}

static void node_free_part(void *ctx) { node_free(ctx); }

ac_status ac_node_stop(ac_node *node)
{
    if (!node)
        return ac__fail(AC_EINVAL, "ac_node_stop: node is NULL");
    node_stop_part(node);
    return AC_OK;
}

ac_node *ac_system_node(ac_system *system) { return ac__ext_find(system, PART_KEY); }

const char *ac_node_address(const ac_node *node) { return node ? node->address : ""; }
uint64_t ac_node_incarnation(const ac_node *node) { return node ? node->incarnation : 0; }
const char *ac_node_endpoint(const ac_node *node) { return node ? node->endpoint : ""; }

ac_ref *ac_node_resolve(ac_node *node, const char *path)
{
    ac_clear_error();
    if (!node || !path)
        return ac__fail_null(AC_EINVAL, "ac_node_resolve: %s is NULL", node ? "path" : "node");
    if (strncmp(path, "actorc://", 9) != 0)
        return ac__fail_null(AC_EINVAL, "ac_node_resolve: \"%.200s\" is not an actorc:// path", path);
    const char *sys = path + 9;
    const char *slash = strchr(sys, '/');
    if (!slash)
        return ac__fail_null(AC_EINVAL, "ac_node_resolve: \"%.200s\" names no actor", path);
    const char *at = memchr(sys, '@', (size_t)(slash - sys));
    const char *local = slash;
    size_t local_len = strlen(local);
    if (local_len <= 6 || strncmp(local, "/user/", 6) != 0 || strstr(local, "//") ||
        local[local_len - 1] == '/')
        return ac__fail_null(AC_EINVAL, "ac_node_resolve: \"%.200s\" is not a path under /user", path);
    if (!at) { /* a local path: this system's */
        size_t n = (size_t)(slash - sys);
        if (n != strlen(node->system_name) || memcmp(sys, node->system_name, n) != 0)
            return ac__fail_null(AC_EINVAL, "ac_node_resolve: \"%.200s\" is not of system %s and "
                                            "names no node (actorc://<system>@<host>:<port>/...)",
                                 path, node->system_name);
        at = NULL;
    }
    const char *addr = at ? at + 1 : node->address;
    size_t addr_len = at ? (size_t)(slash - addr) : strlen(node->address);
    size_t sys_len = at ? (size_t)(at - sys) : (size_t)(slash - sys);
    const char *colon = memchr(addr, ':', addr_len);
    if (sys_len == 0 || sys_len > 64 || addr_len == 0 || addr_len > 255 || !colon ||
        colon == addr || colon == addr + addr_len - 1)
        return ac__fail_null(AC_EINVAL, "ac_node_resolve: \"%.200s\" is not "
                                        "actorc://<system>@<host>:<port>/user/...",
                             path);
    bool own = addr_len == strlen(node->address) && memcmp(addr, node->address, addr_len) == 0;
    if (own) {
        ac_ref *r = ac__ext_lookup_top(node->system, local, local_len);
        if (r)
            return r;
        if (!strchr(local + 6, '/'))
            return ac__fail_null(AC_ENOTFOUND, "ac_node_resolve: no actor at %.200s", path);
    }
    ac__peer *p = ac__peer_for(node, addr, addr_len, sys, sys_len);
    if (!p) {
        if (atomic_load_explicit(&node->stopping, memory_order_relaxed))
            return ac__fail_null(AC_ETERMINATED, "ac_node_resolve: node %s is stopping", node->address);
        ac_status st = ac_last_status();
        char why[320];
        snprintf(why, sizeof why, "%s", ac_last_error());
        return ac__fail_null(st, "ac_node_resolve: %s", why);
    }
    ac__rref *r = ac__rref_get(node, p, local, local_len);
    ac__peer_release(p);
    if (!r)
        return ac__fail_null(AC_ENOMEM, "ac_node_resolve: out of memory");
    if (!own)
        ac__node_wake(node); /* nothing to send yet; the connection comes with the first frame */
    return &r->ref;
}

ac_status ac_node_stats_get(ac_node *node, ac_node_stats *out)
{
    if (!node || !out)
        return ac__fail(AC_EINVAL, "ac_node_stats_get: %s is NULL", node ? "out" : "node");
    const ac__node_metrics *m = &node->m;
    *out = (ac_node_stats){
        .frames_out = atomic_load_explicit(&m->frames_out, memory_order_relaxed),
        .frames_in = atomic_load_explicit(&m->frames_in, memory_order_relaxed),
        .bytes_out = atomic_load_explicit(&m->bytes_out, memory_order_relaxed),
        .bytes_in = atomic_load_explicit(&m->bytes_in, memory_order_relaxed),
        .decode_errors = atomic_load_explicit(&m->decode_errors, memory_order_relaxed),
        .nodes_down = atomic_load_explicit(&m->node_down, memory_order_relaxed),
        .asks_failed_by_node_loss = atomic_load_explicit(&m->asks_failed_by_node_loss, memory_order_relaxed),
        .dropped_backpressure = atomic_load_explicit(&m->dropped_backpressure, memory_order_relaxed),
        .dropped_stale = atomic_load_explicit(&m->dropped_stale, memory_order_relaxed),
    };
    out->connections = atomic_load_explicit(&m->connections, memory_order_relaxed);
    out->peers_forgotten = atomic_load_explicit(&m->peers_forgotten, memory_order_relaxed);
    out->peers_evicted = atomic_load_explicit(&m->peers_evicted, memory_order_relaxed);
    out->dials_refused = atomic_load_explicit(&m->dials_refused, memory_order_relaxed);
    out->connections_evicted = atomic_load_explicit(&m->connections_evicted, memory_order_relaxed);
    out->connections_refused = atomic_load_explicit(&m->connections_refused, memory_order_relaxed);
    out->fault_delayed = atomic_load_explicit(&m->fault_delayed, memory_order_relaxed);
    out->fault_dropped = atomic_load_explicit(&m->fault_dropped, memory_order_relaxed);
    out->fault_blackholed = atomic_load_explicit(&m->fault_blackholed, memory_order_relaxed);
    out->connections_idled = atomic_load_explicit(&m->connections_idled, memory_order_relaxed);
    out->transport_wakeups = atomic_load_explicit(&m->transport_wakeups, memory_order_relaxed);
    pthread_mutex_lock(&node->lock);
    out->pending_asks = node->corr_count;
    out->peers = node->peers.count - (node->self ? 1 : 0);
    pthread_mutex_unlock(&node->lock);
    return AC_OK;
}
