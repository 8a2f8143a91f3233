/*
 * common/strbuf.c - the bounded string builder (strbuf.h).
 */
#include "common/strbuf.h"

#include <stdarg.h>
#include <stdio.h>
#include <string.h>

ps_strbuf ps_strbuf_over(char *buf, size_t cap)
{
	if (cap > 0)
		buf[0] = '\0';
	return (ps_strbuf){.buf = buf, .cap = cap};
}

void ps_strbuf_addf(ps_strbuf *sb, const char *fmt, ...)
{
	static const char mark[] = " [...]";
	va_list ap;
	int n;

	if (sb->cut || sb->cap == 0)
		return;
	va_start(ap, fmt);
	n = vsnprintf(sb->buf + sb->len, sb->cap - sb->len, fmt, ap);
	va_end(ap);
	if (n >= 0 && (size_t)n < sb->cap - sb->len) {
		sb->len += (size_t)n;
		return;
	}
	sb->cut = true;
	if (sb->cap > sizeof(mark))
		memcpy(sb->buf + sb->cap - sizeof(mark), mark, sizeof(mark));
	sb->len = strlen(sb->buf);
}
