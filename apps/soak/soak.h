/*
 * actorc-soak: a seeded, randomized workload with fault injection that
 * checks, while it runs, the promises an actor runtime makes under load:
 * every ask and every scatter settles exactly once with an answer of an
 * allowed kind, tells keep their order per sender, dead letters come only
 * from stopped actors, memory stays flat, and the system ends clean.
 *
 * Shared declarations of its parts: the random streams (rng.c), the
 * ledger of outstanding requests and its reaper (ledger.c), what answer
 * each injected fault allows (expect.c), the routees (routee.c), the
 * router slots and the chaos that stops and respawns them (pools.c), what
 * a request is (requests.c), the callers outside the system with the
 * driver and chaos threads (callers.c) and inside it (caller_actors.c),
 * the ordered tell streams (streams.c), death watch (watch.c), the
 * system's own stalls (stalls.c), dead-letter reconciliation
 * (deadletters.c), the resident-memory watch (memory.c), allocation-
 * failure injection (fail_alloc.c) and the run itself (main.c).
 */
#ifndef SOAK_H
#define SOAK_H

#include <actorc.h>
#include <stdatomic.h>
#include <stdbool.h>
#include <stdint.h>
#include <stdio.h>


/* 1 in a build under ASan or TSan, whose runs are several times slower. */
#if defined(__SANITIZE_ADDRESS__) || defined(__SANITIZE_THREAD__)
#define SOAK_SANITIZED 1
#elif defined(__has_feature)
#if __has_feature(address_sanitizer) || __has_feature(thread_sanitizer)
#define SOAK_SANITIZED 1
#endif
#endif
#ifndef SOAK_SANITIZED
#define SOAK_SANITIZED 0
#endif
/* How many times longer a wait for another process may take. */
#define SOAK_SLOW (SOAK_SANITIZED ? 4 : 1)
/* ---- random streams (rng.c) ------------------------------------------- */

/* xoshiro256**, seeded through splitmix64. One per thread, each derived
 * from the run's seed and the thread's role, so a seed replays the same
 * sequence of choices on every thread. */
typedef struct soak_rng {
    uint64_t s[4];
} soak_rng;

void soak_rng_init(soak_rng *r, uint64_t seed, uint64_t stream);
uint64_t soak_rng_next(soak_rng *r);
uint32_t soak_rng_below(soak_rng *r, uint32_t n); /* uniform in [0, n) */
double soak_rng_unit(soak_rng *r);                /* uniform in [0, 1) */

/* ---- clocks ----------------------------------------------------------- */

uint64_t soak_now_ns(void);
void soak_sleep_us(uint64_t us);

/* ---- what a routee does with a request -------------------------------- */

typedef enum soak_behaviour {
    BEH_NOW = 0, /* reply at once */
    BEH_LATE,    /* reply after late_ms, through ac_schedule_once to self */
    BEH_ERROR,   /* reply with a SoakError */
    BEH_FAIL,    /* ac_fail: supervision decides, nobody answers */
    BEH_STOP,    /* stop itself without answering */
    BEH_SILENT,  /* never answer */
    BEH_COUNT
} soak_behaviour;

#define SOAK_MAX_ROUTEES 8
/* How long a caller gives a request that a routee is to answer, beyond a
 * scatter's own timeout. */
#define ANSWER_WITHIN_MS 3000

static inline bool beh_answers(int b) { return b == BEH_NOW || b == BEH_LATE; }
const char *beh_name(int b);

/* The request a caller sends: routee-K (1-based) follows beh[K-1]. */
typedef struct soak_request {
    uint64_t id;
    uint64_t sent_ns; /* when the caller sent it */
    uint8_t beh[SOAK_MAX_ROUTEES];
    uint16_t late_ms;
} soak_request;

typedef struct soak_reply {
    uint64_t id;
} soak_reply;

