/*
 * tune/job.c - ps-tune's trials on the real job (backend.h).
 *
 * DESIGN. ps-tune listens on a transport endpoint of its own and starts
 * ps-launch with --set tune.endpoint=THAT, so the job's scheduler
 * connects to it (scheduler/tuner.c): it says where it listens
 * (TUNE_HELLO), then reports PROGRESS(i) when every worker has
 * begun iteration i. ps-tune timestamps those on arrival: a trial's
 * throughput is measure_iterations * workers * batch over the time from
 * PROGRESS(a) to PROGRESS(a + measure_iterations), a = the trial's first
 * iteration + warmup_iterations. A new credit goes to the scheduler
 * (CREDIT), which picks the iteration boundary every sender applies it
 * at and says which: the trial starts there. A new partition size stops
 * the job (STOP): the scheduler picks an iteration, the servers
 * checkpoint it and the workers stop before it, ps-launch exits 0, and
 * ps-tune starts the job again from that checkpoint. Nothing is lost or
 * applied twice: the checkpoint holds exactly the iterations before it.
 *
 * ps-launch's (or --launcher's) end (SIGCHLD) wakes the transport, so
 * one blocking receive waits for both. The clock is CLOCK_MONOTONIC.
 */
#include <errno.h>
#include <limits.h>
#include <math.h>
#include <signal.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>

#include "checkpoint/checkpoint.h"
#include "common/cli.h"
#include "common/log.h"
#include "runtime/clock.h"
#include "runtime/node.h"
#include "runtime/signals.h"
#include "proto/wire.h"
#include "model/dag.h"
#include "transport/transport.h"
#include "tune/backend.h"

#define NO_TIME (-1)

struct tune_job {
	const ps_config *cfg;
	tune_job_opts o;
	char bindir[PATH_MAX];
	char prog[PATH_MAX + 16]; /* what starts the job: ps-launch or
				     --launcher */
	char ckpt_dir[PS_CFG_STR + 16];
	double samples_per_iteration; /* workers * batch */
	ps_transport *t;
	char endpoint[PS_ENDPOINT_MAX];
	/* the job now running */
	pid_t pid;     /* ps-launch or --launcher; 0: none */
	int status;    /* its exit status, once it ended */
	int attached;
	uint64_t job_id;
	ps_peer sched;
	tune_pair pair;
	uint64_t first;       /* the iteration it started at */
	int have_first;
	uint64_t progress;    /* highest PROGRESS */
	int64_t *at_ns;       /* per iteration: when PROGRESS said it */
	uint64_t nat;
	uint64_t credit_from; /* CREDIT's answer, 0: none yet */
	uint64_t stop_at;     /* STOP's answer, 0: none yet */
	int64_t ended_ns;     /* when the last job's last PROGRESS came */
};

static ps_transport *volatile chld_wake;

static void on_sigchld(int sig)
{
	(void)sig;
	if (chld_wake)
		ps_transport_wake(chld_wake);
}

/* ps-launch, or the --launcher's file name, for messages. */
static const char *launcher_name(const tune_job *j)
{
	const char *slash = strrchr(j->prog, '/');

	return slash ? slash + 1 : j->prog;
}

static int64_t at(const tune_job *j, uint64_t it)
{
	return it < j->nat ? j->at_ns[it] : NO_TIME;
}

static void note_progress(tune_job *j, uint64_t it)
{
	int64_t now = (int64_t)ps_now_ns();

	if (!j->have_first) {
		j->first = it;
		j->have_first = 1;
	}
	if (it > j->progress)
		j->progress = it;
	if (it >= j->nat) {
		uint64_t n = it + 64;
		int64_t *a = realloc(j->at_ns, n * sizeof(*a));
		if (!a)
			return; /* this one is not timed: a later one is */
		for (uint64_t i = j->nat; i < n; i++)
			a[i] = NO_TIME;
		j->at_ns = a;
		j->nat = n;
	}
	if (j->at_ns[it] == NO_TIME)
		j->at_ns[it] = now;
}

