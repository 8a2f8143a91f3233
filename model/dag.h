/*
 * model/dag.h - a model file loaded: tensors and the ops of one iteration.
 *
 * The format is docs/model-format.md. ps_dag_load() checks everything that
 * document lists and reports the first problem with the file name and the
 * JSON path of the offending value. A loaded DAG is immutable.
 *
 * Threads: a ps_dag is read-only after loading; share it freely.
 */
#ifndef ORDO_MODEL_DAG_H
#define ORDO_MODEL_DAG_H

#include <stdint.h>
#include <stdio.h>

#include "ordo/error.h"

#define PS_DAG_NAME_MAX 64   /* tensor and model names, with the NUL */
#define PS_DAG_OP_NAME_MAX 128
#define PS_DAG_MAX_DIMS 8

typedef enum { PS_OP_FORWARD = 0, PS_OP_BACKWARD = 1 } ps_op_kind;

typedef struct ps_dag_tensor {
	char name[PS_DAG_NAME_MAX];
	uint32_t ndim;
	uint64_t shape[PS_DAG_MAX_DIMS];
	uint64_t numel; /* product of shape */
	uint64_t bytes; /* 4 * numel */
	uint32_t grad_op;    /* the backward op producing its gradient */
	uint32_t first_reader; /* the first forward op (in topological
				  order) that reads it */
} ps_dag_tensor;

typedef struct ps_dag_op {
	char name[PS_DAG_OP_NAME_MAX];
	ps_op_kind kind;
	double time_us; /* already multiplied by compute_scale */
	double flops, bytes; /* 0 when absent */
	uint32_t ntensors;
	uint32_t *tensors; /* forward: reads; backward: grads */
	uint32_t ndeps;
	uint32_t *deps;  /* op indices */
	uint32_t nsuccs;
	uint32_t *succs; /* ops that depend on this one */
} ps_dag_op;

typedef struct ps_dag {
	char name[PS_DAG_NAME_MAX];
	char description[256];
	uint32_t batch;
	char time_source[32]; /* "roofline" or "measured" */
	char device[128];     /* roofline device, "" otherwise */
	uint32_t ntensors;
	ps_dag_tensor *tensors;
	uint32_t nops;
	ps_dag_op *ops;
	uint32_t *topo; /* a topological order of the ops: among ready ops,
			   lowest index first (the replay order on one
			   stream) */
} ps_dag;

/* Loads and checks a model file; compute_scale (> 0) multiplies every op
 * time. On error returns PS_ENOENT (cannot open), PS_EINVAL (anything
 * else) with "FILE: $.path: message" in why. */
int ps_dag_load(const char *path, double compute_scale, ps_dag **dag_p,
		char *why, size_t whylen);
/* The same checks on a model already parsed (jansson's json_t, passed
 * as void * so that this header does not need jansson's); label names it
 * in errors ("FILE" above). root stays the caller's. */
int ps_dag_from_json(void *root, const char *label, double compute_scale,
		     ps_dag **dag_p, char *why, size_t whylen);
void ps_dag_free(ps_dag **dag_p);

int64_t ps_dag_find_tensor(const ps_dag *d, const char *name);
int64_t ps_dag_find_op(const ps_dag *d, const char *name);

/* Summary numbers. */
typedef struct ps_dag_stats {
	uint32_t tensors, ops, forward_ops, backward_ops;
	uint64_t params; /* total elements over all tensors */
	uint64_t bytes;
	uint64_t largest_tensor_bytes;
	double forward_us, backward_us; /* sums of op times */
	double critical_path_us; /* longest path through deps, by time */
} ps_dag_stats;

void ps_dag_get_stats(const ps_dag *d, ps_dag_stats *s_p);

/* Prints the stats as "key value" lines; the line "params N" carries the
 * parameter total as a plain integer (checks rely on it). */
void ps_dag_print_stats(const ps_dag *d, FILE *out);

#endif /* ORDO_MODEL_DAG_H */