extern const ac_msg_type soak_request_type; /* "soak.Request" */
extern const ac_msg_type soak_reply_type;   /* "soak.Reply" */
extern const ac_actor_def soak_routee;
/* ", and routee-1 got it 212 ms after it was due": what the routees saw
 * of request `id` arriving late (more than 20 ms), for a report. */
void routee_delays(uint64_t id, char *buf, size_t n);
#define SOAK_ERROR "SoakError"

/* ---- router kinds ----------------------------------------------------- */

typedef enum soak_strategy {
    STRAT_ROUND_ROBIN = 0,
    STRAT_RANDOM,
    STRAT_BROADCAST,
    STRAT_SMALLEST,
    STRAT_CUSTOM,
    STRAT_SCATTER,
    STRAT_COUNT
} soak_strategy;

const char *strategy_name(int s);

/* How the callers reach a router. */
typedef enum soak_mode {
    MODE_ASK_WAIT = 0, /* outside: ac_ask_wait */
    MODE_FUTURE_CB,    /* outside: ac_ask + ac_future_on_complete */
    MODE_FUTURE_WAIT,  /* outside: ac_ask + ac_future_wait (or poll) */
    MODE_ASK_IN_FN,    /* inside: ac_ask_in with a continuation */
    MODE_ASK_IN_MSG,   /* inside: ac_ask_in, the answer as a message */
    MODE_TELL_SELF,    /* inside: ac_tell(router, msg, self) */
    MODE_COUNT
} soak_mode;

const char *mode_name(int m);

/* Everything the checker needs to know about one request: where it went
 * and what was injected. */
typedef struct soak_scenario {
    uint8_t strategy, size, mode;
    bool calm;    /* a pool that chaos never touches and that never fails */
    bool wrapped; /* sent in the Broadcast wrapper: to every routee */
    uint8_t slot;
    uint32_t gen;
    int64_t scatter_timeout_ms;
    uint64_t sent_ns; /* set by the ledger */
    soak_request req;
} soak_scenario;

/* What came back. `dead_lettered`: the request itself became a dead letter
 * at the router (a tell-with-self to a stopped router). */
typedef struct soak_outcome {
    ac_status status;
    const ac_msg *reply;
    const ac_error *error;
    const ac_ref *sender;
    bool dead_lettered;
} soak_outcome;

/* ---- the run's settings and counters (main.c) ------------------------ */

typedef struct soak_config {
    uint64_t seed;
    double duration_s;
    double warmup_s;
    int workers;
    int outside_callers;
    int actor_callers;
    int64_t grace_ms;
    double rss_pct; /* allowed growth after warm-up; <= 0: not checked */
    double rss_slack_mb;
    double fail_alloc; /* fraction of allocations to fail; 0: off */
    bool verbose;
    int nodes; /* --nodes: the soak across processes (cluster.c) */
    bool etcd; /* --provider etcd */
    /* --cluster N [--chaos]: the cluster chaos soak (chaos.c) */
    int cluster;
    bool chaos;
    int stable_after_ms;   /* the nodes' and driver's downing stable_after_ms */
    int converge_slack_ms; /* a heal reconverges within stable_after_ms plus this */
    int64_t rss_growth_kb; /* a process's resident growth allowed; 0: not checked */
    int partitions_by;     /* 0: namespaces where possible, 1: the fault layer */
    int restart_after_heal_ms; /* the cut side's new processes start this long after a heal */
} soak_config;

typedef struct soak_stats {
    atomic_uint_fast64_t requests, settled, withdrawn;
    atomic_uint_fast64_t by_kind[8];
    atomic_uint_fast64_t by_mode[MODE_COUNT];
    atomic_uint_fast64_t backpressure;
    atomic_uint_fast64_t chaos_stops, chaos_kills, chaos_spawns, chaos_probes;
    atomic_uint_fast64_t stopish;    /* requests that inject FAIL or STOP */
    atomic_uint_fast64_t known_dead; /* tells known to go to stopped actors */
    atomic_uint_fast64_t dl_seen, dl_attributed, dl_notices_lost;
    atomic_uint_fast64_t terminated_seen;
    atomic_uint_fast64_t tells_sent, tells_received;
    atomic_uint_fast64_t alloc_failures_armed;
    atomic_uint_fast64_t excused;         /* timing-only outcomes excused by stalls */
    atomic_uint_fast64_t slow_deliveries; /* requests reaching a routee > 100 ms late */
    atomic_uint_fast64_t slowest_delivery_ns;
} soak_stats;

