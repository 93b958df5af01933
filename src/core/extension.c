/*
 * The extension interface (extension.h): paths to local actors, dead
 * letters and parts attached to a system, for actorc's own optional
 * libraries.
 *
 * A path below a top-level actor is walked a hop per level: only a
 * parent reads its children table, in its own turn, so the hop is a Run
 * message told to each ancestor. The same hops carry a message to its
 * actor (deliver) or an asker's question of where the path ends
 * (locate), which differ only in what happens at the end.
 */
#include <stdio.h>
#include <string.h>

#include "core/alloc.h"
#include "core/children.h"
#include "core/core_msgs.h"
#include "core/extension.h"
#include "core/last_error.h"
#include "core/system_internal.h"

ac_msg *ac__ext_node_take(ac__mailbox_node *node, ac_ref **sender)
{
    return ac__mailbox_node_take_msg(node, sender);
}

/* ---- paths ------------------------------------------------------------ */

#define USER_PREFIX "/user/"
#define USER_PREFIX_LEN (sizeof USER_PREFIX - 1)
#define NAME_MAX_LEN 255

/* The next name of a path: [*p, *p + return) up to '/' or the end. */
static size_t next_name(const char *p, size_t len)
{
    const char *slash = memchr(p, '/', len);
    return slash ? (size_t)(slash - p) : len;
}

/* The child `name` (n bytes) of a, or NULL. In a's turn (the guardian:
 * under the guardian lock). */
static ac__actor *child_named(const ac__actor *a, const char *name, size_t n)
{
    char buf[NAME_MAX_LEN + 1];
    if (n == 0 || n > NAME_MAX_LEN || !a->children)
        return NULL;
    memcpy(buf, name, n);
    buf[n] = '\0';
    return ac__children_find(a->children, buf);
}

/* The top-level actor named first in path, retained, and in *rest what
 * follows it ("" for none). */
static ac__actor *top_level(ac_system *sys, const char *path, size_t len, const char **rest,
                            size_t *rest_len)
{
    const char *p = path + USER_PREFIX_LEN;
    size_t left = len - USER_PREFIX_LEN;
    size_t n = next_name(p, left);
    pthread_mutex_lock(&sys->guardian_lock);
    ac__actor *a = child_named(sys->guardian, p, n);
    if (a)
        ac_ref_retain(&a->ref);
    pthread_mutex_unlock(&sys->guardian_lock);
    *rest = n < left ? p + n + 1 : p + left;
    *rest_len = n < left ? left - n - 1 : 0;
    return a;
}

static bool user_path(const char *path, size_t len)
{
    return path && len > USER_PREFIX_LEN && memcmp(path, USER_PREFIX, USER_PREFIX_LEN) == 0;
}

ac_ref *ac__ext_lookup_top(ac_system *sys, const char *path, size_t len)
{
    if (!sys || !user_path(path, len))
        return NULL;
    const char *rest;
    size_t rest_len;
    ac__actor *a = top_level(sys, path, len, &rest, &rest_len);
    if (a && (rest_len > 0 || ac__ref_is_dead(&a->ref))) {
        ac_ref_release(&a->ref);
        return NULL;
    }
    return a ? &a->ref : NULL;
}

/* A message on its way down a path: a Run message told to each ancestor
 * in turn, with the original sender as its sender. A locate carries no
 * message: its sender is the asker, told where the path ends. */
typedef struct hop_payload {
    ac__run_header header;
    ac_msg *inner;  /* owned; NULL for a locate */
    char *path;     /* the whole path, owned */
    size_t at, len; /* what is left: path[at..len) */
} hop_payload;

static void hop_destroy(void *payload, size_t size)
{
    (void)size;
    hop_payload *h = payload;
    ac_msg_release(h->inner);
    free(h->path);
}

/* ---- located ---------------------------------------------------------- */

typedef struct located_payload {
    ac_ref *actor; /* retained; NULL: no actor there */
    char path[];   /* NUL-terminated */
} located_payload;

static void located_destroy(void *payload, size_t size)
{
    (void)size;
    ac_ref_release(((located_payload *)payload)->actor);
}

const ac_msg_type ac__ext_located_type = {.name = "actorc.Located", .destroy = located_destroy};

/* Tell `asker` where path[0..len) ends: at `actor` (borrowed), or
 * nowhere. Lost when out of memory (the asker asks again). */
