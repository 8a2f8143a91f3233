/*
 * common/memory.h - large zeroed buffers backed by huge pages.
 *
 * A server's shard state and a replaying worker's parameters run to
 * hundreds of MiB. Touching them a 4 KiB page at a time costs a page fault
 * each (seconds per GiB on a virtual machine); with transparent huge pages
 * in "madvise" mode, asking for them cuts the faults 512-fold. Buffers
 * below 2 MiB come from calloc.
 *
 * Threads: thread-safe (mmap/calloc).
 */
#ifndef ORDO_COMMON_MEMORY_H
#define ORDO_COMMON_MEMORY_H

#include <stddef.h>

/* bytes zeroed bytes, or NULL. Free with ps_free_big(p, bytes). */
void *ps_alloc_big(size_t bytes);
void ps_free_big(void *p, size_t bytes);

#endif /* ORDO_COMMON_MEMORY_H */