/* The scheduler said hello: connect back and attach. */
static void attach(tune_job *j, const ps_msg *msg, const ps_wire_header *h)
{
	char ep[PS_REASON_MAX], why[256];
	ps_wire_header back = {.version = PS_WIRE_VERSION,
			       .type = PS_MSG_TUNE_HELLO,
			       .job_id = h->job_id,
			       .iteration = h->iteration}; /* its nonce */
	uint8_t buf[PS_WIRE_HEADER_MAX];
	size_t len;
	int rc;

	if (ps_wire_reason_decode(msg->payload, msg->payload_len, ep,
				  sizeof(ep), why, sizeof(why)) != PS_OK) {
		PS_WARN("a malformed TUNE_HELLO: %s", why);
		return;
	}
	rc = ps_transport_connect(j->t, ep, &j->sched);
	if (rc == PS_OK)
		rc = ps_wire_header_encode(&back, buf, sizeof(buf), &len);
	if (rc == PS_OK)
		rc = ps_transport_send(j->t, j->sched, buf, len, NULL, 0, NULL,
				       NULL);
	if (rc != PS_OK) {
		PS_WARN("cannot answer the scheduler at %s: %s", ep,
			ps_strerror(rc));
		return;
	}
	j->job_id = h->job_id;
	j->attached = 1;
}

static int send_sched(tune_job *j, uint32_t type, void *body, size_t blen)
{
	ps_wire_header h = {.version = PS_WIRE_VERSION,
			    .type = type,
			    .job_id = j->job_id,
			    .payload_len = blen};
	uint8_t buf[PS_WIRE_HEADER_MAX];
	size_t len;
	int rc = ps_wire_header_encode(&h, buf, sizeof(buf), &len);

	if (rc == PS_OK)
		rc = ps_transport_send(j->t, j->sched, buf, len, body, blen,
				       body ? ps_wire_free : NULL, NULL);
	if (rc != PS_OK)
		free(body);
	return rc;
}

/* Waits for one event: a message, the job's end, or a signal.
 * PS_ECLOSED once the job has ended (j->status), PS_EINTR on a signal. */
static int step(tune_job *j)
{
	ps_msg *msg = NULL;
	ps_wire_header h;
	char why[256];
	int rc, ws;

	if (j->pid > 0 && waitpid(j->pid, &ws, WNOHANG) == j->pid) {
		j->status = WIFEXITED(ws) ? WEXITSTATUS(ws)
					  : 128 + WTERMSIG(ws);
		j->pid = 0;
		j->attached = 0;
		j->ended_ns = j->progress < j->nat &&
				      at(j, j->progress) != NO_TIME
			      ? at(j, j->progress)
			      : (int64_t)ps_now_ns();
	}
	if (j->pid == 0)
		return PS_ECLOSED;
	if (ps_signal_pending())
		return PS_EINTR;
	/* the timeout only guards against a lost SIGCHLD wake-up */
	rc = ps_transport_recv(j->t, 1000, &msg);
	if (rc == PS_ETIMEDOUT || rc == PS_EAGAIN)
		return PS_OK;
	if (rc != PS_OK)
		return rc;
	if (ps_wire_header_decode(msg->hdr, msg->hdr_len, &h, why,
				  sizeof(why)) != PS_OK ||
	    h.sender != 0) {
		ps_msg_free(&msg);
		return PS_OK;
	}
	if (h.type == PS_MSG_TUNE_HELLO)
		attach(j, msg, &h);
	else if (!j->attached || h.job_id != j->job_id)
		; /* not this job's: dropped */
	else if (h.type == PS_MSG_PROGRESS)
		note_progress(j, h.iteration);
	else if (h.type == PS_MSG_CREDIT)
		j->credit_from = h.iteration;
	else if (h.type == PS_MSG_STOP)
		j->stop_at = h.iteration;
	ps_msg_free(&msg);
	return PS_OK;
}

