/*
 * common/config.c - the job configuration: one table of options.
 *
 * DESIGN: every key lives in `options[]` below: section, key, type, default
 * (a string, parsed by the same code as user values), bounds, enum names,
 * help text and the offset of its field in struct ps_config. Everything
 * else (loading a file, environment variables, --set, validation, writing
 * the effective INI, the Markdown reference) walks that table; nothing else
 * in the tree knows a key's default or bounds.
 *
 * Files are read by libinih through ini_parse_stream() with our own line
 * reader, which counts lines (so handler errors name FILE:LINE) and refuses
 * lines longer than libinih's line buffer instead of letting libinih split
 * them into two lines. String values are limited to STR_MAX characters so
 * that every value ps_config_write_ini() writes fits on one line and loads
 * back.
 *
 * Every load/apply works on a copy and writes cfg only on success.
 *
 * Threads: no shared state; the table is read-only.
 */
#include <ctype.h>
#include <errno.h>
#include <inttypes.h>
#include <math.h>
#include <stdarg.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>

#include <ini.h>

#include "common/config.h"
#include "common/errbuf.h"
#include "common/strbuf.h"

/* Longest string value: "advertise_host = " plus quotes plus STR_MAX must
 * fit in libinih's 200-byte line buffer (199 characters). */
#define STR_MAX 160
_Static_assert(STR_MAX < PS_CFG_STR, "STR_MAX must fit in char[PS_CFG_STR]");

#define KIB 1024ULL
#define TIB (KIB * KIB * KIB * KIB)
#define GIB (KIB * KIB * KIB)

typedef enum {
	OPT_INT,
	OPT_INT64,
	OPT_DOUBLE,
	OPT_SIZE,
	OPT_STRING,
	OPT_ENUM,
} opt_type;

typedef struct option {
	const char *section;
	const char *key;
	opt_type type;
	const char *def;
	int64_t imin, imax;       /* OPT_INT, OPT_INT64 */
	double dmin, dmax;        /* OPT_DOUBLE */
	bool dmax_open;           /* OPT_DOUBLE: upper bound excluded */
	uint64_t umin, umax;      /* OPT_SIZE */
	const char *const *names; /* OPT_ENUM: index = value, NULL-ended */
	const char *help;
	size_t offset; /* into struct ps_config */
	size_t fsize;  /* sizeof the field */
	/* a shorthand with no field of its own: setting it sets these two
	 * keys of its section (scheduling.order = push_order and
	 * params_order) */
	const char *both[2];
} option;

static const char *const sections[] = {
    "cluster", "transport", "security", "model", "worker", "server", "train",
    "scheduling", "log", "output", "checkpoint", "fault", "metrics", "link",
    "sim", "tune", NULL};

static const char *const transport_names[] = {
    [PS_TRANSPORT_TCP] = "tcp", [PS_TRANSPORT_RDMA] = "rdma", NULL};
static const char *const security_names[] = {
    [PS_SECURITY_NONE] = "none", [PS_SECURITY_CURVE] = "curve",
    [PS_SECURITY_SECRET] = "secret", [PS_SECURITY_AUTO] = "auto",
    [PS_SECURITY_SEALED] = "sealed", NULL};
static const char *const rdma_poll_names[] = {
    [PS_RDMA_POLL_EVENT] = "event", [PS_RDMA_POLL_BUSY] = "busy", NULL};
static const char *const model_names[] = {
    [PS_MODEL_SOFTMAX] = "softmax", [PS_MODEL_MLP] = "mlp", NULL};
static const char *const worker_mode_names[] = {
    [PS_WORKER_TRAIN] = "train", [PS_WORKER_REPLAY] = "replay", NULL};
static const char *const compute_names[] = {
    [PS_COMPUTE_SLEEP] = "sleep", [PS_COMPUTE_SPIN] = "spin", NULL};
static const char *const device_names[] = {
    [PS_DEVICE_CPU] = "cpu", [PS_DEVICE_CUDA] = "cuda", NULL};
static const char *const optimizer_names[] = {
    [PS_OPTIMIZER_SGD] = "sgd", [PS_OPTIMIZER_NONE] = "none",
    [PS_OPTIMIZER_ADAM] = "adam", [PS_OPTIMIZER_ADAMW] = "adamw", NULL};
static const char *const mode_names[] = {
    [PS_MODE_SYNC] = "sync", [PS_MODE_ASYNC] = "async", NULL};
static const char *const preset_names[] = {
    [PS_PRESET_BASELINE] = "baseline",
    [PS_PRESET_TENSORFLOW] = "tensorflow",
    [PS_PRESET_MXNET] = "mxnet",
    [PS_PRESET_P3] = "p3",
    [PS_PRESET_TICTAC_TIO] = "tictac-tio",
    [PS_PRESET_TICTAC_TAO] = "tictac-tao",
    [PS_PRESET_BYTESCHEDULER] = "bytescheduler",
    [PS_PRESET_ORDO] = "ordo",
    NULL};
/* index = ps_order_kind / ps_gate_kind */
static const char *const order_names[] = {"fifo", "layer", "tio", "tao",
                                          "tail", NULL};
static const char *const gate_names[] = {"fifo", "priority", "counter",
                                         NULL};
static const char *const switch_names[] = {"off", "on", NULL};
static const char *const sharing_names[] = {
    [PS_SHARING_FIFO] = "fifo", [PS_SHARING_FAIR] = "fair", NULL};
static const char *const link_model_names[] = {
    [PS_LINK_MODEL_AUTO] = "auto", [PS_LINK_MODEL_TCP] = "tcp",
    [PS_LINK_MODEL_RDMA] = "rdma", NULL};

/* What each preset sets, in the syntax of the keys (see docs/presets.md
 * for why, direction by direction). A preset fills in only the keys not
 * set explicitly. The order of the fields is that of preset_keys. */
#define PRESET_KEYS 11
static const char *const preset_keys[PRESET_KEYS] = {
    "scheduling.push_order",   "scheduling.push_gate",
    "scheduling.push_credit_size", "scheduling.params_order",
    "scheduling.params_gate",  "scheduling.params_credit_size",
    "scheduling.params_barrier", "scheduling.push_partition_size",
    "scheduling.params_partition_size", "scheduling.fusion",
    "scheduling.placement"};
static const struct preset {
	const char *v[PRESET_KEYS];
} presets[PS_PRESET_COUNT] = {
    /*                          pushes                    parameters
     *                          order    gate   credit    order    gate
     *                          credit barrier partitions (push, params)
     *                          fusion placement */
    [PS_PRESET_BASELINE] = {{"fifo", "fifo", "0", "fifo", "fifo", "0",
                             "off", "1T", "1T", "off", "balanced"}},
    [PS_PRESET_TENSORFLOW] = {{"fifo", "fifo", "0", "fifo", "fifo", "0",
                               "on", "1T", "1T", "off", "round-robin"}},
    [PS_PRESET_MXNET] = {{"fifo", "fifo", "0", "fifo", "fifo", "0", "off",
                          "1T", "1T", "off", "mxnet"}},
    [PS_PRESET_P3] = {{"layer", "priority", "160K", "layer", "priority",
                       "160K", "off", "160K", "160K", "off", "balanced"}},
    [PS_PRESET_TICTAC_TIO] = {{"fifo", "fifo", "0", "tio", "counter", "0",
                               "on", "1T", "1T", "off", "round-robin"}},
    [PS_PRESET_TICTAC_TAO] = {{"fifo", "fifo", "0", "tao", "counter", "0",
                               "on", "1T", "1T", "off", "round-robin"}},
    [PS_PRESET_BYTESCHEDULER] = {{"layer", "priority", "bdp", "layer",
                                  "priority", "bdp", "off", "4M", "4M",
                                  "off", "balanced"}},
    [PS_PRESET_ORDO] = {{"tail", "priority", "auto", "tail", "priority",
                         "auto", "off", "auto", "auto", "on",
                         "balanced"}},
};
static const char *const then_names[] = {[PS_TUNE_THEN_TRAIN] = "train",
                                         [PS_TUNE_THEN_STOP] = "stop", NULL};
static const char *const prior_names[] = {[PS_TUNE_PRIOR_NONE] = "none",
                                          [PS_TUNE_PRIOR_SIM] = "sim", NULL};
static const char *const place_names[] = {[PS_PLACE_BALANCED] = "balanced",
                                          [PS_PLACE_ROUND_ROBIN] =
                                              "round-robin",
                                          [PS_PLACE_MXNET] = "mxnet",
                                          NULL};
static const char *const level_names[] = {[PS_LOG_ERROR] = "error",
                                          [PS_LOG_WARN] = "warn",
                                          [PS_LOG_INFO] = "info",
                                          [PS_LOG_DEBUG] = "debug",
                                          NULL};

#define FIELD(sec, k) FIELD_AT(sec, k, k)
/* a key whose field has another path: scheduling.push_order is
 * scheduling.push.order */
#define FIELD_AT(sec, k, path)                                                 \
	.section = #sec, .key = #k,                                            \
	.offset = offsetof(struct ps_config, sec.path),                        \
	.fsize = sizeof(((struct ps_config *)0)->sec.path)

#define INT(sec, k, d, lo, hi, h)                                              \
	{                                                                      \
		FIELD(sec, k), .type = OPT_INT, .def = d, .imin = lo,          \
		               .imax = hi, .help = h                           \
	}
#define INT64(sec, k, d, lo, hi, h)                                            \
	{                                                                      \
		FIELD(sec, k), .type = OPT_INT64, .def = d, .imin = lo,        \
		               .imax = hi, .help = h                           \
	}
#define DOUBLE(sec, k, d, lo, hi, open, h)                                     \
	{                                                                      \
		FIELD(sec, k), .type = OPT_DOUBLE, .def = d, .dmin = lo,       \
		               .dmax = hi, .dmax_open = open, .help = h        \
	}
#define SIZE(sec, k, d, lo, hi, h)                                             \
	{                                                                      \
		FIELD(sec, k), .type = OPT_SIZE, .def = d, .umin = lo,         \
		               .umax = hi, .help = h                           \
	}
#define STRING(sec, k, d, h)                                                   \
	{                                                                      \
		FIELD(sec, k), .type = OPT_STRING, .def = d, .help = h         \
	}
#define ENUM(sec, k, d, n, h)                                                  \
	{                                                                      \
		FIELD(sec, k), .type = OPT_ENUM, .def = d, .names = n,         \
		               .help = h                                       \
	}
#define ENUM_AT(sec, k, path, d, n, h)                                         \
	{                                                                      \
		FIELD_AT(sec, k, path), .type = OPT_ENUM, .def = d,            \
		                        .names = n, .help = h                  \
	}
#define SIZE_AT(sec, k, path, d, lo, hi, h)                                    \
	{                                                                      \
		FIELD_AT(sec, k, path), .type = OPT_SIZE, .def = d,            \
		                        .umin = lo, .umax = hi, .help = h      \
	}
/* a shorthand for two keys of its section: no field, no default of its
 * own (its type and names are those of the two keys) */
#define BOTH(sec, k, type_, n, lo, hi, a, b, h)                                \
	{                                                                      \
		.section = #sec, .key = #k, .type = type_, .def = "",          \
		.names = n, .umin = lo, .umax = hi, .both = {a, b}, .help = h  \
	}

