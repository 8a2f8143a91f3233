/*
 * client/state.h - what the files of the client library share: a
 * ps_client, its tensors, their partitions' slots, the stages of fused
 * partitions and the commands queued for the driver, and the calls from
 * one file to another. Not installed; nothing of it is exported from
 * libordo.so (cmake/ordo.map). The DESIGN paragraphs the fields name are
 * here (threads), in client/messages.c (fusion), client/driving.c
 * (driving) and client/device.c (device tensors, GPUDirect).
 *
 * DESIGN (threads). Two threads share a ps_client:
 *  - the application thread calls the API;
 *  - the communication thread joins the job, keeps the heartbeats going
 *    and drives the node (transport, protocol machine) whenever the
 *    application thread does not (client/driving.c, DESIGN driving).
 * They meet in `mu`: while the communication thread drives, the
 * application enqueues commands (push, pull, barrier, done) and wakes the
 * transport; received parameter partitions go into per-partition slots,
 * and `cv` is broadcast. Received bytes are copied into the application's
 * values buffer on the application thread, inside ps_client_wait/pull, so
 * the values never change while the application computes with them.
 * Gradients are sent without copying; each partition sent holds its
 * tensor's `inflight` count until the transport releases the bytes (its
 * free callback, on a ZeroMQ I/O thread, takes `mu`).
 *
 * The transport may be woken from the application thread only while the
 * communication thread runs (`comm_alive`, checked under `mu`; the thread
 * clears it under `mu` before it closes the transport).
 */
#ifndef ORDO_CLIENT_STATE_H
#define ORDO_CLIENT_STATE_H

#include <pthread.h>
#include <stddef.h>
#include <stdint.h>

#include "client/timings.h"
#include "common/config.h"
#include "ordo/ordo.h"
#include "proto/stop.h"
#include "proto/wire.h"
#include "proto/worker.h"
#include "runtime/node.h"
#ifdef PS_WITH_CUDA
#include "client/copy_plan.h"
#endif

typedef enum {
	CMD_PUSH,
	CMD_PULL,
	CMD_BARRIER,
	CMD_DONE,
	CMD_PROGRESS,
	CMD_STOP_READY,
	CMD_TIMINGS, /* payload: the TIMINGS body (model/measured.h) */
} cmd_kind;

/* A push of the whole tensor (cmd.part otherwise: one partition). */
#define PUSH_WHOLE UINT32_MAX

typedef struct cmd {
	cmd_kind kind;
	uint32_t tensor;
	uint32_t part; /* CMD_PUSH: PUSH_WHOLE, or a global partition */
	const float *data;
	uint64_t iteration;
	ps_wire_done done;
	/* CMD_BARRIER: the bytes a broadcast's root sends (malloc'd; the
	 * transport frees them), or NULL */
	void *payload;
	size_t payload_len;
	struct cmd *next;
} cmd;

typedef enum {
	DRIVER_NONE, /* the communication thread is parked */
	DRIVER_COMM,
	DRIVER_APP,
} driver_kind;

typedef enum {
	ST_CREATED,
	ST_JOINING,
	ST_RUNNING,
	ST_SHUTDOWN,
	ST_FAILED,
} client_state;

typedef struct tensor {
	ps_client *client;
	char name[PS_NAME_MAX];
	uint64_t numel;
	float *values;
	uint32_t first_part, nparts;
	uint32_t inflight; /* sent partitions (pieces) not yet released */
	uint32_t push_pieces; /* the pushes of all its partitions, piece by
			       * piece (placement.h, "Pieces") */
	int fused;         /* its one partition holds other tensors too */
	uint64_t part_base; /* fused: its first element in the partition */
	uint64_t copied_seq; /* fused: the arrival it copied out last */
	struct ps_mr *mr;    /* values, registered with the transport */
	ps_msg **detached; /* copy_out's scratch, nparts entries */
	uint32_t *detached_part;
#ifdef PS_WITH_CUDA
	struct dev_tensor *dev; /* in device memory (ps_client_declare_cuda) */
#endif
} tensor;

#ifdef PS_WITH_CUDA
/* A tensor in device memory (ps_client_declare_cuda); how its buffers are
 * used: client/device.c, DESIGN device tensors. */
typedef struct dev_tensor {
	float *dev_values;
	float *mirror, *grad; /* pinned, numel floats each */
	/* GPUDirect RDMA (DESIGN, GPUDirect): the gradient's copy in device
	 * memory registered with the transport, sent from there; NULL when
	 * its pushes are staged through `grad` */
	void *dgrad_alloc;    /* what ps_cuda_alloc gave */
	float *dgrad;         /* its first host-page boundary */
	struct ps_mr *dmr;
	void *app_ev;         /* recorded in the application's stream */
	void *h2d_done;       /* after the last host-to-device copy */
	void **part_ev;       /* per partition: after its device-to-host copy */
	/* per partition (one when fused): written into the mirror since the
	 * client last waited for h2d_done, so its copy to the device may
	 * still be reading it; NULL until the first copy_out */
	uint8_t *dirty;
	ps_copy_step *plan;   /* the copies of a push, in the gate's order */
} dev_tensor;
#endif

