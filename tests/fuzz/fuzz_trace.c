/*
 * tests/fuzz/fuzz_trace.c - libFuzzer harness for the timeline merge
 * (common/trace_format.h: ps_trace_merge, what ps-launch runs over the
 * processes' timeline parts into timeline.json) and the timeline writer
 * whose files it merges (ps_trace_write_process, through ps-sim's
 * sim/timeline.h, which records events as a real run's trace does).
 *
 * Input byte 0 picks the path. Even: the rest is up to four timeline
 * parts separated by NUL bytes, merged into one file. Odd: the rest
 * records events into a simulated timeline (byte 1: servers and workers;
 * then per event a node byte, a lane/kind byte, u16 start, u16 duration,
 * u16 iteration, a name length byte and the name); names that are not
 * UTF-8 are skipped, as model files (JSON) cannot hold them. The timeline
 * is written and merged with itself.
 *
 * Oracle. Parts: the merge succeeds exactly when every part is a JSON
 * array, and then the file holds the parts' elements in order. Written:
 * the merge succeeds, and the file holds per node with events its process
 * and lane names and each event as recorded (kind, node, lane, start,
 * duration, iteration), its name the recorded one cut to the event's
 * name field at most, twice.
 */
#include <string.h>

#include <jansson.h>

#include "common/log.h"
#include "common/trace_format.h"
#include "ordo/error.h"
#include "sim/timeline.h"
#include "fuzz_common.h"

#define MAX_PARTS 4
#define MAX_EVENTS 256
#define LANES 6 /* process and lane names per process: 1 + LANES */
#define NAME_CAP sizeof(((ps_trace_event *)0)->name)

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

FUZZ_QUIET_INITIALIZE

/* The merge of paths[0..n) into a memfd, loaded back (NULL on failure). */
static json_t *merge(const char *const *paths, int n, int *rc)
{
	char out[64];
	json_error_t jerr;
	int fd = fuzz_memfd("", 0, out, sizeof(out));
	FUZZ_CHECK(fd >= 0, "memfd");
	*rc = ps_trace_merge(paths, n, out);
	json_t *all = *rc == PS_OK ? json_load_file(out, 0, &jerr) : NULL;
	FUZZ_CHECK(*rc != PS_OK || all, "the merged file does not load: %s",
		   jerr.text);
	close(fd);
	return all;
}

static void parts(const uint8_t *d, size_t n)
{
	char paths[MAX_PARTS][64];
	const char *pp[MAX_PARTS];
	int fds[MAX_PARTS], np = 0, all_arrays = 1, rc;
	json_t *want = json_array();

	FUZZ_CHECK(want != NULL, "json_array");
	while (np < MAX_PARTS) {
		const uint8_t *nul = np < MAX_PARTS - 1 ? memchr(d, 0, n) : NULL;
		size_t len = nul ? (size_t)(nul - d) : n;
		json_t *part = json_loadb((const char *)d, len, 0, NULL);
		if (json_is_array(part))
			json_array_extend(want, part);
		else
			all_arrays = 0;
		json_decref(part);
		fds[np] = fuzz_memfd(d, len, paths[np], sizeof(paths[np]));
		FUZZ_CHECK(fds[np] >= 0, "memfd");
		pp[np] = paths[np];
		np++;
		if (!nul)
			break;
		d += len + 1;
		n -= len + 1;
	}
	json_t *got = merge(pp, np, &rc);
	FUZZ_CHECK((rc == PS_OK) == all_arrays,
		   "merge %d of %d parts, every one an array: %d", rc, np,
		   all_arrays);
	FUZZ_CHECK(rc == PS_OK || rc == PS_EIO, "merge %d", rc);
	FUZZ_CHECK(rc != PS_OK || json_equal(got, want),
		   "the merged file is not the parts' elements in order");
	json_decref(got);
	json_decref(want);
	for (int i = 0; i < np; i++)
		close(fds[i]);
}

typedef struct {
	uint32_t node;
	char ph;
	int lane;
	uint64_t ts, dur;
	int64_t iteration;
	char name[256];
} rec;

static uint16_t get16(const uint8_t *p)
{
	return (uint16_t)(p[0] | p[1] << 8);
}

