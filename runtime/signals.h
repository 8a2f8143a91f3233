/*
 * runtime/signals.h - SIGINT/SIGTERM turned into a flag and a wake-up.
 *
 * Every binary installs these handlers first. A signal sets a flag that the
 * event loops poll, and wakes the registered transport so that a blocked
 * receive returns at once (ps_transport_wake is async-signal-safe).
 * SIGPIPE is ignored (errors come back as return codes). SIGUSR1 asks for
 * a checkpoint: it sets a flag of its own (the scheduler and ps-launch act
 * on it; other processes ignore it rather than die of it).
 */
#ifndef ORDO_RUNTIME_SIGNALS_H
#define ORDO_RUNTIME_SIGNALS_H

#include "transport/transport.h"

void ps_signals_install(void);
/* SIGHUP too, as SIGINT and SIGTERM are (ps-launch). */
void ps_signals_install_hup(void);
/* The signal number received (SIGINT, SIGTERM), or 0. */
int ps_signal_pending(void);
/* 1 if SIGUSR1 came since the last call (and clears it), else 0. */
int ps_signal_take_usr1(void);
/* Transport to wake on a signal (NULL: none). */
void ps_signals_set_wake(ps_transport *t);
/* Exit status for a process stopped by signal sig: 128 + sig. */
int ps_signal_exit_status(int sig);

#endif /* ORDO_RUNTIME_SIGNALS_H */
