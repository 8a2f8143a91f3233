/*
 * common/errbuf.h - whole-sentence errors written into a caller's buffer,
 * the convention of every function that explains a failure to its caller
 * (char *why, size_t whylen) rather than logging it.
 */
#ifndef ORDO_COMMON_ERRBUF_H
#define ORDO_COMMON_ERRBUF_H

#include <stddef.h>

/* Formats into why[whylen] (nothing when why is NULL or whylen is 0; cut to
 * fit) and returns rc, so that `return ps_errf(why, whylen, PS_EINVAL, ...)`
 * fails and explains in one statement. */
int ps_errf(char *why, size_t whylen, int rc, const char *fmt, ...)
	__attribute__((format(printf, 4, 5)));

#endif /* ORDO_COMMON_ERRBUF_H */