typedef struct slot {
	/* communication thread only: the partition's last push, traced */
	uint64_t push_iteration, push_ready_us, push_sent_us;
	/* guarded by mu */
	ps_msg *msg; /* latest PARAMS not yet copied out, or NULL */
	/* communication thread only: parameters arriving in pieces,
	 * gathered here until the last is in (then they are msg) */
	ps_msg *gather;
	uint64_t version;
	uint64_t seq;         /* PARAMS accepted so far */
	uint32_t copies_left; /* fused: member tensors yet to copy msg out */
	int have;         /* a version has arrived */
	int pull_pending; /* async pull sent, no answer yet */
} slot;

/* Learning-rate changes a client remembers: pushes are sent at most a few
 * iterations after they are made, so a push finds its iteration's rate
 * among the newest changes. */
#define LR_KEEP 64

struct ps_client {
	ps_config cfg;
	tensor *tensors;
	uint32_t ntensors, cap;

	pthread_t thread;
	int thread_started;
	pthread_mutex_t mu;
	pthread_cond_t cv;      /* the application waits on it */
	pthread_cond_t comm_cv; /* the parked communication thread waits */
	/* everything below is guarded by mu */
	cmd *head, *tail;
	client_state state;
	int fail_code;
	char fail_why[512]; /* what ended the job (ST_FAILED), as logged */
	int comm_alive;
	int stop;
	driver_kind driver; /* who drives the node (DESIGN, driving) */
	int comm_needed;    /* the communication thread must drive */
	int drive_rc;       /* the application's drive ended the job */
	char drive_why[512]; /* ... and the error it logged ("": none) */
	int wants_release;  /* the application waits for sent bytes to be
			     * released, and for nothing else */
	slot *slots; /* per global partition */
	uint32_t nparts;
	uint32_t fused_inflight; /* staged transfers not yet released */
	uint64_t barriers_done, barriers_asked;
	/* the data the last BARRIER_DONE brought (a broadcast), for the
	 * application; NULL: none */
	void *bcast;
	size_t bcast_len;
	uint64_t bcast_barrier;
	ps_client_stats stats;
	/* tuning (docs/tune.md): the iterations the application began, and
	 * where the job stops (proto/stop.h); cv is broadcast when STOP or
	 * STOP_NOW changes it */
	ps_stop_worker stopping;
	/* 1 + the newest iteration said begun in a PROGRESS (0: none yet):
	 * ps_client_next_iteration says it, and so does the first push of
	 * an iteration where the application never calls it (ordo.torch) */
	uint64_t progress_next;
	/* the first iterations measured for the scheduler's model of the
	 * job (model.measure_iterations, client/timings.h); all zero: off */
	ps_timing_rec timing;

	/* the learning rates set for the servers' optimizer
	 * (ps_client_set_lr): lr[k] from iteration lr_from[k] on, oldest
	 * first, the newest LR_KEEP; guarded by lr_mu (read when a push is
	 * sent) */
	pthread_mutex_t lr_mu;
	uint32_t nlr;
	uint64_t lr_from[LR_KEEP];
	double lr[LR_KEEP];

	/* the driver's (DESIGN, driving); read-only for the application
	 * once state is RUNNING */
	ps_node node;

	/* the protocol: the gate of the pushes, fusion counts, versions
	 * received, DONE after the last ack (proto/worker.h); the driver's */
	ps_wproto *proto;
	/* fusion (the driver's) */
	struct stage **stages; /* per partition: the one being filled */
	/* DONE, encoded, held until every push is acknowledged (applied,
	 * in asynchronous mode: nothing of this worker's is lost at the
	 * end, and a checkpoint at the last iteration sees all of it): the
	 * machine says when; the driver's */
	void *done_body;
	size_t done_len;
	/* synchronous, without a credit window (so far): nothing arrives
	 * that the application does not wait for; the driver's */
	int unwindowed_sync;
#ifdef PS_WITH_CUDA
	/* device tensors (DESIGN, device tensors): their device, -1 while
	 * none is declared; the streams; the gate numbers per partition */
	int cuda_device;
	void *d2h, *h2d;
	uint32_t *numbers;
#endif
};

/* A fused partition's gradients (or initial values) being gathered, then
 * sent; freed by the transport once the bytes are gone. */
