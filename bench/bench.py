"""Side-by-side benchmark of ``aikito sync project`` (SPEC §12).

    make bench                          # full run (W1, W2 1k + 10k, W3), 7 runs a row
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
from workloads import EMPTY_PROJECT, PROJECT, WORKLOADS, Built, Workload

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


def ratios(rows: list[Row], r: Row) -> dict[str, float | None]:
    pass_row = find(rows, r.workload, r.variant, PASS) or find(rows, "startup", "-", PASS)
    floor = pass_row.median if pass_row else None
    out: dict[str, float | None] = {"x_pass": _ratio(r.median, floor)}
    for key, tool in (("x_floor", "floor.py"), ("x_ref", "reference"), ("x_stow", "stow")):
        other = find(rows, r.workload, r.variant, tool) if r.workload != "startup" else None
        out[key] = _ratio(r.median, other.median if other else None)
    return out


HEAD = (
    "workload", "variant", "tool", "n", "median ms", "spread ms (min-max)",
    "x pass", "x floor.py", "x ref", "x stow", "sys/res", "fs/res", "RSS MB",
)  # fmt: skip


def ordered(rows: list[Row]) -> list[Row]:
    """Start-up rows first, then workload x variant with the tools side by side."""
    wl_order = {w.name: i for i, w in enumerate(WORKLOADS)}

    def key(r: Row) -> tuple[int, int, int]:
        if r.workload == "startup":
            return (-1, 0, 0)
        return (wl_order.get(r.workload, 99), VARIANTS.index(r.variant), TOOLS.index(r.tool))

    return sorted(rows, key=key)


def table(rows: list[Row]) -> str:
    lines: list[list[str]] = []
    notes: list[str] = []
    for r in ordered(rows):
        if r.missing:
            cells = [r.workload, r.variant, r.tool, "-", "MISSING", "(see notes)"]
            lines.append(cells + ["" for _ in HEAD[6:]])
            notes.append(f"{r.workload}/{r.variant}/{r.tool}: MISSING: {r.missing}")
            continue
        if r.error:
            code = r.error.split(":", 1)[0]
            cells = [r.workload, r.variant, r.tool, str(len(r.samples)), "ERROR", code]
            lines.append(cells + ["" for _ in HEAD[6:]])
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
    """Each §12 target with its measured numbers and MET / NOT MET / NOT MEASURED."""
    res: list[dict[str, object]] = []

    def med(wl: str, v: str, tool: str) -> float | None:
        r = find(rows, wl, v, tool)
        return r.median if r else None

    def add(name: str, ok: bool | None, measured: str, why: str = "") -> None:
        status = "NOT MEASURED" if ok is None else ("MET" if ok else "NOT MET")
        res.append({"target": name, "status": status, "measured": measured or why})

    def cmp(name: str, a: float | None, b: float | None, limit: float, an: str, bn: str) -> None:
        if a is None or b is None:
            missing = an if a is None else bn
            add(name, None, "", f"no result for {missing}")
            return
        add(name, a / b <= limit, f"{an} {a:.1f} ms / {bn} {b:.1f} ms = {a / b:.2f}x (<= {limit}x)")

    cmp(
        "start-up: aikito --version within 1.25x of python -c 'import click'",
        med("startup", "-", "aikito --version"),
        med("startup", "-", "import click"),
        1.25,
        "--version",
        "import click",
    )
    cmp(
        "warm W1 within 1.5x of python -c 'import click, attrs, tomllib'",
        med("W1", "warm", "aikito_mem"),
        med("W1", "warm", IMPORTS) or med("startup", "-", IMPORTS),
        1.5,
        "warm W1",
        "imports",
    )
    a, b = med("W1", "warm", "aikito_mem"), med("W1", "warm", "reference")
    if a is None or b is None:
        add("warm W1 >= 3x faster than the reference tool", None, "", "no result")
    else:
        add(
            "warm W1 >= 3x faster than the reference tool",
            b / a >= 3,
            f"reference {b:.1f} ms / aikito_mem {a:.1f} ms = {b / a:.1f}x faster (>= 3x)",
        )
    for v in ("cold", "warm"):
        cmp(
            f"W2 10k {v} within 3x of the syscall floor",
            med("W2-10k", v, "aikito_mem"),
            med("W2-10k", v, "floor.py"),
            3,
            f"aikito_mem {v}",
            "floor.py",
        )
    for v in ("cold", "warm"):
        cmp(
            f"W2 {v} 10k/1k time ratio <= 12 (linear)",
            med("W2-10k", v, "aikito_mem"),
            med("W2-1k", v, "aikito_mem"),
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
        med("W3", "warm", "aikito_mem"),
        med("W3", "warm", "floor.py"),
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
  resources x active checkouts."""


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
    ap.add_argument("--workloads", help="comma-separated subset, e.g. W1,W3")
    ap.add_argument("--no-install", action="store_true", help="never install peers")
    ap.add_argument("--no-strace", action="store_true", help="skip syscall counting")
    ap.add_argument("--no-peers", action="store_true", help="skip the reference tool and stow")
    ap.add_argument("--keep", action="store_true", help="keep the temporary workspaces")
    args = ap.parse_args(argv)

    runs = args.runs or (5 if args.quick else 7)
    budget = args.budget or (15.0 if args.quick else 30.0)
    selected: list[Workload] = list(WORKLOADS)
    if args.quick:
        selected = [w for w in selected if w.name != "W2-10k"]
    if args.workloads:
        wanted = {w.strip() for w in args.workloads.split(",")}
        selected = [w for w in WORKLOADS if w.name in wanted]

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
    finally:
        if args.keep:
            log(f"kept {root}")
        else:
            shutil.rmtree(root, ignore_errors=True)

    ts = targets(rows)
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
    text = "\n\n".join([header, "\n".join(peer_lines), table(rows), targets_text(ts), INVOCATIONS])
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
