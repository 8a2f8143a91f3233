/*
 * launch/ps_launch.c - ps-launch: a whole job on this machine.
 *
 * Starts one ps-scheduler, cluster.servers ps-server and cluster.workers
 * ps-worker processes (the binaries beside ps-launch), all with the same
 * command-line arguments, and exits with the job's status. With
 * cluster.scheduler_port = 0 the scheduler binds an ephemeral port and
 * reports it through a pipe (--ready-fd); the others get it with --set, so
 * jobs never collide on a port.
 *
 * Progress: the scheduler writes "progress N" lines on the --ready-fd
 * pipe after the port (coordinator.h); shown as one line rewritten in
 * place when stderr is a terminal, as plain lines at every 10% otherwise.
 *
 * Failure handling: when a process fails, the others normally stop by
 * themselves (the scheduler aborts the job within the heartbeat timeout);
 * those still running after that grace period get SIGTERM, then SIGKILL.
 * SIGINT/SIGTERM to ps-launch are forwarded to every process, SIGUSR1 (a
 * checkpoint, now) to the scheduler. Nothing is left running when
 * ps-launch exits. Exit status: 0 if every process exited 0, else the
 * first failure's status (128 + signal for a signal).
 *
 * Recovery (fault.restarts = N): when a process of the job fails, the
 * others are stopped at once and the whole job starts again from the
 * newest complete checkpoint under checkpoint.dir (--set
 * checkpoint.resume=DIR appended to the arguments), at most N times; one
 * line says what died and what the job resumed from.
 *
 * Across machines, start the same binaries with any launcher (ssh, srun,
 * mpirun) instead: see the README.
 */
#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <poll.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include "checkpoint/checkpoint.h"
#include "common/cli.h"
#include "common/log.h"
#include "runtime/clock.h"
#include "runtime/signals.h"
#include "runtime/trace.h"
#include "transport/keys.h"

typedef struct child {
	pid_t pid;
	char name[32];
	int status; /* exit status once exited */
	int exited;
} child;

typedef struct launch {
	char dir[PATH_MAX];
	int argc;
	char **argv;
	child *children;
	int nchildren;
	const char *worker; /* --worker PROGRAM, NULL: ps-worker */
	int failed_status;  /* first failure's status, 0 if none */
	int64_t failed_at_ms;
	child failed;       /* the first process that failed */
	int stop_at_once;   /* on a failure, stop the others now (recovery) */
	/* the scheduler's "progress N" lines (coordinator.h), shown as one
	 * live line on a terminal, plain lines every 10% otherwise */
	int progress_fd;
	char pbuf[256];
	size_t plen;
	uint64_t p_first, p_last;
	int64_t p_first_ms, p_shown_ms;
	int p_tty, p_line_open;
	char keys_dir[PATH_MAX]; /* a per-job key pair made here, or "" */
	char keys_set[PATH_MAX + 32]; /* "security.keys_dir=..." */
} launch;

