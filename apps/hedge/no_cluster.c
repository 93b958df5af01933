/*
 * actorc-hedge built without the cluster layer (no remoting): --nodes
 * says so instead of running.
 */
#include "hedge.h"

int cluster_demo(options *o, replica_model *m, const char *argv0)
{
    (void)o;
    (void)m;
    (void)argv0;
    fprintf(stderr, "actorc-hedge: --nodes needs the cluster layer; this build has no "
                    "remoting (libzmq, libcbor)\n");
    return 2;
}
