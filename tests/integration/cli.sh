# Every binary's command line, config errors, and start-up failures:
# each gives a clear message and a non-zero status, never a hang.
source "$(dirname "$0")/lib.sh" "$@"

for bin in ps-scheduler ps-server ps-worker ps-launch; do
	"$BUILD/$bin" --help >"$WORK/help.log" 2>&1 || fail "$bin --help exited non-zero"
	grep -q -- '--config' "$WORK/help.log" || fail "$bin --help does not mention --config"
	grep -q -- '--set' "$WORK/help.log" || fail "$bin --help does not mention --set"
	"$BUILD/$bin" --version | grep -q "ordo 0.1.0" || fail "$bin --version"
	"$BUILD/$bin" --no-such-option >/dev/null 2>"$WORK/err.log" && fail "$bin accepted a bad option"
	grep -q "no-such-option" "$WORK/err.log" || fail "$bin did not name the bad option"
	pass "$bin: --help, --version, bad option"
done

# expect_config_error DESCRIPTION PATTERN [args...]: exit 2, message matches.
# (timeout: a hang guard, far above the moment a config error takes)
expect_config_error() {
	local what=$1 pattern=$2
	shift 2
	timeout 120 "$BUILD/ps-server" "$@" >/dev/null 2>"$WORK/err.log"
	local rc=$?
	[ $rc -eq 2 ] || fail "$what: exit $rc, expected 2"
	grep -q -- "$pattern" "$WORK/err.log" || {
		cat "$WORK/err.log" >&2
		fail "$what: message does not match '$pattern'"
	}
	pass "$what"
}

bad=$WORK/bad.ini
printf '[cluster]\nservers = 2\n[train]\ntrian_lr = 3\n' >"$bad"
expect_config_error "unknown key" "bad.ini:4.*trian_lr" --config "$bad"
printf '[cluster]\nservers = 2\n[trian]\nlr = 3\n' >"$bad"
expect_config_error "unknown section" "bad.ini:4.*trian" --config "$bad"
printf '[train]\nmode = fast\n' >"$bad"
expect_config_error "bad enum" "bad.ini:2.*train.mode.*sync.*async" --config "$bad"
printf '[train]\nlr = -1\n' >"$bad"
expect_config_error "out of range" "bad.ini:2.*train.lr" --config "$bad"
printf '[scheduling]\npartition_size = 4MB x\n' >"$bad"
expect_config_error "bad size" "bad.ini:2.*scheduling.partition_size" --config "$bad"
expect_config_error "missing file" "$WORK/none.ini" --config "$WORK/none.ini"
expect_config_error "bad --set" "train.iterations" --set train.iterations=abc
expect_config_error "unknown --set key" "no.such" --set no.such=1
ORDO_TRAIN_LR=abc expect_config_error "bad environment" "ORDO_TRAIN_LR"
expect_config_error "an optimizer the servers do not know" \
	"server.optimizer.*adagrad.*sgd, none" --set server.optimizer=adagrad
# server.optimizer = none with ps-worker's built-in model: refused before
# anything starts (ps-launch) or at the worker's start (ps-worker)
timeout 120 "$BUILD/ps-launch" --set server.optimizer=none >/dev/null 2>"$WORK/err.log"
rc=$?
[ $rc -eq 2 ] || fail "ps-launch, server.optimizer = none with ps-worker: exit $rc, expected 2"
grep -q "ps-worker's built-in model (worker.mode = train) needs server.optimizer = sgd" \
	"$WORK/err.log" || fail "ps-launch, server.optimizer = none with ps-worker: no clear message"
timeout 120 "$BUILD/ps-worker" --set server.optimizer=none >/dev/null 2>"$WORK/err.log"
rc=$?
[ $rc -eq 2 ] || fail "ps-worker, server.optimizer = none: exit $rc, expected 2"
grep -q "needs server.optimizer = sgd" "$WORK/err.log" ||
	fail "ps-worker, server.optimizer = none: no clear message"
