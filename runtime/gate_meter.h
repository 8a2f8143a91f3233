/*
 * runtime/gate_meter.h - the cost of the gate, measured inside a real
 * sender.
 *
 * The gate itself has no clock (gate.h); a sender that wants to know what
 * its decisions cost wraps its gate calls in ps_gate_meter_begin/end and
 * counts the transfers it released - or calls the _metered versions of
 * the gate's calls, which do both. The figure reported is nanoseconds of
 * gate calls (ready + next, including the final "nothing now" answers, +
 * acked) per released transfer: the same unit as bench/gate_decisions.c,
 * but with the real sender's mix of pending transfers, caches and
 * threads. The clock read costs ~20 ns per call (vDSO) and is included,
 * so the figure is an upper bound.
 *
 * Threads: a meter belongs to the thread that owns the gate.
 */
#ifndef ORDO_RUNTIME_GATE_METER_H
#define ORDO_RUNTIME_GATE_METER_H

#include <stdint.h>

#include "runtime/clock.h"
#include "scheduler/gate.h"

typedef struct ps_gate_meter {
	uint64_t ns;       /* spent in gate calls */
	uint64_t released; /* transfers ps_gate_next handed over */
} ps_gate_meter;

static inline uint64_t ps_gate_meter_begin(void)
{
	return ps_now_ns();
}

static inline void ps_gate_meter_end(ps_gate_meter *m, uint64_t begin)
{
	m->ns += ps_now_ns() - begin;
}

/* ns per released transfer; 0 when none was released. */
static inline double ps_gate_meter_per_transfer(const ps_gate_meter *m)
{
	return m->released ? (double)m->ns / (double)m->released : 0.0;
}

static inline int ps_gate_ready_metered(ps_gate *g, ps_gate_meter *m,
					const ps_xfer *x)
{
	uint64_t t0 = ps_gate_meter_begin();
	int rc = ps_gate_ready(g, x);

	ps_gate_meter_end(m, t0);
	return rc;
}

static inline int ps_gate_next_metered(ps_gate *g, ps_gate_meter *m,
				       ps_xfer *x_p)
{
	uint64_t t0 = ps_gate_meter_begin();
	int got = ps_gate_next(g, x_p);

	ps_gate_meter_end(m, t0);
	m->released += got == 1;
	return got;
}

static inline int ps_gate_acked_metered(ps_gate *g, ps_gate_meter *m,
					uint64_t bytes)
{
	uint64_t t0 = ps_gate_meter_begin();
	int rc = ps_gate_acked(g, bytes);

	ps_gate_meter_end(m, t0);
	return rc;
}

#endif /* ORDO_RUNTIME_GATE_METER_H */