static const option options[] = {
    /* [cluster] */
    STRING(cluster, scheduler_host, "127.0.0.1",
           "Host name or address where every node finds the scheduler."),
    INT(cluster, scheduler_port, "9200", 0, 65535,
        "TCP port of the scheduler. 0 picks an ephemeral port, which is "
        "only meaningful under ps-launch (it passes the port on to the "
        "other processes)."),
    INT(cluster, servers, "1", 1, 4096,
        "Number of server processes; the parameters are sharded over "
        "them."),
    INT(cluster, workers, "1", 1, 8192,
        "Number of worker processes; each trains on its own samples. A "
        "job runs at most 8192 nodes (the scheduler, the servers and the "
        "workers); ps-sim simulates up to 8192 workers with any number "
        "of servers."),
    STRING(cluster, bind_host, "127.0.0.1",
           "Address that servers and workers bind their sockets to "
           "(0.0.0.0 for every interface)."),
    STRING(cluster, advertise_host, "",
           "Address other nodes use to reach this node; empty means "
           "bind_host. Set it when bind_host is 0.0.0.0."),
    STRING(cluster, interface, "",
           "Network interface (e.g. eth1, ib0) whose IPv4 address servers "
           "and workers bind and advertise, instead of bind_host (an "
           "explicit advertise_host still wins). A name that is not here, "
           "or has no IPv4 address, is an error listing the interfaces "
           "that have one."),
    INT(cluster, heartbeat_interval_ms, "500", 10, 60000,
        "Milliseconds between heartbeats from every node to the "
        "scheduler and back."),
    INT(cluster, heartbeat_timeout_ms, "5000", 100, 3600000,
        "A node silent for this many milliseconds is declared dead and "
        "the job is aborted. Must exceed 2 * heartbeat_interval_ms."),
    INT(cluster, connect_timeout_ms, "10000", 100, 3600000,
        "Milliseconds a node keeps trying to reach the scheduler (and the "
        "scheduler a node, a server a worker, a worker a server) before "
        "giving up."),
    INT(cluster, register_timeout_ms, "300000", 100, 86400000,
        "Milliseconds the scheduler waits for every server and worker to "
        "register: a worker program that imports a large framework may "
        "take long to start. From connect_timeout_ms on it says every 10 "
        "s whom it is waiting for; under ps-launch a process that exits "
        "before registering stops the job at once."),
    SIZE(cluster, early_bytes_max, "1G", 0, TIB,
         "Bytes a server or worker keeps of the messages that reach it "
         "before its WELCOME (a peer welcomed first may already send its "
         "parameters or initial values; at most 4096 messages). Beyond "
         "it they are dropped and logged: a bound no peer can raise. "
         "Raise it for models larger than about half of it."),

    /* [transport] */
    ENUM(transport, type, "tcp", transport_names,
         "Transport between nodes: tcp (ZeroMQ over TCP), or rdma (verbs "
         "over RC queue pairs, set up with rdma_cm; in builds configured "
         "with -DPS_WITH_RDMA=ON)."),
    INT(transport, send_timeout_ms, "10000", 10, 3600000,
        "A send to a disconnected peer fails after this many "
        "milliseconds, or after cluster.heartbeat_interval_ms if that is "
        "shorter (a process never stops its heartbeats longer)."),
    INT(transport, io_threads, "1", 1, 64,
        "I/O threads per process for the transport (ZeroMQ context "
        "threads); at least connections_per_peer are run."),
    INT(transport, connections_per_peer, "0", 0, PS_TCP_CONNECTIONS_MAX,
        "tcp: TCP connections from a process to each peer it sends to, "
        "each on an I/O thread of its own; a partition's messages always "
        "take the same one (they stay in order), the partitions are "
        "spread over them. More than one lets CURVE's cipher (and "
        "ZeroMQ's framing) of one peer pair's traffic run on as many "
        "cores. 0: under security.mode = curve one per two cores of "
        "the machine, at most 4; else 1."),
    STRING(transport, rdma_device, "",
           "rdma: the RDMA device (e.g. mlx5_0, rxe0); empty means the "
           "device whose RoCE v2 GID carries this node's address "
           "(cluster.advertise_host, else bind_host). ps-rdma-devices "
           "lists the devices, ports and GIDs."),
    INT(transport, rdma_gid_index, "-1", -1, 255,
        "rdma: the GID table index the queue pairs use as their source "
        "GID (on the port of the node's address; for InfiniBand, RoCE v1 "
        "or a GID that does not carry the address); -1 means the RoCE v2 "
        "GID ::ffff:ADDR of this node's IPv4 address, the one rdma_cm "
        "picks. An index that is not valid there stops the node at start "
        "with the table of devices, ports and GIDs (ps-rdma-devices "
        "prints it too)."),
    SIZE(transport, max_message, "0", 0, 4 * GIB,
         "Largest message (a header or a payload) a node accepts; a peer "
         "that sends a larger one is disconnected (ZeroMQ's "
         "ZMQ_MAXMSGSIZE; the rdma backend checks its frames) before "
         "anything is allocated for it. 0 = auto: the larger of 64 MiB "
         "(registration, WELCOME) and scheduling.partition_size. The "
         "scheduler refuses a job whose partitions or WELCOME would not "
         "fit."),
    INT(transport, handshake_timeout_ms, "30000", 100, 3600000,
        "A connection to a node that has not completed its handshake "
        "within this long is closed: tcp, ZeroMQ's greeting and, in "
        "security mode secret or curve, the check of its secret or key "
        "(ZMQ_HANDSHAKE_IVL); rdma, a connection accepted whose connector "
        "never confirms it. So a peer that connects and says nothing holds "
        "the node's file descriptor or queue pair no longer. A member's "
        "handshake takes milliseconds; 30 s (ZeroMQ's own default) leaves "
        "room for an overloaded machine."),
    ENUM(transport, rdma_poll, "event", rdma_poll_names,
         "rdma: how completions are waited for: event (a completion "
         "channel in the receive loop, no core spinning) or busy "
         "(polling: lower latency, one core per process at 100%)."),

    /* [security] */
    ENUM(security, mode, "auto", security_names,
         "Who may connect to a node. secret: only peers presenting the "
         "job's secret (ORDO_JOB_SECRET, or job.secret in "
         "security.keys_dir) when they connect (tcp and rdma); no cost "
         "per byte, but the secret crosses the network in the clear. "
         "sealed (tcp): only peers proving they hold the job's secret, "
         "which never crosses the network, and every frame encrypted and "
         "authenticated (AES-256-GCM; costs less goodput than curve). "
         "curve (tcp): only peers holding the job's key pair, every frame "
         "encrypted (ZeroMQ's CURVE; costs goodput). none: anyone who "
         "reaches a "
         "port. auto: secret when the job has one, else none (said at "
         "start); ps-launch and ps-tune make a secret for every job. "
         "Refusals are logged."),
    STRING(security, keys_dir, "",
           "The directory with the job's keys as `ps-keygen DIR` writes "
           "them: job.secret (secret, sealed, auto), job.pub and job.key "
           "(curve), mode 0600; copy it to every machine of the job. "
           "Empty: the "
           "secret comes from ORDO_JOB_SECRET, and under ps-launch curve "
           "gets a fresh pair in a private temporary directory, removed "
           "at the end."),

    /* [model] */
    ENUM(model, name, "mlp", model_names,
         "Model trained by ps-worker: softmax (multinomial logistic "
         "regression) or mlp (one hidden layer)."),
    INT(model, input_dim, "32", 1, 1048576,
        "Features per sample of the synthetic data set."),
    INT(model, hidden, "64", 1, 1048576,
        "Units in the hidden layer (mlp only)."),
    INT(model, classes, "10", 2, 65536, "Number of output classes."),
    INT(model, samples_per_worker, "1024", 1, 16777216,
        "Synthetic training samples generated by each worker."),
    STRING(model, file, "",
           "Model file replayed when worker.mode = replay (JSON, see "
           "docs/model-format.md), e.g. conf/models/vgg16.json."),
    DOUBLE(model, compute_scale, "1", 1e-6, 1e6, false,
           "Multiplies every op time of model.file: below 1 makes the "
           "model more communication-bound, above 1 more compute-bound."),
    INT(model, measure_iterations, "5", 0, 1000,
        "Training without model.file (the client library, ordo.torch): "
        "the workers measure when each gradient is pushed and each "
        "parameter needed over this many iterations after the first, and "
        "the scheduler writes the model it makes of them, "
        "measured-model.json, to output.dir and checkpoint.dir, and says "
        "which sizes ps-sim would choose on it; a later start with that "
        "checkpoint.dir chooses auto sizes and transfer orders from it "
        "(docs/auto-sizes.md). 0 = measure nothing."),

    /* [worker] */
    ENUM(worker, mode, "train", worker_mode_names,
         "train: real numerics on model.name; replay: run the ops of "
         "model.file for their times, pushing and receiving the model's "
         "real bytes."),
    ENUM(worker, compute, "sleep", compute_names,
         "How a replayed op spends its time: sleep (many workers fit on "
         "few cores) or spin (busy-wait: more precise, one core each)."),
    ENUM(worker, gradients, "cpu", device_names,
         "worker.mode = replay: where the replayed gradients and received "
         "parameters live: cpu (host memory), or cuda (device memory of "
         "worker.cuda_device; builds with -DPS_WITH_CUDA=ON): each push is "
         "copied to pinned host memory partition by partition in the "
         "gate's order and each arrival copied back, so the copies' cost "
         "is in the measured iteration time (docs/cuda.md)."),
    INT(worker, cuda_device, "0", 0, 255,
        "worker.gradients = cuda: the CUDA device a replaying worker "
        "uses, in the CUDA runtime's numbering."),
    INT(worker, rank, "-1", -1, 8191,
        "The rank this worker asks for when it registers, 0 .. "
        "cluster.workers - 1 (ps-launch gives each worker it starts its "
        "own, the RANK it also puts in the worker's environment); -1: "
        "any, the scheduler numbering the workers that ask for none in "
        "the order they register. Two workers asking for one rank, or a "
        "rank outside the job, are refused."),

    /* [server] */
    ENUM(server, device, "cpu", device_names,
         "Where a server sums the pushed gradients and applies the SGD "
         "step: cpu, or cuda (the GPU server.cuda_device; only in builds "
         "configured with -DPS_WITH_CUDA=ON). With cuda, momentum and "
         "sums live on the device and the new values are copied back "
         "after each update, equal to the CPU's bit for bit (checked on "
         "an NVIDIA H200, docs/cuda.md)."),
    ENUM(server, optimizer, "sgd", optimizer_names,
         "What a server does with each round's averaged gradient: sgd "
         "(SGD with momentum: train.lr, train.momentum), adam or adamw "
         "(torch.optim.Adam / AdamW: train.lr, train.beta1, train.beta2, "
         "train.eps, train.weight_decay) - the workers receive new "
         "parameters - or none (the workers receive the averaged "
         "gradient itself and step an optimizer of their own, as "
         "ordo.torch.DistributedOptimizer does: any torch optimizer, "
         "learning-rate schedule or clipping; docs/pytorch.md)."),
    INT(server, cuda_device, "0", 0, 255,
        "server.device = cuda: the CUDA device a server uses, in the CUDA "
        "runtime's numbering (within CUDA_VISIBLE_DEVICES; "
        "CUDA_DEVICE_ORDER=PCI_BUS_ID gives nvidia-smi's)."),

    /* [train] */
    INT(train, iterations, "20", 0, 1000000000,
        "Training iterations (one pushed gradient per tensor per "
        "iteration); 0 only initialises the parameters."),
    INT(train, batch, "32", 1, 1048576,
        "Samples per iteration on each worker; at most "
        "model.samples_per_worker."),
    DOUBLE(train, lr, "0.1", 0, 100, false,
           "Learning rate of the servers' optimizer (sgd, adam, adamw) "
           "for the gradients whose push does not carry one: a worker "
           "may set it for the iterations from one on "
           "(ps_client_set_lr; ordo.torch sends the wrapped "
           "optimizer's, so a torch learning-rate scheduler drives it)."),
    DOUBLE(train, momentum, "0.9", 0, 1, true,
           "Momentum of SGD on the servers (0 = plain SGD)."),
    DOUBLE(train, beta1, "0.9", 0, 1, true,
           "server.optimizer = adam | adamw: the first moment's decay "
           "(torch's betas[0])."),
    DOUBLE(train, beta2, "0.999", 0, 1, true,
           "server.optimizer = adam | adamw: the second moment's decay "
           "(torch's betas[1])."),
    DOUBLE(train, eps, "1e-8", 0, 1, false,
           "server.optimizer = adam | adamw: added to the denominator "
           "(torch's eps)."),
    DOUBLE(train, weight_decay, "0", 0, 1, false,
           "server.optimizer = adam: L2 penalty added to the gradient; "
           "adamw: decoupled weight decay (torch's weight_decay; "
           "torch.optim.AdamW's default is 0.01)."),
    ENUM(train, mode, "sync", mode_names,
         "sync: servers sum the gradients of all workers for an "
         "iteration, then update once; async: every push is applied at "
         "once."),
    INT64(train, seed, "1", 0, INT64_MAX,
          "Seed of the initial parameters and of the synthetic data."),
    STRING(train, dump_params, "",
           "File where worker 0 writes the final parameters; empty = "
           "none."),

    /* [scheduling] */
    ENUM(scheduling, preset, "ordo", preset_names,
         "A named scheduling policy as its paper's system built it, "
         "direction by direction (docs/presets.md); it sets the "
         "push_*, params_*, partition_size, fusion and placement keys "
         "not set explicitly. baseline: a plain PS (fifo both ways, "
         "whole tensors, balanced placement); tensorflow: TensorFlow's "
         "PS (parameters after a barrier, in a random order; round-robin "
         "placement); mxnet: MXNet's KVStore (as baseline, with its "
         "placement); p3: layer priority both ways, 160K slices, one in "
         "flight; tictac-tio / tictac-tao: pushes as produced, parameters "
         "in TIO / TAO order under the counter gate, after the barrier; "
         "bytescheduler: layer priority both ways, 4M partitions, BDP "
         "credit; ordo: tail priority both ways, fusion, partition and "
         "credit sizes auto (an auto params credit is unlimited: "
         "docs/auto-sizes.md). BDP: the bandwidth-delay product in "
         "partitions, at least two."),
    BOTH(scheduling, order, OPT_ENUM, order_names, 0, 0,
         "push_order", "params_order",
         "Shorthand: sets push_order and params_order alike."),
    BOTH(scheduling, gate, OPT_ENUM, gate_names, 0, 0, "push_gate",
         "params_gate", "Shorthand: sets push_gate and params_gate alike."),
    BOTH(scheduling, credit_size, OPT_SIZE, NULL, 0, TIB,
         "push_credit_size", "params_credit_size",
         "Shorthand: sets push_credit_size and params_credit_size alike."),
    ENUM_AT(scheduling, push_order, push.order, "tail", order_names,
            "Priority of the workers' gradient pushes, from the model's "
            "DAG: fifo (none), layer (forward position), tio / tao "
            "(TicTac), tail (largest remaining compute first). Without "
            "model.file, every order but fifo follows the tensors' "
            "declaration order."),
    ENUM_AT(scheduling, push_gate, push.gate, "priority", gate_names,
            "How a worker releases its ready pushes: fifo (as the "
            "backward pass produces them), priority (the most urgent "
            "ready push first) or counter (TicTac's strict order per "
            "receiver and iteration)."),
    SIZE_AT(scheduling, push_credit_size, push.credit_size, "auto", 0,
            TIB,
            "Bytes of pushes a worker may have handed to the transport "
            "and not yet had acknowledged; 0 = unlimited, else at least "
            "partition_size (credit = partition_size is P3's "
            "stop-and-wait); auto: chosen at the start with "
            "partition_size (docs/auto-sizes.md)."),
    ENUM_AT(scheduling, params_order, params.order, "tail", order_names,
            "Priority of the servers' parameter sends (values as "
            "push_order)."),
    ENUM_AT(scheduling, params_gate, params.gate, "priority",
            gate_names,
            "How a server releases its ready parameter sends (values as "
            "push_gate; counter is TicTac's enforcement at the PS)."),
    SIZE_AT(scheduling, params_credit_size, params.credit_size, "auto",
            0, TIB,
            "Bytes of parameters a server may have handed to the "
            "transport and not yet had acknowledged; 0 = unlimited, else "
            "at least partition_size; auto: unlimited, the partition "
            "chosen as for push_credit_size (docs/auto-sizes.md, \"The "
            "parameters' window\")."),
    ENUM(scheduling, params_barrier, "off", switch_names,
         "on: a server sends an iteration's parameters only once it has "
         "updated every partition it holds, and readies them in a random "
         "order, different per worker and iteration (TensorFlow's PS: "
         "workers read every parameter at the start of the next "
         "iteration, in no enforced order). Synchronous training only."),
    BOTH(scheduling, partition_size, OPT_SIZE, NULL, 4, TIB,
         "push_partition_size", "params_partition_size",
         "Shorthand: sets push_partition_size and params_partition_size "
         "alike: tensors cut into partitions of at most this many bytes, "
         "placed on servers independently, each sent whole both ways."),
    SIZE_AT(scheduling, push_partition_size, push.partition_size, "auto",
            4, TIB,
            "Largest piece of a tensor a worker pushes, in bytes; a "
            "multiple of 4 (float32); 1T keeps every tensor whole. The "
            "partition a server places, sums and updates is the larger "
            "of push_partition_size and params_partition_size; the "
            "direction with the smaller size sends it in pieces of at "
            "most that size (docs/presets.md). auto (with "
            "params_partition_size auto): the scheduler chooses both at "
            "the start by simulating the job's model on its links "
            "(docs/auto-sizes.md)."),
    SIZE_AT(scheduling, params_partition_size, params.partition_size,
            "auto", 4, TIB,
            "Largest piece of a tensor a server sends as parameters, in "
            "bytes (as push_partition_size)."),
    ENUM(scheduling, fusion, "on", switch_names,
         "on: tensors smaller than partition_size are fused with their "
         "neighbours (in the order the backward pass produces them) into "
         "one transfer of at most partition_size bytes, so that small "
         "tensors do not each pay a message's overhead (PACE). off: "
         "every tensor travels on its own."),
    ENUM(scheduling, placement, "balanced", place_names,
         "How partitions are assigned to servers: balanced (largest "
         "partition first onto the least-loaded server), round-robin "
         "(partition i on server i mod servers: TensorFlow's "
         "replica_device_setter) or mxnet (MXNet's KVStore: a tensor of "
         "a million elements or more in one equal piece per server, "
         "others whole on server (index x 9973) mod servers; pieces "
         "larger than partition_size are cut further; no fusion)."),
    ENUM(scheduling, credit_refine, "on", switch_names,
         "on: a credit chosen at the start (credit_size = auto) that is "
         "a window is refined during the job: after a warm-up the "
         "scheduler tries twice and half of it, each for a few "
         "iterations measured as the workers run them, climbs on the "
         "way that wins, and keeps the fastest (docs/auto-sizes.md). "
         "Synchronous training; not while ps-tune drives the credit. "
         "off: the credit chosen at the start stays."),

    /* [log] */
    ENUM(log, level, "info", level_names,
         "Least severe message printed on stderr: error, warn, info or "
         "debug."),

    /* [output] */
    STRING(output, dir, "",
           "Directory for a run's records: each process writes its "
           "timeline (ROLE-RANK.json, Chrome trace events) and workers "
           "their per-iteration metrics (metrics-worker-RANK.csv), the "
           "scheduler the job's effective configuration (config.ini), "
           "transfer orders (order.csv) and placement (placement.csv); "
           "ps-launch merges the timelines into timeline.json; ps-sim "
           "writes its own there as sim-timeline.json. ps-launch, ps-sim "
           "and ps-tune create it and its parents where missing (a node "
           "started by hand does not). Empty = none."),

    /* [checkpoint] */
    STRING(checkpoint, dir, "",
           "Directory under which checkpoints are written, one "
           "ckpt-ITERATION directory each (docs/checkpoint-format.md). "
           "Every server and the scheduler must see it (a shared file "
           "system across machines). Empty = no checkpoints."),
    INT(checkpoint, every, "0", 0, 1000000000,
        "Write a checkpoint every this many iterations (needs "
        "checkpoint.dir); 0 = only on demand (SIGUSR1 to ps-scheduler or "
        "ps-launch)."),
    INT(checkpoint, keep, "3", 1, 1000000,
        "Complete checkpoints kept under checkpoint.dir; older ones are "
        "removed once a newer one is complete."),
    STRING(checkpoint, resume, "",
           "Start from this checkpoint: a ckpt-ITERATION directory, or "
           "'latest' for the newest complete one under checkpoint.dir. "
           "Training continues at its iteration with its parameters and "
           "momentum, under any number of workers, servers, partition "
           "size or preset. Empty = start afresh."),

    /* [fault] */
    INT(fault, restarts, "0", 0, 1000,
        "ps-launch only: when a process of the job dies, stop the others "
        "and restart the whole job from the newest complete checkpoint, "
        "at most this many times (needs checkpoint.dir)."),

    /* [metrics] */
    DOUBLE(metrics, bandwidth_gbps, "10", 0.001, 10000, false,
           "Link bandwidth (Gbit/s) of the time oracle for transfers in "
           "TicTac's metrics (ordering efficiency E, speedup bound S): "
           "a transfer of b bytes counts b / bandwidth."),

    /* [link] (ps-sim, docs/sim.md) */
    DOUBLE(link, bandwidth_gbps, "0", 0, 10000, false,
           "ps-sim: bandwidth (Gbit/s) of every host's uplink and of its "
           "downlink (full duplex): a message of m bytes costs a + b*m "
           "with b = 1 / bandwidth. 0: in a job whose sizes are auto, "
           "the scheduler measures its link to a node at the start and "
           "chooses for that rate (docs/auto-sizes.md); elsewhere (ps-sim, "
           "a failed probe) metrics.bandwidth_gbps."),
    DOUBLE(link, latency_us, "20", 0, 1e6, false,
           "ps-sim: a, the fixed cost (microseconds) of every message on "
           "a link (ASC-WFBP's startup time)."),
    DOUBLE(link, latency_jitter, "0", 0, 1, false,
           "ps-sim, link.sharing = fair: each message's latency is drawn "
           "uniformly within this share of a on either side (0.5: between "
           "a/2 and 3a/2; the same mean), from a fixed seed, and a "
           "message never overtakes an earlier one of its stream. Breaks "
           "the lock-step into which identical simulated workers fall and "
           "no real cluster keeps: with stop-and-wait senders (p3) a "
           "prediction at 0 moved by 8 % for under 1 us of latency "
           "(docs/sim.md). Costs 16 bytes per worker-server pair. The "
           "start-up chooser leaves it out. 0 = every message waits "
           "exactly a."),
    DOUBLE(link, gamma, "1", 0.01, 100, false,
           "ps-sim: contention factor (ASC-WFBP's gamma): a message "
           "handed to a link that is already busy costs a + gamma*b*m "
           "instead of a + b*m. Above 1: sharing a link slows every "
           "transfer down; below 1: concurrent streams fill the link "
           "better than one; 1 = neither."),
    STRING(link, fit_file, "",
           "ps-sim: a link sweep (CSV written by bench/link_sweep) from "
           "which a, b and gamma are fitted by least squares at start-up; "
           "it overrides link.latency_us, link.bandwidth_gbps and "
           "link.gamma. Empty = use those keys."),
    ENUM(link, sharing, "fifo", sharing_names,
         "ps-sim: how messages share the links. fifo: every uplink and "
         "downlink carries one message at a time, first come first "
         "served (O(1) per message; gamma prices sharing). fair: one "
         "in-order stream per sender-receiver pair (as one ZeroMQ "
         "connection), streams share every uplink and downlink max-min "
         "fairly, acknowledgements travel in order behind the data of "
         "their stream (gamma unused; O(streams) per message)."),
    INT(link, burst_bytes, "0", 0, 1073741824,
        "ps-sim, link.sharing = fair: every uplink and downlink is a token "
        "bucket of this many bytes filled at the link's rate, as tc's tbf "
        "shapes ps-bench's links: while it holds tokens the link carries "
        "up to link.burst_gbps. 0 = no bucket (a NIC that never exceeds "
        "its rate)."),
    DOUBLE(link, burst_gbps, "0", 0, 1e6, false,
           "ps-sim: a link's rate while its bucket (link.burst_bytes) holds "
           "tokens. 0 = ten times link.bandwidth_gbps."),
    ENUM(link, model, "auto", link_model_names,
         "ps-sim: which transport's per-message cost, bandwidth efficiency "
         "and gamma the links have (docs/sim.md). tcp: link.latency_us, "
         "link.efficiency, link.gamma (ordo over ZeroMQ/TCP). rdma: "
         "link.rdma_latency_us, link.rdma_efficiency, link.rdma_gamma "
         "(RDMA RC verbs, published perftest figures). auto = "
         "transport.type's. A key of its own because a build without "
         "RDMA refuses transport.type = rdma, and ps-sim predicts RDMA "
         "clusters from any build; link.fit_file overrides either."),
    DOUBLE(link, efficiency, "1", 0.01, 1, false,
           "ps-sim, link.model tcp: the share of link.bandwidth_gbps that "
           "message payload gets (headers, framing): b = 1 / (bandwidth * "
           "efficiency). 1 = link.bandwidth_gbps is already a payload "
           "rate (ps-bench sets the rate bulk TCP streams measured)."),
    DOUBLE(link, rdma_latency_us, "2", 0, 1e6, false,
           "ps-sim, link.model rdma: a, the fixed cost (microseconds) of "
           "every message (ib_send_lat, RC, ConnectX-4: about 1.9 us above "
           "4 KiB; docs/sim.md)."),
    DOUBLE(link, rdma_efficiency, "0.97", 0.01, 1, false,
           "ps-sim, link.model rdma: the share of link.bandwidth_gbps that "
           "message payload gets (RoCE/IB headers: perftest reaches about "
           "97 Gbit/s on 100 Gbit/s ports; docs/sim.md)."),
    DOUBLE(link, rdma_gamma, "1", 0.01, 100, false,
           "ps-sim, link.model rdma: gamma (link.gamma's meaning) for RDMA "
           "links: the NIC arbitrates between queue pairs; 1 = sharing "
           "costs nothing beyond the bytes."),

    /* [sim] (ps-sim, docs/sim.md) */
    DOUBLE(sim, aggregate_ns_per_byte, "0.1", 0, 1e6, false,
           "ps-sim: server time (ns per byte) to add one worker's pushed "
           "gradient into the partition's sum."),
    DOUBLE(sim, update_ns_per_byte, "0.2", 0, 1e6, false,
           "ps-sim: server time (ns per byte) to apply the optimizer to "
           "a partition once all workers pushed it."),
    INT(sim, trace_workers, "8", 0, 4096,
        "ps-sim: with output.dir, how many workers (ranks 0..N-1) the "
        "simulated timeline shows; servers are always shown."),
    DOUBLE(sim, machine_gbps, "0", 0, 1e6, false,
           "ps-sim, link.sharing = fair: every host runs on one machine "
           "whose CPU moves at most this many Gbit/s of payload over all "
           "links together (ps-bench's emulated cluster, which calibrates "
           "it); a stream crosses its two links and the machine. 0 = the "
           "hosts are separate machines."),
    INT(sim, machine_small_bytes, "0", 0, 1073741824,
        "ps-sim, sim.machine_gbps: messages of at most this many bytes "
        "cross the machine at sim.machine_small_gbps instead (copies that "
        "fit a core's cache are cheaper; ps-bench sets the L2 cache's "
        "size). 0 = every message at sim.machine_gbps."),
    DOUBLE(sim, machine_small_gbps, "0", 0, 1e6, false,
           "ps-sim: the machine's rate for messages of at most "
           "sim.machine_small_bytes. 0 = sim.machine_gbps."),
    DOUBLE(sim, machine_message_us, "0", 0, 1e6, false,
           "ps-sim, sim.machine_gbps: the machine's time per message on "
           "top of its bytes (microseconds of the machine at its full "
           "rate): system calls, wake-ups, the gate and the message's "
           "acknowledgement; ps-bench calibrates it on many small "
           "messages. 0 = none."),
    INT(sim, machine_message_min_bytes, "0", 0, 1073741824,
        "ps-sim, sim.machine_message_us: messages of at most this many "
        "bytes pay no time per message (ZeroMQ writes and reads them in "
        "batches; ps-bench sets its 8 KiB batch). 0 = every message pays."),
    DOUBLE(sim, op_overhead_us, "0", 0, 1e6, false,
           "ps-sim: time (microseconds) a worker spends on every op "
           "beyond its model time (a framework's launch cost per op, a "
           "host that cannot keep its device busy)."),

    /* [tune] (ps-tune, docs/tune.md) */
    INT(tune, trials, "10", 1, 1000,
        "ps-tune: trials, each one (partition, credit) pair measured."),
    INT(tune, warmup_iterations, "2", 0, 1000000,
        "ps-tune: iterations run with a trial's pair before it is "
        "measured (the first after a restart pays page faults)."),
    INT(tune, measure_iterations, "5", 1, 1000000,
        "ps-tune: iterations over which a trial's samples/s is "
        "measured."),
    SIZE(tune, partition_min, "256K", 4, TIB,
         "ps-tune: smallest scheduling.partition_size tried."),
    SIZE(tune, partition_max, "64M", 4, TIB,
         "ps-tune: largest scheduling.partition_size tried."),
    SIZE(tune, credit_min, "256K", 4, TIB,
         "ps-tune: smallest scheduling.credit_size tried (a trial's "
         "credit is never below its partition size)."),
    SIZE(tune, credit_max, "64M", 4, TIB,
         "ps-tune: largest scheduling.credit_size tried; at least "
         "tune.partition_max."),
    ENUM(tune, then, "train", then_names,
         "ps-tune, after the last trial: train (the job trains on to "
         "train.iterations with the best pair) or stop (at a "
         "checkpoint)."),
    ENUM(tune, prior, "none", prior_names,
         "ps-tune: none, or sim: ps-sim's prediction of every pair (with "
         "this config's link.* and sim.*, e.g. from ps-bench's "
         "calibration) is the Gaussian process's prior mean, scaled to "
         "the measurements."),
    INT64(tune, seed, "1", 0, INT64_MAX,
          "ps-tune: seed of the first trials' quasi-random design."),
    STRING(tune, endpoint, "",
           "Set by ps-tune, not by hand: the scheduler connects there to "
           "report progress and take live credit changes and stops. "
           "Empty = no tuner."),
};

