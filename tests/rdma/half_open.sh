#!/usr/bin/env bash
# tests/rdma/half_open.sh BUILD_DIR SOURCE_DIR - connections an rdma node
# accepts that the connector never completes, inside scripts/rdma-vm
# (ORDO_RDMA_VM=1; skips elsewhere): a node listening with
# transport.handshake_timeout_ms = 500 gets 12 connection requests with a
# valid hello that are never confirmed (half_open.c takes no event after
# its connect, so librdmacm never sends the RTU); the node must end each,
# logging it ("did not complete its handshake within 500 ms"), rather than
# hold its queue pair and buffers until rdma_cm gives up on it minutes
# later (about 430 such would fill its completion queue), and an honest
# connection must still get its message through.
source "$(dirname "$0")/guest_lib.sh" "$@"

tool=$BUILD/tests/rdma/half_open
n=12
mkfifo "$WORK/hold"
"$tool" listen 192.0.2.1 500 >"$WORK/listen.out" 2>"$WORK/listen.err" &
listener=$!
wait_for "$WORK/listen.out" '^port '
port=$(sed -n 's/^port //p' "$WORK/listen.out")
"$tool" connect 192.0.2.1 "$port" $n <"$WORK/hold" >"$WORK/connect.out" 2>&1 &
connector=$!
exec 3>"$WORK/hold" # the connector holds its requests while this is open
wait_for "$WORK/connect.out" "^sent $n$"
ended_all() { [ "$(grep -c 'did not complete its handshake within 500 ms' "$WORK/listen.err")" -eq $n ]; }
poll_until 120 ended_all ||
	fail "the node ended $(grep -c 'did not complete its handshake' "$WORK/listen.err") of $n half-open connections: $(tail -n 5 "$WORK/listen.err")"
"$tool" honest 192.0.2.1 "$port" 2>"$WORK/honest.err" ||
	fail "an honest connection failed after the half-open ones: $(cat "$WORK/honest.err")"
wait "$listener" || fail "the listener failed: $(tail -n 5 "$WORK/listen.err")"
grep -q "^got it$" "$WORK/listen.out" || fail "the honest message did not come"
exec 3>&-
wait "$connector"
pass "$n half-open rdma connections ended at the handshake timeout (500 ms), logged; an honest one still gets through"
