# The Python package (python/ordo, ctypes over libordo.so.0): workers
# written in Python (python/examples/exact_worker.py, the exactness worker
# of tests/tools/exact_worker.c) run by ps-launch, 2 workers x 2 servers,
# every parameter checked after every iteration; and the package's errors
# (a bad key, a non-float32 buffer) raise ordo.Error / TypeError with the
# library's message; Client.broadcast; ordo.__version__; asynchronous
# mode (pull); pip
# install into a fresh venv, offline, and the error without the library.
source "$(dirname "$0")/lib.sh" "$@"
py=/usr/bin/python3
[ -x $py ] || py=$(command -v python3)
python_worker $py "$SRC/python/examples/exact_worker.py"

launch py 180 --worker "$WORK/worker" --set train.iterations=4 \
	--set train.lr=1 --set train.momentum=0 || fail "the Python job exited $?"
n=$(grep -c "^exact: worker [01] of 2: 20388 values checked, 0 wrong$" "$WORK/py.out.log")
[ "$n" -eq 2 ] || fail "$n of 2 Python workers exact"
pass "2 Python workers x 2 servers, 4 iterations: every value exact"

env $PY_ENV $py - <<'PY' >"$WORK/errors.log" 2>&1 || fail "error handling: $(cat "$WORK/errors.log")"
import array, ordo
try:
    ordo.Config(sets=["train.nosuch=1"])
    raise SystemExit("a bad key was accepted")
except ordo.Error as e:
    assert e.code == ordo.PS_ECONFIG and "train.nosuch" in str(e), str(e)
c = ordo.Client(ordo.Config(sets=["cluster.scheduler_port=1"]))
try:
    c.declare("d", array.array("d", [0.0] * 4))
    raise SystemExit("a float64 buffer was accepted")
except TypeError as e:
    assert "float32" in str(e), str(e)
c.close()
print("errors ok")
PY
pass "a bad key raises ordo.Error (PS_ECONFIG, naming the key); a float64 buffer raises TypeError"

