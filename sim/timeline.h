/*
 * sim/timeline.h - a simulated run's timeline, in the format of real runs.
 *
 * Real processes record Chrome trace events with runtime/trace.h, one
 * process per file, and ps-launch merges them into timeline.json. The
 * simulator has every node in one process, so it records events per
 * simulated node and writes one DIR/timeline.json itself, event for event
 * in the format runtime/trace.c writes: the same process ids (server s is
 * node 1 + s, worker w node 1 + S + w), process and lane names, span ('X')
 * and instant ('i') events, the same args. Timestamps are simulated
 * microseconds from 0, so a simulated and a measured timeline open side by
 * side in Perfetto.
 *
 * Threads: single-threaded.
 */
#ifndef ORDO_SIM_TIMELINE_H
#define ORDO_SIM_TIMELINE_H

#include <stdint.h>

#include "common/trace_format.h"
#include "ordo/error.h"

typedef struct ps_sim_timeline ps_sim_timeline;

int ps_sim_timeline_create(uint32_t servers, uint32_t workers,
			   ps_sim_timeline **tl_p);
void ps_sim_timeline_free(ps_sim_timeline **tl_p);

/* node: the simulated node id (1 + s or 1 + S + w). Failing to record
 * (out of memory) drops the event and is reported by write. */
void ps_sim_timeline_span(ps_sim_timeline *tl, uint32_t node,
			  ps_trace_lane lane, const char *name, double start_us,
			  double dur_us, const ps_trace_args *a);
void ps_sim_timeline_instant(ps_sim_timeline *tl, uint32_t node,
			     ps_trace_lane lane, const char *name, double ts_us,
			     const ps_trace_args *a);

/* Writes the JSON array to path. PS_EIO with a message in why. */
int ps_sim_timeline_write(ps_sim_timeline *tl, const char *path, char *why,
			  size_t whylen);

#endif /* ORDO_SIM_TIMELINE_H */
