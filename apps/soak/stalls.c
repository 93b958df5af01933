/*
 * Stalls: how late the system itself was running, measured.
 *
 * Some answers are wrong only on time: a routee told to reply in 20 ms
 * whose part of a scatter timed out after 300 ms, an ask that had to be
 * answered and timed out. On a machine that is shared and overloaded the
 * OS can hold a worker or the timer thread off a core for that long, and
 * then such an answer is the runtime keeping its word about timeouts, not
 * breaking it. To tell the two apart, a heartbeat actor takes a tick every
 * 10 ms from a repeating timer and records each gap beyond the period as a
 * stall; the reaper records its own oversleeps too, as a stall of the
 * whole process (say, SIGSTOP) reaches it before the heartbeat's timer. A timing-only violation is
 * excused when the stalls overlapping the request's life add up to a quarter of its margin; the
 * summary counts the excused answers and the longest stall, so a run that leans on the excuse shows
 * it.
 */
#include <pthread.h>

#include "soak.h"

#define PERIOD_MS 10
#define MIN_STALL_NS 5000000ull /* shorter gaps are the timer's own jitter */
#define RING 256

typedef struct stall {
    uint64_t from_ns, to_ns;
} stall;

static pthread_mutex_t lock = PTHREAD_MUTEX_INITIALIZER;
static stall ring[RING];
static uint64_t recorded; /* stalls ever recorded; ring holds the last RING */
static uint64_t longest_ns;
static uint64_t last_tick_ns;

static const ac_msg_type tick_type = {.name = "soak.Tick"};

void stalls_record(uint64_t from, uint64_t to)
{
    pthread_mutex_lock(&lock);
    ring[recorded++ % RING] = (stall){from, to};
    if (to - from > longest_ns)
        longest_ns = to - from;
    pthread_mutex_unlock(&lock);
}

static void heartbeat_receive(ac_ctx *ctx, ac_msg *msg)
{
    (void)ctx;
    (void)msg;
    uint64_t now = soak_now_ns(), period = PERIOD_MS * 1000000ull;
    if (last_tick_ns && now - last_tick_ns > period + MIN_STALL_NS)
        stalls_record(last_tick_ns + period, now);
    last_tick_ns = now; /* only the heartbeat's handler writes it */
}

static const ac_actor_def heartbeat_def = {.name = "SoakHeartbeat", .receive = heartbeat_receive};

int stalls_start(ac_system *sys)
{
    ac_props *p = ac_props_new(&heartbeat_def, NULL);
    ac_ref *hb = p ? ac_spawn(sys, p, "heartbeat") : NULL;
    ac_msg *tick = hb ? ac_msg_new(&tick_type, 0) : NULL;
    ac_cancellable *c = tick ? ac_schedule_repeat(hb, PERIOD_MS, PERIOD_MS, tick, NULL) : NULL;
    ac_cancellable_release(c);
    ac_ref_release(hb);
    return c ? 0 : -1;
}

uint64_t stalls_within(uint64_t from_ns, uint64_t to_ns)
{
    uint64_t total = 0;
    pthread_mutex_lock(&lock);
    uint64_t n = recorded < RING ? recorded : RING;
    for (uint64_t i = 0; i < n; i++) {
        const stall *s = &ring[(recorded - 1 - i) % RING];
        uint64_t a = s->from_ns > from_ns ? s->from_ns : from_ns;
        uint64_t b = s->to_ns < to_ns ? s->to_ns : to_ns;
        if (b > a)
            total += b - a;
    }
    pthread_mutex_unlock(&lock);
    return total;
}

bool stalls_explain(const soak_scenario *sc, int64_t margin_ms)
{
    uint64_t stalled = stalls_within(sc->sent_ns, soak_now_ns());
    return margin_ms > 0 && stalled * 4 >= (uint64_t)margin_ms * 1000000ull;
}

double stalls_longest_ms(void)
{
    pthread_mutex_lock(&lock);
    double ms = (double)longest_ns / 1e6;
    pthread_mutex_unlock(&lock);
    return ms;
}
