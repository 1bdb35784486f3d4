"""The round-robin groups: which commands are timed together, and how each is set up.

Within a workload (or a family of workloads timed together, see ``suite.families``) and a
variant, every tool's run 1 comes before any run 2 (``process.measure_many``): background
load on a small shared machine is spread over all tools alike, so the ratios between rows
of one group are fair even when absolute times are inflated. Each group also times the
interpreter baselines it is compared with.
"""

from __future__ import annotations

import os
import sys
from collections.abc import Callable
from pathlib import Path

from bench import suite
from bench.results import (
    AIKITO,
    FLOOR,
    IMPORTS,
    PASS,
    REFERENCE,
    STOW,
    TIMING_ORDER,
    VARIANTS,
    Row,
    join_notes,
)
from bench.runner.peers import Peer, stow_note, write_stow_scripts
from bench.runner.process import (
    Item,
    measure,
    measure_many,
    per_resource,
    run_once,
    strace_counts,
)
from bench.suite import (
    EMPTY_PROJECT,
    PROJECT,
    STATUS_HALF,
    STATUS_VARIANTS,
    V_SINGLE,
    V_STATUS,
    V_STATUS_HALF,
    V_STATUS_JSON,
    Built,
    StatusWorkload,
    Workload,
)

BENCH = Path(__file__).resolve().parents[1]
REPO = BENCH.parent
FLOOR_SCRIPT = BENCH / "floor.py"


def log(msg: str) -> None:
    print(f"[bench] {msg}", file=sys.stderr, flush=True)


def venv_bin() -> Path:
    """The project's virtual environment (the interpreter that runs ``aikito``)."""
    venv = os.environ.get("VENV", ".venv")
    return (REPO / venv / "bin") if not os.path.isabs(venv) else Path(venv) / "bin"


class Env:
    """Child environment: AIKITO_DIR and a throw-away HOME for every run, no colour,
    no update checks, no inherited XDG or Python path settings."""

    def __init__(self, root: Path) -> None:
        self.homes = root / "homes"
        self.homes.mkdir()
        self._n = 0
        base = {
            k: v
            for k, v in os.environ.items()
            if not k.startswith(("XDG_", "PYTHON", "AIKITO", "VIRTUAL_ENV"))
        }
        base.update(NO_COLOR="1", NO_UPDATE_NOTIFIER="1", AIKITO_NO_UPDATE_NOTIFIER="1", CI="1")
        self.base = base

    def new(self, ws: Path | None = None, home_paths: list[str] | None = None
            ) -> dict[str, str]:
        env = dict(self.base)
        self.fresh_home(env, home_paths)
        if ws is not None:
            env["AIKITO_DIR"] = str(ws)
        return env

    def fresh_home(self, env: dict[str, str], home_paths: list[str] | None = None) -> None:
        """A new empty HOME for ``env``, holding the directories ``home_paths`` (relative:
        what the workload's agents are detected by, SPEC §13 [G4])."""
        self._n += 1
        home = self.homes / f"h{self._n:04d}"
        home.mkdir()
        for rel in home_paths or ():
            (home / rel).mkdir(parents=True)
        env["HOME"] = str(home)


CommandBuilder = Callable[[Built, str, str], list[str]]


class Tool:
    """How one tool runs the sync job on a built workspace."""

    def __init__(self, name: str, build_cmd: CommandBuilder | None, missing: str = "") -> None:
        self.name = name
        self._build = build_cmd
        self.missing = missing

    def cmd(self, b: Built, variant: str, project: str = PROJECT) -> list[str]:
        assert self._build is not None
        return self._build(b, variant, project)

    def applies_to(self, wl: Workload) -> bool:
        """Stow has no skills or instructions: it does the memory-only suite; the reference
        tool links no per-agent skills directory (it only tolerates the key, [N1])."""
        if self.name == STOW:
            return wl.memory_only
        return self.name != REFERENCE or not wl.agent_dirs


def make_tools(vbin: Path, ref: Peer, stow: Peer) -> list[Tool]:
    aikito = str(vbin / "aikito")
    python = str(vbin / "python")

    def mem_cmd(b: Built, variant: str, project: str) -> list[str]:
        cmd = [aikito, "--workspace", str(b.ws), "sync", "project", project]
        return [*cmd, "--dry-run"] if variant == "dry" else cmd

    def floor_cmd(b: Built, variant: str, project: str) -> list[str]:
        manifest = b.manifest if project == PROJECT else b.empty_manifest
        return [python, str(FLOOR_SCRIPT), variant, str(manifest)]

    def ref_cmd(b: Built, variant: str, project: str) -> list[str]:
        assert ref.path is not None
        cmd = [ref.path, "sync", "project", project]
        return [*cmd, "--dry-run"] if variant == "dry" else cmd

    def stow_cmd(b: Built, variant: str, project: str) -> list[str]:
        script = "stow.sh" if project == PROJECT else "stow-empty.sh"
        return ["/bin/sh", str(b.base / script), variant]

    return [
        Tool(AIKITO, mem_cmd),
        Tool(FLOOR, floor_cmd),
        Tool(REFERENCE, ref_cmd if ref.path else None, ref.reason if not ref.path else ""),
        Tool(STOW, stow_cmd if stow.path else None, stow.reason if not stow.path else ""),
    ]


