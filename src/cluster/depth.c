/*
 * The depth publisher and its two messages (depth.h has the protocol).
 *
 * Both messages are flat: a fixed head and NUL-terminated strings in one
 * payload, so their wire form is the payload itself, checked on the way
 * in (the strings must end inside it). The publisher is one actor per
 * node; it holds its subscriptions in an array (a handful: one per
 * smallest-mailbox router per node and path, AC__DEPTH_MAX_WATCHES at
 * most), ticks every period with a repeating timer while it has any
 * (an idle node with no smallest-mailbox router wakes for none), and
 * reads each watched actor's depth off its cell, which costs no message
 * to the actor and so never delays it.
 *
 * The actor at a watched path is located once (ac__ext_locate: a hop per
 * level through its ancestors, each in its ancestor's turn, since only a
 * parent may read its children) and kept, retained, until it stops; then
 * the path is located again, at most every AC__DEPTH_LOCATE_TICKS, which
 * also covers an answer lost or a path with no actor yet. So a nested
 * routee (/user/pool/replica) costs one locate per incarnation, not a
 * message per report.
 */
#include <stdlib.h>
#include <string.h>

#include "cluster/depth.h"
#include "core/alloc.h"
#include "core/extension.h"
#include "core/turn.h"

/* ---- the messages ----------------------------------------------------- */

typedef struct watch_payload {
    uint8_t unwatch;
    char path[]; /* NUL-terminated */
} watch_payload;

typedef struct report_payload {
    int32_t depth;
    uint16_t address_len; /* address, NUL, path, NUL */
    char text[];
} report_payload;

static size_t flat_encode(const void *payload, size_t size, uint8_t *buf, size_t cap)
{
    if (size <= cap)
        memcpy(buf, payload, size);
    return size;
}

static int flat_decode(const uint8_t *buf, size_t len, void *payload, size_t size)
{
    if (len != size)
        return AC_EPROTO;
    memcpy(payload, buf, len);
    return AC_OK;
}

/* A well-formed string at s[0..len): NUL-terminated inside. */
static bool ends_inside(const char *s, size_t len) { return len > 0 && memchr(s, '\0', len); }

static int watch_decode(const uint8_t *buf, size_t len, void *payload, size_t size)
{
    if (len < sizeof(watch_payload) + 1 ||
        !ends_inside((const char *)buf + sizeof(watch_payload), len - sizeof(watch_payload)))
        return AC_EPROTO;
    return flat_decode(buf, len, payload, size);
}

static int report_decode(const uint8_t *buf, size_t len, void *payload, size_t size)
{
    if (flat_decode(buf, len, payload, size) != AC_OK || len < sizeof(report_payload) + 2)
        return AC_EPROTO;
    const report_payload *p = payload;
    size_t text = len - sizeof(report_payload);
    if ((size_t)p->address_len + 1 >= text || p->text[p->address_len] != '\0' ||
        !ends_inside(p->text + p->address_len + 1, text - p->address_len - 1))
        return AC_EPROTO;
    return AC_OK;
}

const ac_msg_type ac__depth_watch_type = {
    .name = "actorc.DepthWatch", .encode = flat_encode, .decode = watch_decode};
const ac_msg_type ac__depth_report_type = {
    .name = "actorc.Depth", .encode = flat_encode, .decode = report_decode};

ac_msg *ac__depth_watch_new(const char *path, bool unwatch)
{
    size_t len = strlen(path) + 1;
    ac_msg *m = ac_msg_new(&ac__depth_watch_type, sizeof(watch_payload) + len);
    if (!m)
        return NULL;
    watch_payload *p = ac_msg_payload(m);
    p->unwatch = unwatch;
    memcpy(p->path, path, len);
    return m;
}

static ac_msg *report_new(int32_t depth, const char *address, const char *path)
{
    size_t a = strlen(address), b = strlen(path);
    if (a > UINT16_MAX - 1)
        return NULL;
    ac_msg *m = ac_msg_new(&ac__depth_report_type, sizeof(report_payload) + a + b + 2);
    if (!m)
        return NULL;
    report_payload *p = ac_msg_payload(m);
    p->depth = depth;
    p->address_len = (uint16_t)a;
    memcpy(p->text, address, a + 1);
    memcpy(p->text + a + 1, path, b + 1);
    return m;
}