/* Starts DIR/prog with our arguments plus extra ones. */
static int spawn(launch *l, const char *prog, const char *name,
		 const char *const *extra, int nextra)
{
	char path[PATH_MAX + 32];
	char **argv = calloc((size_t)(l->argc + nextra + 3), sizeof(*argv));
	child *ch = &l->children[l->nchildren];
	pid_t pid;

	if (!argv)
		return PS_ENOMEM;
	if (prog[0] == '/')
		snprintf(path, sizeof(path), "%s", prog);
	else
		snprintf(path, sizeof(path), "%s/%s", l->dir, prog);
	argv[0] = path;
	int k = 1;
	for (int i = 1; i < l->argc; i++) {
		if (strcmp(l->argv[i], "--worker") == 0) {
			i++; /* ps-launch's own option and its argument */
			continue;
		}
		if (strncmp(l->argv[i], "--worker=", 9) == 0)
			continue;
		argv[k++] = l->argv[i];
	}
	for (int i = 0; i < nextra; i++)
		argv[k++] = (char *)extra[i];
	if (l->keys_set[0]) {
		argv[k++] = "--set";
		argv[k++] = l->keys_set;
	}
	fflush(NULL);
	pid = fork();
	if (pid < 0) {
		PS_ERROR("cannot start %s: %s", name, strerror(errno));
		free(argv);
		return PS_EIO;
	}
	if (pid == 0) {
		struct sigaction sa;
		memset(&sa, 0, sizeof(sa));
		sa.sa_handler = SIG_DFL;
		sigaction(SIGINT, &sa, NULL);
		sigaction(SIGTERM, &sa, NULL);
		execv(path, argv);
		fprintf(stderr, "ps-launch: cannot run %s: %s\n", path,
			strerror(errno));
		_exit(127);
	}
	free(argv);
	*ch = (child){.pid = pid};
	snprintf(ch->name, sizeof(ch->name), "%s", name);
	l->nchildren++;
	return PS_OK;
}

static int status_of(int wstatus)
{
	if (WIFEXITED(wstatus))
		return WEXITSTATUS(wstatus);
	if (WIFSIGNALED(wstatus))
		return 128 + WTERMSIG(wstatus);
	return 1;
}

static void signal_all(launch *l, int sig)
{
	for (int i = 0; i < l->nchildren; i++)
		if (!l->children[i].exited)
			kill(l->children[i].pid, sig);
}

static int running_count(const launch *l)
{
	int n = 0;
	for (int i = 0; i < l->nchildren; i++)
		n += !l->children[i].exited;
	return n;
}

static void reap(launch *l)
{
	int wstatus;
	pid_t pid;

	while ((pid = waitpid(-1, &wstatus, WNOHANG)) > 0) {
		for (int i = 0; i < l->nchildren; i++) {
			child *ch = &l->children[i];
			if (ch->pid != pid)
				continue;
			ch->exited = 1;
			ch->status = status_of(wstatus);
			if (ch->status != 0) {
				fprintf(stderr, "ps-launch: %s (pid %d) "
					"exited with status %d\n", ch->name,
					(int)pid, ch->status);
				if (!l->failed_status) {
					l->failed_status = ch->status;
					l->failed_at_ms = ps_now_ms();
					l->failed = *ch;
				}
			}
		}
	}
}

/* "it/s, time left" for the progress line. */
static void progress_rate(const launch *l, uint64_t n, int total, char *buf,
			  size_t cap)
{
	double secs = (double)(ps_now_ms() - l->p_first_ms) / 1000.0;
	double rate = secs > 0 ? (double)(n - l->p_first) / secs : 0.0;
	if (rate > 0 && (uint64_t)total > n)
		snprintf(buf, cap, ", %.1f it/s, %.0f s left", rate,
			 (double)((uint64_t)total - n) / rate);
	else if (rate > 0)
		snprintf(buf, cap, ", %.1f it/s", rate);
	else
		buf[0] = '\0';
}

/* One "progress N" from the scheduler: every worker has finished N of
 * train.iterations. A terminal gets one line rewritten in place (at most
 * 4 times a second); anything else a plain line at every 10%. */
static void show_progress(launch *l, const ps_config *cfg, uint64_t n)
{
	int total = cfg->train.iterations;
	char rate[80];
	int64_t now = ps_now_ms();

	if (!l->p_first_ms) {
		l->p_first = n;
		l->p_first_ms = now;
	}
	uint64_t before = l->p_last;
	l->p_last = n;
	progress_rate(l, n, total, rate, sizeof(rate));
	if (l->p_tty) {
		if (now - l->p_shown_ms < 250 && n < (uint64_t)total)
			return;
		l->p_shown_ms = now;
		fprintf(stderr, "\rps-launch: iteration %llu/%d%s\033[K",
			(unsigned long long)n, total, rate);
		l->p_line_open = 1;
	} else if (total > 0 && (n * 10 / (uint64_t)total >
				 before * 10 / (uint64_t)total)) {
		fprintf(stderr, "ps-launch: iteration %llu/%d (%llu%%)%s\n",
			(unsigned long long)n, total,
			(unsigned long long)(n * 100 / (uint64_t)total), rate);
	}
	fflush(stderr);
}