/* Steps until the iteration `it` has begun (PROGRESS(it) timed). */
static int wait_iteration(tune_job *j, uint64_t it)
{
	int rc = PS_OK;

	while (rc == PS_OK && at(j, it) == NO_TIME)
		rc = step(j);
	return rc;
}

static void add_arg(char **argv, int *k, const char *fmt, ...)
	__attribute__((format(printf, 3, 4)));
static void add_arg(char **argv, int *k, const char *fmt, ...)
{
	va_list ap;
	char *s = NULL;

	va_start(ap, fmt);
	if (vasprintf(&s, fmt, ap) < 0)
		s = NULL;
	va_end(ap);
	if (s)
		argv[(*k)++] = s;
}

/* Starts ps-launch (or --launcher) with the pair, from the newest
 * checkpoint if any. */
static int launch(tune_job *j, tune_pair pair)
{
	static const char *const own_opts[] = {"--backend", "--launcher"};
	const char *path = j->prog;
	char latest[PS_CKPT_PATH_MAX];
	char **argv = calloc((size_t)j->o.argc + 32, sizeof(*argv));
	int k = 0, own;
	uint64_t it = 0;
	pid_t pid;

	if (!argv)
		return PS_ENOMEM;
	argv[k++] = (char *)path;
	for (int i = 1; i < j->o.argc; i++) {
		const char *a = j->o.argv[i];
		int mine = 0;

		/* ps-tune's own options, --name X or --name=X */
		for (size_t o = 0; o < sizeof(own_opts) / sizeof(*own_opts);
		     o++) {
			size_t n = strlen(own_opts[o]);
			if (strcmp(a, own_opts[o]) == 0)
				mine = 2; /* and its argument */
			else if (strncmp(a, own_opts[o], n) == 0 &&
				 a[n] == '=')
				mine = 1;
		}
		if (mine) {
			i += mine - 1;
			continue;
		}
		argv[k++] = j->o.argv[i];
	}
	own = k;
	add_arg(argv, &k, "--set");
	add_arg(argv, &k, "scheduling.partition_size=%llu",
		(unsigned long long)pair.partition);
	add_arg(argv, &k, "--set");
	add_arg(argv, &k, "scheduling.credit_size=%llu",
		(unsigned long long)pair.credit);
	add_arg(argv, &k, "--set");
	add_arg(argv, &k, "tune.endpoint=%s", j->endpoint);
	add_arg(argv, &k, "--set");
	add_arg(argv, &k, "checkpoint.dir=%s", j->ckpt_dir);
	add_arg(argv, &k, "--set");
	add_arg(argv, &k, "fault.restarts=0"); /* ps-tune restarts */
	if (ps_ckpt_latest(j->ckpt_dir, latest, sizeof(latest), &it) ==
	    PS_OK) {
		add_arg(argv, &k, "--set");
		add_arg(argv, &k, "checkpoint.resume=%s", latest);
	}
	fflush(NULL);
	pid = fork();
	if (pid == 0) {
		signal(SIGCHLD, SIG_DFL);
		execv(path, argv);
		fprintf(stderr, "ps-tune: cannot run %s: %s\n", path,
			strerror(errno));
		_exit(127);
	}
	for (int i = own; i < k; i++)
		free(argv[i]);
	free(argv);
	if (pid < 0) {
		PS_ERROR("cannot start %s: %s", path, strerror(errno));
		return PS_EIO;
	}
	j->pid = pid;
	j->status = 0;
	j->attached = 0;
	j->have_first = 0;
	j->progress = 0;
	j->credit_from = j->stop_at = 0;
	for (uint64_t i = 0; i < j->nat; i++)
		j->at_ns[i] = NO_TIME;
	j->pair = pair;
	return PS_OK;
}

