/*
 * Every breaker in the system's view (actorc/observe.h): one element of
 * the "breakers" section per breaker, from the moment it is made until
 * it is freed — its name, its state, the consecutive failures counted
 * while closed, how often it opened, and how many calls it refused.
 *
 * The source is added when the breaker is made and removed when its last
 * reference goes (breaker_create.c), before anything of it is freed:
 * ac_observe_remove waits for a view being written, so the writer never
 * sees a breaker being freed. It reads only atomics (ac_breaker_get_info
 * and the refusal count), never the breaker's lock, so a view costs a
 * breaker's callers nothing.
 */
#include "actorc/observe.h"
#include "core/last_error.h"
#include "patterns/breaker_state.h"

static void breaker_write(ac_json *j, void *arg)
{
    ac_breaker *b = arg;
    ac_breaker_info info;
    (void)ac_breaker_get_info(b, &info); /* b is not NULL: always AC_OK */
    ac_json_object(j);
    ac_json_key(j, "name");
    ac_json_string(j, b->name);
    ac_json_key(j, "state");
    ac_json_string(j, ac_breaker_state_name(info.state));
    ac_json_key(j, "failures");
    ac_json_uint(j, (uint64_t)info.failures);
    ac_json_key(j, "max_failures");
    ac_json_uint(j, (uint64_t)b->max_failures);
    ac_json_key(j, "opened");
    ac_json_uint(j, info.opened);
    ac_json_key(j, "refused");
    ac_json_uint(j, atomic_load_explicit(&b->refused, memory_order_relaxed));
    ac_json_key(j, "reset_timeout_ms");
    ac_json_int(j, info.reset_timeout_ms);
    ac_json_key(j, "call_timeout_ms");
    ac_json_uint(j, b->call_timeout_ms);
    ac_json_object_end(j);
}

void ac__breaker_view_add(ac_breaker *b, ac_system *sys)
{
    b->view = ac_observe_add(sys, "breakers", breaker_write, b);
    ac_clear_error(); /* out of the view is all a failure costs */
}

void ac__breaker_view_remove(ac_breaker *b)
{
    ac_observe_remove(b->view);
    b->view = NULL;
}
