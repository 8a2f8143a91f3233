/*
 * common/trace.c - recording and writing the timeline (trace.h).
 */
#include <errno.h>
#include <jansson.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "common/log.h"
#include "common/trace.h"
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

static const char *const lane_names[] = {
	[PS_LANE_COMPUTE] = "compute", [PS_LANE_WAIT] = "wait",
	[PS_LANE_PUSH] = "push",       [PS_LANE_RECEIVE] = "receive",
	[PS_LANE_UPDATE] = "update",   [PS_LANE_SEND] = "send",
};

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
	snprintf(e->name, sizeof(e->name), "%s", name);
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

/* Writes s as a JSON string (names come from model files). */
static void put_string(FILE *f, const char *s)
{
	fputc('"', f);
	for (; *s; s++) {
		unsigned char ch = (unsigned char)*s;
		if (ch == '"' || ch == '\\')
			fprintf(f, "\\%c", ch);
		else if (ch < 0x20)
			fprintf(f, "\\u%04x", ch);
		else
			fputc(ch, f);
	}
	fputc('"', f);
}

static void put_args(FILE *f, const ps_trace_args *a)
{
	const char *sep = "";

	fputs(",\"args\":{", f);
#define ARG(field, cond)                                                      \
	do {                                                                  \
		if (cond) {                                                   \
			fprintf(f, "%s\"" #field "\":%lld", sep,              \
				(long long)a->field);                         \
			sep = ",";                                            \
		}                                                             \
	} while (0)
	ARG(iteration, a->iteration >= 0);
	ARG(tensor, a->tensor >= 0);
	ARG(partition, a->partition >= 0);
	ARG(bytes, a->bytes >= 0);
	ARG(ready_us, a->ready_us);
	ARG(sent_us, a->sent_us);
	ARG(acked_us, a->acked_us);
#undef ARG
	fputc('}', f);
}

void ps_trace_write_process(FILE *f, uint32_t pid, const char *process_name,
			    const ps_trace_event *events, size_t n, int first)
{
	fprintf(f, "%s{\"ph\":\"M\",\"name\":\"process_name\",\"pid\":%u,"
		"\"tid\":0,\"args\":{\"name\":",
		first ? "" : ",\n", pid);
	put_string(f, process_name);
	fputs("}}", f);
	for (size_t l = 1; l < sizeof(lane_names) / sizeof(lane_names[0]);
	     l++)
		fprintf(f, ",\n{\"ph\":\"M\",\"name\":\"thread_name\","
			"\"pid\":%u,\"tid\":%zu,\"args\":{\"name\":\"%s\"}}",
			pid, l, lane_names[l]);
	for (size_t i = 0; i < n; i++) {
		const event *e = &events[i];
		fprintf(f, ",\n{\"ph\":\"%c\",\"pid\":%u,\"tid\":%u,"
			"\"ts\":%llu,", e->ph, pid, e->lane,
			(unsigned long long)e->ts_us);
		if (e->ph == 'X')
			fprintf(f, "\"dur\":%llu,",
				(unsigned long long)e->dur_us);
		else
			fputs("\"s\":\"t\",", f);
		fputs("\"name\":", f);
		put_string(f, e->name);
		put_args(f, &e->args);
		fputc('}', f);
	}
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

int ps_trace_merge(const char *const *paths, int n, const char *out)
{
	json_t *all = json_array();
	int rc = PS_OK;

	if (!all)
		return PS_ENOMEM;
	for (int i = 0; i < n && rc == PS_OK; i++) {
		json_error_t jerr;
		json_t *part = json_load_file(paths[i], 0, &jerr);
		if (!part || !json_is_array(part)) {
			PS_ERROR("timeline part %s: %s", paths[i],
				 part ? "not a JSON array" : jerr.text);
			rc = PS_EIO;
		} else if (json_array_extend(all, part) != 0) {
			rc = PS_ENOMEM;
		}
		json_decref(part);
	}
	if (rc == PS_OK && json_dump_file(all, out, JSON_COMPACT) != 0) {
		PS_ERROR("cannot write %s", out);
		rc = PS_EIO;
	}
	json_decref(all);
	return rc;
}