/* The job ran every iteration of train.iterations and ended well. */
static int finished(const tune_job *j)
{
	return !j->pid && j->status == 0 &&
	       j->progress >= (uint64_t)j->cfg->train.iterations;
}

/* Stops the running job at a checkpoint: PS_OK when it stopped there,
 * PS_ECLOSED when it ended by itself first (train.iterations). */
static int stop(tune_job *j)
{
	int rc = PS_OK;

	if (!j->pid)
		return finished(j) ? PS_ECLOSED : PS_OK;
	while (rc == PS_OK && !j->attached)
		rc = step(j);
	/* the job may end by itself meanwhile: then the send fails or
	 * goes nowhere, and its end is what comes next either way */
	if (rc == PS_OK && send_sched(j, PS_MSG_STOP, NULL, 0) != PS_OK)
		PS_DEBUG("STOP not sent: the job is ending");
	while (rc == PS_OK)
		rc = step(j);
	if (rc != PS_ECLOSED)
		return rc;
	if (j->status != 0) {
		PS_ERROR("the job failed while stopping for a restart "
			 "(%s exit %d)", launcher_name(j), j->status);
		return PS_EABORTED;
	}
	return finished(j) ? PS_ECLOSED : PS_OK;
}

/* Measures from iteration `from` on: warm-up, then the measured ones. */
static int measure(tune_job *j, uint64_t from, tune_trial *tr)
{
	uint64_t a = from + (uint64_t)j->cfg->tune.warmup_iterations;
	uint64_t b = a + (uint64_t)j->cfg->tune.measure_iterations;
	int rc = wait_iteration(j, b);
	double s;

	if (rc != PS_OK)
		return rc;
	s = (double)(at(j, b) - at(j, a)) / 1e9;
	if (at(j, a) == NO_TIME || s <= 0.0)
		return PS_EIO;
	tr->first = a;
	tr->last = b;
	tr->samples_per_s = (double)(b - a) * j->samples_per_iteration / s;
	tr->ok = 1;
	return PS_OK;
}

int tune_job_trial(tune_job *j, tune_trial *tr)
{
	int restart = !j->pid || tr->pair.partition != j->pair.partition;
	int64_t t0 = (int64_t)ps_now_ns();
	uint64_t from;
	int rc = PS_OK;

	if (restart) {
		int fresh = !j->pid && j->ended_ns == 0;
		rc = stop(j);
		if (rc == PS_EINTR)
			return rc;
		if (rc == PS_EABORTED) /* a failed job: from its checkpoint */
			rc = PS_OK;
		if (rc == PS_OK)
			rc = launch(j, tr->pair);
		while (rc == PS_OK && !j->have_first)
			rc = step(j);
		snprintf(tr->how, sizeof(tr->how), fresh ? "start" : "restart");
		if (rc == PS_OK) {
			/* the job stood still from the old job's last
			 * iteration to the new one's first */
			tr->switch_s = fresh ? 0.0
					     : (double)(at(j, j->first) -
							(j->ended_ns ? j->ended_ns
								     : t0)) /
						       1e9;
			from = j->first;
		}
	} else {
		void *body;
		size_t len;

		snprintf(tr->how, sizeof(tr->how), "credit");
		rc = ps_wire_u64_encode(tr->pair.credit, &body, &len);
		while (rc == PS_OK && !j->attached)
			rc = step(j);
		j->credit_from = 0;
		if (rc == PS_OK)
			rc = send_sched(j, PS_MSG_CREDIT, body, len);
		while (rc == PS_OK && !j->credit_from)
			rc = step(j);
		if (rc == PS_OK)
			rc = wait_iteration(j, j->credit_from);
		if (rc == PS_OK) {
			tr->switch_s = (double)(at(j, j->credit_from) - t0) /
				       1e9;
			from = j->credit_from;
			j->pair = tr->pair;
		}
	}
	if (rc == PS_OK)
		rc = measure(j, from, tr);
	if (rc == PS_OK || rc == PS_EINTR)
		return rc;
	if (rc == PS_ECLOSED && j->status == 0) {
		snprintf(tr->note, sizeof(tr->note), "the job ended "
			 "(train.iterations) before the trial was measured");
		return PS_ECLOSED;
	}
	tr->ok = 0;
	if (rc == PS_ECLOSED)
		snprintf(tr->note, sizeof(tr->note), "the job failed during "
			 "the trial (%.40s exit %d, its log above); the "
			 "next trial resumes from the newest checkpoint",
			 launcher_name(j), j->status);
	else
		snprintf(tr->note, sizeof(tr->note), "%s", ps_strerror(rc));
	return PS_OK;
}

