"""The emulated cluster: one network namespace per node (scheduler, each
server, each worker) joined by veth pairs to a bridge in a namespace of
its own, every host's link shaped in both directions with tc tbf, or
plain loopback (Cluster); the bulk TCP streams that measure what a shaped
link delivers (Cluster.probe_rate); the probe of whether namespaces can be
built here, and the removal of namespaces a crashed ps-bench left.
"""

import json
import os
import re
import shutil
import signal
import subprocess
import sys

from .common import log, run_cmd

NS_PREFIX = "ordo-bench-"
SUBNET = "10.77.0"


def pid_is_bench(pid):
    try:
        with open("/proc/%d/cmdline" % pid, "rb") as f:
            cmd = f.read().replace(b"\0", b" ").decode("utf-8", "replace")
    except OSError:
        return False
    return "ps-bench" in cmd or "ps_bench" in cmd


def list_netns():
    p = run_cmd(["ip", "netns", "list"], check=False)
    return [line.split()[0] for line in p.stdout.splitlines() if line.strip()]


def kill_netns_processes(ns):
    p = run_cmd(["ip", "netns", "pids", ns], check=False)
    for tok in p.stdout.split():
        try:
            os.kill(int(tok), signal.SIGKILL)
        except (ValueError, OSError):
            pass


def remove_stale_namespaces():
    """Removes namespaces left by a ps-bench that is no longer running."""
    removed = []
    for ns in list_netns():
        m = re.match(r"^%s(\d+)-" % re.escape(NS_PREFIX), ns)
        if not m:
            continue
        pid = int(m.group(1))
        if pid != os.getpid() and pid_is_bench(pid):
            continue  # a ps-bench running beside us
        kill_netns_processes(ns)
        run_cmd(["ip", "netns", "del", ns], check=False)
        removed.append(ns)
    if removed:
        log("removed %d namespace(s) left by an earlier run: %s" %
            (len(removed), " ".join(removed)))
    return removed


def netns_available():
    """(True, '') when this process can build namespaces, else (False, why)."""
    if os.geteuid() != 0:
        return False, "not root (namespaces, veth and tc need root)"
    for tool in ("ip", "tc"):
        if not shutil.which(tool):
            return False, "'%s' not found (Debian package iproute2)" % tool
    probe = "%s%d-probe" % (NS_PREFIX, os.getpid())
    p = run_cmd(["ip", "netns", "add", probe], check=False)
    if p.returncode != 0:
        return False, "'ip netns add' failed: %s" % p.stderr.strip()
    ok, why = True, ""
    p = run_cmd(["ip", "-n", probe, "link", "add", "v0", "type", "veth",
                 "peer", "name", "v1"], check=False)
    if p.returncode != 0:
        ok, why = False, "cannot create veth pairs: %s" % p.stderr.strip()
    else:
        p = run_cmd(["tc", "-n", probe, "qdisc", "add", "dev", "v0", "root",
                     "tbf", "rate", "1gbit", "burst", "256k", "latency",
                     "25ms"], check=False)
        if p.returncode != 0:
            ok, why = False, "tc tbf unavailable: %s" % p.stderr.strip()
    run_cmd(["ip", "netns", "del", probe], check=False)
    return ok, why


# Bulk TCP streams from every worker to every server at once over the
# shaped links (the pattern of the pushes: each worker's uplink and each
# server's downlink carry several streams): the rate a host's link really
# delivers when it is busy (ps-sim's link rate, docs/sim.md).
LINK_PROBE_RECV = r"""
import socket, sys, threading, time
n_conn = int(sys.argv[3])
s = socket.socket()
s.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
s.bind((sys.argv[1], int(sys.argv[2])))
s.listen(n_conn)
s.settimeout(20)
print("ready", flush=True)
res = []
def take(c):
    c.settimeout(20)
    buf = bytearray(1 << 20)
    n, t0, t1 = 0, None, None
    while True:
        k = c.recv_into(buf)
        if not k:
            break
        now = time.monotonic()
        if t0 is None:
            t0 = now  # the bytes of the first read came before t0
        else:
            n += k
        t1 = now
    if t0 is not None:
        res.append((n, t0, t1))
th = []
for _ in range(n_conn):
    c, _ = s.accept()
    th.append(threading.Thread(target=take, args=(c,)))
    th[-1].start()
for t in th:
    t.join()
print(sum(r[0] for r in res), min(r[1] for r in res),
      max(r[2] for r in res), flush=True)
"""
LINK_PROBE_SEND = r"""
import socket, sys, threading, time
seconds = float(sys.argv[2])
def go(host, port):
    c = socket.create_connection((host, int(port)), timeout=20)
    buf = bytes(1 << 20)
    end = time.monotonic() + seconds
    while time.monotonic() < end:
        c.sendall(buf)
    c.close()
th = [threading.Thread(target=go, args=a.split(":")) for a in sys.argv[3:]]
for t in th:
    t.start()
for t in th:
    t.join()
"""
LINK_PROBE_PORT = 47911


