/*
 * The transport thread (ac-transport): one per node. It finishes peers
 * other threads evicted, sends what is queued, hands what arrived to the
 * handshake and dispatch, keeps house (settled asks, late connections,
 * idle ones, forgotten peers, the heap after a flood) and sleeps in the
 * transport's wait until there is work or housekeeping is due. At stop it
 * says LEAVE to every peer that said hello and loses them all.
 *
 * Housekeeping runs every 20 ms while something is under way (asks
 * pending, frames lately, peers not yet up, a heap to trim), and
 * otherwise at the next deadline it knows of (a connection late or idle
 * by then), at most QUIET_NS away: an idle node wakes about once a
 * second rather than fifty times. Whatever starts something (a send, a
 * dial, frames that arrive) wakes the loop, and the turn that does work
 * brings housekeeping back within 20 ms, so no deadline is missed for
 * want of a tick. What the loop does not time itself is seen without it:
 * a dropped connection and a heartbeat timeout come as events the wait
 * returns for, timers are the system's.
 */
#include <sched.h>
#include <stdlib.h>
#ifdef __GLIBC__
#include <malloc.h>
#endif

#include "core/hop_trace.h"
#include "core/sync.h"
#include "remote/node_internal.h"

#define HOUSEKEEPING_NS 20000000ll /* 20 ms, while something is under way */
#define SWEEP_NS 100000000ll       /* 100 ms, likewise */
#define QUIET_NS 1000000000ll      /* 1 s: nothing under way */

static void trim_heap(void)
{
    ac__alloc_trim(); /* the depot's blocks and this thread's */
#ifdef __GLIBC__
    malloc_trim(0);
#endif
}

/* Over the whole table: forget the entries nothing refers to and that
 * have no connection (addresses named in frames, answered or not), and
 * lose those refused whose deadline passed. The lost are gathered first,
 * so that the walk does not race the table's changes. True when a peer
 * is left that is not up yet (to forget, or to lose, later). */
static bool sweep(ac_node *node, int64_t t)
{
    enum { BATCH = 64 };
    ac__peer *late[BATCH];
    size_t nlate;
    bool unsettled;
    do {
        nlate = 0;
        unsettled = false;
        pthread_mutex_lock(&node->lock);
        for (ac__peer *p = node->peers.oldest, *newer; p; p = newer) {
            newer = p->newer;
            bool connecting =
                atomic_load_explicit(&p->state, memory_order_relaxed) == AC__PEER_CONNECTING;
            if (ac__peer_forgettable(node, p))
                ac__peer_forget(node, p);
            else if (p->refused && !p->conn && t > p->connect_deadline_ns && connecting &&
                     nlate < BATCH)
                late[nlate++] = ac__peer_retain(p);
            else if (p != node->self && connecting)
                unsettled = true;
        }
        pthread_mutex_unlock(&node->lock);
        for (size_t i = 0; i < nlate; i++) {
            ac__conn_lose_late(node, late[i], t);
            ac__peer_release(late[i]);
        }
    } while (nlate == BATCH);
    return unsettled;
}

static int64_t earliest(int64_t a, int64_t b) { return a < b ? a : b; }

/* Returns when it is next due. */
static int64_t housekeeping(ac_node *node)
{
    ac__corr_sweep(node);
    int64_t t = ac__node_now_ns();
    /* Dialled and not connected, or not answered, in time. */
    int64_t next = earliest(ac__conns_check_late(node, t), t + QUIET_NS);
    if (node->options.idle_timeout_ms > 0) {
        ac__conns_close_idle(node, t);
        next = earliest(next, ac__conns_next_idle(node));
    }
    if (ac__corr_count(node)) /* settled asks leave within about 20 ms */
        next = earliest(next, t + HOUSEKEEPING_NS);
    if (t >= node->next_sweep_ns) {
        bool unsettled = sweep(node, t);
        /* Many peers went (a flood's): once the wave has passed, what they
         * took goes back to the system rather than staying with malloc. */
        uint64_t gone = atomic_load_explicit(&node->m.peers_forgotten, memory_order_relaxed) +
                        atomic_load_explicit(&node->m.node_down, memory_order_relaxed);
        if (gone == node->gone_mark && gone - node->trimmed_mark >= 256) {
            node->trimmed_mark = gone;
            pthread_mutex_lock(&node->lock);
            ac__ptab_shrink(&node->peers);
            pthread_mutex_unlock(&node->lock);
            ac__rrefs_shrink(node);
            ac__alloc_request_flush(); /* the workers' cached blocks, at their next park */
            trim_heap();
            node->trim_again_ns = t + 2 * SWEEP_NS;
        } else if (node->trim_again_ns && t >= node->trim_again_ns) {
            node->trim_again_ns = 0; /* what the workers handed over since */
            trim_heap();
        }
        /* A wave of losses still passing, a trim to come or a peer not up
         * yet: look again soon. */
        bool busy = unsettled || gone != node->gone_mark || node->trim_again_ns;
        node->next_sweep_ns = t + (busy ? SWEEP_NS : QUIET_NS);
        node->gone_mark = gone;
    }
    return earliest(next, node->next_sweep_ns);
}