def bench_family(
    family: list[Workload],
    root: Path,
    tools: list[Tool],
    vbin: Path,
    envs: Env,
    strace: str | None,
    stow_path: str | None,
    runs: int,
    budget: float,
) -> list[Row]:
    """Dry, cold, then warm rows for every tool on every workload of ``family``, each
    variant one round-robin group (W1, W1+segments and W1+agents share theirs: the [G7]
    and [N1] ratios compare runs made at the same time).

    Each tool works on its own identical copy of each workspace and its checkouts, so runs
    can alternate between tools (fair under machine noise) while each warm row starts
    from the state that tool's own cold run left.
    """
    leader = family[0].group_name
    rows: list[Row] = []
    py = str(vbin / "python")
    # Interpreter baselines measured inside every group, so "x pass" compares runs made
    # at the same time (W1 warm also gets the imports a sync needs, for its target).
    companions: dict[str, list[tuple[str, list[str]]]] = {
        v: [(PASS, [py, "-c", "pass"])] for v in VARIANTS
    }
    if leader == "W1":
        companions["warm"].append((IMPORTS, [py, "-c", IMPORTS]))

    groups: dict[str, list[Item]] = {v: [] for v in VARIANTS}
    per_tool: list[tuple[Tool, Built, dict[str, str], dict[str, Row]]] = []
    for wl in family:
        for tool in tools:
            if not tool.applies_to(wl):
                continue
            if tool.missing:
                rows += [Row(wl.name, v, tool.name, missing=tool.missing) for v in VARIANTS]
                continue
            b = suite.build(wl, root / leader / wl.name / tool.name)
            if tool.name == STOW and stow_path is not None:
                write_stow_scripts(b, stow_path)
            env = envs.new(b.ws, b.home_paths)
            vrows = _tool_items(tool, b, env, envs, groups, budget)
            per_tool.append((tool, b, env, vrows))
            rows += vrows.values()

    for v in TIMING_ORDER:  # warm last: it starts from the cold runs' state
        items = groups[v]
        for name, cmd in companions[v]:
            row = Row(leader, v, name, cmd)
            items.append(Item(row, envs.new(), root))
            rows.append(row)
        log(f"{leader} {v}: {', '.join(f'{it.row.workload}/{it.row.tool}' for it in items)}")
        measure_many(items, runs, budget)

    for tool, b, env, vrows in per_tool:
        if strace and vrows["warm"].ok:
            syscalls(b, tool, env, vrows["warm"], strace)
        suite.empty_trash(b.base / "trash")
    return rows


def _tool_items(
    tool: Tool,
    b: Built,
    env: dict[str, str],
    envs: Env,
    groups: dict[str, list[Item]],
    budget: float,
) -> dict[str, Row]:
    """The rows of one tool on one built workspace, appended to the variant groups, and
    one untimed warm-up run (page cache, byte-code caches)."""
    trash = b.base / "trash"
    is_stow = tool.name == STOW

    def reset() -> None:
        suite.reset_checkouts(b.active + b.empty_active, trash)

    def pre_dry() -> None:
        envs.fresh_home(env, b.home_paths)
        reset()
        if is_stow:  # stow -n refuses a target directory that does not exist
            for co in b.active:
                (co / ".agents" / "memory").mkdir(parents=True)

    def pre_cold() -> None:
        reset()
        envs.fresh_home(env, b.home_paths)

    def check() -> str:
        return suite.links_note(b)

    wl = b.wl
    vrows = {v: Row(wl.name, v, tool.name, tool.cmd(b, v)) for v in VARIANTS}
    if is_stow:
        for r in vrows.values():
            r.note = stow_note(wl)
        vrows["dry"].note += "; target dirs pre-created (stow -n needs them)"
    checked = None if is_stow else check
    groups["dry"].append(Item(vrows["dry"], env, b.base, pre_dry))
    groups["cold"].append(Item(vrows["cold"], env, b.base, pre_cold, checked))
    groups["warm"].append(Item(vrows["warm"], env, b.base, None, checked))
    measure(Row(wl.name, "dry", tool.name, tool.cmd(b, "dry")), env, b.base, 1, budget, pre_dry)
    return vrows


def syscalls(b: Built, tool: Tool, env: dict[str, str], warm: Row, strace: str) -> None:
    """Warm-sync syscalls per resource, net of the same command on the empty project."""
    # Bring the empty project to its steady state first (its own checkouts).
    empty_cmd = tool.cmd(b, "cold" if tool.name in (FLOOR, STOW) else "warm", EMPTY_PROJECT)
    sample, tail = run_once(empty_cmd, env, b.base)
    if sample.rc != 0:
        warm.note = join_notes(warm.note, f"syscalls: empty project failed ({tail[-150:]})")
        return
    counts, err = strace_counts(strace, warm.cmd, env, b.base)
    base, err2 = strace_counts(strace, tool.cmd(b, "warm", EMPTY_PROJECT), env, b.base)
    if err or err2:
        warm.note = join_notes(warm.note, f"syscalls: {err or err2}")
        return
    warm.sys_all, warm.sys_fs = per_resource(counts, base, b.wl.targets)