def netns_prefix(ns):
    """The command prefix that runs a program in namespace ns (none:
    here)."""
    return ["ip", "netns", "exec", ns] if ns else []


def node_sets(addr, sched_addr):
    """--set arguments that put a node on its host's address and point it
    at the scheduler's."""
    return ["--set", "cluster.bind_host=" + addr,
            "--set", "cluster.advertise_host=" + addr,
            "--set", "cluster.scheduler_host=" + sched_addr]


class Cluster:
    """Node namespaces on a bridge (netns mode) or plain loopback; in
    device mode every node on the RDMA device's address (device_addr,
    set before setup). The namespaces are named NS_PREFIX (or ns_prefix:
    another program's, such as bench/torch_bench.py's) PID-NODE."""

    def __init__(self, mode, workers, servers, mtu=9000, tbf_latency_ms=25,
                 dilation=1.0, ns_prefix=None):
        self.mode = mode
        self.dilation = dilation
        self.prefix = "%s%d-" % (ns_prefix or NS_PREFIX, os.getpid())
        self.mtu = mtu
        self.tbf_latency_ms = tbf_latency_ms
        self.nodes = [("sched", "scheduler", 0)]
        self.nodes += [("s%d" % i, "server", i) for i in range(servers)]
        self.nodes += [("w%d" % i, "worker", i) for i in range(workers)]
        self.addr = {}
        self.created = []
        self.bridge_ns = self.prefix + "br"
        self.bandwidth = None

    def ns(self, name):
        return self.prefix + name

    def setup(self):
        if self.mode == "loopback":
            for name, _, _ in self.nodes:
                self.addr[name] = "127.0.0.1"
            return
        if self.mode == "device":  # every node on the RDMA device's address
            for name, _, _ in self.nodes:
                self.addr[name] = self.device_addr
            return
        br = self.bridge_ns
        run_cmd(["ip", "netns", "add", br])
        self.created.append(br)
        run_cmd(["ip", "-n", br, "link", "set", "lo", "up"])
        run_cmd(["ip", "-n", br, "link", "add", "br0", "type", "bridge"])
        run_cmd(["ip", "-n", br, "link", "set", "br0", "mtu", str(self.mtu),
                 "up"])
        for i, (name, _, _) in enumerate(self.nodes):
            ns = self.ns(name)
            addr = "%s.%d" % (SUBNET, i + 1)
            run_cmd(["ip", "netns", "add", ns])
            self.created.append(ns)
            run_cmd(["ip", "-n", br, "link", "add", "v" + name, "mtu",
                     str(self.mtu), "type", "veth", "peer", "name", "eth0",
                     "mtu", str(self.mtu), "netns", ns])
            run_cmd(["ip", "-n", br, "link", "set", "v" + name, "master",
                     "br0", "up"])
            run_cmd(["ip", "-n", ns, "addr", "add", addr + "/24", "dev",
                     "eth0"])
            run_cmd(["ip", "-n", ns, "link", "set", "eth0", "up"])
            run_cmd(["ip", "-n", ns, "link", "set", "lo", "up"])
            self.addr[name] = addr

    def burst_bytes(self, gbps):
        """tbf's bucket: one GSO packet (64 KiB) and one MTU, at every
        rate. A NIC never sends faster than its rate; what tbf's bucket
        holds beyond a packet goes out at the machine's speed after the
        link idled, which rewards traffic that idles between messages
        (stop-and-wait) with bursts no real link gives. The sustained
        rate is the same (ps-bench's bulk probe measures it). The queue
        limit is tbf_latency_ms at the rate."""
        return 65536 + self.mtu

    def shape(self, gbps):
        """tbf at gbps on both directions of every host's link; under time
        dilation N at gbps / N, with the same bucket in bytes and a queue
        limit N times longer in time (the same bytes): in undilated time,
        the same link."""
        self.bandwidth = gbps
        if self.mode in ("loopback", "device"):
            return
        rate_bps = gbps * 1e9 / self.dilation
        burst = self.burst_bytes(gbps)
        rate = "%dkbit" % max(8, int(round(rate_bps / 1000)))
        latency = "%dms" % int(round(self.tbf_latency_ms * self.dilation))
        for name, _, _ in self.nodes:
            for ns, dev in ((self.ns(name), "eth0"),
                            (self.bridge_ns, "v" + name)):
                run_cmd(["tc", "-n", ns, "qdisc", "replace", "dev", dev,
                         "root", "tbf", "rate", rate, "burst", str(burst),
                         "latency", latency])

    def probe_rate(self, seconds=1.5):
        """Gbit/s of payload per busy host link: bulk TCP streams from
        every worker to every server at once (one per pair, as the job's
        connections), total payload over the window in which all ran
        (after each stream's first read) / the number of hosts on the
        smaller side (the side whose links are full: the servers' when
        workers outnumber them, as in one PS and four workers); None
        where it cannot be measured."""
        servers = [n for n, role, _ in self.nodes if role == "server"]
        workers = [n for n, role, _ in self.nodes if role == "worker"]
        if self.mode != "netns" or not servers or not workers:
            return None
        recvs, sends = [], []
        try:
            for sv in servers:
                recvs.append(subprocess.Popen(
                    self.prefix_cmd(sv) +
                    [sys.executable, "-c", LINK_PROBE_RECV, self.addr[sv],
                     str(LINK_PROBE_PORT), str(len(workers))],
                    stdout=subprocess.PIPE, stderr=subprocess.PIPE,
                    text=True))
            for r in recvs:
                if r.stdout.readline().strip() != "ready":
                    return None
            dests = ["%s:%d" % (self.addr[sv], LINK_PROBE_PORT)
                     for sv in servers]
            for wk in workers:
                sends.append(subprocess.Popen(
                    self.prefix_cmd(wk) +
                    [sys.executable, "-c", LINK_PROBE_SEND, wk,
                     str(seconds)] + dests,
                    stdout=subprocess.PIPE, stderr=subprocess.PIPE))
            for p in sends:
                p.wait(timeout=seconds + 30)
            total, t0, t1 = 0.0, None, None
            for r in recvs:
                out, _ = r.communicate(timeout=30)
                n, a, b = out.split()
                total += float(n)
                t0 = float(a) if t0 is None else min(t0, float(a))
                t1 = float(b) if t1 is None else max(t1, float(b))
            if t1 - t0 < 0.1 * seconds:
                return None
            per_host = total / min(len(workers), len(servers))
            return per_host * 8.0 / (t1 - t0) / 1e9
        except (subprocess.TimeoutExpired, ValueError, OSError):
            return None
        finally:
            for p in recvs + sends:
                if p.poll() is None:
                    p.kill()
                    p.wait()

    def counters(self):
        """{node: (tx_bytes, rx_bytes)} seen from the node, or None."""
        if self.mode != "netns":
            return None
        p = run_cmd(["ip", "-n", self.bridge_ns, "-s", "-j", "link", "show"],
                    check=False)
        if p.returncode != 0:
            return None
        out = {}
        try:
            for link in json.loads(p.stdout):
                ifn = link.get("ifname", "").split("@")[0]
                st = link.get("stats64") or link.get("stats") or {}
                if ifn.startswith("v") and ifn[1:] in self.addr:
                    # the bridge side's rx is the node's tx and vice versa
                    out[ifn[1:]] = (st["rx"]["bytes"], st["tx"]["bytes"])
        except (ValueError, KeyError):
            return None
        return out

    def prefix_cmd(self, name):
        return netns_prefix(self.ns(name) if self.mode == "netns" else
                            None)

    def teardown(self):
        if self.mode != "netns":
            return
        for ns in reversed(self.created):
            kill_netns_processes(ns)
        for ns in reversed(self.created):
            run_cmd(["ip", "netns", "del", ns], check=False)
        left = [ns for ns in list_netns() if ns.startswith(self.prefix)]
        for ns in left:
            run_cmd(["ip", "netns", "del", ns], check=False)
        self.created = []