static void located_tell(ac_ref *asker, const char *path, size_t len, ac_ref *actor)
{
    ac_msg *m = asker ? ac_msg_new(&ac__ext_located_type, sizeof(located_payload) + len + 1)
                      : NULL;
    if (!m)
        return;
    located_payload *p = ac_msg_payload(m);
    p->actor = actor && !ac__ref_is_dead(actor) ? ac_ref_retain(actor) : NULL;
    memcpy(p->path, path, len);
    p->path[len] = '\0';
    ac_tell(asker, m, NULL);
}

bool ac__ext_located_read(const ac_msg *msg, ac_ref **actor, const char **path)
{
    if (!ac_msg_is(msg, &ac__ext_located_type))
        return false;
    const located_payload *p = ac_msg_data(msg);
    *actor = p->actor;
    *path = p->path;
    return true;
}

/* ---- the hops --------------------------------------------------------- */

static void not_there(ac_system *sys, ac_msg *inner, ac_ref *sender, const char *path, size_t len)
{
    char why[320];
    snprintf(why, sizeof why, "no actor at %.*s", (int)(len > 256 ? 256 : len), path);
    ac__ext_dead_letter(sys, inner, sender, NULL, why);
}

/* The hop ends at `target`: its message delivered, or its asker told. */
static void hop_arrive(ac__actor *target, ac_msg *inner, ac_ref *sender, const char *path,
                       size_t len)
{
    if (inner)
        ac_tell(&target->ref, inner, sender);
    else
        located_tell(sender, path, len, &target->ref);
}

/* The hop ends short of its target: no actor at a name of the path
 * (`reached` NULL), or no memory to go on from `reached`. */
static void hop_stuck(ac_system *sys, ac__actor *reached, ac_msg *inner, ac_ref *sender,
                      const char *path, size_t len)
{
    if (!inner)
        located_tell(sender, path, len, NULL);
    else if (!reached)
        not_there(sys, inner, sender, path, len);
    else
        ac__ext_dead_letter(sys, inner, sender, &reached->ref,
                            "out of memory on the way to the actor");
}

static void hop_run(ac_ctx *ctx, ac_msg *msg);

/* A hop for path[at..len) carrying `inner` (owned by the hop once it is
 * made), or NULL, inner left to the caller, when out of memory. */
static ac_msg *hop_new(const char *path, size_t len, size_t at, ac_msg *inner)
{
    ac_msg *hop = ac_msg_new(&ac__msg_type_run, sizeof(hop_payload));
    char *copy = hop ? ac__malloc(len + 1) : NULL;
    if (!copy) {
        ac_msg_release(hop);
        return NULL;
    }
    memcpy(copy, path, len);
    copy[len] = '\0';
    hop_payload *h = ac_msg_payload(hop);
    *h = (hop_payload){.header = {.run = hop_run, .destroy = hop_destroy},
                       .inner = inner,
                       .path = copy,
                       .at = at,
                       .len = len};
    return hop;
}

/* Take h's message one level further down from `a`, in a's turn. */
static void hop_from(ac__actor *a, hop_payload *h, ac_ref *sender)
{
    const char *p = h->path + h->at;
    size_t left = h->len - h->at;
    size_t n = next_name(p, left);
    ac__actor *child = child_named(a, p, n);
    ac_msg *inner = h->inner;
    h->inner = NULL;
    ac_msg *next = NULL;
    if (!child)
        hop_stuck(a->ref.system, NULL, inner, sender, h->path, h->len);
    else if (n == left) /* the last name: the target */
        hop_arrive(child, inner, sender, h->path, h->len);
    else if ((next = hop_new(h->path, h->len, h->at + n + 1, inner)))
        ac_tell(&child->ref, next, sender);
    else
        hop_stuck(a->ref.system, child, inner, sender, h->path, h->len);
}

static void hop_run(ac_ctx *ctx, ac_msg *msg)
{
    /* The hop's payload is this turn's to change: the message was made
     * for one receiver. */
    hop_payload *h = (hop_payload *)(void *)msg->payload;
    hop_from(ctx->self, h, ctx->sender);
}

/* Start a hop down path[0..len) (a user path) from its top-level actor. */
static ac_status hop_start(ac_system *sys, const char *path, size_t len, ac_msg *inner,
                           ac_ref *sender)
{
    const char *rest;
    size_t rest_len;
    ac__actor *top = top_level(sys, path, len, &rest, &rest_len);
    ac_status st = AC_OK;
    ac_msg *hop = NULL;
    if (!top) {
        hop_stuck(sys, NULL, inner, sender, path, len);
    } else if (rest_len == 0) {
        if (inner)
            st = ac_tell(&top->ref, inner, sender);
        else
            located_tell(sender, path, len, &top->ref);
    } else if ((hop = hop_new(path, len, (size_t)(rest - path), inner))) {
        st = ac_tell(&top->ref, hop, sender);
    } else {
        hop_stuck(sys, top, inner, sender, path, len);
        st = ac__fail(AC_ENOMEM, "%s: out of memory", inner ? "deliver" : "locate");
    }
    if (top)
        ac_ref_release(&top->ref);
    return st;
}

