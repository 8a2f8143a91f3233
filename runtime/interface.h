/*
 * runtime/interface.h - cluster.interface: the IPv4 address of a named
 * network interface, which a node binds and advertises (users of other
 * parameter servers lose hours to the wrong interface being picked from
 * several: name the one the job's traffic should use).
 *
 * Threads: no state of its own (getifaddrs).
 */
#ifndef ORDO_RUNTIME_INTERFACE_H
#define ORDO_RUNTIME_INTERFACE_H

#include <stddef.h>

/* The first IPv4 address of interface name into addr ("a.b.c.d"). On
 * failure PS_ENOENT, and why says why and lists every interface with an
 * IPv4 address ("eth0 10.0.0.5, lo 127.0.0.1"). */
int ps_interface_ipv4(const char *name, char *addr, size_t cap, char *why,
		      size_t whylen);

#endif /* ORDO_RUNTIME_INTERFACE_H */