#define NOPTIONS (sizeof(options) / sizeof(options[0]))
_Static_assert(NOPTIONS <= sizeof(((ps_config *)0)->user_set),
               "ps_config.user_set needs a flag per option");

/* ---- small helpers ---------------------------------------------------- */

static void *field(ps_config *cfg, const option *o)
{
	return (char *)cfg + o->offset;
}

static const void *cfield(const ps_config *cfg, const option *o)
{
	return (const char *)cfg + o->offset;
}

static bool section_known(const char *section)
{
	for (size_t i = 0; sections[i]; i++)
		if (strcmp(sections[i], section) == 0)
			return true;
	return false;
}

static const option *find_option(const char *section, size_t seclen,
                                 const char *key)
{
	for (size_t i = 0; i < NOPTIONS; i++) {
		const option *o = &options[i];
		if (strlen(o->section) == seclen &&
		    strncmp(o->section, section, seclen) == 0 &&
		    strcmp(o->key, key) == 0)
			return o;
	}
	return NULL;
}

/* "cluster, transport, ..." */
static void list_sections(ps_strbuf *sb)
{
	for (size_t i = 0; sections[i]; i++)
		ps_strbuf_addf(sb, "%s%s", i ? ", " : "", sections[i]);
}

static void list_keys(ps_strbuf *sb, const char *section)
{
	bool first = true;

	for (size_t i = 0; i < NOPTIONS; i++) {
		if (strcmp(options[i].section, section) != 0)
			continue;
		ps_strbuf_addf(sb, "%s%s", first ? "" : ", ", options[i].key);
		first = false;
	}
}

