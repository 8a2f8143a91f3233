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
# heartbeats. Extra lines (INI) may be appended by the caller.
cat >"$JOB" <<INI
[cluster]
scheduler_host = 127.0.0.1
scheduler_port = 0
servers = 2
workers = 2
heartbeat_interval_ms = 100
heartbeat_timeout_ms = 3000
connect_timeout_ms = 15000
[train]
iterations = 10
[log]
level = info
INI

# launch NAME TIMEOUT [ps-launch args...]: runs a job; stdout in
# $WORK/NAME.out.log, stderr in $WORK/NAME.err.log; returns its status.
launch() {
	local name=$1 limit=$2
	shift 2
	timeout --kill-after=5 "$limit" "$BUILD/ps-launch" --config "$JOB" "$@" \
		>"$WORK/$name.out.log" 2>"$WORK/$name.err.log"
}

# Fails if any process of this test is still running.
assert_no_leftovers() {
	sleep 0.2
	if pgrep -f "$WORK" >/dev/null; then
		pgrep -af "$WORK" >&2
		fail "processes left running"
	fi
}

# start_job NAME [ps-launch args...]: like launch, in the background;
# JOB_PID is ps-launch's pid.
start_job() {
	local name=$1
	shift
	timeout --kill-after=5 120 "$BUILD/ps-launch" --config "$JOB" "$@" \
		>"$WORK/$name.out.log" 2>"$WORK/$name.err.log" &
	JOB_PID=$!
}

# wait_for FILE PATTERN: waits up to 30 s for a line matching PATTERN.
wait_for() {
	for _ in $(seq 1 300); do
		grep -q -- "$2" "$1" && return 0
		sleep 0.1
	done
	fail "waited 30 s for '$2' in $(basename "$1")"
}

# loss_at FILE WORKER ITER: the loss a worker printed for an iteration.
loss_at() {
	grep "^worker $2 iter $3/" "$1" | awk '{print $6}'
}