/* e, an event of the merged file, is r as written. */
static void check_event(const json_t *e, const rec *r)
{
	const char *name = json_string_value(json_object_get(e, "name"));
	const char *ph = json_string_value(json_object_get(e, "ph"));
	json_t *args = json_object_get(e, "args");
	json_int_t it = json_integer_value(json_object_get(args, "iteration"));
	size_t nl = name ? strlen(name) : 0;

	FUZZ_CHECK(ph && ph[0] == r->ph && !ph[1], "ph %s, not %c", ph, r->ph);
	FUZZ_CHECK(json_integer_value(json_object_get(e, "pid")) == r->node &&
			   json_integer_value(json_object_get(e, "tid")) ==
				   r->lane,
		   "event of node %u lane %d misplaced", r->node, r->lane);
	FUZZ_CHECK((uint64_t)json_integer_value(json_object_get(e, "ts")) ==
				   r->ts &&
			   (r->ph != 'X' ||
			    (uint64_t)json_integer_value(json_object_get(
				    e, "dur")) == r->dur),
		   "event '%s': ts or dur changed", r->name);
	FUZZ_CHECK(r->iteration < 0 ? !json_object_get(args, "iteration")
				    : it == r->iteration,
		   "event '%s': iteration %lld, not %lld", r->name,
		   (long long)it, (long long)r->iteration);
	/* a name longer than the field is cut, within its last character */
	size_t len = strlen(r->name);
	FUZZ_CHECK(name && strncmp(name, r->name, nl) == 0 &&
			   (len < NAME_CAP ? nl == len
					   : nl < NAME_CAP && nl + 4 > NAME_CAP - 1),
		   "event name '%s' recorded as '%s'", name ? name : "(none)",
		   r->name);
}

static void written(const uint8_t *d, size_t n)
{
	static rec recs[MAX_EVENTS];
	char path[64], why[512];
	ps_sim_timeline *tl = NULL;
	int nrec = 0, rc;

	if (n < 1)
		return;
	uint32_t servers = 1 + d[0] % 4, workers = 1 + (d[0] >> 2) % 4;
	uint32_t nodes = servers + workers;
	FUZZ_CHECK(ps_sim_timeline_create(servers, workers, &tl) == PS_OK,
		   "ps_sim_timeline_create");
	d++;
	n--;
	while (n >= 8 && nrec < MAX_EVENTS) {
		rec *r = &recs[nrec];
		size_t len = d[7] < n - 8 ? d[7] : n - 8;
		r->node = 1 + d[0] % nodes;
		r->lane = 1 + (d[1] & 0x7f) % LANES;
		r->ph = d[1] & 0x80 ? 'i' : 'X';
		r->ts = get16(d + 2);
		r->dur = r->ph == 'X' ? get16(d + 4) : 0;
		r->iteration = d[6] == 0xff ? -1 : d[6];
		memcpy(r->name, d + 8, len);
		r->name[len] = '\0';
		d += 8 + len;
		n -= 8 + len;
		json_t *s = json_stringn(r->name, len);
		json_decref(s);
		if (!s || strlen(r->name) != len)
			continue; /* not UTF-8, or a NUL: no model has it */
		ps_trace_args a = PS_TRACE_NO_ARGS;
		a.iteration = r->iteration;
		if (r->ph == 'X')
			ps_sim_timeline_span(tl, r->node, (ps_trace_lane)r->lane,
					     r->name, (double)r->ts,
					     (double)r->dur, &a);
		else
			ps_sim_timeline_instant(tl, r->node,
						(ps_trace_lane)r->lane, r->name,
						(double)r->ts, &a);
		nrec++;
	}
	int fd = fuzz_memfd("", 0, path, sizeof(path));
	FUZZ_CHECK(fd >= 0, "memfd");
	FUZZ_CHECK(ps_sim_timeline_write(tl, path, why, sizeof(why)) == PS_OK,
		   "ps_sim_timeline_write: %s", why);
	ps_sim_timeline_free(&tl);
	const char *pp[2] = {path, path};
	json_t *got = merge(pp, 2, &rc);
	FUZZ_CHECK(rc == PS_OK, "the timeline written does not merge (%d)",
		   rc);
	close(fd);

	/* per node with events, in node order: its names, then its events */
	size_t at = 0, total = json_array_size(got);
	for (int copy = 0; copy < 2; copy++) {
		for (uint32_t node = 1; node <= nodes; node++) {
			int any = 0;
			for (int i = 0; i < nrec; i++) {
				if (recs[i].node != node)
					continue;
				if (!any) {
					at += 1 + LANES;
					any = 1;
				}
				FUZZ_CHECK(at < total, "%zu elements, event "
					   "%d missing", total, i);
				check_event(json_array_get(got, at++), &recs[i]);
			}
		}
	}
	FUZZ_CHECK(at == total, "%zu elements, %zu expected", total, at);
	json_decref(got);
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	if (size < 1)
		return 0;
	if (data[0] & 1)
		written(data + 1, size - 1);
	else
		parts(data + 1, size - 1);
	return 0;
}