static void list_names(ps_strbuf *sb, const char *const *names)
{
	for (size_t i = 0; names[i]; i++)
		ps_strbuf_addf(sb, "%s%s", i ? ", " : "", names[i]);
}

/* The error for a section/key pair that names no option. */
static int unknown_key(const char *origin, const char *section, const char *key,
                       char *why, size_t whylen)
{
	char list[512];
	ps_strbuf sb = ps_strbuf_over(list, sizeof(list));

	list[0] = '\0';
	if (section_known(section)) {
		list_keys(&sb, section);
		return ps_errf(why, whylen, PS_ECONFIG,
		            "%s: unknown key '%s.%s'; keys in section '%s': %s",
		            origin, section, key, section, list);
	}
	list_sections(&sb);
	return ps_errf(
	    why, whylen, PS_ECONFIG,
	    "%s: unknown key '%s.%s' (section '%s'); known sections: %s",
	    origin, section, key, section, list);
}

void ps_config_format_size(uint64_t bytes, char *buf, size_t cap)
{
	static const char suffix[] = "KMGT";
	int s = -1;

	if (!buf || cap == 0)
		return;
	if (bytes == PS_SIZE_AUTO) {
		snprintf(buf, cap, "auto");
		return;
	}
	while (bytes != 0 && s < 3 && bytes % KIB == 0) {
		bytes /= KIB;
		s++;
	}
	if (s < 0)
		snprintf(buf, cap, "%" PRIu64, bytes);
	else
		snprintf(buf, cap, "%" PRIu64 "%c", bytes, suffix[s]);
}

static void format_range(const option *o, char *buf, size_t cap)
{
	char lo[32], hi[32];

	switch (o->type) {
	case OPT_INT:
	case OPT_INT64:
		snprintf(buf, cap, "[%" PRId64 ", %" PRId64 "]", o->imin,
		         o->imax);
		break;
	case OPT_DOUBLE:
		snprintf(buf, cap, "[%g, %g%c", o->dmin, o->dmax,
		         o->dmax_open ? ')' : ']');
		break;
	case OPT_SIZE:
		ps_config_format_size(o->umin, lo, sizeof(lo));
		ps_config_format_size(o->umax, hi, sizeof(hi));
		snprintf(buf, cap, "[%s, %s]", lo, hi);
		break;
	default:
		snprintf(buf, cap, "?");
		break;
	}
}

/* Shortest %g form of v that reads back as exactly v. */
static void format_double(double v, char *buf, size_t cap)
{
	for (int prec = 15; prec <= 17; prec++) {
		snprintf(buf, cap, "%.*g", prec, v);
		if (strtod(buf, NULL) == v)
			return;
	}
}

/* ---- parsing one value ------------------------------------------------ */

static bool has_space_semicolon(const char *s)
{
	for (; *s; s++)
		if ((*s == ' ' || *s == '\t') && s[1] == ';')
			return true;
	return false;
}

/*
 * Parses value for option o and stores it in cfg. Errors are written as
 * "ORIGIN: section.key: problem".
 */
static int set_value(ps_config *cfg, const option *o, const char *value,
                     const char *origin, char *why, size_t whylen);
static int fill_preset(ps_config *cfg, int preset, int all, char *why,
                       size_t whylen);