def bench_status(
    wl: StatusWorkload,
    root: Path,
    vbin: Path,
    envs: Env,
    strace: str | None,
    runs: int,
    budget: float,
) -> list[Row]:
    """``aikito status`` on ``wl.projects`` synced projects, next to one project's dry run.

    Two workspaces are built and synced once (untimed): ``wl.projects`` projects and
    ``STATUS_HALF`` projects. One round-robin group then times status (table and
    ``--json``) on both, ``sync project p00 --dry-run`` on the big one (the per-project
    work status repeats), and ``python -c pass``.
    """
    aikito = str(vbin / "aikito")
    rows: list[Row] = []
    built: dict[int, tuple[suite.StatusBuilt, dict[str, str]]] = {}
    for n in (wl.projects, STATUS_HALF):
        b = suite.build_status(wl, root / wl.name / f"p{n}", n)
        env = envs.new(b.ws)
        log(f"{wl.name}: syncing {n} projects (untimed)")
        for name in b.projects:
            cmd = [aikito, "--workspace", str(b.ws), "sync", "project", name]
            sample, tail = run_once(cmd, env, b.base)
            if sample.rc != 0:
                err = f"untimed sync of {name} failed: exit {sample.rc}: {tail[-200:]}"
                return [Row(wl.name, v, AIKITO, error=err) for v in STATUS_VARIANTS[:4]]
        links, want = suite.count_status_links(b), wl.targets(n)
        if links != want:
            log(f"{wl.name}: {n} projects: {links} of {want} expected links after sync")
        built[n] = (b, env)

    big, env_big = built[wl.projects]
    half, env_half = built[STATUS_HALF]
    status_big = [aikito, "--workspace", str(big.ws), "status"]
    status_half = [aikito, "--workspace", str(half.ws), "status"]
    single = [aikito, "--workspace", str(big.ws), "sync", "project", big.projects[0], "--dry-run"]
    specs = [
        (V_STATUS, status_big, env_big, big.base),
        (V_STATUS_JSON, [*status_big, "--json"], env_big, big.base),
        (V_STATUS_HALF, status_half, env_half, half.base),
        (V_SINGLE, single, env_big, big.base),
    ]
    items: list[Item] = []
    for variant, cmd, env, cwd in specs:
        measure(Row(wl.name, variant, AIKITO, cmd), env, cwd, 1, budget)  # warm-up
        row = Row(wl.name, variant, AIKITO, cmd)
        rows.append(row)
        items.append(Item(row, env, cwd))
    pass_row = Row(wl.name, "-", PASS, [str(vbin / "python"), "-c", "pass"])
    rows.append(pass_row)
    items.append(Item(pass_row, envs.new(), root))
    log(f"{wl.name}: {', '.join(it.row.variant for it in items)}")
    measure_many(items, runs, budget)

    # Syscalls per resource of status: the big workspace minus the half one, divided by
    # the resources of the projects in between (both fully in sync).
    status_row = rows[0]
    if strace and status_row.ok and rows[2].ok:
        counts, err = strace_counts(strace, status_big, env_big, big.base)
        base, err2 = strace_counts(strace, status_half, env_half, half.base)
        if err or err2:
            status_row.note = join_notes(status_row.note, f"syscalls: {err or err2}")
        else:
            n = wl.targets(wl.projects) - wl.targets(STATUS_HALF)
            status_row.sys_all, status_row.sys_fs = per_resource(counts, base, n)
            status_row.note = join_notes(
                status_row.note,
                f"sys/res: strace of status on {wl.projects} minus {STATUS_HALF} projects, "
                f"/ {n} resources",
            )
    return rows


def startup_rows(vbin: Path, ref: Peer, envs: Env, root: Path, runs: int) -> list[Row]:
    py = str(vbin / "python")
    specs: list[tuple[str, list[str] | None, str]] = [
        (PASS, [py, "-c", "pass"], ""),
        ("python -S -c pass (no site)", [py, "-S", "-c", "pass"], ""),
        ("import click", [py, "-c", "import click"], ""),
        (IMPORTS, [py, "-c", IMPORTS], ""),
        ("aikito --version", [str(vbin / "aikito"), "--version"], ""),
    ]
    if ref.path and ref.python:
        specs += [
            ("reference python -c pass", [ref.python, "-c", "pass"], ""),
            ("reference aikito --version", [ref.path, "--version"], ""),
        ]
    else:
        specs += [("reference aikito --version", None, ref.reason)]
    rows: list[Row] = []
    items: list[Item] = []
    for name, cmd, missing in specs:
        row = Row("startup", "-", name, cmd or [], missing=missing)
        rows.append(row)
        if cmd:
            env = envs.new()
            measure(Row("startup", "-", name, cmd), env, root, 1, 5)  # warm-up
            items.append(Item(row, env, root))
    log("start-up rows")
    measure_many(items, runs, 20)
    return rows
