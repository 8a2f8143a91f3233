/*
 * tests/model/test_shipped_models.c - the model files shipped in conf/models
 * (written by model/generate.py): each one loads, has the exact parameter
 * total and tensor count of its model, and has the graph structure of its
 * model (chains, skip connections, parallel branches, dense
 * concatenations), so that a wrong trace or a wrong generator fails here.
 *
 * ORDO_MODELS_DIR is the conf/models directory (set by tests/CMakeLists.txt).
 */
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <setjmp.h>
#include <cmocka.h>

#include <stdio.h>
#include <string.h>

#include "model/dag.h"

#ifndef ORDO_MODELS_DIR
#error "ORDO_MODELS_DIR must be defined to the conf/models directory"
#endif

/* ---- helpers ---------------------------------------------------------- */

static ps_dag *load(const char *file)
{
	char path[512], err[512] = "";
	ps_dag *d = NULL;
	int rc;

	snprintf(path, sizeof(path), "%s/%s", ORDO_MODELS_DIR, file);
	rc = ps_dag_load(path, 1.0, &d, err, sizeof(err));
	if (rc != 0)
		print_error("ps_dag_load(%s): %d: %s\n", path, rc, err);
	assert_int_equal(rc, 0);
	assert_non_null(d);
	return d;
}

/* Index of the op named name; fails the test when absent. */
static uint32_t op_index(const ps_dag *d, const char *name)
{
	int64_t i = ps_dag_find_op(d, name);

	if (i < 0)
		print_error("%s: no op '%s'\n", d->name, name);
	assert_true(i >= 0);
	return (uint32_t)i;
}

static const ps_dag_op *op(const ps_dag *d, const char *name)
{
	return &d->ops[op_index(d, name)];
}

static int has_dep(const ps_dag *d, const ps_dag_op *o, const char *name)
{
	for (uint32_t i = 0; i < o->ndeps; i++)
		if (strcmp(d->ops[o->deps[i]].name, name) == 0)
			return 1;
	return 0;
}

static int reads_tensor(const ps_dag *d, const ps_dag_op *o, const char *t)
{
	for (uint32_t i = 0; i < o->ntensors; i++)
		if (strcmp(d->tensors[o->tensors[i]].name, t) == 0)
			return 1;
	return 0;
}

/*
 * What every shipped file must satisfy: the exact parameter total and
 * tensor count, every gradient produced by a backward op, tensors listed in
 * forward order, positive times with backward > forward, forward ops before
 * backward ops in the file, and a "loss" op ending the forward pass.
 */
static void check_common(const ps_dag *d, const char *name, uint64_t params,
                         uint32_t ntensors)
{
	ps_dag_stats s;
	uint32_t *pos, prev = 0;

	assert_string_equal(d->name, name);
	assert_int_equal(d->batch, 32);
	assert_string_equal(d->time_source, "roofline");

	ps_dag_get_stats(d, &s);
	assert_int_equal(s.params, params);
	assert_int_equal(s.tensors, ntensors);
	assert_int_equal(d->ntensors, ntensors);
	assert_int_equal(s.forward_ops + s.backward_ops, d->nops);
	/* One backward op per forward op. */
	assert_int_equal(s.forward_ops, s.backward_ops);
	assert_true(s.forward_us > 0);
	assert_true(s.backward_us > s.forward_us);
	assert_true(s.critical_path_us > 0);
	assert_true(s.critical_path_us <= s.forward_us + s.backward_us + 1e-6);

	for (uint32_t i = 0; i < d->nops; i++) {
		const ps_dag_op *o = &d->ops[i];
		char bwd[PS_DAG_OP_NAME_MAX + 8];

		assert_true(o->time_us > 0);
		if (o->kind != PS_OP_FORWARD)
			continue;
		/* All forward ops come first, each with its ".bwd". */
		if (i > 0)
			assert_int_equal(d->ops[i - 1].kind, PS_OP_FORWARD);
		snprintf(bwd, sizeof(bwd), "%s.bwd", o->name);
		assert_int_equal(d->ops[op_index(d, bwd)].kind, PS_OP_BACKWARD);
	}

	/* Tensors in forward order: first readers in topological order. */
	pos = test_calloc(d->nops, sizeof(*pos));
	for (uint32_t i = 0; i < d->nops; i++)
		pos[d->topo[i]] = i;
	for (uint32_t t = 0; t < d->ntensors; t++) {
		const ps_dag_tensor *x = &d->tensors[t];

		assert_int_equal(d->ops[x->grad_op].kind, PS_OP_BACKWARD);
		assert_int_equal(d->ops[x->first_reader].kind, PS_OP_FORWARD);
		assert_true(reads_tensor(d, &d->ops[x->first_reader], x->name));
		assert_true(pos[x->first_reader] >= prev);
		prev = pos[x->first_reader];
	}
	test_free(pos);

	/* The loss is a forward op that nothing forward depends on, and the
	 * backward pass starts from it. */
	assert_int_equal(op(d, "loss")->kind, PS_OP_FORWARD);
	assert_true(has_dep(d, op(d, "loss.bwd"), "loss"));
	for (uint32_t i = 0; i < d->nops; i++)
		if (d->ops[i].kind == PS_OP_FORWARD)
			assert_false(has_dep(d, &d->ops[i], "loss"));
}

