/*
 * A real dnsmasq for the DNS tests: one process per dh_dnsmasq, on a free
 * port of 127.0.0.1 (UDP and TCP), answering for the domain DH_DOMAIN
 * from files of its own scratch directory and asking nobody else
 * (--no-resolv, --no-hosts, --local=/DH_DOMAIN/: a name it does not have
 * is NXDOMAIN).
 *
 *   SRV records  --srv-host lines of its conf file. dnsmasq reads the
 *                conf file only at start (SIGHUP does not), so changing
 *                them restarts it on the same port.
 *   A records    its --addn-hosts file, which SIGHUP re-reads: changing
 *                them rewrites the file and sends SIGHUP.
 *
 * No test leaves a dnsmasq behind: each is ended by pid when stopped or
 * destroyed, at exit (atexit), on a fatal signal (a handler that kills
 * them and re-raises), and by the kernel when the test process dies any
 * other way (PR_SET_PDEATHSIG). Scratch directories are removed when
 * destroyed and at exit.
 */
#ifndef ACTORC_DNSMASQ_HARNESS_H
#define ACTORC_DNSMASQ_HARNESS_H

#include <stdbool.h>
#include <stddef.h>
#include <sys/types.h>

#define DH_DOMAIN "actorc.test"
#define DH_MAX_SRV 16

typedef struct dh_dnsmasq {
    pid_t pid; /* 0 while not running */
    int port;
    char server[32]; /* "127.0.0.1:<port>", for the resolver options */
    char dir[256];   /* the scratch directory */
    char conf[300], hosts[300], log[300];
    char srv[DH_MAX_SRV][200]; /* "<name>,<target>,<port>" */
    size_t srv_count;
} dh_dnsmasq;

/* The dnsmasq binary (on PATH, or in /usr/sbin); NULL when there is none. */
const char *dh_binary(void);
/* For main, when there is no dnsmasq: as eh_skip (etcd_harness.h) says
 * so, then fails the test (exit), or returns true to skip it when
 * ACTORC_TEST_SKIP_MISSING=1. False when there is one. */
bool dh_skip(const char *test);

/* Start one with these SRV records ("<name>,<target>,<port>", as
 * --srv-host takes them) and this hosts text ("127.0.0.1 n0.actorc.test"
 * lines; may be NULL), and wait until it answers. NULL (with its log's
 * tail on stderr) when it does not come up. */
dh_dnsmasq *dh_start(const char *const *srv, size_t n, const char *hosts);
/* Replace the SRV records: the conf written again, dnsmasq restarted on
 * its port and waited for. */
bool dh_set_srv(dh_dnsmasq *d, const char *const *srv, size_t n);
/* Replace the A records: the hosts file written again and SIGHUP sent. */
bool dh_set_hosts(dh_dnsmasq *d, const char *hosts);
/* End the process (SIGTERM, then reaped); its files stay. */
void dh_stop(dh_dnsmasq *d);
/* Run it again on its port with its files; false when it does not come
 * up. */
bool dh_run(dh_dnsmasq *d);
/* Stop it, remove its directory, free it. NULL: nothing. */
void dh_destroy(dh_dnsmasq *d);

/* Look `name` up there through actorc's resolver, port 0 for SRV: the
 * addresses, sorted, joined by ' ' into buf ("" for none); NULL when the
 * lookup failed (no answer). */
const char *dh_lookup(const dh_dnsmasq *d, const char *name, int port, char *buf, size_t cap);

#endif