/* The sizes that may be "auto": chosen at the job's start (PS_SIZE_AUTO). */
static bool size_auto_ok(const option *o)
{
	static const char *const keys[] = {
	    "partition_size",      "push_partition_size",
	    "params_partition_size", "credit_size",
	    "push_credit_size",    "params_credit_size"};

	if (o->type != OPT_SIZE || strcmp(o->section, "scheduling") != 0)
		return false;
	for (size_t i = 0; i < sizeof(keys) / sizeof(keys[0]); i++)
		if (strcmp(o->key, keys[i]) == 0)
			return true;
	return false;
}

/* Parses and stores one value (no bookkeeping: see set_value). */
static int parse_value(ps_config *cfg, const option *o, const char *value,
                       const char *origin, char *why, size_t whylen)
{
	char range[96];
	char *end;

	format_range(o, range, sizeof(range));
	switch (o->type) {
	case OPT_INT:
	case OPT_INT64: {
		long long v;

		errno = 0;
		v = strtoll(value, &end, 10);
		if (end == value || *end != '\0' ||
		    isspace((unsigned char)*value))
			return ps_errf(why, whylen, PS_ECONFIG,
			            "%s: %s.%s: '%s' is not an integer", origin,
			            o->section, o->key, value);
		if (errno == ERANGE || v < o->imin || v > o->imax)
			return ps_errf(why, whylen, PS_ECONFIG,
			            "%s: %s.%s: '%s' is out of range %s",
			            origin, o->section, o->key, value, range);
		if (o->type == OPT_INT)
			*(int *)field(cfg, o) = (int)v;
		else
			*(int64_t *)field(cfg, o) = (int64_t)v;
		return PS_OK;
	}
	case OPT_DOUBLE: {
		double v;

		errno = 0;
		v = strtod(value, &end);
		if (end == value || *end != '\0' ||
		    isspace((unsigned char)*value) || !isfinite(v))
			return ps_errf(why, whylen, PS_ECONFIG,
			            "%s: %s.%s: '%s' is not a number", origin,
			            o->section, o->key, value);
		if (v < o->dmin || v > o->dmax ||
		    (o->dmax_open && v >= o->dmax))
			return ps_errf(why, whylen, PS_ECONFIG,
			            "%s: %s.%s: '%s' is out of range %s",
			            origin, o->section, o->key, value, range);
		*(double *)field(cfg, o) = v;
		return PS_OK;
	}
	case OPT_SIZE: {
		uint64_t v = 0, mult = 1;
		const char *p = value;

		if (size_auto_ok(o) && strcmp(value, "auto") == 0) {
			*(uint64_t *)field(cfg, o) = PS_SIZE_AUTO;
			return PS_OK;
		}
		if (!isdigit((unsigned char)*p))
			goto bad_size;
		for (; isdigit((unsigned char)*p); p++) {
			unsigned d = (unsigned)(*p - '0');
			if (v > (UINT64_MAX - d) / 10)
				goto too_big;
			v = v * 10 + d;
		}
		switch (toupper((unsigned char)*p)) {
		case '\0':
			break;
		case 'K':
			mult = KIB;
			break;
		case 'M':
			mult = KIB * KIB;
			break;
		case 'G':
			mult = KIB * KIB * KIB;
			break;
		case 'T':
			mult = TIB;
			break;
		default:
			goto bad_size;
		}
		if (*p != '\0' && p[1] != '\0')
			goto bad_size;
		if (v > UINT64_MAX / mult)
			goto too_big;
		v *= mult;
		if (v < o->umin || v > o->umax)
			return ps_errf(why, whylen, PS_ECONFIG,
			            "%s: %s.%s: '%s' is out of range %s",
			            origin, o->section, o->key, value, range);
		*(uint64_t *)field(cfg, o) = v;
		return PS_OK;
	bad_size:
		return ps_errf(why, whylen, PS_ECONFIG,
		            "%s: %s.%s: '%s' is not a size (bytes: digits with "
		            "an optional K, M, G or T suffix, e.g. 4M)",
		            origin, o->section, o->key, value);
	too_big:
		return ps_errf(why, whylen, PS_ECONFIG,
		            "%s: %s.%s: '%s' is too large (does not fit in 64 "
		            "bits; allowed %s)",
		            origin, o->section, o->key, value, range);
	}
	case OPT_STRING: {
		size_t len = strlen(value);

		/* "..." quotes are removed: they keep leading or trailing
		 * blanks and an empty value. */
		if (len >= 2 && value[0] == '"' && value[len - 1] == '"') {
			value++;
			len -= 2;
		}
		if (len > STR_MAX)
			return ps_errf(why, whylen, PS_ECONFIG,
			            "%s: %s.%s: value of %zu characters is too "
			            "long (at most %d)",
			            origin, o->section, o->key, len, STR_MAX);
		for (size_t i = 0; i < len; i++)
			if (iscntrl((unsigned char)value[i]))
				return ps_errf(why, whylen, PS_ECONFIG,
				            "%s: %s.%s: value contains a "
				            "control character",
				            origin, o->section, o->key);
		if (has_space_semicolon(value))
			return ps_errf(why, whylen, PS_ECONFIG,
			            "%s: %s.%s: value contains a blank before "
			            "';', which an INI file reads as a comment",
			            origin, o->section, o->key);
		memcpy(field(cfg, o), value, len);
		((char *)field(cfg, o))[len] = '\0';
		return PS_OK;
	}
	case OPT_ENUM: {
		char list[256];
		ps_strbuf sb = ps_strbuf_over(list, sizeof(list));

		for (int i = 0; o->names[i]; i++) {
			if (strcasecmp(o->names[i], value) == 0) {
				*(int *)field(cfg, o) = i;
				return PS_OK;
			}
		}
		list[0] = '\0';
		list_names(&sb, o->names);
		return ps_errf(why, whylen, PS_ECONFIG, "%s: %s.%s: '%s' is not one of: %s",
		            origin, o->section, o->key, value, list);
	}
	}
	return ps_errf(why, whylen, PS_ECONFIG, "%s: %s.%s: unknown option type", origin,
	            o->section, o->key);
}

static const option *option_named(const char *key)
{
	const char *dot = strchr(key, '.');
	return find_option(key, (size_t)(dot - key), dot + 1);
}

/* The partition a server places, sums and updates: the larger of the two
 * directions' sizes (auto while either is). */
static void settle_partition(ps_config *cfg)
{
	uint64_t up = cfg->scheduling.push.partition_size,
	         down = cfg->scheduling.params.partition_size;

	cfg->scheduling.partition_size =
	    up == PS_SIZE_AUTO || down == PS_SIZE_AUTO ? PS_SIZE_AUTO
	    : up > down                                ? up
	                                               : down;
}

void ps_config_set_partition_sizes(ps_config *cfg, uint64_t push,
                                   uint64_t params)
{
	cfg->scheduling.push.partition_size = push;
	cfg->scheduling.params.partition_size = params;
	settle_partition(cfg);
}

void ps_config_set_partition_size(ps_config *cfg, uint64_t bytes)
{
	ps_config_set_partition_sizes(cfg, bytes, bytes);
}

uint64_t ps_config_pieces_size(const ps_config *cfg, int params)
{
	const ps_direction_sched *d = params ? &cfg->scheduling.params
	                                     : &cfg->scheduling.push;

	return d->partition_size >= cfg->scheduling.partition_size
	           ? 0
	           : d->partition_size;
}

/* The direction whose credit o is, or NULL. */
static ps_direction_sched *credit_of(ps_config *cfg, const option *o)
{
	if (o == option_named("scheduling.push_credit_size"))
		return &cfg->scheduling.push;
	if (o == option_named("scheduling.params_credit_size"))
		return &cfg->scheduling.params;
	return NULL;
}

/* The other key of o's section named `key` (a shorthand's half). */
static const option *sibling(const option *o, const char *key)
{
	return find_option(o->section, strlen(o->section), key);
}

static int set_value(ps_config *cfg, const option *o, const char *value,
                     const char *origin, char *why, size_t whylen)
{
	ps_direction_sched *d;
	int rc;

	if (o->both[0]) {
		option as = *sibling(o, o->both[0]);

		if (strcmp(origin, "default") == 0)
			return PS_OK; /* its two keys have their own */
		as.key = o->key; /* errors name the key the user wrote */
		rc = parse_value(cfg, &as, value, origin, why, whylen);
		if (rc != PS_OK)
			return rc;
		for (int i = 0; i < 2; i++) {
			rc = set_value(cfg, sibling(o, o->both[i]), value,
			               origin, why, whylen);
			if (rc != PS_OK)
				return rc;
		}
		cfg->user_set[o - options] = 1;
		return PS_OK;
	}
	rc = parse_value(cfg, o, value, origin, why, whylen);
	if (rc == PS_OK)
		settle_partition(cfg);
	if (rc != PS_OK || strcmp(origin, "default") == 0)
		return rc;
	cfg->user_set[o - options] = 1;
	if ((d = credit_of(cfg, o)))
		d->credit_bdp = 0;
	if (o != option_named("scheduling.preset"))
		return PS_OK;
	return fill_preset(cfg, cfg->scheduling.preset, 0, why, whylen);
}

/* Sets preset's keys: those the user has not set, or every one (all). */
static int fill_preset(ps_config *cfg, int preset, int all, char *why,
                       size_t whylen)
{
	const struct preset *p = &presets[preset];
	ps_direction_sched *d;
	int rc;

	for (size_t i = 0; i < PRESET_KEYS; i++) {
		const option *k = option_named(preset_keys[i]);
		if (!all && cfg->user_set[k - options])
			continue;
		d = credit_of(cfg, k);
		if (strcmp(p->v[i], "bdp") == 0) { /* ps_config_finalize */
			d->credit_size = 0;
			d->credit_bdp = 1;
			continue;
		}
		if (d)
			d->credit_bdp = 0;
		rc = parse_value(cfg, k, p->v[i], "preset", why, whylen);
		if (rc != PS_OK)
			return rc;
	}
	settle_partition(cfg);
	return PS_OK;
}

int ps_config_apply_preset(ps_config *cfg, int preset, char *why,
                           size_t whylen)
{
	int rc;

	if (preset < 0 || preset >= PS_PRESET_COUNT)
		return ps_errf(why, whylen, PS_ECONFIG, "no preset %d", preset);
	rc = fill_preset(cfg, preset, 1, why, whylen);
	if (rc != PS_OK)
		return rc;
	cfg->scheduling.preset = preset;
	ps_config_finalize(cfg);
	return PS_OK;
}

int ps_config_preset_has_auto(int preset)
{
	if (preset < 0 || preset >= PS_PRESET_COUNT)
		return 0;
	for (size_t i = 0; i < PRESET_KEYS; i++)
		if (strcmp(presets[preset].v[i], "auto") == 0)
			return 1;
	return 0;
}

/* The bandwidth-delay credit in partitions (or pieces) of `part` bytes. */
static uint64_t bdp_credit(const ps_config *cfg, uint64_t part)
{
	double gbps = cfg->link.bandwidth_gbps > 0 ? cfg->link.bandwidth_gbps
	                                           : cfg->metrics.bandwidth_gbps;
	/* bytes a link carries while one acknowledgement makes its round
	 * trip: the window that keeps the link busy */
	double bdp = gbps * 1e9 / 8.0 * 2.0 * cfg->link.latency_us * 1e-6;
	double n;

	if (part == PS_SIZE_AUTO)
		return 0; /* not chosen yet: finalize again once it is */
	if (part >= TIB)
		return 0; /* whole tensors: no partition to count in */
	n = ceil(bdp / (double)part) + 1.0;
	if (n < 2.0)
		n = 2.0; /* one on the wire, the next queued behind it */
	if (n * (double)part >= (double)TIB)
		return TIB;
	return (uint64_t)n * part;
}

uint64_t ps_config_bdp_credit(const ps_config *cfg)
{
	return bdp_credit(cfg, cfg->scheduling.partition_size);
}

