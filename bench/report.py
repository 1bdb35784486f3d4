"""What the benchmark prints: the table, the targets of SPEC §12, §13 [G7] and §17 [N1],
the W4 summary and the JSON document — all computed from result rows alone (no process,
no file system), so they can be checked on made-up rows."""

from __future__ import annotations

from bench.results import AIKITO, FLOOR, IMPORTS, PASS, REFERENCE, STOW, TOOLS, VARIANTS, Row
from bench.suite import (
    AGENTS_LIMIT,
    SEGMENTS_LIMIT,
    STATUS_HALF,
    STATUS_VARIANTS,
    V_SINGLE,
    V_STATUS,
    V_STATUS_HALF,
    V_STATUS_JSON,
    W1,
    W1_AGENTS,
    W1_SEGMENTS,
    W4,
    WORKLOADS,
    group_of,
)

#: Rows that get syscall counts when strace is installed: the warm sync rows of these
#: tools, and W4's status on 50 projects.
STRACED_TOOLS = (AIKITO, FLOOR, REFERENCE, STOW)
NO_STRACE = "no strace"
#: What a ratio column says when its peer is not installed (or skipped).
NO_PEER = {REFERENCE: "no ref", STOW: "no stow"}


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
    group = group_of(r.workload)
    return (
        find(rows, group, r.variant, PASS)
        or find(rows, group, "-", PASS)
        or find(rows, "startup", "-", PASS)
    )


def ratios(rows: list[Row], r: Row) -> dict[str, float | None]:
    pass_row = find_pass(rows, r)
    floor = pass_row.median if pass_row else None
    out: dict[str, float | None] = {"x_pass": _ratio(r.median, floor)}
    out["x_pass_cpu"] = _ratio(r.cpu_median, pass_row.cpu_median if pass_row else None)
    for key, tool in (("x_floor", FLOOR), ("x_ref", REFERENCE), ("x_stow", STOW)):
        other = find(rows, r.workload, r.variant, tool) if r.workload != "startup" else None
        out[key] = _ratio(r.median, other.median if other else None)
    # W1+segments (W1+agents) against the memory-only W1 of the same tool, timed in the
    # same group.
    with_w1 = r.workload != W1.name and group_of(r.workload) == W1.name
    w1 = find(rows, W1.name, r.variant, r.tool) if with_w1 else None
    out["x_w1"] = _ratio(r.median, w1.median if w1 else None)
    return out


HEAD = (
    "workload", "variant", "tool", "n", "median ms", "spread ms (min-max)", "cpu ms",
    "x pass", "x floor.py", "x ref", "x stow", "x W1", "sys/res", "fs/res", "RSS MB",
)  # fmt: skip
FIRST_RATIO = HEAD.index("cpu ms")


def ordered(rows: list[Row]) -> list[Row]:
    """Start-up rows first, then workload x variant with the tools side by side."""
    wl_order = {name: i for i, name in enumerate([*(w.name for w in WORKLOADS), W4.name])}
    v_order = {v: i for i, v in enumerate((*VARIANTS, *STATUS_VARIANTS))}

    def key(r: Row) -> tuple[int, int, int]:
        if r.workload == "startup":
            return (-1, 0, 0)
        tool = TOOLS.index(r.tool) if r.tool in TOOLS else len(TOOLS)
        return (wl_order.get(r.workload, 99), v_order.get(r.variant, 99), tool)

    return sorted(rows, key=key)


def _straced(r: Row) -> bool:
    """Whether ``r`` would have syscall counts with strace installed."""
    if r.workload == W4.name:
        return r.variant == V_STATUS
    return r.variant == "warm" and r.tool in STRACED_TOOLS


def _peer_cell(rows: list[Row], r: Row, peer: str, ratio: float | None) -> str:
    """``x ref`` / ``x stow``: the ratio, or that the peer is missing on this workload."""
    other = find(rows, r.workload, r.variant, peer) if r.workload != "startup" else None
    return NO_PEER[peer] if other is not None and other.missing else fmt_ratio(ratio)


def _cells(rows: list[Row], r: Row, strace_missing: str) -> list[str]:
    sp = r.spread()
    q = ratios(rows, r)
    n = f"{len(r.samples)}" + (f"/{r.capped}" if r.capped else "")
    no_sys = NO_STRACE if strace_missing and _straced(r) else "-"
    return [
        r.workload,
        r.variant,
        r.tool,
        n,
        fmt_ms(r.median),
        f"{fmt_ms(sp[0])}-{fmt_ms(sp[3])}" if sp else "-",
        fmt_ms(r.cpu_median),
        fmt_ratio(q["x_pass"]),
        fmt_ratio(q["x_floor"]),
        _peer_cell(rows, r, REFERENCE, q["x_ref"]),
        _peer_cell(rows, r, STOW, q["x_stow"]),
        fmt_ratio(q["x_w1"]),
        no_sys if r.sys_all is None else f"{r.sys_all:.1f}",
        no_sys if r.sys_fs is None else f"{r.sys_fs:.1f}",
        "-" if r.rss_mb is None else f"{r.rss_mb:.1f}",
    ]


