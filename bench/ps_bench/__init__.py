"""ps-bench: the ordo benchmark driver on an emulated cluster (docs/bench.md).

Builds one network namespace per node (scheduler, each server, each worker)
on this machine, joined by veth pairs to a bridge in a namespace of its own,
shapes every host's link in both directions with tc (tbf), and runs every
model x bandwidth x transport x preset of a scenario: warm-up iterations
then measured ones, repeated, presets interleaved. Reports a Markdown table
(stdout), CSV files, a gnuplot PNG and one Chrome-trace timeline per run.

Only the Python 3 standard library is used. Exit status: 0 when every run
completed, 1 when a run failed (or the report could not be written),
2 on bad input, 130 after Ctrl-C (everything is cleaned up in all cases).

The package, by what each module holds (each says more in its opening):
  cli          the command line and main()
  scenario     scenario files, presets and sizes, the plan and its runs
  namespaces   the emulated cluster: namespaces, bridge, tbf, link probes
  runs         one run: its job.ini, its processes, its metrics
  bench        the runs in order on their clusters (Bench)
  simulate     ps-sim's links and predictions
  calibration  ps-sim's links measured and fitted on this machine
  stats        medians and bootstrap intervals of the report
  report       report.md, the CSV files, the plot
  tune         --tune (ps-tune on the emulated cluster), --launch-job
  explain      --explain: where a run's time went
  rdma         the RDMA device probe behind the rdma rows
  common       what they share; _build: what CMake writes in
The `ps-bench` command is bench/ps-bench, a launcher that imports this
package from beside it (the source tree, the build directory) or from
where it was installed (PREFIX/share/ordo).

The names below are those other programs of the tree import
(bench/torch_bench.py: the cluster and the statistics; bench/tune_eval.py;
tests/sim/bench_rdma_rows.sh: the device probe).
"""

from .cli import main
from .common import SOURCE_DIR, UsageError, kill_group, run_cmd
from .namespaces import (NS_PREFIX, Cluster, kill_netns_processes,
                         list_netns, netns_available, node_sets)
from .rdma import ipv4_of_gid, parse_port_rate, rdma_status
from .runs import merge_timeline
from .scenario import PRESETS, size_label
from .stats import bootstrap_ratio

__all__ = ["main", "SOURCE_DIR", "UsageError", "kill_group", "run_cmd",
           "NS_PREFIX", "Cluster", "kill_netns_processes", "list_netns",
           "netns_available", "node_sets", "ipv4_of_gid", "parse_port_rate",
           "rdma_status", "merge_timeline", "PRESETS", "size_label",
           "bootstrap_ratio"]
