# tests/integration/lib.sh - shared by the integration tests (sourced).
#
# Usage in a test: source lib.sh "$@"  (with BUILD_DIR SOURCE_DIR first).
# Every test works in its own temporary directory; its job config lives
# there, so every process of the test carries that path on its command
# line, which is how assert_no_leftovers finds stragglers.
set -u
BUILD=$1
SRC=$2
shift 2
ARGS=("$@") # the test's own arguments
TOOLS=$BUILD/tests # test programs (exact_worker, fuzz_sender...)
WORK=$(mktemp -d /tmp/ordo-test.XXXXXX)
JOB=$WORK/job.ini

on_exit() {
	local rc=$?
	pkill -9 -f "$WORK" 2>/dev/null
	if [ $rc -ne 0 ] && [ $rc -ne 77 ]; then
		for f in "$WORK"/*.log; do
			[ -f "$f" ] || continue
			echo "---- $(basename "$f") (last 40 lines)"
			tail -n 40 "$f"
		done
	fi
	[ -n "${KEEP:-}" ] || rm -rf "$WORK"
	exit $rc
}
trap on_exit EXIT

fail() {
	echo "FAIL: $*" >&2
	exit 1
}

pass() {
	echo "ok: $*"
}

# The base job config of the tests: ephemeral scheduler port, quick
# heartbeats. The timeouts only end a job that is stuck, so they are far
# above anything a loaded 2-core machine under the sanitizers takes: a node
# starved for a few seconds must not be taken for dead. Extra lines (INI)
# may be appended by the caller.
cat >"$JOB" <<INI
[cluster]
scheduler_host = 127.0.0.1
scheduler_port = 0
servers = 2
workers = 2
heartbeat_interval_ms = 100
heartbeat_timeout_ms = 10000
connect_timeout_ms = 60000
[train]
iterations = 10
[log]
level = info
INI

# refuses_bad_args BIN ARGS...: each ARGS (one string, split on spaces)
# makes BIN exit 2 with a message on stderr naming BIN or its usage.
refuses_bad_args() {
	local bin=$1 name rc bad
	name=$(basename "$bin")
	shift
	for bad in "$@"; do
		# shellcheck disable=SC2086 # one try's words
		"$bin" $bad >"$WORK/bad.out.log" 2>"$WORK/bad.err.log"
		rc=$?
		[ $rc -eq 2 ] || fail "$name $bad exited $rc, expected 2"
		grep -q "$name\|usage" "$WORK/bad.err.log" ||
			fail "$name $bad: no message"
	done
}

# launch NAME TIMEOUT [ps-launch args...]: runs a job; stdout in
# $WORK/NAME.out.log, stderr in $WORK/NAME.err.log; returns its status.
launch() {
	local name=$1 limit=$2
	shift 2
	timeout --kill-after=5 "$limit" "$BUILD/ps-launch" --config "$JOB" "$@" \
		>"$WORK/$name.out.log" 2>"$WORK/$name.err.log"
}

# poll_until SECONDS COMMAND [ARGS...]: runs COMMAND every 0.1 s until it
# succeeds (returns 0) or SECONDS have passed (returns 1). A wait for a
# condition: the deadline only ends a hang, so make it generous.
poll_until() {
	local deadline=$((SECONDS + $1))
	shift
	until "$@"; do
		[ $SECONDS -lt $deadline ] || return 1
		sleep 0.1
	done
}

# no_process_of PATTERN: true when no process's command line has PATTERN.
no_process_of() {
	! pgrep -f "$1" >/dev/null
}

# Fails if a process of this test is still running 30 s after the job
# ended (a process may still be exiting when its parent returned).
assert_no_leftovers() {
	if ! poll_until 30 no_process_of "$WORK"; then
		pgrep -af "$WORK" >&2
		fail "processes left running"
	fi
}

# start_job NAME [ps-launch args...]: like launch, in the background;
# JOB_PID is the pid of the timeout(1) around ps-launch (it passes
# SIGINT/SIGTERM on). Its limit, 300 s, only ends a hang: the status is
# then 124 (or 137). timeout(1) arms --kill-after on any signal it passes
# on, not only at the limit, so that is a bound on how long the job may
# take to stop after a test's SIGINT: far above ps-launch's own SIGTERM
# and SIGKILL escalation (8 s), which a loaded machine may need whole
# (5 s here made interrupt.sh fail under load).
start_job() {
	local name=$1
	shift
	timeout --kill-after=60 300 "$BUILD/ps-launch" --config "$JOB" "$@" \
		>"$WORK/$name.out.log" 2>"$WORK/$name.err.log" &
	JOB_PID=$!
}

# start_held_job NAME HOLD [ps-launch args...]: start_job of an exact job
# (tools/exact_worker, 2 tensors, 20 iterations, lr 1) whose workers hold
# their last iteration until the file HOLD exists, once both its servers
# have joined; EPS: the scheduler's and the servers' endpoints.
start_held_job() {
	local name=$1 hold=$2
	shift 2
	EXACT_WORKER_SIZES=1000,4097 EXACT_WORKER_HOLD=$hold start_job "$name" \
		--worker "$TOOLS/exact_worker" --set train.iterations=20 \
		--set train.lr=1 --set train.momentum=0 "$@"
	wait_for "$WORK/$name.err.log" 'server 0\] info: joined job'
	wait_for "$WORK/$name.err.log" 'server 1\] info: joined job'
	EPS=$(grep -E '\[ordo (scheduler|server)\] info: .*listening on tcp://' \
		"$WORK/$name.err.log" | grep -o 'tcp://[0-9.:]*' | sort -u)
	[ "$(echo "$EPS" | wc -l)" -eq 3 ] || fail "$name: endpoints not found: $EPS"
}

# assert_job_ended NAME STATUS WHAT: fails unless the job start_job NAME
# started ended by itself rather than by the hang guard. timeout(1) exits
# 124 when its limit passed (137 when it then had to kill); ps-launch may
# exit 137 itself (a child killed by SIGKILL), and then says so.
assert_job_ended() {
	local name=$1 status=$2 what=$3
	[ "$status" -ne 124 ] || fail "$what: the job hung (ended by the hang guard)"
	[ "$status" -ne 137 ] ||
		grep -q "^ps-launch: job failed (status 137)$" "$WORK/$name.err.log" ||
		fail "$what: the job hung (killed by the hang guard)"
}

# assert_job_exact PID NAME WHAT AFTER: waits for job NAME (PID), which
# must end by itself (assert_job_ended NAME STATUS WHAT), succeed, and
# leave both its workers exact ($WORK/NAME.out.log); AFTER names what the
# job went through, for the messages.
assert_job_exact() {
	local pid=$1 name=$2 what=$3 after=$4 status n
	wait "$pid"
	status=$?
	assert_job_ended "$name" $status "$what"
	[ $status -eq 0 ] || fail "the job failed after $after (status $status)"
	n=$(grep -c "^exact: .* 0 wrong$" "$WORK/$name.out.log")
	[ "$n" -eq 2 ] || fail "$n of 2 workers exact after $after"
}

# wait_for FILE PATTERN: waits (up to 120 s, a hang guard) for a line
# matching PATTERN.
wait_for() {
	poll_until 120 grep -qs -- "$2" "$1" ||
		fail "waited 120 s for '$2' in $(basename "$1")"
}

# loss_at FILE WORKER ITER: the loss a worker printed for an iteration.
loss_at() {
	grep "^worker $2 iter $3/" "$1" | awk '{print $6}'
}

# python_worker PYTHON SCRIPT: writes $WORK/worker, a program ps-launch
# --worker can run: PYTHON SCRIPT with the build's Python package
# (PYTHONPATH, LIBORDO_PATH: python/ordo) and, when this build is
# sanitized, the ASan runtime loaded first (libordo.so needs it before
# python's own libraries; PY_ENV holds those variables for other runs).
python_worker() {
	local pre=
	export PYTHONPATH=$SRC/python LIBORDO_PATH=$BUILD/libordo.so.0
	[ -e "$LIBORDO_PATH" ] || fail "no $LIBORDO_PATH (the build makes libordo.so)"
	if grep -q '^PS_SANITIZE:STRING=\(ON\|address\)$' "$BUILD/CMakeCache.txt"; then
		pre="LD_PRELOAD=$(gcc -print-file-name=libasan.so) ASAN_OPTIONS=detect_leaks=0"
	fi
	PY_ENV=$pre
	cat >"$WORK/worker" <<SH
#!/bin/sh
exec env $pre $1 "$2" "\$@"
SH
	chmod +x "$WORK/worker"
}
