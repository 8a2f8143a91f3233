/*
 * common/config.h - the job configuration: one table of options.
 *
 * One INI file drives a whole job (every binary reads the same file). Every
 * key has a type, a default, bounds and help text in one table (config.c,
 * `options[]`); nothing else in the tree knows a key's default or bounds.
 * Precedence, lowest first: defaults < file < environment (ORDO_SECTION_KEY)
 * < command line (--set section.key=value), applied in that order.
 *
 * Errors name where the bad value came from ("conf/x.ini:12",
 * "environment ORDO_TRAIN_LR", "--set"), the key, and what is allowed.
 *
 * Threads: a ps_config is plain data; load it on one thread, then treat it
 * as read-only (any number of readers).
 */
#ifndef ORDO_COMMON_CONFIG_H
#define ORDO_COMMON_CONFIG_H

#include <stddef.h>
#include <stdint.h>
#include <stdio.h>

#include "ordo/ordo.h"

#define PS_CFG_STR 256

typedef enum { PS_TRANSPORT_TCP = 0, PS_TRANSPORT_RDMA = 1 } ps_transport_type;
typedef enum { PS_RDMA_POLL_EVENT = 0, PS_RDMA_POLL_BUSY = 1 } ps_rdma_poll;
typedef enum {
	PS_SECURITY_NONE = 0,
	PS_SECURITY_CURVE = 1,
	PS_SECURITY_SECRET = 2,
	PS_SECURITY_AUTO = 3, /* secret where the job has one, else none */
	PS_SECURITY_SEALED = 4 /* secret's check, every frame encrypted */
} ps_security_mode;
typedef enum { PS_MODE_SYNC = 0, PS_MODE_ASYNC = 1 } ps_train_mode;
typedef enum { PS_MODEL_SOFTMAX = 0, PS_MODEL_MLP = 1 } ps_small_model_kind;
typedef enum {
	PS_PLACE_BALANCED = 0,
	PS_PLACE_ROUND_ROBIN = 1,
	PS_PLACE_MXNET = 2
} ps_place_strategy;
typedef enum {
	PS_PRESET_BASELINE = 0,
	PS_PRESET_TENSORFLOW,
	PS_PRESET_MXNET,
	PS_PRESET_P3,
	PS_PRESET_TICTAC_TIO,
	PS_PRESET_TICTAC_TAO,
	PS_PRESET_BYTESCHEDULER,
	PS_PRESET_ORDO,
	PS_PRESET_COUNT
} ps_preset;
/* A size chosen when the job starts ("auto": scheduling.partition_size
 * and the credit sizes; sim/auto_sizes.h), never sent or used as bytes. */
#define PS_SIZE_AUTO UINT64_MAX
/* transport.connections_per_peer's largest value */
#define PS_TCP_CONNECTIONS_MAX 16
/* its largest value where it is 0 and security.mode = curve */
#define PS_TCP_CURVE_CONNECTIONS 4
/* The largest partition auto chooses: what every node accepts as one
 * frame without knowing the choice (ps_config_max_message). */
#define PS_AUTO_PARTITION_MAX ((uint64_t)64 << 20)
/* How the transfers of one direction are scheduled: the workers' gradient
 * pushes or the servers' parameter sends (docs/presets.md). */
