/*
 * common/trace_format.c - writing and merging timelines (trace_format.h).
 */
#include <jansson.h>
#include <stdio.h>
#include <string.h>

#include "common/log.h"
#include "common/trace_format.h"
#include "ordo/error.h"

typedef ps_trace_event event;

static const char *const lane_names[] = {
	[PS_LANE_COMPUTE] = "compute", [PS_LANE_WAIT] = "wait",
	[PS_LANE_PUSH] = "push",       [PS_LANE_RECEIVE] = "receive",
	[PS_LANE_UPDATE] = "update",   [PS_LANE_SEND] = "send",
};

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

void ps_trace_set_name(char *dst, size_t cap, const char *name)
{
	size_t n = strlen(name);

	if (n >= cap) {
		n = cap - 1;
		/* name[n], the first byte left out, continues a character:
		 * leave out its first bytes too (at most 3 in UTF-8) */
		for (int k = 0; k < 3 && n > 0 &&
				((unsigned char)name[n] & 0xc0) == 0x80;
		     k++)
			n--;
	}
	memcpy(dst, name, n);
	dst[n] = '\0';
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
