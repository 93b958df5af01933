#define _GNU_SOURCE
/*
 * actorc-test-cluster-node: a cluster member for the cluster tests and
 * the membership benchmark, run as a separate process.
 *
 *   actorc-test-cluster-node [--system NAME] [--bind ENDPOINT] [--insecure] [--hb IVL TIMEOUT]
 *       [--cluster NAME] [--role ROLE]... [--seed HOST:PORT]...
 *       [--etcd URL]... [--prefix PREFIX] [--ttl S] [--retry INITIAL MAX]
 *       [--downing keep-majority|static-quorum|keep-oldest|down-all|off]
 *       [--stable MS] [--quorum N] [--router]
 *
 * Starts a node, prints "READY <address> <incarnation>", joins the
 * cluster (static seeds, or etcd when --etcd is given) and subscribes an
 * actor that prints each member event as it comes:
 *
 *   EVENT <up|unreachable|reachable|down> <address> <incarnation> <roles>
 *
 * (roles comma-separated, "-" for none). Commands on standard input, one
 * a line, each answered with one line:
 *
 *   members  MEMBERS <count> <address>=<up|unreachable>[*],...  (* this node)
 *   status   STATUS <state> <up> <unreachable> <attempts_failed> <last_error>
 *   leave    LEFT <status name>
 *   ask SYSTEM ADDRESS  ASKED <address>, then ANSWER <error name> when the
 *            ask of that node's /user/sink (which never answers) settles
 *   routees  ROUTEES <count> <path>...  of the round-robin cluster router
 *            over every member's /user/sink (--router)
 *   crash    (no answer) its node stopped, then the program ends
 *
 * Ends when its input closes or on SIGTERM.
 */
#include <signal.h>

#include "cl_member.h"

static void on_term(int sig)
{
    (void)sig;
    cl_member_quit = 1;
}

int main(int argc, char **argv)
{
    signal(SIGTERM, on_term);
    signal(SIGPIPE, SIG_IGN);
    return cl_member_main(0, 1, argc, argv);
}
