/*
 * common/log.c - one line per call on stderr, prefixed with role and rank.
 */
#include <stdarg.h>
#include <stdatomic.h>
#include <stdio.h>
#include <string.h>

#include "common/log.h"

static char init_role[32];
/* the role in the prefix: init_role, or a string of static storage */
static const char *_Atomic log_role = "ordo";
static atomic_int log_rank = -1;
static atomic_int log_level = PS_LOG_INFO;
static atomic_int role_given; /* ps_log_init named the role */

static const char *const level_names[] = {"error", "warning", "info",
					  "debug"};

/* this thread's last error message and error count */
static _Thread_local char last_error[1024];
static _Thread_local unsigned long error_count;

unsigned long ps_log_errors(void)
{
	return error_count;
}

const char *ps_log_last_error(void)
{
	return last_error;
}

void ps_log_init(const char *role, int level)
{
	snprintf(init_role, sizeof(init_role), "%s", role ? role : "ordo");
	atomic_store(&log_role, init_role);
	atomic_store(&role_given, 1);
	atomic_store(&log_level, level);
}

void ps_log_default_role(const char *role)
{
	if (!atomic_load(&role_given) && role)
		atomic_store(&log_role, role);
}

void ps_log_set_rank(int rank)
{
	atomic_store(&log_rank, rank);
}

void ps_log_set_level(int level)
{
	atomic_store(&log_level, level);
}

int ps_log_enabled(int level)
{
	return level <= atomic_load(&log_level);
}

void ps_log(int level, const char *fmt, ...)
{
	char line[2048];
	int n, rank = atomic_load(&log_rank);
	va_list ap;

	if (level == PS_LOG_ERROR) { /* through a copy: an argument may
				      * be last_error itself */
		char msg[sizeof(last_error)];
		va_start(ap, fmt);
		vsnprintf(msg, sizeof(msg), fmt, ap);
		va_end(ap);
		memcpy(last_error, msg, sizeof(msg));
		error_count++;
	}
	if (!ps_log_enabled(level))
		return;
	if (level < PS_LOG_ERROR || level > PS_LOG_DEBUG)
		level = PS_LOG_ERROR;
	if (rank >= 0)
		n = snprintf(line, sizeof(line), "[ordo %s %d] %s: ",
			     atomic_load(&log_role),
			     rank, level_names[level]);
	else
		n = snprintf(line, sizeof(line), "[ordo %s] %s: ",
			     atomic_load(&log_role),
			     level_names[level]);
	if (n < 0)
		return;
	va_start(ap, fmt);
	vsnprintf(line + n, sizeof(line) - (size_t)n, fmt, ap);
	va_end(ap);
	/* One fputs of a whole line: stdio locks the stream per call. */
	size_t len = strlen(line);
	if (len + 1 < sizeof(line)) {
		line[len] = '\n';
		line[len + 1] = '\0';
	} else {
		line[sizeof(line) - 2] = '\n';
	}
	fputs(line, stderr);
}
