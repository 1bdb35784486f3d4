"""Side-by-side benchmark of ``aikito sync project`` (SPEC §12).

    make bench                          # full run (W1, W2 1k + 10k, W3, W4), 7 runs a row
    .venv/bin/python bench/bench.py --quick          # 5 runs, no 10k workload
    .venv/bin/python bench/bench.py --json           # JSON document on stdout
    .venv/bin/python bench/bench.py --help

It reports; it never fails on a slow result (exit 0 unless the harness itself breaks).
See bench/README.md for what is measured and how to read the table.
"""

from __future__ import annotations

import argparse
import json
import os
import platform
import shutil
import sys
import tempfile
import time
from collections.abc import Callable
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))

import peers
import workloads
from runner import Item, Row, measure, measure_many, per_resource, run_once, strace_counts
from workloads import EMPTY_PROJECT, PROJECT, W4, WORKLOADS, Built, StatusWorkload, Workload

HERE = Path(__file__).resolve().parent
REPO = HERE.parent
VARIANTS = ("cold", "warm", "dry")
TOOLS = (
    "aikito_mem",
    "floor.py",
    "reference",
    "stow",
    "python -c pass",
    "import click, attrs, tomllib",
)


def log(msg: str) -> None:
    print(f"[bench] {msg}", file=sys.stderr, flush=True)


# --------------------------------------------------------------------------- environment


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

    def new(self, ws: Path | None = None) -> dict[str, str]:
        env = dict(self.base)
        self.fresh_home(env)
        if ws is not None:
            env["AIKITO_DIR"] = str(ws)
        return env

    def fresh_home(self, env: dict[str, str]) -> None:
        self._n += 1
        home = self.homes / f"h{self._n:04d}"
        home.mkdir()
        env["HOME"] = str(home)


# --------------------------------------------------------------------------- commands


class Tool:
    """How one tool runs the sync job on a built workspace."""

    def __init__(
        self,
        name: str,
        build_cmd: Callable[[Built, str, str], list[str]] | None,
        missing: str = "",
    ) -> None:
        self.name = name
        self._build = build_cmd
        self.missing = missing

    def cmd(self, b: Built, variant: str, project: str = PROJECT) -> list[str]:
        assert self._build is not None
        return self._build(b, variant, project)


def make_tools(vbin: Path, ref: peers.Peer, stow: peers.Peer) -> list[Tool]:
    aikito = str(vbin / "aikito")
    python = str(vbin / "python")
    floor = str(HERE / "floor.py")

    def mem_cmd(b: Built, variant: str, project: str) -> list[str]:
        cmd = [aikito, "--workspace", str(b.ws), "sync", "project", project]
        return [*cmd, "--dry-run"] if variant == "dry" else cmd

    def floor_cmd(b: Built, variant: str, project: str) -> list[str]:
        manifest = b.manifest if project == PROJECT else b.base / "floor-empty.txt"
        return [python, floor, variant, str(manifest)]

    def ref_cmd(b: Built, variant: str, project: str) -> list[str]:
        assert ref.path is not None
        cmd = [ref.path, "sync", "project", project]
        return [*cmd, "--dry-run"] if variant == "dry" else cmd

    def stow_cmd(b: Built, variant: str, project: str) -> list[str]:
        script = "stow.sh" if project == PROJECT else "stow-empty.sh"
        return ["/bin/sh", str(b.base / script), variant]

    return [
        Tool("aikito_mem", mem_cmd),
        Tool("floor.py", floor_cmd),
        Tool("reference", ref_cmd if ref.path else None, ref.reason if not ref.path else ""),
        Tool("stow", stow_cmd if stow.path else None, stow.reason if not stow.path else ""),
    ]


