"""The import budget of a warm sync (SPEC §12 "keep import time low"): what
``python -X importtime`` says each module cost, this package's modules first.

A warm sync is almost all start-up, so what it imports is what it costs. The report runs
the real command (the console script under ``-X importtime``) a few times on the warm W1
workspace the timed rows left, and lists, by median *self* time (the module's own body,
without what it imports):

- every module of ``aikito_mem``, sorted, with their total;
- every other module the sync imports that ``python -c "import click, attrs, tomllib"``
  (the import floor) does not.

``-X importtime`` adds its own overhead and the machine's noise to every figure: read them
as a budget (which modules cost most, what could be left unimported), not as timings.
Only modules imported through the interpreter's import statement are reported (not
``importlib.import_module``), which is why the command line loads commands through it.
"""

from __future__ import annotations

import statistics
import subprocess
from dataclasses import dataclass, field

PACKAGE = "aikito_mem"
#: What the floor imports (the modules a sync needs from its three libraries).
FLOOR_CODE = "import click, attrs, tomllib"


def parse(stderr: str) -> dict[str, int]:
    """Self time in microseconds of each module in one ``-X importtime`` output."""
    out: dict[str, int] = {}
    for line in stderr.splitlines():
        if not line.startswith("import time:"):
            continue
        parts = line[len("import time:"):].split("|")
        if len(parts) != 3 or not parts[0].strip().isdigit():
            continue  # the header line
        out[parts[2].strip()] = int(parts[0])
    return out


@dataclass
class Budget:
    """Median self time (ms) per module over ``runs`` runs of one command."""

    cmd: list[str]
    runs: int = 0
    package: dict[str, float] = field(default_factory=dict)
    beyond_floor: dict[str, float] = field(default_factory=dict)
    error: str = ""

    @property
    def package_ms(self) -> float:
        return sum(self.package.values())

    @property
    def beyond_floor_ms(self) -> float:
        return sum(self.beyond_floor.values())

    def as_dict(self) -> dict[str, object]:
        return {
            "cmd": self.cmd,
            "runs": self.runs,
            "package_self_ms": round(self.package_ms, 2),
            "package": {k: round(v, 3) for k, v in self.package.items()},
            "beyond_floor_self_ms": round(self.beyond_floor_ms, 2),
            "beyond_floor": {k: round(v, 3) for k, v in self.beyond_floor.items()},
            "error": self.error or None,
        }


def summarise(samples: list[dict[str, int]], floor: set[str], cmd: list[str]) -> Budget:
    """The medians of ``samples`` (one parse per run), split into the package's modules and
    the others beyond ``floor``; each sorted by cost, largest first."""
    names = {name for sample in samples for name in sample}

    def median_ms(name: str) -> float:
        return statistics.median(s.get(name, 0) for s in samples) / 1000

    def is_ours(name: str) -> bool:
        return name.split(".")[0] == PACKAGE

    def ranked(selected: set[str]) -> dict[str, float]:
        costs = {name: median_ms(name) for name in selected}
        return dict(sorted(costs.items(), key=lambda kv: (-kv[1], kv[0])))

    return Budget(
        cmd=cmd,
        runs=len(samples),
        package=ranked({n for n in names if is_ours(n)}),
        beyond_floor=ranked({n for n in names if not is_ours(n) and n not in floor}),
    )


def measure(python: str, cmd: list[str], env: dict[str, str], cwd: str,
            runs: int = 5) -> Budget:
    """Run ``python -X importtime CMD`` ``runs`` times (after one untimed run) and the
    import floor once; summarise."""
    floor_run = subprocess.run([python, "-X", "importtime", "-c", FLOOR_CODE], env=env,
                               cwd=cwd, capture_output=True, text=True, timeout=120)
    floor = set(parse(floor_run.stderr))
    argv = [python, "-X", "importtime", *cmd]
    samples: list[dict[str, int]] = []
    for i in range(runs + 1):
        proc = subprocess.run(argv, env=env, cwd=cwd, capture_output=True, text=True,
                              timeout=120)
        if proc.returncode != 0:
            tail = proc.stderr.strip().splitlines()[-1:] or ["no output"]
            return Budget(cmd=argv, error=f"exit {proc.returncode}: {tail[0]}")
        if i:  # the first run warms the page cache
            samples.append(parse(proc.stderr))
    return summarise(samples, floor, argv)


def text(budget: Budget, title: str, top: int = 0) -> str:
    """The budget as a section of the report (``top``: at most that many modules each)."""
    head = f"import budget — {title} (-X importtime, median self ms of {budget.runs} runs):"
    if budget.error:
        return f"{head}\n  ERROR {budget.error}"
    out = [head, f"  {PACKAGE}: {budget.package_ms:.1f} ms in {len(budget.package)} modules"]

    def listing(costs: dict[str, float]) -> list[str]:
        items = list(costs.items())[:top] if top else list(costs.items())
        rest = len(costs) - len(items)
        lines = [f"    {ms:6.2f}  {name}" for name, ms in items]
        return lines + ([f"    ({rest} more)"] if rest > 0 else [])

    out += listing(budget.package)
    out.append(f"  other modules beyond `{FLOOR_CODE}`: {budget.beyond_floor_ms:.1f} ms "
               f"in {len(budget.beyond_floor)} modules")
    out += listing(budget.beyond_floor)
    return "\n".join(out)