/* After frames arrived, how long the transport looks for more work
 * before it sleeps, and of that how long without yielding its core (as
 * the scheduler's idle workers do). What they set off here mostly comes
 * within it (an ask's reply from the actor that got the ask, the next
 * ask of a caller that just got its answer) and is taken without a
 * wake-up: no wake-up on the sender's side, no return from the wait on
 * the transport's. Not after sends alone: their answers take a round
 * trip, and spinning for them took cores the peers' threads and the
 * transport's own needed. An idle node spins not at all. */
#define SPIN_NS 100000ll
#define SPIN_PURE_NS 5000ll

/* Look for work until SPIN_NS after frames last came (`last_work_ns`):
 * true when some is there (frames queued, a message arrived). */
static bool spin_for_work(ac_node *node, int64_t last_work_ns)
{
    for (int64_t t = ac__node_now_ns(); t - last_work_ns < SPIN_NS; t = ac__node_now_ns()) {
        if (atomic_load_explicit(&node->stopping, memory_order_acquire) ||
            ac__outq_waits(node) || node->tp->readable(node->tstate))
            return true;
        if (t - last_work_ns > SPIN_PURE_NS)
            sched_yield(); /* a thread that has work (a worker, the transport's) goes first */
    }
    return false;
}

/* Stopping: tell every peer that said hello, then lose them all. */
static void leave_all(ac_node *node)
{
    ac__peer_finish_evicted(node);
    for (;;) {
        ac__peer *p = NULL;
        pthread_mutex_lock(&node->lock);
        for (ac__peer *q = node->peers.newest; q; q = q->older)
            if (q != node->self) {
                p = ac__peer_retain(q);
                break;
            }
        pthread_mutex_unlock(&node->lock);
        if (!p)
            break;
        if (p->conn && atomic_load_explicit(&p->state, memory_order_relaxed) == AC__PEER_UP) {
            ac__wire_env leave = {.kind = AC__WIRE_LEAVE};
            leave.sender.kind = AC__WIRE_SENDER_NONE;
            uint8_t buf[64];
            size_t len = ac__wire_encode(&leave, buf, sizeof buf);
            if (len <= sizeof buf)
                node->tp->send_last(node->tstate, p->conn, buf, len);
        }
        ac__peer_down(node, p, "this node stopped");
        ac__peer_release(p);
    }
    ac__outq_drop(node, false);
    ac__lookup_cache_forget(node, NULL);
}

void *ac__node_loop(void *arg)
{
    ac_node *node = arg;
    ac__thread_name("ac-transport");
    node->loop_ns = ac__node_now_ns();
    int64_t next_house = node->loop_ns + HOUSEKEEPING_NS;
    int64_t last_work = 0;
    for (;;) {
        ac__peer_finish_evicted(node);
        size_t did = ac__outq_drain(node);
        size_t came = node->tp->drain(node->tstate, 256);
        did += came;
        if (atomic_load_explicit(&node->stopping, memory_order_acquire) && did == 0)
            break;
        int64_t t = ac__node_now_ns();
        node->loop_ns = t; /* the stamps of what this turn's end and the next send */
        if (t >= next_house)
            next_house = housekeeping(node);
        else if (did && next_house > t + HOUSEKEEPING_NS)
            next_house = t + HOUSEKEEPING_NS; /* something is under way */
        if (came)
            last_work = t;
        else if (!did && last_work && t < next_house && spin_for_work(node, last_work)) {
            ac__hop(AC__HOP_SPIN_FOUND);
            continue;
        }
        long timeout_ms = 0;
        if (did == 0) {
            /* seq_cst: pairs with ac__node_wake's load (see there). */
            atomic_store_explicit(&node->sleeping, true, memory_order_seq_cst);
            timeout_ms = ac__outq_waits(node)
                             ? 0
                             : (long)((next_house - ac__node_now_ns()) / 1000000ll) + 1;
            if (timeout_ms < 0)
                timeout_ms = 0;
        }
        node->tp->wait(node->tstate, timeout_ms);
        if (timeout_ms)
            ac__hop(AC__HOP_WOKE);
        atomic_store_explicit(&node->sleeping, false, memory_order_relaxed);
        if (timeout_ms) {
            node->loop_ns = ac__node_now_ns(); /* it slept: stamps after it are now's */
            atomic_fetch_add_explicit(&node->m.transport_wakeups, 1, memory_order_relaxed);
        }
    }
    leave_all(node);
    if (node->tp->stop)
        node->tp->stop(node->tstate);
    return NULL;
}