def write_side_files(b: Built, stow_path: str | None) -> None:
    """The floor manifest of the empty project, and the stow job scripts."""
    lines = [f"W {b.ws}"] + [f"A {p}" for p in b.empty_active]
    (b.base / "floor-empty.txt").write_text("\n".join(lines) + "\n")
    empty_pkg = b.base / "stow-empty"
    (empty_pkg / "memory").mkdir(parents=True, exist_ok=True)
    if stow_path is None:
        return
    for script, stow_dir, cos in (
        ("stow.sh", b.ws, b.active),
        ("stow-empty.sh", empty_pkg, b.empty_active),
    ):
        targets = " ".join(f"'{co}/.agents/memory'" for co in cos)
        (b.base / script).write_text(
            "#!/bin/sh\n"
            "# Nearest equivalent of a sync with GNU Stow: the workspace memory/ directory\n"
            "# is the package, each active checkout's .agents/memory the target.\n"
            "set -e\n"
            f"for t in {targets}; do\n"
            '  case "$1" in\n'
            f"    cold) mkdir -p \"$t\"; '{stow_path}' -d '{stow_dir}' -t \"$t\" memory ;;\n"
            f"    warm) '{stow_path}' -d '{stow_dir}' -t \"$t\" memory ;;\n"
            f"    dry) '{stow_path}' -n -d '{stow_dir}' -t \"$t\" memory ;;\n"
            "  esac\n"
            "done\n"
        )


# --------------------------------------------------------------------------- one workload


PASS = "python -c pass"
IMPORTS = "import click, attrs, tomllib"


def bench_workload(
    wl: Workload,
    root: Path,
    tools: list[Tool],
    vbin: Path,
    envs: Env,
    strace: str | None,
    stow_path: str | None,
    runs: int,
    budget: float,
) -> list[Row]:
    """Dry, cold, then warm rows for every tool on ``wl``, each variant round-robin.

    Each tool works on its own identical copy of the workspace and checkouts, so runs can
    alternate between tools (fair under machine noise) while each warm row starts from
    the state that tool's own cold run left.
    """
    rows: list[Row] = []
    py = str(vbin / "python")
    # Interpreter baselines measured inside every group, so "x pass" compares runs made
    # at the same time (W1 warm also gets the imports a sync needs, for its target).
    companions: dict[str, list[tuple[str, list[str]]]] = {
        v: [(PASS, [py, "-c", "pass"])] for v in VARIANTS
    }
    if wl.name == "W1":
        companions["warm"].append((IMPORTS, [py, "-c", "import click, attrs, tomllib"]))

    groups: dict[str, list[Item]] = {v: [] for v in VARIANTS}
    per_tool: list[tuple[Tool, Built, dict[str, str], dict[str, Row]]] = []
    for tool in tools:
        if tool.missing:
            rows += [Row(wl.name, v, tool.name, missing=tool.missing) for v in VARIANTS]
            continue
        b = workloads.build(wl, root / wl.name / tool.name)
        write_side_files(b, stow_path)
        env = envs.new(b.ws)
        trash = b.base / "trash"
        is_stow = tool.name == "stow"

        def reset(b: Built = b, trash: Path = trash) -> None:
            workloads.reset_checkouts(b.active + b.empty_active, trash)

        def pre_dry(
            b: Built = b, env: dict[str, str] = env, is_stow: bool = is_stow, reset=reset
        ) -> None:
            envs.fresh_home(env)
            reset()
            if is_stow:  # stow -n refuses a target directory that does not exist
                for co in b.active:
                    (co / ".agents" / "memory").mkdir(parents=True)

        def pre_cold(env: dict[str, str] = env, reset=reset) -> None:
            reset()
            envs.fresh_home(env)

        def links_note(b: Built = b) -> str:
            n = workloads.count_links(b)
            want = b.wl.targets
            return "" if n == want else f"created {n} of {want} expected links"

        check = None if is_stow else links_note
        vrows = {v: Row(wl.name, v, tool.name, tool.cmd(b, v)) for v in VARIANTS}
        if is_stow:
            for r in vrows.values():
                r.note = stow_note(wl)
            vrows["dry"].note += "; target dirs pre-created (stow -n needs them)"
        groups["dry"].append(Item(vrows["dry"], env, b.base, pre_dry))
        groups["cold"].append(Item(vrows["cold"], env, b.base, pre_cold, check))
        groups["warm"].append(Item(vrows["warm"], env, b.base, None, check))
        per_tool.append((tool, b, env, vrows))
        rows += vrows.values()
        # Untimed warm-up: page cache, byte-code caches.
        measure(Row(wl.name, "dry", tool.name, tool.cmd(b, "dry")), env, b.base, 1, budget, pre_dry)

    for v in ("dry", "cold", "warm"):  # warm last: it starts from the cold runs' state
        items = groups[v]
        for name, cmd in companions[v]:
            row = Row(wl.name, v, name, cmd)
            items.append(Item(row, envs.new(), root))
            rows.append(row)
        log(f"{wl.name} {v}: {', '.join(it.row.tool for it in items)}")
        measure_many(items, runs, budget)

    for tool, b, env, vrows in per_tool:
        if strace and vrows["warm"].ok:
            syscalls(b, tool, env, vrows["warm"], strace)
        workloads.empty_trash(b.base / "trash")
    return rows


