/*
 * A consumer of an installed actorc: a "greeter" actor replies to a string
 * with a greeting; a "client" actor sends it a name on start and hands the
 * reply to the main thread, which prints it.
 *
 * Expected output (one line):
 *     consumer: hello, consumer, from greeter
 */
#define _POSIX_C_SOURCE 200809L

#include <actorc.h>

#include <errno.h>
#include <pthread.h>
#include <stdio.h>
#include <time.h>

typedef struct shared {
    pthread_mutex_t lock;
    pthread_cond_t cond;
    ac_ref *greeter;
    char reply[128];
    int done;
} shared;

static void greeter_receive(ac_ctx *ctx, ac_msg *msg)
{
    const char *who = ac_msg_str(msg);
    if (who != NULL)
        ac_reply(ctx, ac_msg_printf("hello, %s, from %s", who, ac_self_name(ctx)));
}

static void client_pre_start(ac_ctx *ctx)
{
    shared *s = ac_ctx_user_data(ctx);
    ac_tell(s->greeter, ac_msg_str_new("consumer"), ac_self(ctx));
}

static void client_receive(ac_ctx *ctx, ac_msg *msg)
{
    shared *s = ac_ctx_user_data(ctx);
    const char *text = ac_msg_str(msg);

    pthread_mutex_lock(&s->lock);
    snprintf(s->reply, sizeof s->reply, "%s", text != NULL ? text : "(not a string)");
    s->done = 1;
    pthread_cond_signal(&s->cond);
    pthread_mutex_unlock(&s->lock);
}

static const ac_actor_def greeter_def = {.name = "Greeter", .receive = greeter_receive};
static const ac_actor_def client_def = {
    .name = "Client", .pre_start = client_pre_start, .receive = client_receive};

int main(void)
{
    shared s = {.lock = PTHREAD_MUTEX_INITIALIZER, .cond = PTHREAD_COND_INITIALIZER};
    ac_system_options options = {.workers = 2};

    ac_system *system = ac_system_create("consumer", &options);
    if (system == NULL) {
        fprintf(stderr, "ac_system_create: %s\n", ac_last_error());
        return 1;
    }

    s.greeter = ac_spawn(system, ac_props_new(&greeter_def, NULL), "greeter");
    if (s.greeter == NULL) {
        fprintf(stderr, "spawn greeter: %s\n", ac_last_error());
        ac_system_terminate(system);
        return 1;
    }
    ac_ref *client = ac_spawn(system, ac_props_new(&client_def, &s), "client");
    if (client == NULL) {
        fprintf(stderr, "spawn client: %s\n", ac_last_error());
        ac_system_terminate(system);
        return 1;
    }

    struct timespec deadline;
    clock_gettime(CLOCK_REALTIME, &deadline);
    deadline.tv_sec += 10;
    int rc = 0;
    pthread_mutex_lock(&s.lock);
    while (!s.done && rc != ETIMEDOUT)
        rc = pthread_cond_timedwait(&s.cond, &s.lock, &deadline);
    int done = s.done;
    pthread_mutex_unlock(&s.lock);

    ac_ref_release(client);
    ac_ref_release(s.greeter);
    if (ac_system_terminate(system) != AC_OK) {
        fprintf(stderr, "ac_system_terminate: %s\n", ac_last_error());
        return 1;
    }
    if (!done) {
        fprintf(stderr, "consumer: no reply within 10 s\n");
        return 1;
    }
    printf("consumer: %s\n", s.reply);
    return 0;
}