/* Reads what the scheduler's pipe has (never blocks). */
static void read_progress(launch *l, const ps_config *cfg)
{
	if (l->progress_fd < 0)
		return;
	for (;;) {
		ssize_t n = read(l->progress_fd, l->pbuf + l->plen,
				 sizeof(l->pbuf) - 1 - l->plen);
		if (n <= 0) {
			if (n == 0 || (errno != EAGAIN && errno != EINTR)) {
				close(l->progress_fd); /* the scheduler ended */
				l->progress_fd = -1;
			}
			break;
		}
		l->plen += (size_t)n;
		l->pbuf[l->plen] = '\0';
		char *nl;
		while ((nl = strchr(l->pbuf, '\n'))) {
			unsigned long long v;
			*nl = '\0';
			if (sscanf(l->pbuf, "progress %llu", &v) == 1)
				show_progress(l, cfg, v);
			size_t used = (size_t)(nl + 1 - l->pbuf);
			memmove(l->pbuf, nl + 1, l->plen - used + 1);
			l->plen -= used;
		}
		if (l->plen == sizeof(l->pbuf) - 1)
			l->plen = 0; /* a line that long is not ours */
	}
}

/* Waits for every child; enforces the grace period after a failure. */
static void supervise(launch *l, const ps_config *cfg)
{
	int64_t grace = cfg->cluster.heartbeat_timeout_ms + 5000;
	int forwarded = 0, termed = 0;
	struct timespec tick = {0, 20 * 1000 * 1000};

	while (running_count(l) > 0) {
		read_progress(l, cfg);
		reap(l);
		if (ps_signal_take_usr1() && l->nchildren > 0 &&
		    !l->children[0].exited) {
			fprintf(stderr, "ps-launch: SIGUSR1: asking the "
				"scheduler for a checkpoint\n");
			kill(l->children[0].pid, SIGUSR1);
		}
		if (l->failed_status && l->stop_at_once && !termed) {
			signal_all(l, SIGTERM);
			termed = 1;
			grace = 0;
		}
		if (ps_signal_pending() && !forwarded) {
			fprintf(stderr, "ps-launch: signal %d: stopping the "
				"job\n", ps_signal_pending());
			signal_all(l, SIGTERM);
			forwarded = 1;
			l->failed_at_ms = ps_now_ms();
			grace = 5000;
		}
		if ((l->failed_status || forwarded) && running_count(l) > 0) {
			int64_t waited = ps_now_ms() - l->failed_at_ms;
			if (waited > grace && !termed) {
				fprintf(stderr, "ps-launch: %d process(es) "
					"still running %lld ms after the "
					"failure: sending SIGTERM\n",
					running_count(l), (long long)waited);
				signal_all(l, SIGTERM);
				termed = 1;
			} else if (waited > grace + 3000) {
				signal_all(l, SIGKILL);
			}
		}
		nanosleep(&tick, NULL);
	}
	read_progress(l, cfg);
	if (l->progress_fd >= 0) {
		close(l->progress_fd);
		l->progress_fd = -1;
	}
	if (l->p_line_open) {
		fputc('\n', stderr);
		l->p_line_open = 0;
	}
}

