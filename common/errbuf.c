/*
 * common/errbuf.c - see errbuf.h.
 */
#include <stdarg.h>
#include <stdio.h>

#include "common/errbuf.h"

int ps_errf(char *err, size_t cap, int rc, const char *fmt, ...)
{
	va_list ap;

	if (err && cap) {
		va_start(ap, fmt);
		vsnprintf(err, cap, fmt, ap);
		va_end(ap);
	}
	return rc;
}