/* A chain: every forward op has at most one dependency, and so has every
 * backward op. */
static void check_chain(const ps_dag *d)
{
	uint32_t roots = 0;

	for (uint32_t i = 0; i < d->nops; i++) {
		assert_true(d->ops[i].ndeps <= 1);
		if (d->ops[i].ndeps == 0)
			roots++;
	}
	assert_int_equal(roots, 1);
}

/* Count of forward ops with at least n deps. */
static uint32_t joins(const ps_dag *d, uint32_t n)
{
	uint32_t c = 0;

	for (uint32_t i = 0; i < d->nops; i++)
		if (d->ops[i].kind == PS_OP_FORWARD && d->ops[i].ndeps >= n)
			c++;
	return c;
}

/* ---- the models ------------------------------------------------------- */

static void test_vgg16(void **state)
{
	ps_dag *d = load("vgg16.json");

	(void)state;
	check_common(d, "vgg16", 138357544ULL, 32);
	check_chain(d);
	/* 13 convolutions + 3 linear layers, weight and bias each. */
	assert_true(reads_tensor(d, op(d, "features.0"), "features.0.weight"));
	assert_true(reads_tensor(d, op(d, "features.28"), "features.28.bias"));
	assert_int_equal(d->tensors[0].grad_op, op_index(d, "features.0.bwd"));
	assert_true(has_dep(d, op(d, "classifier.0"), "avgpool"));
	assert_true(has_dep(d, op(d, "features.0.bwd"), "features.1.bwd"));
	assert_int_equal(ps_dag_find_tensor(d, "classifier.6.weight"), 30);
	ps_dag_free(&d);
	assert_null(d);
}

static void test_alexnet(void **state)
{
	ps_dag *d = load("alexnet.json");

	(void)state;
	check_common(d, "alexnet", 61100840ULL, 16);
	check_chain(d);
	assert_true(
	    reads_tensor(d, op(d, "classifier.1"), "classifier.1.weight"));
	assert_int_equal(d->tensors[d->ntensors - 1].grad_op,
	                 op_index(d, "classifier.6.bwd"));
	ps_dag_free(&d);
}

static void test_resnet50(void **state)
{
	static const int blocks[4] = {3, 4, 6, 3};
	ps_dag *d = load("resnet50.json");
	uint32_t adds = 0;

	(void)state;
	check_common(d, "resnet50", 25557032ULL, 161);
	/* Every bottleneck ends with out += identity: the add joins the
	 * residual branch (bn3) and the block input, which goes through the
	 * downsample path in the first block of a stage and is the previous
	 * block's output (the same op conv1 reads) otherwise. */
	for (int l = 0; l < 4; l++) {
		for (int b = 0; b < blocks[l]; b++) {
			char name[64], bn3[64], other[64];
			const ps_dag_op *add, *conv1;

			snprintf(name, sizeof(name), "layer%d.%d.add", l + 1,
			         b);
			snprintf(bn3, sizeof(bn3), "layer%d.%d.bn3", l + 1, b);
			add = op(d, name);
			assert_int_equal(add->ndeps, 2);
			assert_true(has_dep(d, add, bn3));
			if (b == 0) {
				snprintf(other, sizeof(other),
				         "layer%d.0.downsample.1", l + 1);
				assert_true(has_dep(d, add, other));
			} else {
				snprintf(name, sizeof(name), "layer%d.%d.conv1",
				         l + 1, b);
				conv1 = op(d, name);
				assert_int_equal(conv1->ndeps, 1);
				assert_true(has_dep(
				    d, add, d->ops[conv1->deps[0]].name));
			}
			adds++;
		}
	}
	assert_int_equal(adds, 16);
	assert_int_equal(joins(d, 2), 16);
	/* The block input's backward op waits for both of its consumers. */
	assert_true(
	    has_dep(d, op(d, "layer1.0.relu_2.bwd"), "layer1.1.conv1.bwd"));
	assert_true(
	    has_dep(d, op(d, "layer1.0.relu_2.bwd"), "layer1.1.add.bwd"));
	/* Batch-norm running statistics are buffers, not parameters. */
	assert_true(ps_dag_find_tensor(d, "bn1.weight") >= 0);
	assert_true(ps_dag_find_tensor(d, "bn1.running_mean") < 0);
	ps_dag_free(&d);
}

