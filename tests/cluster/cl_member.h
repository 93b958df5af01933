/*
 * A cluster member (cl_member.c), as the node program runs it and as the
 * tests run it on a thread of their own process over the in-process
 * transport: the arguments, the lines it prints (READY, EVENT, MEMBERS,
 * STATUS, LEFT) and the commands it reads are cluster_node.c's.
 */
#ifndef ACTORC_TESTS_CL_MEMBER_H
#define ACTORC_TESTS_CL_MEMBER_H

#include <signal.h>

/* Set (by a signal handler) to end every member at its next command. */
extern volatile sig_atomic_t cl_member_quit;

/* Serve as a member: commands from in_fd (closed when it ends), lines to
 * out_fd; argv as the program's (argv[0] its name). 0, or 2 when it could
 * not start. */
int cl_member_main(int in_fd, int out_fd, int argc, char **argv);

#endif
