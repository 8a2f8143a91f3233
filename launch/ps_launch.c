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
 * pipe after the port (scheduler.h); shown as one line rewritten in
 * place when stderr is a terminal, as plain lines at every 10% otherwise.
 *
 * Failure handling: when a process fails, the others normally stop by
 * themselves (the scheduler aborts the job within the heartbeat timeout);
 * those still running after that grace period get SIGTERM, then SIGKILL.
 * SIGINT/SIGTERM/SIGHUP to ps-launch are forwarded to every process as
 * SIGTERM, SIGUSR1 (a checkpoint, now) to the scheduler. Nothing is left
 * running when ps-launch exits: a local process gets SIGTERM when
 * ps-launch goes, even by SIGKILL (PR_SET_PDEATHSIG), and a remote one
 * when its ssh's stdin closes. The per-job key directory
 * (security.mode = curve without keys_dir) is removed at every exit but
 * SIGKILL's.
 *
 * Security (security.mode = auto, the default, or secret): a
 * job without a secret (ORDO_JOB_SECRET, job.secret in keys_dir) gets a
 * fresh one here, in ORDO_JOB_SECRET: local processes inherit it, remote
 * ones read it from ssh's stdin (the wrapper's first line), so it is
 * never on a command line. Under --rank every rank must already share
 * one: a rank cannot make it for the others. Exit status: 0 if every process exited 0, else the
 * first failure's status (128 + signal for a signal).
 *
 * Recovery (fault.restarts = N): when a process of the job fails, the
 * others are stopped at once and the whole job starts again from the
 * newest complete checkpoint under checkpoint.dir (--set
 * checkpoint.resume=DIR appended to the arguments), at most N times; one
 * line says what died and what the job resumed from.
 *
 * Across machines (README "Across machines"):
 *  - --rank: this process is one task of srun or mpirun; it becomes the
 *    role of its rank (launch/rank.h) by exec, so the cluster's launcher
 *    supervises every process itself.
 *  - --hosts FILE: the same job as on one machine, each process started
 *    over ssh on its host (launch/hosts.h), supervised from here. Every
 *    ssh runs the remote process under a small sh wrapper that reads
 *    commands from ssh's stdin, a pipe held here: "term", "usr1", and EOF
 *    (this launcher gone, even by SIGKILL) stops the process, so nothing
 *    is left running on any host. The scheduler's stdout comes back
 *    through ssh; it is also its --ready-fd, whose lines ("PORT",
 *    "progress N") are told from the rest by their form.
 */
#include <arpa/inet.h>
#include <errno.h>
#include <fcntl.h>
#include <netdb.h>
#include <limits.h>
#include <poll.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/prctl.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include "checkpoint/checkpoint.h"
#include "common/cli.h"
#include "common/dirs.h"
#include "common/log.h"
#include "launch/hosts.h"
#include "launch/rank.h"
#include "runtime/clock.h"
#include "runtime/node.h"
#include "runtime/signals.h"
#include "runtime/trace.h"
#include "transport/keys.h"

typedef struct child {
	pid_t pid;
	char name[PS_HOSTS_DEST_MAX + 32]; /* "server #0", "server #0 on node2" */
	int status; /* exit status once exited */
	int exited;
	int ctl_fd; /* --hosts: the remote wrapper's command pipe, else -1 */
	int remote; /* started over ssh */
} child;

/* ps-launch's own options, left out of what the processes get */
static const struct {
	const char *name;
	int has_arg;
} own_opts[] = {{"worker", 1}, {"rank", 0}, {"hosts", 1}, {"ssh", 1},
		{"env", 1}};

#define SSH_WORDS_MAX 32
#define ENV_NAMES_MAX 32

extern char **environ;

typedef struct launch {
	char dir[PATH_MAX];
	int argc;
	char **argv;
	child *children;
	int nchildren;
	const char *worker; /* --worker PROGRAM, NULL: ps-worker */
	char **prog_args;   /* -- PROGRAM ARGS...: ARGS (prog_nargs of them) */
	int prog_nargs;
	char worker_path[PATH_MAX + 256]; /* --worker dir/prog, absolute */
	int failed_status;  /* first failure's status, 0 if none */
	int64_t failed_at_ms;
	child failed;       /* the first process that failed */
	int stop_at_once;   /* on a failure, stop the others now (recovery) */
	int interrupted;    /* a signal stopped the job */
	/* the scheduler's "progress N" lines (scheduler.h), shown as one
	 * live line on a terminal, plain lines every 10% otherwise */
	int progress_fd;
	char pbuf[4096];
	int p_forward; /* other lines of the stream are the scheduler's
			* stdout (--hosts): copied to ours */
	size_t plen;
	uint64_t p_first, p_last;
	int64_t p_first_ms, p_shown_ms;
	int p_tty, p_line_open;
	char keys_dir[PATH_MAX]; /* a per-job key pair made here, or "" */
	char keys_set[PATH_MAX + 32]; /* "security.keys_dir=..." */
	/* --hosts: the secret remote processes read from stdin, or "" */
	char secret[PS_SECRET_LEN + 1];
	char port[32];       /* the scheduler's, once it said */
	int rank_mode;       /* --rank */
	const char *hosts_file; /* --hosts FILE */
	ps_host *hosts;
	int nhosts;
	char *ssh_words[SSH_WORDS_MAX + 1]; /* --ssh COMMAND, split */
	char ssh_buf[1024];
	const char *env_names[ENV_NAMES_MAX]; /* --env NAME: for --hosts */
	int nenv;
	char cwd[PATH_MAX];  /* remote processes start there, if it exists */
} launch;

/* The sh wrapper of every remote process (file comment): "$@" is the
 * program and its arguments. */