static void test_inception_v3(void **state)
{
	static const char *const firsts[4] = {
	    "Mixed_5b.branch1x1.conv", "Mixed_5b.branch5x5_1.conv",
	    "Mixed_5b.branch3x3dbl_1.conv", "Mixed_5b.avg_pool2d"};
	static const char *const lasts[4] = {
	    "Mixed_5b.branch1x1.relu", "Mixed_5b.branch5x5_2.relu",
	    "Mixed_5b.branch3x3dbl_3.relu", "Mixed_5b.branch_pool.relu"};
	ps_dag *d = load("inception_v3.json");
	const ps_dag_op *cat, *loss;
	uint32_t pred;

	(void)state;
	/* 27,161,264 parameters: the auxiliary head is included. */
	check_common(d, "inception_v3", 27161264ULL, 292);

	/* Mixed_5b: four branches leave one op and meet in one cat. */
	cat = op(d, "Mixed_5b.cat");
	assert_int_equal(cat->ndeps, 4);
	assert_int_equal(op(d, firsts[0])->ndeps, 1);
	pred = op(d, firsts[0])->deps[0];
	for (int i = 0; i < 4; i++) {
		const ps_dag_op *f = op(d, firsts[i]);

		assert_int_equal(f->ndeps, 1);
		assert_int_equal(f->deps[0], pred);
		assert_true(has_dep(d, cat, lasts[i]));
	}
	/* 11 inception blocks end in a cat of >= 3 inputs; E blocks have
	 * two inner concatenations each. */
	assert_true(joins(d, 4) >= 5);
	assert_true(joins(d, 3) >= 11);

	/* The auxiliary head: a second output feeding the loss. */
	loss = op(d, "loss");
	assert_int_equal(loss->ndeps, 2);
	assert_true(has_dep(d, loss, "fc"));
	assert_true(has_dep(d, loss, "AuxLogits.fc"));
	assert_int_equal(
	    d->tensors[ps_dag_find_tensor(d, "AuxLogits.fc.weight")].grad_op,
	    op_index(d, "AuxLogits.fc.bwd"));
	assert_int_equal(op(d, "AuxLogits.avg_pool2d")->ndeps, 1);
	assert_true(has_dep(d, op(d, "AuxLogits.avg_pool2d"), "Mixed_6e.cat"));
	/* Mixed_6e's output feeds Mixed_7a and the aux head, so its backward
	 * op waits for both. */
	assert_true(
	    has_dep(d, op(d, "Mixed_6e.cat.bwd"), "AuxLogits.avg_pool2d.bwd"));
	ps_dag_free(&d);
}

/* Tensors of at most max elements (batch-norm vectors, small biases). */
static uint32_t small_tensors(const ps_dag *d, uint64_t max)
{
	uint32_t c = 0;

	for (uint32_t t = 0; t < d->ntensors; t++)
		if (d->tensors[t].numel <= max)
			c++;
	return c;
}

