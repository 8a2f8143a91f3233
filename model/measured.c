/*
 * model/measured.c - a model file from measured timings (model/measured.h).
 */
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <jansson.h>

#include "model/measured.h"

int ps_measure_wanted(const ps_config *cfg)
{
	return cfg->model.measure_iterations > 0 &&
	       (!cfg->model.file[0] || cfg->worker.mode == PS_WORKER_REPLAY);
}

int ps_timings_init(ps_timings *t, uint32_t ntensors)
{
	memset(t, 0, sizeof(*t));
	t->need_us = malloc((ntensors ? ntensors : 1) * sizeof(float));
	t->push_us = malloc((ntensors ? ntensors : 1) * sizeof(float));
	if (!t->need_us || !t->push_us) {
		ps_timings_free(t);
		return PS_ENOMEM;
	}
	t->ntensors = ntensors;
	for (uint32_t i = 0; i < ntensors; i++)
		t->need_us[i] = t->push_us[i] = -1.0f;
	return PS_OK;
}

void ps_timings_free(ps_timings *t)
{
	free(t->need_us);
	free(t->push_us);
	memset(t, 0, sizeof(*t));
}

static int time_ok(float x, double length)
{
	return x == -1.0f || (isfinite(x) && x >= 0 && x <= length);
}

int ps_timings_check(const ps_timings *t, char *why, size_t whylen)
{
	if (t->iterations < 1) {
		snprintf(why, whylen, "no iteration measured");
		return PS_EPROTO;
	}
	if (!(t->length_us > 0 && t->length_us <= PS_TIMING_MAX_US)) {
		snprintf(why, whylen, "an iteration of %g us (at most %g)",
			 t->length_us, PS_TIMING_MAX_US);
		return PS_EPROTO;
	}
	for (uint32_t i = 0; i < t->ntensors; i++)
		if (!time_ok(t->need_us[i], t->length_us) ||
		    !time_ok(t->push_us[i], t->length_us)) {
			snprintf(why, whylen,
				 "tensor %u: need %g us, push %g us: not -1 "
				 "or within the iteration's %g us",
				 i, (double)t->need_us[i],
				 (double)t->push_us[i], t->length_us);
			return PS_EPROTO;
		}
	return PS_OK;
}

int ps_timings_sum_init(ps_timings_sum *s, uint32_t ntensors)
{
	size_t n = ntensors ? ntensors : 1;

	memset(s, 0, sizeof(*s));
	s->need_us = calloc(n, sizeof(double));
	s->push_us = calloc(n, sizeof(double));
	s->need_n = calloc(n, sizeof(uint32_t));
	s->push_n = calloc(n, sizeof(uint32_t));
	if (!s->need_us || !s->push_us || !s->need_n || !s->push_n) {
		ps_timings_sum_free(s);
		return PS_ENOMEM;
	}
	s->ntensors = ntensors;
	return PS_OK;
}

void ps_timings_sum_free(ps_timings_sum *s)
{
	free(s->need_us);
	free(s->push_us);
	free(s->need_n);
	free(s->push_n);
	memset(s, 0, sizeof(*s));
}

void ps_timings_sum_add(ps_timings_sum *s, const ps_timings *one)
{
	for (uint32_t i = 0; i < s->ntensors && i < one->ntensors; i++) {
		if (one->need_us[i] >= 0) {
			s->need_us[i] += one->need_us[i];
			s->need_n[i]++;
		}
		if (one->push_us[i] >= 0) {
			s->push_us[i] += one->push_us[i];
			s->push_n[i]++;
		}
	}
	s->length_us += one->length_us;
	s->iterations += one->iterations;
	s->workers++;
}

void ps_timings_sum_mean(const ps_timings_sum *s, ps_timings *t)
{
	for (uint32_t i = 0; i < s->ntensors && i < t->ntensors; i++) {
		t->need_us[i] = s->need_n[i]
					? (float)(s->need_us[i] / s->need_n[i])
					: -1.0f;
		t->push_us[i] = s->push_n[i]
					? (float)(s->push_us[i] / s->push_n[i])
					: -1.0f;
	}
	t->length_us = s->workers ? s->length_us / s->workers : 0.0;
	t->iterations = s->iterations;
	t->workers = s->workers;
}

/* ---- the model ----------------------------------------------------------- */

typedef struct at {
	double us;
	uint32_t tensor;
} at;

static int by_time(const void *a, const void *b)
{
	const at *x = a, *y = b;

	if (x->us != y->us)
		return x->us < y->us ? -1 : 1;
	return x->tensor < y->tensor ? -1 : x->tensor > y->tensor;
}

/* Appends op {name, kind, time_us, deps: [the previous op]} to ops (which
 * owns it from the start); returns its tensor list (list_key: reads or
 * grads), or NULL without memory. */
static json_t *add_op(json_t *ops, const char *kind, uint32_t n,
		      double time_us, const char *list_key)
{
	char name[32];
	size_t count = json_array_size(ops);
	const char *prev =
	    count ? json_string_value(json_object_get(
			json_array_get(ops, count - 1), "name"))
		  : NULL;
	json_t *op = json_object(), *deps, *list;

	if (json_array_append_new(ops, op))
		return NULL;
	snprintf(name, sizeof(name), "%s.%u", kind[0] == 'f' ? "fwd" : "bwd",
		 n);
	deps = json_array();
	list = json_array();
	if (json_object_set_new(op, "deps", deps) ||
	    json_object_set_new(op, list_key, list) ||
	    json_object_set_new(op, "name", json_string(name)) ||
	    json_object_set_new(op, "kind", json_string(kind)) ||
	    json_object_set_new(op, "time_us",
				json_real(time_us > 0 ? time_us : 0.0)) ||
	    (prev && json_array_append_new(deps, json_string(prev))))
		return NULL;
	return list;
}