/* What the user set wins over what a preset (the default one included)
 * left beside it: a partition size set for one direction only is the
 * other's too where the other would be auto (the two are chosen
 * together), and MXNet's placement, which places every tensor by itself,
 * turns off a fusion the user did not ask for. */
static void follow_user(ps_config *cfg)
{
	ps_direction_sched *d[2] = {&cfg->scheduling.push,
	                            &cfg->scheduling.params};
	const char *key[2] = {"scheduling.push_partition_size",
	                      "scheduling.params_partition_size"};

	for (int i = 0; i < 2; i++)
		if (d[i]->partition_size == PS_SIZE_AUTO &&
		    !ps_config_user_set(cfg, key[i]) &&
		    d[!i]->partition_size != PS_SIZE_AUTO &&
		    ps_config_user_set(cfg, key[!i]))
			d[i]->partition_size = d[!i]->partition_size;
	settle_partition(cfg);
	if (cfg->scheduling.placement == PS_PLACE_MXNET &&
	    ps_config_user_set(cfg, "scheduling.placement") &&
	    !ps_config_user_set(cfg, "scheduling.fusion"))
		cfg->scheduling.fusion = 0;
}

void ps_config_finalize(ps_config *cfg)
{
	ps_direction_sched *d[2] = {&cfg->scheduling.push,
	                            &cfg->scheduling.params};

	follow_user(cfg);
	for (int i = 0; i < 2; i++)
		if (d[i]->credit_bdp) /* in the direction's own pieces */
			d[i]->credit_size =
			    bdp_credit(cfg, d[i]->partition_size);
}

static void describe_size(uint64_t bytes, int none, const char *word,
                          char *buf, size_t cap)
{
	if (none)
		snprintf(buf, cap, "%s", word);
	else
		ps_config_format_size(bytes, buf, cap);
}

int ps_config_directions_alike(const ps_config *cfg)
{
	const ps_direction_sched *up = &cfg->scheduling.push,
	                         *down = &cfg->scheduling.params;

	return up->order == down->order && up->gate == down->gate &&
	       up->credit_size == down->credit_size &&
	       up->partition_size == down->partition_size &&
	       !cfg->scheduling.params_barrier;
}

void ps_config_describe_scheduling(const ps_config *cfg, char *buf,
                                   size_t cap)
{
	const ps_direction_sched *up = &cfg->scheduling.push,
	                         *down = &cfg->scheduling.params;
	char part[32], cu[32], cd[32];

	describe_size(cfg->scheduling.partition_size,
	              cfg->scheduling.partition_size >= TIB &&
	                  cfg->scheduling.partition_size != PS_SIZE_AUTO,
	              "whole tensors",
	              part, sizeof(part));
	describe_size(up->credit_size, up->credit_size == 0, "unlimited", cu,
	              sizeof(cu));
	describe_size(down->credit_size, down->credit_size == 0, "unlimited",
	              cd, sizeof(cd));
	if (ps_config_directions_alike(cfg)) {
		snprintf(buf, cap,
		         "preset %s: order %s, gate %s, partition %s, credit "
		         "%s, fusion %s",
		         preset_names[cfg->scheduling.preset],
		         order_names[up->order], gate_names[up->gate], part, cu,
		         switch_names[cfg->scheduling.fusion]);
		return;
	}
	if (up->partition_size != down->partition_size) {
		char pu[48], pd[48];

		describe_size(up->partition_size,
		              up->partition_size >= TIB &&
		                  up->partition_size != PS_SIZE_AUTO,
		              "whole tensors", pu, sizeof(pu));
		describe_size(down->partition_size,
		              down->partition_size >= TIB &&
		                  down->partition_size != PS_SIZE_AUTO,
		              "whole tensors", pd, sizeof(pd));
		snprintf(buf, cap,
		         "preset %s: pushes order %s, gate %s, partition %s, "
		         "credit %s; parameters %sorder %s, gate %s, partition "
		         "%s, credit %s; fusion %s",
		         preset_names[cfg->scheduling.preset],
		         order_names[up->order], gate_names[up->gate], pu, cu,
		         cfg->scheduling.params_barrier ? "after a barrier, " : "",
		         order_names[down->order], gate_names[down->gate], pd, cd,
		         switch_names[cfg->scheduling.fusion]);
		return;
	}
	snprintf(buf, cap,
	         "preset %s: pushes order %s, gate %s, credit %s; parameters "
	         "%sorder %s, gate %s, credit %s; partition %s, fusion %s",
	         preset_names[cfg->scheduling.preset], order_names[up->order],
	         gate_names[up->gate], cu,
	         cfg->scheduling.params_barrier ? "after a barrier, " : "",
	         order_names[down->order], gate_names[down->gate], cd, part,
	         switch_names[cfg->scheduling.fusion]);
}

/* ---- defaults, set ---------------------------------------------------- */

void ps_config_defaults(ps_config *cfg)
{
	char err[256];

	memset(cfg, 0, sizeof(*cfg));
	for (size_t i = 0; i < NOPTIONS; i++) {
		if (set_value(cfg, &options[i], options[i].def, "default", err,
		              sizeof(err)) != PS_OK) {
			/* A bug in options[]: the unit tests catch it. */
			fprintf(stderr, "ordo: bad built-in default: %s\n",
			        err);
			abort();
		}
	}
}

int ps_config_set_kv(ps_config *cfg, const char *key, const char *value,
                     const char *origin, char *why, size_t whylen)
{
	const char *dot;
	const option *o;

	if (!cfg || !key || !value)
		return ps_errf(why, whylen, PS_ECONFIG, "%s: missing key or value",
		            origin ? origin : "set");
	if (!origin)
		origin = "set";
	dot = strchr(key, '.');
	if (!dot || dot == key || dot[1] == '\0') {
		char list[256];
		ps_strbuf sb = ps_strbuf_over(list, sizeof(list));

		list[0] = '\0';
		list_sections(&sb);
		return ps_errf(
		    why, whylen, PS_ECONFIG,
		    "%s: '%s' is not of the form section.key (sections: "
		    "%s)",
		    origin, key, list);
	}
	o = find_option(key, (size_t)(dot - key), dot + 1);
	if (!o) {
		char section[64];

		snprintf(section, sizeof(section), "%.*s", (int)(dot - key),
		         key);
		return unknown_key(origin, section, dot + 1, why, whylen);
	}
	return set_value(cfg, o, value, origin, why, whylen);
}

static int set_assignment(ps_config *cfg, const char *assignment,
                          const char *origin, char *why, size_t whylen)
{
	char key[128];
	const char *eq = assignment ? strchr(assignment, '=') : NULL;

	if (!eq)
		return ps_errf(why, whylen, PS_ECONFIG,
		            "%s: '%s' is not of the form section.key=value",
		            origin, assignment ? assignment : "");
	if ((size_t)(eq - assignment) >= sizeof(key))
		return ps_errf(why, whylen, PS_ECONFIG, "%s: key '%.*s...' is too long",
		            origin, 40, assignment);
	memcpy(key, assignment, (size_t)(eq - assignment));
	key[eq - assignment] = '\0';
	return ps_config_set_kv(cfg, key, eq + 1, origin, why, whylen);
}

/* ---- files ------------------------------------------------------------ */

typedef struct load_ctx {
	ps_config *cfg;
	const char *path;
	FILE *f;
	char *line; /* getline buffer */
	size_t linecap;
	int lineno;
	char *inih_buf; /* libinih's line buffer, holding the current line */
	size_t indent;  /* leading blanks of the current line */
	bool read_error;
	int err_line; /* first error found by us (0: none) */
	char err[1024];
} load_ctx;

/*
 * libinih reader: one whole line per call, so lineno is the line libinih
 * is working on. A line that does not fit libinih's buffer is an error
 * (libinih would silently read the rest as a new line).
 */
static char *read_line(char *str, int num, void *stream)
{
	load_ctx *c = stream;
	ssize_t n;

	errno = 0;
	n = getline(&c->line, &c->linecap, c->f);
	if (n < 0) {
		if (ferror(c->f))
			c->read_error = true;
		return NULL;
	}
	c->lineno++;
	if (n > 0 && c->line[n - 1] == '\n')
		c->line[--n] = '\0';
	if (n >= num) {
		if (!c->err_line) {
			c->err_line = c->lineno;
			snprintf(c->err, sizeof(c->err),
			         "%s:%d: line is too long (%zd characters; at "
			         "most %d)",
			         c->path, c->lineno, n, num - 1);
		}
		return NULL;
	}
	memcpy(str, c->line, (size_t)n + 1);
	c->inih_buf = str;
	c->indent = strspn(str, " \t");
	return str;
}

static int on_ini(void *user, const char *section, const char *name,
                  const char *value)
{
	load_ctx *c = user;
	char origin[PS_CFG_STR + 32];
	char list[256];
	ps_strbuf sb = ps_strbuf_over(list, sizeof(list));
	const option *o;
	int rc;

	if (c->err_line)
		return 1; /* keep only the first error */
	if (!name)
		return 1; /* new section (only if libinih reports them) */
	snprintf(origin, sizeof(origin), "%s:%d", c->path, c->lineno);
	list[0] = '\0';
	/* libinih reads an indented line after a key as a continuation of
	 * that key's value, handing us the whole line as the value. */
	if (c->indent > 0 && value == c->inih_buf + c->indent) {
		c->err_line = c->lineno;
		ps_errf(c->err, sizeof(c->err), PS_ECONFIG,
		     "%s: indented line '%s' would continue the value of "
		     "'%s.%s'; start keys at column 1 (continuation lines are "
		     "not supported)",
		     origin, value, section, name);
		return 0;
	}
	if (section[0] == '\0') {
		list_sections(&sb);
		c->err_line = c->lineno;
		ps_errf(c->err, sizeof(c->err), PS_ECONFIG,
		     "%s: key '%s' is outside any section; put it under a "
		     "[section] header (known sections: %s)",
		     origin, name, list);
		return 0;
	}
	o = find_option(section, strlen(section), name);
	if (!o)
		rc = unknown_key(origin, section, name, c->err, sizeof(c->err));
	else
		rc =
		    set_value(c->cfg, o, value, origin, c->err, sizeof(c->err));
	if (rc != PS_OK) {
		c->err_line = c->lineno;
		return 0;
	}
	return 1;
}

int ps_config_load_file(ps_config *cfg, const char *path, char *why,
                        size_t whylen)
{
	load_ctx *c;
	int ret, rc = PS_OK;

	if (!cfg || !path)
		return ps_errf(why, whylen, PS_ECONFIG, "no configuration file given");
	c = calloc(1, sizeof(*c));
	if (!c) {
		ps_errf(why, whylen, PS_ECONFIG, "%s: out of memory", path);
		return PS_ENOMEM;
	}
	c->cfg = malloc(sizeof(*c->cfg));
	c->path = path;
	if (!c->cfg) {
		rc = PS_ENOMEM;
		ps_errf(why, whylen, PS_ECONFIG, "%s: out of memory", path);
		goto free_ctx;
	}
	*c->cfg = *cfg;
	c->f = fopen(path, "r");
	if (!c->f) {
		ps_errf(why, whylen, PS_ECONFIG, "%s: cannot open file: %s", path,
		     strerror(errno));
		rc = PS_ENOENT;
		goto free_cfg;
	}
	ret = ini_parse_stream(read_line, c, on_ini, c);
	if (ret == -2) {
		rc = PS_ENOMEM;
		ps_errf(why, whylen, PS_ECONFIG, "%s: out of memory", path);
	} else if (ret > 0 && (!c->err_line || ret < c->err_line)) {
		rc = ps_errf(why, whylen, PS_ECONFIG,
		          "%s:%d: syntax error: expected '[section]', "
		          "'key = value' or a comment",
		          path, ret);
	} else if (c->err_line) {
		rc = ps_errf(why, whylen, PS_ECONFIG, "%s", c->err);
	} else if (c->read_error || ret != 0) {
		rc = PS_EIO;
		ps_errf(why, whylen, PS_ECONFIG, "%s: cannot read file: %s", path,
		     strerror(errno ? errno : EIO));
	} else {
		*cfg = *c->cfg;
	}
	free(c->line);
	fclose(c->f);
free_cfg:
	free(c->cfg);
free_ctx:
	free(c);
	return rc;
}