def stow_note(wl: Workload) -> str:
    parts = ["relative links; no config/validation/plan"]
    if wl.nested:
        parts.append("nested refs folded into one dir link")
    if wl.notes:
        parts.append("no notes resource")
    if wl.offline:
        parts.append("offline checkouts not listed")
    if wl.active > 1:
        parts.append(f"{wl.active} stow processes")
    return "stow: " + ", ".join(parts)


def syscalls(b: Built, tool: Tool, env: dict[str, str], warm: Row, strace: str) -> None:
    """Warm-sync syscalls per resource, net of the same command on the empty project."""
    # Bring the empty project to its steady state first (its own checkouts).
    empty_cmd = tool.cmd(b, "cold" if tool.name in ("floor.py", "stow") else "warm", EMPTY_PROJECT)
    sample, tail = run_once(empty_cmd, env, b.base)
    if sample.rc != 0:
        warm.note = _join(warm.note, f"syscalls: empty project failed ({tail[-150:]})")
        return
    counts, err = strace_counts(strace, warm.cmd, env, b.base)
    base, err2 = strace_counts(strace, tool.cmd(b, "warm", EMPTY_PROJECT), env, b.base)
    if err or err2:
        warm.note = _join(warm.note, f"syscalls: {err or err2}")
        return
    warm.sys_all, warm.sys_fs = per_resource(counts, base, b.wl.targets)


def _join(a: str, b: str) -> str:
    return f"{a}; {b}" if a else b


# --------------------------------------------------------------------------- W4: status

STATUS_HALF = 25  # the smaller workspace of the linearity check
V_STATUS = f"status {W4.projects}p"
V_STATUS_JSON = f"status --json {W4.projects}p"
V_STATUS_HALF = f"status {STATUS_HALF}p"
V_SINGLE = f"dry-run 1 of {W4.projects}p"
STATUS_VARIANTS = (V_STATUS, V_STATUS_JSON, V_STATUS_HALF, V_SINGLE, "-")


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
    built = {}
    for n in (wl.projects, STATUS_HALF):
        b = workloads.build_status(wl, root / wl.name / f"p{n}", n)
        env = envs.new(b.ws)
        log(f"{wl.name}: syncing {n} projects (untimed)")
        for name in b.projects:
            cmd = [aikito, "--workspace", str(b.ws), "sync", "project", name]
            sample, tail = run_once(cmd, env, b.base)
            if sample.rc != 0:
                err = f"untimed sync of {name} failed: exit {sample.rc}: {tail[-200:]}"
                return [Row(wl.name, v, "aikito_mem", error=err) for v in STATUS_VARIANTS[:4]]
        links, want = workloads.count_status_links(b), wl.targets(n)
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
        measure(Row(wl.name, variant, "aikito_mem", cmd), env, cwd, 1, budget)  # warm-up
        row = Row(wl.name, variant, "aikito_mem", cmd)
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
            status_row.note = _join(status_row.note, f"syscalls: {err or err2}")
        else:
            n = wl.targets(wl.projects) - wl.targets(STATUS_HALF)
            status_row.sys_all, status_row.sys_fs = per_resource(counts, base, n)
            status_row.note = _join(
                status_row.note,
                f"sys/res: strace of status on {wl.projects} minus {STATUS_HALF} projects, "
                f"/ {n} resources",
            )
    return rows


