#!/usr/bin/env python3
"""tests/tools/tcp_replay.py - captures a TCP client's bytes and replays
them (tests/integration/security.sh: replayed CURVE traffic is refused).

  tcp_replay.py record PORT_FILE HOST PORT OUT
      listens on an ephemeral 127.0.0.1 port (written to PORT_FILE once
      listening), accepts one client, relays it to HOST:PORT both ways
      until either side closes, and writes every byte the client sent
      to OUT.
  tcp_replay.py replay HOST PORT FILE
      connects to HOST:PORT, sends FILE's bytes as they were captured, and
      reads until the server closes the connection; prints the bytes it
      got back and exits 0 (a server that never closes hangs: the test's
      guard ends it).
"""
import os
import selectors
import socket
import sys


def record(port_file, host, port, out):
    ls = socket.socket()
    ls.bind(("127.0.0.1", 0))
    ls.listen(1)
    tmp = port_file + ".tmp"
    with open(tmp, "w") as f:
        f.write("%d\n" % ls.getsockname()[1])
    os.rename(tmp, port_file)
    client, _ = ls.accept()
    upstream = socket.create_connection((host, int(port)))
    captured = bytearray()
    sel = selectors.DefaultSelector()
    sel.register(client, selectors.EVENT_READ, upstream)
    sel.register(upstream, selectors.EVENT_READ, client)
    done = False
    while not done:
        for key, _ in sel.select():
            data = key.fileobj.recv(65536)
            if not data:
                done = True
                break
            if key.fileobj is client:
                captured += data
            key.data.sendall(data)
    client.close()
    upstream.close()
    with open(out, "wb") as f:
        f.write(captured)
    print("tcp_replay: captured %d bytes" % len(captured))


def replay(host, port, path):
    data = open(path, "rb").read()
    s = socket.create_connection((host, int(port)))
    try:
        s.sendall(data)
    except OSError:
        pass  # the server may close before it has read everything
    got = 0
    while True:
        try:
            chunk = s.recv(65536)
        except OSError:
            break
        if not chunk:
            break
        got += len(chunk)
    s.close()
    print("tcp_replay: replayed %d bytes, got %d back, then the server "
          "closed the connection" % (len(data), got))


if __name__ == "__main__":
    if len(sys.argv) == 6 and sys.argv[1] == "record":
        record(*sys.argv[2:])
    elif len(sys.argv) == 5 and sys.argv[1] == "replay":
        replay(*sys.argv[2:])
    else:
        sys.exit(__doc__)
