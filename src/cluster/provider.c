/*
 * The cluster's side of the provider seam (provider.h): the table of
 * providers and the choice of one from the join options, and what a
 * provider may call: listings, which reach the cluster actor as notes,
 * and its health, which goes into the published status under the lock.
 *
 * This file names no provider but in the table, and calls nothing of
 * the actor or of the API: a provider's calls end here, in a message or
 * in the status, so providers, the actor and the API never call in a
 * circle.
 */
#include <stdarg.h>
#include <stdio.h>
#include <string.h>

#include "cluster/cluster_internal.h"

/* The first is the default, when no provider's options are set. */
static const ac__provider_ops *const providers[] = {
    &ac__provider_static,
    &ac__provider_etcd,
    &ac__provider_dns,
};

const ac__provider_ops *ac__provider_choose(const ac_cluster_options *o, const void **options)
{
    const ac__provider_ops *chosen = NULL;
    *options = NULL;
    for (size_t i = 0; i < sizeof providers / sizeof providers[0]; i++) {
        const void *mine = providers[i]->options_of(o);
        if (!mine)
            continue;
        if (chosen)
            return ac__fail_null(AC_EINVAL, "ac_cluster_join: options.%s_options and "
                                            "options.%s_options are both set: choose one "
                                            "provider", chosen->name, providers[i]->name);
        chosen = providers[i];
        *options = mine;
    }
    return chosen ? chosen : providers[0];
}

ac_status ac__provider_check_list(const char *const *items, size_t n, const char *what,
                                  size_t max, bool (*ok)(const char *), const char *rule)
{
    if (n && !items)
        return ac__fail(AC_EINVAL, "ac_cluster_join: options.%s is NULL but options.%s_count is %zu",
                        what, what, n);
    if (n > max)
        return ac__fail(AC_EINVAL, "ac_cluster_join: options.%s_count %zu is over %zu", what, n,
                        max);
    for (size_t i = 0; i < n; i++) {
        if (!items[i] || !ok(items[i]))
            return ac__fail(AC_EINVAL, "ac_cluster_join: options.%s[%zu] \"%.80s\" is not %s",
                            what, i, items[i] ? items[i] : "(null)", rule);
        for (size_t j = 0; j < i; j++)
            if (strcmp(items[i], items[j]) == 0)
                return ac__fail(AC_EINVAL, "ac_cluster_join: options.%s[%zu] \"%.80s\" is listed "
                                           "twice", what, i, items[i]);
    }
    return AC_OK;
}

/* ---- telling the actor (any thread) --------------------------------------- */

void ac__cluster_tell_actor(ac_cluster *c, ac_msg *msg)
{
    if (!msg)
        return;
    pthread_mutex_lock(&c->lock);
    ac_ref *actor = c->actor ? ac_ref_retain(c->actor) : NULL;
    pthread_mutex_unlock(&c->lock);
    if (actor)
        ac_tell(actor, msg, NULL);
    else
        ac_msg_release(msg);
    ac_ref_release(actor);
}

static ac_status tell_listing(ac_cluster *c, ac__note_kind kind, const char *address,
                              uint64_t incarnation, const char *why)
{
    ac_msg *msg = ac__note_new(kind, NULL, address, incarnation, why, NULL, 0);
    if (!msg)
        return ac__fail(AC_ENOMEM, "cluster %s: out of memory passing on %s", c->name, address);
    ac__cluster_tell_actor(c, msg);
    return AC_OK;
}

ac_status ac__provider_list(ac_cluster *c, const char *address, uint64_t incarnation)
{
    return tell_listing(c, AC__NOTE_LISTED, address, incarnation, NULL);
}

ac_status ac__provider_unlist(ac_cluster *c, const char *address, uint64_t incarnation,
                              const char *why)
{
    return tell_listing(c, AC__NOTE_UNLISTED, address, incarnation, why);
}

void ac__provider_down_self(ac_cluster *c, const char *why)
{
    ac_msg *msg = ac__note_new(AC__NOTE_DOWN_SELF, NULL, NULL, 0, why, NULL, 0);
    if (!msg)
        ac_system_log(c->system, AC_LOG_ERROR, "cluster %s: out of memory: cannot down this "
                      "node (%s)", c->name, why);
    ac__cluster_tell_actor(c, msg);
}

/* ---- the provider's health ------------------------------------------------ */

void ac__provider_failed(ac_cluster *c, bool degrade, const char *fmt, ...)
{
    char why[sizeof c->status.last_error];
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(why, sizeof why, fmt, ap);
    va_end(ap);
    pthread_mutex_lock(&c->lock);
    c->status.attempts_failed++;
    memcpy(c->status.last_error, why, sizeof why);
    bool degraded = degrade && c->status.state == AC_CLUSTER_JOINED;
    if (degraded)
        c->status.state = AC_CLUSTER_RETRYING;
    pthread_mutex_unlock(&c->lock);
    if (degraded)
        ac__cluster_tick_soon(c); /* ticks on the beat again until JOINED */
}

void ac__provider_ok(ac_cluster *c)
{
    pthread_mutex_lock(&c->lock);
    if (c->status.state != AC_CLUSTER_LEFT)
        c->status.state = AC_CLUSTER_JOINED;
    pthread_mutex_unlock(&c->lock);
}