static int append_name(json_t *list, const char *name)
{
	return json_array_append_new(list, json_string(name));
}

/* The forward ops: one per distinct need time (ats sorted), the last one
 * until `end`; tensors never waited for (need < 0) read by the last. */
static int forward_ops(json_t *ops, const at *ats, uint32_t n, double end,
		       const char *const *names, const ps_timings *t)
{
	uint32_t op = 0, i = 0;
	json_t *reads = NULL;

	if (n > 0 && ats[0].us > 0) /* compute that needs no parameter */
		if (!add_op(ops, "forward", op++, ats[0].us, "reads"))
			return -1;
	while (i < n) {
		uint32_t j = i;
		while (j < n && ats[j].us == ats[i].us)
			j++;
		double next = j < n ? ats[j].us : end;
		reads = add_op(ops, "forward", op++, next - ats[i].us, "reads");
		if (!reads)
			return -1;
		for (; i < j; i++)
			if (append_name(reads, names[ats[i].tensor]))
				return -1;
	}
	if (!reads) /* nothing waited for at all: one op from the anchor */
		reads = add_op(ops, "forward", op++, end, "reads");
	for (uint32_t k = 0; reads && k < t->ntensors; k++)
		if (t->need_us[k] < 0 && append_name(reads, names[k]))
			return -1;
	return reads ? 0 : -1;
}

/* root[key] = a new container (root owns it); NULL without memory. */
static json_t *member(json_t *root, const char *key, json_t *v)
{
	return json_object_set_new(root, key, v) ? NULL : v;
}

/* The tensors, [{name, shape: [numel]}]. */
static int tensor_list(json_t *tensors, const char *const *names,
		       const uint64_t *numel, uint32_t n)
{
	for (uint32_t i = 0; i < n; i++) {
		json_t *tn = json_object(), *shape;
		if (json_array_append_new(tensors, tn) ||
		    !(shape = member(tn, "shape", json_array())) ||
		    json_array_append_new(shape,
					  json_integer((json_int_t)numel[i])) ||
		    json_object_set_new(tn, "name", json_string(names[i])))
			return -1;
	}
	return 0;
}

void *ps_measured_model(const ps_timings *t, const char *const *names,
			const uint64_t *numel, uint32_t batch)
{
	uint32_t n = t->ntensors, nneed = 0, npush = 0;
	at *need = calloc(n ? n : 1, sizeof(at));
	at *push = calloc(n ? n : 1, sizeof(at));
	json_t *root = json_object(), *tensors, *ops, *times;
	double last_need = 0, end, prev;
	char note[160];

	if (!need || !push || !root)
		goto fail;
	snprintf(note, sizeof(note),
		 "measured by ordo's workers: %u iteration(s) on each of %u "
		 "worker(s), %.1f us each (model/measured.h)",
		 t->workers ? t->iterations / t->workers : t->iterations,
		 t->workers, t->length_us);
	if (json_object_set_new(root, "format", json_string("ordo-model")) ||
	    json_object_set_new(root, "version", json_integer(1)) ||
	    json_object_set_new(root, "name", json_string("measured")) ||
	    json_object_set_new(root, "batch",
				json_integer(batch ? batch : 1)) ||
	    !(times = member(root, "times", json_object())) ||
	    json_object_set_new(times, "source", json_string("measured")) ||
	    json_object_set_new(times, "note", json_string(note)) ||
	    !(tensors = member(root, "tensors", json_array())) ||
	    !(ops = member(root, "ops", json_array())) ||
	    tensor_list(tensors, names, numel, n) != 0)
		goto fail;
	for (uint32_t i = 0; i < n; i++)
		if (t->need_us[i] >= 0) {
			need[nneed++] = (at){t->need_us[i], i};
			if (t->need_us[i] > last_need)
				last_need = t->need_us[i];
		}
	/* pushes after the forward ops, in time order; never: at the end */
	for (uint32_t i = 0; i < n; i++) {
		double p = t->push_us[i] < 0 ? t->length_us : t->push_us[i];
		push[npush++] = (at){p < last_need ? last_need : p, i};
	}
	qsort(need, nneed, sizeof(at), by_time);
	qsort(push, npush, sizeof(at), by_time);
	end = npush ? push[0].us : t->length_us;
	if (forward_ops(ops, need, nneed, end, names, t) != 0)
		goto fail;
	prev = end;
	for (uint32_t k = 0; k < npush; k++) {
		json_t *grads =
		    add_op(ops, "backward", k, push[k].us - prev, "grads");
		if (!grads || append_name(grads, names[push[k].tensor]))
			goto fail;
		prev = push[k].us;
	}
	if (t->length_us > prev &&
	    !add_op(ops, "backward", npush, t->length_us - prev, "grads"))
		goto fail;
	free(need);
	free(push);
	return root;
fail:
	json_decref(root);
	free(need);
	free(push);
	return NULL;
}