/* ---- environment ------------------------------------------------------ */

/* "ORDO_TRAIN_LR" for train.lr. */
static void env_name(const option *o, char *buf, size_t cap)
{
	size_t n;

	snprintf(buf, cap, "ORDO_%s_%s", o->section, o->key);
	n = strlen(buf);
	for (size_t i = 0; i < n; i++)
		buf[i] = (char)toupper((unsigned char)buf[i]);
}

int ps_config_apply_env(ps_config *cfg, char *const *envp, char *why,
                        size_t whylen)
{
	ps_config tmp;

	if (!cfg)
		return ps_errf(why, whylen, PS_ECONFIG, "no configuration");
	if (!envp)
		return PS_OK;
	tmp = *cfg;
	for (size_t e = 0; envp[e]; e++) {
		const char *var = envp[e], *eq = strchr(var, '=');
		const option *o = NULL;
		char origin[160], name[128];
		size_t len;
		int rc;

		if (strncmp(var, "ORDO_", 5) != 0 || !eq)
			continue;
		/* the job's secret (transport/keys.h), not a key */
		if ((size_t)(eq - var) == strlen("ORDO_JOB_SECRET") &&
		    strncmp(var, "ORDO_JOB_SECRET", (size_t)(eq - var)) == 0)
			continue;
		len = (size_t)(eq - var);
		snprintf(origin, sizeof(origin), "environment %.*s",
		         (int)(len < 120 ? len : 120), var);
		for (size_t i = 0; i < NOPTIONS && !o; i++) {
			env_name(&options[i], name, sizeof(name));
			if (strlen(name) == len && strncmp(name, var, len) == 0)
				o = &options[i];
		}
		if (!o) {
			char list[256];
			ps_strbuf sb = ps_strbuf_over(list, sizeof(list));

			list[0] = '\0';
			list_sections(&sb);
			return ps_errf(why, whylen, PS_ECONFIG,
			            "%s: names no configuration key (variables "
			            "starting with ORDO_ are reserved for "
			            "ORDO_<SECTION>_<KEY>, e.g. ORDO_TRAIN_LR "
			            "for train.lr; sections: %s)",
			            origin, list);
		}
		rc = set_value(&tmp, o, eq + 1, origin, why, whylen);
		if (rc != PS_OK)
			return rc;
	}
	*cfg = tmp;
	return PS_OK;
}

/* ---- validation ------------------------------------------------------- */

/* Checks one field against its table entry (values set directly in the
 * struct skip the parser). */
static int check_bounds(const ps_config *cfg, const option *o, char *why,
                        size_t whylen)
{
	char range[96];

	format_range(o, range, sizeof(range));
	switch (o->type) {
	case OPT_INT:
	case OPT_INT64: {
		int64_t v = o->type == OPT_INT
		                ? *(const int *)cfield(cfg, o)
		                : *(const int64_t *)cfield(cfg, o);
		if (v < o->imin || v > o->imax)
			return ps_errf(why, whylen, PS_ECONFIG,
			            "%s.%s: %" PRId64 " is out of range %s",
			            o->section, o->key, v, range);
		break;
	}
	case OPT_DOUBLE: {
		double v = *(const double *)cfield(cfg, o);
		if (!(v >= o->dmin && v <= o->dmax) ||
		    (o->dmax_open && v >= o->dmax))
			return ps_errf(why, whylen, PS_ECONFIG, "%s.%s: %g is out of range %s",
			            o->section, o->key, v, range);
		break;
	}
	case OPT_SIZE: {
		uint64_t v = *(const uint64_t *)cfield(cfg, o);
		if (v == PS_SIZE_AUTO && size_auto_ok(o))
			break;
		if (v < o->umin || v > o->umax)
			return ps_errf(why, whylen, PS_ECONFIG,
			            "%s.%s: %" PRIu64 " is out of range %s",
			            o->section, o->key, v, range);
		break;
	}
	case OPT_STRING:
		if (strnlen(cfield(cfg, o), o->fsize) > STR_MAX)
			return ps_errf(why, whylen, PS_ECONFIG,
			            "%s.%s: value is too long (at most %d "
			            "characters)",
			            o->section, o->key, STR_MAX);
		break;
	case OPT_ENUM: {
		int v = *(const int *)cfield(cfg, o), n = 0;
		while (o->names[n])
			n++;
		if (v < 0 || v >= n)
			return ps_errf(why, whylen, PS_ECONFIG,
			            "%s.%s: %d is not a valid value",
			            o->section, o->key, v);
		break;
	}
	}
	return PS_OK;
}

uint64_t ps_config_max_message(const ps_config *cfg)
{
	uint64_t m = cfg->transport.max_message;
	if (m)
		return m;
	m = cfg->scheduling.partition_size;
	if (m == PS_SIZE_AUTO)
		m = PS_AUTO_PARTITION_MAX; /* the largest auto may choose */
	if (m < PS_CONTROL_MESSAGE_MAX)
		m = PS_CONTROL_MESSAGE_MAX;
	return m > 4 * GIB ? 4 * GIB : m;
}

/* What a direction cut into pieces (its partition size below the other's)
 * cannot be combined with. */
static int check_pieces(const ps_config *cfg, char *why, size_t whylen)
{
	char a[32], b[32];

	for (int dir = 0; dir < 2; dir++) {
		const ps_direction_sched *d = dir ? &cfg->scheduling.params
		                                  : &cfg->scheduling.push;
		const char *name = dir ? "params" : "push",
		           *other = dir ? "push" : "params";

		if (ps_config_pieces_size(cfg, dir) == 0)
			continue;
		ps_config_format_size(d->partition_size, a, sizeof(a));
		ps_config_format_size(cfg->scheduling.partition_size, b,
		                      sizeof(b));
		if (strcmp(gate_names[d->gate], "counter") == 0)
			return ps_errf(why, whylen, PS_ECONFIG,
			            "scheduling.%s_gate = counter releases whole "
			            "partitions, one number each: it needs "
			            "%s_partition_size (%s) at least "
			            "%s_partition_size (%s)",
			            name, name, a, other, b);
		if (dir == 0 && cfg->train.mode != PS_MODE_SYNC)
			return ps_errf(why, whylen, PS_ECONFIG,
			            "scheduling.push_partition_size (%s) below "
			            "params_partition_size (%s) pushes each "
			            "partition in pieces, which a server sums "
			            "into its round: train.mode = sync only",
			            a, b);
		if (dir == 0 && cfg->server.device == PS_DEVICE_CUDA)
			return ps_errf(why, whylen, PS_ECONFIG,
			            "scheduling.push_partition_size (%s) below "
			            "params_partition_size (%s) pushes each "
			            "partition in pieces; server.device = cuda "
			            "sums whole partitions only",
			            a, b);
	}
	return PS_OK;
}

int ps_config_validate(const ps_config *cfg, char *why, size_t whylen)
{
	char a[32], b[32];
	int rc;

	if (!cfg)
		return ps_errf(why, whylen, PS_ECONFIG, "no configuration");
	for (size_t i = 0; i < NOPTIONS; i++) {
		if (options[i].both[0])
			continue; /* no field: its two keys are checked */
		rc = check_bounds(cfg, &options[i], why, whylen);
		if (rc != PS_OK)
			return rc;
	}
#ifndef PS_WITH_RDMA
	if (cfg->transport.type == PS_TRANSPORT_RDMA)
		return ps_errf(why, whylen, PS_ECONFIG,
		            "transport.type: 'rdma' is not in this build "
		            "(configure with -DPS_WITH_RDMA=ON, which needs "
		            "rdma-core); allowed: tcp");
#endif
#ifndef PS_WITH_CUDA
	if (cfg->server.device == PS_DEVICE_CUDA)
		return ps_errf(why, whylen, PS_ECONFIG,
		            "server.device = cuda: this build has no CUDA "
		            "support (configure with -DPS_WITH_CUDA=ON)");
	if (cfg->worker.gradients == PS_DEVICE_CUDA)
		return ps_errf(why, whylen, PS_ECONFIG,
		            "worker.gradients = cuda: this build has no CUDA "
		            "support (configure with -DPS_WITH_CUDA=ON)");
#endif
	if (cfg->worker.gradients == PS_DEVICE_CUDA &&
	    cfg->worker.mode != PS_WORKER_REPLAY)
		return ps_errf(why, whylen, PS_ECONFIG,
		            "worker.gradients = cuda: only replaying workers "
		            "(worker.mode = replay) hold gradients in device "
		            "memory; a program of your own declares device "
		            "tensors with ps_client_declare_cuda");
	if ((cfg->security.mode == PS_SECURITY_CURVE ||
	     cfg->security.mode == PS_SECURITY_SEALED) &&
	    cfg->transport.type != PS_TRANSPORT_TCP)
		return ps_errf(why, whylen, PS_ECONFIG,
		            "security.mode = %s: only the tcp transport %s "
		            "(transport.type = %s; secret checks who "
		            "connects over rdma too)",
		            security_names[cfg->security.mode],
		            cfg->security.mode == PS_SECURITY_CURVE
		                ? "has CURVE"
		                : "seals frames",
		            cfg->transport.type == PS_TRANSPORT_RDMA ? "rdma"
		                                                     : "?");
	if (cfg->transport.max_message &&
	    cfg->transport.max_message < (1u << 20))
		return ps_errf(why, whylen, PS_ECONFIG,
		            "transport.max_message = %llu: below 1 MiB, a "
		            "registration or WELCOME may not fit (0 = auto)",
		            (unsigned long long)cfg->transport.max_message);
	if ((int64_t)cfg->cluster.heartbeat_timeout_ms <=
	    2 * (int64_t)cfg->cluster.heartbeat_interval_ms)
		return ps_errf(why, whylen, PS_ECONFIG,
		            "cluster.heartbeat_timeout_ms (%d) must be greater "
		            "than 2 * cluster.heartbeat_interval_ms (2 * %d = "
		            "%d)",
		            cfg->cluster.heartbeat_timeout_ms,
		            cfg->cluster.heartbeat_interval_ms,
		            2 * cfg->cluster.heartbeat_interval_ms);
	for (int dir = 0; dir < 2; dir++) {
		const ps_direction_sched *d = dir ? &cfg->scheduling.params
		                                  : &cfg->scheduling.push;
		const char *name = dir ? "params" : "push";
		if (d->partition_size != PS_SIZE_AUTO &&
		    d->partition_size % 4 != 0) {
			ps_config_format_size(d->partition_size, a, sizeof(a));
			return ps_errf(why, whylen, PS_ECONFIG,
			            "scheduling.%s_partition_size (%s) must be a "
			            "multiple of 4 bytes (whole float32 elements)",
			            name, a);
		}
		if (d->credit_size == 0 || d->credit_size == PS_SIZE_AUTO ||
		    d->partition_size == PS_SIZE_AUTO ||
		    d->credit_size >= d->partition_size)
			continue;
		ps_config_format_size(d->credit_size, a, sizeof(a));
		ps_config_format_size(d->partition_size, b, sizeof(b));
		return ps_errf(why, whylen, PS_ECONFIG,
		            "scheduling.%s_credit_size (%s) must be 0 "
		            "(unlimited) or at least scheduling.%s_partition_size "
		            "(%s)",
		            name, a, name, b);
	}
	if ((cfg->scheduling.push.partition_size == PS_SIZE_AUTO) !=
	    (cfg->scheduling.params.partition_size == PS_SIZE_AUTO))
		return ps_errf(why, whylen, PS_ECONFIG,
		            "scheduling.push_partition_size and "
		            "params_partition_size are chosen together: auto "
		            "for one needs auto for the other "
		            "(scheduling.partition_size = auto sets both)");
	rc = check_pieces(cfg, why, whylen);
	if (rc != PS_OK)
		return rc;
	if (cfg->scheduling.placement == PS_PLACE_MXNET &&
	    cfg->scheduling.fusion)
		return ps_errf(why, whylen, PS_ECONFIG,
		            "scheduling.placement = mxnet places every tensor "
		            "by itself, as MXNet's KVStore does: it needs "
		            "scheduling.fusion = off");
	if (cfg->scheduling.params_barrier && cfg->train.mode != PS_MODE_SYNC)
		return ps_errf(why, whylen, PS_ECONFIG,
		            "scheduling.params_barrier = on needs train.mode = "
		            "sync (the barrier waits for an iteration's "
		            "updates; asynchronous training has no iteration "
		            "to wait for)");
	if (cfg->worker.mode == PS_WORKER_REPLAY && !cfg->model.file[0])
		return ps_errf(why, whylen, PS_ECONFIG,
		            "worker.mode = replay needs model.file (a model "
		            "file such as conf/models/vgg16.json)");
	if (cfg->worker.mode == PS_WORKER_REPLAY &&
	    cfg->train.mode != PS_MODE_SYNC)
		return ps_errf(why, whylen, PS_ECONFIG,
		            "worker.mode = replay needs train.mode = sync");
	if (cfg->checkpoint.every > 0 && !cfg->checkpoint.dir[0])
		return ps_errf(why, whylen, PS_ECONFIG,
		            "checkpoint.every = %d needs checkpoint.dir (where "
		            "to write them)",
		            cfg->checkpoint.every);
	if (strcmp(cfg->checkpoint.resume, "latest") == 0 &&
	    !cfg->checkpoint.dir[0])
		return ps_errf(why, whylen, PS_ECONFIG,
		            "checkpoint.resume = latest needs checkpoint.dir "
		            "(where to look for the latest checkpoint)");
	if (cfg->fault.restarts > 0 && !cfg->checkpoint.dir[0])
		return ps_errf(why, whylen, PS_ECONFIG,
		            "fault.restarts = %d needs checkpoint.dir (a "
		            "restart resumes from the latest checkpoint there)",
		            cfg->fault.restarts);
	if (cfg->tune.partition_min > cfg->tune.partition_max ||
	    cfg->tune.credit_min > cfg->tune.credit_max) {
		bool part = cfg->tune.partition_min > cfg->tune.partition_max;
		ps_config_format_size(part ? cfg->tune.partition_min
		                           : cfg->tune.credit_min, a, sizeof(a));
		ps_config_format_size(part ? cfg->tune.partition_max
		                           : cfg->tune.credit_max, b, sizeof(b));
		return ps_errf(why, whylen, PS_ECONFIG, "tune.%s_min (%s) is larger than "
		            "tune.%s_max (%s)", part ? "partition" : "credit",
		            a, part ? "partition" : "credit", b);
	}
	if (cfg->tune.credit_max < cfg->tune.partition_max) {
		ps_config_format_size(cfg->tune.credit_max, a, sizeof(a));
		ps_config_format_size(cfg->tune.partition_max, b, sizeof(b));
		return ps_errf(why, whylen, PS_ECONFIG, "tune.credit_max (%s) must be at least "
		            "tune.partition_max (%s): a credit is never below "
		            "the partition size", a, b);
	}
	if (cfg->tune.partition_min % 4 != 0 ||
	    cfg->tune.partition_max % 4 != 0)
		return ps_errf(why, whylen, PS_ECONFIG, "tune.partition_min and "
		            "tune.partition_max must be multiples of 4 bytes");
	if (cfg->train.batch > cfg->model.samples_per_worker)
		return ps_errf(why, whylen, PS_ECONFIG,
		            "train.batch (%d) must be at most "
		            "model.samples_per_worker (%d)",
		            cfg->train.batch, cfg->model.samples_per_worker);
	return PS_OK;
}

