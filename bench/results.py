"""The values the runner produces and the report reads: one ``Sample`` per timed run, one
``Row`` per line of the table, and the names the rows are keyed by."""

from __future__ import annotations

import statistics
from dataclasses import dataclass, field

#: The variants of a sync workload, in the order they are timed (warm last: it starts
#: from the state the cold runs left).
VARIANTS = ("cold", "warm", "dry")
TIMING_ORDER = ("dry", "cold", "warm")

AIKITO = "aikito_mem"
FLOOR = "floor.py"
REFERENCE = "reference"
STOW = "stow"
#: Interpreter baselines timed inside every group.
PASS = "python -c pass"
IMPORTS = "import click, attrs, tomllib"
#: Tools of a workload row, in table order.
TOOLS = (AIKITO, FLOOR, REFERENCE, STOW, PASS, IMPORTS)


@dataclass
class Sample:
    ms: float
    rc: int
    rss_kb: int
    cpu_ms: float = 0.0  # user + system CPU time of the child (and what it waited for)


@dataclass
class Row:
    """One line of the result table."""

    workload: str
    variant: str
    tool: str
    cmd: list[str] = field(default_factory=list)
    samples: list[Sample] = field(default_factory=list)
    error: str = ""
    note: str = ""
    missing: str = ""  # the peer is not installed: why
    sys_all: float | None = None  # syscalls per resource (net of an empty project)
    sys_fs: float | None = None
    capped: int = 0  # runs requested, when fewer were made to stay within the budget
    rss_probe_kb: int | None = None  # peak RSS from one untimed run under /usr/bin/time

    @property
    def times(self) -> list[float]:
        return [s.ms for s in self.samples]

    @property
    def ok(self) -> bool:
        return bool(self.samples) and not self.error and not self.missing

    @property
    def median(self) -> float | None:
        return statistics.median(self.times) if self.ok else None

    @property
    def cpu_median(self) -> float | None:
        return statistics.median(s.cpu_ms for s in self.samples) if self.ok else None

    @property
    def rss_mb(self) -> float | None:
        """Peak RSS: the /usr/bin/time probe when made, else the wait4 value (see run_once)."""
        if self.rss_probe_kb is not None:
            return self.rss_probe_kb / 1024
        return max(s.rss_kb for s in self.samples) / 1024 if self.samples else None

    def spread(self) -> tuple[float, float, float, float] | None:
        """(min, q1, q3, max) of the timings."""
        t = sorted(self.times)
        if not t:
            return None
        if len(t) >= 4:
            q = statistics.quantiles(t, n=4)
            return t[0], q[0], q[2], t[-1]
        return t[0], t[0], t[-1], t[-1]

    def as_dict(self) -> dict[str, object]:
        sp = self.spread()
        return {
            "workload": self.workload,
            "variant": self.variant,
            "tool": self.tool,
            "cmd": self.cmd,
            "runs": len(self.samples),
            "runs_requested": self.capped or len(self.samples),
            "median_ms": self.median,
            "min_ms": sp[0] if sp else None,
            "q1_ms": sp[1] if sp else None,
            "q3_ms": sp[2] if sp else None,
            "max_ms": sp[3] if sp else None,
            "samples_ms": [round(s.ms, 3) for s in self.samples],
            "cpu_median_ms": self.cpu_median,
            "cpu_samples_ms": [round(s.cpu_ms, 3) for s in self.samples],
            "peak_rss_mb": self.rss_mb,
            "peak_rss_source": "time -f %M" if self.rss_probe_kb is not None else "wait4",
            "wait4_maxrss_mb": max(s.rss_kb for s in self.samples) / 1024 if self.samples else None,
            "syscalls_per_resource": self.sys_all,
            "fs_syscalls_per_resource": self.sys_fs,
            "error": self.error or None,
            "missing": self.missing or None,
            "note": self.note or None,
        }


def join_notes(a: str, b: str) -> str:
    """Two notes of one row, ``a; b`` (either may be empty)."""
    return f"{a}; {b}" if a and b else (a or b)
