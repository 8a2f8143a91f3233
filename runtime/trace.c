/*
 * runtime/trace.c - recording the timeline of one process (trace.h).
 */
#include <errno.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "common/log.h"
#include "runtime/trace.h"
#include "ordo/error.h"

#define MAX_EVENTS (4u << 20) /* then new events are dropped, counted */

typedef ps_trace_event event;

static struct {
	pthread_mutex_t mu;
	int on;
	char path[512];
	uint32_t pid;
	char process_name[64];
	event *events;
	size_t n, cap;
	uint64_t dropped;
} T = {.mu = PTHREAD_MUTEX_INITIALIZER};

uint64_t ps_trace_now_us(void)
{
	struct timespec ts;
	clock_gettime(CLOCK_REALTIME, &ts);
	return (uint64_t)ts.tv_sec * 1000000u + (uint64_t)ts.tv_nsec / 1000u;
}

int ps_trace_open(const char *dir, const char *file_stem, uint32_t pid,
		  const char *process_name)
{
	if (!dir || !dir[0])
		return PS_OK;
	pthread_mutex_lock(&T.mu);
	snprintf(T.path, sizeof(T.path), "%s/%s.json", dir, file_stem);
	snprintf(T.process_name, sizeof(T.process_name), "%s", process_name);
	T.pid = pid;
	T.n = 0;
	T.dropped = 0;
	T.on = 1;
	pthread_mutex_unlock(&T.mu);
	return PS_OK;
}

int ps_trace_enabled(void)
{
	return __atomic_load_n(&T.on, __ATOMIC_RELAXED);
}

static void record(char ph, ps_trace_lane lane, const char *name,
		   uint64_t ts, uint64_t dur, const ps_trace_args *args)
{
	event *e;

	if (!ps_trace_enabled())
		return;
	pthread_mutex_lock(&T.mu);
	if (!T.on) {
		pthread_mutex_unlock(&T.mu);
		return;
	}
	if (T.n == T.cap) {
		size_t cap = T.cap ? 2 * T.cap : 4096;
		event *n = cap <= MAX_EVENTS ? realloc(T.events,
						       cap * sizeof(*n))
					     : NULL;
		if (!n) {
			T.dropped++;
			pthread_mutex_unlock(&T.mu);
			return;
		}
		T.events = n;
		T.cap = cap;
	}
	e = &T.events[T.n++];
	e->ph = ph;
	e->lane = (uint8_t)lane;
	ps_trace_set_name(e->name, sizeof(e->name), name);
	e->ts_us = ts;
	e->dur_us = dur;
	e->args = args ? *args : PS_TRACE_NO_ARGS;
	pthread_mutex_unlock(&T.mu);
}

void ps_trace_span(ps_trace_lane lane, const char *name, uint64_t start_us,
		   uint64_t dur_us, const ps_trace_args *args)
{
	record('X', lane, name, start_us, dur_us, args);
}

void ps_trace_instant(ps_trace_lane lane, const char *name, uint64_t ts_us,
		      const ps_trace_args *args)
{
	record('i', lane, name, ts_us, 0, args);
}

int ps_trace_close(void)
{
	FILE *f;
	int rc = PS_OK;

	pthread_mutex_lock(&T.mu);
	if (!T.on) {
		pthread_mutex_unlock(&T.mu);
		return PS_OK;
	}
	T.on = 0;
	f = fopen(T.path, "w");
	if (!f) {
		PS_ERROR("cannot write the timeline %s: %s", T.path,
			 strerror(errno));
		rc = PS_EIO;
		goto out;
	}
	fputc('[', f);
	ps_trace_write_process(f, T.pid, T.process_name, T.events, T.n, 1);
	fputs("]\n", f);
	if (fclose(f) != 0) {
		PS_ERROR("cannot write the timeline %s", T.path);
		rc = PS_EIO;
	}
	if (T.dropped)
		PS_WARN("timeline: %llu events dropped (more than %u)",
			(unsigned long long)T.dropped, MAX_EVENTS);
out:
	free(T.events);
	T.events = NULL;
	T.n = T.cap = 0;
	pthread_mutex_unlock(&T.mu);
	return rc;
}