int tune_job_finish(tune_job *j, const tune_pair *best)
{
	int rc = PS_OK;

	if (j->cfg->tune.then == PS_TUNE_THEN_STOP || !best) {
		rc = stop(j);
		if (rc == PS_OK)
			printf("ps-tune: the job stopped at iteration %llu, "
			       "checkpointed in %s\n",
			       (unsigned long long)j->progress, j->ckpt_dir);
		return rc == PS_OK || rc == PS_ECLOSED ? 0
		       : rc == PS_EINTR		     ? 130
						     : 1;
	}
	if (finished(j))
		return 0;
	if (j->pid && best->partition == j->pair.partition) {
		if (best->credit != j->pair.credit) {
			void *body;
			size_t len;
			rc = ps_wire_u64_encode(best->credit, &body, &len);
			if (rc == PS_OK)
				rc = send_sched(j, PS_MSG_CREDIT, body, len);
		}
	} else {
		rc = stop(j);
		if (rc == PS_EABORTED)
			rc = PS_OK; /* it goes on from its checkpoint */
		if (rc == PS_OK)
			rc = launch(j, *best);
		else if (rc == PS_ECLOSED)
			return 0; /* it ended by itself meanwhile */
	}
	while (rc == PS_OK)
		rc = step(j);
	if (rc == PS_EINTR)
		return 130;
	return rc == PS_ECLOSED ? j->status : 1;
}

static int check_dir_writable(const char *dir)
{
	char probe[PS_CFG_STR + 32], why[512];
	uint64_t newer = 0;
	uint32_t removed = 0;
	FILE *f;

	if (ps_ckpt_prepare_root(dir, 0, &newer, &removed, why,
				 sizeof(why)) != PS_OK) {
		PS_ERROR("checkpoint.dir %s: %s", dir, why);
		return PS_EIO;
	}
	snprintf(probe, sizeof(probe), "%s/.ps-tune-probe", dir);
	f = fopen(probe, "w");
	if (!f || fclose(f) != 0) {
		PS_ERROR("checkpoint.dir %s is not writable: %s (ps-tune "
			 "restarts the job from checkpoints there)", dir,
			 strerror(errno));
		return PS_EIO;
	}
	remove(probe);
	return PS_OK;
}