ac_status ac__ext_deliver_path(ac_system *sys, const char *path, size_t len, ac_msg *msg,
                               ac_ref *sender)
{
    if (!sys || !msg) {
        ac_msg_release(msg);
        return ac__fail(AC_EINVAL, "deliver: %s is NULL", sys ? "message" : "system");
    }
    if (!user_path(path, len)) {
        ac_status st = ac__fail(AC_EINVAL, "deliver: \"%.*s\" is not a path under /user",
                                (int)(len > 256 ? 256 : len), path ? path : "");
        ac__ext_dead_letter(sys, msg, sender, NULL, ac_last_error());
        return st;
    }
    return hop_start(sys, path, len, msg, sender);
}

ac_status ac__ext_locate(ac_system *sys, const char *path, size_t len, ac_ref *asker)
{
    if (!sys || !asker)
        return ac__fail(AC_EINVAL, "locate: %s is NULL", sys ? "asker" : "system");
    if (!user_path(path, len))
        return ac__fail(AC_EINVAL, "locate: \"%.*s\" is not a path under /user",
                        (int)(len > 256 ? 256 : len), path ? path : "");
    return hop_start(sys, path, len, NULL, asker);
}

bool ac__ext_ref_is_dead(const ac_ref *ref) { return ac__ref_is_dead(ref); }

/* ---- dead letters ----------------------------------------------------- */

void ac__ext_dead_letter(ac_system *sys, ac_msg *msg, ac_ref *sender, ac_ref *recipient,
                         const char *why)
{
    ac__mailbox_node *node = ac__mailbox_node_make(msg, sender);
    if (AC__UNLIKELY(!node)) { /* an ask waiting for it must still be told */
        if (sender && sender->ops->undeliverable)
            sender->ops->undeliverable(sender, recipient, why);
        return;
    }
    ac__dead_letter_why(sys, node, recipient, why);
}

/* ---- parts ------------------------------------------------------------ */

ac_status ac__ext_attach(ac_system *sys, ac__ext_part *part)
{
    if (!sys || !part || !part->key)
        return ac__fail(AC_EINVAL, "attach: %s is NULL", !sys ? "system" : "part");
    ac_status st = AC_OK;
    pthread_mutex_lock(&sys->guardian_lock);
    if (atomic_load_explicit(&sys->terminating, memory_order_relaxed)) {
        st = ac__fail(AC_ETERMINATED, "attach: system %s is terminating", sys->name);
    } else {
        for (ac__ext_part *p = sys->parts; p; p = p->next)
            if (strcmp(p->key, part->key) == 0) {
                st = ac__fail(AC_EEXIST, "attach: system %s already has a %s", sys->name,
                              part->key);
                break;
            }
        if (st == AC_OK) {
            part->next = sys->parts;
            sys->parts = part;
        }
    }
    pthread_mutex_unlock(&sys->guardian_lock);
    return st;
}

void ac__ext_detach(ac_system *sys, ac__ext_part *part)
{
    if (!sys || !part)
        return;
    pthread_mutex_lock(&sys->guardian_lock);
    for (ac__ext_part **pp = &sys->parts; *pp; pp = &(*pp)->next)
        if (*pp == part) {
            *pp = part->next;
            break;
        }
    pthread_mutex_unlock(&sys->guardian_lock);
}

void *ac__ext_find(ac_system *sys, const char *key)
{
    void *ctx = NULL;
    if (!sys || !key)
        return NULL;
    pthread_mutex_lock(&sys->guardian_lock);
    for (ac__ext_part *p = sys->parts; p; p = p->next)
        if (strcmp(p->key, key) == 0) {
            ctx = p->ctx;
            break;
        }
    pthread_mutex_unlock(&sys->guardian_lock);
    return ctx;
}

/* Terminate: run every part's stop (free == false) or free. */
void ac__ext_parts_run(ac_system *sys, bool free_them)
{
    pthread_mutex_lock(&sys->guardian_lock);
    ac__ext_part *parts = sys->parts;
    if (free_them)
        sys->parts = NULL;
    pthread_mutex_unlock(&sys->guardian_lock);
    while (parts) {
        ac__ext_part *next = parts->next; /* free may free the part */
        void (*fn)(void *) = free_them ? parts->free : parts->stop;
        if (fn)
            fn(parts->ctx);
        parts = next;
    }
}
