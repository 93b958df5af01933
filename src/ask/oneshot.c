/*
 * One-shot reply refs: claim once, then settle once.
 *
 * An ask's reply ref and a scatter's slots used to carry the same claim,
 * the same delivery (claim or drop; an error message settles as its
 * error) and the same undeliverable and timeout errors, twice. This file
 * holds that once; each kind keeps only its settle (an ask completes its
 * future or tells its asker, a slot feeds its scatter) and its timer,
 * since an ask has one timer per reply ref and a scatter one for all its
 * slots.
 *
 * The claim only decides who settles; publishing the outcome is the
 * kind's (an ask's release store of SETTLED, a scatter's counters).
 */
#include "ask/oneshot.h"
#include "core/alloc.h"
#include "core/system_internal.h"

static const ac__oneshot_ops *ops_of(const ac_ref *self)
{
    return (const ac__oneshot_ops *)(const void *)self->ops;
}

bool ac__oneshot_claim(ac_ref *self)
{
    atomic_int *claim = (atomic_int *)(void *)((char *)self + ops_of(self)->claim_offset);
    int expected = 0;
    /* acq_rel: pairs with the other claimers' CAS; only one wins. */
    return atomic_compare_exchange_strong_explicit(claim, &expected, 1, memory_order_acq_rel,
                                                   memory_order_relaxed);
}

bool ac__oneshot_settled(const ac_ref *self)
{
    const atomic_int *claim =
        (const atomic_int *)(const void *)((const char *)self + ops_of(self)->claim_offset);
    /* acquire: pairs with the claimer's CAS */
    return atomic_load_explicit(claim, memory_order_acquire) != 0;
}

void ac__oneshot_deliver(ac_ref *self, ac__mailbox_node *node)
{
    if (!ac__oneshot_claim(self)) {
        ac__mailbox_node_free(node); /* settled already: dropped, silently */
        return;
    }
    ac_ref *sender;
    ac_msg *msg = ac__mailbox_node_take_msg(node, &sender);
    if (ac_msg_is(msg, &ac_msg_type_error)) {
        ac_error *err = ac_error_retain(ac_msg_error(msg));
        ac_msg_release(msg);
        ops_of(self)->settle(self, NULL, err, sender);
        return;
    }
    ops_of(self)->settle(self, msg, NULL, sender);
}

void ac__oneshot_undeliverable(ac_ref *self, ac_ref *recipient, const char *why)
{
    if (!ac__oneshot_claim(self))
        return;
    const ac__oneshot_ops *ops = ops_of(self);
    ops->settle(self, NULL, ac__undeliverable_error(recipient ? recipient : ops->target(self), why),
                NULL);
}

ac_error *ac__oneshot_timeout_error(const ac_ref *target, uint32_t timeout_ms, const char *what)
{
    ac_error *err = ac_error_new(AC_ASK_TIMEOUT_ERROR, "Ask timed out on %s after %u ms",
                                 ac_ref_path(target), timeout_ms);
    if (AC__UNLIKELY(!err))
        ac__oom_abort(what);
    return err;
}
