/*
 * common/strbuf.h - a bounded string builder over a caller's buffer: text
 * appended piece by piece (lists of keys, multi-line reports) never
 * overflows; what does not fit is cut and the cut marked " [...]".
 *
 * Threads: a builder is used by one thread.
 */
#ifndef ORDO_COMMON_STRBUF_H
#define ORDO_COMMON_STRBUF_H

#include <stdbool.h>
#include <stddef.h>

typedef struct ps_strbuf {
	char *buf;  /* the caller's */
	size_t cap; /* its size */
	size_t len; /* characters written, NUL not counted */
	bool cut;   /* something did not fit */
} ps_strbuf;

/* A builder over buf[cap], holding "" (nothing when cap is 0). */
ps_strbuf ps_strbuf_over(char *buf, size_t cap);

/* Appends; after a cut, nothing more. */
void ps_strbuf_addf(ps_strbuf *sb, const char *fmt, ...)
	__attribute__((format(printf, 2, 3)));

#endif /* ORDO_COMMON_STRBUF_H */
