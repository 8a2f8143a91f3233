/*
 * proto/ring.h - a growable FIFO ring of values, for the machines' queues
 * of ops and messages.
 *
 * PS_RING_PUSH(ring, item) appends (growing the ring: doubling, from 64)
 * and makes the enclosing function return PS_ENOMEM when it cannot;
 * PS_RING_AT(ring, i) is the i-th oldest; PS_RING_POP(ring) drops the
 * oldest. A ring is a struct with fields v, head, n, cap.
 *
 * Threads: a ring belongs to its machine's thread.
 */
#ifndef ORDO_PROTO_RING_H
#define ORDO_PROTO_RING_H

#include <stdint.h>
#include <stdlib.h>

#define PS_RING(type)                                                         \
	struct {                                                              \
		type *v;                                                      \
		uint32_t head, n, cap;                                        \
	}

#define PS_RING_AT(r, i) ((r).v[((r).head + (i)) % (r).cap])

#define PS_RING_POP(r)                                                        \
	do {                                                                  \
		(r).head = ((r).head + 1) % (r).cap;                          \
		(r).n--;                                                      \
	} while (0)

#define PS_RING_PUSH(r, item)                                                 \
	do {                                                                  \
		if ((r).n == (r).cap) {                                       \
			uint32_t ncap_ = (r).cap ? 2 * (r).cap : 64;          \
			__typeof__((r).v) v_ = malloc(ncap_ * sizeof(*v_));   \
			if (!v_)                                              \
				return PS_ENOMEM;                             \
			for (uint32_t i_ = 0; i_ < (r).n; i_++)               \
				v_[i_] = PS_RING_AT(r, i_);                   \
			free((r).v);                                          \
			(r).v = v_;                                           \
			(r).head = 0;                                         \
			(r).cap = ncap_;                                      \
		}                                                             \
		(r).v[((r).head + (r).n) % (r).cap] = (item);                 \
		(r).n++;                                                      \
	} while (0)

#endif /* ORDO_PROTO_RING_H */