static const char remote_wrapper[] =
	"exec 4<&0 </dev/null; "
	"IFS= read -r ORDO_JOB_SECRET <&4; "
	"if [ -n \"$ORDO_JOB_SECRET\" ]; then export ORDO_JOB_SECRET; "
	"else unset ORDO_JOB_SECRET; fi; "
	"\"$@\" 4<&- & p=$!; "
	"trap 'kill -TERM $p 2>/dev/null' HUP INT TERM; "
	"(while read -r c <&4; do case $c in "
	"usr1) kill -USR1 $p;; term) kill -TERM $p;; esac; done; "
	"kill -TERM $p 2>/dev/null) & w=$!; "
	"wait $p; s=$?; "
	"while kill -0 $p 2>/dev/null; do wait $p; s=$?; done; "
	"kill $w 2>/dev/null; exit $s";

/* Is argv[i] one of ps-launch's own options? *skip: how many more
 * arguments belong to it. */
static int own_option(const char *a, int *skip)
{
	if (strncmp(a, "--", 2) != 0)
		return 0;
	a += 2;
	size_t len = strcspn(a, "=");
	for (size_t k = 0; k < sizeof(own_opts) / sizeof(own_opts[0]); k++) {
		if (strlen(own_opts[k].name) != len ||
		    strncmp(a, own_opts[k].name, len) != 0)
			continue;
		*skip = own_opts[k].has_arg && a[len] != '=';
		return 1;
	}
	return 0;
}

/* path, our arguments less ps-launch's own, extra, the job's keys; NULL
 * terminated, malloc'd (the strings are not copied). */
static char **job_argv(const launch *l, const char *path,
		       const char *const *extra, int nextra, int worker)
{
	char **argv = calloc((size_t)(l->argc + l->prog_nargs + nextra + 3),
			     sizeof(*argv));
	int k = 0, skip;

	if (!argv)
		return NULL;
	argv[k++] = (char *)path;
	/* -- PROGRAM ARGS: the program's own arguments first; ours follow
	 * (ordo.torch.init() takes them out again) */
	for (int i = 0; worker && i < l->prog_nargs; i++)
		argv[k++] = l->prog_args[i];
	for (int i = 1; i < l->argc; i++) {
		if (own_option(l->argv[i], &skip)) {
			i += skip;
			continue;
		}
		argv[k++] = l->argv[i];
	}
	for (int i = 0; i < nextra; i++)
		argv[k++] = (char *)extra[i];
	if (l->keys_set[0]) {
		argv[k++] = "--set";
		argv[k++] = (char *)l->keys_set;
	}
	return argv;
}

/* Does the environment entry NAME=VALUE go to remote processes: every
 * ORDO_* (the configuration's environment layer, which every node must
 * share) and each --env NAME, never the job's secret (it goes through
 * ssh's stdin). */
static int forwarded(const launch *l, const char *entry)
{
	size_t n = strcspn(entry, "=");

	if (!entry[n] || (n == strlen(PS_SECRET_ENV) &&
			  strncmp(entry, PS_SECRET_ENV, n) == 0))
		return 0;
	if (strncmp(entry, "ORDO_", 5) == 0)
		return 1;
	for (int i = 0; i < l->nenv; i++)
		if (strlen(l->env_names[i]) == n &&
		    strncmp(entry, l->env_names[i], n) == 0)
			return 1;
	return 0;
}

/* The ssh command line that runs argv on host h under the wrapper:
 * SSH... DEST "cd CWD 2>/dev/null; exec env VARS... sh -c WRAPPER ordo
 * ARGV...", VARS the forwarded environment (forwarded()).
 * *cmd holds the last word (free it with the result). */
static char **remote_argv(const launch *l, const ps_host *h, char **argv,
			  const char *const *envs, char **cmd)
{
	size_t nenv = 0, k = 0;
	const char **env;
	int nssh = 0;
	char **v;

	for (char **e = environ; *e; e++)
		nenv += forwarded(l, *e);
	for (const char *const *e = envs; e && *e; e++)
		nenv++;
	env = calloc(nenv + 1, sizeof(*env));
	while (l->ssh_words[nssh])
		nssh++;
	v = calloc((size_t)nssh + 3, sizeof(*v));
	*cmd = NULL;
	if (!env || !v)
		goto fail;
	/* the ORDO_* configuration and --env's variables, as they are here,
	 * then the worker's */
	for (char **e = environ; *e; e++)
		if (forwarded(l, *e))
			env[k++] = *e;
	for (const char *const *e = envs; e && *e; e++)
		env[k++] = *e;
	*cmd = ps_remote_command(l->cwd, env, remote_wrapper,
				 (const char *const *)argv);
	if (!*cmd)
		goto fail;
	free(env);
	for (int i = 0; i < nssh; i++)
		v[i] = l->ssh_words[i];
	v[nssh] = (char *)h->dest;
	v[nssh + 1] = *cmd;
	return v;
fail:
	free(env);
	free(v);
	return NULL;
}

/* Starts DIR/prog with our arguments plus extra ones, here (host NULL)
 * or on host over ssh, with the NAME=VALUE entries of envs (NULL: none)
 * added to its environment. out_fd >= 0: the process's stdout. */