def table(rows: list[Row], strace_missing: str = "") -> str:
    """The result table and its notes. ``strace_missing``: why strace is not installed
    ('' when it is); the syscall columns of the rows it would have counted say so."""
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
        lines.append(_cells(rows, r, strace_missing))
        if r.note:
            notes.append(f"{r.workload}/{r.variant}/{r.tool}: {r.note}")
    if strace_missing:
        notes.append(f"sys/res, fs/res: {strace_missing}")
    widths = [max([len(h), *(len(c[i]) for c in lines)]) for i, h in enumerate(HEAD)]
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


def targets(rows: list[Row], strace_missing: str = "") -> list[dict[str, object]]:
    """Each §12 and [G7] target with its measured numbers and MET / NOT MET / NOT MEASURED.

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

    def cmp(
        name: str, ra: Row | None, rb: Row | None, limit: float, an: str, bn: str, tail: str = ""
    ) -> None:
        if ra is None or rb is None:
            add(name, None, "", f"no result for {an if ra is None else bn}")
            return
        a, b = ra.median, rb.median
        assert a is not None and b is not None
        add(
            name,
            a / b <= limit,
            f"{an} {a:.1f} ms / {bn} {b:.1f} ms = {a / b:.2f}x (<= {limit}x)"
            + cpu_text(ra, rb)
            + tail,
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
        get("W1", "warm", AIKITO),
        get("W1", "warm", IMPORTS) or get("startup", "-", IMPORTS),
        1.5,
        "warm W1",
        "imports",
    )
    ra, rb = get("W1", "warm", AIKITO), get("W1", "warm", REFERENCE)
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
            get("W2-10k", v, AIKITO),
            get("W2-10k", v, FLOOR),
            3,
            f"aikito_mem {v}",
            FLOOR,
        )
    for v in ("cold", "warm"):
        cmp(
            f"W2 {v} 10k/1k time ratio <= 12 (linear)",
            get("W2-10k", v, AIKITO),
            get("W2-1k", v, AIKITO),
            12,
            "10k",
            "1k",
        )
    rss = [
        r.rss_mb
        for r in rows
        if r.workload == "W2-10k" and r.tool == AIKITO and r.ok and r.rss_mb is not None
    ]
    if rss:
        add("W2 10k peak RSS <= 80 MB", max(rss) <= 80, f"max peak RSS {max(rss):.1f} MB")
    else:
        add("W2 10k peak RSS <= 80 MB", None, "", "no result for W2-10k")
    segments = get(W1_SEGMENTS.name, "warm", AIKITO)
    cmp(
        f"warm W1+segments within {SEGMENTS_LIMIT:.2f}x of warm W1 (SPEC §13 [G7])",
        segments,
        get(W1.name, "warm", AIKITO),
        SEGMENTS_LIMIT,
        "warm W1+segments",
        "warm W1",
        f" — note: {segments.note}" if segments is not None and segments.note else "",
    )
    agents = get(W1_AGENTS.name, "warm", AIKITO)
    cmp(
        f"warm W1+agents within {AGENTS_LIMIT:.2f}x of warm W1+segments (SPEC §17 [N1])",
        agents,
        segments,
        AGENTS_LIMIT,
        "warm W1+agents",
        "warm W1+segments",
        f" — note: {agents.note}" if agents is not None and agents.note else "",
    )
    cmp(
        "W3 warm within 3x of the syscall floor",
        get("W3", "warm", AIKITO),
        get("W3", "warm", FLOOR),
        3,
        "aikito_mem warm",
        FLOOR,
    )
    fs = [
        (r.workload, r.sys_fs)
        for r in rows
        if r.tool == AIKITO and r.variant == "warm" and r.sys_fs is not None
    ]
    if fs:
        worst = max(v for _, v in fs)
        add(
            "steady state <= 4 fs syscalls per resource",
            worst <= 4,
            ", ".join(f"{w} {v:.2f}" for w, v in fs) + " (fs syscalls/resource, warm)",
        )
    else:
        why = strace_missing or "no strace result"
        add("steady state <= 4 fs syscalls per resource", None, "", why)
    return res


#: Start-up goals, tighter than §12's: a warm W1 within this factor of the import floor
#: (``python -c "import click, attrs, tomllib"``), W1+segments at most this much above
#: that, and ``aikito --version`` within this factor of ``python -c "import click"``.
STARTUP_LIMIT = 1.2
STARTUP_SEGMENTS = 1.05
VERSION_LIMIT = 1.1


def startup_figures(rows: list[Row]) -> list[dict[str, object]]:
    """The side-by-side start-up figures: each a ratio of two rows timed in one
    round-robin group (wall and CPU medians), with its goal and MET / NOT MET."""
    def get(wl: str, v: str, tool: str) -> Row | None:
        r = find(rows, wl, v, tool)
        return r if r is not None and r.ok else None

    floor = get(W1.name, "warm", IMPORTS)
    specs = [
        ("W1 warm / import floor", get(W1.name, "warm", AIKITO), floor, STARTUP_LIMIT),
        ("W1+segments warm / import floor", get(W1_SEGMENTS.name, "warm", AIKITO), floor,
         round(STARTUP_LIMIT * STARTUP_SEGMENTS, 2)),
        ("aikito --version / import click", get("startup", "-", "aikito --version"),
         get("startup", "-", "import click"), VERSION_LIMIT),
    ]
    out: list[dict[str, object]] = []
    for name, ra, rb, goal in specs:
        fig: dict[str, object] = {"figure": name, "goal": goal, "ratio": None,
                                  "cpu_ratio": None, "status": "NOT MEASURED"}
        if ra is not None and rb is not None:
            a, b = ra.median, rb.median
            ca, cb = ra.cpu_median, rb.cpu_median
            assert a is not None and b is not None
            fig["ratio"] = a / b
            fig["cpu_ratio"] = ca / cb if ca and cb else None
            fig["status"] = "MET" if a / b <= goal else "NOT MET"
            fig["measured"] = f"{a:.1f} ms / {b:.1f} ms"
        out.append(fig)
    return out


def startup_text(figures: list[dict[str, object]]) -> str:
    out = ["start-up figures (side by side: each pair timed in one round-robin group):"]
    for f in figures:
        ratio, cpu = f["ratio"], f["cpu_ratio"]
        shown = (f"{ratio:.2f}x wall ({f['measured']})" if isinstance(ratio, float)
                 else "no result")
        if isinstance(cpu, float):
            shown += f", {cpu:.2f}x cpu"
        out.append(f"  [{f['status']}] {f['figure']}: {shown}; goal <= {f['goal']}x")
    return "\n".join(out)


def targets_text(ts: list[dict[str, object]]) -> str:
    out = ["targets (SPEC §12, §13 [G7], §17 [N1]):"]
    for t in ts:
        out.append(f"  [{t['status']}] {t['target']}")
        out.append(f"      {t['measured']}")
    return "\n".join(out)


def status_summary(rows: list[Row]) -> dict[str, object] | None:
    """Status on 50 projects next to 50 x one project's dry run; 50 vs 25 projects."""
    got = {v: find(rows, W4.name, v, AIKITO) for v in STATUS_VARIANTS[:4]}
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
    head = f"{W4.name} {W4.description}"
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
  resources x active checkouts (W1+segments: memory resources + skills + instruction
  targets; W1+agents: + each skill in each per-agent skills directory). W1+segments and
  W1+agents are timed in W1's groups (stow: memory only, no row; the reference tool links
  no per-agent directory: no W1+agents row); x W1 = median / the same tool and variant on
  W1. W1+agents' HOME holds the paths its three agents are detected by.
  W4          <venv>/bin/aikito --workspace <ws> status [--json]   (ws of 50 or 25 projects,
              all synced beforehand, untimed), and on the 50-project ws
              <venv>/bin/aikito --workspace <ws> sync project p00 --dry-run
  cpu ms = median user + system CPU time of the process and what it waited for (wait4)."""


def text(
    header: str,
    peer_lines: list[str],
    rows: list[Row],
    ts: list[dict[str, object]],
    status: dict[str, object] | None,
    with_status: bool,
    strace_missing: str = "",
    sections: tuple[str, ...] = (),
) -> str:
    """The whole printed report; ``sections`` (the import budgets) go after the start-up
    figures."""
    parts = [header, "\n".join(peer_lines), table(rows, strace_missing), targets_text(ts),
             startup_text(startup_figures(rows)), *sections]
    if with_status:
        parts.append(status_text(status))
    return "\n\n".join([*parts, INVOCATIONS])


def document(
    rows: list[Row],
    ts: list[dict[str, object]],
    status: dict[str, object] | None,
    meta: dict[str, object],
) -> dict[str, object]:
    """The JSON document (``schema: aikito_mem.bench/1``): ``meta`` (date, duration,
    config, machine, peers), every row with its ratios, the targets, the W4 summary."""
    return {
        "schema": "aikito_mem.bench/1",
        **meta,
        "rows": [dict(r.as_dict(), **ratios(rows, r)) for r in rows],
        "targets": ts,
        "startup_figures": startup_figures(rows),
        "status_w4": status,
    }