def status_summary(rows: list[Row]) -> dict[str, object] | None:
    """Issue 6: status on 50 projects next to 50 x one project's dry run; 50 vs 25."""
    got = {v: find(rows, W4.name, v, "aikito_mem") for v in STATUS_VARIANTS[:4]}
    if not all(r is not None and r.ok for r in got.values()):
        return None
    n, h = W4.projects, STATUS_HALF
    out: dict[str, object] = {"projects": n, "half": h}
    for kind, attr in (("wall", "median"), ("cpu", "cpu_median")):
        v = {k: getattr(r, attr) for k, r in got.items()}
        single50 = n * v[V_SINGLE]
        marginal = (v[V_STATUS] - v[V_STATUS_HALF]) / (n - h)
        out[kind] = {
            "status_ms": v[V_STATUS],
            "status_json_ms": v[V_STATUS_JSON],
            "status_half_ms": v[V_STATUS_HALF],
            "single_dry_run_ms": v[V_SINGLE],
            "n_x_single_ms": single50,
            "ratio_status_to_n_x_single": v[V_STATUS] / single50,
            "ratio_json_to_n_x_single": v[V_STATUS_JSON] / single50,
            "ratio_full_to_half": v[V_STATUS] / v[V_STATUS_HALF],
            "marginal_ms_per_project": marginal,
            "fixed_ms": v[V_STATUS] - n * marginal,
        }
    wall = out["wall"]
    assert isinstance(wall, dict)
    out["linear"] = wall["status_ms"] <= wall["n_x_single_ms"]
    # n/h projects cost at most n/h times as much (+10 % for noise): no superlinear term.
    out["linear_full_to_half"] = wall["ratio_full_to_half"] <= (n / h) * 1.1
    return out


def status_text(summary: dict[str, object] | None) -> str:
    head = f"{W4.name} status (issue 6): {W4.description}"
    if summary is None:
        return head + "\n  no result (see the W4 rows and notes)"
    n, h = summary["projects"], summary["half"]
    lines = [head]
    for kind in ("wall", "cpu"):
        d = summary[kind]
        assert isinstance(d, dict)
        lines.append(
            f"  {kind:4}: status {d['status_ms']:.0f} ms (--json {d['status_json_ms']:.0f} ms)"
            f" vs {n} x single dry run {d['single_dry_run_ms']:.1f} ms"
            f" = {d['n_x_single_ms']:.0f} ms"
            f" -> ratio {d['ratio_status_to_n_x_single']:.3f}"
            f" (--json {d['ratio_json_to_n_x_single']:.3f})"
        )
        lines.append(
            f"        status {n}p / {h}p = {d['status_ms']:.0f} / {d['status_half_ms']:.0f} ms"
            f" = {d['ratio_full_to_half']:.2f} (2 would be linear with no fixed cost);"
            f" {d['marginal_ms_per_project']:.1f} ms per project + {d['fixed_ms']:.0f} ms fixed"
        )
    lines.append(
        f"  [{'linear' if summary['linear'] else 'NOT linear'}] status <= {n} x single dry run"
        f"; [{'linear' if summary['linear_full_to_half'] else 'NOT linear'}]"
        f" status {n}p / {h}p <= {W4.projects / STATUS_HALF:.0f} (+10 %)"
    )
    return "\n".join(lines)


# --------------------------------------------------------------------------- start-up rows


