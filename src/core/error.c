/*
 * ac_error: immutable, reference-counted error values.
 *
 * One allocation holds the header, the member array and both strings, so
 * building an error is one malloc and freeing it one free (plus releasing
 * members and cause).
 *
 * Errors form a DAG (one error may be a member or cause of many) whose
 * depth is capped at AC_ERROR_MAX_DEPTH when an error is built, from the
 * depths its parts carry, and whose unfolded size (the tree it prints as,
 * a shared part counted each time it appears) is capped at
 * AC_ERROR_MAX_NODES the same way: so a DAG that shares one part at every
 * level cannot print 2^64 lines. Nothing here recurses: releasing walks a list of
 * errors whose count reached zero, threaded through the errors themselves,
 * so any shape frees in constant stack; printing walks depth first with a
 * stack of AC_ERROR_MAX_DEPTH frames, which the cap makes enough.
 */
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "core/alloc.h"
#include "core/last_error.h"
#include "core/msg_internal.h"

struct ac_error {
    atomic_uint refs;
    unsigned depth; /* 1 + the deepest member or cause; <= AC_ERROR_MAX_DEPTH */
    unsigned nodes; /* 1 + the nodes of every member and the cause; <= AC_ERROR_MAX_NODES */
    union {
        const char *name;     /* while alive */
        ac_error *next_dead;  /* while ac_error_release frees it */
    };
    const char *message;
    ac_error *cause;
    size_t nmembers;
    ac_error *members[];
};

static ac_status check_parts(const char *name, const char *fmt, ac_error *const *members,
                             size_t n)
{
    if (!name || !*name)
        return ac__fail(AC_EINVAL, "ac_error: name is NULL or empty");
    if (!fmt)
        return ac__fail(AC_EINVAL, "ac_error: format is NULL");
    if (n && !members)
        return ac__fail(AC_EINVAL, "ac_error_aggregate: %zu members but the array is NULL", n);
    for (size_t i = 0; i < n; i++)
        if (!members[i])
            return ac__fail(AC_EINVAL, "ac_error_aggregate: member %zu is NULL", i);
    return AC_OK;
}

/* The depth of an error with these parts: 1 + the deepest of them. */
static unsigned depth_of(const ac_error *cause, ac_error *const *members, size_t n)
{
    unsigned deepest = cause ? cause->depth : 0;
    for (size_t i = 0; i < n; i++)
        if (members[i]->depth > deepest)
            deepest = members[i]->depth;
    return deepest + 1;
}

/* The unfolded size of an error with these parts, saturating just past
 * the cap (each part is within it, so the sum cannot overflow). */
static unsigned nodes_of(const ac_error *cause, ac_error *const *members, size_t n)
{
    uint64_t total = 1 + (cause ? cause->nodes : 0);
    for (size_t i = 0; i < n && total <= AC_ERROR_MAX_NODES; i++)
        total += members[i]->nodes;
    return total > AC_ERROR_MAX_NODES ? AC_ERROR_MAX_NODES + 1 : (unsigned)total;
}

/* One allocation for the error and its strings; the parts are checked. */
static ac_error *error_alloc(const char *name, unsigned depth, unsigned nodes, ac_error *cause,
                             ac_error *const *members, size_t n, const char *fmt, va_list ap)
{
    va_list copy;
    va_copy(copy, ap);
    int mlen = vsnprintf(NULL, 0, fmt, copy);
    va_end(copy);
    if (mlen < 0)
        return ac__fail_null(AC_EINVAL, "ac_error: bad format \"%s\"", fmt);
    size_t nlen = strlen(name);
    ac_error *e = ac__malloc(sizeof *e + n * sizeof(ac_error *) + nlen + 1 + (size_t)mlen + 1);
    if (!e)
        return ac__fail_null(AC_ENOMEM, "ac_error: out of memory");
    char *strings = (char *)(e->members + n);
    memcpy(strings, name, nlen + 1);
    vsnprintf(strings + nlen + 1, (size_t)mlen + 1, fmt, ap);
    atomic_init(&e->refs, 1);
    e->depth = depth;
    e->nodes = nodes;
    e->name = strings;
    e->message = strings + nlen + 1;
    e->cause = ac_error_retain(cause);
    e->nmembers = n;
    for (size_t i = 0; i < n; i++)
        e->members[i] = ac_error_retain(members[i]);
    return e;
}

