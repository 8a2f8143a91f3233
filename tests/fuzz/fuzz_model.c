/*
 * tests/fuzz/fuzz_model.c - libFuzzer harness for the model file loader
 * (model/dag.h, docs/model-format.md): a JSON DAG of tensors and ops.
 *
 * Whatever loads is then used as the rest of ordo uses it: its summary
 * (every sum and the critical path), and every tensor and op found again
 * by name. An error must come with a message.
 */
#include <string.h>

#include "common/log.h"
#include "fuzz_common.h"
#include "model/dag.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

FUZZ_QUIET_INITIALIZE

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	char path[64], err[1024];
	ps_dag *dag = NULL;
	ps_dag_stats st;
	int fd = fuzz_memfd(data, size, path, sizeof(path));
	if (fd < 0)
		return 0;
	err[0] = '\0';
	int rc = ps_dag_load(path, 1.0, &dag, err, sizeof(err));
	close(fd);
	if (rc != PS_OK) {
		FUZZ_CHECK(err[0] != '\0' && !dag, "an error without a message");
		return 0;
	}
	ps_dag_get_stats(dag, &st);
	FUZZ_CHECK(st.tensors == dag->ntensors && st.ops == dag->nops,
		   "summary counts differ from the DAG's");
	for (uint32_t i = 0; i < dag->ntensors; i++)
		FUZZ_CHECK(ps_dag_find_tensor(dag, dag->tensors[i].name) ==
				   (int64_t)i,
			   "tensor %u not found by its name", i);
	for (uint32_t i = 0; i < dag->nops; i++)
		FUZZ_CHECK(ps_dag_find_op(dag, dag->ops[i].name) == (int64_t)i,
			   "op %u not found by its name", i);
	ps_dag_free(&dag);
	return 0;
}
