/*
 * What the cluster layer sees of a node (node_internal.h): hooks told
 * when a peer's incarnation is up or lost and when a frame comes for a
 * "/system/..." path, a way to send such frames to an address, and a
 * way to fail the asks waiting on a peer the cluster has downed.
 *
 * The hooks live in one atomic pointer: set and cleared from any thread,
 * read by the transport thread at each call. Whoever sets them keeps the
 * struct alive until the node is freed, so a call that read the pointer
 * just before it was cleared still finds it whole.
 */
#include <string.h>

#include "remote/node_internal.h"

static ac__wire_span text_span(const char *s)
{
    return (ac__wire_span){(const uint8_t *)s, s ? strlen(s) : 0};
}

ac_status ac__node_hooks_set(ac_node *node, const ac__node_hooks *hooks)
{
    if (!node)
        return ac__fail(AC_EINVAL, "node hooks: node is NULL");
    if (!hooks) {
        /* Release: pairs with the transport's acquire load. */
        atomic_store_explicit(&node->hooks, NULL, memory_order_release);
        return AC_OK;
    }
    const ac__node_hooks *none = NULL;
    if (!atomic_compare_exchange_strong_explicit(&node->hooks, &none, hooks,
                                                 memory_order_acq_rel, memory_order_acquire))
        return ac__fail(AC_EEXIST, "node %s already serves a cluster", node->address);
    return AC_OK;
}

size_t ac__node_fail_asks(ac_node *node, uint64_t incarnation, const char *why)
{
    ac__peer *peer = node && incarnation ? ac__peer_by_inc(node, incarnation) : NULL;
    if (!peer)
        return 0;
    ac_error *err = ac__node_down_error(peer, why);
    size_t n = ac__corr_fail_peer(node, peer, err);
    ac_error_release(err);
    ac__peer_release(peer);
    return n;
}

int ac__node_heartbeat_timeout_ms(const ac_node *node)
{
    return node ? node->options.heartbeat_timeout_ms : 0;
}

bool ac__node_stopping(ac_node *node)
{
    return !node || atomic_load_explicit(&node->stopping, memory_order_acquire);
}

ac_status ac__node_tell_system(ac_node *node, const char *address, uint64_t incarnation,
                               const char *path, const char *type_name, const uint8_t *body,
                               size_t len)
{
    if (!node || !address || !path || !type_name || (!body && len))
        return ac__fail(AC_EINVAL, "tell system: an argument is NULL");
    size_t alen = strlen(address);
    if (alen == 0 || alen > 255 || strncmp(path, AC__NODE_SYSTEM_PREFIX,
                                           strlen(AC__NODE_SYSTEM_PREFIX)) != 0)
        return ac__fail(AC_EINVAL, "tell system: bad address or path");
    if (strcmp(address, node->address) == 0)
        return ac__fail(AC_EINVAL, "tell system: %s is this node", address);
    ac__peer *peer = ac__peer_for(node, address, alen, NULL, 0);
    if (!peer)
        return ac__fail(AC_ENODEDOWN, "this node is stopping");
    ac__wire_env env = {.kind = AC__WIRE_TELL, .target_inc = incarnation};
    env.target_path = text_span(path);
    env.sender.kind = AC__WIRE_SENDER_NONE;
    env.type_name = text_span(type_name);
    env.payload_size = len;
    env.body = (ac__wire_span){body, len};
    ac_status st = ac__node_send(node, peer, &env);
    ac__peer_release(peer);
    return st;
}

/* ---- the call sites (transport thread) ---------------------------------- */

static const ac__node_hooks *hooks_of(ac_node *node)
{
    /* Acquire: pairs with ac__node_hooks_set's release. */
    return atomic_load_explicit(&node->hooks, memory_order_acquire);
}

/* The peer's system and incarnation are written on this thread (its
 * hello) or before it was published, so they are read without the lock. */
static ac__node_peer_info info_of(const ac__peer *p)
{
    return (ac__node_peer_info){.system = p->system ? p->system : "",
                                .address = p->address,
                                .incarnation = p->incarnation};
}

void ac__node_hook_up(ac_node *node, const ac__peer *peer, const ac__wire_env *hello)
{
    const ac__node_hooks *h = hooks_of(node);
    if (!h || !h->peer_up)
        return;
    ac__node_peer_info info = info_of(peer);
    info.hello_type = hello->type_name;
    info.hello_body = hello->body;
    h->peer_up(h->ctx, &info);
}

void ac__node_hook_down(ac_node *node, const ac__peer *peer, const char *why)
{
    const ac__node_hooks *h = hooks_of(node);
    if (!h || !h->peer_down)
        return;
    ac__node_peer_info info = info_of(peer);
    h->peer_down(h->ctx, &info, why);
}

bool ac__node_hook_system_tell(ac_node *node, const ac__peer *from, const ac__wire_env *env)
{
    size_t n = strlen(AC__NODE_SYSTEM_PREFIX);
    if (env->target_path.len < n || memcmp(env->target_path.ptr, AC__NODE_SYSTEM_PREFIX, n) != 0)
        return false;
    const ac__node_hooks *h = hooks_of(node);
    if (h && h->system_tell && from && from != node->self) {
        ac__node_peer_info info = info_of(from);
        h->system_tell(h->ctx, &info, env->target_path, env->type_name, env->body);
    }
    return true; /* no actor lives there: handled or dropped */
}
