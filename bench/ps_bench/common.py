"""What every part of ps-bench shares: where the source tree (its conf/)
is, the limit on ordo's config strings, the two exceptions main() turns
into exit statuses (UsageError: 2, Interrupted: 130), the progress log on
stderr, the number and duration formats of the logs and reports, and the
two helpers that run and stop processes (run_cmd, kill_group).
"""

import math
import os
import re
import signal
import subprocess
import sys

from . import _build

CFG_STR_MAX = 160  # longest string value ordo's config accepts


def _source_dir():
    """The directory holding conf/bench/ and conf/models/ (_build.py)."""
    here = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
    if _build.SOURCE_DIR.startswith("@"):  # the source tree: bench/..
        return os.path.dirname(here)
    if os.path.isabs(_build.SOURCE_DIR):  # the build directory's copy
        return _build.SOURCE_DIR
    return os.path.normpath(os.path.join(here, _build.SOURCE_DIR))


SOURCE_DIR = _source_dir()


class UsageError(Exception):
    """Bad input: exit status 2."""


class Interrupted(Exception):
    """SIGINT/SIGTERM/SIGHUP."""


def log(msg):
    print("ps-bench: " + msg, file=sys.stderr, flush=True)


def fmt_dur(s):
    s = max(0, int(round(s)))
    return "%d:%02d" % (s // 60, s % 60) if s < 3600 else \
        "%d:%02d:%02d" % (s // 3600, s % 3600 // 60, s % 60)


def fnum(v, digits=1):
    if v is None or (isinstance(v, float) and not math.isfinite(v)):
        return "n/a"
    return "%.*f" % (digits, v)


def words(s):
    return [w for w in re.split(r"[\s,]+", s.strip()) if w]


def dilated(bw, dilation):
    """': BW Gbit/s dilated xN' under time dilation N, else ''."""
    if dilation == 1:
        return ""
    return ": %g Gbit/s dilated x%g" % (bw, dilation)


def run_cmd(argv, check=True, timeout=30):
    p = subprocess.run(argv, stdout=subprocess.PIPE, stderr=subprocess.PIPE,
                       text=True, timeout=timeout)
    if check and p.returncode != 0:
        raise RuntimeError("%s: %s" % (" ".join(argv),
                                       (p.stderr or p.stdout).strip()))
    return p


def kill_group(p, timeout=5):
    """SIGKILL to a still running process's group (started with
    start_new_session), then waits for it at most timeout seconds."""
    if p.poll() is not None:
        return
    try:
        os.killpg(p.pid, signal.SIGKILL)
    except OSError:
        pass
    try:
        p.wait(timeout=timeout)
    except subprocess.TimeoutExpired:
        pass
