/*
 * Consistent hashing over a group: rendezvous (highest random weight)
 * hashing. For each message the key function gives a 64-bit key; each
 * routee weighs mix(hash(identity), key), and the heaviest takes the
 * message.
 *
 * Why rendezvous rather than a ring: with the handful of routees a group
 * has, n weights per message cost less than keeping a ring of virtual
 * nodes in step with the set, and the two properties wanted hold exactly,
 * not in expectation: a key's routee depends only on the routees' identities
 * (not on the order of the set, nor on when each joined), and removing a
 * routee moves only the keys it held, since every other routee's weight
 * for a key is unchanged.
 *
 * A routee's identity is what stays the same for "the same" routee: the
 * node address of a ref to another node's actor (so a restarted node, or
 * another node's router, maps keys as this one does), the path of a local
 * actor, and in a member group the key its driver gave.
 */
#include <string.h>

#include "core/last_error.h"
#include "routing/router_front.h"
#include "routing/router_internal.h"
#include "routing/router_view.h"

/* FNV-1a over the identity. */
static uint64_t hash_bytes(const char *s, size_t len)
{
    uint64_t h = 0xcbf29ce484222325ull;
    for (size_t i = 0; i < len; i++) {
        h ^= (unsigned char)s[i];
        h *= 0x100000001b3ull;
    }
    return h;
}

/* splitmix64's finaliser: every input bit moves every output bit. */
static uint64_t mix(uint64_t x)
{
    x ^= x >> 30;
    x *= 0xbf58476d1ce4e5b9ull;
    x ^= x >> 27;
    x *= 0x94d049bb133111ebull;
    x ^= x >> 31;
    return x;
}

/* "actorc://<system>@<host>:<port>/user/..." -> "<host>:<port>". */
static const char *node_address(const char *path, size_t *len)
{
    const char *at = strchr(path, '@');
    if (!at)
        return NULL;
    const char *slash = strchr(at + 1, '/');
    *len = slash ? (size_t)(slash - at - 1) : strlen(at + 1);
    return at + 1;
}

const char *ac__router_identity(const ac__router_state *st, size_t i, size_t *len)
{
    if (st->keys) {
        *len = strlen(st->keys[i]);
        return st->keys[i];
    }
    const char *path = ac_ref_path(st->routees[i]);
    const char *address =
        st->routees[i]->ops->kind == AC__REF_FOREIGN ? node_address(path, len) : NULL;
    if (address)
        return address;
    *len = strlen(path);
    return path;
}

uint64_t ac__router_identity_hash(const ac__router_state *st, size_t i)
{
    size_t len;
    const char *id = ac__router_identity(st, i, &len);
    return hash_bytes(id, len);
}

/* In the sender's thread (router_front.h), from the hashed identities. */
static bool send_hashing(ac__router_front *f, const ac__route_snap *s, ac__mailbox_node *node)
{
    uint64_t key = mix(f->hash_key(node->msg, f->hash_user));
    size_t best = 0;
    uint64_t best_weight = 0;
    for (size_t i = 0; i < s->n; i++) {
        uint64_t w = mix(s->ids[i] ^ key);
        if (i == 0 || w > best_weight) {
            best = i;
            best_weight = w;
        }
    }
    ac__route_to(s, best, node);
    return true;
}

static void route_hashing(ac_ctx *ctx, ac__router_cfg *cfg, ac__router_state *st, ac_msg *msg)
{
    uint64_t key = mix(cfg->hash_key(msg, cfg->hash_user));
    size_t best = 0;
    uint64_t best_weight = 0;
    for (size_t i = 0; i < st->n; i++) {
        size_t len;
        const char *id = ac__router_identity(st, i, &len);
        uint64_t w = mix(hash_bytes(id, len) ^ key);
        if (i == 0 || w > best_weight) {
            best = i;
            best_weight = w;
        }
    }
    ac__router_view_routed(cfg->view, st->routees[best]);
    ac_tell(st->routees[best], ac_msg_retain(msg), ac_sender(ctx));
}

const ac__router_kind ac__consistent_hashing_kind = {
    .name = "consistent-hashing", .route = route_hashing, .send = send_hashing, .snap_ids = true};

ac_props *ac_router_group_consistent_hashing(ac_ref *const *routees, size_t n,
                                             ac_hash_key_fn key_fn, void *user)
{
    ac__clear_status();
    static const char fn[] = "ac_router_group_consistent_hashing";
    if (!key_fn)
        return ac__fail_null(AC_EINVAL, "%s: key_fn is NULL", fn);
    ac__router_cfg *cfg = ac__router_group_cfg_new(fn, &ac__consistent_hashing_kind, routees, n);
    if (!cfg)
        return NULL;
    cfg->hash_key = key_fn;
    cfg->hash_user = user;
    return ac__router_props(cfg, NULL, fn);
}
