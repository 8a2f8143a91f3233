# ps_client_last_error inside a running job (include/ordo/ordo.h,
# "Errors"): tests/tools/client_errors.c, 2 workers x 2 servers, makes
# client calls fail after the start (a late declaration, a push of a
# tensor never declared, a wait that times out, a bad broadcast root, a
# NaN learning rate, a second start) and after the finish (push, finish,
# wait, barrier), and checks each text names the call and the problem;
# the log has the same lines. A worker that leaves without a word makes
# the other's wait fail with "the job failed: " and the scheduler's
# reason. From Python, ordo.Error carries the same text (.reason, str()).
# The failures without a job: the unit test test_client_errors.
source "$(dirname "$0")/lib.sh" "$@"

launch errors 120 --worker "$TOOLS/client_errors" --set train.iterations=3 ||
	fail "the job exited $?"
n=$(grep -c "^client_errors: rank [01]: 10 failures, each explained$" "$WORK/errors.out.log")
[ "$n" -eq 2 ] || fail "$n of 2 workers explained their failures: $(grep FAIL "$WORK/errors.out.log" | head -n 3)"
for line in "error: ps_client_push: tensor 5 is not declared (this client declared 1 tensor)" \
	"error: ps_client_wait: tensor 'w': version 99 did not arrive within 50 ms" \
	"error: ps_client_finish: called again: the job has shut down already"; do
	[ "$(grep -cF -- "$line" "$WORK/errors.err.log")" -eq 2 ] ||
		fail "the log does not say, for both workers: $line"
done
pass "10 failing calls per worker in a job, each with a text naming the call and the problem, logged as such"

# worker 1 leaves right after joining: worker 0's wait fails with the
# reason the scheduler gave
cat >"$WORK/die" <<SH
#!/bin/sh
exec "$TOOLS/client_errors" --die-rank 1 "\$@"
SH
chmod +x "$WORK/die"
launch die 120 --worker "$WORK/die" --set cluster.heartbeat_timeout_ms=2000 &&
	fail "the job succeeded without worker 1"
grep -q "^client_errors: rank 1: leaving without a word$" "$WORK/die.out.log" ||
	fail "worker 1 did not leave: $(tail -n 5 "$WORK/die.err.log")"
line=$(grep "^client_errors: rank 0: the job failed: " "$WORK/die.out.log") ||
	fail "worker 0 said nothing: $(tail -n 5 "$WORK/die.err.log")"
grep -q "^client_errors: rank 0: the job failed: ps_client_wait: the job failed: .*worker 1" <<<"$line" ||
	fail "worker 0's error does not name the dead worker: $line"
pass "a worker gone: the other's wait fails with \"${line#client_errors: rank 0: the job failed: }\""

# Python: ordo.Error carries the library's text (not in a ThreadSanitizer
# build: python3 cannot load a libordo.so built with it)
if grep -q '^PS_SANITIZE:STRING=thread$' "$BUILD/CMakeCache.txt"; then
	echo "Python part skipped: a ThreadSanitizer build"
	assert_no_leftovers
	exit 0
fi
py=/usr/bin/python3
[ -x $py ] || py=$(command -v python3)
cat >"$WORK/py_errors.py" <<'PY'
import array, sys, ordo

def fails(what, call, *words):
    try:
        call()
    except ordo.Error as e:
        for w in words:
            assert w in e.reason and w in str(e), "%s: %r lacks %r" % (what, str(e), w)
        return
    raise SystemExit("%s did not fail" % what)

c = ordo.Client(ordo.Config(argv=sys.argv[1:]))
w = array.array("f", [0.0] * 8)
g = array.array("f", [1.0] * 8)
t = c.declare("w", w)
fails("a second declaration", lambda: c.declare("w", w),
      "ps_client_declare: tensor 'w' is declared already (tensor 0)")
fails("a push before the start", lambda: c.push(t, g, 0),
      "ps_client_push: the client has not joined a job")
c.start()
fails("a push of a tensor never declared", lambda: c.push(5, g, 0),
      "ps_client_push: tensor 5 is not declared")
fails("a wait that times out", lambda: c.wait(t, 99, 50),
      "ps_client_wait: tensor 'w': version 99 did not arrive within 50 ms")
it = c.start_iteration()
while c.next_iteration(it):
    c.push(t, g, it)
    c.wait(t, it + 1)
    it += 1
c.finish(it)
fails("a push after the finish", lambda: c.push(t, g, it),
      "ps_client_push: the job has shut down")
c.close()
# one write for the line (both workers share stdout; under
# PYTHONUNBUFFERED print() writes the text and its newline apart)
sys.stdout.write("py_errors: rank ok\n")
PY
python_worker $py "$WORK/py_errors.py"
launch py 120 --worker "$WORK/worker" --set train.iterations=2 ||
	fail "the Python job exited $?: $(grep -v '^\[ordo' "$WORK/py.err.log" | tail -n 5)"
[ "$(grep -c "^py_errors: rank ok$" "$WORK/py.out.log")" -eq 2 ] ||
	fail "Python: $(grep -v '^\[ordo' "$WORK/py.err.log" | tail -n 5)"
pass "Python: ordo.Error's reason and message are the library's text (declare, push, wait, after finish)"
assert_no_leftovers
