/*
 * common/memory.c - see memory.h.
 */
#include <stdlib.h>
#include <sys/mman.h>

#include "common/memory.h"

#define HUGE_PAGE (2u << 20)

void *ps_alloc_big(size_t bytes)
{
	void *p;

	if (bytes < HUGE_PAGE)
		return calloc(1, bytes ? bytes : 1);
	p = mmap(NULL, bytes, PROT_READ | PROT_WRITE,
		 MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
	if (p == MAP_FAILED)
		return NULL;
	/* advice only: without THP the buffer works with small pages */
	(void)madvise(p, bytes, MADV_HUGEPAGE);
	return p;
}

void ps_free_big(void *p, size_t bytes)
{
	if (!p)
		return;
	if (bytes < HUGE_PAGE)
		free(p);
	else
		munmap(p, bytes);
}
