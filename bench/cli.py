"""Side-by-side benchmark of ``aikito sync project`` (SPEC §12, §13 [G7]).

    make bench                              # full run (W1, W1+segments, W2 1k + 10k, W3, W4)
    .venv/bin/python -m bench --quick       # 5 runs a row, no 10k workload
    .venv/bin/python -m bench --json        # JSON document on stdout
    .venv/bin/python -m bench --install     # also apt-get install a missing strace / stow

Run it from the repository root. It reports; it never fails on a slow result (exit 0
unless the harness itself breaks). It installs no system package unless --install is
given. See bench/README.md for what is measured and how to read the table.
"""

from __future__ import annotations

import argparse
import json
import os
import platform
import shutil
import tempfile
import time
from pathlib import Path

from bench import imports, instructions, report
from bench.results import AIKITO, IMPORTS, Row
from bench.runner import peers
from bench.runner.groups import (
    BENCH,
    Env,
    bench_family,
    bench_status,
    log,
    make_tools,
    startup_rows,
    venv_bin,
)
from bench.suite import W2_10K, W4, WORKLOADS, Workload, families


def parse_args(argv: list[str] | None = None) -> argparse.Namespace:
    ap = argparse.ArgumentParser(
        prog="python -m bench", description=__doc__, formatter_class=argparse.RawTextHelpFormatter
    )
    ap.add_argument("--quick", action="store_true", help="5 runs a row, skip the 10k workload")
    ap.add_argument("--runs", type=int, help="runs per row (default 7, --quick 5)")
    ap.add_argument("--json", action="store_true", help="print a JSON document on stdout")
    ap.add_argument(
        "--budget",
        type=float,
        help="seconds of timed runs per row before runs are capped (default 30, --quick 15); "
        "a capped row shows n as made/requested",
    )
    ap.add_argument(
        "--workloads",
        help="comma-separated subset, e.g. W1,W1+segments,W3 (W4: status)",
    )
    install = ap.add_mutually_exclusive_group()
    install.add_argument(
        "--install",
        action="store_true",
        help="install a missing strace or stow with apt-get (root only); without it a "
        "missing one is reported",
    )
    install.add_argument(
        "--no-install",
        action="store_true",
        help="install nothing, not even the reference tool's venv in bench/.cache",
    )
    ap.add_argument("--no-strace", action="store_true", help="skip syscall counting")
    ap.add_argument("--no-peers", action="store_true", help="skip the reference tool and stow")
    ap.add_argument("--keep", action="store_true", help="keep the temporary workspaces")
    ap.add_argument(
        "--no-imports",
        action="store_true",
        help="skip the import budgets (-X importtime of a warm W1 and W1+segments sync)",
    )
    ap.add_argument(
        "--instructions",
        action="store_true",
        help="also count the start-up figures in instructions (valgrind): the same count "
        "every run, for judging a change side by side",
    )
    return ap.parse_args(argv)


def select(args: argparse.Namespace) -> tuple[list[Workload], bool]:
    """The sync workloads to run, and whether W4 (status) runs."""
    selected: list[Workload] = list(WORKLOADS)
    if args.quick:
        selected = [w for w in selected if w is not W2_10K]
    if args.workloads:
        wanted = {w.strip() for w in args.workloads.split(",")}
        return [w for w in WORKLOADS if w.name in wanted], W4.name in wanted
    return selected, True


def get_peers(args: argparse.Namespace) -> tuple[peers.Peer, peers.Peer, peers.Peer | None]:
    """The reference tool, Stow and strace (``None``: --no-strace). Debian packages are
    installed only with --install; the reference venv unless --no-install."""
    if args.no_peers:
        ref = peers.Peer("reference", None, reason="skipped (--no-peers)")
        stow = peers.Peer("stow", None, reason="skipped (--no-peers)")
    else:
        ref = peers.reference_tool(not args.no_install)
        stow = peers.debian_tool("stow", args.install)
    strace = None if args.no_strace else peers.debian_tool("strace", args.install)
    return ref, stow, strace


def import_budgets(
    family: list[Workload], root: Path, vbin: Path, envs: Env
) -> list[tuple[str, imports.Budget]]:
    """The import budget of a warm sync of each W1-like workload of ``family``, on the
    workspace its timed aikito_mem rows left in sync."""
    out: list[tuple[str, imports.Budget]] = []
    for wl in family:
        if wl.group_name != "W1":
            continue
        ws = root / wl.group_name / wl.name / AIKITO / "ws"
        if not ws.is_dir():
            continue
        log(f"import budget: warm {wl.name}")
        cmd = [str(vbin / "aikito"), "--workspace", str(ws), "sync", "project", "demo"]
        out.append((wl.name, imports.measure(str(vbin / "python"), cmd, envs.new(ws),
                                             str(root))))
    return out


