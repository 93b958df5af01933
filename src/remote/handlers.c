/*
 * What a frame does here (node_internal.h): a message delivered to a
 * local actor, a reply or an undeliverable settling an ask, a watch
 * another node holds on a local actor. Transport thread.
 *
 * The last-frame lookup cache (node->lookup_cache) remembers what the
 * last frame's names were found to mean: its type, its sender (an actor
 * of the peer it came from) and its target (a top-level actor here), so
 * that a stream from one peer, of one type, from one sender, to one actor
 * costs no lock and no lookup per frame.
 */
#include <stdio.h>
#include <string.h>

#include "remote/node_internal.h"

#define WATCH_PATH "/system/watch"

/* The ref a frame's sender stands for (the caller's reference), or NULL. */
static ac_ref *sender_ref(ac_node *node, ac__peer *from, const ac__wire_env *env)
{
    const ac__wire_sender *s = &env->sender;
    switch (s->kind) {
    case AC__WIRE_SENDER_LOCAL: {
        ac__rref *r = ac__rref_get(node, from, (const char *)s->path.ptr, s->path.len);
        return r ? &r->ref : NULL;
    }
    case AC__WIRE_SENDER_ACTOR:
    case AC__WIRE_SENDER_REPLY: {
        ac__peer *p = ac__peer_at(node, (const char *)s->address.ptr, s->address.len,
                              (const char *)s->system.ptr, s->system.len, true);
        if (!p)
            return NULL;
        ac_ref *ref = NULL;
        if (s->kind == AC__WIRE_SENDER_ACTOR) {
            if (p == node->self) {
                ref = ac__ext_lookup_top(node->system, (const char *)s->path.ptr, s->path.len);
            }
            if (!ref) {
                ac__rref *r = ac__rref_get(node, p, (const char *)s->path.ptr, s->path.len);
                ref = r ? &r->ref : NULL;
            }
        } else {
            ref = ac__rreply_new(node, p, s->corr);
        }
        ac__peer_release(p);
        return ref;
    }
    default:
        return NULL;
    }
}

/* ---- the last-frame lookup cache ------------------------------------------ */

static bool span_eq(ac__wire_span s, const char *text, size_t len)
{
    return s.len == len && memcmp(s.ptr, text, len) == 0;
}

static const ac_msg_type *type_cached(ac_node *node, ac__wire_span name)
{
    const ac_msg_type *t = node->lookup_cache.type;
    if (t && span_eq(name, t->name, strlen(t->name)))
        return t;
    t = ac__node_type_named(node, name.ptr, name.len);
    if (t)
        node->lookup_cache.type = t; /* types are never unregistered */
    return t;
}

/* A local sender (an actor on `from`): the last one again, borrowed from
 * the cache (*owned false), or looked up (retained, *owned true) and
 * remembered. Borrowing spares two atomic updates per frame of a line
 * the receiving actor's thread also writes. */
static ac_ref *sender_cached(ac_node *node, ac__peer *from, ac__wire_span path, bool *owned)
{
    if (node->lookup_cache.sender && node->lookup_cache.sender_peer == from &&
        span_eq(path, node->lookup_cache.sender_path, node->lookup_cache.sender_len)) {
        *owned = false;
        return node->lookup_cache.sender;
    }
    *owned = true;
    ac__rref *r = ac__rref_get(node, from, (const char *)path.ptr, path.len);
    if (r && path.len < sizeof node->lookup_cache.sender_path) {
        ac_ref_release(node->lookup_cache.sender);
        node->lookup_cache.sender = ac_ref_retain(&r->ref);
        node->lookup_cache.sender_peer = from;
        memcpy(node->lookup_cache.sender_path, path.ptr, path.len);
        node->lookup_cache.sender_len = path.len;
    }
    return r ? &r->ref : NULL;
}

/* Deliver to the local actor at path: the last top-level target again
 * while it lives, else by path (remembering a top-level one). */
static void deliver_cached(ac_node *node, ac__wire_span path, ac_msg *msg, ac_ref *sender)
{
    if (node->lookup_cache.target && span_eq(path, node->lookup_cache.target_path, node->lookup_cache.target_len) &&
        !ac__ext_ref_is_dead(node->lookup_cache.target)) {
        ac_tell(node->lookup_cache.target, msg, sender);
        return;
    }
    ac_ref *top = path.len < sizeof node->lookup_cache.target_path
                      ? ac__ext_lookup_top(node->system, (const char *)path.ptr, path.len)
                      : NULL;
    if (top) {
        ac_ref_release(node->lookup_cache.target);
        node->lookup_cache.target = top; /* the lookup's reference */
        memcpy(node->lookup_cache.target_path, path.ptr, path.len);
        node->lookup_cache.target_len = path.len;
        ac_tell(top, msg, sender);
        return;
    }
    (void)ac__ext_deliver_path(node->system, (const char *)path.ptr, path.len, msg, sender);
}

void ac__lookup_cache_forget(ac_node *node, const ac__peer *peer)
{
    if (!peer || node->lookup_cache.from == peer) {
        ac__peer_release(node->lookup_cache.from);
        node->lookup_cache.from = NULL;
        node->lookup_cache.id = 0;
    }
    if (!peer || node->lookup_cache.sender_peer == peer) {
        ac_ref_release(node->lookup_cache.sender);
        node->lookup_cache.sender = NULL;
        node->lookup_cache.sender_peer = NULL;
    }
    if (!peer) {
        ac_ref_release(node->lookup_cache.target);
        node->lookup_cache.target = NULL;
    }
}

