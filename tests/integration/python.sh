# The Python package (python/ordo, ctypes over libordo.so.0): workers
# written in Python (python/examples/exact_worker.py, the exactness worker
# of tests/tools/exact_worker.c) run by ps-launch, 2 workers x 2 servers,
# every parameter checked after every iteration; and the package's errors
# (a bad key, a non-float32 buffer) raise ordo.Error / TypeError with the
# library's message.
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
assert_no_leftovers
