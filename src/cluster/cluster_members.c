/*
 * The cluster actor's records (cluster_internal.h): the nodes it is
 * connected to and this node, sorted by address so that lists and
 * routers see one order everywhere; the tombstones of incarnations that
 * left, so that one is never taken back; and the published copy of the
 * members that any thread reads. All in the actor's turns; the
 * publication takes the lock.
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "cluster/cluster_internal.h"

/* ---- records ------------------------------------------------------------ */

void ac__rec_free(ac__member_rec *r)
{
    if (!r)
        return;
    for (size_t i = 0; i < r->roles_count; i++)
        free(r->roles[i]);
    free(r->roles);
    free(r->system);
    free(r->address);
    free(r);
}

static size_t rec_index(const ac_cluster *c, const char *address, bool *found)
{
    size_t lo = 0, hi = c->member_count;
    while (lo < hi) {
        size_t mid = lo + (hi - lo) / 2;
        int cmp = strcmp(c->members[mid]->address, address);
        if (cmp == 0) {
            *found = true;
            return mid;
        }
        if (cmp < 0)
            lo = mid + 1;
        else
            hi = mid;
    }
    *found = false;
    return lo;
}

ac__member_rec *ac__rec_find(const ac_cluster *c, const char *address)
{
    bool found;
    size_t i = rec_index(c, address, &found);
    return found ? c->members[i] : NULL;
}

ac__member_rec *ac__rec_add(ac_cluster *c, const char *address, uint64_t incarnation)
{
    bool found;
    size_t at = rec_index(c, address, &found);
    if (c->member_count == c->member_cap) {
        size_t cap = c->member_cap ? c->member_cap * 2 : 8;
        ac__member_rec **m = ac__realloc(c->members, cap * sizeof *m);
        if (!m)
            return NULL;
        c->members = m;
        c->member_cap = cap;
    }
    ac__member_rec *r = ac__calloc(1, sizeof *r);
    if (r) {
        r->address = ac__strdup(address);
        r->system = ac__strdup("");
    }
    if (!r || !r->address || !r->system) {
        ac__rec_free(r);
        return NULL;
    }
    r->incarnation = incarnation;
    memmove(&c->members[at + 1], &c->members[at], (c->member_count - at) * sizeof *c->members);
    c->members[at] = r;
    c->member_count++;
    return r;
}

void ac__rec_remove(ac_cluster *c, ac__member_rec *r)
{
    for (size_t i = 0; i < c->member_count; i++)
        if (c->members[i] == r) {
            memmove(&c->members[i], &c->members[i + 1],
                    (c->member_count - i - 1) * sizeof *c->members);
            c->member_count--;
            break;
        }
    ac__rec_free(r);
}

bool ac__rec_set_card(ac__member_rec *r, const ac__card *card)
{
    char *system = ac__strdup(card->system);
    char **roles = card->roles_count ? ac__calloc(card->roles_count, sizeof *roles) : NULL;
    bool ok = system && (roles || !card->roles_count);
    for (size_t i = 0; ok && i < card->roles_count; i++)
        ok = (roles[i] = ac__strdup(card->roles[i])) != NULL;
    if (!ok) {
        for (size_t i = 0; roles && i < card->roles_count; i++)
            free(roles[i]);
        free(roles);
        free(system);
        return false;
    }
    for (size_t i = 0; i < r->roles_count; i++)
        free(r->roles[i]);
    free(r->roles);
    free(r->system);
    r->system = system;
    r->roles = roles;
    r->roles_count = card->roles_count;
    r->up_since = card->up_since;
    r->carded = true;
    return true;
}

/* ---- tombstones --------------------------------------------------------- */

bool ac__tombstoned(const ac_cluster *c, const char *address, uint64_t incarnation)
{
    for (size_t i = 0; i < AC__CLUSTER_TOMBSTONES; i++)
        if (c->tombstones[i].incarnation == incarnation && incarnation != 0 &&
            strcmp(c->tombstones[i].address, address) == 0)
            return true;
    return false;
}

void ac__tombstone(ac_cluster *c, const ac__member_rec *r)
{
    size_t i = c->tombstone_next++ % AC__CLUSTER_TOMBSTONES;
    snprintf(c->tombstones[i].address, sizeof c->tombstones[i].address, "%s", r->address);
    c->tombstones[i].incarnation = r->incarnation;
}

/* ---- the published view ------------------------------------------------ */

void ac__cluster_publish(ac_cluster *c)
{
    ac__member_rec **shown = ac__calloc(c->member_count ? c->member_count : 1, sizeof *shown);
    if (!shown)
        return; /* the last view stands */
    size_t n = 0, up = 0, unreachable = 0;
    for (size_t i = 0; i < c->member_count; i++) {
        ac__member_rec *r = c->members[i];
        if (!r->member)
            continue;
        shown[n++] = r;
        up += r->status == AC_MEMBER_UP;
        unreachable += r->status == AC_MEMBER_UNREACHABLE;
    }
    ac_member_list list = ac__member_list_pack((const ac__member_rec *const *)shown, n);
    free(shown);
    if (!list.members)
        return;
    pthread_mutex_lock(&c->lock);
    ac_member_list old = c->view;
    c->view = list;
    c->status.members_up = up;
    c->status.members_unreachable = unreachable;
    pthread_mutex_unlock(&c->lock);
    free(old.members);
}

/* ---- listings --------------------------------------------------------------- */

ac__listing *ac__listing_find(const ac_cluster *c, const char *address, uint64_t incarnation)
{
    for (size_t i = 0; i < c->listing_count; i++)
        if (c->listings[i].incarnation == incarnation &&
            strcmp(c->listings[i].address, address) == 0)
            return &c->listings[i];
    return NULL;
}

bool ac__listed(const ac_cluster *c, const ac__member_rec *r)
{
    for (size_t i = 0; i < c->listing_count; i++) {
        const ac__listing *l = &c->listings[i];
        if ((l->incarnation == 0 || l->incarnation == r->incarnation) &&
            strcmp(l->address, r->address) == 0)
            return true;
    }
    return false;
}

ac__listing *ac__listing_add(ac_cluster *c, const char *address, uint64_t incarnation)
{
    if (c->listing_count == c->listing_cap) {
        size_t cap = c->listing_cap ? c->listing_cap * 2 : 8;
        ac__listing *l = ac__realloc(c->listings, cap * sizeof *l);
        if (!l)
            return NULL;
        c->listings = l;
        c->listing_cap = cap;
    }
    char *copy = ac__strdup(address);
    if (!copy)
        return NULL;
    ac__listing *l = &c->listings[c->listing_count++];
    *l = (ac__listing){.address = copy,
                       .incarnation = incarnation,
                       .backoff_ms = c->retry_initial_ms};
    return l;
}

void ac__listing_remove(ac_cluster *c, ac__listing *l)
{
    free(l->address);
    *l = c->listings[--c->listing_count];
}

void ac__listings_free(ac_cluster *c)
{
    for (size_t i = 0; i < c->listing_count; i++)
        free(c->listings[i].address);
    free(c->listings);
    c->listings = NULL;
    c->listing_count = c->listing_cap = 0;
}
