/*
 * runtime/signals.c - see signals.h.
 */
#include <signal.h>
#include <stdatomic.h>
#include <string.h>

#include "runtime/signals.h"

static volatile sig_atomic_t pending;
static volatile sig_atomic_t usr1;
static _Atomic(ps_transport *) wake_target;

static void on_signal(int sig)
{
	pending = sig;
	ps_transport *t = atomic_load(&wake_target);
	if (t)
		ps_transport_wake(t);
}

static void on_usr1(int sig)
{
	(void)sig;
	usr1 = 1;
	ps_transport *t = atomic_load(&wake_target);
	if (t)
		ps_transport_wake(t);
}

void ps_signals_install(void)
{
	struct sigaction sa;

	memset(&sa, 0, sizeof(sa));
	sa.sa_handler = on_signal;
	sigemptyset(&sa.sa_mask);
	sigaction(SIGINT, &sa, NULL);
	sigaction(SIGTERM, &sa, NULL);
	sa.sa_handler = on_usr1;
	sigaction(SIGUSR1, &sa, NULL);
	sa.sa_handler = SIG_IGN;
	sigaction(SIGPIPE, &sa, NULL);
}

void ps_signals_install_hup(void)
{
	struct sigaction sa;

	memset(&sa, 0, sizeof(sa));
	sa.sa_handler = on_signal;
	sigemptyset(&sa.sa_mask);
	sigaction(SIGHUP, &sa, NULL);
}

int ps_signal_pending(void)
{
	return pending;
}

void ps_signals_set_wake(ps_transport *t)
{
	atomic_store(&wake_target, t);
}

int ps_signal_take_usr1(void)
{
	if (!usr1)
		return 0;
	usr1 = 0;
	return 1;
}

int ps_signal_exit_status(int sig)
{
	return 128 + sig;
}
