/*
 * bench/ckpt_write.c - how fast a checkpoint of a model reaches the disk.
 *
 * Writes a checkpoint of a model file's tensors (values and momentum) as
 * S servers would - S threads, each writing its shard of a balanced
 * placement with ps_ckpt_write_shard - then the manifest, and prints the
 * bytes and the time from the first byte to the manifest's rename. Used by
 * bench/checkpoint.sh, which sets it beside `dd conv=fsync` of the same
 * bytes in the same run.
 *
 *   bench_ckpt_write --model conf/models/vgg16.json --dir DIR [--servers S]
 *
 * Output (one line): "checkpoint BYTES bytes SECONDS s MBPS MB/s".
 */
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "checkpoint/checkpoint.h"
#include "common/config.h"
#include "model/dag.h"
#include "scheduling/placement.h"

typedef struct shard_job {
	const char *dir;
	uint32_t rank;
	ps_ckpt_segment *segs;
	uint32_t nsegs;
	int rc;
	char why[PS_CKPT_PATH_MAX + 512];
} shard_job;

static void *write_one(void *arg)
{
	shard_job *j = arg;

	j->rc = ps_ckpt_write_shard(j->dir, j->rank, 1, j->segs, j->nsegs,
				    j->why, sizeof(j->why));
	return NULL;
}

static double now_s(void)
{
	struct timespec ts;
	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (double)ts.tv_sec + (double)ts.tv_nsec / 1e9;
}

int main(int argc, char **argv)
{
	const char *model = NULL, *root = NULL;
	uint32_t servers = 1;
	char err[1024], dir[PS_CKPT_PATH_MAX];
	ps_tensor_desc *tensors;
	ps_placement *pl = NULL;
	ps_dag *dag = NULL;
	float *values, *momentum;
	uint64_t total = 0, bytes;
	shard_job *jobs;
	pthread_t *th;
	double t0, t1;

	for (int i = 1; i + 1 < argc; i += 2) {
		if (strcmp(argv[i], "--model") == 0)
			model = argv[i + 1];
		else if (strcmp(argv[i], "--dir") == 0)
			root = argv[i + 1];
		else if (strcmp(argv[i], "--servers") == 0)
			servers = (uint32_t)atoi(argv[i + 1]);
	}
	if (!model || !root || servers < 1 || servers > 64) {
		fprintf(stderr, "usage: bench_ckpt_write --model FILE --dir DIR "
			"[--servers 1..64]\n");
		return 2;
	}
	if (ps_dag_load(model, 1.0, &dag, err, sizeof(err)) != PS_OK) {
		fprintf(stderr, "bench_ckpt_write: %s\n", err);
		return 1;
	}
	tensors = calloc(dag->ntensors, sizeof(*tensors));
	for (uint32_t t = 0; t < dag->ntensors; t++) {
		snprintf(tensors[t].name, sizeof(tensors[t].name), "%s",
			 dag->tensors[t].name);
		tensors[t].numel = dag->tensors[t].numel;
		total += tensors[t].numel;
	}
	if (ps_placement_compute(tensors, dag->ntensors, 4 << 20, 0, servers,
				 PS_PLACE_BALANCED, &pl) != PS_OK)
		return 1;
	/* the bytes of a trained model, not zeros a file system might skip */
	values = malloc(total * sizeof(float));
	momentum = malloc(total * sizeof(float));
	jobs = calloc(servers, sizeof(*jobs));
	th = calloc(servers, sizeof(*th));
	if (!values || !momentum || !jobs || !th)
		return 1;
	for (uint64_t i = 0; i < total; i++) {
		values[i] = (float)(i % 9973) * 1e-3f - 4.0f;
		momentum[i] = (float)(i % 7919) * -1e-4f;
	}
	snprintf(dir, sizeof(dir), "%s/ckpt-000000000001", root);
	for (uint32_t r = 0; r < servers; r++) {
		jobs[r] = (shard_job){.dir = dir, .rank = r};
		jobs[r].segs = calloc(pl->num_parts, sizeof(*jobs[r].segs));
	}
	for (uint32_t i = 0; i < pl->num_parts; i++) {
		const ps_partition *p = &pl->parts[i];
		uint64_t at = p->offset;
		shard_job *j = &jobs[p->server];

		for (uint32_t t = 0; t < p->tensor; t++)
			at += tensors[t].numel;
		j->segs[j->nsegs++] = (ps_ckpt_segment){
			.tensor = p->tensor, .offset = p->offset,
			.numel = p->numel, .version = 1,
			.values = values + at, .momentum = momentum + at};
	}
	t0 = now_s();
	for (uint32_t r = 0; r < servers; r++)
		pthread_create(&th[r], NULL, write_one, &jobs[r]);
	for (uint32_t r = 0; r < servers; r++) {
		pthread_join(th[r], NULL);
		if (jobs[r].rc != PS_OK) {
			fprintf(stderr, "bench_ckpt_write: %s\n", jobs[r].why);
			return 1;
		}
	}
	{
		ps_ckpt_meta meta = {.iteration = 1, .mode = "sync",
				     .workers = 1, .servers = servers,
				     .partition_size = 4 << 20,
				     .preset = "baseline", .config_ini = ""};
		if (ps_ckpt_write_manifest(dir, &meta, tensors, dag->ntensors,
					   servers, err, sizeof(err)) != PS_OK) {
			fprintf(stderr, "bench_ckpt_write: %s\n", err);
			return 1;
		}
	}
	t1 = now_s();
	bytes = 2 * total * sizeof(float);
	printf("checkpoint %llu bytes %.3f s %.1f MB/s\n",
	       (unsigned long long)bytes, t1 - t0,
	       (double)bytes / (t1 - t0) / 1e6);
	for (uint32_t r = 0; r < servers; r++)
		free(jobs[r].segs);
	free(jobs);
	free(th);
	free(values);
	free(momentum);
	free(tensors);
	ps_placement_free(&pl);
	ps_dag_free(&dag);
	return 0;
}
