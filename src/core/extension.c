/*
 * The extension interface (extension.h): paths to local actors, dead
 * letters and parts attached to a system, for actorc's own optional
 * libraries.
 */
#include <stdio.h>
#include <string.h>

#include "core/alloc.h"
#include "core/children.h"
#include "core/core_msgs.h"
#include "core/extension.h"
#include "core/last_error.h"
#include "core/system_internal.h"

ac_msg *ac__ext_node_take(ac__node *node, ac_ref **sender) { return ac__node_take_msg(node, sender); }

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
 * in turn, with the original sender as its sender. */
typedef struct hop_payload {
    ac__run_header header;
    ac_msg *inner;  /* owned */
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

static void not_there(ac_system *sys, ac_msg *inner, ac_ref *sender, const char *path, size_t len)
{
    char why[320];
    snprintf(why, sizeof why, "no actor at %.*s", (int)(len > 256 ? 256 : len), path);
    ac__ext_dead_letter(sys, inner, sender, NULL, why);
}

static void hop_run(ac_ctx *ctx, ac_msg *msg);

/* Send h's message one level further down from `a`. Consumes the hop
 * message `msg` when it is re-sent, else leaves it to its caller. */
static void hop_from(ac__actor *a, hop_payload *h, ac_ref *sender)
{
    const char *p = h->path + h->at;
    size_t left = h->len - h->at;
    size_t n = next_name(p, left);
    ac__actor *child = child_named(a, p, n);
    ac_msg *inner = h->inner;
    h->inner = NULL;
    if (!child) {
        not_there(a->ref.system, inner, sender, h->path, h->len);
        return;
    }
    if (n == left) { /* the last name: the target */
        ac_tell(&child->ref, inner, sender);
        return;
    }
    ac_msg *next = ac_msg_new(&ac__msg_type_run, sizeof(hop_payload));
    char *path = next ? ac__malloc(h->len + 1) : NULL;
    if (!path) {
        ac_msg_release(next);
        ac__ext_dead_letter(a->ref.system, inner, sender, &child->ref,
                            "out of memory on the way to the actor");
        return;
    }
    memcpy(path, h->path, h->len + 1);
    hop_payload *nh = ac_msg_payload(next);
    *nh = (hop_payload){.header = {.run = hop_run, .destroy = hop_destroy},
                        .inner = inner,
                        .path = path,
                        .at = h->at + n + 1,
                        .len = h->len};
    ac_tell(&child->ref, next, sender);
}

static void hop_run(ac_ctx *ctx, ac_msg *msg)
{
    /* The hop's payload is this turn's to change: the message was made
     * for one receiver. */
    hop_payload *h = (hop_payload *)(void *)msg->payload;
    hop_from(ctx->self, h, ctx->sender);
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
    const char *rest;
    size_t rest_len;
    ac__actor *top = top_level(sys, path, len, &rest, &rest_len);
    if (!top) {
        not_there(sys, msg, sender, path, len);
        return AC_OK;
    }
    if (rest_len == 0) {
        ac_status st = ac_tell(&top->ref, msg, sender);
        ac_ref_release(&top->ref);
        return st;
    }
    ac_msg *hop = ac_msg_new(&ac__msg_type_run, sizeof(hop_payload));
    char *copy = hop ? ac__malloc(len + 1) : NULL;
    if (!copy) {
        ac_msg_release(hop);
        ac__ext_dead_letter(sys, msg, sender, &top->ref, "out of memory on the way to the actor");
        ac_ref_release(&top->ref);
        return ac__fail(AC_ENOMEM, "deliver: out of memory");
    }
    memcpy(copy, path, len);
    copy[len] = '\0';
    hop_payload *h = ac_msg_payload(hop);
    *h = (hop_payload){.header = {.run = hop_run, .destroy = hop_destroy},
                       .inner = msg,
                       .path = copy,
                       .at = (size_t)(rest - path),
                       .len = len};
    ac_status st = ac_tell(&top->ref, hop, sender);
    ac_ref_release(&top->ref);
    return st;
}

bool ac__ext_ref_is_dead(const ac_ref *ref) { return ac__ref_is_dead(ref); }

/* ---- dead letters ----------------------------------------------------- */

void ac__ext_dead_letter(ac_system *sys, ac_msg *msg, ac_ref *sender, ac_ref *recipient,
                         const char *why)
{
    ac__node *node = ac__node_make(msg, sender);
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
