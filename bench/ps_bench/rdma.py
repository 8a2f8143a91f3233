"""RDMA here or not: the device probe behind the rdma rows. Reads the
RDMA devices' ports under /sys/class/infiniband (state, rate, a RoCE v2
GID holding an IPv4 address, which rdma_cm needs) and asks ps-sim whether
the binaries were built with the rdma transport: rdma_status says whether
the rdma rows run for real, on which port and address, or why they are
ps-sim's rdma link model, predicted only.
"""

import os
import re

from .common import SOURCE_DIR, run_cmd

RDMA_EMULATED_NOTE = "Soft-RoCE (rxe) or the project's emulated VM " \
    "(ORDO_RDMA_VM=1): these rdma numbers show that the path works, never " \
    "RDMA speed"
IB_SYS = "/sys/class/infiniband"


def read_sys(path, default=""):
    try:
        with open(path) as f:
            return f.read().strip()
    except OSError:
        return default


def ipv4_of_gid(gid):
    """'0000:...:ffff:c000:0201' (an IPv4-mapped GID) -> '192.0.2.1'."""
    h = gid.replace(":", "").lower()
    if len(h) != 32 or h[:24] != "0" * 20 + "ffff":
        return None
    return ".".join(str(int(h[24 + 2 * i:26 + 2 * i], 16)) for i in range(4))


def parse_port_rate(text):
    """'100 Gb/sec (4X EDR)' -> 100.0 (Gbit/s), None when unreadable."""
    m = re.match(r"^\s*([0-9.]+)\s*Gb/sec", text)
    return float(m.group(1)) if m else None


def rdma_ports(root=IB_SYS):
    """Every port of every RDMA device with an IPv4-mapped RoCE v2 GID:
    dicts of dev, port, state, rate, rate_gbps, addr, gid_index."""
    out = []
    devs = sorted(os.listdir(root)) if os.path.isdir(root) else []
    for dev in devs:
        pdir = os.path.join(root, dev, "ports")
        ports = sorted(os.listdir(pdir), key=lambda x: int(x)
                       if x.isdigit() else 0) if os.path.isdir(pdir) else []
        for port in ports:
            base = os.path.join(pdir, port)
            gdir = os.path.join(base, "gids")
            idx = sorted(os.listdir(gdir), key=lambda x: int(x)
                         if x.isdigit() else 0) if os.path.isdir(gdir) else []
            for i in idx:
                addr = ipv4_of_gid(read_sys(os.path.join(gdir, i)))
                kind = read_sys(os.path.join(base, "gid_attrs", "types", i))
                if addr and addr != "0.0.0.0" and "v2" in kind.lower():
                    rate = read_sys(os.path.join(base, "rate"))
                    out.append({"dev": dev, "port": port, "gid_index": i,
                                "state": read_sys(os.path.join(base,
                                                               "state")),
                                "rate": rate or "?",
                                "rate_gbps": parse_port_rate(rate),
                                "addr": addr})
                    break
    return out


def rdma_status(bin_dir, vm=False, want_addr=None, root=IB_SYS):
    """Whether this machine can run the rdma rows: {"mode": "run", "port":
    ...} (an active port with an IPv4 RoCE v2 GID, an RDMA build), else
    {"mode": "predict", "reason": why not}."""
    st = {"mode": "predict", "port": None, "emulated": False}
    devs = sorted(os.listdir(root)) if os.path.isdir(root) else []
    netns = "ps-bench's emulated hosts (network namespaces, links shaped " \
        "with tc) carry TCP only"
    if not devs:
        st["reason"] = "no RDMA device here (%s empty or absent), and %s" \
            % (root, netns)
        return st
    ports = rdma_ports(root)
    if want_addr:
        ports = [p for p in ports if p["addr"] == want_addr]
    active = [p for p in ports if "ACTIVE" in p["state"] and p["rate_gbps"]]
    if not active:
        st["reason"] = "RDMA device(s) %s present, but no active port with " \
            "an IPv4 RoCE v2 GID%s (rdma_cm needs the device's IPv4 " \
            "address; ps-rdma-devices lists them), and %s" % (
                ", ".join(devs), " carrying %s" % want_addr if want_addr
                else "", netns)
        return st
    probe = os.path.join(bin_dir, "ps-sim")
    if os.access(probe, os.X_OK):
        p = run_cmd([probe, "--set", "transport.type=rdma", "--set",
                     "model.file=" + os.path.join(SOURCE_DIR, "conf",
                                                  "models", "seq32.json"),
                     "--set", "train.iterations=1", "--json"], check=False)
        if p.returncode == 2 and "not in this build" in p.stderr:
            st["reason"] = "RDMA device(s) %s present, but %s was built " \
                "without the rdma transport (configure with " \
                "-DPS_WITH_RDMA=ON)" % (", ".join(devs), bin_dir)
            return st
    port = dict(active[0])
    port["where"] = "%s port %s" % (port["dev"], port["port"])
    port["gid_note"] = "GID index %s" % port["gid_index"]
    st.update({"mode": "run", "port": port, "reason": "",
               "emulated": vm or port["dev"].startswith("rxe")})
    return st