typedef struct ps_direction_sched {
	int order;            /* ps_order_kind (scheduling/order.h) */
	int gate;             /* ps_gate_kind (scheduling/gate.h) */
	uint64_t credit_size; /* bytes; 0 = unlimited */
	/* bytes: the largest piece of a partition this direction sends
	 * (scheduling.*_partition_size; at least the partition: whole) */
	uint64_t partition_size;
	/* the preset's credit follows the bandwidth-delay product
	 * (ps_config_finalize); not a key: cleared when the credit is set
	 * explicitly */
	int credit_bdp;
} ps_direction_sched;
typedef enum { PS_WORKER_TRAIN = 0, PS_WORKER_REPLAY = 1 } ps_worker_mode;
typedef enum { PS_COMPUTE_SLEEP = 0, PS_COMPUTE_SPIN = 1 } ps_compute_wait;
typedef enum { PS_DEVICE_CPU = 0, PS_DEVICE_CUDA = 1 } ps_server_device;
/* server.optimizer: what a server does with a round's averaged gradient */
typedef enum {
	PS_OPTIMIZER_SGD = 0,  /* SGD with momentum: the new parameters */
	PS_OPTIMIZER_NONE = 1, /* nothing: the average itself is sent back */
	PS_OPTIMIZER_ADAM = 2, /* Adam (torch.optim.Adam): new parameters */
	PS_OPTIMIZER_ADAMW = 3 /* AdamW (torch.optim.AdamW) */
} ps_server_optimizer;
typedef enum { PS_SHARING_FIFO = 0, PS_SHARING_FAIR = 1 } ps_link_sharing;
typedef enum {
	PS_LINK_MODEL_AUTO = 0, /* transport.type's */
	PS_LINK_MODEL_TCP = 1,
	PS_LINK_MODEL_RDMA = 2
} ps_link_model_kind;
typedef enum { PS_TUNE_THEN_TRAIN = 0, PS_TUNE_THEN_STOP = 1 } ps_tune_then;
typedef enum { PS_TUNE_PRIOR_NONE = 0, PS_TUNE_PRIOR_SIM = 1 } ps_tune_prior;
typedef enum {
	PS_LOG_ERROR = 0,
	PS_LOG_WARN = 1,
	PS_LOG_INFO = 2,
	PS_LOG_DEBUG = 3
} ps_log_level;

