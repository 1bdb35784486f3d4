"""Start-up figures counted in instructions (``--instructions``): the same ratios as the
timed start-up figures (a warm W1 and W1+segments sync against the import floor,
``aikito --version`` against ``import click``), counted by valgrind's callgrind for the
whole process.

On a shared machine milliseconds move by more than one change's gain; the number of
instructions a process executes does not (``PYTHONHASHSEED=0``: the same count on every
run). Judge a change by these counts side by side with the tree before it; the timed
figures say what a user waits. Needs ``valgrind``; without it the section says so.
"""

from __future__ import annotations

import re
import shutil
import subprocess
from dataclasses import dataclass

#: What callgrind prints at exit: ``==123== Collected : 317212345``.
_COLLECTED = re.compile(r"Collected\s*:\s*(\d+)")


def valgrind() -> str | None:
    return shutil.which("valgrind")


def count(tool: str, cmd: list[str], env: dict[str, str], cwd: str) -> int | str:
    """Instructions executed by ``cmd`` and its children, or why there is no count."""
    argv = [tool, "--tool=callgrind", "--trace-children=yes",
            "--callgrind-out-file=/dev/null", *cmd]
    proc = subprocess.run(argv, env={**env, "PYTHONHASHSEED": "0"}, cwd=cwd,
                          capture_output=True, text=True, timeout=600)
    if proc.returncode != 0:
        tail = proc.stderr.strip().splitlines()[-1:] or ["no output"]
        return f"exit {proc.returncode}: {tail[0]}"
    found = [int(n) for n in _COLLECTED.findall(proc.stderr)]
    return sum(found) if found else "no count in valgrind's output"


@dataclass
class Figure:
    name: str
    goal: float
    a: int | str
    b: int | str

    @property
    def ratio(self) -> float | None:
        if isinstance(self.a, int) and isinstance(self.b, int) and self.b:
            return self.a / self.b
        return None

    def as_dict(self) -> dict[str, object]:
        ratio = self.ratio
        return {
            "figure": self.name,
            "goal": self.goal,
            "instructions": [self.a, self.b],
            "ratio": None if ratio is None else round(ratio, 4),
            "status": "NOT MEASURED" if ratio is None
            else ("MET" if ratio <= self.goal else "NOT MET"),
        }


def text(figures: list[Figure], missing: str = "") -> str:
    head = "start-up figures in instructions (valgrind, PYTHONHASHSEED=0, whole process):"
    if missing:
        return f"{head}\n  NOT MEASURED: {missing}"
    out = [head]
    for f in figures:
        d = f.as_dict()
        ratio = f.ratio
        if ratio is None:
            why = f.a if isinstance(f.a, str) else f.b
            out.append(f"  [NOT MEASURED] {f.name}: {why}")
            continue
        assert isinstance(f.a, int) and isinstance(f.b, int)
        out.append(f"  [{d['status']}] {f.name}: {f.a / 1e6:.2f} M / {f.b / 1e6:.2f} M"
                   f" = {ratio:.3f}x; goal <= {f.goal}x")
    return "\n".join(out)
