"""Timing whole processes, their peak RSS, and their syscalls.

A run is one child process: wall time from spawn to reap (``perf_counter_ns``), exit
code, and from ``os.wait4`` its CPU time (``ru_utime + ru_stime``) and peak RSS
(``ru_maxrss``); both cover the descendants it waited for. CPU time is far less noisy
than wall time on a VM whose CPU is stolen by its neighbours. stdout/stderr go to
temporary files so a large plan print does not block on a pipe and so a failing run can
show its stderr tail.
"""

from __future__ import annotations

import os
import subprocess
import tempfile
import time
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path

from bench.results import Row, Sample

# Syscalls that touch the filesystem namespace or file metadata ("fs-ish"). read/write/
# close/fcntl/ioctl/flock are counted in "all" only.
FS_SYSCALLS = frozenset(
    (
        "stat",
        "lstat",
        "fstat",
        "newfstatat",
        "fstatat64",
        "statx",
        "statfs",
        "fstatfs",
        "access",
        "faccessat",
        "faccessat2",
        "readlink",
        "readlinkat",
        "open",
        "openat",
        "openat2",
        "creat",
        "getdents",
        "getdents64",
        "symlink",
        "symlinkat",
        "link",
        "linkat",
        "mkdir",
        "mkdirat",
        "unlink",
        "unlinkat",
        "rmdir",
        "rename",
        "renameat",
        "renameat2",
        "chdir",
        "fchdir",
        "getcwd",
        "chmod",
        "fchmod",
        "fchmodat",
        "chown",
        "fchown",
        "fchownat",
        "lchown",
        "utime",
        "utimes",
        "utimensat",
        "futimesat",
        "truncate",
        "ftruncate",
        "mknod",
        "mknodat",
        "getxattr",
        "lgetxattr",
        "fgetxattr",
        "listxattr",
        "llistxattr",
        "flistxattr",
    )
)


def _tail(path: Path, n: int = 400) -> str:
    try:
        data = path.read_bytes()[-n:]
    except OSError:
        return ""
    return data.decode("utf-8", "replace").strip().replace("\n", " | ")


def run_once(cmd: list[str], env: dict[str, str], cwd: Path) -> tuple[Sample, str]:
    """Run ``cmd`` once; returns the sample and (on failure) a short stderr/stdout tail.

    The sample's ``rss_kb`` is only an upper bound: Linux starts a child's ``ru_maxrss``
    at the high-water mark of the address space it was forked (here: vforked) from, so
    it is never below the harness's own peak RSS. ``rss_probe`` gives the child's own.
    """
    with tempfile.TemporaryDirectory(prefix="aikito-bench-out-") as tmp:
        out, err = Path(tmp) / "out", Path(tmp) / "err"
        with open(out, "wb") as fo, open(err, "wb") as fe:
            t0 = time.perf_counter_ns()
            try:
                proc = subprocess.Popen(
                    cmd, stdin=subprocess.DEVNULL, stdout=fo, stderr=fe, env=env, cwd=cwd
                )
            except OSError as exc:
                return Sample(0.0, 127, 0), f"cannot start: {exc}"
            _, status, usage = os.wait4(proc.pid, 0)
            t1 = time.perf_counter_ns()
        rc = os.waitstatus_to_exitcode(status)
        proc.returncode = rc  # reaped by wait4: keep Popen from waiting again
        tail = ""
        if rc != 0:
            tail = _tail(err) or _tail(out)
        cpu = (usage.ru_utime + usage.ru_stime) * 1000
        return Sample((t1 - t0) / 1e6, rc, int(usage.ru_maxrss), cpu), tail


@dataclass
class Item:
    """One command to time inside a round-robin group."""

    row: Row
    env: dict[str, str]
    cwd: Path
    setup: Callable[[], None] | None = None  # before every run, untimed
    check: Callable[[], str] | None = None  # after the first run: a note if the job is wrong
    want: int = 0  # runs still wanted (set by measure_many)