/* Outcome kinds counted in soak_stats.by_kind. */
enum {
    KIND_REPLY = 0,
    KIND_ERROR_REPLY,
    KIND_TIMEOUT,
    KIND_STOPPED,
    KIND_AGGREGATE,
    KIND_DEAD_LETTER,
    KIND_OTHER_ERROR
};

extern soak_config g_cfg;
extern soak_stats g_stats;
extern atomic_bool g_stop;   /* the callers and the chaos wind down */
extern atomic_bool g_failed; /* an invariant was violated */

/* Record the first violated invariant (later ones are counted, not kept)
 * and start winding down. printf-style. Any thread. */
void soak_violation(const char *fmt, ...) __attribute__((format(printf, 1, 2)));
const char *soak_first_violation(void);

/* ---- the ledger (ledger.c) -------------------------------------------- */

/* Register a request about to be sent; returns its id (carried in the
 * request) or 0 when the table is full (the caller backs off). The
 * deadline is when its answer must have arrived, before the grace. */
uint64_t ledger_register(const soak_scenario *sc, int64_t answer_within_ms);
/* The send failed with an error: no answer was promised. */
void ledger_withdraw(uint64_t id);
/* An answer arrived: checked against what the scenario allows, and
 * against answers seen before. Any thread. */
void ledger_settle(uint64_t id, const soak_outcome *out);
/* A dead letter carrying request `id` to a router named pool-slot-ggen. */
void ledger_dead_letter(uint64_t id, int slot, uint32_t gen);
bool ledger_outstanding(uint64_t id);
size_t ledger_in_flight(void);
void ledger_start_reaper(void);
void ledger_stop_reaper(void);
/* Wait until nothing is outstanding or `ms` have passed. */
bool ledger_drain(int64_t ms);

/* ---- the allowed answers (expect.c) ----------------------------------- */

/* NULL when `out` is an allowed answer to `sc`, else a description of what
 * is wrong (static or thread-local storage). */
const char *expect_check(const soak_scenario *sc, const soak_outcome *out);
int expect_kind(const soak_outcome *out);
/* "scatter pool-3-g7 (chaotic, 3 routees), ask_in_fn, beh now/error/silent" */
void expect_describe(const soak_scenario *sc, char *buf, size_t n);

/* ---- router slots and chaos (pools.c) --------------------------------- */

#define SOAK_SLOTS 16

int pools_start(ac_system *sys, soak_rng *rng);
void pools_stop_all(void);
/* A retained ref to the router in `slot` and what it is, or NULL when the
 * slot is empty. */
ac_ref *pools_acquire(int slot, soak_scenario *sc);
/* Before sending a request that injects FAIL or STOP. */
void pools_mark_stopish(int slot, uint32_t gen);
bool pools_gen_stopish(int slot, uint32_t gen);
/* Remember a routee that answered, for chaos to kill later. */
void pools_note_routee(int slot, uint32_t gen, const ac_ref *routee);
void pools_chaos_step(soak_rng *rng);
void pools_release_graveyard(void);
/* "…/pool-3-g7…" -> 3, 7. */
bool pools_parse_path(const char *path, int *slot, uint32_t *gen, bool *is_router);

/* ---- requests (requests.c) -------------------------------------------- */

/* One drawn request, before it meets the slot it is for. Every field is
 * drawn whatever the slot turns out to hold. */
typedef struct draw {
    int slot;
    uint32_t beh_r[SOAK_MAX_ROUTEES];
    uint32_t fault_r, fault_at, mode_r, wrap_r;
    uint16_t late_ms;
    int64_t quiet_timeout_ms;
} draw;