def instruction_figures(
    family: list[Workload], root: Path, vbin: Path, envs: Env, tool: str
) -> list[instructions.Figure]:
    """The warm W1-like syncs of ``family`` against the import floor, in instructions,
    on the workspaces its timed aikito_mem rows left in sync."""
    py = str(vbin / "python")
    out: list[instructions.Figure] = []
    floor: int | str | None = None
    for wl in family:
        ws = root / wl.group_name / wl.name / AIKITO / "ws"
        if wl.group_name != "W1" or wl.name == "W1+agents" or not ws.is_dir():
            continue
        if floor is None:
            floor = instructions.count(tool, [py, "-c", IMPORTS], envs.new(), str(root))
        log(f"instructions: warm {wl.name}")
        cmd = [str(vbin / "aikito"), "--workspace", str(ws), "sync", "project", "demo"]
        goal = (report.STARTUP_LIMIT if wl.name == "W1"
                else round(report.STARTUP_LIMIT * report.STARTUP_SEGMENTS, 2))
        out.append(instructions.Figure(f"{wl.name} warm / import floor", goal,
                                       instructions.count(tool, cmd, envs.new(ws), str(root)),
                                       floor))
    return out


def version_figure(vbin: Path, envs: Env, root: Path, tool: str) -> instructions.Figure:
    py = str(vbin / "python")
    return instructions.Figure(
        "aikito --version / import click", report.VERSION_LIMIT,
        instructions.count(tool, [str(vbin / "aikito"), "--version"], envs.new(), str(root)),
        instructions.count(tool, [py, "-c", "import click"], envs.new(), str(root)))


def main(argv: list[str] | None = None) -> int:
    args = parse_args(argv)
    runs = args.runs or (5 if args.quick else 7)
    budget = args.budget or (15.0 if args.quick else 30.0)
    selected, with_status = select(args)

    vbin = venv_bin()
    ref, stow, strace = get_peers(args)
    for p in (ref, stow, strace):
        if p is not None:
            log(f"peer {p.name}: {p.version or 'MISSING'} ({p.reason})")
    strace_path = strace.path if strace else None
    strace_missing = strace.reason if strace is not None and strace.path is None else ""

    root = Path(tempfile.mkdtemp(prefix="aikito-bench-"))
    started = time.time()
    rows: list[Row] = []
    budgets: list[tuple[str, imports.Budget]] = []
    counted: list[instructions.Figure] = []
    tool = instructions.valgrind() if args.instructions else None
    try:
        envs = Env(root)
        rows = startup_rows(vbin, ref, envs, root, 2 * runs)
        if tool:
            counted.append(version_figure(vbin, envs, root, tool))
        tools = make_tools(vbin, ref, stow)
        for family in families(selected):
            for wl in family:
                log(f"building {wl.name}: {wl.description}")
            rows += bench_family(
                family, root, tools, vbin, envs, strace_path, stow.path, runs, budget
            )
            if not args.no_imports:
                budgets += import_budgets(family, root, vbin, envs)
            if tool:
                counted[:0] = instruction_figures(family, root, vbin, envs, tool)
            if not args.keep:
                shutil.rmtree(root / family[0].group_name, ignore_errors=True)
        if with_status:
            log(f"building {W4.name}: {W4.description}")
            rows += bench_status(W4, root, vbin, envs, strace_path, runs, budget)
    finally:
        if args.keep:
            log(f"kept {root}")
        else:
            shutil.rmtree(root, ignore_errors=True)

    ts = report.targets(rows, strace_missing)
    status = report.status_summary(rows) if with_status else None
    header = (
        f"aikito_mem benchmark — {time.strftime('%Y-%m-%d %H:%M:%S')}, "
        f"{platform.python_implementation()} {platform.python_version()} (venv), "
        f"{os.cpu_count()} CPUs, runs/row {runs}, budget {budget:.0f} s/row"
        + (", --quick (no 10k)" if args.quick else "")
    )
    found = [p for p in (ref, stow, strace) if p is not None]
    peer_lines = ["peers:"] + [f"  {p.name}: {p.version or 'MISSING'} — {p.reason}" for p in found]
    sections = tuple(imports.text(b, f"warm {name}", top=15) for name, b in budgets)
    if args.instructions:
        sections = (instructions.text(counted, "" if tool else "valgrind is not installed"),
                    *sections)
    text = report.text(header, peer_lines, rows, ts, status, with_status, strace_missing,
                       sections)
    doc = report.document(
        rows,
        ts,
        status,
        {
            "date": time.strftime("%Y-%m-%dT%H:%M:%S%z"),
            "duration_s": round(time.time() - started, 1),
            "config": {"runs": runs, "budget_s": budget, "quick": args.quick},
            "machine": {
                "python": platform.python_version(),
                "cpus": os.cpu_count(),
                "platform": platform.platform(),
            },
            "peers": {p.name: {"version": p.version or None, "how": p.reason} for p in found},
            "import_budget": {name: b.as_dict() for name, b in budgets},
            "instructions": [f.as_dict() for f in counted] if args.instructions else None,
        },
    )
    results = BENCH / "results"
    results.mkdir(exist_ok=True)
    stamp = time.strftime("%Y%m%d-%H%M%S")
    (results / f"bench-{stamp}.json").write_text(json.dumps(doc, indent=2) + "\n")
    (results / f"bench-{stamp}.txt").write_text(text + "\n")
    print(json.dumps(doc, indent=2) if args.json else text)
    log(f"results written to bench/results/bench-{stamp}.{{json,txt}}")
    return 0
