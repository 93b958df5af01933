/*
 * The callers: threads outside the system and actors inside it, asking
 * the router slots every way the API offers.
 *
 * Outside: each caller thread draws its next request and how to send it:
 * ac_ask_wait, ac_ask with a completion callback, or a batch of ac_ask
 * futures collected with ac_future_poll and ac_future_wait. Inside: a
 * driver thread tells the caller actors (caller_actors.c) what to send,
 * and feeds the tell streams; a chaos thread runs pools_chaos_step.
 *
 * A request is registered in the ledger before it is sent; every answer,
 * from whichever thread delivers it, goes to ledger_settle. A send that
 * fails with an error promised nothing and is withdrawn. The ledger's
 * size bounds what is in flight: callers wait for room rather than grow
 * a queue, so the run's memory stays flat.
 */
#include <pthread.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "soak.h"

#define MAX_IN_FLIGHT 2000
#define MAX_CALLER_THREADS 16
#define FUTURE_BATCH 6

/* ---- outside the system ------------------------------------------------- */

static void ask_wait_once(const draw *d)
{
    soak_scenario sc;
    int64_t timeout;
    uint64_t id;
    ac_ref *ref = prepare_request(d, MODE_ASK_WAIT, &sc, &timeout, &id);
    if (!ref)
        return;
    ac_msg *m = request_msg(&sc, id);
    ac_answer a;
    ac_status st = m ? ac_ask_wait(ref, m, timeout, &a) : AC_ENOMEM;
    if (!m || (!a.reply && !a.error)) {
        ledger_withdraw(id); /* refused: nothing was promised */
    } else {
        note_sender(a.sender);
        settle_answer(id, st, &a);
        ac_answer_release(&a);
    }
    ac_ref_release(ref);
}

static void on_future(const ac_answer *a, void *user)
{
    uint64_t id = (uint64_t)(uintptr_t)user;
    note_sender(a->sender);
    settle_answer(id, ac_answer_status(a), a);
}

static ac_future *ask_future(const draw *d, int mode, uint64_t *id)
{
    soak_scenario sc;
    int64_t timeout;
    ac_ref *ref = prepare_request(d, mode, &sc, &timeout, id);
    if (!ref)
        return NULL;
    ac_msg *m = request_msg(&sc, *id);
    ac_future *f = m ? ac_ask(ref, m, timeout) : NULL;
    if (!f)
        ledger_withdraw(*id);
    ac_ref_release(ref);
    return f;
}

static void wait_future(ac_future *f, uint64_t id)
{
    ac_answer a;
    ac_status st = ac_future_wait(f, -1, &a);
    note_sender(a.sender);
    settle_answer(id, st, &a);
    ac_answer_release(&a);
    ac_future_release(f);
}

static void future_callback_once(const draw *d)
{
    uint64_t id;
    ac_future *f = ask_future(d, MODE_FUTURE_CB, &id);
    if (!f)
        return;
    if (ac_future_on_complete(f, on_future, (void *)(uintptr_t)id) != AC_OK)
        wait_future(f, id); /* no callback was registered: collect it here */
    else
        ac_future_release(f);
}

/* Collect whichever future of the batch settles first: polls, then a short
 * ac_future_wait on the oldest, which may come back AC_EPENDING. Each
 * answer is seen within a few ms of its settling, so the reaper's clock
 * is fair to every future of the batch. */
static int collect_one(ac_future **f, const uint64_t *ids, int n)
{
    ac_answer a;
    for (int i = 0; i < n; i++) {
        if (f[i] && ac_future_poll(f[i], &a)) {
            settle_answer(ids[i], ac_answer_status(&a), &a);
            ac_answer_release(&a);
            ac_future_release(f[i]);
            f[i] = NULL;
            return 1;
        }
    }
    for (int i = 0; i < n; i++) {
        if (!f[i])
            continue;
        ac_status st = ac_future_wait(f[i], 2, &a);
        if (st == AC_EPENDING) {
            if (a.reply || a.error || a.sender)
                soak_violation("ac_future_wait returned AC_EPENDING with an answer filled in");
            return 0;
        }
        note_sender(a.sender);
        settle_answer(ids[i], st, &a);
        ac_answer_release(&a);
        ac_future_release(f[i]);
        f[i] = NULL;
        return 1;
    }
    return 0;
}

static void future_batch(soak_rng *rng)
{
    ac_future *f[FUTURE_BATCH];
    uint64_t ids[FUTURE_BATCH];
    int n = 1 + (int)soak_rng_below(rng, FUTURE_BATCH), open = 0;
    for (int i = 0; i < n; i++) {
        draw d;
        draw_request(rng, &d);
        f[i] = ask_future(&d, MODE_FUTURE_WAIT, &ids[i]);
        open += f[i] != NULL;
    }
    while (open > 0)
        open -= collect_one(f, ids, n);
}