# Client.broadcast (ps_client_broadcast): worker 1's 3.5 MiB reach worker 0
# bit for bit in four messages of at most transport.max_message = 1 MiB;
# two workers that both broadcast as root end the job, saying so
cat >"$WORK/bcast.py" <<'PY'
import array, hashlib, sys, ordo
c = ordo.Client(ordo.Config(argv=sys.argv[2:]))
c.declare("w", array.array("f", [0.0] * 8))
c.start()
n = 7 << 19
buf = bytearray(hashlib.sha256(b"%d" % c.rank).digest() * (n // 32))
root = c.rank if sys.argv[1] == "own" else 1
c.broadcast(root, buf)
sys.stdout.write("bcast %d %s\n" % (c.rank, hashlib.sha256(buf).hexdigest()[:16]))
sys.stdout.flush()
c.finish(0)
c.close()
PY
cat >"$WORK/bcast" <<SH
#!/bin/sh
exec env $PY_ENV $py "$WORK/bcast.py" "\$BCAST_ROOT" "\$@"
SH
chmod +x "$WORK/bcast"
BCAST_ROOT=1 launch bcast 120 --worker "$WORK/bcast" --set train.iterations=0 \
	--set transport.max_message=1M || fail "broadcast: the job exited $?"
want=$($py -c 'import hashlib; print(hashlib.sha256(hashlib.sha256(b"1").digest() * ((7 << 19) // 32)).hexdigest()[:16])')
[ "$(grep -c "^bcast [01] $want$" "$WORK/bcast.out.log")" -eq 2 ] ||
	fail "broadcast: not worker 1's bytes on both: $(grep '^bcast' "$WORK/bcast.out.log" | tr '\n' ';')"
pass "Client.broadcast: worker 1's 3.5 MiB on both workers, bit for bit, in 1 MiB messages"
BCAST_ROOT=own launch bcast-two 120 --worker "$WORK/bcast" --set train.iterations=0 \
	--set cluster.heartbeat_timeout_ms=2000 && fail "two roots: the job succeeded"
grep -q "two workers broadcast as the root of one broadcast (barrier 0): worker [01] .* and worker [01] .*: every worker must name the same root" \
	"$WORK/bcast-two.err.log" || fail "two roots: no clear error: $(tail -n 5 "$WORK/bcast-two.err.log")"
pass "two workers broadcasting as root: the job ends naming both"

# ordo.__version__ is the project's
want=$(sed -n 's/^CMAKE_PROJECT_VERSION:STATIC=//p' "$BUILD/CMakeCache.txt")
got=$(env $PY_ENV $py -c "import ordo; print(ordo.__version__)" 2>&1)
[ "$got" = "$want" ] || fail "ordo.__version__ is '$got', the project is $want"
pass "ordo.__version__ = $got"

# asynchronous mode from Python: each push applied at once, pull fetches
cat >"$WORK/async_worker.py" <<'PY'
import array, sys, ordo
c = ordo.Client(ordo.Config(argv=sys.argv[1:]))
w = array.array("f", [1.0] * 8)
t = c.declare("w", w)
c.start()
g = array.array("f", [0.5] * 8)
for it in range(3):
    c.push(t, g, it)
    c.flush()
    c.pull(t)
    want = 1.0 - 0.5 * (it + 1)  # lr 1, no momentum, one worker
    assert list(w) == [want] * 8, "after push %d: %s, expected %s" % (it, list(w), want)
c.finish(3)
c.close()
print("async ok")
PY
python_worker $py "$WORK/async_worker.py"
launch async 120 --worker "$WORK/worker" --set train.mode=async --set cluster.workers=1 \
	--set cluster.servers=1 --set train.iterations=3 --set train.lr=1 \
	--set train.momentum=0 || fail "the async Python job exited $?"
grep -q "^async ok$" "$WORK/async.out.log" || fail "async: $(tail -n 5 "$WORK/async.err.log")"
pass "asynchronous mode from Python: push, flush, pull"

# pip into a fresh venv, offline (--no-index): the in-tree build backend
# needs nothing to download, and importing ordo needs no torch (the venv
# has none)
if ! $py -c "import venv, ensurepip" 2>/dev/null; then
	fail "$py has no venv/ensurepip (apt-get install python3-venv)"
fi
$py -m venv "$WORK/venv" >"$WORK/venv.log" 2>&1 || fail "python3 -m venv: $(tail -n 3 "$WORK/venv.log")"
"$WORK/venv/bin/pip" install --no-index --quiet "$SRC/python" >"$WORK/pip.log" 2>&1 ||
	fail "pip install ./python: $(tail -n 5 "$WORK/pip.log")"
got=$(cd "$WORK" && env $PY_ENV "$WORK/venv/bin/python" -c "import ordo; print(ordo.__version__, ordo.library_path())" 2>&1 | tail -1)
[ "$got" = "$want $LIBORDO_PATH" ] || fail "the venv's ordo: '$got'"
"$WORK/venv/bin/pip" show ordo >"$WORK/show.log" 2>&1 && grep -q "^Version: $want" "$WORK/show.log" ||
	fail "pip show ordo: $(cat "$WORK/show.log")"
# without the library anywhere: an ImportError naming where it looked
(cd "$WORK" && env -u LIBORDO_PATH LD_LIBRARY_PATH= "$WORK/venv/bin/python" -c "import ordo") \
	>"$WORK/nolib.log" 2>&1 && fail "import ordo without libordo.so.0 succeeded"
for where in "LIBORDO_PATH (unset)" "the prefix this package was installed with" "the dynamic linker's path"; do
	grep -qF "$where" "$WORK/nolib.log" || fail "the missing-library error does not name '$where': $(cat "$WORK/nolib.log")"
done
pass "pip install ./python in a fresh venv, offline: ordo $want; without the library the import names LIBORDO_PATH, the install prefix and the linker's path"
assert_no_leftovers
