/*
 * ac_error: immutable, reference-counted error values.
 *
 * One allocation holds the header, the member array and both strings, so
 * building an error is one malloc and freeing it one free (plus releasing
 * members and cause).
 */
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "core/internal.h"

struct ac_error {
    atomic_uint refs;
    const char *name;
    const char *message;
    ac_error *cause;
    size_t nmembers;
    ac_error *members[];
};

static ac_error *error_build(const char *name, ac_error *cause, ac_error *const *members,
                             size_t n, const char *fmt, va_list ap)
{
    if (!name || !*name)
        return ac__fail_null(AC_EINVAL, "ac_error: name is NULL or empty");
    if (!fmt)
        return ac__fail_null(AC_EINVAL, "ac_error: format is NULL");
    if (n && !members)
        return ac__fail_null(AC_EINVAL, "ac_error_aggregate: %zu members but the array is NULL", n);
    for (size_t i = 0; i < n; i++)
        if (!members[i])
            return ac__fail_null(AC_EINVAL, "ac_error_aggregate: member %zu is NULL", i);
    va_list copy;
    va_copy(copy, ap);
    int mlen = vsnprintf(NULL, 0, fmt, copy);
    va_end(copy);
    if (mlen < 0)
        return ac__fail_null(AC_EINVAL, "ac_error: bad format \"%s\"", fmt);
    size_t nlen = strlen(name);
    ac_error *e = malloc(sizeof *e + n * sizeof(ac_error *) + nlen + 1 + (size_t)mlen + 1);
    if (!e)
        return ac__fail_null(AC_ENOMEM, "ac_error: out of memory");
    char *strings = (char *)(e->members + n);
    memcpy(strings, name, nlen + 1);
    vsnprintf(strings + nlen + 1, (size_t)mlen + 1, fmt, ap);
    atomic_init(&e->refs, 1);
    e->name = strings;
    e->message = strings + nlen + 1;
    e->cause = ac_error_retain(cause);
    e->nmembers = n;
    for (size_t i = 0; i < n; i++)
        e->members[i] = ac_error_retain(members[i]);
    return e;
}

ac_error *ac_error_new(const char *name, const char *fmt, ...)
{
    va_list ap;
    va_start(ap, fmt);
    ac_error *e = error_build(name, NULL, NULL, 0, fmt, ap);
    va_end(ap);
    return e;
}

ac_error *ac_error_new_caused(const char *name, ac_error *cause, const char *fmt, ...)
{
    va_list ap;
    va_start(ap, fmt);
    ac_error *e = error_build(name, cause, NULL, 0, fmt, ap);
    va_end(ap);
    return e;
}

ac_error *ac_error_aggregate(ac_error *const *members, size_t n, const char *fmt, ...)
{
    va_list ap;
    va_start(ap, fmt);
    ac_error *e = error_build(AC_AGGREGATE_ERROR, NULL, members, n, fmt, ap);
    va_end(ap);
    return e;
}

ac_error *ac_error_retain(ac_error *err)
{
    if (err)
        atomic_fetch_add_explicit(&err->refs, 1, memory_order_relaxed);
    return err;
}

void ac_error_release(ac_error *err)
{
    /* acq_rel: every other holder's uses happen before the free. */
    if (!err || atomic_fetch_sub_explicit(&err->refs, 1, memory_order_acq_rel) != 1)
        return;
    for (size_t i = 0; i < err->nmembers; i++)
        ac_error_release(err->members[i]);
    ac_error_release(err->cause);
    free(err);
}

const char *ac_error_name(const ac_error *err) { return err ? err->name : ""; }
const char *ac_error_message(const ac_error *err) { return err ? err->message : ""; }
ac_error *ac_error_cause(const ac_error *err) { return err ? err->cause : NULL; }
size_t ac_error_member_count(const ac_error *err) { return err ? err->nmembers : 0; }

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

static void print_error(FILE *out, const ac_error *e, int depth, const char *label)
{
    fprintf(out, "%*s%s%s: %s\n", depth * 2, "", label, e->name, e->message);
    for (size_t i = 0; i < e->nmembers; i++) {
        char lbl[32];
        snprintf(lbl, sizeof lbl, "[%zu] ", i);
        print_error(out, e->members[i], depth + 1, lbl);
    }
    if (e->cause)
        print_error(out, e->cause, depth + 1, "caused by ");
}

char *ac_error_to_string(const ac_error *err)
{
    char *buf = NULL;
    size_t len = 0;
    FILE *f = open_memstream(&buf, &len);
    if (!f)
        return NULL;
    if (err)
        print_error(f, err, 0, "");
    else
        fputs("(no error)\n", f);
    if (fclose(f) != 0) {
        free(buf);
        return NULL;
    }
    return buf;
}

int ac_error_fprint(const ac_error *err, FILE *out)
{
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
    if (!msg || msg->type != &ac_msg_type_error)
        return ac__fail_null(msg ? AC_ETYPE : AC_EINVAL, "ac_msg_error: message is %s, not an error",
                             msg ? msg->type->name : "NULL");
    ac_error *e;
    memcpy(&e, msg->payload, sizeof e);
    return e;
}
