/*
 * The context a handler gets: who it is, who sent the message, its state,
 * its family, and logging under its path. A context lives on the worker's
 * stack for one callback, so every accessor is valid inside that callback
 * only.
 */
#include <stdarg.h>

#include "core/cell.h"
#include "core/last_error.h"
#include "core/system_internal.h"
#include "core/turn.h"
#include "log/log_internal.h"

ac_ref *ac_self(ac_ctx *ctx) { return ctx ? &ctx->self->ref : NULL; }
ac_ref *ac_sender(ac_ctx *ctx) { return ctx ? ctx->sender : NULL; }
ac_system *ac_ctx_system(ac_ctx *ctx) { return ctx ? ctx->self->ref.system : NULL; }
const char *ac_self_path(ac_ctx *ctx) { return ctx ? ctx->self->path : ""; }
const char *ac_self_name(ac_ctx *ctx) { return ctx ? ctx->self->name : ""; }
void *ac_ctx_state(ac_ctx *ctx) { return ctx ? ctx->self->state_mem : NULL; }
void *ac_ctx_user_data(ac_ctx *ctx) { return ctx ? ctx->self->user_data : NULL; }

ac_ref *ac_parent(ac_ctx *ctx)
{
    return ctx && ctx->self->parent ? &ctx->self->parent->ref : NULL;
}

typedef struct collect_arg {
    ac_ref **out;
    size_t cap, n;
} collect_arg;

static bool collect_child(ac__actor *child, void *arg)
{
    collect_arg *c = arg;
    if (c->n < c->cap)
        c->out[c->n] = &child->ref;
    c->n++;
    return true;
}

size_t ac_children(ac_ctx *ctx, ac_ref **out, size_t cap)
{
    if (!ctx)
        return 0;
    collect_arg c = {.out = out, .cap = out ? cap : 0};
    ac__children_each(ctx->self->children, collect_child, &c);
    return c.n;
}

ac_ref *ac_child(ac_ctx *ctx, const char *name)
{
    ac__clear_status();
    if (!ctx || !name)
        return ac__fail_null(AC_EINVAL, "ac_child: %s is NULL", ctx ? "name" : "ctx");
    ac__actor *c = ac__children_find(ctx->self->children, name);
    return c ? &c->ref : ac__fail_null(AC_ENOTFOUND, "%s has no child \"%s\"", ctx->self->path, name);
}

void ac_logv(ac_ctx *ctx, ac_log_level level, const char *fmt, va_list ap)
{
    if (!ctx || !fmt)
        return;
    ac__logv(&ctx->self->ref.system->log, level, ctx->self->path, fmt, ap);
}

void ac_log(ac_ctx *ctx, ac_log_level level, const char *fmt, ...)
{
    va_list ap;
    va_start(ap, fmt);
    ac_logv(ctx, level, fmt, ap);
    va_end(ap);
}

bool ac_in_actor(void) { return ac__tls_actor != NULL; }
