/*
 * Reply targets of other nodes (node_internal.h): what the receiving
 * actor sees as the sender of an ASK. Its first deliver sends one REPLY
 * (the replier's own ref as the sender), its undeliverable one
 * UNDELIVERABLE; everything after is dropped silently, as a local reply
 * ref does.
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "remote/node_internal.h"

typedef struct rreply {
    ac_ref ref;
    ac_node *node;
    ac__peer *peer; /* retained: the asking node */
    uint64_t corr;
    atomic_int claimed;
    char path[352];
} rreply;

static bool rreply_claim(rreply *p)
{
    int expected = 0;
    /* acq_rel: pairs with the other claimers' CAS; one wins. */
    return atomic_compare_exchange_strong_explicit(&p->claimed, &expected, 1, memory_order_acq_rel,
                                                   memory_order_relaxed);
}

static void rreply_deliver(ac_ref *self, ac__mailbox_node *n)
{
    rreply *p = (rreply *)self;
    ac_ref *sender;
    ac_msg *msg = ac__ext_node_take(n, &sender);
    if (!rreply_claim(p) ||
        atomic_load_explicit(&p->peer->state, memory_order_acquire) == AC__PEER_DOWN) {
        ac_ref_release(sender); /* answered already, or nobody to answer: silently */
        ac_msg_release(msg);
        return;
    }
    ac__wire_env env = {.kind = AC__WIRE_REPLY, .corr = p->corr};
    env.target_inc = ac__peer_target_inc(p->node, p->peer);
    ac__node_encode_sender(p->node, sender, &env);
    ac_status st = ac__node_send_msg(p->node, p->peer, &env, msg);
    if (st == AC_ECODEC || st == AC_ENOMEM) {
        /* The asker must hear something: the reply cannot cross. */
        char why[256];
        snprintf(why, sizeof why, "the reply cannot be sent back: %s", ac_last_error());
        ac__node_send_undeliverable(p->node, p->peer, p->corr, 0, why);
        ac__ext_dead_letter(p->node->system, msg, sender, self, why);
        ac_ref_release(sender);
        return;
    }
    ac_ref_release(sender);
    ac_msg_release(msg);
}

static void rreply_undeliverable(ac_ref *self, ac_ref *recipient, const char *why)
{
    rreply *p = (rreply *)self;
    if (!rreply_claim(p))
        return;
    char text[320];
    if (why)
        snprintf(text, sizeof text, "%s", why);
    else
        snprintf(text, sizeof text, "the actor %s is stopped", recipient ? ac_ref_path(recipient) : "");
    /* flags 1: stopped (ActorStoppedError) */
    ac__node_send_undeliverable(p->node, p->peer, p->corr, why ? 0u : 1u, text);
}

static void rreply_destroy(ac_ref *self)
{
    rreply *p = (rreply *)self;
    ac__peer_release(p->peer);
    free(p);
}

static const char *rreply_path(const ac_ref *self) { return ((const rreply *)self)->path; }

const ac__ref_ops ac__rreply_ops = {
    .kind = AC__REF_FOREIGN,
    .deliver = rreply_deliver,
    .destroy = rreply_destroy,
    .path = rreply_path,
    .undeliverable = rreply_undeliverable,
};

ac_ref *ac__rreply_new(ac_node *node, ac__peer *peer, uint64_t corr)
{
    rreply *p = ac__calloc(1, sizeof *p);
    if (!p)
        return NULL;
    ac__ref_init(&p->ref, &ac__rreply_ops, node->system);
    p->node = node;
    p->peer = ac__peer_retain(peer);
    p->corr = corr;
    pthread_mutex_lock(&node->lock);
    snprintf(p->path, sizeof p->path, "actorc://%s@%s/temp/reply-%llx",
             peer->system ? peer->system : "", peer->address, (unsigned long long)corr);
    pthread_mutex_unlock(&node->lock);
    return &p->ref;
}

bool ac__rreply_parts(const ac_ref *ref, ac__peer **peer, uint64_t *corr)
{
    if (!ref || ref->ops != &ac__rreply_ops)
        return false;
    const rreply *p = (const rreply *)ref;
    *peer = p->peer;
    *corr = p->corr;
    return true;
}