struct ps_config {
	struct {
		char scheduler_host[PS_CFG_STR]; /* where nodes find the scheduler */
		int scheduler_port;              /* 0: ephemeral (ps-launch only) */
		int servers;
		int workers;
		char bind_host[PS_CFG_STR];      /* address servers/workers bind */
		char advertise_host[PS_CFG_STR]; /* "" = bind_host */
		char interface[PS_CFG_STR];      /* "" = use bind_host */
		int heartbeat_interval_ms;
		int heartbeat_timeout_ms;
		int connect_timeout_ms;
		int register_timeout_ms;
		uint64_t early_bytes_max; /* kept before the WELCOME */
	} cluster;
	struct {
		int type; /* ps_transport_type */
		int send_timeout_ms;
		int io_threads;
		int connections_per_peer; /* 0: auto */
		char rdma_device[PS_CFG_STR]; /* "" = automatic */
		int rdma_gid_index;           /* -1 = automatic */
		int rdma_poll;                /* ps_rdma_poll */
		uint64_t max_message; /* 0 = auto: ps_config_max_message() */
		int handshake_timeout_ms; /* tcp and rdma (transport.h) */
	} transport;
	struct {
		int mode;                  /* ps_security_mode */
		char keys_dir[PS_CFG_STR]; /* the job's keys (ps-keygen) */
	} security;
	struct {
		int name; /* ps_small_model_kind */
		int input_dim;
		int hidden;
		int classes;
		int samples_per_worker;
		char file[PS_CFG_STR]; /* model DAG for replay */
		double compute_scale;
		int measure_iterations; /* model/measured.h; 0: off */
	} model;
	struct {
		int mode;    /* ps_worker_mode */
		int compute; /* ps_compute_wait */
		int gradients;   /* ps_server_device: where a replay's
				  * gradients and parameters live */
		int cuda_device; /* gradients = cuda: the CUDA device index */
		int rank;        /* asked for at registration; -1: any */
	} worker;
	struct {
		int device;      /* ps_server_device: where updates are applied */
		int cuda_device; /* device = cuda: the CUDA device index */
		int optimizer;   /* ps_server_optimizer */
	} server;
	struct {
		int iterations;
		int batch; /* per worker */
		double lr;
		double momentum;
		double beta1, beta2, eps, weight_decay; /* adam, adamw */
		int mode; /* ps_train_mode */
		int64_t seed;
		char dump_params[PS_CFG_STR]; /* worker 0 writes final params */
	} train;
	struct {
		int preset; /* ps_preset */
		/* workers' gradient pushes (scheduling.push_*) and servers'
		 * parameter sends (scheduling.params_*) */
		ps_direction_sched push, params;
		int params_barrier;      /* 1: an iteration's parameters go
					  * once the server updated them all,
					  * in a random order (TensorFlow) */
		/* bytes: the partition a server places, sums and updates,
		 * the larger of push.partition_size and
		 * params.partition_size (kept so by every setter) */
		uint64_t partition_size;
		int fusion;              /* 1: fuse small tensors (PACE) */
		int placement;           /* ps_place_strategy */
		int credit_refine;       /* 1: an auto credit is refined
					  * from measured iterations */
	} scheduling;
	struct {
		int level; /* ps_log_level */
	} log;
	struct {
		char dir[PS_CFG_STR]; /* timeline parts, metrics; "" = none */
	} output;
	struct {
		char dir[PS_CFG_STR];    /* root of ckpt-* directories */
		int every;               /* iterations; 0 = only on demand */
		int keep;                /* newest complete ones kept */
		char resume[PS_CFG_STR]; /* a checkpoint dir, "latest" or "" */
	} checkpoint;
	struct {
		int restarts; /* ps-launch: restarts from the latest checkpoint */
	} fault;
	struct {
		double bandwidth_gbps; /* time oracle of transfers */
	} metrics;
	struct {
		double bandwidth_gbps; /* per host, per direction; 0 = metrics' */
		double latency_us;     /* a: fixed cost of a message */
		double latency_jitter; /* fair: each message's a within +-this share */
		double gamma;          /* per-byte slowdown when links are shared */
		char fit_file[PS_CFG_STR]; /* link sweep CSV fitted at start-up */
		int sharing; /* PS_SHARING_FIFO / PS_SHARING_FAIR */
		int burst_bytes;   /* fair: token bucket per link, 0 = none */
		double burst_gbps; /* fair: a link's rate while it has tokens */
		int model;         /* ps_link_model_kind: which a, efficiency, gamma */
		double efficiency; /* tcp: payload share of bandwidth_gbps */
		double rdma_latency_us; /* rdma: a */
		double rdma_efficiency; /* rdma: payload share of bandwidth_gbps */
		double rdma_gamma;      /* rdma: gamma */
	} link; /* ps-sim's link model (sim/link.h) */
	struct {
		double aggregate_ns_per_byte; /* server: summing one push */
		double update_ns_per_byte;    /* server: the optimizer step */
		int trace_workers;            /* workers in the timeline */
		double op_overhead_us;        /* worker: added to every op */
		double machine_gbps; /* fair: all hosts together, 0 = none */
		int machine_small_bytes;   /* messages up to this size... */
		double machine_small_gbps; /* ...cross the machine at this */
		double machine_message_us; /* CPU per message on it... */
		int machine_message_min_bytes; /* ...above this size */
	} sim; /* ps-sim (sim/cluster.h) */
	struct {
		int trials;
		int warmup_iterations;
		int measure_iterations;
		uint64_t partition_min, partition_max; /* bytes */
		uint64_t credit_min, credit_max;       /* bytes */
		int then;  /* ps_tune_then */
		int prior; /* ps_tune_prior */
		int64_t seed;
		char endpoint[PS_CFG_STR]; /* set by ps-tune for the scheduler */
	} tune; /* ps-tune (docs/tune.md) */
	/* which options were set by a file, the environment or --set (not
	 * defaults): a preset fills in only the others */
	uint8_t user_set[128];
};

/* Fills cfg with every option's default. */
void ps_config_defaults(ps_config *cfg);

/* Did a file, the environment or a --set give "section.key" (1), or does
 * it hold its default (0; also for a key that does not exist)? */
int ps_config_user_set(const ps_config *cfg, const char *key);

/*
 * Loads an INI file over cfg. On error returns PS_ECONFIG (PS_ENOENT if the
 * file cannot be opened) and writes "FILE:LINE: message" into why.
 */
int ps_config_load_file(ps_config *cfg, const char *path, char *why,
			size_t whylen);

/*
 * Applies ORDO_<SECTION>_<KEY> variables from envp (NULL-terminated, like
 * `environ`). Variables starting with ORDO_ that name no key are errors.
 */
int ps_config_apply_env(ps_config *cfg, char *const *envp, char *why,
			size_t whylen);

/* Sets one option from "section.key" and a value string; origin names where
 * it came from for error messages ("--set", "conf/x.ini:3"). */