def startup_rows(vbin: Path, ref: peers.Peer, envs: Env, root: Path, runs: int) -> list[Row]:
    py = str(vbin / "python")
    specs: list[tuple[str, list[str] | None, str]] = [
        ("python -c pass", [py, "-c", "pass"], ""),
        ("python -S -c pass (no site)", [py, "-S", "-c", "pass"], ""),
        ("import click", [py, "-c", "import click"], ""),
        ("import click, attrs, tomllib", [py, "-c", "import click, attrs, tomllib"], ""),
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


# --------------------------------------------------------------------------- reporting


def find(rows: list[Row], wl: str, variant: str, tool: str) -> Row | None:
    for r in rows:
        if r.workload == wl and r.variant == variant and r.tool == tool:
            return r
    return None


def _ratio(a: float | None, b: float | None) -> float | None:
    return a / b if a is not None and b else None


def fmt_ratio(x: float | None) -> str:
    return "-" if x is None else (f"{x:.2f}" if x < 100 else f"{x:.0f}")


def fmt_ms(x: float | None) -> str:
    return "-" if x is None else (f"{x:.1f}" if x < 1000 else f"{x:.0f}")


def find_pass(rows: list[Row], r: Row) -> Row | None:
    """The ``python -c pass`` row timed in ``r``'s group (W4: one for the whole workload)."""
    return (
        find(rows, r.workload, r.variant, PASS)
        or find(rows, r.workload, "-", PASS)
        or find(rows, "startup", "-", PASS)
    )


def ratios(rows: list[Row], r: Row) -> dict[str, float | None]:
    pass_row = find_pass(rows, r)
    floor = pass_row.median if pass_row else None
    out: dict[str, float | None] = {"x_pass": _ratio(r.median, floor)}
    out["x_pass_cpu"] = _ratio(r.cpu_median, pass_row.cpu_median if pass_row else None)
    for key, tool in (("x_floor", "floor.py"), ("x_ref", "reference"), ("x_stow", "stow")):
        other = find(rows, r.workload, r.variant, tool) if r.workload != "startup" else None
        out[key] = _ratio(r.median, other.median if other else None)
    return out


HEAD = (
    "workload", "variant", "tool", "n", "median ms", "spread ms (min-max)", "cpu ms",
    "x pass", "x floor.py", "x ref", "x stow", "sys/res", "fs/res", "RSS MB",
)  # fmt: skip
FIRST_RATIO = HEAD.index("cpu ms")


def ordered(rows: list[Row]) -> list[Row]:
    """Start-up rows first, then workload x variant with the tools side by side."""
    wl_order = {w.name: i for i, w in enumerate((*WORKLOADS, W4))}
    v_order = {v: i for i, v in enumerate((*VARIANTS, *STATUS_VARIANTS))}

    def key(r: Row) -> tuple[int, int, int]:
        if r.workload == "startup":
            return (-1, 0, 0)
        tool = TOOLS.index(r.tool) if r.tool in TOOLS else len(TOOLS)
        return (wl_order.get(r.workload, 99), v_order.get(r.variant, 99), tool)

    return sorted(rows, key=key)


def table(rows: list[Row]) -> str:
    lines: list[list[str]] = []
    notes: list[str] = []
    for r in ordered(rows):
        if r.missing:
            cells = [r.workload, r.variant, r.tool, "-", "MISSING", "(see notes)"]
            lines.append(cells + ["" for _ in HEAD[FIRST_RATIO:]])
            notes.append(f"{r.workload}/{r.variant}/{r.tool}: MISSING: {r.missing}")
            continue
        if r.error:
            code = r.error.split(":", 1)[0]
            cells = [r.workload, r.variant, r.tool, str(len(r.samples)), "ERROR", code]
            lines.append(cells + ["" for _ in HEAD[FIRST_RATIO:]])
            notes.append(f"{r.workload}/{r.variant}/{r.tool}: ERROR {r.error}")
            continue
        sp = r.spread()
        q = ratios(rows, r)
        n = f"{len(r.samples)}" + (f"/{r.capped}" if r.capped else "")
        lines.append(
            [
                r.workload,
                r.variant,
                r.tool,
                n,
                fmt_ms(r.median),
                f"{fmt_ms(sp[0])}-{fmt_ms(sp[3])}" if sp else "-",
                fmt_ms(r.cpu_median),
                fmt_ratio(q["x_pass"]),
                fmt_ratio(q["x_floor"]),
                fmt_ratio(q["x_ref"]),
                fmt_ratio(q["x_stow"]),
                "-" if r.sys_all is None else f"{r.sys_all:.1f}",
                "-" if r.sys_fs is None else f"{r.sys_fs:.1f}",
                "-" if r.rss_mb is None else f"{r.rss_mb:.1f}",
            ]
        )
        if r.note:
            notes.append(f"{r.workload}/{r.variant}/{r.tool}: {r.note}")
    widths = [max(len(h), *(len(c[i]) for c in lines)) for i, h in enumerate(HEAD)]
    out = ["  ".join(h.ljust(w) for h, w in zip(HEAD, widths, strict=True))]
    out.append("  ".join("-" * w for w in widths))
    prev = None
    for c in lines:
        if prev is not None and c[0] != prev:
            out.append("")
        prev = c[0]
        out.append("  ".join(v.ljust(w) for v, w in zip(c, widths, strict=True)).rstrip())
    if notes:
        out += ["", "notes:"] + [f"  - {n}" for n in dict.fromkeys(notes)]
    return "\n".join(out)


def targets(rows: list[Row]) -> list[dict[str, object]]:
    """Each §12 target with its measured numbers and MET / NOT MET / NOT MEASURED.

    Judged on wall-time medians, as §12 states them; the CPU-time (user + sys) ratio of
    the same rows is shown next to it, being far less sensitive to VM steal.
    """
    res: list[dict[str, object]] = []

    def get(wl: str, v: str, tool: str) -> Row | None:
        r = find(rows, wl, v, tool)
        return r if r is not None and r.ok else None

    def add(name: str, ok: bool | None, measured: str, why: str = "") -> None:
        status = "NOT MEASURED" if ok is None else ("MET" if ok else "NOT MET")
        res.append({"target": name, "status": status, "measured": measured or why})

    def cpu_text(ra: Row, rb: Row) -> str:
        ca, cb = ra.cpu_median, rb.cpu_median
        return f"; cpu {ca:.1f} / {cb:.1f} ms = {ca / cb:.2f}x" if ca and cb else ""

    def cmp(name: str, ra: Row | None, rb: Row | None, limit: float, an: str, bn: str) -> None:
        if ra is None or rb is None:
            add(name, None, "", f"no result for {an if ra is None else bn}")
            return
        a, b = ra.median, rb.median
        assert a is not None and b is not None
        add(
            name,
            a / b <= limit,
            f"{an} {a:.1f} ms / {bn} {b:.1f} ms = {a / b:.2f}x (<= {limit}x)" + cpu_text(ra, rb),
        )

    cmp(
        "start-up: aikito --version within 1.25x of python -c 'import click'",
        get("startup", "-", "aikito --version"),
        get("startup", "-", "import click"),
        1.25,
        "--version",
        "import click",
    )
    cmp(
        "warm W1 within 1.5x of python -c 'import click, attrs, tomllib'",
        get("W1", "warm", "aikito_mem"),
        get("W1", "warm", IMPORTS) or get("startup", "-", IMPORTS),
        1.5,
        "warm W1",
        "imports",
    )
    ra, rb = get("W1", "warm", "aikito_mem"), get("W1", "warm", "reference")
    if ra is None or rb is None:
        add("warm W1 >= 3x faster than the reference tool", None, "", "no result")
    else:
        a, b = ra.median, rb.median
        assert a is not None and b is not None
        add(
            "warm W1 >= 3x faster than the reference tool",
            b / a >= 3,
            f"reference {b:.1f} ms / aikito_mem {a:.1f} ms = {b / a:.1f}x faster (>= 3x)"
            + cpu_text(rb, ra),
        )
    for v in ("cold", "warm"):
        cmp(
            f"W2 10k {v} within 3x of the syscall floor",
            get("W2-10k", v, "aikito_mem"),
            get("W2-10k", v, "floor.py"),
            3,
            f"aikito_mem {v}",
            "floor.py",
        )
    for v in ("cold", "warm"):
        cmp(
            f"W2 {v} 10k/1k time ratio <= 12 (linear)",
            get("W2-10k", v, "aikito_mem"),
            get("W2-1k", v, "aikito_mem"),
            12,
            "10k",
            "1k",
        )
    rss = [
        r.rss_mb
        for r in rows
        if r.workload == "W2-10k" and r.tool == "aikito_mem" and r.ok and r.rss_mb is not None
    ]
    if rss:
        add("W2 10k peak RSS <= 80 MB", max(rss) <= 80, f"max peak RSS {max(rss):.1f} MB")
    else:
        add("W2 10k peak RSS <= 80 MB", None, "", "no result for W2-10k")
    cmp(
        "W3 warm within 3x of the syscall floor",
        get("W3", "warm", "aikito_mem"),
        get("W3", "warm", "floor.py"),
        3,
        "aikito_mem warm",
        "floor.py",
    )
    fs = [
        (r.workload, r.sys_fs)
        for r in rows
        if r.tool == "aikito_mem" and r.variant == "warm" and r.sys_fs is not None
    ]
    if fs:
        worst = max(v for _, v in fs)
        add(
            "steady state <= 4 fs syscalls per resource",
            worst <= 4,
            ", ".join(f"{w} {v:.2f}" for w, v in fs) + " (fs syscalls/resource, warm)",
        )
    else:
        add("steady state <= 4 fs syscalls per resource", None, "", "no strace result")
    return res


def targets_text(ts: list[dict[str, object]]) -> str:
    out = ["targets (SPEC §12):"]
    for t in ts:
        out.append(f"  [{t['status']}] {t['target']}")
        out.append(f"      {t['measured']}")
    return "\n".join(out)


INVOCATIONS = """\
invocations (every run: AIKITO_DIR=<ws>, HOME=<throw-away dir>, NO_COLOR=1, cwd=<workload dir>):
  aikito_mem  <venv>/bin/aikito --workspace <ws> sync project demo [--dry-run]
  floor.py    <venv>/bin/python bench/floor.py {cold|warm|dry} <manifest>
  reference   <bench/.cache/ref-venv>/bin/aikito sync project demo [--dry-run]
  stow        per active checkout, T=<co>/.agents/memory:
              [mkdir -p T;] stow [-n] -d <ws> -t T memory
  cold = fresh checkouts and HOME before every run (untimed); warm = re-run on the synced
  state; dry = --dry-run on fresh checkouts. syscalls: strace -f -c of one warm run minus
  the same command on project 'empty' (memory = [], same number of checkouts), divided by
  resources x active checkouts.
  W4          <venv>/bin/aikito --workspace <ws> status [--json]   (ws of 50 or 25 projects,
              all synced beforehand, untimed), and on the 50-project ws
              <venv>/bin/aikito --workspace <ws> sync project p00 --dry-run
  cpu ms = median user + system CPU time of the process and what it waited for (wait4)."""


# --------------------------------------------------------------------------- main


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawTextHelpFormatter)
    ap.add_argument("--quick", action="store_true", help="5 runs a row, skip the 10k workload")
    ap.add_argument("--runs", type=int, help="runs per row (default 7, --quick 5)")
    ap.add_argument("--json", action="store_true", help="print a JSON document on stdout")
    ap.add_argument(
        "--budget",
        type=float,
        help="seconds of timed runs per row before runs are capped (default 30, --quick 15); "
        "a capped row shows n as made/requested",
    )
    ap.add_argument("--workloads", help="comma-separated subset, e.g. W1,W3 (W4: status)")
    ap.add_argument("--no-install", action="store_true", help="never install peers")
    ap.add_argument("--no-strace", action="store_true", help="skip syscall counting")
    ap.add_argument("--no-peers", action="store_true", help="skip the reference tool and stow")
    ap.add_argument("--keep", action="store_true", help="keep the temporary workspaces")
    args = ap.parse_args(argv)

    runs = args.runs or (5 if args.quick else 7)
    budget = args.budget or (15.0 if args.quick else 30.0)
    selected: list[Workload] = list(WORKLOADS)
    with_status = True
    if args.quick:
        selected = [w for w in selected if w.name != "W2-10k"]
    if args.workloads:
        wanted = {w.strip() for w in args.workloads.split(",")}
        selected = [w for w in WORKLOADS if w.name in wanted]
        with_status = W4.name in wanted

    vbin = venv_bin()
    allow = not args.no_install
    if args.no_peers:
        ref = peers.Peer("reference", None, reason="skipped (--no-peers)")
        stow = peers.Peer("stow", None, reason="skipped (--no-peers)")
    else:
        ref = peers.reference_tool(allow)
        stow = peers.debian_tool("stow", allow)
    strace = None if args.no_strace else peers.debian_tool("strace", allow)
    for p in (ref, stow, strace):
        if p is not None:
            log(f"peer {p.name}: {p.version or 'MISSING'} ({p.reason})")

    root = Path(tempfile.mkdtemp(prefix="aikito-bench-"))
    started = time.time()
    try:
        envs = Env(root)
        rows = startup_rows(vbin, ref, envs, root, 2 * runs)
        tools = make_tools(vbin, ref, stow)
        for wl in selected:
            log(f"building {wl.name}: {wl.description}")
            rows += bench_workload(
                wl,
                root,
                tools,
                vbin,
                envs,
                strace.path if strace else None,
                stow.path,
                runs,
                budget,
            )
            if not args.keep:
                shutil.rmtree(root / wl.name, ignore_errors=True)
        if with_status:
            log(f"building {W4.name}: {W4.description}")
            rows += bench_status(
                W4, root, vbin, envs, strace.path if strace else None, runs, budget
            )
    finally:
        if args.keep:
            log(f"kept {root}")
        else:
            shutil.rmtree(root, ignore_errors=True)

    ts = targets(rows)
    status = status_summary(rows) if with_status else None
    header = (
        f"aikito_mem benchmark — {time.strftime('%Y-%m-%d %H:%M:%S')}, "
        f"{platform.python_implementation()} {platform.python_version()} (venv), "
        f"{os.cpu_count()} CPUs, runs/row {runs}, budget {budget:.0f} s/row"
        + (", --quick (no 10k)" if args.quick else "")
    )
    peer_lines = ["peers:"] + [
        f"  {p.name}: {p.version or 'MISSING'} — {p.reason}"
        for p in (ref, stow, strace)
        if p is not None
    ]
    parts = [header, "\n".join(peer_lines), table(rows), targets_text(ts)]
    if with_status:
        parts.append(status_text(status))
    text = "\n\n".join([*parts, INVOCATIONS])
    doc = {
        "schema": "aikito_mem.bench/1",
        "date": time.strftime("%Y-%m-%dT%H:%M:%S%z"),
        "duration_s": round(time.time() - started, 1),
        "config": {"runs": runs, "budget_s": budget, "quick": args.quick},
        "machine": {
            "python": platform.python_version(),
            "cpus": os.cpu_count(),
            "platform": platform.platform(),
        },
        "peers": {
            p.name: {"version": p.version or None, "how": p.reason}
            for p in (ref, stow, strace)
            if p is not None
        },
        "rows": [dict(r.as_dict(), **ratios(rows, r)) for r in rows],
        "targets": ts,
        "status_w4": status,
    }
    results = HERE / "results"
    results.mkdir(exist_ok=True)
    stamp = time.strftime("%Y%m%d-%H%M%S")
    (results / f"bench-{stamp}.json").write_text(json.dumps(doc, indent=2) + "\n")
    (results / f"bench-{stamp}.txt").write_text(text + "\n")
    if args.json:
        print(json.dumps(doc, indent=2))
    else:
        print(text)
    log(f"results written to bench/results/bench-{stamp}.{{json,txt}}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
