/*
 * common/errbuf.c - see errbuf.h.
 */
#include <stdarg.h>
#include <stdio.h>

#include "common/errbuf.h"

int ps_errf(char *why, size_t whylen, int rc, const char *fmt, ...)
{
	va_list ap;

	if (why && whylen) {
		va_start(ap, fmt);
		vsnprintf(why, whylen, fmt, ap);
		va_end(ap);
	}
	return rc;
}