static void test_densenet121(void **state)
{
	static const int layers[4] = {6, 12, 24, 16};
	ps_dag *d = load("densenet121.json");
	uint32_t cats = 0;

	(void)state;
	/* Hundreds of small tensors: 121 batch norms (weight and bias), 120
	 * convolutions, the classifier. */
	check_common(d, "densenet121", 7978856ULL, 364);
	assert_int_equal(small_tensors(d, 1024), 243);
	assert_int_equal(d->tensors[1].numel, 64);
	assert_string_equal(d->tensors[1].name, "features.norm0.weight");
	assert_true(ps_dag_find_tensor(d, "features.norm0.running_mean") < 0);

	/* Dense connectivity: dense layer k of a block concatenates the
	 * block input and the outputs (conv2) of layers 1..k-1; the block
	 * ends with the concatenation of all of them. */
	for (int b = 0; b < 4; b++) {
		char in[64], name[96], prev[96];
		const ps_dag_op *cat;

		if (b == 0)
			snprintf(in, sizeof(in), "features.pool0");
		else
			snprintf(in, sizeof(in), "features.transition%d.pool",
			         b);
		for (int k = 1; k <= layers[b] + 1; k++) {
			if (k <= layers[b])
				snprintf(name, sizeof(name),
				         "features.denseblock%d.denselayer%d.cat",
				         b + 1, k);
			else
				snprintf(name, sizeof(name),
				         "features.denseblock%d.cat", b + 1);
			cat = op(d, name);
			assert_int_equal(cat->ndeps, k);
			assert_true(has_dep(d, cat, in));
			for (int j = 1; j < k; j++) {
				snprintf(prev, sizeof(prev),
				         "features.denseblock%d.denselayer%d.conv2",
				         b + 1, j);
				assert_true(has_dep(d, cat, prev));
			}
			if (k > 1)
				cats++;
		}
		/* The first layer's output feeds every later concatenation,
		 * so its backward op waits for all of them. */
		snprintf(name, sizeof(name),
		         "features.denseblock%d.denselayer1.conv2.bwd", b + 1);
		assert_int_equal(op(d, name)->ndeps, layers[b]);
	}
	assert_int_equal(cats, 58);
	assert_int_equal(joins(d, 2), 58);
	assert_int_equal(joins(d, 25), 1);
	assert_true(has_dep(d, op(d, "classifier"), "adaptive_avg_pool2d"));
	assert_int_equal(d->tensors[d->ntensors - 1].grad_op,
	                 op_index(d, "classifier.bwd"));
	ps_dag_free(&d);
}

static void test_mobilenet_v2(void **state)
{
	/* Inverted residual blocks with a skip connection (stride 1, same
	 * width in and out) and the block before each. */
	static const int res[10] = {3, 5, 6, 8, 9, 10, 12, 13, 15, 16};
	ps_dag *d = load("mobilenet_v2.json");
	uint32_t depthwise = 0;

	(void)state;
	check_common(d, "mobilenet_v2", 3504872ULL, 158);
	assert_int_equal(small_tensors(d, 1024), 107);

	/* A chain but for the skip connections: x + conv(x). */
	for (int i = 0; i < 10; i++) {
		char name[96], last[64], prev[64];
		const ps_dag_op *add;

		snprintf(name, sizeof(name), "features.%d.add", res[i]);
		snprintf(last, sizeof(last), "features.%d.conv.3", res[i]);
		if (i > 0 && res[i - 1] == res[i] - 1)
			snprintf(prev, sizeof(prev), "features.%d.add",
			         res[i] - 1);
		else
			snprintf(prev, sizeof(prev), "features.%d.conv.3",
			         res[i] - 1);
		add = op(d, name);
		assert_int_equal(add->ndeps, 2);
		assert_true(has_dep(d, add, last));
		assert_true(has_dep(d, add, prev));
		/* The block input feeds the block and the add. */
		snprintf(name, sizeof(name), "%s.bwd", prev);
		assert_int_equal(op(d, name)->ndeps, 2);
	}
	assert_int_equal(joins(d, 2), 10);
	assert_int_equal(joins(d, 3), 0);

	/* Depthwise 3x3 convolutions (groups = channels): one input channel
	 * per filter, in features.1 and the middle of every later block. */
	for (uint32_t t = 0; t < d->ntensors; t++)
		if (d->tensors[t].ndim == 4 && d->tensors[t].shape[1] == 1 &&
		    d->tensors[t].shape[2] == 3)
			depthwise++;
	assert_int_equal(depthwise, 17);
	assert_int_equal(
	    d->tensors[ps_dag_find_tensor(d, "features.1.conv.0.0.weight")]
	        .shape[1],
	    1);
	assert_true(has_dep(d, op(d, "classifier.1"), "classifier.0"));
	ps_dag_free(&d);
}

