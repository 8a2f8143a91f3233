#!/usr/bin/env python3
"""bench/perftest_sweep.py - perftest output as a link sweep for ps-sim --fit.

    perftest_sweep.py --lat LAT.txt [--bw BW.txt] [--min-bytes N]
                      [--port-gbps R] [--out SWEEP.csv]

LAT.txt: what `ib_send_lat -a` or `ib_write_lat -a` printed (the client's
or the server's side; `-a` runs every size from 2 B to 8 MiB): its header
line starting with `#bytes` names the columns, and each row gives one
size's one-way latency (perftest reports half the round trip). Each row of
at least --min-bytes becomes a sweep row `bytes,1,t_typical` (t_avg where
there is no t_typical): one message alone, as sim/fit.h wants it, so
`ps-sim --fit SWEEP.csv` fits a and b (and gamma 1) of ps-sim's rdma link
model, and `link.model = rdma` with `link.fit_file = SWEEP.csv` simulates
with them.

BW.txt (optional): what `ib_write_bw -a` (or `ib_send_bw -a`) printed.
It is not fitted (its messages overlap, which the model's a + b*m does not
describe); the bandwidth of its largest size is written as a comment, and
with --port-gbps (the port's rate, /sys/class/infiniband/DEV/ports/N/rate)
as the efficiency to put in `link.rdma_efficiency`. perftest's MB/sec are
2^20 bytes per second; a header in Gb/sec (--report_gbits) is read as
such.

Only the Python 3 standard library. Exit status 0, 1 when an input has no
perftest table, 2 on bad usage.
"""

import argparse
import sys


def table(path):
    """(header words, rows of floats) of a perftest result table."""
    head, rows = None, []
    with open(path) as f:
        for line in f:
            w = line.split()
            if not w:
                continue
            if w[0] == "#bytes":
                # "BW average[MB/sec]", "99% percentile[usec]": a name
                # without its unit joins the next word
                head = []
                for x in w:
                    if head and "[" not in head[-1] and \
                            not head[-1].startswith("#"):
                        head[-1] += " " + x
                    else:
                        head.append(x)
                rows = []
                continue
            if head is None:
                continue
            try:
                vals = [float(x) for x in w]
            except ValueError:
                continue  # a rule or a message between tables
            if len(vals) >= 3 and vals[0] >= 1:
                rows.append(vals)
    if head is None or not rows:
        raise ValueError("%s: no perftest table (a line starting with "
                         "'#bytes' and rows of numbers under it)" % path)
    return head, rows


def column(head, *names):
    for n in names:
        for i, h in enumerate(head):
            if h.startswith(n):
                return i
    return None


def main(argv):
    ap = argparse.ArgumentParser(
        prog="perftest_sweep.py",
        description="Turns ib_send_lat/ib_write_lat (and ib_write_bw) "
        "output into the sweep CSV ps-sim --fit reads (docs/sim.md).")
    ap.add_argument("--lat", required=True, metavar="FILE",
                    help="ib_send_lat -a or ib_write_lat -a output")
    ap.add_argument("--bw", metavar="FILE",
                    help="ib_write_bw -a output (reported, not fitted)")
    ap.add_argument("--min-bytes", type=int, default=0, metavar="N",
                    help="leave out sizes below N bytes (perftest sends "
                    "small messages inline, cheaper than ordo's)")
    ap.add_argument("--port-gbps", type=float, metavar="R",
                    help="the port's rate in Gbit/s, for the efficiency")
    ap.add_argument("--out", metavar="FILE", help="default: stdout")
    a = ap.parse_args(argv)
    try:
        head, rows = table(a.lat)
        ci = column(head, "t_typical", "t_avg")
        if ci is None:
            raise ValueError("%s: no t_typical or t_avg column in %s" %
                             (a.lat, " ".join(head)))
        lines = ["# perftest_sweep.py from %s (one-way latency, column %s)"
                 % (a.lat, head[ci])]
        if a.bw:
            bhead, brows = table(a.bw)
            bi = column(bhead, "BW average")
            if bi is None:
                raise ValueError("%s: no 'BW average' column" % a.bw)
            gbits = "Gb/sec" in bhead[bi]
            last = max(brows, key=lambda r: r[0])
            gbps = last[bi] if gbits else last[bi] * 1048576 * 8 / 1e9
            note = "# %s: %.3f Gbit/s at %d B" % (a.bw, gbps, last[0])
            if a.port_gbps:
                note += " = %.3f of the port's %g Gbit/s (link.rdma_" \
                    "efficiency)" % (gbps / a.port_gbps, a.port_gbps)
            lines.append(note)
        lines.append("bytes,concurrency,us")
        n = 0
        for r in rows:
            if r[0] >= a.min_bytes and ci < len(r):
                lines.append("%d,1,%.6g" % (r[0], r[ci]))
                n += 1
        if n < 2:
            raise ValueError("%s: fewer than two sizes of at least %d B: "
                             "a and b need two (run it with -a)" %
                             (a.lat, a.min_bytes))
    except (OSError, ValueError) as e:
        print("perftest_sweep.py: error: %s" % e, file=sys.stderr)
        return 1
    text = "\n".join(lines) + "\n"
    if a.out:
        with open(a.out, "w") as f:
            f.write(text)
    else:
        sys.stdout.write(text)
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
