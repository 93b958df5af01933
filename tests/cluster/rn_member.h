/*
 * A member for the cluster router tests (rn_member.c), as the router node
 * program runs it and as the tests run it on a thread of their own
 * process over the in-process transport: router_node.c's arguments, its
 * READY line, its actors; input closed to end it ("crash" first: its node
 * stopped without a leave, as a killed process's).
 */
#ifndef ACTORC_TESTS_RN_MEMBER_H
#define ACTORC_TESTS_RN_MEMBER_H

/* Serve as a member until in_fd closes (it is closed then); READY on
 * out_fd. 0, or 1 when it could not start. */
int rn_member_main(int in_fd, int out_fd, int argc, char **argv);

#endif