static void test_transformer(void **state)
{
	ps_dag *d = load("transformer.json");
	int64_t emb;
	uint32_t readers = 0;

	(void)state;
	/* nn.Transformer base 44,140,544 + 32000 x 512 shared embedding. */
	check_common(d, "transformer", 60524544ULL, 185);

	/* The embedding is shared by source, target and output projection;
	 * its gradient comes from one backward op that waits for all. */
	emb = ps_dag_find_tensor(d, "embed.weight");
	assert_true(emb >= 0);
	assert_int_equal(d->tensors[emb].shape[0], 32000);
	assert_int_equal(d->tensors[emb].shape[1], 512);
	for (uint32_t i = 0; i < d->nops; i++)
		if (d->ops[i].kind == PS_OP_FORWARD &&
		    reads_tensor(d, &d->ops[i], "embed.weight"))
			readers++;
	assert_int_equal(readers, 3);
	assert_int_equal(d->tensors[emb].grad_op, op_index(d, "embed.bwd"));
	assert_true(has_dep(d, op(d, "embed.bwd"), "embed_1.bwd"));
	assert_true(has_dep(d, op(d, "embed.bwd"), "generator.bwd"));

	/* Residual connections and the encoder output used by every decoder
	 * layer's cross-attention. */
	assert_int_equal(op(d, "transformer.encoder.layers.0.add")->ndeps, 2);
	for (int l = 0; l < 6; l++) {
		char name[96];

		snprintf(name, sizeof(name),
		         "transformer.decoder.layers.%d.multihead_attn", l);
		assert_int_equal(op(d, name)->ndeps, 2);
		assert_true(
		    has_dep(d, op(d, name), "transformer.encoder.norm"));
	}
	assert_int_equal(op(d, "transformer.encoder.norm.bwd")->ndeps, 6);
	ps_dag_free(&d);
}

static void test_par32(void **state)
{
	ps_dag *d = load("par32.json");
	const ps_dag_op *add;
	uint32_t branches = 0;

	(void)state;
	check_common(d, "par32", 16777216ULL, 32);
	add = op(d, "Toy/Layer-0/add");
	assert_int_equal(add->ndeps, 32);
	/* 32 independent branches: a root op reading its own tensor, whose
	 * only consumer is the add; its backward op needs only add's. */
	for (uint32_t t = 0; t < d->ntensors; t++) {
		const ps_dag_op *f = &d->ops[d->tensors[t].first_reader];
		const ps_dag_op *b = &d->ops[d->tensors[t].grad_op];

		assert_int_equal(d->tensors[t].numel, 524288);
		assert_int_equal(f->ndeps, 0);
		assert_int_equal(f->ntensors, 1);
		assert_int_equal(f->tensors[0], t);
		assert_int_equal(f->nsuccs, 1);
		assert_string_equal(d->ops[f->succs[0]].name, add->name);
		assert_true(has_dep(d, add, f->name));
		assert_int_equal(b->ndeps, 1);
		assert_string_equal(d->ops[b->deps[0]].name,
		                    "Toy/Layer-0/add.bwd");
		branches++;
	}
	assert_int_equal(branches, 32);
	ps_dag_free(&d);
}

static void test_seq32(void **state)
{
	ps_dag *d = load("seq32.json");

	(void)state;
	check_common(d, "seq32", 16777216ULL, 32);
	check_chain(d);
	/* Layer i reads tensor i and follows layer i - 1. */
	for (uint32_t t = 0; t < d->ntensors; t++) {
		const ps_dag_op *f = &d->ops[d->tensors[t].first_reader];

		assert_int_equal(d->tensors[t].numel, 524288);
		assert_int_equal(f->ntensors, 1);
		if (t == 0) {
			assert_int_equal(f->ndeps, 0);
		} else {
			assert_int_equal(f->ndeps, 1);
			assert_int_equal(f->deps[0],
			                 d->tensors[t - 1].first_reader);
			/* The backward pass runs the chain in reverse. */
			assert_true(
			    has_dep(d, &d->ops[d->tensors[t - 1].grad_op],
			            d->ops[d->tensors[t].grad_op].name));
		}
	}
	ps_dag_free(&d);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
	    cmocka_unit_test(test_vgg16),
	    cmocka_unit_test(test_alexnet),
	    cmocka_unit_test(test_resnet50),
	    cmocka_unit_test(test_inception_v3),
	    cmocka_unit_test(test_densenet121),
	    cmocka_unit_test(test_mobilenet_v2),
	    cmocka_unit_test(test_transformer),
	    cmocka_unit_test(test_par32),
	    cmocka_unit_test(test_seq32),
	};

	return cmocka_run_group_tests(tests, NULL, NULL);
}