static int spawn(launch *l, const char *prog, const char *name,
		 const char *const *extra, int nextra,
		 const char *const *envs, const ps_host *host, int out_fd)
{
	char path[PATH_MAX + 32];
	char **argv, **run, *cmd = NULL;
	child *ch = &l->children[l->nchildren];
	int ctl[2] = {-1, -1}, rc = PS_OK;
	pid_t pid;

	if (prog[0] == '/')
		snprintf(path, sizeof(path), "%s", prog);
	else
		snprintf(path, sizeof(path), "%s/%s", l->dir, prog);
	argv = job_argv(l, path, extra, nextra, l->worker && prog == l->worker);
	if (!argv)
		return PS_ENOMEM;
	run = argv;
	if (host) {
		run = remote_argv(l, host, argv, envs, &cmd);
		char line[PS_SECRET_LEN + 2];
		int n = snprintf(line, sizeof(line), "%s\n", l->secret);
		/* the wrapper's first line: the secret (an empty pipe takes
		 * it whole) */
		if (!run || pipe(ctl) != 0 ||
		    fcntl(ctl[1], F_SETFD, FD_CLOEXEC) != 0 ||
		    fcntl(ctl[1], F_SETFL, O_NONBLOCK) != 0 ||
		    write(ctl[1], line, (size_t)n) != n) {
			PS_ERROR("cannot prepare ssh for %s", name);
			rc = PS_EIO;
			goto out;
		}
	}
	fflush(NULL);
	pid_t launcher = getpid();
	pid = fork();
	if (pid < 0) {
		PS_ERROR("cannot start %s: %s", name, strerror(errno));
		rc = PS_EIO;
		goto out;
	}
	if (pid == 0) {
		struct sigaction sa;
		memset(&sa, 0, sizeof(sa));
		sa.sa_handler = SIG_DFL;
		sigaction(SIGINT, &sa, NULL);
		sigaction(SIGTERM, &sa, NULL);
		sigaction(SIGHUP, &sa, NULL);
		/* a local process outlives no launcher, even one killed by
		 * SIGKILL: SIGTERM when it goes (kept across exec); one that
		 * went before this line leaves us another parent. A remote
		 * one stops when its ssh's stdin closes. */
		if (!host && (prctl(PR_SET_PDEATHSIG, SIGTERM) != 0 ||
			      getppid() != launcher))
			_exit(128 + SIGTERM);
		if (ctl[0] >= 0)
			dup2(ctl[0], STDIN_FILENO);
		if (out_fd >= 0)
			dup2(out_fd, STDOUT_FILENO);
		for (const char *const *e = envs; !host && e && *e; e++)
			putenv((char *)*e); /* the child's copy of our memory */
		if (host)
			execvp(run[0], run);
		else
			execv(path, argv);
		fprintf(stderr, "ps-launch: cannot run %s: %s\n", run[0],
			strerror(errno));
		_exit(127);
	}
	*ch = (child){.pid = pid, .ctl_fd = ctl[1], .remote = host != NULL};
	ctl[1] = -1; /* the child's now */
	if (host)
		snprintf(ch->name, sizeof(ch->name), "%s on %s", name,
			 host->dest);
	else
		snprintf(ch->name, sizeof(ch->name), "%s", name);
	l->nchildren++;
out:
	if (ctl[0] >= 0)
		close(ctl[0]);
	if (ctl[1] >= 0)
		close(ctl[1]);
	if (run != argv)
		free(run);
	free(cmd);
	free(argv);
	return rc;
}

static int status_of(int wstatus)
{
	if (WIFEXITED(wstatus))
		return WEXITSTATUS(wstatus);
	if (WIFSIGNALED(wstatus))
		return 128 + WTERMSIG(wstatus);
	return 1;
}

/* A remote process gets SIGTERM and SIGUSR1 as commands to its wrapper
 * (its ssh would only die of them); SIGKILL ends the ssh, and the
 * wrapper then stops the process. */
static void signal_child(child *ch, int sig)
{
	if (ch->exited)
		return;
	if (ch->ctl_fd >= 0 && (sig == SIGTERM || sig == SIGUSR1)) {
		const char *c = sig == SIGTERM ? "term\n" : "usr1\n";
		if (write(ch->ctl_fd, c, strlen(c)) < 0)
			kill(ch->pid, sig); /* the wrapper is gone */
		return;
	}
	kill(ch->pid, sig);
}

static void signal_all(launch *l, int sig)
{
	for (int i = 0; i < l->nchildren; i++)
		signal_child(&l->children[i], sig);
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
			if (ch->ctl_fd >= 0) {
				close(ch->ctl_fd);
				ch->ctl_fd = -1;
			}
			if (ch->status != 0) {
				fprintf(stderr, "ps-launch: %s (pid %d) "
					"exited with status %d%s\n", ch->name,
					(int)pid, ch->status,
					ch->remote && ch->status == 255
						? " (ssh could not connect or "
						  "run the command: see its "
						  "message above)"
						: "");
				/* after a signal stopped the job, ends
				 * are its doing (a process that saw the
				 * scheduler go before its own SIGTERM
				 * came exits 1), not failures */
				if (!l->failed_status && !l->interrupted) {
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

/* One line of the scheduler's stream: its port (digits, the first such
 * line), "progress N", or (--hosts) a line of its stdout. */
static void scheduler_line(launch *l, const ps_config *cfg, const char *line)
{
	unsigned long long v;
	char tail;

	if (!l->port[0] && line[0] && strlen(line) < sizeof(l->port) &&
	    strspn(line, "0123456789") == strlen(line)) {
		snprintf(l->port, sizeof(l->port), "%s", line);
		return;
	}
	if (sscanf(line, "progress %llu%c", &v, &tail) == 1) {
		show_progress(l, cfg, v);
		return;
	}
	if (!l->p_forward)
		return;
	if (l->p_line_open) {
		fputc('\n', stderr);
		l->p_line_open = 0;
	}
	printf("%s\n", line);
	fflush(stdout);
}

/* Reads what the scheduler's stream has (never blocks). */
static void read_scheduler(launch *l, const ps_config *cfg)
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
				if (l->plen && l->p_forward)
					printf("%.*s\n", (int)l->plen, l->pbuf);
				l->plen = 0;
			}
			break;
		}
		l->plen += (size_t)n;
		l->pbuf[l->plen] = '\0';
		char *nl;
		while ((nl = strchr(l->pbuf, '\n'))) {
			*nl = '\0';
			scheduler_line(l, cfg, l->pbuf);
			size_t used = (size_t)(nl + 1 - l->pbuf);
			memmove(l->pbuf, nl + 1, l->plen - used + 1);
			l->plen -= used;
		}
		if (l->plen == sizeof(l->pbuf) - 1) {
			/* a line that long is not the launcher's protocol */
			if (l->p_forward)
				fwrite(l->pbuf, 1, l->plen, stdout);
			l->plen = 0;
		}
	}
}