void draw_request(soak_rng *rng, draw *d);
/* Fill sc->req from the draw for the slot sc describes; returns how long
 * the answer may take. */
int64_t apply_draw(const draw *d, soak_scenario *sc);
/* The request message for sc (in the Broadcast wrapper if so drawn). */
ac_msg *request_msg(const soak_scenario *sc, uint64_t id);
/* The status an ask would report for this answer (ask.h). */
void settle_answer(uint64_t id, ac_status st, const ac_answer *a);
/* Remember a routee that answered, for chaos to kill later. */
void note_sender(const ac_ref *sender);
/* The slot's router, retained, with the request registered; NULL when
 * there is nothing to send to or no room. */
ac_ref *prepare_request(const draw *d, int mode, soak_scenario *sc, int64_t *timeout, uint64_t *id);

/* ---- callers (callers.c, caller_actors.c) ------------------------------ */

int caller_actors_start(ac_system *sys);
/* Tell one caller actor (drawn) what to send next. Driver thread. */
void caller_actors_send_go(soak_rng *rng);

int callers_start(ac_system *sys);
/* False when a violation was flagged while a caller was still blocked. */
bool callers_join(void);
/* Leave asks open for ac_system_terminate (returns how many), and check
 * after it that each one's callback ran once. */
int callers_leave_open(void);
void callers_check_left_open(int n);

/* ---- ordered tell streams (streams.c) --------------------------------- */

int streams_start(ac_system *sys);
void streams_step(soak_rng *rng);
/* After the run: every stream arrived whole and in order. */
bool streams_verify(void);

/* ---- dead letters (deadletters.c) ------------------------------------- */

int deadletters_start(ac_system *sys);
bool deadletters_verify(ac_system *sys);

/* ---- resident memory (memory.c) --------------------------------------- */

void memory_start(void);
void memory_stop(void);
/* Growth from the end of warm-up to the highest later sample, in percent;
 * false when beyond the bound. */
bool memory_verify(double *growth_pct);
double memory_rss_mb(void);
/* The baseline and the highest sample after it, in MB. */
void memory_levels(double *base, double *peak);

/* ---- death watch (watch.c) -------------------------------------------- */

int watch_start(ac_system *sys);
/* Watch a router just spawned (twice: a second watch must change nothing). */
void watch_router(ac_ref *router, bool twice);
/* Every router chaos stopped has sent its one Terminated. */
bool watch_verify(void);

/* ---- stalls of the system itself (stalls.c) --------------------------- */

int stalls_start(ac_system *sys);
/* A stall seen by another clock (the reaper's sleep). Any thread. */
void stalls_record(uint64_t from_ns, uint64_t to_ns);
/* Nanoseconds of measured stall overlapping [from, to]. */
uint64_t stalls_within(uint64_t from_ns, uint64_t to_ns);
/* Is a timing-only violation of `sc`, which had margin_ms to spare,
 * explained by stalls during its life (a quarter of the margin)? */
bool stalls_explain(const soak_scenario *sc, int64_t margin_ms);
double stalls_longest_ms(void);

/* ---- allocation-failure injection (fail_alloc.c) ---------------------- */

bool fail_alloc_available(void);
void fail_alloc_start(double fraction, uint64_t seed);
void fail_alloc_stop(void);

/* ---- across processes (cluster.c) ------------------------------------ */

/* The driver: N replica processes of `self_exe`, the load and the chaos;
 * the process's exit status. */
int cluster_soak(const char *self_exe, int nodes, bool etcd);
/* A replica process (argv[1] is "--replica"). */
int cluster_replica(int argc, char **argv);
/* The cluster chaos soak (chaos.c): --cluster N [--chaos]; a node
 * process of it (chaos_node.c): --chaos-node. */
int chaos_soak(const char *self_exe);
int chaos_node(int argc, char **argv);

#endif
