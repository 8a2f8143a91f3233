/*
 * scheduling/gate_meter.h - the cost of the gate, measured inside a real
 * sender.
 *
 * The gate has no clock (gate.h), and neither have the protocol machines
 * that call it (proto/); a driver that wants to know what the gate's
 * decisions cost gives its machine a clock, and the machine calls the
 * _metered versions of the gate's calls. The figure reported is
 * nanoseconds of gate calls (ready + next, including the final "nothing
 * now" answers, + acked) per released transfer: the same unit as
 * bench/gate_decisions.c, but with the real sender's mix of pending
 * transfers, caches and threads. The clock read costs ~20 ns per call
 * (vDSO) and is included, so the figure is an upper bound. Without a
 * clock the meter counts releases only.
 *
 * Threads: a meter belongs to the thread that owns the gate.
 */
#ifndef ORDO_SCHEDULING_GATE_METER_H
#define ORDO_SCHEDULING_GATE_METER_H

#include <stdint.h>

#include "scheduling/gate.h"

typedef struct ps_gate_meter {
	uint64_t (*clock_ns)(void); /* NULL: no timing */
	uint64_t ns;                /* spent in gate calls */
	uint64_t released;          /* transfers ps_gate_next handed over */
} ps_gate_meter;

static inline uint64_t ps_gate_meter_begin(const ps_gate_meter *m)
{
	return m->clock_ns ? m->clock_ns() : 0;
}

static inline void ps_gate_meter_end(ps_gate_meter *m, uint64_t begin)
{
	if (m->clock_ns)
		m->ns += m->clock_ns() - begin;
}

/* ns per released transfer; 0 when none was released or no clock. */
static inline double ps_gate_meter_per_transfer(const ps_gate_meter *m)
{
	return m->released ? (double)m->ns / (double)m->released : 0.0;
}

static inline int ps_gate_ready_metered(ps_gate *g, ps_gate_meter *m,
					const ps_xfer *x)
{
	uint64_t t0 = ps_gate_meter_begin(m);
	int rc = ps_gate_ready(g, x);

	ps_gate_meter_end(m, t0);
	return rc;
}

static inline int ps_gate_next_metered(ps_gate *g, ps_gate_meter *m,
				       ps_xfer *x_p)
{
	uint64_t t0 = ps_gate_meter_begin(m);
	int got = ps_gate_next(g, x_p);

	ps_gate_meter_end(m, t0);
	m->released += got == 1;
	return got;
}

static inline int ps_gate_acked_metered(ps_gate *g, ps_gate_meter *m,
					uint64_t bytes)
{
	uint64_t t0 = ps_gate_meter_begin(m);
	int rc = ps_gate_acked(g, bytes);

	ps_gate_meter_end(m, t0);
	return rc;
}

#endif /* ORDO_SCHEDULING_GATE_METER_H */
