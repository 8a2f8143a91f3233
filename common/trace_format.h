/*
 * common/trace_format.h - the timeline's format: Chrome trace events.
 *
 * A timeline is a JSON array of trace events (the Chrome trace-event
 * format, viewable in Perfetto or chrome://tracing). A process is a Chrome
 * "process" (pid = node id, named "worker 0"...), and each kind of activity
 * a lane (tid, named by ps_trace_lane):
 *   workers: compute (replayed ops), wait (engine waiting on parameters),
 *            push (gradient partitions: ready -> sent -> acked),
 *            receive (parameter partitions arriving);
 *   servers: receive (pushes arriving), update (aggregation + SGD),
 *            send (parameter partitions: ready -> sent).
 * Real processes record events with runtime/trace.h; ps-sim with
 * sim/timeline.h; both write them here.
 *
 * Threads: no shared state.
 */
#ifndef ORDO_COMMON_TRACE_FORMAT_H
#define ORDO_COMMON_TRACE_FORMAT_H

#include <stddef.h>
#include <stdint.h>
#include <stdio.h>

typedef enum {
	PS_LANE_COMPUTE = 1,
	PS_LANE_WAIT = 2,
	PS_LANE_PUSH = 3,
	PS_LANE_RECEIVE = 4,
	PS_LANE_UPDATE = 5,
	PS_LANE_SEND = 6,
} ps_trace_lane;

/* What a transfer event carries; -1 / 0 for fields that do not apply. */
typedef struct ps_trace_args {
	int64_t iteration;
	int64_t tensor;
	int64_t partition;
	int64_t bytes;
	uint64_t ready_us, sent_us, acked_us; /* 0 = not recorded */
} ps_trace_args;

#define PS_TRACE_NO_ARGS                                                      \
	((ps_trace_args){.iteration = -1, .tensor = -1, .partition = -1,      \
			 .bytes = -1})

/* One recorded event, as timeline writers hold it. */
typedef struct ps_trace_event {
	char ph; /* 'X' span, 'i' instant */
	uint8_t lane;
	char name[46];
	uint64_t ts_us, dur_us;
	ps_trace_args args;
} ps_trace_event;

/* name into an event's name field of cap bytes (NUL included). A longer
 * name is cut before the character the field would split (names come
 * from model files, UTF-8; half a character is not JSON, and the merge
 * of the timeline would refuse the file). */
void ps_trace_set_name(char *dst, size_t cap, const char *name);

/* Writes one process of a timeline into an open JSON array: its name, its
 * lanes' names and its n events, in the trace-event format. first: nothing
 * was written into the array yet (no separator before). Used by
 * ps_trace_close and by writers that hold several processes (ps-sim). */
void ps_trace_write_process(FILE *f, uint32_t pid, const char *process_name,
			    const ps_trace_event *events, size_t n,
			    int first);

/* Merges the JSON arrays in paths[] into out (one array). */
int ps_trace_merge(const char *const *paths, int n, const char *out);

#endif /* ORDO_COMMON_TRACE_FORMAT_H */