/* Reads the scheduler's port from the pipe. */
static int read_port(int fd, int timeout_ms, char *port, size_t cap)
{
	struct pollfd pfd = {.fd = fd, .events = POLLIN};
	size_t len = 0;
	int64_t deadline = ps_now_ms() + timeout_ms;

	while (len + 1 < cap) {
		int64_t left = deadline - ps_now_ms();
		ssize_t n;
		if (left <= 0 || poll(&pfd, 1, (int)left) <= 0)
			return PS_ETIMEDOUT;
		n = read(fd, port + len, cap - 1 - len);
		if (n <= 0)
			break;
		len += (size_t)n;
		if (memchr(port, '\n', len))
			break;
	}
	port[len] = '\0';
	port[strcspn(port, "\n")] = '\0';
	return len > 0 ? PS_OK : PS_EIO;
}

static int start_scheduler(launch *l, const ps_config *cfg, char *port,
			   size_t cap, const char *resume)
{
	char fdarg[16];
	const char *extra[4] = {"--ready-fd", fdarg, "--set", resume};
	int fds[2], rc;

	if (pipe(fds) != 0)
		return PS_EIO;
	snprintf(fdarg, sizeof(fdarg), "%d", fds[1]);
	rc = spawn(l, "ps-scheduler", "scheduler", extra, resume ? 4 : 2);
	close(fds[1]);
	if (rc == PS_OK) {
		rc = read_port(fds[0], cfg->cluster.connect_timeout_ms, port,
			       cap);
		if (rc != PS_OK)
			fprintf(stderr, "ps-launch: the scheduler did not "
				"start listening\n");
	}
	int fl = fcntl(fds[0], F_GETFL);
	if (rc == PS_OK && fl >= 0 &&
	    fcntl(fds[0], F_SETFL, fl | O_NONBLOCK) == 0) {
		l->progress_fd = fds[0]; /* "progress N" lines follow */
		l->plen = 0;
		l->p_first_ms = 0;
		l->p_last = 0;
	} else {
		close(fds[0]);
	}
	return rc;
}

static int on_opt(void *ud, const char *name, const char *arg, char *err,
		  size_t errlen)
{
	launch *l = ud;

	if (strcmp(name, "worker") != 0 || !arg || !*arg) {
		snprintf(err, errlen, "--worker needs a program");
		return PS_EINVAL;
	}
	l->worker = arg;
	return PS_OK;
}

/* mkdir -p */
static int make_dirs(const char *dir)
{
	char path[PATH_MAX];

	snprintf(path, sizeof(path), "%s", dir);
	for (char *p = path + 1; *p; p++) {
		if (*p != '/')
			continue;
		*p = '\0';
		if (mkdir(path, 0777) != 0 && errno != EEXIST)
			return PS_EIO;
		*p = '/';
	}
	if (mkdir(path, 0777) != 0 && errno != EEXIST)
		return PS_EIO;
	return PS_OK;
}

/* Merges the processes' timeline parts into DIR/timeline.json. */
static void merge_timeline(const ps_config *cfg)
{
	int n = 0, total = cfg->cluster.servers + cfg->cluster.workers;
	char **paths = calloc((size_t)total, sizeof(*paths));
	char out[PATH_MAX];

	if (!paths)
		return;
	for (int i = 0; i < total; i++) {
		int server = i < cfg->cluster.servers;
		char path[PATH_MAX];
		snprintf(path, sizeof(path), "%s/%s-%d.json", cfg->output.dir,
			 server ? "server" : "worker",
			 server ? i : i - cfg->cluster.servers);
		if (access(path, R_OK) == 0)
			paths[n++] = strdup(path);
	}
	snprintf(out, sizeof(out), "%s/timeline.json", cfg->output.dir);
	if (n > 0 && ps_trace_merge((const char *const *)paths, n, out) ==
			     PS_OK)
		fprintf(stderr, "ps-launch: timeline of %d process(es) in %s "
			"(open it in Perfetto or chrome://tracing)\n", n, out);
	for (int i = 0; i < n; i++)
		free(paths[i]);
	free(paths);
}

