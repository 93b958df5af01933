// file: docs/examples/observe.c
#include <actorc.h>
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

typedef struct my_queue {
    atomic_ulong depth;
} my_queue;

/* One value of the section "queues": read atomics, never wait for actors. */
static void queue_view(ac_json *j, void *arg)
{
    my_queue *q = arg;
    ac_json_object(j);
    ac_json_key(j, "depth");
    ac_json_uint(j, atomic_load_explicit(&q->depth, memory_order_relaxed));
    ac_json_object_end(j);
}

int main(void)
{
    ac_system *system = ac_system_create("observed", NULL);
    my_queue q = { .depth = 3 };
    ac_observe_source *source = ac_observe_add(system, "queues", queue_view, &q);

    /* What GET /view serves; ac_observe_actors_json is GET /view/actors. */
    char *view = ac_observe_json(system, &(ac_observe_query){ .limit = 10 });
    printf("%s\n", view);
    int ok = view && strstr(view, "\"queues\":[{\"depth\":3}]") &&
             strstr(view, "\"system\":{\"name\":\"observed\"");
    free(view);

    ac_observe_remove(source); /* waits for a view inside queue_view; then q may go */
    ac_system_terminate(system);
    return ok ? 0 : 1;
}