int tune_job_create(const ps_config *cfg, const tune_job_opts *o,
		    tune_job **j_p)
{
	tune_job *j = calloc(1, sizeof(*j));
	uint64_t need, start = 0;
	char latest[PS_CKPT_PATH_MAX];
	struct sigaction sa;
	uint64_t tid;
	int rc;

	if (!j)
		return PS_ENOMEM;
	*j_p = j;
	j->cfg = cfg;
	j->o = *o;
	if (ps_cli_bin_dir(j->bindir, sizeof(j->bindir)) != PS_OK) {
		PS_ERROR("cannot find ps-tune's own directory");
		return PS_EIO;
	}
	if (o->launcher[0])
		snprintf(j->prog, sizeof(j->prog), "%s", o->launcher);
	else
		snprintf(j->prog, sizeof(j->prog), "%s/ps-launch", j->bindir);
	if (cfg->checkpoint.dir[0])
		snprintf(j->ckpt_dir, sizeof(j->ckpt_dir), "%s",
			 cfg->checkpoint.dir);
	else
		snprintf(j->ckpt_dir, sizeof(j->ckpt_dir), "%s/checkpoints",
			 cfg->output.dir);
	if (check_dir_writable(j->ckpt_dir) != PS_OK)
		return PS_EIO;
	if (ps_ckpt_latest(j->ckpt_dir, latest, sizeof(latest), &start) ==
		    PS_OK &&
	    !cfg->checkpoint.resume[0]) {
		PS_ERROR("checkpoint.dir %s holds checkpoints (newest: "
			 "iteration %llu): to go on from them, set "
			 "checkpoint.resume=latest; to start afresh, use an "
			 "empty directory", j->ckpt_dir,
			 (unsigned long long)start);
		return PS_EINVAL;
	}
	need = (uint64_t)cfg->tune.trials *
	       (uint64_t)(cfg->tune.warmup_iterations +
			  cfg->tune.measure_iterations + 2);
	if ((uint64_t)cfg->train.iterations < start + need) {
		PS_ERROR("train.iterations = %d leaves %llu iterations after "
			 "the start (%llu); tune.trials = %d of "
			 "warmup_iterations + measure_iterations + 2 = %d "
			 "each need %llu: raise train.iterations or lower "
			 "tune.trials", cfg->train.iterations,
			 (unsigned long long)((uint64_t)cfg->train.iterations >
						      start
					      ? cfg->train.iterations - start
					      : 0),
			 (unsigned long long)start, cfg->tune.trials,
			 cfg->tune.warmup_iterations +
				 cfg->tune.measure_iterations + 2,
			 (unsigned long long)need);
		return PS_EINVAL;
	}
	if (cfg->worker.mode == PS_WORKER_REPLAY) {
		ps_dag *dag = NULL;
		char err[512];
		if (ps_dag_load(cfg->model.file, cfg->model.compute_scale,
				&dag, err, sizeof(err)) != PS_OK) {
			PS_ERROR("cannot load model.file: %s", err);
			return PS_EINVAL;
		}
		j->samples_per_iteration =
			(double)dag->batch * cfg->cluster.workers;
		ps_dag_free(&dag);
	} else {
		j->samples_per_iteration =
			(double)cfg->train.batch * cfg->cluster.workers;
	}
	/* the jobs' ps-launch finds the secret made here, so every run
	 * shares it with this process's endpoint */
	char why[1024];
	int made;
	rc = ps_job_secret_ensure(cfg, 1, NULL, &made, why, sizeof(why));
	if (rc != PS_OK) {
		PS_ERROR("%s", why);
		return rc;
	}
	rc = ps_job_transport_create(cfg, &tid, &j->t);
	if (rc == PS_OK)
		rc = ps_transport_listen(j->t, "127.0.0.1", 0, NULL,
					 j->endpoint, sizeof(j->endpoint));
	if (rc != PS_OK) {
		PS_ERROR("cannot listen for the scheduler: %s",
			 ps_strerror(rc));
		return rc;
	}
	ps_signals_set_wake(j->t);
	chld_wake = j->t;
	memset(&sa, 0, sizeof(sa));
	sa.sa_handler = on_sigchld;
	sa.sa_flags = SA_RESTART | SA_NOCLDSTOP;
	sigaction(SIGCHLD, &sa, NULL);
	return PS_OK;
}

void tune_job_free(tune_job **j_p)
{
	tune_job *j = j_p ? *j_p : NULL;

	if (!j)
		return;
	if (j->pid > 0) { /* a signal or an error: the job goes too */
		int ws;
		kill(j->pid, SIGTERM);
		waitpid(j->pid, &ws, 0);
	}
	chld_wake = NULL;
	signal(SIGCHLD, SIG_DFL);
	ps_signals_set_wake(NULL);
	ps_transport_destroy(&j->t, 0);
	free(j->at_ns);
	free(j);
	*j_p = NULL;
}