/* Starts the scheduler, the servers and the workers, and waits for them
 * all. resume: an extra "checkpoint.resume=DIR" for --set, or NULL. */
static void run_job(launch *l, const ps_config *cfg, const char *resume)
{
	char port[32], portarg[64];
	const char *extra[4] = {"--set", portarg, "--set", resume};
	int nextra = resume ? 4 : 2, rc;

	l->nchildren = 0;
	l->failed_status = 0;
	fprintf(stderr, "ps-launch: starting 1 scheduler, %d server(s), %d "
		"worker(s)\n", cfg->cluster.servers, cfg->cluster.workers);
	rc = start_scheduler(l, cfg, port, sizeof(port), resume);
	snprintf(portarg, sizeof(portarg), "cluster.scheduler_port=%s", port);
	for (int i = 0; rc == PS_OK && i < cfg->cluster.servers; i++) {
		char name[32];
		snprintf(name, sizeof(name), "server #%d", i);
		rc = spawn(l, "ps-server", name, extra, nextra);
	}
	for (int i = 0; rc == PS_OK && i < cfg->cluster.workers; i++) {
		char name[32];
		snprintf(name, sizeof(name), "worker #%d", i);
		rc = spawn(l, l->worker ? l->worker : "ps-worker", name, extra,
			   nextra);
	}
	if (rc != PS_OK && !l->failed_status) {
		l->failed_status = 1;
		l->failed_at_ms = ps_now_ms();
		snprintf(l->failed.name, sizeof(l->failed.name), "ps-launch");
	}
	supervise(l, cfg);
}

/* What killed the job, in words: "exited with status 3", "killed by
 * signal 9". */
static void describe_status(int status, char *buf, size_t cap)
{
	if (status > 128)
		snprintf(buf, cap, "killed by signal %d", status - 128);
	else
		snprintf(buf, cap, "exited with status %d", status);
}

/* After a failure: the newest complete checkpoint to restart from (none:
 * from the start), said in one line. */
static int prepare_restart(launch *l, const ps_config *cfg, int restart,
			   char *resume, size_t cap)
{
	char dir[PS_CKPT_PATH_MAX], how[48];
	uint64_t it = 0;

	describe_status(l->failed.status, how, sizeof(how));
	if (ps_ckpt_latest(cfg->checkpoint.dir, dir, sizeof(dir), &it) ==
	    PS_OK) {
		fprintf(stderr, "ps-launch: %s (pid %d) %s; restart %d of %d "
			"from checkpoint %s (iteration %llu)\n",
			l->failed.name, (int)l->failed.pid, how, restart,
			cfg->fault.restarts, dir, (unsigned long long)it);
		if ((size_t)snprintf(resume, cap, "checkpoint.resume=%s",
				     dir) >= cap)
			return PS_EINVAL;
	} else {
		fprintf(stderr, "ps-launch: %s (pid %d) %s; restart %d of %d "
			"from the start (no complete checkpoint under %s "
			"yet)\n", l->failed.name, (int)l->failed.pid, how,
			restart, cfg->fault.restarts, cfg->checkpoint.dir);
		resume[0] = '\0';
	}
	return PS_OK;
}

/* security.mode = curve without security.keys_dir: a fresh key pair for
 * this job in a private temporary directory (removed at the end), given
 * to every process. */
static int make_job_keys(launch *l)
{
	const char *tmp = getenv("TMPDIR");
	char err[1024];

	snprintf(l->keys_dir, sizeof(l->keys_dir), "%s/ordo-keys.XXXXXX",
		 tmp && *tmp ? tmp : "/tmp");
	if (!mkdtemp(l->keys_dir)) {
		fprintf(stderr, "ps-launch: cannot make a directory for the "
			"job's keys: %s\n", strerror(errno));
		l->keys_dir[0] = '\0';
		return PS_EIO;
	}
	if (ps_keys_generate(l->keys_dir, 0, err, sizeof(err)) != PS_OK) {
		fprintf(stderr, "ps-launch: %s\n", err);
		return PS_EIO;
	}
	snprintf(l->keys_set, sizeof(l->keys_set), "security.keys_dir=%s",
		 l->keys_dir);
	fprintf(stderr, "ps-launch: security.mode = curve: a key pair for "
		"this job in %s\n", l->keys_dir);
	return PS_OK;
}

