/*
 * Loser cancellation as a routee sees it: is the request it handles, or
 * the reply target it kept, still wanted? The answer comes from the reply
 * ref itself (ac__ref_ops.cancelled): a gather's slot says yes once its
 * gather has been decided, when its router cancels losers (gather.c);
 * every other ref has no such op and is always wanted. Dropping queued
 * requests is the turn's business (core/turn.c), for actors spawned to do
 * so (ac__props_skip_cancelled).
 */
#include "core/cell.h"
#include "routing/gather.h"

bool ac_reply_cancelled(ac_ref *reply_to)
{
    return reply_to && reply_to->ops->cancelled && reply_to->ops->cancelled(reply_to, false);
}

bool ac_request_cancelled(ac_ctx *ctx)
{
    return ctx && ac_reply_cancelled(ctx->sender);
}
