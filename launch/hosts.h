/*
 * launch/hosts.h - ps-launch --hosts FILE: the hosts a job runs on, over
 * ssh.
 *
 * The file: one host per line, '#' starts a comment.
 *
 *   node1                    # an ssh destination ([user@]host)
 *   alice@node2 slots=2      # two of the job's processes
 *   node3 addr=10.0.1.3      # the address the job uses there
 *
 * Placement: every host has slots (default 1); the slots are listed in
 * file order and rank r (launch/rank.h: 0 the scheduler, then the servers,
 * then the workers) runs on the host of slot r mod (total slots), so with
 * one slot each the processes go round the hosts, and slots=N fills a
 * host with N consecutive ranks first.
 *
 * Addresses: the job's traffic to and from a host uses addr= if given,
 * else the host name resolved to IPv4 here, on the launching machine
 * (the first host's address is cluster.scheduler_host).
 *
 * Threads: no state.
 */
#ifndef ORDO_LAUNCH_HOSTS_H
#define ORDO_LAUNCH_HOSTS_H

#include <stddef.h>

#define PS_HOSTS_DEST_MAX 256

typedef struct ps_host {
	char dest[PS_HOSTS_DEST_MAX]; /* ssh destination, "[user@]host" */
	char addr[64];          /* IPv4, "a.b.c.d" */
	int slots;
	int line;               /* in the file, for messages */
} ps_host;

/* Reads and resolves the host file. *hosts is malloc'd (free it); at
 * least one host. On failure PS_EINVAL/PS_ENOENT/PS_EIO and why names the
 * file, the line and the problem. */
int ps_hosts_load(const char *path, ps_host **hosts, int *n, char *why,
		  size_t whylen);

/* The first IPv4 address of host, resolved here, into addr; PS_ENOENT
 * with the resolver's reason in why. */
int ps_resolve_ipv4(const char *host, char *addr, size_t cap, char *why,
		    size_t whycap);

/* The index of the host that runs rank (>= 0). */
int ps_hosts_place(const ps_host *hosts, int n, int rank);

/* s in single quotes for a POSIX shell (' as '\''), appended to out at
 * *len; PS_EINVAL when it does not fit. */
int ps_shell_quote(const char *s, char *out, size_t cap, size_t *len);

/* The command line a remote shell runs for one process, in a buffer of
 * its own size (free it): "cd CWD 2>/dev/null; exec env ENV... sh -c
 * WRAPPER ordo ARGV...", every word quoted. env and argv end with NULL
 * (env may be NULL). NULL when out of memory. */
char *ps_remote_command(const char *cwd, const char *const *env,
			const char *wrapper, const char *const *argv);

#endif /* ORDO_LAUNCH_HOSTS_H */
