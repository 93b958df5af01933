/*
 * actorc-test-router-node: a cluster member for the cluster router
 * tests, run as a separate process.
 *
 *   actorc-test-router-node --bind ENDPOINT [--seed H:P]... [--role R]...
 *                            [--hb IVL TIMEOUT] [--replica echo|fail|slow|none]
 *
 * Joins the cluster "routers" (static seeds), prints "READY <address>
 * <incarnation>", and serves until its standard input closes or it gets
 * SIGTERM. Its actors:
 *   /user/replica  (absent with --replica none) counts its queue, and
 *                  echo: replies with what it got, after "delay <ms>"
 *                        made it wait that long first (a timer, not a
 *                        sleep); "hold <ms>" keeps its turn busy that
 *                        long, so that its mailbox fills;
 *                  fail: replies with a ReplicaError naming this node;
 *                  slow: never replies.
 *   /user/pool/replica  the same replica again, as the child of a parent
 *                  that does nothing else (also absent with none): a
 *                  nested routee path.
 *   /user/asker    a String "<path>": asks "ping" of that path (a cluster
 *                  router on another node) and replies with the answer,
 *                  or with the printed form of the error it got.
 */
#include <signal.h>

#include "rn_member.h"

int main(int argc, char **argv)
{
    signal(SIGPIPE, SIG_IGN);
    return rn_member_main(0, 1, argc, argv);
}