int ps_config_set_kv(ps_config *cfg, const char *key, const char *value,
		     const char *origin, char *why, size_t whylen);

/* The largest message (one frame: a header or a payload) a node accepts
 * from the network: transport.max_message, or when that is 0 (auto) the
 * larger of PS_CONTROL_MESSAGE_MAX (registration, WELCOME) and
 * scheduling.partition_size (a partition's payload), at most 4 GiB. */
#define PS_CONTROL_MESSAGE_MAX ((uint64_t)64 << 20)
uint64_t ps_config_max_message(const ps_config *cfg);

/* Cross-field checks (timeouts vs intervals, credit vs partition...). */
int ps_config_validate(const ps_config *cfg, char *why, size_t whylen);

/* The most nodes a real job has: the scheduler, its servers and its
 * workers (the scheduler's WELCOME lists every one; proto/wire.h's
 * PS_MAX_NODES is this number). */
#define PS_JOB_MAX_NODES 8192

/* What running the job needs beyond ps_config_validate: 1 +
 * cluster.servers + cluster.workers nodes at most PS_JOB_MAX_NODES (the
 * keys allow more: ps-sim simulates up to 8192 workers with any number of
 * servers, and does not ask this). PS_ECONFIG with a message naming the
 * keys. */
int ps_config_validate_job(const ps_config *cfg, char *why, size_t whylen);

/* Settles what depends on several keys, once every layer is applied: a
 * preset's credit window from the bandwidth-delay product
 * (docs/presets.md). Idempotent; ps_cli_parse and ps_client_create call
 * it. */
void ps_config_finalize(ps_config *cfg);

/* Sets both directions' partition size (and so the partition): for
 * callers that set it directly rather than by key. */
void ps_config_set_partition_size(ps_config *cfg, uint64_t bytes);
/* ... each direction its own (the partition: the larger). */
void ps_config_set_partition_sizes(ps_config *cfg, uint64_t push,
				   uint64_t params);
/* The size of the pieces a direction (params: 1, the servers' parameter
 * sends; 0, the workers' pushes) cuts each partition into: 0 when it
 * sends partitions whole (its size is the partition's). */
uint64_t ps_config_pieces_size(const ps_config *cfg, int params);

/* Sets every key of a preset (even those set by the user) and finalizes:
 * the configuration a preset runs with, for comparing presets on one job
 * (sim/auto_sizes.h). */
int ps_config_apply_preset(ps_config *cfg, int preset, char *why,
			   size_t whylen);
/* Whether a preset leaves a size to be chosen at the start (auto). */
int ps_config_preset_has_auto(int preset);

/* The credit a preset derives: partition_size times max(2, 1 +
 * ceil(BDP / partition_size)), BDP = bandwidth x 2 link.latency_us (the
 * same for both directions: they share the link and the partitions). */
uint64_t ps_config_bdp_credit(const ps_config *cfg);

/* Writes the effective configuration as INI text (every key). */
void ps_config_write_ini(const ps_config *cfg, FILE *out);

/* Writes the reference (every key: type, default, bounds, help) as a
 * Markdown table grouped by section; the README embeds this output. */
void ps_config_write_reference(FILE *out);

/* Whether pushes and parameter sends are scheduled alike (same order,
 * gate and credit, no barrier). */
int ps_config_directions_alike(const ps_config *cfg);

/* One line describing the scheduling settings in force ("preset p3:
 * order layer, gate priority, partition 160K, credit 160K, fusion off"),
 * direction by direction where the two differ ("preset tictac-tio:
 * pushes fifo/fifo/unlimited, parameters tio/counter/unlimited after a
 * barrier; partition whole tensors, fusion off"). */
void ps_config_describe_scheduling(const ps_config *cfg, char *buf,
				   size_t cap);

/* Name of an enum value of a key, e.g. ps_config_enum_name("train.mode",
 * PS_MODE_SYNC) == "sync"; NULL if unknown. */
const char *ps_config_enum_name(const char *key, int value);

/* Formats a byte count the way config accepts it ("160K", "4M", "1000"). */
void ps_config_format_size(uint64_t bytes, char *buf, size_t cap);

#endif /* ORDO_COMMON_CONFIG_H */
