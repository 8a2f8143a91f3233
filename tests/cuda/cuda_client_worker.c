/*
 * tests/cuda/cuda_client_worker.c - device tensors through the public
 * client API (ps_client_declare_cuda, ps_client_push_stream,
 * ps_client_ready_event; docs/cuda.md), exact.
 *
 *   cuda_client_worker --probe
 *       opens CUDA device 0: without one prints "SKIP: no CUDA device: ..."
 *       and exits 77; with one, checks the clear errors of a device index
 *       the machine lacks, a host pointer, and pinned memory that cannot be
 *       had (a tensor of 2^40 elements), and exits 0.
 *   cuda_client_worker [ps-launch's options]
 *       the worker of a job (tests/cuda/client.sh): exact_worker's closed
 *       form (tests/tools/exact_worker.c) with every tensor in device
 *       memory: the gradient is written to device memory on the worker's
 *       own stream and pushed from there; the parameters are read back
 *       from device memory on that stream after it waited on the tensor's
 *       ready event. Tensor sizes from CUDA_WORKER_SIZES (default
 *       1000,4097,10,1).
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <cuda_runtime_api.h>

#include "common/cli.h"
#include "common/log.h"
#include "cuda/device.h"
#include "ordo/ordo.h"

#define MAX_TENSORS 16

static int probe(void)
{
	ps_cuda_info info;
	char err[1024];
	ps_config *cfg = NULL;
	ps_client *c = NULL;
	float *d = NULL, host[4] = {0};
	int rc, bad = 0;

	rc = ps_cuda_open(0, &info, err, sizeof(err));
	if (rc != PS_OK) {
		printf("SKIP: %s\n", err);
		return 77;
	}
	printf("CUDA device 0: %s, %d device(s)\n", info.name, info.count);
	if (ps_config_new(&cfg) != PS_OK || ps_client_create(cfg, &c) != PS_OK ||
	    cudaMalloc((void **)&d, 4 * sizeof(float)) != cudaSuccess) {
		printf("FAIL: set-up\n");
		return 1;
	}
	rc = ps_client_declare_cuda(c, "bad_index", 4, d, info.count, NULL);
	printf("%s: device %d (of %d): %s\n", rc == PS_EINVAL ? "ok" : "FAIL",
	       info.count, info.count, ps_strerror(rc));
	bad += rc != PS_EINVAL;
	rc = ps_client_declare_cuda(c, "host_pointer", 4, host, 0, NULL);
	printf("%s: host pointer: %s\n", rc == PS_EINVAL ? "ok" : "FAIL",
	       ps_strerror(rc));
	bad += rc != PS_EINVAL;
	rc = ps_client_declare_cuda(c, "too_big", (uint64_t)1 << 40, d, 0, NULL);
	printf("%s: 2^40 elements: %s\n", rc == PS_ENOMEM ? "ok" : "FAIL",
	       ps_strerror(rc));
	bad += rc != PS_ENOMEM;
	rc = ps_client_declare_cuda(c, "fine", 4, d, 0, NULL);
	printf("%s: a good declaration after them: %s\n",
	       rc == PS_OK ? "ok" : "FAIL", ps_strerror(rc));
	bad += rc != PS_OK;
	ps_client_destroy(&c);
	ps_config_free(&cfg);
	cudaFree(d);
	return bad ? 1 : 0;
}

static double mean_grad(uint32_t k, uint64_t j, uint64_t i, int workers)
{
	return (double)workers * (double)((j + k) % 13 + i) + (workers - 1);
}

#define CK(call)                                                              \
	do {                                                                  \
		cudaError_t e_ = (call);                                      \
		if (e_ != cudaSuccess) {                                      \
			PS_ERROR("%s: %s", #call, cudaGetErrorString(e_));    \
			rc = PS_EIO;                                          \
			goto out;                                             \
		}                                                             \
	} while (0)

int main(int argc, char **argv)
{
	const ps_cli_info info = {
		.prog = "cuda_client_worker",
		.summary = "Device tensors through the client API, exact (a "
			   "test program).",
	};
	uint64_t sizes[MAX_TENSORS] = {1000, 4097, 10, 1};
	uint32_t n = 4;
	float *dvals[MAX_TENSORS] = {0}, *dgrads[MAX_TENSORS] = {0};
	float *host[MAX_TENSORS] = {0};
	double *expect[MAX_TENSORS] = {0};
	cudaStream_t stream = NULL;
	cudaEvent_t ready = NULL;
	uint64_t checked = 0, wrong = 0, i = 0;
	ps_client *c = NULL;
	ps_cli_status st;
	ps_config cfg;
	int rc = PS_OK, status = 1, rank = -1, workers = 0;

	if (argc == 2 && strcmp(argv[1], "--probe") == 0)
		return probe();
	if (getenv("CUDA_WORKER_SIZES")) {
		char *copy = strdup(getenv("CUDA_WORKER_SIZES")), *save = NULL;
		n = 0;
		for (char *tok = strtok_r(copy, ",", &save);
		     tok && n < MAX_TENSORS; tok = strtok_r(NULL, ",", &save))
			sizes[n++] = strtoull(tok, NULL, 10);
		free(copy);
	}
	st = ps_cli_parse(argc, argv, &info, &cfg);
	if (st != PS_CLI_RUN)
		return ps_cli_exit_status(st);
	ps_log_init("cuda-worker", cfg.log.level);
	if (cfg.train.lr != 1.0 || cfg.train.momentum != 0.0 ||
	    cfg.train.mode != PS_MODE_SYNC) {
		PS_ERROR("needs train.lr = 1, train.momentum = 0, sync mode");
		return 2;
	}
	CK(cudaSetDevice(0));
	CK(cudaStreamCreate(&stream));
	CK(cudaEventCreateWithFlags(&ready, cudaEventDisableTiming));
	rc = ps_client_create(&cfg, &c);
	for (uint32_t k = 0; rc == PS_OK && k < n; k++) {
		char name[32];
		host[k] = malloc(sizes[k] * sizeof(float));
		expect[k] = malloc(sizes[k] * sizeof(double));
		if (!host[k] || !expect[k]) {
			rc = PS_ENOMEM;
			break;
		}
		CK(cudaMalloc((void **)&dvals[k], sizes[k] * sizeof(float)));
		CK(cudaMalloc((void **)&dgrads[k], sizes[k] * sizeof(float)));
		for (uint64_t j = 0; j < sizes[k]; j++)
			expect[k][j] = host[k][j] =
				(float)((j % 1000) + 1000 * k);
		CK(cudaMemcpy(dvals[k], host[k], sizes[k] * sizeof(float),
			      cudaMemcpyHostToDevice));
		snprintf(name, sizeof(name), "t%u", k);
		rc = ps_client_declare_cuda(c, name, sizes[k], dvals[k], 0,
					    NULL);
	}
	if (rc == PS_OK)
		rc = ps_client_start(c);
	if (rc != PS_OK) {
		PS_ERROR("cannot start: %s", ps_strerror(rc));
		goto out;
	}
	rank = ps_client_rank(c);
	workers = ps_client_num_workers(c);
	for (i = 0; rc == PS_OK && ps_client_next_iteration(c, i); i++) {
		for (uint32_t k = n; k-- > 0 && rc == PS_OK;) {
			for (uint64_t j = 0; j < sizes[k]; j++)
				host[k][j] = (float)(workers *
						     ((j + k) % 13 + i) +
						     2 * rank);
			/* the gradient is produced on the worker's stream */
			CK(cudaMemcpyAsync(dgrads[k], host[k],
					   sizes[k] * sizeof(float),
					   cudaMemcpyHostToDevice, stream));
			rc = ps_client_push_stream(c, k, dgrads[k], i, stream);
		}
		for (uint32_t k = 0; k < n && rc == PS_OK; k++) {
			rc = ps_client_wait(c, k, i + 1, -1);
			if (rc == PS_OK)
				rc = ps_client_ready_event(c, k, i + 1, ready);
			if (rc != PS_OK)
				break;
			CK(cudaStreamWaitEvent(stream, ready, 0));
			CK(cudaMemcpyAsync(host[k], dvals[k],
					   sizes[k] * sizeof(float),
					   cudaMemcpyDeviceToHost, stream));
			CK(cudaStreamSynchronize(stream));
			for (uint64_t j = 0; j < sizes[k]; j++) {
				expect[k][j] -= mean_grad(k, j, i, workers);
				checked++;
				if ((double)host[k][j] == expect[k][j])
					continue;
				if (wrong++ < 10)
					PS_ERROR("iteration %llu tensor %u "
						 "element %llu: %.1f in device "
						 "memory, expected %.1f",
						 (unsigned long long)i + 1, k,
						 (unsigned long long)j,
						 (double)host[k][j],
						 expect[k][j]);
			}
		}
	}
	if (rc != PS_OK) {
		PS_ERROR("training failed: %s", ps_strerror(rc));
		goto out;
	}
	rc = ps_client_finish(c, &(ps_client_result){.iterations = i});
	if (rc != PS_OK) {
		PS_ERROR("finish failed: %s", ps_strerror(rc));
		goto out;
	}
	printf("exact: worker %d of %d: %llu device values checked over "
	       "iterations 1..%d, %llu wrong\n",
	       rank, workers, (unsigned long long)checked, (int)i,
	       (unsigned long long)wrong);
	status = wrong == 0 && checked > 0 ? 0 : 1;
out:
	ps_client_destroy(&c);
	for (uint32_t k = 0; k < n; k++) {
		free(host[k]);
		free(expect[k]);
		cudaFree(dvals[k]);
		cudaFree(dgrads[k]);
	}
	if (ready)
		cudaEventDestroy(ready);
	if (stream)
		cudaStreamDestroy(stream);
	return status;
}
