/*
 * Introductions (static provider): a node joins by a few seeds, and the
 * members it does not list learn of it from them. When a node becomes a
 * member here, this node tells it the addresses of its other members,
 * one frame of lines "host:port"; the newcomer says hello to each it is
 * not connected to (a beat: the remote layer connects for it), and
 * every node that connects naming the cluster is a member. So a fourth
 * node that lists three seeds reaches the whole cluster, and two nodes
 * that join at once meet: the seed that has both Up names the first to
 * the second. The newcomer lists each address it is not connected to
 * and tries it as a seed (the same backoff) until a node there is
 * connected, INTRO_TRIES times at most: an attempt lost on a loaded
 * machine is made again, and an address that went is let go. A member
 * lost by the remote layer while it may live (a connection that timed
 * out under load) is tried the same way, as the cluster tries a seed
 * again: the node that was lost says hello afresh when it hears from us.
 *
 * No gossip: nothing is relayed further. A provider that
 * gates membership (etcd, DNS) needs none: its listings name every member.
 * In the cluster actor's turns.
 */
#include <stdlib.h>
#include <string.h>

#include "cluster/cluster_internal.h"

/* Addresses in one introduction, at most (a frame of ~64 KiB). */
#define INTRO_MAX 2048

void ac__cluster_introduce(ac_cluster *c, const ac__member_rec *r)
{
    if (c->provider->listed_only)
        return;
    size_t len = 0, n = 0;
    for (size_t i = 0; i < c->member_count && n < INTRO_MAX; i++) {
        const ac__member_rec *m = c->members[i];
        if (m != r && !m->self && m->member)
            len += strlen(m->address) + 1, n++;
    }
    if (n == 0)
        return;
    char *body = ac__malloc(len);
    if (!body)
        return; /* it still reaches the nodes it lists */
    size_t at = 0;
    for (size_t i = 0; i < c->member_count && at < len; i++) {
        const ac__member_rec *m = c->members[i];
        if (m == r || m->self || !m->member)
            continue;
        size_t k = strlen(m->address);
        memcpy(body + at, m->address, k);
        body[at + k] = '\n';
        at += k + 1;
    }
    (void)ac__node_tell_system(c->node, r->address, r->incarnation, AC__CLUSTER_PATH,
                               AC__CLUSTER_INTRO_TYPE, (const uint8_t *)body, at);
    free(body);
}

/* Introduced and not connected: tried this many times at most, with the
 * listings' backoff, then forgotten (it may have gone meanwhile). */
#define INTRO_TRIES 8

void ac__cluster_introduced(ac_cluster *c, const char *address)
{
    if (!ac__host_port_ok(address) || strcmp(address, c->card.address) == 0 ||
        ac__rec_find(c, address) || ac__listing_find(c, address, 0))
        return;
    ac__listing *l = ac__listing_add(c, address, 0);
    if (!l)
        return; /* out of memory: it may still come to us */
    l->introduced = true; /* tried at the next tick */
}

/* Introduced listings at once, at most: a member's frames name
 * addresses, and what they make this node dial is bounded. */
#define INTRO_LISTINGS_MAX 1024

static size_t introduced_count(const ac_cluster *c)
{
    size_t n = 0;
    for (size_t i = 0; i < c->listing_count; i++)
        n += c->listings[i].introduced;
    return n;
}

void ac__cluster_on_intro(ac_cluster *c, const ac__note *n)
{
    if (c->provider->listed_only || !n->data || !ac__rec_find(c, n->address))
        return; /* only a node that is a member here introduces */
    const char *p = (const char *)n->data, *end = p + n->len;
    size_t had = introduced_count(c), before = c->listing_count, count = 0;
    size_t room = had < INTRO_LISTINGS_MAX ? INTRO_LISTINGS_MAX - had : 0;
    while (p < end && count++ < INTRO_MAX && c->listing_count - before < room) {
        const char *nl = memchr(p, '\n', (size_t)(end - p));
        size_t k = (size_t)((nl ? nl : end) - p);
        char address[256];
        if (k > 0 && k < sizeof address) {
            memcpy(address, p, k);
            address[k] = '\0';
            ac__cluster_introduced(c, address);
        }
        p += k + 1;
    }
}

void ac__cluster_intros_prune(ac_cluster *c)
{
    for (size_t i = 0; i < c->listing_count;) {
        ac__listing *l = &c->listings[i];
        if (l->introduced && (l->tries >= INTRO_TRIES || ac__rec_find(c, l->address)))
            ac__listing_remove(c, l); /* the last takes its place: look again */
        else
            i++;
    }
}