/* Waits for every child; enforces the grace period after a failure. */
static void supervise(launch *l, const ps_config *cfg)
{
	int64_t grace = cfg->cluster.heartbeat_timeout_ms + 5000;
	int forwarded = 0, termed = 0;
	struct timespec tick = {0, 20 * 1000 * 1000};

	while (running_count(l) > 0) {
		read_scheduler(l, cfg);
		reap(l);
		if (ps_signal_take_usr1() && l->nchildren > 0 &&
		    !l->children[0].exited) {
			fprintf(stderr, "ps-launch: SIGUSR1: asking the "
				"scheduler for a checkpoint\n");
			signal_child(&l->children[0], SIGUSR1);
		}
		/* 127: a program that cannot run (its message is above);
		 * the rest would only wait for it until a timeout */
		if (l->failed_status &&
		    (l->stop_at_once || l->failed_status == 127) && !termed) {
			signal_all(l, SIGTERM);
			termed = 1;
			grace = 0;
		}
		if (ps_signal_pending() && !forwarded) {
			fprintf(stderr, "ps-launch: signal %d: stopping the "
				"job\n", ps_signal_pending());
			signal_all(l, SIGTERM);
			forwarded = 1;
			l->interrupted = 1;
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
	read_scheduler(l, cfg);
	if (l->progress_fd >= 0) {
		close(l->progress_fd);
		l->progress_fd = -1;
	}
	if (l->p_line_open) {
		fputc('\n', stderr);
		l->p_line_open = 0;
	}
}

/* Starts the scheduler (here, or on host) and waits for its port in
 * l->port; its stream stays open for the progress lines. */
static int start_scheduler(launch *l, const ps_config *cfg,
			   const char *const *extra, int nextra,
			   const ps_host *host)
{
	char fdarg[16];
	const char *args[16];
	int fds[2], rc, n = 0;
	int64_t deadline = ps_now_ms() + cfg->cluster.connect_timeout_ms;

	if (pipe(fds) != 0)
		return PS_EIO;
	/* here: a pipe of its own; on a host: its stdout, through ssh */
	snprintf(fdarg, sizeof(fdarg), "%d", host ? STDOUT_FILENO : fds[1]);
	args[n++] = "--ready-fd";
	args[n++] = fdarg;
	for (int i = 0; i < nextra && n < 16; i++)
		args[n++] = extra[i];
	l->port[0] = '\0';
	l->plen = 0;
	l->p_first_ms = 0;
	l->p_last = 0;
	l->p_forward = host != NULL;
	rc = spawn(l, "ps-scheduler", "scheduler", args, n, NULL, host,
		   host ? fds[1] : -1);
	close(fds[1]);
	int fl = fcntl(fds[0], F_GETFL);
	if (rc != PS_OK || fl < 0 ||
	    fcntl(fds[0], F_SETFL, fl | O_NONBLOCK) != 0) {
		close(fds[0]);
		return rc != PS_OK ? rc : PS_EIO;
	}
	l->progress_fd = fds[0];
	while (!l->port[0] && l->progress_fd >= 0) {
		struct pollfd pfd = {.fd = l->progress_fd, .events = POLLIN};
		int64_t left = deadline - ps_now_ms();
		if (left <= 0 || ps_signal_pending())
			break;
		if (poll(&pfd, 1, left > 200 ? 200 : (int)left) > 0)
			read_scheduler(l, cfg);
	}
	if (!l->port[0]) {
		fprintf(stderr, "ps-launch: the scheduler did not start "
			"listening\n");
		return PS_ETIMEDOUT;
	}
	return PS_OK;
}

/* --ssh COMMAND into words (split at spaces: no quoting). */
static int split_ssh(launch *l, const char *cmd, char *why, size_t whylen)
{
	int n = 0;
	char *save = NULL;

	if (strlen(cmd) >= sizeof(l->ssh_buf)) {
		snprintf(why, whylen, "--ssh: the command is longer than %zu "
			 "characters", sizeof(l->ssh_buf) - 1);
		return PS_EINVAL;
	}
	snprintf(l->ssh_buf, sizeof(l->ssh_buf), "%s", cmd);
	for (char *w = strtok_r(l->ssh_buf, " \t", &save); w;
	     w = strtok_r(NULL, " \t", &save)) {
		if (n == SSH_WORDS_MAX) {
			snprintf(why, whylen, "--ssh: more than %d words",
				 SSH_WORDS_MAX);
			return PS_EINVAL;
		}
		l->ssh_words[n++] = w;
	}
	l->ssh_words[n] = NULL;
	if (n == 0) {
		snprintf(why, whylen, "--ssh needs a command");
		return PS_EINVAL;
	}
	return PS_OK;
}

static int on_opt(void *ud, const char *name, const char *arg, char *why,
		  size_t whylen)
{
	launch *l = ud;

	if (strcmp(name, "rank") == 0) {
		l->rank_mode = 1;
		return PS_OK;
	}
	if (!arg || !*arg) {
		snprintf(why, whylen, "--%s needs an argument", name);
		return PS_EINVAL;
	}
	if (strcmp(name, "worker") == 0 && l->prog_args) {
		snprintf(why, whylen, "--worker and -- PROGRAM both name the "
			 "workers' program: give one");
		return PS_EINVAL;
	}
	if (strcmp(name, "worker") == 0) {
		/* a path with a '/' is the shell's: from the current
		 * directory (made absolute, for --hosts too); a bare name
		 * is a program beside ps-launch */
		if (arg[0] != '/' && strchr(arg, '/')) {
			char cwd[PATH_MAX];
			if (!getcwd(cwd, sizeof(cwd)) ||
			    (size_t)snprintf(l->worker_path,
					     sizeof(l->worker_path), "%s/%s",
					     cwd, arg) >= sizeof(l->worker_path)) {
				snprintf(why, whylen, "--worker %s: the path is "
					 "too long", arg);
				return PS_EINVAL;
			}
			l->worker = l->worker_path;
		} else {
			l->worker = arg;
		}
	}
	else if (strcmp(name, "hosts") == 0)
		l->hosts_file = arg;
	else if (strcmp(name, "ssh") == 0)
		return split_ssh(l, arg, why, whylen);
	else if (strcmp(name, "env") == 0) {
		size_t n = strspn(arg, "ABCDEFGHIJKLMNOPQRSTUVWXYZ"
				       "abcdefghijklmnopqrstuvwxyz0123456789_");
		if (arg[n] || (arg[0] >= '0' && arg[0] <= '9')) {
			snprintf(why, whylen, "--env %s: not a variable name",
				 arg);
			return PS_EINVAL;
		}
		if (!getenv(arg)) {
			snprintf(why, whylen, "--env %s: %s is not set here",
				 arg, arg);
			return PS_EINVAL;
		}
		if (l->nenv == ENV_NAMES_MAX) {
			snprintf(why, whylen, "--env: at most %d variables",
				 ENV_NAMES_MAX);
			return PS_EINVAL;
		}
		l->env_names[l->nenv++] = arg;
	}
	else
		return PS_EINVAL;
	return PS_OK;
}

/* -- PROGRAM: a path with a '/' from the current directory, else the
 * first executable PROGRAM on PATH, as l->worker (absolute); 0, or -1
 * with the reason said. */
static int find_program(launch *l, const char *prog)
{
	const char *path = getenv("PATH");
	char cwd[PATH_MAX];

	l->worker = l->worker_path;
	if (strchr(prog, '/')) {
		if (prog[0] == '/')
			snprintf(l->worker_path, sizeof(l->worker_path), "%s",
				 prog);
		else if (!getcwd(cwd, sizeof(cwd)) ||
			 (size_t)snprintf(l->worker_path,
					  sizeof(l->worker_path), "%s/%s", cwd,
					  prog) >= sizeof(l->worker_path)) {
			fprintf(stderr, "ps-launch: -- %s: the path is too "
				"long\n", prog);
			return -1;
		}
		if (access(l->worker_path, X_OK) == 0)
			return 0;
		fprintf(stderr, "ps-launch: -- %s: %s\n", prog,
			strerror(errno));
		return -1;
	}
	for (const char *d = path ? path : ""; *d;) {
		size_t n = strcspn(d, ":");
		if (n > 0 && (size_t)snprintf(l->worker_path,
					      sizeof(l->worker_path),
					      "%.*s/%s", (int)n, d,
					      prog) < sizeof(l->worker_path) &&
		    access(l->worker_path, X_OK) == 0)
			return 0;
		d += n + (d[n] == ':');
	}
	fprintf(stderr, "ps-launch: -- %s: not found on PATH (%s)\n", prog,
		path ? path : "unset");
	return -1;
}

/* Is host a numeric IPv4 address? */
static int is_ipv4(const char *host)
{
	struct in_addr a;
	return inet_pton(AF_INET, host, &a) == 1;
}

/* The IPv4 address of this machine from which traffic to host:port
 * leaves (a UDP socket connected there: nothing is sent). */
static int route_source(const char *host, int port, char *addr, size_t cap)
{
	struct addrinfo hints = {.ai_family = AF_INET,
				 .ai_socktype = SOCK_DGRAM},
			*res = NULL;
	struct sockaddr_in self;
	socklen_t len = sizeof(self);
	char service[16];
	int fd, rc = PS_EIO;

	snprintf(service, sizeof(service), "%d", port);
	if (getaddrinfo(host, service, &hints, &res) != 0 || !res)
		return PS_ENOENT;
	fd = socket(AF_INET, SOCK_DGRAM | SOCK_CLOEXEC, 0);
	if (fd >= 0 && connect(fd, res->ai_addr, res->ai_addrlen) == 0 &&
	    getsockname(fd, (struct sockaddr *)&self, &len) == 0 &&
	    inet_ntop(AF_INET, &self.sin_addr, addr, (socklen_t)cap))
		rc = PS_OK;
	if (fd >= 0)
		close(fd);
	freeaddrinfo(res);
	return rc;
}

/* Across machines a per-job key pair made here would reach no other
 * node: security.mode = curve needs a keys_dir every node has. */
static int keys_shared(const ps_config *cfg, const char *mode)
{
	if (cfg->security.mode != PS_SECURITY_CURVE ||
	    cfg->security.keys_dir[0])
		return 1;
	fprintf(stderr, "ps-launch: %s: security.mode = curve needs "
		"security.keys_dir, the same key pair on every node "
		"(ps-keygen DIR)\n", mode);
	return 0;
}

/* security.mode = auto or secret over tcp: the job's secret, found or
 * made (file comment). 0, or an exit status. */
static int job_secret(launch *l, const ps_config *cfg)
{
	char err[1024];
	int made;

	if (ps_job_secret_ensure(cfg, !l->rank_mode, l->secret, &made, err,
				 sizeof(err)) != PS_OK) {
		fprintf(stderr, "ps-launch: %s%s\n",
			l->rank_mode ? "--rank: " : "", err);
		return 2;
	}
	if (made)
		fprintf(stderr, "ps-launch: security: a secret for this job; "
			"a peer without it is refused when it connects\n");
	return 0;
}

static const char *env_get(const char *name)
{
	return getenv(name);
}

/* --rank: becomes the role of this process's rank (exec); returns only
 * on an error, with the exit status. */
static int run_rank(launch *l, const ps_config *cfg)
{
	const int servers = cfg->cluster.servers, workers = cfg->cluster.workers;
	const int total = 1 + servers + workers;
	char err[512], setarg[128], addr[64], path[PATH_MAX + 32];
	char rankarg[48];
	const char *extra[4] = {"--set", setarg}, *prog;
	int nextra = 0, idx;
	ps_rank r;
	uint32_t role;

	if (ps_rank_from_env(env_get, &r, err, sizeof(err)) != PS_OK) {
		fprintf(stderr, "ps-launch: --rank: %s\n", err);
		return 2;
	}
	if (r.size != total) {
		fprintf(stderr, "ps-launch: --rank: %s = %d, but the job is %d "
			"processes (1 scheduler, %d server(s), %d worker(s)): "
			"start %d tasks (srun -n %d, mpirun -np %d)\n",
			r.size_var, r.size, total, servers, workers, total,
			total, total);
		return 2;
	}
	if (cfg->cluster.scheduler_port == 0) {
		fprintf(stderr, "ps-launch: --rank: cluster.scheduler_port = 0 "
			"(an ephemeral port) cannot be told to the other "
			"ranks: set a fixed port\n");
		return 2;
	}
	if (!keys_shared(cfg, "--rank"))
		return 2;
	if (cfg->fault.restarts > 0)
		fprintf(stderr, "ps-launch: --rank: fault.restarts = %d is "
			"ps-launch's own restart loop, not used here: the "
			"cluster's launcher decides about restarts\n",
			cfg->fault.restarts);
	ps_rank_role(r.rank, servers, workers, &role, &idx);
	if (role == PS_ROLE_SCHEDULER) {
		/* it binds the address: a host name is resolved here */
		prog = "ps-scheduler";
		if (!is_ipv4(cfg->cluster.scheduler_host)) {
			if (ps_resolve_ipv4(cfg->cluster.scheduler_host, addr,
					    sizeof(addr), err,
					    sizeof(err)) != PS_OK) {
				fprintf(stderr, "ps-launch: --rank: "
					"cluster.scheduler_host = %s does not "
					"resolve to an IPv4 address here\n",
					cfg->cluster.scheduler_host);
				return 2;
			}
			snprintf(setarg, sizeof(setarg),
				 "cluster.scheduler_host=%s", addr);
			nextra = 2;
		}
	} else {
		prog = role == PS_ROLE_SERVER ? "ps-server"
		       : l->worker ? l->worker : "ps-worker";
		/* the default loopback bind would be unreachable from a
		 * scheduler elsewhere: the address that reaches it */
		if (!cfg->cluster.interface[0] &&
		    !cfg->cluster.advertise_host[0] &&
		    strcmp(cfg->cluster.bind_host, "127.0.0.1") == 0 &&
		    route_source(cfg->cluster.scheduler_host,
				 cfg->cluster.scheduler_port, addr,
				 sizeof(addr)) == PS_OK &&
		    strncmp(addr, "127.", 4) != 0) {
			snprintf(setarg, sizeof(setarg),
				 "cluster.bind_host=%s", addr);
			nextra = 2;
		}
	}
	char which[16] = "";
	if (role != PS_ROLE_SCHEDULER)
		snprintf(which, sizeof(which), " #%d", idx);
	fprintf(stderr, "ps-launch: rank %d of %d (%s): %s%s%s%s\n", r.rank,
		r.size, r.rank_var, ps_role_name(role), which,
		nextra ? ", " : "", nextra ? setarg : "");
	if (prog[0] == '/')
		snprintf(path, sizeof(path), "%s", prog);
	else
		snprintf(path, sizeof(path), "%s/%s", l->dir, prog);
	if (role == PS_ROLE_WORKER) {
		/* the worker's own rank: asked for at registration, and the
		 * RANK/WORLD_SIZE a training script reads (the launcher's
		 * count the scheduler and the servers too) */
		char v[32];
		snprintf(rankarg, sizeof(rankarg), "worker.rank=%d", idx);
		extra[nextra++] = "--set";
		extra[nextra++] = rankarg;
		snprintf(v, sizeof(v), "%d", idx);
		setenv("RANK", v, 1);
		snprintf(v, sizeof(v), "%d", workers);
		setenv("WORLD_SIZE", v, 1);
	}
	char **argv = job_argv(l, path, extra, nextra,
			       role == PS_ROLE_WORKER);
	if (!argv)
		return 1;
	fflush(NULL);
	execv(path, argv);
	fprintf(stderr, "ps-launch: cannot run %s: %s\n", path,
		strerror(errno));
	free(argv);
	return 127;
}

/* --hosts: reads the file; the checks the job needs on several hosts. */
static int prepare_hosts(launch *l, const ps_config *cfg)
{
	char err[1024];

	if (ps_hosts_load(l->hosts_file, &l->hosts, &l->nhosts, err,
			  sizeof(err)) != PS_OK) {
		fprintf(stderr, "ps-launch: %s\n", err);
		return 2;
	}
	if (!keys_shared(cfg, "--hosts"))
		return 2;
	if (!l->ssh_words[0]) {
		char e[64];
		split_ssh(l, "ssh -o BatchMode=yes", e, sizeof(e));
	}
	if (!getcwd(l->cwd, sizeof(l->cwd)))
		snprintf(l->cwd, sizeof(l->cwd), "/");
	return 0;
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

/* The host of rank under --hosts, else NULL (here). */
static const ps_host *host_of(const launch *l, int rank)
{
	return l->hosts ? &l->hosts[ps_hosts_place(l->hosts, l->nhosts, rank)]
			: NULL;
}

/* --hosts: one line per host saying what runs there. */
static void show_placement(const launch *l, const ps_config *cfg)
{
	const int servers = cfg->cluster.servers;
	const int total = 1 + servers + cfg->cluster.workers;

	for (int h = 0; h < l->nhosts; h++) {
		int first = 1;
		fprintf(stderr, "ps-launch: %s (%s):", l->hosts[h].dest,
			l->hosts[h].addr);
		for (int r = 0; r < total; r++) {
			uint32_t role;
			int idx;
			if (host_of(l, r) != &l->hosts[h] ||
			    ps_rank_role(r, servers, cfg->cluster.workers,
					 &role, &idx) != PS_OK)
				continue;
			fprintf(stderr, "%s %s", first ? "" : ",",
				ps_role_name(role));
			if (role != PS_ROLE_SCHEDULER)
				fprintf(stderr, " #%d", idx);
			first = 0;
		}
		fprintf(stderr, "%s\n", first ? " nothing" : "");
	}
}

/* Starts the scheduler, the servers and the workers (here, or over ssh
 * on their hosts), and waits for them all. resume: an extra
 * "checkpoint.resume=DIR" for --set, or NULL. */
static void run_job(launch *l, const ps_config *cfg, const char *resume)
{
	const int servers = cfg->cluster.servers;
	const int total = 1 + servers + cfg->cluster.workers;
	char portarg[64], schedarg[96];
	const char *common[6];
	int nc = 0, rc;

	l->nchildren = 0;
	l->failed_status = 0;
	l->interrupted = 0;
	fprintf(stderr, "ps-launch: starting 1 scheduler, %d server(s), %d "
		"worker(s)%s\n", servers, cfg->cluster.workers,
		l->hosts ? " over ssh" : "");
	if (l->hosts) {
		show_placement(l, cfg);
		snprintf(schedarg, sizeof(schedarg),
			 "cluster.scheduler_host=%s", host_of(l, 0)->addr);
		common[nc++] = "--set";
		common[nc++] = schedarg;
	}
	if (resume) {
		common[nc++] = "--set";
		common[nc++] = resume;
	}
	rc = start_scheduler(l, cfg, common, nc, host_of(l, 0));
	snprintf(portarg, sizeof(portarg), "cluster.scheduler_port=%s",
		 l->port);
	common[nc++] = "--set";
	common[nc++] = portarg;
	for (int r = 1; rc == PS_OK && r < total; r++) {
		const ps_host *h = host_of(l, r);
		const char *extra[12];
		char name[32], bindarg[96];
		int ne = nc, idx;
		uint32_t role;

		char rankarg[48], envbuf[4][48];
		const char *envs[5] = {NULL};
		memcpy(extra, common, (size_t)nc * sizeof(*extra));
		/* on a host: its address, unless the config names one */
		if (h && !cfg->cluster.interface[0] &&
		    !cfg->cluster.advertise_host[0]) {
			snprintf(bindarg, sizeof(bindarg),
				 "cluster.bind_host=%s", h->addr);
			extra[ne++] = "--set";
			extra[ne++] = bindarg;
		}
		ps_rank_role(r, servers, cfg->cluster.workers, &role, &idx);
		snprintf(name, sizeof(name), "%s #%d", ps_role_name(role), idx);
		if (role == PS_ROLE_WORKER) {
			/* its rank, asked for at registration, and the
			 * environment torchrun would give it */
			int local = 0, on_host = 0;
			for (int q = 1 + servers; q < total; q++)
				if (host_of(l, q) == h) {
					on_host++;
					local += q < r;
				}
			snprintf(rankarg, sizeof(rankarg), "worker.rank=%d", idx);
			extra[ne++] = "--set";
			extra[ne++] = rankarg;
			snprintf(envbuf[0], sizeof(envbuf[0]), "RANK=%d", idx);
			snprintf(envbuf[1], sizeof(envbuf[1]), "WORLD_SIZE=%d",
				 cfg->cluster.workers);
			snprintf(envbuf[2], sizeof(envbuf[2]), "LOCAL_RANK=%d",
				 local);
			snprintf(envbuf[3], sizeof(envbuf[3]),
				 "LOCAL_WORLD_SIZE=%d", on_host);
			for (int k = 0; k < 4; k++)
				envs[k] = envbuf[k];
		}
		rc = spawn(l, role == PS_ROLE_SERVER ? "ps-server"
			   : l->worker ? l->worker : "ps-worker",
			   name, extra, ne, envs, h, -1);
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
	static const char *const files[] = {"job.key", "job.pub",
					    "job.secret"};
	for (size_t i = 0; i < sizeof(files) / sizeof(files[0]); i++) {
		snprintf(path, sizeof(path), "%s/%s", l->keys_dir, files[i]);
		unlink(path);
	}
	if (rmdir(l->keys_dir) != 0)
		fprintf(stderr, "ps-launch: cannot remove the job's keys in "
			"%s: %s\n", l->keys_dir, strerror(errno));
}

int main(int argc, char **argv)
{
	static const ps_cli_opt opts[] = {
		{"worker", "PROGRAM",
		 "run PROGRAM instead of ps-worker: a path (relative to the "
		 "current directory when it has a '/'), or the name of a "
		 "program beside ps-launch; any program built on the ordo "
		 "client API that accepts --config/--set"},
		{"hosts", "FILE",
		 "start the processes over ssh on the hosts of FILE (one per "
		 "line: HOST [slots=N] [addr=A.B.C.D]; rank 0 the scheduler, "
		 "then the servers, then the workers, dealt out over the "
		 "hosts' slots in turn); the binaries, the config and "
		 "--worker must be at the same paths on every host"},
		{"ssh", "COMMAND",
		 "the ssh command for --hosts, split at spaces (default: ssh "
		 "-o BatchMode=yes)"},
		{"env", "NAME",
		 "with --hosts, give the remote processes the variable NAME "
		 "as it is here (repeat for more; e.g. PYTHONPATH, "
		 "LIBORDO_PATH, CUDA_VISIBLE_DEVICES); every ORDO_* variable "
		 "goes to them anyway"},
		{"rank", NULL,
		 "be one process of a job started by srun or mpirun: rank 0 "
		 "(SLURM_PROCID, OMPI_COMM_WORLD_RANK or PMI_RANK) runs the "
		 "scheduler, ranks 1..servers the servers, the rest the "
		 "workers; the number of tasks must be 1 + servers + workers, "
		 "cluster.scheduler_port fixed, and every rank given the "
		 "job's secret (export ORDO_JOB_SECRET=$(ps-keygen --secret) "
		 "before srun)"},
		{NULL, NULL, NULL},
	};
	launch l = {.argc = argc, .argv = argv, .progress_fd = -1,
		    .hosts = NULL,
		    .p_tty = isatty(STDERR_FILENO)};
	const ps_cli_info info = {
		.prog = "ps-launch",
		.summary = "Runs a whole job: one ps-scheduler, "
			   "cluster.servers ps-server and cluster.workers "
			   "ps-worker processes, all with these arguments, on "
			   "this machine, over ssh (--hosts) or as one rank "
			   "of srun/mpirun (--rank). `ps-launch [OPTIONS] -- "
			   "PROGRAM ARGS...` runs PROGRAM (a path, or found on "
			   "PATH) as the workers with ARGS, followed by the "
			   "job's --config/--set arguments (ordo.torch.init() "
			   "takes those out). Every job gets a secret of its "
			   "own (security.mode = auto): a process without it "
			   "cannot connect to any node of the job.",
		.opts = opts,
		.on_opt = on_opt,
		.ud = &l,
	};
	char resume[PS_CKPT_PATH_MAX + 32] = "";
	ps_cli_status st;
	ps_config cfg;

	ps_signals_install();
	/* a closed terminal or session stops the job as SIGTERM does: the
	 * processes are stopped and the per-job keys removed */
	ps_signals_install_hup();
	/* -- PROGRAM ARGS...: the workers' program and its own arguments */
	for (int i = 1; i < argc; i++) {
		if (strcmp(argv[i], "--") != 0)
			continue;
		if (i + 1 >= argc) {
			fprintf(stderr, "ps-launch: '--' must be followed by "
				"the workers' program and its arguments\n");
			return 2;
		}
		l.prog_args = &argv[i + 2];
		l.prog_nargs = argc - i - 2;
		if (find_program(&l, argv[i + 1]) != 0)
			return 2;
		argc = l.argc = i;
		break;
	}
	st = ps_cli_parse(argc, argv, &info, &cfg);
	if (st != PS_CLI_RUN)
		return ps_cli_exit_status(st);
	ps_log_init("launch", cfg.log.level);
	if (ps_cli_bin_dir(l.dir, sizeof(l.dir)) != PS_OK) {
		fprintf(stderr, "ps-launch: cannot find its own directory\n");
		return 1;
	}
	if (!l.worker && cfg.worker.mode == PS_WORKER_TRAIN &&
	    cfg.server.optimizer == PS_OPTIMIZER_NONE) {
		fprintf(stderr, "ps-launch: server.optimizer = none sends the "
			"averaged gradient back, for a --worker program that "
			"steps its own optimizer (ordo.torch); ps-worker's "
			"built-in model (worker.mode = train) needs "
			"server.optimizer = sgd\n");
		return 2;
	}
	if (l.rank_mode && l.hosts_file) {
		fprintf(stderr, "ps-launch: --rank and --hosts exclude each "
			"other: under srun/mpirun the cluster's launcher "
			"places the processes\n");
		return 2;
	}
	int secret_status = job_secret(&l, &cfg);
	if (secret_status != 0)
		return secret_status;
	if (l.rank_mode)
		return run_rank(&l, &cfg);
	if (l.hosts_file) {
		int st2 = prepare_hosts(&l, &cfg);
		if (st2 != 0)
			return st2;
	}
	l.stop_at_once = cfg.fault.restarts > 0;
	l.children = calloc((size_t)(1 + cfg.cluster.servers +
				     cfg.cluster.workers),
			    sizeof(*l.children));
	if (!l.children)
		return 1;
	if (cfg.output.dir[0]) {
		char why[PATH_MAX + 128];
		if (ps_make_dirs(cfg.output.dir, why, sizeof(why)) != PS_OK) {
			fprintf(stderr, "ps-launch: output.dir: %s\n", why);
			return 1;
		}
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
	free(l.hosts);
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
