/*
 * The node program's actors (node_serve.c), for the remote tests' peer:
 *   /user/echo     replies with what it got; "count" answers how many
 *                  messages it echoed (an Int64)
 *   /user/pool     a round-robin pool of three echo routees
 *   /user/fail     replies with rt_aggregate_error()
 *   /user/slow     never replies
 *   /user/stopper  stops on "stop"
 *   /user/asker    a String path: asks "ping" of it from inside the actor
 *                  and replies "<reply>|<sender path>" or "error:<name>"
 *   /user/watcher  "watch <path>": watches it and tells the sender
 *                  "terminated <path> lost=<0|1>" when it ends
 *   /user/point    replies with a test.Point of x+1, y+1
 */
#ifndef ACTORC_TESTS_NODE_SERVE_H
#define ACTORC_TESTS_NODE_SERVE_H

#include <stdbool.h>

#include <actorc.h>

/* Spawn them in sys, whose node is `node` (the test type registered on
 * it). False, with a message on stderr, when one cannot be. */
bool rt_serve(ac_system *sys, ac_node *node);

#endif
