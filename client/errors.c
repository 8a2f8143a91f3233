/*
 * client/errors.c - the errors of the client library's public calls
 * (ps_client_last_error): what a failed call logs, and the text it
 * leaves for the application.
 *
 * Every public call that fails logs why, as an error line naming the
 * call, and leaves that text in this thread's api_error. A reason logged
 * deeper down (a send that failed, a CUDA error) is taken as it was
 * logged; a call that failed because of the job's state (not started,
 * shut down, failed on the communication thread) logs the state, with
 * the reason the communication thread logged when the job failed.
 */
#include <pthread.h>
#include <stdarg.h>
#include <stdio.h>
#include <string.h>

#include "common/log.h"
#include "ordo/ordo.h"
#include "client/state.h"

static _Thread_local char api_error[1024];
/* the public call this thread is in, for psi_client_api_errf */
static _Thread_local const char *api_fn;

api_call psi_client_api_begin(const char *fn)
{
	api_fn = fn;
	return (api_call){.fn = fn, .errors = ps_log_errors()};
}

/* Fails the current public call with rc, logging "FN: reason". */
int psi_client_api_errf(int rc, const char *fmt, ...)
{
	char msg[768];
	va_list ap;

	va_start(ap, fmt);
	vsnprintf(msg, sizeof(msg), fmt, ap);
	va_end(ap);
	PS_ERROR("%s: %s", api_fn ? api_fn : "ordo", msg);
	return rc;
}

/* What the client's state says about a call that failed with rc without
 * logging a reason ("": nothing). Caller holds mu. */
static void state_why_locked(const ps_client *c, int rc, char *why,
			     size_t whylen)
{
	why[0] = '\0';
	if (c->state == ST_FAILED)
		snprintf(why, whylen, "the job failed: %s", c->fail_why);
	else if (rc == PS_ESTATE && c->state == ST_CREATED)
		snprintf(why, whylen, "the client has not joined a job: call "
			 "ps_client_start first");
	else if (rc == PS_ESTATE && c->state == ST_SHUTDOWN)
		snprintf(why, whylen, "the job has shut down (ps_client_finish "
			 "returned)");
}

/* Ends a public call that returned rc (c may be NULL): a failure leaves
 * its reason in api_error: the error the call logged last, else what the
 * client's state says (logged now). */
int psi_client_api_end(const api_call *a, const ps_client *c, int rc)
{
	size_t n = strlen(a->fn);
	const char *m;

	api_fn = NULL;
	if (rc == PS_OK)
		return rc;
	if (ps_log_errors() == a->errors) { /* nothing logged: say it */
		char why[sizeof(((ps_client *)0)->fail_why) + 64] = "";
		if (c) {
			ps_client *mc = (ps_client *)c;
			pthread_mutex_lock(&mc->mu);
			state_why_locked(c, rc, why, sizeof(why));
			pthread_mutex_unlock(&mc->mu);
		}
		PS_ERROR("%s: %s", a->fn, why[0] ? why : ps_strerror(rc));
	}
	m = ps_log_last_error();
	if (strncmp(m, a->fn, n) == 0 && m[n] == ':')
		snprintf(api_error, sizeof(api_error), "%s", m);
	else
		snprintf(api_error, sizeof(api_error), "%s: %s", a->fn, m);
	return rc;
}

void psi_client_api_end_quiet(void)
{
	api_fn = NULL;
}

const char *ps_client_last_error(void)
{
	return api_error;
}