def measure_many(items: list[Item], runs: int, budget_s: float, probe: bool = True) -> None:
    """Time every item ``runs`` times, round-robin: run 1 of each, then run 2 of each...

    Interleaving spreads the noise of a shared machine over all tools alike, so ratios
    between rows of one group are fair. An item whose first run is slow gets fewer runs
    (as many as fit in ``budget_s`` seconds, at least 1; ``row.capped`` records the
    request). A failing run ends that item with an error, never the group. With
    ``probe``, each item then gets one untimed peak-RSS run (``rss_probe``).
    """
    for it in items:
        it.want = runs
    for i in range(runs):
        for it in items:
            row = it.row
            if row.error or i >= it.want:
                continue
            if it.setup is not None:
                it.setup()
            sample, tail = run_once(row.cmd, it.env, it.cwd)
            row.samples.append(sample)
            if sample.rc != 0:
                row.error = f"exit {sample.rc}: {tail[-300:]}" if tail else f"exit {sample.rc}"
                continue
            if i == 0:
                if it.check is not None:
                    row.note = it.check()
                fits = int(budget_s * 1000 // max(sample.ms, 0.001))
                if fits < runs:
                    row.capped = runs
                    it.want = max(1, fits)
    for it in items:  # after the timed runs: they are never preceded by a probe
        if probe and it.row.ok:
            rss_probe(it, budget_s * 1000 / 5)


# GNU time, when installed: it forks its child from a small process, so the %M it
# reports is the child's own peak RSS (plus at most time's own ~2 MB).
TIME = "/usr/bin/time" if os.access("/usr/bin/time", os.X_OK) else None


def rss_probe(item: Item, max_ms: float) -> None:
    """One untimed run of ``item`` under ``/usr/bin/time -f %M`` for its true peak RSS.

    Skipped (the wait4 upper bound stays) when GNU time is missing or one run of the row
    takes longer than ``max_ms``.
    """
    row = item.row
    med = row.median
    if TIME is None or med is None or med > max_ms:
        return
    if item.setup is not None:
        item.setup()
    with tempfile.TemporaryDirectory(prefix="aikito-bench-rss-") as tmp:
        out = Path(tmp) / "rss"
        r = subprocess.run(
            [TIME, "-f", "%M", "-o", str(out), "--", *row.cmd],
            stdin=subprocess.DEVNULL,
            capture_output=True,
            env=item.env,
            cwd=item.cwd,
            check=False,
        )
        try:
            kb = int(out.read_text().split()[-1])
        except (OSError, ValueError, IndexError):
            return
    if r.returncode == 0:
        row.rss_probe_kb = kb


def measure(
    row: Row,
    env: dict[str, str],
    cwd: Path,
    runs: int,
    budget_s: float,
    setup: Callable[[], None] | None = None,
) -> Row:
    """Time one command (see ``measure_many``; used for warm-ups: no RSS probe)."""
    measure_many([Item(row, env, cwd, setup)], runs, budget_s, probe=False)
    return row


def strace_counts(
    strace: str, cmd: list[str], env: dict[str, str], cwd: Path
) -> tuple[dict[str, int], str]:
    """Per-syscall call counts of ``cmd`` (``strace -f -c``); ('', error) on failure."""
    with tempfile.TemporaryDirectory(prefix="aikito-bench-strace-") as tmp:
        out = Path(tmp) / "strace.txt"
        r = subprocess.run(
            [strace, "-f", "-c", "-o", str(out), "--", *cmd],
            stdin=subprocess.DEVNULL,
            capture_output=True,
            env=env,
            cwd=cwd,
            check=False,
        )
        if r.returncode != 0:
            tail = r.stderr.decode("utf-8", "replace").strip()[-300:].replace("\n", " | ")
            return {}, f"exit {r.returncode} under strace: {tail}"
        counts: dict[str, int] = {}
        for line in out.read_text().splitlines():
            parts = line.split()
            # "% time  seconds  usecs/call  calls  [errors]  syscall"
            if len(parts) in (5, 6) and parts[0][0].isdigit() and parts[-1] != "total":
                try:
                    counts[parts[-1]] = counts.get(parts[-1], 0) + int(parts[3])
                except ValueError:
                    continue
        return counts, ""


def per_resource(
    counts: dict[str, int], baseline: dict[str, int], resources: int
) -> tuple[float, float]:
    """(all, fs-ish) syscalls per resource, net of the baseline."""
    names = set(counts) | set(baseline)
    net = {n: counts.get(n, 0) - baseline.get(n, 0) for n in names}
    total = sum(net.values())
    fs = sum(v for n, v in net.items() if n in FS_SYSCALLS)
    return total / resources, fs / resources