/* ---- output ----------------------------------------------------------- */

static bool needs_quotes(const char *s)
{
	size_t len = strlen(s);

	return len == 0 || isspace((unsigned char)s[0]) ||
	       isspace((unsigned char)s[len - 1]) || s[0] == ';' ||
	       s[0] == '#' || (len >= 2 && s[0] == '"' && s[len - 1] == '"');
}

/* The value of o in cfg as the parser accepts it. */
static void format_value(const ps_config *cfg, const option *o, char *buf,
                         size_t cap)
{
	switch (o->type) {
	case OPT_INT:
		snprintf(buf, cap, "%d", *(const int *)cfield(cfg, o));
		break;
	case OPT_INT64:
		snprintf(buf, cap, "%" PRId64,
		         *(const int64_t *)cfield(cfg, o));
		break;
	case OPT_DOUBLE:
		format_double(*(const double *)cfield(cfg, o), buf, cap);
		break;
	case OPT_SIZE:
		ps_config_format_size(*(const uint64_t *)cfield(cfg, o), buf,
		                      cap);
		break;
	case OPT_STRING: {
		const char *s = cfield(cfg, o);
		if (needs_quotes(s))
			snprintf(buf, cap, "\"%s\"", s);
		else
			snprintf(buf, cap, "%s", s);
		break;
	}
	case OPT_ENUM: {
		int v = *(const int *)cfield(cfg, o);
		const char *name = NULL;
		for (int i = 0; o->names[i]; i++)
			if (i == v)
				name = o->names[i];
		snprintf(buf, cap, "%s", name ? name : "?");
		break;
	}
	}
}

void ps_config_write_ini(const ps_config *cfg, FILE *out)
{
	char value[PS_CFG_STR + 8];

	fprintf(out, "# ordo job configuration: every key with its effective "
	             "value.\n");
	for (size_t s = 0; sections[s]; s++) {
		fprintf(out, "\n[%s]\n", sections[s]);
		for (size_t i = 0; i < NOPTIONS; i++) {
			if (strcmp(options[i].section, sections[s]) != 0 ||
			    options[i].both[0])
				continue; /* a shorthand: its two keys say it */
			format_value(cfg, &options[i], value, sizeof(value));
			fprintf(out, "%s = %s\n", options[i].key, value);
		}
	}
}

static const char *type_name(opt_type t)
{
	switch (t) {
	case OPT_INT:
		return "int";
	case OPT_INT64:
		return "int64";
	case OPT_DOUBLE:
		return "double";
	case OPT_SIZE:
		return "size";
	case OPT_STRING:
		return "string";
	case OPT_ENUM:
		return "enum";
	}
	return "?";
}

void ps_config_write_reference(FILE *out)
{
	char range[96];

	for (size_t s = 0; sections[s]; s++) {
		fprintf(out, "%s### [%s]\n\n", s ? "\n" : "", sections[s]);
		fprintf(out, "| key | type | default | allowed | description "
		             "|\n");
		fprintf(out, "|---|---|---|---|---|\n");
		for (size_t i = 0; i < NOPTIONS; i++) {
			const option *o = &options[i];

			if (strcmp(o->section, sections[s]) != 0)
				continue;
			if (o->both[0])
				fprintf(out, "| `%s` | %s | (its two keys') | ",
				        o->key, type_name(o->type));
			else
				fprintf(out, "| `%s` | %s | `%s` | ", o->key,
				        type_name(o->type),
				        o->def[0] ? o->def : "\"\"");
			switch (o->type) {
			case OPT_INT:
			case OPT_INT64:
			case OPT_DOUBLE:
				format_range(o, range, sizeof(range));
				fprintf(out, "%s", range);
				break;
			case OPT_SIZE:
				format_range(o, range, sizeof(range));
				fprintf(out,
				        "%s bytes; suffix K, M, G, T = "
				        "1024^1..4%s",
				        range,
				        size_auto_ok(o) ? "; or `auto`" : "");
				break;
			case OPT_STRING:
				fprintf(out, "at most %d characters", STR_MAX);
				break;
			case OPT_ENUM:
				for (int n = 0; o->names[n]; n++)
					fprintf(out, "%s`%s`", n ? ", " : "",
					        o->names[n]);
				break;
			}
			fprintf(out, " | %s |\n", o->help);
		}
	}
}

const char *ps_config_enum_name(const char *key, int value)
{
	const char *dot = key ? strchr(key, '.') : NULL;
	const option *o;

	if (!dot)
		return NULL;
	o = find_option(key, (size_t)(dot - key), dot + 1);
	if (!o || o->type != OPT_ENUM || value < 0)
		return NULL;
	for (int i = 0; o->names[i]; i++)
		if (i == value)
			return o->names[i];
	return NULL;
}

/* ---- public API (include/ordo/ordo.h) ---------------------------------- */

int ps_config_validate_job(const ps_config *cfg, char *why, size_t whylen)
{
	long long nodes = 1LL + cfg->cluster.servers + cfg->cluster.workers;

	if (nodes > PS_JOB_MAX_NODES)
		return ps_errf(why, whylen, PS_ECONFIG,
		            "cluster.workers (%d) + cluster.servers (%d) + the "
		            "scheduler = %lld nodes: a job runs at most %d "
		            "(ps-sim can simulate it)",
		            cfg->cluster.workers, cfg->cluster.servers, nodes,
		            PS_JOB_MAX_NODES);
	return PS_OK;
}

int ps_config_new(ps_config **cfg_p)
{
	ps_config *cfg;

	if (!cfg_p)
		return PS_EINVAL;
	cfg = malloc(sizeof(*cfg));
	if (!cfg)
		return PS_ENOMEM;
	ps_config_defaults(cfg);
	*cfg_p = cfg;
	return PS_OK;
}

int ps_config_load(ps_config *cfg, const char *path, char *why, size_t whylen)
{
	return ps_config_load_file(cfg, path, why, whylen);
}

int ps_config_set(ps_config *cfg, const char *assignment, char *why,
                  size_t whylen)
{
	if (!cfg)
		return ps_errf(why, whylen, PS_ECONFIG, "set: no configuration");
	return set_assignment(cfg, assignment, "set", why, whylen);
}

int ps_config_user_set(const ps_config *cfg, const char *key)
{
	const option *o = strchr(key, '.') ? option_named(key) : NULL;

	return o ? cfg->user_set[o - options] : 0;
}

int ps_config_get(const ps_config *cfg, const char *key, char *value,
                  size_t cap)
{
	const option *o;
	char buf[PS_CFG_STR + 8];

	if (!cfg || !key || !value || cap == 0)
		return PS_EINVAL;
	o = strchr(key, '.') ? option_named(key) : NULL;
	if (!o) {
		snprintf(value, cap, "%s: no such key", key);
		return PS_ENOENT;
	}
	if (o->both[0]) {
		/* a shorthand has a value while its two keys agree */
		char other[PS_CFG_STR + 8];

		format_value(cfg, sibling(o, o->both[0]), buf, sizeof(buf));
		format_value(cfg, sibling(o, o->both[1]), other,
		             sizeof(other));
		if (strcmp(buf, other) != 0) {
			snprintf(value, cap,
			         "%s.%s: %s = %s but %s = %s: ask for one of "
			         "them",
			         o->section, o->key, o->both[0], buf,
			         o->both[1], other);
			return PS_EINVAL;
		}
	} else {
		format_value(cfg, o, buf, sizeof(buf));
	}
	if ((size_t)snprintf(value, cap, "%s", buf) >= cap)
		return PS_EINVAL;
	return PS_OK;
}

void ps_config_free(ps_config **cfg_p)
{
	if (!cfg_p || !*cfg_p)
		return;
	free(*cfg_p);
	*cfg_p = NULL;
}
