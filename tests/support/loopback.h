/*
 * tests/support/loopback.h - plain TCP sockets on 127.0.0.1 for tests that
 * need a port nobody answers on, or a listener that never speaks ZeroMQ.
 */
#ifndef ORDO_TESTS_LOOPBACK_H
#define ORDO_TESTS_LOOPBACK_H

/* A TCP socket bound to 127.0.0.1 on a port of the kernel's choosing,
 * listening with that backlog when backlog > 0; its port into *port_p.
 * The fd, or -1. */
int test_loopback_socket(int backlog, int *port_p);

#endif /* ORDO_TESTS_LOOPBACK_H */
