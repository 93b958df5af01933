/*
 * Shared by the scatter/gather tests: a routee whose behaviour the test
 * sets per routee index, a caller actor that talks to the router from
 * inside an actor, a counted request/reply message, and checks of the
 * answers a scatter produces.
 *
 * Routees are told apart by their name (routee-1 … routee-N). Every
 * routee records what it sees in the shared sg_data (handed to it as
 * ac_routee_options.user_data); the test thread checks afterwards.
 */
#ifndef ACTORC_SG_SUPPORT_H
#define ACTORC_SG_SUPPORT_H

#include "ts_test.h"

#define SG_WAIT_MS ((int64_t)(TS_WAIT_S * 1000))

/* TSan runs several times slower: big loops shrink there. */
#if defined(__SANITIZE_THREAD__)
#define SG_TSAN 1
#elif defined(__has_feature)
#if __has_feature(thread_sanitizer)
#define SG_TSAN 1
#endif
#endif
#ifndef SG_TSAN
#define SG_TSAN 0
#endif

#define SG_MAX 8  /* routee indices 1..SG_MAX */
#define SG_GENS 4 /* starts (incarnations) recorded per routee */

/* What a routee does with a request. */
typedef enum sg_beh {
    SG_ECHO = 0,    /* reply "routee-K:<key>" at once */
    SG_SILENT,      /* never reply */
    SG_ERROR,       /* reply a RouteeError at once */
    SG_LATER,       /* reply "routee-K:<key>" after delay_ms (a schedule to itself) */
    SG_ERROR_LATER, /* reply a RouteeError after delay_ms */
    SG_FAIL,        /* fail the handler (ac_fail) */
    SG_ERROR_DEEP,  /* reply a RouteeError nested AC_ERROR_MAX_DEPTH deep (a
                       chain of causes), at once */
} sg_beh;

/* A routee told this directly fails its handler, whatever its behaviour. */
#define SG_BOOM "boom"
/* Requests whose key starts with this go unanswered by every routee. */
#define SG_STALL "stall"

typedef struct sg_data {
    ac_system *sys;
    ts_recorder *rec;
    /* routee behaviour, per index */
    atomic_int beh[SG_MAX + 1];
    atomic_llong delay_ms[SG_MAX + 1];
    /* what routees did, per index */
    atomic_llong starts[SG_MAX + 1];           /* pre_start runs (counted at their end) */
    atomic_llong next_gen[SG_MAX + 1];         /* pre_start runs (counted at their start) */
    /* requests handled (counted when the handler is done with one) */
    atomic_llong seen[SG_MAX + 1];              /* all incarnations */
    atomic_llong seen_gen[SG_MAX + 1][SG_GENS]; /* per incarnation */
    atomic_llong replies[SG_MAX + 1];          /* replies sent (answers and errors) */
    /* self refs per incarnation; borrowed from the system, which frees them */
    _Atomic(ac_ref *) refs[SG_MAX + 1][SG_GENS];
    /* sender checks made by routees */
    atomic_llong no_sender;      /* a request arrived without a sender */
    atomic_llong router_sender;  /* a request arrived with the router as sender */
    atomic_llong bad;            /* anything else that looked wrong */
    /* the caller actor */
    _Atomic(ac_ref *) router;    /* whom the caller talks to (borrowed) */
    _Atomic(ac_ref *) caller;    /* the caller's own ref (borrowed) */
    atomic_llong caller_got;     /* messages received other than commands */
    _Atomic(ac_msg *) caller_first;    /* the first of them (retained) */
    _Atomic(ac_ref *) caller_first_sender; /* its sender (retained) */
    /* ac_ask_in results */
    atomic_llong asks_done;
    _Atomic(ac_msg *) ask_reply;       /* retained */
    _Atomic(ac_error *) ask_error;     /* retained */
    _Atomic(ac_ref *) ask_sender;      /* answer->sender (retained) */
    _Atomic(ac_ref *) ask_ctx_sender;  /* ac_sender(ctx) in the continuation (retained) */
    atomic_int ask_status;
    /* the parent actor of a router spawned as a child */
    const ac_supervisor_strategy *routee_sup;
    ac_scatter_gather_options opts;
    int size;
} sg_data;

/* ---- the counted message: requests and replies ------------------------- */