static void wait_for_room(void)
{
    while (ledger_in_flight() > MAX_IN_FLIGHT && !atomic_load(&g_stop))
        soak_sleep_us(200);
}

static void *outside_main(void *arg)
{
    soak_rng rng;
    soak_rng_init(&rng, g_cfg.seed, 10 + (uintptr_t)arg);
    while (!atomic_load(&g_stop)) {
        uint32_t how = soak_rng_below(&rng, 10);
        wait_for_room();
        if (how < 8) {
            draw d;
            draw_request(&rng, &d);
            future_callback_once(&d);
        } else if (how < 9) {
            future_batch(&rng);
        } else {
            draw d;
            draw_request(&rng, &d);
            ask_wait_once(&d);
        }
    }
    return NULL;
}

/* ---- the driver and the chaos thread ------------------------------------- */

static void *driver_main(void *arg)
{
    (void)arg;
    soak_rng rng;
    soak_rng_init(&rng, g_cfg.seed, 2);
    while (!atomic_load(&g_stop)) {
        wait_for_room();
        for (int i = 0; i < 8; i++)
            caller_actors_send_go(&rng);
        streams_step(&rng);
        soak_sleep_us(100);
    }
    return NULL;
}

static void *chaos_main(void *arg)
{
    (void)arg;
    soak_rng rng;
    soak_rng_init(&rng, g_cfg.seed, 1);
    while (!atomic_load(&g_stop)) {
        uint64_t pause_us = 2000 + soak_rng_below(&rng, 40000);
        soak_sleep_us(pause_us);
        if (!atomic_load(&g_stop))
            pools_chaos_step(&rng);
    }
    return NULL;
}

static pthread_t threads[MAX_CALLER_THREADS + 2];
static int thread_count;

int callers_start(ac_system *sys)
{
    if (caller_actors_start(sys))
        return -1;
    for (int i = 0; i < g_cfg.outside_callers; i++)
        pthread_create(&threads[thread_count++], NULL, outside_main, (void *)(uintptr_t)i);
    pthread_create(&threads[thread_count++], NULL, driver_main, NULL);
    pthread_create(&threads[thread_count++], NULL, chaos_main, NULL);
    return 0;
}

/* A caller blocked on an answer that never comes would hang a plain join;
 * once the reaper has flagged it, the run gives up on the caller instead. */
bool callers_join(void)
{
    for (int i = 0; i < thread_count; i++) {
        for (;;) {
            struct timespec until;
            clock_gettime(CLOCK_REALTIME, &until);
            until.tv_nsec += 50000000;
            if (until.tv_nsec >= 1000000000)
                until.tv_sec++, until.tv_nsec -= 1000000000;
            if (pthread_timedjoin_np(threads[i], NULL, &until) == 0)
                break;
            if (atomic_load(&g_failed))
                return false;
        }
    }
    thread_count = 0;
    return true;
}

/* ---- asks still open when the system terminates --------------------------- */

/* A future's callback is owed exactly one call, and an ask that is open
 * when the system terminates is no exception: its target stops without
 * answering. These asks go to silent routees of a calm pool, with a
 * timeout far beyond the run, so only the termination can settle them. */
#define OPEN_AT_END 64

static atomic_int open_calls, open_replies;

static void on_open_future(const ac_answer *a, void *user)
{
    (void)user;
    atomic_fetch_add(&open_calls, 1);
    if (a->reply || !a->error)
        atomic_fetch_add(&open_replies, 1);
}

int callers_leave_open(void)
{
    soak_scenario sc;
    ac_ref *ref = pools_acquire(STRAT_ROUND_ROBIN, &sc);
    int n = 0;
    for (int i = 0; ref && i < OPEN_AT_END; i++) {
        memset(&sc.req, 0, sizeof sc.req);
        memset(sc.req.beh, BEH_SILENT, sizeof sc.req.beh);
        sc.wrapped = false;
        ac_msg *m = request_msg(&sc, 0);
        ac_future *f = m ? ac_ask(ref, m, 600000) : NULL;
        if (f && ac_future_on_complete(f, on_open_future, NULL) == AC_OK)
            n++;
        ac_future_release(f);
    }
    ac_ref_release(ref);
    return n;
}

void callers_check_left_open(int n)
{
    int calls = atomic_load(&open_calls);
    if (calls != n)
        soak_violation(
            "%d asks were open when the system terminated, and %d of their callbacks ran "
            "(each is owed exactly one call)",
            n, calls);
    else if (atomic_load(&open_replies))
        soak_violation("%d asks to silent routees, open at termination, were answered with a reply",
                       atomic_load(&open_replies));
}