static ac_error *error_build(const char *name, ac_error *cause, ac_error *const *members,
                             size_t n, const char *fmt, va_list ap)
{
    if (check_parts(name, fmt, members, n) != AC_OK)
        return NULL;
    unsigned depth = depth_of(cause, members, n);
    if (depth > AC_ERROR_MAX_DEPTH)
        return ac__fail_null(AC_EINVAL,
                             "ac_error: \"%s\" would nest %u errors deep; errors nest at most "
                             "AC_ERROR_MAX_DEPTH (%d) deep",
                             name, depth, AC_ERROR_MAX_DEPTH);
    unsigned nodes = nodes_of(cause, members, n);
    if (nodes > AC_ERROR_MAX_NODES)
        return ac__fail_null(AC_EINVAL,
                             "ac_error: \"%s\" would hold more than AC_ERROR_MAX_NODES (%d) "
                             "errors, counting a shared one each time it appears",
                             name, AC_ERROR_MAX_NODES);
    return error_alloc(name, depth, nodes, cause, members, n, fmt, ap);
}

ac_error *ac_error_new(const char *name, const char *fmt, ...)
{
    ac__clear_status();
    va_list ap;
    va_start(ap, fmt);
    ac_error *e = error_build(name, NULL, NULL, 0, fmt, ap);
    va_end(ap);
    return e;
}

ac_error *ac_error_new_caused(const char *name, ac_error *cause, const char *fmt, ...)
{
    ac__clear_status();
    va_list ap;
    va_start(ap, fmt);
    ac_error *e = error_build(name, cause, NULL, 0, fmt, ap);
    va_end(ap);
    return e;
}

ac_error *ac_error_aggregate(ac_error *const *members, size_t n, const char *fmt, ...)
{
    ac__clear_status();
    va_list ap;
    va_start(ap, fmt);
    ac_error *e = error_build(AC_AGGREGATE_ERROR, NULL, members, n, fmt, ap);
    va_end(ap);
    return e;
}

ac_error *ac_error_retain(ac_error *err)
{
    /* Relaxed: the caller holds a reference, so the count cannot reach zero
     * meanwhile; the release that frees orders itself (drop_last). */
    if (err)
        atomic_fetch_add_explicit(&err->refs, 1, memory_order_relaxed);
    return err;
}

/* Drop one reference; true when it was the last, and `err` is now ours
 * alone to free. acq_rel: every other holder's uses happen before the
 * free (the release half publishes ours, the acquire half sees theirs). */
static bool drop_last(ac_error *err)
{
    return err && atomic_fetch_sub_explicit(&err->refs, 1, memory_order_acq_rel) == 1;
}

/* Push an error whose count reached zero onto the list still to free. */
static void push_dead(ac_error **dead, ac_error *err)
{
    err->next_dead = *dead;
    *dead = err;
}

void ac_error_release(ac_error *err)
{
    if (!drop_last(err))
        return;
    ac_error *dead = NULL;
    push_dead(&dead, err);
    while (dead) {
        ac_error *e = dead;
        dead = e->next_dead;
        for (size_t i = 0; i < e->nmembers; i++)
            if (drop_last(e->members[i]))
                push_dead(&dead, e->members[i]);
        if (drop_last(e->cause))
            push_dead(&dead, e->cause);
        free(e);
    }
}

const char *ac_error_name(const ac_error *err) { return err ? err->name : ""; }
const char *ac_error_message(const ac_error *err) { return err ? err->message : ""; }
ac_error *ac_error_cause(const ac_error *err) { return err ? err->cause : NULL; }
size_t ac_error_member_count(const ac_error *err) { return err ? err->nmembers : 0; }
size_t ac_error_depth(const ac_error *err) { return err ? err->depth : 0; }

ac_error *ac_error_member(const ac_error *err, size_t i)
{
    return err && i < err->nmembers ? err->members[i] : NULL;
}

bool ac_error_is(const ac_error *err, const char *name)
{
    return err && name && strcmp(err->name, name) == 0;
}

