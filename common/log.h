/*
 * common/log.h - logging for every ordo process.
 *
 * Lines go to stderr as "[ordo ROLE RANK] LEVEL: message\n", e.g.
 * "[ordo worker 1] error: scheduler silent for 5000 ms". ROLE/RANK are set
 * once the process knows them (rank -1 prints no rank); a node sets the
 * rank when it joins a job, and the role where ps_log_init named none, so
 * that a program on the client library logs as "[ordo worker 1]" too.
 *
 * Every thread keeps its last error message (without the prefix) and a
 * count of the errors it logged, also when the level hides them: a
 * library call can then hand its caller the text it logged
 * (ps_client_last_error).
 *
 * Threads: thread-safe; each call writes one whole line.
 */
#ifndef ORDO_COMMON_LOG_H
#define ORDO_COMMON_LOG_H

#include "common/config.h"

void ps_log_init(const char *role, int level);
void ps_log_set_rank(int rank);
/* The role, where ps_log_init has not named one (a node of the client
 * library once it knows it: "worker"); role must be of static storage
 * (a string literal). */
void ps_log_default_role(const char *role);
void ps_log_set_level(int level);
int ps_log_enabled(int level);

void ps_log(int level, const char *fmt, ...)
	__attribute__((format(printf, 2, 3)));

/* The errors this thread logged so far, and the message of the last
 * ("" before the first); the text stays until this thread logs another. */
unsigned long ps_log_errors(void);
const char *ps_log_last_error(void);

#define PS_ERROR(...) ps_log(PS_LOG_ERROR, __VA_ARGS__)
#define PS_WARN(...) ps_log(PS_LOG_WARN, __VA_ARGS__)
#define PS_INFO(...) ps_log(PS_LOG_INFO, __VA_ARGS__)
#define PS_DEBUG(...)                                                         \
	do {                                                                  \
		if (ps_log_enabled(PS_LOG_DEBUG))                             \
			ps_log(PS_LOG_DEBUG, __VA_ARGS__);                    \
	} while (0)

#endif /* ORDO_COMMON_LOG_H */
