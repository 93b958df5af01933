/*
 * hello — the smallest actorc program.
 *
 * A system, one actor that greets whoever it is told about, a few tells, a
 * poison pill (processed in order, after the greetings), and terminate.
 * The main thread waits for the greeter's post_stop before terminating, so
 * every greeting is printed. Exits 0 when all went as described.
 */
#define _POSIX_C_SOURCE 200809L

#include <actorc.h>

#include <errno.h>
#include <pthread.h>
#include <stdbool.h>
#include <stdio.h>
#include <time.h>

static const char *const names[] = {"world", "actors", "hedged requests"};
#define NAME_COUNT ((int)(sizeof names / sizeof names[0]))

/* Per-actor state: touched only by the actor's own handlers. */
typedef struct greeter_state {
    int greeted;
} greeter_state;

/* What the actor hands back to main() when it stops. */
static pthread_mutex_t done_lock = PTHREAD_MUTEX_INITIALIZER;
static pthread_cond_t done_cond = PTHREAD_COND_INITIALIZER;
static bool done;
static int greeted_total;

static void greeter_receive(ac_ctx *ctx, ac_msg *msg)
{
    greeter_state *state = ac_ctx_state(ctx);
    const char *name = ac_msg_str(msg);

    if (name == NULL) {
        ac_log_warn(ctx, "ignoring a %s message", ac_msg_type_name(msg));
        return;
    }
    state->greeted++;
    printf("%s: hello, %s!\n", ac_self_name(ctx), name);
}

static void greeter_post_stop(ac_ctx *ctx)
{
    greeter_state *state = ac_ctx_state(ctx);

    printf("%s: greeted %d, stopping\n", ac_self_name(ctx), state->greeted);
    fflush(stdout);

    pthread_mutex_lock(&done_lock);
    greeted_total = state->greeted;
    done = true;
    pthread_cond_signal(&done_cond);
    pthread_mutex_unlock(&done_lock);
}

static const ac_actor_def greeter = {
    .name = "Greeter",
    .state_size = sizeof(greeter_state),
    .receive = greeter_receive,
    .post_stop = greeter_post_stop,
};

int main(void)
{
    printf("actorc %d.%d.%d\n", AC_VERSION_MAJOR, AC_VERSION_MINOR, AC_VERSION_PATCH);

    ac_system *system = ac_system_create("hello", NULL);
    if (system == NULL) {
        fprintf(stderr, "hello: ac_system_create: %s\n", ac_last_error());
        return 1;
    }

    ac_ref *ref = ac_spawn(system, ac_props_new(&greeter, NULL), "greeter");
    if (ref == NULL) {
        fprintf(stderr, "hello: ac_spawn: %s\n", ac_last_error());
        ac_system_terminate(system);
        return 1;
    }
    printf("spawned %s\n", ac_ref_path(ref));

    for (int i = 0; i < NAME_COUNT; i++)
        ac_tell(ref, ac_msg_str_new(names[i]), NULL);
    ac_tell(ref, ac_poison_pill(), NULL);

    /* Wait (at most 10 s) for the greeter to stop. */
    struct timespec deadline;
    clock_gettime(CLOCK_REALTIME, &deadline);
    deadline.tv_sec += 10;
    int rc = 0;
    pthread_mutex_lock(&done_lock);
    while (!done && rc != ETIMEDOUT)
        rc = pthread_cond_timedwait(&done_cond, &done_lock, &deadline);
    bool stopped = done;
    int greeted = greeted_total;
    pthread_mutex_unlock(&done_lock);

    ac_ref_release(ref);
    if (ac_system_terminate(system) != AC_OK) {
        fprintf(stderr, "hello: ac_system_terminate: %s\n", ac_last_error());
        return 1;
    }

    if (!stopped) {
        fprintf(stderr, "hello: the greeter did not stop within 10 s\n");
        return 1;
    }
    if (greeted != NAME_COUNT) {
        fprintf(stderr, "hello: greeted %d, expected %d\n", greeted, NAME_COUNT);
        return 1;
    }
    printf("done\n");
    return 0;
}