static void remove_job_keys(launch *l)
{
	char path[PATH_MAX + 16];
	if (!l->keys_dir[0])
		return;
	snprintf(path, sizeof(path), "%s/job.key", l->keys_dir);
	unlink(path);
	snprintf(path, sizeof(path), "%s/job.pub", l->keys_dir);
	unlink(path);
	rmdir(l->keys_dir);
}

int main(int argc, char **argv)
{
	static const ps_cli_opt opts[] = {
		{"worker", "PROGRAM",
		 "run PROGRAM (an absolute path, or a name beside ps-launch) "
		 "instead of ps-worker: any program built on the ordo client "
		 "API that accepts --config/--set"},
		{NULL, NULL, NULL},
	};
	launch l = {.argc = argc, .argv = argv, .progress_fd = -1,
		    .p_tty = isatty(STDERR_FILENO)};
	const ps_cli_info info = {
		.prog = "ps-launch",
		.summary = "Runs a whole job on this machine: one ps-scheduler, "
			   "cluster.servers ps-server and cluster.workers "
			   "ps-worker processes, all with these arguments.",
		.opts = opts,
		.on_opt = on_opt,
		.ud = &l,
	};
	char resume[PS_CKPT_PATH_MAX + 32] = "";
	ps_cli_status st;
	ps_config cfg;

	ps_signals_install();
	st = ps_cli_parse(argc, argv, &info, &cfg);
	if (st != PS_CLI_RUN)
		return ps_cli_exit_status(st);
	ps_log_init("launch", cfg.log.level);
	if (ps_cli_bin_dir(l.dir, sizeof(l.dir)) != PS_OK) {
		fprintf(stderr, "ps-launch: cannot find its own directory\n");
		return 1;
	}
	l.stop_at_once = cfg.fault.restarts > 0;
	l.children = calloc((size_t)(1 + cfg.cluster.servers +
				     cfg.cluster.workers),
			    sizeof(*l.children));
	if (!l.children)
		return 1;
	if (cfg.output.dir[0] && make_dirs(cfg.output.dir) != PS_OK) {
		fprintf(stderr, "ps-launch: cannot create output.dir %s: %s\n",
			cfg.output.dir, strerror(errno));
		return 1;
	}
	if (cfg.security.mode == PS_SECURITY_CURVE &&
	    !cfg.security.keys_dir[0] && make_job_keys(&l) != PS_OK) {
		remove_job_keys(&l);
		return 1;
	}
	for (int attempt = 0;; attempt++) {
		run_job(&l, &cfg, resume[0] ? resume : NULL);
		/* 2: a bad command line or config, 127: a program that
		 * cannot run; a restart would fail the same way */
		if (!l.failed_status || ps_signal_pending() ||
		    attempt >= cfg.fault.restarts || l.failed_status == 2 ||
		    l.failed_status == 127)
			break;
		if (prepare_restart(&l, &cfg, attempt + 1, resume,
				    sizeof(resume)) != PS_OK)
			break;
	}
	free(l.children);
	remove_job_keys(&l);
	if (cfg.output.dir[0])
		merge_timeline(&cfg);
	if (l.failed_status) {
		fprintf(stderr, "ps-launch: job failed (status %d)\n",
			l.failed_status);
		return l.failed_status;
	}
	if (ps_signal_pending())
		return ps_signal_exit_status(ps_signal_pending());
	fprintf(stderr, "ps-launch: job completed: all %d processes exited "
		"0\n", l.nchildren);
	return 0;
}
