/*
 * runtime/trace.h - recording the timeline of one process.
 *
 * When output.dir is set, every process records events and writes them at
 * exit to DIR/ROLE-RANK.json as a JSON array of trace events (the Chrome
 * trace-event format, viewable in Perfetto or chrome://tracing); ps-launch
 * merges the parts into DIR/timeline.json. Timestamps are CLOCK_REALTIME
 * microseconds, so the parts of one machine (and of NTP-synchronised
 * machines, to that precision) line up.
 *
 * The events and their format: common/trace_format.h.
 *
 * Threads: every function is thread-safe; recording is a short critical
 * section appending to a buffer (no I/O until ps_trace_close).
 */
#ifndef ORDO_RUNTIME_TRACE_H
#define ORDO_RUNTIME_TRACE_H

#include <stddef.h>
#include <stdint.h>
#include <stdio.h>

#include "common/trace_format.h"

/* Starts recording if dir is non-empty (else recording is off and every
 * call below is a no-op). pid: the node id; name: "worker 0". */
int ps_trace_open(const char *dir, const char *file_stem, uint32_t pid,
		  const char *process_name);
int ps_trace_enabled(void);

/* Microseconds, CLOCK_REALTIME. */
uint64_t ps_trace_now_us(void);

/* A span [start, start + dur) on a lane. name is copied. */
void ps_trace_span(ps_trace_lane lane, const char *name, uint64_t start_us,
		   uint64_t dur_us, const ps_trace_args *args);
/* A point in time on a lane. */
void ps_trace_instant(ps_trace_lane lane, const char *name, uint64_t ts_us,
		      const ps_trace_args *args);

/* Writes DIR/STEM.json and stops recording. PS_EIO if it cannot. */
int ps_trace_close(void);

#endif /* ORDO_RUNTIME_TRACE_H */