pass "server.optimizer = none refused for ps-worker's built-in model"
# ps-launch -- PROGRAM ARGS: the program's errors at once, exit 2 (that
# the arguments reach the program: tests/integration/pytorch.sh)
for bad in "-- nosuchprog-$$:not found on PATH" "--:must be followed by the workers' program" \
	"--worker x -- ls:--worker and -- PROGRAM both name" "-- ./nosuch/prog:No such file" \
	"--env NOPE_$$:is not set here" "--env 9x:not a variable name"; do
	args=${bad%%:*} want=${bad#*:}
	# shellcheck disable=SC2086
	timeout 60 "$BUILD/ps-launch" $args >/dev/null 2>"$WORK/err.log"
	rc=$?
	[ $rc -eq 2 ] || fail "ps-launch $args: exit $rc, expected 2"
	grep -q -- "$want" "$WORK/err.log" || fail "ps-launch $args: no '$want' in: $(cat "$WORK/err.log")"
done
pass "ps-launch -- PROGRAM: a missing program, a bare '--', --worker with it; --env: unset, not a name"
# server.device = cuda needs a CUDA build (tests/cuda/no_device.sh checks
# the CUDA build's start-up error)
if ! grep -q '^PS_WITH_CUDA:BOOL=ON' "$BUILD/CMakeCache.txt"; then
	expect_config_error "server.device = cuda without CUDA" \
		"server.device = cuda: this build has no CUDA support (configure with -DPS_WITH_CUDA=ON)" \
		--set server.device=cuda
	timeout 120 "$BUILD/ps-launch" --set server.device=cuda >/dev/null 2>"$WORK/err.log"
	rc=$?
	[ $rc -eq 2 ] || fail "ps-launch, server.device = cuda without CUDA: exit $rc, expected 2"
	grep -q "this build has no CUDA support" "$WORK/err.log" ||
		fail "ps-launch, server.device = cuda without CUDA: no clear message"
	pass "ps-launch: server.device = cuda without CUDA"
	expect_config_error "worker.gradients = cuda without CUDA" \
		"worker.gradients = cuda: this build has no CUDA support (configure with -DPS_WITH_CUDA=ON)" \
		--set worker.gradients=cuda
fi

# Scheduler unreachable: the node gives up after connect_timeout_ms (the
# message names the limit it gave up at) instead of hanging (ended by the
# hang guard of timeout(1): status 124).
port=$(python3 -c 'import socket; s=socket.socket(); s.bind(("127.0.0.1",0)); print(s.getsockname()[1])')
timeout 120 "$BUILD/ps-server" --config "$JOB" --set cluster.scheduler_port="$port" \
	--set cluster.connect_timeout_ms=500 >/dev/null 2>"$WORK/err.log"
rc=$?
[ $rc -ne 0 ] && [ $rc -ne 124 ] || fail "unreachable scheduler: exit $rc"
grep -q "scheduler tcp://127.0.0.1:$port unreachable after 500 ms" "$WORK/err.log" ||
	fail "unreachable scheduler: no clear message"
pass "scheduler unreachable"

# Port in use: a second scheduler on the same port fails clearly. The
# first waits for registrations far longer than the test takes (it is
# killed once the second has failed), so the port stays taken.
"$BUILD/ps-scheduler" --config "$JOB" --set cluster.scheduler_port="$port" \
	--set cluster.register_timeout_ms=3600000 >/dev/null 2>"$WORK/first.log" &
first=$!
wait_for "$WORK/first.log" "listening on"
timeout 120 "$BUILD/ps-scheduler" --config "$JOB" --set cluster.scheduler_port="$port" \
	>/dev/null 2>"$WORK/err.log"
rc=$?
kill -0 $first 2>/dev/null || fail "port in use: the first scheduler is gone"
kill $first
wait $first
[ $rc -ne 0 ] && [ $rc -ne 124 ] || fail "port in use: exit $rc"
grep -q "address already in use" "$WORK/err.log" || fail "port in use: no clear message"
pass "port in use"

# Registration timeout: nobody joins; the scheduler says who is missing.
timeout 120 "$BUILD/ps-scheduler" --config "$JOB" --set cluster.register_timeout_ms=500 \
	>/dev/null 2>"$WORK/err.log"
rc=$?
[ $rc -ne 0 ] && [ $rc -ne 124 ] || fail "registration timeout: exit $rc"
grep -q "only 0 of 2 server(s) and 0 of 2 worker(s) registered within 500 ms (cluster.register_timeout_ms)" \
	"$WORK/err.log" || fail "registration timeout: no clear message"
pass "registration timeout"
assert_no_leftovers

# ps-model: stats of a shipped model, check of a broken one, usage errors.
"$BUILD/ps-model" stats "$SRC/conf/models/vgg16.json" >"$WORK/stats.log" ||
	fail "ps-model stats exited non-zero"
grep -qx 'params 138357544' "$WORK/stats.log" || fail "ps-model stats: params line"
"$BUILD/ps-model" check "$SRC/conf/models/resnet50.json" | grep -q ': ok (' ||
	fail "ps-model check of a good model"
sed 's/"features.2"\]/"features.99"]/' "$SRC/conf/models/vgg16.json" >"$WORK/broken.json"
"$BUILD/ps-model" check "$WORK/broken.json" >/dev/null 2>"$WORK/err.log"
rc=$?
[ $rc -eq 1 ] || fail "ps-model check of a broken model: exit $rc"
grep -q "broken.json: \$.ops\[[0-9]*\].deps\[0\]: unknown op 'features.99'" "$WORK/err.log" ||
	fail "ps-model check: the error does not name the JSON path"
"$BUILD/ps-model" --help >/dev/null || fail "ps-model --help"
"$BUILD/ps-model" --version | grep -q "ordo 0.1.0" || fail "ps-model --version"
"$BUILD/ps-model" frobnicate x >/dev/null 2>&1
[ $? -eq 2 ] || fail "ps-model with an unknown command should exit 2"
pass "ps-model: stats, check, errors"

# model/apply_profile.py: measured op times replace the roofline ones.
python3 - "$SRC/tests/models/chain8.json" "$WORK/profile.json" <<'PY'
import json, sys
m = json.load(open(sys.argv[1]))
json.dump({op["name"]: 1000.0 for op in m["ops"]}, open(sys.argv[2], "w"))
PY
python3 "$SRC/model/apply_profile.py" "$SRC/tests/models/chain8.json" \
	"$WORK/profile.json" "$WORK/measured.json" --device "test rig" ||
	fail "apply_profile.py failed"
"$BUILD/ps-model" stats "$WORK/measured.json" >"$WORK/stats.log" || fail "measured model does not load"
grep -qx 'times measured' "$WORK/stats.log" || fail "times source not 'measured'"
grep -qx 'iteration_ms 16.000' "$WORK/stats.log" || fail "measured times not applied"
echo '{"l0": 1}' >"$WORK/partial.json"
python3 "$SRC/model/apply_profile.py" "$SRC/tests/models/chain8.json" \
	"$WORK/partial.json" "$WORK/x.json" 2>"$WORK/err.log" && fail "partial profile accepted"
grep -q "no time for 15 op(s)" "$WORK/err.log" || fail "partial profile: unclear error"
pass "apply_profile.py: measured times, partial profile refused"

# ps-launch --worker: a path with a '/' is relative to the current
# directory (as in a shell), a bare name is a program beside ps-launch.
mkdir -p "$WORK/bin"
ln -s "$TOOLS/exact_worker" "$WORK/bin/my_worker"
(cd "$WORK" && EXACT_WORKER_SIZES=100 launch relworker 120 --worker bin/my_worker \
	--set train.iterations=2 --set train.lr=1 --set train.momentum=0) ||
	fail "--worker bin/my_worker (relative to the current directory) failed"
[ "$(grep -c '^exact: .* 0 wrong$' "$WORK/relworker.out.log")" -eq 2 ] || fail "relative --worker: not exact"
launch nosuchworker 120 --worker no_such_worker_program --set train.iterations=2 &&
	fail "a missing --worker program ran"
grep -q "ps-launch: cannot run $BUILD/no_such_worker_program: No such file or directory" \
	"$WORK/nosuchworker.err.log" || fail "no error naming the missing worker program"
assert_no_leftovers
pass "ps-launch --worker: dir/prog from the current directory, a bare name beside ps-launch"