bool ac__depth_report_read(const ac_msg *msg, ac__depth_report *out)
{
    if (!ac_msg_is(msg, &ac__depth_report_type))
        return false;
    const report_payload *p = ac_msg_data(msg);
    out->depth = p->depth;
    out->address = p->text;
    out->path = p->text + p->address_len + 1;
    return true;
}

/* ---- the publisher ---------------------------------------------------- */

typedef struct subscription {
    ac_ref *subscriber; /* retained, watched */
    char *path;
    ac_ref *target;        /* the local actor at path, retained; NULL: not located */
    uint64_t locate_after; /* the tick from which to locate it (again) */
} subscription;

typedef struct publisher_state {
    subscription *subs;
    size_t n, cap;
    uint64_t ticks;
    ac_cancellable *tick;
} publisher_state;

static const ac_msg_type tick_type = {.name = "actorc.DepthTick"};

/* The tick runs while there are subscriptions: started by the first,
 * stopped with the last (a tick already queued then finds none). */
static void tick_start(ac_ctx *ctx, publisher_state *st)
{
    if (st->tick)
        return;
    ac_msg *tick = ac_msg_new(&tick_type, 0);
    st->tick = tick ? ac_schedule_repeat(ac_self(ctx), AC__DEPTH_PERIOD_MS, AC__DEPTH_PERIOD_MS,
                                         tick, NULL)
                    : NULL;
    if (!st->tick)
        ac_log_error(ctx, "depth publisher: no timer (%s); no depths will be published",
                     ac_last_error());
}

static void tick_stop(publisher_state *st)
{
    if (!st->tick)
        return;
    ac_cancel(st->tick);
    ac_cancellable_release(st->tick);
    st->tick = NULL;
}

static void subscription_clear(subscription *s)
{
    ac_ref_release(s->subscriber);
    ac_ref_release(s->target);
    free(s->path);
}

static void publisher_post_stop(ac_ctx *ctx)
{
    publisher_state *st = ac_ctx_state(ctx);
    tick_stop(st);
    for (size_t i = 0; i < st->n; i++)
        subscription_clear(&st->subs[i]);
    free(st->subs);
    memset(st, 0, sizeof *st);
}

static size_t find(const publisher_state *st, const ac_ref *who, const char *path)
{
    for (size_t i = 0; i < st->n; i++)
        if (st->subs[i].subscriber == who && (!path || strcmp(st->subs[i].path, path) == 0))
            return i;
    return st->n;
}

static void drop(publisher_state *st, size_t i)
{
    subscription_clear(&st->subs[i]);
    st->subs[i] = st->subs[--st->n];
    if (st->n == 0)
        tick_stop(st);
}

/* Room for one more subscription; false (logged) when there is none. */
static bool make_room(ac_ctx *ctx, publisher_state *st, const ac_ref *who, const char *path)
{
    if (st->n == AC__DEPTH_MAX_WATCHES) {
        ac_log_warn(ctx, "depth watch of %s by %s refused: %d watches already", path,
                    ac_ref_path(who), AC__DEPTH_MAX_WATCHES);
        return false;
    }
    if (st->n < st->cap)
        return true;
    size_t cap = st->cap ? st->cap * 2 : 4;
    subscription *subs = ac__realloc(st->subs, cap * sizeof *subs);
    if (!subs) {
        ac_log_error(ctx, "depth watch of %s by %s refused: out of memory", path,
                     ac_ref_path(who));
        return false;
    }
    st->subs = subs;
    st->cap = cap;
    return true;
}

/* Ask the core where s's path ends, at most every AC__DEPTH_LOCATE_TICKS
 * (an answer lost, or no actor there yet, is asked again then). */
static void locate(ac_ctx *ctx, publisher_state *st, subscription *s)
{
    if (st->ticks < s->locate_after)
        return;
    s->locate_after = st->ticks + AC__DEPTH_LOCATE_TICKS;
    (void)ac__ext_locate(ac_ctx_system(ctx), s->path, strlen(s->path), ac_self(ctx));
}

static void subscribe(ac_ctx *ctx, publisher_state *st, ac_ref *who, const char *path)
{
    if (find(st, who, path) < st->n || !make_room(ctx, st, who, path))
        return;
    char *copy = ac__strdup(path);
    if (!copy || ac_watch(ctx, who) != AC_OK) {
        ac_log_warn(ctx, "depth watch of %s by %s refused: %s", path, ac_ref_path(who),
                    copy ? "the subscriber cannot be watched" : "out of memory");
        free(copy);
        return;
    }
    st->subs[st->n++] = (subscription){.subscriber = ac_ref_retain(who),
                                       .path = copy,
                                       .locate_after = st->ticks};
    tick_start(ctx, st);
    locate(ctx, st, &st->subs[st->n - 1]); /* located before the first report, as a rule */
}