typedef struct sg_key {
    char text[64];
    int64_t n;
} sg_key;

extern const ac_msg_type sg_key_type;
/* Messages of sg_key_type created and destroyed so far (this process). */
extern atomic_llong sg_created, sg_destroyed;

ac_msg *sg_key_new(const char *text, int64_t n);
/* The text of an sg_key message, or NULL for any other message. */
const char *sg_key_text(const ac_msg *msg);
int64_t sg_key_n(const ac_msg *msg);

/* ---- actors -------------------------------------------------------------- */

extern const ac_actor_def sg_routee_def;

/* The caller: an actor that, when told a command string (an sg_key whose
 * text starts with one of the prefixes below), talks to d->router, and
 * records every other message it receives. */
#define SG_CMD_TELL "tell:"         /* ac_tell(router, key, self) */
#define SG_CMD_TELL_NOSENDER "bare:" /* ac_tell(router, key, NULL) */
#define SG_CMD_ASK_IN "askin:"      /* ac_ask_in with a continuation */
#define SG_CMD_ASK_MSG "askmsg:"    /* ac_ask_in answered by an answer message */
extern const ac_actor_def sg_caller_def;

/* An actor that spawns a scatter/gather router "replicas" of d->size
 * routees with d->opts and d->routee_sup as its child, storing the
 * router's ref in d->router. */
extern const ac_actor_def sg_parent_def;

/* ---- set-up -------------------------------------------------------------- */

/* Test data owned by the fixture, and a system (manual clock or not, log
 * level debug so that any line at all is captured). */
sg_data *sg_setup(ts_fixture *fx, const char *name, bool manual);
/* The same with a given number of worker threads. */
sg_data *sg_setup_workers(ts_fixture *fx, const char *name, bool manual, int workers);
/* Behaviour of routee k. */
void sg_set(sg_data *d, int k, sg_beh beh, int64_t delay_ms);
/* Spawn a top-level scatter/gather router "replicas" of `size` routees of
 * sg_routee_def with `opts` (may be NULL); wait until every routee ran
 * pre_start. */
ac_ref *sg_spawn_pool(sg_data *d, int size, const ac_scatter_gather_options *opts);
/* Wait until routee k saw `n` requests. */
void sg_wait_seen(sg_data *d, int k, long long n);
/* Same for routees 1..size. */
void sg_wait_seen_all(sg_data *d, int size, long long n);
/* Tell the caller actor a command. */
void sg_caller_cmd(sg_data *d, const char *prefix, const char *key);
/* Spawn the caller actor, talking to `router`. */
ac_ref *sg_spawn_caller(sg_data *d, ac_ref *router);

/* The expected reply text of routee k to `key`. */
void sg_reply_text(char *buf, size_t cap, int k, const char *key);
/* The routee index of a routee ref (from its name), or 0. */
int sg_routee_index(const ac_ref *ref);

/* ---- checks of answers (on the test thread) ------------------------------- */

/* The future settled within the bound; fills *a. */
ac_status sg_wait_future(ac_future *f, ac_answer *a);
/* The same with a shared deadline (ts_now() seconds) for many futures. */
ac_status sg_wait_future_until(ac_future *f, ac_answer *a, double deadline);
/* The future has not settled. No grace period: in these tests whatever
 * could settle a scatter (a routee's reply, counted after it is handed
 * over; a timer, fired by ac_clock_advance before it returns) settles it
 * synchronously, before the test thread gets here. */
void sg_assert_pending(ac_future *f, const char *what);
/* A barrier through routee k, which must answer at once (SG_ECHO): an ask
 * straight to it is handled after everything already queued at it; then
 * its count of requests seen must come to exactly `seen`, the barrier's
 * own included (a request queued before it would make it more). */
void sg_assert_seen_exactly(sg_data *d, int k, long long seen);
/* An AggregateError with exactly `message` and `members` members, as
 * the failure of an ask (status AC_EFAILED). */
void sg_assert_aggregate(ac_status st, const ac_answer *a, const char *message, size_t members);
/* A successful answer from routee k (of incarnation gen) to `key`. */
void sg_assert_reply_from(sg_data *d, ac_status st, const ac_answer *a, int k, int gen,
                          const char *key);
/* The routee-sender checks of every request so far passed. */
void sg_assert_routees_ok(sg_data *d);

#endif