/* A message frame (TELL, ASK) for a local actor. */
void ac__handle_message(ac_node *node, ac__peer *from, const ac__wire_env *env)
{
    char why[320];
    const ac_msg_type *type = type_cached(node, env->type_name);
    ac_msg *msg = NULL;
    const char *err = NULL;
    if (!type) {
        snprintf(why, sizeof why, "the message type \"%.*s\" is not known on node %s",
                 (int)(env->type_name.len > 200 ? 200 : env->type_name.len),
                 (const char *)env->type_name.ptr, node->address);
    } else if (!(msg = ac__wire_decode_payload(type, env->body.ptr, env->body.len,
                                               env->payload_size, &node->limits, &err))) {
        snprintf(why, sizeof why, "a %s could not be decoded on node %s: %s", type->name,
                 node->address, err ? err : "bad body");
        AC__NODE_COUNT(node, decode_errors, c_decode_errors, 1);
    }
    bool owned = true;
    ac_ref *sender = env->kind == AC__WIRE_ASK ? ac__rreply_new(node, from, env->corr)
                     : env->sender.kind == AC__WIRE_SENDER_LOCAL
                         ? sender_cached(node, from, env->sender.path, &owned)
                         : sender_ref(node, from, env);
    if (!msg) {
        /* The sender's reply target hears why; a plain tell is logged. */
        if (sender && sender->ops->undeliverable)
            sender->ops->undeliverable(sender, NULL, why);
        else
            ac__node_log_limited(node, &node->last_decode_log, "dropped a message from %s: %s", from->address, why);
    } else {
        deliver_cached(node, env->target_path, msg, sender);
    }
    if (owned)
        ac_ref_release(sender);
}

void ac__handle_reply(ac_node *node, ac__peer *from, const ac__wire_env *env)
{
    ac_ref *reply = ac__corr_take(node, env->corr);
    if (!reply)
        return; /* late or duplicate: silently, as locally */
    const ac_msg_type *type = ac__node_type_named(node, env->type_name.ptr, env->type_name.len);
    const char *err = NULL;
    ac_msg *msg = type ? ac__wire_decode_payload(type, env->body.ptr, env->body.len,
                                                 env->payload_size, &node->limits, &err)
                       : NULL;
    if (!msg) {
        char why[320];
        snprintf(why, sizeof why, "its reply (a %.*s) %s",
                 (int)(env->type_name.len > 200 ? 200 : env->type_name.len),
                 (const char *)env->type_name.ptr,
                 type ? "could not be decoded" : "is of a type not known here");
        if (type)
            AC__NODE_COUNT(node, decode_errors, c_decode_errors, 1);
        reply->ops->undeliverable(reply, NULL, why);
        ac_ref_release(reply);
        return;
    }
    ac_ref *sender = sender_ref(node, from, env);
    ac_tell(reply, msg, sender);
    ac_ref_release(sender);
    ac_ref_release(reply);
}

void ac__handle_undeliverable(ac_node *node, const ac__wire_env *env)
{
    ac_ref *reply = ac__corr_take(node, env->corr);
    if (!reply)
        return;
    char why[320];
    snprintf(why, sizeof why, "%.*s", (int)(env->body.len > 300 ? 300 : env->body.len),
             (const char *)env->body.ptr);
    reply->ops->undeliverable(reply, NULL, (env->flags & 1u) ? NULL : why);
    ac_ref_release(reply);
}

/* Watches other nodes hold on our actors: (target, watcher) pairs on the
 * peer, so that its loss ends them. */
void ac__handle_watch(ac_node *node, ac__peer *from, const ac__wire_env *env, bool on)
{
    ac_ref *target = ac__ext_lookup_top(node->system, (const char *)env->target_path.ptr,
                                        env->target_path.len);
    ac__rref *w = ac__rref_get(node, from, WATCH_PATH, strlen(WATCH_PATH));
    if (!w) {
        ac_ref_release(target);
        return;
    }
    if (!target) {
        if (on) { /* nothing there: Terminated at once, as for a stopped actor */
            ac__wire_env t = {.kind = AC__WIRE_TERMINATED, .target_path = ac__text_span(WATCH_PATH)};
            t.sender = (ac__wire_sender){.kind = AC__WIRE_SENDER_LOCAL, .path = env->target_path};
            (void)ac__node_send(node, from, &t);
        }
        ac_ref_release(&w->ref);
        return;
    }
    bool changed = false;
    pthread_mutex_lock(&node->lock);
    size_t i;
    for (i = 0; i < from->inbound_count; i++)
        if (from->inbound_watch[2 * i] == target)
            break;
    if (on && i == from->inbound_count) {
        if (from->inbound_count == from->inbound_cap) {
            size_t cap = from->inbound_cap ? from->inbound_cap * 2 : 8;
            ac_ref **t = ac__realloc(from->inbound_watch, 2 * cap * sizeof *t);
            if (!t)
                ac__oom_abort("a remote watch");
            from->inbound_watch = t;
            from->inbound_cap = cap;
        }
        from->inbound_watch[2 * i] = ac_ref_retain(target);
        from->inbound_watch[2 * i + 1] = ac_ref_retain(&w->ref);
        from->inbound_count++;
        changed = true;
    } else if (!on && i < from->inbound_count) {
        ac_ref_release(from->inbound_watch[2 * i]);
        ac_ref_release(from->inbound_watch[2 * i + 1]);
        from->inbound_count--;
        from->inbound_watch[2 * i] = from->inbound_watch[2 * from->inbound_count];
        from->inbound_watch[2 * i + 1] = from->inbound_watch[2 * from->inbound_count + 1];
        changed = true;
    }
    pthread_mutex_unlock(&node->lock);
    if (changed && on)
        ac__ext_watch_as(target, &w->ref);
    else if (changed)
        ac__ext_unwatch_as(target, &w->ref);
    ac_ref_release(target);
    ac_ref_release(&w->ref);
}