static void on_watch(ac_ctx *ctx, publisher_state *st, const ac_msg *msg)
{
    const watch_payload *p = ac_msg_data(msg);
    ac_ref *who = ac_sender(ctx);
    if (!who) {
        ac_log_warn(ctx, "a DepthWatch of %s without a sender ignored: nobody to publish to",
                    p->path);
        return;
    }
    if (!p->unwatch) {
        subscribe(ctx, st, who, p->path);
        return;
    }
    size_t i = find(st, who, p->path);
    if (i < st->n)
        drop(st, i);
    if (find(st, who, NULL) == st->n)
        (void)ac_unwatch(ctx, who);
}

/* The located actor at a path: every subscription of that path without
 * its actor takes it. */
static void on_located(publisher_state *st, ac_ref *actor, const char *path)
{
    for (size_t i = 0; actor && i < st->n; i++)
        if (!st->subs[i].target && strcmp(st->subs[i].path, path) == 0)
            st->subs[i].target = ac_ref_retain(actor);
}

/* The depth of s's actor as depth.h says; a stopped one is forgotten
 * (another may be spawned at its path) and located anew. */
static int32_t depth_of(ac_ctx *ctx, publisher_state *st, subscription *s)
{
    int len = s->target ? ac__mailbox_len(s->target) : AC__MAILBOX_STOPPED;
    if (len == AC__MAILBOX_STOPPED) {
        ac_ref_release(s->target);
        s->target = NULL;
        locate(ctx, st, s);
    }
    return len >= 0 ? len : AC__DEPTH_UNKNOWN;
}

static void publish(ac_ctx *ctx, publisher_state *st)
{
    ac_node *node = ac_system_node(ac_ctx_system(ctx));
    st->ticks++;
    if (!node)
        return;
    for (size_t i = 0; i < st->n; i++) {
        subscription *s = &st->subs[i];
        ac_msg *m = report_new(depth_of(ctx, st, s), ac_node_address(node), s->path);
        if (m)
            ac_tell(s->subscriber, m, ac_self(ctx));
    }
}

static void publisher_receive(ac_ctx *ctx, ac_msg *msg)
{
    publisher_state *st = ac_ctx_state(ctx);
    ac_ref *located;
    const char *path;
    if (ac_msg_is(msg, &tick_type)) {
        publish(ctx, st);
    } else if (ac_msg_is(msg, &ac__depth_watch_type)) {
        on_watch(ctx, st, msg);
    } else if (ac__ext_located_read(msg, &located, &path)) {
        on_located(st, located, path);
    } else if (ac_msg_is(msg, &ac_msg_type_terminated)) {
        ac_ref *gone = ac_terminated_ref(msg);
        for (size_t i = st->n; i-- > 0;)
            if (st->subs[i].subscriber == gone)
                drop(st, i);
    }
}

static const ac_actor_def publisher_def = {
    .name = "DepthPublisher",
    .state_size = sizeof(publisher_state),
    .receive = publisher_receive,
    .post_stop = publisher_post_stop,
};

static ac_status register_type(ac_node *node, const ac_msg_type *type)
{
    ac_status st = ac_node_register_type(node, type);
    return st == AC_EEXIST ? AC_OK : st;
}

ac_status ac__depth_publisher_start(ac_system *system, ac_node *node)
{
    ac_status st = register_type(node, &ac__depth_watch_type);
    if (st == AC_OK)
        st = register_type(node, &ac__depth_report_type);
    if (st != AC_OK)
        return st;
    static const char path[] = "/user/" AC__DEPTH_PUBLISHER;
    ac_ref *running = ac__ext_lookup_top(system, path, sizeof path - 1);
    if (running) {
        ac_ref_release(running);
        return AC_OK;
    }
    ac_props *props = ac_props_new(&publisher_def, NULL);
    ac_ref *r = props ? ac_spawn(system, props, AC__DEPTH_PUBLISHER) : NULL;
    if (!r)
        return ac_last_status();
    ac_ref_release(r);
    return AC_OK;
}