bool ac_error_all_timeouts(const ac_error *err)
{
    if (!err || err->nmembers == 0)
        return false;
    for (size_t i = 0; i < err->nmembers; i++)
        if (!ac_error_is(err->members[i], AC_ASK_TIMEOUT_ERROR))
            return false;
    return true;
}

/* ---- printing --------------------------------------------------------- */

/* An error being printed, and which of its parts comes next: members
 * 0..nmembers-1, then the cause. */
typedef struct print_frame {
    const ac_error *err;
    size_t next;
} print_frame;

/* The next part of `f` to print, its label written to `label`; NULL when
 * all are printed. */
static const ac_error *next_part(print_frame *f, char *label, size_t cap)
{
    const ac_error *e = f->err;
    if (f->next < e->nmembers) {
        snprintf(label, cap, "[%zu] ", f->next);
        return e->members[f->next++];
    }
    if (f->next++ == e->nmembers && e->cause) {
        snprintf(label, cap, "caused by ");
        return e->cause;
    }
    return NULL;
}

static void print_line(FILE *out, const ac_error *e, size_t level, const char *label)
{
    fprintf(out, "%*s%s%s: %s\n", (int)(level * 2), "", label, e->name, e->message);
}

/* Depth first, parts in order. stack[k] is the error printed at level k;
 * an error at level k nests at most AC_ERROR_MAX_DEPTH - k deep, so the
 * levels, and the stack, stop below AC_ERROR_MAX_DEPTH. */
static void print_error(FILE *out, const ac_error *root)
{
    print_frame stack[AC_ERROR_MAX_DEPTH];
    size_t top = 0;
    char label[32];
    stack[0] = (print_frame){.err = root};
    print_line(out, root, 0, "");
    for (;;) {
        const ac_error *part = next_part(&stack[top], label, sizeof label);
        if (part) {
            AC__ASSERT(top + 1 < AC_ERROR_MAX_DEPTH);
            stack[++top] = (print_frame){.err = part};
            print_line(out, part, top, label);
        } else if (top-- == 0) {
            return;
        }
    }
}

char *ac_error_to_string(const ac_error *err)
{
    ac__clear_status();
    char *buf = NULL;
    size_t len = 0;
    /* open_memstream allocates: the hook may fail it as it fails malloc. */
    FILE *f = ac__alloc_should_fail() ? NULL : open_memstream(&buf, &len);
    if (!f)
        return ac__fail_null(AC_ENOMEM, "ac_error_to_string: out of memory");
    if (err)
        print_error(f, err);
    else
        fputs("(no error)\n", f);
    if (fclose(f) != 0) {
        free(buf);
        return ac__fail_null(AC_ENOMEM, "ac_error_to_string: out of memory");
    }
    return buf;
}

int ac_error_fprint(const ac_error *err, FILE *out)
{
    ac__clear_status();
    if (!out)
        return ac__fail(AC_EINVAL, "ac_error_fprint: stream is NULL"), -1;
    char *s = ac_error_to_string(err);
    if (!s)
        return -1;
    int n = fputs(s, out) < 0 ? -1 : (int)strlen(s);
    free(s);
    return n;
}

/* ---- errors as messages ----------------------------------------------- */

static void error_msg_destroy(void *payload, size_t size)
{
    (void)size;
    ac_error_release(*(ac_error **)payload);
}

const ac_msg_type ac_msg_type_error = {.name = "actorc.Error", .destroy = error_msg_destroy};

ac_msg *ac_msg_error_new(ac_error *err)
{
    ac__clear_status();
    if (!err)
        return ac__fail_null(AC_EINVAL, "ac_msg_error_new: error is NULL");
    ac_msg *m = ac_msg_new(&ac_msg_type_error, sizeof err);
    if (!m) {
        ac_error_release(err);
        return NULL;
    }
    memcpy(m->payload, &err, sizeof err);
    return m;
}

ac_error *ac_msg_error(const ac_msg *msg)
{
    ac__clear_status();
    if (!msg || msg->type != &ac_msg_type_error)
        return ac__fail_null(msg ? AC_ETYPE : AC_EINVAL, "ac_msg_error: message is %s, not an error",
                             msg ? msg->type->name : "NULL");
    ac_error *e;
    memcpy(&e, msg->payload, sizeof e);
    return e;
}