typedef struct stage {
	ps_client *client;
	uint32_t refs; /* pieces sent from it (or waiting) not released */
	float data[];
} stage;

/* ---- the calls between the files ---------------------------------------- */

/* client/errors.c: the errors of the public calls (ps_client_last_error) */

/* A public call under way (psi_client_api_begin). */
typedef struct api_call {
	const char *fn;
	unsigned long errors; /* this thread's logged errors at its start */
} api_call;

/* Begins public call fn (its name): the errors logged from here are its. */
api_call psi_client_api_begin(const char *fn);
/* Fails the current public call with rc, logging "FN: reason". */
__attribute__((format(printf, 2, 3))) int
psi_client_api_errf(int rc, const char *fmt, ...);
/* Ends a public call that returned rc (c may be NULL): a failure says why. */
int psi_client_api_end(const api_call *a, const ps_client *c, int rc);
/* Ends a public call whose PS_EAGAIN is no failure: the last error stays. */
void psi_client_api_end_quiet(void);

/* client/driving.c: who drives the node (DESIGN, driving) */

/* psi_client_app_drive's timeout_ms: no receive; every message arrived. */
#define APP_NO_RECV (-2)
#define APP_DRAIN (-3)

/* Frees a command and what it still owns. */
void psi_client_cmd_free(cmd *k);
/* The communication thread: joins the job, then drives until it ends. */
void *psi_client_comm_main(void *arg);
/* The application takes the drive if nobody has it; caller holds mu. */
int psi_client_app_take_drive(ps_client *c, cmd **queued_p);
/* The application drives (mu held, drive taken); gives the drive back. */
int psi_client_app_drive(ps_client *c, cmd *queued, cmd *k, int timeout_ms);

/* client/messages.c: what the driver sends, and what it does with what comes */

/* The job failed with code; why: as logged (NULL: code's). Caller holds mu. */
void psi_client_fail_locked(ps_client *c, int code, const char *why);
/* Sends what the machine wants sent: pushes, PARAMS_ACKs, DONE. */
int psi_client_send_msgs(ps_client *c);
/* Runs one command of the application's (the driver's). */
int psi_client_run_command(ps_client *c, cmd *k);
/* Handles one received message: PS_OK, or PS_ECLOSED on SHUTDOWN. */
int psi_client_handle(ps_client *c, ps_msg *msg, const ps_wire_header *h);
/* Once joined: tensors to partitions, slots, the machine, the servers. */
int psi_client_setup_after_join(ps_client *c);
/* Worker 0 sends its values as the initial parameters. */
int psi_client_send_initial_values(ps_client *c);
/* The pieces partition `part` is pushed in (1: whole). */
uint32_t psi_client_push_pieces_of(const ps_client *c, uint32_t part);
/* ps_wproto_foreach_waiting's callback: drops a stage's ref. */
void psi_client_free_waiting(void *ctx, int fused, void *ud);

/* client/client.c: the public calls, on the application thread */

/* Waits on cv, or drives, until deadline_ms (< 0: none); caller holds mu. */
int psi_client_wait_until(ps_client *c, int64_t deadline_ms);
/* The checks of a new tensor's declaration: PS_OK, or the call's error. */
int psi_client_declare_check(const ps_client *c, const char *name,
			     uint64_t numel, const float *values);
/* Declares a tensor whose values are in host memory at `values`. */
int psi_client_declare(ps_client *c, const char *name, uint64_t numel,
		       float *values, uint32_t *tensor_p);
/* The checks of a call on a declared tensor: PS_OK, or the call's error. */
int psi_client_tensor_check(const ps_client *c, uint32_t tensor_id);
/* A gradient (part: PUSH_WHOLE, or one partition) enters the machine. */
int psi_client_push_cmd(ps_client *c, uint32_t tensor_id, const float *grad,
			uint64_t iteration, uint32_t part);
/* ps_client_try's work: copied out, or PS_EAGAIN while it is not there. */
int psi_client_try_params(ps_client *c, uint32_t tensor_id, uint64_t version);

#ifdef PS_WITH_CUDA
/* client/device.c: tensors in device memory */

/* Frees a device tensor's resources (d may be NULL). */
void psi_client_dev_free(ps_client *c, dev_tensor *d, uint32_t nparts);
/* GPUDirect RDMA for the device tensors that can have it, once joined. */
void psi_client_dev_direct_all(ps_client *c);
/* Partition k of t's mirror is to be written: waits for its last copy. */
int psi_client_dev_before_write(ps_client *c, tensor *t, uint32_t k);
/* Elements offset .. offset + numel of t's mirror go to device memory. */
int psi_client_dev_copy_in(ps_client *c, tensor *t, uint64_t offset,
			   uint64_t numel, int last);
#endif

#endif /* ORDO_CLIENT_STATE_H */
